//! The timed loop's side of a trace: ops go into a batch buffer; a full batch is handed to a
//! writer thread, which encodes it and writes it out (a spill file, or the pipe to the parent
//! process), then hands the empty buffer back. Each worker has a fixed ring of
//! [`RING_BATCHES`] buffers of [`BATCH_OPS`] ops, allocated and touched before timing starts,
//! so recording costs a store per op and a channel hand-off per batch, and a trace of any
//! length needs the same memory. If the writer falls behind, the loop waits for a free buffer
//! (the time is counted, and reported).

use std::io;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use crate::env::sys::now_ns;
use crate::latency::trace::{RECORD_BYTES, TraceOp, TraceSpill, WorkerTrace};

/// Ops per batch buffer (512 KiB of ops).
pub const BATCH_OPS: usize = 16384;
/// Batch buffers per worker: one being filled, the others with the writer or free.
pub const RING_BATCHES: usize = 4;

/// Sends one encoded batch (bytes, op count) to the parent process.
pub type PipeFn = fn(&[u8], u64) -> io::Result<()>;

static PIPE: OnceLock<PipeFn> = OnceLock::new();

/// In a worker process: send traced batches with `f` instead of spilling them here.
pub fn send_batches_with(f: PipeFn) {
    let _ = PIPE.set(f);
}

enum Out {
    Spill(TraceSpill),
    Pipe(PipeFn),
    Discard,
}

/// One worker's trace while its phase runs.
pub struct TraceRecorder {
    batch: Vec<TraceOp>,
    full: Option<SyncSender<Vec<TraceOp>>>,
    empty: Receiver<Vec<TraceOp>>,
    writer: Option<JoinHandle<io::Result<Option<TraceSpill>>>>,
    waited_ns: u64,
    recorded: u64,
}

impl TraceRecorder {
    /// Starts a trace of ops on the files `gids` (global ids by local index): spilled here, or
    /// sent to the parent from a worker process.
    pub fn start(gids: &[u32]) -> io::Result<TraceRecorder> {
        let out = match PIPE.get() {
            Some(f) => Out::Pipe(*f),
            None => Out::Spill(TraceSpill::new()?),
        };
        TraceRecorder::with(out, gids.to_vec())
    }

    /// A recorder whose writer drops every batch (to measure recording alone).
    pub fn discarding() -> TraceRecorder {
        TraceRecorder::with(Out::Discard, vec![]).expect("start the trace writer")
    }

    fn with(out: Out, gids: Vec<u32>) -> io::Result<TraceRecorder> {
        let (full_tx, full_rx) = sync_channel::<Vec<TraceOp>>(RING_BATCHES);
        let (empty_tx, empty_rx) = sync_channel::<Vec<TraceOp>>(RING_BATCHES);
        // Written once now, so no page of the ring is first touched inside the timed loop.
        let touched = || {
            let mut v = vec![TraceOp { file: u32::MAX, ..TraceOp::default() }; BATCH_OPS];
            v.clear();
            v
        };
        for _ in 1..RING_BATCHES {
            empty_tx.send(touched()).expect("room for every buffer");
        }
        let writer = std::thread::Builder::new()
            .name("iolab-trace".into())
            .spawn(move || write_batches(out, &gids, full_rx, empty_tx))?;
        Ok(TraceRecorder {
            batch: touched(),
            full: Some(full_tx),
            empty: empty_rx,
            writer: Some(writer),
            waited_ns: 0,
            recorded: 0,
        })
    }

    /// Records the next op.
    #[inline(always)]
    pub fn record(&mut self, op: TraceOp) {
        if self.batch.len() == BATCH_OPS {
            self.hand_off();
        }
        self.batch.push(op);
        self.recorded += 1;
    }

    /// Hands the full batch to the writer and takes a free one (waiting, and counting the wait,
    /// if the writer is behind).
    #[cold]
    #[inline(never)]
    fn hand_off(&mut self) {
        let next = match self.empty.try_recv() {
            Ok(b) => b,
            Err(_) => {
                let t = now_ns();
                let b = self.empty.recv();
                self.waited_ns += now_ns() - t;
                // A writer that died leaves its error for `finish`; keep the loop going.
                b.unwrap_or_else(|_| Vec::with_capacity(BATCH_OPS))
            }
        };
        let full = std::mem::replace(&mut self.batch, next);
        if let Some(tx) = &self.full {
            let _ = tx.send(full);
        }
    }

    /// Ops recorded so far.
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// Time the loop waited for a free buffer.
    pub fn waited_ns(&self) -> u64 {
        self.waited_ns
    }

    /// Hands over the last batch and waits for the writer: the spill (none when the batches
    /// went to the parent process or were dropped), with the time the loop waited.
    pub fn finish(mut self) -> io::Result<WorkerTrace> {
        let last = std::mem::take(&mut self.batch);
        if let Some(tx) = self.full.take()
            && !last.is_empty()
        {
            let _ = tx.send(last);
        }
        let out = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the trace writer thread panicked")),
            None => Ok(None),
        };
        out.map(|spill| WorkerTrace {
            spill: spill.map(Arc::new),
            ops: self.recorded,
            waited_ns: self.waited_ns,
        })
    }
}

impl Drop for TraceRecorder {
    fn drop(&mut self) {
        // A loop that stopped early: let the writer see the end and finish.
        self.full = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// The writer thread: encodes each batch (local file indexes become global ids), writes it
/// out, and returns the buffer. After a write error it keeps returning buffers without
/// writing, so the loop never stalls on it; the error is reported at the end.
fn write_batches(
    mut out: Out,
    gids: &[u32],
    full: Receiver<Vec<TraceOp>>,
    empty: SyncSender<Vec<TraceOp>>,
) -> io::Result<Option<TraceSpill>> {
    let mut bytes = Vec::with_capacity(BATCH_OPS * RECORD_BYTES);
    let mut failed = None;
    for mut batch in full {
        if failed.is_none() && !matches!(out, Out::Discard) {
            bytes.clear();
            for op in &batch {
                let file = gids.get(op.file as usize).copied().unwrap_or(op.file);
                TraceOp { file, ..*op }.encode(&mut bytes);
            }
            let n = batch.len() as u64;
            let r = match &mut out {
                Out::Spill(s) => s.append_encoded(&bytes, n),
                Out::Pipe(send) => send(&bytes, n),
                Out::Discard => Ok(()),
            };
            failed = r.err();
        }
        batch.clear();
        // Never blocks: there are no more buffers than the channel holds.
        let _ = empty.send(batch);
    }
    match (failed, out) {
        (Some(e), _) => Err(e),
        (None, Out::Spill(s)) => Ok(Some(s)),
        (None, _) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_reaches_the_spill_in_order_with_global_file_ids() {
        let mut r = TraceRecorder::start(&[10, 20]).unwrap();
        let n = BATCH_OPS as u64 * (RING_BATCHES as u64 + 3) + 17;
        for k in 0..n {
            r.record(TraceOp {
                file: (k % 2) as u32,
                offset: k * 512,
                start_ns: k,
                duration_ns: 3,
                ..Default::default()
            });
        }
        assert_eq!(r.recorded(), n);
        let t = r.finish().unwrap();
        assert_eq!(t.ops, n);
        let spill = t.spill.expect("spilled");
        assert_eq!(spill.len(), n);
        let mut next = 0;
        spill
            .for_each_batch(|k, ops| {
                for (i, o) in ops.iter().enumerate() {
                    let j = k + i as u64;
                    assert_eq!(o.file, [10, 20][(j % 2) as usize]);
                    assert_eq!((o.offset, o.start_ns), (j * 512, j));
                }
                next += ops.len() as u64;
                Ok(())
            })
            .unwrap();
        assert_eq!(next, n);
    }

    #[test]
    fn an_empty_trace_is_an_empty_spill() {
        let r = TraceRecorder::start(&[0]).unwrap();
        assert_eq!(r.finish().unwrap().spill.unwrap().len(), 0);
    }
}
