//! Per-op traces (`latency = trace`): each op's file, offset, start and duration, recorded by
//! the timed loop into memory allocated and touched before the start gate, so recording costs
//! a few stores per op and never allocates.

use serde::{Deserialize, Serialize};

/// One traced op. `start_ns` counts from the worker's start (the gate), `file` is the op's
/// worker-local file index while recording and the run's global file id afterwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceOp {
    pub file: u32,
    pub offset: u64,
    pub start_ns: u64,
    pub duration_ns: u64,
}

/// A worker's trace of one phase, in op order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpTrace {
    ops: Vec<TraceOp>,
}

impl OpTrace {
    /// Room for `n` ops, written once now so that the pages are mapped before timing starts.
    pub fn preallocated(n: u64) -> OpTrace {
        let mut ops = Vec::with_capacity(n as usize);
        ops.resize(n as usize, TraceOp { file: u32::MAX, ..TraceOp::default() });
        OpTrace { ops }
    }

    /// Records op `k` (k < the preallocated length; others are ignored).
    #[inline(always)]
    pub fn record(&mut self, k: u64, file: u32, offset: u64, start_ns: u64, duration_ns: u64) {
        if let Some(slot) = self.ops.get_mut(k as usize) {
            *slot = TraceOp { file, offset, start_ns, duration_ns };
        }
    }

    /// Replaces worker-local file indexes by global file ids (after the timed loop).
    pub fn map_files(&mut self, gids: &[u32]) {
        for op in &mut self.ops {
            if let Some(&g) = gids.get(op.file as usize) {
                op.file = g;
            }
        }
    }

    pub fn ops(&self) -> &[TraceOp] {
        &self.ops
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The latency series, in op order.
    pub fn durations(&self) -> Vec<u64> {
        self.ops.iter().map(|o| o.duration_ns).collect()
    }

    /// A trace from recorded ops (the store rebuilds traces this way).
    pub fn from_ops(ops: Vec<TraceOp>) -> OpTrace {
        OpTrace { ops }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_place_and_maps_files() {
        let mut t = OpTrace::preallocated(3);
        let cap = t.ops.capacity();
        t.record(0, 1, 4096, 0, 10);
        t.record(1, 0, 0, 10, 20);
        t.record(2, 1, 8192, 30, 5);
        t.record(3, 0, 0, 35, 5); // beyond the room: ignored, no growth
        assert_eq!(t.ops.capacity(), cap);
        t.map_files(&[7, 9]);
        assert_eq!(t.ops()[0], TraceOp { file: 9, offset: 4096, start_ns: 0, duration_ns: 10 });
        assert_eq!(t.ops()[1].file, 7);
        assert_eq!(t.durations(), [10, 20, 5]);
    }
}
