//! `--format ior`: an experiment's data phases as IOR prints a run (its Options, one Results
//! row per phase and repetition, and the `Summary of all tests:` table with its columns), so
//! that scripts that read IOR's output read iolab's. Every
//! figure is iolab's own measurement by IOR's definition: bw = all bytes / (first open to last
//! close, commits included), the figure iolab calls agg; IOPS = all transfers / the slowest
//! worker's time; latency the best worker's mean time per transfer; open and close the
//! slowest worker's; StdDev over the repetitions as IOR's (divided by n).

use std::io::Write;

use super::{Exporter, write_err};
use crate::error::Result;
use crate::results::{ExperimentResult, PhaseResult, PointResult, Repetition, Status};
use crate::spec::{OpKind, Reorder, Spec};

const MIB: f64 = 1024.0 * 1024.0;

pub struct Ior;

impl Exporter for Ior {
    fn name(&self) -> &'static str {
        "ior"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        out.write_all(render(exp).as_bytes()).map_err(write_err)
    }
}

/// IOR's name of the API an engine stands for.
fn api(spec: &Spec) -> &'static str {
    match spec.engine.as_str() {
        "mpiio" => "MPIIO",
        "mmap" => "MMAP",
        _ => "POSIX",
    }
}

/// IOR's HumanReadable with base two: `256 KiB` is `262144 bytes` (IOR prints bytes below 1 MiB).
fn human(v: u64) -> String {
    for (unit, name) in [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB")] {
        if v >= unit {
            return if v % unit == 0 {
                format!("{} {name}", v / unit)
            } else {
                format!("{:.2} {name}", v as f64 / unit as f64)
            };
        }
    }
    format!("{v} bytes")
}

/// IOR's PPDouble: width 10, left-justified, 6 decimals below 1, 2 below an hour, else 0.
fn pp(x: f64) -> String {
    if x < 0.0 || !x.is_finite() {
        return "   -      ".into();
    }
    let prec = if x < 1.0 {
        6
    } else if x < 3600.0 {
        2
    } else {
        0
    };
    format!("{x:<10.prec$}")
}

/// The phases IOR would print: write and read phases (the check of `-W`, `read:asis`, is
/// not one: IOR does not time it).
fn ior_phases(p: &PointResult) -> Vec<&PhaseResult> {
    p.phases
        .iter()
        .filter(|ph| matches!(ph.op, OpKind::Write | OpKind::Read) && ph.name != "read:asis")
        .collect()
}

fn access(ph: &PhaseResult) -> &'static str {
    if ph.op == OpKind::Write { "write" } else { "read" }
}

/// One repetition's figures: bw (B/s), IOPS, latency (s), open, wr/rd, close, total (s).
struct Row {
    bw: f64,
    iops: f64,
    latency: f64,
    open: f64,
    xfer: f64,
    close: f64,
    total: f64,
    bytes: u64,
}

fn row(r: &Repetition) -> Row {
    let total = r.span_ns.unwrap_or(r.time_ns) as f64 / 1e9;
    let (mut open, mut close, mut latency) = (0u64, 0u64, f64::INFINITY);
    for w in r.workers.iter() {
        open = open.max(w.open_ns);
        close = close.max(w.close_ns);
        if w.ops > 0 {
            latency = latency.min(w.time_ns as f64 / 1e9 / w.ops as f64);
        }
    }
    let xfer = r.time_ns as f64 / 1e9;
    Row {
        bw: r.agg_bytes_per_s.unwrap_or(r.min_sar_bytes_per_s),
        iops: if xfer > 0.0 { r.ops as f64 / xfer } else { 0.0 },
        latency: if latency.is_finite() { latency } else { 0.0 },
        open: open as f64 / 1e9,
        xfer,
        close: close as f64 / 1e9,
        total,
        bytes: r.total_bytes,
    }
}

/// max, min, mean, sd (IOR's: divided by n) of `xs`.
fn stats(xs: &[f64]) -> (f64, f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let max = xs.iter().cloned().fold(f64::MIN, f64::max);
    let min = xs.iter().cloned().fold(f64::MAX, f64::min);
    (max, min, mean, var.sqrt())
}

fn kv(out: &mut String, k: &str, v: impl std::fmt::Display) {
    *out += &format!("{k:<20}: {v}\n");
}

/// The whole output.
pub fn render(exp: &ExperimentResult) -> String {
    let mut out = format!(
        "iolab {}: the run in IOR's layout (iolab's measurement; docs/ior.md says what each figure is)\n",
        exp.iolab_version
    );
    kv(&mut out, "Began", super::html::utc(exp.created_unix_s));
    kv(&mut out, "Command line", &exp.spec.name);
    kv(&mut out, "Machine", format!("{} {}", exp.host.os, exp.host.hostname));
    let mut summary: Vec<String> = vec![];
    for (test, p) in exp.points.iter().enumerate() {
        let spec = p.spec.as_ref().unwrap_or(&exp.spec);
        let phases = ior_phases(p);
        let (tasks, per_node, nodes) = layout_of(p, spec);
        let block = spec.size_bytes / spec.segments as u64;
        let agg = spec.size_bytes * spec.workers as u64;
        kv(&mut out, "TestID", test);
        let before: f64 = exp.points[..test].iter().map(point_time_s).sum();
        kv(&mut out, "StartTime", super::html::utc(exp.created_unix_s + before));
        out += "\nOptions: \n";
        kv(&mut out, "api", api(spec));
        kv(&mut out, "apiVersion", "");
        kv(&mut out, "test filename", spec.dirs.first().map(|d| d.display().to_string()).unwrap_or_default());
        kv(
            &mut out,
            "access",
            if spec.layout.per_worker_files() { "file-per-process" } else { "single-shared-file" },
        );
        kv(
            &mut out,
            "type",
            if spec.mpiio.as_ref().is_some_and(|m| m.collective) { "collective" } else { "independent" },
        );
        kv(&mut out, "segments", spec.segments);
        kv(
            &mut out,
            "ordering in a file",
            if spec.order == crate::spec::Order::Random { "random" } else { "sequential" },
        );
        match spec.reorder_reads {
            None => kv(&mut out, "ordering inter file", "no tasks offsets"),
            Some(r) => {
                kv(&mut out, "ordering inter file", "constant task offset");
                kv(&mut out, "task offset", shift(r, per_node));
            }
        }
        kv(&mut out, "nodes", nodes);
        kv(&mut out, "tasks", tasks);
        kv(&mut out, "clients per node", per_node);
        kv(&mut out, "memoryBuffer", "CPU");
        kv(&mut out, "dataAccess", "CPU");
        kv(&mut out, "GPUDirect", 0);
        kv(&mut out, "repetitions", spec.reps);
        kv(&mut out, "xfersize", human(spec.bs_bytes));
        kv(&mut out, "blocksize", human(block));
        kv(&mut out, "aggregate filesize", human(agg));
        if let Some(ns) = spec.stonewall_ns {
            kv(&mut out, "stonewallingTime", ns / 1_000_000_000);
            kv(&mut out, "stoneWallingWearOut", u8::from(spec.wear_out));
        }
        out += "\nResults: \n\n";
        out += "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n";
        out += "------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n";
        let reps: u32 = phases.iter().map(|ph| ph.repetitions.len() as u32).max().unwrap_or(0);
        for k in 0..reps {
            for ph in &phases {
                let Some(r) = ph.repetitions.iter().find(|r| r.rep == k && r.status == Status::Complete)
                else {
                    continue;
                };
                let x = row(r);
                out += &format!(
                    "{:<10}{} {} {}  {} {} {} {} {} {} {k:<4}\n",
                    access(ph),
                    pp(x.bw / MIB),
                    pp(x.iops),
                    pp(x.latency),
                    pp(block as f64 / 1024.0),
                    pp(spec.bs_bytes as f64 / 1024.0),
                    pp(x.open),
                    pp(x.xfer),
                    pp(x.close),
                    pp(x.total),
                );
            }
        }
        for ph in &phases {
            let rows: Vec<Row> =
                ph.repetitions.iter().filter(|r| r.status == Status::Complete).map(row).collect();
            summary.push(summary_row(test, ph, spec, &rows, (tasks, per_node), block));
        }
    }
    out += "\nSummary of all tests:\n";
    out += &format!(
        "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>13}",
        "Operation",
        "Max(MiB)",
        "Min(MiB)",
        "Mean(MiB)",
        "StdDev",
        "Max(OPs)",
        "Min(OPs)",
        "Mean(OPs)",
        "StdDev",
        "Mean(s)",
        "Stonewall(s)",
        "Stonewall(MiB)"
    );
    out += " Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt ";
    out += &format!("{:>8} {:>8} {:>9} {:>5}", " blksiz", "xsize", "aggs(MiB)", "API");
    out += " RefNum\n";
    for s in summary {
        out += &s;
    }
    kv(&mut out, "Finished", super::html::utc(exp.created_unix_s + total_time_s(exp)));
    out
}

/// The tasks, tasks on the first node and nodes of a point (from its hosts when on MPI ranks).
fn layout_of(p: &PointResult, spec: &Spec) -> (u32, u32, u32) {
    let tasks = spec.workers;
    let hosts =
        p.phases.iter().flat_map(|ph| &ph.repetitions).find(|r| !r.hosts.is_empty()).map(|r| &r.hosts);
    match hosts {
        Some(h) => (tasks, h[0].workers, h.len() as u32),
        None => (tasks, tasks, 1),
    }
}

/// The shift a reordering stands for, in ranks.
fn shift(r: Reorder, per_node: u32) -> u32 {
    match r {
        Reorder::Shift(n) => n,
        Reorder::Node => per_node,
    }
}

fn total_time_s(exp: &ExperimentResult) -> f64 {
    exp.points.iter().map(point_time_s).sum()
}

/// A point's measured time: its repetitions' spans, one after another.
fn point_time_s(p: &PointResult) -> f64 {
    let reps = p.phases.iter().flat_map(|ph| &ph.repetitions);
    reps.map(|r| r.span_ns.unwrap_or(r.time_ns) as f64 / 1e9).sum()
}

fn summary_row(
    test: usize,
    ph: &PhaseResult,
    spec: &Spec,
    rows: &[Row],
    (tasks, per_node): (u32, u32),
    block: u64,
) -> String {
    let bws: Vec<f64> = rows.iter().map(|r| r.bw).collect();
    let ops: Vec<f64> = bws.iter().map(|b| b / spec.bs_bytes as f64).collect();
    let (bmax, bmin, bmean, bsd) = stats(&bws);
    let (omax, omin, omean, osd) = stats(&ops);
    let mean_s = stats(&rows.iter().map(|r| r.total).collect::<Vec<_>>()).2;
    let (sw_s, sw_mib) = match (spec.wear_out, spec.stonewall_ns) {
        (true, Some(ns)) => {
            let d = ns as f64 / 1e9;
            let at: Vec<f64> = ph
                .repetitions
                .iter()
                .filter(|r| r.status == Status::Complete)
                .map(|r| {
                    r.workers.iter().map(|w| w.stonewall_ops.unwrap_or(w.ops) as f64).sum::<f64>()
                        * spec.bs_bytes as f64
                        / tasks.max(1) as f64
                })
                .collect();
            let avg = stats(&at).2;
            (format!("{d:10.2}"), format!("{:13.2}", avg / d / MIB))
        }
        _ => (format!("{:>10}", "NA"), format!("{:>13}", "NA")),
    };
    let agg = rows.first().map_or(0, |r| r.bytes);
    let (reord, off) = match spec.reorder_reads {
        Some(r) => (1, shift(r, per_node)),
        None => (0, 1),
    };
    format!(
        "{:<9} {bmax:10.2} {bmin:10.2} {bmean:10.2} {bsd:10.2} {omax:10.2} {omin:10.2} {omean:10.2} {osd:10.2} {mean_s:10.5} {sw_s} {sw_mib} {test:5} {tasks:6} {per_node:3} {:4} {:3} {reord:5} {off:8} {:9} {:4} {:6} {block:8} {:8} {:9.1} {:>3} {:6}\n",
        access(ph),
        spec.reps,
        u8::from(spec.layout.per_worker_files()),
        0,
        0,
        spec.segments,
        spec.bs_bytes,
        agg as f64 / MIB,
        api(spec),
        0,
        bmax = bmax / MIB,
        bmin = bmin / MIB,
        bmean = bmean / MIB,
        bsd = bsd / MIB,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_ior_prints_them() {
        assert_eq!(human(262_144), "262144 bytes");
        assert_eq!(human(1 << 20), "1 MiB");
        assert_eq!(human(3 << 29), "1.50 GiB");
        assert_eq!(pp(0.5), "0.500000  ");
        assert_eq!(pp(1234.5678), "1234.57   ");
        assert_eq!(pp(7200.0), "7200      ");
        let (max, min, mean, sd) = stats(&[1.0, 3.0]);
        assert_eq!((max, min, mean, sd), (3.0, 1.0, 2.0, 1.0));
    }
}
