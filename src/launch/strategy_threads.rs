//! The thread launcher of strategies: one thread per worker (the S5 writer starts its sync
//! thread itself), all coordinated through one shared region; this thread shows progress and
//! stops the run on a signal.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::error::{Error, Result};
use crate::strategy::Plan;
use crate::strategy::coord::Group;
use crate::strategy::loops::{self, RoleCtx};
use crate::strategy::shm::{Layout, Shm};
use crate::worker::{Monitor, PhaseJob, WorkerSample};

/// Runs the phase's roles as threads of this process.
pub fn run(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let spec = job.spec;
    let plan = Plan::of(spec).ok_or_else(|| Error::Run("no strategy in this spec".into()))?;
    let shm = Shm::create(Layout::of(&plan, spec.mem()))?;
    let n = plan.roles.len();
    let finished = AtomicUsize::new(0);
    let mut signal = None;
    let results: Vec<Result<Vec<WorkerSample>>> = std::thread::scope(|s| {
        // Started with SIGINT/SIGTERM blocked, so signals reach this thread, which stops the run.
        let masked = crate::env::signals::Blocked::new();
        let handles: Vec<_> = plan
            .roles
            .iter()
            .map(|r| {
                let ctx = RoleCtx {
                    spec,
                    plan: &plan,
                    role: r,
                    paths: job.paths,
                    ids: job.ids,
                    sizes: job.sizes,
                    coord: &shm,
                };
                let (finished, shm) = (&finished, &shm);
                std::thread::Builder::new()
                    .name(format!("iolab-s{}", r.worker))
                    .spawn_scoped(s, move || {
                        let _done = Finished { finished, shm };
                        loops::run(&ctx)
                    })
                    .expect("spawn strategy worker thread")
            })
            .collect();
        drop(masked);
        while finished.load(Relaxed) < n {
            std::thread::sleep(std::time::Duration::from_millis(50));
            if let Some(sig) = monitor.tick(shm.progress_total()) {
                signal = Some(sig);
                shm.stop();
            }
        }
        crate::launch::launched::join_all(handles, "a strategy worker thread")
    });
    if let Some(sig) = signal {
        return Err(Error::Interrupted(sig));
    }
    finish(results)
}

/// Marks a role finished when dropped; a panic stops the run.
struct Finished<'a> {
    finished: &'a AtomicUsize,
    shm: &'a Shm,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shm.stop();
        }
        self.finished.fetch_add(1, Relaxed);
    }
}

/// Every role's samples in worker order, each told the run's most commits in flight; or the
/// error that stopped the run (a real failure before the "aborted" echoes of it).
pub fn finish(results: Vec<Result<Vec<WorkerSample>>>) -> Result<Vec<WorkerSample>> {
    let mut samples: Vec<WorkerSample> =
        crate::launch::launched::collect(results)?.into_iter().flatten().collect();
    samples.sort_by_key(|s| s.worker);
    crate::strategy::count_in_flight(&mut samples);
    Ok(samples)
}
