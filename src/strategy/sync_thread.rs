//! The S5 sync thread: the writer asks, through a [`Mailbox`], for what it has written to be
//! committed; the sync thread, woken each time, commits everything asked for since its last
//! commit while the writer goes on computing and writing.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};

use super::coord::{self, Group};
use super::loops::{Lap, RoleCtx};
use super::mechanism::Committer;
use super::shm;
use super::{Role, RoleSample, RoleTimes, gettid, thread_cpu_ns, thread_runq_ns};
use crate::error::{Error, Result};
use crate::worker::WorkerSample;

/// How the S5 writer and its sync thread talk: the writer asks for bytes to be committed up to
/// an offset; the sync thread commits everything asked for since its last commit (requests
/// that arrive while it commits are merged into its next one).
#[derive(Default)]
pub struct Mailbox {
    /// Bumped at every message to the sync thread, which sleeps on it.
    seq: AtomicU32,
    start_ns: AtomicU64,
    requested: AtomicU64,
    finish: AtomicBool,
    quit: AtomicBool,
    done: AtomicU64,
    /// Bumped at every commit done; the writer sleeps on it at the end.
    done_seq: AtomicU32,
}

impl Mailbox {
    fn poke(&self) {
        self.seq.fetch_add(1, Release);
        shm::futex_wake(&self.seq, 1);
    }
    pub fn start(&self, t: u64) {
        self.start_ns.store(t, Release);
        self.poke();
    }
    pub fn request(&self, upto: u64) {
        self.requested.store(upto, Release);
        self.poke();
    }
    pub fn finish(&self, total: u64) {
        self.requested.store(total, Release);
        self.finish.store(true, Release);
        self.poke();
    }
    pub fn quit(&self) {
        self.quit.store(true, Release);
        self.poke();
    }
    /// The writer waits until everything up to `total` is committed.
    pub fn wait_done(&self, total: u64, group: &dyn Group) -> Result<()> {
        loop {
            let ds = self.done_seq.load(Acquire);
            if self.done.load(Acquire) >= total {
                return Ok(());
            }
            if group.stopped() {
                return Err(coord::stopped());
            }
            shm::futex_wait(&self.done_seq, ds, shm::NAP_NS);
        }
    }
}

/// The S5 sync thread: woken whenever the writer has written the sync size, it commits what
/// was written since its last commit, while the writer goes on computing and writing.
pub fn sync_thread(ctx: &RoleCtx<'_>, mut c: Committer, mb: &Mailbox) -> Result<WorkerSample> {
    let r = sync_loop(ctx, &mut c, mb);
    if r.is_err() {
        ctx.coord.stop();
    }
    r
}

fn sync_loop(ctx: &RoleCtx<'_>, c: &mut Committer, mb: &Mailbox) -> Result<WorkerSample> {
    let co = ctx.coord;
    let tid = gettid();
    let path = ctx.role.write.as_ref().map(|w| ctx.paths[w.file as usize].as_path()).unwrap_or(Path::new(""));
    // Wait for the start.
    loop {
        let s = mb.seq.load(Acquire);
        if mb.start_ns.load(Acquire) != 0 {
            break;
        }
        if mb.quit.load(Acquire) || co.stopped() {
            return Err(coord::stopped());
        }
        shm::futex_wait(&mb.seq, s, shm::NAP_NS);
    }
    let start_ns = mb.start_ns.load(Acquire);
    let (cpu0, runq0) = (thread_cpu_ns(), thread_runq_ns());
    let mut t = RoleTimes::default();
    let mut lap = Lap { prev: start_ns };
    let (mut committed, mut calls) = (0u64, 0u64);
    let op_len = ctx.role.write.as_ref().map_or(0, |w| w.parts_per_op() as u64 * ctx.plan.bs);
    let mut spans = Vec::with_capacity(ctx.plan.commits_bound(ctx.spec.sync, op_len));
    loop {
        let s = mb.seq.load(Acquire);
        let want = mb.requested.load(Acquire);
        if want > committed {
            co.begin(false)?;
            let t0 = lap.to(&mut t.wait);
            let r = c.commit(committed, want);
            spans.push((t0, lap.to(&mut t.sync)));
            co.end(false);
            r.map_err(|e| Error::io(e.call.name(), path, Some(committed), e.err))?;
            calls += 1;
            committed = want;
            mb.done.store(want, Release);
            mb.done_seq.fetch_add(1, Release);
            shm::futex_wake(&mb.done_seq, 1);
            continue;
        }
        if mb.finish.load(Acquire) && committed >= mb.requested.load(Acquire) {
            break;
        }
        if mb.quit.load(Acquire) || co.stopped() {
            return Err(coord::stopped());
        }
        shm::futex_wait(&mb.seq, s, shm::NAP_NS);
    }
    let end_ns = lap.to(&mut t.wait);
    t.cpu = thread_cpu_ns().saturating_sub(cpu0);
    t.runq = thread_runq_ns().saturating_sub(runq0);
    Ok(WorkerSample {
        worker: ctx.plan.workers,
        bytes: 0,
        ops: 0,
        start_ns,
        end_ns,
        sync_ns: t.sync,
        sync_calls: calls,
        open_ns: 0,
        alloc_ns: None,
        hints: None,
        close_ns: 0,
        hist: crate::latency::SampleHist::empty(),
        trace: None,
        calls: c.calls.to_map(),
        max_inflight: 0,
        role: Some(Box::new(RoleSample {
            role: Role::Sync,
            tid,
            times: t,
            commit_tids: if calls > 0 { vec![tid] } else { vec![] },
            syncs_in_flight_max: 0,
            commit_spans_ns: spans,
        })),
        place: None,
        series: None,
        stonewall_ops: None,
        found: None,
        mix: None,
    })
}
