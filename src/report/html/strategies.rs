//! The strategies section of an experiment's HTML page: the run's time per point, the study's
//! Figure 1 tables (best time per strategy, compute time and write mechanism, with the sync
//! size and window that gave it) and where each role's time went.

use super::{esc, table};
use crate::report::strategies::{self, figure1};
use crate::results::ExperimentResult;

/// The section, or nothing when the experiment ran no strategy.
pub fn section(exp: &ExperimentResult) -> String {
    if !strategies::any(exp) {
        return String::new();
    }
    let mut s =
        String::from("<section id=\"strategies\">\n<h2>Strategies (Benson, Long and Pacheco 2003)</h2>\n");
    let (h, rows) = strategies::point_rows(exp);
    let hs: Vec<&str> = h.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| esc(c)).collect()).collect();
    let first = exp.design.axes.len() + 1;
    s += &table("strategy-times", &hs, &rows, &(first..first + 8).collect::<Vec<_>>());
    s += &format!("<p class=\"note\">{}</p>\n", esc(&strategies::point_note(exp)).replace('\n', "<br>"));
    let tables = figure1(exp);
    if !tables.is_empty() {
        s += "<h3>Figure 1 layout</h3>\n<p class=\"note\">Best 10% trimmed mean time (s) of each strategy, per compute time and write mechanism, over the sync sizes (f) and windows (w) swept; K, M = KiB, MiB; <code>end</code> = one sync at the end. <b>Bold</b>: the best of its row and mechanism.</p>\n";
        for t in &tables {
            s += &format!("<h4>{}</h4>\n", esc(&t.title));
            let heads = strategies::headers(t);
            let hs: Vec<&str> = heads.iter().map(String::as_str).collect();
            let mut rows = t.grid(|x| match x {
                None => "-".into(),
                Some(x) => {
                    let time = esc(&strategies::fmt_s(x.time_s));
                    let time = if x.best { format!("<b>{time}</b>") } else { time };
                    let mut cell = format!("{time}<br><small>{}", esc(&x.sync));
                    if let Some(w) = &x.window {
                        cell += &format!(" {}", esc(w));
                    }
                    cell + "</small>"
                }
            });
            for row in &mut rows {
                row[0] = esc(&row[0]);
            }
            s += &table("fig1", &hs, &rows, &(1..hs.len()).collect::<Vec<_>>());
        }
    }
    let (h, rows) = strategies::overlap_rows(exp);
    if !rows.is_empty() {
        s += "<h3>Overlap: where each role's time went</h3>\n";
        let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| esc(c)).collect()).collect();
        s += &table("overlap", &h, &rows, &(3..12).collect::<Vec<_>>());
        s += &format!("<p class=\"note\">{}</p>\n", esc(strategies::OVERLAP_NOTE));
    }
    s + "</section>\n"
}
