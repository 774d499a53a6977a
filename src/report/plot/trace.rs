//! The time of every op against its index (French, Pratt and Das 1991, Fig. 5), from the
//! traces in the store: one panel per traced phase, with the ops where each detected period
//! peaks marked. Long traces are drawn as the min and max of each run of ops that shares a
//! pixel column, so spikes stay visible.

use std::collections::BTreeMap;

use super::Options;
use super::axis::{Axis, Unit};
use super::figure::{Draw, Figure, Panel, Point, Series, Style};
use crate::error::{Error, Result};
use crate::results::ExperimentResult;
use crate::store::Store;
use crate::units::fmt_ns;

/// Ops drawn one by one at most; beyond, min/max per group.
const MAX_OPS_DRAWN: usize = 2000;
/// Period marks drawn at most per period.
const MAX_MARKS: usize = 400;

/// One traced series: the latencies (ns) of one worker in one repetition, by op index.
#[derive(Debug, Clone)]
pub struct Traced {
    pub phase: usize,
    pub rep: u32,
    pub worker: u32,
    pub ops: Vec<(u64, u64)>,
}

/// Loads the traced series of point `pi`: per phase, the asked (else first) repetition and
/// worker.
pub fn load(store: &Store, exp: &ExperimentResult, pi: usize, o: &Options) -> Result<Vec<Traced>> {
    let w = o.worker.unwrap_or(0);
    let mut by: BTreeMap<(usize, u32), Vec<(u64, u64)>> = BTreeMap::new();
    store.for_each_trace_op(&exp.experiment_id, |r| {
        if r.point == pi && r.worker == w && o.rep.is_none_or(|rep| rep == r.rep) {
            by.entry((r.phase, r.rep)).or_default().push((r.op, r.duration_ns));
        }
        Ok(())
    })?;
    let mut out: Vec<Traced> = vec![];
    for ((phase, rep), ops) in by {
        if out.last().is_some_and(|t| t.phase == phase) {
            continue;
        }
        out.push(Traced { phase, rep, worker: w, ops });
    }
    Ok(out)
}

fn decimate(ops: &[(u64, u64)]) -> (Vec<Point>, usize) {
    if ops.len() <= MAX_OPS_DRAWN {
        return (ops.iter().map(|&(k, d)| Point::new(k as f64, d as f64 / 1e3)).collect(), 1);
    }
    let group = ops.len().div_ceil(MAX_OPS_DRAWN / 2);
    let mut out = vec![];
    for chunk in ops.chunks(group) {
        let lo = chunk.iter().min_by_key(|o| o.1).copied().unwrap_or_default();
        let hi = chunk.iter().max_by_key(|o| o.1).copied().unwrap_or_default();
        let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        out.push(Point::new(a.0 as f64, a.1 as f64 / 1e3));
        out.push(Point::new(b.0 as f64, b.1 as f64 / 1e3));
    }
    (out, group)
}

pub fn figure(store: &Store, exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let pi = o.point_index(exp, 0)?;
    let point = &exp.points[pi];
    let mut traced = load(store, exp, pi, o)?;
    if let Some(p) = &o.phase {
        let idx = point.phases.iter().position(|ph| super::select::phase_matches(&ph.name, p)).ok_or_else(
            || {
                let names: Vec<&str> = point.phases.iter().map(|p| p.name.as_str()).collect();
                Error::spec("phase", p, format!("no such phase (phases: {})", names.join(", ")))
            },
        )?;
        traced.retain(|t| t.phase == idx);
    }
    if traced.is_empty() {
        return Err(Error::NotFound(format!(
            "experiment {} has no traced ops at point {pi}{} (run with --trace or latency = trace)",
            exp.experiment_id,
            if o.phase.is_some() || o.rep.is_some() || o.worker.is_some() {
                " matching the options"
            } else {
                ""
            }
        )));
    }
    let mut legend = vec![Style::nth(0, "latency per op")];
    let mut panels = vec![];
    let mut notes = vec![];
    for t in &traced {
        // (Imports check every traced op's phase; a row naming none draws nothing.)
        let Some(ph) = point.phases.get(t.phase) else { continue };
        let ops: Vec<(u64, u64)> =
            t.ops.iter().copied().filter(|(k, _)| o.ops.is_none_or(|(a, b)| *k >= a && *k < b)).collect();
        if ops.is_empty() {
            continue;
        }
        let (points, group) = decimate(&ops);
        let mut durs: Vec<u64> = ops.iter().map(|o| o.1).collect();
        durs.sort_unstable();
        let median = durs[durs.len() / 2].max(1) as f64;
        let max = *durs.last().unwrap_or(&1) as f64;
        let log = max / median > 100.0;
        let ys: Vec<f64> = points.iter().map(|p| p.y).collect();
        let xs = [ops[0].0 as f64, ops[ops.len() - 1].0 as f64];
        let mut series = vec![Series { style: 0, draw: Draw::Line { marker_every: None }, points }];
        let periods = ph
            .repetitions
            .iter()
            .find(|r| r.rep == t.rep)
            .and_then(|r| r.workers.iter().find(|w| w.worker == t.worker))
            .and_then(|w| w.periods.as_deref().cloned())
            .unwrap_or_default();
        let by_op: BTreeMap<u64, u64> = ops.iter().copied().collect();
        for p in &periods {
            let marks: Vec<Point> = by_op
                .range(xs[0] as u64..=xs[1] as u64)
                .filter(|(k, _)| p.every_ops > 0 && **k % p.every_ops == p.at_op)
                .map(|(&k, &d)| Point::new(k as f64, d as f64 / 1e3))
                .collect();
            let dense = marks.len() > MAX_MARKS;
            let label = format!(
                "{}every {} ops, peak at op {} (r {:.2}, {}{}){}",
                if traced.len() > 1 { format!("{}: ", ph.name) } else { String::new() },
                p.every_ops,
                p.at_op,
                p.strength,
                if p.excess_ns < 0.0 { "-" } else { "+" },
                fmt_ns(p.excess_ns.abs() as u64),
                if dense { "; too dense to mark, zoom with --ops" } else { "" }
            );
            let style = legend.len();
            legend.push(Style::nth(style, label));
            if !dense && !marks.is_empty() {
                series.push(Series { style, draw: Draw::Markers, points: marks });
            }
        }
        notes.push(format!(
            "{}: rep {}, worker {}, {} ops; median {}, max {}; {}{}",
            ph.name,
            t.rep,
            t.worker,
            ops.len(),
            fmt_ns(median as u64),
            fmt_ns(max as u64),
            if periods.is_empty() {
                "no period found".to_string()
            } else {
                format!("{} period(s) found", periods.len())
            },
            if group > 1 { format!("; min and max of every {group} ops drawn") } else { String::new() }
        ));
        panels.push(Panel {
            title: if traced.len() > 1 { ph.name.clone() } else { String::new() },
            x: Axis::numeric("op index", &xs, Unit::Number, Some(false), false),
            y: Axis::numeric(
                if log { "latency (µs, log scale)" } else { "latency (µs)" },
                &ys,
                Unit::Number,
                Some(log),
                !log,
            ),
            series,
        });
    }
    if panels.is_empty() {
        return Err(Error::spec("ops", format!("{:?}", o.ops), "no traced op in this range"));
    }
    let label = super::point_prefix(exp, pi);
    Ok(Figure {
        title: super::title(exp),
        subtitle: vec![format!("{label}time of every op, in op order"), super::provenance(exp)],
        panels,
        legend,
        notes,
        size: o.size,
    })
}
