//! Write mechanisms: a strategy's writer drives an [`Engine`] (psync = write(), vsync =
//! writev(), mmap = windows and msync) through [`Mechanism`], one object whatever the engine,
//! so strided data and commits work exactly as the engines define them. The S5 sync thread
//! cannot share the writer's engine (it runs while the writer writes), so it commits through a
//! [`Committer`] of its own: its own descriptor (fsync, fdatasync), or for msync its own
//! mapping of the range written since its last commit (on Linux, msync(MS_SYNC) commits the
//! file's pages in that range, whichever mapping dirtied them).

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::engine::{Call, CallCounts, CallError, CallResult, Engine, Setup, fd_sync};
use crate::error::{Error, Result};
use crate::plan::Op;
use crate::spec::SyncCall;

/// Engines a strategy's writers can use: the synchronous engines that really write.
pub const MECHANISMS: &[&str] = &["psync", "vsync", "mmap"];

/// A writer's engine, whichever it is (one file, local index 0).
pub trait Mechanism: Send {
    /// The memory the next op writes from.
    fn buf(&mut self) -> &mut [u8];
    /// Writes one op; returns the bytes written.
    fn write(&mut self, op: Op) -> CallResult<u64>;
    /// Commits the file.
    fn sync(&mut self, call: SyncCall) -> CallResult<()>;
    /// Releases everything; returns the system calls made.
    fn close(self: Box<Self>) -> io::Result<CallCounts>;
    /// The data call, for messages.
    fn call_name(&self) -> &'static str;
}

impl<E: Engine> Mechanism for E {
    fn buf(&mut self) -> &mut [u8] {
        Engine::buf(self)
    }
    fn write(&mut self, op: Op) -> CallResult<u64> {
        Engine::io(self, op, true)
    }
    fn sync(&mut self, call: SyncCall) -> CallResult<()> {
        Engine::sync(self, 0, call)
    }
    fn close(self: Box<Self>) -> io::Result<CallCounts> {
        Engine::close(*self)
    }
    fn call_name(&self) -> &'static str {
        E::call_name(true)
    }
}

/// The buffers engine `name`'s open takes (see [`crate::engine::Engine::buffers`]).
pub fn buffers(name: &str, setup: &Setup<'_>) -> Vec<usize> {
    use crate::engine::{Engine, Mmap, Psync, Vsync};
    match name {
        "psync" => Psync::buffers(setup),
        "vsync" => Vsync::buffers(setup),
        "mmap" => Mmap::buffers(setup),
        #[cfg(feature = "mpi")]
        "mpiio" => crate::engine::mpiio::MpiIo::buffers(setup),
        _ => vec![],
    }
}

/// Opens engine `name` as a writer's mechanism.
pub fn open(name: &str, setup: &Setup<'_>) -> Result<Box<dyn Mechanism>> {
    use crate::engine::{Mmap, Psync, Vsync};
    Ok(match name {
        "psync" => Box::new(Psync::open(setup)?),
        "vsync" => Box::new(Vsync::open(setup)?),
        "mmap" => Box::new(Mmap::open(setup)?),
        // The MPI-IO strategy's writers (checked when the spec is resolved).
        #[cfg(feature = "mpi")]
        "mpiio" => Box::new(crate::engine::mpiio::MpiIo::open(setup)?),
        other => {
            return Err(Error::spec(
                "engine",
                other,
                format!("a strategy's writers use {}", MECHANISMS.join(", ")),
            ));
        }
    })
}

/// The S5 sync thread's way to commit a file it does not write.
pub struct Committer {
    file: File,
    call: SyncCall,
    pub calls: CallCounts,
}

impl Committer {
    pub fn open(path: &Path, id: crate::engine::FileId, call: SyncCall) -> Result<Committer> {
        // Writable: a shared mapping of a file opened read-only is not VM_SHARED, and msync
        // would commit nothing through it. Only iolab's own file (`id`) is opened.
        let file = crate::target::owned::open(path, id, true, 0)?;
        Ok(Committer { file, call, calls: CallCounts::default() })
    }

    /// Commits bytes `from..to` of the file (written since the last commit).
    pub fn commit(&mut self, from: u64, to: u64) -> CallResult<()> {
        if self.call != SyncCall::Msync {
            return fd_sync(&self.file, self.call, &mut self.calls);
        }
        if to <= from {
            return Ok(());
        }
        let page = crate::env::sys::page_size() as u64;
        let lo = from / page * page;
        let len = (to - lo) as usize;
        self.calls.add(Call::Mmap);
        // SAFETY: a fresh read-only shared view of `len` bytes of our own open file, within its
        // size (the writer sized it); never dereferenced, only passed to msync and munmap.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                lo as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(CallError::last(Call::Mmap));
        }
        self.calls.add(Call::Msync);
        // SAFETY: the mapping made above, whole.
        let rc = unsafe { libc::msync(ptr, len, libc::MS_SYNC) };
        let err = (rc != 0).then(|| CallError::last(Call::Msync));
        self.calls.add(Call::Munmap);
        // SAFETY: unmapping exactly the mapping made above.
        unsafe { libc::munmap(ptr, len) };
        err.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A committer msyncs through a mapping of its own (one mmap, msync and munmap per commit)
    /// while the writer's engine commits nothing; the data is in the file.
    #[test]
    fn a_committer_commits_what_another_mapping_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let len = 1 << 20;
        std::fs::write(&path, vec![0u8; len]).unwrap();
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        let paths = [path.clone()];
        let ids = crate::target::owned::ids_of(&paths).unwrap();
        let sizes = [len as u64];
        let mut setup = Setup::simple(&paths, &ids, &sizes, true, 65536);
        setup.sync_call = SyncCall::Msync;
        let mut m = open("mmap", &setup).unwrap();
        m.buf().fill(0xA5);
        m.write(Op { file: 0, offset: 0, len: 65536 }).unwrap();
        let mut c = Committer::open(&path, ids[0], SyncCall::Msync).unwrap();
        c.commit(0, 65536).unwrap();
        assert_eq!((c.calls.get(Call::Mmap), c.calls.get(Call::Msync), c.calls.get(Call::Munmap)), (1, 1, 1));
        let calls = m.close().unwrap();
        assert_eq!(calls.get(Call::Msync), 0, "the writer's engine committed nothing itself");
        let back = std::fs::read(&path).unwrap();
        assert!(back[..65536].iter().all(|&b| b == 0xA5));
        let mut f = Committer::open(&path, ids[0], SyncCall::Fdatasync).unwrap();
        f.commit(0, 0).unwrap();
        assert_eq!(f.calls.get(Call::Fdatasync), 1);
    }
}
