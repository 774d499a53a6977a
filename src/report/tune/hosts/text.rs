//! The tuned jobs across hosts as text: per job a heading and one row per host.

use std::io::Write;

use super::{FOOTER, HEADERS, Row, by_job, cells};
use crate::error::Result;
use crate::report::{Exporter, text_table, write_err};

pub struct Text;

impl Exporter<[Row]> for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        let mut s = String::new();
        for (job, rs) in by_job(rows) {
            s += &format!("tuned job {job}\n");
            let table: Vec<Vec<String>> = rs.iter().map(|r| cells(r)).collect();
            s += &text_table(&HEADERS, &table, &[3, 5]);
            s += "\n";
        }
        s += FOOTER;
        s += "\n";
        out.write_all(crate::text::terminal_safe(&s).as_bytes()).map_err(write_err)
    }
}
