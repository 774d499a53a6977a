//! Which numbers a plot shows: the cells of an experiment (one per sweep point and phase),
//! their dimensions (each sweep axis, and `phase`), the choice of x, series and panels (from
//! the options, else from the preset's plot metadata, else from the sweep), and the
//! statistic with its error bar over a cell's repetitions.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Headline, PhaseResult, Repetition, Status};
use crate::stats::{self, Summary};

/// The pseudo-dimension that tells phases apart.
pub const PHASE: &str = "phase";

/// One (sweep point, phase) pair.
#[derive(Debug, Clone)]
pub struct Cell<'a> {
    pub point: usize,
    pub params: &'a BTreeMap<String, String>,
    pub ph: &'a PhaseResult,
}

impl Cell<'_> {
    /// The cell's value of a dimension (a sweep axis or `phase`).
    pub fn value(&self, dim: &str) -> String {
        if dim == PHASE {
            phase_key(&self.ph.name)
        } else {
            self.params.get(dim).cloned().unwrap_or_default()
        }
    }

    pub fn complete(&self) -> impl Iterator<Item = &Repetition> {
        self.ph.repetitions.iter().filter(|r| r.status == Status::Complete)
    }
}

/// Every cell, in point then phase order.
pub fn cells(exp: &ExperimentResult) -> Vec<Cell<'_>> {
    let mut out = vec![];
    for (i, p) in exp.points.iter().enumerate() {
        for ph in &p.phases {
            out.push(Cell { point: i, params: &p.params, ph });
        }
    }
    out
}

/// Dimensions: the sweep axes in order, any other point parameter, then `phase`.
pub fn dims(exp: &ExperimentResult) -> Vec<String> {
    let mut out: Vec<String> = exp.design.axes.iter().map(|a| a.key.clone()).collect();
    for p in &exp.points {
        for k in p.params.keys() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    out.push(PHASE.into());
    out
}

/// A dimension's distinct values over some cells, in first-seen order.
pub fn distinct(cells: &[Cell<'_>], dim: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for c in cells {
        let v = c.value(dim);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A phase's name without the modifiers a sweep may vary (`read:workers=4:cold` ->
/// `read:cold`), so the same phase of every point has one name.
pub fn phase_key(name: &str) -> String {
    name.split(':').filter(|m| !m.contains('=')).collect::<Vec<_>>().join(":")
}

/// Whether a phase is the one asked for, by its full name or its key.
pub fn phase_matches(name: &str, want: &str) -> bool {
    name == want || phase_key(name) == want
}

/// Keeps the cells of one phase; an unknown name is an error listing the phases.
pub fn only_phase<'a>(cells: Vec<Cell<'a>>, phase: &str) -> Result<Vec<Cell<'a>>> {
    if !cells.iter().any(|c| phase_matches(&c.ph.name, phase)) {
        let names = distinct(&cells, PHASE);
        return Err(Error::spec("phase", phase, format!("no such phase (phases: {})", names.join(", "))));
    }
    Ok(cells.into_iter().filter(|c| phase_matches(&c.ph.name, phase)).collect())
}

/// The phase a plot shows when none is asked for and phases are not a dimension of it: the
/// last phase of the first point (the measured one: R4's read after its write).
pub fn default_phase(exp: &ExperimentResult) -> Option<String> {
    exp.points.first().and_then(|p| p.phases.last()).map(|ph| phase_key(&ph.name))
}

/// How cells become lines: x, the dimensions that make series, panels, and the dimensions
/// folded into series because they vary where x, series and panel do not.
#[derive(Debug, Clone, PartialEq)]
pub struct Grouping {
    pub x: String,
    pub series: Vec<String>,
    pub panels: Vec<String>,
}

/// Checks that `dim` is a dimension of the experiment.
pub fn check_dim(exp: &ExperimentResult, field: &str, dim: &str) -> Result<()> {
    let all = dims(exp);
    if all.iter().any(|d| d == dim) {
        return Ok(());
    }
    Err(Error::spec(field, dim, format!("not a sweep axis of this experiment (it has: {})", all.join(", "))))
}

/// Adds to `series` each remaining dimension that two cells with the same x, series and panel
/// values still differ in (so dimensions zipped with x, which never do, are left out).
pub fn fold_leftovers(cells: &[Cell<'_>], all: &[String], g: &mut Grouping) {
    for d in all {
        if *d == g.x || g.series.contains(d) || g.panels.contains(d) {
            continue;
        }
        let key = |c: &Cell<'_>| {
            let mut k = vec![c.value(&g.x)];
            k.extend(g.series.iter().chain(&g.panels).map(|s| c.value(s)));
            k
        };
        let mut seen: BTreeMap<Vec<String>, String> = BTreeMap::new();
        let mut varies = false;
        for c in cells {
            let v = c.value(d);
            match seen.get(&key(c)) {
                Some(prev) if *prev != v => varies = true,
                Some(_) => {}
                None => {
                    seen.insert(key(c), v);
                }
            }
        }
        if varies {
            g.series.push(d.clone());
        }
    }
}

/// A label for a cell's values of some dimensions: `k=4 · bs=16KiB`, or the value alone for
/// `phase`.
pub fn label(c: &Cell<'_>, dims: &[String]) -> String {
    dims.iter()
        .map(|d| if d == PHASE { c.value(d) } else { format!("{d}={}", c.value(d)) })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The run figure a plot summarises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// agg = all bytes / (first open to last close), IOR's bandwidth (a plain run's headline).
    Agg,
    /// max_SAR = sum of worker rates.
    MaxSar,
    /// min_SAR = total bytes / slowest worker's time.
    MinSar,
    /// The average individual worker rate.
    Individual,
    /// The phase's time, in seconds (Benson et al. 2003 report the run time: lower is better).
    Time,
}

impl Figure {
    pub fn parse(s: &str) -> Option<Figure> {
        Some(match s {
            "agg" | "agg_bytes_per_s" => Figure::Agg,
            "max_sar" | "max_sar_bytes_per_s" | "total" => Figure::MaxSar,
            "min_sar" | "min_sar_bytes_per_s" => Figure::MinSar,
            "individual" | "avg_individual_bytes_per_s" => Figure::Individual,
            "time" | "time_s" | "time_ns" => Figure::Time,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Figure::Agg => "agg",
            Figure::MaxSar => "max_SAR",
            Figure::MinSar => "min_SAR",
            Figure::Individual => "avg individual",
            Figure::Time => "time",
        }
    }
    pub fn about(self) -> &'static str {
        self.about_in(false)
    }
    /// What it is, of what a metadata phase's rates count (`md`: ops) or of bytes.
    pub fn about_in(self, md: bool) -> &'static str {
        match (self, md) {
            (Figure::Agg, false) => "agg = all bytes / (first open to last close)",
            (Figure::Agg, true) => "agg = all ops / (first open to last close)",
            (Figure::MaxSar, _) => "max_SAR = sum of worker rates",
            (Figure::MinSar, false) => "min_SAR = bytes / slowest worker's time",
            (Figure::MinSar, true) => "min_SAR = ops / slowest worker's time",
            (Figure::Individual, _) => "average individual worker rate",
            (Figure::Time, _) => "the phase's time (lower is better)",
        }
    }
    pub fn of(self, r: &Repetition) -> f64 {
        match self {
            // NaN where not measured (runs stored before agg): plots leave those out.
            Figure::Agg => r.agg_bytes_per_s.unwrap_or(f64::NAN),
            Figure::MaxSar => r.max_sar_bytes_per_s,
            Figure::MinSar => r.min_sar_bytes_per_s,
            Figure::Individual => r.avg_individual_bytes_per_s,
            Figure::Time => r.time_ns as f64,
        }
    }

    /// The plot figure of a headline rate.
    pub fn of_rate(rate: crate::results::Rate) -> Figure {
        match rate {
            crate::results::Rate::Agg => Figure::Agg,
            crate::results::Rate::MaxSar => Figure::MaxSar,
            crate::results::Rate::MinSar => Figure::MinSar,
            crate::results::Rate::AvgIndividual => Figure::Individual,
        }
    }
    /// The figure of a run in the unit its axis shows: MB/s (10^6 B/s) for rates, ops/s for the
    /// rates of a metadata phase (`md`), seconds for the time.
    pub fn shown(self, r: &Repetition, md: bool) -> f64 {
        match self {
            Figure::Time => self.of(r) / 1e9,
            // NaN where not measured, as for bytes.
            Figure::Agg if md => r.agg_ops_per_s.unwrap_or(f64::NAN),
            Figure::MaxSar if md => r.max_sar_ops_per_s,
            Figure::MinSar if md => r.min_sar_ops_per_s,
            Figure::Individual if md => {
                stats::mean(&r.workers.iter().map(|w| w.ops_per_s).collect::<Vec<_>>())
            }
            _ => self.of(r) / 1e6,
        }
    }
}

/// Whether the cells shown are metadata phases (rates in ops/s) or data phases (MB/s); both
/// cannot share an axis.
pub fn md_cells(cells: &[Cell<'_>]) -> Result<bool> {
    let md = cells.iter().filter(|c| c.ph.op.is_metadata()).count();
    if md > 0 && md < cells.len() {
        return Err(Error::spec(
            "phase",
            "all",
            "metadata phases (ops/s) and data phases (MB/s) cannot share an axis: pick one with --phase",
        ));
    }
    Ok(md > 0)
}

/// The figures asked for, checked: the time and rates cannot share an axis.
pub fn check_figures(figs: &[Figure]) -> Result<()> {
    if figs.len() > 1 && figs.contains(&Figure::Time) {
        return Err(Error::spec(
            "y",
            "time",
            "the time (seconds) and rates (MB/s) cannot share an axis: plot them apart",
        ));
    }
    Ok(())
}

/// The y axis title of rates of these figures: the figure's name when there is one; in ops/s
/// for metadata phases (`md`).
pub fn rate_title(figs: &[Figure], md: bool) -> String {
    let unit = if md { "ops/s" } else { "MB/s = 10^6 B/s" };
    match figs {
        [Figure::Time] => "time (s, lower is better)".into(),
        [f] => format!("{} ({unit})", f.name()),
        _ => format!("rate ({unit})"),
    }
}

/// Which statistic names are accepted by `--y`, and what they mean.
pub fn parse_stat(s: &str) -> Option<Headline> {
    Some(match s {
        "mean" => Headline::Mean,
        "median" => Headline::Median,
        "2sigma" | "two_sigma_mean" => Headline::TwoSigmaMean,
        "trimmed" | "trimmed_mean_10" => Headline::TrimmedMean10,
        _ => return None,
    })
}

/// A short name of a statistic.
pub fn stat_name(h: Headline) -> &'static str {
    match h {
        Headline::Mean => "mean",
        Headline::Median => "median",
        Headline::TwoSigmaMean => "2-sigma mean (Russell 1998)",
        Headline::TrimmedMean10 => "10% trimmed mean",
    }
}

/// The error bar drawn around each point. Rates and times are never negative: the arithmetic
/// 2 sd bar is cut at zero, the others are taken on the log scale, where they cannot cross it
/// however wide the spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bars {
    /// Russell 1998's error bars: the arithmetic mean of the repetitions +/- 2 (sample)
    /// standard deviations, cut at zero.
    TwoSd,
    /// The spread of the repetitions on the log scale: the plotted value times and divided by
    /// exp(2 sd of the runs' logarithms).
    LogTwoSd,
    /// The 95% confidence interval of the mean, on the log scale ([`stats::positive_ci95`]).
    Ci95,
    None,
}

/// Points with fewer runs than this get no error bar (two runs say little about a spread).
pub const MIN_RUNS_FOR_BARS: usize = 3;

/// The runs' arithmetic mean +/- 2 sd, the lower end cut at zero.
fn two_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let (m, sd) = (stats::mean(xs), stats::sd(xs)?);
    Some(((m - 2.0 * sd).max(0.0), m + 2.0 * sd))
}

/// The spread of the runs around `y` on the log scale: y divided and times exp(2 sd of ln x).
fn positive_two_sd(xs: &[f64], y: f64) -> Option<(f64, f64)> {
    if xs.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let f = (2.0 * stats::sd(&logs)?).exp();
    Some((y / f, y * f))
}

impl Bars {
    pub fn parse(s: &str) -> Result<Bars> {
        match s {
            "2sd" => Ok(Bars::TwoSd),
            "log2sd" => Ok(Bars::LogTwoSd),
            "ci95" => Ok(Bars::Ci95),
            "none" => Ok(Bars::None),
            _ => Err(Error::spec("bars", s, "expected 2sd, log2sd, ci95 or none")),
        }
    }
    pub fn about(self) -> &'static str {
        match self {
            Bars::TwoSd => "error bars: the runs' arithmetic mean ± 2 sd (Russell 1998), cut at zero",
            Bars::LogTwoSd => {
                "error bars: the runs' spread on the log scale, ×/÷ e^(2 sd of their logs), never below zero"
            }
            Bars::Ci95 => {
                "error bars: 95% confidence interval of the mean on the log scale, never below zero"
            }
            Bars::None => "no error bars",
        }
    }

    /// What the bars of a figure whose points have `rmin..=rmax` runs are: none at all below
    /// [`MIN_RUNS_FOR_BARS`] runs, and which points lack them when some do.
    pub fn caption(self, rmin: usize, rmax: usize) -> String {
        match self {
            Bars::None => self.about().to_string(),
            _ if rmax < MIN_RUNS_FOR_BARS => {
                format!("no error bars: fewer than {MIN_RUNS_FOR_BARS} runs per point, too few for a spread")
            }
            _ if rmin < MIN_RUNS_FOR_BARS => {
                format!("{}; none where a point has fewer than {MIN_RUNS_FOR_BARS} runs", self.about())
            }
            _ => self.about().to_string(),
        }
    }
}

/// A statistic of some samples with its error bar, or None without samples.
pub fn point_stat(xs: &[f64], stat: Headline, bars: Bars) -> Option<(f64, Option<(f64, f64)>)> {
    if xs.is_empty() {
        return None;
    }
    let s = Summary::of("", xs);
    let y = stat.value(&s);
    let bar = match bars {
        _ if xs.len() < MIN_RUNS_FOR_BARS => None,
        Bars::TwoSd => two_sd(xs),
        Bars::LogTwoSd => positive_two_sd(xs, y),
        Bars::Ci95 => stats::positive_ci95(xs).map(|[lo, hi]| (lo, hi)),
        Bars::None => None,
    };
    Some((y, bar))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_keys_drop_swept_modifiers() {
        assert_eq!(phase_key("read:workers=4:cold"), "read:cold");
        assert_eq!(phase_key("write:workers=1"), "write");
        assert_eq!(phase_key("read:reverse:cold"), "read:reverse:cold");
        assert!(phase_matches("read:workers=4:cold", "read:cold"));
        assert!(phase_matches("read:workers=4:cold", "read:workers=4:cold"));
        assert!(!phase_matches("read:workers=4:cold", "read"));
    }

    #[test]
    fn statistics_and_bars() {
        let xs = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 50.0];
        let (y, bar) = point_stat(&xs, Headline::TwoSigmaMean, Bars::LogTwoSd).unwrap();
        assert_eq!(y, 10.0);
        // sd of the logs: ln 5 x sqrt(0.1); the band is x/÷ e^(2 x that).
        let (lo, hi) = bar.unwrap();
        let f = (2.0 * 5f64.ln() * 0.1f64.sqrt()).exp();
        assert!((hi - y * f).abs() < 1e-3 && (lo - y / f).abs() < 1e-3, "{lo} {hi}");
        let (m, ci) = point_stat(&xs, Headline::Mean, Bars::Ci95).unwrap();
        assert_eq!(m, 14.0);
        // On the log scale (stats::positive_ci95): [14 / 1.90855, 14 * 1.90855].
        let (lo, hi) = ci.unwrap();
        assert!((lo - 7.33542).abs() < 1e-3 && (hi - 26.71968).abs() < 1e-3, "{lo} {hi}");
        // Russell's bars: the arithmetic mean 14 +/- 2 sd (sd 12.649), whatever the point shows;
        // 14 - 25.3 is cut at zero.
        let (y, bar) = point_stat(&xs, Headline::TwoSigmaMean, Bars::TwoSd).unwrap();
        assert_eq!(y, 10.0);
        let (lo, hi) = bar.unwrap();
        let sd = (1440.0f64 / 9.0).sqrt();
        assert!(lo == 0.0 && (hi - (14.0 + 2.0 * sd)).abs() < 1e-9, "{lo} {hi}");
        // Five runs: the arithmetic band is symmetric about their mean; the log band is not.
        let r = [1850.0, 2500.0, 2150.0, 2600.0, 1750.0];
        let (m, sd) = (stats::mean(&r), stats::sd(&r).unwrap());
        let (lo, hi) = point_stat(&r, Headline::Mean, Bars::TwoSd).unwrap().1.unwrap();
        assert_eq!((lo, hi), (m - 2.0 * sd, m + 2.0 * sd));
        let (llo, lhi) = point_stat(&r, Headline::Mean, Bars::LogTwoSd).unwrap().1.unwrap();
        assert!((llo - 1526.39).abs() < 0.01 && (lhi - 3084.99).abs() < 0.01, "{llo} {lhi}");
        assert_eq!(point_stat(&[5.0], Headline::Mean, Bars::TwoSd), Some((5.0, None)));
        assert_eq!(point_stat(&[], Headline::Mean, Bars::TwoSd), None);
    }

    /// The case of the issue: two runs far apart once drew rates of -1500 MB/s. Two runs get
    /// no bar at all; a wide spread of three or more stays above zero.
    #[test]
    fn bars_never_go_below_zero_and_need_three_runs() {
        assert_eq!(point_stat(&[100.0, 3000.0], Headline::Mean, Bars::TwoSd), Some((1550.0, None)));
        assert_eq!(point_stat(&[100.0, 3000.0], Headline::Mean, Bars::Ci95), Some((1550.0, None)));
        for bars in [Bars::LogTwoSd, Bars::Ci95] {
            let (y, bar) = point_stat(&[100.0, 3000.0, 2500.0], Headline::Mean, bars).unwrap();
            let (lo, hi) = bar.unwrap();
            assert!(lo > 0.0 && lo < y && hi > y, "{bars:?}: {lo} {y} {hi}");
        }
        // The arithmetic 2 sd reaches below zero here (1866.7 - 2 x 1550.3): cut there.
        let (y, bar) = point_stat(&[100.0, 3000.0, 2500.0], Headline::Mean, Bars::TwoSd).unwrap();
        let (lo, hi) = bar.unwrap();
        assert!(lo == 0.0 && hi > y, "{lo} {y} {hi}");
        assert_eq!(
            Bars::TwoSd.caption(2, 2),
            "no error bars: fewer than 3 runs per point, too few for a spread"
        );
        assert!(Bars::Ci95.caption(2, 5).ends_with("; none where a point has fewer than 3 runs"));
        assert_eq!(Bars::None.caption(1, 1), "no error bars");
    }
}
