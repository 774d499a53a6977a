//! Layout forensics: where files' bytes sit on their device (the FIEMAP ioctl), and, for
//! files written together, how often their pieces alternate along the device, so a reader
//! can see why a read was slow (Russell 1998: files written with k-way interleaving read back
//! slower).
//!
//! Definitions (docs/layouts.md):
//! - extents: what FIEMAP reports for the file. File systems cap an extent's length (ext4:
//!   128 MiB), so a contiguous file may have several.
//! - fragments: maximal runs of extents that continue each other both in the file and on the
//!   device; a contiguous file has 1. Extents not yet placed (delayed allocation) or of
//!   unknown location are left out and counted as `unplaced_bytes`.
//! - boundaries: on each device, sort the fragments of all the files by device offset;
//!   boundaries = fragments - 1, summed over devices.
//! - alternations: the boundaries whose two neighbouring fragments belong to different files.
//!   Files laid end to end have files - 1; files whose blocks are fully interleaved have as
//!   many alternations as boundaries.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One extent as FIEMAP reports it (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

/// FIEMAP extent flags (linux/fiemap.h).
pub const EXTENT_LAST: u32 = 0x1;
pub const EXTENT_UNKNOWN: u32 = 0x2;
pub const EXTENT_DELALLOC: u32 = 0x4;
pub const EXTENT_UNWRITTEN: u32 = 0x800;
pub const EXTENT_SHARED: u32 = 0x2000;

impl Extent {
    /// Its place on the device is known.
    pub fn placed(&self) -> bool {
        self.flags & (EXTENT_UNKNOWN | EXTENT_DELALLOC) == 0
    }

    /// The flags in words.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![];
        for (bit, name) in [
            (EXTENT_LAST, "last"),
            (EXTENT_UNKNOWN, "unknown"),
            (EXTENT_DELALLOC, "delalloc"),
            (EXTENT_UNWRITTEN, "unwritten"),
            (EXTENT_SHARED, "shared"),
        ] {
            if self.flags & bit != 0 {
                v.push(name);
            }
        }
        v
    }
}

/// One file's layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLayout {
    pub file: String,
    pub size_bytes: u64,
    pub extents: u64,
    pub fragments: u64,
    /// Extents allocated but never written (fallocate).
    pub unwritten_extents: u64,
    /// Bytes not yet placed on the device (delayed allocation) or of unknown location.
    pub unplaced_bytes: u64,
}

/// The layout of a set of files written together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutFacts {
    pub files: Vec<FileLayout>,
    pub extents: u64,
    pub fragments: u64,
    pub boundaries: u64,
    pub alternations: u64,
    pub unplaced_bytes: u64,
    /// Blocks (of `bs`, or stripe pieces) the phase wrote: a block-by-block interleave of the
    /// files has `blocks - 1` alternations (0: not known).
    #[serde(default)]
    pub blocks: u64,
    /// Why FIEMAP gave no extents: the file system cannot answer it (FUSE); the counts above
    /// are then 0 and mean nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fiemap_error: Option<String>,
    /// Where the file system itself says the files lie (MooseFS chunks, GlusterFS bricks),
    /// when FIEMAP cannot answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<crate::env::placement::FilePlacement>,
}

impl LayoutFacts {
    /// Alternations per block boundary: 1 when every written block lies between blocks of other
    /// files (a block-by-block interleave), about (files - 1) / (blocks - 1) when the files lie
    /// end to end. None when the blocks are not known.
    pub fn per_block_boundary(&self) -> Option<f64> {
        (self.blocks > 1).then(|| self.alternations as f64 / (self.blocks - 1) as f64)
    }

    /// With `alloc = block`, the layout judged against the write order: `together` files were
    /// written at a time, block by block. Asked for an interleave (2 or more), at least half the
    /// block boundaries must alternate; asked for files one after another, under half. Else a
    /// flag saying what was asked and what FIEMAP shows.
    pub fn judge(&self, together: u64) -> Option<String> {
        let got = self.per_block_boundary()?;
        let asked = together >= 2;
        if asked == (got >= 0.5) || self.unplaced_bytes > 0 || self.fiemap_error.is_some() {
            return None;
        }
        let what = if asked {
            format!("{together}-way interleaved write")
        } else {
            "files written one by one".into()
        };
        Some(format!(
            "layout not as written: {what}, {} of {} block boundaries alternate between files ({got:.2})",
            self.alternations,
            self.blocks - 1
        ))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

const BATCH: usize = 256;

#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; BATCH],
}

/// _IOWR('f', 11, struct fiemap): struct fiemap's header is 32 bytes.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;

/// The extents of an open file, in file order. Does not force delayed allocation: extents
/// not yet placed come back flagged `delalloc`.
pub fn extents_of(f: &File) -> io::Result<Vec<Extent>> {
    let mut req = Box::new(Fiemap {
        fm_start: 0,
        fm_length: 0,
        fm_flags: 0,
        fm_mapped_extents: 0,
        fm_extent_count: BATCH as u32,
        fm_reserved: 0,
        fm_extents: [FiemapExtent::default(); BATCH],
    });
    let mut out = vec![];
    let mut start = 0u64;
    loop {
        req.fm_start = start;
        req.fm_length = u64::MAX - start;
        req.fm_flags = 0;
        req.fm_mapped_extents = 0;
        req.fm_extent_count = BATCH as u32;
        // SAFETY: `req` is a live, writable struct fiemap with room for `fm_extent_count`
        // extents, the layout the FS_IOC_FIEMAP ioctl reads and fills.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut *req as *mut Fiemap) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (req.fm_mapped_extents as usize).min(BATCH);
        if n == 0 {
            break;
        }
        for e in &req.fm_extents[..n] {
            out.push(Extent {
                logical: e.fe_logical,
                physical: e.fe_physical,
                length: e.fe_length,
                flags: e.fe_flags,
            });
        }
        let last = out[out.len() - 1];
        if last.flags & EXTENT_LAST != 0 || n < BATCH {
            break;
        }
        start = last.logical + last.length;
    }
    Ok(out)
}

/// The extents of the file at `path`.
pub fn extents(path: &Path) -> io::Result<Vec<Extent>> {
    extents_of(&File::open(path)?)
}

/// Runs of extents that continue each other in the file and on the device, as
/// (physical start, length); unplaced extents are left out.
fn fragments(ext: &[Extent]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = vec![]; // (physical, length, logical)
    for e in ext.iter().filter(|e| e.placed()) {
        match out.last_mut() {
            Some(f) if f.0 + f.1 == e.physical && f.2 + f.1 == e.logical => f.1 += e.length,
            _ => out.push((e.physical, e.length, e.logical)),
        }
    }
    out.into_iter().map(|(p, l, _)| (p, l)).collect()
}

/// The facts about a set of files: (name, size, device id, extents) each. Pure.
pub fn analyse(files: &[(String, u64, u64, Vec<Extent>)]) -> LayoutFacts {
    let mut per_file = vec![];
    // (device, physical, file index) of every fragment.
    let mut frags: Vec<(u64, u64, usize)> = vec![];
    for (i, (name, size, dev, ext)) in files.iter().enumerate() {
        let fr = fragments(ext);
        frags.extend(fr.iter().map(|&(p, _)| (*dev, p, i)));
        per_file.push(FileLayout {
            file: name.clone(),
            size_bytes: *size,
            extents: ext.len() as u64,
            fragments: fr.len() as u64,
            unwritten_extents: ext.iter().filter(|e| e.flags & EXTENT_UNWRITTEN != 0).count() as u64,
            unplaced_bytes: ext.iter().filter(|e| !e.placed()).map(|e| e.length).sum(),
        });
    }
    frags.sort_unstable();
    let (mut boundaries, mut alternations) = (0, 0);
    for w in frags.windows(2) {
        if w[0].0 == w[1].0 {
            boundaries += 1;
            if w[0].2 != w[1].2 {
                alternations += 1;
            }
        }
    }
    LayoutFacts {
        extents: per_file.iter().map(|f| f.extents).sum(),
        fragments: per_file.iter().map(|f| f.fragments).sum(),
        unplaced_bytes: per_file.iter().map(|f| f.unplaced_bytes).sum(),
        files: per_file,
        boundaries,
        alternations,
        blocks: 0,
        fiemap_error: None,
        placement: vec![],
    }
}

/// Reads the extents of `paths` (named `names`) and analyses them together.
pub fn probe(paths: &[PathBuf], names: &[String]) -> io::Result<(LayoutFacts, Vec<Vec<Extent>>)> {
    probe_with(names, |i| File::open(&paths[i]))
}

/// [`probe`] over the files `open(i)` opens, one at a time, for the names `names`.
pub fn probe_with(
    names: &[String],
    mut open: impl FnMut(usize) -> io::Result<File>,
) -> io::Result<(LayoutFacts, Vec<Vec<Extent>>)> {
    let mut input = vec![];
    let mut all = vec![];
    for (i, name) in names.iter().enumerate() {
        let f = open(i)?;
        let meta = f.metadata()?;
        let ext = extents_of(&f)?;
        all.push(ext.clone());
        input.push((name.clone(), meta.len(), meta.dev(), ext));
    }
    Ok((analyse(&input), all))
}

/// The layout of files written together, as [`probe_with`] finds it; where FIEMAP cannot
/// answer on a FUSE file system, facts saying so, with the file system's own placement of each
/// file (`paths[i]`) where it has one. None when FIEMAP fails elsewhere.
pub fn probe_or_place(
    names: &[String],
    paths: &[PathBuf],
    open: impl FnMut(usize) -> io::Result<File>,
) -> Option<LayoutFacts> {
    let e = match probe_with(names, open) {
        Ok((facts, _)) => return Some(facts),
        Err(e) => e,
    };
    let ids: Vec<crate::env::netfs::FsIdentity> =
        paths.iter().map(|p| crate::env::host::fs_identity(p.parent().unwrap_or(p))).collect();
    if !ids.iter().any(|i| i.fuse) {
        return None;
    }
    let placement = names
        .iter()
        .zip(paths)
        .zip(&ids)
        .filter_map(|((n, p), id)| {
            let size = std::fs::metadata(p).ok()?.len();
            crate::env::placement::of_file(id, p, n, size)
        })
        .collect();
    Some(LayoutFacts {
        files: vec![],
        extents: 0,
        fragments: 0,
        boundaries: 0,
        alternations: 0,
        unplaced_bytes: 0,
        blocks: 0,
        fiemap_error: Some(format!("FIEMAP not answered by {} (fuse): {e}", ids[0].name)),
        placement,
    })
}

/// `iolab info --layout FILE...` as text: each file's extents, then the facts together.
pub fn render(paths: &[PathBuf]) -> io::Result<String> {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let (facts, all) = probe(paths, &names)?;
    let mut s = String::new();
    for (f, ext) in facts.files.iter().zip(&all) {
        s += &format!(
            "{}: {} bytes, {} extent{} in {} fragment{}{}\n",
            f.file,
            f.size_bytes,
            f.extents,
            if f.extents == 1 { "" } else { "s" },
            f.fragments,
            if f.fragments == 1 { "" } else { "s" },
            if f.unplaced_bytes > 0 {
                format!(", {} bytes not yet placed (delayed allocation)", f.unplaced_bytes)
            } else {
                String::new()
            }
        );
        let rows: Vec<Vec<String>> = ext
            .iter()
            .enumerate()
            .map(|(i, e)| {
                vec![
                    format!("  {i}"),
                    e.logical.to_string(),
                    if e.placed() { e.physical.to_string() } else { "-".into() },
                    e.length.to_string(),
                    e.flag_names().join(","),
                ]
            })
            .collect();
        let t = crate::text::text_table(
            &["  extent", "file offset", "device offset", "length", "flags"],
            &rows,
            &[1, 2, 3],
        );
        s += &t;
    }
    if paths.len() > 1 {
        s += &format!(
            "{} files: {} fragments, {} boundaries between neighbouring fragments on the device, {} of them between different files (at least {} when files are laid end to end)\n",
            paths.len(),
            facts.fragments,
            facts.boundaries,
            facts.alternations,
            paths.len() - 1
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(logical: u64, physical: u64, length: u64) -> Extent {
        Extent { logical, physical, length, flags: 0 }
    }

    #[test]
    fn contiguous_extents_make_one_fragment() {
        let f = analyse(&[("a".into(), 300, 1, vec![e(0, 1000, 100), e(100, 1100, 100), e(200, 1200, 100)])]);
        assert_eq!((f.extents, f.fragments, f.boundaries, f.alternations), (3, 1, 0, 0));
    }

    #[test]
    fn interleaved_files_alternate() {
        // a and b written block by block: a0 b0 a1 b1 on the device.
        let a = vec![e(0, 0, 10), e(10, 20, 10)];
        let b = vec![e(0, 10, 10), e(10, 30, 10)];
        let f = analyse(&[("a".into(), 20, 1, a), ("b".into(), 20, 1, b)]);
        assert_eq!((f.fragments, f.boundaries, f.alternations), (4, 3, 3));
        // End to end: one boundary, one alternation.
        let a = vec![e(0, 0, 20)];
        let b = vec![e(0, 20, 20)];
        let f = analyse(&[("a".into(), 20, 1, a), ("b".into(), 20, 1, b)]);
        assert_eq!((f.fragments, f.boundaries, f.alternations), (2, 1, 1));
    }

    #[test]
    fn the_layout_is_judged_against_the_write_order() {
        // 2 files of 4 blocks: interleaved a0 b0 a1 b1 ..., or end to end.
        let inter: Vec<Vec<Extent>> =
            (0..2).map(|f| (0..4).map(|b| e(b * 10, (2 * b + f) * 10, 10)).collect()).collect();
        let mut f = analyse(&[("a".into(), 40, 1, inter[0].clone()), ("b".into(), 40, 1, inter[1].clone())]);
        f.blocks = 8;
        assert_eq!((f.alternations, f.per_block_boundary()), (7, Some(1.0)));
        assert_eq!(f.judge(2), None);
        assert_eq!(
            f.judge(1).unwrap(),
            "layout not as written: files written one by one, 7 of 7 block boundaries alternate between files (1.00)"
        );
        let mut f =
            analyse(&[("a".into(), 40, 1, vec![e(0, 0, 40)]), ("b".into(), 40, 1, vec![e(0, 40, 40)])]);
        f.blocks = 8;
        assert_eq!(f.judge(1), None);
        assert_eq!(
            f.judge(2).unwrap(),
            "layout not as written: 2-way interleaved write, 1 of 7 block boundaries alternate between files (0.14)"
        );
        f.blocks = 0;
        assert_eq!(f.judge(2), None, "blocks unknown: no judgement");
    }

    #[test]
    fn devices_are_separate_and_unplaced_extents_are_counted_apart() {
        let a = vec![e(0, 0, 10)];
        let b = vec![e(0, 5, 10), Extent { logical: 10, physical: 0, length: 7, flags: EXTENT_DELALLOC }];
        let f = analyse(&[("a".into(), 10, 1, a), ("b".into(), 17, 2, b)]);
        assert_eq!((f.fragments, f.boundaries, f.alternations), (2, 0, 0));
        assert_eq!(f.unplaced_bytes, 7);
        assert_eq!(f.files[1].extents, 2);
    }

    #[test]
    fn a_preallocated_file_is_one_extent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = File::create(&p).unwrap();
        crate::env::sys::fallocate(&f, 8 << 20).unwrap();
        let ext = match extents_of(&f) {
            Ok(x) => x,
            Err(err) if err.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                eprintln!("skipped: FIEMAP is not supported on this file system");
                return;
            }
            Err(err) => panic!("{err}"),
        };
        assert_eq!(ext.len(), 1, "{ext:?}");
        assert_eq!(ext[0].length, 8 << 20);
        assert!(ext[0].flags & EXTENT_UNWRITTEN != 0);
        assert!(ext[0].flags & EXTENT_LAST != 0);
    }
}
