//! The store's SQLite schema, one migration per version.

/// The schema version this build writes. Older stores are migrated; newer ones refused.
pub const STORE_VERSION: i64 = 17;

pub(super) const SCHEMA_V1: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE hosts (
    host_id TEXT PRIMARY KEY,
    hostname TEXT NOT NULL,
    facts_json TEXT NOT NULL
);
CREATE TABLE experiments (
    id TEXT PRIMARY KEY,
    created_unix_s REAL NOT NULL,
    name TEXT NOT NULL,
    host_id TEXT NOT NULL REFERENCES hosts(host_id),
    iolab_version TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    host_json TEXT NOT NULL,
    points_json TEXT NOT NULL
);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    experiment_id TEXT NOT NULL REFERENCES experiments(id),
    point INTEGER NOT NULL,
    rep INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    finished_unix_s REAL NOT NULL
);
CREATE INDEX runs_by_experiment ON runs(experiment_id, point, rep);
CREATE TABLE phase_results (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    phase INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    total_bytes INTEGER NOT NULL,
    ops INTEGER NOT NULL,
    time_ns INTEGER NOT NULL,
    max_sar_bytes_per_s REAL NOT NULL,
    min_sar_bytes_per_s REAL NOT NULL,
    avg_individual_bytes_per_s REAL NOT NULL,
    resident_fraction REAL NOT NULL,
    prealloc_ns INTEGER NOT NULL,
    flags_json TEXT NOT NULL,
    PRIMARY KEY (run_id, phase)
);
CREATE TABLE worker_results (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    phase INTEGER NOT NULL,
    worker INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    ops INTEGER NOT NULL,
    time_ns INTEGER NOT NULL,
    sync_ns INTEGER NOT NULL,
    sync_calls INTEGER NOT NULL,
    open_ns INTEGER NOT NULL,
    close_ns INTEGER NOT NULL,
    bytes_per_s REAL NOT NULL,
    latency_json TEXT NOT NULL,
    histogram_json TEXT NOT NULL,
    PRIMARY KEY (run_id, phase, worker)
);
";

/// Version 2: how each experiment was built (sweep axes, headline, preset), warm-up runs, and
/// the machine's state around each run (settle, priming, load, device I/O).
const SCHEMA_V2_EXPERIMENTS: &str = "
ALTER TABLE experiments ADD COLUMN design_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN warmup INTEGER NOT NULL DEFAULT 0;
ALTER TABLE phase_results ADD COLUMN env_json TEXT NOT NULL DEFAULT '{}';
";

/// Version 3: per-op traces, the periods found in them, and the file layout after write phases.
const SCHEMA_V3_TRACES: &str = "
CREATE TABLE trace_ops (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    phase INTEGER NOT NULL,
    worker INTEGER NOT NULL,
    op INTEGER NOT NULL,
    file INTEGER NOT NULL,
    offset_bytes INTEGER NOT NULL,
    start_ns INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL,
    PRIMARY KEY (run_id, phase, worker, op)
) WITHOUT ROWID;
CREATE TABLE worker_periods (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    phase INTEGER NOT NULL,
    worker INTEGER NOT NULL,
    periods_json TEXT NOT NULL,
    PRIMARY KEY (run_id, phase, worker)
);
CREATE TABLE phase_layouts (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    phase INTEGER NOT NULL,
    layout_json TEXT NOT NULL,
    PRIMARY KEY (run_id, phase)
);
";

/// Version 4: per-worker system call counts (JSON object) and the most ops in flight at once.
const SCHEMA_V4_CALLS: &str = "
ALTER TABLE worker_results ADD COLUMN calls_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE worker_results ADD COLUMN max_inflight INTEGER NOT NULL DEFAULT 0;
";

/// Version 5: compute/I-O overlap strategies: each worker's role, where its time went, its
/// thread and the threads of its commits; per run, the most commits in flight at once.
const SCHEMA_V5_STRATEGIES: &str = "
ALTER TABLE worker_results ADD COLUMN role TEXT;
ALTER TABLE worker_results ADD COLUMN times_json TEXT;
ALTER TABLE worker_results ADD COLUMN tid INTEGER;
ALTER TABLE worker_results ADD COLUMN commit_tids_json TEXT;
ALTER TABLE phase_results ADD COLUMN syncs_in_flight_max INTEGER;
";

/// Version 6: MPI runs: the rank each worker ran on and that rank's host.
const SCHEMA_V6_RANKS: &str = "
ALTER TABLE worker_results ADD COLUMN rank INTEGER;
ALTER TABLE worker_results ADD COLUMN host TEXT;
";

/// Version 7: the rate over time: each worker's bytes per interval, and each repetition's
/// summed series with its steady window (JSON; NULL in rows written before).
const SCHEMA_V7_SERIES: &str = "
ALTER TABLE worker_results ADD COLUMN series_json TEXT;
ALTER TABLE phase_results ADD COLUMN rate_json TEXT;
";

/// Version 8: I/O-server ranks: what each server did in each repetition of each phase.
const SCHEMA_V8_SERVERS: &str = "
CREATE TABLE server_results (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    phase INTEGER NOT NULL,
    server INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    host TEXT NOT NULL,
    store TEXT NOT NULL,
    files INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    write_bytes INTEGER NOT NULL,
    read_bytes INTEGER NOT NULL,
    time_ns INTEGER NOT NULL,
    busy_ns INTEGER NOT NULL,
    disk_ns INTEGER NOT NULL,
    net_ns INTEGER NOT NULL,
    resident_fraction REAL,
    device_read_bytes INTEGER NOT NULL,
    device_write_bytes INTEGER NOT NULL,
    PRIMARY KEY (run_id, phase, server)
);
";

/// Version 9: tuning runs (`iolab tune`): per tuning experiment, its job's name and the record
/// of its race (candidates, rounds, verdict, recommended spec) as JSON.
const SCHEMA_V9_TUNINGS: &str = "
CREATE TABLE tunings (
    experiment_id TEXT PRIMARY KEY REFERENCES experiments(id),
    job TEXT NOT NULL,
    updated_unix_s REAL NOT NULL,
    tuning_json TEXT NOT NULL
);
";

/// Version 10: time-bounded phases: the ops each worker had done when the stonewall came.
const SCHEMA_V10_STONEWALL: &str = "
ALTER TABLE worker_results ADD COLUMN stonewall_ops INTEGER;
";

/// Version 11: when the workers ran, on the phase's common clock: IOR's aggregate rate, the
/// span from the first open to the last close, the workers' overlap, and each worker's start
/// (NULL in rows written before).
const SCHEMA_V11_SPAN: &str = "
ALTER TABLE phase_results ADD COLUMN agg_bytes_per_s REAL;
ALTER TABLE phase_results ADD COLUMN span_ns INTEGER;
ALTER TABLE phase_results ADD COLUMN overlap REAL;
ALTER TABLE worker_results ADD COLUMN start_offset_ns INTEGER;
";

/// Version 12: the metadata phases: each repetition's namespace state (its cache state and
/// what a find found) as JSON.
const SCHEMA_V12_NAMESPACE: &str = "
ALTER TABLE phase_results ADD COLUMN namespace_json TEXT;
";

/// Version 13: each worker's buffer allocation, timed apart from its open (NULL in rows
/// written before, and where nothing is allocated).
const SCHEMA_V13_ALLOC: &str = "
ALTER TABLE worker_results ADD COLUMN alloc_ns INTEGER;
";

/// Version 14: the MPI-IO hints the MPI-IO layer applied to each worker's file (JSON; NULL
/// for other engines and in rows written before).
const SCHEMA_V14_HINTS: &str = "
ALTER TABLE worker_results ADD COLUMN mpiio_hints_json TEXT;
";

/// Version 15: a repetition's latency histogram of all its workers merged, when the workers
/// do not each keep theirs (MPI ranks).
const SCHEMA_V15_MERGED_LATENCY: &str = "
ALTER TABLE phase_results ADD COLUMN latency_histogram_json TEXT;
";

/// Version 16: the runs an experiment planned and did not run when it ended early, and why
/// (JSON; NULL when every run ran, and in rows written before).
const SCHEMA_V16_NOT_RUN: &str = "
ALTER TABLE experiments ADD COLUMN not_run_json TEXT;
";

/// Version 17: the workload apart: a repetition's reads and writes, block sizes, response
/// times and schedule (JSON), each worker's counts of them, and each traced op's length,
/// direction and response time (NULL in rows written before).
const SCHEMA_V17_MIX: &str = "
ALTER TABLE phase_results ADD COLUMN mix_json TEXT;
ALTER TABLE worker_results ADD COLUMN mix_json TEXT;
ALTER TABLE trace_ops ADD COLUMN len_bytes INTEGER;
ALTER TABLE trace_ops ADD COLUMN write INTEGER;
ALTER TABLE trace_ops ADD COLUMN response_ns INTEGER;
";

/// Migrations: entry i brings a store from version i to i + 1.
pub(super) const MIGRATIONS: &[&str] = &[
    SCHEMA_V1,
    SCHEMA_V2_EXPERIMENTS,
    SCHEMA_V3_TRACES,
    SCHEMA_V4_CALLS,
    SCHEMA_V5_STRATEGIES,
    SCHEMA_V6_RANKS,
    SCHEMA_V7_SERIES,
    SCHEMA_V8_SERVERS,
    SCHEMA_V9_TUNINGS,
    SCHEMA_V10_STONEWALL,
    SCHEMA_V11_SPAN,
    SCHEMA_V12_NAMESPACE,
    SCHEMA_V13_ALLOC,
    SCHEMA_V14_HINTS,
    SCHEMA_V15_MERGED_LATENCY,
    SCHEMA_V16_NOT_RUN,
    SCHEMA_V17_MIX,
];

/// Every table of the current schema.
pub const TABLES: &[&str] = &[
    "meta",
    "hosts",
    "experiments",
    "runs",
    "phase_results",
    "worker_results",
    "trace_ops",
    "worker_periods",
    "phase_layouts",
    "server_results",
    "tunings",
];

/// The shape of a store, checked whenever one is opened, before any statement reads a table:
/// tables and their indexes only, never a view, a trigger or a virtual table (a recursive view
/// `runs` once made every command that read it spin until a signal, and `run --db` measure
/// before failing to store); and, at `version` (0: a new store, nothing to find yet), every
/// table of that version, as a table. The reason, when it is not an iolab store's shape.
pub fn check_shape(conn: &rusqlite::Connection, version: i64) -> std::result::Result<(), String> {
    let q = |e: rusqlite::Error| format!("cannot read its schema: {e}");
    let mut stmt = conn
        .prepare(
            "SELECT type, name, ifnull(sql, '') FROM sqlite_master
             WHERE type IN ('view', 'trigger') OR (type = 'table' AND sql LIKE 'CREATE VIRTUAL%')
             ORDER BY type, name",
        )
        .map_err(q)?;
    let other: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(q)?
        .collect::<rusqlite::Result<_>>()
        .map_err(q)?;
    if let Some((kind, name, _)) = other.first() {
        let kind = if kind == "table" { "virtual table" } else { kind.as_str() };
        return Err(format!(
            "it holds a {kind} `{}`; an iolab store holds tables only, and iolab reads nothing else",
            crate::text::one_line(name)
        ));
    }
    let expected: &[&str] = match version {
        0 => &[],
        STORE_VERSION => TABLES,
        // An older store: its tables come with the migrations, which make whatever is missing.
        _ => &["meta"],
    };
    for table in expected {
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .map_err(q)?;
        if n == 0 {
            return Err(format!(
                "its table `{table}` is missing (an iolab store of version {version} has it)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_migration_counts_in_the_version() {
        assert_eq!(super::STORE_VERSION as usize, super::MIGRATIONS.len());
    }
}
