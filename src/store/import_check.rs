//! What an import checks before it stores anything, and the budget it runs within: another
//! store holds tables only (no view, no trigger: a recursive view once spun an import
//! forever), no more rows and no larger cells than the documented caps, no more traced ops
//! than their cap and the room where they go, each naming a phase and worker of its run; an
//! experiment's JSON no more bytes than its cap; every run belongs to one experiment; and every
//! imported figure agrees with the raw fields it is computed from. SQLite's progress handler ends any query
//! at a stop signal or when the time budget is spent.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Repetition, Status};
use crate::units::fmt_size;

/// The most bytes of an experiment's JSON an import reads.
pub const JSON_CAP: u64 = 256 << 20;
/// The most bytes one cell of another store may hold (a JSON column: a point list, a
/// worker's histogram or series).
pub const CELL_CAP: u64 = 16 << 20;
/// The most rows an import reads from another store's tables of figures (its traced ops are
/// counted apart, against [`TRACE_OP_CAP`]).
pub const ROW_CAP: u64 = 10_000_000;
/// The most traced ops (rows of `trace_ops`) an import carries.
pub const TRACE_OP_CAP: u64 = 50_000_000;
/// The most worker rows one experiment of another store may have (one experiment is held in
/// memory at a time).
pub const EXPERIMENT_WORKER_CAP: u64 = 200_000;
/// The longest an import may take.
pub const TIME_BUDGET: Duration = Duration::from_secs(30 * 60);

fn bad(src: &Path, reason: impl Into<String>) -> Error {
    Error::spec("import", crate::text::escape_path(src), reason)
}

/// Makes every statement on `conn` stop (SQLITE_INTERRUPT) at a stop signal or past
/// `deadline`; the error is then [`interrupted`]'s.
pub fn bound(conn: &mut Connection, deadline: Instant) {
    // Installing a handler fails only on a closed connection, which then fails its queries.
    let _ = conn.progress_handler(
        10_000,
        Some(move || crate::env::signals::stop_requested() || Instant::now() > deadline),
    );
}

/// The error of a statement the progress handler stopped: the stop signal, or the time budget
/// (naming the file); any other error as `other` makes it.
pub fn interrupted(src: &Path, e: rusqlite::Error, other: impl FnOnce(rusqlite::Error) -> Error) -> Error {
    match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::OperationInterrupted => {
            match crate::env::signals::pending() {
                Some(sig) => Error::Interrupted(sig),
                None => bad(
                    src,
                    format!(
                        "reading it took longer than the {} min an import may take",
                        TIME_BUDGET.as_secs() / 60
                    ),
                ),
            }
        }
        _ => other(e),
    }
}

/// Checks another store before it is copied: its shape (tables only), at most [`ROW_CAP`]
/// rows in its tables of figures and no cell over [`CELL_CAP`] bytes. Returns how many traced
/// ops it holds.
pub fn check_store(src: &Path, conn: &Connection) -> Result<u64> {
    check_store_within(src, conn, ROW_CAP, CELL_CAP)
}

fn check_store_within(src: &Path, conn: &Connection, row_cap: u64, cell_cap: u64) -> Result<u64> {
    let q = |e: rusqlite::Error| interrupted(src, e, |e| bad(src, format!("cannot read it as a store: {e}")));
    super::schema::check_shape(conn, 0).map_err(|m| bad(src, m))?;
    let (mut rows, mut traced) = (0u64, 0u64);
    for table in super::schema::TABLES {
        let cols: Vec<String> = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(q)?;
        if cols.is_empty() {
            continue;
        }
        let widest = cols.iter().map(|c| format!("ifnull(octet_length(\"{c}\"), 0)")).collect::<Vec<_>>();
        let widest =
            if widest.len() == 1 { widest[0].clone() } else { format!("max({})", widest.join(", ")) };
        let (n, cell): (i64, Option<i64>) = conn
            .query_row(&format!("SELECT count(*), max({widest}) FROM \"{table}\""), [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(q)?;
        if *table == "trace_ops" {
            traced = n.max(0) as u64;
        } else {
            rows += n.max(0) as u64;
        }
        if rows > row_cap {
            return Err(bad(
                src,
                format!(
                    "it holds more than {row_cap} rows in the tables an import reads ({table} reached {rows})"
                ),
            ));
        }
        let cell = cell.unwrap_or(0).max(0) as u64;
        if cell > cell_cap {
            return Err(bad(
                src,
                format!(
                    "a cell of its table {table} holds {}, more than the {} an import reads in one",
                    fmt_size(cell),
                    fmt_size(cell_cap)
                ),
            ));
        }
    }
    Ok(traced)
}

/// Whether the traced ops another store holds can come along into the store at `db`: at most
/// [`TRACE_OP_CAP`] of them, and room where `db` goes for them (at least
/// [`RECORD_BYTES`](crate::latency::trace::RECORD_BYTES) per op, as a run's preflight counts
/// them) and for the copy of the other store an import reads through (`copy_bytes`), with the
/// preflight's margin. Refused by name before anything is copied or stored.
pub fn check_traces(src: &Path, db: &Path, ops: u64, copy_bytes: u64) -> Result<()> {
    let without = "or import the rest without them (--no-traces)";
    if ops > TRACE_OP_CAP {
        return Err(bad(
            src,
            format!(
                "its runs hold {ops} traced ops, more than the {TRACE_OP_CAP} an import carries; {without}"
            ),
        ));
    }
    let mut dir = db.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    while !dir.is_dir() {
        dir = dir.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    }
    let (free, _) = crate::env::sys::fs_free(dir).map_err(|e| Error::io("statvfs", dir, None, e))?;
    let rows = ops.saturating_mul(crate::latency::trace::RECORD_BYTES as u64);
    let need = rows.saturating_add(copy_bytes);
    let want = need.saturating_add(crate::target::preflight::margin(need));
    if want > free {
        return Err(bad(
            src,
            format!(
                "its runs hold {ops} traced ops: at least {} in the store ({} B per op) besides the {} copy of it an import reads through, {} with the margin of 5% + 64 MiB, but the file system holding {} has {} free; import into a store with more room (--db), {without}",
                fmt_size(rows),
                crate::latency::trace::RECORD_BYTES,
                fmt_size(copy_bytes),
                fmt_size(want),
                crate::text::escape_path(dir),
                fmt_size(free)
            ),
        ));
    }
    // A store on tmpfs or ramfs takes memory, whatever the file system's size says.
    if let Some(why) = crate::target::preflight::memory_shortfall(dir, need, 0) {
        return Err(bad(
            src,
            format!(
                "its runs hold {ops} traced ops: at least {} in the store ({} B per op) besides the {} copy of it an import reads through: {why}; import into a store on a disk (--db), {without}",
                fmt_size(rows),
                crate::latency::trace::RECORD_BYTES,
                fmt_size(copy_bytes),
            ),
        ));
    }
    Ok(())
}

/// Refuses the traced ops of run `run_id` in the attached store `other` (schema name) that
/// name no phase and worker of the run, or hold a negative figure: what the trace readers rely
/// on, checked before they are stored.
pub fn check_trace_rows(src: &Path, conn: &Connection, other: &str, run_id: &str) -> Result<()> {
    let q = |e: rusqlite::Error| interrupted(src, e, |e| bad(src, format!("cannot read it as a store: {e}")));
    let stray: i64 = conn
        .query_row(
            &format!(
                "SELECT count(*) FROM {other}.trace_ops t WHERE t.run_id = ?1
                   AND (t.op < 0 OR t.file < 0 OR t.offset_bytes < 0 OR t.start_ns < 0 OR t.duration_ns < 0
                        OR NOT EXISTS (SELECT 1 FROM {other}.worker_results w
                                       WHERE w.run_id = t.run_id AND w.phase = t.phase AND w.worker = t.worker))"
            ),
            [run_id],
            |r| r.get(0),
        )
        .map_err(q)?;
    if stray > 0 {
        return Err(bad(
            src,
            format!(
                "run {run_id}: {stray} of its traced ops name a phase or worker the run does not have, or hold a negative figure"
            ),
        ));
    }
    Ok(())
}

/// Refuses an experiment of another store with more than [`EXPERIMENT_WORKER_CAP`] worker rows,
/// before it is read into memory.
pub fn check_experiment_size(src: &Path, conn: &Connection, id: &str) -> Result<()> {
    let q = |e: rusqlite::Error| interrupted(src, e, |e| bad(src, format!("cannot read it as a store: {e}")));
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM worker_results w JOIN runs r ON r.run_id = w.run_id WHERE r.experiment_id = ?1",
            [id],
            |r| r.get(0),
        )
        .map_err(q)?;
    if n as u64 > EXPERIMENT_WORKER_CAP {
        return Err(bad(
            src,
            format!(
                "its experiment {id} holds {n} worker rows, more than the {EXPERIMENT_WORKER_CAP} an import reads in one"
            ),
        ));
    }
    Ok(())
}

/// Equal figures: the same number, both NaN, or within a relative 1e-9 (the rounding of a sum
/// taken in another order).
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || ((a - b).abs() <= 1e-9 * a.abs().max(b.abs()) && a.is_finite())
}

/// Every figure of a complete repetition agrees with the raw fields it comes from: each
/// worker's rate with its bytes and time (no bytes in no time), the repetition's bytes, ops,
/// time and rates with its workers'. Also: a run id names one run, in one point.
pub fn check_figures(src: &Path, exp: &ExperimentResult) -> Result<()> {
    let mut point_of: std::collections::HashMap<&str, usize> = Default::default();
    for (pi, p) in exp.points.iter().enumerate() {
        for ph in &p.phases {
            for r in ph.repetitions.iter().chain(&ph.warmups) {
                if let Some(&other) = point_of.get(r.run_id.as_str()).filter(|&&o| o != pi) {
                    return Err(Error::spec(
                        "run_id",
                        &r.run_id,
                        format!(
                            "in {}: the run is in points {other} and {pi}; a run belongs to one point",
                            crate::text::escape_path(src)
                        ),
                    ));
                }
                point_of.insert(&r.run_id, pi);
                check_rep(src, &ph.name, r)?;
            }
        }
    }
    Ok(())
}

fn check_rep(src: &Path, phase: &str, r: &Repetition) -> Result<()> {
    if r.status != Status::Complete || r.workers.is_empty() {
        return Ok(());
    }
    let wrong = |what: String| bad(src, format!("run {} phase {phase}: {what}", r.run_id));
    for w in &r.workers {
        if w.time_ns == 0 && w.bytes > 0 {
            return Err(wrong(format!("worker {} moved {} bytes in no time", w.worker, w.bytes)));
        }
        let rate = crate::stats::individual_rate(w.bytes, w.time_ns);
        if !same(w.bytes_per_s, rate) {
            return Err(wrong(format!(
                "worker {}'s bytes_per_s is {}, but its {} bytes in {} ns are {rate}",
                w.worker, w.bytes_per_s, w.bytes, w.time_ns
            )));
        }
    }
    let rates = crate::stats::rates(r.workers.iter().map(|w| (w.bytes, w.time_ns)));
    let total = r.workers.iter().try_fold(0u64, |a, w| a.checked_add(w.bytes));
    let ops = r.workers.iter().try_fold(0u64, |a, w| a.checked_add(w.ops));
    let tmax = r.workers.iter().map(|w| w.time_ns).max().unwrap_or(0);
    let checks: [(&str, bool, String); 6] = [
        ("total_bytes", total == Some(r.total_bytes), format!("{:?}", total)),
        ("ops", ops == Some(r.ops), format!("{:?}", ops)),
        ("time_ns", tmax == r.time_ns, tmax.to_string()),
        ("max_sar_bytes_per_s", same(r.max_sar_bytes_per_s, rates.max_sar), rates.max_sar.to_string()),
        ("min_sar_bytes_per_s", same(r.min_sar_bytes_per_s, rates.min_sar), rates.min_sar.to_string()),
        (
            "avg_individual_bytes_per_s",
            same(r.avg_individual_bytes_per_s, rates.avg_individual),
            rates.avg_individual.to_string(),
        ),
    ];
    for (field, ok, want) in checks {
        if !ok {
            let have = match field {
                "total_bytes" => r.total_bytes.to_string(),
                "ops" => r.ops.to_string(),
                "time_ns" => r.time_ns.to_string(),
                "max_sar_bytes_per_s" => r.max_sar_bytes_per_s.to_string(),
                "min_sar_bytes_per_s" => r.min_sar_bytes_per_s.to_string(),
                _ => r.avg_individual_bytes_per_s.to_string(),
            };
            return Err(wrong(format!("{field} is {have}, but its workers give {want}")));
        }
    }
    Ok(())
}

/// A reader that stops at a stop signal (a large JSON parse stops within one read).
pub struct StopReader<R>(pub R);

impl<R: std::io::Read> std::io::Read for StopReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if crate::env::signals::stop_requested() {
            // Not ErrorKind::Interrupted: readers retry on that.
            return Err(std::io::Error::other("stopped by a signal"));
        }
        self.0.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The progress handler ends a query that would never end, at the deadline, with the
    /// budget named; the row and cell caps refuse by name with the figures.
    #[test]
    fn budgets_and_caps() {
        let src = Path::new("other.db");
        let mut c = Connection::open_in_memory().unwrap();
        bound(&mut c, Instant::now());
        let e = c
            .query_row(
                "WITH RECURSIVE k(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM k) SELECT count(*) FROM k",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_err();
        let e = interrupted(src, e, |e| Error::Run(e.to_string())).to_string();
        assert!(
            e.contains("other.db") && e.contains("took longer than the 30 min an import may take"),
            "{e}"
        );

        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE hosts (host_id TEXT, facts_json TEXT);
             WITH RECURSIVE k(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM k WHERE x < 10)
             INSERT INTO hosts SELECT x, printf('%.*c', x * 10, 'y') FROM k;",
        )
        .unwrap();
        assert_eq!(check_store_within(src, &c, 10, 100).unwrap(), 0);
        let e = check_store_within(src, &c, 9, 100).unwrap_err().to_string();
        assert!(e.contains("more than 9 rows in the tables an import reads (hosts reached 10)"), "{e}");
        let e = check_store_within(src, &c, 10, 99).unwrap_err().to_string();
        assert!(e.contains("a cell of its table hosts holds 100 B, more than the 99 B"), "{e}");
        c.execute_batch("CREATE VIEW runs AS SELECT 1").unwrap();
        let e = check_store_within(src, &c, 10, 100).unwrap_err().to_string();
        assert!(e.contains("it holds a view `runs`"), "{e}");
    }
}
