//! Strategy experiments (Benson, Long and Pacheco 2003) as the study reports them: the run's
//! time (seconds, lower is better) per point; where each role's time went (the overlap a
//! strategy achieved); and the study's Figure 1 layout: per compute time and strategy, for
//! each write mechanism, the best 10% trimmed mean time over the sync sizes (and windows)
//! swept, with the sync size (f) and window (w) that gave it. One table per launcher
//! (threads, processes), memory layout (contiguous, strided) and any other swept parameter.
//! Read from a result (the store); its formats (text, Markdown, CSV) are the exporters in
//! [`FORMATS`], one file each under `strategies/`, and the HTML page shows its tables too.

use std::collections::BTreeMap;

use super::{Exporter, find};
use crate::results::{ExperimentResult, PointResult, Repetition, Status};
use crate::spec::{Launcher, Spec, SyncPolicy};
use crate::units::{fmt_rate, fmt_size};

mod csv;
mod markdown;
mod text;

pub use text::render_body;

/// The formats of `iolab results strategies`.
pub static FORMATS: &[&(dyn Exporter + Sync)] = &[&text::Text, &markdown::Markdown, &csv::Csv];

/// `iolab results strategies`: the Figure 1 tables and the overlap in the named format (text
/// for a name the command line does not offer).
pub fn render(exp: &ExperimentResult, format: &str) -> String {
    let exporter = find(FORMATS, format).unwrap_or(&text::Text);
    super::render(exporter, exp).expect("the strategy tables are written to memory")
}

/// Axes that select a cell of the Figure 1 tables (or are tuned within one).
const CELL_KEYS: &[&str] =
    &["strategy", "engine", "comptime", "sync", "window", "sync_call", "launcher", "mem_len", "mem_stride"];
/// Experiments with more points than this show the overlap of the Figure 1 winners only.
const MAX_OVERLAP_POINTS: usize = 40;

/// Several experiments as one: the first one's header and design, every one's points (for
/// tables over a grid run in parts). Panics on an empty list.
pub fn merge(exps: Vec<ExperimentResult>) -> ExperimentResult {
    let mut it = exps.into_iter();
    let mut first = it.next().expect("at least one experiment");
    for e in it {
        first.points.extend(e.points);
    }
    first
}

/// Whether any point of the experiment ran a strategy.
pub fn any(exp: &ExperimentResult) -> bool {
    exp.points.iter().any(|p| p.spec.as_ref().is_some_and(|s| s.strategy.is_some()))
}

fn complete(p: &PointResult) -> impl Iterator<Item = &Repetition> {
    p.phases.iter().flat_map(|ph| ph.repetitions.iter()).filter(|r| r.status == Status::Complete)
}

/// Seconds with precision that suits them.
pub fn fmt_s(s: f64) -> String {
    if !s.is_finite() {
        "-".into()
    } else if s >= 100.0 {
        format!("{s:.0}")
    } else if s >= 10.0 {
        format!("{s:.1}")
    } else if s >= 1.0 {
        format!("{s:.2}")
    } else {
        format!("{s:.3}")
    }
}

/// A size as the study writes it: 128K, 64M.
fn short_size(b: u64) -> String {
    fmt_size(b).replace(" KiB", "K").replace(" MiB", "M").replace(" GiB", "G").replace(" B", "")
}

/// The sync size as the study labels it: `64Mf`, or `end`, `each`, `none`.
pub fn sync_label(s: &Spec) -> String {
    match s.sync {
        SyncPolicy::Every(n) => format!("{}f", short_size(n)),
        other => other.label(),
    }
}

/// The window as the study labels it (`64Mw`), mmap only.
pub fn window_label(s: &Spec) -> Option<String> {
    (s.engine == "mmap")
        .then(|| s.window_bytes.map_or("whole-file".into(), |w| format!("{}w", short_size(w))))
}

/// The write mechanism as the study names it.
pub fn mechanism(engine: &str) -> String {
    match engine {
        "psync" => "write()".into(),
        "vsync" => "writev()".into(),
        "mmap" => "mmap()".into(),
        other => other.into(),
    }
}

/// One cell of a Figure 1 table: the best point of its (compute time, mechanism, strategy).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The 10% trimmed mean of the run's time over complete repetitions, in seconds.
    pub time_s: f64,
    pub runs: usize,
    pub point: usize,
    pub sync: String,
    pub window: Option<String>,
    pub window_bytes: Option<u64>,
    pub sync_bytes: Option<u64>,
    /// Bytes written per run.
    pub bytes: u64,
    /// The best of its row within its mechanism.
    pub best: bool,
}

impl Cell {
    /// `4.97 64Mf`, or with a window `4.72 8Mf 64Mw`.
    pub fn label(&self) -> String {
        let mut s = format!("{} {}", fmt_s(self.time_s), self.sync);
        if let Some(w) = &self.window {
            s += &format!(" {w}");
        }
        s
    }
}

/// One table of the Figure 1 layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Fig1 {
    /// `threads, contiguous data`, plus any other swept parameter.
    pub title: String,
    pub launcher: String,
    pub data: String,
    /// Row labels (compute times as written), in increasing order.
    pub rows: Vec<String>,
    /// Columns: (engine, strategy), mechanisms in the order psync, vsync, mmap.
    pub cols: Vec<(String, String)>,
    pub cells: BTreeMap<(usize, usize), Cell>,
}

impl Fig1 {
    /// The table's rows: the compute time, then each column's cell as `cell` writes it (None
    /// where no point ran).
    pub fn grid(&self, cell: impl Fn(Option<&Cell>) -> String) -> Vec<Vec<String>> {
        (0..self.rows.len())
            .map(|r| {
                let mut row = vec![self.rows[r].clone()];
                row.extend((0..self.cols.len()).map(|c| cell(self.cells.get(&(r, c)))));
                row
            })
            .collect()
    }
}

fn data_label(s: &Spec) -> String {
    match s.mem() {
        None => "contiguous data".into(),
        Some(m) => format!("strided data ({} of every {} bytes)", m.len, m.stride),
    }
}

/// The Figure 1 tables of an experiment (empty when it ran no strategy).
pub fn figure1(exp: &ExperimentResult) -> Vec<Fig1> {
    let mut tables: Vec<Fig1> = vec![];
    let mut keys: Vec<String> = vec![];
    let engine_rank = |e: &str| ["psync", "vsync", "mmap"].iter().position(|x| *x == e).unwrap_or(9);
    // (table, row ns, row label, engine, strategy) -> best cell
    let mut found: Vec<(usize, u64, String, String, usize, Cell)> = vec![];
    for (pi, p) in exp.points.iter().enumerate() {
        let Some(spec) = p.spec.as_ref() else { continue };
        let Some(strategy) = spec.strategy else { continue };
        let times: Vec<&Repetition> = complete(p).collect();
        let Some(sm) = p.phases.iter().find_map(|ph| ph.time_summary.as_ref()) else { continue };
        let launcher = match spec.launcher {
            Launcher::Process => "processes",
            Launcher::Mpi => "MPI ranks",
            Launcher::Thread => "threads",
        };
        let data = data_label(spec);
        let others: Vec<String> = p
            .params
            .iter()
            .filter(|(k, _)| crate::spec::params::is_param(k) && !CELL_KEYS.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut title = format!("{launcher}, {data}");
        if !others.is_empty() {
            title += &format!(", {}", others.join(" "));
        }
        let t = match keys.iter().position(|k| *k == title) {
            Some(t) => t,
            None => {
                keys.push(title.clone());
                tables.push(Fig1 {
                    title,
                    launcher: launcher.into(),
                    data,
                    rows: vec![],
                    cols: vec![],
                    cells: BTreeMap::new(),
                });
                tables.len() - 1
            }
        };
        let comptime = spec.comptime_ns.unwrap_or(0);
        let row =
            p.params.get("comptime").cloned().unwrap_or_else(|| crate::units::fmt_duration_spec(comptime));
        let cell = Cell {
            time_s: sm.trimmed_mean_10,
            runs: times.len(),
            point: pi,
            sync: sync_label(spec),
            window: window_label(spec),
            window_bytes: spec.window_bytes,
            sync_bytes: match spec.sync {
                SyncPolicy::Every(n) => Some(n),
                _ => None,
            },
            bytes: times.first().map_or(0, |r| r.total_bytes),
            best: false,
        };
        found.push((t, comptime, row, spec.engine.clone(), strategy.table_rank(), cell));
    }
    for (ti, table) in tables.iter_mut().enumerate() {
        let mut rows: Vec<(u64, String)> =
            found.iter().filter(|f| f.0 == ti).map(|f| (f.1, f.2.clone())).collect();
        rows.sort();
        rows.dedup_by(|a, b| a.0 == b.0);
        let mut cols: Vec<(usize, usize, String)> =
            found.iter().filter(|f| f.0 == ti).map(|f| (engine_rank(&f.3), f.4, f.3.clone())).collect();
        cols.sort();
        cols.dedup();
        table.rows = rows.iter().map(|r| r.1.clone()).collect();
        table.cols = cols
            .iter()
            .map(|c| (c.2.clone(), crate::strategy::Strategy::TABLE_ORDER[c.1].name().to_string()))
            .collect();
        for f in found.iter().filter(|f| f.0 == ti) {
            let r = rows.iter().position(|x| x.0 == f.1).unwrap_or(0);
            let c = cols.iter().position(|x| x.2 == f.3 && x.1 == f.4).unwrap_or(0);
            let better = table.cells.get(&(r, c)).is_none_or(|old| f.5.time_s < old.time_s);
            if better {
                table.cells.insert((r, c), f.5.clone());
            }
        }
        // The best of each row within each mechanism.
        for r in 0..table.rows.len() {
            let engines: Vec<String> = table.cols.iter().map(|c| c.0.clone()).collect();
            for e in &engines {
                let best = (0..table.cols.len())
                    .filter(|&c| table.cols[c].0 == *e)
                    .filter_map(|c| table.cells.get(&(r, c)).map(|x| (x.time_s, c)))
                    .min_by(|a, b| a.0.total_cmp(&b.0));
                if let Some((_, c)) = best {
                    table.cells.get_mut(&(r, c)).expect("cell").best = true;
                }
            }
        }
    }
    tables
}

/// Headers of a Figure 1 table: `comptime`, then `write() S1A`, ...
pub fn headers(t: &Fig1) -> Vec<String> {
    let mut h = vec!["comptime".to_string()];
    h.extend(t.cols.iter().map(|(e, s)| format!("{} {s}", mechanism(e))));
    h
}

/// What a Figure 1 table shows.
const FIG1_ABOUT: &str = "best 10% trimmed mean time (s) of each strategy, per compute time and write mechanism, over the sync sizes (f) and windows (w) swept; K, M = KiB, MiB; `end` = one sync at the end";

/// Per point: the run's time across repetitions (the headline statistic starred), the rate it
/// gives, the most commits in flight. Rows: (cells, is the point's headline finite).
pub fn point_rows(exp: &ExperimentResult) -> (Vec<String>, Vec<Vec<String>>) {
    let d = &exp.design;
    let swept: Vec<String> = d.axes.iter().map(|a| a.key.clone()).collect();
    let mut headers = swept.clone();
    headers.extend(
        [
            "runs",
            &format!("time {}*", d.headline.column()),
            "±sd",
            "min",
            "median",
            "max",
            "MB/s",
            "syncs in flight",
            "flags",
        ]
        .map(String::from),
    );
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let mut row: Vec<String> =
                swept.iter().map(|k| p.params.get(k).cloned().unwrap_or_default()).collect();
            let done: Vec<&Repetition> =
                ph.repetitions.iter().filter(|r| r.status == Status::Complete).collect();
            row.push(format!("{}/{}", done.len(), ph.repetitions.len()));
            match &ph.time_summary {
                Some(sm) => {
                    let t = d.headline.value(sm);
                    let bytes = done.first().map_or(0, |r| r.total_bytes) as f64;
                    row.extend([
                        fmt_s(t),
                        sm.sd.map(fmt_s).unwrap_or_else(|| "-".into()),
                        fmt_s(sm.min),
                        fmt_s(sm.median),
                        fmt_s(sm.max),
                        fmt_rate(bytes / t),
                    ]);
                }
                None => row.extend(std::iter::repeat_n("-".to_string(), 6)),
            }
            let inflight = done.iter().filter_map(|r| r.syncs_in_flight_max).max();
            row.push(inflight.map_or("-".into(), |n| n.to_string()));
            row.push(ph.flags.join("; "));
            rows.push(row);
        }
    }
    (headers, rows)
}

/// What the per-point table means.
pub fn point_note(exp: &ExperimentResult) -> String {
    format!(
        "* time: {} of the run's time in seconds, from the start barrier to after the final sync (lower is better)\nMB/s: bytes written (workers x iters x bs) / that time, 10^6 B/s; syncs in flight: the most commits in flight at once in any run",
        exp.design.headline.about()
    )
}

/// Mean per role over complete repetitions: (headers, rows); times in ms with their share of
/// the run's time. Large experiments show the points that won a Figure 1 cell.
pub fn overlap_rows(exp: &ExperimentResult) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let winners: Vec<usize> = figure1(exp).iter().flat_map(|t| t.cells.values().map(|c| c.point)).collect();
    let many = exp.points.len() > MAX_OVERLAP_POINTS;
    let mut rows = vec![];
    for (pi, p) in exp.points.iter().enumerate() {
        if many && !winners.contains(&pi) {
            continue;
        }
        let reps: Vec<&Repetition> = complete(p).collect();
        if reps.is_empty() {
            continue;
        }
        let run_ns = reps.iter().map(|r| r.time_ns as f64).sum::<f64>() / reps.len() as f64;
        let label = point_label(exp, pi);
        let mut workers: Vec<(u32, String)> =
            reps[0].workers.iter().filter_map(|w| Some((w.worker, w.role?.name().to_string()))).collect();
        workers.sort();
        for (w, role) in workers {
            let mine: Vec<crate::strategy::RoleTimes> = reps
                .iter()
                .filter_map(|r| r.workers.iter().find(|x| x.worker == w)?.times_ns.as_deref().cloned())
                .collect();
            let n = mine.len().max(1) as f64;
            let mean =
                |f: fn(&crate::strategy::RoleTimes) -> u64| mine.iter().map(|t| f(t) as f64).sum::<f64>() / n;
            let cell = |v: f64| format!("{:.1} ({:.0}%)", v / 1e6, 100.0 * v / run_ns.max(1.0));
            rows.push(vec![
                if label.is_empty() { pi.to_string() } else { label.clone() },
                w.to_string(),
                role,
                format!("{:.1}", run_ns / 1e6),
                cell(mean(|t| t.compute)),
                format!("{:.1}", mean(|t| t.compute_target) / 1e6),
                cell(mean(|t| t.write)),
                cell(mean(|t| t.sync)),
                cell(mean(|t| t.handoff)),
                cell(mean(|t| t.wait)),
                cell(mean(|t| t.cpu)),
                cell(mean(|t| t.runq)),
            ]);
        }
    }
    let headers = vec![
        "point", "worker", "role", "run ms", "compute", "asked", "write", "sync", "hand-off", "wait", "cpu",
        "runq",
    ];
    (headers, rows)
}

/// A point's axis values in the order of the axes: `strategy=S2 comptime=2s f=1MiB`.
pub fn point_label(exp: &ExperimentResult, pi: usize) -> String {
    let p = &exp.points[pi];
    let mut keys: Vec<&String> = exp.design.axes.iter().map(|a| &a.key).collect();
    keys.extend(p.params.keys().filter(|k| !exp.design.axes.iter().any(|a| a.key == **k)));
    keys.iter().filter_map(|k| Some(format!("{k}={}", p.params.get(*k)?))).collect::<Vec<_>>().join(" ")
}

/// What the overlap table means.
pub const OVERLAP_NOTE: &str = "overlap: per role, mean ms over complete runs (share of the run's time); compute = fill + spin (asked: its share of the compute), write = in the engine's data calls, sync = in commits, hand-off = taking or passing buffers, wait = barriers, empty or full hand-offs, the S1B token, the sync thread; cpu = the thread's CPU time; runq = time it was runnable but waiting for a CPU (a busy machine)";
