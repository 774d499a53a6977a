//! Writing to the store: an experiment's identity before its first run, then each run with
//! its phases and workers, each in one transaction.

use rusqlite::{Connection, params};

use super::real::Real;
use super::{Store, status_str};
use crate::error::Result;
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
            "INSERT INTO experiments(id, created_unix_s, name, host_id, iolab_version, spec_json, host_json, points_json, design_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                exp.experiment_id,
                Real(exp.created_unix_s),
                exp.spec.name,
                exp.host.host_id,
                exp.iolab_version,
                self.json(&exp.spec)?,
                self.json(&exp.host)?,
                self.json(&skeleton)?,
                self.json(&exp.design)?
            ],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records one run (all its phases and workers) in one transaction.
    pub fn insert_run(
        &self,
        experiment_id: &str,
        point: usize,
        run_id: &str,
        reps: &[(usize, &Repetition)],
        warmup: bool,
    ) -> Result<()> {
        let tx = self.write_tx()?;
        self.insert_run_in(&tx, experiment_id, point, run_id, reps, warmup)?;
        tx.commit().map_err(|e| self.err(e))
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
                if let Some(trace) = &w.trace {
                    let mut ins = tx
                        .prepare_cached(
                            "INSERT INTO trace_ops (run_id, phase, worker, op, file, offset_bytes, start_ns,
                                 duration_ns, len_bytes, write, response_ns)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                        )
                        .map_err(|e| self.err(e))?;
                    // A batch of the spill at a time: a trace of any length takes the same memory.
                    trace.0.for_each_batch(|first, ops| {
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
mod tests {
    use crate::engine::Call;
    use crate::latency::{LatencyNs, SampleHist};
    use crate::results::{CacheCheck, Repetition, Workers};
    use crate::worker::{Placement, WorkerSample};

    /// A run whose spooled workers cannot be read back while it is stored: the store says so,
    /// naming the spool, and keeps no part of that run; the run stored before it stays whole.
    #[test]
    fn an_unreadable_spool_fails_its_run_and_leaves_no_part_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::Store::open(&dir.path().join("s.db")).unwrap();
        store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
        let samples = || (0..3).map(|w| WorkerSample::with_series(w, 1000, vec![4096])).collect();
        let good = Repetition::from_samples(0, "a", samples(), None, &check);
        store.insert_run("e", 0, "a", &[(0, &good)], false).unwrap();
        let mut bad = Repetition::from_samples(0, "b", samples(), None, &check);
        bad.workers = Workers::unreadable_for_tests(3);
        let err = store.insert_run("e", 0, "b", &[(0, &bad)], false).unwrap_err().to_string();
        assert!(err.contains("reading back workers' results from iolab's temporary spool failed"), "{err}");
        let count = |sql: &str| store.conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM runs WHERE run_id = 'b'"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM phase_results WHERE run_id = 'b'"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM worker_results WHERE run_id = 'b'"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM worker_results WHERE run_id = 'a'"), 3);
    }

    /// Rank 0's work on a phase's replies past the gather, at many workers: the repetition made
    /// from their samples, its workers spooled and its rows stored from the spool; then a whole
    /// run's ten phase repetitions. Prints the times and the memory (counted by the tests'
    /// allocator); asserts every row is there. `IOLAB_ROWS` workers (100,000), 40 per
    /// host, each as rank 0 holds it gathered (figures, no buckets, a host, a 3-interval rate
    /// series, four kinds of call made, the same for all and so held once).
    #[test]
    #[ignore = "measurement: run by bench/rows.sh"]
    fn rows_of_many_workers() {
        let n: u32 = std::env::var("IOLAB_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
        let hosts = crate::launch::shared_host_names((0..n).map(|r| format!("node{:05}", r / 40)));
        let mut calls = crate::engine::CallCounts::default();
        for (c, k) in [(Call::Openat, 1), (Call::Pwrite, 16), (Call::Fsync, 1), (Call::Close, 1)] {
            calls.add_n(c, k);
        }
        let calls = calls.to_map();
        let gathered = || {
            (0..n)
                .map(|w| WorkerSample {
                    calls: calls.clone(),
                    hist: SampleHist::Merged {
                        figures: LatencyNs { p50: 9000, ..Default::default() },
                        buckets: None,
                    },
                    place: Some(Placement { rank: w, host: hosts[w as usize].clone(), resident: None }),
                    ..WorkerSample::with_series(w, 1000 + u64::from(w), vec![1 << 18, 1 << 19, 1 << 18])
                })
                .collect::<Vec<_>>()
        };
        let (samples, sampled) = crate::test_alloc::held_by(gathered);
        let dir = tempfile::tempdir().unwrap();
        let store = super::Store::open(&dir.path().join("s.db")).unwrap();
        // Only the rows are measured: no experiment row for them to point to.
        store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let t = std::time::Instant::now();
        let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
        let ((r, peak), held) = crate::test_alloc::held_by(|| {
            crate::test_alloc::peak_by(|| Repetition::from_samples(0, "r", samples, None, &check))
        });
        let made = t.elapsed();
        // Then, as a run does, its workers spooled and stored from the spool.
        let mut r = r;
        let t = std::time::Instant::now();
        let ((), freed) = crate::test_alloc::held_by(|| r.workers.spool());
        let spooled = t.elapsed();
        assert!(r.workers.is_spooled());
        let t = std::time::Instant::now();
        store.insert_run("e", 0, "r", &[(0, &r)], false).unwrap();
        let stored = t.elapsed();
        let rows: u32 =
            store.conn.query_row("SELECT count(*) FROM worker_results", [], |x| x.get(0)).unwrap();
        assert_eq!(rows, n);
        println!(
            "rows: {n} workers: repetition made in {:.3} s, spooled in {:.3} s, stored in {:.3} s ({:.2} us per worker in all)",
            made.as_secs_f64(),
            spooled.as_secs_f64(),
            stored.as_secs_f64(),
            (made + spooled + stored).as_secs_f64() * 1e6 / f64::from(n)
        );
        let per = |b: isize| b as f64 / f64::from(n);
        let (kept, peak) = (sampled + held, sampled + peak);
        println!(
            "memory: {n} workers: samples {:.1} MB ({:.0} B per worker), at most {:.1} MB ({:.0} B per worker) while the repetition was made, {:.1} MB ({:.0} B per worker) kept",
            sampled as f64 / 1e6,
            per(sampled),
            peak as f64 / 1e6,
            per(peak),
            kept as f64 / 1e6,
            per(kept)
        );
        // Read back once more, as --json writes it.
        let t = std::time::Instant::now();
        let (written, read_peak) = crate::test_alloc::peak_by(|| {
            let mut out = std::io::BufWriter::new(std::io::sink());
            crate::json::to_writer(&mut out, &r.workers).unwrap();
            r.workers.len()
        });
        let read = t.elapsed();
        assert_eq!(written, n as usize);
        println!(
            "spool: {n} workers: {:.0} B per worker on disk, {:.1} MB ({:.0} B per worker) kept spooled, read back as JSON in {:.3} s holding at most {:.1} MB",
            r.workers.spooled_bytes() as f64 / f64::from(n),
            (kept + freed) as f64 / 1e6,
            per(kept + freed),
            read.as_secs_f64(),
            read_peak as f64 / 1e6,
        );
        // A whole run of five repetitions of a write and a read phase: each phase's samples
        // gathered, its repetition made, stored and spooled before the next, all kept.
        let (kept_run, run_peak) = crate::test_alloc::peak_by(|| {
            let mut run = vec![r];
            for _ in 1..10 {
                let mut r = Repetition::from_samples(0, "r", gathered(), None, &check);
                r.workers.spool();
                run.push(r);
            }
            run
        });
        assert!(kept_run.iter().all(|r| r.workers.is_spooled() && r.workers.len() == n as usize));
        let held_run = kept + freed;
        let (_, held_more) = crate::test_alloc::held_by(|| drop(kept_run));
        println!(
            "run: {n} workers, 5 repetitions of a write and a read: at most {:.1} MB held, {:.1} MB kept at its end",
            (held_run + run_peak) as f64 / 1e6,
            -held_more as f64 / 1e6,
        );
    }

    /// Workers read back from the store hold the counts of calls they made alike once.
    #[test]
    fn workers_read_back_share_the_same_call_counts() {
        use crate::engine::{Call, CallCounts};
        let calls = |pwrites: u64| {
            let mut c = CallCounts::default();
            c.add_n(Call::Pwrite, pwrites);
            c.add(Call::Fsync);
            c.to_map()
        };
        let samples: Vec<WorkerSample> = [16, 16, 17]
            .into_iter()
            .enumerate()
            .map(|(w, n)| WorkerSample { calls: calls(n), ..WorkerSample::with_series(w as u32, 0, vec![1]) })
            .collect();
        let r = Repetition::from_samples(
            0,
            "r",
            samples,
            None,
            &CacheCheck { resident_fraction: 0.0, flags: vec![] },
        );
        let dir = tempfile::tempdir().unwrap();
        let store = super::Store::open(&dir.path().join("s.db")).unwrap();
        store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        store.insert_run("e", 0, "r", &[(0, &r)], false).unwrap();
        let back = store.load_workers("r", 0).unwrap();
        assert_eq!(
            back.iter().map(|w| w.calls.get("pwrite")).collect::<Vec<_>>(),
            [Some(16), Some(16), Some(17)]
        );
        assert!(back[1].calls.is_shared_with(&back[0].calls), "the same calls, held once");
        assert!(!back[2].calls.is_shared_with(&back[1].calls), "other calls, held apart");
    }
}
