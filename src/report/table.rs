//! The full terminal table (`--explain`): a header with host, targets and spec, then one row per
//! point and phase with the spread of the headline rate (agg unless a preset names its study's)
//! across repetitions, the other rates, latency, and every honesty flag, every section under it
//! and the whole legend. The default, brief table is `glance.rs`'s.

use std::io::Write;

use super::summary::Columns;
use super::{Exporter, write_err};
use crate::error::Result;
use crate::results::{ExperimentResult, PhaseResult, PointResult, Status};
use crate::text::text_table;
use crate::units::fmt_size;

pub struct Table;

impl Exporter for Table {
    fn name(&self) -> &'static str {
        "table"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        let brief = super::glance::render_glance(exp, crate::text::terminal_width());
        out.write_all(brief.as_bytes()).map_err(write_err)
    }
}

/// The full table (`--explain`): every section, the whole legend.
pub struct Explained;

impl Exporter for Explained {
    fn name(&self) -> &'static str {
        "explain"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        out.write_all(render_table(exp).as_bytes()).map_err(write_err)
    }
}

/// What ran and where: the experiment, its host, targets and spec, its preset and sweep;
/// then a blank line.
pub(super) fn head(exp: &ExperimentResult) -> String {
    let h = &exp.host;
    let s = &exp.spec;
    let mut out = format!("experiment {} ({})\n", exp.experiment_id, crate::text::one_line(&s.name));
    out += &format!(
        "host    {}: {} {}, {} x {} @ {:.0} MHz, {} RAM\n",
        crate::text::one_line(&h.hostname),
        h.os,
        h.kernel.split(' ').next().unwrap_or(""),
        h.cpus,
        h.cpu_model,
        h.cpu_mhz,
        fmt_size(h.mem_bytes)
    );
    if let Some(j) = &h.slurm {
        out += &format!("slurm   {}\n", crate::text::one_line(&j.describe()));
    }
    for t in &h.targets {
        let mut dev = vec![];
        if let Some(d) = &t.device {
            dev.push(d.clone());
        }
        if let Some(m) = &t.device_model {
            dev.push(m.clone());
        }
        if let Some(r) = t.rotational {
            dev.push(if r { "rotational".into() } else { "non-rotational".into() });
        }
        if let Some(sch) = &t.scheduler {
            dev.push(format!("scheduler {sch}"));
        }
        if let Some(ra) = t.read_ahead_kb {
            dev.push(format!("read-ahead {ra} KiB"));
        }
        let on = if dev.is_empty() { String::new() } else { format!(" on {}", dev.join(", ")) };
        // With I/O-server ranks the files are in the servers' directory (as this host sees it).
        let what = match &s.servers {
            Some(sv) if sv.dir == t.dir => "servers",
            _ => "target ",
        };
        out += &format!("{what} {}: {}{on}\n", crate::text::escape_path(&t.dir), t.fs_described());
        if let Some(p) = &t.placement {
            out += &format!("        placement: {p}\n");
        }
        if let Some(c) = &t.client_cache {
            out += &format!("        client cache: {}\n", c.describe());
        }
    }
    let blast = s.phases.iter().any(|p| p.op == crate::spec::OpKind::Blast);
    let sync = match s.sync {
        _ if blast => "ends when the server acknowledges every byte".to_string(),
        crate::spec::SyncPolicy::None => "no commit".to_string(),
        // MPI-IO (the engine, or the strategy's writes) commits with MPI_File_sync.
        other if s.engine == "mpiio" || s.strategy == Some(crate::spec::Strategy::MpiIo) => {
            format!("commit {} by MPI_File_sync", other.label())
        }
        other => format!("commit {} by {}", other.label(), s.sync_call.name()),
    };
    let mut flags = vec![];
    if s.direct {
        flags.push("O_DIRECT".to_string());
    }
    if s.open_sync != crate::spec::OpenSync::None {
        flags.push(format!("O_{:?}", s.open_sync).to_uppercase());
    }
    if s.prealloc {
        flags.push("preallocated".into());
    }
    flags.extend(super::details::spec_launch(s));
    if s.iodepth > 1 {
        flags.push(format!("iodepth {}", s.iodepth));
    }
    if let Some(w) = s.window_bytes {
        flags.push(format!("window {}", fmt_size(w)));
    }
    if let Some(m) = s.mem() {
        flags.push(format!("memory {} of every {} B", m.len, m.stride));
    }
    if let Some(st) = s.strategy {
        flags.push(format!(
            "strategy {} · {} iters · comptime {}",
            st.name(),
            s.iters.unwrap_or(0),
            crate::units::fmt_duration_spec(s.comptime_ns.unwrap_or(0))
        ));
    }
    // What the phases move: on the spec line when every phase moves the same, else a line of
    // its own per phase.
    let data = super::details::phase_data(s);
    let (moved, per_phase) = match &data {
        Some(d) if d.iter().all(|(_, t)| *t == d[0].1) && !d.is_empty() => (d[0].1.clone(), None),
        Some(d) => {
            let each: Vec<String> = d.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            ("per phase below".to_string(), Some(each.join(" · ")))
        }
        None => (
            format!(
                "{} worker{} x {}",
                s.workers,
                if s.workers == 1 { "" } else { "s" },
                fmt_size(s.size_bytes)
            ),
            None,
        ),
    };
    // Metadata phases alone move no data blocks: no engine, block size or layout to state.
    let md_only = s.phases.iter().all(|p| p.op.is_metadata());
    let sync = match s.sync {
        _ if !md_only => sync,
        crate::spec::SyncPolicy::None => "no commit".to_string(),
        crate::spec::SyncPolicy::Each => "commit each by fsync".to_string(),
        _ if s.md.as_ref().is_some_and(|m| m.calls == crate::spec::MdCalls::Mdtest) => {
            "commit end by the sync command".to_string()
        }
        _ => {
            // What the syncfs can do on these file systems (on FUSE: reach no daemon).
            let mut reach: Vec<String> =
                h.targets.iter().filter_map(|t| crate::env::netfs::syncfs_reach(&t.fs)).collect();
            reach.dedup();
            match reach.is_empty() {
                true => "commit end by syncfs".to_string(),
                false => format!("commit end by syncfs ({})", reach.join("; ")),
            }
        }
    };
    let data = if md_only {
        String::new()
    } else {
        format!(" · bs {} · {}", fmt_size(s.bs_bytes), super::details::spec_layout(s))
    };
    out += &format!(
        "spec    {}{} · {}{data} · {}{} · {} rep{}\n",
        if exp.points.len() > 1 { "first point: " } else { "" },
        if md_only { "metadata" } else { &s.engine },
        moved,
        sync,
        if flags.is_empty() { String::new() } else { format!(" · {}", flags.join(" · ")) },
        s.reps,
        if s.reps == 1 { "" } else { "s" },
    );
    if let Some(each) = per_phase {
        out += &format!("phases  {each}\n");
    }
    if let Some(ns) = super::details::namespace_text(s) {
        out += &format!("names   {ns}\n");
    }
    out.push('\n');

    let d = &exp.design;
    if let Some(p) = &d.preset {
        let scale = if p.scale.is_empty() { String::new() } else { format!(", scale {}", p.scale) };
        out = out.replacen("\n", &format!("\npreset  {} ({}{}): {}\n", p.id, p.study, scale, p.title), 1);
    }
    if !d.axes.is_empty() {
        let axes: Vec<String> = d.axes.iter().map(|a| format!("{} = {}", a.key, a.text)).collect();
        let zip: Vec<String> = d.zip.iter().map(|g| format!(" · zip {}", g.join("+"))).collect();
        let warm =
            if s.warmup > 0 { format!(" · {} warm-up run(s) per point", s.warmup) } else { String::new() };
        out.pop();
        out += &format!(
            "sweep   {} · {} points{} · {} order{}\n\n",
            axes.join(" × "),
            exp.points.len(),
            zip.concat(),
            s.interleave.label(),
            warm
        );
    }

    out
}

/// The whole table for one experiment, with every section and the full legend (`--explain`).
pub fn render_table(exp: &ExperimentResult) -> String {
    let mut out = head(exp);
    let d = &exp.design;
    if super::strategies::any(exp) {
        out += &super::strategies::render_body(exp);
        out += &super::details::render_details(exp);
        return out + &failures(exp) + &super::findings::text(exp);
    }
    let mut swept: Vec<String> = d.axes.iter().map(|a| a.key.clone()).collect();
    for k in exp.points.first().map(|p| p.params.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
        if !swept.contains(&k) {
            swept.push(k);
        }
    }
    let any_warmup = exp.points.iter().any(|p| p.phases.iter().any(|ph| !ph.warmups.is_empty()));
    let cols = Columns::of(exp);
    let stat_cols = cols.headers();
    let mut headers: Vec<&str> = swept.iter().map(String::as_str).collect();
    let first_num = headers.len() + 3;
    headers.extend(["phase", "cache", "runs"]);
    headers.extend(stat_cols.iter().map(String::as_str));
    if any_warmup {
        headers.push("warm-up");
    }
    headers.push("flags");
    let n_num = stat_cols.len() + usize::from(any_warmup);
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let mut row: Vec<String> =
                swept.iter().map(|k| p.params.get(k).cloned().unwrap_or_default()).collect();
            row.push(ph.name.clone());
            row.push(cache_cell(ph));
            row.push(runs_cell(exp, p, ph));
            row.extend(cols.cells(ph));
            if any_warmup {
                let w: Vec<String> = ph
                    .warmups
                    .iter()
                    .filter(|r| r.status == Status::Complete)
                    .filter_map(|r| d.figure.of_in(ph.op.is_metadata(), r))
                    .map(super::summary::rate_fmt(ph))
                    .collect();
                row.push(if w.is_empty() { "-".into() } else { w.join(",") });
            }
            row.push(ph.flags.join("; "));
            rows.push(row);
        }
    }
    let right: Vec<usize> = (first_num..first_num + n_num).collect();
    out += &text_table(&headers, &rows, &right);
    out += &super::iops::render_iops(exp);
    out += &super::bounds::render_bounds(exp);
    out += &super::mix::render_mix(exp);
    out.push('\n');
    for line in cols.legend(exp) {
        out += &line;
        out.push('\n');
    }
    if any_warmup {
        out += &format!(
            "warm-up: {} of each warm-up run, stored but never in the statistics\n",
            d.figure.column()
        );
    }
    out += &super::steady::render_steady(exp);
    out += &super::details::render_details(exp);
    out += &failures(exp);
    out += &super::io500::text(exp);
    out += &super::findings::text(exp);
    // Names and facts from a user or a store (an imported host's model, a phase's name) never
    // reach a terminal raw.
    crate::text::terminal_safe(&out)
}

/// The cache cell of a phase: its policy and the most of its files' pages (or, for a metadata
/// phase made cold, of its names) that were cached as it began; and the most of its bytes,
/// over the complete runs, that were of blocks it had already moved (`again_fraction`).
pub(super) fn cache_cell(ph: &crate::results::PhaseResult) -> String {
    if !ph.op.is_metadata() {
        let again = ph
            .repetitions
            .iter()
            .filter(|r| r.status == Status::Complete)
            .filter_map(|r| r.again_fraction)
            .reduce(f64::max);
        let cell = format!("{} {:.1}%", ph.cache.label(), ph.cache.resident_fraction * 100.0);
        return match again {
            Some(a) => format!("{cell}, {:.1}% again", a * 100.0),
            None => cell,
        };
    }
    let bounds: Vec<f64> =
        ph.repetitions.iter().filter_map(|r| r.namespace.as_ref().and_then(|n| n.cached_at_most)).collect();
    // The label, as a data phase's: a cold one that a file system client's cache may serve,
    // a warm one whose names the client does not keep, say so.
    let label = ph.cache.label();
    match bounds.iter().copied().reduce(f64::max) {
        Some(b) if b < 1.0 => format!("{label} ≤{:.1}%", b * 100.0),
        Some(_) => format!("{label} ?"),
        None => label.to_string(),
    }
}

/// The runs cell of a phase: complete / measured, and when the experiment ended early the
/// runs planned too (`1/1 of 3`; those not run are counted under the table).
pub(super) fn runs_cell(exp: &ExperimentResult, p: &PointResult, ph: &PhaseResult) -> String {
    let done = ph.repetitions.iter().filter(|r| r.status == Status::Complete).count();
    let planned = p.spec.as_ref().unwrap_or(&exp.spec).reps as usize;
    let of = match &exp.not_run {
        Some(_) if planned > ph.repetitions.len() => format!(" of {planned}"),
        _ => String::new(),
    };
    format!("{done}/{}{of}", ph.repetitions.len())
}

/// One line per repetition that did not complete, and one for the runs not run at all.
pub(super) fn failures(exp: &ExperimentResult) -> String {
    let mut out = not_run(exp);
    for p in &exp.points {
        for ph in &p.phases {
            for r in ph.repetitions.iter().filter(|r| r.status != Status::Complete) {
                out += &format!(
                    "{} rep {} {}: {}\n",
                    ph.name,
                    r.rep,
                    if r.status == Status::Interrupted { "interrupted" } else { "failed" },
                    r.error.as_deref().unwrap_or("")
                );
            }
        }
    }
    out
}

/// The runs an experiment that ended early did not run, counted, and why (the runs column says
/// `1/1 of 3` then: complete / measured of those planned).
pub fn not_run(exp: &ExperimentResult) -> String {
    match &exp.not_run {
        Some(n) => format!(
            "not run: {} of the {} runs planned (runs: complete / measured of the repetitions planned); the experiment ended early: {}\n",
            n.runs, n.planned, n.reason
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let t =
            text_table(&["a", "num"], &[vec!["xx".into(), "1".into()], vec!["y".into(), "100".into()]], &[1]);
        assert_eq!(t, "a   num\nxx    1\ny   100\n");
    }
}
