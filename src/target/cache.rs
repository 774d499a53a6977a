//! Sets and verifies the page-cache state of a phase's files before it starts.
//!
//! cold: write back each file's data (fdatasync), drop its pages (posix_fadvise DONTNEED),
//! optionally drop all caches, then count resident pages with mincore. An empty file (a write
//! phase's, just truncated) has no pages to write back or drop. warm: read each file once, then count.
//! asis: only count. The fraction is stored with every result; the caller judges it. Each file
//! is opened only if it is still the one iolab created ([`crate::target::owned`]).

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::env::sys;
use crate::error::{Error, Result};
use crate::spec::CachePolicy;
use crate::target::owned::{self, FileId};

/// Brings `paths` (which must still be the files `ids`) into the state `policy` asks for and
/// returns the resident fraction (0 for empty files).
pub fn prepare(policy: CachePolicy, paths: &[PathBuf], ids: &[FileId], drop_caches: bool) -> Result<f64> {
    if ids.len() != paths.len() {
        return Err(Error::Run(format!(
            "{} files but {} identities to check them against",
            paths.len(),
            ids.len()
        )));
    }
    match policy {
        CachePolicy::Cold => {
            for (p, &id) in paths.iter().zip(ids) {
                crate::env::signals::check()?;
                let f = owned::open(p, id, false, 0)?;
                if f.metadata().map_err(|e| Error::io("fstat", p, None, e))?.len() == 0 {
                    continue;
                }
                // Dirty pages cannot be dropped: their data goes to disk first. The inode's
                // times (what fsync would add) keep no page in the cache.
                f.sync_data().map_err(|e| Error::io("fdatasync", p, None, e))?;
                sys::fadvise_dontneed(&f).map_err(|e| Error::io("posix_fadvise", p, None, e))?;
            }
            // Two processes evicting one file at once (MPI ranks of one host sharing a file)
            // can each leave a page the other held: evict what is left again, a few times.
            for pass in 1..=3u64 {
                let mut left = false;
                for (p, &id) in paths.iter().zip(ids) {
                    let f = owned::open(p, id, false, 0)?;
                    if sys::resident_pages(&f).map_err(|e| Error::io("mincore", p, None, e))?.0 > 0 {
                        left = true;
                        sys::fadvise_dontneed(&f).map_err(|e| Error::io("posix_fadvise", p, None, e))?;
                    }
                }
                if !left {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(pass));
            }
            if drop_caches {
                sys::drop_caches().map_err(|e| Error::io("write", "/proc/sys/vm/drop_caches", None, e))?;
            }
        }
        CachePolicy::Warm => {
            let mut buf = vec![0u8; 1 << 20];
            for (p, &id) in paths.iter().zip(ids) {
                let f = owned::open(p, id, false, 0)?;
                let mut off = 0u64;
                loop {
                    crate::env::signals::check()?;
                    let n = f.read_at(&mut buf, off).map_err(|e| Error::io("pread", p, Some(off), e))?;
                    if n == 0 {
                        break;
                    }
                    off += n as u64;
                }
            }
        }
        CachePolicy::Asis => {}
    }
    resident_fraction(paths, ids)
}

/// Resident pages / total pages over all `paths` (0 when they hold no pages).
pub fn resident_fraction(paths: &[PathBuf], ids: &[FileId]) -> Result<f64> {
    if ids.len() != paths.len() {
        return Err(Error::Run(format!(
            "{} files but {} identities to check them against",
            paths.len(),
            ids.len()
        )));
    }
    let (mut res, mut total) = (0u64, 0u64);
    for (p, &id) in paths.iter().zip(ids) {
        crate::env::signals::check()?;
        let f = owned::open(p, id, false, 0)?;
        let (r, t) = sys::resident_pages(&f).map_err(|e| Error::io("mincore", p, None, e))?;
        res += r;
        total += t;
    }
    Ok(if total == 0 { 0.0 } else { res as f64 / total as f64 })
}

/// `drop_caches` checked before anything runs: it applies to cold phases only, and writing 3
/// to /proc/sys/vm/drop_caches needs root, so a run that could not do it is refused up front
/// (exit 2) rather than failing at its first cold phase.
pub fn check_drop_caches(drop_caches: bool, any_cold: bool) -> Result<()> {
    if !drop_caches {
        return Ok(());
    }
    if !any_cold {
        return Err(Error::spec("drop_caches", "true", "only applies to cold phases"));
    }
    if !sys::can_write("/proc/sys/vm/drop_caches") {
        return Err(Error::spec(
            "drop_caches",
            "true",
            "it writes 3 to /proc/sys/vm/drop_caches, which this process may not write (root only); run as root, or without --drop-caches (cold phases are evicted and checked all the same)",
        ));
    }
    Ok(())
}

/// How a policy defeats or uses the cache, in words (stored with results).
pub fn method(policy: CachePolicy, direct: bool, drop_caches: bool) -> String {
    let base = match policy {
        CachePolicy::Cold if drop_caches => {
            "committed, evicted (fadvise DONTNEED + drop_caches), checked with mincore"
        }
        CachePolicy::Cold => "committed, evicted (fadvise DONTNEED), checked with mincore",
        CachePolicy::Warm => "read once first, checked with mincore",
        CachePolicy::Asis => "not controlled",
    };
    if direct { format!("O_DIRECT (page cache bypassed); {base}") } else { base.to_string() }
}
