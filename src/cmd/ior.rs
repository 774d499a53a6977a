//! `iolab ior ARGS...`: an IOR command line run as an iolab experiment (under mpirun where
//! IOR would run), its output iolab's or, with `--format ior`, shaped like IOR's.

use std::io::Write;

use crate::error::Result;
use crate::frontend::{self, ior};

use super::{put, translated};

pub fn cmd_ior(words: &[String], stdout: &mut dyn Write) -> Result<()> {
    let (rest, own) = frontend::split_own(words)?;
    if own.help {
        return put(stdout, &ior::help());
    }
    let t = ior::translate(&rest, ior::Ranks::here())?;
    translated::run_translation(t, &own, stdout)
}
