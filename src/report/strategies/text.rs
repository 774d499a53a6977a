//! The strategy tables as text: the Figure 1 tables, then where each role's time went; and
//! the per-point times, overlap and Figure 1 tables under the terminal table's header.

use std::io::Write;

use super::{
    FIG1_ABOUT, Fig1, MAX_OVERLAP_POINTS, OVERLAP_NOTE, figure1, headers, overlap_rows, point_note,
    point_rows,
};
use crate::error::Result;
use crate::report::{Exporter, text_table, write_err};
use crate::results::ExperimentResult;

pub struct Text;

impl Exporter for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        let text = figure1_text(&figure1(exp)) + &overlap_text(exp);
        out.write_all(crate::text::terminal_safe(text.trim_start_matches('\n')).as_bytes()).map_err(write_err)
    }
}

/// The Figure 1 tables as text.
fn figure1_text(tables: &[Fig1]) -> String {
    if tables.is_empty() {
        return String::new();
    }
    let mut out =
        format!("\nBenson et al. 2003, Fig. 1 layout: {FIG1_ABOUT}; * the best of its row and mechanism\n");
    for t in tables {
        out += &format!("{}\n", t.title);
        let h = headers(t);
        let hs: Vec<&str> = h.iter().map(String::as_str).collect();
        let rows =
            t.grid(|x| x.map_or("-".into(), |x| format!("{}{}", x.label(), if x.best { " *" } else { "" })));
        out += &text_table(&hs, &rows, &[]);
    }
    out
}

/// Everything for a strategy experiment under the terminal table's header.
pub fn render_body(exp: &ExperimentResult) -> String {
    let (h, rows) = point_rows(exp);
    let hs: Vec<&str> = h.iter().map(String::as_str).collect();
    let first = exp.design.axes.len() + 1;
    let mut out = text_table(&hs, &rows, &(first..first + 8).collect::<Vec<_>>());
    out += &format!("\n{}\n", point_note(exp));
    out += &overlap_text(exp);
    out += &figure1_text(&figure1(exp));
    out
}

/// The overlap table as text.
fn overlap_text(exp: &ExperimentResult) -> String {
    let (h, rows) = overlap_rows(exp);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = "\n".to_string();
    out += &text_table(&h, &rows, &(3..12).collect::<Vec<_>>());
    out += &format!("{OVERLAP_NOTE}\n");
    if exp.points.len() > MAX_OVERLAP_POINTS {
        out +=
            "(the points that won a cell of the Fig. 1 tables; every point: iolab results show ID --csv)\n";
    }
    out
}
