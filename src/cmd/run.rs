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

use super::{buffered, engines, format_of, open_store};

/// `iolab run` (with `--engine list`: the engines table instead).
pub fn cmd_run(args: RunArgs, stdout: &mut dyn Write) -> Result<()> {
    if args.spec.flags.one("engine") == Some("list") {
        return engines::cmd_engines(stdout);
    }
    let built = super::build(&args)?;
    // The experiment to compare with is found before anything runs (by rank 0 under MPI: the
    // one that prints and stores).
    let root = crate::launch::world().is_none_or(|w| w.rank == 0);
    let before = match &args.compare_to {
        Some(id) if root => Some(super::compare::before(&super::read_store(&args.out.db)?, id)?),
        _ => None,
    };
    let after = run_points(built, &args.out, stdout)?;
    match before {
        Some(a) => super::compare::after_run(&a, &after, stdout),
        None => Ok(()),
    }
}

/// Runs a built experiment after checking every point's space (and, with `reuse`, the kept
/// files it reads): prints it in the asked format, stores it unless told not to, and returns it.
pub fn run_points(built: Built, out: &OutputArgs, stdout: &mut dyn Write) -> Result<ExperimentResult> {
    run_points_as(built, out, format_of(out.json, out.csv, out.explain), stdout)
}

/// [`run_points`], printed in `format`.
pub fn run_points_as(
    built: Built,
    out: &OutputArgs,
    format: crate::report::Format,
    stdout: &mut dyn Write,
) -> Result<ExperimentResult> {
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
    let OutputArgs { db, no_store, quiet, progress_every, .. } = out.clone();
    let every = CliMonitor::parse_every(progress_every.as_deref())?;
    built.notes.iter().filter(|_| !quiet).for_each(|n| eprintln!("note: {n}"));
    let world_notes = crate::launch::world().map(|w| w.notes.as_slice()).unwrap_or_default();
    world_notes.iter().filter(|_| !quiet).for_each(|n| eprintln!("note: {n}"));
    if no_store && built.points.iter().any(|p| p.spec.latency == crate::spec::LatencyMode::Trace) {
        eprintln!("note: traces are kept only in the store; with --no-store only their periods are reported");
    }
    // Traces spill beside the store they are going to (else in the temporary directory):
    // a directory iolab writes to, through the same guard as the targets.
    let db_path = if no_store { None } else { Some(super::db_path(&db)?) };
    let spool = db_path.as_ref().and_then(|p| p.parent()).filter(|d| !d.as_os_str().is_empty());
    check_traces(&built, out)?;
    let mut store = if no_store { None } else { Some(open_store(&db)?) };
    if let Some(dir) = spool {
        crate::latency::trace::set_spill_dir(dir.to_path_buf());
    }
    let mut host = host::probe(&dirs);
    host.slurm = crate::launch::slurm_job();
    let monitor = CliMonitor::every(quiet, every);
    let mut no_sink = NoSink;
    let sink: &mut dyn Sink = match store.as_mut() {
        Some(s) => s,
        None => &mut no_sink,
    };
    let mut outcome = run_experiment(&built.base, &built.points, built.design, host, sink, &monitor)?;
    outcome.result.findings = crate::experiment::preset::findings(&outcome.result);
    outcome.result.io500 = crate::results::io500::of(&outcome.result);
    buffered(stdout, |out| report::exporter(format).export(&outcome.result, out))?;
    if let (Some(s), false) = (&store, quiet) {
        eprintln!(
            "stored as experiment {} in {}",
            outcome.result.experiment_id,
            crate::text::escape_path(s.path())
        );
    }
    if !quiet && matches!(format, crate::report::Format::Table | crate::report::Format::Explain) {
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

/// Where a traced run's traces spill (beside the store they go to, else the temporary
/// directory): through the device guard, and with room for them ([`check_trace_spool`]).
pub(super) fn check_traces(built: &Built, out: &OutputArgs) -> Result<()> {
    if !built.points.iter().any(|p| p.spec.latency == crate::spec::LatencyMode::Trace) {
        return Ok(());
    }
    let db_path = if out.no_store { None } else { Some(super::db_path(&out.db)?) };
    let spool = db_path.as_ref().and_then(|p| p.parent()).filter(|d| !d.as_os_str().is_empty());
    let dir = spool.map_or_else(std::env::temp_dir, |d| d.to_path_buf());
    crate::target::device::check_remote_dir("trace_spool", &dir, &built.base.allow_device)?;
    check_trace_spool(built, &dir, db_path.is_some()).map_err(|e| match (spool, e) {
        // Without a store the spool is the temporary directory: a failure there names TMPDIR.
        (None, Error::Io { call, source, .. }) => Error::spec(
            "TMPDIR",
            crate::text::escape_path(&dir),
            format!(
                "a traced run without a store spools its traces in the temporary directory, and {call} on it failed: {source}; set TMPDIR to a directory with room, or store the run"
            ),
        ),
        (_, e) => e,
    })?;
    // Under MPI ranks each other rank spools its own workers' traces on its own host.
    let specs: Vec<crate::spec::Spec> = built.points.iter().map(|p| p.spec.clone()).collect();
    crate::launch::check_trace_spools(&specs)
}

/// A repetition's traces are spooled to `dir` (the store's disk) as it runs, and every
/// repetition's are then stored there (a row per op, at least as large as its spool record):
/// the largest repetition's spool plus, when storing, every repetition's ops at
/// [`RECORD_BYTES`](crate::latency::trace::RECORD_BYTES) each, plus the preflight's margin, must
/// fit in the free space there, whatever the engine (the null engine writes no data but traces
/// every op). Refused (exit 2) before anything runs.
fn check_trace_spool(built: &Built, dir: &std::path::Path, storing: bool) -> Result<()> {
    let record = crate::latency::trace::RECORD_BYTES as u64;
    let traced: Vec<(&Point, u64)> = built
        .points
        .iter()
        .filter(|p| p.spec.latency == crate::spec::LatencyMode::Trace)
        .map(|p| {
            let plan = plan::plan(&p.spec);
            let ops = plan.phases.iter().flat_map(|ph| &ph.workers).map(|w| w.ops.timed_ops());
            (p, ops.fold(0u64, u64::saturating_add))
        })
        .collect();
    let Some(&(p, ops)) = traced.iter().max_by_key(|(_, ops)| *ops) else { return Ok(()) };
    let stored = traced
        .iter()
        .filter(|_| storing)
        .map(|(p, ops)| ops.saturating_mul(u64::from(p.spec.reps) + u64::from(p.spec.warmup)))
        .fold(0u64, u64::saturating_add);
    let need = ops.saturating_add(stored).saturating_mul(record);
    let (free, _) = crate::env::sys::fs_free(dir).map_err(|e| Error::io("statvfs", dir, None, e))?;
    let what = if storing { ", then stores every repetition's there" } else { "" };
    if need.saturating_add(crate::target::preflight::margin(need)) > free {
        let e = Error::spec(
            "trace",
            "true",
            format!(
                "a repetition's trace of {ops} ops spools {} ({record} B per op) to {}{what}: {} in all, and it has {} free (a 5% + 64 MiB margin kept); trace fewer ops (a larger bs, a smaller size, fewer repetitions) or store elsewhere (--db)",
                crate::units::fmt_size(ops.saturating_mul(record)),
                crate::text::escape_path(dir),
                crate::units::fmt_size(need),
                crate::units::fmt_size(free)
            ),
        );
        return Err(at_point(e, p));
    }
    // A spool and store on tmpfs or ramfs take memory, whatever the file system's size says.
    if let Some(why) = crate::target::preflight::memory_shortfall(dir, need, 0) {
        let e = Error::spec(
            "trace",
            "true",
            format!(
                "a repetition's trace of {ops} ops spools {} ({record} B per op) to {}{what}: {why}; trace fewer ops (a larger bs, a smaller size, fewer repetitions) or {}",
                crate::units::fmt_size(ops.saturating_mul(record)),
                crate::text::escape_path(dir),
                if storing {
                    "store on a disk (--db)"
                } else {
                    "give a temporary directory on a disk (TMPDIR)"
                },
            ),
        );
        return Err(at_point(e, p));
    }
    Ok(())
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
