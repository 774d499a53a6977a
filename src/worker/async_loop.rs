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
use crate::plan::{Cursor, Step};
use crate::spec::{LatencyMode, SyncPolicy};
use crate::worker::alloc::BlockAlloc;
use crate::worker::bound::Limits;
use crate::worker::commits::Commits;
use crate::worker::data::DataPath;
use crate::worker::mix::MixRec;
use crate::worker::pace::Pace;
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
    let mut mix = MixRec::new(ctx, R::CLOCKED);
    let mut cur = Cursor::default();
    let sync_policy = ctx.sync_policy();
    // Per slot: the op index it holds, its step, when it was handed over and when it was
    // planned to start (rate-limited).
    let idle = Step { op: crate::plan::Op { file: 0, offset: 0, len: 0 }, write: false, size: 0 };
    let mut slot_op = vec![(0u64, idle, 0u64, 0u64); depth];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut done = vec![Done::default(); depth];
    let stop = || ctx.abort.load(Relaxed) || crate::env::signals::stop_requested();

    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    let start_ns = now_ns();
    let mut prev = start_ns;
    let (mut n, mut inflight, mut max_inflight, mut completed) = (0u64, 0usize, 0usize, 0u64);
    let (mut bytes, mut queued_since_sync, mut commit_due) = (0u64, 0u64, false);
    let mut lim = Limits::new(ctx, start_ns);
    let mut pace = MixRec::pace(ctx, start_ns);
    // A rate-limited op drawn but not yet due while others are in flight: it waits here
    // (drawn once: a sequential mix's cursor has moved past it).
    let mut pending: Option<(u64, Step)> = None;
    let clock = |prev: u64, pace: &Option<Pace>| {
        let now = if R::CLOCKED { prev } else { now_ns() };
        pace.as_ref().map_or(now, |p| if p.paced() { now.max(p.planned()) } else { now })
    };
    loop {
        if stop() {
            return Err(Error::Run("aborted".into()));
        }
        // Fill every free slot, unless a commit is due: then let the ring drain first.
        while !commit_due && !free.is_empty() && lim.go(n, || clock(prev, &pace)) {
            let (k, st) = match pending.take() {
                Some(p) => p,
                None => {
                    let k = lim.index(n);
                    (k, ops.step(k, &mut cur, ctx.write))
                }
            };
            let op = st.op;
            let (mut issued, mut planned) = (prev, 0);
            if let Some(p) = pace.as_mut().filter(|p| p.paced()) {
                planned = p.planned();
                let mut now = now_ns();
                if now < planned {
                    if inflight > 0 {
                        // Reap what completes meanwhile; come back when it is due.
                        pending = Some((k, st));
                        break;
                    }
                    now = crate::worker::pace::wait_until(planned, &stop);
                }
                p.issued(now, planned);
                p.advance(n, op.len);
                issued = now;
            }
            let Some(slot) = free.pop() else { break };
            n += 1;
            if st.write {
                data.before_write(engine.slot_buf(slot as usize), op);
                if let Some(a) = alloc.as_mut() {
                    a.block(ctx, k, op)?;
                }
            }
            engine
                .queue(slot as usize, op, st.write)
                .map_err(|e| ctx.op_error(k, op, e.call.name(), e.err))?;
            // Latency runs from the hand-over: the end of the last batch, or the issue of a
            // rate-limited op.
            let t0 = if pace.as_ref().is_some_and(Pace::paced) && R::CLOCKED { issued } else { prev };
            slot_op[slot as usize] = (k, st, t0, planned);
            inflight += 1;
            if st.write {
                match sync_policy {
                    SyncPolicy::Each => commit_due = true,
                    SyncPolicy::Every(n) => {
                        queued_since_sync += op.len;
                        commit_due = queued_since_sync >= n;
                    }
                    SyncPolicy::None | SyncPolicy::End => {}
                }
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
            if pending.is_some() && lim.go(n, || clock(prev, &pace)) {
                continue;
            }
            break;
        }
        // While an op waits for its planned start, completions are polled, not waited for.
        let least = if pending.is_some() { 0 } else { 1 };
        let got = engine.wait(least, &mut done).map_err(|e| {
            ctx.abort.store(true, Relaxed);
            Error::io(e.call.name(), &ctx.paths[0], None, e.err)
        })?;
        let t = if R::CLOCKED || pending.is_some() { now_ns() } else { prev };
        for d in &done[..got] {
            let (kk, st, t0, planned) = slot_op[d.slot as usize];
            let op = st.op;
            let response = if planned > 0 { t.saturating_sub(planned) } else { 0 };
            if R::CLOCKED {
                rec.record_op(op, st.write, t0 - start_ns, t - t0, response);
            }
            if let Some(c) = mix.classes.as_mut() {
                let clocked = R::CLOCKED as u64;
                c.record(st.write, st.size, op.len, (t - t0) * clocked, response * clocked);
            }
            if d.res < 0 {
                ctx.abort.store(true, Relaxed);
                let e = std::io::Error::from_raw_os_error(-d.res as i32);
                return Err(ctx.op_error(kk, op, E::call_name(st.write), e));
            }
            if d.res as u64 != op.len {
                ctx.abort.store(true, Relaxed);
                let what = if st.write { "short write" } else { "short read" };
                let e = std::io::Error::other(format!("{what}: {} of {} bytes", d.res, op.len));
                return Err(ctx.op_error(kk, op, E::call_name(st.write), e));
            }
            if !st.write {
                data.after_read(engine.slot_buf(d.slot as usize), op).map_err(|e| {
                    ctx.abort.store(true, Relaxed);
                    Error::Run(format!("{}: {e}", ctx.paths[op.file as usize].display()))
                })?;
            } else {
                commits.dirty[op.file as usize] = true;
            }
            bytes += op.len;
            if R::CLOCKED {
                series.add(t - start_ns, op.len);
            }
            free.push(d.slot);
            inflight -= 1;
            completed += 1;
            if let Some(p) = pace.as_mut()
                && p.think(completed - 1, &stop)
                && R::CLOCKED
            {
                prev = now_ns();
            }
        }
        if got > 0 || R::CLOCKED {
            prev = t.max(prev);
        }
        ctx.progress.store(bytes, Relaxed);
    }
    let end_ns = commits.at_end(R::CLOCKED, sync_policy, &mut |f, c| engine.sync(f, c), prev, &ctx.paths)?;
    let series = R::CLOCKED.then(|| Box::new(series.finish(end_ns - start_ns)));
    let max_inflight = max_inflight as u64;
    let stonewall_ops = lim.stonewall_ops;
    let mix = mix.finish(ctx, pace, n);
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
        mix,
    };
    done.sample(ctx, &commits, rec, || {
        let mut calls = engine.close()?;
        BlockAlloc::count(&alloc, &mut calls);
        Ok(calls)
    })
}
