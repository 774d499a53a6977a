//! The registry of engines: each engine bound to the timed loop that runs it (the synchronous
//! loop for one-op-at-a-time engines, the asynchronous one for engines with ops in flight).
//! Adding an engine is its file under `engine/` plus one line in [`ENGINES`].

use crate::engine::{AsyncEngine, Engine, EngineDef};
use crate::engine::{mmap::Mmap, null::Null, psync::Psync, uring::Uring, vsync::Vsync};
use crate::error::Result;
use crate::worker::{WorkerCtx, WorkerSample};

/// Runs one worker of one phase.
pub type RunFn = fn(&WorkerCtx<'_>) -> Result<WorkerSample>;

/// An engine and the loop that runs it.
pub struct Registered {
    pub def: &'static EngineDef,
    pub run: RunFn,
}

impl Registered {
    /// A synchronous engine, run by [`crate::worker::sync_loop::run_worker`].
    const fn sync<E: Engine>(def: &'static EngineDef) -> Registered {
        Registered { def, run: crate::worker::sync_loop::run_worker::<E> }
    }
    /// An asynchronous engine, run by [`crate::worker::async_loop::run_async_worker`].
    const fn with_depth<E: AsyncEngine>(def: &'static EngineDef) -> Registered {
        Registered { def, run: crate::worker::async_loop::run_async_worker::<E> }
    }
}

/// Every engine, in the order `iolab engines` lists them.
pub static ENGINES: &[Registered] = &[
    Registered::sync::<Psync>(&crate::engine::psync::DEF),
    Registered::sync::<Vsync>(&crate::engine::vsync::DEF),
    Registered::sync::<Mmap>(&crate::engine::mmap::DEF),
    Registered::with_depth::<Uring>(&crate::engine::uring::DEF),
    #[cfg(feature = "mpi")]
    Registered::sync::<crate::engine::mpiio::MpiIo>(&crate::engine::mpiio::DEF),
    #[cfg(feature = "mpi")]
    Registered::sync::<crate::engine::servers::ServersEngine>(&crate::engine::servers::DEF),
    Registered::sync::<Null>(&crate::engine::null::DEF),
];

/// Looks an engine up by name.
pub fn find(name: &str) -> Option<&'static Registered> {
    ENGINES.iter().find(|e| e.def.name == name)
}

/// Whether the engine named `name` really touches files (false for `null` and unknown names).
pub fn real_io(name: &str) -> bool {
    find(name).is_some_and(|e| e.def.caps.real_io)
}

/// The names of all engines.
pub fn names() -> Vec<&'static str> {
    ENGINES.iter().map(|e| e.def.name).collect()
}
