//! `iolab fio JOBFILE`: a fio job file run as an iolab experiment, with every `iolab run`
//! option over its translation (`--reps`, `--trace`, `--db`, `--json`, ...), or printed as the
//! experiment file it becomes (`--print`).

use std::io::Write;

use crate::cli::FioArgs;
use crate::error::{Error, Result};
use crate::frontend::{Own, fio};

use super::translated;

pub fn cmd_fio(args: FioArgs, stdout: &mut dyn Write) -> Result<()> {
    let spec = &args.run.spec;
    let Some(file) = spec.spec.as_deref() else {
        return Err(Error::spec("JOBFILE", "", "iolab fio needs a fio job file"));
    };
    if !spec.sweep.is_empty() || !spec.zip.is_empty() {
        return Err(Error::spec(
            "--sweep",
            spec.sweep.join(" "),
            "not with iolab fio: --print the experiment, then iolab run FILE.toml --sweep ...",
        ));
    }
    if args.run.compare_to.is_some() {
        return Err(Error::spec(
            "--compare-to",
            "",
            "not with iolab fio: iolab results compare ID last after it",
        ));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::spec("JOBFILE", file.display(), format!("cannot be read: {e}")))?;
    let mut t = fio::translate(&text, file, &|k| std::env::var(k).ok())?;
    for (k, v) in &spec.flags.0 {
        t.experiment.params.set(k, v.clone())?;
        t.origins.insert(k.clone(), format!("iolab's --{} {}", k.replace('_', "-"), v.join(",")));
    }
    let out = &args.run.out;
    let own = Own {
        json: out.json,
        csv: out.csv,
        db: out.db.clone(),
        no_store: out.no_store,
        quiet: out.quiet,
        format: None,
        print: args.print,
        set: spec.set.clone(),
        help: false,
    };
    translated::run_translation_as(t, &own, out, args.run.ram.as_deref(), stdout)
}
