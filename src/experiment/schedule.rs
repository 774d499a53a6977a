//! The order of an experiment's runs: every point's repetitions interleaved round-robin (the
//! default) or shuffled with a seed, so a slow drift of the machine does not bias one point;
//! each point's warm-up runs come right before its first measured run; and the most phase
//! runs an experiment may hold. Pure.

use crate::error::{Error, Result};
use crate::plan::splitmix64;
pub use crate::spec::Interleave;

/// The most phase runs (over all points: (repetitions + warm-ups) x phases) one experiment may
/// hold: each is a result kept in memory until the experiment ends, and a row in the store.
pub const MAX_PHASE_RUNS: u64 = 1_000_000;

/// Refuses an experiment of more than [`MAX_PHASE_RUNS`] phase runs; `points` gives each
/// point's (repetitions, warm-ups, phases).
pub fn check_size(points: impl Iterator<Item = (u32, u32, usize)>) -> Result<()> {
    let (mut n, mut total) = (0u64, 0u64);
    for (reps, warmup, phases) in points {
        n += 1;
        total = total.saturating_add((reps as u64 + warmup as u64).saturating_mul(phases as u64));
    }
    if total > MAX_PHASE_RUNS {
        return Err(Error::spec(
            "points x (reps + warmup) x phases",
            format!("{n} point(s), {total} phase runs"),
            format!(
                "an experiment holds at most {MAX_PHASE_RUNS} phase runs; use fewer sweep points, repetitions or phases"
            ),
        ));
    }
    Ok(())
}

/// One run to do: a point, its repetition number, and whether it is a warm-up (numbered
/// separately from the measured repetitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub point: usize,
    pub rep: u32,
    pub warmup: bool,
}

/// The runs of points with `reps[p]` measured and `warmups[p]` warm-up repetitions.
///
/// Round-robin: repetition 0 of every point in point order, then repetition 1, ... (points
/// with fewer repetitions drop out). Shuffle: the same runs in a random order drawn from
/// `seed` (Fisher-Yates over SplitMix64), each point's repetitions numbered in the order they
/// run. Either way, point p's warm-ups run immediately before its first measured run.
pub fn schedule(reps: &[u32], warmups: &[u32], interleave: Interleave) -> Vec<Slot> {
    let max = reps.iter().copied().max().unwrap_or(0);
    let mut measured: Vec<usize> = vec![];
    for r in 0..max {
        for (p, &n) in reps.iter().enumerate() {
            if r < n {
                measured.push(p);
            }
        }
    }
    if let Interleave::Shuffle(seed) = interleave {
        let mut state = seed;
        for i in (1..measured.len()).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            measured.swap(i, j);
        }
    }
    let mut next_rep = vec![0u32; reps.len()];
    let mut out = Vec::with_capacity(measured.len() + warmups.iter().map(|&w| w as usize).sum::<usize>());
    for p in measured {
        if next_rep[p] == 0 {
            for w in 0..warmups.get(p).copied().unwrap_or(0) {
                out.push(Slot { point: p, rep: w, warmup: true });
            }
        }
        out.push(Slot { point: p, rep: next_rep[p], warmup: false });
        next_rep[p] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(slots: &[Slot]) -> Vec<String> {
        slots.iter().map(|s| format!("{}{}{}", if s.warmup { "w" } else { "p" }, s.point, s.rep)).collect()
    }

    #[test]
    fn experiments_hold_at_most_a_million_phase_runs() {
        assert!(check_size([(5, 0, 3)].into_iter()).is_ok());
        assert!(check_size(std::iter::repeat_n((100_000, 0, 10), 1)).is_ok());
        match check_size(std::iter::repeat_n((5, 1, 3), 100_000)) {
            Err(Error::Spec { field, value, reason }) => {
                assert_eq!(field, "points x (reps + warmup) x phases");
                assert_eq!(value, "100000 point(s), 1800000 phase runs");
                assert!(reason.contains("at most 1000000"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(check_size(std::iter::repeat_n((u32::MAX, u32::MAX, usize::MAX), 3)).is_err());
    }

    #[test]
    fn round_robin_over_points() {
        let s = schedule(&[3, 3], &[0, 0], Interleave::RoundRobin);
        assert_eq!(show(&s), ["p00", "p10", "p01", "p11", "p02", "p12"]);
    }

    #[test]
    fn points_with_fewer_reps_drop_out() {
        let s = schedule(&[1, 3, 2], &[0, 0, 0], Interleave::RoundRobin);
        assert_eq!(show(&s), ["p00", "p10", "p20", "p11", "p21", "p12"]);
    }

    #[test]
    fn warmups_come_right_before_the_first_measured_run() {
        let s = schedule(&[2, 2], &[1, 2], Interleave::RoundRobin);
        assert_eq!(show(&s), ["w00", "p00", "w10", "w11", "p10", "p01", "p11"]);
    }

    #[test]
    fn shuffle_is_a_reproducible_permutation_numbered_in_run_order() {
        let reps = [4, 4, 4];
        let a = schedule(&reps, &[1, 0, 0], Interleave::Shuffle(7));
        assert_eq!(a, schedule(&reps, &[1, 0, 0], Interleave::Shuffle(7)));
        assert_ne!(show(&a), show(&schedule(&reps, &[1, 0, 0], Interleave::Shuffle(8))));
        assert_ne!(
            show(&a),
            show(&schedule(&reps, &[1, 0, 0], Interleave::RoundRobin)),
            "seed 7 must not give the round-robin order"
        );
        // Every (point, rep) exactly once, reps of each point numbered 0, 1, 2, 3 in run order.
        for p in 0..3 {
            let mine: Vec<u32> = a.iter().filter(|s| s.point == p && !s.warmup).map(|s| s.rep).collect();
            assert_eq!(mine, [0, 1, 2, 3]);
        }
        let first0 = a.iter().position(|s| s.point == 0).unwrap();
        assert_eq!(a[first0], Slot { point: 0, rep: 0, warmup: true });
        assert_eq!(a[first0 + 1], Slot { point: 0, rep: 0, warmup: false });
        assert_eq!(a.len(), 13);
    }

    #[test]
    fn shuffle_order_is_exact_for_a_fixed_seed() {
        // Fisher-Yates over SplitMix64, computed independently (by hand in Python): a change to
        // the generator or the shuffle would silently change every experiment's run order.
        let s = schedule(&[2, 2, 2], &[0, 0, 0], Interleave::Shuffle(1));
        assert_eq!(show(&s), ["p00", "p10", "p01", "p20", "p11", "p21"]);
        let s = schedule(&[4, 4, 4], &[1, 0, 0], Interleave::Shuffle(7));
        let points: Vec<usize> = s.iter().map(|s| s.point).collect();
        assert_eq!(points, [1, 2, 2, 1, 1, 1, 2, 2, 0, 0, 0, 0, 0]);
        assert!(s[8].warmup && !s[9].warmup);
    }
}
