//! The time the slow ops carry, for the period detector: candidate lags from the spacing of the
//! ops that carry it, the fundamental period of a pattern (its spikes' lattice, neither a
//! harmonic nor a sub-multiple of it), and each period's share of the time.
//!
//! An op's excess is its latency beyond the series median (for dips, below it); a period's
//! share of the time is the excess of the ops on its phase over the series' whole excess, each
//! op counted for the longest period reported that holds it (a stall every 2048 reads that is
//! also on the phase of an every-512 pattern is the 2048's).

use super::{Period, phase_median};

/// The ops taken, by excess, to propose lags from their spacing: a few at each scale.
const HEAVY: [usize; 3] = [16, 64, 256];
/// Lags proposed at most per scale.
const HEAVY_LAGS: usize = 8;
/// A lattice holds its pattern when its spikes are in at least this share of its cycles.
const HOLDS: f64 = 0.75;

/// Each op's excess over the median, as spikes (`up`) and as dips (below the median); the
/// first op's is left out (it pays for starting: French et al.'s "large initial startup
/// cost", a cold read's first metadata reads), so it weighs in no period's time.
///
/// `spike` is the excess that makes an op a spike (or a dip) when a lattice is asked whether
/// it holds its pattern: the median itself (a spike takes at least twice the median op), and
/// at least 8 times the series' median absolute deviation, so the noise of the base is none,
/// and random stalls elsewhere (a loaded machine's) take no spike's place.
pub(super) struct Excess {
    pub up: Vec<f64>,
    pub down: Vec<f64>,
    pub spike: f64,
}

impl Excess {
    pub fn of(x: &[f64], median: f64) -> Excess {
        let side = |f: &dyn Fn(f64) -> f64| -> Vec<f64> {
            x.iter().enumerate().map(|(i, &v)| if i == 0 { 0.0 } else { f(v).max(0.0) }).collect()
        };
        let mut dev: Vec<f64> = x.iter().map(|v| (v - median).abs()).collect();
        let mad = super::median_of(&mut dev);
        Excess { up: side(&|v| v - median), down: side(&|v| median - v), spike: (8.0 * mad).max(median) }
    }

    /// The share of the cycles of lag `k` whose op at phase `at` is a spike (a dip).
    pub fn hits(&self, k: usize, at: usize, spike: bool) -> f64 {
        let e = self.side(spike);
        hits(e.len(), k, at, &|i| e[i] >= self.spike)
    }

    /// Whether the lattice of lag `k` at phase `at` holds the spikes (or dips) in at least 3
    /// cycles of 4.
    pub fn holds(&self, k: usize, at: usize, spike: bool) -> bool {
        self.hits(k, at, spike) >= HOLDS
    }

    pub fn side(&self, spike: bool) -> &[f64] {
        if spike { &self.up } else { &self.down }
    }
}

/// Lags between the ops that carry the time: for the 16, 64 and 256 ops of largest excess,
/// the distances between pairs of them (2 ..= `max_lag`) that recur at least 3 times and 4
/// times as often as distances between as many ops placed at random would, the most frequent
/// few of each. A stall every 2048 reads among jitter every 128 is found here even when the
/// autocorrelations peak elsewhere.
pub(super) fn heavy_lags(excess: &[f64], max_lag: usize) -> Vec<usize> {
    let n = excess.len();
    let mut order: Vec<usize> = (0..n).filter(|&i| excess[i] > 0.0).collect();
    order.sort_unstable_by(|&a, &b| excess[b].total_cmp(&excess[a]));
    let mut out = vec![];
    for m in HEAVY {
        if order.len() < m || max_lag < 2 {
            break;
        }
        let mut idx = order[..m].to_vec();
        idx.sort_unstable();
        let mut counts = std::collections::HashMap::<usize, u32>::new();
        for (a, &i) in idx.iter().enumerate() {
            for &j in &idx[a + 1..] {
                let d = j - i;
                if d > max_lag {
                    break;
                }
                if d >= 2 {
                    *counts.entry(d).or_default() += 1;
                }
            }
        }
        // Random positions: about 2 pairs / n at each small distance.
        let pairs = (m * (m - 1) / 2) as f64;
        let chance = 2.0 * pairs / n as f64;
        let mut lags: Vec<(usize, u32)> =
            counts.into_iter().filter(|&(_, c)| c >= 3 && f64::from(c) >= 4.0 * chance).collect();
        lags.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.extend(lags.into_iter().take(HEAVY_LAGS).map(|l| l.0));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The share of the cycles of lag `k` whose op at phase `at` passes `hit`.
fn hits(n: usize, k: usize, at: usize, hit: &dyn Fn(usize) -> bool) -> f64 {
    let cycles = n / k;
    (0..cycles).filter(|c| hit(at + c * k)).count() as f64 / cycles.max(1) as f64
}

/// Step 4: the fundamental period of the pattern `p` found (ranks `u`, latencies `x`, excess
/// `e` of its side).
/// 1. Up: when the lattice found does not hold the spikes in 3 of its cycles of 4, and at m
///    times the lag (m = 2, 3 or 4, at least 4 cycles) one of the m phases at + i k holds them
///    in at least 3 cycles of 4 and every other one in under half as many, the pattern recurs
///    every m k ops (a read-ahead window of 2048 reads seen first at 1024, its odd multiples
///    at baseline).
/// 2. The family: that lattice and its divisors at the same phase that hold the spikes in 3
///    of 4 cycles, and, when it holds them itself, its multiples by 2, 3 and 4 that do (each
///    at its phase with the most time); of these, the one whose spikes carry the most time in
///    3 of 4 cycles (cycles x the lower quartile of the excess on its phase: a few huge
///    stalls do not make a lattice, nor do small spikes on every op of a short one).
/// 3. A lattice at 2 or 3 times a shorter one of the family is its harmonic when each of the
///    longer lattice's phases on the shorter one holds the spikes in 3 cycles of 4 and the
///    shorter carries more time that way than any of its own divisors: a window stall
///    every 2048 reads with the device's long wait on every other one is every 2048, whatever
///    the sizes, not every 4096 (and not every 512, where page-cache spikes of tens of us
///    recur beneath the window's hundreds).
///
/// A spike is an op beyond [`Excess::spike`]: at least twice the median op.
pub(super) fn fundamental(x: &[f64], excess: &Excess, median: f64, p: Period) -> Period {
    let n = x.len();
    let spike = p.excess_ns > 0.0;
    let e = excess.side(spike);
    let (mut k, mut at) = (p.every_ops as usize, p.at_op as usize);
    let mut seen = vec![(k, at)];
    while let Some(v) = up(n, excess, k, at, spike).filter(|v| !seen.contains(v)) {
        seen.push(v);
        (k, at) = v;
    }
    // The family: (lag, phase, robust time, holds).
    let mut family: Vec<(usize, usize, f64, bool)> =
        vec![(k, at, robust_time(e, k, at), excess.holds(k, at, spike))];
    for d in (2..k).filter(|d| k % d == 0 && excess.holds(*d, at % *d, spike)) {
        family.push((d, at % d, robust_time(e, d, at % d), true));
    }
    // A lattice that holds may lie beneath a larger pattern on one phase of 2, 3 or 4 times it
    // (page-cache spikes every 512 reads under window stalls every 2048).
    if family[0].3 {
        for m in [2, 3, 4].into_iter().filter(|m| n / (m * k) >= 4) {
            let big = m * k;
            let col = |a: usize| (a..n).step_by(big).map(|i| e[i]).sum::<f64>();
            let a = (0..m).map(|i| at + i * k).max_by(|&a, &b| col(a).total_cmp(&col(b))).unwrap_or(at);
            if excess.holds(big, a, spike) {
                family.push((big, a, robust_time(e, big, a), true));
            }
        }
    }
    let mut best = family.iter().copied().fold(family[0], |b, f| if f.2 > b.2 { f } else { b });
    // A harmonic folds onto the shorter lattice it lies on.
    let under = |(d, a, ..): (usize, usize, f64, bool), (k, at, ..): (usize, usize, f64, bool)| {
        d < k && k % d == 0 && at % d == a
    };
    // Every phase of the longer lattice that the shorter one holds must hold the spikes itself
    // in 3 cycles of 4 (not only the phases together).
    let all_phases_hold = |(d, a, ..): (usize, usize, f64, bool), k: usize| {
        (0..k / d).all(|i| excess.holds(k, a + i * d, spike))
    };
    while let Some(f) = family.iter().copied().find(|&f| {
        under(f, best)
            && (best.0 / f.0 == 2 || best.0 / f.0 == 3)
            && all_phases_hold(f, best.0)
            && family.iter().all(|&g| !under(g, f) || f.2 >= g.2)
    }) {
        best = f;
    }
    let (k, at) = (best.0, best.1);
    if (k, at) == (p.every_ops as usize, p.at_op as usize) {
        return p;
    }
    let excess_ns = phase_median(x, k, at) - median;
    Period { every_ops: k as u64, at_op: at as u64, excess_ns, ..p }
}

/// The time the lattice's spikes carry in 3 cycles of 4: its cycles times the lower quartile
/// of the excess on its phase.
fn robust_time(e: &[f64], k: usize, at: usize) -> f64 {
    let cycles = e.len() / k;
    let mut v: Vec<f64> = (0..cycles).map(|c| e[at + c * k]).collect();
    if v.is_empty() {
        return 0.0;
    }
    let q = (v.len() - 1) / 4;
    let (_, &mut lower, _) = v.select_nth_unstable_by(q, f64::total_cmp);
    cycles as f64 * lower
}

fn up(n: usize, excess: &Excess, k: usize, at: usize, spike: bool) -> Option<(usize, usize)> {
    // A lattice that holds its spikes in 3 cycles of 4 is no part of a longer one.
    if excess.holds(k, at, spike) {
        return None;
    }
    for m in 2..=4 {
        let big = m * k;
        let cycles = n / big;
        if cycles < 4 {
            break;
        }
        let hs: Vec<f64> = (0..m).map(|i| excess.hits(big, at + i * k, spike)).collect();
        let (top_i, top) =
            hs.iter().copied().enumerate().fold((0, 0.0), |b, (i, h)| if h > b.1 { (i, h) } else { b });
        let rest = hs.iter().enumerate().filter(|(i, _)| *i != top_i).map(|(_, h)| *h).fold(0.0, f64::max);
        if top >= HOLDS && rest < 0.5 * top {
            return Some((big, at + top_i * k));
        }
    }
    None
}

/// Whether `p` lies on the phase of the shorter `d` of the same side (a multiple of it).
fn on_lattice(p: &Period, d: &Period) -> bool {
    d.every_ops < p.every_ops
        && p.every_ops % d.every_ops == 0
        && p.at_op % d.every_ops == d.at_op
        && (p.excess_ns > 0.0) == (d.excess_ns > 0.0)
}

/// Drops the harmonics among the periods found, once each is at its fundamental: a period
/// on the phase of a shorter one whose spikes are at most twice as large (step 3's rule, for
/// the lattices step 4 moved).
pub(super) fn drop_harmonics(periods: &mut Vec<Period>) {
    let all = periods.clone();
    periods.retain(|p| !all.iter().any(|d| on_lattice(p, d) && p.excess_ns.abs() <= 2.0 * d.excess_ns.abs()));
}

/// Each period's share of the series' excess time (spikes' excess for spikes, dips' for
/// dips). An op on the phases of several periods of its side is given to a component on top
/// of another (a multiple of it, on its phase) before that one, else to the one whose lattice
/// holds its spikes in the most cycles (the longer one when as many): a stall on the phase of
/// an every-2048 pattern and of a weaker every-3072 one is the 2048's, and one on every-2048
/// window stalls above page-cache spikes every 512 reads is the 2048's too.
pub(super) fn time_shares(excess: &Excess, periods: &mut [Period]) {
    let n = excess.up.len();
    for spike in [true, false] {
        let e = excess.side(spike);
        let total: f64 = e.iter().sum();
        let mut mine: Vec<(usize, f64)> = (0..periods.len())
            .filter(|&i| (periods[i].excess_ns > 0.0) == spike)
            .map(|i| {
                let (k, at) = (periods[i].every_ops as usize, periods[i].at_op as usize);
                (i, excess.hits(k, at, spike))
            })
            .collect();
        mine.sort_by(|a, b| b.1.total_cmp(&a.1).then(periods[b.0].every_ops.cmp(&periods[a.0].every_ops)));
        // A component on top of another comes before it.
        let mut moved = true;
        while moved {
            moved = false;
            for a in 0..mine.len() {
                if let Some(b) =
                    (a + 1..mine.len()).find(|&b| on_lattice(&periods[mine[b].0], &periods[mine[a].0]))
                {
                    let m = mine.remove(b);
                    mine.insert(a, m);
                    moved = true;
                    break;
                }
            }
        }
        let lattices: Vec<(usize, usize)> =
            periods.iter().map(|p| (p.every_ops as usize, p.at_op as usize)).collect();
        for (r, &(i, _)) in mine.iter().enumerate() {
            let (k, at) = lattices[i];
            let before: Vec<(usize, usize)> = mine[..r].iter().map(|&(j, _)| lattices[j]).collect();
            let own: f64 = (at..n)
                .step_by(k)
                .filter(|&op| !before.iter().any(|&(kj, aj)| op % kj == aj))
                .map(|op| e[op])
                .sum();
            periods[i].time_share = if total > 0.0 { own / total } else { 0.0 };
        }
    }
}
