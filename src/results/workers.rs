//! A repetition's workers' results: kept in memory, or, when they are many, spooled once
//! measured to an unlinked temporary file and read back one at a time, so that what an
//! experiment holds for the repetitions it has finished does not grow with its workers
//! (docs/mpi.md).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::WorkerResult;
use crate::latency::Buckets;

/// A repetition of this many workers or more goes to the spool once made (a smaller one costs
/// little memory, and the spool's writes would cost a small job more than they save).
static SPOOL_AT: AtomicUsize = AtomicUsize::new(256);

/// The most workers' results an experiment keeps in memory before any repetition, however
/// small, goes to the spool (5 to 8 MB; a sweep of many small points stays bounded too).
pub const KEEP_AT_MOST: usize = 16_384;

/// The workers of one repetition of one phase (`workers[]` in JSON).
#[derive(Clone, Default)]
pub struct Workers(Held);

#[derive(Clone)]
enum Held {
    Kept(Vec<WorkerResult>),
    Spooled(Spooled),
}

impl Default for Held {
    fn default() -> Held {
        Held::Kept(vec![])
    }
}

/// Where a repetition's workers went: `count` encoded results, `bytes` long, from `at`.
#[derive(Clone)]
struct Spooled {
    file: Arc<SpoolFile>,
    at: u64,
    bytes: u64,
    count: usize,
    /// What a phase's figures need of them without reading them back: whether any had a
    /// strategy role, and their latency histograms merged.
    roles: bool,
    latency: Buckets,
}

impl Workers {
    pub fn len(&self) -> usize {
        match &self.0 {
            Held::Kept(v) => v.len(),
            Held::Spooled(s) => s.count,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes its results take on the spool (0 when they are in memory).
    pub fn spooled_bytes(&self) -> u64 {
        match &self.0 {
            Held::Kept(_) => 0,
            Held::Spooled(s) => s.bytes,
        }
    }

    /// Whether its results are on the spool rather than in memory.
    pub fn is_spooled(&self) -> bool {
        matches!(self.0, Held::Spooled(_))
    }

    /// Its results one at a time: borrowed when kept, read back one by one when spooled. A
    /// spool that cannot be read back ends them there, latched for the command to end with
    /// ([`take_spool_fault`]); the readers that need every result read [`Workers::try_iter`].
    pub fn iter(&self) -> Box<dyn Iterator<Item = Cow<'_, WorkerResult>> + '_> {
        Box::new(self.try_iter().map_while(|w| w.map_err(unreadable).ok()))
    }

    /// As [`Workers::iter`], with the spool's read errors returned (the store's writer).
    pub fn try_iter(&self) -> Box<dyn Iterator<Item = io::Result<Cow<'_, WorkerResult>>> + '_> {
        match &self.0 {
            Held::Kept(v) => Box::new(v.iter().map(|w| Ok(Cow::Borrowed(w)))),
            Held::Spooled(s) => Box::new(s.read().map(|w| w.map(Cow::Owned))),
        }
    }

    /// All its results at once (read back when spooled, hosts and call counts shared as when
    /// measured; none, latched as by [`Workers::iter`], from a spool that cannot be read back).
    pub fn load(&self) -> Cow<'_, [WorkerResult]> {
        match &self.0 {
            Held::Kept(v) => Cow::Borrowed(v),
            Held::Spooled(s) => Cow::Owned(s.load().unwrap_or_else(|e| {
                unreadable(e);
                vec![]
            })),
        }
    }

    /// Its results to change, read back into memory first when spooled (none, latched as by
    /// [`Workers::iter`], from a spool that cannot be read back).
    pub fn make_mut(&mut self) -> &mut Vec<WorkerResult> {
        if let Held::Spooled(s) = &self.0 {
            self.0 = Held::Kept(s.load().unwrap_or_else(|e| {
                unreadable(e);
                vec![]
            }));
        }
        match &mut self.0 {
            Held::Kept(v) => v,
            Held::Spooled(_) => unreachable!("read back just above"),
        }
    }

    /// Where its results are in memory, when they are (for tests that they were not copied).
    #[cfg(test)]
    pub fn kept_ptr(&self) -> Option<*const WorkerResult> {
        match &self.0 {
            Held::Kept(v) => Some(v.as_ptr()),
            Held::Spooled(_) => None,
        }
    }

    /// `count` results on a spool that holds none of them (tests of a spool that cannot be read
    /// back: its own file, so no other test's spool is touched).
    #[cfg(test)]
    pub fn unreadable_for_tests(count: usize) -> Workers {
        let file = Arc::new(SpoolFile::open_in(&std::env::temp_dir()).unwrap());
        Workers(Held::Spooled(Spooled {
            file,
            at: 0,
            bytes: 0,
            count,
            roles: false,
            latency: Buckets(vec![]),
        }))
    }

    /// Whether any worker had a strategy role.
    pub fn any_role(&self) -> bool {
        match &self.0 {
            Held::Kept(v) => v.iter().any(|w| w.role.is_some()),
            Held::Spooled(s) => s.roles,
        }
    }

    /// Every worker's latency buckets: each worker's when kept, merged when spooled (the same
    /// counts in the same buckets).
    pub fn latency_buckets(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match &self.0 {
            Held::Kept(v) => Box::new(v.iter().flat_map(|w| w.latency_histogram_ns.0.iter().copied())),
            Held::Spooled(s) => Box::new(s.latency.0.iter().copied()),
        }
    }

    /// Moves its results to the spool ([`Workers::spool`]) when they are many, or when the
    /// experiment keeps `kept` workers' results in memory already and these would take it
    /// past [`KEEP_AT_MOST`].
    pub fn spool_if_many(&mut self, kept: usize) {
        if many(self.len(), kept, SPOOL_AT.load(Relaxed)) {
            self.spool();
        }
    }

    /// Spools every repetition from `workers` workers on (tests: 1, to spool every one).
    #[cfg(test)]
    pub fn spool_from(workers: usize) {
        SPOOL_AT.store(workers, Relaxed);
    }

    /// Moves its results to the spool, unless they are there already or a worker still holds
    /// a per-op trace (which goes to the store first). When no spool can be made or written
    /// (no temporary directory, a full disk), they stay in memory: what is lost is memory,
    /// not results.
    pub fn spool(&mut self) {
        let Held::Kept(v) = &self.0 else { return };
        if v.is_empty() || v.iter().any(|w| w.trace.is_some()) {
            return;
        }
        if let Ok(s) = SpoolFile::shared().and_then(|f| Spooled::write(f, v)) {
            self.0 = Held::Spooled(s);
        }
    }
}

/// Whether `workers` results go to the spool, the experiment keeping `kept` in memory already
/// and spooling repetitions of `at` workers or more.
fn many(workers: usize, kept: usize, at: usize) -> bool {
    workers >= at || kept + workers > KEEP_AT_MOST
}

/// The first failure to read the spool back, in words (from [`Spooled::read`], which says
/// what failed), once one happened.
static FAULT: Mutex<Option<String>> = Mutex::new(None);

/// A spool that cannot be read back is a machine fault; the results it held are gone: the
/// first such failure is kept for the command to end with, and what reads on without a
/// `Result` reads no further (it shows what it read, never a panic).
fn unreadable(e: io::Error) {
    FAULT.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| e.to_string());
}

/// The first failure to read the spool back since the last call, if any: what a command that
/// showed spooled results ends with (exit 1), the results shown lacking those it could not
/// read.
pub fn take_spool_fault() -> Option<String> {
    FAULT.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// A failed read of the spool, saying what failed.
fn unread(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("reading back workers' results from iolab's temporary spool failed: {e}"))
}

impl From<Vec<WorkerResult>> for Workers {
    fn from(v: Vec<WorkerResult>) -> Workers {
        Workers(Held::Kept(v))
    }
}

impl<'a> IntoIterator for &'a Workers {
    type Item = Cow<'a, WorkerResult>;
    type IntoIter = Box<dyn Iterator<Item = Cow<'a, WorkerResult>> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Workers {
    fn eq(&self, other: &Workers) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Held::Kept(v) => v.fmt(f),
            Held::Spooled(s) => write!(f, "Workers(spooled: {} at {})", s.count, s.at),
        }
    }
}

impl Serialize for Workers {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        match &self.0 {
            Held::Kept(v) => v.serialize(ser),
            // One result in memory at a time.
            Held::Spooled(s) => {
                let mut seq = ser.serialize_seq(Some(s.count))?;
                for w in s.read() {
                    seq.serialize_element(&w.map_err(S::Error::custom)?)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Workers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Workers, D::Error> {
        Vec::<WorkerResult>::deserialize(d).map(Workers::from)
    }
}

impl Spooled {
    /// Appends `workers` to `file`, each as one CBOR item.
    fn write(file: Arc<SpoolFile>, workers: &[WorkerResult]) -> io::Result<Spooled> {
        let mut end = file.end.lock().unwrap_or_else(|p| p.into_inner());
        let at = *end;
        let mut out = BufWriter::with_capacity(SPOOL_BUF, At { file: &file.file, pos: at });
        let written =
            workers.iter().try_for_each(|w| ciborium::into_writer(w, &mut out).map_err(io::Error::other));
        if let Err(e) = written.and_then(|()| out.flush()) {
            drop(out.into_parts()); // (what is left unwritten goes: no second try as it drops)
            return Err(e);
        }
        *end = out.get_ref().pos;
        drop(out);
        let bytes = *end - at;
        drop(end);
        let roles = workers.iter().any(|w| w.role.is_some());
        Ok(Spooled { file, at, bytes, count: workers.len(), roles, latency: merged_buckets(workers) })
    }

    /// Its results, decoded one at a time; an error says the spool failed.
    fn read(&self) -> impl Iterator<Item = io::Result<WorkerResult>> + '_ {
        let mut input = BufReader::with_capacity(SPOOL_BUF, At { file: &self.file.file, pos: self.at });
        (0..self.count).map(move |_| ciborium::from_reader(&mut input).map_err(unread))
    }

    /// All its results, hosts and call counts shared between workers that had the same.
    fn load(&self) -> io::Result<Vec<WorkerResult>> {
        let mut out: Vec<WorkerResult> = Vec::with_capacity(self.count);
        for w in self.read() {
            let mut w = w?;
            if let Some(last) = out.last() {
                w.calls.share_equal(&last.calls);
                if let (Some(h), Some(prev)) = (&w.host, &last.host)
                    && h == prev
                {
                    w.host = Some(Arc::clone(prev));
                }
            }
            out.push(w);
        }
        Ok(out)
    }
}

/// The spool is written and read in pieces of this size.
const SPOOL_BUF: usize = 16 << 10;

/// The workers' latency buckets merged: the counts of equal values summed (the workers'
/// histograms share one layout, so equal values are one bucket), in value order.
fn merged_buckets(workers: &[WorkerResult]) -> Buckets {
    let mut all: Vec<(u64, u64)> =
        workers.iter().flat_map(|w| w.latency_histogram_ns.0.iter().copied()).collect();
    all.sort_unstable_by_key(|&(v, _)| v);
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(all.len());
    for (v, c) in all {
        match merged.last_mut() {
            Some((last, n)) if *last == v => *n += c,
            _ => merged.push((v, c)),
        }
    }
    merged.shrink_to_fit();
    Buckets(merged)
}

/// The spool: an unlinked file in the temporary directory (`O_TMPFILE`, so that nothing is
/// left behind however iolab ends), shared by all the results that are alive, and gone with
/// the last of them.
struct SpoolFile {
    file: File,
    end: Mutex<u64>,
}

/// The spool in use, while any result holds it.
static SPOOL: Mutex<Weak<SpoolFile>> = Mutex::new(Weak::new());

impl SpoolFile {
    fn shared() -> io::Result<Arc<SpoolFile>> {
        let mut spool = SPOOL.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = spool.upgrade() {
            return Ok(f);
        }
        let f = Arc::new(SpoolFile::open_in(&std::env::temp_dir())?);
        *spool = Arc::downgrade(&f);
        Ok(f)
    }

    /// A new spool in `dir`, which goes through the guard of every directory iolab writes to
    /// (never under /dev, nor on a pseudo file system).
    fn open_in(dir: &std::path::Path) -> io::Result<SpoolFile> {
        crate::target::device::check_dir_as("TMPDIR", &dir.to_string_lossy(), std::path::Path::new("/"), &[])
            .map_err(io::Error::other)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_TMPFILE)
            .open(dir)?;
        Ok(SpoolFile { file, end: Mutex::new(0) })
    }
}

/// A file read or written from `pos` on, without moving a shared cursor.
struct At<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for At<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "workers_tests.rs"]
mod tests;
