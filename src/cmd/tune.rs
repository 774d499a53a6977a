//! `iolab tune`: find the fastest way to do a job on this machine within a time budget: build
//! the job and its search space, check the disk holds every candidate, race them (the runs
//! stored as one experiment, the race's record beside it), print the ranked table, the
//! verdict and the recommended spec; or list the space, or print it as an exhaustive grid.

use std::io::Write;
use std::time::Instant;

use crate::cli::TuneArgs;
use crate::error::{Error, Result};
use crate::experiment::estimate::fmt_about;
use crate::experiment::progress::CliMonitor;
use crate::experiment::run::{NoSink, Sink};
use crate::experiment::tune::{self, Request, job::JobArgs};
use crate::experiment::{Params, ResolveEnv};
use crate::report::output::{self, Kind};
use crate::results::tune::{Rule, race};
use crate::worker::registry::real_io;

use super::{format_of, open_store, put};

/// Keys `--set` may give every candidate: how the race runs, not how the job is done.
const SETTABLE: &[&str] = &["settle", "prime_memory", "warmup", "interleave", "seed", "latency"];

/// `iolab tune`.
pub fn cmd_tune(args: TuneArgs, stdout: &mut dyn Write) -> Result<()> {
    let start = Instant::now();
    if args.job == "list" {
        return put(stdout, &jobs_table());
    }
    if args.out.explain {
        return Err(Error::spec(
            "explain",
            "--explain",
            "iolab tune prints its race whole; --explain is for `iolab run` and `iolab results show` \
             (the recommended spec's table: `iolab results show ID --explain`)",
        ));
    }
    if let Some(w) = crate::launch::world() {
        return Err(Error::spec(
            "mpirun",
            format!("{} ranks", w.size),
            "iolab tune races candidates on one host and does not run under mpirun: run it \
             without mpirun, then the spec it recommends with `mpirun ... iolab run FILE`",
        ));
    }
    // The store (when there is one) is never replaced by the saved spec.
    let db: Vec<std::path::PathBuf> = super::db_path(&args.out.db).into_iter().collect();
    let reading: Vec<&std::path::Path> = db.iter().map(|p| p.as_path()).collect();
    if let Some(path) = &args.save_spec {
        output::check(path, "save_spec", Kind::Spec, args.force, &reading)?;
    }
    let env = ResolveEnv::current()?;
    let job = tune::job::build(
        &JobArgs {
            job: args.job.clone(),
            bytes: args.bytes.clone(),
            direction: args.direction.clone(),
            access: args.access.clone(),
            op_size: args.op_size.clone(),
            durable: args.durable.clone(),
            comptime: args.comptime.clone(),
            workers: args.workers.clone(),
            memory: args.memory.clone(),
            dirs: args.dirs.clone(),
        },
        env.ram_bytes,
    )?;
    let req = Request {
        job,
        search: tune::space::parse_search(&args.search)?,
        budget_ns: budget_ns(&args.budget)?,
        rule: rule(&args)?,
        extra: extra(&args.set)?,
    };
    let prep = tune::prepare(&req, &env)?;
    let format = format_of(args.out.json, args.out.csv, false);
    if let Some(reps) = args.grid {
        if reps == 0 {
            return Err(Error::spec("grid", 0, "at least one repetition"));
        }
        let about =
            format!("iolab tune {}: every candidate of its space\n{}", prep.job.name, prep.job.describe());
        return put(stdout, &tune::emit::grid_toml(&prep.base, &prep.axes, reps, &about));
    }
    let dirs = prep.space.cands[0].spec.dirs.clone();
    let mut host = crate::env::host::probe(&dirs);
    host.slurm = crate::launch::slurm_job();
    if args.list {
        let t = tune::record(&prep, &req, "-", &host);
        return crate::report::tune::exporter(format.name().replace("table", "text").as_str())?
            .export(&t, stdout);
    }
    for c in &prep.space.cands {
        let plan = crate::plan::plan(&c.spec);
        crate::target::preflight::check(&c.spec, &plan, real_io(&c.spec.engine))?;
    }
    if let Some(w) = crate::target::clean::leftovers_warning(&dirs, None) {
        eprintln!("{w}");
    }
    let quiet = args.out.quiet;
    let every = CliMonitor::parse_every(args.out.progress_every.as_deref())?;
    // Before anything is made: what the budget holds (refused when not one baseline run).
    let costs = tune::expected_costs_s(&prep, &super::rates(&args.out));
    let budget_s = req.budget_ns as f64 / 1e9;
    let plan = race::plan_budget(&costs, 0, budget_s, req.rule).map_err(|least| {
        let all = race::plan_budget(&costs, 0, f64::INFINITY, req.rule).ok();
        let (round, decide) = all.map_or((0.0, 0.0), |p| (p.round_s, p.decide_s));
        Error::spec(
            "budget",
            &args.budget,
            format!(
                "too small for one run of the baseline ({}, expected to take {}); one round of all {} candidates needs {}, and a race that likely decides ({} runs each) {}",
                prep.space.cands[0].label,
                fmt_about(least),
                costs.len(),
                fmt_about(round),
                req.rule.min_runs,
                fmt_about(decide)
            ),
        )
    })?;
    let mut store = if args.out.no_store { None } else { Some(open_store(&args.out.db)?) };
    if !quiet {
        eprintln!(
            "tuning {}: {} candidates, budget {}",
            prep.job.describe(),
            prep.space.cands.len(),
            crate::units::fmt_ns(req.budget_ns)
        );
        if plan.raced.len() < costs.len() {
            eprintln!(
                "the budget holds {} of {} candidates (the baseline, then those expected to gain most); {} would race all of them to a likely decision",
                plan.raced.len(),
                costs.len(),
                fmt_about(plan.decide_s)
            );
        }
    }
    let monitor = CliMonitor::every(quiet, every);
    let mut no_sink = NoSink;
    let sink: &mut dyn Sink = match store.as_mut() {
        Some(s) => s,
        None => &mut no_sink,
    };
    let outcome = tune::run(&prep, &req, host, sink, &monitor, start, &(costs, plan), !quiet)?;
    let name = match format {
        crate::report::Format::Table | crate::report::Format::Explain => "text",
        other => other.name(),
    };
    let exporter = crate::report::tune::exporter(name)?;
    super::buffered(stdout, |out| exporter.export(&outcome.tuning, out))?;
    if let Some(path) = &args.save_spec {
        match &outcome.tuning.recommended {
            Some(r) => output::write_with(path, "save_spec", Kind::Spec, args.force, &reading, |f| {
                f.write_all(r.toml.as_bytes()).map_err(|e| Error::io("write", f.tmp_path(), None, e))
            })?,
            None => eprintln!("note: no candidate to recommend; {} not written", path.display()),
        }
    }
    if let (Some(s), false) = (&store, quiet) {
        eprintln!(
            "stored as experiment {} in {} (iolab report {0})",
            outcome.result.experiment_id,
            crate::text::escape_path(s.path())
        );
    }
    match outcome.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `--budget`: a positive duration of at most a week.
fn budget_ns(v: &str) -> Result<u64> {
    match crate::units::parse_duration_ns(v) {
        Ok(0) => Err(Error::spec("budget", v, "must be positive")),
        Ok(n) if n > 7 * 86_400 * 1_000_000_000 => Err(Error::spec("budget", v, "at most a week")),
        Ok(n) => Ok(n),
        Err(e) => Err(Error::spec("budget", v, e.0)),
    }
}

fn rule(args: &TuneArgs) -> Result<Rule> {
    if args.min_runs < 2 {
        return Err(Error::spec("min_runs", args.min_runs, "at least 2: an interval needs two runs"));
    }
    if args.max_runs < args.min_runs || args.max_runs > 10_000 {
        return Err(Error::spec("max_runs", args.max_runs, "from min_runs to 10000"));
    }
    Ok(Rule { min_runs: args.min_runs, max_runs: args.max_runs })
}

/// The parameters every candidate takes: rounds shuffled anew by default, then `--set`.
fn extra(set: &[String]) -> Result<Params> {
    let mut p = Params::default();
    p.set_one("interleave", "shuffle")?;
    for kv in set {
        let key = kv.split_once('=').map_or(kv.as_str(), |(k, _)| k).replace('-', "_");
        if !SETTABLE.contains(&key.as_str()) {
            return Err(Error::spec(
                "set",
                kv,
                format!("tune sets only {} (the job's own values have flags)", SETTABLE.join(", ")),
            ));
        }
        p.set_kv(kv)?;
    }
    Ok(p)
}

/// The preset jobs, one line each.
fn jobs_table() -> String {
    let rows: Vec<Vec<String>> = tune::job::JOBS
        .iter()
        .map(|j| {
            let mut what = format!("{} {} {}, ops of {}", j.direction, j.bytes, j.access, j.op_size);
            if j.op_fixed {
                what += " (fixed)";
            }
            if j.direction != "read" {
                what += &format!(", durable {}", j.durable);
            }
            if j.comptime != "0s" {
                what += &format!(", compute {} per worker", j.comptime);
            }
            what += &format!(", {} worker{}", j.workers, if j.workers == 1 { "" } else { "s" });
            vec![j.name.to_string(), what, j.about.to_string()]
        })
        .collect();
    crate::report::text_table(&["job", "what it does", "about"], &rows, &[])
        + "custom: the checkpoint's values, with --bytes and any other flag given\n"
}
