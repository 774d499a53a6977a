//! What the timed loops keep of each op's time (`latency = off | histogram | trace`). The
//! loops are generic over a [`Recorder`], so the choice costs no branch per op: with `off`
//! the loop does not even read the clock between ops (t_i needs only its start and end, and
//! commit times a read around each commit).

use hdrhistogram::Histogram;

use crate::plan::Op;
use crate::trace::{TraceOp, TraceRecorder, WorkerTrace};
use crate::worker::new_hist;

/// Keeps each op's latency, or not.
pub trait Recorder: Sized {
    /// Whether the loop reads the clock at the end of every op.
    const CLOCKED: bool;
    /// Op `op` started `start_ns` after the worker's start and took `duration_ns`.
    fn record(&mut self, op: Op, start_ns: u64, duration_ns: u64);
    /// The histogram (empty with `off`) and the trace (with `trace`).
    fn finish(self) -> std::io::Result<(Histogram<u64>, Option<WorkerTrace>)>;
}

/// `latency = off`: nothing per op.
pub struct Off;

impl Recorder for Off {
    const CLOCKED: bool = false;
    #[inline(always)]
    fn record(&mut self, _: Op, _: u64, _: u64) {}
    fn finish(self) -> std::io::Result<(Histogram<u64>, Option<WorkerTrace>)> {
        Ok((new_hist(), None))
    }
}

/// `latency = histogram`: an HDR histogram per worker.
pub struct Hist(pub Histogram<u64>);

impl Hist {
    pub fn new() -> Hist {
        Hist(new_hist())
    }
}

impl Default for Hist {
    fn default() -> Hist {
        Hist::new()
    }
}

impl Recorder for Hist {
    const CLOCKED: bool = true;
    #[inline(always)]
    fn record(&mut self, _: Op, _: u64, duration_ns: u64) {
        self.0.saturating_record(duration_ns);
    }
    fn finish(self) -> std::io::Result<(Histogram<u64>, Option<WorkerTrace>)> {
        Ok((self.0, None))
    }
}

/// `latency = trace`: the histogram, and every op streamed out in batches.
pub struct Traced {
    hist: Hist,
    trace: TraceRecorder,
}

impl Traced {
    /// Starts the trace writer for ops on the files `gids` (global ids by local index).
    pub fn start(gids: &[u32]) -> std::io::Result<Traced> {
        Ok(Traced { hist: Hist::new(), trace: TraceRecorder::start(gids)? })
    }
}

impl Recorder for Traced {
    const CLOCKED: bool = true;
    #[inline(always)]
    fn record(&mut self, op: Op, start_ns: u64, duration_ns: u64) {
        self.hist.record(op, start_ns, duration_ns);
        self.trace.record(TraceOp { file: op.file, offset: op.offset, start_ns, duration_ns });
    }
    fn finish(self) -> std::io::Result<(Histogram<u64>, Option<WorkerTrace>)> {
        let trace = self.trace.finish()?;
        Ok((self.hist.0, Some(trace)))
    }
}
