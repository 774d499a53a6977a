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
    match (job.spec.strategy.is_some(), job.spec.launcher) {
        (false, Launcher::Thread) => threads::run_phase_threads(job, monitor),
        (false, Launcher::Process) => process::run_phase_processes(job, monitor),
        (true, Launcher::Thread) => strategy_threads::run(job, monitor),
        (true, Launcher::Process) => strategy_process::run(job, monitor),
    }
}

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
