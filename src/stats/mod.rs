//! Pure statistics over samples: summaries across repetitions and rates across workers.
//!
//! Definitions and their sources:
//! - sample standard deviation: sqrt(sum (x - mean)^2 / (n - 1)).
//! - 2-sigma mean (Russell 1998, sec. 1.3): the mean, then the mean again over only the
//!   samples within mean +/- 2 sd.
//! - 10% trimmed mean (Benson, Long, Pacheco 2003): sort, drop floor(n/10) samples from each end,
//!   take the mean of the rest.
//! - 95% confidence interval of the mean: mean +/- t(0.975, n-1) * sd / sqrt(n) (Student t);
//!   the 99% interval with t(0.995, n-1) (used on the log scale, below).
//! - The interval of the mean of a positive quantity (a rate, a time, a ratio of them), on the
//!   log scale: by the delta method (e.g. Casella and Berger, Statistical Inference, 2nd ed.,
//!   sec. 5.5.4) the standard error of ln(mean) is se / mean, so the interval is
//!   [mean / f, mean * f] with f = exp(t * se / mean) and se = sd / sqrt(n). Its lower end is
//!   never negative, whatever the spread; for a small relative error it is the Student t
//!   interval to first order. [`positive_ci95`] and [`positive_ci99`]; [`Summary::ci95`] uses it
//!   for figures that are never negative.
//! - individual rate r_i = bytes_i / t_i; max_SAR = sum r_i; min_SAR = total bytes / max t_i
//!   (French, Pratt, Das 1991, eqs. 1 and 2). Average individual rate = mean of r_i.
//! - agg (IOR's bandwidth) and the workers' overlap: [`span`].
//! - intervals of the 2-sigma mean and the trimmed mean: [`robust`].
//! - the ratio of two figures (after / before) with its interval, Welch on the logs: [`welch`].

use serde::{Deserialize, Serialize};

pub mod robust;
pub mod span;
pub mod welch;

/// Arithmetic mean; NaN for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n - 1); None below two samples.
pub fn sd(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

pub(crate) fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// Median (mean of the two middle values for even n); NaN for no samples.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let v = sorted(xs);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Russell's 2-sigma mean: the mean over samples within mean +/- 2 sd.
pub fn two_sigma_mean(xs: &[f64]) -> f64 {
    let m = mean(xs);
    let Some(s) = sd(xs) else { return m };
    let kept: Vec<f64> = xs.iter().copied().filter(|x| (x - m).abs() <= 2.0 * s).collect();
    if kept.is_empty() { m } else { mean(&kept) }
}

/// The samples the 2-sigma mean leaves out: those farther than 2 sd from the mean. None can be
/// below six samples: no sample lies more than (n - 1) / sqrt(n) sd from the mean, under 2 for
/// n <= 5.
pub fn two_sigma_dropped(xs: &[f64]) -> usize {
    let m = mean(xs);
    let Some(s) = sd(xs) else { return 0 };
    xs.iter().filter(|x| (*x - m).abs() > 2.0 * s).count()
}

/// The samples a trimmed mean drops from each end: floor(n * fraction) (0 below 10 samples for
/// a 10% trim).
pub fn trimmed_per_end(n: usize, fraction: f64) -> usize {
    (n as f64 * fraction).floor() as usize
}

/// Mean after dropping floor(n * fraction) samples from each end (Benson et al. use 0.10).
pub fn trimmed_mean(xs: &[f64], fraction: f64) -> f64 {
    let v = sorted(xs);
    let cut = trimmed_per_end(v.len(), fraction);
    if v.len() <= 2 * cut {
        return median(xs);
    }
    mean(&v[cut..v.len() - cut])
}

/// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom: exact table values
/// for df <= 30, the Cornish-Fisher expansion beyond (error below 1e-4 there).
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788,
        2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
        2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
    ];
    t_quantile(df, &TABLE, 1.959_963_985)
}

/// The 99.5% quantile of Student's t (the two-sided 99% interval's), as [`t_975`]: table values
/// for df <= 30 (e.g. Abramowitz and Stegun, Table 26.10), the Cornish-Fisher expansion beyond.
pub fn t_995(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        63.6567, 9.9248, 5.8409, 4.6041, 4.0321, 3.7074, 3.4995, 3.3554, 3.2498, 3.1693, 3.1058, 3.0545,
        3.0123, 2.9768, 2.9467, 2.9208, 2.8982, 2.8784, 2.8609, 2.8453, 2.8314, 2.8188, 2.8073, 2.7969,
        2.7874, 2.7787, 2.7707, 2.7633, 2.7564, 2.7500,
    ];
    t_quantile(df, &TABLE, 2.575_829_304)
}

/// A quantile of Student's t: `table[df - 1]` up to 30 degrees of freedom, beyond that the
/// Cornish-Fisher expansion around the normal quantile `z` (infinite for df = 0).
fn t_quantile(df: usize, table: &[f64; 30], z: f64) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    if df <= 30 {
        return table[df - 1];
    }
    let n = df as f64;
    z + (z.powi(3) + z) / (4.0 * n)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * n * n * n)
}

/// The confidence interval of the mean whose half-width is `t` standard errors, `t` given the
/// degrees of freedom; None below two samples.
fn interval(xs: &[f64], t: fn(usize) -> f64) -> Option<[f64; 2]> {
    let s = sd(xs)?;
    let m = mean(xs);
    let half = t(xs.len() - 1) * s / (xs.len() as f64).sqrt();
    Some([m - half, m + half])
}

/// 95% confidence interval of the mean; None below two samples.
pub fn ci95(xs: &[f64]) -> Option<[f64; 2]> {
    interval(xs, t_975)
}

/// The interval of the mean of a positive quantity on the log scale (see the module's
/// definitions), the half-width `t` standard errors of ln(mean), `t` given the degrees of
/// freedom. None below two samples, or when a sample is negative or not finite (not a positive
/// quantity); `[0, 0]` when every sample is 0.
fn positive_interval(xs: &[f64], t: fn(usize) -> f64) -> Option<[f64; 2]> {
    if xs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return None;
    }
    let s = sd(xs)?;
    let m = mean(xs);
    if m == 0.0 {
        return Some([0.0, 0.0]);
    }
    let f = (t(xs.len() - 1) * s / (xs.len() as f64).sqrt() / m).exp();
    Some([m / f, (m * f).min(f64::MAX)])
}

/// 95% confidence interval of the mean of a positive quantity, on the log scale (never a
/// negative lower end); None below two samples or for a negative or non-finite sample.
pub fn positive_ci95(xs: &[f64]) -> Option<[f64; 2]> {
    positive_interval(xs, t_975)
}

/// 99% confidence interval of the mean of a positive quantity, on the log scale, as
/// [`positive_ci95`].
pub fn positive_ci99(xs: &[f64]) -> Option<[f64; 2]> {
    positive_interval(xs, t_995)
}

/// A summary of one figure across repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Which figure is summarised (e.g. `max_sar_bytes_per_s`).
    pub of: String,
    pub n: usize,
    pub mean: f64,
    pub sd: Option<f64>,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub two_sigma_mean: f64,
    pub trimmed_mean_10: f64,
    /// The 95% interval of the mean: on the log scale ([`positive_ci95`]) when no sample is
    /// negative, as every rate and time is; the Student t interval otherwise.
    pub ci95: Option<[f64; 2]>,
}

impl Summary {
    pub fn of(name: &str, xs: &[f64]) -> Summary {
        let v = sorted(xs);
        Summary {
            of: name.to_string(),
            n: xs.len(),
            mean: mean(xs),
            sd: sd(xs),
            min: v.first().copied().unwrap_or(f64::NAN),
            median: median(xs),
            max: v.last().copied().unwrap_or(f64::NAN),
            two_sigma_mean: two_sigma_mean(xs),
            trimmed_mean_10: trimmed_mean(xs, 0.10),
            ci95: positive_ci95(xs).or_else(|| ci95(xs)),
        }
    }

    /// Relative standard deviation (sd / mean), if defined.
    pub fn rsd(&self) -> Option<f64> {
        self.sd.map(|s| s / self.mean).filter(|r| r.is_finite())
    }
}

/// Rates of one run across its workers (French et al. 1991).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub max_sar: f64,
    pub min_sar: f64,
    pub avg_individual: f64,
}

/// r_i = bytes_i / t_i for each worker, in bytes per second.
pub fn individual_rate(bytes: u64, time_ns: u64) -> f64 {
    if time_ns == 0 {
        return f64::NAN;
    }
    bytes as f64 * 1e9 / time_ns as f64
}

/// max_SAR, min_SAR and the average individual rate from (bytes_i, t_i ns) per worker, in one
/// pass that keeps nothing per worker.
pub fn rates(workers: impl IntoIterator<Item = (u64, u64)>) -> Rates {
    let (mut max_sar, mut n, mut total, mut tmax) = (0.0, 0usize, 0u64, 0u64);
    for (b, t) in workers {
        max_sar += individual_rate(b, t);
        n += 1;
        total += b;
        tmax = tmax.max(t);
    }
    let avg_individual = if n == 0 { f64::NAN } else { max_sar / n as f64 };
    Rates { max_sar, min_sar: individual_rate(total, tmax), avg_individual }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OUTLIER: [f64; 10] = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 50.0];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-3 * b.abs().max(1.0)
    }

    #[test]
    fn hand_computed_vector() {
        // mean 14; deviations -4 (x9) and 36: ss = 144 + 1296 = 1440; var = 160; sd = 12.6491.
        let s = Summary::of("x", &OUTLIER);
        assert_eq!(s.mean, 14.0);
        assert!(close(s.sd.unwrap(), 12.6491));
        assert_eq!(s.median, 10.0);
        assert_eq!(s.min, 10.0);
        assert_eq!(s.max, 50.0);
        // 50 lies outside 14 +/- 25.3, so the 2-sigma mean is the mean of the nine 10s.
        assert_eq!(s.two_sigma_mean, 10.0);
        // n = 10: drop one from each end (a 10 and the 50), mean of eight 10s.
        assert_eq!(s.trimmed_mean_10, 10.0);
        // t(9) = 2.2622; half width = 2.2622 * 12.6491 / sqrt(10) = 9.0488.
        let [lo, hi] = ci95(&OUTLIER).unwrap();
        assert!(close(lo, 4.9512) && close(hi, 23.0488), "{lo} {hi}");
        // On the log scale: se = 4, f = exp(2.2622 * 4 / 14) = 1.90855: [14 / f, 14 * f].
        let [lo, hi] = s.ci95.unwrap();
        assert!(close(lo, 7.33542) && close(hi, 26.71968), "{lo} {hi}");
        assert_eq!(s.ci95, positive_ci95(&OUTLIER));
    }

    #[test]
    fn positive_intervals_by_hand() {
        // [99, 100, 101]: sd 1, se 0.57735, f = exp(4.3027 * 0.57735 / 100): the t interval
        // [97.5158, 102.4842] to within 0.03%.
        let [lo, hi] = positive_ci95(&[99.0, 100.0, 101.0]).unwrap();
        assert!(close(lo, 97.54644) && close(hi, 102.51528), "{lo} {hi}");
        // Two far-apart samples: the t interval's lower end is -45.8, this one stays above 0.
        assert!(ci95(&[1.0, 9.0]).unwrap()[0] < 0.0);
        let [lo, hi] = positive_ci95(&[1.0, 9.0]).unwrap();
        assert!(lo > 0.0 && lo < 1.0 && hi > 9.0, "{lo} {hi}");
        assert_eq!(positive_ci95(&[0.0, 0.0, 0.0]), Some([0.0, 0.0]));
        assert_eq!(positive_ci95(&[3.0, 3.0]), Some([3.0, 3.0]));
        for bad in [&[1.0][..], &[], &[1.0, -1.0], &[1.0, f64::NAN], &[1.0, f64::INFINITY]] {
            assert_eq!(positive_ci95(bad), None, "{bad:?}");
        }
        // A summary of figures that can be negative keeps the Student t interval.
        assert_eq!(Summary::of("x", &[-1.0, 1.0, 3.0]).ci95, ci95(&[-1.0, 1.0, 3.0]));
    }

    /// Normal samples from a fixed seed: xorshift64* for uniforms, Box-Muller for normals.
    fn normals(seed: u64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        let mut x = seed | 1;
        let mut uniform = || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u, v) = (uniform().max(1e-300), uniform());
                mean + sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            })
            .collect()
    }

    #[test]
    fn positive_interval_covers_the_mean_as_often_as_it_says() {
        // 4000 trials of 5 samples with a 10% relative sd, as repeated runs of a rate spread:
        // the 95% interval holds the true mean in 93% to 97% of them, the 99% one in 98%+.
        let (trials, mut hit95, mut hit99) = (4000, 0, 0);
        for seed in 1..=trials {
            let xs = normals(seed * 7919, 5, 100.0, 10.0);
            let [lo, hi] = positive_ci95(&xs).unwrap();
            hit95 += usize::from(lo <= 100.0 && 100.0 <= hi);
            let [lo, hi] = positive_ci99(&xs).unwrap();
            hit99 += usize::from(lo <= 100.0 && 100.0 <= hi);
        }
        let (c95, c99) = (hit95 as f64 / trials as f64, hit99 as f64 / trials as f64);
        assert!((0.93..=0.97).contains(&c95), "95% interval covered {c95}");
        assert!(c99 >= 0.98, "99% interval covered {c99}");
    }

    #[test]
    fn what_the_robust_means_drop() {
        // Five samples, one far off: still within 2 sd (max |z| = 4 / sqrt(5) = 1.79).
        let five = [10.0, 10.0, 10.0, 10.0, 1000.0];
        assert_eq!(two_sigma_dropped(&five), 0);
        assert_eq!(two_sigma_mean(&five), mean(&five));
        // Six: the outlier lies 2.04 sd out and is dropped.
        let six = [10.0, 10.0, 10.0, 10.0, 10.0, 1000.0];
        assert_eq!(two_sigma_dropped(&six), 1);
        assert_eq!(two_sigma_mean(&six), 10.0);
        assert_eq!(two_sigma_dropped(&[1.0]), 0);
        assert_eq!([1, 5, 9, 10, 19, 20].map(|n| trimmed_per_end(n, 0.10)), [0, 0, 0, 1, 1, 2]);
    }

    #[test]
    fn small_samples() {
        let s = Summary::of("x", &[5.0]);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.sd, None);
        assert_eq!(s.ci95, None);
        assert_eq!(s.two_sigma_mean, 5.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), 2.5);
        // With 4 samples none is trimmed: floor(0.4) = 0.
        assert_eq!(trimmed_mean(&[1.0, 2.0, 3.0, 10.0], 0.1), 4.0);
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t_975(1), 12.7062);
        assert!(close(t_975(31), 2.0395));
        assert!(close(t_975(60), 2.0003));
        assert!(close(t_975(1000), 1.9623));
        assert_eq!(t_995(2), 9.9248);
        assert!(close(t_995(31), 2.7440));
        assert!(close(t_995(60), 2.6603));
        assert!(close(t_995(1000), 2.5808));
        assert!(t_995(0).is_infinite());
        let (c95, c99) =
            (interval(&[1.0, 2.0, 3.0], t_975).unwrap(), interval(&[1.0, 2.0, 3.0], t_995).unwrap());
        assert!(c99[0] < c95[0] && c95[1] < c99[1], "the 99% interval holds the 95% one");
    }

    #[test]
    fn sar_definitions() {
        // Worker 0: 100 MB in 1 s; worker 1: 100 MB in 2 s.
        let none = rates([]);
        assert_eq!(none.max_sar, 0.0);
        assert!(none.min_sar.is_nan() && none.avg_individual.is_nan(), "no workers, no time, no average");
        let r = rates([(100_000_000, 1_000_000_000), (100_000_000, 2_000_000_000)]);
        assert_eq!(r.max_sar, 150e6);
        assert_eq!(r.min_sar, 100e6);
        assert_eq!(r.avg_individual, 75e6);
    }

    proptest! {
        #[test]
        fn summaries_lie_within_the_range(xs in proptest::collection::vec(0.0f64..1e9, 1..60)) {
            let s = Summary::of("x", &xs);
            let eps = 1e-6 * s.max.max(1.0);
            for v in [s.mean, s.median, s.two_sigma_mean, s.trimmed_mean_10] {
                prop_assert!(v >= s.min - eps && v <= s.max + eps);
            }
            if let Some(sd) = s.sd { prop_assert!(sd >= 0.0); }
            if let Some([lo, hi]) = s.ci95 { prop_assert!(lo <= s.mean + eps && hi >= s.mean - eps); }
        }

        #[test]
        fn order_does_not_matter(mut xs in proptest::collection::vec(0.0f64..1e6, 2..30)) {
            let a = Summary::of("x", &xs);
            xs.reverse();
            let b = Summary::of("x", &xs);
            prop_assert!((a.mean - b.mean).abs() < 1e-6);
            prop_assert_eq!(a.median, b.median);
            prop_assert!((a.two_sigma_mean - b.two_sigma_mean).abs() < 1e-6);
        }

        #[test]
        fn shift_equivariance(xs in proptest::collection::vec(0.0f64..1e3, 2..30), c in 0.0f64..1e3) {
            let shifted: Vec<f64> = xs.iter().map(|x| x + c).collect();
            let (a, b) = (Summary::of("x", &xs), Summary::of("x", &shifted));
            prop_assert!((b.mean - a.mean - c).abs() < 1e-6);
            prop_assert!((b.trimmed_mean_10 - a.trimmed_mean_10 - c).abs() < 1e-6);
            prop_assert!((b.sd.unwrap() - a.sd.unwrap()).abs() < 1e-6);
        }

        #[test]
        fn positive_intervals_never_go_below_zero(xs in proptest::collection::vec(0.0f64..1e12, 2..40)) {
            let (m, [lo, hi]) = (mean(&xs), positive_ci95(&xs).unwrap());
            prop_assert!(lo >= 0.0 && lo.is_finite() && hi.is_finite());
            prop_assert!(lo <= m * (1.0 + 1e-12) && hi >= m * (1.0 - 1e-12), "{lo} {m} {hi}");
            if m > 1e-100 {
                // Symmetric on the log scale: lo * hi = mean^2.
                prop_assert!((lo / m * (hi / m) - 1.0).abs() < 1e-9);
            }
            if xs.iter().all(|x| *x > 1e-6) { prop_assert!(lo > 0.0); }
            let [lo99, hi99] = positive_ci99(&xs).unwrap();
            prop_assert!(lo99 <= lo * (1.0 + 1e-12) && hi99 >= hi * (1.0 - 1e-12));
        }

        #[test]
        fn positive_intervals_scale_with_the_unit(xs in proptest::collection::vec(1e-3f64..1e9, 2..30), c in 1e-6f64..1e6) {
            // MB/s or B/s, s or ns: the interval is the same figure in the other unit.
            let scaled: Vec<f64> = xs.iter().map(|x| x * c).collect();
            let ([a0, a1], [b0, b1]) = (positive_ci95(&xs).unwrap(), positive_ci95(&scaled).unwrap());
            prop_assert!((b0 / (a0 * c) - 1.0).abs() < 1e-9 && (b1 / (a1 * c) - 1.0).abs() < 1e-9);
        }

        #[test]
        fn positive_intervals_approach_the_t_interval(xs in proptest::collection::vec(99.0f64..101.0, 3..30)) {
            // A relative spread within 1%: both ends within 0.1% of the Student t interval's.
            let ([p0, p1], [t0, t1]) = (positive_ci95(&xs).unwrap(), ci95(&xs).unwrap());
            prop_assert!((p0 / t0 - 1.0).abs() < 1e-3 && (p1 / t1 - 1.0).abs() < 1e-3, "{p0} {t0} {p1} {t1}");
        }

        #[test]
        fn min_sar_never_exceeds_max_sar(ws in proptest::collection::vec((1u64..1u64<<40, 1u64..1u64<<40), 1..16)) {
            let r = rates(ws.iter().copied());
            prop_assert!(r.min_sar <= r.max_sar * (1.0 + 1e-9));
        }
    }
}
