//! The results store: one SQLite file holding experiments, their runs, and every phase and
//! worker figure. Each run is committed in one transaction as soon as it ends. WAL mode and a
//! busy timeout let several iolab processes share one store.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::env::host::HostFacts;
use crate::error::{Error, Result};
use crate::latency::Buckets;
use crate::results::Sink;
use crate::results::{ExperimentResult, LatencyNs, PointResult, Repetition, Status, WorkerResult};
use crate::spec::Spec;

pub mod import;
mod schema;
mod traces;

use schema::MIGRATIONS;
pub use schema::STORE_VERSION;
pub use traces::TraceRow;

/// The default store path: $IOLAB_DB, else $XDG_DATA_HOME/iolab/iolab.db, else
/// ~/.local/share/iolab/iolab.db.
pub fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os("IOLAB_DB").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("iolab").join("iolab.db")
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// One line of `iolab results list`.
#[derive(Debug, Clone)]
pub struct ExperimentRow {
    pub id: String,
    pub created_unix_s: f64,
    pub name: String,
    pub hostname: String,
    pub runs_complete: u64,
    pub runs_failed: u64,
    pub spec: Spec,
}

impl Store {
    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::Store { path: self.path.clone(), msg: e.to_string() }
    }

    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store> {
        let store_err = |msg: String| Error::Store { path: path.to_path_buf(), msg };
        check_kind(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| store_err(format!("cannot create its directory: {e}")))?;
        }
        let conn = Connection::open(path).map_err(|e| store_err(e.to_string()))?;
        let store = Store { conn, path: path.to_path_buf() };
        store.init().map_err(not_a_database)?;
        Ok(store)
    }

    /// Opens an existing store for reading only: nothing is created (a missing store is an
    /// error naming the path, exit 2) and nothing is written, so a store on read-only media
    /// or in a directory this user cannot write is read as it is (SQLite's `immutable` mode
    /// when the directory cannot hold the WAL index). A store of an older schema is migrated
    /// first when it is writable, and refused when it is not.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let store_err = |msg: String| Error::Store { path: path.to_path_buf(), msg };
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::spec(
                    "db",
                    path.display(),
                    "no store there (a command that only reads creates none: run an experiment first, or name the store with --db or IOLAB_DB)",
                ));
            }
            Err(e) => return Err(store_err(format!("cannot stat: {e}"))),
            Ok(_) => check_kind(path)?,
        }
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let conn = open_reader(path, !crate::env::sys::is_writable(dir))
            .map_err(|e| store_err(format!("cannot open it for reading: {e}")))?;
        let store = Store { conn, path: path.to_path_buf() };
        store.conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(|e| store.err(e))?;
        match store.version().map_err(not_a_database)? {
            STORE_VERSION => Ok(store),
            0 => Err(store.err("not an iolab store (an empty database)")),
            v if crate::env::sys::is_writable(dir) && writable_file(path) => {
                drop(store);
                Store::open(path).map_err(|e| match e {
                    Error::Store { path, msg } => {
                        Error::Store { path, msg: format!("schema version {v} needs migrating: {msg}") }
                    }
                    other => other,
                })
            }
            v => Err(store.err(format!(
                "schema version {v} is older than this iolab's ({STORE_VERSION}) and the store cannot be written here to bring it up to date"
            ))),
        }
    }

    fn init(&self) -> Result<()> {
        self.conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(|e| self.err(e))?;
        self.conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| self.err(e))?;
        self.conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| self.err(e))?;
        if self.version()? == STORE_VERSION {
            return Ok(());
        }
        // Migrate under the write lock, reading the version again: another iolab may have
        // created or migrated the store meanwhile.
        let tx = self.write_tx()?;
        let version = self.version()?;
        for v in version..STORE_VERSION {
            tx.execute_batch(MIGRATIONS[v as usize]).map_err(|e| self.err(e))?;
            tx.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1)",
                [(v + 1).to_string()],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// The schema version (0 for an empty database); refuses what is not an iolab store and
    /// versions newer than this build.
    fn version(&self) -> Result<i64> {
        let has_meta: bool = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(|e| self.err(e))?
            > 0;
        let version: i64 = if has_meta {
            self.conn
                .query_row("SELECT value FROM meta WHERE key='schema_version'", [], |r| r.get::<_, String>(0))
                .optional()
                .map_err(|e| self.err(e))?
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| self.err("not an iolab store (no schema version)"))?
        } else {
            let tables: i64 = self
                .conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(|e| self.err(e))?;
            if tables > 0 {
                return Err(self.err("not an iolab store (an SQLite database with other tables)"));
            }
            0
        };
        if version > STORE_VERSION {
            return Err(self.err(format!(
                "schema version {version} is newer than this iolab understands ({STORE_VERSION})"
            )));
        }
        Ok(version)
    }

    /// A write transaction that takes the write lock at once (BEGIN IMMEDIATE): a second
    /// iolab waits for it (busy timeout) instead of failing on a stale read snapshot.
    fn write_tx(&self) -> Result<rusqlite::Transaction<'_>> {
        rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))
    }

    fn json<T: serde::Serialize>(&self, v: &T) -> Result<String> {
        serde_json::to_string(v).map_err(|e| self.err(e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records an experiment's identity, host and spec (before its first run).
    pub fn insert_experiment(&self, exp: &ExperimentResult) -> Result<()> {
        let tx = self.write_tx()?;
        self.insert_experiment_in(&tx, exp)?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// [`Store::insert_experiment`] within the caller's transaction.
    fn insert_experiment_in(&self, tx: &Connection, exp: &ExperimentResult) -> Result<()> {
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
                exp.created_unix_s,
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
        reps: &[(usize, Repetition)],
        warmup: bool,
    ) -> Result<()> {
        let tx = self.write_tx()?;
        self.insert_run_in(&tx, experiment_id, point, run_id, reps, warmup)?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// [`Store::insert_run`] within the caller's transaction.
    fn insert_run_in(
        &self,
        tx: &Connection,
        experiment_id: &str,
        point: usize,
        run_id: &str,
        reps: &[(usize, Repetition)],
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
                crate::env::sys::unix_time_s(),
                warmup
            ],
        )
        .map_err(|e| self.err(e))?;
        for (phase, r) in reps {
            tx.execute(
                "INSERT INTO phase_results(run_id, phase, status, error, total_bytes, ops, time_ns,
                     max_sar_bytes_per_s, min_sar_bytes_per_s, avg_individual_bytes_per_s, resident_fraction,
                     prealloc_ns, flags_json, env_json, syncs_in_flight_max)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    run_id,
                    *phase as i64,
                    status_str(r.status),
                    r.error,
                    r.total_bytes as i64,
                    r.ops as i64,
                    r.time_ns as i64,
                    r.max_sar_bytes_per_s,
                    r.min_sar_bytes_per_s,
                    r.avg_individual_bytes_per_s,
                    r.resident_fraction,
                    r.prealloc_ns as i64,
                    self.json(&r.flags)?,
                    self.json(&r.env)?,
                    r.syncs_in_flight_max.map(|n| n as i64)
                ],
            )
            .map_err(|e| self.err(e))?;
            if let Some(layout) = &r.file_layout {
                tx.execute(
                    "INSERT INTO phase_layouts VALUES (?1, ?2, ?3)",
                    params![run_id, *phase as i64, self.json(layout)?],
                )
                .map_err(|e| self.err(e))?;
            }
            for w in &r.workers {
                tx.execute(
                    "INSERT INTO worker_results (run_id, phase, worker, bytes, ops, time_ns, sync_ns, sync_calls,
                         open_ns, close_ns, bytes_per_s, latency_json, histogram_json, calls_json, max_inflight,
                         role, times_json, tid, commit_tids_json)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                    params![
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
                        w.bytes_per_s,
                        self.json(&w.latency_ns)?,
                        self.json(&w.latency_histogram_ns)?,
                        self.json(&w.calls)?,
                        w.max_inflight as i64,
                        w.role,
                        w.times_ns.map(|t| self.json(&t)).transpose()?,
                        w.tid,
                        w.commit_tids.as_ref().map(|t| self.json(t)).transpose()?
                    ],
                )
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
                        .prepare_cached("INSERT INTO trace_ops VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
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
                                op.duration_ns as i64
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

    /// Experiments, newest first.
    pub fn list(&self) -> Result<Vec<ExperimentRow>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.id, e.created_unix_s, e.name, h.hostname, e.spec_json,
                        (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'complete'),
                        (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status != 'complete')
                 FROM experiments e JOIN hosts h ON h.host_id = e.host_id
                 ORDER BY e.created_unix_s DESC, e.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = vec![];
        for row in rows {
            let (id, created_unix_s, name, hostname, spec_json, ok, bad) = row.map_err(|e| self.err(e))?;
            out.push(ExperimentRow {
                id,
                created_unix_s,
                name,
                hostname,
                runs_complete: ok as u64,
                runs_failed: bad as u64,
                spec: serde_json::from_str(&spec_json).map_err(|e| self.err(e))?,
            });
        }
        Ok(out)
    }

    /// Finds an experiment id from a full id, a unique prefix, or `last`.
    pub fn resolve_id(&self, id: &str) -> Result<String> {
        let ids: Vec<String> = self.list()?.into_iter().map(|r| r.id).collect();
        if id == "last" {
            return ids.into_iter().next().ok_or_else(|| {
                Error::NotFound(format!("the store {} holds no experiments", self.path.display()))
            });
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
        let (created_unix_s, iolab_version, spec_json, host_json, points_json, design_json): (f64, String, String, String, String, String) = self
            .conn
            .query_row(
                "SELECT created_unix_s, iolab_version, spec_json, host_json, points_json, design_json FROM experiments WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or_else(|| Error::NotFound(format!("no experiment `{id}`")))?;
        let spec: Spec = serde_json::from_str(&spec_json).map_err(|e| self.err(e))?;
        let host: HostFacts = serde_json::from_str(&host_json).map_err(|e| self.err(e))?;
        let mut points: Vec<PointResult> = serde_json::from_str(&points_json).map_err(|e| self.err(e))?;
        let design = serde_json::from_str(&design_json).map_err(|e| self.err(e))?;

        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.run_id, r.point, r.rep, p.phase, p.status, p.error, p.total_bytes, p.ops, p.time_ns,
                        p.max_sar_bytes_per_s, p.min_sar_bytes_per_s, p.avg_individual_bytes_per_s,
                        p.resident_fraction, p.prealloc_ns, p.flags_json, p.env_json, r.warmup,
                        p.syncs_in_flight_max
                 FROM runs r JOIN phase_results p ON p.run_id = r.run_id
                 WHERE r.experiment_id = ?1 ORDER BY r.rep, r.finished_unix_s, r.point, p.phase",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([id]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let g = |e: rusqlite::Error| self.err(e);
            let run_id: String = r.get(0).map_err(g)?;
            let point: i64 = r.get(1).map_err(g)?;
            let phase: i64 = r.get(3).map_err(g)?;
            let flags_json: String = r.get(14).map_err(g)?;
            let env_json: String = r.get(15).map_err(g)?;
            let warmup: bool = r.get(16).map_err(g)?;
            let status: String = r.get(4).map_err(g)?;
            let workers = self.load_workers(&run_id, phase)?;
            let file_layout = self.load_layout(&run_id, phase)?;
            let rep = Repetition {
                rep: r.get(2).map_err(g)?,
                run_id,
                status: parse_status(&status),
                error: r.get(5).map_err(g)?,
                total_bytes: r.get::<_, i64>(6).map_err(g)? as u64,
                ops: r.get::<_, i64>(7).map_err(g)? as u64,
                time_ns: r.get::<_, i64>(8).map_err(g)? as u64,
                max_sar_bytes_per_s: r.get(9).map_err(g)?,
                min_sar_bytes_per_s: r.get(10).map_err(g)?,
                avg_individual_bytes_per_s: r.get(11).map_err(g)?,
                resident_fraction: r.get(12).map_err(g)?,
                prealloc_ns: r.get::<_, i64>(13).map_err(g)? as u64,
                flags: serde_json::from_str(&flags_json).map_err(|e| self.err(e))?,
                workers,
                env: serde_json::from_str(&env_json).map_err(|e| self.err(e))?,
                file_layout,
                syncs_in_flight_max: r.get::<_, Option<i64>>(17).map_err(g)?.map(|n| n as u64),
            };
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
            created_unix_s,
            host,
            spec,
            points,
            design,
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

    fn load_workers(&self, run_id: &str, phase: i64) -> Result<Vec<WorkerResult>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT worker, bytes, ops, time_ns, sync_ns, sync_calls, open_ns, close_ns, bytes_per_s,
                        latency_json, histogram_json, calls_json, max_inflight,
                        role, times_json, tid, commit_tids_json
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
                        close_ns: r.get::<_, i64>(7)? as u64,
                        bytes_per_s: r.get(8)?,
                        latency_ns: LatencyNs::default(),
                        latency_histogram_ns: Buckets::default(),
                        periods: None,
                        trace: None,
                        calls: Default::default(),
                        max_inflight: r.get::<_, i64>(12)? as u64,
                        role: r.get(13)?,
                        times_ns: None,
                        tid: r.get(15)?,
                        commit_tids: None,
                    },
                    r.get::<_, String>(9)?,
                    r.get::<_, String>(10)?,
                    r.get::<_, String>(11)?,
                    r.get::<_, Option<String>>(14)?,
                    r.get::<_, Option<String>>(16)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = vec![];
        for row in rows {
            let (mut w, lat, hist, calls, times, tids) = row.map_err(|e| self.err(e))?;
            w.latency_ns = serde_json::from_str(&lat).map_err(|e| self.err(e))?;
            w.times_ns = times.map(|t| serde_json::from_str(&t).map_err(|e| self.err(e))).transpose()?;
            w.commit_tids = tids.map(|t| serde_json::from_str(&t).map_err(|e| self.err(e))).transpose()?;
            w.calls = serde_json::from_str(&calls).map_err(|e| self.err(e))?;
            w.latency_histogram_ns = serde_json::from_str(&hist).map_err(|e| self.err(e))?;
            w.periods = self.load_periods(run_id, phase, w.worker)?;
            out.push(w);
        }
        Ok(out)
    }
}

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Complete => "complete",
        Status::Failed => "failed",
        Status::Interrupted => "interrupted",
    }
}

fn parse_status(s: &str) -> Status {
    match s {
        "complete" => Status::Complete,
        "interrupted" => Status::Interrupted,
        _ => Status::Failed,
    }
}

/// Refuses a store path that exists and is not a regular file (a FIFO would block SQLite's
/// open, a device is nobody's store): exit 2, naming the path and what it is.
fn check_kind(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(Error::spec(
            "db",
            path.display(),
            format!(
                "{}, not a store (a store is a regular SQLite file)",
                crate::env::input::kind_of(m.file_type())
            ),
        )),
        _ => Ok(()),
    }
}

/// "file is not a database" in words that say what was opened.
fn not_a_database(e: Error) -> Error {
    match e {
        Error::Store { path, msg } if msg.contains("not a database") => {
            Error::Store { path, msg: "not an iolab store (the file is not an SQLite database)".into() }
        }
        other => other,
    }
}

fn writable_file(path: &Path) -> bool {
    std::fs::OpenOptions::new().append(true).open(path).is_ok()
}

/// A `file:` URI for SQLite, with every byte outside the unreserved set and `/` escaped.
fn file_uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri + query
}

/// A read-only connection to the SQLite file at `path`. A WAL-mode database needs its `-shm`
/// index beside it even to be read; when `dir_read_only` and there is no write-ahead log
/// holding data, the file is opened `immutable` (nothing beside it is created or locked).
/// A log that holds data is read through its index, which must then exist.
pub(crate) fn open_reader(path: &Path, dir_read_only: bool) -> rusqlite::Result<Connection> {
    use rusqlite::OpenFlags;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let log_has_data = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let query = if dir_read_only && !log_has_data { "?immutable=1" } else { "?mode=ro" };
    Connection::open_with_flags(file_uri(path, query), flags)
}

impl Sink for Store {
    fn begin(&mut self, exp: &ExperimentResult) -> Result<()> {
        self.insert_experiment(exp)
    }
    fn run_done(
        &mut self,
        exp: &ExperimentResult,
        point: usize,
        run_id: &str,
        reps: &[(usize, Repetition)],
    ) -> Result<()> {
        let warmup = exp.points[point].phases.iter().any(|ph| ph.warmups.iter().any(|r| r.run_id == run_id));
        self.insert_run(&exp.experiment_id, point, run_id, reps, warmup)
    }
}

#[cfg(test)]
mod tests {
    use super::schema::SCHEMA_V1;
    use super::*;

    /// A store written by the first schema is migrated in place: its rows stay, the new
    /// tables appear, and the version moves to the current one.
    #[test]
    fn a_version_1_store_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA_V1).unwrap();
            conn.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '1')", []).unwrap();
            conn.execute("INSERT INTO hosts VALUES ('h', 'host', '{}')", []).unwrap();
        }
        let store = Store::open(&path).unwrap();
        let version: String = store
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, STORE_VERSION.to_string());
        let hosts: i64 = store.conn.query_row("SELECT count(*) FROM hosts", [], |r| r.get(0)).unwrap();
        assert_eq!(hosts, 1);
        for table in ["trace_ops", "worker_periods", "phase_layouts"] {
            let n: i64 = store
                .conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [table],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n, 1, "{table}");
        }
        drop(store);
        // Opening again changes nothing.
        Store::open(&path).unwrap();
    }

    #[test]
    fn a_version_1_store_is_migrated_and_its_workers_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let c = Connection::open(&path).unwrap();
            // A bare worker row is enough here; its run and experiment do not matter.
            c.pragma_update(None, "foreign_keys", "OFF").unwrap();
            c.execute_batch(SCHEMA_V1).unwrap();
            c.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '1')", []).unwrap();
            c.execute(
                r#"INSERT INTO worker_results VALUES ('r1', 0, 0, 4096, 1, 1000, 0, 0, 10, 10, 4.096e9,
                   '{"p50":1,"p90":1,"p99":1,"p999":1,"max":1,"mean":1.0}', '[]')"#,
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let version: String = store
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, STORE_VERSION.to_string());
        let w = &store.load_workers("r1", 0).unwrap()[0];
        assert_eq!((w.bytes, w.ops, w.time_ns), (4096, 1, 1000));
        assert!(w.calls.is_empty(), "old rows have no call counts");
        assert_eq!(w.max_inflight, 0, "old rows did not record it");
    }
}
