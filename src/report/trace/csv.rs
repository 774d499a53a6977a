//! Traces as CSV: a header, then one row per op.

use std::io::Write;

use super::{Traces, each_line};
use crate::error::Result;
use crate::report::{Exporter, write_err};

pub struct Csv;

impl Exporter<Traces<'_>> for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, t: &Traces<'_>, out: &mut dyn Write) -> Result<()> {
        let mut w = ::csv::Writer::from_writer(out);
        each_line(t, |line| w.serialize(line).map_err(write_err))?;
        w.flush().map_err(write_err)
    }
}
