//! The plan as text: phases, files, disk space (and what is free), each worker's ops, a
//! strategy's roles, and how data is committed.

use std::io::Write;

use super::{Planned, disk_bytes_total};
use crate::error::Result;
use crate::plan::RunPlan;
use crate::report::{Exporter, write_err};
use crate::spec::OpKind;
use crate::units::fmt_size;

pub struct Text;

impl Exporter<Planned<'_>> for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, p: &Planned<'_>, out: &mut dyn Write) -> Result<()> {
        out.write_all(crate::text::terminal_safe(&text(p)).as_bytes()).map_err(write_err)
    }
}

/// The whole text.
fn text(p: &Planned<'_>) -> String {
    let (spec, plan, free) = (p.spec, p.plan, p.free);
    // Metadata phases alone use no engine and no data files: the plan names neither.
    let data = crate::report::brief::moves_data(spec);
    let mut s = format!(
        "plan for `{}`: {} {}phase{} x {} repetition{}{}\n",
        spec.name,
        plan.phases.len(),
        if data { "" } else { "metadata " },
        if plan.phases.len() == 1 { "" } else { "s" },
        spec.reps,
        if spec.reps == 1 { "" } else { "s" },
        if data { format!(", engine {}", spec.engine) } else { String::new() }
    );
    if let Some(how) = crate::report::details::spec_launch(spec) {
        s += &format!("workers: {how}\n");
    }
    if data || !plan.files.is_empty() {
        s += "files (created in a new .iolab-RUNID/ directory under each target, removed after each repetition";
        s += if spec.keep { "; kept: --keep)\n" } else { ")\n" };
    }
    for f in plan.files.iter().take(16) {
        s += &format!(
            "  {:<14} {:>10}  in {}\n",
            f.name,
            fmt_size(f.size_bytes),
            crate::report::servers::target_text(spec, f.target)
        );
    }
    if plan.files.len() > 16 {
        s += &format!("  ... and {} more files\n", plan.files.len() - 16);
    }
    s += &format!("disk space needed: {}", fmt_size(disk_bytes_total(spec, plan)));
    let dirs = super::space_dirs(spec);
    let on = if spec.servers.is_some() { " on this host" } else { "" };
    for (i, d) in dirs.iter().enumerate() {
        if dirs[..i].contains(d) {
            continue;
        }
        if let Some(&Some((free, inodes))) = free.get(i) {
            let d = crate::text::escape_path(d);
            // -1 free (CephFS, which makes inodes as needed): no limit.
            let inodes = if inodes == u64::MAX { "unlimited".to_string() } else { inodes.to_string() };
            s += &format!(" (free in {d}{on}: {}, {inodes} inodes)", fmt_size(free));
        }
    }
    s += "\n";
    if plan.layout_first {
        s += "the first phase reads existing data: files are written in full first (not timed)\n";
    }
    if let (Some(ns), Some(words)) = (&plan.namespace, crate::report::details::namespace_text(spec)) {
        let roots: Vec<&str> = ns.roots.iter().take(4).map(|r| r.path.as_str()).collect();
        let more =
            if ns.roots.len() > 4 { format!(" and {} more", ns.roots.len() - 4) } else { String::new() };
        s += &format!(
            "names: {words}; {} items, {} director{} in {}{more} (made before the first phase, not timed)\n",
            ns.items(),
            ns.dirs(),
            if ns.dirs() == 1 { "y" } else { "ies" },
            roots.join(", ")
        );
        if ns.make_first {
            s += "the first metadata phase needs its items: they are made first (not timed)\n";
        }
    }
    for ph in &plan.phases {
        if let (true, Some(md)) = (ph.op.is_metadata(), &spec.md) {
            let bytes = if matches!(ph.op, OpKind::Create | OpKind::ReadFiles) {
                format!(", {} in all", fmt_size(md.file_bytes * md.items * ph.workers.len() as u64))
            } else {
                String::new()
            };
            s += &format!(
                "phase {} `{}`: {} with {} worker{} ({}{bytes}); cache {}: {}\n",
                ph.index + 1,
                ph.name,
                ph.op.name(),
                ph.workers.len(),
                if ph.workers.len() == 1 { "" } else { "s" },
                if md.dirs == crate::spec::MdDirs::Shared { "one shared tree" } else { "a tree each" },
                ph.cache.name(),
                crate::target::ns_cache::method(ph.cache)
            );
            s += &md_workers(ph);
            continue;
        }
        let rr =
            if ph.round_robin > 1 { format!(", {} files at a time", ph.round_robin) } else { String::new() };
        s += &format!(
            "phase {} `{}`: {} {} with {} worker{} ({}{rr}), {} in all; cache {}: {}\n",
            ph.index + 1,
            ph.name,
            ph.op.name(),
            ph.order.label(),
            ph.workers.len(),
            if ph.workers.len() == 1 { "" } else { "s" },
            ph.layout.name(),
            fmt_size(ph.bytes()),
            ph.cache.name(),
            crate::target::cache::method(ph.cache, spec.direct, spec.drop_caches)
        );
        if let Some(sp) = crate::strategy::Plan::of(spec) {
            s += &strategy_text(&sp, plan);
            continue;
        }
        if ph.op.is_metadata() {
            s += &md_workers(ph);
            continue;
        }
        for w in ph.workers.iter().take(8) {
            let mut files: Vec<&str> =
                w.files.iter().take(4).map(|&g| plan.files[g as usize].name.as_str()).collect();
            let more = format!("... ({} files)", w.files.len());
            if w.files.len() > 4 {
                files.push(&more);
            }
            let first: Vec<String> = w
                .ops
                .iter()
                .take(4)
                .map(|o| {
                    if w.files.len() > 1 {
                        format!("{}@{}", plan.files[w.files[o.file as usize] as usize].name, o.offset)
                    } else {
                        o.offset.to_string()
                    }
                })
                .collect();
            let ops = match w.ops.parallel_pieces() {
                0 => format!("{} ops of {}", w.ops.n_ops, fmt_size(w.ops.op_len())),
                n => format!(
                    "{} ops of {} ({n} pieces of {} together)",
                    w.ops.timed_ops(),
                    fmt_size(w.ops.bs),
                    fmt_size(w.ops.op_len())
                ),
            };
            s += &format!(
                "  worker {}: {ops} on {} ({}), offsets {}{}\n",
                w.worker,
                files.join(", "),
                fmt_size(w.ops.bytes()),
                first.join(", "),
                if w.ops.n_ops > 4 { ", ..." } else { "" }
            );
        }
        if ph.workers.len() > 8 {
            s += &format!("  ... and {} more workers\n", ph.workers.len() - 8);
        }
    }
    let sync = match spec.sync {
        crate::spec::SyncPolicy::None => "never (data may stay in the page cache)".to_string(),
        _ if spec.phases.iter().all(|p| p.op.is_metadata()) && spec.sync == crate::spec::SyncPolicy::Each => {
            "each item by fsync (files; their directory for the others)".to_string()
        }
        _ if spec.phases.iter().all(|p| p.op.is_metadata()) => {
            let mdtest = spec.md.as_ref().is_some_and(|m| m.calls == crate::spec::MdCalls::Mdtest);
            let mut reach: Vec<String> = spec
                .dirs
                .iter()
                .filter_map(|d| crate::env::netfs::syncfs_reach(&crate::env::host::fs_identity(d)))
                .collect();
            reach.dedup();
            let mut t = format!(
                "end of each phase by {}",
                if mdtest { "the sync command (sh -c sync)" } else { "syncfs" }
            );
            if !reach.is_empty() && !mdtest {
                t += &format!(" ({})", reach.join("; "));
            }
            t
        }
        p => format!("{} by {}", p.label(), spec.sync_call.name()),
    };
    s += &format!("commit: {sync}\n");
    s
}

/// What each worker of a metadata phase visits.
fn md_workers(ph: &crate::plan::PhasePlan) -> String {
    let mut s = String::new();
    for w in ph.workers.iter().take(8) {
        let Some(m) = w.md else { continue };
        let whose = if m.owner == w.worker { "its own".to_string() } else { format!("worker {}'s", m.owner) };
        s += &match (m.op, m.share) {
            (crate::spec::OpKind::Find, Some((i, n))) => {
                format!(
                    "  worker {}: walks the shared tree, stats the entries whose names hash to {i} of {n}\n",
                    w.worker
                )
            }
            (crate::spec::OpKind::Find, None) => {
                format!("  worker {}: walks its tree, stats every entry\n", w.worker)
            }
            _ => format!(
                "  worker {}: {} items, {whose}{}\n",
                w.worker,
                m.items,
                if m.renamed { " (renamed)" } else { "" }
            ),
        };
    }
    if ph.workers.len() > 8 {
        s += &format!("  ... and {} more workers\n", ph.workers.len() - 8);
    }
    s
}

/// A strategy's roles: who computes, hands over, writes and syncs, and where each write goes.
fn strategy_text(sp: &crate::strategy::Plan, plan: &RunPlan) -> String {
    let ns = sp.comptime_ns;
    let mut s = format!(
        "strategy {} ({}): {} iterations, comptime {} ({} of compute in all, {} written)\n",
        sp.strategy.name(),
        sp.strategy.about(),
        sp.iters,
        crate::units::fmt_duration_spec(ns),
        crate::units::fmt_ns(ns * sp.workers as u64),
        fmt_size(sp.total_bytes())
    );
    for (r, line) in sp.roles.iter().zip(sp.describe()) {
        s += &format!("  {line}\n");
        if let Some(w) = &r.write {
            let name = &plan.files[w.file as usize].name;
            let offs: Vec<String> =
                (0..sp.iters.min(4)).map(|i| sp.offset(w.parts_per_iter, i, 0).to_string()).collect();
            s += &format!(
                "    {} ops of {} on {name}, offsets {}{}\n",
                sp.iters,
                fmt_size(w.parts_per_iter as u64 * sp.bs),
                offs.join(", "),
                if sp.iters > 4 { ", ..." } else { "" }
            );
        }
    }
    if let Some(line) = sp.describe().get(sp.roles.len()) {
        s += &format!("  {line}\n");
    }
    s
}
