//! What the commands that run other tools' jobs share (`iolab ior`, `iolab mdtest`,
//! `reproduce IO500 --ini`): iolab's own options over a translation, its notes, `--print`, a
//! refusal naming the tool's option a parameter came from, and the run in the asked format.

use std::io::Write;

use crate::cli::OutputArgs;
use crate::error::{Error, Result};
use crate::experiment::{Experiment, ResolveEnv};
use crate::frontend::{Own, Translation};
use crate::report::Format;

use super::{put, run};

/// The format `--format`, `--json` or `--csv` ask for (the table when none).
pub fn format_of(own: &Own) -> Result<Format> {
    Ok(match own.format.as_deref() {
        None if own.json => Format::Json,
        None if own.csv => Format::Csv,
        None | Some("table") => Format::Table,
        Some("json") => Format::Json,
        Some("csv") => Format::Csv,
        Some("ior") => Format::Ior,
        Some("mdtest") => Format::Mdtest,
        Some(other) => {
            return Err(Error::spec("--format", other, "expected table, json, csv, ior or mdtest"));
        }
    })
}

/// The output arguments iolab's own options on the tool's command line stand for.
pub fn output_args(own: &Own) -> OutputArgs {
    // The progress line keeps its default: a plain line every 10 s when stderr is not a terminal.
    OutputArgs {
        json: own.json,
        csv: own.csv,
        explain: false,
        db: own.db.clone(),
        no_store: own.no_store,
        quiet: own.quiet,
        progress_every: None,
    }
}

/// A resolution error of a parameter that came from the tool's options names them too.
pub fn blame(e: Error, t: &Translation) -> Error {
    match e {
        Error::Spec { field, value, reason } => {
            let key = field.split(' ').next().unwrap_or(&field).to_string();
            match t.origins.get(&key) {
                Some(from) => {
                    Error::Spec { field: format!("{field} (from {} {from})", t.tool), value, reason }
                }
                None => Error::Spec { field, value, reason },
            }
        }
        other => other,
    }
}

/// Runs (or with `--print` prints) a translation with iolab's own options over it.
pub fn run_translation(t: Translation, own: &Own, stdout: &mut dyn Write) -> Result<()> {
    run_translation_as(t, own, &output_args(own), None, stdout)
}

/// [`run_translation`] with all of `iolab run`'s output options (`--explain`,
/// `--progress-every`) and its `--ram`, for a command whose line is iolab's own (`iolab fio`).
pub fn run_translation_as(
    mut t: Translation,
    own: &Own,
    out: &OutputArgs,
    ram: Option<&str>,
    stdout: &mut dyn Write,
) -> Result<()> {
    for kv in &own.set {
        let (k, _) = kv.split_once('=').ok_or_else(|| Error::spec("--set", kv, "expected KEY=VALUE"))?;
        t.experiment.params.set_kv(kv)?;
        t.origins.insert(k.trim().to_string(), format!("--set {kv}"));
    }
    let format = if out.explain { Format::Explain } else { format_of(own)? };
    if own.print {
        return put(stdout, &t.toml());
    }
    let env = ResolveEnv::with_ram(ram)?;
    let exp: &Experiment = &t.experiment;
    let built = exp.build(&env).map_err(|e| blame(e, &t))?;
    if !own.quiet {
        for n in &t.notes {
            eprintln!("note: {n}");
        }
    }
    run::run_points_as(built, out, format, stdout).map(|_| ())
}
