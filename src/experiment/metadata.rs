//! The metadata parameters of a spec (`md_files`, `md_dirs`, `md_depth`, `md_fanout`,
//! `md_size`, `md_shift`, `md_find`, `md_calls`) and the metadata phases' order: the items a phase needs
//! must exist (made by an earlier phase, or made untimed before the first), a create must find
//! them absent, and what cannot run with metadata phases (I/O servers, strategies, the null
//! engine, kept data) is refused by name before any I/O; so is a parameter no point of an
//! experiment uses (a data phase's on metadata phases alone, a metadata one without them).

use crate::error::{Error, Result};
use crate::spec::{CachePolicy, ItemKind, Launcher, MdCalls, MdDirs, Namespace, OpKind, Phase, Spec};

use super::Params;
use super::params::parse_u64;
use super::resolve::ResolveEnv;

/// Items per worker unless told.
pub const DEFAULT_ITEMS: u64 = 1000;
/// The most items one worker may have.
pub const MAX_ITEMS: u64 = 1_000_000_000;
/// The most directories one tree may have (they are made untimed before the first phase).
pub const MAX_TREE_DIRS: u64 = 1_000_000;
pub use crate::spec::metadata::MAX_DEPTH;
/// The most bytes a created file may hold (read-files reads it whole into one buffer).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Whether a phase needs the items to exist (every one but those that make them).
fn needs_items(op: OpKind) -> bool {
    !matches!(op, OpKind::Create | OpKind::Mkdir)
}

/// The namespace of `spec`'s metadata phases (None when it has none; the md_* parameters are
/// then ignored, as other layouts ignore the stripe's, so a sweep over `ops` may keep them).
pub(super) fn resolve(params: &Params, spec: &Spec) -> Result<Option<Namespace>> {
    let md: Vec<&Phase> = spec.phases.iter().filter(|p| p.op.is_metadata()).collect();
    if md.is_empty() {
        return Ok(None);
    }
    let get = |k: &str| params.one(k);
    let first = md[0];
    let refuse = |why: &str| Err(Error::spec("ops", &first.name, why));
    if spec.servers.is_some() {
        return refuse(
            "metadata phases work in the clients' directories; I/O-server ranks serve data files only",
        );
    }
    if spec.strategy.is_some() {
        return refuse("a compute/I-O strategy writes data; it has no metadata phases");
    }
    if spec.reuse.is_some() {
        return refuse("reuse reads the data files of a kept run; metadata phases make their own");
    }
    let real = crate::worker::registry::find(&spec.engine).is_some_and(|r| r.def.caps.real_io);
    if !real {
        return Err(Error::spec(
            "engine",
            &spec.engine,
            "metadata phases make real files and directories (their calls are the same whatever the engine); this engine moves no data",
        ));
    }
    let files = md
        .iter()
        .find(|p| matches!(p.op, OpKind::Create | OpKind::Open | OpKind::ReadFiles | OpKind::Unlink));
    let dirs = md.iter().find(|p| matches!(p.op, OpKind::Mkdir | OpKind::Rmdir));
    let kind = match (files, dirs) {
        (Some(f), Some(d)) => {
            return Err(Error::spec(
                "ops",
                format!("{},{}", f.name, d.name),
                "a run's items are files (create, open, read-files, unlink) or directories (mkdir, rmdir), not both",
            ));
        }
        (None, Some(_)) => ItemKind::Dirs,
        _ => ItemKind::Files,
    };
    // The phases in order: each finds the items as the one before left them.
    let mut present: Option<bool> = None;
    for p in &md {
        let need = needs_items(p.op);
        match present {
            Some(false) if need => {
                return Err(Error::spec(
                    "ops",
                    &p.name,
                    "its items were removed by an earlier phase: make them again first (create or mkdir)",
                ));
            }
            Some(true) if !need => {
                return Err(Error::spec(
                    "ops",
                    &p.name,
                    "its items exist already (made by an earlier phase): remove them first (unlink or rmdir)",
                ));
            }
            _ => {}
        }
        present = Some(match p.op {
            OpKind::Create | OpKind::Mkdir => true,
            OpKind::Unlink | OpKind::Rmdir => false,
            _ => true,
        });
        if p.cache == CachePolicy::Cold && !drop_caches_allowed() {
            return Err(Error::spec(
                "ops",
                &p.name,
                "a cold metadata phase drops the kernel's directory entries and inodes (writing 3 to /proc/sys/vm/drop_caches), which needs root",
            ));
        }
    }

    let items = parse_u64("md_files", get("md_files").unwrap_or("1000"))?;
    if items == 0 || items > MAX_ITEMS {
        return Err(Error::spec("md_files", items, format!("must be between 1 and {MAX_ITEMS}")));
    }
    let dirs_s = get("md_dirs").unwrap_or("unique");
    let dirs =
        MdDirs::parse(dirs_s).ok_or_else(|| Error::spec("md_dirs", dirs_s, "expected unique or shared"))?;
    let depth = parse_u64("md_depth", get("md_depth").unwrap_or("0"))?;
    if depth > MAX_DEPTH as u64 {
        return Err(Error::spec("md_depth", depth, format!("must be between 0 and {MAX_DEPTH}")));
    }
    let fanout = parse_u64("md_fanout", get("md_fanout").unwrap_or("1"))?;
    if fanout == 0 || fanout > MAX_TREE_DIRS {
        return Err(Error::spec("md_fanout", fanout, format!("must be between 1 and {MAX_TREE_DIRS}")));
    }
    let size_s = get("md_size").unwrap_or("0");
    let file_bytes = crate::units::parse_abs_size(size_s).map_err(|e| Error::spec("md_size", size_s, e.0))?;
    if file_bytes > MAX_FILE_BYTES {
        return Err(Error::spec("md_size", size_s, "must be at most 64 MiB (a file is read whole)"));
    }
    if file_bytes > 0 && kind == ItemKind::Dirs {
        return Err(Error::spec(
            "md_size",
            size_s,
            "the items are directories (mkdir, rmdir), which hold no bytes",
        ));
    }
    let find = get("md_find").unwrap_or("*").to_string();
    if find.is_empty() || find.contains(['/', '\0', '\n']) {
        return Err(Error::spec("md_find", &find, "a name pattern: not empty, no `/`"));
    }
    let ns = Namespace {
        items,
        dirs,
        depth: depth as u32,
        fanout: fanout as u32,
        file_bytes,
        shift: shift(get("md_shift"), spec)?,
        find,
        kind,
        calls: match get("md_calls") {
            None => MdCalls::Beneath,
            Some(v) => {
                MdCalls::parse(v).ok_or_else(|| Error::spec("md_calls", v, "expected beneath or mdtest"))?
            }
        },
    };
    if ns.tree_dirs() > MAX_TREE_DIRS {
        return Err(Error::spec(
            "md_depth",
            depth,
            format!(
                "with md_fanout {fanout} a tree has {} directories, more than {MAX_TREE_DIRS}",
                ns.tree_dirs()
            ),
        ));
    }
    Ok(Some(ns))
}

/// `md_shift`: a number of workers, or `node` under MPI: the workers on rank 0's host. A shift
/// that moves none of the phases (no stat, open or read-files), or that brings every worker of
/// several back to its own items (a multiple of the workers), is refused by name: it would do
/// nothing. (With one worker there is no other's items to visit: mdtest's `-N 1` on one rank
/// does the same, and the run's names line says so.)
fn shift(v: Option<&str>, spec: &Spec) -> Result<u32> {
    let Some(v) = v.map(str::trim) else { return Ok(0) };
    let n = if v != "node" {
        let n = parse_u64("md_shift", v)?;
        u32::try_from(n).map_err(|_| Error::spec("md_shift", v, "too large"))?
    } else {
        match (spec.launcher, crate::launch::world()) {
            (Launcher::Mpi, Some(w)) => {
                let on_first = w.hosts.iter().filter(|h| **h == w.hosts[0]).count() as u32;
                on_first * (spec.workers / w.size).max(1)
            }
            _ => {
                return Err(Error::spec(
                    "md_shift",
                    v,
                    "`node` shifts by the ranks per host: it needs MPI ranks (launcher = mpi)",
                ));
            }
        }
    };
    let shifted = spec.phases.iter().any(|p| matches!(p.op, OpKind::Stat | OpKind::Open | OpKind::ReadFiles));
    let ops = || spec.phases.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(",");
    if n > 0 && !shifted {
        return Err(Error::spec(
            "md_shift",
            v,
            format!(
                "it shifts the items stat, open and read-files visit; the phases ({}) have none of them",
                ops()
            ),
        ));
    }
    if n > 0 && spec.workers > 1 && n % spec.workers == 0 {
        let why = if v == "node" {
            format!(
                "all {} workers are on rank 0's host, so each would visit its own items; run on several hosts or drop it",
                spec.workers
            )
        } else {
            format!(
                "with {} workers, worker w + {n} is worker w: each would visit its own items, as with no shift; give a shift that is not a multiple of {}",
                spec.workers, spec.workers
            )
        };
        return Err(Error::spec("md_shift", v, why));
    }
    Ok(n)
}

/// Whether this process may drop the kernel's caches.
fn drop_caches_allowed() -> bool {
    crate::env::sys::can_write("/proc/sys/vm/drop_caches")
}

/// The parameters only data phases use: given to an experiment whose phases are all metadata
/// phases, they would do nothing.
const DATA_KEYS: &[&str] = &[
    "size",
    "bs",
    "layout",
    "files",
    "files_per_worker",
    "round_robin",
    "stripe_unit",
    "stripe_count",
    "pieces",
    "reorder_reads",
    "order",
    "engine",
    "mpiio",
    "mpiio_hint",
    "direct",
    "open_sync",
    "prealloc",
    "alloc",
    "cache",
    "verify",
    "iodepth",
    "window",
    "mem_len",
    "mem_stride",
];

/// Every point's parameters and resolved spec checked together: a parameter no point uses is
/// refused, naming it and the phases. On metadata phases alone, a data parameter whose value
/// changes the spec (one given at its default changes nothing, as in a printed spec); without
/// metadata phases, any `md_*` parameter.
pub(super) fn check_used(points: &[(Params, &Spec)], env: &ResolveEnv) -> Result<()> {
    let ops = |s: &Spec| s.phases.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(",");
    let (data, md) = (
        points.iter().any(|(_, s)| s.phases.iter().any(|p| !p.op.is_metadata())),
        points.iter().any(|(_, s)| s.md.is_some()),
    );
    let reads = points.iter().any(|(_, s)| s.phases.iter().any(|p| p.op == OpKind::Read));
    for (params, spec) in points {
        if !reads && let Some(r) = spec.reorder_reads {
            return Err(Error::spec(
                "reorder_reads",
                r.label(),
                format!("it reorders the ranks of read phases; the phases ({}) have none", ops(spec)),
            ));
        }
        if !md && let Some((k, v)) = params.0.iter().find(|(k, _)| k.starts_with("md_")) {
            return Err(Error::spec(
                k,
                v.join(","),
                format!(
                    "the phases ({}) are all data phases: {k} shapes the items of metadata phases (create, stat, open, read-files, rename, unlink, mkdir, rmdir, find) only",
                    ops(spec)
                ),
            ));
        }
        if data {
            continue;
        }
        for &k in DATA_KEYS.iter().filter(|k| params.0.contains_key(**k)) {
            let mut without = params.clone();
            without.0.remove(k);
            if super::resolve::resolve(&without, env).ok().as_ref() != Some(*spec) {
                let hint = match k {
                    "cache" => {
                        "cache is the data phases' default state; a metadata phase names its own (stat:cold, stat:warm)"
                    }
                    _ => "the items are shaped by md_files, md_dirs, md_depth, md_fanout and md_size",
                };
                return Err(Error::spec(
                    k,
                    params.0[k].join(","),
                    format!(
                        "the phases ({}) are all metadata phases, which move no data blocks: {k} applies to data phases only ({hint})",
                        ops(spec)
                    ),
                ));
            }
        }
    }
    Ok(())
}
