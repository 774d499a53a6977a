//! What the timed loops keep of each op's time (`latency = off | histogram | trace`). The
//! loops are generic over a [`Recorder`], so the choice costs no branch per op: with `off`
//! the loop does not even read the clock between ops (t_i needs only its start and end, and
//! commit times a read around each commit).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub mod classes;
pub mod period;
pub mod series;
mod series_serde;
pub mod trace;

use crate::latency::trace::{TraceOp, TraceRecorder, WorkerTrace};
use crate::plan::Op;

/// Keeps each op's latency, or not.
pub trait Recorder: Sized {
    /// Whether the loop reads the clock at the end of every op.
    const CLOCKED: bool;
    /// Op `op` started `start_ns` after the worker's start and took `duration_ns`.
    fn record(&mut self, op: Op, start_ns: u64, duration_ns: u64);
    /// As [`Recorder::record`], with its direction and, rate-limited, its response time.
    #[inline(always)]
    fn record_op(&mut self, op: Op, write: bool, start_ns: u64, duration_ns: u64, response_ns: u64) {
        let _ = (write, response_ns);
        self.record(op, start_ns, duration_ns);
    }
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

/// `latency = histogram`: an HDR histogram per worker. The loop records into [`FastHist`],
/// which has exactly the layout of [`new_hist`]'s histogram (the same buckets) but records with
/// a handful of instructions and no branch that misses; the HDR histogram is built from its
/// counts once the loop is over, identical to one the values were recorded into directly.
pub struct Hist(pub FastHist);

impl Hist {
    pub fn new() -> Hist {
        Hist(FastHist::new())
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
        self.0.record(duration_ns);
    }
    fn finish(self) -> std::io::Result<(Histogram<u64>, Option<WorkerTrace>)> {
        Ok((self.0.to_hdr(), None))
    }
}

/// Significant bits of a bucket: 2048 sub-buckets, as HDR's 3 significant digits need.
const SUB_BUCKET_BITS: u32 = 11;
const SUB_HALF_BITS: u32 = SUB_BUCKET_BITS - 1;
const SUB_HALF: u64 = 1 << SUB_HALF_BITS;
/// The largest value kept apart (as [`new_hist`]): larger ones count as this.
pub const HIGHEST_NS: u64 = 1 << 40;
/// Buckets needed to reach [`HIGHEST_NS`] (HDR's count for these bounds), plus one.
const COUNTS: usize = 32 << SUB_HALF_BITS;

/// Memory one worker's timed loop keeps for latencies with `mode`: its histogram (and the HDR
/// histogram built from it at the end) and, traced, the ring of batch buffers.
pub fn loop_memory_bytes(mode: crate::spec::LatencyMode) -> u64 {
    let hist = 2 * (COUNTS * std::mem::size_of::<u64>()) as u64;
    let trace = (trace::RING_BATCHES * trace::BATCH_OPS * std::mem::size_of::<TraceOp>()) as u64;
    match mode {
        crate::spec::LatencyMode::Off => 0,
        crate::spec::LatencyMode::Histogram => hist,
        crate::spec::LatencyMode::Trace => hist + trace,
    }
}

/// A latency histogram with the bucket layout of HDR histograms of 1 ns .. 2^40 ns at 3
/// significant digits (unit magnitude 0, 2048 sub-buckets): value v goes to bucket
/// b = 53 - lzcnt(v | 2047), sub-bucket v >> b, index (b + 1) x 1024 + (v >> b) - 1024.
pub struct FastHist {
    counts: Box<[u64]>,
}

/// Counts of dropped histograms, zeroed, for the next [`FastHist::new`] of the process: a job
/// of many short phases would otherwise allocate, fault in and free 256 KiB per worker and
/// phase. At most [`SPARE_MAX`] are kept.
static SPARE: std::sync::Mutex<Vec<Box<[u64]>>> = std::sync::Mutex::new(Vec::new());
const SPARE_MAX: usize = 8;

impl Drop for FastHist {
    fn drop(&mut self) {
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        if spare.len() < SPARE_MAX {
            self.counts.fill(0);
            spare.push(std::mem::take(&mut self.counts));
        }
    }
}

impl FastHist {
    /// The memory its counts take.
    pub const BYTES: usize = COUNTS * std::mem::size_of::<u64>();

    /// An empty histogram, its memory written now so no page fault lands in a timed loop: one
    /// a dropped histogram left behind (its pages mapped, its counts zeroed), else a new one.
    pub fn new() -> FastHist {
        if let Some(counts) = SPARE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return FastHist { counts };
        }
        let mut counts = vec![0u64; COUNTS].into_boxed_slice();
        // Freshly allocated zero pages are only mapped when first written: write one word per
        // page (volatile, so the write is not dropped as storing a zero into zeroed memory).
        for i in (0..COUNTS).step_by(512) {
            // SAFETY: `i < COUNTS`, so the pointer is inside the slice and aligned.
            unsafe { std::ptr::write_volatile(counts.as_mut_ptr().add(i), 0) };
        }
        FastHist { counts }
    }

    /// The counts index of `v` (values above [`HIGHEST_NS`] count as it).
    #[inline(always)]
    pub fn index(v: u64) -> usize {
        let v = v.min(HIGHEST_NS);
        let bucket = (64 - SUB_BUCKET_BITS) - (v | ((1 << SUB_BUCKET_BITS) - 1)).leading_zeros();
        (((bucket as u64 + 1) << SUB_HALF_BITS) + (v >> bucket) - SUB_HALF) as usize
    }

    /// The lowest value of the bucket at counts index `i`.
    pub fn value_at(i: usize) -> u64 {
        let i = i as u64;
        let (bucket, sub) = match (i >> SUB_HALF_BITS).checked_sub(1) {
            Some(b) => (b, (i & (SUB_HALF - 1)) + SUB_HALF),
            None => (0, i & (SUB_HALF - 1)),
        };
        sub << bucket
    }

    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        let i = Self::index(v);
        // The index is below COUNTS for every v <= HIGHEST_NS; the bound check never fails.
        self.counts[i] += 1;
    }

    /// The memory its counts take.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.counts)
    }

    /// Ops recorded.
    pub fn len(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the counts of `b` (bucket values of a histogram of [`new_hist`]'s layout).
    pub fn add(&mut self, b: &Buckets) {
        for &(v, c) in &b.0 {
            self.counts[Self::index(v)] += c;
        }
    }

    /// Its counts as buckets (those of [`FastHist::to_hdr`]).
    pub fn buckets(&self) -> Buckets {
        if self.is_empty() { Buckets::default() } else { Buckets::from_hist(&self.to_hdr()) }
    }

    /// The same histogram as an HDR histogram ([`new_hist`]), its counts sized to its largest
    /// value at once.
    pub fn to_hdr(&self) -> Histogram<u64> {
        // Whole chunks of zeros are skipped with a test the compiler vectorises: a phase of a
        // few ops has a handful of counts among 32768.
        const CHUNK: usize = 64;
        let nonzero = |c: &[u64]| c.iter().fold(0, |a, &x| a | x) != 0;
        let chunks = self.counts.chunks_exact(CHUNK);
        let last = chunks.clone().rposition(nonzero);
        let top = last.map_or(0, |k| {
            let base = k * CHUNK;
            Self::value_at(base + self.counts[base..base + CHUNK].iter().rposition(|&c| c > 0).unwrap_or(0))
        });
        let mut h = hist_to(top);
        for (k, chunk) in chunks.enumerate().take(last.map_or(0, |k| k + 1)) {
            if !nonzero(chunk) {
                continue;
            }
            for (j, &c) in chunk.iter().enumerate() {
                if c > 0 {
                    record_n(&mut h, Self::value_at(k * CHUNK + j), c);
                }
            }
        }
        h
    }
}

impl Default for FastHist {
    fn default() -> FastHist {
        FastHist::new()
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
        self.record_op(op, false, start_ns, duration_ns, 0);
    }
    #[inline(always)]
    fn record_op(&mut self, op: Op, write: bool, start_ns: u64, duration_ns: u64, response_ns: u64) {
        self.hist.record(op, start_ns, duration_ns);
        let (file, offset, len) = (op.file, op.offset, op.len as u32);
        self.trace.record(TraceOp { file, offset, start_ns, duration_ns, len, write, response_ns });
    }
    fn finish(self) -> std::io::Result<(Histogram<u64>, Option<WorkerTrace>)> {
        let trace = self.trace.finish()?;
        Ok((self.hist.0.to_hdr(), Some(trace)))
    }
}

/// A latency histogram as (value_ns, count) pairs: what crosses a pipe and goes in the store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Buckets(pub Vec<(u64, u64)>);

/// Latency percentiles of one worker (or merged), in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyNs {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl LatencyNs {
    pub fn from_hist(h: &Histogram<u64>) -> LatencyNs {
        LatencyNs::from_buckets(h, &Buckets::from_hist(h))
    }

    /// The figures of `h` from its buckets `b` ([`Buckets::from_hist`]): what HDR's
    /// value_at_quantile, max and mean give, in one pass over the few recorded buckets instead of
    /// one over all the counts for each.
    pub fn from_buckets(h: &Histogram<u64>, b: &Buckets) -> LatencyNs {
        let total: u64 = b.0.iter().map(|&(_, c)| c).sum();
        let Some(&(max, _)) = b.0.last() else { return LatencyNs::default() };
        // HDR's rule: the bucket where the running count reaches ceil(q x total), at least 1;
        // a bucket's value here is already its highest equivalent.
        let quantiles = [0.50, 0.90, 0.99, 0.999];
        let targets = quantiles.map(|q: f64| ((q * total as f64).ceil() as u64).max(1));
        let mut at = [max; 4];
        let (mut run, mut next, mut mean) = (0u64, 0usize, 0.0f64);
        for &(v, c) in &b.0 {
            run += c;
            while next < 4 && run >= targets[next] {
                at[next] = v;
                next += 1;
            }
            // As HDR sums it, in the same order, so the figure is the same to the last bit.
            mean += h.median_equivalent(v) as f64 * c as f64 / total as f64;
        }
        LatencyNs { p50: at[0], p90: at[1], p99: at[2], p999: at[3], max, mean }
    }
}

/// One worker's per-op latency as its launcher hands it on.
#[derive(Debug, Clone)]
pub enum SampleHist {
    /// The worker's whole histogram (threads and processes of one host).
    Full(Box<Histogram<u64>>),
    /// Its figures, worked out where the histogram was; the counts themselves went into the
    /// phase's histogram as the sample arrived (MPI ranks), and its buckets are kept only when
    /// asked for (`keep_worker_latency`).
    Merged { figures: LatencyNs, buckets: Option<Buckets> },
}

impl SampleHist {
    /// An empty histogram.
    pub fn empty() -> SampleHist {
        SampleHist::Full(Box::new(new_hist()))
    }

    /// No histogram: figures of none (allocates nothing).
    pub fn empty_merged() -> SampleHist {
        SampleHist::Merged { figures: LatencyNs::default(), buckets: None }
    }

    /// Its percentiles.
    #[cfg(test)]
    pub fn figures(&self) -> LatencyNs {
        self.figures_and_buckets().0
    }

    /// Its median (0 when empty).
    pub fn median(&self) -> u64 {
        match self {
            SampleHist::Full(h) if h.is_empty() => 0,
            SampleHist::Full(h) => h.value_at_quantile(0.5),
            SampleHist::Merged { figures, .. } => figures.p50,
        }
    }

    /// Its figures and buckets (the buckets empty when merged and not kept).
    pub fn figures_and_buckets(&self) -> (LatencyNs, Buckets) {
        match self {
            SampleHist::Full(h) => {
                let b = Buckets::from_hist(h);
                (LatencyNs::from_buckets(h, &b), b)
            }
            SampleHist::Merged { figures, buckets } => (*figures, buckets.clone().unwrap_or_default()),
        }
    }

    /// As [`SampleHist::figures_and_buckets`], kept buckets moved, not copied.
    pub fn into_figures_and_buckets(self) -> (LatencyNs, Buckets) {
        match self {
            SampleHist::Merged { figures, buckets } => (figures, buckets.unwrap_or_default()),
            full => full.figures_and_buckets(),
        }
    }

    /// Its buckets (empty when merged and not kept).
    #[cfg(test)]
    pub fn buckets(&self) -> Buckets {
        self.figures_and_buckets().1
    }

    /// The histogram (empty when merged and not kept).
    pub fn to_hist(&self) -> Histogram<u64> {
        match self {
            SampleHist::Full(h) => (**h).clone(),
            SampleHist::Merged { buckets, .. } => {
                buckets.as_ref().map(Buckets::to_hist).unwrap_or_else(new_hist)
            }
        }
    }

    /// Its counts added to `phase`; what is left: its figures, and its buckets if `keep`.
    pub fn merge_into(self, phase: &mut FastHist, keep: bool) -> SampleHist {
        match self {
            SampleHist::Full(h) => {
                let buckets = Buckets::from_hist(&h);
                phase.add(&buckets);
                let figures = LatencyNs::from_buckets(&h, &buckets);
                SampleHist::Merged { figures, buckets: keep.then_some(buckets) }
            }
            SampleHist::Merged { figures, buckets } => {
                if let Some(b) = &buckets {
                    phase.add(b);
                }
                SampleHist::Merged { figures, buckets: buckets.filter(|_| keep) }
            }
        }
    }
}

/// A new histogram of 1 ns and up at 3 significant digits, its buckets those of one covering 1 ns
/// to about 18 minutes ([`HIGHEST_NS`]): its counts grow as larger values are recorded, so a
/// phase of short ops iterates, merges and frees a few KiB, not 256. Record through
/// [`record_n`], which counts values above [`HIGHEST_NS`] as it, as [`FastHist`] does.
pub fn new_hist() -> Histogram<u64> {
    hist_to(0)
}

/// A new histogram ([`new_hist`]) with counts up to `top` ns already in place.
fn hist_to(top: u64) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, top.clamp(2, HIGHEST_NS), 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

/// Records `count` values of `v` ns in `h`, a value above [`HIGHEST_NS`] as it.
pub fn record_n(h: &mut Histogram<u64>, v: u64, count: u64) {
    // HDR's saturating record would count a value above the counts' current top as that top.
    h.record_n(v.min(HIGHEST_NS), count).expect("a histogram of new_hist's bounds grows to HIGHEST_NS");
}

impl Buckets {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn from_hist(h: &Histogram<u64>) -> Buckets {
        Buckets(h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect())
    }
    pub fn to_hist(&self) -> Histogram<u64> {
        let mut h = hist_to(self.0.iter().map(|&(v, _)| v).max().unwrap_or(0));
        for &(v, c) in &self.0 {
            record_n(&mut h, v, c);
        }
        h
    }
}

#[cfg(test)]
mod tests;
