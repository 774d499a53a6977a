//! Reading the store: the list of experiments, ids by prefix or `last`, whole experiments
//! with every repetition and worker, and the facts imports and comparisons look up.

use rusqlite::{OptionalExtension, params};

use super::real::Real;
use super::{ExperimentRow, Store, parse_status};
use crate::env::host::HostFacts;
use crate::error::{Error, Result};
use crate::latency::Buckets;
use crate::results::{ExperimentResult, LatencyNs, PointResult, Repetition, WorkerResult};
use crate::spec::Spec;

/// One measured phase of a stored run, as estimates read it ([`Store::phase_samples`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSample {
    pub engine: String,
    /// `write`, `rewrite` or `read`.
    pub op: String,
    /// The point ran a compute/I-O strategy (its time holds compute).
    pub strategy: bool,
    pub bytes: u64,
    pub time_ns: u64,
}

impl Store {
    /// Experiments, newest first.
    pub fn list(&self) -> Result<Vec<ExperimentRow>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.id, e.created_unix_s, e.name, h.hostname, e.spec_json, e.design_json,
                        (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'complete'),
                        (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status != 'complete'),
                        ifnull(json_extract(e.not_run_json, '$.runs'), 0),
                        CASE WHEN json_valid(e.host_json) THEN json_extract(e.host_json, '$.slurm.job_id') END
                 FROM experiments e JOIN hosts h ON h.host_id = e.host_id
                 ORDER BY e.created_unix_s DESC, e.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Real>(1)?.0,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, i64>(8)?,
                    r.get::<_, Option<String>>(9).ok().flatten(),
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = vec![];
        for row in rows {
            let (id, created_unix_s, name, hostname, spec_json, design_json, ok, bad, not_run, slurm_job) =
                row.map_err(|e| self.err(e))?;
            let spec = match crate::json::from_str(&spec_json) {
                Ok(spec) => spec,
                Err(e) => {
                    self.warn_unreadable(&format!("experiment {id}"), e);
                    continue;
                }
            };
            // A design that does not read says nothing of the sweep: the listing shows the spec.
            let design = crate::json::from_str(&design_json).unwrap_or_default();
            out.push(ExperimentRow {
                id,
                created_unix_s,
                name,
                hostname,
                runs_complete: ok as u64,
                runs_failed: bad as u64,
                runs_not_run: not_run.max(0) as u64,
                spec,
                slurm_job,
                design,
            });
        }
        Ok(out)
    }

    /// Finds an experiment id from a full id, a unique prefix, or `last`.
    pub fn resolve_id(&self, id: &str) -> Result<String> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM experiments ORDER BY created_unix_s DESC, id DESC")
            .map_err(|e| self.err(e))?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(|e| self.err(e))?;
        if id == "last" {
            return ids.into_iter().next().ok_or_else(|| {
                Error::NotFound(format!("the store {} holds no experiments", self.path.display()))
            });
        }
        // A whole id is that experiment, even when it also starts another's.
        if ids.iter().any(|i| i == id) {
            return Ok(id.to_string());
        }
        let hits: Vec<&String> = ids.iter().filter(|i| i.starts_with(id)).collect();
        match hits.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(Error::NotFound(format!("no experiment `{id}` in {}", self.path.display()))),
            _ => Err(Error::NotFound(format!(
                "`{id}` matches {} experiments; give more of the id",
                hits.len()
            ))),
        }
    }

    /// Rebuilds a whole experiment from its rows.
    pub fn load(&self, id: &str) -> Result<ExperimentResult> {
        // An error in its rows names the experiment: only that item is unreadable.
        self.load_rows(id).map_err(|e| match e {
            Error::Store { path, msg } => Error::Store { path, msg: format!("experiment {id}: {msg}") },
            other => other,
        })
    }

    fn load_rows(&self, id: &str) -> Result<ExperimentResult> {
        type Row = (Real, String, String, String, String, String, Option<String>);
        let (created_unix_s, iolab_version, spec_json, host_json, points_json, design_json, not_run_json): Row = self
            .conn
            .query_row(
                "SELECT created_unix_s, iolab_version, spec_json, host_json, points_json, design_json, not_run_json
                 FROM experiments WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or_else(|| Error::NotFound(format!("no experiment `{id}`")))?;
        let spec: Spec = crate::json::from_str(&spec_json).map_err(|e| self.err(e))?;
        let host: HostFacts = crate::json::from_str(&host_json).map_err(|e| self.err(e))?;
        let mut points: Vec<PointResult> = crate::json::from_str(&points_json).map_err(|e| self.err(e))?;
        let design = crate::json::from_str(&design_json).map_err(|e| self.err(e))?;

        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.run_id, r.point, r.rep, p.phase, p.status, p.error, p.total_bytes, p.ops, p.time_ns,
                        p.max_sar_bytes_per_s, p.min_sar_bytes_per_s, p.avg_individual_bytes_per_s,
                        p.resident_fraction, p.prealloc_ns, p.flags_json, p.env_json, r.warmup,
                        p.syncs_in_flight_max, p.rate_json, p.agg_bytes_per_s, p.span_ns, p.overlap,
                        p.namespace_json, p.latency_histogram_json, p.mix_json
                 FROM runs r JOIN phase_results p ON p.run_id = r.run_id
                 WHERE r.experiment_id = ?1 ORDER BY r.rep, r.finished_unix_s, r.point, p.phase",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([id]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            // Many small queries follow per row: a stop signal ends the read between them.
            crate::env::signals::check()?;
            let g = |e: rusqlite::Error| self.err(e);
            let run_id: String = r.get(0).map_err(g)?;
            let point: i64 = r.get(1).map_err(g)?;
            let phase: i64 = r.get(3).map_err(g)?;
            let flags_json: String = r.get(14).map_err(g)?;
            let env_json: String = r.get(15).map_err(g)?;
            let warmup: bool = r.get(16).map_err(g)?;
            let status: String = r.get(4).map_err(g)?;
            let workers = self.load_workers(&run_id, phase)?;
            let servers = self.load_servers(&run_id, phase)?;
            let file_layout = self.load_layout(&run_id, phase)?;
            let rep = Repetition {
                rep: r.get(2).map_err(g)?,
                run_id,
                status: parse_status(&status),
                error: r.get(5).map_err(g)?,
                total_bytes: r.get::<_, i64>(6).map_err(g)? as u64,
                ops: r.get::<_, i64>(7).map_err(g)? as u64,
                time_ns: r.get::<_, i64>(8).map_err(g)? as u64,
                max_sar_bytes_per_s: r.get::<_, Real>(9).map_err(g)?.0,
                min_sar_bytes_per_s: r.get::<_, Real>(10).map_err(g)?.0,
                avg_individual_bytes_per_s: r.get::<_, Real>(11).map_err(g)?.0,
                ops_per_s: 0.0,
                agg_bytes_per_s: r.get::<_, Option<Real>>(19).map_err(g)?.map(|x| x.0),
                span_ns: r.get::<_, Option<i64>>(20).map_err(g)?.map(|n| n as u64),
                overlap: r.get::<_, Option<Real>>(21).map_err(g)?.map(|x| x.0),
                max_sar_ops_per_s: 0.0,
                min_sar_ops_per_s: 0.0,
                agg_ops_per_s: None,
                resident_fraction: r.get::<_, Real>(12).map_err(g)?.0,
                prealloc_ns: r.get::<_, i64>(13).map_err(g)? as u64,
                flags: crate::json::from_str(&flags_json).map_err(|e| self.err(e))?,
                workers: workers.into(),
                env: crate::json::from_str(&env_json).map_err(|e| self.err(e))?,
                file_layout,
                syncs_in_flight_max: r.get::<_, Option<i64>>(17).map_err(g)?.map(|n| n as u64),
                hosts: vec![],
                servers,
                rate: self.opt_json(r.get::<_, Option<String>>(18).map_err(g)?)?,
                namespace: self.opt_json(r.get::<_, Option<String>>(22).map_err(g)?)?,
                latency_histogram_ns: self
                    .opt_json(r.get::<_, Option<String>>(23).map_err(g)?)?
                    .unwrap_or_default(),
                again_fraction: None,
                mix: self.opt_json(r.get::<_, Option<String>>(24).map_err(g)?)?,
            }
            .with_hosts()
            .with_again();
            let ph =
                points.get_mut(point as usize).and_then(|p| p.phases.get_mut(phase as usize)).ok_or_else(
                    || self.err(format!("run {} names a point or phase the experiment lacks", rep.run_id)),
                )?;
            if warmup { ph.warmups.push(rep) } else { ph.repetitions.push(rep) }
        }
        for p in &mut points {
            for ph in &mut p.phases {
                ph.refresh();
            }
        }
        Ok(ExperimentResult {
            schema_version: crate::results::SCHEMA_VERSION,
            iolab_version,
            experiment_id: id.to_string(),
            created_unix_s: created_unix_s.0,
            host,
            spec,
            points,
            design,
            findings: vec![],
            io500: None,
            not_run: self.opt_json(not_run_json)?,
        })
    }

    /// Every stored run id.
    pub fn run_ids(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare("SELECT run_id FROM runs").map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<String>>>().map_err(|e| self.err(e))
    }

    /// Whether a run with this id is stored.
    pub fn has_run(&self, run_id: &str) -> Result<bool> {
        self.conn
            .query_row("SELECT count(*) FROM runs WHERE run_id = ?1", [run_id], |r| r.get::<_, i64>(0))
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// The experiment a stored run belongs to, if the run is stored.
    pub fn experiment_of_run(&self, run_id: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT experiment_id FROM runs WHERE run_id = ?1", [run_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The host of a stored experiment, if the experiment is stored.
    pub fn experiment_host(&self, id: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT host_id FROM experiments WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Ids of the experiments made from any of these presets, newest first.
    pub fn ids_by_preset(&self, presets: &[&str]) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, json_extract(design_json, '$.preset.id') FROM experiments
                 ORDER BY created_unix_s DESC, id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut out = vec![];
        for row in rows {
            let (id, preset) = row.map_err(|e| self.err(e))?;
            if preset.is_some_and(|p| presets.contains(&p.as_str())) {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// Every complete measured phase (no warm-ups) of this host's stored runs, with what the
    /// point ran (engine, op, whether a strategy), its bytes and time: the rates estimates use.
    pub fn phase_samples(&self, host_id: &str) -> Result<Vec<PhaseSample>> {
        let mut kinds: std::collections::HashMap<String, Vec<serde_json::Value>> = Default::default();
        let mut stmt = self
            .conn
            .prepare("SELECT id, points_json FROM experiments WHERE host_id = ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([host_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (id, points) = row.map_err(|e| self.err(e))?;
            let points: Vec<serde_json::Value> = crate::json::from_str(&points).unwrap_or_default();
            kinds.insert(id, points.into_iter().map(|p| p["spec"].clone()).collect());
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.experiment_id, r.point, p.phase, p.total_bytes, p.time_ns
                 FROM runs r JOIN phase_results p ON p.run_id = r.run_id JOIN experiments e ON e.id = r.experiment_id
                 WHERE e.host_id = ?1 AND r.warmup = 0 AND p.status = 'complete' AND p.time_ns > 0",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([host_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = vec![];
        for row in rows {
            let (id, point, phase, bytes, time_ns) = row.map_err(|e| self.err(e))?;
            let Some(spec) = kinds.get(&id).and_then(|p| p.get(point as usize)) else { continue };
            let (Some(engine), Some(op)) =
                (spec["engine"].as_str(), spec["phases"][phase as usize]["op"].as_str())
            else {
                continue;
            };
            out.push(PhaseSample {
                engine: engine.to_string(),
                op: op.to_string(),
                strategy: !spec["strategy"].is_null(),
                bytes: bytes as u64,
                time_ns: time_ns as u64,
            });
        }
        Ok(out)
    }

    /// Rows in each table, for import reports and tests.
    pub fn counts(&self) -> Result<[(&'static str, u64); 5]> {
        let mut out =
            [("hosts", 0), ("experiments", 0), ("runs", 0), ("phase_results", 0), ("worker_results", 0)];
        for (table, n) in &mut out {
            *n = self
                .conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0))
                .map_err(|e| self.err(e))? as u64;
        }
        Ok(out)
    }

    /// A nullable JSON column.
    fn opt_json<T: serde::de::DeserializeOwned>(&self, s: Option<String>) -> Result<Option<T>> {
        s.map(|s| crate::json::from_str(&s).map_err(|e| self.err(e))).transpose()
    }

    pub(super) fn load_workers(&self, run_id: &str, phase: i64) -> Result<Vec<WorkerResult>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT worker, bytes, ops, time_ns, sync_ns, sync_calls, open_ns, close_ns, bytes_per_s,
                        latency_json, histogram_json, calls_json, max_inflight,
                        role, times_json, tid, commit_tids_json, rank, host, series_json, stonewall_ops,
                        start_offset_ns, alloc_ns, mpiio_hints_json, mix_json
                 FROM worker_results WHERE run_id = ?1 AND phase = ?2 ORDER BY worker",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run_id, phase], |r| {
                Ok((
                    WorkerResult {
                        worker: r.get(0)?,
                        bytes: r.get::<_, i64>(1)? as u64,
                        ops: r.get::<_, i64>(2)? as u64,
                        time_ns: r.get::<_, i64>(3)? as u64,
                        sync_ns: r.get::<_, i64>(4)? as u64,
                        sync_calls: r.get::<_, i64>(5)? as u64,
                        open_ns: r.get::<_, i64>(6)? as u64,
                        alloc_ns: r.get::<_, Option<i64>>(22)?.map(|n| n as u64),
                        mpiio_hints: None,
                        close_ns: r.get::<_, i64>(7)? as u64,
                        bytes_per_s: r.get::<_, Real>(8)?.0,
                        ops_per_s: 0.0,
                        latency_ns: LatencyNs::default(),
                        latency_histogram_ns: Buckets::default(),
                        periods: None,
                        trace: None,
                        calls: Default::default(),
                        max_inflight: r.get::<_, i64>(12)? as u64,
                        role: r.get::<_, Option<String>>(13)?.map(|s| role_named(&s)).transpose()?,
                        times_ns: None,
                        tid: r.get(15)?,
                        commit_tids: None,
                        rank: r.get(17)?,
                        host: r.get(18)?,
                        series: None,
                        stonewall_ops: r.get::<_, Option<i64>>(20)?.map(|n| n as u64),
                        start_offset_ns: r.get::<_, Option<i64>>(21)?.map(|n| n as u64).into(),
                        mix: None,
                    },
                    r.get::<_, String>(9)?,
                    r.get::<_, String>(10)?,
                    r.get::<_, String>(11)?,
                    r.get::<_, Option<String>>(14)?,
                    r.get::<_, Option<String>>(16)?,
                    r.get::<_, Option<String>>(19)?,
                    r.get::<_, Option<String>>(23)?,
                    r.get::<_, Option<String>>(24)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out: Vec<WorkerResult> = vec![];
        for row in rows {
            let (mut w, lat, hist, calls, times, tids, series, hints, mix) = row.map_err(|e| self.err(e))?;
            w.series = self.opt_json(series)?;
            w.mix = self.opt_json(mix)?;
            w.mpiio_hints = self.opt_json(hints)?;
            w.latency_ns = crate::json::from_str(&lat).map_err(|e| self.err(e))?;
            w.times_ns = times.map(|t| crate::json::from_str(&t).map_err(|e| self.err(e))).transpose()?;
            w.commit_tids = tids.map(|t| crate::json::from_str(&t).map_err(|e| self.err(e))).transpose()?;
            w.calls = crate::json::from_str(&calls).map_err(|e| self.err(e))?;
            w.latency_histogram_ns = crate::json::from_str(&hist).map_err(|e| self.err(e))?;
            w.periods = self.load_periods(run_id, phase, w.worker)?.map(Box::new);
            // Workers that made the same calls hold their counts once, as when measured.
            if let Some(last) = out.last() {
                w.calls.share_equal(&last.calls);
            }
            out.push(w);
        }
        Ok(out)
    }
}

/// A worker's strategy role from its stored name (column 13 of a worker row).
fn role_named(name: &str) -> rusqlite::Result<crate::spec::strategy::Role> {
    crate::spec::strategy::Role::named(name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            13,
            rusqlite::types::Type::Text,
            format!("no strategy role is named {name:?}").into(),
        )
    })
}
