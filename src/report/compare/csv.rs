//! The per-host table as CSV: one record per host and file system, figures in MB/s, the
//! flagged figures named.

use std::io::Write;

use super::{FIGURES, Row, mb};
use crate::error::Result;
use crate::report::{Exporter, write_err};

/// The figures' column names.
const CSV_NAMES: [&str; 6] = [
    "first_read_mb_per_s",
    "second_read_mb_per_s",
    "write_plain_mb_per_s",
    "commit_each_write_mb_per_s",
    "commit_at_end_mb_per_s",
    "commit_at_end_large_mb_per_s",
];

pub struct Csv;

impl Exporter<[Row]> for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        let mut w = ::csv::Writer::from_writer(out);
        let mut head = vec!["host", "os", "cpus", "cpu_mhz", "file_system"];
        head.extend(CSV_NAMES);
        head.extend(["large_file_bytes", "statistic", "flagged", "experiment_id"]);
        w.write_record(&head).map_err(write_err)?;
        for r in rows {
            let mut rec = vec![
                r.hostname.clone(),
                r.os.clone(),
                r.cpus.to_string(),
                format!("{:.0}", r.cpu_mhz),
                r.file_system.clone(),
            ];
            rec.extend(r.figures.iter().map(|f| f.map(|f| mb(f.bytes_per_s)).unwrap_or_default()));
            let flagged: Vec<&str> = r
                .figures
                .iter()
                .zip(FIGURES)
                .filter(|(f, _)| f.is_some_and(|f| f.flagged))
                .map(|(_, n)| n)
                .collect();
            rec.extend([
                r.large_file_bytes.map(|b| b.to_string()).unwrap_or_default(),
                r.statistic.name().to_string(),
                flagged.join("; "),
                r.experiment_id.clone(),
            ]);
            w.write_record(&rec).map_err(write_err)?;
        }
        w.flush().map_err(write_err)
    }
}
