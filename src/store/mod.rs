//! The results store: one SQLite file holding experiments, their runs, and every phase and
//! worker figure. Each run is committed in one transaction as soon as it ends. WAL mode and a
//! busy timeout let several iolab processes share one store.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};

use crate::error::{Error, Result};
use crate::results::Sink;
use crate::results::{ExperimentResult, Repetition, Status};
use crate::spec::Spec;

pub mod import;
pub mod import_check;
mod read;
mod real;
mod schema;
mod servers;
mod traces;
mod tune;
mod write;

pub use read::PhaseSample;
use schema::MIGRATIONS;
pub use schema::STORE_VERSION;
pub use traces::TraceRow;

/// The default store path: $IOLAB_DB, else $XDG_DATA_HOME/iolab/iolab.db, else
/// $HOME/.local/share/iolab/iolab.db, following the XDG rules: a relative XDG_DATA_HOME is
/// ignored, and when neither gives an absolute path there is no default (an error saying to
/// name the store), never a store made under whatever the current directory is.
pub fn default_path() -> Result<PathBuf> {
    default_path_in(|k| std::env::var_os(k))
}

fn default_path_in(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf> {
    if let Some(p) = var("IOLAB_DB").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let absolute = |k: &str| var(k).map(PathBuf::from).filter(|p| p.is_absolute());
    let data = absolute("XDG_DATA_HOME").or_else(|| absolute("HOME").map(|h| h.join(".local/share")));
    match data {
        Some(d) => Ok(d.join("iolab").join("iolab.db")),
        None => {
            let shown = |k: &str| match var(k) {
                None => "unset".to_string(),
                Some(v) if v.is_empty() => "empty".to_string(),
                Some(v) => format!("`{}`, not absolute", crate::text::escape_path(Path::new(&v))),
            };
            Err(Error::spec(
                "db",
                "",
                format!(
                    "no default store: XDG_DATA_HOME is {} and HOME is {}; name the store with --db PATH or IOLAB_DB",
                    shown("XDG_DATA_HOME"),
                    shown("HOME")
                ),
            ))
        }
    }
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
    /// Runs it planned and did not run (it ended early).
    pub runs_not_run: u64,
    /// The first point's spec.
    pub spec: Spec,
    /// Its sweep: the axes say what the points change.
    pub design: crate::results::Design,
    /// The Slurm job it ran in (its host facts' `slurm.job_id`), if any.
    pub slurm_job: Option<String>,
}

impl Store {
    pub(super) fn err(&self, e: impl std::fmt::Display) -> Error {
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
        // Its shape first, before the journal mode changes anything in the file.
        schema::check_shape(&self.conn, 0).map_err(|m| self.err(m))?;
        // Two iolabs creating one store at once: the journal mode change takes the database
        // exclusively and SQLite may answer busy without waiting; wait here as for any lock.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match self.conn.pragma_update(None, "journal_mode", "WAL") {
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if f.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                r => break r.map_err(|e| self.err(e))?,
            }
        }
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

    /// The schema version (0 for an empty database); refuses what is not an iolab store (of
    /// another shape: [`schema::check_shape`]) and versions newer than this build.
    fn version(&self) -> Result<i64> {
        // Before any statement reads a table: what holds views or triggers is refused unread.
        schema::check_shape(&self.conn, 0).map_err(|m| self.err(m))?;
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
        schema::check_shape(&self.conn, version).map_err(|m| self.err(m))?;
        Ok(version)
    }

    /// A write transaction that takes the write lock at once (BEGIN IMMEDIATE): a second
    /// iolab waits for it (busy timeout) instead of failing on a stale read snapshot.
    pub(super) fn write_tx(&self) -> Result<rusqlite::Transaction<'_>> {
        rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))
    }

    pub(super) fn json<T: serde::Serialize>(&self, v: &T) -> Result<String> {
        crate::json::to_string(v).map_err(|e| self.err(e))
    }

    /// Says on stderr that one item of the store cannot be read and is left out: the rest of
    /// the store stays readable.
    pub fn warn_unreadable(&self, what: &str, e: impl std::fmt::Display) {
        eprintln!(
            "warning: store {}: {what} cannot be read ({e}); left out",
            crate::text::escape_path(&self.path)
        );
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub(super) fn status_str(s: Status) -> &'static str {
    match s {
        Status::Complete => "complete",
        Status::Failed => "failed",
        Status::Interrupted => "interrupted",
    }
}

pub(super) fn parse_status(s: &str) -> Status {
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
        reps: &[(usize, &Repetition)],
        warmup: bool,
    ) -> Result<()> {
        self.insert_run(&exp.experiment_id, point, run_id, reps, warmup)
    }
    fn tuning(&mut self, t: &crate::results::tune::Tuning) -> Result<()> {
        self.save_tuning(t)
    }
    fn not_run(&mut self, exp: &ExperimentResult) -> Result<()> {
        self.save_not_run(exp)
    }
}

#[cfg(test)]
mod tests {
    use super::schema::SCHEMA_V1;
    use super::*;

    /// The default store follows the XDG rules; with no absolute base it is an error naming
    /// both variables, never a path under the current directory.
    #[test]
    fn the_default_store_needs_an_absolute_base() {
        let with = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> =
                vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            default_path_in(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.into()))
        };
        assert_eq!(with(&[("IOLAB_DB", "x.db"), ("HOME", "/h")]).unwrap(), PathBuf::from("x.db"));
        assert_eq!(
            with(&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")]).unwrap(),
            PathBuf::from("/d/iolab/iolab.db")
        );
        assert_eq!(
            with(&[("XDG_DATA_HOME", "rel"), ("HOME", "/h")]).unwrap(),
            PathBuf::from("/h/.local/share/iolab/iolab.db")
        );
        assert_eq!(
            with(&[("XDG_DATA_HOME", ""), ("HOME", "/h")]).unwrap(),
            PathBuf::from("/h/.local/share/iolab/iolab.db")
        );
        for (vars, says) in [
            (&[][..], "XDG_DATA_HOME is unset and HOME is unset"),
            (&[("HOME", "")][..], "XDG_DATA_HOME is unset and HOME is empty"),
            (
                &[("HOME", "home"), ("XDG_DATA_HOME", "d")][..],
                "XDG_DATA_HOME is `d`, not absolute and HOME is `home`, not absolute",
            ),
        ] {
            let e = with(vars).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(says) && e.to_string().contains("--db PATH or IOLAB_DB"), "{e}");
        }
    }

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
        assert_eq!(w.series, None, "old rows kept no rate series");
    }
}
