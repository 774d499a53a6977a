//! The timed loop of `pieces = parallel` on a striped file: one op per block, whose pieces (one
//! per stripe unit it spans) the engine issues together ([`Engine::io_pieces`]); the op ends
//! when its last piece is done, so its latency and the worker's time cover the whole block.

use std::sync::atomic::Ordering::Relaxed;

use crate::engine::{CallError, Engine};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::Recorder;
use crate::latency::series::RateRecorder;
use crate::plan::Op;
use crate::spec::SyncPolicy;

use super::alloc::BlockAlloc;
use super::bound::Limits;
use super::commits::Commits;
use super::data::{DataPath, short_write};
use super::mix::MixRec;
use super::pace::Pace;
use super::sync_loop::LoopDone;
use super::{WorkerCtx, WorkerSample};

/// Runs the worker's blocks, each as its pieces issued together.
pub(super) fn block_loop<E: Engine, R: Recorder>(
    ctx: &WorkerCtx<'_>,
    rec: Result<R>,
) -> Result<WorkerSample> {
    let ops = ctx.plan.ops;
    let per_block = ops.parallel_pieces() as usize;
    let (mut engine, opened) = ctx.open_engine(E::buffers, E::open)?;
    let hints = engine.hints().map(Box::<[_]>::from);
    let mut rec = ctx.before_gate(rec)?;
    let mut alloc = ctx.before_gate(BlockAlloc::open(ctx))?;
    let mut data = DataPath::new(ctx);
    let plen = ops.op_len() as usize;
    if ctx.write {
        // Each piece's memory holds what serial pieces carry (a piece-long fill), so the
        // bytes on disk do not depend on how the pieces were issued.
        for piece in engine.buf()[..per_block * plen].chunks_mut(plen) {
            data.init_write_buf(piece);
        }
    }
    let mut commits = Commits::new(ctx.spec.sync_call, ctx.paths.len());
    let sync_policy = ctx.sync_policy();
    // Made before the gate: the loop allocates nothing.
    let mut pieces = vec![Op { file: 0, offset: 0, len: 0 }; per_block];
    let mut done = vec![0u64; per_block];
    let piece_err =
        |p: Op, e: CallError| Error::io(e.call.name(), &ctx.paths[p.file as usize], Some(p.offset), e.err);

    let mut series = RateRecorder::default();
    let mut mix = MixRec::new(ctx, R::CLOCKED);
    let stop = || ctx.abort.load(Relaxed) || crate::env::signals::stop_requested();
    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    let start_ns = now_ns();
    let mut prev = start_ns;
    let (mut bytes, mut since_sync) = (0u64, 0u64);
    let mut lim = Limits::new(ctx, start_ns);
    let mut pace = MixRec::pace(ctx, start_ns);
    let mut n = 0u64;
    let clock = |prev: u64, pace: &Option<Pace>| {
        let now = if R::CLOCKED { prev } else { now_ns() };
        pace.as_ref().map_or(now, |p| if p.paced() { now.max(p.planned()) } else { now })
    };
    while lim.go(n, || clock(prev, &pace)) {
        if stop() {
            return Err(Error::Run("aborted".into()));
        }
        let b = lim.index(n);
        let write = ops.writes_at(b, ctx.write);
        let mut planned = 0;
        if let Some(p) = pace.as_mut().filter(|p| p.paced()) {
            let (t, at) = p.before(&stop);
            (prev, planned) = (if R::CLOCKED { t } else { prev }, at);
            p.advance(n, ops.bs);
        }
        n += 1;
        for (i, p) in pieces.iter_mut().enumerate() {
            let k = b * per_block as u64 + i as u64;
            *p = ops.op(k);
            if let Some(a) = alloc.as_mut() {
                a.block(ctx, k, *p)?;
            }
            if write {
                data.before_write(&mut engine.buf()[i * plen..], *p);
            }
        }
        if let Err((i, e)) = engine.io_pieces(&pieces, write, &mut done) {
            ctx.abort.store(true, Relaxed);
            return Err(piece_err(pieces[i], e));
        }
        if R::CLOCKED {
            let t = now_ns();
            // The block as one op: its first piece's place, the whole block's length.
            let response = if planned > 0 { t.saturating_sub(planned) } else { 0 };
            rec.record_op(Op { len: ops.bs, ..pieces[0] }, write, prev - start_ns, t - prev, response);
            if let Some(c) = mix.classes.as_mut() {
                c.record(write, 0, ops.bs, t - prev, response);
            }
            prev = t;
        } else if let Some(c) = mix.classes.as_mut() {
            c.record(write, 0, ops.bs, 0, 0);
        }
        for (i, p) in pieces.iter().enumerate() {
            if done[i] != p.len {
                ctx.abort.store(true, Relaxed);
                let f = p.file as usize;
                let msg = if write && done[i] < p.len {
                    let rest = &engine.buf()[i * plen + done[i] as usize..(i + 1) * plen];
                    short_write(&ctx.paths[f], ctx.ids[f], rest, p.offset + done[i], done[i], p.len)
                } else {
                    format!("short {}: {} of {} bytes", if write { "write" } else { "read" }, done[i], p.len)
                };
                return Err(Error::io(
                    E::call_name(write),
                    &ctx.paths[f],
                    Some(p.offset),
                    std::io::Error::other(msg),
                ));
            }
            if !write {
                data.after_read(&engine.buf()[i * plen..], *p).map_err(|e| {
                    ctx.abort.store(true, Relaxed);
                    Error::Run(format!("{}: {e}", ctx.paths[p.file as usize].display()))
                })?;
            }
            if write {
                commits.dirty[p.file as usize] = true;
            }
        }
        bytes += ops.bs;
        if R::CLOCKED {
            series.add(prev - start_ns, ops.bs);
        }
        ctx.progress.store(bytes, Relaxed);
        let commit_now = match sync_policy {
            _ if !write => false,
            SyncPolicy::None | SyncPolicy::End => false,
            SyncPolicy::Each => true,
            SyncPolicy::Every(n) => {
                since_sync += ops.bs;
                since_sync >= n
            }
        };
        if commit_now {
            if !R::CLOCKED {
                prev = now_ns();
            }
            commits.all_dirty(&mut |f, c| engine.sync(f, c), &mut prev, &ctx.paths)?;
            since_sync = 0;
        }
        if let Some(p) = pace.as_mut()
            && p.think(n - 1, &stop)
            && R::CLOCKED
        {
            prev = now_ns();
        }
    }
    let end_ns = commits.at_end(R::CLOCKED, sync_policy, &mut |f, c| engine.sync(f, c), prev, &ctx.paths)?;
    let done = LoopDone {
        start_ns,
        opened,
        hints,
        end_ns,
        bytes,
        ops: n,
        max_inflight: if n > 0 { per_block as u64 } else { 0 },
        series: R::CLOCKED.then(|| Box::new(series.finish(end_ns - start_ns))),
        stonewall_ops: lim.stonewall_ops,
        mix: mix.finish(ctx, pace, n),
    };
    done.sample(ctx, &commits, rec, || {
        let mut calls = engine.close()?;
        BlockAlloc::count(&alloc, &mut calls);
        Ok(calls)
    })
}
