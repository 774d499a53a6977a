//! Merges results from elsewhere into a store: another iolab store (SQLite) or one experiment's
//! JSON (`iolab run --json`, `iolab results export --json`). Experiments are keyed by their id,
//! hosts by their host id, runs by their random 128-bit run id, so a run already present is
//! skipped and importing the same thing twice changes nothing.
//!
//! What comes in is checked before the store is opened: a regular file (never a FIFO or a
//! device, and never more than its size), a JSON schema version this build reads, experiment
//! and run ids of the form iolab makes. Each experiment is stored with its runs in one
//! transaction, so an interrupted import leaves no experiment without its runs; a store the
//! import created is removed again when it fails. Errors name the user's file, never the
//! temporary copy a foreign store is read through.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Repetition, SCHEMA_VERSION};
use crate::store::Store;
use crate::store::import_check as check;
use crate::target::workdir::valid_run_id;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    pub experiments_added: usize,
    pub experiments_seen: usize,
    pub runs_added: usize,
    pub runs_skipped: usize,
    /// Traced ops stored with the runs added.
    pub trace_ops_added: u64,
    /// Traced ops of the other store left out, as asked (`--no-traces`).
    pub trace_ops_left_out: u64,
    /// What the import could not carry, in words (a JSON of a traced run has no traces).
    pub notes: Vec<String>,
}

impl Imported {
    fn add(&mut self, o: Imported) {
        self.experiments_added += o.experiments_added;
        self.experiments_seen += o.experiments_seen;
        self.runs_added += o.runs_added;
        self.runs_skipped += o.runs_skipped;
        self.trace_ops_added += o.trace_ops_added;
        self.trace_ops_left_out += o.trace_ops_left_out;
        self.notes.extend(o.notes);
    }
}

/// How an import goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOpts {
    /// Leave out another store's traced ops (said in the summary), instead of carrying them.
    pub no_traces: bool,
}

/// The name the other store's copy is attached under when its traced ops are carried.
const OTHER: &str = "import_src";

fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::spec("import", path.display(), reason)
}

/// Imports `src` into the store at `db`: an SQLite store (recognised by its header) or an
/// experiment's JSON. `db` is created if missing, but only once `src` has been read and
/// checked, and removed again (with the directories made for it) if the import fails.
pub fn import_path(db: &Path, src: &Path, opts: ImportOpts) -> Result<Imported> {
    let (mut f, size) = crate::env::input::open_regular(src).map_err(|r| bad(src, r))?;
    let mut head = Vec::with_capacity(16);
    (&mut f).take(16).read_to_end(&mut head).map_err(|e| bad(src, format!("cannot read: {e}")))?;
    if head == b"SQLite format 3\0" {
        drop(f);
        return import_store(db, src, opts);
    }
    if size > check::JSON_CAP {
        return Err(bad(
            src,
            format!(
                "it holds {}, more than the {} of JSON an import reads (import a store instead: `iolab results import OTHER.db`)",
                crate::units::fmt_size(size),
                crate::units::fmt_size(check::JSON_CAP)
            ),
        ));
    }
    // Parsed as it is read (no copy of the whole text), at most the size it had when opened,
    // and stopped by a stop signal within one read.
    let rest =
        std::io::BufReader::with_capacity(1 << 16, check::StopReader((&mut f).take(size.saturating_sub(16))));
    let exp: ExperimentResult =
        crate::json::from_reader(std::io::Cursor::new(head).chain(rest)).map_err(|e| {
            match crate::env::signals::pending() {
                Some(sig) => Error::Interrupted(sig),
                None => bad(src, format!("neither an iolab store nor an experiment's JSON: {e}")),
            }
        })?;
    check_experiment(src, &exp)?;
    check_readable(src, &exp)?;
    check::check_figures(src, &exp)?;
    let mut done = with_store(db, |store| import_experiment_from(store, &exp, src, None))?;
    let traced = exp.spec.latency == crate::spec::LatencyMode::Trace
        || exp
            .points
            .iter()
            .filter_map(|p| p.spec.as_ref())
            .any(|s| s.latency == crate::spec::LatencyMode::Trace);
    if traced {
        done.notes.push(format!(
            "{} is an experiment's JSON, which never holds its per-op traces: the runs are imported without them; import the store they were stored in to carry them",
            crate::text::escape_path(src)
        ));
    }
    Ok(done)
}

/// Imports every experiment of another store. The other file is only read: it is checked
/// (tables only, within the row and cell caps), copied (`VACUUM INTO`) and the copy brought to
/// this build's schema; every id is checked before anything is stored; each experiment is
/// read, checked and stored one at a time. Every query stops at a stop signal or when the
/// time budget is spent; the copy is removed whatever happens.
pub fn import_store(db: &Path, src: &Path, opts: ImportOpts) -> Result<Imported> {
    let deadline = std::time::Instant::now() + check::TIME_BUDGET;
    // The copy goes beside the store when its directory exists (the same file system, which
    // has room for the store), else to the temporary directory.
    let copy_dir = db.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let copy_dir = if copy_dir.is_dir() { copy_dir } else { std::env::temp_dir() };
    let copy = copy_dir.join(format!(".iolab-import-{}.db", crate::target::workdir::new_run_id()));
    let result = (|| {
        let src_dir = src.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut conn = super::open_reader(src, !crate::env::sys::is_writable(src_dir))
            .map_err(|e| bad(src, format!("cannot open it: {e}")))?;
        check::bound(&mut conn, deadline);
        let traced = check::check_store(src, &conn)?;
        if traced > 0 && !opts.no_traces {
            let bytes = std::fs::metadata(src).map(|m| m.len()).unwrap_or(0);
            check::check_traces(src, db, traced, bytes)?;
        }
        let carry = traced > 0 && !opts.no_traces;
        conn.execute("VACUUM INTO ?1", [copy.to_string_lossy()]).map_err(|e| {
            check::interrupted(src, e, |e| bad(src, format!("cannot read it as a store: {e}")))
        })?;
        drop(conn);
        // Whatever goes wrong with the copy is about the user's file.
        let named = |e: Error| match e {
            Error::Store { msg, .. } => bad(src, msg),
            other => other,
        };
        let mut other = Store::open(&copy).map_err(named)?;
        check::bound(&mut other.conn, deadline);
        let bounded = |e: Error| match crate::env::signals::pending() {
            Some(sig) => Error::Interrupted(sig),
            None => named(e),
        };
        let mut rows = other.list().map_err(bounded)?;
        rows.reverse(); // oldest first, as they were made
        for row in &rows {
            check_id(src, "experiment_id", &row.id)?;
        }
        for run_id in other.run_ids().map_err(bounded)? {
            check_id(src, "run_id", &run_id)?;
        }
        with_store(db, |store| {
            check::bound(&mut store.conn, deadline);
            let mut total = Imported::default();
            if carry {
                // Attached outside any transaction: each experiment's runs take their traced
                // ops straight from the copy, in the transaction that stores them.
                store
                    .conn
                    .execute(&format!("ATTACH DATABASE ?1 AS {OTHER}"), [copy.to_string_lossy()])
                    .map_err(|e| store.err(e))?;
            } else if traced > 0 {
                total.trace_ops_left_out = traced;
            }
            for row in &rows {
                crate::env::signals::check()?;
                check::check_experiment_size(src, &other.conn, &row.id)?;
                match other.load(&row.id) {
                    Ok(exp) => {
                        check_readable(src, &exp)?;
                        check::check_figures(src, &exp)?;
                        total.add(import_experiment_from(store, &exp, src, carry.then_some(OTHER))?)
                    }
                    Err(e) if crate::env::signals::pending().is_some() => return Err(bounded(e)),
                    Err(e) => eprintln!(
                        "warning: {}: experiment {} cannot be read ({}); not imported",
                        crate::text::escape_path(src),
                        row.id,
                        named(e)
                    ),
                }
            }
            // Tuning records of those experiments (the further along of two records of one).
            let refuse =
                |id: &str, why: String| Err(bad(src, format!("the tuning of experiment {id}: {why}")));
            for t in other.tunings_or(refuse).map_err(bounded)? {
                if store.load_tuning(&t.experiment_id)?.is_none_or(|have| have.rounds.len() < t.rounds.len())
                {
                    store.save_tuning(&t)?;
                }
            }
            if carry {
                store.conn.execute(&format!("DETACH DATABASE {OTHER}"), []).map_err(|e| store.err(e))?;
            }
            Ok(total)
        })
    })();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = copy.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    result
}

/// Opens (or creates) the store at `db` and runs `f` on it. If this import created the store
/// (its file, exclusively) and `f` fails, the store and the directories made for it are
/// removed, but only while it holds no experiment: another import that opened the new store
/// meanwhile and stored into it keeps what it stored.
fn with_store<T>(db: &Path, f: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
    if db.exists() {
        return f(&mut Store::open(db)?);
    }
    // The directories that do not exist yet, deepest first.
    let mut made: Vec<PathBuf> = vec![];
    let mut dir = db.parent().filter(|d| !d.as_os_str().is_empty());
    while let Some(d) = dir.filter(|d| !d.exists()) {
        made.push(d.to_path_buf());
        dir = d.parent().filter(|d| !d.as_os_str().is_empty());
    }
    if let Some(d) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| Error::Store {
            path: db.to_path_buf(),
            msg: format!("cannot create its directory: {e}"),
        })?;
    }
    let created = std::fs::OpenOptions::new().write(true).create_new(true).open(db).is_ok();
    let mut store = match Store::open(db) {
        Ok(s) => s,
        Err(e) => {
            if created {
                remove_store(db, &made);
            }
            return Err(e);
        }
    };
    let result = f(&mut store);
    if result.is_err() && created && store.counts().is_ok_and(|c| c[1].1 == 0) {
        drop(store);
        remove_store(db, &made);
    }
    result
}

/// Removes a store this import made, its side files and the directories made for it.
fn remove_store(db: &Path, made: &[PathBuf]) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    for d in made {
        let _ = std::fs::remove_dir(d);
    }
}

/// Refuses an id that is not of the form iolab makes (letters, digits, `-` and `_`, at most
/// 64): ids name directories and appear in pages, so `../x` or markup never get in.
fn check_id(src: &Path, field: &str, id: &str) -> Result<()> {
    if valid_run_id(id) {
        return Ok(());
    }
    Err(Error::spec(
        field,
        id,
        format!(
            "in {}: not an id iolab makes (letters, digits, - and _, at most 64 characters)",
            src.display()
        ),
    ))
}

/// Checks what the readers of an experiment rely on before anything of it is stored: at
/// least one point; its spec and every point's one a spec iolab can plan (the planner and
/// the table's parts that plan it rely on nothing else, `crate::plan::check`); as many phases
/// in each point as its spec has.
pub fn check_readable(src: &Path, exp: &ExperimentResult) -> Result<()> {
    let at = |field: String, why: String| {
        Error::spec(field, "", format!("in {}: {why}", crate::text::escape_path(src)))
    };
    if exp.points.is_empty() {
        return Err(at("points".into(), "an experiment has at least one point".into()));
    }
    crate::plan::check(&exp.spec).map_err(|(f, why)| at(format!("spec.{f}"), why))?;
    for (i, p) in exp.points.iter().enumerate() {
        let spec = match &p.spec {
            Some(s) => {
                crate::plan::check(s).map_err(|(f, why)| at(format!("points[{i}].spec.{f}"), why))?;
                s
            }
            None => &exp.spec,
        };
        if p.phases.len() != spec.phases.len() {
            return Err(at(
                format!("points[{i}].phases"),
                format!("{} phases, and its spec has {}", p.phases.len(), spec.phases.len()),
            ));
        }
    }
    Ok(())
}

/// Checks an experiment's JSON before anything is stored: its schema version and its ids.
fn check_experiment(src: &Path, exp: &ExperimentResult) -> Result<()> {
    if exp.schema_version == 0 || exp.schema_version > SCHEMA_VERSION {
        return Err(Error::spec(
            "schema_version",
            exp.schema_version,
            format!("in {}: this iolab reads schema versions 1 to {SCHEMA_VERSION}", src.display()),
        ));
    }
    check_id(src, "experiment_id", &exp.experiment_id)?;
    for ((_, run_id), _) in runs_of(exp) {
        check_id(src, "run_id", &run_id)?;
    }
    Ok(())
}

/// Imports one experiment in one transaction: its host and identity if new, then each run
/// not yet stored. Nothing of it is stored unless all of it is.
pub fn import_experiment(store: &Store, exp: &ExperimentResult) -> Result<Imported> {
    import_experiment_from(store, exp, Path::new("-"), None)
}

/// [`import_experiment`] from the file `src` (named in refusals), with the traced ops of each
/// run added from the store attached as `traces`, when given (checked first). A run stored
/// already in another experiment is refused by name: a run belongs to exactly one experiment
/// (an experiment with a new id and existing run ids would be stored without runs, or take
/// another's).
fn import_experiment_from(
    store: &Store,
    exp: &ExperimentResult,
    src: &Path,
    traces: Option<&str>,
) -> Result<Imported> {
    let mut out = Imported { experiments_seen: 1, ..Default::default() };
    let tx = store.write_tx()?;
    match store.experiment_host(&exp.experiment_id)? {
        Some(host) if host != exp.host.host_id => {
            return Err(Error::spec(
                "import",
                &exp.experiment_id,
                format!("this store holds an experiment with that id from another host ({host})"),
            ));
        }
        Some(_) => {}
        None => {
            store.insert_experiment_in(&tx, exp)?;
            out.experiments_added = 1;
        }
    }
    for ((point, run_id), (warmup, reps)) in runs_of(exp) {
        if let Some(other) = store.experiment_of_run(&run_id)?.filter(|o| *o != exp.experiment_id) {
            return Err(Error::spec(
                "run_id",
                &run_id,
                format!(
                    "in {}: this store holds that run in experiment {other}, not {}; a run belongs to one experiment",
                    crate::text::escape_path(src),
                    exp.experiment_id
                ),
            ));
        }
        // A run present already keeps its traced ops; one stored without any (by an import of
        // an iolab that left them out) gets them now.
        let present = store.has_run(&run_id)?;
        if present {
            out.runs_skipped += 1;
        } else {
            store.insert_run_in(&tx, &exp.experiment_id, point, &run_id, &reps, warmup)?;
            out.runs_added += 1;
        }
        if let Some(other) = traces
            && (!present || store.trace_op_count(&run_id)? == 0)
        {
            check::check_trace_rows(src, &tx, other, &run_id)?;
            let q = |e| check::interrupted(src, e, |e| store.err(e));
            out.trace_ops_added += tx
                .execute(
                    &format!(
                        "INSERT INTO trace_ops (run_id, phase, worker, op, file, offset_bytes, start_ns,
                             duration_ns, len_bytes, write, response_ns)
                         SELECT run_id, phase, worker, op, file, offset_bytes, start_ns, duration_ns,
                             len_bytes, write, response_ns
                         FROM {other}.trace_ops WHERE run_id = ?1"
                    ),
                    [&run_id],
                )
                .map_err(q)? as u64;
        }
    }
    tx.commit().map_err(|e| store.err(e))?;
    Ok(out)
}

type Runs<'a> = BTreeMap<(usize, String), (bool, Vec<(usize, &'a Repetition)>)>;

/// The runs of an experiment: its phase repetitions grouped by run id.
fn runs_of(exp: &ExperimentResult) -> Runs<'_> {
    let mut runs: Runs = BTreeMap::new();
    for (pi, point) in exp.points.iter().enumerate() {
        for (phi, ph) in point.phases.iter().enumerate() {
            for (warmup, list) in [(false, &ph.repetitions), (true, &ph.warmups)] {
                for r in list {
                    runs.entry((pi, r.run_id.clone())).or_insert((warmup, vec![])).1.push((phi, r));
                }
            }
        }
    }
    runs
}
