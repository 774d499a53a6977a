//! Reading back what the store keeps beside the figures: each phase's layout facts, detected
//! periods and per-op traces.

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::env::forensics::LayoutFacts;
use crate::error::Result;
use crate::latency::period::Period;

impl Store {
    pub(super) fn load_layout(&self, run_id: &str, phase: i64) -> Result<Option<LayoutFacts>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT layout_json FROM phase_layouts WHERE run_id = ?1 AND phase = ?2")
            .map_err(|e| self.err(e))?;
        let json: Option<String> =
            stmt.query_row(params![run_id, phase], |r| r.get(0)).optional().map_err(|e| self.err(e))?;
        json.map(|j| crate::json::from_str(&j).map_err(|e| self.err(e))).transpose()
    }

    pub(super) fn load_periods(&self, run_id: &str, phase: i64, worker: u32) -> Result<Option<Vec<Period>>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT periods_json FROM worker_periods WHERE run_id = ?1 AND phase = ?2 AND worker = ?3",
            )
            .map_err(|e| self.err(e))?;
        let json: Option<String> = stmt
            .query_row(params![run_id, phase, worker], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        json.map(|j| crate::json::from_str(&j).map_err(|e| self.err(e))).transpose()
    }

    /// How many traced ops run `run_id` has stored.
    pub(super) fn trace_op_count(&self, run_id: &str) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM trace_ops WHERE run_id = ?1", [run_id], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(n.max(0) as u64)
    }

    /// Calls `f` with every traced op of an experiment, in (rep, point, phase, worker, op)
    /// order; returns how many there were.
    pub fn for_each_trace_op(
        &self,
        experiment_id: &str,
        mut f: impl FnMut(&TraceRow) -> Result<()>,
    ) -> Result<u64> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT t.run_id, r.point, r.rep, t.phase, t.worker, t.op, t.file, t.offset_bytes, t.start_ns, t.duration_ns,
                        t.len_bytes, t.write, t.response_ns
                 FROM trace_ops t JOIN runs r ON r.run_id = t.run_id
                 WHERE r.experiment_id = ?1
                 ORDER BY r.rep, r.point, t.phase, t.worker, t.op",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([experiment_id]).map_err(|e| self.err(e))?;
        let mut n = 0;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let g = |e: rusqlite::Error| self.err(e);
            let row = TraceRow {
                run_id: r.get(0).map_err(g)?,
                point: r.get::<_, i64>(1).map_err(g)? as usize,
                rep: r.get(2).map_err(g)?,
                phase: r.get::<_, i64>(3).map_err(g)? as usize,
                worker: r.get(4).map_err(g)?,
                op: r.get::<_, i64>(5).map_err(g)? as u64,
                file: r.get(6).map_err(g)?,
                offset_bytes: r.get::<_, i64>(7).map_err(g)? as u64,
                start_ns: r.get::<_, i64>(8).map_err(g)? as u64,
                duration_ns: r.get::<_, i64>(9).map_err(g)? as u64,
                len_bytes: r.get::<_, Option<i64>>(10).map_err(g)?.map(|n| n as u64),
                write: r.get(11).map_err(g)?,
                response_ns: r.get::<_, Option<i64>>(12).map_err(g)?.map(|n| n as u64),
            };
            f(&row)?;
            n += 1;
        }
        Ok(n)
    }
}

/// One traced op as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TraceRow {
    pub run_id: String,
    pub point: usize,
    pub rep: u32,
    pub phase: usize,
    pub worker: u32,
    pub op: u64,
    /// The run's global file id (the order `iolab plan` lists files in).
    pub file: u32,
    pub offset_bytes: u64,
    /// From the worker's start.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Its bytes and direction (None in traces stored before iolab kept them).
    pub len_bytes: Option<u64>,
    pub write: Option<bool>,
    /// A rate-limited op: from its planned start to its completion.
    pub response_ns: Option<u64>,
}
