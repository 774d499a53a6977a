//! The studies' findings checked against an experiment's results: each finding compares one
//! figure of two sides (sweep points and phases) as a ratio, and its verdict comes from the
//! 95% confidence intervals over the repetitions, never from one run (docs/experiments.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{PointResult, Status};
use crate::stats;

/// A finding as a preset declares it (`[[preset.finding]]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSpec {
    /// What the study found, in words.
    pub claim: String,
    /// The study's figure for it, with where it is (`5.4 -> 4.8 MB/s, Fig. 5`).
    pub paper: String,
    /// The figure compared, unless a side names its own (`max_sar` if not given).
    #[serde(default)]
    pub figure: Option<String>,
    /// The phase compared, unless a side names its own (the point's first phase if not given).
    #[serde(default)]
    pub phase: Option<String>,
    /// The numerator's side: sweep values (a list: the first one the run has), `phase`, `figure`.
    pub a: BTreeMap<String, Sel>,
    /// The denominator's side.
    pub b: BTreeMap<String, Sel>,
    /// The claim holds when a / b lies within [min_ratio, max_ratio] (either may be open).
    #[serde(default)]
    pub min_ratio: Option<f64>,
    #[serde(default)]
    pub max_ratio: Option<f64>,
}

/// A side's value for one key: one value, or alternatives (the first the run has).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Sel {
    One(String),
    Int(i64),
    Bool(bool),
    Any(Vec<toml::Value>),
}

impl Sel {
    fn values(&self) -> Vec<String> {
        let s = |v: &toml::Value| v.as_str().map(String::from).unwrap_or_else(|| v.to_string());
        match self {
            Sel::One(v) => vec![v.clone()],
            Sel::Int(i) => vec![i.to_string()],
            Sel::Bool(b) => vec![b.to_string()],
            Sel::Any(vs) => vs.iter().map(s).collect(),
        }
    }
}

/// The keys of a side that name its own phase and figure rather than a sweep value.
const OWN_KEYS: [&str; 2] = ["phase", "figure"];

/// A side's first value for `key`.
fn first(side: &BTreeMap<String, Sel>, key: &str) -> Option<String> {
    side.get(key).and_then(|s| s.values().into_iter().next())
}

/// The figures a finding can compare: name, what it is, and how to print it.
pub const FIGURES: &[(&str, &str)] = &[
    ("agg", "agg: all bytes / (first open to last close) (MB/s)"),
    ("max_sar", "max_SAR (MB/s)"),
    ("min_sar", "min_SAR (MB/s)"),
    ("avg_individual", "average individual rate (MB/s)"),
    ("time", "time (s)"),
    ("prealloc_time", "preallocation time (s)"),
    ("latency_p50", "median time of one op (s; the workers' mean)"),
    ("latency_max", "slowest single op (s; over the workers)"),
];

/// Whether a figure is a time (printed in seconds) rather than a rate (MB/s).
fn is_time(figure: &str) -> bool {
    figure.contains("time") || figure.starts_with("latency")
}

/// The verdict of a finding on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    DoesNotHold,
    Inconclusive,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One side as measured: which points and phase, the figure's mean and 95% interval (on the
/// log scale: [`stats::positive_ci95`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideResult {
    /// The points' sweep values (`sync=each bs=4MiB`), or why none matched.
    pub point: String,
    pub phase: String,
    pub figure: String,
    pub n: usize,
    pub mean: f64,
    pub ci95: Option<[f64; 2]>,
}

/// A finding checked against one experiment (`findings` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub claim: String,
    pub paper: String,
    /// The rule in words: `a / b <= 1`, `0.9 <= a / b <= 1.1`.
    pub rule: String,
    pub a: SideResult,
    pub b: SideResult,
    /// The measured a / b (ratio of the means, or mean of the paired ratios).
    pub ratio: Option<f64>,
    /// Its 95% interval.
    pub interval: Option<[f64; 2]>,
    /// Whether the repetitions were paired (both sides from the same runs).
    pub paired: bool,
    pub verdict: Verdict,
    /// Why that verdict, in words.
    pub why: String,
}

/// The value of a figure in one repetition.
fn figure_of(r: &super::Repetition, figure: &str) -> Option<f64> {
    Some(match figure {
        "agg" => r.agg_bytes_per_s?,
        "max_sar" => r.max_sar_bytes_per_s,
        "min_sar" => r.min_sar_bytes_per_s,
        "avg_individual" => r.avg_individual_bytes_per_s,
        "time" => r.time_ns as f64 / 1e9,
        "prealloc_time" => r.prealloc_ns as f64 / 1e9,
        "latency_p50" => {
            let p50: Vec<f64> = r.workers.iter().map(|w| w.latency_ns.p50 as f64 / 1e9).collect();
            stats::mean(&p50)
        }
        "latency_max" => r.workers.iter().map(|w| w.latency_ns.max).max()? as f64 / 1e9,
        _ => return None,
    })
}

/// Whether a point's value for a key equals a wanted value (sizes compare as bytes).
fn same_value(have: &str, want: &str) -> bool {
    if have == want {
        return true;
    }
    // Any memory size will do, as long as multiples of it stay apart.
    let size = |s: &str| crate::units::parse_size(s, 1 << 40).ok();
    matches!((size(have), size(want)), (Some(a), Some(b)) if a == b)
}

/// A side resolved: the indices of its points, its phase name and figure.
struct Picked {
    points: Vec<usize>,
    label: String,
    phase: String,
    figure: String,
}

impl FindingSpec {
    /// The rule in words.
    pub fn rule(&self) -> String {
        match (self.min_ratio, self.max_ratio) {
            (Some(lo), Some(hi)) => format!("{lo} <= a / b <= {hi}"),
            (Some(lo), None) => format!("a / b >= {lo}"),
            (None, Some(hi)) => format!("a / b <= {hi}"),
            (None, None) => "a / b (no range)".into(),
        }
    }

    /// The spec's own errors: an unknown figure, no range, an empty range.
    pub fn check(&self) -> std::result::Result<(), String> {
        for side in [&self.a, &self.b] {
            if let Some(f) = first(side, "figure").or(self.figure.clone()) {
                if !FIGURES.iter().any(|(n, _)| *n == f) {
                    let names: Vec<&str> = FIGURES.iter().map(|f| f.0).collect();
                    return Err(format!("unknown figure `{f}` (known: {})", names.join(", ")));
                }
            }
        }
        match (self.min_ratio, self.max_ratio) {
            (None, None) => Err("give min_ratio, max_ratio or both".into()),
            (Some(lo), Some(hi)) if lo > hi => Err(format!("min_ratio {lo} is above max_ratio {hi}")),
            _ => Ok(()),
        }
    }

    /// The sweep keys the sides name (for checking them against the preset's axes).
    pub fn keys(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.a.keys().chain(self.b.keys()).map(String::as_str).collect();
        v.retain(|k| !OWN_KEYS.contains(k));
        v.sort_unstable();
        v.dedup();
        v
    }

    fn pick(&self, side: &BTreeMap<String, Sel>, points: &[PointResult]) -> Picked {
        let figure = first(side, "figure").or(self.figure.clone()).unwrap_or_else(|| "max_sar".into());
        let phase = first(side, "phase").or(self.phase.clone());
        let mut chosen: Vec<(String, String)> = vec![];
        let mut idx: Vec<usize> = (0..points.len()).collect();
        for (k, sel) in side.iter().filter(|(k, _)| !OWN_KEYS.contains(&k.as_str())) {
            let hit = sel.values().into_iter().find(|want| {
                idx.iter().any(|&i| points[i].params.get(k).is_some_and(|h| same_value(h, want)))
            });
            match hit {
                Some(want) => {
                    idx.retain(|&i| points[i].params.get(k).is_some_and(|h| same_value(h, &want)));
                    chosen.push((k.clone(), want));
                }
                None => {
                    idx.clear();
                    chosen.push((k.clone(), format!("{} (not run)", sel.values().join("|"))));
                }
            }
        }
        let label = if chosen.is_empty() {
            "every point".to_string()
        } else {
            chosen.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        };
        let phase = phase
            .or_else(|| idx.first().and_then(|&i| points[i].phases.first()).map(|p| p.name.clone()))
            .unwrap_or_default();
        Picked { points: idx, label, phase, figure }
    }

    /// The side's samples by (point, repetition), from complete repetitions only.
    fn samples(p: &Picked, points: &[PointResult]) -> Vec<((usize, u32), f64)> {
        let mut out = vec![];
        for &i in &p.points {
            let want = expand(&p.phase, &points[i].params);
            for ph in points[i].phases.iter().filter(|ph| ph.name == want) {
                for r in ph.repetitions.iter().filter(|r| r.status == Status::Complete) {
                    if let Some(v) = figure_of(r, &p.figure) {
                        out.push(((i, r.rep), v));
                    }
                }
            }
        }
        out
    }

    /// Checks the finding against an experiment's results.
    pub fn evaluate(&self, points: &[PointResult]) -> Finding {
        let (pa, pb) = (self.pick(&self.a, points), self.pick(&self.b, points));
        let (sa, sb) = (Self::samples(&pa, points), Self::samples(&pb, points));
        let side = |p: &Picked, s: &[((usize, u32), f64)]| {
            let xs: Vec<f64> = s.iter().map(|x| x.1).collect();
            SideResult {
                point: p.label.clone(),
                phase: p.phase.clone(),
                figure: p.figure.clone(),
                n: xs.len(),
                mean: stats::mean(&xs),
                ci95: stats::positive_ci95(&xs),
            }
        };
        let (a, b) = (side(&pa, &sa), side(&pb, &sb));
        let paired = pa.points == pb.points && !sa.is_empty();
        let (ratio, interval) = if paired {
            let xs: Vec<f64> = sa
                .iter()
                .filter_map(|(k, a)| sb.iter().find(|(j, _)| j == k).map(|(_, b)| a / b))
                .filter(|r| r.is_finite())
                .collect();
            // Ratios of figures that are never negative: the interval on the log scale.
            let ci = stats::positive_ci95(&xs);
            (Some(stats::mean(&xs)).filter(|m| m.is_finite()), ci)
        } else {
            (Some(a.mean / b.mean).filter(|r| r.is_finite()), unpaired_interval(a.ci95, b.ci95))
        };
        let (verdict, why) = if a.n < 2 || b.n < 2 {
            let which = if a.n < 2 { &a } else { &b };
            (
                Verdict::Inconclusive,
                format!(
                    "{} repetition(s) of {} {}: at least 2 are needed",
                    which.n, which.point, which.phase
                ),
            )
        } else {
            decide(interval, self.min_ratio, self.max_ratio)
        };
        Finding {
            claim: self.claim.clone(),
            paper: self.paper.clone(),
            rule: self.rule(),
            a,
            b,
            ratio,
            interval,
            paired,
            verdict,
            why,
        }
    }
}

/// A phase name with the point's sweep values put in for `{key}` (`read:workers={n}:cold`).
fn expand(phase: &str, params: &BTreeMap<String, String>) -> String {
    params.iter().fold(phase.to_string(), |s, (k, v)| s.replace(&format!("{{{k}}}"), v))
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

/// The decision rule: holds when the ratio's interval lies within the expected range, does not
/// hold when it lies wholly outside it, inconclusive otherwise (or with no interval).
pub fn decide(interval: Option<[f64; 2]>, min: Option<f64>, max: Option<f64>) -> (Verdict, String) {
    let Some([lo, hi]) = interval else {
        return (Verdict::Inconclusive, "no interval (fewer than 2 paired repetitions)".into());
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

/// A side's figure in its unit: MB/s for rates, seconds for times.
pub fn side_value(s: &SideResult) -> String {
    let (scale, unit) = if is_time(&s.figure) { (1.0, "s") } else { (1e-6, "MB/s") };
    match s.ci95 {
        Some([lo, hi]) => {
            format!("{} {unit} [{}, {}]", num(s.mean * scale), num(lo * scale), num(hi * scale))
        }
        None if s.n > 0 => format!("{} {unit} (n={})", num(s.mean * scale), s.n),
        None => "not measured".into(),
    }
}

#[cfg(test)]
#[path = "findings_tests.rs"]
mod tests;
