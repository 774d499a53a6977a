//! Before and after as one JSON document (`schema`: `iolab.compare/1`): both sides, the
//! settings that differ, every shared phase with the runs' figures, its ratio, interval and
//! verdict, and the phases in one only. Figures in bytes/s (`unit` says ops/s for metadata).

use std::io::Write;

use serde::Serialize;

use super::Comparison;
use crate::error::Result;
use crate::report::{Exporter, write_err};

pub struct Json;

/// The document's schema name and version.
pub const SCHEMA: &str = "iolab.compare/1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    #[serde(flatten)]
    comparison: &'a Comparison,
}

impl Exporter<Comparison> for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, c: &Comparison, out: &mut dyn Write) -> Result<()> {
        crate::json::to_writer_pretty(&mut *out, &Doc { schema: SCHEMA, comparison: c })
            .map_err(write_err)?;
        out.write_all(b"\n").map_err(write_err)
    }
}
