//! Writing to the store: an experiment's identity before its first run, then each run with
//! its phases and workers, each in one transaction.

use rusqlite::{Connection, params};

use super::real::Real;
use super::{Store, status_str};
use crate::error::{Error, Result};
use crate::results::{ExperimentResult, PointResult, Repetition, Status};

impl Store {
    /// Records an experiment's identity, host and spec (before its first run).
    pub fn insert_experiment(&self, exp: &ExperimentResult) -> Result<()> {
        let tx = self.write_tx()?;
        self.insert_experiment_in(&tx, exp)?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// [`Store::insert_experiment`] within the caller's transaction.
    pub(super) fn insert_experiment_in(&self, tx: &Connection, exp: &ExperimentResult) -> Result<()> {
        let skeleton: Vec<PointResult> = exp
            .points
            .iter()
            .map(|p| PointResult {
                params: p.params.clone(),
                spec: p.spec.clone(),
                phases: p
                    .phases
                    .iter()
                    .map(|ph| {
                        let mut ph = ph.clone();
                        ph.repetitions.clear();
                        ph.warmups.clear();
                        ph.refresh();
                        ph
                    })
                    .collect(),
            })
            .collect();
        tx.execute(
            "INSERT OR IGNORE INTO hosts(host_id, hostname, facts_json) VALUES (?1, ?2, ?3)",
            params![exp.host.host_id, exp.host.hostname, self.json(&exp.host)?],
        )
        .map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT INTO experiments(id, created_unix_s, name, host_id, iolab_version, spec_json, host_json, points_json, design_json, not_run_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                exp.experiment_id,
                Real(exp.created_unix_s),
                exp.spec.name,
                exp.host.host_id,
                exp.iolab_version,
                self.json(&exp.spec)?,
                self.json(&exp.host)?,
                self.json(&skeleton)?,
                self.json(&exp.design)?,
                exp.not_run.as_ref().map(|n| self.json(n)).transpose()?
            ],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records that an experiment ended early: the runs it did not run, and why.
    pub fn save_not_run(&self, exp: &ExperimentResult) -> Result<()> {
        let json = exp.not_run.as_ref().map(|n| self.json(n)).transpose()?;
        let tx = self.write_tx()?;
        tx.execute(
            "UPDATE experiments SET not_run_json = ?1 WHERE id = ?2",
            params![json, exp.experiment_id],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// Records one run (all its phases and workers) in one transaction. A stop signal while
    /// its per-op traces are stored (millions of rows take seconds) ends that transaction: the
    /// run is then stored again without them, said on stderr, and the signal is the error.
    pub fn insert_run(
        &self,
        experiment_id: &str,
        point: usize,
        run_id: &str,
        reps: &[(usize, &Repetition)],
        warmup: bool,
    ) -> Result<()> {
        // The run in one transaction, with or without its workers' per-op traces.
        let store = |traces: bool| {
            let tx = self.write_tx()?;
            self.insert_run_with(&tx, (experiment_id, point, run_id), reps, warmup, traces)?;
            tx.commit().map_err(|e| self.err(e))
        };
        let traced =
            reps.iter().any(|(_, r)| !r.workers.is_spooled() && r.workers.iter().any(|w| w.trace.is_some()));
        match store(true) {
            Err(Error::Interrupted(sig)) if traced => {
                store(false)?;
                eprintln!(
                    "note: interrupted while storing the per-op traces of run {run_id}: the run is stored without them"
                );
                Err(Error::Interrupted(sig))
            }
            other => other,
        }
    }

    /// [`Store::insert_run`] within the caller's transaction.
    pub(super) fn insert_run_in(
        &self,
        tx: &Connection,
        experiment_id: &str,
        point: usize,
        run_id: &str,
        reps: &[(usize, &Repetition)],
        warmup: bool,
    ) -> Result<()> {
        self.insert_run_with(tx, (experiment_id, point, run_id), reps, warmup, true)
    }

    fn insert_run_with(
        &self,
        tx: &Connection,
        (experiment_id, point, run_id): (&str, usize, &str),
        reps: &[(usize, &Repetition)],
        warmup: bool,
        traces: bool,
    ) -> Result<()> {
        let status =
            reps.iter().map(|(_, r)| r.status).find(|s| *s != Status::Complete).unwrap_or(Status::Complete);
        let error = reps.iter().find_map(|(_, r)| r.error.clone());
        let rep = reps.first().map(|(_, r)| r.rep).unwrap_or(0);
        tx.execute(
            "INSERT INTO runs(run_id, experiment_id, point, rep, status, error, finished_unix_s, warmup)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run_id,
                experiment_id,
                point as i64,
                rep,
                status_str(status),
                error,
                Real(crate::env::sys::unix_time_s()),
                warmup
            ],
        )
        .map_err(|e| self.err(e))?;
        for (phase, r) in reps {
            tx.execute(
                "INSERT INTO phase_results(run_id, phase, status, error, total_bytes, ops, time_ns,
                     max_sar_bytes_per_s, min_sar_bytes_per_s, avg_individual_bytes_per_s, resident_fraction,
                     prealloc_ns, flags_json, env_json, syncs_in_flight_max, rate_json, agg_bytes_per_s, span_ns,
                     overlap, namespace_json, latency_histogram_json, mix_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,
                     ?22)",
                params![
                    run_id,
                    *phase as i64,
                    status_str(r.status),
                    r.error,
                    r.total_bytes as i64,
                    r.ops as i64,
                    r.time_ns as i64,
                    Real(r.max_sar_bytes_per_s),
                    Real(r.min_sar_bytes_per_s),
                    Real(r.avg_individual_bytes_per_s),
                    Real(r.resident_fraction),
                    r.prealloc_ns as i64,
                    self.json(&r.flags)?,
                    self.json(&r.env)?,
                    r.syncs_in_flight_max.map(|n| n as i64),
                    r.rate.as_ref().map(|x| self.json(x)).transpose()?,
                    r.agg_bytes_per_s.map(Real),
                    r.span_ns.map(|n| n as i64),
                    r.overlap.map(Real),
                    r.namespace.as_ref().map(|x| self.json(x)).transpose()?,
                    Some(&r.latency_histogram_ns).filter(|b| !b.is_empty()).map(|x| self.json(x)).transpose()?,
                    r.mix.as_ref().map(|x| self.json(x)).transpose()?
                ],
            )
            .map_err(|e| self.err(e))?;
            self.insert_servers(tx, run_id, *phase as i64, &r.servers)?;
            if let Some(layout) = &r.file_layout {
                tx.execute(
                    "INSERT INTO phase_layouts VALUES (?1, ?2, ?3)",
                    params![run_id, *phase as i64, self.json(layout)?],
                )
                .map_err(|e| self.err(e))?;
            }
            // Prepared once for all the workers of the run, not once per worker.
            let mut row = tx
                .prepare_cached(
                    "INSERT INTO worker_results (run_id, phase, worker, bytes, ops, time_ns, sync_ns, sync_calls,
                         open_ns, close_ns, bytes_per_s, latency_json, histogram_json, calls_json, max_inflight,
                         role, times_json, tid, commit_tids_json, rank, host, series_json, stonewall_ops,
                         start_offset_ns, alloc_ns, mpiio_hints_json, mix_json)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
                         ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)",
                )
                .map_err(|e| self.err(e))?;
            for w in r.workers.try_iter() {
                let w = w.map_err(|e| self.err(e))?;
                row.execute(params![
                    run_id,
                    *phase as i64,
                    w.worker,
                    w.bytes as i64,
                    w.ops as i64,
                    w.time_ns as i64,
                    w.sync_ns as i64,
                    w.sync_calls as i64,
                    w.open_ns as i64,
                    w.close_ns as i64,
                    Real(w.bytes_per_s),
                    self.json(&w.latency_ns)?,
                    self.json(&w.latency_histogram_ns)?,
                    self.json(&w.calls)?,
                    w.max_inflight as i64,
                    w.role.map(|r| r.name()),
                    w.times_ns.as_ref().map(|t| self.json(t)).transpose()?,
                    w.tid,
                    w.commit_tids.as_ref().map(|t| self.json(t)).transpose()?,
                    w.rank,
                    w.host,
                    w.series.as_ref().map(|s| self.json(s)).transpose()?,
                    w.stonewall_ops.map(|n| n as i64),
                    w.start_offset_ns.get().map(|n| n as i64),
                    w.alloc_ns.map(|n| n as i64),
                    w.mpiio_hints.as_ref().map(|h| self.json(h)).transpose()?,
                    w.mix.as_ref().map(|m| self.json(m)).transpose()?
                ])
                .map_err(|e| self.err(e))?;
                if let Some(periods) = &w.periods {
                    tx.execute(
                        "INSERT INTO worker_periods VALUES (?1, ?2, ?3, ?4)",
                        params![run_id, *phase as i64, w.worker, self.json(periods)?],
                    )
                    .map_err(|e| self.err(e))?;
                }
                if let Some(trace) = w.trace.as_ref().filter(|_| traces) {
                    let mut ins = tx
                        .prepare_cached(
                            "INSERT INTO trace_ops (run_id, phase, worker, op, file, offset_bytes, start_ns,
                                 duration_ns, len_bytes, write, response_ns)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                        )
                        .map_err(|e| self.err(e))?;
                    // A batch of the spill at a time: a trace of any length takes the same memory;
                    // a stop signal ends it between two.
                    trace.0.for_each_batch(|first, ops| {
                        crate::env::signals::check()?;
                        for (i, op) in ops.iter().enumerate() {
                            ins.execute(params![
                                run_id,
                                *phase as i64,
                                w.worker,
                                (first + i as u64) as i64,
                                op.file,
                                op.offset as i64,
                                op.start_ns as i64,
                                op.duration_ns as i64,
                                op.len,
                                op.write,
                                (op.response_ns > 0).then_some(op.response_ns as i64)
                            ])
                            .map_err(|e| self.err(e))?;
                        }
                        Ok(())
                    })?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
