//! Per-op latency from the stored HDR histogram buckets (every op of every worker and complete
//! repetition of a phase): the cumulative distribution, one line per phase, and the histogram
//! of one phase on log-spaced bins (ten per decade).

use std::collections::BTreeMap;

use super::Options;
use super::axis::{Axis, Unit};
use super::figure::{Draw, Figure, Panel, Point, Series, Style};
use crate::error::{Error, Result};
use crate::results::{ExperimentResult, PhaseResult, Status};
use crate::units::fmt_ns;

/// The phase's buckets merged: latency (ns) -> ops.
pub fn merged(ph: &PhaseResult) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for r in ph.repetitions.iter().filter(|r| r.status == Status::Complete) {
        for (v, c) in r.latency_buckets() {
            *m.entry(v).or_insert(0) += c;
        }
    }
    m
}

fn phases<'a>(exp: &'a ExperimentResult, o: &Options, all: bool) -> Result<(usize, Vec<&'a PhaseResult>)> {
    let pi = o.point_index(exp, 0)?;
    let point = &exp.points[pi];
    let names: Vec<&str> = point.phases.iter().map(|p| p.name.as_str()).collect();
    let chosen: Vec<&PhaseResult> = match &o.phase {
        Some(p) => point.phases.iter().filter(|ph| super::select::phase_matches(&ph.name, p)).collect(),
        None if all => point.phases.iter().collect(),
        None => point.phases.last().into_iter().collect(),
    };
    if chosen.is_empty() {
        let p = o.phase.clone().unwrap_or_default();
        return Err(Error::spec(
            "phase",
            p,
            format!("no such phase at point {pi} (phases: {})", names.join(", ")),
        ));
    }
    Ok((pi, chosen))
}

/// The value at quantile q of merged buckets.
fn quantile(m: &BTreeMap<u64, u64>, q: f64) -> u64 {
    let total: u64 = m.values().sum();
    let want = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (&v, &c) in m {
        seen += c;
        if seen >= want {
            return v;
        }
    }
    m.keys().next_back().copied().unwrap_or(0)
}

/// The latency CDF: one line per phase of a point.
pub fn cdf(exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let (pi, chosen) = phases(exp, o, true)?;
    let mut legend = vec![];
    let mut series = vec![];
    let mut xs = vec![];
    let mut notes = vec![];
    for ph in chosen {
        let m = merged(ph);
        let total: u64 = m.values().sum();
        if total == 0 {
            continue;
        }
        let mut cum = 0;
        let mut points: Vec<Point> = m
            .iter()
            .map(|(&v, &c)| {
                cum += c;
                Point::new(v as f64 / 1e3, cum as f64 / total as f64)
            })
            .collect();
        // At most ~500 points per line; the last point (1.0) always stays.
        let step = points.len().div_ceil(500).max(1);
        if step > 1 {
            let last = *points.last().unwrap_or(&Point::new(0.0, 1.0));
            points = points.into_iter().step_by(step).collect();
            if points.last() != Some(&last) {
                points.push(last);
            }
        }
        xs.extend(points.iter().map(|p| p.x));
        notes.push(format!(
            "{}: {total} ops, p50 {}, p90 {}, p99 {}, max {}",
            ph.name,
            fmt_ns(quantile(&m, 0.5)),
            fmt_ns(quantile(&m, 0.9)),
            fmt_ns(quantile(&m, 0.99)),
            fmt_ns(*m.keys().next_back().unwrap_or(&0))
        ));
        let style = legend.len();
        legend.push(Style::nth(style, ph.name.clone()));
        let every = (points.len() / 8).max(1);
        series.push(Series { style, draw: Draw::Line { marker_every: Some(every) }, points });
    }
    if series.is_empty() {
        return Err(Error::NotFound(format!("point {pi} has no complete run with latency buckets")));
    }
    Ok(Figure {
        title: super::title(exp),
        subtitle: vec![
            format!(
                "{}latency per op, every op of every worker and complete run (HDR buckets, 3 significant digits)",
                super::point_prefix(exp, pi)
            ),
            super::provenance(exp),
        ],
        panels: vec![Panel {
            title: String::new(),
            x: Axis::numeric("latency per op (µs)", &xs, Unit::Number, None, false),
            y: Axis::numeric("fraction of ops ≤ latency", &[0.0, 1.0], Unit::Number, Some(false), true),
            series,
        }],
        legend,
        notes,
        size: o.size,
    })
}

/// The latency histogram of one phase: share of ops per log-spaced bin.
pub fn histogram(exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let (pi, chosen) = phases(exp, o, false)?;
    let ph = chosen[0];
    let m = merged(ph);
    let total: u64 = m.values().sum();
    let (Some(&lo), Some(&hi)) = (m.keys().next(), m.keys().next_back()) else {
        return Err(Error::NotFound(format!("phase {} of point {pi} has no complete run", ph.name)));
    };
    // Ten bins per decade, over µs.
    let (lo_us, hi_us) = ((lo.max(1)) as f64 / 1e3, (hi.max(1)) as f64 / 1e3);
    let first = (lo_us.log10() * 10.0).floor() as i32;
    let last = (hi_us.log10() * 10.0).floor() as i32;
    let mut counts: BTreeMap<i32, u64> = BTreeMap::new();
    for (&v, &c) in &m {
        let b = (((v.max(1)) as f64 / 1e3).log10() * 10.0).floor() as i32;
        *counts.entry(b.clamp(first, last)).or_insert(0) += c;
    }
    let points: Vec<Point> = counts
        .iter()
        .map(|(&b, &c)| {
            let (a, z) = (10f64.powf(b as f64 / 10.0), 10f64.powf((b + 1) as f64 / 10.0));
            Point { x: (a * z).sqrt(), y: 100.0 * c as f64 / total as f64, bar: None, span: Some((a, z)) }
        })
        .collect();
    let edges = [10f64.powf(first as f64 / 10.0), 10f64.powf((last + 1) as f64 / 10.0)];
    let ys: Vec<f64> = points.iter().map(|p| p.y).chain([0.0]).collect();
    Ok(Figure {
        title: super::title(exp),
        subtitle: vec![
            format!(
                "{}phase {}: {total} ops, p50 {}, p99 {}, max {}; ten bins per decade",
                super::point_prefix(exp, pi),
                ph.name,
                fmt_ns(quantile(&m, 0.5)),
                fmt_ns(quantile(&m, 0.99)),
                fmt_ns(hi)
            ),
            super::provenance(exp),
        ],
        panels: vec![Panel {
            title: String::new(),
            x: Axis::numeric(
                "latency per op (µs)",
                &edges,
                Unit::Number,
                Some(edges[1] / edges[0] > 1.5),
                false,
            ),
            y: Axis::numeric("share of ops (%)", &ys, Unit::Number, Some(false), true),
            series: vec![Series { style: 0, draw: Draw::Bars, points }],
        }],
        legend: vec![Style::nth(1, ph.name.clone())],
        notes: vec![],
        size: o.size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_buckets() {
        let m: BTreeMap<u64, u64> = [(100, 50), (200, 40), (5000, 10)].into_iter().collect();
        assert_eq!(quantile(&m, 0.5), 100);
        assert_eq!(quantile(&m, 0.9), 200);
        assert_eq!(quantile(&m, 0.99), 5000);
    }
}
