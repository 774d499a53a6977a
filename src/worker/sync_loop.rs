//! The timed loop of synchronous engines (one op per call), the same for every such engine;
//! monomorphised per engine and per latency mode, so the mode costs no branch per op.

use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{CallCounts, CallError, Engine};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::series::{RateRecorder, RateSeries};
use crate::latency::{Hist, Off, Recorder, Traced};
use crate::spec::{LatencyMode, SyncPolicy};

use super::alloc::BlockAlloc;
use super::bound::Limits;
use super::commits::Commits;
use super::data::{DataPath, short_write};
use super::mix::MixRec;
use super::pace::Pace;
use super::{WorkerCtx, WorkerSample, trace_err};
use crate::plan::Cursor;

/// The timed loop, the same for every synchronous engine; monomorphised per engine and per
/// latency mode (so the mode costs no branch per op).
pub fn run_worker<E: Engine>(ctx: &WorkerCtx<'_>) -> Result<WorkerSample> {
    if ctx.plan.ops.parallel_pieces() > 0 {
        use super::block_loop::block_loop;
        return match ctx.spec.latency {
            LatencyMode::Off => block_loop::<E, Off>(ctx, Ok(Off)),
            LatencyMode::Histogram => block_loop::<E, Hist>(ctx, Ok(Hist::new())),
            LatencyMode::Trace => block_loop::<E, Traced>(ctx, Traced::start(&ctx.gids).map_err(trace_err)),
        };
    }
    match ctx.spec.latency {
        LatencyMode::Off => timed_loop::<E, Off>(ctx, Ok(Off)),
        LatencyMode::Histogram => timed_loop::<E, Hist>(ctx, Ok(Hist::new())),
        LatencyMode::Trace => timed_loop::<E, Traced>(ctx, Traced::start(&ctx.gids).map_err(trace_err)),
    }
}

fn timed_loop<E: Engine, R: Recorder>(ctx: &WorkerCtx<'_>, rec: Result<R>) -> Result<WorkerSample> {
    let ops = ctx.plan.ops;
    let (mut engine, opened) = ctx.open_engine(E::buffers, E::open)?;
    let hints = engine.hints().map(Box::<[_]>::from);
    let mut rec = ctx.before_gate(rec)?;
    let mut alloc = ctx.before_gate(BlockAlloc::open(ctx))?;
    let mut data = DataPath::new(ctx);
    if ctx.write {
        data.init_write_buf(engine.buf());
    }
    let mut commits = Commits::new(ctx.spec.sync_call, ctx.paths.len());
    let mut series = RateRecorder::default();
    let mut mix = MixRec::new(ctx, R::CLOCKED);
    let mut cur = Cursor::default();
    let sync_policy = ctx.sync_policy();
    let io_err = |k: u64, op, e: CallError| ctx.op_error(k, op, e.call.name(), e.err);
    let stop = || ctx.abort.load(Relaxed) || crate::env::signals::stop_requested();

    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    let start_ns = now_ns();
    // The end of the last op (with `latency = off`, read only where it is needed).
    let mut prev = start_ns;
    let (mut bytes, mut since_sync) = (0u64, 0u64);
    let mut lim = Limits::new(ctx, start_ns);
    let mut pace = MixRec::pace(ctx, start_ns);
    let mut n = 0u64;
    // (A rate-limited op starts no earlier than planned: past the deadline, it is not done.)
    let clock = |prev: u64, pace: &Option<Pace>| {
        let now = if R::CLOCKED { prev } else { now_ns() };
        pace.as_ref().map_or(now, |p| if p.paced() { now.max(p.planned()) } else { now })
    };
    while lim.go(n, || clock(prev, &pace)) {
        if stop() {
            return Err(Error::Run("aborted".into()));
        }
        let k = lim.index(n);
        let st = ops.step(k, &mut cur, ctx.write);
        let op = st.op;
        // A rate-limited op waits for its planned start (or goes at once when that is past).
        let mut planned = 0;
        if let Some(p) = pace.as_mut().filter(|p| p.paced()) {
            let (t, at) = p.before(&stop);
            (prev, planned) = (if R::CLOCKED { t } else { prev }, at);
            p.advance(n, op.len);
        }
        n += 1;
        if st.write {
            data.before_write(engine.buf(), op);
            if let Some(a) = alloc.as_mut() {
                a.block(ctx, k, op)?;
            }
        }
        let done = engine.io(op, st.write).map_err(|e| io_err(k, op, e))?;
        if R::CLOCKED {
            let t = now_ns();
            let response = if planned > 0 { t.saturating_sub(planned) } else { 0 };
            rec.record_op(op, st.write, prev - start_ns, t - prev, response);
            if let Some(c) = mix.classes.as_mut() {
                c.record(st.write, st.size, op.len, t - prev, response);
            }
            prev = t;
        } else if let Some(c) = mix.classes.as_mut() {
            c.record(st.write, st.size, op.len, 0, 0);
        }
        if done != op.len {
            ctx.abort.store(true, Relaxed);
            let msg = if st.write && done < op.len {
                let rest = &engine.buf()[done as usize..op.len as usize];
                let f = op.file as usize;
                short_write(&ctx.paths[f], ctx.ids[f], rest, op.offset + done, done, op.len)
            } else {
                format!("short {}: {done} of {} bytes", if st.write { "write" } else { "read" }, op.len)
            };
            return Err(ctx.op_error(k, op, E::call_name(st.write), std::io::Error::other(msg)));
        }
        if !st.write {
            data.after_read(engine.buf(), op).map_err(|e| {
                ctx.abort.store(true, Relaxed);
                Error::Run(format!("{}: {e}", ctx.paths[op.file as usize].display()))
            })?;
        }
        bytes += done;
        if R::CLOCKED {
            series.add(prev - start_ns, done);
        }
        ctx.progress.store(bytes, Relaxed);
        // Reads commit nothing (a read phase's policy is None): no bookkeeping.
        if st.write {
            match sync_policy {
                SyncPolicy::None | SyncPolicy::End => commits.dirty[op.file as usize] = true,
                SyncPolicy::Each => {
                    if !R::CLOCKED {
                        prev = now_ns();
                    }
                    commits
                        .one(&mut |f, c| engine.sync(f, c), op.file, &mut prev, &ctx.paths)
                        .map_err(|e| ctx.commit_error(e))?
                }
                SyncPolicy::Every(n) => {
                    commits.dirty[op.file as usize] = true;
                    since_sync += done;
                    if since_sync >= n {
                        if !R::CLOCKED {
                            prev = now_ns();
                        }
                        commits
                            .all_dirty(&mut |f, c| engine.sync(f, c), &mut prev, &ctx.paths)
                            .map_err(|e| ctx.commit_error(e))?;
                        since_sync = 0;
                    }
                }
            }
        }
        if let Some(p) = pace.as_mut()
            && p.think(n - 1, &stop)
            && R::CLOCKED
        {
            prev = now_ns();
        }
    }
    let end_ns = commits
        .at_end(R::CLOCKED, sync_policy, &mut |f, c| engine.sync(f, c), prev, &ctx.paths)
        .map_err(|e| ctx.commit_error(e))?;
    let series = R::CLOCKED.then(|| Box::new(series.finish(end_ns - start_ns)));
    let max_inflight = u64::from(n > 0);
    let stonewall_ops = lim.stonewall_ops;
    let mix = mix.finish(ctx, pace, n);
    let done =
        LoopDone { start_ns, opened, hints, end_ns, bytes, ops: n, max_inflight, series, stonewall_ops, mix };
    done.sample(ctx, &commits, rec, || {
        let mut calls = engine.close()?;
        BlockAlloc::count(&alloc, &mut calls);
        Ok(calls)
    })
}

/// Where a timed loop ended, after its final commit.
pub(crate) struct LoopDone {
    pub start_ns: u64,
    pub opened: super::Opened,
    /// The hints the engine reports in effect after its open (MPI-IO).
    pub hints: Option<Box<[(String, String)]>>,
    pub end_ns: u64,
    pub bytes: u64,
    pub ops: u64,
    pub max_inflight: u64,
    /// Bytes per interval (where the loop reads the clock per op: not with `latency = off`).
    pub series: Option<Box<RateSeries>>,
    /// The ops done when the stonewall came, if it came before the blocks ran out.
    pub stonewall_ops: Option<u64>,
    /// Its workload figures apart from its latency.
    pub mix: Option<Box<super::mix::MixSample>>,
}

impl LoopDone {
    /// Closes the engine (timed as close_ns, outside the worker's time) and makes the sample.
    pub fn sample<R: Recorder>(
        self,
        ctx: &WorkerCtx<'_>,
        commits: &Commits,
        rec: R,
        close: impl FnOnce() -> std::io::Result<CallCounts>,
    ) -> Result<WorkerSample> {
        let t_close = now_ns();
        let calls = close().map_err(|e| Error::io("close", &ctx.paths[0], None, e))?;
        let close_ns = now_ns() - t_close;
        let (hist, trace) = rec.finish().map_err(trace_err)?;
        Ok(WorkerSample {
            worker: ctx.plan.worker,
            bytes: self.bytes,
            ops: self.ops,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            sync_ns: commits.sync_ns,
            sync_calls: commits.calls,
            open_ns: self.opened.open_ns,
            alloc_ns: Some(self.opened.alloc_ns),
            hints: self.hints,
            close_ns,
            hist: crate::latency::SampleHist::Full(Box::new(hist)),
            trace: trace.map(Box::new),
            calls: calls.to_map(),
            max_inflight: self.max_inflight,
            role: None,
            place: None,
            series: self.series,
            stonewall_ops: self.stonewall_ops,
            found: None,
            mix: self.mix,
        })
    }
}
