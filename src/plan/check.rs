//! What planning relies on of a spec, checked: resolution makes only specs that pass, and a
//! spec from elsewhere (an import, a store another build wrote) is planned, and read by what
//! plans it, only once it passes, so that [`super::plan`] never divides by zero, indexes past
//! a list or underflows on it. Each refusal names the field and why.

use crate::spec::{Layout, Spec};

/// The most workers, files and metadata items a plan is made for: resolution's own bounds.
const MAX_WORKERS: u32 = 4096;
const MAX_FILES: u32 = 1_000_000;
const MAX_ITEMS: u64 = 1_000_000_000;
const MAX_TREE_DIRS: u64 = 1_000_000;

/// Whether `spec` can be planned: `Err((field, reason))` for the first field at fault.
pub fn check(spec: &Spec) -> Result<(), (String, String)> {
    let bad = |field: &str, why: String| Err((field.to_string(), why));
    if spec.phases.is_empty() {
        return bad("phases", "no phase".into());
    }
    if spec.workers == 0 || spec.workers > MAX_WORKERS {
        return bad("workers", format!("{} workers: between 1 and {MAX_WORKERS}", spec.workers));
    }
    if spec.files > MAX_FILES {
        return bad("files", format!("{} files: at most {MAX_FILES}", spec.files));
    }
    if spec.dirs.is_empty() {
        return bad("dirs", "no directory".into());
    }
    if spec.bs_bytes == 0 || spec.size_bytes < spec.bs_bytes || spec.size_bytes % spec.bs_bytes != 0 {
        return bad(
            "size_bytes",
            format!("{} bytes is not a whole number of blocks of {} bytes", spec.size_bytes, spec.bs_bytes),
        );
    }
    // Byte figures stay below 2^63, as resolution keeps them: a worker's files, the shared file.
    let limit = 1u64 << 63;
    let within = |n: u64| spec.size_bytes.checked_mul(n).is_some_and(|b| b < limit);
    if !within(spec.file_count() as u64) || !within(spec.workers as u64) {
        return bad(
            "size_bytes",
            format!("{} bytes per file: the run's data passes 2^63 bytes", spec.size_bytes),
        );
    }
    if spec.round_robin == 0 {
        return bad("round_robin", "0: at least 1".into());
    }
    let targets = spec.servers.as_ref().map_or(spec.dirs.len(), |s| s.count as usize);
    if spec.layout.striped() {
        let (Some(unit), Some(count)) = (spec.stripe_unit_bytes, spec.stripe_count) else {
            return bad("stripe_unit_bytes", "a striped layout needs a stripe unit and count".into());
        };
        if unit == 0 || !(unit % spec.bs_bytes == 0 || spec.bs_bytes % unit == 0) {
            return bad(
                "stripe_unit_bytes",
                format!("{unit} and bs {} do not divide one another", spec.bs_bytes),
            );
        }
        if count == 0 || count as usize > targets {
            return bad("stripe_count", format!("{count}: between 1 and the {targets} targets"));
        }
    }
    let shared_blocks = spec.size_bytes.saturating_mul(spec.workers as u64) / spec.bs_bytes;
    for (i, ph) in spec.phases.iter().enumerate() {
        let field = |k: &str| format!("phases[{i}].{k}");
        let w = spec.phase_workers(ph);
        if w == 0 || w > MAX_WORKERS {
            return bad(&field("workers"), format!("{w} workers: between 1 and {MAX_WORKERS}"));
        }
        if ph.round_robin == Some(0) {
            return bad(&field("round_robin"), "0: at least 1".into());
        }
        if ph.op.is_metadata() {
            if spec.md.is_none() {
                return bad(
                    "md",
                    format!("phase {} is a metadata phase, and the spec has no namespace", ph.name),
                );
            }
        } else if spec.phase_layout(ph) == Layout::SharedStrided && w as u64 > shared_blocks {
            return bad(&field("workers"), format!("{w} workers stride over {shared_blocks} blocks"));
        }
        if ph.layout.is_some_and(|l| l.striped()) && !spec.layout.striped() {
            return bad(&field("layout"), "a striped phase of files that are not striped".into());
        }
    }
    if let Some(md) = &spec.md {
        if md.items == 0 || md.items > MAX_ITEMS {
            return bad("md.items", format!("{}: between 1 and {MAX_ITEMS}", md.items));
        }
        if md.fanout == 0 || md.depth > crate::spec::metadata::MAX_DEPTH || md.tree_dirs() > MAX_TREE_DIRS {
            return bad(
                "md.depth",
                format!(
                    "depth {} and fan-out {}: a tree of 1 to {MAX_TREE_DIRS} directories, at most {} deep",
                    md.depth,
                    md.fanout,
                    crate::spec::metadata::MAX_DEPTH
                ),
            );
        }
        if md.find.is_empty() || md.find.contains(['/', '\0']) {
            return bad("md.find", "a name pattern: not empty, no `/`".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Params, ResolveEnv, resolve};

    fn spec(params: &[(&str, &str)]) -> Spec {
        let mut p = Params::default();
        p.set_one("dirs", std::env::temp_dir().display()).unwrap();
        for (k, v) in params {
            p.set(k, v.split(',').map(String::from).collect()).unwrap();
        }
        resolve(&p, &ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }).unwrap()
    }

    /// Every spec resolution makes passes; every spec with one or two of its fields changed to
    /// an edge value either is refused or is planned, and read by the report's parts that plan
    /// it, without a panic (an imported metadata experiment without its namespace once made
    /// `results show` index past an empty list).
    #[test]
    fn a_spec_that_passes_is_planned_without_a_panic() {
        let bases = [
            spec(&[("size", "1MiB"), ("bs", "64KiB"), ("workers", "3"), ("files", "5")]),
            spec(&[("layout", "shared-strided"), ("workers", "2"), ("size", "256KiB"), ("bs", "64KiB")]),
            spec(&[
                ("ops", "create,stat,find,unlink"),
                ("md_files", "10"),
                ("md_depth", "2"),
                ("md_fanout", "2"),
            ]),
            spec(&[("ops", "write,read:workers=2"), ("workers", "4"), ("size", "64KiB"), ("bs", "4KiB")]),
        ];
        type Mutate = fn(&mut Spec, u64);
        let edits: [(&str, Mutate); 12] = [
            ("workers", |s, v| s.workers = v as u32),
            ("files", |s, v| s.files = v as u32),
            ("bs", |s, v| s.bs_bytes = v),
            ("size", |s, v| s.size_bytes = v),
            ("round_robin", |s, v| s.round_robin = v as u32),
            ("phase workers", |s, v| s.phases[0].workers = Some(v as u32)),
            ("layout", |s, v| {
                s.layout = Layout::parse(Layout::NAMES[v as usize % Layout::NAMES.len()]).unwrap()
            }),
            ("stripe", |s, v| (s.stripe_unit_bytes, s.stripe_count) = (Some(v), Some(v as u32))),
            ("md", |s, v| {
                if v == 0 {
                    s.md = None
                }
            }),
            ("md items", |s, v| {
                if let Some(m) = s.md.as_mut() {
                    m.items = v
                }
            }),
            ("md fanout", |s, v| {
                if let Some(m) = s.md.as_mut() {
                    (m.fanout, m.depth) = (v as u32, v as u32 % 80)
                }
            }),
            ("dirs", |s, v| {
                if v == 0 {
                    s.dirs.clear()
                }
            }),
        ];
        let values = [0u64, 1, 3, 17, 1 << 40, u32::MAX as u64, u64::MAX];
        let mut planned = 0;
        for base in &bases {
            assert_eq!(check(base), Ok(()), "{base:?}");
            for (i, (_, a)) in edits.iter().enumerate() {
                for (j, (_, b)) in edits.iter().enumerate().skip(i) {
                    for &x in &values {
                        for &y in &values[..if i == j { 1 } else { values.len() }] {
                            let mut s = base.clone();
                            a(&mut s, x);
                            b(&mut s, y);
                            if check(&s).is_err() {
                                continue;
                            }
                            let plan = crate::plan::plan(&s);
                            assert_eq!(plan.phases.len(), s.phases.len());
                            let _ = crate::report::details::phase_data(&s);
                            planned += 1;
                        }
                    }
                }
            }
        }
        assert!(planned > 500, "{planned}");
    }
}
