//! A phase's rate over time: the bytes (a metadata phase's ops) its workers completed in each
//! interval of one repetition (MB/s, or ops/s, against seconds from the phase's start), one
//! panel per phase, with the steady window marked by a line at the steady rate across it and
//! the whole-phase rate (max_SAR) as a line across the whole phase.

use super::Options;
use super::axis::{Axis, Unit};
use super::figure::{Draw, Figure, Panel, Point, Series, Style};
use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Status};
use crate::units::RateUnit;

pub fn figure(exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let pi = o.point_index(exp, 0)?;
    let point = &exp.points[pi];
    let legend = vec![
        Style::nth(0, "rate in each interval"),
        Style::nth(1, "steady window, at its rate"),
        Style::nth(2, "whole phase (max_SAR)"),
    ];
    let (mut panels, mut notes, mut counted) = (vec![], vec![], vec![]);
    for ph in &point.phases {
        if o.phase.as_ref().is_some_and(|p| !super::select::phase_matches(&ph.name, p)) {
            continue;
        }
        let rep = ph.repetitions.iter().find(|r| {
            r.status == Status::Complete && r.rate.is_some() && o.rep.is_none_or(|want| want == r.rep)
        });
        let Some((rep, rate)) = rep.and_then(|r| r.rate.as_ref().map(|x| (r, x))) else { continue };
        let s = &rate.series;
        // The series says what it counts: bytes, or ops.
        let (md, unit) = (s.of == RateUnit::Ops, s.of);
        let shown = |v: f64| unit.shown(v);
        if !counted.contains(&unit.counted()) {
            counted.push(unit.counted());
        }
        let secs = |ns: u64| ns as f64 / 1e9;
        // Each interval drawn as a step: flat from its start to its end.
        let mut steps = vec![];
        for k in 0..s.bytes.len() {
            let (a, b) = s.span(k);
            let y = shown(s.rate(k));
            steps.push(Point::new(secs(a), y));
            steps.push(Point::new(secs(b), y));
        }
        let whole = shown(rep.sar(md).0);
        let mut ys: Vec<f64> = steps.iter().map(|p| p.y).collect();
        ys.push(whole);
        let mut series = vec![Series { style: 0, draw: Draw::Line { marker_every: None }, points: steps }];
        let mut note = format!(
            "{}: rep {}, {} intervals of {} ms; whole phase {} {}",
            ph.name,
            rep.rep,
            s.bytes.len(),
            s.interval_ns / 1_000_000,
            unit.fmt(rep.sar(md).0),
            unit.short()
        );
        if let Some(st) = rate.steady {
            let y = shown(st.bytes_per_s);
            ys.push(y);
            let window = vec![Point::new(secs(st.from_ns), y), Point::new(secs(st.to_ns), y)];
            series.push(Series { style: 1, draw: Draw::LineMarkers, points: window });
            note += &format!(
                "; steady {} {} from {:.2} s to {:.2} s",
                unit.fmt(st.bytes_per_s),
                unit.short(),
                secs(st.from_ns),
                secs(st.to_ns)
            );
        } else {
            note += "; no steady window (too few intervals, or the commits carried the data)";
        }
        series.push(Series {
            style: 2,
            draw: Draw::Line { marker_every: None },
            points: vec![Point::new(0.0, whole), Point::new(secs(s.end_ns), whole)],
        });
        notes.push(note);
        panels.push(Panel {
            title: ph.name.clone(),
            x: Axis::numeric(
                "time from the phase's start (s)",
                &[0.0, secs(s.end_ns)],
                Unit::Number,
                Some(false),
                true,
            ),
            y: Axis::numeric(format!("rate ({})", unit.short()), &ys, Unit::Number, Some(false), true),
            series,
        });
    }
    if panels.is_empty() {
        return Err(Error::NotFound(format!(
            "experiment {} has no rate series at point {pi}{} (series are kept unless latency = off)",
            exp.experiment_id,
            if o.phase.is_some() || o.rep.is_some() { " matching the options" } else { "" }
        )));
    }
    notes.push(format!(
        "steady window: the intervals without the first and last {:.0}% (docs/reports.md)",
        crate::latency::series::TRIM * 100.0
    ));
    Ok(Figure {
        title: super::title(exp),
        subtitle: vec![
            format!(
                "{}rate over time: {} completed per interval",
                super::point_prefix(exp, pi),
                counted.join(" or ")
            ),
            super::provenance(exp),
        ],
        panels,
        legend,
        notes,
        size: o.size,
    })
}
