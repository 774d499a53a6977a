//! The strategy tables as Markdown: the Figure 1 tables (best cells in bold), then where each
//! role's time went.

use std::io::Write;

use super::{FIG1_ABOUT, Fig1, OVERLAP_NOTE, figure1, headers, overlap_rows};
use crate::error::Result;
use crate::report::{Exporter, markdown_table, markdown_table_of, write_err};
use crate::results::ExperimentResult;
use crate::text::markdown_escape as md;

pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        let mut text = figure1_markdown(&figure1(exp));
        let (h, rows) = overlap_rows(exp);
        if !rows.is_empty() {
            text += &format!("\n### Overlap\n\n{}", markdown_table(&h, &rows));
            text += &format!("\n{OVERLAP_NOTE}\n");
        }
        out.write_all(text.as_bytes()).map_err(write_err)
    }
}

/// The Figure 1 tables as Markdown (best cells in bold).
fn figure1_markdown(tables: &[Fig1]) -> String {
    let mut out = format!(
        "Benson et al. 2003, Fig. 1 layout: {FIG1_ABOUT}; **bold**: the best of its row and mechanism.\n"
    );
    for t in tables {
        out += &format!("\n### {}\n\n", md(&t.title));
        let h = headers(t);
        let hs: Vec<&str> = h.iter().map(String::as_str).collect();
        let rows = t.grid(|x| match x {
            None => "-".into(),
            Some(x) if x.best => {
                let l = x.label();
                let (time, rest) = l.split_once(' ').unwrap_or((&l, ""));
                format!("**{}** {}", md(time), md(rest))
            }
            Some(x) => md(&x.label()),
        });
        out += &markdown_table_of(&hs, &rows);
    }
    out
}
