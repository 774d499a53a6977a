//! `iolab mdtest ARGS...`: an mdtest command line run as an iolab experiment (under mpirun
//! where mdtest would run), its output iolab's or, with `--format mdtest`, shaped like mdtest's.

use std::io::Write;

use crate::error::Result;
use crate::frontend::{self, mdtest};

use super::{put, translated};

pub fn cmd_mdtest(words: &[String], stdout: &mut dyn Write) -> Result<()> {
    let (rest, own) = frontend::split_own(words)?;
    if own.help {
        return put(stdout, &mdtest::help());
    }
    translated::run_translation(mdtest::translate(&rest)?, &own, stdout)
}
