//! The commands behind the command line, one file each; here the dispatch and what they share
//! (opening the store, the output format, writing to stdout). Commands write machine output
//! only to stdout, progress and notes to stderr.

use std::io::Write;
use std::path::PathBuf;

pub mod calibrate;
pub mod clean;
pub mod compare;
pub mod engines;
pub mod fio;
pub mod info;
pub mod ior;
pub mod mdtest;
pub mod plan;
pub mod plot;
pub mod report;
pub mod reproduce;
pub mod results;
pub mod run;
pub mod translated;
pub mod tune;

use crate::cli::{Cli, Command, RunArgs};
use crate::error::Result;
use crate::experiment::{Built, ResolveEnv};
use crate::report::Format;
use crate::store::{self, Store};

/// Runs one command line.
pub fn main(cli: Cli) -> Result<()> {
    // Child processes, not under the stdout lock below: a traced worker's writer thread
    // writes to stdout too.
    match cli.command {
        Command::Worker => std::process::exit(crate::launch::process::child_main()),
        Command::StrategyWorker => std::process::exit(crate::launch::strategy_process::child_main()),
        _ => {}
    }
    if let Err(e) = crate::launch::refuse_launcher_without_mpi() {
        // Said once, by the first process; the others end with the same code.
        if crate::launch::launcher_rank() != 0 {
            std::process::exit(e.exit_code());
        }
        return Err(e);
    }
    // Commands that only read and print stop at once on a stop signal; the others (run,
    // reproduce, tune, import, plan's calibration, clean) stop at their own checks, to keep
    // what was measured and clean up.
    use crate::cli::ResultsCommand;
    match &cli.command {
        Command::Report(_) | Command::Plot(_) | Command::Info(_) => crate::env::signals::exit_on_stop(),
        Command::Results(r) if !matches!(r.command, ResultsCommand::Import { .. }) => {
            crate::env::signals::exit_on_stop()
        }
        _ => {}
    }
    let mut stdout = std::io::stdout().lock();
    let done = match cli.command {
        Command::Run(args) => run::cmd_run(args, &mut stdout),
        Command::Plan(args) => plan::cmd_plan(args, &mut stdout),
        Command::Results(args) => results::cmd_results(args, &mut stdout),
        Command::Info(args) => info::cmd_info(args, &mut stdout),
        Command::Engines => engines::cmd_engines(&mut stdout),
        Command::Reproduce(args) => reproduce::cmd_reproduce(args, &mut stdout),
        Command::Plot(args) => plot::cmd_plot(args, &mut stdout),
        Command::Report(args) => report::cmd_report(args, &mut stdout),
        Command::Tune(args) => tune::cmd_tune(args, &mut stdout),
        Command::Worker | Command::StrategyWorker => unreachable!("handled above"),
        Command::Clean(args) => clean::cmd_clean(args, &mut stdout),
        Command::Ior(args) => ior::cmd_ior(&args.args, &mut stdout),
        Command::Mdtest(args) => mdtest::cmd_mdtest(&args.args, &mut stdout),
        Command::Fio(args) => fio::cmd_fio(args, &mut stdout),
    };
    spool_fault(done)
}

/// A command that read workers' results back from the spool and could not (an I/O error of
/// the temporary directory's disk, the spool truncated under it) showed what it could read:
/// it ends failed, saying so (after its own error, if it had one, which names the spool when
/// storing met it first).
fn spool_fault(done: Result<()>) -> Result<()> {
    let Some(fault) = crate::results::take_spool_fault() else { return done };
    let what = format!(
        "{fault}; what is shown above lacks the workers' results that could not be read back (the runs stored before are in the store)"
    );
    match done {
        Ok(()) => Err(crate::error::Error::Run(what)),
        Err(e) => {
            eprintln!("error: {what}");
            Err(e)
        }
    }
}

/// Writes `text` to stdout; a failed write is an error of the command.
fn put(stdout: &mut dyn Write, text: &str) -> Result<()> {
    stdout.write_all(text.as_bytes()).map_err(crate::report::write_err)
}

/// Runs `write` on `stdout` through one buffer of 64 KiB, flushed when it returns: stdout is
/// line-buffered, so a JSON document, a CSV or a trace written to it directly costs one
/// write(2) per line (about 460 for a small run's JSON).
fn buffered(stdout: &mut dyn Write, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout);
    write(&mut out)?;
    out.flush().map_err(crate::report::write_err)
}

/// The format `--json` / `--csv` / `--explain` ask for (the brief table when none).
fn format_of(json: bool, csv: bool, explain: bool) -> Format {
    if json {
        Format::Json
    } else if csv {
        Format::Csv
    } else if explain {
        Format::Explain
    } else {
        Format::Table
    }
}

/// The rates this host measured, from the store the output arguments name (none with
/// `--no-store`), for estimates.
pub fn rates(out: &crate::cli::OutputArgs) -> crate::experiment::estimate::Rates {
    use crate::experiment::estimate::Rates;
    if out.no_store {
        return Rates::none();
    }
    match db_path(&out.db) {
        Ok(db) => Rates::of_store(&db),
        Err(_) => Rates::none(),
    }
}

/// The store `--db` names, else the default one (an error when there is none).
pub fn db_path(db: &Option<PathBuf>) -> Result<PathBuf> {
    match db {
        Some(p) => Ok(p.clone()),
        None => store::default_path(),
    }
}

/// The results store `--db` names, else the default one.
pub fn open_store(db: &Option<PathBuf>) -> Result<Store> {
    Store::open(&db_path(db)?)
}

/// The store for a command that only reads: never created, opened read-only.
pub fn read_store(db: &Option<PathBuf>) -> Result<Store> {
    Store::open_read_only(&db_path(db)?)
}

/// The experiment the flags of `run` and `plan` describe, every point resolved (with no
/// parameters at all: the default experiment, named `default`).
fn build(args: &RunArgs) -> Result<Built> {
    let env = ResolveEnv::with_ram(args.ram.as_deref())?;
    let mut exp = args.spec.experiment(env.ram_bytes)?;
    if exp.params.0.is_empty() {
        exp.params.set_one("name", "default")?;
    }
    exp.build(&env)
}

#[cfg(test)]
mod tests {
    use std::io::{LineWriter, Write};

    /// What reaches the file descriptor: the bytes, and one count per write(2).
    #[derive(Default)]
    struct Fd {
        bytes: Vec<u8>,
        writes: usize,
    }

    impl Write for Fd {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.writes += 1;
            self.bytes.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(out: &mut dyn Write) -> crate::error::Result<()> {
        for i in 0..3000 {
            writeln!(out, "  \"line\": {i},").map_err(crate::report::write_err)?;
        }
        Ok(())
    }

    #[test]
    fn a_document_reaches_a_line_buffered_stdout_in_few_writes() {
        let mut direct = LineWriter::new(Fd::default());
        lines(&mut direct).unwrap();
        assert_eq!(direct.get_ref().writes, 3000, "line-buffered: one write per line");
        let mut stdout = LineWriter::new(Fd::default());
        super::buffered(&mut stdout, lines).unwrap();
        let fd = stdout.get_ref();
        assert_eq!(fd.bytes, direct.get_ref().bytes, "the same bytes, all of them flushed");
        let pieces = fd.bytes.len().div_ceil(64 << 10);
        assert!(fd.writes <= 2 * pieces, "{} writes for {} bytes", fd.writes, fd.bytes.len());
    }
}
