//! The timed walk of `find`: a worker reads every directory of a tree (getdents64) and stats
//! every entry it finds there (fstatat, not following links), counting the names that match
//! the namespace's pattern; it goes down every subdirectory it finds. It walks what is on
//! disk, not what the plan says should be. In a tree of its own a worker stats every entry; in
//! the shared tree every worker reads every directory and stats the entries whose names hash
//! to it (`plan::namespace::share_of`), so each entry is stated once. One op is one stat.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{Call, CallCounts};
use crate::env::dirs::{Dir, entries};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::Recorder;
use crate::plan::Op;
use crate::plan::namespace::{NameBuf, glob, share_of};

use super::{MdCtx, WorkerCtx, WorkerSample, trace_err};

/// Bytes of one directory read.
const ENTRIES_BYTES: usize = 32 << 10;

/// What the walk keeps as it goes.
struct Walk<'a, R> {
    ctx: &'a WorkerCtx<'a>,
    pattern: &'a [u8],
    share: Option<(u32, u32)>,
    rec: R,
    start_ns: u64,
    prev: u64,
    ops: u64,
    found: u64,
    calls: CallCounts,
    name: NameBuf,
    st: libc::stat,
}

/// Walks the tree at `root` (opened before the gate); the worker's sample.
pub(super) fn walk<R: Recorder>(
    ctx: &WorkerCtx<'_>,
    md: &MdCtx<'_>,
    root: Dir,
    root_p: &Path,
    rec: R,
    open_ns: u64,
) -> Result<WorkerSample> {
    // A buffer per level of the tree, its items (directories, with mkdir) and one more, made
    // before the clock.
    let mut bufs: Vec<Vec<u8>> = (0..md.ns.tree.depth + 3).map(|_| vec![0u8; ENTRIES_BYTES]).collect();
    let mut w = Walk {
        ctx,
        pattern: md.ns.ns.find.as_bytes(),
        share: md.work.share,
        rec,
        start_ns: 0,
        prev: 0,
        ops: 0,
        found: 0,
        calls: CallCounts::default(),
        name: NameBuf::default(),
        // SAFETY: zeroed is a valid stat to fill.
        st: unsafe { std::mem::zeroed() },
    };
    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    w.start_ns = now_ns();
    w.prev = w.start_ns;
    w.dir(&root, &mut bufs, 0).map_err(|f| match f {
        None => Error::Run("aborted".into()),
        Some((call, rel, e)) => {
            ctx.abort.store(true, Relaxed);
            Error::io(call, root_p.join(rel), None, e)
        }
    })?;
    let end_ns = now_ns();
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
        series: None,
        stonewall_ops: None,
        found: Some(w.found),
        mix: None,
    })
}

/// A failed call: its name, the path below the root, the error (None: the phase was stopped).
type Failed = Option<(&'static str, String, std::io::Error)>;

impl<R: Recorder> Walk<'_, R> {
    /// Reads directory `dir` (at `level` below the root) to its end, stating its entries and
    /// walking its subdirectories.
    fn dir(&mut self, dir: &Dir, bufs: &mut [Vec<u8>], level: u32) -> std::result::Result<(), Failed> {
        let (buf, deeper) = match bufs.split_first_mut() {
            Some(x) => x,
            // Deeper than the namespace iolab made: someone else's directories; still walked.
            None => return self.dir(dir, &mut [vec![0u8; ENTRIES_BYTES]], level),
        };
        loop {
            if self.ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
                return Err(None);
            }
            let n = dir.read_entries(buf).map_err(|e| Some(("getdents64", String::new(), e)))?;
            self.calls.add(Call::Getdents64);
            if n == 0 {
                return Ok(());
            }
            for e in entries(buf, n) {
                self.name.clear();
                self.name.push(e.name);
                let mine = self.share.is_none_or(|(w, all)| share_of(e.name, all) == w);
                let mut is_dir = e.kind == libc::DT_DIR;
                if mine || e.kind == libc::DT_UNKNOWN {
                    dir.stat(self.name.c_str(), &mut self.st)
                        .map_err(|err| Some(("fstatat", self.name.to_string_lossy(), err)))?;
                    self.calls.add(Call::Fstatat);
                    is_dir = self.st.st_mode & libc::S_IFMT == libc::S_IFDIR;
                }
                if mine {
                    self.ops += 1;
                    if glob(self.pattern, e.name) {
                        self.found += 1;
                    }
                    if R::CLOCKED {
                        let t = now_ns();
                        let op = Op { file: level, offset: self.ops - 1, len: 0 };
                        self.rec.record(op, self.prev - self.start_ns, t - self.prev);
                        self.prev = t;
                    }
                    self.ctx.progress.store(self.ops, Relaxed);
                }
                if is_dir {
                    // Its name, kept in this frame for a message (the walk reuses `self.name`).
                    let mut here = NameBuf::default();
                    here.push(e.name);
                    let sub = dir
                        .open_beneath(here.c_str())
                        .map_err(|err| Some(("openat2", here.to_string_lossy(), err)))?;
                    self.dir(&sub, deeper, level + 1).map_err(|f| {
                        f.map(|(c, rel, e)| (c, format!("{}/{rel}", here.to_string_lossy()), e))
                    })?;
                }
            }
        }
    }
}
