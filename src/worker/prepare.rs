//! What a run does to its files outside the timed loops: empty them (and preallocate) before a
//! write phase, and lay them out in full when the first phase reads or rewrites. The
//! coordinator does it for every file; an MPI rank does it for the files of its host when the
//! run's directory is node-local.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::env::sys;
use crate::error::{Error, Result};
use crate::plan::verify::BlockTag;
use crate::plan::{self, Op, RunPlan};
use crate::spec::Spec;
use crate::target::owned::{self, FileId};
use crate::worker::data::DataPath;

/// Before a write phase: empty every file, then preallocate if asked. Returns the time
/// preallocation took (reported separately, not part of any worker's t_i). A file is opened
/// (and so emptied) only if it is still the one iolab created, `ids`; only the files `wanted`
/// (by global id).
pub fn recreate(
    spec: &Spec,
    plan: &RunPlan,
    paths: &[PathBuf],
    ids: &[FileId],
    wanted: impl Fn(usize) -> bool,
) -> Result<u64> {
    let mut ns = 0;
    let mut emptied = vec![];
    for (g, ((f, p), &id)) in plan.files.iter().zip(paths).zip(ids).enumerate() {
        if !wanted(g) {
            continue;
        }
        crate::env::signals::check()?;
        let file = owned::open(p, id, true, 0)?;
        file.set_len(0).map_err(|e| Error::io("ftruncate", p, None, e))?;
        if spec.prealloc {
            let t = sys::now_ns();
            sys::fallocate(&file, f.size_bytes).map_err(|e| Error::io("fallocate", p, Some(0), e))?;
            ns += sys::now_ns() - t;
        }
        if spec.alloc_block {
            emptied.push(file);
        }
    }
    crate::worker::alloc::release_freed(&emptied)?;
    Ok(ns)
}

/// Writes every file in full (untimed) when the first phase reads or rewrites: the same
/// bytes a write phase would produce, through the same data path, committed. A short write is
/// an error naming the offset, as in the timed loop. Only the files `wanted` (by global id).
pub fn lay_out(
    spec: &Spec,
    plan: &RunPlan,
    paths: &[PathBuf],
    ids: &[FileId],
    tag: BlockTag,
    wanted: impl Fn(usize) -> bool,
) -> Result<()> {
    let len = plan::piece_len(spec);
    let mut buf = Vec::new();
    buf.try_reserve_exact(spec.bs_bytes as usize).map_err(|e| {
        Error::Run(format!("cannot allocate a block of {} bytes to lay files out: {e}", spec.bs_bytes))
    })?;
    buf.resize(spec.bs_bytes as usize, 0);
    for (gid, ((f, p), &id)) in plan.files.iter().zip(paths).zip(ids).enumerate() {
        if !wanted(gid) {
            continue;
        }
        let mut data = DataPath::with(spec, &[gid as u32], tag);
        data.init_write_buf(&mut buf);
        let file = owned::open(p, id, true, 0)?;
        let mut off = 0;
        while off < f.size_bytes {
            crate::env::signals::check()?;
            let n = len.min(f.size_bytes - off) as usize;
            data.before_write(&mut buf[..n], Op { file: 0, offset: off, len: n as u64 });
            let w = file.write_at(&buf[..n], off).map_err(|e| Error::io("pwrite", p, Some(off), e))?;
            if w != n {
                let short = std::io::Error::other(crate::worker::data::short_write(
                    p,
                    id,
                    &buf[w..n],
                    off + w as u64,
                    w as u64,
                    n as u64,
                ));
                return Err(Error::io("pwrite", p, Some(off), short));
            }
            off += n as u64;
        }
        file.sync_data().map_err(|e| Error::io("fdatasync", p, None, e))?;
    }
    Ok(())
}
