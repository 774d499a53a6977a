//! A tuning as JSON: the record the store keeps (`docs/tune.md`, "JSON"), pretty-printed.

use std::io::Write;

use crate::error::Result;
use crate::report::{Exporter, write_err};
use crate::results::tune::Tuning;

pub struct Json;

impl Exporter<Tuning> for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, t: &Tuning, out: &mut dyn Write) -> Result<()> {
        crate::json::to_writer_pretty(&mut *out, t).map_err(write_err)?;
        out.write_all(b"\n").map_err(write_err)
    }
}
