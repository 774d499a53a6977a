//! The timed loop of a metadata phase: one op per item there is (create with its bytes, stat, open,
//! read-files, rename, unlink, mkdir, rmdir), each a system call or three on a name beneath
//! the directory that holds the item, that directory opened once per directory of items, never
//! through a symbolic link. The name is written into a fixed buffer, the clock read once per
//! op; nothing is allocated and no lock taken. find walks the trees instead (`super::find`).
//! A stonewalled create or mkdir stops at the time, as the data loops do ([`super::bound`]),
//! and with wear-out goes on to the most items any worker made; each later phase visits the
//! items its owner made (`WorkerCtx::extent`).
//!
//! What one op is: create: openat(O_CREAT|O_EXCL), write of the file's bytes (if any), an
//! fsync with `sync = each`, close; stat: fstatat, its type and size checked; open: openat and
//! close; read-files: openat, read of the bytes create wrote, close, the bytes checked; rename: renameat2 to
//! the other name (never replacing one); unlink, rmdir: unlinkat; mkdir: mkdirat. A phase that
//! changes the namespace ends, with `sync = end` (the default), with a syncfs of the file
//! system by every worker, inside its time (mdtest `-Y`), as data phases end with their commit.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{Call, CallCounts};
use crate::env::dirs::{self, Dir};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::series::RateRecorder;
use crate::latency::{Hist, Off, Recorder, Traced};
use crate::plan::Op;
use crate::plan::namespace::{NameBuf, Tree, item_salt, root_of};
use crate::spec::{ItemKind, LatencyMode, OpKind, SyncPolicy};

use super::{MdCtx, WorkerCtx, WorkerSample, trace_err};

/// Runs one worker of a metadata phase, monomorphised per latency mode.
pub fn run_md_worker(ctx: &WorkerCtx<'_>) -> Result<WorkerSample> {
    let md = ctx.md.expect("a metadata phase");
    if md.ns.ns.calls == crate::spec::MdCalls::Mdtest {
        return match ctx.spec.latency {
            LatencyMode::Off => super::md_paths::run(ctx, &md, Ok(Off)),
            LatencyMode::Histogram => super::md_paths::run(ctx, &md, Ok(Hist::new())),
            LatencyMode::Trace => super::md_paths::run(ctx, &md, Traced::start(&[]).map_err(trace_err)),
        };
    }
    match ctx.spec.latency {
        LatencyMode::Off => md_loop::<Off>(ctx, Ok(Off)),
        LatencyMode::Histogram => md_loop::<Hist>(ctx, Ok(Hist::new())),
        LatencyMode::Trace => md_loop::<Traced>(ctx, Traced::start(&[]).map_err(trace_err)),
    }
}

/// The tree root holding a worker's items, as a path.
pub fn root_path(md: &MdCtx<'_>, owner: u32) -> PathBuf {
    let root = root_of(md.ns.ns.dirs, md.workdirs.len(), owner);
    md.workdirs[root.target].join(root.path)
}

/// Whether a phase changes the namespace (and so commits it by the sync policy).
pub(super) fn changes(op: OpKind) -> bool {
    matches!(op, OpKind::Create | OpKind::Rename | OpKind::Unlink | OpKind::Mkdir | OpKind::Rmdir)
}

/// What the loop keeps between ops: the directory of the last item, its path for messages.
struct At {
    dir: Option<Dir>,
    index: u64,
    rel: NameBuf,
}

fn md_loop<R: Recorder>(ctx: &WorkerCtx<'_>, rec: Result<R>) -> Result<WorkerSample> {
    let md = ctx.md.expect("a metadata phase");
    let (work, tree, ns) = (md.work, md.ns.tree, &md.ns.ns);
    let t_open = now_ns();
    let root_p = root_path(&md, work.owner);
    let root = ctx.before_gate(Dir::open(&root_p).map_err(|e| Error::io("open", &root_p, None, e)))?;
    let open_ns = now_ns() - t_open;
    let mut rec = ctx.before_gate(rec)?;
    if work.op == OpKind::Find {
        return super::find::walk(ctx, &md, root, &root_p, rec, open_ns);
    }
    let bytes_per = if matches!(work.op, OpKind::Create | OpKind::ReadFiles) { ns.file_bytes } else { 0 };
    // Written once before the clock; each file gets its own stamps.
    let mut buf = vec![0u8; bytes_per as usize];
    crate::plan::fill::fill(&mut buf, ctx.spec.seed ^ work.owner as u64);
    let mut calls = CallCounts::default();
    let (mut at, mut name, mut other) =
        (At { dir: None, index: 0, rel: NameBuf::default() }, NameBuf::default(), NameBuf::default());
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
    // Items there are (or, for a create, planned): under a stonewall, those done by then (and
    // with wear-out, up to the most any worker did).
    let mut lim = super::bound::Limits::new(ctx, start_ns);
    let mut k = 0u64;
    // The deadline is checked against the last op's end when ops are clocked (no second read).
    while lim.go(k, || if R::CLOCKED { prev } else { now_ns() }) {
        if ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
            return Err(Error::Run("aborted".into()));
        }
        let d = tree.dir_of(k);
        if at.dir.is_none() || at.index != d {
            at.rel.clear();
            tree.write_dir(d, &mut at.rel);
            at.rel.push(b".");
            let opened = root.open_beneath(at.rel.c_str());
            at.rel.truncate(at.rel.len() - 1);
            at.dir = Some(opened.map_err(|e| fail(ctx, &root_p, &at.rel, None, "openat2", e))?);
            at.index = d;
        }
        let dir = at.dir.as_ref().expect("opened above");
        name.clear();
        tree.write_item(work.owner, k, work.renamed, &mut name);
        let err = |call: &'static str, e: std::io::Error, name: &NameBuf| {
            fail(ctx, &root_p, &at.rel, Some(name), call, e)
        };
        match work.op {
            OpKind::Create => {
                let fd = dir.create(name.c_str()).map_err(|e| err("openat(O_CREAT|O_EXCL)", e, &name))?;
                calls.add(Call::Openat);
                let mut r = Ok(());
                if bytes_per > 0 {
                    let data = &mut buf[..bytes_per as usize];
                    crate::plan::fill::stamp(data, item_salt(ctx.spec.seed, work.owner, k), 0);
                    r = dirs::write_all(fd, data).map_err(|e| err("write", e, &name));
                    calls.add(Call::Write);
                }
                if r.is_ok() && sync == SyncPolicy::Each {
                    let t = now_ns();
                    r = dirs::sync_fd(fd, data_only).map_err(|e| err(ctx.spec.sync_call.name(), e, &name));
                    (sync_ns, sync_calls) = (sync_ns + now_ns() - t, sync_calls + 1);
                }
                let closed = dirs::close(fd).map_err(|e| err("close", e, &name));
                calls.add(Call::Close);
                r.and(closed)?;
            }
            OpKind::Stat => {
                dir.stat(name.c_str(), &mut st).map_err(|e| err("fstatat", e, &name))?;
                calls.add(Call::Fstatat);
                check_stat(&st, tree, ns.file_bytes)
                    .map_err(|why| err("fstatat", std::io::Error::other(why), &name))?;
            }
            OpKind::Open | OpKind::ReadFiles => {
                let fd = dir.open_read(name.c_str()).map_err(|e| err("openat", e, &name))?;
                calls.add(Call::Openat);
                let mut r = Ok(());
                if work.op == OpKind::ReadFiles && bytes_per > 0 {
                    let data = &mut buf[..bytes_per as usize];
                    r = dirs::read_full(fd, data).map_err(|e| err("read", e, &name)).and_then(
                        |(n, reads)| {
                            calls.add_n(Call::Read, reads);
                            check_read(&data[..n], bytes_per, item_salt(ctx.spec.seed, work.owner, k))
                                .map_err(|why| err("read", std::io::Error::other(why), &name))
                        },
                    );
                }
                let closed = dirs::close(fd).map_err(|e| err("close", e, &name));
                calls.add(Call::Close);
                r.and(closed)?;
            }
            OpKind::Rename => {
                other.clear();
                tree.write_item(work.owner, k, !work.renamed, &mut other);
                let to = other.c_str();
                dir.rename(name.c_str(), to).map_err(|e| err("renameat2", e, &name))?;
                calls.add(Call::Renameat2);
            }
            OpKind::Unlink | OpKind::Rmdir => {
                let r =
                    if work.op == OpKind::Rmdir { dir.rmdir(name.c_str()) } else { dir.unlink(name.c_str()) };
                r.map_err(|e| err("unlinkat", e, &name))?;
                calls.add(Call::Unlinkat);
            }
            OpKind::Mkdir => {
                dir.mkdir(name.c_str()).map_err(|e| err("mkdirat", e, &name))?;
                calls.add(Call::Mkdirat);
            }
            _ => unreachable!("data phases and find run elsewhere"),
        }
        if sync == SyncPolicy::Each && work.op != OpKind::Create {
            let t = now_ns();
            dir.fsync().map_err(|e| err("fsync", e, &name))?;
            (sync_ns, sync_calls) = (sync_ns + now_ns() - t, sync_calls + 1);
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
        root.syncfs().map_err(|e| Error::io("syncfs", &root_p, None, e))?;
        (sync_ns, sync_calls) = (sync_ns + now_ns() - t, sync_calls + 1);
    }
    let end_ns = now_ns();
    drop(at);
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

/// A failed call on an item (or, without `name`, on its directory): the error names the call
/// and the whole path, and stops the other workers.
fn fail(
    ctx: &WorkerCtx<'_>,
    root: &Path,
    rel: &NameBuf,
    name: Option<&NameBuf>,
    call: &'static str,
    e: std::io::Error,
) -> Error {
    ctx.abort.store(true, Relaxed);
    let mut p = root.join(rel.to_string_lossy());
    if let Some(n) = name {
        p.push(n.to_string_lossy());
    }
    Error::io(call, &p, None, e)
}

/// A stat of an item must find what iolab made: a regular file of the bytes it wrote, or a
/// directory.
pub(super) fn check_stat(st: &libc::stat, tree: Tree, file_bytes: u64) -> std::result::Result<(), String> {
    let kind = st.st_mode & libc::S_IFMT;
    match tree.kind {
        ItemKind::Files if kind != libc::S_IFREG => {
            Err("not a regular file: not what iolab made there".into())
        }
        ItemKind::Files if st.st_size as u64 != file_bytes => {
            Err(format!("{} bytes, not the {file_bytes} iolab wrote", st.st_size))
        }
        ItemKind::Dirs if kind != libc::S_IFDIR => Err("not a directory: not what iolab made there".into()),
        _ => Ok(()),
    }
}

/// A file read whole must hold exactly the bytes create wrote: its length and its stamps.
pub(super) fn check_read(data: &[u8], want: u64, salt: u64) -> std::result::Result<(), String> {
    if data.len() as u64 != want {
        return Err(format!("read {} bytes, the file should hold {want}", data.len()));
    }
    match crate::plan::fill::check_stamps(data, salt, 0, want.max(1)) {
        Some(off) => Err(format!("the bytes at offset {off} are not those iolab wrote")),
        None => Ok(()),
    }
}
