//! The sections under the terminal table: what each phase paid besides its data ops (open,
//! close, commit, preallocation), the periods found in traced phases, and where written
//! files landed on disk; and the parts of the spec line above it (the bytes each phase moves,
//! the layout, how workers ran).

use std::collections::BTreeMap;

use crate::results::{ExperimentResult, PhaseResult, Repetition, Status};
use crate::spec::Spec;
use crate::units::{fmt_ns, fmt_size};

use super::text_table;

fn complete(ph: &PhaseResult) -> impl Iterator<Item = &Repetition> {
    ph.repetitions.iter().filter(|r| r.status == Status::Complete)
}

fn mean_ns(xs: impl Iterator<Item = u64>) -> Option<u64> {
    let (mut sum, mut n) = (0u128, 0u128);
    for x in xs {
        sum += x as u128;
        n += 1;
    }
    (n > 0).then(|| (sum / n) as u64)
}

/// What every phase moves, as the plan has it, per phase (name, words): "4 workers x 2 files x
/// 64 MiB = 512 MiB", "1 worker x 512 MiB", or for a strategy "2 workers x 64 iters x 64 KiB =
/// 8 MiB". Per-phase worker counts and files per worker count; None for a spec no plan can be
/// made of (a document from elsewhere that fails `crate::plan::check`).
pub fn phase_data(s: &Spec) -> Option<Vec<(String, String)>> {
    // A spec planning cannot rely on (one stored before imports checked it) is not planned.
    crate::plan::check(s).ok()?;
    let plural = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    if let (Some(_), Some(iters)) = (s.strategy, s.iters) {
        let total = (s.workers as u64).checked_mul(iters)?.checked_mul(s.bs_bytes)?;
        let text = format!(
            "{} x {} x {} = {}",
            plural(s.workers as u64, "worker"),
            plural(iters, "iter"),
            fmt_size(s.bs_bytes),
            fmt_size(total)
        );
        return Some(s.phases.iter().map(|ph| (ph.name.clone(), text.clone())).collect());
    }
    let plan = crate::plan::plan(s);
    let out = plan.phases.iter().map(|ph| {
        if let Some(md) = &s.md
            && ph.op.is_metadata()
        {
            let what = if md.kind == crate::spec::ItemKind::Dirs { "dir" } else { "file" };
            let text = match ph.op {
                crate::spec::OpKind::Find => {
                    format!("{} walk the trees", plural(ph.workers.len() as u64, "worker"))
                }
                _ => format!("{} x {}", plural(ph.workers.len() as u64, "worker"), plural(md.items, what)),
            };
            return (ph.name.clone(), text);
        }
        let w = ph.workers.len() as u64;
        let total = ph.bytes();
        let per: Vec<u64> = ph.workers.iter().map(|wp| wp.ops.bytes()).collect();
        let files: Vec<u64> = ph
            .workers
            .iter()
            .map(|wp| {
                let mut l: Vec<u32> = wp.files.iter().map(|&f| plan.files[f as usize].logical).collect();
                l.dedup();
                l.len() as u64
            })
            .collect();
        let text = if per.iter().any(|&b| b != per[0]) {
            format!("{}, {} in all", plural(w, "worker"), fmt_size(total))
        } else if ph.layout.per_worker_files() && files[0] > 1 && files.iter().all(|&k| k == files[0]) {
            let k = files[0];
            format!(
                "{} x {} x {} = {}",
                plural(w, "worker"),
                plural(k, "file"),
                fmt_size(per[0] / k),
                fmt_size(total)
            )
        } else if w == 1 {
            format!("1 worker x {}", fmt_size(total))
        } else {
            format!("{} x {} = {}", plural(w, "worker"), fmt_size(per[0]), fmt_size(total))
        };
        (ph.name.clone(), text)
    });
    Some(out.collect())
}

/// The namespace of the metadata phases in words: "1000 files of 3901 B per worker, a tree each
/// (depth 2, fan-out 3: 13 directories); stat, open, read-files of worker w+1's".
pub fn namespace_text(s: &Spec) -> Option<String> {
    let md = s.md.as_ref()?;
    let what = if md.kind == crate::spec::ItemKind::Dirs { "directories" } else { "files" };
    let mut t = format!("{} {what}", md.items);
    if md.file_bytes > 0 {
        let b = md.file_bytes;
        t += &if b % 1024 == 0 { format!(" of {}", fmt_size(b)) } else { format!(" of {b} B") };
    }
    t += match md.dirs {
        crate::spec::MdDirs::Unique => " per worker, a tree each",
        crate::spec::MdDirs::Shared => " per worker, one shared tree",
    };
    if md.depth > 0 {
        t += &format!(" (depth {}, fan-out {}: {} directories)", md.depth, md.fanout, md.tree_dirs());
    }
    if md.shift % s.workers.max(1) != 0 {
        t += &format!("; stat, open, read-files of worker w+{}'s", md.shift);
    } else if md.shift > 0 {
        // One worker: a shift brings it back to its own items.
        t += &format!("; md_shift {} with one worker: its own items", md.shift);
    }
    if md.find != "*" {
        t += &format!("; find counts names matching {}", md.find);
    }
    if md.calls == crate::spec::MdCalls::Mdtest {
        t += "; mdtest's calls (each item by its whole path, `sync` after a phase; find counts as pfind)";
    }
    Some(t)
}

/// The layout part of the spec line: files, round-robin, striping, launcher, start, tracing.
pub fn spec_layout(s: &Spec) -> String {
    let mut out = s.layout.name().to_string();
    let mut notes = vec![];
    if s.layout.per_worker_files() && s.file_count() != s.workers {
        notes.push(format!("{} files", s.file_count()));
    }
    if s.round_robin > 1 {
        notes.push(format!("round-robin {}", s.round_robin));
    }
    if s.segments > 1 {
        notes.push(format!(
            "{} segments of {} per worker",
            s.segments,
            fmt_size(s.size_bytes / s.segments as u64)
        ));
    }
    if let (Some(unit), Some(count)) = (s.stripe_unit_bytes, s.stripe_count) {
        let what = if s.servers.is_some() { "server" } else { "target" };
        notes.push(format!(
            "unit {} over {count} {what}{}",
            fmt_size(unit),
            if count == 1 { "" } else { "s" }
        ));
    }
    if !notes.is_empty() {
        out += &format!(" ({})", notes.join(", "));
    }
    out
}

/// How workers ran, when not the default threads with a barrier: "processes, free start".
pub fn spec_launch(s: &Spec) -> Option<String> {
    let mut v = vec![];
    match s.launcher {
        crate::spec::Launcher::Process => v.push("processes"),
        crate::spec::Launcher::Mpi => v.push("MPI ranks"),
        crate::spec::Launcher::Thread => {}
    }
    let servers = s.servers.as_ref().map(|srv| {
        let fanout = if s.pieces == crate::spec::PiecesMode::Parallel { "parallel" } else { "serial" };
        format!(
            "{} I/O-server rank{} ({} store in {}, fan-out {fanout}, depth {})",
            srv.count,
            if srv.count == 1 { "" } else { "s" },
            srv.store.name(),
            crate::text::escape_path(&srv.dir),
            srv.depth
        )
    });
    if let Some(t) = &servers {
        v.push(t);
    }
    let reorder = s.reorder_reads.map(|r| format!("rank r reads what rank r+{} wrote", r.label()));
    if let Some(r) = &reorder {
        v.push(r);
    }
    if s.start == crate::spec::StartMode::Free {
        v.push("free start");
    }
    if s.latency == crate::spec::LatencyMode::Trace {
        v.push("traced");
    }
    (!v.is_empty()).then(|| v.join(", "))
}

/// Everything under the main table.
pub fn render_details(exp: &ExperimentResult) -> String {
    costs(exp) + &render_others(exp)
}

/// The sections under the main table but the costs: per host, per server, periods, layout.
pub fn render_others(exp: &ExperimentResult) -> String {
    let mut out = super::hosts::render_hosts(exp);
    out += &super::servers::render_servers(exp);
    out += &periods(exp);
    out += &layouts(exp);
    out
}

fn point_label(exp: &ExperimentResult, i: usize) -> String {
    if exp.points.len() == 1 {
        return String::new();
    }
    let params = super::point_params(&exp.points[i]);
    if params.is_empty() { params } else { params + " " }
}

/// The costs table's headers, and what they are.
pub const COST_HEADERS: [&str; 5] = ["phase", "open", "close", "commit", "prealloc"];
pub const COST_LEGEND: &str = "open, close, commit: mean per worker (commit is inside t_i; open and close are not); prealloc: mean per repetition, before the phase, not inside t_i";

/// Per phase: mean per-worker open, close and commit time, and mean preallocation time (rows
/// under [`COST_HEADERS`]; empty without a complete repetition).
pub fn cost_rows(exp: &ExperimentResult) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let dash = || "-".to_string();
    for (i, p) in exp.points.iter().enumerate() {
        for ph in &p.phases {
            // One pass over the workers (spooled ones are read back as they come), summing.
            let (mut n, mut sums) = (0u128, [0u128; 3]);
            for w in complete(ph).flat_map(|r| r.workers.iter()) {
                n += 1;
                for (s, x) in sums.iter_mut().zip([w.open_ns, w.close_ns, w.sync_ns]) {
                    *s += u128::from(x);
                }
            }
            if n == 0 {
                continue;
            }
            let mean = |k: usize| (sums[k] / n) as u64;
            let prealloc = mean_ns(complete(ph).map(|r| r.prealloc_ns)).filter(|&n| n > 0);
            rows.push(vec![
                format!("{}{}", point_label(exp, i), ph.name),
                fmt_ns(mean(0)),
                fmt_ns(mean(1)),
                Some(mean(2)).filter(|&n| n > 0).map_or_else(dash, fmt_ns),
                prealloc.map_or_else(dash, fmt_ns),
            ]);
        }
    }
    rows
}

fn costs(exp: &ExperimentResult) -> String {
    let rows = cost_rows(exp);
    if rows.is_empty() {
        return String::new();
    }
    format!("\n{}{COST_LEGEND}\n", text_table(&COST_HEADERS, &rows, &[1, 2, 3, 4]))
}

/// A period as seen over a phase's series: in how many, first in how many, and its sums.
#[derive(Default)]
struct Seen {
    n: usize,
    first: usize,
    strength: f64,
    excess: f64,
    share: f64,
    at: u64,
}

/// Per traced phase: the periods found, over all complete repetitions and workers.
fn periods(exp: &ExperimentResult) -> String {
    let mut lines = vec![];
    for (i, p) in exp.points.iter().enumerate() {
        for ph in &p.phases {
            let series: Vec<Vec<crate::latency::period::Period>> = complete(ph)
                .flat_map(|r| r.workers.iter())
                .filter_map(|w| w.into_owned().periods.map(|p| *p))
                .collect();
            if series.is_empty() {
                continue;
            }
            // Per period: the series it was found in, first in (the one carrying the most
            // time), and its sums of strength, excess and time share.
            let mut found: BTreeMap<u64, Seen> = BTreeMap::new();
            for s in &series {
                for (j, q) in s.iter().enumerate() {
                    let e = found.entry(q.every_ops).or_insert(Seen { at: q.at_op, ..Seen::default() });
                    e.n += 1;
                    e.first += usize::from(j == 0);
                    e.strength += q.strength;
                    e.excess += q.excess_ns;
                    e.share += q.time_share;
                }
            }
            let mut by_count: Vec<(u64, Seen)> = found.into_iter().collect();
            by_count.sort_by(|a, b| {
                b.1.first.cmp(&a.1.first).then(b.1.n.cmp(&a.1.n)).then(b.1.share.total_cmp(&a.1.share))
            });
            let text = if by_count.is_empty() {
                format!("none found in {} series", series.len())
            } else {
                by_count
                    .iter()
                    .take(3)
                    .map(|(every, q)| {
                        let n = q.n as f64;
                        let ex = q.excess / n;
                        format!(
                            "every {every} ops in {}/{} series, first in {} (r {:.2}, {}{} at op {}, {:.0}% of the time)",
                            q.n,
                            series.len(),
                            q.first,
                            q.strength / n,
                            if ex < 0.0 { "-" } else { "+" },
                            fmt_ns(ex.abs() as u64),
                            q.at,
                            100.0 * q.share / n
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            lines.push(format!("  {}{}: {text}\n", point_label(exp, i), ph.name));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("\nperiods in per-op latency (one series per worker and repetition):\n{}", lines.concat())
}

/// Per write phase: extents, fragments and alternations between files (means over reps).
fn layouts(exp: &ExperimentResult) -> String {
    let mut lines = vec![];
    for (i, p) in exp.points.iter().enumerate() {
        for ph in &p.phases {
            let all: Vec<&crate::env::forensics::LayoutFacts> =
                complete(ph).filter_map(|r| r.file_layout.as_ref()).collect();
            // FIEMAP unanswered (FUSE): the file system's own placement, from the last repetition.
            if let Some(last) = all.iter().rev().find(|f| f.fiemap_error.is_some()) {
                let why = last.fiemap_error.as_deref().unwrap_or("");
                let mut line = format!("  {}{}: {why}", point_label(exp, i), ph.name);
                if last.placement.is_empty() {
                    line += "; the file system tells no placement iolab can read\n";
                } else {
                    line += "; where the file system placed the files (last repetition):\n";
                    for l in crate::env::placement::render(&last.placement).lines() {
                        line += &format!("    {l}\n");
                    }
                }
                lines.push(line);
            }
            let facts: Vec<&crate::env::forensics::LayoutFacts> =
                all.into_iter().filter(|f| f.fiemap_error.is_none()).collect();
            if facts.is_empty() {
                continue;
            }
            let n = facts.len() as f64;
            let mean = |f: fn(&crate::env::forensics::LayoutFacts) -> u64| {
                facts.iter().map(|x| f(x)).sum::<u64>() as f64 / n
            };
            let files = facts[0].files.len();
            let mut line = format!(
                "  {}{}: {files} file{}, {:.1} extents in {:.1} fragments; {:.1} of {:.1} boundaries alternate between files",
                point_label(exp, i),
                ph.name,
                if files == 1 { "" } else { "s" },
                mean(|x| x.extents),
                mean(|x| x.fragments),
                mean(|x| x.alternations),
                mean(|x| x.boundaries),
            );
            let per: Vec<f64> = facts.iter().filter_map(|x| x.per_block_boundary()).collect();
            if !per.is_empty() {
                let m = per.iter().sum::<f64>() / per.len() as f64;
                line += &format!(" ({m:.3} per block boundary)");
            }
            let unplaced = mean(|x| x.unplaced_bytes);
            if unplaced > 0.0 {
                line += &format!("; {} not yet placed (delayed allocation)", fmt_size(unplaced as u64));
            }
            lines.push(line + "\n");
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nfile layout after writing (FIEMAP; mean over repetitions; per block boundary: 1 = every block between other files' blocks; see docs/layouts.md):\n{}",
        lines.concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(params: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut p = crate::experiment::Params::default();
        for (k, v) in params {
            p.set(k, v.split(',').map(String::from).collect()).unwrap();
        }
        let env = crate::experiment::ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
        phase_data(&crate::experiment::resolve(&p, &env).unwrap()).unwrap()
    }

    fn texts(params: &[(&str, &str)]) -> Vec<String> {
        data(params).into_iter().map(|(_, t)| t).collect()
    }

    /// Open, close and commit times are means over every worker of the complete runs, read
    /// back from the spool or from memory alike.
    #[test]
    fn costs_are_means_over_every_worker_of_the_complete_runs() {
        let mut exp =
            crate::report::summary::tests::with_rates(&[("ops", "write"), ("workers", "2")], &[&[1.0, 1.0]]);
        for (k, r) in exp.points[0].phases[0].repetitions.iter_mut().enumerate() {
            for (i, w) in r.workers.make_mut().iter_mut().enumerate() {
                (w.open_ns, w.close_ns, w.sync_ns) = (1000 * (2 * k + i + 1) as u64, 2000, 0);
            }
            if k == 1 {
                r.workers.spool();
                assert!(r.workers.is_spooled());
            }
        }
        let rows = cost_rows(&exp);
        assert_eq!(rows.len(), 1);
        // Opens of 1, 2, 3 and 4 µs; no commit.
        assert_eq!(rows[0][1..4], [fmt_ns(2500), fmt_ns(2000), "-".to_string()]);
    }

    #[test]
    fn phases_say_what_they_move() {
        // Eight files of 64 MiB: four writers with two files each, two readers with four.
        let got = data(&[("files", "8"), ("size", "64MiB"), ("ops", "write:workers=4,read:workers=2:cold")]);
        assert_eq!(
            got,
            [
                ("write:workers=4".to_string(), "4 workers x 2 files x 64 MiB = 512 MiB".to_string()),
                ("read:workers=2:cold".to_string(), "2 workers x 4 files x 64 MiB = 512 MiB".to_string()),
            ]
        );
        assert_eq!(texts(&[("size", "512MiB"), ("ops", "write,read:cold")]), ["1 worker x 512 MiB"; 2]);
        assert_eq!(
            texts(&[("workers", "4"), ("size", "16MiB"), ("ops", "write")]),
            ["4 workers x 16 MiB = 64 MiB"]
        );
        // Three files over two workers: unequal shares.
        assert_eq!(
            texts(&[("files", "3"), ("workers", "2"), ("size", "1MiB"), ("ops", "write")]),
            ["2 workers, 3 MiB in all"]
        );
        // One shared file of 4 x 16 MiB, read back by two workers.
        assert_eq!(
            texts(&[
                ("layout", "shared"),
                ("workers", "4"),
                ("size", "16MiB"),
                ("ops", "write,read:workers=2")
            ]),
            ["4 workers x 16 MiB = 64 MiB", "2 workers x 32 MiB = 64 MiB"]
        );
        assert_eq!(
            texts(&[("strategy", "S3"), ("iters", "64"), ("bs", "64KiB"), ("comptime", "0s")]),
            ["2 workers x 64 iters x 64 KiB = 8 MiB"]
        );
    }
}
