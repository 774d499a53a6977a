//! The engine interfaces (how bytes move), capability flags, and what engines share.
//!
//! An engine opens a worker's files, owns its buffers, and moves the bytes of one op (or, for
//! an asynchronous engine, of up to `iodepth` ops at once); the worker loops in
//! [`crate::worker`] and [`crate::worker::async_loop`] do the timing, ordering, stamping and commit
//! policy around it, the same for every engine. Engines import only what this file offers.
//! Adding an engine is one file here (with its `mod` line) plus one line in the registry,
//! [`crate::worker::registry::ENGINES`], which binds each engine to its timed loop.

use std::io;
use std::path::PathBuf;

use crate::error::Result;
use crate::plan::Op;
use crate::plan::mem::Strided;
use crate::spec::{OpenSync, SyncCall, SyncPolicy};
use crate::target::owned;
pub use crate::target::owned::FileId;

pub mod batch;
pub mod calls;
pub mod mmap;
#[cfg(feature = "mpi")]
pub mod mpiio;
pub mod null;
pub mod opts;
pub mod psync;
#[cfg(feature = "mpi")]
pub mod servers;
pub mod uring;
pub mod vsync;
#[cfg(feature = "mpi")]
pub mod wire;

#[cfg(test)]
mod tests;

pub use calls::{Call, CallCounts, CallMap};
/// The synchronous engines that write, for callers that drive one themselves (strategies).
pub(crate) use {mmap::Mmap, psync::Psync, vsync::Vsync};

/// What a worker's engine is asked to open.
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    /// The worker's files, in local index order (an [`Op::file`] indexes this).
    pub paths: &'a [PathBuf],
    /// What each file must still be: the inode iolab created (see [`crate::target::owned`]).
    pub ids: &'a [FileId],
    /// The final size of each file (what a write phase leaves).
    pub sizes: &'a [u64],
    /// Open for writing (write and rewrite phases).
    pub write: bool,
    pub direct: bool,
    pub open_sync: OpenSync,
    /// Bytes per op on disk.
    pub bs: usize,
    /// Strided memory (`None`: contiguous, `bs` bytes per op).
    pub mem: Option<Strided>,
    /// Ops in flight at once (1 for synchronous engines).
    pub iodepth: usize,
    /// `pieces = parallel` on a striped file: the pieces of one block, issued together
    /// (0: ops are issued one at a time).
    pub pieces: usize,
    /// mmap window in bytes (`None`: the whole file).
    pub window: Option<u64>,
    /// The commit policy of this phase (`None` for reads) and the commit call.
    pub sync: SyncPolicy,
    pub sync_call: SyncCall,
    /// Every worker of the phase opens the same file (the shared layouts): an MPI-IO engine
    /// opens it on all ranks together.
    pub shared_by_all: bool,
    /// `engine = mpiio`: collective or independent calls, and the hints.
    pub mpiio: Option<&'a crate::spec::MpiIo>,
    /// `engine = mpiio`: the worker sees only its own blocks of the file through an MPI file
    /// view, so op offsets count its own bytes (`None`: the whole file).
    pub view: Option<FileView>,
    /// `engine = servers`: which server rank holds each file, and how requests go.
    pub remote: Option<Remote<'a>>,
    /// The buffers made before the open was timed (`None`: the engine allocates its own).
    pub buffers: Option<&'a Buffers>,
}

/// What the client of I/O-server ranks needs to know (`engine = servers`).
#[derive(Debug, Clone)]
pub struct Remote<'a> {
    /// Global file id of each file (what requests name).
    pub gids: &'a [u32],
    /// The server (0..`count`) holding each file; server j is rank size - count + j.
    pub servers: Vec<u32>,
    pub count: u32,
    /// Requests in flight to one server at once.
    pub depth: usize,
    /// A blast: the bytes go to the server, which counts and drops them, by this transport.
    pub blast: Option<crate::spec::BlastTransport>,
}

/// A file as one worker sees it: `block` bytes at `disp`, `disp + stride`, `disp + 2 x stride`,
/// ... (its parts of an interleaved file); offset k of the view is byte
/// `disp + k / block x stride + k % block` of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileView {
    pub disp: u64,
    pub block: u64,
    pub stride: u64,
}

impl FileView {
    /// The view offset of file byte `offset`, if the view holds it.
    pub fn view_offset(self, offset: u64) -> Option<u64> {
        let rel = offset.checked_sub(self.disp)?;
        let (k, within) = (rel / self.stride, rel % self.stride);
        (within < self.block).then_some(k * self.block + within)
    }
}

impl<'a> Setup<'a> {
    /// A contiguous, buffered, depth-1 setup without commits (tests and simple callers).
    pub fn simple(
        paths: &'a [PathBuf],
        ids: &'a [FileId],
        sizes: &'a [u64],
        write: bool,
        bs: usize,
    ) -> Setup<'a> {
        Setup {
            paths,
            ids,
            sizes,
            write,
            direct: false,
            open_sync: OpenSync::None,
            bs,
            mem: None,
            iodepth: 1,
            pieces: 0,
            window: None,
            sync: SyncPolicy::None,
            sync_call: SyncCall::Fdatasync,
            shared_by_all: false,
            mpiio: None,
            view: None,
            remote: None,
            buffers: None,
        }
    }

    /// Bytes of memory behind one op.
    pub fn mem_bytes(&self) -> usize {
        self.mem.map_or(self.bs, |m| m.mem_bytes(self.bs))
    }
}

/// A failed system call: which one, and why.
#[derive(Debug)]
pub struct CallError {
    pub call: Call,
    pub err: io::Error,
}

impl CallError {
    pub fn new(call: Call, err: io::Error) -> CallError {
        CallError { call, err }
    }
    /// The last OS error, blamed on `call`.
    pub fn last(call: Call) -> CallError {
        CallError { call, err: io::Error::last_os_error() }
    }
}

/// What an engine call returns.
pub type CallResult<T> = std::result::Result<T, CallError>;

/// What [`Engine::io_pieces`] returns: on failure, the failed piece's index and its error.
pub type PiecesResult = std::result::Result<(), (usize, CallError)>;

/// A synchronous engine: one op at a time.
pub trait Engine: Sized + Send {
    /// The lengths of the buffers [`Engine::open`] takes with [`buffer`], allocated before its
    /// open is timed: one op's memory unless the engine says otherwise.
    fn buffers(setup: &Setup<'_>) -> Vec<usize> {
        vec![setup.mem_bytes()]
    }
    /// Opens the files and takes its buffers (before the start barrier, not timed).
    fn open(setup: &Setup<'_>) -> Result<Self>;
    /// The hints in effect on its files as the I/O library reports them after the open
    /// (MPI-IO); `None` for engines without hints.
    fn hints(&self) -> Option<&[(String, String)]> {
        None
    }
    /// The memory the next op writes from or reads into: `bs` bytes, or `bs / len * stride`
    /// bytes when memory is strided.
    fn buf(&mut self) -> &mut [u8];
    /// Performs one op; returns the bytes transferred.
    fn io(&mut self, op: Op, write: bool) -> CallResult<u64>;
    /// Performs the pieces of one striped block together (`pieces = parallel`; only engines
    /// whose [`Caps::parallel_pieces`] says so are asked): piece `i` moves bytes
    /// `[i x len, (i + 1) x len)` of [`Engine::buf`], where `len` is the pieces' common length.
    /// Returns when every piece is done, with the bytes each moved in `done[i]`; on a failed
    /// call, the index of the first piece that failed and its error.
    fn io_pieces(&mut self, pieces: &[Op], write: bool, done: &mut [u64]) -> PiecesResult {
        let _ = (pieces, done);
        let err = io::Error::new(io::ErrorKind::Unsupported, "this engine issues pieces one at a time");
        Err((0, CallError::new(if write { Call::Pwrite } else { Call::Pread }, err)))
    }
    /// Commits one file's written data.
    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()>;
    /// Releases everything; returns the system calls made since open.
    fn close(self) -> io::Result<CallCounts>;
    /// The name of the data call behind [`Engine::io`], for short-transfer messages.
    fn call_name(write: bool) -> &'static str;
}

/// One finished op of an asynchronous engine: its slot and its result (bytes, or -errno).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Done {
    pub slot: u32,
    pub res: i64,
}

/// An asynchronous engine: up to `iodepth` ops in flight, each in its own slot (buffer).
pub trait AsyncEngine: Sized + Send {
    /// The lengths of the buffers [`AsyncEngine::open`] takes with [`buffer`], allocated
    /// before its open is timed.
    fn buffers(setup: &Setup<'_>) -> Vec<usize>;
    /// Opens the files, allocates `iodepth` slot buffers (before the start barrier).
    fn open(setup: &Setup<'_>) -> Result<Self>;
    /// The memory of slot `slot` (`bs` bytes).
    fn slot_buf(&mut self, slot: usize) -> &mut [u8];
    /// Queues `op` in a free slot; it reaches the kernel at the next [`AsyncEngine::wait`].
    fn queue(&mut self, slot: usize, op: Op, write: bool) -> CallResult<()>;
    /// Submits everything queued, waits until at least `min_complete` ops have finished, and
    /// moves up to `done.len()` finished ops into `done`; returns how many.
    fn wait(&mut self, min_complete: usize, done: &mut [Done]) -> CallResult<usize>;
    /// Commits one file's written data (called only with nothing in flight).
    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()>;
    /// Waits for anything still in flight, releases everything; returns the calls made.
    fn close(self) -> io::Result<CallCounts>;
    /// The name of the data operation, for short-transfer messages.
    fn call_name(write: bool) -> &'static str;
}

/// What an engine can do; the spec is checked against these before any I/O.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Supports O_DIRECT.
    pub direct: bool,
    /// Supports O_SYNC / O_DSYNC opens (they mean something for its data calls).
    pub open_sync: bool,
    /// Really touches files (false only for `null`).
    pub real_io: bool,
    /// Commit calls it accepts; the first is its default.
    pub sync_calls: &'static [SyncCall],
    /// The largest `iodepth` (1: synchronous).
    pub max_iodepth: u32,
    /// How it moves strided memory, in words; `None` if it refuses strided memory.
    pub strided: Option<&'static str>,
    /// Hands strided pieces to the kernel as they are (so O_DIRECT needs them aligned).
    pub strided_to_kernel: bool,
    /// Maps files in windows (`window` applies).
    pub window: bool,
    /// Checks that the kernel offers what the engine needs; the reason if not.
    pub probe: fn() -> std::result::Result<(), String>,
    /// Must run on the launching thread (MPI is called only from a rank's main thread).
    pub main_thread: bool,
    /// Can issue the pieces of a striped block together (`pieces = parallel`,
    /// [`Engine::io_pieces`]).
    pub parallel_pieces: bool,
}

/// A probe for engines that need nothing special.
pub fn always_available() -> std::result::Result<(), String> {
    Ok(())
}

/// A registered engine.
pub struct EngineDef {
    pub name: &'static str,
    pub about: &'static str,
    pub caps: Caps,
}

/// Open flags shared by the file-descriptor engines (besides read and write).
pub fn open_flags(setup: &Setup<'_>) -> i32 {
    let mut flags = 0;
    if setup.direct {
        flags |= libc::O_DIRECT;
    }
    match setup.open_sync {
        OpenSync::None => {}
        OpenSync::Sync => flags |= libc::O_SYNC,
        OpenSync::Dsync => flags |= libc::O_DSYNC,
    }
    flags
}

/// Bytes of buffer memory one worker's engine allocates: `iodepth` slots of the memory behind
/// one op (`bs`, or `bs / mem_len x mem_stride` when strided), each rounded up to a page, plus a
/// packing buffer of `bs` for strided memory. `None` if that overflows 64 bits.
pub fn buffer_bytes(bs: u64, mem: Option<Strided>, iodepth: u32) -> Option<u64> {
    let slot = match mem {
        None => bs,
        Some(m) => (bs / m.len as u64).checked_mul(m.stride as u64)?.checked_add(bs)?,
    };
    slot.checked_next_multiple_of(4096)?.checked_mul(iodepth.max(1) as u64)
}

/// A worker's page-aligned buffer of `len` bytes (the same buffer serves O_DIRECT): one of
/// the setup's [`Buffers`] made before the open was timed, or else one allocated now; an
/// allocation the system refuses is an error naming the size, never an abort.
pub fn buffer(setup: &Setup<'_>, len: usize) -> Result<crate::env::sys::AlignedBuf> {
    if let Some(b) = setup.buffers.and_then(|b| b.take(len)) {
        return Ok(b);
    }
    allocate(setup, len)
}

fn allocate(setup: &Setup<'_>, len: usize) -> Result<crate::env::sys::AlignedBuf> {
    crate::env::sys::AlignedBuf::new(len, 4096).map_err(|e| {
        let at = setup.paths.first().map(|p| format!(" for {}", p.display())).unwrap_or_default();
        crate::error::Error::Run(format!("cannot allocate a buffer of {len} bytes{at}: {e}"))
    })
}

/// A worker's buffers, allocated and every page written before its open is timed (so the
/// open time is the files' and the engine's, not the memory's), then taken by the engine's
/// [`buffer`] calls by length as it opens.
pub struct Buffers(std::cell::RefCell<Vec<crate::env::sys::AlignedBuf>>);

impl Buffers {
    /// Buffers of `lens` bytes each (what the engine's `buffers` says its open asks for).
    pub fn allocate(setup: &Setup<'_>, lens: &[usize]) -> Result<Buffers> {
        let bufs = lens.iter().map(|&len| allocate(setup, len)).collect::<Result<Vec<_>>>()?;
        Ok(Buffers(std::cell::RefCell::new(bufs)))
    }

    /// The first buffer of exactly `len` bytes not yet taken.
    fn take(&self, len: usize) -> Option<crate::env::sys::AlignedBuf> {
        let mut bufs = self.0.borrow_mut();
        let i = bufs.iter().position(|b| b.len() == len)?;
        Some(bufs.swap_remove(i))
    }

    /// Buffers not taken (none, once the engine that asked for them has opened).
    pub fn left(&self) -> usize {
        self.0.borrow().len()
    }
}

impl std::fmt::Debug for Buffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lens: Vec<usize> = self.0.borrow().iter().map(|b| b.len()).collect();
        f.debug_tuple("Buffers").field(&lens).finish()
    }
}

/// Opens every file of a setup with [`open_flags`], each only if it is still the file iolab
/// created ([`crate::target::owned::open`]: no link followed, the same inode, one link).
pub fn open_files(setup: &Setup<'_>) -> Result<Vec<std::fs::File>> {
    let flags = open_flags(setup);
    setup
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let id = setup.ids.get(i).copied().ok_or_else(|| {
                crate::error::Error::Run(format!("{}: no identity to check it against", p.display()))
            })?;
            owned::open(p, id, setup.write, flags)
        })
        .collect()
}

/// The descriptors of a worker's files and the system calls made on them: what the engines
/// that move data with one call per op on a descriptor (psync, vsync) share.
pub struct FdFiles {
    pub files: Vec<std::fs::File>,
    pub calls: CallCounts,
}

impl FdFiles {
    pub fn open(setup: &Setup<'_>) -> Result<FdFiles> {
        Ok(FdFiles { files: open_files(setup)?, calls: CallCounts::default() })
    }

    /// Commits one file.
    pub fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()> {
        fd_sync(&self.files[file as usize], call, &mut self.calls)
    }

    /// Closes every file; the calls made since open.
    pub fn close(self) -> io::Result<CallCounts> {
        drop(self.files);
        Ok(self.calls)
    }
}

/// fsync or fdatasync on a descriptor, counted.
pub fn fd_sync(f: &std::fs::File, call: SyncCall, calls: &mut CallCounts) -> CallResult<()> {
    match call {
        SyncCall::Fsync => {
            calls.add(Call::Fsync);
            f.sync_all().map_err(|e| CallError::new(Call::Fsync, e))
        }
        SyncCall::Fdatasync => {
            calls.add(Call::Fdatasync);
            f.sync_data().map_err(|e| CallError::new(Call::Fdatasync, e))
        }
        SyncCall::Msync => Err(CallError::new(
            Call::Msync,
            io::Error::new(io::ErrorKind::Unsupported, "msync needs a mapping (engine mmap)"),
        )),
    }
}
