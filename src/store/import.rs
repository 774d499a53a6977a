//! Merges results from elsewhere into a store: another iolab store (SQLite) or one experiment's
//! JSON (`iolab run --json`, `iolab results export --json`). Experiments are keyed by their id,
//! hosts by their host id, runs by their random 128-bit run id, so a run already present is
//! skipped and importing the same thing twice changes nothing.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, Repetition};
use crate::store::Store;

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    pub experiments_added: usize,
    pub experiments_seen: usize,
    pub runs_added: usize,
    pub runs_skipped: usize,
}

impl Imported {
    fn add(&mut self, o: Imported) {
        self.experiments_added += o.experiments_added;
        self.experiments_seen += o.experiments_seen;
        self.runs_added += o.runs_added;
        self.runs_skipped += o.runs_skipped;
    }
}

/// Imports `path`: an SQLite store (recognised by its header) or an experiment's JSON. Only a
/// regular file is read (never a FIFO or a device), and no more of it than its size.
pub fn import_path(store: &Store, path: &Path) -> Result<Imported> {
    let bad = |reason: String| Error::spec("import", path.display(), reason);
    let (mut f, size) = crate::env::input::open_regular(path).map_err(bad)?;
    let mut head = Vec::with_capacity(16);
    (&mut f).take(16).read_to_end(&mut head).map_err(|e| bad(format!("cannot read: {e}")))?;
    if head == b"SQLite format 3\0" {
        drop(f);
        return import_store(store, path);
    }
    crate::env::input::read_to_size(&mut f, size, &mut head).map_err(bad)?;
    let exp: ExperimentResult = serde_json::from_slice(&head)
        .map_err(|e| bad(format!("neither an iolab store nor an experiment's JSON: {e}")))?;
    import_experiment(store, &exp)
}

/// Imports every experiment of another store. The other file is only read: it is copied
/// (`VACUUM INTO`) and the copy brought to this build's schema.
pub fn import_store(store: &Store, path: &Path) -> Result<Imported> {
    let copy =
        store.path().with_file_name(format!(".iolab-import-{}.db", crate::target::workdir::new_run_id()));
    let result = (|| {
        // Read-only media too: `immutable` where the directory cannot hold the WAL index.
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let src = super::open_reader(path, !crate::env::sys::is_writable(dir))
            .map_err(|e| Error::spec("import", path.display(), e.to_string()))?;
        src.execute("VACUUM INTO ?1", [copy.to_string_lossy()])
            .map_err(|e| Error::spec("import", path.display(), format!("cannot read it as a store: {e}")))?;
        drop(src);
        let other = Store::open(&copy)?;
        let mut total = Imported::default();
        let mut rows = other.list()?;
        rows.reverse(); // oldest first, as they were made
        for row in rows {
            total.add(import_experiment(store, &other.load(&row.id)?)?);
        }
        Ok(total)
    })();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = copy.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    result
}

/// Imports one experiment: its host and identity if new, then each run not yet stored.
pub fn import_experiment(store: &Store, exp: &ExperimentResult) -> Result<Imported> {
    let mut out = Imported { experiments_seen: 1, ..Default::default() };
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
            store.insert_experiment(exp)?;
            out.experiments_added = 1;
        }
    }
    for ((point, run_id), (warmup, reps)) in runs_of(exp) {
        if store.has_run(&run_id)? {
            out.runs_skipped += 1;
        } else {
            store.insert_run(&exp.experiment_id, point, &run_id, &reps, warmup)?;
            out.runs_added += 1;
        }
    }
    Ok(out)
}

type Runs = BTreeMap<(usize, String), (bool, Vec<(usize, Repetition)>)>;

/// The runs of an experiment: its phase repetitions grouped by run id.
fn runs_of(exp: &ExperimentResult) -> Runs {
    let mut runs: Runs = BTreeMap::new();
    for (pi, point) in exp.points.iter().enumerate() {
        for (phi, ph) in point.phases.iter().enumerate() {
            for (warmup, list) in [(false, &ph.repetitions), (true, &ph.warmups)] {
                for r in list {
                    runs.entry((pi, r.run_id.clone())).or_insert((warmup, vec![])).1.push((phi, r.clone()));
                }
            }
        }
    }
    runs
}
