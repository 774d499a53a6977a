//! `iolab results`: list, show and export stored experiments, compare hosts, import other
//! stores, the strategy tables and the per-op traces.

use std::io::Write;
use std::path::Path;

use crate::cli::{ResultsArgs, ResultsCommand};
use crate::error::{Error, Result};
use crate::report::{self, compare};
use crate::store::{Store, import};

use super::{buffered, format_of, put, read_store};
use crate::report::output::{self, Kind};

/// `iolab results ...`.
pub fn cmd_results(args: ResultsArgs, stdout: &mut dyn Write) -> Result<()> {
    if let ResultsCommand::Import { path, no_traces } = &args.command {
        let opts = import::ImportOpts { no_traces: *no_traces };
        return import(&super::db_path(&args.db)?, path, opts, stdout);
    }
    let store = read_store(&args.db)?;
    match args.command {
        ResultsCommand::List => list(&store, stdout),
        ResultsCommand::Show { id, json, csv, explain } => {
            let exp = with_findings(store.load(&store.resolve_id(&id)?)?);
            buffered(stdout, |out| report::exporter(format_of(json, csv, explain)).export(&exp, out))?;
            // A tuning's race under its experiment's table (its JSON: `iolab tune --json`).
            let tuning = store.load_tuning(&exp.experiment_id).unwrap_or_else(|e| {
                store.warn_unreadable(&format!("the tuning of experiment {}", exp.experiment_id), e);
                None
            });
            match tuning {
                Some(t) if !json && !csv => {
                    put(stdout, &format!("\ntuning\n{}", report::tune::render_text(&t)))
                }
                _ => Ok(()),
            }
        }
        ResultsCommand::Export { id, json, csv, output, force } => {
            // JSON unless --csv.
            let json = json || !csv;
            let kind = if json { Kind::ExperimentJson } else { Kind::ExperimentCsv };
            if let Some(path) = &output {
                output::check(path, "output", kind, force, &[store.path()])?;
            }
            let exp = with_findings(store.load(&store.resolve_id(&id)?)?);
            let ex = report::exporter(format_of(json, csv, false));
            match output {
                Some(path) => {
                    output::write_with(&path, "output", kind, force, &[store.path()], |f| ex.export(&exp, f))
                }
                None => buffered(stdout, |out| ex.export(&exp, out)),
            }
        }
        ResultsCommand::Compare { ids, baseline, fail_if_slower, by: _, format, tuned } => {
            if ids.is_empty() && baseline.is_none() {
                if let Some(pct) = fail_if_slower {
                    return Err(Error::spec(
                        "--fail-if-slower",
                        pct,
                        "needs two experiments: A B, or --baseline NAME",
                    ));
                }
                if format == "json" {
                    return Err(Error::spec(
                        "--format",
                        format,
                        "the per-host table is text, csv, markdown or html; json is for two experiments (A B)",
                    ));
                }
                return compare(&store, &format, tuned, stdout);
            }
            let two = super::compare::Two { ids, baseline, fail_if_slower, format, tuned };
            super::compare::before_after(&store, two, stdout)
        }
        ResultsCommand::Import { .. } => unreachable!("handled above"),
        ResultsCommand::Strategies { ids, format } => strategies(&store, &ids, &format, stdout),
        ResultsCommand::Trace { id, phase, rep, json, output, force } => {
            let kind = if json { Kind::TraceJson } else { Kind::TraceCsv };
            if let Some(path) = &output {
                output::check(path, "output", kind, force, &[store.path()])?;
            }
            let id = store.resolve_id(&id)?;
            let filter = report::trace::TraceFilter { phase, rep };
            match output {
                Some(path) => output::write_with(&path, "output", kind, force, &[store.path()], |f| {
                    report::trace::export(&store, &id, &filter, json, f)
                }),
                None => buffered(stdout, |out| report::trace::export(&store, &id, &filter, json, out)),
            }
        }
    }
}

/// The experiment with its preset's findings checked against it, and its IO500 figures when
/// it is laid out as the IO500 workload set.
pub fn with_findings(mut exp: crate::results::ExperimentResult) -> crate::results::ExperimentResult {
    exp.findings = crate::experiment::preset::findings(&exp);
    exp.io500 = crate::results::io500::of(&exp);
    exp
}

/// `iolab results list`: every experiment, newest first.
fn list(store: &Store, stdout: &mut dyn Write) -> Result<()> {
    let all = store.list()?;
    // Experiments that ended early have runs not run: a column of them, when any has.
    let not_run = all.iter().any(|r| r.runs_not_run > 0);
    let rows: Vec<Vec<String>> = all
        .into_iter()
        .map(|r| {
            let phases: Vec<String> = r.spec.phases.iter().map(|p| p.name.clone()).collect();
            // What ran: one point's spec in brief; over a sweep, what it swept, with the first
            // point's brief only when the sweep keeps its phases (a sweep of `ops` can turn data
            // phases into metadata phases).
            let axes: Vec<&str> = r.design.axes.iter().map(|a| a.key.as_str()).collect();
            let ops_swept = axes.contains(&"ops");
            let brief = report::brief::spec_brief(&r.spec);
            let spec = match (axes.is_empty(), ops_swept) {
                (true, _) => brief,
                (false, false) => format!("{brief} · sweep of {}", axes.join(", ")),
                (false, true) => format!("sweep of {}", axes.join(", ")),
            };
            let host = match &r.slurm_job {
                Some(j) => format!("{} (Slurm job {j})", r.hostname),
                None => r.hostname,
            };
            vec![
                r.id,
                r.name,
                host,
                spec,
                if ops_swept { "per point".to_string() } else { phases.join(",") },
                format!("{}", r.runs_complete),
                format!("{}", r.runs_failed),
            ]
            .into_iter()
            .chain(not_run.then(|| r.runs_not_run.to_string()))
            .collect()
        })
        .collect();
    let mut headers = vec!["id", "name", "host", "spec", "phases", "runs ok", "failed"];
    let mut right = vec![5, 6];
    if not_run {
        headers.push("not run");
        right.push(7);
    }
    put(stdout, &report::text_table(&headers, &rows, &right))
}

/// `iolab results compare --by host` (also printed after `iolab reproduce L4`): the SLAC table
/// of the L1/L4 experiments, and the winners of the tuned jobs, each when the store has any
/// (CSV holds one table: the SLAC one, or with `--tuned` the tuned jobs').
pub fn compare(store: &Store, format: &str, tuned_only: bool, stdout: &mut dyn Write) -> Result<()> {
    if format == "html" {
        return put(stdout, &report::html::compare::page(store)?);
    }
    let tuned = report::tune::hosts::rows(&store.tunings()?);
    let slac = if tuned_only { Ok(vec![]) } else { compare::experiments(store) };
    let mut text = match (&slac, tuned.is_empty()) {
        (Err(e), true) => return Err(Error::NotFound(format!("{e}; nor any tuning (`iolab tune`)"))),
        (Err(_), false) => String::new(),
        (Ok(exps), _) if exps.is_empty() => String::new(),
        (Ok(exps), _) => compare::render(&compare::rows(exps), format)?,
    };
    if !tuned.is_empty() && (text.is_empty() || format != "csv") {
        if !text.is_empty() {
            text += "\n";
        }
        text += &report::render(report::find(report::tune::hosts::FORMATS, format)?, &tuned[..])?;
    }
    if tuned_only && tuned.is_empty() {
        return Err(Error::NotFound("the store holds no tuning: run `iolab tune JOB` first".into()));
    }
    put(stdout, &text)
}

/// `iolab results import PATH` into the store at `db`.
fn import(db: &Path, path: &Path, opts: import::ImportOpts, stdout: &mut dyn Write) -> Result<()> {
    let r = import::import_path(db, path, opts)?;
    let mut text = format!(
        "imported {}: {} experiment(s), {} new; {} run(s) added, {} already present",
        path.display(),
        r.experiments_seen,
        r.experiments_added,
        r.runs_added,
        r.runs_skipped
    );
    if r.trace_ops_added > 0 {
        text += &format!("; {} traced op(s) carried", r.trace_ops_added);
    }
    if r.trace_ops_left_out > 0 {
        text += &format!("; its {} traced op(s) not carried (--no-traces)", r.trace_ops_left_out);
    }
    for n in &r.notes {
        eprintln!("note: {n}");
    }
    put(stdout, &(text + "\n"))
}

/// `iolab results strategies ID...`: one table of all their points.
fn strategies(store: &Store, ids: &[String], format: &str, stdout: &mut dyn Write) -> Result<()> {
    let mut exps = vec![];
    for id in ids {
        let exp = store.load(&store.resolve_id(id)?)?;
        if !report::strategies::any(&exp) {
            return Err(Error::NotFound(format!(
                "experiment {} ran no strategy (run one with --strategy S1A|S1B|S2|S3|S5)",
                exp.experiment_id
            )));
        }
        exps.push(exp);
    }
    let exp = report::strategies::merge(exps);
    put(stdout, &report::strategies::render(&exp, format))
}
