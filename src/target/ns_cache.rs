//! The cache state of the namespace before a metadata phase. Directory entries and inodes
//! have no mincore: there is no call that says whether one name is cached. So:
//!
//! - cold: every target's file system is committed (syncfs), then the kernel drops its clean
//!   pages and its unused directory entries and inodes (3 written to /proc/sys/vm/drop_caches;
//!   nothing of the namespace is in use between phases). The pages go too: an item with data
//!   keeps its inode, and its data, cached while its pages are. Checked where it can be: the
//!   kernel's count of directory entries after the drop (/proc/sys/fs/dentry-state), and of the targets' file
//!   system inodes (/proc/slabinfo), bound how many of the namespace's names can still be
//!   cached; when fewer remain than the namespace has names, that bound is stated, else the
//!   phase is flagged `cold unverified`.
//! - warm: every item (and tree directory) looked up just before the phase (fstatat), not
//!   measured: labelled so.
//! - asis: left alone, labelled `cache not controlled`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::env::dirs::Dir;
use crate::error::{Error, Result};
use crate::plan::namespace::{NameBuf, NsPlan, root_of};
use crate::spec::CachePolicy;

/// A cold metadata phase whose names may still be cached above this fraction is flagged.
pub const COLD_MAX_CACHED: f64 = 0.05;

/// The namespace's state before one repetition of a metadata phase (`namespace` in JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NsState {
    /// Names in the namespace: items and tree directories of every tree.
    pub names: u64,
    /// The kernel's directory entries before and after the drop (cold only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dentries_before: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dentries_after: Option<u64>,
    /// Inodes of the targets' file system type the kernel holds after the drop (cold, where
    /// /proc/slabinfo says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_inodes_after: Option<u64>,
    /// The most of the names that can still be cached after the drop: the smaller count over
    /// the names (cold only; 1 when the counts cannot tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_at_most: Option<f64>,
    /// warm: names looked up before the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looked_up: Option<u64>,
    /// find: the entries whose names matched, over every worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<u64>,
    /// After a stonewalled create or mkdir: the items each worker (by index) made, which this
    /// phase and the later ones visit (absent: every worker made all of its items).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_made: Option<Vec<u64>>,
}

impl NsState {
    /// The honesty flags of this state under `policy`.
    pub fn flags(&self, policy: CachePolicy) -> Vec<String> {
        match (policy, self.cached_at_most) {
            (CachePolicy::Cold, Some(f)) if f > COLD_MAX_CACHED => vec![format!(
                "cold unverified: {} directory entries left after the drop for {} names",
                self.dentries_after.unwrap_or(0),
                self.names
            )],
            (CachePolicy::Asis, _) => vec!["cache not controlled".to_string()],
            _ => vec![],
        }
    }
}

/// How a policy sets the namespace's cache state, in words (stored with results).
pub fn method(policy: CachePolicy) -> &'static str {
    match policy {
        CachePolicy::Cold => {
            "file systems committed (syncfs), clean pages and unused directory entries and inodes dropped (3 > drop_caches), bounded by the kernel's counts"
        }
        CachePolicy::Warm => "every name looked up just before (fstatat), not measured",
        CachePolicy::Asis => "not controlled",
    }
}

/// The kernel's count of directory entries (the first field of /proc/sys/fs/dentry-state).
fn dentries() -> Option<u64> {
    crate::env::sys::read_kernel_file("/proc/sys/fs/dentry-state")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The slab cache of a file system's inodes, by the magic statfs gives.
fn inode_slab(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0xEF53 => "ext4_inode_cache",
        0x5846_5342 => "xfs_inode",
        0x9123_683E => "btrfs_inode",
        0x0102_1994 => "shmem_inode_cache",
        0x6573_5546 => "fuse_inode",
        _ => return None,
    })
}

/// Active objects of slab cache `name` (/proc/slabinfo, readable by root).
fn slab_objects(name: &str) -> Option<u64> {
    let text = crate::env::sys::read_kernel_file("/proc/slabinfo").ok()?;
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Brings the namespace under `workdirs` (by logical target) into the state `policy` asks for
/// before a phase; `exists`: its items exist now (else only its directories do), `renamed`:
/// under their renamed names; `made`: per owner, the items there are (empty: all).
pub fn prepare(
    policy: CachePolicy,
    workdirs: &[PathBuf],
    p: &NsPlan,
    exists: bool,
    renamed: bool,
    made: &[u64],
) -> Result<NsState> {
    let items = if made.is_empty() { p.items() } else { made.iter().sum() };
    let names = p.dirs() + if exists { items } else { 0 };
    let mut state = NsState { names, ..NsState::default() };
    match policy {
        CachePolicy::Asis => {}
        CachePolicy::Cold => {
            state.dentries_before = dentries();
            let mut seen = vec![];
            for wd in workdirs {
                if !seen.contains(wd) {
                    crate::env::sys::syncfs(wd).map_err(|e| Error::io("syncfs", wd, None, e))?;
                    seen.push(wd.clone());
                }
            }
            crate::env::sys::drop_clean_caches()
                .map_err(|e| Error::io("write", "/proc/sys/vm/drop_caches", None, e))?;
            state.dentries_after = dentries();
            let slab = workdirs.first().and_then(|w| crate::env::sys::fs_magic(w).ok()).and_then(inode_slab);
            state.fs_inodes_after = slab.and_then(slab_objects);
            let left = [state.dentries_after, state.fs_inodes_after].into_iter().flatten().min();
            state.cached_at_most = Some(left.map_or(1.0, |n| (n as f64 / names.max(1) as f64).min(1.0)));
        }
        CachePolicy::Warm => state.looked_up = Some(look_up(workdirs, p, exists, renamed, made)?),
    }
    Ok(state)
}

/// Looks up every tree directory and (if they exist) every item (of owner o, the first
/// `made[o]`): the names looked up.
fn look_up(workdirs: &[PathBuf], p: &NsPlan, exists: bool, renamed: bool, made: &[u64]) -> Result<u64> {
    let (mut rel, mut name) = (NameBuf::default(), NameBuf::default());
    // SAFETY: zeroed is a valid stat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let mut n = 0u64;
    for root in &p.roots {
        let rp = workdirs[root.target].join(&root.path);
        let top = Dir::open(&rp).map_err(|e| Error::io("open", &rp, None, e))?;
        for d in 1..p.tree.dirs {
            if d % 4096 == 0 {
                crate::env::signals::check()?;
            }
            rel.clear();
            p.tree.write_dir(d, &mut rel);
            rel.truncate(rel.len() - 1);
            top.stat(rel.c_str(), &mut st)
                .map_err(|e| Error::io("fstatat", rp.join(rel.to_string_lossy()), None, e))?;
            n += 1;
        }
    }
    if !exists {
        return Ok(n);
    }
    for owner in 0..p.owners {
        let root = root_of(p.ns.dirs, workdirs.len(), owner);
        let rp = workdirs[root.target].join(&root.path);
        let top = Dir::open(&rp).map_err(|e| Error::io("open", &rp, None, e))?;
        for k in 0..made.get(owner as usize).map_or(p.ns.items, |&m| m.min(p.ns.items)) {
            if k % 4096 == 0 {
                crate::env::signals::check()?;
            }
            rel.clear();
            p.tree.write_dir(p.tree.dir_of(k), &mut rel);
            name.clear();
            p.tree.write_item(owner, k, renamed, &mut name);
            rel.push(name.as_bytes());
            top.stat(rel.c_str(), &mut st)
                .map_err(|e| Error::io("fstatat", rp.join(rel.to_string_lossy()), None, e))?;
            n += 1;
        }
    }
    Ok(n)
}
