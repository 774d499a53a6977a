//! The timed walk of `find`: a worker reads every directory of a tree (getdents64) and stats
//! every entry it finds there (fstatat, not following links), counting the names that match
//! the namespace's pattern; it goes down every subdirectory it finds, one level at a time on
//! a stack of its own (never the thread's). It walks what is on disk, not what the plan says
//! should be, but only as deep as iolab made the tree: a directory below that is not iolab's,
//! and the walk stops there naming it (it stays, as everything iolab did not make). In a tree of its own a worker stats every entry; in
//! the shared tree every worker reads every directory and stats the entries whose names hash
//! to it (`plan::namespace::share_of`), so each entry is stated once. One op is one stat.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{Call, CallCounts};
use crate::env::dirs::{Dir, entry_at};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::Recorder;
use crate::latency::series::RateRecorder;
use crate::plan::Op;
use crate::plan::namespace::{NameBuf, glob, share_of};
use crate::spec::ItemKind;

use super::{MdCtx, WorkerCtx, WorkerSample, trace_err};

/// Bytes of one directory read.
const ENTRIES_BYTES: usize = 32 << 10;

/// A directory being read: where the walk is in its last batch of entries.
struct Frame {
    dir: Dir,
    /// Bytes of entries in its buffer, and the offset of the next one.
    len: usize,
    at: usize,
    /// The length of the walk's path before this directory's name.
    path_len: usize,
}

/// What the walk keeps as it goes.
struct Walk<'a, R> {
    ctx: &'a WorkerCtx<'a>,
    pattern: &'a [u8],
    share: Option<(u32, u32)>,
    rec: R,
    /// Entries stated per interval (its rate over time).
    series: RateRecorder,
    start_ns: u64,
    prev: u64,
    ops: u64,
    found: u64,
    calls: CallCounts,
    name: NameBuf,
    st: libc::stat,
    /// The deepest level of a directory iolab made below the root (the tree's depth; one more
    /// with directory items): a directory below it is not iolab's.
    max_level: u32,
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
    let max_level = md.ns.tree.depth + u32::from(md.ns.tree.kind == ItemKind::Dirs);
    // A buffer and a frame per level iolab made, and room for the path below the root of the
    // deepest (each name at most NAME_MAX bytes and a `/`), made before the clock: the walk
    // allocates nothing.
    let levels = max_level as usize + 1;
    let mut bufs: Vec<Vec<u8>> = (0..levels).map(|_| vec![0u8; ENTRIES_BYTES]).collect();
    let mut frames: Vec<Frame> = Vec::with_capacity(levels);
    let mut path: Vec<u8> = Vec::with_capacity(levels * 257);
    let mut w = Walk {
        ctx,
        pattern: md.ns.ns.find.as_bytes(),
        share: md.work.share,
        rec,
        series: RateRecorder::counting(crate::units::RateUnit::Ops),
        start_ns: 0,
        prev: 0,
        ops: 0,
        found: 0,
        calls: CallCounts::default(),
        name: NameBuf::default(),
        // SAFETY: zeroed is a valid stat to fill.
        st: unsafe { std::mem::zeroed() },
        max_level,
    };
    frames.push(Frame { dir: root, len: 0, at: 0, path_len: 0 });
    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    w.start_ns = now_ns();
    w.prev = w.start_ns;
    w.walk(&mut frames, &mut bufs, &mut path).map_err(|f| {
        let at = |rel: &[u8]| root_p.join(String::from_utf8_lossy(rel).as_ref());
        match f {
            Stop::Aborted => Error::Run("aborted".into()),
            Stop::Call(call, e) => {
                ctx.abort.store(true, Relaxed);
                Error::io(call, at(&path), None, e)
            }
            Stop::Foreign(level) => {
                ctx.abort.store(true, Relaxed);
                Error::Run(format!(
                    "find: {}: a directory {level} level{} below the tree's root, deeper than any iolab made there (at most {max_level}): not created by iolab, so not walked; it stays where it is",
                    crate::text::escape_path(&at(&path)),
                    if level == 1 { "" } else { "s" }
                ))
            }
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

/// Why the walk stopped early: the phase was stopped; a call failed (the walk's path names
/// the entry); or it found a directory below the deepest level iolab made (the path names it).
enum Stop {
    Aborted,
    Call(&'static str, std::io::Error),
    /// How many levels below the root the directory is.
    Foreign(u32),
}

impl<R: Recorder> Walk<'_, R> {
    /// Reads every directory of the tree depth first, one frame per level, stating the entries
    /// and counting those whose names match. `path` is the path below the root of the entry
    /// being looked at, for messages.
    fn walk(
        &mut self,
        frames: &mut Vec<Frame>,
        bufs: &mut [Vec<u8>],
        path: &mut Vec<u8>,
    ) -> std::result::Result<(), Stop> {
        while let Some(level) = frames.len().checked_sub(1) {
            if self.ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
                return Err(Stop::Aborted);
            }
            let top = &mut frames[level];
            let buf = &mut bufs[level];
            if top.at >= top.len {
                let n = top.dir.read_entries(buf).map_err(|e| Stop::Call("getdents64", e))?;
                self.calls.add(Call::Getdents64);
                if n == 0 {
                    let done = frames.pop().expect("the frame looked at");
                    path.truncate(done.path_len);
                    continue;
                }
                (top.len, top.at) = (n, 0);
            }
            let Some((e, next)) = entry_at(buf, top.len, top.at) else {
                top.at = top.len;
                continue;
            };
            top.at = next;
            self.name.clear();
            self.name.push(e.name);
            let (mine, kind) = (self.share.is_none_or(|(w, all)| share_of(e.name, all) == w), e.kind);
            let mut is_dir = kind == libc::DT_DIR;
            let here = path.len();
            if mine || kind == libc::DT_UNKNOWN {
                if let Err(err) = top.dir.stat(self.name.c_str(), &mut self.st) {
                    path.extend_from_slice(self.name.as_bytes());
                    return Err(Stop::Call("fstatat", err));
                }
                self.calls.add(Call::Fstatat);
                is_dir = self.st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            }
            if mine {
                self.ops += 1;
                if glob(self.pattern, self.name.as_bytes()) {
                    self.found += 1;
                }
                if R::CLOCKED {
                    let t = now_ns();
                    let op = Op { file: level as u32, offset: self.ops - 1, len: 0 };
                    self.rec.record(op, self.prev - self.start_ns, t - self.prev);
                    self.prev = t;
                    self.series.add(t - self.start_ns, 1);
                }
                self.ctx.progress.store(self.ops, Relaxed);
            }
            if is_dir {
                path.extend_from_slice(self.name.as_bytes());
                if level as u32 + 1 > self.max_level {
                    return Err(Stop::Foreign(level as u32 + 1));
                }
                let sub = top.dir.open_beneath(self.name.c_str()).map_err(|e| Stop::Call("openat2", e))?;
                path.push(b'/');
                frames.push(Frame { dir: sub, len: 0, at: 0, path_len: here });
            }
        }
        Ok(())
    }
}
