//! JSON export: the versioned contract of `docs/json.md`, pretty-printed.

use std::io::Write;

use super::{Exporter, write_err};
use crate::error::Result;
use crate::results::ExperimentResult;

pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        crate::json::to_writer_pretty(&mut *out, exp).map_err(write_err)?;
        writeln!(out).map_err(write_err)
    }
}
