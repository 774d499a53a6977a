//! Before and after as text: which is which and the settings that differ, the table of shared
//! phases, then what is in one only, the method and why a verdict is inconclusive.

use std::io::Write;

use super::{Comparison, HEADERS, cells, head, notes};
use crate::error::Result;
use crate::report::{Exporter, text_table, write_err};

pub struct Text;

impl Exporter<Comparison> for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, c: &Comparison, out: &mut dyn Write) -> Result<()> {
        let mut t = head(c, "  ");
        if !c.shared.is_empty() {
            t += &text_table(&HEADERS, &cells(c), &[1, 2, 3, 4, 5, 7, 8]);
        }
        t += &notes(c, "  ");
        out.write_all(t.as_bytes()).map_err(write_err)
    }
}
