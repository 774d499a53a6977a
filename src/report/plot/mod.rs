//! Plots of stored experiments (`iolab plot`): each kind turns an experiment from the store
//! into a [`Figure`], and one renderer draws figures as SVG or PNG. Plots read only the store.
//!
//! Kinds: `rate` (rate vs a swept parameter, a line per series, error bars), `bars` (one bar
//! per point and phase: experiments without a sweep), `workers` (per-worker rates and max_SAR
//! vs min_SAR: stragglers), `cdf` and `histogram` (per-op latency from the stored HDR
//! buckets), `trace` (per-op latency vs op index with the detected periods marked),
//! `timeline` (a phase's rate per interval over time, its steady window marked), `race` (a
//! tuning's candidates over its rounds). Several experiments can share one figure
//! ([`merge`]).

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Headline};
use crate::store::Store;

pub mod axis;
pub mod bars;
pub mod draw;
pub mod figure;
pub mod latency;
pub mod merge;
pub mod race;
pub mod rate;
pub mod select;
pub mod timeline;
pub mod trace;
pub mod workers;

pub use figure::Figure;
pub use select::Bars;

/// A kind of plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rate,
    Bars,
    Workers,
    Cdf,
    Histogram,
    Trace,
    Timeline,
    Race,
}

impl Kind {
    pub const NAMES: [&'static str; 8] =
        ["rate", "bars", "workers", "cdf", "histogram", "trace", "timeline", "race"];

    pub fn parse(s: &str) -> Result<Kind> {
        Ok(match s {
            "rate" => Kind::Rate,
            "bars" => Kind::Bars,
            "workers" => Kind::Workers,
            "cdf" => Kind::Cdf,
            "histogram" => Kind::Histogram,
            "trace" => Kind::Trace,
            "timeline" => Kind::Timeline,
            "race" => Kind::Race,
            _ => return Err(Error::spec("kind", s, format!("expected one of: {}", Kind::NAMES.join(", ")))),
        })
    }
}

/// A preset's suggested plot (`plot` in its `[preset]` table): the x axis, the figures on y, one
/// line per value of `series`, one panel per value of `panels`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresetPlot {
    pub x: String,
    pub y: Vec<String>,
    #[serde(default)]
    pub series: Vec<String>,
    #[serde(default)]
    pub panels: Vec<String>,
}

/// What to plot and how; every field has a default from the experiment.
#[derive(Debug, Clone)]
pub struct Options {
    pub kind: Option<Kind>,
    /// The x axis: a sweep axis or `phase`.
    pub x: Option<String>,
    /// One line per value of these dimensions (comma-separated), or `none`.
    pub series: Option<String>,
    /// One panel per value of these dimensions (comma-separated), or `none`.
    pub panel: Option<String>,
    /// Statistic (`mean`, `median`, `2sigma`, `trimmed`) and/or run figures (`agg`,
    /// `max_sar`, `min_sar`, `individual`).
    pub y: Vec<String>,
    pub phase: Option<String>,
    pub bars: Bars,
    /// Sweep point index (workers, cdf, histogram, trace).
    pub point: Option<usize>,
    pub rep: Option<u32>,
    pub worker: Option<u32>,
    /// Op range of a trace, [from, to).
    pub ops: Option<(u64, u64)>,
    pub size: Option<(u32, u32)>,
    /// The suggested plot of the preset the experiment reproduces, which the defaults follow
    /// (the caller looks it up: presets live above the report).
    pub preset: Option<PresetPlot>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            kind: None,
            x: None,
            series: None,
            panel: None,
            y: vec![],
            phase: None,
            bars: Bars::TwoSd,
            point: None,
            rep: None,
            worker: None,
            ops: None,
            size: None,
            preset: None,
        }
    }
}

impl Options {
    /// The statistic (default: the experiment's headline) and the run figures (default: the
    /// preset's plot's, else the rate the headline summarises) that `--y` asks for.
    pub fn stat_and_figures(&self, exp: &ExperimentResult) -> Result<(Headline, Vec<select::Figure>)> {
        let mut stat = None;
        let mut figs = vec![];
        for item in self.y.iter().flat_map(|y| y.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
            if let Some(h) = select::parse_stat(item) {
                if stat.replace(h).is_some_and(|old| old != h) {
                    return Err(Error::spec("y", item, "give at most one statistic"));
                }
            } else if let Some(f) = select::Figure::parse(item) {
                if !figs.contains(&f) {
                    figs.push(f);
                }
            } else {
                return Err(Error::spec(
                    "y",
                    item,
                    "expected a statistic (mean, median, 2sigma, trimmed) or a figure (agg, max_sar, min_sar, individual, time)",
                ));
            }
        }
        if figs.is_empty() {
            figs = self
                .preset
                .as_ref()
                .map(|p| p.y.iter().filter_map(|y| select::Figure::parse(y)).collect())
                .unwrap_or_default();
        }
        if figs.is_empty() {
            figs.push(select::Figure::of_rate(exp.design.figure));
        }
        select::check_figures(&figs)?;
        Ok((stat.unwrap_or(exp.design.headline), figs))
    }

    /// The sweep point asked for, checked.
    pub fn point_index(&self, exp: &ExperimentResult, default: usize) -> Result<usize> {
        let i = self.point.unwrap_or(default);
        if i >= exp.points.len() {
            let has = match exp.points.len() {
                0 => "no point".to_string(),
                n => format!("points 0..{}", n - 1),
            };
            return Err(Error::spec("point", i, format!("the experiment has {has}")));
        }
        Ok(i)
    }
}

/// The figure title: the preset and its study, else the experiment's name; then the sizes the
/// experiment ran (not a scale's: a preset run at quick scale says its own sizes).
pub fn title(exp: &ExperimentResult) -> String {
    let name = match &exp.design.preset {
        Some(p) => format!("{} · {}: {}", p.id, p.study, p.title),
        None => format!("{} ({})", exp.spec.name, exp.experiment_id),
    };
    format!("{name} · {}", sizes_run(exp))
}

/// The sizes the points ran (`size 4 MiB, bs 16 KiB..1 MiB`, `1000 files per worker`: what
/// their phases used, [`crate::report::brief::sizes_run`]).
pub fn sizes_run(exp: &ExperimentResult) -> String {
    let specs: Vec<&crate::spec::Spec> = exp.points.iter().filter_map(|p| p.spec.as_ref()).collect();
    let specs = if specs.is_empty() { vec![&exp.spec] } else { specs };
    crate::report::brief::sizes_run(&specs)
}

/// Where the numbers come from: experiment, host, scale.
pub fn provenance(exp: &ExperimentResult) -> String {
    let scale =
        exp.design.preset.as_ref().filter(|p| !p.scale.is_empty()).map(|p| format!(", scale {}", p.scale));
    format!("experiment {} on {}{}", exp.experiment_id, exp.host.hostname, scale.unwrap_or_default())
}

/// What starts a subtitle about one point: `point 3 (workers=4 bs=16KiB) · `, or nothing when
/// the experiment has one point.
pub fn point_prefix(exp: &ExperimentResult, pi: usize) -> String {
    if exp.points.len() == 1 {
        return String::new();
    }
    format!("point {pi} ({}) · ", super::point_params(&exp.points[pi]))
}

/// The kind drawn when none is asked for: the preset's trace, else rate when something is
/// swept, else bars.
pub fn default_kind(exp: &ExperimentResult, preset: Option<&PresetPlot>) -> Kind {
    if preset.is_some_and(|p| p.x == "op") {
        return Kind::Trace;
    }
    let cells = select::cells(exp);
    let swept = exp.design.axes.iter().any(|a| select::distinct(&cells, &a.key).len() > 1);
    if swept { Kind::Rate } else { Kind::Bars }
}

/// Builds the figure the options ask for.
pub fn build(store: &Store, exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let mut fig = match o.kind.unwrap_or_else(|| default_kind(exp, o.preset.as_ref())) {
        Kind::Rate => rate::figure(exp, o)?,
        Kind::Bars => bars::figure(exp, o)?,
        Kind::Workers => workers::figure(exp, o)?,
        Kind::Cdf => latency::cdf(exp, o)?,
        Kind::Histogram => latency::histogram(exp, o)?,
        Kind::Trace => trace::figure(store, exp, o)?,
        Kind::Timeline => timeline::figure(exp, o)?,
        Kind::Race => race::figure(store, exp)?,
    };
    if o.size.is_some() {
        fig.size = o.size;
    }
    Ok(fig)
}

/// The output format a path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Svg,
    Png,
}

impl Output {
    pub fn of(path: &Path) -> Result<Output> {
        match path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
            Some("svg") => Ok(Output::Svg),
            Some("png") => Ok(Output::Png),
            _ => Err(Error::spec("output", path.display(), "expected a file name ending in .svg or .png")),
        }
    }
}

/// Writes a figure into an output file (SVG or PNG by the extension of its name).
pub fn write_file(fig: &Figure, out: &mut crate::report::output::OutputFile) -> Result<()> {
    match Output::of(out.given())? {
        Output::Svg => {
            let svg = draw::svg(fig)?;
            out.write_all(svg.as_bytes()).map_err(|e| Error::io("write", out.tmp_path(), None, e))
        }
        Output::Png => draw::png(fig, out.tmp_path()),
    }
}

/// Writes a figure to `path` (SVG or PNG by its extension), or as SVG to `stdout`.
pub fn write(fig: &Figure, path: Option<&Path>, stdout: &mut dyn Write) -> Result<()> {
    match path {
        None => stdout.write_all(draw::svg(fig)?.as_bytes()).map_err(super::write_err),
        Some(p) => match Output::of(p)? {
            Output::Svg => std::fs::write(p, draw::svg(fig)?).map_err(|e| Error::io("write", p, None, e)),
            Output::Png => draw::png(fig, p),
        },
    }
}

/// Parses `--size WxH` (pixels).
pub fn parse_size(s: &str) -> Result<(u32, u32)> {
    let bad = || Error::spec("size", s, "expected WIDTHxHEIGHT in pixels, e.g. 900x560 (each 200..8000)");
    let (w, h) = s.split_once('x').ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.trim().parse().map_err(|_| bad())?, h.trim().parse().map_err(|_| bad())?);
    if !(200..=8000).contains(&w) || !(200..=8000).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

/// Parses `--ops FROM..TO` (op indexes, TO excluded).
pub fn parse_ops(s: &str) -> Result<(u64, u64)> {
    let bad = || Error::spec("ops", s, "expected FROM..TO (op indexes, TO excluded), e.g. 0..256");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if b <= a {
        return Err(bad());
    }
    Ok((a, b))
}
