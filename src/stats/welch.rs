//! The ratio of two positive figures (B / A, a rate after and before) with its 95% interval by
//! Welch's t on the logs of the runs.
//!
//! Method: with x = ln of A's runs and y = ln of B's, the difference of their means d = ȳ - x̄
//! estimates the log of the ratio of the geometric means; its standard error is
//! se = sqrt(s_x²/n_x + s_y²/n_y) and its degrees of freedom the Welch-Satterthwaite
//! approximation df = se⁴ / ((s_x²/n_x)²/(n_x-1) + (s_y²/n_y)²/(n_y-1)) (Welch, "The
//! generalization of 'Student's' problem when several different population variances are
//! involved", Biometrika 34, 1947; Satterthwaite, Biometrics Bulletin 2, 1946). The interval
//! is exp(d ± t(0.975, df) se), t taken at floor(df) degrees (at least 1): never narrower than
//! at the fractional df. Rates are positive and their spread grows with their size, which the
//! log scale makes even; the two sides may have different numbers of runs and spreads.

use super::{mean, sd, t_975};

/// B / A of two sets of positive samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogRatio {
    /// exp(mean ln B - mean ln A): the ratio of the geometric means.
    pub ratio: f64,
    /// Its 95% interval.
    pub ci95: [f64; 2],
    /// The Welch-Satterthwaite degrees of freedom (infinite when both sides have no spread).
    pub df: f64,
}

/// B / A with its 95% interval by Welch's t on the logs; None when a side has fewer than two
/// samples, or a sample that is not positive and finite.
pub fn log_ratio_ci95(a: &[f64], b: &[f64]) -> Option<LogRatio> {
    let logs = |xs: &[f64]| -> Option<Vec<f64>> {
        (xs.len() >= 2 && xs.iter().all(|x| x.is_finite() && *x > 0.0))
            .then(|| xs.iter().map(|x| x.ln()).collect())
    };
    let (la, lb) = (logs(a)?, logs(b)?);
    let d = mean(&lb) - mean(&la);
    let (va, vb) = (sd(&la)?.powi(2) / la.len() as f64, sd(&lb)?.powi(2) / lb.len() as f64);
    let se = (va + vb).sqrt();
    let ratio = d.exp();
    if se == 0.0 {
        return Some(LogRatio { ratio, ci95: [ratio, ratio], df: f64::INFINITY });
    }
    let df = (va + vb).powi(2) / (va * va / (la.len() - 1) as f64 + vb * vb / (lb.len() - 1) as f64);
    // (Equal spreads and sizes give a whole df that rounding may leave a hair under.)
    let half = t_975(((df + 1e-9).floor() as usize).max(1)) * se;
    Some(LogRatio { ratio, ci95: [(d - half).exp(), (d + half).exp()], df })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_sides_give_one_within_an_interval_about_one() {
        let a = [100.0, 110.0, 90.0, 105.0];
        let r = log_ratio_ci95(&a, &a).unwrap();
        assert!((r.ratio - 1.0).abs() < 1e-12);
        assert!(r.ci95[0] < 1.0 && r.ci95[1] > 1.0);
        // Equal spreads and sizes: df = 2 (n - 1).
        assert!((r.df - 6.0).abs() < 1e-9);
    }

    #[test]
    fn a_side_at_half_gives_one_half_and_the_interval_of_the_logs() {
        let a = [100.0, 120.0, 80.0];
        let b: Vec<f64> = a.iter().map(|x| x / 2.0).collect();
        let r = log_ratio_ci95(&a, &b).unwrap();
        assert!((r.ratio - 0.5).abs() < 1e-12);
        // By hand: the logs' variance s², se = sqrt(2 s² / 3), df = 4, t = 2.7764.
        let la: Vec<f64> = a.iter().map(|x: &f64| x.ln()).collect();
        let se = (2.0 * sd(&la).unwrap().powi(2) / 3.0).sqrt();
        assert!((r.df - 4.0).abs() < 1e-9);
        assert!((r.ci95[0] - 0.5 * (-2.7764 * se).exp()).abs() < 1e-9);
        assert!((r.ci95[1] - 0.5 * (2.7764 * se).exp()).abs() < 1e-9);
        assert!(r.ci95[1] < 1.0);
    }

    #[test]
    fn unequal_spreads_take_welchs_degrees_of_freedom() {
        let a = [1.0, 1.0001, 0.9999];
        let b = [2.0, 3.0, 1.5, 2.5, 2.2];
        let r = log_ratio_ci95(&a, &b).unwrap();
        // Almost all the variance is B's: df near n_b - 1 = 4 (Welch's lies between the smaller
        // n - 1, 2, and n_a + n_b - 2, 6).
        assert!((r.df - 4.0).abs() < 0.01, "{}", r.df);
    }

    #[test]
    fn too_few_or_non_positive_samples_give_none() {
        assert!(log_ratio_ci95(&[1.0], &[1.0, 2.0]).is_none());
        assert!(log_ratio_ci95(&[1.0, 0.0], &[1.0, 2.0]).is_none());
        assert!(log_ratio_ci95(&[1.0, 2.0], &[f64::NAN, 2.0]).is_none());
        let r = log_ratio_ci95(&[2.0, 2.0], &[1.0, 1.0]).unwrap();
        assert_eq!(r.ci95, [0.5, 0.5]);
    }
}
