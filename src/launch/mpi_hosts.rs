//! The run's files on the hosts other than rank 0's, for MPI ranks: for each target directory,
//! a host either sees rank 0's (a shared file system: the same inode at the same path) or has
//! a node-local one of the same name (`--dir /local/disk` on every node), which the host's
//! first rank then fills as rank 0 fills its own: the work directory with its marker and the
//! files the host's workers use there, emptied before each write phase, laid out in full when
//! the first phase reads; removed when the run ends (unless kept). One run may use both: a
//! node-local target and a shared one (`--targets /local/disk,/cluster/fs`). The metadata
//! phases' trees must be rank 0's, seen through a shared directory; each host's first rank sets
//! their cache state as its client sees them.

use std::path::PathBuf;

use crate::engine::FileId;
use crate::error::{Error, Result};
use crate::launch::mpi_order::PhaseOrder;
use crate::launch::world::WorldInfo;
use crate::plan::RunPlan;
use crate::plan::verify::BlockTag;
use crate::spec::{OpKind, Spec};
use crate::target::workdir::WorkDirs;
use crate::text::escape_path;

/// How this host sees the run's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The same files as rank 0 (a shared file system).
    Shared,
    /// A directory of its own, filled here.
    NodeLocal,
}

/// One host's files of the current run, kept by the host's first rank between phases.
#[derive(Default)]
pub struct HostFiles {
    run_id: String,
    wd: Option<WorkDirs>,
    /// The files on this host's node-local targets (the others are rank 0's, shared).
    local: Vec<usize>,
}

/// The run id in the paths of a run's files (`DIR/.iolab-RUNID/NAME`).
pub fn run_id_of(paths: &[PathBuf]) -> String {
    paths
        .first()
        .and_then(|p| p.parent())
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(".iolab-"))
        .unwrap_or("")
        .to_string()
}

/// Before anything is made on a node-local directory: its file system has the space this
/// host's files take (all repetitions' when kept), with the margin rank 0's own check uses;
/// else the error names the host, the directory and the figures.
fn check_space(spec: &Spec, plan: &RunPlan, paths: &[PathBuf], files: &[usize]) -> Result<()> {
    use crate::target::preflight::margin;
    use crate::units::fmt_size;
    let copies = if spec.keep { spec.reps as u64 } else { 1 };
    let need = files
        .iter()
        .map(|&g| plan.files[g].size_bytes)
        .fold(0u64, u64::saturating_add)
        .saturating_mul(copies);
    // DIR/.iolab-RUNID/NAME: the target directory is two levels up.
    let Some(dir) = paths[files[0]].parent().and_then(|d| d.parent()) else { return Ok(()) };
    let (free, _, _) = crate::env::sys::fs_space(dir).map_err(|e| Error::io("statvfs", dir, None, e))?;
    let want = need.saturating_add(margin(need));
    if need > 0 && free < want {
        return Err(Error::Run(format!(
            "not enough free space on host {}'s node-local {}: this host's workers write {} there; with the margin of 5% + 64 MiB that is {}, but {} is free",
            crate::env::host::hostname(),
            escape_path(dir),
            fmt_size(need),
            fmt_size(want),
            fmt_size(free)
        )));
    }
    // A node-local tmpfs or ramfs takes memory, whatever its size says: the data, and the
    // files with the work directory and its marker.
    let items = (files.len() as u64 + 2).saturating_mul(copies);
    if let Some(why) = crate::target::preflight::memory_shortfall(dir, need, items) {
        return Err(Error::Run(format!(
            "not enough memory for host {}'s node-local {}: this host's workers write {} there: {why}",
            crate::env::host::hostname(),
            escape_path(dir),
            fmt_size(need),
        )));
    }
    Ok(())
}

/// How this host sees file `path`, which rank 0 created as `id`: `None` when it does not
/// exist here.
pub fn view_of(path: &std::path::Path, id: FileId) -> Option<View> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(if FileId::of(&meta).ino == id.ino { View::Shared } else { View::NodeLocal })
}

/// How this host sees each directory of `files` (by the first of them in it, as [`view_of`]
/// finds it; a file not seen here makes its directory node-local, to be filled): the files in
/// node-local directories.
pub fn node_local_files(paths: &[PathBuf], ids: &[FileId], files: &[usize]) -> Vec<usize> {
    let mut views: Vec<(&std::path::Path, bool)> = vec![];
    let mut out = vec![];
    for &g in files {
        let dir = paths[g].parent().unwrap_or(&paths[g]);
        let local = match views.iter().find(|(d, _)| *d == dir) {
            Some(&(_, local)) => local,
            None => {
                let local = view_of(&paths[g], ids[g]) != Some(View::Shared);
                views.push((dir, local));
                local
            }
        };
        if local {
            out.push(g);
        }
    }
    out
}

impl HostFiles {
    /// Before a phase, on the host's first rank: for a new run, decide how this host sees each
    /// target directory (by the first of `files`, the files the host's workers use, on it) and,
    /// on the node-local ones, make the work directory and the files (laid out if the run
    /// starts by reading); before a write phase, empty them. Returns the view: node-local when
    /// any target is.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        &mut self,
        spec: &Spec,
        plan: &RunPlan,
        phase: usize,
        paths: &[PathBuf],
        ids: &[FileId],
        tag: BlockTag,
        files: &[usize],
    ) -> Result<View> {
        let run_id = run_id_of(paths);
        if files.is_empty() {
            return Ok(View::Shared);
        }
        if run_id != self.run_id {
            self.finish();
            self.run_id = run_id.clone();
            let local = node_local_files(paths, ids, files);
            let Some(&first) = local.first() else { return Ok(View::Shared) };
            if spec.md.is_some() {
                return Err(Error::Run(format!(
                    "the metadata phases need a directory every host shares; {} is node-local on host {} (node-local trees are not built)",
                    escape_path(paths[first].parent().unwrap_or(&paths[first])),
                    crate::env::host::hostname()
                )));
            }
            if spec.reorder_reads.is_some() {
                return Err(Error::Run(format!(
                    "reorder_reads needs a directory every host shares; {} is node-local on host {}",
                    escape_path(paths[first].parent().unwrap_or(&paths[first])),
                    crate::env::host::hostname()
                )));
            }
            check_space(spec, plan, paths, &local)?;
            // Work directories in the node-local target directories only (DIR/.iolab-RUNID/NAME).
            let mut dirs: Vec<PathBuf> =
                local.iter().filter_map(|&g| paths[g].parent()?.parent().map(PathBuf::from)).collect();
            dirs.sort();
            dirs.dedup();
            let sub = Spec { dirs, ..spec.clone() };
            let mut wd = WorkDirs::create(&sub, &run_id)?;
            for &g in &local {
                wd.create_file(&paths[g])?;
            }
            wd.sync_markers()?;
            self.wd = Some(wd);
            self.local = local;
            if plan.layout_first {
                let ids = self.local_ids(paths, ids)?;
                let tag = BlockTag { generation: 1, ..tag };
                let local = &self.local;
                crate::worker::prepare::lay_out(spec, plan, paths, &ids, tag, |g| local.contains(&g))?;
            }
        }
        if self.wd.is_none() {
            return Ok(View::Shared);
        }
        if plan.phases[phase].op == OpKind::Write {
            let ids = self.local_ids(paths, ids)?;
            let local = &self.local;
            crate::worker::prepare::recreate(spec, plan, paths, &ids, |g| local.contains(&g))?;
        }
        Ok(View::NodeLocal)
    }

    /// The identities of the node-local files as this host made them (the others as rank 0
    /// gave them).
    fn local_ids(&self, paths: &[PathBuf], ids: &[FileId]) -> Result<Vec<FileId>> {
        let mut out = ids.to_vec();
        for &g in &self.local {
            out[g] = local_identity(&paths[g])?;
        }
        Ok(out)
    }

    /// The run ended: removes this host's work directory (unless kept); a failure is said on
    /// stderr, naming the host, and left for `iolab clean`.
    pub fn finish(&mut self) {
        self.local.clear();
        if let Some(mut wd) = self.wd.take()
            && let Err(e) = wd.cleanup()
        {
            eprintln!(
                "warning: host {}: {e}; remove what is left with `iolab clean`",
                crate::env::host::hostname()
            );
        }
    }
}

/// The identities of this rank's files as its host sees them (a shared file system gives each
/// client its own device number, never another inode), checked, and the cache state set as the
/// phase asks: the resident fraction found.
pub(super) fn local_view(
    p: &PhaseOrder,
    phase: &crate::plan::PhasePlan,
    workers: &[usize],
) -> Result<(Vec<FileId>, Option<f64>)> {
    let mut ids = p.ids.clone();
    let mut mine: Vec<usize> =
        workers.iter().flat_map(|&i| phase.workers[i].files.iter().map(|&g| g as usize)).collect();
    mine.sort_unstable();
    mine.dedup();
    let host = crate::env::host::hostname();
    // Each target directory is shared or node-local here (the host's first rank made the
    // node-local files before the barrier).
    let node_local = node_local_files(&p.paths, &p.ids, &mine);
    for &g in &mine {
        let path = &p.paths[g];
        if node_local.contains(&g) {
            // This host's own files, made by its first rank.
            ids[g] = local_identity(path)?;
            continue;
        }
        let meta = std::fs::symlink_metadata(path).map_err(|e| {
            Error::Run(format!(
                "host {host} does not see {} ({e}): the directory is neither shared by every host nor a node-local one this host has",
                crate::text::escape_path(path)
            ))
        })?;
        let seen = FileId::of(&meta);
        if seen.ino != p.ids[g].ino {
            return Err(Error::Run(format!(
                "host {host} sees another file at {} than the one rank 0 created (inode {} instead of {}): the directory is not shared by every host",
                crate::text::escape_path(path),
                seen.ino,
                p.ids[g].ino
            )));
        }
        ids[g] = seen;
    }
    let paths: Vec<PathBuf> = mine.iter().map(|&g| p.paths[g].clone()).collect();
    let own: Vec<FileId> = mine.iter().map(|&g| ids[g]).collect();
    let fraction = crate::target::cache::prepare(phase.cache, &paths, &own, false)?;
    Ok((ids, Some(fraction)))
}

/// Before a metadata phase, on a host other than rank 0's: the work directories must be rank
/// 0's, seen through a directory every host shares (their markers name the run); the host's
/// first rank then sets the namespace's cache state as this host's client sees it (each host
/// has its own caches of directory entries and inodes). The files' identities as rank 0 gave
/// them, and no resident fraction.
pub(super) fn namespace_here(
    p: &PhaseOrder,
    ns: &crate::plan::namespace::NsPlan,
    phase: &crate::plan::PhasePlan,
    first_on_host: bool,
) -> Result<(Vec<FileId>, Option<f64>)> {
    let run = run_id_of(&[p.workdirs.first().map(|d| d.join("x")).unwrap_or_default()]);
    for d in &p.workdirs {
        match crate::target::marker::Marker::read(d) {
            Ok(m) if m.run_id == run && m.namespace.is_some() => {}
            _ => {
                return Err(Error::Run(format!(
                    "host {} does not see rank 0's work directory {}: the metadata phases need a directory every host shares",
                    crate::env::host::hostname(),
                    escape_path(d)
                )));
            }
        }
    }
    if first_on_host {
        let exists = !phase.op.makes_items();
        let renamed = phase.workers.first().and_then(|w| w.md).is_some_and(|m| m.renamed);
        // A metadata phase's extents: the items each owner made (empty: all).
        crate::target::ns_cache::prepare(phase.cache, &p.workdirs, ns, exists, renamed, &p.extents)?;
    }
    Ok((p.ids.clone(), None))
}

/// The identity of a node-local file as this host sees it: a regular file, not a link, with
/// one link (what [`crate::target::owned`] checks again at every open).
pub fn local_identity(path: &std::path::Path) -> Result<FileId> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io("lstat", path, None, e))?;
    if !meta.file_type().is_file() || std::os::unix::fs::MetadataExt::nlink(&meta) != 1 {
        return Err(Error::Run(format!(
            "{} on host {} is not the file iolab made there (a link, or not a regular file)",
            escape_path(path),
            crate::env::host::hostname()
        )));
    }
    Ok(FileId::of(&meta))
}

/// The files the workers on `host` use in any phase of the run.
pub fn host_files(
    plan: &RunPlan,
    w: &WorldInfo,
    host: &str,
    mine: impl Fn(usize, bool, u32) -> Vec<usize>,
) -> Vec<usize> {
    let ranks: Vec<u32> = (0..w.size).filter(|&r| *w.hosts[r as usize] == *host).collect();
    let mut files: Vec<usize> = vec![];
    for ph in &plan.phases {
        for &r in &ranks {
            for i in mine(ph.workers.len(), ph.op == OpKind::Read, r) {
                files.extend(ph.workers[i].files.iter().map(|&g| g as usize));
            }
        }
    }
    files.sort_unstable();
    files.dedup();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_id_comes_from_the_work_directory() {
        let p = [PathBuf::from("/mnt/node/.iolab-abc123/w0000.dat")];
        assert_eq!(run_id_of(&p), "abc123");
        assert_eq!(run_id_of(&[PathBuf::from("/x/w0000.dat")]), "");
        assert_eq!(run_id_of(&[]), "");
    }
}
