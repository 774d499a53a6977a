//! The timed loop of asynchronous engines: up to `iodepth` ops in flight per worker.
//!
//! It does around each op exactly what [`crate::worker::sync_loop::run_worker`] does: stamps written
//! data ([`DataPath::before_write`]), checks read data ([`DataPath::after_read`]), commits
//! through [`Commits`] by the same policy (draining every op in flight first, so the commit
//! points are the same op boundaries as with a synchronous engine), records each op's latency
//! from its submission to its completion, updates progress, and stops when asked. It reads the
//! clock once per batch of completions (not at all with `latency = off`), and allocates
//! nothing and locks nothing once started.

use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{AsyncEngine, Done};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::series::RateRecorder;
use crate::latency::{Hist, Off, Recorder, Traced};
use crate::spec::{LatencyMode, SyncPolicy};
use crate::worker::alloc::BlockAlloc;
use crate::worker::bound::Limits;
use crate::worker::commits::Commits;
use crate::worker::data::DataPath;
use crate::worker::sync_loop::LoopDone;
use crate::worker::{WorkerCtx, WorkerSample, trace_err};

/// The loop for one worker of an asynchronous engine; monomorphised per engine and per
/// latency mode.
pub fn run_async_worker<E: AsyncEngine>(ctx: &WorkerCtx<'_>) -> Result<WorkerSample> {
    match ctx.spec.latency {
        LatencyMode::Off => async_loop::<E, Off>(ctx, Ok(Off)),
        LatencyMode::Histogram => async_loop::<E, Hist>(ctx, Ok(Hist::new())),
        LatencyMode::Trace => async_loop::<E, Traced>(ctx, Traced::start(&ctx.gids).map_err(trace_err)),
    }
}

fn async_loop<E: AsyncEngine, R: Recorder>(ctx: &WorkerCtx<'_>, rec: Result<R>) -> Result<WorkerSample> {
    let spec = ctx.spec;
    let ops = ctx.plan.ops;
    let depth = (spec.iodepth as usize).max(1);
    let (mut engine, opened) = ctx.open_engine(E::buffers, E::open)?;
    let mut rec = ctx.before_gate(rec)?;
    let mut alloc = ctx.before_gate(BlockAlloc::open(ctx))?;
    let mut data = DataPath::new(ctx);
    if ctx.write {
        for slot in 0..depth {
            data.init_write_buf(engine.slot_buf(slot));
        }
    }
    let mut commits = Commits::new(spec.sync_call, ctx.paths.len());
    let mut series = RateRecorder::default();
    let sync_policy = ctx.sync_policy();
    // Per slot: the op index it holds and when that op was handed over.
    let mut slot_op = vec![(0u64, 0u64); depth];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut done = vec![Done::default(); depth];

    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    let start_ns = now_ns();
    let mut prev = start_ns;
    let (mut n, mut inflight, mut max_inflight) = (0u64, 0usize, 0usize);
    let (mut bytes, mut queued_since_sync, mut commit_due) = (0u64, 0u64, false);
    let mut lim = Limits::new(ctx, start_ns);
    loop {
        if ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
            return Err(Error::Run("aborted".into()));
        }
        // Fill every free slot, unless a commit is due: then let the ring drain first.
        while !commit_due && !free.is_empty() && lim.go(n, || if R::CLOCKED { prev } else { now_ns() }) {
            let Some(slot) = free.pop() else { break };
            let k = lim.index(n);
            n += 1;
            let op = ops.op(k);
            if ctx.write {
                data.before_write(engine.slot_buf(slot as usize), op);
            }
            if let Some(a) = alloc.as_mut() {
                a.block(ctx, k, op)?;
            }
            engine.queue(slot as usize, op, ctx.write).map_err(|e| ctx.op_error(k, e.call.name(), e.err))?;
            slot_op[slot as usize] = (k, prev);
            inflight += 1;
            match sync_policy {
                SyncPolicy::Each => commit_due = true,
                SyncPolicy::Every(n) => {
                    queued_since_sync += op.len;
                    commit_due = queued_since_sync >= n;
                }
                SyncPolicy::None | SyncPolicy::End => {}
            }
        }
        max_inflight = max_inflight.max(inflight);
        if inflight == 0 {
            if commit_due {
                if !R::CLOCKED {
                    prev = now_ns();
                }
                commits.all_dirty(&mut |f, c| engine.sync(f, c), &mut prev, &ctx.paths)?;
                commit_due = false;
                queued_since_sync = 0;
                continue;
            }
            break;
        }
        let n = engine.wait(1, &mut done).map_err(|e| {
            ctx.abort.store(true, Relaxed);
            Error::io(e.call.name(), &ctx.paths[0], None, e.err)
        })?;
        let t = if R::CLOCKED { now_ns() } else { prev };
        for d in &done[..n] {
            let (kk, t0) = slot_op[d.slot as usize];
            let op = ops.op(kk);
            if R::CLOCKED {
                rec.record(op, t0 - start_ns, t - t0);
            }
            if d.res < 0 {
                ctx.abort.store(true, Relaxed);
                let e = std::io::Error::from_raw_os_error(-d.res as i32);
                return Err(ctx.op_error(kk, E::call_name(ctx.write), e));
            }
            if d.res as u64 != op.len {
                ctx.abort.store(true, Relaxed);
                let what = if ctx.write { "short write" } else { "short read" };
                let e = std::io::Error::other(format!("{what}: {} of {} bytes", d.res, op.len));
                return Err(ctx.op_error(kk, E::call_name(ctx.write), e));
            }
            if !ctx.write {
                data.after_read(engine.slot_buf(d.slot as usize), op).map_err(|e| {
                    ctx.abort.store(true, Relaxed);
                    Error::Run(format!("{}: {e}", ctx.paths[op.file as usize].display()))
                })?;
            }
            commits.dirty[op.file as usize] = true;
            bytes += op.len;
            if R::CLOCKED {
                series.add(t - start_ns, op.len);
            }
            free.push(d.slot);
            inflight -= 1;
        }
        prev = t;
        ctx.progress.store(bytes, Relaxed);
    }
    let end_ns = commits.at_end(R::CLOCKED, sync_policy, &mut |f, c| engine.sync(f, c), prev, &ctx.paths)?;
    let series = R::CLOCKED.then(|| Box::new(series.finish(end_ns - start_ns)));
    let max_inflight = max_inflight as u64;
    let stonewall_ops = lim.stonewall_ops;
    let done = LoopDone {
        start_ns,
        opened,
        hints: None,
        end_ns,
        bytes,
        ops: n,
        max_inflight,
        series,
        stonewall_ops,
    };
    done.sample(ctx, &commits, rec, || {
        let mut calls = engine.close()?;
        BlockAlloc::count(&alloc, &mut calls);
        Ok(calls)
    })
}
