//! The section of the terminal table that sets each phase's steady rate beside its
//! whole-phase rate: the mean over complete repetitions of the rate inside the steady window
//! (the series with its first and last 10% of intervals dropped; the least-squares slope of
//! its cumulative bytes) and of agg (all bytes over the phase's span, on the clock the series
//! shares), with the window's place in the phase.

use crate::latency::series::{MIN_INTERVALS, MIN_STEPS, TRIM};
use crate::results::series::MAX_COMMIT_SHARE;
use crate::results::{ExperimentResult, Rate, Status};

use super::text_table;

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// The section, or nothing when no repetition kept a series (`latency = off`).
pub fn render_steady(exp: &ExperimentResult) -> String {
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let reps: Vec<_> =
                ph.repetitions.iter().filter(|r| r.status == Status::Complete && r.rate.is_some()).collect();
            if reps.is_empty() {
                continue;
            }
            // agg (of ops for a metadata phase); max_SAR in runs stored before iolab measured agg.
            let (md, unit) = (ph.op.is_metadata(), ph.unit());
            let whole: Vec<f64> =
                reps.iter().map(|r| Rate::Agg.of_in(md, r).unwrap_or(r.sar(md).0)).collect();
            let fmt_rate = |v: f64| unit.fmt(v);
            let steady: Vec<_> = reps.iter().filter_map(|r| r.rate.as_ref().and_then(|x| x.steady)).collect();
            let interval = reps.iter().filter_map(|r| r.rate.as_ref()).map(|x| x.series.interval_ns).max();
            let mut row = vec![super::point_params(p), ph.name.clone(), fmt_rate(mean(&whole))];
            if steady.len() == reps.len() {
                let rates: Vec<f64> = steady.iter().map(|s| s.bytes_per_s).collect();
                let from: Vec<f64> = steady.iter().map(|s| s.from_ns as f64 / 1e9).collect();
                let to: Vec<f64> = steady.iter().map(|s| s.to_ns as f64 / 1e9).collect();
                row.push(fmt_rate(mean(&rates)));
                row.push(format!("{:.3}", mean(&rates) / mean(&whole)));
                row.push(format!("{:.2} s .. {:.2} s", mean(&from), mean(&to)));
            } else {
                row.extend(["-".into(), "-".into(), "-".into()]);
            }
            row.push(interval.map(|i| format!("{} ms", i / 1_000_000)).unwrap_or_default());
            row.push(unit.short().to_string());
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut headers = vec!["point", "phase", "whole", "steady", "ratio", "window", "interval", "unit"];
    let mut right = vec![2, 3, 4];
    if exp.points.len() < 2 {
        headers.remove(0);
        rows.iter_mut().for_each(|r| drop(r.remove(0)));
        right = vec![1, 2, 3];
    }
    let mut out = String::from("\nrate over time (iolab plot --kind timeline draws it):\n");
    out += &text_table(&headers, &rows, &right);
    // What the rates count: bytes, the ops of metadata phases, or both.
    let phases = || exp.points.iter().flat_map(|p| &p.phases);
    let (md, data) = (phases().any(|ph| ph.op.is_metadata()), phases().any(|ph| !ph.op.is_metadata()));
    let (what, unit) = match (md, data) {
        (true, true) => {
            ("bytes (ops, in a metadata phase)", "MB/s (10^6 B/s) of bytes, ops/s of a metadata phase's ops")
        }
        (true, false) => ("ops", "ops/s"),
        _ => ("bytes", "MB/s (10^6 B/s)"),
    };
    out += &format!(
        "whole: agg, all {what} over the whole phase from the first open to the last close (mean of the runs); steady: the slope of the cumulative \
         {what} over the steady window's interval boundaries (least squares; mean of the runs); \
         ratio: steady / whole; unit: {unit}\nwindow: the phase's \
         intervals without the first and last {:.0}% of them (at least one each; none, shown `-`, with \
         fewer than {MIN_INTERVALS} intervals, with ops completing in fewer than {MIN_STEPS} of the \
         window's intervals, or where commits took over {:.0}% of a worker's time: those {what} move \
         inside the commit, and the whole-phase rate is the figure)\n",
        TRIM * 100.0,
        MAX_COMMIT_SHARE * 100.0
    );
    out
}
