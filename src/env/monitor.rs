//! What watches a long step (a phase, a settle, memory priming): the progress display, and
//! stop requests from signals.

/// Watches a running phase: progress display and stop requests (signals).
pub trait Monitor: Sync {
    /// A phase starts: a label and the bytes it will move.
    fn begin(&self, _label: &str, _total_bytes: u64) {}
    /// A time-bounded phase starts: a label, the bytes its blocks hold and its time bound (it
    /// may move more bytes, wrapping around its blocks, or fewer, stopped at the stonewall).
    fn begin_bounded(&self, label: &str, total_bytes: u64, _bound_ns: u64) {
        self.begin(label, total_bytes);
    }
    /// A metadata phase starts: a label and the ops it will do (0: not known before, as in a
    /// find); its ticks count ops.
    fn begin_ops(&self, label: &str, total_ops: u64) {
        self.begin(label, total_ops)
    }
    /// Called about every 50 ms with the bytes done so far; returns a signal number to stop.
    fn tick(&self, bytes_done: u64) -> Option<i32>;
    /// As [`Monitor::tick`], with the whole run's count over MPI ranks (`done`: every rank's,
    /// as rank 0 last heard them) and which rank is furthest behind.
    fn tick_ranks(&self, done: u64, _ranks: &RanksProgress) -> Option<i32> {
        self.tick(done)
    }
    /// Whether the other ranks of an MPI run should tell rank 0 their counts while a phase
    /// runs (something shows them).
    fn wants_ranks(&self) -> bool {
        false
    }
    /// Whether ticks show anything (a progress bar). When not, a phase of one thread worker
    /// runs on the calling thread: no thread to start, and a process with one thread makes
    /// cheaper system calls (Linux skips the file reference count of each call when no other
    /// thread shares the descriptor table).
    fn wants_ticks(&self) -> bool {
        true
    }
    /// The phase ended.
    fn end(&self) {}
    /// A warning for the user (e.g. a work directory that could not be removed).
    fn note(&self, _msg: &str) {}
}

/// The progress of a phase over MPI ranks, as rank 0 hears it: each rank's count reaches it up
/// the tree of ranks every half second, not with every op.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RanksProgress {
    /// Ranks whose count rank 0 has (itself included), of `ranks`.
    pub heard: u32,
    pub ranks: u32,
    /// The rank furthest behind (the least of its part done; the least done when the parts'
    /// sizes are not known, in a time-bounded phase): its rank, its host, what it has done and
    /// its part (0: not known).
    pub slowest: Option<(u32, String, u64, u64)>,
}

/// A monitor that shows nothing and never stops a phase (an MPI rank serving rank 0: signals
/// end it directly).
pub struct Quiet;

impl Monitor for Quiet {
    fn tick(&self, _bytes_done: u64) -> Option<i32> {
        None
    }
    fn wants_ticks(&self) -> bool {
        false
    }
}
