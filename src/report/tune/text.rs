//! A tuning as text: the header (job, host, budget, space, rule), the ranked table, the
//! verdict, the gain over the baseline and the recommended spec with its command line; for a
//! tuning with no run yet (`iolab tune --list`), the space: every candidate and what is none.

use std::io::Write;

use super::{HEADERS, gain_text, header, more_budget_text, name, rows, verdict_text};
use crate::error::Result;
use crate::report::{Exporter, text_table, write_err};
use crate::results::tune::Tuning;
use crate::text::wrap;

pub struct Text;

impl Exporter<Tuning> for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, t: &Tuning, out: &mut dyn Write) -> Result<()> {
        let text = if t.rounds.is_empty() && t.ended.is_none() { space(t) } else { render(t) };
        out.write_all(crate::text::terminal_safe(&text).as_bytes()).map_err(write_err)
    }
}

fn head(t: &Tuning, skip: &[&str]) -> String {
    let mut s = String::new();
    for (k, v) in header(t).into_iter().filter(|(k, _)| !skip.contains(k)) {
        s += &format!("{k:<9} {v}\n");
    }
    s
}

/// The tuning's result.
pub fn render(t: &Tuning) -> String {
    let mut s = head(t, &[]);
    s += "\n";
    s += &text_table(&HEADERS, &rows(t), &[0, 2, 3, 5]);
    s += "\n";
    s += &wrap(&verdict_text(t), 100, "verdict: ", 9);
    if let Some(g) = gain_text(t) {
        s += &wrap(&g, 100, "gain:    ", 9);
    }
    if let Some(m) = more_budget_text(t) {
        s += &wrap(&m, 100, "budget:  ", 9);
    }
    if let Some(r) = &t.recommended {
        s += "\nrecommended (as a file: iolab tune ... --save-spec FILE):\n";
        for line in r.toml.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            s += &format!("  {line}\n");
        }
        s += &format!("the same as a command line:\n  {}\n", r.command);
    }
    s
}

/// The space, before any run.
fn space(t: &Tuning) -> String {
    let mut s = head(t, &["host", "budget"]);
    s += "\n";
    let rows: Vec<Vec<String>> = (0..t.candidates.len())
        .map(|i| {
            let vals: Vec<String> = t.candidates[i].values.iter().map(|(k, v)| format!("{k}={v}")).collect();
            vec![(i + 1).to_string(), name(t, i), vals.join(" ")]
        })
        .collect();
    s += &text_table(&["#", "candidate", "values"], &rows, &[0]);
    if !t.not_candidates.is_empty() {
        s += "\nno candidate (combinations refused, how many, and why):\n";
        for line in &t.not_candidates {
            s += &format!("  {line}\n");
        }
    }
    s
}
