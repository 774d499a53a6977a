//! The tuning section of an experiment's HTML page (an `iolab tune` run): the job, budget,
//! space and rule, the ranked table of every candidate, the verdict, the gain over the
//! baseline and the recommended spec with its command line; the race's plot is among the
//! page's plots.

use super::{esc, facts, table};
use crate::report::tune::{HEADERS, gain_text, header, rows, verdict_text};
use crate::results::tune::Tuning;

/// The section, `id="tuning"`.
pub fn section(t: &Tuning) -> String {
    let mut s = String::from("<section id=\"tuning\">\n<h2>Tuning</h2>\n");
    let mut f: Vec<(&str, String)> = header(t).into_iter().map(|(k, v)| (k, esc(&v))).collect();
    f.push(("verdict", format!("<strong>{}</strong>", esc(&verdict_text(t)))));
    if let Some(g) = gain_text(t) {
        f.push(("gain", esc(&g)));
    }
    s += &facts(&f);
    let trs: Vec<Vec<String>> = rows(t).iter().map(|r| r.iter().map(|c| esc(c)).collect()).collect();
    s += &table("tuning", &HEADERS, &trs, &[0, 2, 3, 5]);
    if let Some(r) = &t.recommended {
        s += &format!(
            "<h3>Recommended</h3>\n<pre class=\"spec\">{}</pre>\n<p>The same as a command line: <code>{}</code></p>\n",
            esc(&r.toml),
            esc(&r.command)
        );
    }
    if !t.not_candidates.is_empty() {
        s += "<p class=\"note\">Combinations that are no candidate (how many, and why):</p><ul class=\"note\">";
        for line in &t.not_candidates {
            s += &format!("<li>{}</li>", esc(line));
        }
        s += "</ul>\n";
    }
    s + "<p class=\"note\">Each candidate is one point of this experiment: its runs are in the tables below.</p>\n</section>\n"
}
