//! Launchers: how workers come to exist (threads, child processes, MPI ranks) and how their
//! samples come back; the child-process protocol; the strategies' launchers; the MPI world
//! this process is part of, if any, and who started it (mpirun, srun).
//!
//! This file only dispatches to the launchers and names what the layers above use; no file of
//! launch/ imports it, and the files import each other without a cycle, so each launcher or
//! role reads top-down (tests/it/architecture.rs checks both).

pub mod child;
#[cfg(feature = "mpi")]
pub mod io_server;
#[cfg(feature = "mpi")]
mod io_server_loop;
pub mod launched;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "mpi")]
mod mpi_clock;
#[cfg(feature = "mpi")]
mod mpi_gather;
#[cfg(feature = "mpi")]
pub mod mpi_hosts;
#[cfg(feature = "mpi")]
mod mpi_order;
#[cfg(feature = "mpi")]
mod mpi_reply;
#[cfg(feature = "mpi")]
mod mpi_start;
#[cfg(feature = "mpi")]
mod mpi_sync;
#[cfg(feature = "mpi")]
mod mpi_trace;
#[cfg(feature = "mpi")]
mod mpi_tree;
#[cfg(feature = "mpi")]
mod mpi_watch;
pub mod process;
mod shared_wear;
pub mod slurm;
pub mod started_by;
#[cfg(feature = "mpi")]
pub mod strategy_mpi;
#[cfg(feature = "mpi")]
mod strategy_mpi_coord;
#[cfg(feature = "mpi")]
mod strategy_mpi_handoff;
pub mod strategy_process;
pub mod strategy_threads;
pub mod threads;
pub mod world;

use crate::error::{Error, Result};
use crate::spec::Launcher;
use crate::worker::{Monitor, PhaseJob};

pub use launched::{Launched, collect, join_all};
pub use started_by::{launcher_rank, launcher_var, refuse_launcher_without_mpi};
pub use world::{WorldInfo, oversubscription, rank_of, set_world, shared_host_names, world};

/// Runs a phase's workers with the spec's launcher (threads, processes or MPI ranks; with
/// I/O-server ranks, the servers' roles too).
pub fn launch(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Launched> {
    #[cfg(feature = "mpi")]
    if job.spec.servers.is_some() {
        return io_server::run_phase(job, monitor);
    }
    let def = LAUNCHERS
        .iter()
        .find(|d| d.launcher == job.spec.launcher)
        .ok_or_else(|| Error::spec("launcher", job.spec.launcher.name(), "not available in this build"))?;
    if job.spec.strategy.is_some() { (def.strategy)(job, monitor) } else { (def.workers)(job, monitor) }
}

/// Under MPI ranks, before a traced run: every rank but 0 checks its own trace spool has room
/// for its part of `specs`' traces; a refusal (exit 2) names the rank. Nothing elsewhere.
pub fn check_trace_spools(specs: &[crate::spec::Spec]) -> Result<()> {
    #[cfg(feature = "mpi")]
    return mpi::check_spools(specs);
    #[cfg(not(feature = "mpi"))]
    {
        let _ = specs;
        Ok(())
    }
}

/// Runs one phase's workers; returns their samples in worker order.
pub type PhaseFn = fn(&PhaseJob<'_>, &dyn Monitor) -> Result<Launched>;

/// A launcher: how the workers of a phase come to exist, for plain workers and for the roles
/// of a strategy.
pub struct LauncherDef {
    /// The word a spec uses for it (`launcher = ...`).
    pub launcher: Launcher,
    pub workers: PhaseFn,
    pub strategy: PhaseFn,
}

/// Every launcher of this build. Adding one is its file(s) here, one line in this table and
/// its word in [`Launcher`].
pub static LAUNCHERS: &[LauncherDef] = &[
    LauncherDef {
        launcher: Launcher::Thread,
        workers: |job, monitor| threads::run_phase_threads(job, monitor).map(Launched::of),
        strategy: |job, monitor| strategy_threads::run(job, monitor).map(Launched::of),
    },
    LauncherDef {
        launcher: Launcher::Process,
        workers: |job, monitor| process::run_phase_processes(job, monitor).map(Launched::of),
        strategy: |job, monitor| strategy_process::run(job, monitor).map(Launched::of),
    },
    #[cfg(feature = "mpi")]
    LauncherDef { launcher: Launcher::Mpi, workers: mpi::run_phase, strategy: mpi::run_strategy },
];

/// Whether this build can run MPI ranks.
pub const HAS_MPI: bool = cfg!(feature = "mpi");

/// The Slurm job this process runs in, for the results' host facts (None outside one).
pub fn slurm_job() -> Option<crate::env::host::SlurmJob> {
    slurm::job(started_by::start().and_then(|s| s.srun).as_deref())
}
