//! A worker's time bound inside its timed loop ([`Limits`]): which op comes next (wrapping
//! around the blocks under `runtime`), when to stop (the deadline, or the last block under
//! `stonewall`), and with `wear_out` the meeting after the stonewall ([`WearOut`]) where the
//! workers learn the most ops any of them had done, to go on to.
//!
//! The loop asks [`Limits::go`] before each op: two comparisons while no deadline is near,
//! no allocation, no lock. Waiting for the other workers happens once per phase, after the
//! stonewall, outside the steady loop.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};

use crate::spec::TimeBound;

use super::WorkerCtx;

/// Not known yet (a target no worker could reach).
const UNKNOWN: u64 = u64::MAX;

/// Where a phase's workers on one host (threads, or processes through a shared mapping) meet
/// after the stonewall: each says how many ops it had done; once all have, the target is the
/// largest (across MPI ranks: the largest of every rank's, found by the rank's launcher).
/// Plain atomics, valid in memory shared between processes; all zeros is "not set up".
#[repr(C)]
#[derive(Default)]
pub struct WearOut {
    workers: AtomicU64,
    arrived: AtomicU64,
    max: AtomicU64,
    target: AtomicU64,
    /// 1: the launcher settles the target across ranks, not the last worker to arrive.
    across: AtomicU64,
}

impl WearOut {
    /// A meeting of `workers` workers; `across`: the target comes from the launcher.
    pub fn new(workers: u64, across: bool) -> WearOut {
        let w = WearOut::default();
        w.init(workers, across);
        w
    }

    /// Sets up a meeting in place (in memory shared with child processes).
    pub fn init(&self, workers: u64, across: bool) {
        self.workers.store(workers, Relaxed);
        self.arrived.store(0, Relaxed);
        self.max.store(0, Relaxed);
        self.target.store(UNKNOWN, Relaxed);
        self.across.store(across as u64, Release);
    }

    /// A worker arrives having done `ops` ops; true when it is the last of them.
    pub fn arrive(&self, ops: u64) -> bool {
        self.max.fetch_max(ops, AcqRel);
        self.arrived.fetch_add(1, AcqRel) + 1 >= self.workers.load(Acquire)
    }

    /// Whether every worker has arrived.
    pub fn all_arrived(&self) -> bool {
        self.arrived.load(Acquire) >= self.workers.load(Acquire)
    }

    /// The most ops any worker here had done.
    pub fn max(&self) -> u64 {
        self.max.load(Acquire)
    }

    /// Whether the launcher settles the target (across MPI ranks).
    pub fn across(&self) -> bool {
        self.across.load(Acquire) == 1
    }

    /// Every worker's target: the most ops any worker (anywhere) had done.
    pub fn settle(&self, target: u64) {
        self.target.store(target.min(UNKNOWN - 1), Release);
    }

    /// The target, once settled.
    pub fn target(&self) -> Option<u64> {
        Some(self.target.load(Acquire)).filter(|&t| t != UNKNOWN)
    }
}

/// Finds the target across MPI ranks from this rank's largest count (a collective every rank
/// calls once per phase), on the thread allowed to call MPI.
pub type Cross<'a> = &'a (dyn Fn(u64) -> u64 + Sync);

/// The loop's view of its bound: the next op's index and whether to go on.
pub struct Limits<'a> {
    /// Stop before op `end` (the ops with data; none under `runtime`).
    end: u64,
    /// Ops with data: op k is op k mod `extent` of the plan.
    extent: u64,
    /// CLOCK_MONOTONIC ns at which to stop (or meet); `u64::MAX`: none (left).
    deadline_ns: u64,
    wraps: bool,
    wear: Option<&'a WearOut>,
    cross: Option<Cross<'a>>,
    arrived: bool,
    abort: &'a AtomicBool,
    /// Ops done when the stonewall came (None: no stonewall, or the blocks ran out first).
    pub stonewall_ops: Option<u64>,
}

impl<'a> Limits<'a> {
    /// The limits of `ctx`'s worker, whose clock started at `start_ns`.
    pub fn new(ctx: &WorkerCtx<'a>, start_ns: u64) -> Limits<'a> {
        // An order that draws goes on drawing past its planned ops instead of wrapping round.
        let endless = ctx.bound.is_some_and(|b| b.wraps()) && ctx.plan.ops.endless();
        let extent = if endless { u64::MAX } else { ctx.extent };
        let (wraps, deadline_ns) = match ctx.bound {
            None => (false, u64::MAX),
            Some(b) => (b.wraps(), start_ns.saturating_add(b.ns())),
        };
        let wear_out = matches!(ctx.bound, Some(TimeBound::Stonewall { wear_out: true, .. }));
        Limits {
            end: if wraps && extent > 0 { u64::MAX } else { extent },
            extent,
            deadline_ns,
            wraps,
            wear: ctx.wear.filter(|_| wear_out),
            cross: ctx.wear_cross,
            arrived: false,
            abort: ctx.abort,
            stonewall_ops: None,
        }
    }

    /// The plan's index of the `k`-th op done.
    #[inline(always)]
    pub fn index(&self, k: u64) -> u64 {
        if k < self.extent { k } else { k % self.extent }
    }

    /// Whether the `k`-th op is to be done; `now` reads the clock (only while a deadline is
    /// ahead).
    #[inline(always)]
    pub fn go(&mut self, k: u64, now: impl FnOnce() -> u64) -> bool {
        if k >= self.end {
            self.leave(k);
            return false;
        }
        if self.deadline_ns != u64::MAX && now() >= self.deadline_ns {
            return self.at_deadline(k);
        }
        true
    }

    /// Whether a deadline is still ahead (an asynchronous loop stops filling its ring there).
    #[inline(always)]
    pub fn timed(&self) -> bool {
        self.deadline_ns != u64::MAX
    }

    #[cold]
    fn at_deadline(&mut self, k: u64) -> bool {
        self.deadline_ns = u64::MAX;
        if self.wraps {
            self.end = k;
            return false;
        }
        self.stonewall_ops = Some(k);
        let Some(w) = self.wear else {
            self.end = k;
            return false;
        };
        let target = self.meet(w, k);
        self.end = target.clamp(k, self.extent);
        k < self.end
    }

    /// The loop ends (its blocks done, or stopped): says so at the meeting if it has not.
    fn leave(&mut self, k: u64) {
        if let Some(w) = self.wear
            && !self.arrived
        {
            self.arrived = true;
            if w.arrive(k) {
                self.settle(w);
            }
        }
    }

    /// Arrives with `k` ops and waits for the target (or a stop).
    fn meet(&mut self, w: &WearOut, k: u64) -> u64 {
        self.arrived = true;
        if w.arrive(k) {
            self.settle(w);
        }
        let mut spins = 0u32;
        loop {
            if let Some(t) = w.target() {
                return t;
            }
            if self.abort.load(Relaxed) || crate::env::signals::stop_requested() {
                return k;
            }
            spins += 1;
            if spins < 100 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }

    /// The last worker here to arrive sets the target: across ranks through `cross` when this
    /// thread may call MPI, else (threads and processes of one host) the largest count here.
    fn settle(&self, w: &WearOut) {
        match self.cross {
            Some(c) => w.settle(c(w.max())),
            None if !w.across() => w.settle(w.max()),
            // The launcher's thread settles it across ranks.
            None => {}
        }
    }
}

impl Drop for Limits<'_> {
    /// A loop that fails still arrives (with no ops), so the others are not left waiting.
    fn drop(&mut self) {
        if let Some(w) = self.wear
            && !self.arrived
        {
            self.arrived = true;
            if w.arrive(0) {
                self.settle(w);
            }
        }
    }
}

/// After a time-bounded phase that wrote: per worker, the timed ops of its plan that now hold
/// data (the fewer of those it did and those that held data before, `before`; empty: all).
/// Empty again when every worker did all of its ops.
pub fn extents_after(
    phase: &crate::plan::PhasePlan,
    samples: &[super::WorkerSample],
    before: &[u64],
) -> Vec<u64> {
    let planned: Vec<u64> = phase.workers.iter().map(|w| w.ops.timed_ops()).collect();
    let mut out = planned.clone();
    for s in samples {
        let w = s.worker as usize;
        if let Some(e) = out.get_mut(w) {
            *e = s.ops.min(*e).min(before.get(w).copied().unwrap_or(u64::MAX));
        }
    }
    if out == planned { vec![] } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last of three workers to arrive settles the target at the largest count, and the
    /// others see it; an arrival with no ops (a failed worker) counts.
    #[test]
    fn the_meeting_settles_at_the_largest_count() {
        let w = WearOut::new(3, false);
        assert!(!w.arrive(40));
        assert!(!w.arrive(0));
        assert!(w.target().is_none());
        assert!(w.arrive(25));
        assert!(w.all_arrived());
        assert_eq!(w.max(), 40);
        w.settle(w.max());
        assert_eq!(w.target(), Some(40));
        let across = WearOut::new(1, true);
        assert!(across.across() && !w.across());
    }
}
