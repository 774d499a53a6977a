//! Stragglers: each worker's individual rate r_i = bytes_i / t_i (a bar at the statistic over
//! the repetitions, a marker for each run), beside max_SAR = sum r_i and min_SAR = total bytes
//! / max t_i (French, Pratt and Das 1991). A slow worker shows as a short bar, and as a gap
//! between max_SAR and min_SAR. On MPI ranks the bars are grouped by host (in order of the
//! hosts' first ranks, a gap between hosts), one colour per host.

use super::Options;
use super::axis::{Axis, Unit};
use super::figure::{Draw, Figure, Panel, Point, Series, Style};
use super::select;
use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Headline, Status};
use crate::units::fmt_ns;

/// The style of the first host's bars (after the bars, runs and SAR styles).
const HOST_STYLE: usize = 4;

/// The point whose repetitions had the most workers (the last of equals; 0 without points): the
/// one the straggler plot shows by default.
pub fn busiest_point(exp: &ExperimentResult) -> usize {
    exp.points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (p.phases.iter().flat_map(|ph| &ph.repetitions).map(|r| r.workers.len()).max().unwrap_or(0), i)
        })
        .max()
        .map(|(_, i)| i)
        .unwrap_or(0)
}

/// What a worker's bars need of one run: its host, its rate and its t_i.
type Bar = (Option<std::sync::Arc<str>>, f64, f64);

/// A bar at the statistic of `xs`, centred on `x`; None without samples.
fn bar(xs: &[f64], x: f64, stat: Headline, bars: select::Bars) -> Option<Point> {
    let (y, bar) = select::point_stat(xs, stat, bars)?;
    Some(Point { x, y, bar, span: Some((x - 0.35, x + 0.35)) })
}

pub fn figure(exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let pi = o.point_index(exp, busiest_point(exp))?;
    let point = &exp.points[pi];
    let phase = match &o.phase {
        Some(p) => p.clone(),
        None => point.phases.last().map(|p| p.name.clone()).unwrap_or_default(),
    };
    let ph = point.phases.iter().find(|p| select::phase_matches(&p.name, &phase)).ok_or_else(|| {
        let names: Vec<&str> = point.phases.iter().map(|p| p.name.as_str()).collect();
        Error::spec("phase", &phase, format!("no such phase at point {pi} (phases: {})", names.join(", ")))
    })?;
    let runs: Vec<_> = ph.repetitions.iter().filter(|r| r.status == Status::Complete).collect();
    // A metadata phase's rates are ops/s.
    let md = ph.op.is_metadata();
    let (unit, per) = if md { ("ops/s", "ops_i") } else { ("MB/s = 10^6 B/s", "bytes_i") };
    if runs.is_empty() {
        return Err(Error::NotFound(format!("phase {phase} of point {pi} has no complete run")));
    }
    let (stat, _) = o.stat_and_figures(exp)?;
    // Each run's workers read once (spooled results come back one at a time): what the bars
    // need of each, (host, rate, t_i).
    let figs: Vec<Vec<Bar>> = runs
        .iter()
        .map(|r| {
            let rate = |x: &crate::results::WorkerResult| if md { x.ops_per_s } else { x.bytes_per_s / 1e6 };
            r.workers.iter().map(|x| (x.host.clone(), rate(&x), x.time_ns as f64)).collect()
        })
        .collect();
    let n_workers = figs.iter().map(Vec::len).max().unwrap_or(0);
    // MPI: each worker's host; bars grouped by host, one colour (series) per host.
    let host_of: Vec<Option<String>> = (0..n_workers)
        .map(|w| figs.iter().find_map(|r| r.get(w)?.0.as_deref().map(str::to_string)))
        .collect();
    let mut hosts: Vec<String> = vec![];
    for h in host_of.iter().flatten() {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    let group = |w: usize| host_of[w].as_ref().and_then(|h| hosts.iter().position(|x| x == h)).unwrap_or(0);
    let mut order: Vec<usize> = (0..n_workers).collect();
    order.sort_by_key(|&w| (group(w), w));
    let (mut xpos, mut names) = (vec![0usize; n_workers], vec![]);
    for (k, &w) in order.iter().enumerate() {
        if k > 0 && group(w) != group(order[k - 1]) {
            names.push(String::new());
        }
        xpos[w] = names.len();
        names.push(format!("w{w}"));
    }
    let mut host_bars: Vec<Vec<Point>> = vec![vec![]; hosts.len().max(1)];
    let mut each = vec![];
    let mut all_y = vec![0.0];
    let mut slowest: Option<(usize, f64)> = None;
    for w in 0..n_workers {
        let rates: Vec<f64> = figs.iter().filter_map(|r| r.get(w)).map(|x| x.1).collect();
        let times: Vec<f64> = figs.iter().filter_map(|r| r.get(w)).map(|x| x.2).collect();
        let t = crate::stats::mean(&times);
        if slowest.is_none_or(|(_, s)| t > s) {
            slowest = Some((w, t));
        }
        let x = xpos[w] as f64;
        for &r in &rates {
            each.push(Point::new(x, r));
            all_y.push(r);
        }
        if let Some(p) = bar(&rates, x, stat, o.bars) {
            all_y.extend(p.ys());
            host_bars[group(w)].push(p);
        }
    }
    let mut sar_y = vec![0.0];
    let mut sar = vec![];
    let mut sar_each = vec![];
    for (i, f) in [select::Figure::MaxSar, select::Figure::MinSar].iter().enumerate() {
        let xs: Vec<f64> = runs.iter().map(|r| f.shown(r, md)).filter(|v| !v.is_nan()).collect();
        for &x in &xs {
            sar_each.push(Point::new(i as f64, x));
            sar_y.push(x);
        }
        if let Some(p) = bar(&xs, i as f64, stat, o.bars) {
            sar_y.extend(p.ys());
            sar.push(Series { style: 2 + i, draw: Draw::Bars, points: vec![p] });
        }
    }
    let max_sar = crate::stats::mean(&runs.iter().map(|r| r.sar(md).0).collect::<Vec<_>>());
    let min_sar = crate::stats::mean(&runs.iter().map(|r| r.sar(md).1).collect::<Vec<_>>());
    let mut notes = vec![];
    if let Some((w, t)) = slowest {
        notes.push(format!(
            "Slowest worker: w{w} (mean t_i {}); min_SAR / max_SAR = {:.2} (1.00: all workers finished together).",
            fmt_ns(t as u64),
            min_sar / max_sar
        ));
    }
    let label = super::point_prefix(exp, pi);
    let mut panels = vec![Panel {
        title: format!("individual rate r_i = {per} / t_i"),
        x: Axis::categories("worker", &names),
        y: Axis::numeric(format!("r_i ({unit})"), &all_y, Unit::Number, Some(false), true),
        series: host_bars
            .into_iter()
            .enumerate()
            .map(|(k, points)| Series {
                style: if hosts.is_empty() { 0 } else { HOST_STYLE + k },
                draw: Draw::Bars,
                points,
            })
            .chain([Series { style: 1, draw: Draw::Markers, points: each }])
            .collect(),
    }];
    sar.push(Series { style: 1, draw: Draw::Markers, points: sar_each });
    panels.push(Panel {
        title: "max_SAR vs min_SAR".into(),
        x: Axis::categories("", &["max_SAR".to_string(), "min_SAR".to_string()]),
        y: Axis::numeric(format!("rate ({unit})"), &sar_y, Unit::Number, Some(false), true),
        series: sar,
    });
    Ok(Figure {
        title: super::title(exp),
        subtitle: vec![
            format!(
                "{label}phase {phase}: {} over {} run(s); {}",
                select::stat_name(stat),
                runs.len(),
                o.bars.caption(runs.len(), runs.len())
            ),
            super::provenance(exp),
        ],
        panels,
        legend: [
            Style::nth(1, format!("r_i, {}", select::stat_name(stat))),
            Style::nth(0, "each run"),
            Style::nth(2, "max_SAR = sum r_i"),
            Style::nth(3, "min_SAR = bytes / max t_i"),
        ]
        .into_iter()
        .chain(hosts.iter().enumerate().map(|(k, h)| Style::nth(HOST_STYLE + k, format!("r_i on host {h}"))))
        .collect(),
        notes,
        size: o.size,
    })
}
