//! The IO500 section of an experiment laid out as the IO500 workload set: each of IO500's
//! scored phases with its figure's spread over the repetitions and 95% interval, then BW, MD
//! and the score, each over the repetitions; first, what it is and is not. As text and HTML.

use crate::results::ExperimentResult;
use crate::results::io500::Io500;
use crate::stats::Summary;

/// A figure with three significant digits.
fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The cells of one row: runs, mean, 95% interval, min, median, max.
fn cells(s: Option<&Summary>, of: usize) -> Vec<String> {
    match s {
        None => vec![format!("0/{of}"), "-".into(), "-".into(), "-".into(), "-".into(), "-".into()],
        Some(s) => vec![
            format!("{}/{of}", s.n),
            num(s.mean),
            s.ci95.map_or("-".into(), |[lo, hi]| format!("[{}, {}]", num(lo), num(hi))),
            num(s.min),
            num(s.median),
            num(s.max),
        ],
    }
}

/// The rows: one per phase, then BW, MD and the score.
fn rows(io: &Io500) -> Vec<Vec<String>> {
    let reps = io.phases.iter().map(|p| p.values.len()).max().unwrap_or(0);
    let mut rows = vec![];
    for p in &io.phases {
        let unit = if p.group == "bw" { "GiB/s" } else { "kIOPS" };
        let mut r = vec![p.name.clone(), unit.to_string()];
        r.extend(cells(p.summary.as_ref(), reps));
        rows.push(r);
    }
    for (name, unit, s) in [
        ("BW: geometric mean", "GiB/s", &io.bw_summary),
        ("MD: geometric mean", "kIOPS", &io.md_summary),
        ("score: sqrt(BW x MD)", "", &io.score_summary),
    ] {
        let mut r = vec![name.to_string(), unit.to_string()];
        r.extend(cells(s.as_ref(), reps));
        rows.push(r);
    }
    rows
}

const HEADERS: [&str; 8] = ["IO500 phase", "unit", "runs", "mean", "95% interval", "min", "median", "max"];

/// The section as text, empty when the experiment is not laid out as the IO500 set.
pub fn text(exp: &ExperimentResult) -> String {
    let Some(io) = &exp.io500 else { return String::new() };
    let mut out = format!("\nIO500: {}\n", io.note);
    if !io.not_io500.is_empty() {
        return out;
    }
    out += &crate::text::text_table(&HEADERS, &rows(io), &[3, 5, 6, 7]);
    out += "a phase's figure: all bytes (GiB = 2^30 B) or items (thousands; find: the entries it stated) over the phase's time (ior: IOR's, first open to last close, commits included (agg); mdtest and find: the slowest worker's (min_SAR)), per repetition; BW, MD and the score of repetition k are made of every phase's repetition k\n";
    if !io.missing.is_empty() {
        out += &format!("no score: the experiment has no {}\n", io.missing.join(", "));
    }
    out
}

/// The section as HTML, empty when the experiment is not laid out as the IO500 set.
pub fn html(exp: &ExperimentResult) -> String {
    use super::html::esc;
    let Some(io) = &exp.io500 else { return String::new() };
    let mut s = format!("<section id=\"io500\">\n<h2>IO500</h2>\n<p class=\"note\">{}</p>\n", esc(&io.note));
    if !io.not_io500.is_empty() {
        return s + "</section>\n";
    }
    s += "<table>\n<thead><tr>";
    for h in HEADERS {
        s += &format!("<th>{}</th>", esc(h));
    }
    s += "</tr></thead>\n<tbody>\n";
    for r in rows(io) {
        s += "<tr>";
        for c in r {
            s += &format!("<td>{}</td>", esc(&c));
        }
        s += "</tr>\n";
    }
    s += "</tbody>\n</table>\n";
    if !io.missing.is_empty() {
        s += &format!("<p>No score: the experiment has no {}.</p>\n", esc(&io.missing.join(", ")));
    }
    s + "</section>\n"
}
