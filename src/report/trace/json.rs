//! Traces as JSON lines: one object per op.

use std::io::Write;

use super::{Traces, each_line};
use crate::error::Result;
use crate::report::{Exporter, write_err};

pub struct Json;

impl Exporter<Traces<'_>> for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, t: &Traces<'_>, out: &mut dyn Write) -> Result<()> {
        each_line(t, |line| {
            crate::json::to_writer(&mut *out, line).map_err(write_err)?;
            out.write_all(b"\n").map_err(write_err)
        })?;
        out.flush().map_err(write_err)
    }
}
