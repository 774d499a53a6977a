//! The engine interface (how bytes move) and the registry of engines.
//!
//! An engine opens a worker's files, owns its buffers, and performs one op or one commit at a
//! time; the worker loop in [`crate::worker`] does the timing, ordering, stamping and sync
//! policy around it, the same for every engine. Adding an engine is one file here plus one line
//! in [`ENGINES`].

use std::io;
use std::path::PathBuf;

use crate::error::Result;
use crate::plan::Op;
use crate::spec::{OpenSync, SyncCall};
use crate::worker::{WorkerCtx, WorkerSample};

mod null;
mod psync;

/// What a worker's engine is asked to open.
pub struct Setup<'a> {
    /// The worker's files, in local index order (an [`Op::file`] indexes this).
    pub paths: &'a [PathBuf],
    /// Open for writing (write and rewrite phases).
    pub write: bool,
    pub direct: bool,
    pub open_sync: OpenSync,
    /// Bytes per op: the size of the I/O buffer.
    pub bs: usize,
}

/// One way of moving bytes between memory and files.
pub trait Engine: Sized + Send {
    /// Opens the files and allocates buffers (before the start barrier, not timed).
    fn open(setup: &Setup<'_>) -> Result<Self>;
    /// The memory the next op writes from or reads into (`bs` bytes).
    fn buf(&mut self) -> &mut [u8];
    /// Performs one op; returns the bytes transferred.
    fn io(&mut self, op: Op, write: bool) -> io::Result<u64>;
    /// Commits one file's written data.
    fn sync(&mut self, file: u32, call: SyncCall) -> io::Result<()>;
    /// Closes the files (timed separately from the data phase).
    fn close(self) -> io::Result<()>;
    /// The name of the system call behind [`Engine::io`], for error messages.
    fn call_name(write: bool) -> &'static str;
}

/// What an engine can do; the spec is checked against these before any I/O.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Supports O_DIRECT.
    pub direct: bool,
    /// Really touches files (false only for `null`).
    pub real_io: bool,
    /// Commit calls it accepts.
    pub sync_calls: &'static [SyncCall],
}

/// A registered engine.
pub struct EngineDef {
    pub name: &'static str,
    pub about: &'static str,
    pub caps: Caps,
    /// Runs one worker of one phase with this engine.
    pub run: fn(&WorkerCtx<'_>) -> Result<WorkerSample>,
}

/// Every engine, in the order `iolab engines` lists them.
pub static ENGINES: &[&EngineDef] = &[&psync::DEF, &null::DEF];

/// Looks an engine up by name.
pub fn find(name: &str) -> Option<&'static EngineDef> {
    ENGINES.iter().copied().find(|e| e.name == name)
}

/// The names of all engines.
pub fn names() -> Vec<&'static str> {
    ENGINES.iter().map(|e| e.name).collect()
}

/// Open flags shared by the file-descriptor engines.
pub fn open_options(setup: &Setup<'_>) -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(setup.write);
    let mut flags = 0;
    if setup.direct {
        flags |= libc::O_DIRECT;
    }
    match setup.open_sync {
        OpenSync::None => {}
        OpenSync::Sync => flags |= libc::O_SYNC,
        OpenSync::Dsync => flags |= libc::O_DSYNC,
    }
    o.custom_flags(flags);
    o
}
