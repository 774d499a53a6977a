//! A finding's arithmetic: a side's statistic with its 95% interval, the interval of a ratio
//! of two sides, the decision rule, and how the figures print.

use super::SideResult;
use super::pick::{is_plain, is_time};
use crate::results::Headline;
use crate::stats::{self, robust};

/// The statistic of positive samples and its 95% interval, on the log scale (never a negative
/// lower end): the mean's ([`stats::positive_ci95`]), the median's (order statistics), the
/// 2-sigma mean's and the trimmed mean's ([`robust`]). A NaN value and no interval without
/// samples; no interval below two.
pub fn summarize(xs: &[f64], stat: Headline) -> (f64, Option<[f64; 2]>) {
    if xs.is_empty() {
        return (f64::NAN, None);
    }
    match stat {
        Headline::Mean => (stats::mean(xs), stats::positive_ci95(xs)),
        Headline::Median => (stats::median(xs), robust::median_ci95(xs)),
        Headline::TwoSigmaMean => (stats::two_sigma_mean(xs), robust::two_sigma_ci95(xs)),
        Headline::TrimmedMean10 => (stats::trimmed_mean(xs, 0.10), robust::trimmed_ci95(xs, 0.10)),
    }
}

/// The interval of a / b from the sides' own intervals: [a_lo / b_hi, a_hi / b_lo], open above
/// when b_lo is 0 (figures are never negative: an interval given with a negative end is
/// clipped at 0).
pub fn unpaired_interval(a: Option<[f64; 2]>, b: Option<[f64; 2]>) -> Option<[f64; 2]> {
    let ([alo, ahi], [blo, bhi]) = (a?, b?);
    let (alo, blo) = (alo.max(0.0), blo.max(0.0));
    if bhi <= 0.0 {
        return None;
    }
    let hi = if blo > 0.0 { ahi / blo } else { f64::INFINITY };
    Some([alo / bhi, hi])
}

/// The decision rule: holds when the interval lies within the expected range, does not hold
/// when it lies wholly outside it, inconclusive otherwise (or with no interval).
pub fn decide(interval: Option<[f64; 2]>, min: Option<f64>, max: Option<f64>) -> (super::Verdict, String) {
    use super::Verdict;
    let Some([lo, hi]) = interval else {
        return (Verdict::Inconclusive, "no interval (fewer than 2 repetitions)".into());
    };
    let (emin, emax) = (min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY));
    let iv = format!("[{}, {}]", num(lo), num(hi));
    if lo >= emin && hi <= emax {
        (Verdict::Holds, format!("the interval {iv} lies within the expected range"))
    } else if hi < emin || lo > emax {
        (Verdict::DoesNotHold, format!("the interval {iv} lies wholly outside the expected range"))
    } else {
        (Verdict::Inconclusive, format!("the interval {iv} straddles the expected range"))
    }
}

/// A number with three significant digits (`inf` when open).
pub fn num(x: f64) -> String {
    if x.is_infinite() {
        return "inf".into();
    }
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 || x == 0.0 {
        format!("{x:.2}")
    } else {
        let decimals = (2.0 - x.abs().log10().floor()).clamp(0.0, 12.0) as usize;
        format!("{x:.decimals$}")
    }
}

/// A side's figure in its unit: MB/s for rates, seconds for times, as it is otherwise.
pub fn side_value(s: &SideResult) -> String {
    let (scale, unit) = if is_time(&s.figure) {
        (1.0, " s")
    } else if is_plain(&s.figure) {
        (1.0, "")
    } else {
        (1e-6, " MB/s")
    };
    match s.ci95 {
        Some([lo, hi]) => {
            format!("{}{unit} [{}, {}]", num(s.mean * scale), num(lo * scale), num(hi * scale))
        }
        None if s.n > 0 => format!("{}{unit} (n={})", num(s.mean * scale), s.n),
        None => "not measured".into(),
    }
}
