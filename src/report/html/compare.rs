//! The per-host HTML page (Tirumala et al. 2003, SLAC): the table of `iolab results compare`
//! with one row per host and file system, a grouped bar graph of its figures, and the table
//! as CSV.

use std::io::Write;

use super::{data_link, esc, figure, table, utc};
use crate::error::Result;
use crate::report::compare::{self, FIGURES, Row};
use crate::report::plot::axis::{Axis, Unit};
use crate::report::plot::figure::{Draw, Figure, Panel, Point, Series, Style};
use crate::report::{Exporter, write_err};
use crate::store::Store;

/// The graph: one group of bars per figure, one bar per host.
pub fn graph(rows: &[Row]) -> Figure {
    let names: Vec<String> = FIGURES.iter().map(|f| f.to_string()).collect();
    let width = 0.8 / rows.len().max(1) as f64;
    let mut legend = vec![];
    let mut series = vec![];
    let mut ys = vec![0.0];
    for (hi, r) in rows.iter().enumerate() {
        legend.push(Style::nth(hi, format!("{} ({})", r.hostname, r.file_system)));
        let points: Vec<Point> = r
            .figures
            .iter()
            .enumerate()
            .filter_map(|(fi, f)| {
                let f = f.as_ref()?;
                let x = fi as f64 - 0.4 + width * (hi as f64 + 0.5);
                let y = f.bytes_per_s / 1e6;
                ys.push(y);
                Some(Point { x, y, bar: None, span: Some((x - width * 0.45, x + width * 0.45)) })
            })
            .collect();
        series.push(Series { style: hi, draw: Draw::Bars, points });
    }
    let stat = compare::statistic(rows);
    Figure {
        title: "Disk throughput per host (Tirumala et al. 2003)".into(),
        subtitle: vec![format!(
            "Each bar: {stat} of the figure's runs, from the host's newest L1/L4 experiment"
        )],
        panels: vec![Panel {
            title: String::new(),
            x: Axis::categories("figure", &names),
            y: Axis::numeric("rate (MB/s = 10^6 B/s)", &ys, Unit::Number, Some(false), true),
            series,
        }],
        legend,
        notes: vec![],
        size: None,
    }
}

/// The whole page, of the L1/L4 experiments in a store and of its tunings (either may be
/// missing, not both).
pub fn page(store: &Store) -> Result<String> {
    let tuned = crate::report::tune::hosts::rows(&store.tunings()?);
    let exps = match compare::experiments(store) {
        Err(_) if !tuned.is_empty() => vec![],
        other => other?,
    };
    let rows = compare::rows(&exps);
    let source = store.path().display().to_string();
    let html = Html { source, made_unix_s: crate::env::sys::unix_time_s(), tuned };
    crate::report::render(&html, &rows[..])
}

/// The page as an exporter of the table's rows: `source` names where they come from, and the
/// page says when it was made; the winners of the tuned jobs follow the table.
pub struct Html {
    pub source: String,
    pub made_unix_s: f64,
    pub tuned: Vec<crate::report::tune::hosts::Row>,
}

impl Exporter<[Row]> for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn export(&self, rows: &[Row], out: &mut dyn Write) -> Result<()> {
        out.write_all(html_page(self, rows)?.as_bytes()).map_err(write_err)
    }
}

/// The page's HTML.
fn html_page(html: &Html, rows: &[Row]) -> Result<String> {
    let mut nav = String::new();
    if !rows.is_empty() {
        nav += "<li><a href=\"#hosts\">Table</a></li><li><a href=\"#plots\">Graph</a></li>";
    }
    if !html.tuned.is_empty() {
        nav += "<li><a href=\"#tuned\">Tuned jobs</a></li>";
    }
    let mut body = format!(
        "<header>\n<h1>Disk throughput per host</h1>\n<p>{} host(s) and file system(s){} from {}; made {}</p>\n<p>Everything on this page comes from the results store; nothing was rerun to make it.</p>\n<nav><ul>{nav}<li><a href=\"#data\">Raw data</a></li></ul></nav>\n</header>\n<main>\n",
        rows.len(),
        if html.tuned.is_empty() {
            String::new()
        } else {
            format!(", {} tuned job result(s)", html.tuned.len())
        },
        esc(&html.source),
        esc(&utc(html.made_unix_s))
    );
    if !rows.is_empty() {
        body += &slac_sections(rows)?;
    }
    if !html.tuned.is_empty() {
        body += &tuned_section(&html.tuned);
    }
    body += "<section id=\"data\">\n<h2>Raw data</h2>\n<ul class=\"downloads\">\n";
    if !rows.is_empty() {
        let csv = compare::render(rows, "csv")?;
        body += &data_link("hosts.csv", "text/csv", csv.as_bytes(), "the table");
    }
    if !html.tuned.is_empty() {
        let csv = crate::report::render(
            crate::report::find(crate::report::tune::hosts::FORMATS, "csv")?,
            &html.tuned[..],
        )?;
        body += &data_link("tuned.csv", "text/csv", csv.as_bytes(), "the tuned jobs");
    }
    body += "</ul>\n</section>\n</main>\n<footer>Made by <code>iolab report --compare</code> from the store alone.</footer>\n";
    Ok(super::page("iolab: disk throughput per host", &body))
}

/// The tuned jobs: per job, each host's recommended way to do it.
fn tuned_section(rows: &[crate::report::tune::hosts::Row]) -> String {
    use crate::report::tune::hosts::{FOOTER, HEADERS, by_job, cells};
    let mut s = String::from("<section id=\"tuned\">\n<h2>Tuned jobs</h2>\n");
    for (job, rs) in by_job(rows) {
        s += &format!("<h3>{}</h3>\n", esc(job));
        let trs: Vec<Vec<String>> = rs.iter().map(|r| cells(r).iter().map(|c| esc(c)).collect()).collect();
        s += &table("tuned", &HEADERS, &trs, &[3, 5]);
    }
    s + &format!("<p class=\"note\">{}.</p>\n</section>\n", esc(FOOTER))
}

/// The SLAC table and its graph.
fn slac_sections(rows: &[Row]) -> Result<String> {
    let mut body = String::new();
    body += "<section id=\"hosts\">\n<h2>Hosts</h2>\n";
    let mut heads = vec!["host", "OS", "CPUs × MHz", "file system"];
    heads.extend(FIGURES);
    heads.push("experiment");
    let trs: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut c = vec![
                esc(&r.hostname),
                esc(&r.os),
                format!("{} × {:.0}", r.cpus, r.cpu_mhz),
                esc(&r.file_system),
            ];
            for (i, f) in r.figures.iter().enumerate() {
                c.push(match f {
                    None => "-".into(),
                    Some(f) if f.flagged => {
                        format!("<span class=\"flag\">{}</span>", compare::figure_cell(r, i, f))
                    }
                    Some(f) => compare::figure_cell(r, i, f),
                });
            }
            c.push(format!("<code>{}</code>", esc(&r.experiment_id)));
            c
        })
        .collect();
    body += &table("hosts", &heads, &trs, &[4, 5, 6, 7, 8, 9]);
    let stat = compare::statistic(rows);
    body += &format!(
        "<p class=\"note\">MB/s = 10<sup>6</sup> B/s, {} of each figure's runs. ⚑ the figure carries a flag (not cold, noisy, ...): see <code>iolab report ID</code> of its experiment.</p>\n</section>\n",
        esc(stat)
    );
    body += "<section id=\"plots\">\n<h2>Graph</h2>\n";
    body += &figure(
        &graph(rows),
        1,
        "The table's figures, one bar per host.",
        "iolab results compare --format html",
    )?;
    Ok(body + "</section>\n")
}
