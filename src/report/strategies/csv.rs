//! The strategy tables as CSV: the Figure 1 cells, one row each.

use std::io::Write;

use super::{figure1, mechanism};
use crate::error::Result;
use crate::report::{Exporter, write_err};
use crate::results::ExperimentResult;

pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        let mut w = ::csv::Writer::from_writer(out);
        w.write_record([
            "table",
            "launcher",
            "data",
            "comptime",
            "engine",
            "mechanism",
            "strategy",
            "time_s",
            "runs",
            "sync",
            "sync_bytes",
            "window_bytes",
            "point",
            "bytes",
            "bytes_per_s",
            "best_in_row",
        ])
        .map_err(write_err)?;
        for t in &figure1(exp) {
            for ((r, c), x) in &t.cells {
                let (e, s) = &t.cols[*c];
                w.write_record([
                    t.title.clone(),
                    t.launcher.clone(),
                    t.data.clone(),
                    t.rows[*r].clone(),
                    e.clone(),
                    mechanism(e),
                    s.clone(),
                    x.time_s.to_string(),
                    x.runs.to_string(),
                    x.sync.clone(),
                    x.sync_bytes.map(|n| n.to_string()).unwrap_or_default(),
                    x.window_bytes.map(|n| n.to_string()).unwrap_or_default(),
                    x.point.to_string(),
                    x.bytes.to_string(),
                    (x.bytes as f64 / x.time_s).to_string(),
                    x.best.to_string(),
                ])
                .map_err(write_err)?;
            }
        }
        w.flush().map_err(write_err)
    }
}
