//! `iolab reproduce`: the studies' presets: list them, print one as an experiment file, or run
//! one.

use std::io::Write;

use crate::cli::ReproduceArgs;
use crate::error::{Error, Result};
use crate::experiment::ResolveEnv;
use crate::experiment::preset::{self, Scale};
use crate::report;

use super::{open_store, put, results, run};

/// `iolab reproduce`: list the presets, print one, or run one.
pub fn cmd_reproduce(args: ReproduceArgs, stdout: &mut dyn Write) -> Result<()> {
    let env = ResolveEnv::with_ram(args.ram.as_deref())?;
    if args.list {
        return put(stdout, &list(&args.dirs, &env)?);
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
        return put(stdout, &text);
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
        exp.params.set_kv(kv)?;
    }
    let built = exp.build(&env).map_err(unavailable)?;
    run::run_points(built, &args.out, stdout)?;
    if p.meta.id == "L4" && !args.out.no_store && !args.out.json && !args.out.csv {
        let store = open_store(&args.out.db)?;
        put(stdout, "\n")?;
        results::compare(&store, "text", stdout)?;
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
