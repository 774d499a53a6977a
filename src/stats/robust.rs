//! Intervals of the studies' robust means, for positive figures, on the log scale as
//! [`super::positive_ci95`] (never a negative lower end):
//! - the 2-sigma mean (Russell 1998): the mean of the samples it keeps (within mean +/- 2 sd),
//!   with their interval of the mean;
//! - the 10% trimmed mean (Benson, Long, Pacheco 2003): the standard error of Tukey and
//!   McLaughlin (1963), s_w / ((1 - 2g/n) sqrt(n)) with s_w the standard deviation of the
//!   winsorized samples (the g lowest set to the (g+1)-th, the g highest to the (g+1)-th
//!   from the top), and Student's t with n - 2g - 1 degrees of freedom. With no sample trimmed
//!   (g = 0, under 10 samples) both are the interval of the mean;
//! - the median: the order statistics x_(j) and x_(k), j = floor(n/2 - 0.98 sqrt(n)) and
//!   k = ceil(n/2 + 1 + 0.98 sqrt(n)) (the normal approximation of Binomial(n, 1/2); e.g.
//!   Conover, Practical Nonparametric Statistics, sec. 3.2), which needs n >= 6; free of any
//!   distribution, and within the samples, so positive for positive samples.

use super::{mean, sd, sorted, t_975, trimmed_per_end};

/// The samples the 2-sigma mean keeps: those within mean +/- 2 sd (all of them below two).
pub fn two_sigma_kept(xs: &[f64]) -> Vec<f64> {
    let m = mean(xs);
    let Some(s) = sd(xs) else { return xs.to_vec() };
    let kept: Vec<f64> = xs.iter().copied().filter(|x| (x - m).abs() <= 2.0 * s).collect();
    if kept.is_empty() { xs.to_vec() } else { kept }
}

/// [m / f, m * f] with f = exp(t * se / m): the log-scale interval around `m`.
fn around(m: f64, se: f64, t: f64) -> Option<[f64; 2]> {
    if !(m.is_finite() && se.is_finite()) || m < 0.0 {
        return None;
    }
    if m == 0.0 {
        return Some([0.0, 0.0]);
    }
    let f = (t * se / m).exp();
    Some([m / f, (m * f).min(f64::MAX)])
}

/// The 95% interval of the 2-sigma mean of positive samples: the interval of the mean of the
/// samples it keeps. None below two kept samples or for a negative or non-finite sample.
pub fn two_sigma_ci95(xs: &[f64]) -> Option<[f64; 2]> {
    if xs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return None;
    }
    super::positive_ci95(&two_sigma_kept(xs))
}

/// The 95% interval of the trimmed mean (dropping floor(n * fraction) samples from each end)
/// of positive samples, by the winsorized variance. None below two samples left after the
/// trim or for a negative or non-finite sample.
pub fn trimmed_ci95(xs: &[f64], fraction: f64) -> Option<[f64; 2]> {
    if xs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return None;
    }
    let n = xs.len();
    let g = trimmed_per_end(n, fraction);
    if n < 2 * g + 2 {
        return None;
    }
    let v = sorted(xs);
    let m = mean(&v[g..n - g]);
    let (lo, hi) = (v[g], v[n - 1 - g]);
    let w: Vec<f64> = v.iter().map(|x| x.clamp(lo, hi)).collect();
    let se = sd(&w)? / ((1.0 - 2.0 * g as f64 / n as f64) * (n as f64).sqrt());
    around(m, se, t_975(n - 2 * g - 1))
}

/// The 95% interval of the median of positive samples, by order statistics; None below 6
/// samples or for a negative or non-finite sample.
pub fn median_ci95(xs: &[f64]) -> Option<[f64; 2]> {
    if xs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return None;
    }
    let n = xs.len() as f64;
    let (j, k) = ((n / 2.0 - 0.98 * n.sqrt()).floor(), (n / 2.0 + 1.0 + 0.98 * n.sqrt()).ceil());
    if j < 1.0 || k > n {
        return None;
    }
    let v = sorted(xs);
    Some([v[j as usize - 1], v[k as usize - 1]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn by_hand() {
        // Nine 10s and a 50: the 2-sigma mean keeps the nine, whose sd is 0: [10, 10].
        let mut xs = vec![10.0; 9];
        xs.push(50.0);
        assert_eq!(two_sigma_kept(&xs), vec![10.0; 9]);
        assert_eq!(two_sigma_ci95(&xs), Some([10.0, 10.0]));
        // 1..=10, trimmed 10%: g = 1, mean of 2..=9 = 5.5; winsorized 2,2,3,..,9,9: squares
        // about 5.5 sum to 66.5, sd sqrt(66.5 / 9) = 2.71825; se = 2.71825 / (0.8 sqrt(10))
        // = 1.07448; t(7) = 2.3646.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let [lo, hi] = trimmed_ci95(&xs, 0.10).unwrap();
        let f = (2.3646 * 1.074_48 / 5.5f64).exp();
        assert!((lo - 5.5 / f).abs() < 1e-3 && (hi - 5.5 * f).abs() < 1e-3, "{lo} {hi}");
        // Below 10 samples nothing is trimmed: the interval of the mean.
        assert_eq!(trimmed_ci95(&[1.0, 2.0, 3.0], 0.10), super::super::positive_ci95(&[1.0, 2.0, 3.0]));
        assert_eq!(trimmed_ci95(&[1.0], 0.10), None);
        assert_eq!(two_sigma_ci95(&[1.0, -2.0, 3.0]), None);
        // The median of 1..=10: j = floor(5 - 3.099) = 1, k = ceil(6 + 3.099) = 10.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_ci95(&xs), Some([1.0, 10.0]));
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_ci95(&xs), Some([40.0, 61.0]));
        assert_eq!(median_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
    }

    proptest! {
        #[test]
        fn robust_intervals_hold_their_statistic_and_stay_above_zero(xs in proptest::collection::vec(1e-3f64..1e9, 2..40)) {
            let m = super::super::two_sigma_mean(&xs);
            let [lo, hi] = two_sigma_ci95(&xs).unwrap();
            prop_assert!(lo > 0.0 && lo <= m * (1.0 + 1e-12) && hi >= m * (1.0 - 1e-12));
            let t = super::super::trimmed_mean(&xs, 0.10);
            let [lo, hi] = trimmed_ci95(&xs, 0.10).unwrap();
            prop_assert!(lo > 0.0 && lo <= t * (1.0 + 1e-12) && hi >= t * (1.0 - 1e-12));
        }
    }
}
