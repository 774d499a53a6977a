//! Data stamping on the worker's side: which bytes a written block carries and what a read
//! block is checked against, and the diagnosis of a short write.

use crate::plan::FileRole;
use crate::plan::fill;
use crate::spec::Spec;

use super::WorkerCtx;
use crate::plan::verify::{self, BlockTag};

/// The data path of one worker: which bytes written blocks carry, and what read blocks are
/// checked against. Engines move bytes; this decides which bytes. Every engine's loop calls
/// [`DataPath::before_write`] before handing a block to the engine and
/// [`DataPath::after_read`] after a block comes back.
///
/// Stamps: a stripe component's bytes carry the logical (striped) file's salt and offsets, so
/// the components read back through the striping formula give the logical file byte for byte.
/// An op's memory is `op.len` contiguous bytes, or with strided memory (`mem_len` of every
/// `mem_stride` bytes) the `op.len / len * stride` bytes whose pieces the op gathers; then the
/// bytes stamped are those that land on the on-disk stamp positions, so files carry the same
/// stamps whatever the memory layout.
///
/// Verification (`verify`): written blocks get a header ([`crate::plan::verify`]) keyed on the op's
/// (global file id, offset), and every read block is checked, whatever the engine or layout
/// (strided memory is refused with verification). Without it, debug builds (so the whole test
/// suite) still check every block read: each stamp must name the file and offset the op read,
/// in the memory places the op's layout gives, so an engine that reads the wrong bytes, or into
/// the wrong place, fails the run.
pub struct DataPath {
    seed: u64,
    /// Per local file: the stamp salt of its logical file, and how its offsets map to logical
    /// offsets.
    files: Vec<(u64, FileRole)>,
    /// Global file id per local file (what verification headers name).
    gids: Vec<u32>,
    tag: BlockTag,
    mem: Option<crate::plan::mem::Strided>,
    check_reads: bool,
}

impl DataPath {
    /// The data path of the worker `ctx` describes.
    pub fn new(ctx: &WorkerCtx<'_>) -> DataPath {
        DataPath::with(ctx.spec, &ctx.gids, ctx.tag)
    }

    /// A data path for files `gids` (global ids, in local order).
    pub fn with(spec: &Spec, gids: &[u32], tag: BlockTag) -> DataPath {
        let files = gids
            .iter()
            .map(|&g| {
                let role = FileRole::of(spec, g);
                (fill::file_salt(spec.seed, role.logical), role)
            })
            .collect();
        DataPath {
            seed: spec.seed,
            files,
            gids: gids.to_vec(),
            tag,
            mem: spec.mem(),
            check_reads: cfg!(debug_assertions) && !tag.verify && super::registry::real_io(&spec.engine),
        }
    }

    /// Fills a write buffer once, before timing starts.
    pub fn init_write_buf(&self, buf: &mut [u8]) {
        fill::fill(buf, self.seed);
    }

    /// Prepares `mem`, the memory of `op`, to be written: stamps its offsets and, when
    /// verifying, writes its header.
    #[inline(always)]
    pub fn before_write(&mut self, mem: &mut [u8], op: crate::plan::Op) {
        let (salt, role) = self.files[op.file as usize];
        let at = role.logical_offset(op.offset);
        match self.mem {
            None => {
                let block = &mut mem[..op.len as usize];
                fill::stamp(block, salt, at);
                if self.tag.verify {
                    verify::seal(block, &self.tag, self.gids[op.file as usize], op.offset);
                }
            }
            Some(m) => m.stamp(mem, salt, at, op.len as usize),
        }
    }

    /// Checks `mem`, the memory `op` read into: every written block it spans against its header
    /// when verifying; otherwise its stamps in debug builds, and nothing in release builds.
    #[inline(always)]
    pub fn after_read(&mut self, mem: &[u8], op: crate::plan::Op) -> std::result::Result<(), String> {
        if self.tag.verify {
            return self.verify_read(&mem[..op.len as usize], op);
        }
        // A constant in release builds: the stamp check is compiled out, not skipped per op.
        if !(cfg!(debug_assertions) && self.check_reads) {
            return Ok(());
        }
        let (salt, role) = self.files[op.file as usize];
        let at = role.logical_offset(op.offset);
        let bad = match self.mem {
            None => fill::check_stamps(&mem[..op.len as usize], salt, at, op.len),
            Some(m) => m.check_stamps(mem, salt, at, op.len as usize),
        };
        match bad {
            None => Ok(()),
            Some(at) => Err(format!(
                "read check: the {} bytes read at offset {} do not carry the stamp of offset {at}",
                op.len, op.offset
            )),
        }
    }

    /// A read may span several written blocks; each is checked against its header.
    fn verify_read(&self, block: &[u8], op: crate::plan::Op) -> std::result::Result<(), String> {
        let gid = self.gids[op.file as usize];
        let (salt, role) = self.files[op.file as usize];
        let bs = self.tag.written_bs.max(1) as usize;
        for (i, b) in block.chunks(bs).enumerate() {
            let off = op.offset + (i * bs) as u64;
            let stamp_at = role.logical_offset(off);
            if let Err(m) = verify::check(b, &self.tag, gid, off, salt, stamp_at) {
                return Err(self.explain(b, gid, off, (salt, stamp_at), m));
            }
        }
        Ok(())
    }

    #[cold]
    fn explain(&self, block: &[u8], gid: u32, offset: u64, stamp: (u64, u64), m: verify::Mismatch) -> String {
        let mut s = m.to_string();
        if m.field == "checksum"
            && let Some((at, want, got)) =
                verify::first_difference(block, &self.tag, self.seed, gid, offset, stamp)
        {
            s += &format!("; first differing byte at offset {at}: expected 0x{want:02x}, found 0x{got:02x}");
        }
        s
    }
}

/// Describes a short write with its cause: the rest of the block is written once more, through
/// a plain descriptor of the same file (opened only if it is still iolab's own, `id`), and the
/// kernel's answer names the reason where there is one (a quota, a file size limit, a full
/// disk). Only on the failure path.
#[cold]
pub fn short_write(
    path: &std::path::Path,
    id: crate::target::owned::FileId,
    rest: &[u8],
    at: u64,
    done: u64,
    len: u64,
) -> String {
    use std::os::unix::fs::FileExt;
    let again = crate::target::owned::open(path, id, true, 0)
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|f| f.write_at(rest, at));
    match again {
        Err(e) => format!("short write: {done} of {len} bytes (writing the rest: {e})"),
        Ok(n) => format!("short write: {done} of {len} bytes (writing the rest then moved {n} more)"),
    }
}
