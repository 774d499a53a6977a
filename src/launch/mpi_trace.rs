//! A rank's traced ops on their way to rank 0 (in a build with the `mpi` feature): after its
//! reply, a rank sends each traced worker's spill as it lies on disk, in chunks of at most
//! [`BATCH_OPS`] encoded ops, each worker's ending with an empty message; rank 0 appends each
//! chunk to a spill of its own as it arrives. Neither side ever holds more than one chunk, so
//! a rank's memory does not grow with its op count (docs/mpi.md, "Traces").
//!
//! Before a traced run, every rank checks that its own spill directory (its host's temporary
//! directory; rank 0's is beside the store, checked by `iolab run` itself) has room for the
//! most ops its workers trace in one phase, which is what it holds at once.

use std::sync::Arc;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::error::{Error, Result};
use crate::latency::trace::{BATCH_OPS, RECORD_BYTES, TraceSpill};
use crate::launch::child::SampleWire;
use crate::launch::world::{WorldInfo, my_workers};
use crate::spec::{LatencyMode, OpKind, Spec};
use crate::text::escape_path;
use crate::units::fmt_size;
use crate::worker::WorkerSample;

/// The tag of a chunk of traced ops.
const TRACE: i32 = 8;

/// A rank's samples as they go to rank 0: the wires, and the spills that follow the reply (one
/// per wire marked streamed, in wire order).
pub(super) struct Outgoing {
    pub wires: Vec<SampleWire>,
    pub spills: Vec<Arc<TraceSpill>>,
}

/// The wires of `samples`, their traced ops left in their spills to be streamed.
pub(super) fn outgoing(samples: Vec<WorkerSample>) -> Result<Outgoing> {
    let mut out = Outgoing { wires: Vec::with_capacity(samples.len()), spills: vec![] };
    for s in samples {
        let spill = s.trace.as_ref().and_then(|t| t.spill.clone());
        let mut wire = SampleWire::of(s, false)?;
        if let Some(spill) = spill {
            wire.set_streamed();
            out.spills.push(spill);
        }
        out.wires.push(wire);
    }
    Ok(out)
}

/// Sends each spill to rank 0 in chunks, each ending with an empty message. A spill that cannot
/// be read ends early (rank 0 finds fewer ops than the worker traced and says so).
pub(super) fn send(comm: &SimpleCommunicator, spills: &[Arc<TraceSpill>]) {
    let root = comm.process_at_rank(0);
    let mut buf = vec![0u8; BATCH_OPS * RECORD_BYTES];
    for spill in spills {
        let sent = spill.for_each_encoded(&mut buf, |chunk| {
            root.send_with_tag(chunk, TRACE);
            Ok(())
        });
        if let Err(e) = sent {
            eprintln!("error: rank {}: {e}", comm.rank());
        }
        root.send_with_tag(&[] as &[u8], TRACE);
    }
}

/// On rank 0: one worker's traced ops from rank `from`, chunk by chunk into a new spill here,
/// up to the empty message that ends them (every chunk is taken, whatever fails, so the next
/// worker's start where they should). `ops`: what the worker traced.
pub(super) fn receive(comm: &SimpleCommunicator, from: u32, worker: u32, ops: u64) -> Result<TraceSpill> {
    let src = comm.process_at_rank(from as i32);
    let mut spill = TraceSpill::new().map_err(crate::worker::trace_err);
    loop {
        let (chunk, _) = src.receive_vec_with_tag::<u8>(TRACE);
        if chunk.is_empty() {
            break;
        }
        if let Ok(s) = spill.as_mut() {
            let n = (chunk.len() / RECORD_BYTES) as u64;
            if chunk.len() % RECORD_BYTES != 0 {
                spill = Err(Error::Run(format!(
                    "rank {from} sent a trace chunk of {} bytes, not whole ops",
                    chunk.len()
                )));
            } else if let Err(e) = s.append_encoded(&chunk, n) {
                spill = Err(crate::worker::trace_err(e));
            }
        }
    }
    let spill = spill?;
    if spill.len() != ops {
        return Err(Error::Run(format!(
            "rank {from} sent {} of the {ops} ops worker {worker} traced",
            spill.len()
        )));
    }
    Ok(spill)
}

/// On a rank other than 0, before a traced run: its spill directory has room (with the
/// preflight's margin) for the most ops its workers trace in one phase of any of `specs`, at
/// [`RECORD_BYTES`] each; else the error names the rank, its host, the directory and the
/// figures. Beside I/O-server ranks a client rank runs the worker of its own number and a
/// server rank traces nothing.
pub(super) fn check_spool(specs: &[Spec], w: &WorldInfo) -> Result<()> {
    let mut most: Option<(&Spec, u64)> = None;
    for spec in specs.iter().filter(|s| s.latency == LatencyMode::Trace) {
        let plan = crate::plan::plan(spec);
        for ph in &plan.phases {
            let mine = match &spec.servers {
                Some(s) if s.index_of(w.rank, w.size).is_some() => vec![],
                Some(_) => vec![w.rank as usize],
                None => my_workers(ph.workers.len(), ph.op == OpKind::Read, spec, w, w.rank),
            };
            let ops = mine
                .iter()
                .filter_map(|&i| ph.workers.get(i))
                .map(|wk| wk.ops.timed_ops())
                .fold(0, u64::saturating_add);
            if most.is_none_or(|(_, m)| ops > m) {
                most = Some((spec, ops));
            }
        }
    }
    let Some((spec, ops)) = most.filter(|&(_, ops)| ops > 0) else { return Ok(()) };
    let dir = crate::latency::trace::spill_dir();
    crate::target::device::check_remote_dir("trace_spool", &dir, &spec.allow_device)?;
    let need = ops.saturating_mul(RECORD_BYTES as u64);
    let want = need.saturating_add(crate::target::preflight::margin(need));
    let (free, _) = crate::env::sys::fs_free(&dir).map_err(|e| Error::io("statvfs", &dir, None, e))?;
    if free < want {
        return Err(Error::Run(format!(
            "rank {} on host {}: its trace spool {} needs {} ({ops} ops of its workers in one phase at {RECORD_BYTES} B per op; {} with the margin of 5% + 64 MiB) and has {} free; give that rank a temporary directory (TMPDIR) with more room, or trace fewer ops (a larger bs, a smaller size)",
            w.rank,
            w.hosts.get(w.rank as usize).map_or("?", |h| h),
            escape_path(&dir),
            fmt_size(need),
            fmt_size(want),
            fmt_size(free)
        )));
    }
    // A temporary directory on tmpfs or ramfs takes memory, whatever its size says.
    if let Some(why) = crate::target::preflight::memory_shortfall(&dir, need, 0) {
        return Err(Error::Run(format!(
            "rank {} on host {}: its trace spool {} needs {} ({ops} ops of its workers in one phase at {RECORD_BYTES} B per op): {why}; give that rank a temporary directory (TMPDIR) on a disk, or trace fewer ops (a larger bs, a smaller size)",
            w.rank,
            w.hosts.get(w.rank as usize).map_or("?", |h| h),
            escape_path(&dir),
            fmt_size(need),
        )));
    }
    Ok(())
}
