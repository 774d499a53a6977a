//! Periodicity in a latency series: finds the dominant periods of per-op latency (e.g. a
//! prefetch spike every 8 reads, an indirect-block fetch every 512, as French, Pratt and Das
//! 1991 saw on Intel CFS) and reports each with its strength.
//!
//! Method, for a series x_0 .. x_{n-1} (at most [`MAX_OPS`] ops are analysed):
//! 1. Autocorrelation: d_i = x_i - mean(x);
//!    r(k) = sum_{i < n-k} d_i d_{i+k} / sum_i d_i^2 (the biased estimator, |r| <= 1),
//!    for lags 2 <= k <= n/4 (so a period recurs at least four times), computed with an FFT.
//! 2. Candidates: lags where r(k) is a local maximum and r(k) >= max(0.1, 4 / sqrt(n)) (for
//!    white noise r(k) is about N(0, 1/n), so 4/sqrt(n) is four standard deviations); the 64
//!    with the highest r(k) go on.
//! 3. Confirmation by folding: the per-phase medians m_j = median of x_{j + cP} over cycles c
//!    (full cycles only), against the series median M and robust scale S = 1.4826 MAD. The
//!    period is kept if some phase has |m_j - M| >= 3 S: the pattern recurs in most cycles,
//!    which rejects a few coincidental spikes that happen to lie P apart.
//! 4. Harmonics: candidates are taken by increasing lag; a lag that is a multiple of a kept
//!    period is a harmonic unless its r exceeds that period's r by more than 0.1 (then it is
//!    a separate, stronger component, like the every-512 spikes on top of every-8 ones).
//!
//! Each period is reported with its strength r(P), the phase j (op index mod P) where the
//! pattern peaks, and the excess m_j - M in ns (positive for spikes, negative for dips); at
//! most [`MAX_PERIODS`], strongest first.

use serde::{Deserialize, Serialize};

/// Ops analysed at most (the first ones of a longer series).
pub const MAX_OPS: usize = 1 << 20;
/// Periods reported at most.
pub const MAX_PERIODS: usize = 3;
/// Fewer ops than this are too few to say anything.
pub const MIN_OPS: usize = 32;
/// Candidate lags examined at most (the ones with the highest autocorrelation).
const MAX_CANDIDATES: usize = 64;
/// A harmonic must beat its fundamental's r by more than this to count on its own.
const HARMONIC_MARGIN: f64 = 0.1;

/// A dominant period of a latency series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Period {
    /// The period, in ops.
    pub every_ops: u64,
    /// The autocorrelation of the series at this lag, 0..1.
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
    let r = autocorrelation(&x);
    if r.is_empty() {
        return vec![];
    }
    let max_lag = n / 4;
    let threshold = (4.0 / (n as f64).sqrt()).max(0.1);
    let median = median_of(&mut x.clone());
    let mut dev: Vec<f64> = x.iter().map(|v| (v - median).abs()).collect();
    let scale = {
        let mad = 1.4826 * median_of(&mut dev);
        if mad > 0.0 { mad } else { dev.iter().sum::<f64>() / n as f64 * 1.2533 }
    };
    // Local maxima above the threshold; only the strongest few are examined further, so a
    // long, smooth series (a trend has many small wiggles) costs O(n log n), not O(n^2).
    let mut candidates: Vec<usize> = (2..=max_lag)
        .filter(|&k| {
            let next = if k + 1 < r.len() { r[k + 1] } else { f64::MIN };
            r[k] >= threshold && r[k] >= r[k - 1] && r[k] >= next
        })
        .collect();
    candidates.sort_by(|&a, &b| r[b].total_cmp(&r[a]));
    candidates.truncate(MAX_CANDIDATES);
    candidates.sort_unstable();
    let mut kept: Vec<Period> = vec![];
    for k in candidates {
        let rk = r[k];
        if kept.iter().any(|p| k as u64 % p.every_ops == 0 && rk <= p.strength + HARMONIC_MARGIN) {
            continue;
        }
        if let Some((at_op, excess_ns)) = fold(&x, k, median)
            && (scale == 0.0 || excess_ns.abs() >= 3.0 * scale)
        {
            kept.push(Period { every_ops: k as u64, strength: rk, at_op, excess_ns });
        }
    }
    kept.sort_by(|a, b| b.strength.total_cmp(&a.strength));
    kept.truncate(MAX_PERIODS);
    kept
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

fn median_of(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
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
        for seed in 0..20 {
            for n in [64, 1000, 4096, 50_000] {
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
