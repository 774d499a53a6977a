//! `psync`: pread/pwrite at explicit offsets, one op per system call (fio's psync, IOR's POSIX).
//! Strided memory is first packed into a contiguous buffer (writes) or unpacked from it
//! (reads) inside the op, so the copy counts, as it does for a program that must do it.
//! With `pieces = parallel` the pieces of a striped block go together, as one io_uring batch
//! ([`super::batch`]): the positioned reads or writes of pread/pwrite, in flight at once.

use std::fs::File;
use std::io;
use std::mem::ManuallyDrop;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use super::batch::Batch;
use super::{
    Call, CallCounts, CallError, CallResult, Caps, Engine, EngineDef, FdFiles, PiecesResult, Setup, buffer,
};
use crate::env::sys::AlignedBuf;
use crate::error::Result;
use crate::plan::Op;
use crate::plan::mem::Strided;
use crate::spec::SyncCall;

pub static DEF: EngineDef = EngineDef {
    name: "psync",
    about: "pread/pwrite at explicit offsets, one system call per op; strided memory is packed first",
    caps: Caps {
        direct: true,
        open_sync: true,
        real_io: true,
        sync_calls: &[SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: 1,
        strided: Some("packs into a contiguous buffer"),
        strided_to_kernel: false,
        window: false,
        probe: super::always_available,
        main_thread: false,
        parallel_pieces: true,
    },
};

pub struct Psync {
    fds: FdFiles,
    /// The worker's memory: contiguous data, or the strided source/destination. Freed only
    /// when no piece of a batch is in flight (see `Drop`).
    buf: ManuallyDrop<AlignedBuf>,
    /// With strided memory: the contiguous buffer the system calls use.
    packed: Option<(Strided, AlignedBuf)>,
    /// `pieces = parallel`: the ring a block's pieces go through together.
    batch: Option<Batch>,
}

impl Engine for Psync {
    fn buffers(setup: &Setup<'_>) -> Vec<usize> {
        // One op's memory, and with strided memory the block it is packed into.
        let mut lens = vec![setup.mem_bytes()];
        lens.extend(setup.mem.map(|_| setup.bs));
        lens
    }

    fn open(setup: &Setup<'_>) -> Result<Self> {
        let fds = FdFiles::open(setup)?;
        let batch = match setup.pieces {
            0 => None,
            n => Some(Batch::new(&fds.files, n, setup.paths.first().map_or(Path::new(""), |p| p.as_path()))?),
        };
        Ok(Psync {
            fds,
            batch,
            // Page-aligned so the same buffer serves O_DIRECT.
            buf: ManuallyDrop::new(buffer(setup, setup.mem_bytes())?),
            packed: setup
                .mem
                .map(|m| Ok::<_, crate::error::Error>((m, buffer(setup, setup.bs)?)))
                .transpose()?,
        })
    }

    #[inline(always)]
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf[..]
    }

    #[inline(always)]
    fn io(&mut self, op: Op, write: bool) -> CallResult<u64> {
        let f = &self.fds.files[op.file as usize];
        let len = op.len as usize;
        let n = match &mut self.packed {
            None => {
                let buf = &mut self.buf[..len];
                if write {
                    self.fds.calls.add(Call::Pwrite);
                    pwrite(f, buf, op.offset).map_err(|e| CallError::new(Call::Pwrite, e))?
                } else {
                    self.fds.calls.add(Call::Pread);
                    pread(f, buf, op.offset).map_err(|e| CallError::new(Call::Pread, e))?
                }
            }
            Some((m, packed)) => {
                let packed = &mut packed[..len];
                if write {
                    m.gather(&self.buf, packed);
                    self.fds.calls.add(Call::Pwrite);
                    f.write_at(packed, op.offset).map_err(|e| CallError::new(Call::Pwrite, e))?
                } else {
                    self.fds.calls.add(Call::Pread);
                    let n = f.read_at(packed, op.offset).map_err(|e| CallError::new(Call::Pread, e))?;
                    m.scatter(packed, &mut self.buf);
                    n
                }
            }
        };
        Ok(n as u64)
    }

    fn io_pieces(&mut self, pieces: &[Op], write: bool, done: &mut [u64]) -> PiecesResult {
        match &mut self.batch {
            Some(b) => b.run(&mut self.buf, pieces, write, done, &mut self.fds.calls),
            None => {
                let err = io::Error::other("opened without pieces = parallel");
                Err((0, CallError::new(Call::IoUringEnter, err)))
            }
        }
    }

    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()> {
        self.fds.sync(file, call)
    }

    fn close(mut self) -> io::Result<CallCounts> {
        if let Some(b) = &mut self.batch
            && !b.drain()
        {
            return Err(io::Error::other("io_uring: pieces still in flight at close"));
        }
        // The files close as `self` drops.
        Ok(self.fds.calls)
    }

    fn call_name(write: bool) -> &'static str {
        if write { "pwrite" } else { "pread" }
    }
}

impl Drop for Psync {
    fn drop(&mut self) {
        if self.batch.as_mut().is_none_or(|b| b.drain()) {
            // SAFETY: no piece is in flight, so the kernel no longer touches the buffer; it is
            // dropped only here.
            unsafe { ManuallyDrop::drop(&mut self.buf) };
        }
        // Otherwise the buffer is leaked: the kernel may still write into it.
    }
}

/// pread(2) straight to libc: std's `read_at` does the same call behind a few more layers,
/// which show in a loop of cached 4 KiB reads.
#[inline(always)]
fn pread(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes; the descriptor is open.
    let n = unsafe { libc::pread(f.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), offset as libc::off_t) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

/// pwrite(2) straight to libc (see [`pread`]).
#[inline(always)]
fn pwrite(f: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes; the descriptor is open.
    let n = unsafe { libc::pwrite(f.as_raw_fd(), buf.as_ptr().cast(), buf.len(), offset as libc::off_t) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OpenSync;

    /// The open flags the kernel reports for a descriptor (octal in /proc/self/fdinfo).
    fn fd_flags(f: &File) -> u32 {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", f.as_raw_fd())).unwrap();
        let line = info.lines().find(|l| l.starts_with("flags:")).unwrap();
        u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
    }

    #[test]
    fn open_flags_reach_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 8192]).unwrap();
        let paths = [path];
        let ids = crate::target::owned::ids_of(&paths).unwrap();
        for (direct, open_sync, want) in [
            (false, OpenSync::None, 0),
            (true, OpenSync::None, libc::O_DIRECT),
            (false, OpenSync::Dsync, libc::O_DSYNC),
            (false, OpenSync::Sync, libc::O_SYNC),
        ] {
            let mut setup = Setup::simple(&paths, &ids, &[8192], true, 4096);
            setup.direct = direct;
            setup.open_sync = open_sync;
            let e = Psync::open(&setup).unwrap();
            let flags = fd_flags(&e.fds.files[0]);
            assert_eq!(flags & want as u32, want as u32, "direct={direct} {open_sync:?}: flags {flags:o}");
            if want == 0 {
                assert_eq!(flags & (libc::O_DIRECT | libc::O_SYNC) as u32, 0);
            }
        }
    }

    #[test]
    fn direct_reads_and_writes_move_aligned_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 16384]).unwrap();
        let paths = [path.clone()];
        let ids = crate::target::owned::ids_of(&paths).unwrap();
        let mut setup = Setup::simple(&paths, &ids, &[16384], true, 8192);
        setup.direct = true;
        let mut e = Psync::open(&setup).unwrap();
        e.buf().fill(0x5A);
        let op = Op { file: 0, offset: 8192, len: 8192 };
        assert_eq!(e.io(op, true).unwrap(), 8192);
        e.buf().fill(0);
        assert_eq!(e.io(op, false).unwrap(), 8192);
        assert!(e.buf().iter().all(|&b| b == 0x5A));
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk[..8192].iter().all(|&b| b == 0));
        assert!(on_disk[8192..].iter().all(|&b| b == 0x5A));
        let calls = e.close().unwrap();
        assert_eq!((calls.get(Call::Pwrite), calls.get(Call::Pread)), (1, 1));
    }
}
