//! The timed loop of a metadata phase making mdtest's calls (`md_calls = mdtest`): every op
//! names its item by its whole path from the test directory (the work directory), so the
//! kernel walks the path at every call as mdtest's `open(path)`, `stat(path)` and
//! `unlink(path)` make it: create and read open the path (openat2, no link followed on the
//! way), stat stats it (fstatat of the path), unlink, rmdir, mkdir and rename walk to the
//! item's directory (an O_PATH openat2 of its path) and act on the name there; a phase that
//! changes the namespace ends, with `sync = end`, with the `sync` command as mdtest's `-Y`
//! runs it (`sh -c sync`). The path is written into a fixed buffer, the clock read once per
//! op; nothing is allocated and no lock taken before the phase's end.

use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{Call, CallCounts};
use crate::env::dirs::{self, Dir};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::Recorder;
use crate::latency::series::RateRecorder;
use crate::plan::Op;
use crate::plan::namespace::{NameBuf, item_salt, root_of};
use crate::spec::{OpKind, SyncPolicy};

use super::md_loop::{changes, check_read, check_stat};
use super::{MdCtx, WorkerCtx, WorkerSample, trace_err};

/// Runs one worker of a metadata phase with mdtest's calls; find walks as pfind does
/// (`super::pfind`).
pub(super) fn run<R: Recorder>(ctx: &WorkerCtx<'_>, md: &MdCtx<'_>, rec: Result<R>) -> Result<WorkerSample> {
    let (work, tree, ns) = (md.work, md.ns.tree, &md.ns.ns);
    let root = root_of(ns.dirs, md.workdirs.len(), work.owner);
    let test_dir = &md.workdirs[root.target];
    let t_open = now_ns();
    let base = ctx.before_gate(Dir::open(test_dir).map_err(|e| Error::io("open", test_dir, None, e)))?;
    let open_ns = now_ns() - t_open;
    let mut rec = ctx.before_gate(rec)?;
    if work.op == OpKind::Find {
        return super::pfind::walk(ctx, md, &base, test_dir, &root.path, rec, open_ns);
    }
    let bytes_per = if matches!(work.op, OpKind::Create | OpKind::ReadFiles) { ns.file_bytes } else { 0 };
    let mut buf = vec![0u8; bytes_per as usize];
    crate::plan::fill::fill(&mut buf, ctx.spec.seed ^ work.owner as u64);
    let mut calls = CallCounts::default();
    // The item's directory's path (`md/w2/t1/`), kept while the items stay in it, and the
    // whole path of the item after it.
    let (mut path, mut other, mut name) = (NameBuf::default(), NameBuf::default(), NameBuf::default());
    let (mut at_dir, mut dir_len) = (u64::MAX, 0usize);
    // SAFETY: zeroed is a valid stat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let sync = match ctx.spec.sync {
        _ if !changes(work.op) => SyncPolicy::None,
        SyncPolicy::Every(_) => SyncPolicy::End,
        s => s,
    };
    let data_only = ctx.spec.sync_call == crate::spec::SyncCall::Fdatasync;
    let (mut sync_ns, mut sync_calls) = (0u64, 0u64);
    // Items done per interval: the phase's rate over time, with its stall and overlap checks.
    let mut series = RateRecorder::counting(crate::units::RateUnit::Ops);

    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    let start_ns = now_ns();
    let mut prev = start_ns;
    let mut lim = super::bound::Limits::new(ctx, start_ns);
    let mut k = 0u64;
    while lim.go(k, || if R::CLOCKED { prev } else { now_ns() }) {
        if ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
            return Err(Error::Run("aborted".into()));
        }
        let d = tree.dir_of(k);
        if at_dir != d {
            path.clear();
            path.push(root.path.as_bytes());
            path.push(b"/");
            tree.write_dir(d, &mut path);
            (at_dir, dir_len) = (d, path.len());
        }
        path.truncate(dir_len);
        tree.write_item(work.owner, k, work.renamed, &mut path);
        let fail = |call: &'static str, e: std::io::Error, p: &NameBuf| {
            ctx.abort.store(true, Relaxed);
            Error::io(call, test_dir.join(p.to_string_lossy()), None, e)
        };
        match work.op {
            OpKind::Create => {
                let fd = base
                    .create_at_path(path.c_str())
                    .map_err(|e| fail("openat2(O_CREAT|O_EXCL)", e, &path))?;
                calls.add(Call::Openat2);
                let mut r = Ok(());
                if bytes_per > 0 {
                    let data = &mut buf[..bytes_per as usize];
                    crate::plan::fill::stamp(data, item_salt(ctx.spec.seed, work.owner, k), 0);
                    r = dirs::write_all(fd, data).map_err(|e| fail("write", e, &path));
                    calls.add(Call::Write);
                }
                if r.is_ok() && sync == SyncPolicy::Each {
                    let t = now_ns();
                    r = dirs::sync_fd(fd, data_only).map_err(|e| fail(ctx.spec.sync_call.name(), e, &path));
                    (sync_ns, sync_calls) = (sync_ns + now_ns() - t, sync_calls + 1);
                }
                let closed = dirs::close(fd).map_err(|e| fail("close", e, &path));
                calls.add(Call::Close);
                r.and(closed)?;
            }
            OpKind::Stat => {
                base.stat(path.c_str(), &mut st).map_err(|e| fail("fstatat", e, &path))?;
                calls.add(Call::Fstatat);
                check_stat(&st, tree, ns.file_bytes)
                    .map_err(|why| fail("fstatat", std::io::Error::other(why), &path))?;
            }
            OpKind::Open | OpKind::ReadFiles => {
                let fd = base.open_read_at_path(path.c_str()).map_err(|e| fail("openat2", e, &path))?;
                calls.add(Call::Openat2);
                let mut r = Ok(());
                if work.op == OpKind::ReadFiles && bytes_per > 0 {
                    let data = &mut buf[..bytes_per as usize];
                    r = dirs::read_full(fd, data).map_err(|e| fail("read", e, &path)).and_then(
                        |(n, reads)| {
                            calls.add_n(Call::Read, reads);
                            check_read(&data[..n], bytes_per, item_salt(ctx.spec.seed, work.owner, k))
                                .map_err(|why| fail("read", std::io::Error::other(why), &path))
                        },
                    );
                }
                let closed = dirs::close(fd).map_err(|e| fail("close", e, &path));
                calls.add(Call::Close);
                r.and(closed)?;
            }
            OpKind::Unlink | OpKind::Rmdir | OpKind::Mkdir | OpKind::Rename => {
                // The walk to the item's directory, then the call on its name there.
                let name_at = dir_len;
                name.clear();
                name.push(&path.as_bytes()[name_at..]);
                path.truncate(name_at);
                path.push(b".");
                let parent = base.dir_at_path(path.c_str()).map_err(|e| fail("openat2(O_PATH)", e, &path))?;
                path.truncate(name_at);
                path.push(name.as_bytes());
                calls.add(Call::Openat2);
                let (r, call) = match work.op {
                    OpKind::Unlink => (parent.unlink(name.c_str()), Call::Unlinkat),
                    OpKind::Rmdir => (parent.rmdir(name.c_str()), Call::Unlinkat),
                    OpKind::Mkdir => (parent.mkdir(name.c_str()), Call::Mkdirat),
                    _ => {
                        other.clear();
                        tree.write_item(work.owner, k, !work.renamed, &mut other);
                        (parent.rename(name.c_str(), other.c_str()), Call::Renameat2)
                    }
                };
                r.map_err(|e| fail(call.name(), e, &path))?;
                calls.add(call);
                drop(parent);
                calls.add(Call::Close);
            }
            _ => unreachable!("data phases and find run elsewhere"),
        }
        if R::CLOCKED {
            let t = now_ns();
            rec.record(Op { file: d as u32, offset: k, len: bytes_per }, prev - start_ns, t - prev);
            prev = t;
            series.add(t - start_ns, 1);
        }
        k += 1;
        ctx.progress.store(k, Relaxed);
    }
    let done = k;
    if sync == SyncPolicy::End && done > 0 {
        let t = now_ns();
        sync_command().map_err(|e| Error::io("sync", test_dir, None, e))?;
        calls.add(Call::Sync);
        (sync_ns, sync_calls) = (sync_ns + now_ns() - t, sync_calls + 1);
    }
    let end_ns = now_ns();
    let series = R::CLOCKED.then(|| Box::new(series.finish(end_ns - start_ns)));
    let (hist, trace) = rec.finish().map_err(trace_err)?;
    Ok(WorkerSample {
        worker: ctx.plan.worker,
        bytes: done * bytes_per,
        ops: done,
        start_ns,
        end_ns,
        sync_ns,
        sync_calls,
        open_ns,
        alloc_ns: None,
        hints: None,
        close_ns: 0,
        hist: crate::latency::SampleHist::Full(Box::new(hist)),
        trace: trace.map(Box::new),
        calls: calls.to_map(),
        max_inflight: u64::from(done > 0),
        role: None,
        place: None,
        series,
        stonewall_ops: lim.stonewall_ops,
        found: None,
        mix: None,
    })
}

/// The `sync` command as mdtest's `-Y` runs it (`system("sync")`: a shell running `sync`),
/// which writes back every file system of the machine.
pub(super) fn sync_command() -> std::io::Result<()> {
    let status = std::process::Command::new("/bin/sh").args(["-c", "sync"]).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("`sh -c sync` ended with {status}")))
    }
}
