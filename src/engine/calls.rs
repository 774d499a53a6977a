//! Per-worker counts of the system (and MPI-IO) calls an engine made: fixed-size counters that the hot loop
//! bumps without allocating, turned into a `{"pwrite": n, ...}` map for results.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A system call an engine may make while moving or committing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Pread,
    Pwrite,
    Preadv,
    Pwritev,
    Fsync,
    Fdatasync,
    Msync,
    Mmap,
    Munmap,
    Ftruncate,
    Fallocate,
    IoUringEnter,
    IoUringRegister,
    MpiFileWriteAt,
    MpiFileWriteAtAll,
    MpiFileReadAt,
    MpiFileReadAtAll,
    MpiFileSync,
    /// Requests to I/O-server ranks (engine `servers`), and a blast's sends.
    WriteRequest,
    ReadRequest,
    CommitRequest,
    MpiSend,
    Send,
    /// The metadata phases' calls.
    Openat,
    Close,
    Write,
    Read,
    Fstatat,
    Renameat2,
    Unlinkat,
    Mkdirat,
    Getdents64,
    /// mdtest's calls (`md_calls = mdtest`): a path opened from the test directory, and the
    /// `sync` command after a phase.
    Openat2,
    Sync,
}

impl Call {
    /// Every call, in the order of the counters.
    pub const ALL: [Call; 34] = [
        Call::Pread,
        Call::Pwrite,
        Call::Preadv,
        Call::Pwritev,
        Call::Fsync,
        Call::Fdatasync,
        Call::Msync,
        Call::Mmap,
        Call::Munmap,
        Call::Ftruncate,
        Call::Fallocate,
        Call::IoUringEnter,
        Call::IoUringRegister,
        Call::MpiFileWriteAt,
        Call::MpiFileWriteAtAll,
        Call::MpiFileReadAt,
        Call::MpiFileReadAtAll,
        Call::MpiFileSync,
        Call::WriteRequest,
        Call::ReadRequest,
        Call::CommitRequest,
        Call::MpiSend,
        Call::Send,
        Call::Openat,
        Call::Close,
        Call::Write,
        Call::Read,
        Call::Fstatat,
        Call::Renameat2,
        Call::Unlinkat,
        Call::Mkdirat,
        Call::Getdents64,
        Call::Openat2,
        Call::Sync,
    ];

    /// The call of that name, if iolab has one.
    pub fn named(name: &str) -> Option<Call> {
        Call::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The system call's name (the key in results).
    pub fn name(self) -> &'static str {
        match self {
            Call::Pread => "pread",
            Call::Pwrite => "pwrite",
            Call::Preadv => "preadv",
            Call::Pwritev => "pwritev",
            Call::Fsync => "fsync",
            Call::Fdatasync => "fdatasync",
            Call::Msync => "msync",
            Call::Mmap => "mmap",
            Call::Munmap => "munmap",
            Call::Ftruncate => "ftruncate",
            Call::Fallocate => "fallocate",
            Call::IoUringEnter => "io_uring_enter",
            Call::IoUringRegister => "io_uring_register",
            Call::MpiFileWriteAt => "MPI_File_write_at",
            Call::MpiFileWriteAtAll => "MPI_File_write_at_all",
            Call::MpiFileReadAt => "MPI_File_read_at",
            Call::MpiFileReadAtAll => "MPI_File_read_at_all",
            Call::MpiFileSync => "MPI_File_sync",
            Call::WriteRequest => "write_request",
            Call::ReadRequest => "read_request",
            Call::CommitRequest => "commit_request",
            Call::MpiSend => "MPI_Send",
            Call::Send => "send",
            Call::Openat => "openat",
            Call::Close => "close",
            Call::Write => "write",
            Call::Read => "read",
            Call::Fstatat => "fstatat",
            Call::Renameat2 => "renameat2",
            Call::Unlinkat => "unlinkat",
            Call::Mkdirat => "mkdirat",
            Call::Getdents64 => "getdents64",
            Call::Openat2 => "openat2",
            Call::Sync => "sync",
        }
    }
}

/// How many times each [`Call`] was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCounts([u64; Call::ALL.len()]);

impl Default for CallCounts {
    fn default() -> CallCounts {
        CallCounts([0; Call::ALL.len()])
    }
}

// As a sequence of the counts in [`Call::ALL`]'s order (serde derives arrays of at most 32).
impl serde::Serialize for CallCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> serde::Deserialize<'de> for CallCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<CallCounts, D::Error> {
        let v = Vec::<u64>::deserialize(d)?;
        let mut c = CallCounts::default();
        if v.len() != c.0.len() {
            return Err(serde::de::Error::invalid_length(v.len(), &"a count per call iolab knows"));
        }
        c.0.copy_from_slice(&v);
        Ok(c)
    }
}

impl CallCounts {
    #[inline(always)]
    pub fn add(&mut self, call: Call) {
        self.0[call as usize] += 1;
    }

    #[inline(always)]
    pub fn add_n(&mut self, call: Call, n: u64) {
        self.0[call as usize] += n;
    }

    pub fn get(&self, call: Call) -> u64 {
        self.0[call as usize]
    }

    /// The non-zero counts by call name.
    pub fn to_map(self) -> CallMap {
        let mut v: Vec<(Call, u64)> =
            Call::ALL.iter().filter(|c| self.get(**c) > 0).map(|c| (*c, self.get(*c))).collect();
        v.sort_unstable_by_key(|(c, _)| c.name());
        CallMap { known: v.into(), other: Box::default() }
    }
}

/// A worker's non-zero call counts by name, in name order (`calls` in JSON: `{"pwrite": n,
/// ...}`), as results keep them for every worker of every repetition: a known call by its
/// number (32 bytes in place, and 16 per call made plus 16 once, where a map of owned names
/// took about 500 bytes), the counts shared by the workers that made the same calls
/// ([`CallMap::share_equal`]). Names iolab does not know (from a store written by another
/// version) are kept apart as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallMap {
    /// The calls iolab knows, in name order.
    known: Arc<[(Call, u64)]>,
    /// Names it does not know, and their counts, in name order.
    other: Box<[(Box<str>, u64)]>,
}

impl CallMap {
    /// The count of the call named `name`, if it was made.
    pub fn get(&self, name: &str) -> Option<u64> {
        match Call::named(name) {
            Some(call) => self.known.iter().find(|(c, _)| *c == call).map(|(_, n)| *n),
            None => self.other.iter().find(|(n, _)| **n == *name).map(|(_, c)| *c),
        }
    }

    /// (name, count) in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        let mut known = self.known.iter().map(|(c, n)| (c.name(), *n)).peekable();
        let mut other = self.other.iter().map(|(k, n)| (&**k, *n)).peekable();
        std::iter::from_fn(move || match (known.peek(), other.peek()) {
            (Some(a), Some(b)) if b.0 < a.0 => other.next(),
            (Some(_), _) => known.next(),
            (None, _) => other.next(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty() && self.other.is_empty()
    }

    /// Whether it holds the very counts `other` holds ([`CallMap::share_equal`]).
    pub fn is_shared_with(&self, other: &CallMap) -> bool {
        Arc::ptr_eq(&self.known, &other.known)
    }

    /// Holds `other`'s counts of known calls when they are the same as its own (a job's
    /// workers mostly make the same calls): its own are freed, and the two share one copy.
    pub fn share_equal(&mut self, other: &CallMap) {
        if !Arc::ptr_eq(&self.known, &other.known) && self.known == other.known {
            self.known = Arc::clone(&other.known);
        }
    }

    /// The counts of the calls iolab knows (a fresh sample's: every name it holds is one).
    pub fn counts(&self) -> CallCounts {
        let mut c = CallCounts::default();
        for (call, n) in self.known.iter() {
            c.add_n(*call, *n);
        }
        c
    }
}

impl From<BTreeMap<String, u64>> for CallMap {
    fn from(m: BTreeMap<String, u64>) -> CallMap {
        // In name order, as the map is.
        let (mut known, mut other) = (vec![], vec![]);
        for (k, v) in m {
            match Call::named(&k) {
                Some(c) => known.push((c, v)),
                None => other.push((k.into_boxed_str(), v)),
            }
        }
        CallMap { known: known.into(), other: other.into_boxed_slice() }
    }
}

impl serde::Serialize for CallMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for CallMap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CallMap, D::Error> {
        BTreeMap::<String, u64>::deserialize(d).map(CallMap::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_map_by_name_and_skip_zeros() {
        let mut c = CallCounts::default();
        c.add(Call::Pwrite);
        c.add(Call::Pwrite);
        c.add_n(Call::Msync, 3);
        let (m, held) = crate::test_alloc::held_by(|| c.to_map());
        assert_eq!(m.iter().collect::<Vec<_>>(), [("msync", 3), ("pwrite", 2)], "by name");
        assert_eq!((m.get("pwrite"), m.get("msync"), m.get("pread")), (Some(2), Some(3), None));
        assert_eq!(held, 2 * 16 + 16, "16 bytes per call made and 16 for the two counts, names not copied");
        assert_eq!(m.counts(), c, "back to the counters");
        for (i, call) in Call::ALL.iter().enumerate() {
            assert_eq!(*call as usize, i, "ALL is in discriminant order");
        }
    }

    #[test]
    fn the_map_reads_back_as_the_map_it_wrote_and_keeps_names_it_does_not_know() {
        let mut c = CallCounts::default();
        c.add_n(Call::IoUringEnter, 7);
        c.add(Call::MpiFileWriteAtAll);
        c.add(Call::Close);
        let m = c.to_map();
        let text = crate::json::to_string(&m).unwrap();
        // Byte order of the names, as a map of names wrote them.
        assert_eq!(text, r#"{"MPI_File_write_at_all":1,"close":1,"io_uring_enter":7}"#);
        let (back, held) = crate::test_alloc::held_by(|| crate::json::from_str::<CallMap>(&text).unwrap());
        assert_eq!(back, m);
        assert_eq!(held, 3 * 16 + 16, "known names read back as numbers");
        let other: CallMap = crate::json::from_str(r#"{"splice":2,"pwrite":1}"#).unwrap();
        assert_eq!(other.iter().collect::<Vec<_>>(), [("pwrite", 1), ("splice", 2)]);
        assert_eq!(other.get("splice"), Some(2));
        assert_eq!(crate::json::to_string(&other).unwrap(), r#"{"pwrite":1,"splice":2}"#);
    }

    #[test]
    fn workers_that_made_the_same_calls_share_their_counts() {
        let mut c = CallCounts::default();
        c.add_n(Call::Pwrite, 16);
        c.add(Call::Fsync);
        let first = c.to_map();
        let (same, held) = crate::test_alloc::held_by(|| {
            let mut m = c.to_map();
            m.share_equal(&first);
            m
        });
        assert_eq!((same.clone(), held), (first.clone(), 0), "the same counts, held once");
        assert!(same.is_shared_with(&first));
        c.add(Call::Pwrite);
        let (other, held) = crate::test_alloc::held_by(|| {
            let mut m = c.to_map();
            m.share_equal(&first);
            m
        });
        assert_eq!((other.get("pwrite"), held), (Some(17), 2 * 16 + 16), "other counts, its own");
        assert!(!other.is_shared_with(&first));
    }
}
