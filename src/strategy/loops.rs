//! The timed loops of a strategy's roles, following the study's template: (1) the workers
//! exist; (2) each writer warms the disk up with writes; (3) barrier; (4) for each iteration:
//! (4a) compute and fill the output buffer, (4b) barrier, (4c) write it or hand it over,
//! (4d) maybe sync; (5) a final sync. Each role's time runs from the barrier of (3) to its own
//! end (the writer's: after the final sync), and every stretch of it is attributed to one of
//! compute, write, sync, hand-off or wait ([`RoleTimes`]), from one clock read at each
//! boundary.

use std::path::{Path, PathBuf};

use super::coord::{self, Coord, Group, Receiver};
use super::data::{self, Message};
use super::mechanism::{self, Committer, Mechanism};
use super::plan::{Plan, Receive, RolePlan, Write};
use super::sync_thread::{Mailbox, sync_thread};
use super::{RoleSample, RoleTimes, Strategy, gettid, thread_cpu_ns, thread_runq_ns};
use crate::engine::{CallCounts, FileId, Setup};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::FastHist;
use crate::latency::trace::{TraceOp, TraceRecorder};
use crate::plan::Op;
use crate::plan::mem::Strided;
use crate::spec::{LatencyMode, Spec, SyncPolicy};
use crate::worker::WorkerSample;

/// Bytes each writer writes and commits before the start barrier to warm the disk up (then
/// truncates away, so the timed loop starts from the file the phase prepared).
pub const WARMUP_BYTES: u64 = 1 << 20;

/// Everything one role needs.
pub struct RoleCtx<'a> {
    pub spec: &'a Spec,
    pub plan: &'a Plan,
    pub role: &'a RolePlan,
    /// Paths, identities (the inodes iolab created) and final sizes of the run's files, by
    /// global file id.
    pub paths: &'a [PathBuf],
    pub ids: &'a [FileId],
    pub sizes: &'a [u64],
    /// How the roles meet, order commits and hand data over.
    pub coord: &'a dyn Coord,
}

/// Attributes the time since the last boundary to one bucket.
pub(super) struct Lap {
    pub(super) prev: u64,
}

impl Lap {
    #[inline(always)]
    pub(super) fn to(&mut self, bucket: &mut u64) -> u64 {
        let t = now_ns();
        *bucket += t - self.prev;
        self.prev = t;
        t
    }
}

/// A writer: its engine and the hand-offs it receives from.
struct Writer<'a> {
    mech: Box<dyn Mechanism>,
    path: &'a Path,
    id: FileId,
    plan: &'a Write,
    op_len: u64,
    receivers: Vec<(Receive, Box<dyn Receiver + 'a>)>,
    /// Allocating its engine's buffers (outside its open time).
    alloc_ns: u64,
}

/// Runs one worker's role (and, for the S5 writer, its sync thread); returns its sample (two
/// with a sync thread). A failure stops the whole run.
pub fn run(ctx: &RoleCtx<'_>) -> Result<Vec<WorkerSample>> {
    let r = run_role(ctx);
    if r.is_err() {
        ctx.coord.stop();
    }
    r
}

fn run_role(ctx: &RoleCtx<'_>) -> Result<Vec<WorkerSample>> {
    let t_open = now_ns();
    let writer = ctx.role.write.as_ref().map(|w| open_writer(ctx, w)).transpose();
    let writer = match writer {
        Ok(w) => w,
        Err(e) => {
            // Still meet the others at the start barrier's stop, so nobody waits for us.
            ctx.coord.stop();
            return Err(e);
        }
    };
    // The open time without the buffers' allocation, which the writer times apart.
    let open_ns = (now_ns() - t_open).saturating_sub(writer.as_ref().map_or(0, |w| w.alloc_ns));
    let Some(w) = writer.as_ref().filter(|_| ctx.plan.sync_thread) else {
        return Ok(vec![main_loop(ctx, writer, open_ns, None)?]);
    };
    let committer = Committer::open(w.path, w.id, ctx.spec.sync_call)?;
    let mailbox = Mailbox::default();
    std::thread::scope(|s| {
        let syncer = std::thread::Builder::new()
            .name(format!("iolab-s{}-sync", ctx.role.worker))
            .spawn_scoped(s, || sync_thread(ctx, committer, &mailbox))
            .map_err(|e| Error::Run(format!("cannot start the sync thread: {e}")))?;
        let main = main_loop(ctx, writer, open_ns, Some(&mailbox));
        if main.is_err() {
            mailbox.quit();
        }
        let sync = syncer.join().unwrap_or_else(|_| Err(Error::Run("the sync thread panicked".into())));
        match (main, sync) {
            (Ok(a), Ok(b)) => Ok(vec![a, b]),
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
            (Err(a), Err(b)) => Err(if a.is_echo() { b } else { a }),
        }
    })
}

/// (2): writes and commits `WARMUP_BYTES`, then empties the file again (and preallocates it
/// again, if asked), before the engine opens it. Only iolab's own file (`id`) is opened.
fn warm_up(path: &Path, id: FileId, size: u64, prealloc: bool, seed: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let f = crate::target::owned::open(path, id, true, 0)?;
    let mut chunk = vec![0u8; 64 << 10];
    crate::plan::fill::fill(&mut chunk, seed ^ 0x3A7E);
    let mut off = 0;
    while off < WARMUP_BYTES {
        f.write_all_at(&chunk, off).map_err(|e| Error::io("pwrite", path, Some(off), e))?;
        off += chunk.len() as u64;
    }
    f.sync_data().map_err(|e| Error::io("fdatasync", path, None, e))?;
    f.set_len(0).map_err(|e| Error::io("ftruncate", path, Some(0), e))?;
    if prealloc {
        crate::env::sys::fallocate(&f, size).map_err(|e| Error::io("fallocate", path, Some(0), e))?;
    }
    Ok(())
}

fn open_writer<'a>(ctx: &'a RoleCtx<'_>, w: &'a Write) -> Result<Writer<'a>> {
    let spec = ctx.spec;
    let path = ctx.paths[w.file as usize].as_path();
    let id = ctx.ids.get(w.file as usize).copied().unwrap_or_default();
    let size = ctx.sizes[w.file as usize];
    let view = ctx.plan.view(w);
    // A file all writers share (MPI-IO) is warmed up by worker 0 alone.
    if view.is_none() || ctx.role.worker == 0 {
        warm_up(path, id, size, spec.prealloc, spec.seed)?;
    }
    let op_len = w.parts_per_op() as u64 * ctx.plan.bs;
    let paths = [path.to_path_buf()];
    let ids = [id];
    let setup = Setup {
        paths: &paths,
        ids: &ids,
        sizes: &[size],
        write: true,
        direct: spec.direct,
        open_sync: spec.open_sync,
        bs: op_len as usize,
        mem: spec.mem(),
        iodepth: 1,
        pieces: 0,
        window: spec.window_bytes,
        // The S5 writer commits nothing itself (its sync thread does), so its engine must not
        // commit windows as it unmaps them either.
        sync: if w.commits { spec.sync } else { SyncPolicy::None },
        sync_call: spec.sync_call,
        shared_by_all: view.is_some(),
        mpiio: spec.mpiio.as_ref(),
        view,
        remote: None,
        buffers: None,
    };
    // The buffers first, every page written, timed apart from the open.
    let t_alloc = now_ns();
    let buffers = crate::engine::Buffers::allocate(&setup, &mechanism::buffers(&spec.engine, &setup))?;
    let alloc_ns = now_ns() - t_alloc;
    let mech = mechanism::open(&spec.engine, &Setup { buffers: Some(&buffers), ..setup })?;
    let receivers = w.receives.iter().map(|r| Ok((*r, ctx.coord.receiver(*r)?))).collect::<Result<_>>()?;
    Ok(Writer { mech, path, id, plan: w, op_len, receivers, alloc_ns })
}

/// (4a): fills the output, then spins on CLOCK_MONOTONIC until `per_iter_ns` have passed
/// since `t0`. Never sleeps: the CPU stays busy as a real computation keeps it.
fn compute(
    buf: &mut [u8],
    mem: Option<Strided>,
    seed: u64,
    msg: &Message,
    per_iter_ns: u64,
    t0: u64,
    group: &dyn Group,
) -> Result<()> {
    data::produce(buf, mem, seed, msg);
    let deadline = t0 + per_iter_ns;
    let mut n = 0u32;
    while now_ns() < deadline {
        n = n.wrapping_add(1);
        if n % 1024 == 0 && group.stopped() {
            return Err(coord::stopped());
        }
        std::hint::spin_loop();
    }
    Ok(())
}

/// The compute, write and hand-off loop of one worker.
fn main_loop(
    ctx: &RoleCtx<'_>,
    mut writer: Option<Writer<'_>>,
    open_ns: u64,
    mailbox: Option<&Mailbox>,
) -> Result<WorkerSample> {
    let (spec, plan, role, co) = (ctx.spec, ctx.plan, ctx.role, ctx.coord);
    let alloc_ns = writer.as_ref().map(|w| w.alloc_ns);
    let mem = spec.mem();
    let part_mem = mem.map_or(plan.bs as usize, |m| m.mem_bytes(plan.bs as usize));
    // Where this role's own output lands: its own file, or the writer's (file 0).
    let (file, per_iter, first) = match &role.write {
        Some(w) if w.parts_per_iter == 1 => (w.file, 1, 0),
        Some(w) => (w.file, w.parts_per_iter, role.compute.map_or(0, |c| c.parts.first)),
        None => (0, plan.workers, role.compute.map_or(0, |c| c.parts.first)),
    };
    let salt = crate::plan::fill::file_salt(spec.seed, file);
    let mut sender = role.sends.map(|ring| co.sender(ring)).transpose()?;
    let mut hist = FastHist::new();
    // The writer's ops, file index 0 being the global file `file`.
    let mut trace = (writer.is_some() && spec.latency == LatencyMode::Trace)
        .then(|| TraceRecorder::start(&[file]))
        .transpose()
        .map_err(crate::worker::trace_err)?;
    let exclusive = plan.strategy == Strategy::S1B;
    let tid = gettid();
    let mut commit_tids = vec![];
    let mut spans =
        Vec::with_capacity(writer.as_ref().map_or(0, |w| plan.commits_bound(spec.sync, w.op_len)));
    let mut t = RoleTimes { compute_target: plan.compute_target_ns(role), ..RoleTimes::default() };
    let (mut bytes, mut ops, mut since, mut sync_calls) = (0u64, 0u64, 0u64, 0u64);

    // (3) The start barrier. (CPU and run-queue clocks read just before: a wait at a barrier
    // neither runs nor waits for a CPU.)
    let (cpu0, runq0) = (thread_cpu_ns(), thread_runq_ns());
    co.barrier().map_err(|_| Error::Run("aborted before start".into()))?;
    let start_ns = now_ns();
    if let Some(mb) = mailbox {
        mb.start(start_ns);
    }
    let mut lap = Lap { prev: start_ns };
    let mut commit = |w: &mut Writer<'_>, lap: &mut Lap, t: &mut RoleTimes| -> Result<()> {
        co.begin(exclusive)?;
        let t0 = lap.to(&mut t.wait);
        let r = w.mech.sync(spec.sync_call);
        spans.push((t0, lap.to(&mut t.sync)));
        co.end(exclusive);
        r.map_err(|e| Error::io(e.call.name(), w.path, None, e.err))?;
        sync_calls += 1;
        if !commit_tids.contains(&tid) {
            commit_tids.push(tid);
        }
        Ok(())
    };
    for i in 0..plan.iters {
        // (4a) Compute and fill.
        if let Some(c) = role.compute {
            let msg = Message {
                producer: role.worker,
                iter: i,
                salt,
                offset: plan.offset(per_iter, i, first),
                disk_len: (c.parts.parts as u64 * plan.bs) as usize,
            };
            let buf: &mut [u8] = match (&mut sender, &mut writer) {
                (Some(tx), _) => {
                    let b = tx.buffer()?;
                    lap.to(&mut t.wait);
                    b
                }
                (None, Some(w)) => {
                    // The writer's buffer holds the parts it writes, from its first.
                    let lo = (first - w.plan.part.unwrap_or(0)) as usize * part_mem;
                    &mut w.mech.buf()[lo..lo + c.parts.parts as usize * part_mem]
                }
                (None, None) => {
                    return Err(Error::Run("a compute role with nowhere to put its output".into()));
                }
            };
            compute(buf, mem, spec.seed, &msg, c.per_iter_ns, lap.prev, co)?;
            lap.to(&mut t.compute);
        }
        // (4b) Barrier.
        co.barrier()?;
        lap.to(&mut t.wait);
        // (4c) Hand over, or receive and write.
        if let Some(tx) = &mut sender {
            tx.send()?;
            lap.to(&mut t.handoff);
        }
        let Some(w) = &mut writer else { continue };
        for (r, rx) in &mut w.receivers {
            rx.wait()?;
            lap.to(&mut t.wait);
            let lo = r.parts.first as usize * part_mem;
            rx.take_into(&mut w.mech.buf()[lo..lo + r.parts.parts as usize * part_mem])?;
            lap.to(&mut t.handoff);
        }
        let op = Op { file: 0, offset: plan.write_offset(w.plan, i), len: w.op_len };
        let t0 = lap.prev;
        let done = w.mech.write(op).map_err(|e| Error::io(e.call.name(), w.path, Some(op.offset), e.err))?;
        let t1 = lap.to(&mut t.write);
        hist.record(t1 - t0);
        if let Some(tr) = trace.as_mut() {
            let (offset, len) = (op.offset, op.len as u32);
            tr.record(TraceOp {
                offset,
                start_ns: t0 - start_ns,
                duration_ns: t1 - t0,
                len,
                write: true,
                ..TraceOp::default()
            });
        }
        if done != op.len {
            let rest = &w.mech.buf()[done as usize..op.len as usize];
            let msg = crate::worker::data::short_write(w.path, w.id, rest, op.offset + done, done, op.len);
            return Err(Error::io(w.mech.call_name(), w.path, Some(op.offset), std::io::Error::other(msg)));
        }
        bytes += done;
        ops += 1;
        since += done;
        co.progress(role.worker, bytes);
        // (4d) Maybe sync.
        let due = match spec.sync {
            SyncPolicy::Every(n) => since >= n,
            SyncPolicy::Each => true,
            SyncPolicy::End | SyncPolicy::None => false,
        };
        if due {
            match mailbox {
                Some(mb) => mb.request(bytes),
                None => commit(w, &mut lap, &mut t)?,
            }
            since = 0;
        }
    }
    // (5) The final sync.
    if let Some(w) = &mut writer {
        match mailbox {
            Some(mb) => {
                mb.finish(bytes);
                mb.wait_done(bytes, co)?;
                lap.to(&mut t.wait);
            }
            None if since > 0 && spec.sync != SyncPolicy::None => commit(w, &mut lap, &mut t)?,
            None => {}
        }
    }
    let end_ns = lap.prev;
    t.cpu = thread_cpu_ns().saturating_sub(cpu0);
    t.runq = thread_runq_ns().saturating_sub(runq0);
    let t_close = now_ns();
    let calls = match writer {
        Some(w) => w.mech.close().map_err(|e| Error::io("close", w.path, None, e))?,
        None => CallCounts::default(),
    };
    let close_ns = now_ns() - t_close;
    let trace = trace.map(TraceRecorder::finish).transpose().map_err(crate::worker::trace_err)?;
    Ok(WorkerSample {
        worker: role.worker,
        bytes,
        ops,
        start_ns,
        end_ns,
        sync_ns: t.sync,
        sync_calls,
        open_ns,
        alloc_ns,
        hints: None,
        close_ns,
        hist: crate::latency::SampleHist::Full(Box::new(hist.to_hdr())),
        trace: trace.map(Box::new),
        calls: calls.to_map(),
        max_inflight: u64::from(ops > 0),
        role: Some(Box::new(RoleSample {
            role: role.role,
            tid,
            times: t,
            commit_tids,
            syncs_in_flight_max: 0,
            commit_spans_ns: spans,
        })),
        place: None,
        series: None,
        stonewall_ops: None,
        found: None,
        mix: None,
    })
}
