//! What the ranks of an MPI run tell each other while a phase's workers run (in a build with
//! the `mpi` feature), beside the I/O and never inside it:
//!
//! - Progress: every half second each rank sends its parent in the binomial tree of ranks
//!   (`mpi_tree`) its subtree's count of bytes (or ops), the share it has to do and the rank
//!   furthest behind in it; rank 0 shows the whole run's count. The counts are the ones the
//!   workers keep for the progress display anyway, read by each rank's main thread while it
//!   waits for its workers: no timed loop does any work for it. Sent only when rank 0 shows
//!   something, and not in phases with I/O-server ranks (which take any message) or strategy
//!   roles (which run on the main thread).
//! - A stop: rank 0, stopped by a signal, tells its children in the tree and each rank its own,
//!   so every rank stops its workers (its next tick, within 50 ms), and rank 0 waits for every
//!   rank's reply before anything of the phase is removed.
//!
//! Each message carries the phase's number, so one left over from an earlier phase is taken
//! and dropped.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::env::monitor::RanksProgress;
use crate::launch::mpi_tree::{children, parent};
use crate::worker::Monitor;

/// The tags of the counts going up the tree and of the stop going down.
const PROGRESS: i32 = 11;
const STOP: i32 = 12;
/// How often a rank sends its subtree's counts to its parent.
pub(super) const REPORT_EVERY: Duration = Duration::from_millis(500);

/// A subtree's counts: what its ranks did and have to do, how many of them are counted, and
/// the one furthest behind (rank, done, its share; share 0: not known, in a time-bounded phase).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counts {
    pub done: u64,
    pub part: u64,
    pub heard: u64,
    pub slow: (u64, u64, u64),
}

impl Counts {
    pub fn own(rank: u32, done: u64, part: u64) -> Counts {
        Counts { done, part, heard: 1, slow: (u64::from(rank), done, part) }
    }

    /// `o`'s ranks counted in too; the slower of the two subtrees' slowest kept.
    pub fn add(&mut self, o: &Counts) {
        self.done = self.done.saturating_add(o.done);
        self.part = self.part.saturating_add(o.part);
        self.heard += o.heard;
        if behind(o.slow, self.slow) {
            self.slow = o.slow;
        }
    }

    fn words(&self, seq: u64) -> [u64; 7] {
        [seq, self.done, self.part, self.heard, self.slow.0, self.slow.1, self.slow.2]
    }

    fn of(w: &[u64]) -> Option<(u64, Counts)> {
        let &[seq, done, part, heard, r, d, p] = w else { return None };
        Some((seq, Counts { done, part, heard, slow: (r, d, p) }))
    }
}

/// Whether rank `a` (rank, done, share) is further behind than `b`: the smaller share done, or
/// where a share is not known, the less done; the lower rank between equals.
fn behind(a: (u64, u64, u64), b: (u64, u64, u64)) -> bool {
    let (ka, kb) = if a.2 > 0 && b.2 > 0 {
        (u128::from(a.1) * u128::from(b.2), u128::from(b.1) * u128::from(a.2))
    } else {
        (u128::from(a.1), u128::from(b.1))
    };
    ka < kb || (ka == kb && a.0 < b.0)
}

/// Takes every count waiting for this rank; keeps each child's latest of phase `seq`.
fn drain(seq: u64, kids: &mut Vec<(u32, Counts)>) {
    let comm = SimpleCommunicator::world();
    while let Some(p) = comm.any_process().immediate_matched_probe_with_tag(PROGRESS) {
        let (words, status) = p.matched_receive_vec::<u64>();
        let Some((_, c)) = Counts::of(&words).filter(|(s, _)| *s == seq) else { continue };
        let from = status.source_rank() as u32;
        match kids.iter_mut().find(|(k, _)| *k == from) {
            Some(k) => k.1 = c,
            None => kids.push((from, c)),
        }
    }
}

/// A serving rank, while it waits: rank 0's stop of phase `seq`, when its parent has passed
/// it on, passed on to this rank's children; the signal it came from. Taken once.
pub(super) fn pass_stop(seq: u64) -> Option<i32> {
    let comm = SimpleCommunicator::world();
    let (rank, size) = (comm.rank() as u32, comm.size() as u32);
    let from = parent(rank)?;
    let p = comm.process_at_rank(from as i32).immediate_matched_probe_with_tag(STOP)?;
    let (words, _) = p.matched_receive_vec::<u64>();
    let [s, sig] = words[..] else { return None };
    if s != seq {
        return None;
    }
    tell_stop(&comm, rank, size, seq, sig);
    Some(sig as i32)
}

fn tell_stop(comm: &SimpleCommunicator, rank: u32, size: u32, seq: u64, sig: u64) {
    for c in children(rank, size) {
        comm.process_at_rank(c as i32).send_with_tag(&[seq, sig][..], STOP);
    }
}

/// A serving rank's watch of its phase: the monitor its workers' loop ticks about every 50 ms
/// with their count.
pub(super) struct RankWatch {
    seq: u64,
    /// Send counts up the tree.
    report: bool,
    /// This rank's share of the phase (0: not known).
    part: u64,
    /// When it last sent, its children's latest counts, the stop heard.
    state: Mutex<(Instant, Kids, Option<i32>)>,
}

/// Each child's rank and its subtree's latest counts.
type Kids = Vec<(u32, Counts)>;

impl RankWatch {
    pub fn new(seq: u64, report: bool, part: u64) -> RankWatch {
        RankWatch { seq, report, part, state: Mutex::new((Instant::now(), vec![], None)) }
    }
}

impl Monitor for RankWatch {
    fn tick(&self, done: u64) -> Option<i32> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.2.is_none() {
            st.2 = pass_stop(self.seq);
        }
        if self.report && st.0.elapsed() >= REPORT_EVERY {
            st.0 = Instant::now();
            drain(self.seq, &mut st.1);
            let comm = SimpleCommunicator::world();
            let rank = comm.rank() as u32;
            let mut c = Counts::own(rank, done, self.part);
            st.1.iter().for_each(|(_, k)| c.add(k));
            if let Some(to) = parent(rank) {
                // 56 bytes: sent eagerly, whatever the parent is doing.
                comm.process_at_rank(to as i32).send_with_tag(&c.words(self.seq)[..], PROGRESS);
            }
        }
        st.2
    }

    fn wants_ticks(&self) -> bool {
        true
    }
}

/// This rank's share of a phase, in what its workers' counts count (bytes, or a metadata
/// phase's items): its workers' `mine`; 0 in a time-bounded phase, whose share is not known.
pub(super) fn share(spec: &crate::spec::Spec, phase: &crate::plan::PhasePlan, mine: &[usize]) -> u64 {
    if spec.phases.get(phase.index).is_some_and(|ph| spec.phase_bound(ph).is_some()) {
        return 0;
    }
    let of = |w: &crate::plan::WorkerPlan| w.md.map_or_else(|| w.ops.bytes(), |m| m.items);
    mine.iter().filter_map(|&i| phase.workers.get(i)).map(of).sum()
}

/// Rank 0's watch of a phase: the command line's monitor shown every rank's count, and the
/// stop told down the tree once a signal came (`tell`: not to I/O-server ranks, which take
/// any message).
pub(super) struct RootWatch<'a> {
    inner: &'a dyn Monitor,
    seq: u64,
    report: bool,
    tell: bool,
    part: u64,
    hosts: &'a [Arc<str>],
    /// The children's latest counts; whether the stop was told.
    state: Mutex<(Vec<(u32, Counts)>, bool)>,
}

impl<'a> RootWatch<'a> {
    pub fn new(
        inner: &'a dyn Monitor,
        (seq, report, tell): (u64, bool, bool),
        part: u64,
        hosts: &'a [Arc<str>],
    ) -> RootWatch<'a> {
        RootWatch { inner, seq, report, tell, part, hosts, state: Mutex::new((vec![], false)) }
    }
}

impl Monitor for RootWatch<'_> {
    fn tick(&self, done: u64) -> Option<i32> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let sig = if self.report {
            drain(self.seq, &mut st.0);
            let mut c = Counts::own(0, done, self.part);
            st.0.iter().for_each(|(_, k)| c.add(k));
            let (r, d, p) = c.slow;
            let host = self.hosts.get(r as usize).map_or("?", |h| h).to_string();
            let ranks = RanksProgress {
                heard: c.heard as u32,
                ranks: self.hosts.len() as u32,
                slowest: Some((r as u32, host, d, p)),
            };
            self.inner.tick_ranks(c.done, &ranks)
        } else {
            self.inner.tick(done)
        };
        let sig = sig.or_else(crate::env::signals::pending);
        if let Some(s) = sig
            && self.tell
            && !st.1
        {
            st.1 = true;
            let comm = SimpleCommunicator::world();
            tell_stop(&comm, 0, comm.size() as u32, self.seq, s as u64);
        }
        sig
    }

    fn wants_ticks(&self) -> bool {
        true
    }

    fn note(&self, msg: &str) {
        self.inner.note(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Up the tree the counts add, and the rank furthest behind is the smallest share done
    /// (the least done where shares are not known), whichever subtree it is in.
    #[test]
    fn counts_add_and_keep_the_rank_furthest_behind() {
        let mut a = Counts::own(0, 50, 100);
        let mut b = Counts::own(2, 30, 100);
        b.add(&Counts::own(3, 90, 400));
        assert_eq!(b.slow, (3, 90, 400));
        a.add(&b);
        assert_eq!((a.done, a.part, a.heard, a.slow), (170, 600, 3, (3, 90, 400)));
        assert_eq!(Counts::of(&a.words(7)), Some((7, a)));
        assert_eq!(Counts::of(&[1, 2]), None);
        let mut t = Counts::own(0, 500, 0);
        t.add(&Counts::own(1, 400, 0));
        assert_eq!(t.slow, (1, 400, 0));
        assert!(behind((1, 5, 10), (2, 5, 10)) && !behind((2, 5, 10), (1, 5, 10)));
    }
}
