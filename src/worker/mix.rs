//! What a worker keeps of its workload besides its latency ([`MixSample`]): its ops by class
//! (direction, block size, response time), how far it fell behind a rate-limited schedule,
//! and, worked out again from the plan after the loop, the bytes it moved again and the skew
//! of an order that draws. The loops make the recorder ([`MixRec`]) before the start gate.

use serde::{Deserialize, Serialize};

use crate::latency::classes::{ClassRec, ClassSample};
use crate::plan::replay;

use super::WorkerCtx;
use super::pace::{Behind, Pace};

/// A worker's workload figures (every field always present: the MPI replies' encoding has no
/// field names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MixSample {
    pub classes: ClassSample,
    /// A rate-limited phase: how far the worker fell behind its schedule.
    pub behind: Option<Behind>,
    /// Bytes of ops on blocks the phase had already moved ([`crate::plan::replay`]).
    pub again_bytes: u64,
    /// An order that draws: (ops on the hottest tenth of its blocks, ops).
    pub hot: Option<(u64, u64)>,
    /// Its reads were to come from the device: a cold phase's, without O_DIRECT, of real I/O.
    pub cold: bool,
}

/// What a worker's loop keeps of its workload: its classes (when the phase is mixed, has a
/// block-size mix or is rate-limited) and whether it keeps anything at all.
pub struct MixRec {
    pub classes: Option<ClassRec>,
    keep: bool,
}

impl MixRec {
    /// The recorder of `ctx`'s worker; `clocked`: the loop reads the clock per op.
    pub fn new(ctx: &WorkerCtx<'_>, clocked: bool) -> MixRec {
        let spec = ctx.spec;
        let ph = &spec.phases[ctx.phase];
        let ops = &ctx.plan.ops;
        let mixed = ops.draws.read_pct.is_some();
        let sizes = spec.workload.bssplit.as_ref().map_or(0, |b| b.0.len());
        let paced = spec.phase_rate(ph).is_some();
        let classes = (mixed || sizes > 0 || paced).then(|| ClassRec::new(mixed, sizes, paced, clocked));
        let wraps = ctx.bound.is_some_and(|b| b.wraps());
        MixRec { keep: classes.is_some() || ops.endless() || wraps, classes }
    }

    /// The schedule of `ctx`'s worker, its clock started at `start_ns`.
    pub fn pace(ctx: &WorkerCtx<'_>, start_ns: u64) -> Option<Pace> {
        let spec = ctx.spec;
        let ph = &spec.phases[ctx.phase];
        let seed = crate::plan::worker_seed(spec.seed, ctx.plan.worker);
        let w = &spec.workload;
        Pace::new(spec.phase_rate(ph), w.rate_process, w.thinktime, seed, ctx.plan.ops.op_len(), start_ns)
    }

    /// What the worker keeps, after its loop did `done` ops (none for a phase with nothing to
    /// keep apart, repeat or skew).
    pub fn finish(self, ctx: &WorkerCtx<'_>, pace: Option<Pace>, done: u64) -> Option<Box<MixSample>> {
        if !self.keep {
            return None;
        }
        let ops = &ctx.plan.ops;
        let wraps = ctx.bound.is_some_and(|b| b.wraps());
        // A loop that issues a block's pieces together counts blocks; the plan counts pieces.
        let per = ops.parallel_pieces().max(1);
        let done = done * per;
        let r = replay::replay(ops, ctx.extent.saturating_mul(per), done, wraps);
        let sizes: Vec<u64> =
            ctx.spec.workload.bssplit.as_ref().map_or(vec![], |b| b.0.iter().map(|s| s.bytes).collect());
        Some(Box::new(MixSample {
            classes: self.classes.map(|c| c.finish(&sizes)).unwrap_or_default(),
            behind: pace.and_then(Pace::finish),
            again_bytes: r.again_bytes,
            hot: r.hot_ops.map(|h| (h, done)),
            cold: {
                let (spec, ph) = (ctx.spec, &ctx.spec.phases[ctx.phase]);
                ph.cache == crate::spec::CachePolicy::Cold
                    && ph.op.reads()
                    && !spec.direct
                    && super::registry::real_io(&spec.engine)
            },
        }))
    }
}
