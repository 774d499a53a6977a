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

/// All samples, or the most telling error: a real failure before the "aborted" echoes of it.
pub fn collect(results: Vec<Result<WorkerSample>>) -> Result<Vec<WorkerSample>> {
    let mut first_err = None;
    let mut samples = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(s) => samples.push(s),
            Err(e) => {
                let echo = matches!(&e, Error::Run(m) if m.starts_with("aborted"));
                if first_err.is_none() || (!echo && matches!(first_err, Some((true, _)))) {
                    first_err = Some((echo, e));
                }
            }
        }
    }
    match first_err {
        Some((_, e)) => Err(e),
        None => Ok(samples),
    }
}
