//! Before and after as Markdown: the settings that differ as a list, the shared phases as a
//! table, the notes beneath.

use std::io::Write;

use super::{Comparison, HEADERS, cells, head, notes};
use crate::error::Result;
use crate::report::{Exporter, markdown_table, write_err};

pub struct Markdown;

impl Exporter<Comparison> for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, c: &Comparison, out: &mut dyn Write) -> Result<()> {
        // Markdown joins lines of a paragraph: each line of the head and notes ends a line.
        let lines = |s: String| s.lines().map(|l| format!("{l}  \n")).collect::<String>();
        let mut t = lines(head(c, "- ")) + "\n";
        if !c.shared.is_empty() {
            t += &(markdown_table(&HEADERS, &cells(c)) + "\n");
        }
        t += &lines(notes(c, "- "));
        out.write_all(t.as_bytes()).map_err(write_err)
    }
}
