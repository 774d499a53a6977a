//! Launchers: how workers come to exist (threads, child processes) and how their samples come
//! back; the child-process protocol; the strategies' launchers.

pub mod child;
pub mod process;
pub mod strategy_process;
pub mod strategy_threads;
pub mod threads;

use crate::error::{Error, Result};
use crate::spec::Launcher;
use crate::worker::{Monitor, PhaseJob, WorkerSample};

/// Runs a phase's workers with the spec's launcher (threads or processes).
pub fn launch(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let def = LAUNCHERS
        .iter()
        .find(|d| d.launcher == job.spec.launcher)
        .ok_or_else(|| Error::spec("launcher", job.spec.launcher.name(), "not available in this build"))?;
    if job.spec.strategy.is_some() { (def.strategy)(job, monitor) } else { (def.workers)(job, monitor) }
}

/// Runs one phase's workers; returns their samples in worker order.
pub type PhaseFn = fn(&PhaseJob<'_>, &dyn Monitor) -> Result<Vec<WorkerSample>>;

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
        workers: threads::run_phase_threads,
        strategy: strategy_threads::run,
    },
    LauncherDef {
        launcher: Launcher::Process,
        workers: process::run_phase_processes,
        strategy: strategy_process::run,
    },
];

/// Every worker's result, or the most telling error: a real failure before the "aborted"
/// echoes of it.
pub fn collect<T>(results: Vec<Result<T>>) -> Result<Vec<T>> {
    let mut err = None;
    let mut all = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(s) => all.push(s),
            Err(e) => Error::keep_telling(&mut err, e),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(all),
    }
}

/// Joins scoped worker threads in order; a thread that panicked is an error naming `what`.
pub fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>, what: &str) -> Vec<Result<T>> {
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| Err(Error::Run(format!("{what} panicked")))))
        .collect()
}
