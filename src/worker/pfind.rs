//! The timed walk of `find` as pfind makes it (`md_calls = mdtest`, IO500's find): every
//! directory opened by its whole path from the test directory and read (getdents64); every
//! entry that is not a directory counted, one op each, whether its name matches or not; only
//! the names that match stated (by their whole path, not following a link at the name), as
//! pfind does when asked for more than a name (IO500's `-newer` and `-size`), and counted as
//! found. In the shared tree each worker reads every directory and counts the entries whose
//! names hash to it, so each entry is counted once.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{Call, CallCounts};
use crate::env::dirs::{Dir, entries};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::Recorder;
use crate::latency::series::RateRecorder;
use crate::plan::Op;
use crate::plan::namespace::{NameBuf, glob, share_of};

use super::{MdCtx, WorkerCtx, WorkerSample, trace_err};

/// Bytes of one directory read (pfind reads through libc's readdir, 32 KiB at a time).
const ENTRIES_BYTES: usize = 32 << 10;

struct Walk<'a, R> {
    ctx: &'a WorkerCtx<'a>,
    base: &'a Dir,
    pattern: &'a [u8],
    share: Option<(u32, u32)>,
    rec: R,
    start_ns: u64,
    prev: u64,
    ops: u64,
    found: u64,
    /// Entries counted per interval: the phase's rate over time.
    series: RateRecorder,
    calls: CallCounts,
    /// The path of the directory being read, from the test directory, then of an entry.
    path: NameBuf,
    st: libc::stat,
}

/// A failed call: its name, the path from the test directory, the error (None: stopped).
type Failed = Option<(&'static str, String, std::io::Error)>;

/// Walks the tree at `root` (a path from the test directory `base`, opened before the gate).
pub(super) fn walk<R: Recorder>(
    ctx: &WorkerCtx<'_>,
    md: &MdCtx<'_>,
    base: &Dir,
    test_dir: &Path,
    root: &str,
    rec: R,
    open_ns: u64,
) -> Result<WorkerSample> {
    let mut bufs: Vec<Vec<u8>> = (0..md.ns.tree.depth + 3).map(|_| vec![0u8; ENTRIES_BYTES]).collect();
    let mut w = Walk {
        ctx,
        base,
        pattern: md.ns.ns.find.as_bytes(),
        share: md.work.share,
        rec,
        start_ns: 0,
        prev: 0,
        ops: 0,
        found: 0,
        series: RateRecorder::counting(crate::units::RateUnit::Ops),
        calls: CallCounts::default(),
        path: NameBuf::default(),
        // SAFETY: zeroed is a valid stat to fill.
        st: unsafe { std::mem::zeroed() },
    };
    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    w.start_ns = now_ns();
    w.prev = w.start_ns;
    w.path.push(root.as_bytes());
    w.dir(&mut bufs, 0).map_err(|f| match f {
        None => Error::Run("aborted".into()),
        Some((call, rel, e)) => {
            ctx.abort.store(true, Relaxed);
            Error::io(call, test_dir.join(rel), None, e)
        }
    })?;
    let end_ns = now_ns();
    let series = R::CLOCKED.then(|| Box::new(w.series.finish(end_ns - w.start_ns)));
    let (hist, trace) = w.rec.finish().map_err(trace_err)?;
    Ok(WorkerSample {
        worker: ctx.plan.worker,
        bytes: 0,
        ops: w.ops,
        start_ns: w.start_ns,
        end_ns,
        sync_ns: 0,
        sync_calls: 0,
        open_ns,
        alloc_ns: None,
        hints: None,
        close_ns: 0,
        hist: crate::latency::SampleHist::Full(Box::new(hist)),
        trace: trace.map(Box::new),
        calls: w.calls.to_map(),
        max_inflight: u64::from(w.ops > 0),
        role: None,
        place: None,
        series,
        stonewall_ops: None,
        found: Some(w.found),
        mix: None,
    })
}

impl<R: Recorder> Walk<'_, R> {
    /// Opens the directory at `self.path` (its whole path from the test directory), reads it
    /// to its end, counts its entries, stats those that match and walks its subdirectories;
    /// `self.path` is as it was when it returns.
    fn dir(&mut self, bufs: &mut [Vec<u8>], level: u32) -> std::result::Result<(), Failed> {
        let here = self.path.len();
        let dir = self
            .base
            .open_beneath(self.path.c_str())
            .map_err(|e| Some(("openat2", self.path.to_string_lossy(), e)))?;
        self.calls.add(Call::Openat2);
        self.path.push(b"/");
        let (buf, deeper) = match bufs.split_first_mut() {
            Some(x) => x,
            // Deeper than the namespace iolab made: someone else's directories; still walked.
            None => return self.read(&dir, &mut vec![0u8; ENTRIES_BYTES], &mut [], level, here),
        };
        self.read(&dir, buf, deeper, level, here)
    }

    fn read(
        &mut self,
        dir: &Dir,
        buf: &mut [u8],
        deeper: &mut [Vec<u8>],
        level: u32,
        here: usize,
    ) -> std::result::Result<(), Failed> {
        let entry_at = self.path.len();
        loop {
            if self.ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
                return Err(None);
            }
            let n =
                dir.read_entries(buf).map_err(|e| Some(("getdents64", self.path.to_string_lossy(), e)))?;
            self.calls.add(Call::Getdents64);
            if n == 0 {
                self.path.truncate(here);
                return Ok(());
            }
            for e in entries(buf, n) {
                self.path.truncate(entry_at);
                self.path.push(e.name);
                let mut is_dir = e.kind == libc::DT_DIR;
                if e.kind == libc::DT_UNKNOWN {
                    // No type from the directory: a stat says (as pfind's fstatat).
                    self.base
                        .stat(self.path.c_str(), &mut self.st)
                        .map_err(|err| Some(("fstatat", self.path.to_string_lossy(), err)))?;
                    self.calls.add(Call::Fstatat);
                    is_dir = self.st.st_mode & libc::S_IFMT == libc::S_IFDIR;
                }
                if is_dir {
                    self.dir(deeper, level + 1)?;
                    continue;
                }
                if self.share.is_some_and(|(w, all)| share_of(e.name, all) != w) {
                    continue;
                }
                self.ops += 1;
                if glob(self.pattern, e.name) {
                    self.base
                        .stat(self.path.c_str(), &mut self.st)
                        .map_err(|err| Some(("fstatat", self.path.to_string_lossy(), err)))?;
                    self.calls.add(Call::Fstatat);
                    self.found += 1;
                }
                if R::CLOCKED {
                    let t = now_ns();
                    let op = Op { file: level, offset: self.ops - 1, len: 0 };
                    self.rec.record(op, self.prev - self.start_ns, t - self.prev);
                    self.prev = t;
                    self.series.add(t - self.start_ns, 1);
                }
                self.ctx.progress.store(self.ops, Relaxed);
            }
        }
    }
}
