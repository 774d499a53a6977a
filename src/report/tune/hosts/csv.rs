//! The tuned jobs across hosts as CSV: one record per job and host, times in seconds.

use std::io::Write;

use super::Row;
use crate::error::Result;
use crate::report::{Exporter, write_err};

pub struct Csv;

impl Exporter<[Row]> for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record([
            "job",
            "host",
            "recommended",
            "verdict",
            "mean_s",
            "ci95_lo_s",
            "ci95_hi_s",
            "speedup",
            "candidates",
            "experiment",
        ])
        .map_err(write_err)?;
        let num = |x: Option<f64>| x.map(|v| format!("{v:.6}")).unwrap_or_default();
        for r in rows {
            w.write_record([
                r.job.clone(),
                r.hostname.clone(),
                r.winner.clone(),
                r.verdict.clone(),
                num(r.mean_s),
                num(r.ci95_s.map(|c| c[0])),
                num(r.ci95_s.map(|c| c[1])),
                num(r.speedup),
                r.candidates.to_string(),
                r.experiment_id.clone(),
            ])
            .map_err(write_err)?;
        }
        w.flush().map_err(write_err)
    }
}
