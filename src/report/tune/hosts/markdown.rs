//! The tuned jobs across hosts as Markdown: per job a heading and a table, what the figures
//! are beneath.

use std::io::Write;

use super::{FOOTER, HEADERS, Row, by_job, cells};
use crate::error::Result;
use crate::report::{Exporter, markdown_table, write_err};

pub struct Markdown;

impl Exporter<[Row]> for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        let mut s = String::new();
        for (job, rs) in by_job(rows) {
            s += &format!("**tuned job** {}\n\n", crate::text::markdown_escape(job));
            let table: Vec<Vec<String>> = rs.iter().map(|r| cells(r)).collect();
            s += &markdown_table(&HEADERS, &table);
            s += "\n";
        }
        s += FOOTER;
        s += "\n";
        out.write_all(s.as_bytes()).map_err(write_err)
    }
}
