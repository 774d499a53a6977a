//! Before and after (`iolab results compare A B`): for every point and phase two experiments
//! share, B / A of the headline figure with its 95% interval from the raw repetitions (Welch's
//! t on the logs, [`crate::stats::welch`]), a verdict that respects the runs' flags, the latency
//! percentiles side by side; the points and phases only one has; and first, the settings that
//! differ. Its formats (text, Markdown, CSV, JSON) are the exporters of [`FORMATS`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::latency::LatencyNs;
use crate::report::{Exporter, find, point_params};
use crate::results::{ExperimentResult, Headline, PhaseResult, Rate};
use crate::stats::{Summary, welch};

mod csv;
mod json;
mod markdown;
mod settings;
mod text;

/// The formats of `iolab results compare A B`.
pub static FORMATS: &[&(dyn Exporter<Comparison> + Sync)] =
    &[&text::Text, &markdown::Markdown, &csv::Csv, &json::Json];

/// How the interval is made, for every format's notes.
pub const METHOD: &str = "Welch's t on the logs of the runs' figures (Welch 1947, Biometrika 34): \
     the 95% interval of the ratio of their geometric means";

/// Flags whose runs' figure is not the storage's alone: a side carrying one makes the verdict
/// inconclusive. (Other flags are shown; they do not change what the figure measures.)
pub const BLOCKING: [&str; 6] =
    ["noisy", "oversubscribed", "stalled", "not cold", "not warm", "trace writer behind"];

/// The verdict on one shared phase, B against A (higher rates are faster).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval lies wholly above 1.
    Faster,
    /// The interval lies wholly below 1.
    Slower,
    /// The interval holds 1.
    NoChange,
    /// Too few runs, or a side's runs flagged (see [`BLOCKING`]).
    Inconclusive,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        ["faster", "slower", "no change", "inconclusive"][self as usize]
    }
}

/// One experiment of the two.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub experiment_id: String,
    pub name: String,
    pub hostname: String,
    pub created_unix_s: f64,
}

/// One side of a shared phase.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// Complete runs with the figure.
    pub runs: usize,
    /// The headline statistic of the figure over them (bytes/s, or ops/s for metadata: the
    /// phase's `unit`).
    #[serde(rename = "headline_per_s")]
    pub value: Option<f64>,
    /// The same statistic of min_SAR and max_SAR, by name.
    #[serde(rename = "min_sar_per_s")]
    pub min_sar: Option<f64>,
    #[serde(rename = "max_sar_per_s")]
    pub max_sar: Option<f64>,
    pub flags: Vec<String>,
    pub latency_ns: LatencyNs,
    /// The runs' figures, as measured.
    #[serde(rename = "runs_per_s")]
    pub values: Vec<f64>,
}

/// A point and phase both experiments have.
#[derive(Debug, Clone, Serialize)]
pub struct Shared {
    /// The point's axis values (`bs=4KiB`), empty for a single point.
    pub point: String,
    pub phase: String,
    /// `bytes_per_s`, or `ops_per_s` for a metadata phase.
    pub unit: &'static str,
    pub a: Figure,
    pub b: Figure,
    /// B / A of the headline values.
    pub ratio: Option<f64>,
    /// Its 95% interval ([`METHOD`]).
    pub ci95: Option<[f64; 2]>,
    pub verdict: Verdict,
    /// Why the verdict is what it is.
    pub why: String,
}

impl Shared {
    /// The point and phase, as one name.
    pub fn label(&self) -> String {
        if self.point.is_empty() { self.phase.clone() } else { format!("{} {}", self.point, self.phase) }
    }

    /// Slower by more than `pct` per cent with 95% confidence: the interval lies wholly below
    /// 1 - pct / 100.
    pub fn slower_by_more_than(&self, pct: f64) -> bool {
        self.verdict == Verdict::Slower && self.ci95.is_some_and(|[_, hi]| hi < 1.0 - pct / 100.0)
    }
}

/// A setting with different values in A and B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    pub key: String,
    pub a: String,
    pub b: String,
}

/// Two experiments compared, B against A.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// The headline statistic and the per-run rate it summarises (A's design).
    pub statistic: Headline,
    pub figure: Rate,
    pub method: &'static str,
    pub settings_differ: Vec<Setting>,
    pub shared: Vec<Shared>,
    /// Points and phases in one only (`point phase`).
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

impl Comparison {
    /// The shared phases slower by more than `pct` per cent with confidence.
    pub fn slower_by_more_than(&self, pct: f64) -> Vec<&Shared> {
        self.shared.iter().filter(|s| s.slower_by_more_than(pct)).collect()
    }

    /// What the figure is, for the notes.
    pub fn about(&self) -> String {
        format!("{} of {} per phase", self.statistic.about(), self.figure.about())
    }
}

fn side(e: &ExperimentResult) -> Side {
    Side {
        experiment_id: e.experiment_id.clone(),
        name: e.spec.name.clone(),
        hostname: e.host.hostname.clone(),
        created_unix_s: e.created_unix_s,
    }
}

fn figure(ph: &PhaseResult, stat: Headline, rate: Rate) -> Figure {
    let values = rate.values(ph);
    let of = |r: Rate| r.summary(ph).map(|s: Summary| stat.value(&s));
    Figure {
        runs: values.len(),
        value: (!values.is_empty()).then(|| stat.value(&Summary::of(rate.field(), &values))),
        min_sar: of(Rate::MinSar),
        max_sar: of(Rate::MaxSar),
        flags: ph.flags.clone(),
        latency_ns: ph.latency_ns,
        values,
    }
}

/// The first flag of a side that makes a verdict inconclusive.
fn blocking(f: &Figure) -> Option<&str> {
    f.flags.iter().map(String::as_str).find(|f| BLOCKING.iter().any(|k| f.starts_with(k)))
}

fn shared(point: String, pa: &PhaseResult, pb: &PhaseResult, stat: Headline, rate: Rate) -> Shared {
    let (a, b) = (figure(pa, stat, rate), figure(pb, stat, rate));
    let ratio = a.value.zip(b.value).map(|(x, y)| y / x).filter(|r| r.is_finite());
    let ci95 = welch::log_ratio_ci95(&a.values, &b.values).map(|r| r.ci95);
    let (verdict, why) = if let Some((s, f)) = [("A", &a), ("B", &b)].into_iter().find(|(_, f)| f.runs < 2) {
        (Verdict::Inconclusive, format!("{} complete run(s) in {s}: at least 2 are needed", f.runs))
    } else if let Some((s, flag)) =
        [("A", &a), ("B", &b)].into_iter().find_map(|(s, f)| blocking(f).map(|g| (s, g)))
    {
        let kind = crate::results::flag_kind(flag).unwrap_or(flag);
        (
            Verdict::Inconclusive,
            format!("{s}'s runs were flagged `{kind}`: its figure is not the storage's alone"),
        )
    } else {
        match ci95 {
            None => (Verdict::Inconclusive, "a figure that is not a positive rate".to_string()),
            Some([lo, _]) if lo > 1.0 => (Verdict::Faster, "the interval lies above 1".to_string()),
            Some([_, hi]) if hi < 1.0 => (Verdict::Slower, "the interval lies below 1".to_string()),
            Some(_) => (Verdict::NoChange, "the interval holds 1".to_string()),
        }
    };
    let unit = if pa.op.is_metadata() { "ops_per_s" } else { "bytes_per_s" };
    Shared { point, phase: pa.name.clone(), unit, a, b, ratio, ci95, verdict, why }
}

/// A phase's place: its point's axis values and its name.
type Key = (String, String);

/// B against A. Points pair by their axis values (a single point with a single point, whatever
/// its settings), phases by name.
pub fn compare(a: &ExperimentResult, b: &ExperimentResult) -> Comparison {
    let (stat, rate) = (a.design.headline, a.design.figure);
    let key = |e: &ExperimentResult, i: usize| {
        if a.points.len() == 1 && b.points.len() == 1 { String::new() } else { point_params(&e.points[i]) }
    };
    let index = |e: &ExperimentResult| -> BTreeMap<Key, (usize, usize)> {
        let mut m = BTreeMap::new();
        for (i, p) in e.points.iter().enumerate() {
            for (j, ph) in p.phases.iter().enumerate() {
                m.entry((key(e, i), ph.name.clone())).or_insert((i, j));
            }
        }
        m
    };
    let (ia, ib) = (index(a), index(b));
    let name = |(p, ph): &(String, String)| if p.is_empty() { ph.clone() } else { format!("{p} {ph}") };
    let mut out = vec![];
    // In A's order of points and phases.
    let mut keys: Vec<(&Key, &(usize, usize))> = ia.iter().collect();
    keys.sort_by_key(|(_, ij)| **ij);
    for &(k, &(i, j)) in &keys {
        if let Some(&(bi, bj)) = ib.get(k) {
            out.push(shared(k.0.clone(), &a.points[i].phases[j], &b.points[bi].phases[bj], stat, rate));
        }
    }
    let only = |x: &BTreeMap<_, (usize, usize)>, y: &BTreeMap<_, _>| {
        let mut v: Vec<_> = x.iter().filter(|(k, _)| !y.contains_key(*k)).collect();
        v.sort_by_key(|(_, ij)| **ij);
        v.into_iter().map(|(k, _)| name(k)).collect()
    };
    Comparison {
        a: side(a),
        b: side(b),
        statistic: stat,
        figure: rate,
        method: METHOD,
        settings_differ: settings::differ(a, b),
        shared: out,
        only_a: only(&ia, &ib),
        only_b: only(&ib, &ia),
    }
}

/// The comparison in the named format (`text`, `markdown`, `csv` or `json`).
pub fn render(c: &Comparison, format: &str) -> crate::error::Result<String> {
    super::super::render(find(FORMATS, format)?, c)
}

/// A figure in MB/s (or ops/s), as the tables show it.
fn value_cell(unit: &str, v: Option<f64>) -> String {
    let Some(v) = v else { return "-".into() };
    let v = if unit == "ops_per_s" { v } else { crate::units::mb_per_s(v) };
    match v.abs() {
        x if x >= 1000.0 => format!("{v:.0}"),
        x if x >= 100.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// A latency in three figures, its unit without a space (`272us`, `31.7us`, `2.21ms`).
fn ns_cell(ns: u64) -> String {
    if ns == 0 {
        return "-".into();
    }
    let (v, unit) = match ns {
        n if n >= 1_000_000_000 => (n as f64 / 1e9, "s"),
        n if n >= 1_000_000 => (n as f64 / 1e6, "ms"),
        n if n >= 1_000 => (n as f64 / 1e3, "us"),
        n => (n as f64, "ns"),
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{unit}")
}

fn interval_cell(ci: Option<[f64; 2]>) -> String {
    ci.map(|[lo, hi]| format!("{lo:.3}..{hi:.3}")).unwrap_or_else(|| "-".into())
}

/// The rows of the text and Markdown tables, under [`HEADERS`].
fn cells(c: &Comparison) -> Vec<Vec<String>> {
    c.shared
        .iter()
        .map(|s| {
            let flagged = |f: &Figure| if f.flags.is_empty() { "" } else { "*" };
            vec![
                s.label(),
                format!("{}{}", value_cell(s.unit, s.a.value), flagged(&s.a)),
                format!("{}{}", value_cell(s.unit, s.b.value), flagged(&s.b)),
                format!("{}/{}", s.a.runs, s.b.runs),
                s.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "-".into()),
                interval_cell(s.ci95),
                s.verdict.text().to_string(),
                format!("{}/{}", ns_cell(s.a.latency_ns.p50), ns_cell(s.b.latency_ns.p50)),
                format!("{}/{}", ns_cell(s.a.latency_ns.p99), ns_cell(s.b.latency_ns.p99)),
            ]
        })
        .collect()
}

/// The width the notes are wrapped to.
const WIDTH: usize = 100;

/// The columns of the text and Markdown tables.
const HEADERS: [&str; 9] =
    ["phase", "A", "B", "runs", "B/A", "95% interval", "verdict", "p50 A/B", "p99 A/B"];

/// The lines above the table: which is which, and the settings that differ.
fn head(c: &Comparison, bullet: &str) -> String {
    let who = |s: &Side| format!("{} `{}` on {}", s.experiment_id, s.name, s.hostname);
    let mut t = format!("A (before): {}\nB (after):  {}\n", who(&c.a), who(&c.b));
    if c.settings_differ.is_empty() {
        t += "settings: the same\n";
    } else {
        t += "settings that differ (A -> B):\n";
        for s in &c.settings_differ {
            t += &format!("{bullet}{}: {} -> {}\n", s.key, s.a, s.b);
        }
    }
    t
}

/// The lines under the table: the phases in one only, what the figures are, the method, the
/// verdicts that were inconclusive and why.
fn notes(c: &Comparison, bullet: &str) -> String {
    let mut t = String::new();
    for (s, only) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !only.is_empty() {
            t += &format!("only in {s}: {}\n", only.join(", "));
        }
    }
    if c.shared.is_empty() {
        t += "no phase is in both: nothing to compare\n";
    }
    let unit = if c.shared.iter().all(|s| s.unit == "ops_per_s") { "ops/s" } else { "MB/s = 10^6 B/s" };
    let wrap = |text: &str, first: &str| crate::text::wrap(text, WIDTH, first, first.len().max(2));
    let what = format!("A, B: {unit}, {}; runs: A's/B's; * flagged (`iolab results show ID`)", c.about());
    t += &wrap(&what, "");
    t += &wrap(&format!("B/A: its interval by {METHOD}"), "");
    for s in c.shared.iter().filter(|s| s.verdict == Verdict::Inconclusive) {
        t += &wrap(&format!("{}: inconclusive: {}", s.label(), s.why), bullet);
    }
    t
}
