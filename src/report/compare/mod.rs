//! The SLAC per-host table (Tirumala et al. 2003, L4): one row per host and file system with
//! its figures from the newest L1/L4 experiment. Its formats (text, CSV, Markdown) are the
//! exporters of [`FORMATS`], one file each under `compare/`; the HTML page is
//! `html::compare`. Two experiments before and after: [`verdict`].

use std::collections::BTreeMap;

use super::{Exporter, find};
use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Headline};
use crate::spec::{CachePolicy, OpKind, SyncPolicy};
use crate::store::Store;
use crate::units::mb_per_s;

mod csv;
mod markdown;
mod text;
pub mod verdict;

/// The formats of `iolab results compare` (besides its HTML page).
pub static FORMATS: &[&(dyn Exporter<[Row]> + Sync)] = &[&text::Text, &csv::Csv, &markdown::Markdown];

/// The six figures of the SLAC table, in its column order.
pub const FIGURES: [&str; 6] = [
    "first read",
    "second read",
    "write plain",
    "commit each write",
    "commit at end",
    "commit at end (large file)",
];

/// One figure: its headline rate in bytes/s and whether its phase carried a flag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub bytes_per_s: f64,
    pub flagged: bool,
    pub runs: usize,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub hostname: String,
    pub os: String,
    pub cpus: u32,
    pub cpu_mhz: f64,
    pub file_system: String,
    pub figures: [Option<Figure>; 6],
    pub large_file_bytes: Option<u64>,
    pub statistic: Headline,
    pub experiment_id: String,
}

/// The figures of one L1 experiment. Each phase is placed by what it did: a cold read is the
/// first read, a warm read the second; a write without commit is "plain", with a commit after
/// every op "commit each write", with one commit at the end "commit at end", and the largest
/// such file, when larger than the others, "commit at end (large file)".
pub fn row(exp: &ExperimentResult) -> Row {
    let h = &exp.host;
    let mut figures: [Option<Figure>; 6] = [None; 6];
    let mut at_end: Vec<(u64, Figure)> = vec![];
    let (headline, rate) = (exp.design.headline, exp.design.figure);
    for p in &exp.points {
        let spec = p.spec.as_ref().unwrap_or(&exp.spec);
        for ph in &p.phases {
            let Some(sm) = rate.summary(ph) else { continue };
            let fig = Figure { bytes_per_s: headline.value(&sm), flagged: !ph.flags.is_empty(), runs: sm.n };
            let slot = match (ph.op, ph.cache.policy, spec.sync) {
                (OpKind::Read, CachePolicy::Cold, _) => 0,
                (OpKind::Read, CachePolicy::Warm, _) => 1,
                (OpKind::Write, _, SyncPolicy::None) => 2,
                (OpKind::Write, _, SyncPolicy::Each) => 3,
                (OpKind::Write, _, SyncPolicy::End) => {
                    at_end.push((spec.size_bytes, fig));
                    continue;
                }
                _ => continue,
            };
            figures[slot].get_or_insert(fig);
        }
    }
    at_end.sort_by_key(|(size, _)| *size);
    let mut large_file_bytes = None;
    if let Some(&(small, f)) = at_end.first() {
        figures[4] = Some(f);
        if let Some(&(big, g)) = at_end.last().filter(|(b, _)| *b > small) {
            figures[5] = Some(g);
            large_file_bytes = Some(big);
        }
    }
    let mut fs: Vec<String> = h.targets.iter().map(|t| t.fs_name().to_string()).collect();
    fs.dedup();
    let release = h.kernel.split_whitespace().next().unwrap_or("");
    let short: Vec<&str> = release.split('.').take(2).collect();
    // A host measured in a Slurm job says which (the job's output and its other steps).
    let hostname = match &h.slurm {
        Some(j) => format!("{} (Slurm job {})", h.hostname, j.job_id),
        None => h.hostname.clone(),
    };
    Row {
        hostname,
        os: format!("{} {}", h.os, short.join(".")),
        cpus: h.cpus,
        cpu_mhz: h.cpu_mhz,
        file_system: fs.join("+"),
        figures,
        large_file_bytes,
        statistic: headline,
        experiment_id: exp.experiment_id.clone(),
    }
}

/// The L1/L4 experiments of a store, newest first; an error when there are none.
pub fn experiments(store: &Store) -> Result<Vec<ExperimentResult>> {
    let mut exps = vec![];
    for id in store.ids_by_preset(&["L1", "L4"])? {
        match store.load(&id) {
            Ok(exp) => exps.push(exp),
            Err(e) => store.warn_unreadable(&format!("experiment {id}"), e),
        }
    }
    if exps.is_empty() {
        return Err(Error::NotFound(format!(
            "the store {} holds no L1 or L4 experiment: run `iolab reproduce L1` on each host, then `iolab results import` their stores",
            store.path().display()
        )));
    }
    Ok(exps)
}

/// One row per host and file system: the newest experiment of each (`exps` newest first).
pub fn rows(exps: &[ExperimentResult]) -> Vec<Row> {
    let mut seen: BTreeMap<(String, Vec<String>), ()> = BTreeMap::new();
    let mut out = vec![];
    for e in exps {
        let key = (
            e.host.host_id.clone(),
            e.host.targets.iter().map(|t| format!("{} {}", t.fs_name(), t.mount_point)).collect(),
        );
        if seen.insert(key, ()).is_none() {
            out.push(row(e));
        }
    }
    out.sort_by(|a, b| (&a.hostname, &a.file_system).cmp(&(&b.hostname, &b.file_system)));
    out
}

fn mb(v: f64) -> String {
    format!("{:.2}", mb_per_s(v))
}

fn cells(r: &Row) -> Vec<String> {
    let mut c =
        vec![r.hostname.clone(), r.os.clone(), format!("{}*{:.0}", r.cpus, r.cpu_mhz), r.file_system.clone()];
    for (i, f) in r.figures.iter().enumerate() {
        c.push(match f {
            None => "-".into(),
            Some(f) => figure_cell(r, i, f) + if f.flagged { "*" } else { "" },
        });
    }
    c
}

/// A figure's cell (`i`: its column among [`FIGURES`]): MB/s, and the large file's size beside
/// the last figure.
pub fn figure_cell(r: &Row, i: usize, f: &Figure) -> String {
    let mut s = mb(f.bytes_per_s);
    if i == 5
        && let Some(b) = r.large_file_bytes
    {
        s += &format!(" ({:.2} MB)", b as f64 / 1e6);
    }
    s
}

/// What each figure is of: the statistic of the rows' experiments.
pub fn statistic(rows: &[Row]) -> &'static str {
    rows.first().map(|r| r.statistic.about()).unwrap_or("the mean")
}

/// The host columns that come before the figures.
const HOST_HEADERS: [&str; 4] = ["host", "OS", "CPUs*MHz", "file system"];

/// The columns of the text and Markdown tables: the host's, then the figures.
fn headers() -> Vec<&'static str> {
    HOST_HEADERS.iter().chain(&FIGURES).copied().collect()
}

fn footer(rows: &[Row]) -> String {
    let stat = statistic(rows);
    let ids: Vec<&str> = rows.iter().map(|r| r.experiment_id.as_str()).collect();
    format!(
        "MB/s = 10^6 B/s, {stat} of each figure's runs; one row per host and file system, from its newest L1/L4 experiment ({}).\n* the figure carries a flag (not cold, noisy, ...): see `iolab results show ID`.\n",
        ids.join(", ")
    )
}

/// The rows in the named format (`text`, `csv` or `markdown`).
pub fn render(rows: &[Row], format: &str) -> Result<String> {
    super::render(find(FORMATS, format)?, rows)
}
