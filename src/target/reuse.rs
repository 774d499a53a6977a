//! Reading kept data (`reuse = RUNID`): read phases over the files an earlier run kept with
//! `--keep`, instead of writing new ones. One data set can be written once and read many ways,
//! and `verify` can check data on disk long after it was written (after a crash, a power cut,
//! or by hand to see that corruption is caught). Nothing is created, written or removed.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::plan::RunPlan;
use crate::plan::verify::{BlockTag, run_tag};
use crate::spec::Spec;
use crate::target::owned::FileId;
use crate::target::workdir::{Marker, Owner, OwnerState, PREFIX};

/// The kept files a run reads, and what their blocks carry.
#[derive(Debug, Clone)]
pub struct Kept {
    /// One per planned file, by global file id.
    pub paths: Vec<PathBuf>,
    /// What each must still be when opened: the inode that run created.
    pub ids: Vec<FileId>,
    /// Run, generation and block size of the data (verify is on if the spec asks for it).
    pub tag: BlockTag,
}

/// Finds and checks the kept files of run `spec.reuse` for `plan`: every planned file must be
/// one that run created (named in its marker, same inode) with the planned size; with verify,
/// the run must have written verify headers, completed a write, and used a block size that
/// divides this one. Every refusal is a spec error (exit 2).
pub fn open(spec: &Spec, plan: &RunPlan) -> Result<Kept> {
    let id = spec.reuse.as_deref().ok_or_else(|| Error::spec("reuse", "", "no run id given"))?;
    let bad = |why: String| Error::spec("reuse", id, why);
    let me = Owner::current();
    let mut markers: BTreeMap<PathBuf, Marker> = BTreeMap::new();
    let (mut paths, mut ids) = (vec![], vec![]);
    for f in &plan.files {
        let dir = spec.dirs[f.target].join(format!("{PREFIX}{id}"));
        if !markers.contains_key(&dir) {
            let m = Marker::read(&dir).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
            let going = match m.owner.state(&me) {
                _ if m.keep => None,
                OwnerState::Running => Some("is still going".to_string()),
                OwnerState::Unknown(why) => Some(format!("may still be going ({why})")),
                _ => None,
            };
            if let Some(going) = going {
                return Err(bad(format!("{}: that run {going} and will remove its files", dir.display())));
            }
            markers.insert(dir.clone(), m);
        }
        let m = &markers[&dir];
        let path = dir.join(&f.name);
        let ino = m
            .files
            .iter()
            .find(|(n, _)| *n == f.name)
            .map(|(_, i)| *i)
            .ok_or_else(|| bad(format!("run {id} did not create {}", path.display())))?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
        if !meta.is_file() || meta.ino() != ino {
            return Err(bad(format!("{} is no longer the file run {id} created", path.display())));
        }
        if meta.nlink() != 1 {
            return Err(bad(format!(
                "{} has {} links: a hard link elsewhere points at the data run {id} kept",
                path.display(),
                meta.nlink()
            )));
        }
        if meta.len() != f.size_bytes {
            return Err(bad(format!(
                "{} holds {} bytes but the plan reads {} (give the spec the kept run used)",
                path.display(),
                meta.len(),
                f.size_bytes
            )));
        }
        paths.push(path);
        ids.push(FileId::of(&meta));
    }
    let m = markers.values().next().ok_or_else(|| bad("the plan has no files".into()))?;
    if m.seed != spec.seed {
        return Err(Error::spec("seed", spec.seed, format!("run {id} wrote its data with seed {}", m.seed)));
    }
    if spec.verify {
        if !m.verify {
            return Err(bad(format!("run {id} wrote no verify headers (it ran without verify)")));
        }
        if m.written.is_none() {
            return Err(bad(format!("run {id} never completed a write phase")));
        }
        if m.bs == 0 || spec.bs_bytes % m.bs != 0 {
            return Err(Error::spec(
                "bs",
                spec.bs_bytes,
                format!(
                    "verify reads whole written blocks: bs must be a multiple of run {id}'s {}: {} would do",
                    m.bs,
                    crate::units::nearest_multiples(spec.bs_bytes, m.bs.max(1))
                ),
            ));
        }
    }
    Ok(Kept {
        paths,
        ids,
        tag: BlockTag {
            verify: spec.verify,
            run: run_tag(id),
            generation: m.written.unwrap_or(0),
            written_bs: m.bs,
        },
    })
}
