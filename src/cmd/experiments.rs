//! The commands around experiments: `iolab reproduce` (the studies' presets), `iolab results
//! compare` (the per-host table) and `iolab results import` (merging other machines' results).

use std::io::Write;
use std::path::Path;

use crate::cli::ReproduceArgs;
use crate::cmd::run_points;
use crate::error::{Error, Result};
use crate::experiment::ResolveEnv;
use crate::experiment::preset::{self, Scale};
use crate::report::{self, compare};
use crate::store::Store;
use crate::store::import;

fn out_err(e: std::io::Error) -> Error {
    report::write_err(e)
}

/// `iolab reproduce`: list the presets, print one, or run one.
pub fn cmd_reproduce(args: ReproduceArgs, stdout: &mut dyn Write) -> Result<()> {
    let env = ResolveEnv::current()?;
    if args.list {
        let text = list(&args.dirs, &env)?;
        return stdout.write_all(text.as_bytes()).map_err(out_err);
    }
    let id = args.id.clone().unwrap_or_default();
    let p = preset::find(&id)?;
    let scale = Scale::parse(&args.scale)?;
    if args.print {
        let text = match p.print(scale, &args.dirs, env.ram_bytes) {
            Ok(t) => t,
            Err(e) => format!(
                "# {} cannot be resolved by this build ({e});\n# here is the preset file as written, with every scale.\n\n{}",
                p.meta.id, p.text
            ),
        };
        return stdout.write_all(text.as_bytes()).map_err(out_err);
    }
    if let Some(reason) = p.unmet_needs().into_iter().next() {
        return Err(Error::spec("preset", &p.meta.id, reason));
    }
    let unavailable = |e: Error| match e {
        Error::Spec { field, value, reason } => Error::Spec {
            field,
            value,
            reason: format!("{reason} (so preset {} is not available in this build)", p.meta.id),
        },
        other => other,
    };
    let mut exp = p.experiment(scale, &args.dirs, env.ram_bytes).map_err(unavailable)?;
    for kv in &args.set {
        let (k, v) = kv.split_once('=').ok_or_else(|| Error::spec("set", kv, "expected KEY=VALUE"))?;
        let values = if matches!(k, "dirs" | "dir" | "ops" | "op") {
            v.split(',').map(String::from).collect()
        } else {
            vec![v.to_string()]
        };
        exp.params.set(k, values)?;
    }
    let built = exp.build(&env).map_err(unavailable)?;
    run_points(built, &args.out, stdout)?;
    if p.meta.id == "L4" && !args.out.no_store && !args.out.json && !args.out.csv {
        let store = crate::cmd::open_store(&args.out.db)?;
        stdout.write_all(b"\n").map_err(out_err)?;
        compare(&store, "text", stdout)?;
    }
    Ok(())
}

/// The `--list` table: every preset with its study, needs and whether this build can run it
/// here (at the default scale), and below it why each unavailable one is not.
pub fn list(dirs: &[String], env: &ResolveEnv) -> Result<String> {
    let mut rows = vec![];
    let mut why = vec![];
    let mut notes = vec![];
    for p in preset::all()? {
        let status = match p.check(Scale::Default, dirs, env) {
            Ok(built) => {
                notes.extend(built.notes.iter().map(|n| format!("  {:<15} {n}\n", p.meta.id)));
                "available".to_string()
            }
            Err(reason) => {
                why.push(format!("  {:<15} {reason}\n", p.meta.id));
                "unavailable".to_string()
            }
        };
        let uses = p.uses();
        rows.push(vec![
            p.meta.id.clone(),
            status,
            if uses.is_empty() { "-".into() } else { uses.join(", ") },
            p.meta.study.clone(),
            p.meta.title.clone(),
        ]);
    }
    let mut out = report::text_table(&["id", "status", "needs", "study", "title"], &rows, &[]);
    if !why.is_empty() {
        out += "\nwhy unavailable:\n";
        out += &why.concat();
    }
    if !notes.is_empty() {
        out += "\nnotes:\n";
        out += &notes.concat();
    }
    out += "\nrun one: iolab reproduce ID [--scale quick|default|paper] [--dir DIR]...; see its file: iolab reproduce ID --print\n";
    Ok(out)
}

/// The L1/L4 experiments of a store, newest first; an error when there are none.
pub fn compare_experiments(store: &Store) -> Result<Vec<crate::results::ExperimentResult>> {
    let mut exps = vec![];
    for id in store.ids_by_preset(&["L1", "L4"])? {
        exps.push(store.load(&id)?);
    }
    if exps.is_empty() {
        return Err(Error::NotFound(format!(
            "the store {} holds no L1 or L4 experiment: run `iolab reproduce L1` on each host, then `iolab results import` their stores",
            store.path().display()
        )));
    }
    Ok(exps)
}

/// `iolab results compare --by host`.
pub fn compare(store: &Store, format: &str, stdout: &mut dyn Write) -> Result<()> {
    let text = if format == "html" {
        report::html::compare::page(store)?
    } else {
        compare::render(&compare::rows(&compare_experiments(store)?), format)?
    };
    stdout.write_all(text.as_bytes()).map_err(out_err)
}

/// `iolab results import PATH` into the store at `db`.
pub fn import(db: &Path, path: &Path, stdout: &mut dyn Write) -> Result<()> {
    let r = import::import_path(db, path)?;
    let text = format!(
        "imported {}: {} experiment(s), {} new; {} run(s) added, {} already present\n",
        path.display(),
        r.experiments_seen,
        r.experiments_added,
        r.runs_added,
        r.runs_skipped
    );
    stdout.write_all(text.as_bytes()).map_err(out_err)
}
