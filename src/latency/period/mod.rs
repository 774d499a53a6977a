//! Periodicity in a latency series: finds the dominant periods of per-op latency (e.g. a
//! prefetch spike every 8 reads, an indirect-block fetch every 512, as French, Pratt and Das
//! 1991 saw on Intel CFS; a read-ahead window every 32 4 KiB reads) and reports each with the
//! share of the time it carries, the one that carries the most first.
//!
//! Method, for a series x_0 .. x_{n-1} (at most [`MAX_OPS`] ops are analysed). The tests are
//! on ranks, u_i = (midrank of x_i + 1/2) / n in (0, 1), so a few huge stalls weigh no more
//! than any other slow op, and with no period every u_i is uniform on (0, 1).
//! 1. Candidate lags, 2 <= k <= n/4 (a period recurs at least four times): every k <= 16,
//!    and the local maxima of at least 2 / sqrt(n) (white noise has r(k) about N(0, 1/n)),
//!    the 32 highest of each, of the autocorrelations (biased estimator, r(k) =
//!    sum_{i < n-k} d_i d_{i+k} / sum_i d_i^2, by FFT) of the series, of its ranks and of the
//!    indicators u_i > 1 - q and u_i < q for q = 1/8, 1/64, 1/512 (sparse spikes, a small part
//!    of the variance, stand out there). Twice and three times each period found are tried
//!    too, and, when no more are found, the divisors k/2 .. k/8 of each period found and the
//!    greatest common divisor of each pair (a weak period may be no candidate while its
//!    multiples pass). And the lags between the ops that carry the time (`time.rs`: the
//!    distances that recur among the 16, 64 and 256 ops of largest excess), tried even where a
//!    shorter period found has as high an autocorrelation.
//! 2. Recurrence test: fold the first C = floor(n/k) cycles by k. For each phase j and each
//!    level q = 2^-l (l = 1 .. floor(log2 n)), count the cycles in which u_{j + ck} lies
//!    beyond 1 - q (spikes) or below q (dips). With no period that count is binomial(C, q),
//!    its tail probability at most exp(-C D(h || q)) (h the fraction counted, D the
//!    Kullback-Leibler divergence). The lag passes if its smallest bound, multiplied by the
//!    tests that can be made (4 x candidates x k phases x levels x 2 sides), is below 10^-3,
//!    with at least 3 cycles counted, and if the median at that phase departs from the
//!    series median by at least 10% of it. A few stalls that happen to lie k apart, a trend
//!    or a burst of slow ops fail it; spikes missing in some cycles or one op early or late
//!    pass it.
//! 3. Partial patterns and multiples: a period d is dropped when, for m = 2, 3 or 4, the
//!    phases j, j + d, .. j + (m-1) d of lag m d differ in mean rank by more than 4 standard
//!    deviations, the least under a quarter of the largest: d saw a pattern in only some of
//!    its cycles (a lag sharing a factor with the true period; that period, or m d, is found
//!    on its own). Then, by increasing lag, a multiple of a kept period at the same phase mod
//!    that period is a harmonic unless its median excess is more than twice the period's (a
//!    separate, larger component, like the every-512 spikes on top of every-8 ones); a
//!    multiple peaking at another phase is a component of its own.
//!
//! 4. The fundamental period of each (`time.rs`, `fundamental`): a pattern that recurs only on
//!    one phase of 2, 3 or 4 times the lag found is reported at that longer lag; of the lag
//!    and its divisors whose phase holds the spikes in 3 cycles of 4, the one whose spikes
//!    carry the most time in 3 cycles of 4; and a lattice at 2 or 3 times a shorter one that
//!    holds is that one's harmonic (a window stall every 2048 reads with the device's long
//!    wait on every other one is every 2048 reads).
//! 5. Each period's share of the time (`time_share`: the excess over the series median of
//!    the ops on its phase, over the series' whole excess, the first op left out; an op on
//!    several periods' phases counted once) and of the slow ops (`explains`); the periods
//!    that carry the most time first, at most [`MAX_PERIODS`].
//!
//! Its synthetic test set (`synthetic.rs`: periods 4 to 512, spikes 1.5 to 100 times a noisy
//! base, jitter, missing cycles, random stalls; and series with none) states the detection
//! and false-alarm rates: 207 of 210 planted periods found (98.6%; the first reported in all
//! 207), none reported in 96 series without one (0%). Real traces of read-ahead (`traces/`:
//! a virtio disk and a loop device, read-ahead 2 and 8 MiB) check that the window comes
//! first, and `tests/it/readahead.rs` sets a loop device's read-ahead to several values.
//!
//! Each period is reported with its strength (the largest autocorrelation of step 1 at its
//! lag), the phase j where the pattern peaks, the excess (median at j minus the series
//! median, in ns: positive for spikes, negative for dips), the share of the pattern's ops it
//! explains and the share of the time it carries.

mod acf;
#[cfg(test)]
mod synthetic;
#[cfg(test)]
mod tests;
mod time;

pub use acf::autocorrelation;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Ops analysed at most (the first ones of a longer series).
pub const MAX_OPS: usize = 1 << 20;
/// Periods reported at most.
pub const MAX_PERIODS: usize = 3;
/// Fewer ops than this are too few to say anything.
pub const MIN_OPS: usize = 32;
/// Candidate lags examined at most per autocorrelation (the ones with the highest r).
const MAX_CANDIDATES: usize = 32;
/// Tail levels whose indicator series propose candidates.
const TAIL_LEVELS: [f64; 3] = [1.0 / 8.0, 1.0 / 64.0, 1.0 / 512.0];
/// A period's median excess must be at least this fraction of the series median (a pattern
/// of a few ns in microseconds is real perhaps, but of no interest).
const MIN_EXCESS: f64 = 0.1;
/// Lags up to this are all candidates.
const SMALL_LAGS: usize = 16;
/// The chance, over all the tests made on one series, of calling noise a period (at most).
const ALPHA: f64 = 1e-3;

/// A dominant period of a latency series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Period {
    /// The period, in ops.
    pub every_ops: u64,
    /// The largest autocorrelation at this lag (of the series, its ranks or its tails), 0..1.
    pub strength: f64,
    /// Where in each cycle the pattern peaks: op index mod `every_ops`.
    pub at_op: u64,
    /// Median latency at that phase minus the median of the series.
    pub excess_ns: f64,
    /// The share of the pattern's ops (those at least halfway from the series median to the
    /// phase's median: the slow ones for spikes) that lie on this period's phase, 0..1 (0 in
    /// results stored before iolab measured it).
    #[serde(default)]
    pub explains: f64,
    /// The share of the series' excess time (each op's latency beyond the series median,
    /// summed; below it for dips) that falls on this period's phase, each op counted for the
    /// longest period reported that holds it, 0..1: the time the pattern carries (0 in
    /// results stored before iolab measured it).
    #[serde(default)]
    pub time_share: f64,
}

/// A lag that passed the recurrence test.
#[derive(Debug, Clone, Copy)]
struct Found {
    period: Period,
    /// Mean rank at the phase minus the mean rank (signed: negative for a dip).
    rank_excess: f64,
}

/// The dominant periods of `latency_ns`, strongest first (empty if none).
pub fn detect(latency_ns: &[u64]) -> Vec<Period> {
    let x: Vec<f64> = latency_ns.iter().take(MAX_OPS).map(|&v| v as f64).collect();
    let n = x.len();
    if n < MIN_OPS {
        return vec![];
    }
    let u = ranks(&x);
    if u.iter().all(|&v| v == u[0]) {
        return vec![];
    }
    let max_lag = n / 4;
    let threshold = 2.0 / (n as f64).sqrt();
    let mut candidates: Vec<usize> = (2..=SMALL_LAGS.min(max_lag)).collect();
    // Each autocorrelation up to the largest lag, as f32 (8 of them: 8 bytes per op).
    let mut acfs: Vec<Vec<f32>> = vec![];
    let mut take = |r: Vec<f64>| {
        if r.len() != n {
            return;
        }
        // Local maxima above the threshold; only the strongest few go on, so a long, smooth
        // series (a trend has many small wiggles) costs O(n log n), not O(n^2).
        let mut peaks: Vec<usize> = (2..=max_lag)
            .filter(|&k| {
                let next = if k + 1 < r.len() { r[k + 1] } else { f64::MIN };
                r[k] >= threshold && r[k] >= r[k - 1] && r[k] >= next
            })
            .collect();
        peaks.sort_by(|&a, &b| r[b].total_cmp(&r[a]));
        peaks.truncate(MAX_CANDIDATES);
        candidates.extend(peaks);
        acfs.push(r[..=max_lag].iter().map(|&v| v as f32).collect());
    };
    take(autocorrelation(&x));
    take(autocorrelation(&u));
    for q in TAIL_LEVELS.into_iter().filter(|q| q * n as f64 >= 4.0) {
        for spike in [true, false] {
            let b: Vec<f64> = u.iter().map(|&v| f64::from(u8::from(beyond(v, q, spike)))).collect();
            take(autocorrelation(&b));
        }
    }
    let median = median_of(&mut x.clone());
    let excess = time::Excess::of(&x, median);
    // The lags between the ops that carry the time are tried whatever the autocorrelations
    // say (a stall every 2048 reads is no harmonic of jitter every 128).
    let heavy: Vec<usize> =
        [&excess.up, &excess.down].iter().flat_map(|e| time::heavy_lags(e, max_lag)).collect();
    candidates.extend(heavy.iter().copied());
    candidates.sort_unstable();
    candidates.dedup();
    let strength = |k: usize| acfs.iter().map(|r| f64::from(r[k])).fold(0.0, f64::max);
    // Tests made: every candidate and its multiples, at every phase, level and side.
    let levels = (n as f64).log2().floor() as usize;
    let lags_tested = 4.0 * candidates.len() as f64;
    let tests = |k: usize| lags_tested * k as f64 * levels as f64 * 2.0;
    // Each op's level as a spike and as a dip: the deepest l with its tail below 2^-l.
    let level = |tail: f64| (((-tail.log2()).ceil() as usize).saturating_sub(1)).min(levels) as u8;
    let tails: [Vec<u8>; 2] =
        [u.iter().map(|&v| level(1.0 - v)).collect(), u.iter().map(|&v| level(v)).collect()];
    let mut found: Vec<Found> = vec![];
    let mut tried: BTreeSet<usize> = BTreeSet::new();
    // Twice and three times a period found: always tested (step 3 needs them).
    let mut forced: BTreeSet<usize> = heavy.into_iter().collect();
    let mut queue: BTreeSet<usize> = candidates.into_iter().collect();
    while !queue.is_empty() {
        // By increasing lag, so a multiple of a period found can be skipped when no
        // autocorrelation is higher there (a harmonic, not a component of its own).
        while let Some(k) = queue.pop_first() {
            let harmonic = |f: &Found| {
                k % f.period.every_ops as usize == 0 && strength(k) <= f.period.strength + threshold
            };
            if !tried.insert(k) || (!forced.contains(&k) && found.iter().any(harmonic)) {
                continue;
            }
            let cut = ALPHA.ln() - tests(k).ln();
            let Some(r) = recurrence(&tails, k, levels) else {
                continue;
            };
            let (at, spike) = (r.at, r.spike);
            if r.log_p >= cut {
                continue;
            }
            let rank_excess = rank_excess(&u, k, at);
            let excess_ns = phase_median(&x, k, at) - median;
            if excess_ns.abs() < MIN_EXCESS * median {
                continue;
            }
            let period = Period {
                every_ops: k as u64,
                strength: strength(k),
                at_op: at as u64,
                excess_ns,
                explains: 0.0,
                time_share: 0.0,
            };
            found.push(Found { period, rank_excess: if spike { rank_excess } else { -rank_excess.abs() } });
            for m in [2 * k, 3 * k].into_iter().filter(|&m| m <= max_lag) {
                forced.insert(m);
                queue.insert(m);
            }
        }
        // A weak period may be no candidate while its multiples pass: try the divisors.
        let lags: Vec<usize> = found.iter().map(|f| f.period.every_ops as usize).collect();
        for (i, &a) in lags.iter().enumerate() {
            queue.extend((2..=8).filter(|m| a % m == 0).map(|m| a / m));
            queue.extend(lags[i + 1..].iter().map(|&b| gcd(a, b)));
        }
        queue.retain(|k| *k >= 2 && !tried.contains(k));
    }
    found.sort_by_key(|f| f.period.every_ops);
    let mut out: Vec<Period> = vec![];
    for p in select(&u, found) {
        let f = time::fundamental(&x, &excess, median, p);
        let f = Period { strength: strength(f.every_ops as usize).max(p.strength), ..f };
        if !out.iter().any(|q| q.every_ops == f.every_ops && q.at_op == f.at_op) {
            out.push(f);
        }
    }
    time::drop_harmonics(&mut out);
    // Step 5: each period's share of the time and of the slow ops; the ones that carry the
    // most time first.
    time::time_shares(&excess, &mut out);
    for p in &mut out {
        p.explains = explains(&x, median, p);
    }
    out.sort_by(|a, b| b.time_share.total_cmp(&a.time_share).then(b.strength.total_cmp(&a.strength)));
    out.truncate(MAX_PERIODS);
    out
}

/// The share of the pattern's ops (those at least halfway from the series median to the
/// phase's median: the slow ones for spikes) that lie on the period's phase.
fn explains(x: &[f64], median: f64, p: &Period) -> f64 {
    let half = median + p.excess_ns / 2.0;
    let marked = |v: f64| if p.excess_ns > 0.0 { v >= half } else { v <= half };
    let total = x.iter().filter(|&&v| marked(v)).count().max(1) as f64;
    (p.at_op as usize..x.len()).step_by(p.every_ops as usize).filter(|&i| marked(x[i])).count() as f64 / total
}

/// Step 3: drops the periods seen in only some of their cycles (twice or three times the
/// period sees it whole) and the harmonics of kept ones.
fn select(u: &[f64], found: Vec<Found>) -> Vec<Period> {
    let same_pattern = |d: &Period, m: &Period| {
        m.every_ops % d.every_ops == 0
            && m.at_op % d.every_ops == d.at_op
            && (m.excess_ns > 0.0) == (d.excess_ns > 0.0)
    };
    let whole: Vec<&Found> = found
        .iter()
        .filter(|d| {
            let k = d.period.every_ops as usize;
            let sign = d.rank_excess.signum();
            !(2..=4).any(|m| uneven(u, k, m, d.period.at_op as usize, sign))
        })
        .collect();
    let mut kept: Vec<Period> = vec![];
    for f in whole {
        let p = f.period;
        if kept.iter().any(|d| same_pattern(d, &p) && p.excess_ns.abs() <= 2.0 * d.excess_ns.abs()) {
            continue;
        }
        kept.push(p);
    }
    kept
}

/// Whether the pattern of lag `k` at phase `at` lives in only some of the `m` phases
/// at + i k of lag m k: their mean rank excesses (times `sign`) differ by more than 4
/// standard deviations, and the least is under a quarter of the largest.
fn uneven(u: &[f64], k: usize, m: usize, at: usize, sign: f64) -> bool {
    let big = m * k;
    let cycles = u.len() / big;
    if cycles < 4 {
        return false;
    }
    let e: Vec<f64> = (0..m).map(|i| sign * rank_excess(u, big, at + i * k)).collect();
    let (lo, hi) = e.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    // A mean of `cycles` uniform ranks has sd sqrt(1 / (12 cycles)).
    let sd = (2.0 / (12.0 * cycles as f64)).sqrt();
    hi - lo > 4.0 * sd && lo < 0.25 * hi
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Whether rank `u` lies beyond 1 - q (a spike) or below q (a dip).
fn beyond(u: f64, q: f64, spike: bool) -> bool {
    if spike { u > 1.0 - q } else { u < q }
}

/// Step 2 for lag `k`: the phase with the smallest tail bound; `None` with fewer than 4
/// cycles or no phase counting 3.
fn recurrence(tails: &[Vec<u8>; 2], k: usize, levels: usize) -> Option<Recurrence> {
    let cycles = tails[0].len() / k;
    if cycles < 4 {
        return None;
    }
    let mut best: Option<(usize, bool, f64)> = None;
    // Per phase and side: how many cycles reach each level (l such that u lies beyond 2^-l).
    let mut hist = vec![0usize; levels + 1];
    for j in 0..k {
        for (side, spike) in [(0, true), (1, false)] {
            hist.iter_mut().for_each(|h| *h = 0);
            for c in 0..cycles {
                hist[tails[side][j + c * k] as usize] += 1;
            }
            let mut count = 0;
            for l in (1..=levels).rev() {
                count += hist[l];
                if count < 3 {
                    continue;
                }
                // 2^-l, exactly.
                let q = 1.0 / (1u64 << l) as f64;
                let h = count as f64 / cycles as f64;
                if h <= q {
                    continue;
                }
                let log_p = -(cycles as f64) * kl(h, q);
                if best.is_none_or(|b| log_p < b.2) {
                    best = Some((j, spike, log_p));
                }
            }
        }
    }
    best.map(|(at, spike, log_p)| Recurrence { at, spike, log_p })
}

/// What step 2 found for a lag.
struct Recurrence {
    /// The phase with the smallest bound, whether it is a spike, and that bound's natural log.
    at: usize,
    spike: bool,
    log_p: f64,
}

/// Kullback-Leibler divergence of Bernoulli(h) from Bernoulli(q), h > q.
fn kl(h: f64, q: f64) -> f64 {
    let a = h * (h / q).ln();
    let b = if h < 1.0 { (1.0 - h) * ((1.0 - h) / (1.0 - q)).ln() } else { 0.0 };
    a + b
}

/// Mean rank at phase `at` of lag `k` minus the mean rank of the cycles folded.
fn rank_excess(u: &[f64], k: usize, at: usize) -> f64 {
    let cycles = u.len() / k;
    let all = u[..cycles * k].iter().sum::<f64>() / (cycles * k) as f64;
    (0..cycles).map(|c| u[at + c * k]).sum::<f64>() / cycles as f64 - all
}

/// The median latency at phase `at` of lag `k`.
fn phase_median(x: &[f64], k: usize, at: usize) -> f64 {
    let mut column: Vec<f64> = (0..x.len() / k).map(|c| x[at + c * k]).collect();
    median_of(&mut column)
}

/// Each value's rank, scaled into (0, 1): (midrank + 1/2) / n, ties sharing their mean rank.
fn ranks(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_unstable_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && x[idx[j]] == x[idx[i]] {
            j += 1;
        }
        let mid = (i + j - 1) as f64 / 2.0;
        for &t in &idx[i..j] {
            r[t] = (mid + 0.5) / n as f64;
        }
        i = j;
    }
    r
}

/// The median (selection, not a full sort).
fn median_of(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let (n, m) = (v.len(), v.len() / 2);
    let (below, &mut mid, _) = v.select_nth_unstable_by(m, f64::total_cmp);
    if n % 2 == 1 { mid } else { (below.iter().copied().fold(f64::MIN, f64::max) + mid) / 2.0 }
}
