//! `iolab plan`: what an experiment would do (files, bytes, ops, space, cache policy, the time
//! it would take), and whether it fits; touches nothing unless asked to calibrate.

use std::io::Write;

use crate::cli::PlanArgs;
use crate::error::Result;
use crate::experiment::estimate::{self, Rates};
use crate::experiment::run::Point;
use crate::target::preflight;
use crate::units::fmt_size;
use crate::worker::registry::real_io;
use crate::{plan, report};

use super::put;

/// `iolab plan`: with a sweep, one line per point, then the plan of point 0.
pub fn cmd_plan(args: PlanArgs, stdout: &mut dyn Write) -> Result<()> {
    let PlanArgs { run: args, calibrate } = args;
    if let Some(id) = &args.compare_to {
        eprintln!("note: --compare-to {id}: the run prints its comparison after it; a plan runs nothing");
    }
    let built = super::build(&args)?;
    built.notes.iter().for_each(|n| eprintln!("note: {n}"));
    if built.points.len() > 1 && !args.out.json {
        let mut s = format!("{} points; the plan of point 0 follows\n", built.points.len());
        for (i, p) in built.points.iter().enumerate() {
            let kv: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s += &format!(
                "point {i:>3}  {}  {} per run\n",
                kv.join(" "),
                fmt_size(plan::plan(&p.spec).disk_bytes())
            );
        }
        put(stdout, &(s + "\n"))?;
    }
    for p in &built.points[1..] {
        preflight::check(&p.spec, &plan::plan(&p.spec), real_io(&p.spec.engine))?;
    }
    let spec = built.points[0].spec.clone();
    let plan = plan::plan(&spec);
    let mut rates = super::rates(&args.out);
    if let Some(size) = &calibrate {
        if crate::launch::world().is_some() {
            return Err(crate::error::Error::spec(
                "calibrate",
                size,
                "not under mpirun: calibrate on one host",
            ));
        }
        preflight::check(&spec, &plan, real_io(&spec.engine))?;
        rates = super::calibrate::calibrate(&built.points, rates, size, &args.out)?;
    }
    let text = if args.out.json {
        let mut doc: serde_json::Value =
            crate::json::from_str(&report::plan::plan_json(&spec, &plan)).expect("the plan's JSON");
        doc["estimate"] = estimate_json(&built.points, &rates);
        crate::json::to_string_pretty(&doc).expect("JSON in memory") + "\n"
    } else {
        let dirs = report::plan::space_dirs(&spec);
        let free: Vec<_> = dirs.iter().map(|d| crate::env::sys::fs_free(d).ok()).collect();
        let mut t = report::plan::plan_text(&spec, &plan, &free);
        match (crate::launch::world(), &spec.servers) {
            (Some(w), Some(s)) => {
                t += &report::servers::placement_text(&w.placement(), spec.workers, s.count)
            }
            (Some(w), None) => {
                t += &report::hosts::placement_text(&w.placement(), (spec.workers / w.size).max(1))
            }
            (None, _) => {}
        }
        t + &estimate_text(&built.points, &rates)
    };
    put(stdout, &text)?;
    preflight::check(&spec, &plan, real_io(&spec.engine))?;
    super::run::check_traces(&built, &args.out)
}

/// The estimate of the whole experiment as JSON (`iolab plan --json`'s `estimate`).
fn estimate_json(points: &[Point], rates: &Rates) -> serde_json::Value {
    let e = estimate::estimate(points, rates);
    let runs: u64 = points.iter().map(|p| (p.spec.reps + p.spec.warmup) as u64).sum();
    serde_json::json!({
        "runs": runs,
        "points": points.len(),
        "disk_bytes": e.disk_bytes,
        "time_s": float(e.seconds),
        "phase_runs_at_measured_rates": e.measured,
        "stored_phases_used": e.samples,
        "phase_runs_at_calibrated_rates": e.calibrated,
        "calibrations": rates.calibrations().iter().map(|c| serde_json::json!({
            "engine": c.engine,
            "direction": if c.write { "write" } else { "read" },
            "bytes": c.bytes,
            "bytes_per_s": float(c.bytes_per_s),
        })).collect::<Vec<_>>(),
        "phase_runs_at_assumed_rate": e.assumed,
        "assumed_bytes_per_s": estimate::ASSUMED_BYTES_PER_S,
    })
}

/// A figure in a JSON tree, as [`crate::json`] writes it (a word when it is not finite).
fn float(x: f64) -> serde_json::Value {
    crate::json::to_value(&x).expect("a float is always a JSON value")
}

/// The estimate of the whole experiment: every point, repetition and warm-up.
fn estimate_text(points: &[Point], rates: &Rates) -> String {
    let e = estimate::estimate(points, rates);
    let runs: u64 = points.iter().map(|p| (p.spec.reps + p.spec.warmup) as u64).sum();
    format!(
        "estimate for {} run{} ({} point{}): disk space {} at most, time {}\n",
        runs,
        if runs == 1 { "" } else { "s" },
        points.len(),
        if points.len() == 1 { "" } else { "s" },
        e.disk_text(),
        e.time_text()
    )
}
