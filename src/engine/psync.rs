//! `psync`: pread/pwrite at explicit offsets, one op per system call (fio's psync, IOR's POSIX).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::{Caps, Engine, EngineDef, Setup, open_options};
use crate::error::{Error, Result};
use crate::plan::Op;
use crate::spec::SyncCall;
use crate::sys::AlignedBuf;

pub static DEF: EngineDef = EngineDef {
    name: "psync",
    about: "pread/pwrite at explicit offsets, one system call per op",
    caps: Caps { direct: true, real_io: true, sync_calls: &[SyncCall::Fsync, SyncCall::Fdatasync] },
    run: crate::worker::run_worker::<Psync>,
};

pub struct Psync {
    files: Vec<File>,
    buf: AlignedBuf,
}

impl Engine for Psync {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        let opts = open_options(setup);
        let files = setup
            .paths
            .iter()
            .map(|p| opts.open(p).map_err(|e| Error::io("open", p, None, e)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Psync {
            files,
            // Page-aligned so the same buffer serves O_DIRECT.
            buf: AlignedBuf::new(setup.bs, 4096),
        })
    }

    #[inline(always)]
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    #[inline(always)]
    fn io(&mut self, op: Op, write: bool) -> io::Result<u64> {
        let f = &self.files[op.file as usize];
        let buf = &mut self.buf[..op.len as usize];
        let n = if write { f.write_at(buf, op.offset)? } else { f.read_at(buf, op.offset)? };
        Ok(n as u64)
    }

    fn sync(&mut self, file: u32, call: SyncCall) -> io::Result<()> {
        let f = &self.files[file as usize];
        match call {
            SyncCall::Fsync => f.sync_all(),
            SyncCall::Fdatasync => f.sync_data(),
        }
    }

    fn close(self) -> io::Result<()> {
        drop(self.files);
        Ok(())
    }

    fn call_name(write: bool) -> &'static str {
        if write { "pwrite" } else { "pread" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OpenSync;
    use std::os::unix::io::AsRawFd;

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
        for (direct, open_sync, want) in [
            (false, OpenSync::None, 0),
            (true, OpenSync::None, libc::O_DIRECT),
            (false, OpenSync::Dsync, libc::O_DSYNC),
            (false, OpenSync::Sync, libc::O_SYNC),
        ] {
            let setup = Setup { paths: &paths, write: true, direct, open_sync, bs: 4096 };
            let e = Psync::open(&setup).unwrap();
            let flags = fd_flags(&e.files[0]);
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
        let setup = Setup { paths: &paths, write: true, direct: true, open_sync: OpenSync::None, bs: 8192 };
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
    }
}
