//! `iolab run`: build the experiment the flags describe, check it fits, run it, print and
//! store the results.

use std::io::Write;

use crate::cli::{OutputArgs, RunArgs};
use crate::env::host;
use crate::error::{Error, Result};
use crate::experiment::Built;
use crate::experiment::progress::CliMonitor;
use crate::experiment::run::{NoSink, Point, Sink, run_experiment};
use crate::results::ExperimentResult;
use crate::worker::registry::real_io;
use crate::{plan, report};

use super::{engines, format_of, open_store};

/// `iolab run` (with `--engine list`: the engines table instead).
pub fn cmd_run(args: RunArgs, stdout: &mut dyn Write) -> Result<()> {
    if args.spec.flags.one("engine") == Some("list") {
        return engines::cmd_engines(stdout);
    }
    let built = super::build(&args)?;
    run_points(built, &args.out, stdout).map(|_| ())
}

/// Runs a built experiment after checking every point's space (and, with `reuse`, the kept
/// files it reads): prints it in the asked format, stores it unless told not to, and returns it.
pub fn run_points(built: Built, out: &OutputArgs, stdout: &mut dyn Write) -> Result<ExperimentResult> {
    for p in &built.points {
        let plan = plan::plan(&p.spec);
        crate::target::preflight::check(&p.spec, &plan, real_io(&p.spec.engine))
            .map_err(|e| at_point(e, p))?;
        if p.spec.reuse.is_some() && real_io(&p.spec.engine) {
            crate::target::reuse::open(&p.spec, &plan)?;
        }
    }
    // The targets, and the directories I/O-server ranks keep their files in (as this host
    // sees them: a node-local one elsewhere is its own host's to look at): scanned for
    // leftovers here, described in the results' host facts below.
    let mut dirs = built.base.dirs.clone();
    for d in built.points.iter().filter_map(|p| p.spec.servers.as_ref()).map(|s| &s.dir) {
        if !dirs.contains(d) {
            dirs.push(d.clone());
        }
    }
    if let Some(w) = crate::target::clean::leftovers_warning(&dirs, built.base.reuse.as_deref()) {
        eprintln!("{w}");
    }
    let OutputArgs { json, csv, db, no_store, quiet } = out.clone();
    built.notes.iter().filter(|_| !quiet).for_each(|n| eprintln!("note: {n}"));
    if no_store && built.points.iter().any(|p| p.spec.latency == crate::spec::LatencyMode::Trace) {
        eprintln!("note: traces are kept only in the store; with --no-store only their periods are reported");
    }
    // Traces spill beside the store they are going to (else in the temporary directory):
    // a directory iolab writes to, through the same guard as the targets.
    let db_path = if no_store { None } else { Some(super::db_path(&db)?) };
    let spool = db_path.as_ref().and_then(|p| p.parent()).filter(|d| !d.as_os_str().is_empty());
    if built.points.iter().any(|p| p.spec.latency == crate::spec::LatencyMode::Trace) {
        let dir = spool.map_or_else(std::env::temp_dir, |d| d.to_path_buf());
        crate::target::device::check_remote_dir("trace_spool", &dir, &built.base.allow_device)?;
    }
    let mut store = if no_store { None } else { Some(open_store(&db)?) };
    if let Some(dir) = spool {
        crate::latency::trace::set_spill_dir(dir.to_path_buf());
    }
    let host = host::probe(&dirs);
    let monitor = CliMonitor::new(quiet);
    let mut no_sink = NoSink;
    let sink: &mut dyn Sink = match store.as_mut() {
        Some(s) => s,
        None => &mut no_sink,
    };
    let mut outcome = run_experiment(&built.base, &built.points, built.design, host, sink, &monitor)?;
    outcome.result.findings = crate::experiment::preset::findings(&outcome.result);
    report::exporter(format_of(json, csv)).export(&outcome.result, stdout)?;
    if let (Some(s), false) = (&store, quiet) {
        eprintln!(
            "stored as experiment {} in {}",
            outcome.result.experiment_id,
            crate::text::escape_path(s.path())
        );
    }
    if !quiet && !json && !csv {
        eprintln!("{}", next_steps(&outcome.result, store.is_some()));
    }
    match outcome.error {
        Some(e) => Err(e),
        None => Ok(outcome.result),
    }
}

/// The last line after a run (not with --quiet, --json or --csv): what to look at next.
pub fn next_steps(exp: &ExperimentResult, stored: bool) -> String {
    if !stored {
        return "next: run without --no-store to keep the results for `iolab report` and `iolab plot`".into();
    }
    let plot = if exp.design.axes.is_empty() {
        "iolab plot last --kind timeline -o timeline.svg (each phase's rate over time)"
    } else {
        "iolab plot last -o plot.svg (the rate against the swept parameter)"
    };
    format!("next: iolab report last -o report.html (tables, plots, raw data) · {plot}")
}

/// Names the sweep point in a spec error of one point, as resolving does.
pub fn at_point(e: Error, p: &Point) -> Error {
    match e {
        Error::Spec { field, value, reason } if !p.params.is_empty() => {
            let desc: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            Error::Spec { field: format!("{field} (at sweep point {})", desc.join(" ")), value, reason }
        }
        other => other,
    }
}
