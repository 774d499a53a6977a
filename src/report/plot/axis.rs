//! Axes and scales shared by every plot kind: linear or logarithmic, nice tick positions,
//! tick labels with units (sizes in KiB/MiB, rates in MB/s, latencies in µs), and the kind
//! of a swept parameter's values (numbers, sizes or categories).

use crate::units::parse_size;

/// A log axis is used when positive values span more than this factor.
pub const LOG_SPAN: f64 = 16.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// One axis: its title (with the unit), scale, range and ticks, in display units.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub title: String,
    pub scale: Scale,
    pub min: f64,
    pub max: f64,
    /// Tick positions and their labels.
    pub ticks: Vec<(f64, String)>,
}

/// How tick labels are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Plain numbers.
    Number,
    /// Bytes, written in binary units (4 KiB, 1 MiB).
    Bytes,
}

impl Axis {
    /// The position of `v` on the drawing's linear coordinate (log10 on a log axis).
    pub fn to_coord(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log => v.max(f64::MIN_POSITIVE).log10(),
        }
    }

    /// The coordinate range to draw.
    pub fn coord_range(&self) -> (f64, f64) {
        (self.to_coord(self.min), self.to_coord(self.max))
    }

    /// A numeric axis over `values`: log when `log` says so or, if None, when positive values
    /// span more than [`LOG_SPAN`]; a linear axis starts at zero when `from_zero`.
    pub fn numeric(
        title: impl Into<String>,
        values: &[f64],
        unit: Unit,
        log: Option<bool>,
        from_zero: bool,
    ) -> Axis {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if finite.is_empty() { (0.0, 1.0) } else { (lo, hi) };
        let log = log.unwrap_or(lo > 0.0 && hi / lo > LOG_SPAN) && lo > 0.0;
        if log {
            let (min, max) = (lo / 1.25, hi * 1.25);
            let ticks = match unit {
                Unit::Bytes => binary_log_ticks(min, max),
                Unit::Number => decimal_log_ticks(min, max),
            };
            let ticks = ticks.into_iter().map(|t| (t, label(t, unit))).collect();
            return Axis { title: title.into(), scale: Scale::Log, min, max, ticks };
        }
        let (mut min, mut max) = if from_zero { (lo.min(0.0), hi.max(0.0)) } else { (lo, hi) };
        if max - min <= 0.0 {
            let pad = if max == 0.0 { 1.0 } else { max.abs() * 0.1 };
            min -= if from_zero && min >= 0.0 { 0.0 } else { pad };
            max += pad;
        } else {
            let pad = (max - min) * 0.06;
            if !(from_zero && min == 0.0) {
                min -= pad;
            }
            max += pad;
        }
        let mut ticks = match unit {
            Unit::Bytes if !from_zero => binary_linear_ticks(min, max),
            _ => linear_ticks(min, max, 6),
        };
        // Whole-number values (workers, readers) get whole-number ticks.
        if finite.iter().all(|v| v.fract() == 0.0) && ticks.iter().filter(|t| t.fract() == 0.0).count() >= 2 {
            ticks.retain(|t| t.fract() == 0.0);
        }
        let ticks = ticks.into_iter().map(|t| (t, label(t, unit))).collect();
        Axis { title: title.into(), scale: Scale::Linear, min, max, ticks }
    }

    /// A category axis: category i sits at x = i.
    pub fn categories(title: impl Into<String>, names: &[String]) -> Axis {
        let ticks = names.iter().enumerate().map(|(i, n)| (i as f64, n.clone())).collect();
        Axis {
            title: title.into(),
            scale: Scale::Linear,
            min: -0.6,
            max: names.len().max(1) as f64 - 0.4,
            ticks,
        }
    }

    /// Whether tick labels are long enough to need writing vertically.
    pub fn long_labels(&self) -> bool {
        let total: usize = self.ticks.iter().map(|(_, l)| l.chars().count() + 2).sum();
        total > 70 || self.ticks.iter().any(|(_, l)| l.chars().count() > 18)
    }
}

/// A tick label.
pub fn label(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes if v >= 1.0 => crate::units::fmt_size(v.round() as u64).replace(".00", ""),
        _ => fmt_number(v),
    }
}

/// A number with no more digits than it needs: 1, 2.5, 0.001, 12000.
pub fn fmt_number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e7).contains(&a) {
        return format!("{v:.0e}");
    }
    let s = if a >= 100.0 { format!("{v:.0}") } else { format!("{v:.3}") };
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// Ticks at 1, 2 or 5 times a power of ten, about `target` of them.
pub fn linear_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    let span = max - min;
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return vec![min];
    }
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let count = |step: f64| (max / step).floor() - (min / step).ceil() + 1.0;
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .min_by(|a, b| (count(*a) - target as f64).abs().total_cmp(&(count(*b) - target as f64).abs()))
        .unwrap_or(mag);
    let first = (min / step).ceil() as i64;
    let last = (max / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Ticks at powers of ten (with 2 and 5 between them when the range spans less than three
/// decades).
pub fn decimal_log_ticks(min: f64, max: f64) -> Vec<f64> {
    let (a, b) = (min.log10().floor() as i32, max.log10().ceil() as i32);
    let mults: &[f64] = if (max / min).log10() <= 3.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut out = vec![];
    for e in a..=b {
        for m in mults {
            let t = m * 10f64.powi(e);
            if t >= min && t <= max {
                out.push(t);
            }
        }
    }
    out
}

/// Ticks at powers of two, every 2nd, 4th... power so that at most 9 remain.
pub fn binary_log_ticks(min: f64, max: f64) -> Vec<f64> {
    let (a, b) = (min.log2().ceil() as i32, max.log2().floor() as i32);
    let n = (b - a + 1).max(1);
    let step = (n as f64 / 9.0).ceil().max(1.0) as i32;
    // Prefer powers of 4 (1 KiB, 4 KiB, 16 KiB) when thinning.
    let start = if step > 1 { a + (a.rem_euclid(2)) } else { a };
    (start..=b).step_by(step as usize).map(|e| 2f64.powi(e)).collect()
}

/// Linear ticks for sizes: multiples of a power of two.
pub fn binary_linear_ticks(min: f64, max: f64) -> Vec<f64> {
    let span = max - min;
    if span.is_nan() || span <= 0.0 {
        return vec![min];
    }
    let mut step = 2f64.powi((span / 6.0).log2().ceil() as i32);
    if span / step < 3.0 {
        step /= 2.0;
    }
    let first = (min / step).ceil() as i64;
    let last = (max / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).filter(|t| *t >= 0.0).collect()
}

/// What a parameter's values are, for its axis.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Numbers(Vec<f64>),
    Sizes(Vec<f64>),
    Categories,
}

/// Reads a parameter's values: all plain numbers, all sizes (with at least one unit), or
/// else categories. Durations (`2s`) count as categories. `ram_bytes` resolves `xRAM`.
pub fn classify(values: &[String], ram_bytes: u64) -> Values {
    let nums: Option<Vec<f64>> = values.iter().map(|v| v.trim().parse::<f64>().ok()).collect();
    if let Some(n) = nums.filter(|n| n.iter().all(|x| x.is_finite())) {
        return Values::Numbers(n);
    }
    let sizes: Option<Vec<f64>> =
        values.iter().map(|v| parse_size(v, ram_bytes).ok().map(|b| b as f64)).collect();
    match sizes {
        Some(s) => Values::Sizes(s),
        None => Values::Categories,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_when_the_span_exceeds_16() {
        let a = Axis::numeric("x", &[1.0, 2.0, 4.0, 8.0], Unit::Number, None, false);
        assert_eq!(a.scale, Scale::Linear);
        let a = Axis::numeric("x", &[1.0, 8.0, 17.0], Unit::Number, None, false);
        assert_eq!(a.scale, Scale::Log);
        let a = Axis::numeric("bs", &[2048.0, 16384.0, 131072.0], Unit::Bytes, None, false);
        assert_eq!(a.scale, Scale::Log);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["2 KiB", "4 KiB", "8 KiB", "16 KiB", "32 KiB", "64 KiB", "128 KiB"]);
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(0.0, 1234.0, 6), [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0, 1200.0]);
        let a = Axis::numeric("y", &[0.0, 950.0], Unit::Number, Some(false), true);
        assert_eq!(a.min, 0.0);
        assert!(a.max > 950.0);
        assert_eq!(decimal_log_ticks(0.9, 110.0), [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(decimal_log_ticks(0.5, 2e6), [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]);
        assert!(binary_log_ticks(1.0, 1e9).len() <= 9);
    }

    #[test]
    fn values_are_classified() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(classify(&s(&["1", "2", "8"]), 0), Values::Numbers(vec![1.0, 2.0, 8.0]));
        assert_eq!(classify(&s(&["2KiB", "16KiB"]), 0), Values::Sizes(vec![2048.0, 16384.0]));
        assert_eq!(classify(&s(&["none", "each"]), 0), Values::Categories);
        assert_eq!(classify(&s(&["0.5xRAM"]), 1 << 30), Values::Sizes(vec![(1u64 << 29) as f64]));
        assert_eq!(fmt_number(2.5), "2.5");
        assert_eq!(fmt_number(1200.0), "1200");
        assert_eq!(label(65536.0, Unit::Bytes), "64 KiB");
    }
}
