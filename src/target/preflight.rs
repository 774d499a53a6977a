//! Preflight: before anything is written, each file system holding a target must have the
//! space and the inodes the plan puts there, plus a margin (5% + 64 MiB) so the run never
//! fills a disk to the last block; one whose files live in memory (tmpfs, ramfs) must also fit
//! in the memory the machine can give, whatever its size says. Targets on one file system (a
//! directory named twice, or two directories of one disk) are counted together, once, with
//! the sum of their needs. Where a metadata phase renames items, each target's file system is
//! tried first for the rename it makes (renameat2 with RENAME_NOREPLACE), in a work directory
//! of its own that goes with it.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::workdir::WorkDirs;
use crate::env::dirs::Dir;
use crate::env::sys;
use crate::error::{Error, Result};
use crate::plan::RunPlan;
use crate::spec::{OpKind, Spec};
use crate::units::fmt_size;

/// Fixed part of the space margin.
pub const MARGIN_FIXED_BYTES: u64 = 64 << 20;

/// Space and inodes a plan needs on one file system, and what it has.
#[derive(Debug, Clone, PartialEq)]
pub struct FsNeed {
    /// The targets on this file system.
    pub dirs: Vec<PathBuf>,
    /// Bytes of data the experiment keeps there at its peak.
    pub need_bytes: u64,
    /// `need_bytes` plus the margin.
    pub want_bytes: u64,
    pub free_bytes: u64,
    pub need_inodes: u64,
    /// u64::MAX where the file system makes inodes as needed.
    pub free_inodes: u64,
    /// A file system whose data lives in memory (tmpfs, ramfs): what the plan takes of it.
    pub memory: Option<MemoryNeed>,
}

/// What a plan keeps on a memory file system takes memory: its bytes, and kernel memory for
/// each file and directory (an inode and a directory entry).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryNeed {
    /// `tmpfs` or `ramfs`.
    pub fs: &'static str,
    /// The data's bytes and its files' and directories' kernel memory.
    pub need_bytes: u64,
    /// `need_bytes` plus the margin.
    pub want_bytes: u64,
    /// Kernel memory per file or directory counted.
    pub per_item_bytes: u64,
    /// Memory the machine can give now (and, for tmpfs, free swap, where its pages can go).
    pub available_bytes: u64,
    pub source: String,
}

/// The kind of a memory file system, by its magic number (statfs): tmpfs (its pages can be
/// swapped out) or ramfs (never).
fn memory_fs(magic: u64) -> Option<&'static str> {
    match magic {
        0x0102_1994 => Some("tmpfs"),
        0x8584_58f6 => Some("ramfs"),
        _ => None,
    }
}

/// Kernel memory one file or directory of `fs` takes at least: its inode and its directory
/// entry, by their slab objects' sizes (/sys/kernel/slab), else this kernel's (Linux 6: 752
/// and 192 bytes).
fn per_item_bytes(fs: &str) -> u64 {
    let slab = |name: &str, default: u64| {
        crate::env::sys::read_kernel_file(format!("/sys/kernel/slab/{name}/slab_size"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(default)
    };
    let inode = if fs == "tmpfs" { slab("shmem_inode_cache", 752) } else { slab("inode_cache", 600) };
    inode + slab("dentry", 192)
}

/// Where `dir` is on a memory file system (tmpfs, ramfs), what `need_bytes` and `items` files
/// written there take of memory, when it is more than the machine can give (with the margin):
/// a refusal's words. None elsewhere, or when it fits. Every check of room beside the
/// targets' (a trace spool, a store, an import's copy, a node-local directory) ends with it.
pub fn memory_shortfall(dir: &std::path::Path, need_bytes: u64, items: u64) -> Option<String> {
    let fs = memory_fs(sys::fs_magic(dir).ok()?)?;
    let m = memory_need(fs, need_bytes, items);
    (m.want_bytes > m.available_bytes).then(|| {
        let files = match items {
            0 => String::new(),
            n => format!(
                " and {n} files and directories (at least {} B of kernel memory each) take {}",
                m.per_item_bytes,
                fmt_size(m.need_bytes)
            ),
        };
        format!(
            "{} is on a {fs}, whose files live in memory: {} there{files}, with the margin of 5% + 64 MiB {}, but {} of memory is available ({})",
            crate::text::escape_path(dir),
            fmt_size(need_bytes),
            fmt_size(m.want_bytes),
            fmt_size(m.available_bytes),
            m.source
        )
    })
}

/// What `need_bytes` of data and `items` files and directories take of the memory of a memory
/// file system `fs`, against what the machine can give (for tmpfs, with its free swap).
fn memory_need(fs: &'static str, need_bytes: u64, items: u64) -> MemoryNeed {
    let per_item_bytes = per_item_bytes(fs);
    let need = need_bytes.saturating_add(items.saturating_mul(per_item_bytes));
    let avail = crate::env::memory::available();
    let swap = if fs == "tmpfs" {
        crate::env::sys::read_kernel_file("/proc/meminfo")
            .ok()
            .and_then(|m| crate::env::memory::meminfo_field(&m, "SwapFree:"))
            .unwrap_or(0)
    } else {
        0
    };
    let (bytes, source) = match avail {
        Some(a) => (a.bytes.saturating_add(swap), a.source),
        None => (u64::MAX, "unknown".to_string()),
    };
    let source = if swap > 0 { format!("{source}, and {} of free swap", fmt_size(swap)) } else { source };
    MemoryNeed {
        fs,
        need_bytes: need,
        want_bytes: need.saturating_add(margin(need)),
        per_item_bytes,
        available_bytes: bytes,
        source,
    }
}

impl FsNeed {
    pub fn ok(&self) -> bool {
        (self.need_bytes == 0 || self.free_bytes >= self.want_bytes) && self.free_inodes >= self.need_inodes
    }
}

/// The margin added to `need` bytes (saturating: a need near 2^64 never wraps to a small one).
pub fn margin(need: u64) -> u64 {
    (need / 20).saturating_add(MARGIN_FIXED_BYTES)
}

/// What the experiment needs on each file system holding its targets (empty when it writes
/// nothing here: an engine that does no real I/O (`real_io` false), reading kept files, or
/// I/O-server ranks, which hold the files on their own hosts).
pub fn needs(spec: &Spec, plan: &RunPlan, real_io: bool) -> Result<Vec<FsNeed>> {
    // Servers check their own disks, on their hosts.
    if !real_io || spec.reuse.is_some() || spec.servers.is_some() {
        return Ok(vec![]);
    }
    let copies = if spec.keep { spec.reps as u64 } else { 1 };
    // (device, [(target index, dir inode)]) per file system.
    let mut groups: Vec<(u64, Vec<usize>, Vec<u64>)> = vec![];
    for (i, dir) in spec.dirs.iter().enumerate() {
        let m = std::fs::metadata(dir).map_err(|e| Error::io("stat", dir, None, e))?;
        match groups.iter_mut().find(|g| g.0 == m.dev()) {
            Some(g) => {
                g.1.push(i);
                if !g.2.contains(&m.ino()) {
                    g.2.push(m.ino());
                }
            }
            None => groups.push((m.dev(), vec![i], vec![m.ino()])),
        }
    }
    let mut out = vec![];
    for (_, targets, dir_inodes) in groups {
        let files: Vec<_> = plan.files.iter().filter(|f| targets.contains(&f.target)).collect();
        let first = &spec.dirs[targets[0]];
        // Checked: a sum that wrapped would pass the check and fill the disk.
        // The namespace of the metadata phases: its files, directories and their entries.
        let ns = targets.iter().fold((0u64, 0u64), |(b, i), &t| {
            let (nb, ni) = plan.namespace.as_ref().map_or((0, 0), |n| n.on_target(t));
            (b.saturating_add(nb), i.saturating_add(ni))
        });
        let need_bytes = files
            .iter()
            .try_fold(ns.0, |n, f| n.checked_add(f.size_bytes))
            .and_then(|n| n.checked_mul(copies))
            .filter(|n| n.checked_add(margin(*n)).is_some())
            .ok_or_else(|| {
                Error::spec(
                    "size",
                    crate::units::fmt_size_spec(spec.size_bytes),
                    format!("the data the plan keeps on {} overflows 64 bits", first.display()),
                )
            })?;
        // Each work directory takes two inodes (itself and its marker) besides its files.
        let need_inodes = (files.len() as u64)
            .saturating_add(ns.1)
            .saturating_add(2 * dir_inodes.len() as u64)
            .saturating_mul(copies);
        let (free_bytes, free_inodes, total_inodes) =
            sys::fs_space(first).map_err(|e| Error::io("statvfs", first, None, e))?;
        // A file system that makes inodes as needed (btrfs) reports none: nothing to check.
        let free_inodes = if total_inodes == 0 { u64::MAX } else { free_inodes };
        let mut dirs: Vec<PathBuf> = vec![];
        for &t in &targets {
            if !dirs.contains(&spec.dirs[t]) {
                dirs.push(spec.dirs[t].clone());
            }
        }
        let memory =
            sys::fs_magic(first).ok().and_then(memory_fs).map(|fs| memory_need(fs, need_bytes, need_inodes));
        out.push(FsNeed {
            dirs,
            need_bytes,
            want_bytes: need_bytes + margin(need_bytes),
            free_bytes,
            need_inodes,
            free_inodes,
            memory,
        });
    }
    Ok(out)
}

/// The largest `size` (whole blocks) whose data, with the margin, fits the free space of `n`
/// (the data grows with `size`), as the spec writes it; None when not even one block fits.
fn largest_size(spec: &Spec, n: &FsNeed) -> Option<String> {
    let room = n.free_bytes.checked_sub(MARGIN_FIXED_BYTES)? as u128 * 20 / 21;
    let size = (spec.size_bytes as u128 * room / n.need_bytes.max(1) as u128) as u64;
    let size = size / spec.bs_bytes.max(1) * spec.bs_bytes;
    (size > 0).then(|| crate::units::fmt_size_spec(size))
}

/// Where a phase renames items (real I/O on this host's targets), tries the rename it makes,
/// renameat2 with RENAME_NOREPLACE (so no name is ever replaced), on a file in a work
/// directory made for it under each target, which goes again; a file system without it
/// (MooseFS, GlusterFS, a FUSE daemon without rename2: EINVAL) is refused (exit 2) naming it,
/// before anything is measured, where the phase would fail mid-run with a bare EINVAL.
fn check_rename(spec: &Spec, real_io: bool) -> Result<()> {
    if !real_io || spec.servers.is_some() || !spec.phases.iter().any(|p| p.op == OpKind::Rename) {
        return Ok(());
    }
    let probe = Spec { keep: false, ..spec.clone() };
    let mut wd = WorkDirs::create(&probe, &super::workdir::new_run_id())?;
    for d in wd.paths() {
        wd.create_file(&d.join("probe"))?;
        let dir = Dir::open(&d).map_err(|e| Error::io("open", &d, None, e))?;
        if let Err(e) = dir.rename(c"probe", c"probe.r") {
            let target = spec.dirs.iter().find(|t| d.parent() == Some(t.as_path())).unwrap_or(&d);
            let fs = crate::env::host::target_facts(target).fs_described();
            let ops: Vec<&str> = spec.phases.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::spec(
                "ops",
                ops.join(","),
                format!(
                    "rename calls renameat2 with RENAME_NOREPLACE (it never replaces a name), which the file system holding {} ({fs}) refuses: {e} (tried before the run); leave rename out of the phases on this file system",
                    crate::text::escape_path(target)
                ),
            ));
        }
        dir.rename(c"probe.r", c"probe").map_err(|e| Error::io("renameat2", d.join("probe.r"), None, e))?;
    }
    wd.cleanup()
}

/// Refuses (exit 2, with the numbers) when a file system lacks the space or inodes the plan
/// needs there, or (`check_rename`) the rename a phase makes.
pub fn check(spec: &Spec, plan: &RunPlan, real_io: bool) -> Result<()> {
    let kept = if spec.keep && spec.reps > 1 {
        format!(", all {} repetitions kept", spec.reps)
    } else {
        String::new()
    };
    for n in needs(spec, plan, real_io)? {
        let names: Vec<String> = n.dirs.iter().map(|d| d.display().to_string()).collect();
        let names = names.join(", ");
        if n.need_bytes > 0 && n.free_bytes < n.want_bytes {
            return Err(Error::spec(
                "dirs",
                &names,
                format!(
                    "not enough free space on the file system holding {names}: the plan writes {} there{kept}; \
                     with the margin of 5% + 64 MiB that is {}, but {} is free{}",
                    fmt_size(n.need_bytes),
                    fmt_size(n.want_bytes),
                    fmt_size(n.free_bytes),
                    largest_size(spec, &n)
                        .map(|s| format!("; a size of at most {s} fits"))
                        .unwrap_or_default()
                ),
            ));
        }
        if let Some(m) = n.memory.as_ref().filter(|m| m.want_bytes > m.available_bytes) {
            return Err(Error::spec(
                "dirs",
                &names,
                format!(
                    "not enough memory for the file system holding {names}: it is a {}, whose files live in memory; the plan keeps {} there{kept} and {} files and directories (at least {} B of kernel memory each): {}, with the margin of 5% + 64 MiB {}, but {} of memory is available ({})",
                    m.fs,
                    fmt_size(n.need_bytes),
                    n.need_inodes,
                    m.per_item_bytes,
                    fmt_size(m.need_bytes),
                    fmt_size(m.want_bytes),
                    fmt_size(m.available_bytes),
                    m.source
                ),
            ));
        }
        if n.free_inodes < n.need_inodes {
            return Err(Error::spec(
                "dirs",
                &names,
                format!(
                    "not enough free inodes on the file system holding {names}: the plan needs {}{kept}, {} are free",
                    n.need_inodes, n.free_inodes
                ),
            ));
        }
    }
    check_rename(spec, real_io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Params, ResolveEnv, resolve};

    #[test]
    fn one_file_system_named_twice_is_counted_once_with_the_sum() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("a")).unwrap();
        let d = t.path().display().to_string();
        let a = t.path().join("a").display().to_string();
        let mut p = Params::default();
        p.set("dirs", vec![d.clone(), d, a]).unwrap();
        p.set_one("workers", 3).unwrap();
        p.set_one("size", "1MiB").unwrap();
        p.set_one("keep", true).unwrap();
        p.set_one("reps", 2).unwrap();
        let spec = resolve(&p, &ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }).unwrap();
        let n = needs(&spec, &crate::plan::plan(&spec), true).unwrap();
        assert_eq!(n.len(), 1, "{n:?}");
        assert_eq!(n[0].dirs.len(), 2);
        assert_eq!(n[0].need_bytes, 6 << 20);
        assert_eq!(n[0].want_bytes, (6 << 20) + (6 << 20) / 20 + (64 << 20));
        assert_eq!(n[0].need_inodes, (3 + 2 * 2) * 2);
    }

    /// A need near 2^64 is refused, never wrapped to a small number that would pass the check.
    #[test]
    fn a_need_that_overflows_64_bits_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let mut p = Params::default();
        p.set("dirs", vec![t.path().display().to_string()]).unwrap();
        p.set_one("workers", 2).unwrap();
        p.set_one("size", "1MiB").unwrap();
        let spec = resolve(&p, &ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }).unwrap();
        let mut plan = crate::plan::plan(&spec);
        for f in &mut plan.files {
            f.size_bytes = 1 << 63;
        }
        match needs(&spec, &plan, true) {
            Err(Error::Spec { field, reason, .. }) => {
                assert_eq!(field, "size");
                assert!(reason.contains("overflows 64 bits"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        plan.files.truncate(1);
        plan.files[0].size_bytes = u64::MAX - (32 << 20);
        assert!(needs(&spec, &plan, true).is_err(), "the margin would wrap");
        plan.files[0].size_bytes = 1 << 62;
        let n = needs(&spec, &plan, true).unwrap();
        assert_eq!(n[0].want_bytes, (1 << 62) + (1 << 62) / 20 + MARGIN_FIXED_BYTES);
        assert!(check(&spec, &plan, true).is_err(), "no disk has 4 EiB free");
        assert_eq!(margin(u64::MAX), u64::MAX / 20 + MARGIN_FIXED_BYTES);
    }
}
