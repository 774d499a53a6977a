//! The per-host table as text, figures right-aligned, with what they are beneath.

use std::io::Write;

use super::{HOST_HEADERS, Row, cells, footer, headers};
use crate::error::Result;
use crate::report::{Exporter, text_table, write_err};

pub struct Text;

impl Exporter<[Row]> for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        let headers = headers();
        let figure_cols: Vec<usize> = (HOST_HEADERS.len()..headers.len()).collect();
        let table: Vec<Vec<String>> = rows.iter().map(cells).collect();
        let text = text_table(&headers, &table, &figure_cols) + "\n" + &footer(rows);
        out.write_all(crate::text::terminal_safe(&text).as_bytes()).map_err(write_err)
    }
}
