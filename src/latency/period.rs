//! Periodicity in a latency series: finds the dominant periods of per-op latency (e.g. a
//! prefetch spike every 8 reads, an indirect-block fetch every 512, as French, Pratt and Das
//! 1991 saw on Intel CFS) and reports each with its strength.
//!
//! Method, for a series x_0 .. x_{n-1} (at most [`MAX_OPS`] ops are analysed):
//! 1. Autocorrelation, of the series and of its ranks (each value replaced by its rank, so a
//!    few huge stalls cannot dominate): d_i = x_i - mean(x);
//!    r(k) = sum_{i < n-k} d_i d_{i+k} / sum_i d_i^2 (the biased estimator, |r| <= 1),
//!    for lags 2 <= k <= n/4 (so a period recurs at least four times), computed with an FFT.
//!    A lag's strength is the larger of the two.
//! 2. Candidates: lags where either autocorrelation has a local maximum of at least
//!    max(0.1, 4 / sqrt(n)) (for white noise r(k) is about N(0, 1/n), so 4/sqrt(n) is four
//!    standard deviations); the 32 strongest of each go on.
//! 3. Recurrence: fold the series by the lag P, take the phase j (op index mod P) whose median
//!    departs most from the series median, and count the cycles in which op j + cP lies beyond
//!    the series' (1 - q) quantile (for a spike; below the q quantile for a dip), with
//!    q = min(2/P, 1/2). The period is kept if at least 3/4 of the cycles (and 3) do. Under
//!    no periodicity each cycle does so with probability q, so a few coincidental spikes that
//!    happen to lie P apart are rejected.
//! 4. Harmonics: candidates are taken by increasing lag; a lag that is a multiple of a kept
//!    period is a harmonic unless its strength exceeds that period's by more than 0.1 (then it
//!    is a separate, stronger component, like the every-512 spikes on top of every-8 ones).
//!
//! Each period is reported with its strength, the phase j where the pattern peaks, and the
//! excess (median at j minus the series median, in ns: positive for spikes, negative for
//! dips); at most [`MAX_PERIODS`], strongest first.

use serde::{Deserialize, Serialize};

/// Ops analysed at most (the first ones of a longer series).
pub const MAX_OPS: usize = 1 << 20;
/// Periods reported at most.
pub const MAX_PERIODS: usize = 3;
/// Fewer ops than this are too few to say anything.
pub const MIN_OPS: usize = 32;
/// Candidate lags examined at most per autocorrelation (the ones with the highest r).
const MAX_CANDIDATES: usize = 32;
/// A harmonic must beat its fundamental's r by more than this to count on its own.
const HARMONIC_MARGIN: f64 = 0.1;

/// A dominant period of a latency series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Period {
    /// The period, in ops.
    pub every_ops: u64,
    /// The autocorrelation at this lag, of the series or of its ranks (the larger), 0..1.
    pub strength: f64,
    /// Where in each cycle the pattern peaks: op index mod `every_ops`.
    pub at_op: u64,
    /// Median latency at that phase minus the median of the series.
    pub excess_ns: f64,
}

/// The dominant periods of `latency_ns`, strongest first (empty if none).
pub fn detect(latency_ns: &[u64]) -> Vec<Period> {
    let x: Vec<f64> = latency_ns.iter().take(MAX_OPS).map(|&v| v as f64).collect();
    let n = x.len();
    if n < MIN_OPS {
        return vec![];
    }
    let raw = autocorrelation(&x);
    if raw.is_empty() {
        return vec![];
    }
    let ranked = autocorrelation(&ranks(&x));
    let strength = |k: usize| raw[k].max(ranked.get(k).copied().unwrap_or(f64::MIN));
    let max_lag = n / 4;
    let threshold = (4.0 / (n as f64).sqrt()).max(0.1);
    let mut candidates: Vec<usize> = vec![];
    for r in [&raw, &ranked] {
        if r.len() < n {
            continue;
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
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut sorted = x.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    let median = median_of_sorted(&sorted);
    let mut kept: Vec<Period> = vec![];
    for k in candidates {
        let sk = strength(k);
        if kept.iter().any(|p| k as u64 % p.every_ops == 0 && sk <= p.strength + HARMONIC_MARGIN) {
            continue;
        }
        if let Some((at_op, excess_ns)) = fold(&x, k, median)
            && recurs(&x, &sorted, k, at_op as usize, excess_ns > 0.0)
        {
            kept.push(Period { every_ops: k as u64, strength: sk, at_op, excess_ns });
        }
    }
    kept.sort_by(|a, b| b.strength.total_cmp(&a.strength));
    kept.truncate(MAX_PERIODS);
    kept
}

/// Whether op `at` of period `p` lies beyond the series' (1 - q) quantile (below the q
/// quantile for a dip) in at least 3/4 of the cycles, q = min(2/p, 1/2).
fn recurs(x: &[f64], sorted: &[f64], p: usize, at: usize, spike: bool) -> bool {
    let n = sorted.len();
    let q = (2.0 / p as f64).min(0.5);
    let cycles = x.len() / p;
    let beyond = if spike {
        let hi = sorted[((1.0 - q) * n as f64) as usize].max(sorted[n / 2]);
        (0..cycles).filter(|c| x[at + c * p] > hi).count()
    } else {
        let lo = sorted[(q * n as f64) as usize].min(sorted[n / 2]);
        (0..cycles).filter(|c| x[at + c * p] < lo).count()
    };
    beyond >= 3 && beyond * 4 >= cycles * 3
}

/// Each value's rank (0-based; ties broken by position).
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_unstable_by(|&a, &b| x[a].total_cmp(&x[b]).then(a.cmp(&b)));
    let mut r = vec![0.0; x.len()];
    for (rank, i) in idx.into_iter().enumerate() {
        r[i] = rank as f64;
    }
    r
}

/// The phase of period `p` whose median departs most from `median`, and by how much.
fn fold(x: &[f64], p: usize, median: f64) -> Option<(u64, f64)> {
    let cycles = x.len() / p;
    if cycles < 4 {
        return None;
    }
    let mut column = Vec::with_capacity(cycles);
    let mut best: Option<(u64, f64)> = None;
    for j in 0..p {
        column.clear();
        column.extend((0..cycles).map(|c| x[j + c * p]));
        let excess = median_of(&mut column) - median;
        if best.is_none_or(|(_, b)| excess.abs() > b.abs()) {
            best = Some((j as u64, excess));
        }
    }
    best
}

/// The median (selection, not a full sort: this runs once per phase of every candidate period).
fn median_of(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let (n, m) = (v.len(), v.len() / 2);
    let (below, &mut mid, _) = v.select_nth_unstable_by(m, f64::total_cmp);
    if n % 2 == 1 { mid } else { (below.iter().copied().fold(f64::MIN, f64::max) + mid) / 2.0 }
}

fn median_of_sorted(v: &[f64]) -> f64 {
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

/// r(k) for k in 0..n (the biased estimator, r(0) = 1); empty for a constant series.
pub fn autocorrelation(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let size = (2 * n).next_power_of_two();
    let mut buf: Vec<(f64, f64)> = x.iter().map(|v| (v - mean, 0.0)).collect();
    buf.resize(size, (0.0, 0.0));
    fft(&mut buf, false);
    for c in &mut buf {
        *c = (c.0 * c.0 + c.1 * c.1, 0.0);
    }
    fft(&mut buf, true);
    let r0 = buf[0].0;
    if r0 <= f64::EPSILON * n as f64 {
        return vec![];
    }
    buf[..n].iter().map(|c| c.0 / r0).collect()
}

/// In-place iterative radix-2 FFT (Cooley-Tukey); `inverse` also divides by the length.
fn fft(a: &mut [(f64, f64)], inverse: bool) {
    let n = a.len();
    debug_assert!(n.is_power_of_two());
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            a.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let ang = 2.0 * std::f64::consts::PI / len as f64 * if inverse { 1.0 } else { -1.0 };
        let (wr, wi) = (ang.cos(), ang.sin());
        for start in (0..n).step_by(len) {
            let (mut cr, mut ci) = (1.0, 0.0);
            for k in 0..len / 2 {
                let (ur, ui) = a[start + k];
                let (vr0, vi0) = a[start + k + len / 2];
                let (vr, vi) = (vr0 * cr - vi0 * ci, vr0 * ci + vi0 * cr);
                a[start + k] = (ur + vr, ui + vi);
                a[start + k + len / 2] = (ur - vr, ui - vi);
                (cr, ci) = (cr * wr - ci * wi, cr * wi + ci * wr);
            }
        }
        len <<= 1;
    }
    if inverse {
        for c in a.iter_mut() {
            *c = (c.0 / n as f64, c.1 / n as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A deterministic noise source: uniform in [0, 1).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            (crate::plan::splitmix64(&mut self.0) >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Approximately normal (sum of 12 uniforms), mean 0, sd 1.
        fn normal(&mut self) -> f64 {
            (0..12).map(|_| self.next()).sum::<f64>() - 6.0
        }
    }

    fn noise(n: usize, seed: u64, base: f64, sd: f64) -> Vec<f64> {
        let mut r = Rng(seed);
        (0..n).map(|_| (base + sd * r.normal()).max(1.0)).collect()
    }

    fn to_ns(v: &[f64]) -> Vec<u64> {
        v.iter().map(|&x| x as u64).collect()
    }

    #[test]
    fn finds_a_spike_every_8_reads() {
        // C4: 4 KiB reads at 3.5 ms +- 0.3 ms, a prefetch costing 15 ms on every 8th read.
        let mut x = noise(1280, 1, 3.5e6, 0.3e6);
        for i in (3..x.len()).step_by(8) {
            x[i] += 11.5e6;
        }
        let p = detect(&to_ns(&x));
        assert!(!p.is_empty(), "no period found");
        assert_eq!(p[0].every_ops, 8, "{p:?}");
        assert_eq!(p[0].at_op, 3);
        assert!(p[0].strength > 0.8, "{p:?}");
        assert!((p[0].excess_ns - 11.5e6).abs() < 1.0e6, "{p:?}");
        assert_eq!(p.len(), 1, "harmonics of 8 are not periods of their own: {p:?}");
    }

    #[test]
    fn finds_two_components() {
        // Spikes every 8 (+12 ms) and a much larger one every 512 (+90 ms).
        let mut x = noise(8192, 2, 3.5e6, 0.3e6);
        for i in (0..x.len()).step_by(8) {
            x[i] += 12e6;
        }
        for i in (100..x.len()).step_by(512) {
            x[i] += 90e6;
        }
        let p = detect(&to_ns(&x));
        let periods: Vec<u64> = p.iter().map(|p| p.every_ops).collect();
        assert!(periods.contains(&8) && periods.contains(&512), "{p:?}");
        let big = p.iter().find(|p| p.every_ops == 512).unwrap();
        assert_eq!(big.at_op, 100);
    }

    #[test]
    fn finds_a_periodic_dip() {
        // Every 16th op is a cache hit: much faster than the rest.
        let mut x = noise(2048, 3, 5e6, 0.2e6);
        for i in (5..x.len()).step_by(16) {
            x[i] = 0.4e6;
        }
        let p = detect(&to_ns(&x));
        assert_eq!(p[0].every_ops, 16, "{p:?}");
        assert!(p[0].excess_ns < 0.0);
    }

    #[test]
    fn finds_nothing_in_white_noise() {
        for seed in 0..12 {
            for n in [64, 1000, 4096, 20_000] {
                let x = noise(n, seed, 100e3, 20e3);
                assert!(detect(&to_ns(&x)).is_empty(), "seed {seed} n {n}: {:?}", detect(&to_ns(&x)));
            }
        }
        // Heavy-tailed (exponential) noise.
        for seed in 0..10 {
            let mut r = Rng(seed + 100);
            let x: Vec<u64> = (0..4096).map(|_| (-(1.0 - r.next()).ln() * 1e5) as u64 + 1).collect();
            assert!(detect(&x).is_empty(), "seed {seed}: {:?}", detect(&x));
        }
    }

    #[test]
    fn finds_nothing_in_trends_constants_or_a_few_spikes() {
        let trend: Vec<u64> = (0..4096).map(|i| 100_000 + i * 37).collect();
        assert!(detect(&trend).is_empty(), "{:?}", detect(&trend));
        assert!(detect(&[5000; 4096]).is_empty());
        assert!(detect(&[1, 2, 3]).is_empty());
        // Two slow start-up ops 5 apart (C1's first reads): not a period.
        let mut x = to_ns(&noise(2000, 7, 3.5e6, 0.3e6));
        x[0] = 100_000_000;
        x[5] = 100_000_000;
        assert!(detect(&x).is_empty(), "{:?}", detect(&x));
    }

    /// Regression: a buffered write's latencies are a tight, skewed base with a few random
    /// writeback stalls 1000x longer. The stalls dominate the variance, so pairs of them make
    /// autocorrelation peaks at their distances; none of those is a period.
    #[test]
    fn finds_nothing_in_a_few_random_stalls_on_a_tight_base() {
        for seed in 0..6 {
            let mut r = Rng(seed + 1000);
            let mut x: Vec<u64> =
                (0..16384).map(|_| 3900 + (-(1.0 - r.next()).ln() * 120.0) as u64).collect();
            for _ in 0..8 {
                let at = (r.next() * x.len() as f64) as usize;
                x[at] = 2_000_000 + (r.next() * 60e6) as u64;
            }
            assert!(detect(&x).is_empty(), "seed {seed}: {:?}", detect(&x));
        }
    }

    proptest! {
        #[test]
        fn fft_autocorrelation_equals_the_direct_sum(xs in prop::collection::vec(0.0f64..1000.0, 2..80)) {
            let n = xs.len();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let d: Vec<f64> = xs.iter().map(|v| v - mean).collect();
            let r0: f64 = d.iter().map(|v| v * v).sum();
            prop_assume!(r0 > 1e-6);
            let r = autocorrelation(&xs);
            for k in 0..n {
                let direct: f64 = (0..n - k).map(|i| d[i] * d[i + k]).sum::<f64>() / r0;
                prop_assert!((r[k] - direct).abs() < 1e-9, "lag {}: {} vs {}", k, r[k], direct);
            }
        }

        #[test]
        fn a_planted_spike_train_is_found(period in 4u64..40, at in 0u64..40, seed in any::<u64>()) {
            let at = at % period;
            let mut x = noise(2048, seed, 1e6, 0.1e6);
            for i in (at as usize..x.len()).step_by(period as usize) {
                x[i] += 5e6;
            }
            let p = detect(&to_ns(&x));
            prop_assert!(!p.is_empty());
            prop_assert_eq!(p[0].every_ops, period);
            prop_assert_eq!(p[0].at_op, at);
        }
    }
}
