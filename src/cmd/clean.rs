//! `iolab clean`: remove iolab work directories left behind (by a crash, kill -9 or --keep);
//! nothing else.

use std::io::Write;

use crate::cli::CleanArgs;
use crate::error::{Error, Result};
use crate::target::clean::{CleanOpts, clean};

use super::put;

/// `iolab clean DIR...`: cleans every directory, reporting as it goes; the first error is the
/// command's (with how many more there were).
pub fn cmd_clean(args: CleanArgs, stdout: &mut dyn Write) -> Result<()> {
    let opts = CleanOpts { dry_run: args.dry_run, force: args.force };
    let mut errors = vec![];
    for d in &args.dirs {
        let mut report = String::new();
        let r = clean(d, opts, &mut report);
        put(stdout, &report)?;
        errors.extend(r?);
        // A stop signal ends the command: its exit code is the signal's.
        if let Some(i) = errors.iter().position(|e| matches!(e, Error::Interrupted(_))) {
            return Err(errors.swap_remove(i));
        }
    }
    let n = errors.len();
    match errors.into_iter().next() {
        None => Ok(()),
        Some(e) if n == 1 => Err(e),
        Some(e) => Err(Error::Run(format!("{e} (and {} more errors)", n - 1))),
    }
}
