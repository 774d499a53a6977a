//! The commands behind the command line: each takes parsed arguments and writes its output to
//! stdout (machine output only) and stderr (progress and notes).

use std::io::Write;

pub mod engines;
pub mod experiments;
pub mod plot;

use crate::cli::{CleanArgs, Cli, Command, InfoArgs, OutputArgs, ResultsArgs, ResultsCommand, RunArgs};
use crate::env::{host, sys};
use crate::error::{Error, Result};
use crate::experiment::ResolveEnv;
use crate::experiment::progress::CliMonitor;
use crate::experiment::run::{NoSink, Sink, run_experiment};
use crate::experiment::{Built, Experiment};
use crate::plan::RunPlan;
use crate::report::{self, Format};
use crate::results::ExperimentResult;
use crate::spec::Spec;
use crate::store::{self, Store};
use crate::units::fmt_size;
use crate::{engine, plan};

/// Runs one command line.
pub fn main(cli: Cli) -> Result<()> {
    // Child processes, not under the stdout lock below: a traced worker's writer thread
    // writes to stdout too.
    match cli.command {
        Command::Worker => std::process::exit(crate::launch::process::child_main()),
        Command::StrategyWorker => std::process::exit(crate::launch::strategy_process::child_main()),
        _ => {}
    }
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Run(args) => cmd_run(args, &mut stdout),
        Command::Plan(args) => cmd_plan(args, &mut stdout),
        Command::Results(args) => cmd_results(args, &mut stdout),
        Command::Info(args) => cmd_info(args, &mut stdout),
        Command::Engines => cmd_engines(&mut stdout),
        Command::Reproduce(args) => experiments::cmd_reproduce(args, &mut stdout),
        Command::Plot(args) => crate::cmd::plot::cmd_plot(args, &mut stdout),
        Command::Report(args) => crate::cmd::plot::cmd_report(args, &mut stdout),
        Command::Worker | Command::StrategyWorker => unreachable!("handled above"),
        Command::Clean(args) => cmd_clean(args, &mut stdout),
    }
}

fn out_err(e: std::io::Error) -> Error {
    report::write_err(e)
}

fn format_of(json: bool, csv: bool) -> Format {
    if json {
        Format::Json
    } else if csv {
        Format::Csv
    } else {
        Format::Table
    }
}

fn build_args(args: &RunArgs) -> Result<Built> {
    let env = ResolveEnv::current();
    let mut exp = Experiment::from_args(&args.spec, env.ram_bytes)?;
    if exp.params.0.is_empty() {
        exp.params.set_one("name", "default")?;
    }
    exp.build(&env)
}

/// Refuses to start when a file system holding targets lacks the space or inodes the plan
/// needs there (with a margin of 5% plus 64 MiB), before anything is written.
pub fn preflight(spec: &Spec, plan: &RunPlan) -> Result<()> {
    crate::target::preflight::check(spec, plan)
}

pub fn open_store(db: &Option<std::path::PathBuf>) -> Result<Store> {
    Store::open(&db.clone().unwrap_or_else(store::default_path))
}

fn cmd_run(args: RunArgs, stdout: &mut dyn Write) -> Result<()> {
    if args.spec.engine.as_deref() == Some("list") {
        return cmd_engines(stdout);
    }
    let built = build_args(&args)?;
    run_points(built, &args.out, stdout).map(|_| ())
}

/// Runs a built experiment after checking every point's space (and, with `reuse`, the kept
/// files it reads): prints it in the asked format, stores it unless told not to, and returns it.
pub fn run_points(built: Built, out: &OutputArgs, stdout: &mut dyn Write) -> Result<ExperimentResult> {
    for p in &built.points {
        let plan = plan::plan(&p.spec);
        preflight(&p.spec, &plan)?;
        if p.spec.reuse.is_some() && engine::find(&p.spec.engine).is_some_and(|e| e.caps.real_io) {
            crate::target::reuse::open(&p.spec, &plan)?;
        }
    }
    if let Some(w) = crate::target::clean::leftovers_warning(&built.base.dirs, built.base.reuse.as_deref()) {
        eprintln!("{w}");
    }
    let OutputArgs { json, csv, db, no_store, quiet } = out.clone();
    if no_store && built.points.iter().any(|p| p.spec.latency == crate::spec::LatencyMode::Trace) {
        eprintln!("note: traces are kept only in the store; with --no-store only their periods are reported");
    }
    let mut store = if no_store { None } else { Some(open_store(&db)?) };
    if let Some(dir) = store.as_ref().and_then(|s| s.path().parent()).filter(|d| !d.as_os_str().is_empty()) {
        // Traces spill beside the store they are going to.
        crate::latency::trace::set_spill_dir(dir.to_path_buf());
    }
    let host = host::probe(&built.base.dirs);
    let monitor = CliMonitor::new(quiet);
    let mut no_sink = NoSink;
    let sink: &mut dyn Sink = match store.as_mut() {
        Some(s) => s,
        None => &mut no_sink,
    };
    let outcome = run_experiment(&built.base, &built.points, built.design, host, sink, &monitor)?;
    report::exporter(format_of(json, csv)).export(&outcome.result, stdout)?;
    if let (Some(s), false) = (&store, quiet) {
        eprintln!("stored as experiment {} in {}", outcome.result.experiment_id, s.path().display());
    }
    match outcome.error {
        Some(e) => Err(e),
        None => Ok(outcome.result),
    }
}

fn cmd_plan(args: RunArgs, stdout: &mut dyn Write) -> Result<()> {
    let built = build_args(&args)?;
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
        stdout.write_all((s + "\n").as_bytes()).map_err(out_err)?;
    }
    for p in &built.points[1..] {
        preflight(&p.spec, &plan::plan(&p.spec))?;
    }
    let spec = built.points[0].spec.clone();
    let plan = plan::plan(&spec);
    let text = if args.out.json {
        report::plan::plan_json(&spec, &plan)
    } else {
        let free: Vec<_> = spec.dirs.iter().map(|d| sys::fs_free(d).ok()).collect();
        report::plan::plan_text(&spec, &plan, &free)
    };
    stdout.write_all(text.as_bytes()).map_err(out_err)?;
    preflight(&spec, &plan)
}

fn cmd_results(args: ResultsArgs, stdout: &mut dyn Write) -> Result<()> {
    let store = open_store(&args.db)?;
    match args.command {
        ResultsCommand::List => {
            let rows: Vec<Vec<String>> = store
                .list()?
                .into_iter()
                .map(|r| {
                    let phases: Vec<String> = r.spec.phases.iter().map(|p| p.name.clone()).collect();
                    vec![
                        r.id,
                        r.name,
                        r.hostname,
                        format!(
                            "{} x{} {} bs {}",
                            r.spec.engine,
                            r.spec.workers,
                            fmt_size(r.spec.size_bytes),
                            fmt_size(r.spec.bs_bytes)
                        ),
                        phases.join(","),
                        format!("{}", r.runs_complete),
                        format!("{}", r.runs_failed),
                    ]
                })
                .collect();
            let t = report::text_table(
                &["id", "name", "host", "spec", "phases", "runs ok", "failed"],
                &rows,
                &[5, 6],
            );
            stdout.write_all(t.as_bytes()).map_err(out_err)
        }
        ResultsCommand::Show { id, json, csv } => {
            let exp = store.load(&store.resolve_id(&id)?)?;
            report::exporter(format_of(json, csv)).export(&exp, stdout)
        }
        ResultsCommand::Export { id, json, csv, output } => {
            let exp = store.load(&store.resolve_id(&id)?)?;
            let ex = report::exporter(format_of(json, csv));
            match output {
                Some(path) => {
                    let mut f =
                        std::fs::File::create(&path).map_err(|e| Error::io("open", &path, None, e))?;
                    ex.export(&exp, &mut f)
                }
                None => ex.export(&exp, stdout),
            }
        }
        ResultsCommand::Compare { by: _, format } => experiments::compare(&store, &format, stdout),
        ResultsCommand::Import { path } => experiments::import(&store, &path, stdout),
        ResultsCommand::Strategies { ids, format } => {
            let mut exps = vec![];
            for id in &ids {
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
            stdout.write_all(report::strategies::render(&exp, &format).as_bytes()).map_err(out_err)
        }
        ResultsCommand::Trace { id, phase, rep, json, output } => {
            let id = store.resolve_id(&id)?;
            let filter = report::trace::TraceFilter { phase, rep };
            match output {
                Some(path) => {
                    let mut f =
                        std::fs::File::create(&path).map_err(|e| Error::io("open", &path, None, e))?;
                    report::trace::export(&store, &id, &filter, json, &mut f)
                }
                None => report::trace::export(&store, &id, &filter, json, stdout),
            }
        }
    }
}

fn cmd_info(args: InfoArgs, stdout: &mut dyn Write) -> Result<()> {
    if !args.layout.is_empty() {
        return cmd_info_layout(&args.layout, args.json, stdout);
    }
    let dir = args.dir.unwrap_or_else(|| std::path::PathBuf::from("."));
    let dir = dir.canonicalize().map_err(|e| Error::spec("dir", dir.display(), e.to_string()))?;
    let h = host::probe(std::slice::from_ref(&dir));
    if args.json {
        let text = serde_json::to_string_pretty(&h).map_err(report::write_err)? + "\n";
        return stdout.write_all(text.as_bytes()).map_err(out_err);
    }
    let mut s = format!("host      {} ({})\n", h.hostname, h.host_id);
    s += &format!("os        {} {}\n", h.os, h.kernel);
    s += &format!("cpu       {} x {} @ {:.0} MHz\n", h.cpus, h.cpu_model, h.cpu_mhz);
    s += &format!("memory    {}\n", fmt_size(h.mem_bytes));
    s += &format!("iolab     {} (git {})\n", h.iolab_version, h.git_rev);
    for t in &h.targets {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        s += &format!("target    {}\n", t.dir.display());
        s += &format!("  file system  {} at {} ({})\n", t.fs_type, t.mount_point, t.mount_options);
        s += &format!("  device       {} ({})\n", opt(&t.device), opt(&t.device_model));
        s += &format!(
            "  queue        rotational {}, scheduler {}, read-ahead {} KiB, logical block {} B\n",
            t.rotational.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            opt(&t.scheduler),
            t.read_ahead_kb.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            t.logical_block_bytes.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
        );
        s += &format!("  O_DIRECT     offsets and sizes aligned to {} B\n", t.direct_io_align_bytes);
        if let Ok((free, inodes)) = sys::fs_free(&t.dir) {
            s += &format!("  free         {} and {} inodes\n", fmt_size(free), inodes);
        }
    }
    stdout.write_all(s.as_bytes()).map_err(out_err)
}

fn cmd_info_layout(files: &[std::path::PathBuf], json: bool, stdout: &mut dyn Write) -> Result<()> {
    for f in files {
        if !f.is_file() {
            return Err(Error::spec("layout", f.display(), "not a regular file"));
        }
    }
    let fail = |e: std::io::Error| Error::io("ioctl(FS_IOC_FIEMAP)", &files[0], None, e);
    let text = if json {
        let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        let (facts, extents) = crate::env::forensics::probe(files, &names).map_err(fail)?;
        let doc = serde_json::json!({ "layout": facts, "extents": extents });
        serde_json::to_string_pretty(&doc).map_err(report::write_err)? + "\n"
    } else {
        crate::env::forensics::render(files).map_err(fail)?
    };
    stdout.write_all(text.as_bytes()).map_err(out_err)
}

fn cmd_clean(args: CleanArgs, stdout: &mut dyn Write) -> Result<()> {
    let opts = crate::target::clean::CleanOpts { dry_run: args.dry_run, force: args.force };
    let mut errors = vec![];
    for d in &args.dirs {
        let mut report = String::new();
        let r = crate::target::clean::clean(d, opts, &mut report);
        stdout.write_all(report.as_bytes()).map_err(out_err)?;
        errors.extend(r?);
    }
    let n = errors.len();
    match errors.into_iter().next() {
        None => Ok(()),
        Some(e) if n == 1 => Err(e),
        Some(e) => Err(Error::Run(format!("{e} (and {} more errors)", n - 1))),
    }
}

fn cmd_engines(stdout: &mut dyn Write) -> Result<()> {
    let t = engines::table();
    stdout.write_all(t.as_bytes()).map_err(out_err)
}
