//! Allocation in write order (`alloc = block`): each block is given its place on the device
//! (fallocate of exactly its bytes) just before it is written, so files written together are
//! placed block by block in the order their blocks were written, as a file system without
//! delayed allocation would place them (Russell 1998's k-way interleaved files). ext4, xfs and
//! btrfs otherwise delay allocation to writeback and lay each file out together.

use std::fs::File;
use std::os::unix::io::AsRawFd;

use crate::engine::{Call, CallCounts};
use crate::error::{Error, Result};
use crate::plan::Op;

use super::WorkerCtx;

/// A worker's own descriptors of its files, for allocating their blocks as they are written.
pub struct BlockAlloc {
    files: Vec<File>,
    pub calls: u64,
}

impl BlockAlloc {
    /// With `alloc = block` in a write phase: opens the worker's files (only the ones iolab
    /// created); otherwise nothing.
    pub fn open(ctx: &WorkerCtx<'_>) -> Result<Option<BlockAlloc>> {
        if !(ctx.spec.alloc_block && ctx.write) {
            return Ok(None);
        }
        let files = ctx
            .paths
            .iter()
            .zip(&ctx.ids)
            .map(|(p, &id)| crate::target::owned::open(p, id, true, 0))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(BlockAlloc { files, calls: 0 }))
    }

    /// Allocates the bytes of `op` in its file (fallocate, mode 0: the size grows as the
    /// write would make it grow).
    #[inline]
    pub fn block(&mut self, ctx: &WorkerCtx<'_>, k: u64, op: Op) -> Result<()> {
        let f = &self.files[op.file as usize];
        self.calls += 1;
        // SAFETY: plain system call on an open descriptor; no memory is passed.
        let rc =
            unsafe { libc::fallocate(f.as_raw_fd(), 0, op.offset as libc::off_t, op.len as libc::off_t) };
        if rc != 0 {
            ctx.abort.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(ctx.op_error(k, op, "fallocate", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Adds the fallocate calls to a worker's call counts.
    pub fn count(alloc: &Option<BlockAlloc>, calls: &mut CallCounts) {
        if let Some(a) = alloc {
            calls.add_n(Call::Fallocate, a.calls);
        }
    }
}

/// Makes blocks freed by earlier files (an emptied file, the previous repetition's deleted
/// ones) free again before a write phase with `alloc = block`: ext4 keeps freed blocks from
/// the allocator until its journal commits, so a run right after a deletion would otherwise be
/// placed around them. One syncfs per file system.
pub fn release_freed(files: &[File]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = vec![];
    for f in files {
        let dev = f.metadata().map_err(|e| Error::Run(format!("stat before syncfs: {e}")))?.dev();
        if seen.contains(&dev) {
            continue;
        }
        seen.push(dev);
        // SAFETY: plain system call on an open descriptor.
        if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
            return Err(Error::Run(format!("syncfs: {}", std::io::Error::last_os_error())));
        }
    }
    Ok(())
}
