//! What ran, in brief, for listings and titles: a point's spec as one cell (the engine, workers
//! and sizes of its data phases, the items of its metadata phases: never the data parameters a
//! metadata phase does not use), and the sizes a set of points ran.

use crate::spec::{ItemKind, Namespace, Spec};
use crate::units::fmt_size;

/// Whether a point has phases that move data blocks.
pub fn moves_data(s: &Spec) -> bool {
    s.phases.iter().any(|p| !p.op.is_metadata())
}

/// A metadata phase's items per worker: `1000 files`, `300 files of 3901 B`, `500 directories`.
fn items(ns: &Namespace) -> String {
    let what = if ns.kind == ItemKind::Dirs { "directories" } else { "files" };
    let mut t = format!("{} {what}", ns.items);
    if ns.file_bytes > 0 {
        t += &format!(" of {}", bytes(ns.file_bytes));
    }
    t
}

/// A size in bytes as a brief says it: `3901 B`, `1 MiB`, `2.87 MiB`.
fn bytes(b: u64) -> String {
    if b % 1024 == 0 || b >= 1 << 20 { fmt_size(b) } else { format!("{b} B") }
}

/// One point's spec in one cell: `psync x2 512 MiB bs 1 MiB` for data phases, `metadata x2
/// 1000 files` for metadata phases, both joined with ` + ` when it has both.
pub fn spec_brief(s: &Spec) -> String {
    let mut parts = vec![];
    if moves_data(s) {
        parts.push(format!(
            "{} x{} {} bs {}",
            s.engine,
            s.workers,
            fmt_size(s.size_bytes),
            bytes(s.bs_bytes)
        ));
    }
    if let Some(ns) = &s.md {
        let who = if parts.is_empty() { format!("metadata x{} ", s.workers) } else { String::new() };
        parts.push(format!("{who}{}", items(ns)));
    }
    parts.join(" + ")
}

/// Distinct values in order, a few listed, more as their range (`a..b`).
fn values(mut v: Vec<u64>, fmt: fn(u64) -> String) -> String {
    v.sort_unstable();
    v.dedup();
    match v.as_slice() {
        [a, .., b] if v.len() > 3 => format!("{}..{}", fmt(*a), fmt(*b)),
        _ => v.iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(", "),
    }
}

/// The sizes the points ran: `size 4 MiB, bs 16 KiB..1 MiB` over the points that move data,
/// `300, 500 files per worker` over those with metadata phases (and the bytes of each file),
/// joined with `; `; `-` for none.
pub fn sizes_run(specs: &[&Spec]) -> String {
    let data: Vec<&&Spec> = specs.iter().filter(|s| moves_data(s)).collect();
    let md: Vec<&Namespace> = specs.iter().filter_map(|s| s.md.as_ref()).collect();
    let mut parts = vec![];
    if !data.is_empty() {
        parts.push(format!(
            "size {}, bs {}",
            values(data.iter().map(|s| s.size_bytes).collect(), fmt_size),
            values(data.iter().map(|s| s.bs_bytes).collect(), bytes)
        ));
    }
    if !md.is_empty() {
        let what =
            match (md.iter().all(|n| n.kind == ItemKind::Dirs), md.iter().all(|n| n.kind == ItemKind::Files))
            {
                (true, _) => "directories",
                (_, true) => "files",
                _ => "items",
            };
        let mut t =
            format!("{} {what} per worker", values(md.iter().map(|n| n.items).collect(), |n| n.to_string()));
        if md.iter().any(|n| n.file_bytes > 0) {
            t += &format!(" of {}", values(md.iter().map(|n| n.file_bytes).collect(), bytes));
        }
        parts.push(t);
    }
    if parts.is_empty() { "-".into() } else { parts.join("; ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testing::{env, params};

    fn spec(pairs: &[(&str, &str)]) -> Spec {
        crate::experiment::resolve(&params(pairs, ';'), &env()).unwrap()
    }

    #[test]
    fn a_brief_names_only_what_the_phases_use() {
        let data = spec(&[("size", "1MiB"), ("bs", "4KiB"), ("workers", "2"), ("ops", "write")]);
        assert_eq!(spec_brief(&data), "psync x2 1 MiB bs 4 KiB");
        let md = spec(&[("ops", "create,stat"), ("md_files", "300"), ("md_size", "3901")]);
        assert_eq!(spec_brief(&md), "metadata x1 300 files of 3901 B");
        let both = spec(&[("ops", "write,create"), ("size", "1MiB"), ("md_files", "10")]);
        assert_eq!(spec_brief(&both), "psync x1 1 MiB bs 1 MiB + 10 files");
        let dirs = spec(&[("ops", "mkdir,rmdir"), ("md_files", "5")]);
        assert_eq!(spec_brief(&dirs), "metadata x1 5 directories");
        assert_eq!(sizes_run(&[&md]), "300 files per worker of 3901 B");
        assert_eq!(
            sizes_run(&[&data, &md, &dirs]),
            "size 1 MiB, bs 4 KiB; 5, 300 items per worker of 0 B, 3901 B"
        );
    }
}
