//! The per-host table as Markdown, with what the figures are beneath.

use std::io::Write;

use super::{Row, cells, footer, headers};
use crate::error::Result;
use crate::report::{Exporter, markdown_table, write_err};

pub struct Markdown;

impl Exporter<[Row]> for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        let table: Vec<Vec<String>> = rows.iter().map(cells).collect();
        let text = markdown_table(&headers(), &table) + "\n" + &footer(rows);
        out.write_all(text.as_bytes()).map_err(write_err)
    }
}
