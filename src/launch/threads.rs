//! The thread launcher: a phase's workers as threads of this process (one worker with nothing
//! to show runs on the calling thread).

use std::sync::Barrier;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};

use crate::error::{Error, Result};
use crate::spec::StartMode;
use crate::worker::bound::{Cross, WearOut};
use crate::worker::{FreeStart, Monitor, Padded, PhaseJob, StartGate, WorkerSample};

use crate::launch::launched::collect;

/// Runs workers as threads of this process (one worker, with nothing to show while it runs:
/// on this thread).
pub fn run_phase_threads(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let all: Vec<usize> = (0..job.phase.workers.len()).collect();
    run_workers(job, &all, None, None, monitor)
}

/// The start gate of workers whose launching thread takes part in the start: every worker and
/// the launcher meet at `ready`, the launcher does its part (`across`: the barrier across MPI
/// ranks), then all meet at `go`.
struct TwoStep {
    ready: Barrier,
    go: Barrier,
}

impl StartGate for TwoStep {
    fn wait(&self) {
        self.ready.wait();
        self.go.wait();
    }
}

/// The start of a worker that runs on the launching thread: the launcher's part (`across`),
/// when the start is a barrier (with a free start it already ran).
struct AcrossGate<'a>(Option<&'a (dyn Fn() + Sync)>, bool);

impl StartGate for AcrossGate<'_> {
    fn wait(&self) {
        if let (Some(f), true) = (self.0, self.1) {
            f();
        }
    }
}

/// Runs the phase's workers `workers` (plan indices) as threads of this process. `across`, when given, is what
/// this thread does once all of them have opened their files and before any starts (with
/// `start = barrier`; with `start = free` it runs at once): the MPI launcher's barrier across
/// ranks. A rank with no worker in the phase still takes part in it. `cross`, when given, finds
/// the wear-out target across ranks after a stonewall (this thread calls it once per such
/// phase, whatever its workers do).
pub fn run_workers(
    job: &PhaseJob<'_>,
    workers: &[usize],
    across: Option<&(dyn Fn() + Sync)>,
    cross: Option<Cross<'_>>,
    monitor: &dyn Monitor,
) -> Result<Vec<WorkerSample>> {
    let n = workers.len();
    let barrier_start = job.spec.start != StartMode::Free;
    if let Some(f) = across
        && (n == 0 || !barrier_start)
    {
        f();
    }
    let cross = cross.filter(|_| job.wears_out());
    if n == 0 {
        if let Some(c) = cross {
            c(0);
        }
        return Ok(vec![]);
    }
    if n == 1 && !monitor.wants_ticks() && across.is_none() {
        return run_inline(job, workers[0], &FreeStart, None);
    }
    if n == 1 && job.engine.def.caps.main_thread {
        // An engine that must run on this thread (MPI-IO): the start is this thread's own.
        let across = AcrossGate(across, barrier_start);
        return run_inline(job, workers[0], &across, cross);
    }
    let (barrier, free) = (Barrier::new(n), FreeStart);
    let two = TwoStep { ready: Barrier::new(n + 1), go: Barrier::new(n + 1) };
    let gate: &dyn StartGate = match (barrier_start, across.is_some()) {
        (false, _) => &free,
        (true, true) => &two,
        (true, false) => &barrier,
    };
    let abort = AtomicBool::new(false);
    let progress: Vec<Padded<AtomicU64>> = (0..n).map(|_| Padded::default()).collect();
    let finished = AtomicUsize::new(0);
    let wear = WearOut::new(n as u64, cross.is_some());
    // The wear-out target across ranks, found by this thread once every worker here arrived.
    let settle_across = |all_done: bool| {
        if let Some(c) = cross
            && wear.target().is_none()
            && (all_done || wear.all_arrived())
        {
            wear.settle(c(wear.max()));
        }
    };
    // Workers wake this thread as they finish, so a phase ends as soon as its last worker
    // does, not at the next 50 ms tick.
    let coordinator = std::thread::current();
    let mut signal = None;
    let results: Vec<Result<WorkerSample>> = std::thread::scope(|s| {
        // Workers start with SIGINT/SIGTERM blocked, so the signals reach this thread (which
        // stops the phase) and never interrupt a worker's system call.
        let masked = crate::env::signals::Blocked::new();
        let handles: Vec<_> = workers
            .iter()
            .enumerate()
            .map(|(slot, &i)| {
                let mut ctx = job.ctx(i, gate, &abort, &progress[slot].0);
                ctx.wear = job.wears_out().then_some(&wear);
                let (abort, finished, coordinator) = (&abort, &finished, &coordinator);
                std::thread::Builder::new()
                    .name(format!("iolab-w{i}"))
                    .spawn_scoped(s, move || {
                        // Counts the worker as finished even if it panics, so the loop below
                        // always ends (the panic is reported by join).
                        let _done = Finished { finished, abort, coordinator };
                        let r = crate::worker::run(job.engine, &ctx);
                        if r.is_err() {
                            abort.store(true, Relaxed);
                        }
                        r
                    })
                    .expect("spawn worker thread")
            })
            .collect();
        drop(masked);
        if let Some(f) = across
            && barrier_start
        {
            two.ready.wait();
            f();
            two.go.wait();
        }
        let tick = std::time::Duration::from_millis(50);
        let mut last_tick = std::time::Instant::now();
        while finished.load(Acquire) < n {
            settle_across(false);
            // While the workers may be meeting after a stonewall, look every millisecond.
            let meeting = cross.is_some() && wear.target().is_none();
            let wait = if meeting { std::time::Duration::from_millis(1) } else { tick };
            std::thread::park_timeout(wait.min(tick.saturating_sub(last_tick.elapsed())));
            if finished.load(Acquire) == n {
                break;
            }
            if last_tick.elapsed() < tick {
                continue;
            }
            last_tick = std::time::Instant::now();
            let done = progress.iter().map(|p| p.0.load(Relaxed)).sum();
            if let Some(sig) = monitor.tick(done) {
                signal = Some(sig);
                abort.store(true, Relaxed);
            }
        }
        // Every rank takes part in the meeting once, whatever its workers did.
        settle_across(true);
        crate::launch::launched::join_all(handles, "a worker thread")
    });
    if let Some(sig) = signal {
        return Err(Error::Interrupted(sig));
    }
    collect(results)
}

/// Runs the one worker of a phase on this thread. A stop signal reaches it through
/// [`crate::env::signals::stop_requested`], which the loop reads before each op; a panic is
/// reported as an error, as from a thread.
fn run_inline(
    job: &PhaseJob<'_>,
    i: usize,
    gate: &dyn StartGate,
    cross: Option<Cross<'_>>,
) -> Result<Vec<WorkerSample>> {
    let (abort, progress) = (AtomicBool::new(false), AtomicU64::new(0));
    let wear = WearOut::new(1, false);
    let mut ctx = job.ctx(i, gate, &abort, &progress);
    if job.wears_out() {
        ctx.wear = Some(&wear);
        ctx.wear_cross = cross;
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::worker::run(job.engine, &ctx)))
        .unwrap_or_else(|_| Err(Error::Run("a worker panicked".into())));
    // A worker that failed before its loop met nobody: the other ranks still wait for this one.
    if let Some(c) = cross.filter(|_| job.wears_out() && wear.target().is_none()) {
        c(0);
    }
    if let Some(sig) = crate::env::signals::pending() {
        return Err(Error::Interrupted(sig));
    }
    collect(vec![r])
}

/// Marks a worker finished when dropped (at return or during a panic); a panic also stops the
/// other workers.
struct Finished<'a> {
    finished: &'a AtomicUsize,
    abort: &'a AtomicBool,
    coordinator: &'a std::thread::Thread,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.abort.store(true, Relaxed);
        }
        self.finished.fetch_add(1, Release);
        self.coordinator.unpark();
    }
}
