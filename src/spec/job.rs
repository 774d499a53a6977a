//! The words of a tuning job (`iolab tune`): what a program must do, independent of how it
//! does it: how many bytes, in which direction, in which order and op size, what must be on
//! disk when (durability), the compute it overlaps, and the workers and memory it may use.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{OpenSync, SyncPolicy};
use crate::units::fmt_size_spec;

/// Which way the data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    Write,
    /// The data exists already (laid out before the timed phase); the job reads it, cold.
    Read,
    /// The job writes the data, then reads it back cold; its time is both phases'.
    ReadAfterWrite,
}

impl Direction {
    pub const NAMES: &'static [&'static str] = &["write", "read", "read-after-write"];

    pub fn parse(s: &str) -> Option<Direction> {
        Some(match s {
            "write" => Direction::Write,
            "read" => Direction::Read,
            "read-after-write" | "raw" => Direction::ReadAfterWrite,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Direction::Write => "write",
            Direction::Read => "read",
            Direction::ReadAfterWrite => "read-after-write",
        }
    }
    /// The job writes (so its durability means something).
    pub fn writes(self) -> bool {
        !matches!(self, Direction::Read)
    }
    /// The phases of the job, as a spec's `ops` list.
    pub fn ops(self) -> &'static [&'static str] {
        match self {
            Direction::Write => &["write"],
            Direction::Read => &["read:cold"],
            Direction::ReadAfterWrite => &["write", "read:cold"],
        }
    }
}

/// In which order the program visits its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Seq,
    /// Every op at a random place (a seeded permutation covering every block once).
    Random,
}

impl Access {
    pub fn parse(s: &str) -> Option<Access> {
        Some(match s {
            "seq" | "sequential" => Access::Seq,
            "random" | "rand" => Access::Random,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Access::Seq => "seq",
            Access::Random => "random",
        }
    }
}

/// What must be on stable storage when. Bounds are per writer: each worker that writes
/// commits what it wrote at least this often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Nothing need ever be committed by the program.
    None,
    /// Everything committed when the job ends.
    End,
    /// No writer holds more than this many uncommitted bytes, and everything at the end.
    Every(u64),
    /// Every op committed before the next one starts.
    Each,
}

impl Durability {
    pub fn parse(s: &str) -> std::result::Result<Durability, String> {
        Ok(match SyncPolicy::parse(s).map_err(|_| "expected end, every:SIZE, each or none".to_string())? {
            SyncPolicy::None => Durability::None,
            SyncPolicy::End => Durability::End,
            SyncPolicy::Each => Durability::Each,
            SyncPolicy::Every(n) => Durability::Every(n),
        })
    }
    pub fn label(self) -> String {
        match self {
            Durability::None => "none".into(),
            Durability::End => "end".into(),
            Durability::Each => "each".into(),
            Durability::Every(n) => format!("every:{}", fmt_size_spec(n)),
        }
    }
    /// The loosest commit policy that gives this durability (what the plain program does).
    pub fn loosest(self) -> SyncPolicy {
        match self {
            Durability::None => SyncPolicy::None,
            Durability::End => SyncPolicy::End,
            Durability::Every(n) => SyncPolicy::Every(n),
            Durability::Each => SyncPolicy::Each,
        }
    }
    /// Whether a writer that commits by `sync` (opening its files with `open_sync`) and
    /// writes `op_bytes` per op gives this durability: everything committed at the end (every
    /// policy but `none` commits at the end), and in between a commit as soon as the bytes
    /// written since the last one reach the bound (`every:SIZE` as the spec's `sync` means it).
    /// `each` commits after every op, as does `every:SIZE` with SIZE up to the op size; O_SYNC
    /// and O_DSYNC make each write durable when it returns.
    pub fn satisfied_by(self, sync: SyncPolicy, open_sync: OpenSync, op_bytes: u64) -> bool {
        // The bytes written since the last commit that make the next one (None: no commit
        // before the end), and whether everything is committed at the end.
        let (threshold, at_end) = match (open_sync, sync) {
            (OpenSync::Sync | OpenSync::Dsync, _) => (Some(0), true),
            (OpenSync::None, SyncPolicy::None) => (None, false),
            (OpenSync::None, SyncPolicy::End) => (None, true),
            (OpenSync::None, SyncPolicy::Every(n)) => (Some(n), true),
            (OpenSync::None, SyncPolicy::Each) => (Some(0), true),
        };
        match self {
            Durability::None => true,
            Durability::End => at_end,
            Durability::Every(n) => at_end && threshold.is_some_and(|t| t <= n),
            Durability::Each => at_end && threshold.is_some_and(|t| t <= op_bytes),
        }
    }
}

impl Serialize for Durability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl<'de> Deserialize<'de> for Durability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Durability::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A job: what the program must do. Field names carry units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The preset it came from (`checkpoint`, `benson`, ...), or `custom`.
    pub name: String,
    /// Bytes the program moves in all (each way, for read-after-write).
    pub bytes: u64,
    pub direction: Direction,
    pub access: Access,
    /// The program's op size: what the plain program (the baseline) issues.
    pub op_bytes: u64,
    /// The program issues exactly `op_bytes` per op (a constraint): no candidate changes it.
    pub op_fixed: bool,
    pub durability: Durability,
    /// Compute to overlap with the I/O, per worker (the strategies' `comptime`); 0: none.
    pub comptime_ns: u64,
    /// Workers the program may use (threads or processes).
    pub workers: u32,
    /// Buffer memory the program may use for its I/O (all workers); None: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    pub dirs: Vec<PathBuf>,
}

impl Job {
    /// One line: `checkpoint: write 1 GiB seq, ops of 1 MiB, durable end, 1 worker`.
    pub fn describe(&self) -> String {
        let size = crate::units::fmt_size;
        let mut s = format!(
            "{}: {} {} {}, ops of {}{}",
            self.name,
            self.direction.name(),
            size(self.bytes),
            self.access.name(),
            size(self.op_bytes),
            if self.op_fixed { " (fixed)" } else { "" }
        );
        if self.direction.writes() {
            s += &format!(", durable {}", self.durability.label());
        }
        if self.comptime_ns > 0 {
            s += &format!(", compute {} per worker", crate::units::fmt_ns(self.comptime_ns));
        }
        s += &format!(", {} worker{}", self.workers, if self.workers == 1 { "" } else { "s" });
        if let Some(m) = self.memory_bytes {
            s += &format!(", {} of buffers", size(m));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;

    #[test]
    fn durability_is_met_by_policies_that_commit_at_least_as_often() {
        let none = OpenSync::None;
        let d = Durability::Every(1024 * K);
        assert!(d.satisfied_by(SyncPolicy::Every(1024 * K), none, 64 * K));
        assert!(d.satisfied_by(SyncPolicy::Every(256 * K), none, 64 * K));
        assert!(d.satisfied_by(SyncPolicy::Each, none, 64 * K));
        assert!(d.satisfied_by(SyncPolicy::None, OpenSync::Dsync, 64 * K));
        assert!(!d.satisfied_by(SyncPolicy::Every(2048 * K), none, 64 * K));
        assert!(!d.satisfied_by(SyncPolicy::End, none, 64 * K));
        assert!(!d.satisfied_by(SyncPolicy::None, none, 64 * K));
        // An op larger than the bound: committing each op is the best a writer can do.
        assert!(Durability::Every(4 * K).satisfied_by(SyncPolicy::Each, none, 64 * K));
        assert!(Durability::Every(4 * K).satisfied_by(SyncPolicy::Every(4 * K), none, 64 * K));
        assert!(Durability::End.satisfied_by(SyncPolicy::End, none, K));
        assert!(Durability::End.satisfied_by(SyncPolicy::Every(K), none, K));
        assert!(!Durability::End.satisfied_by(SyncPolicy::None, none, K));
        assert!(Durability::Each.satisfied_by(SyncPolicy::Each, none, K));
        assert!(Durability::Each.satisfied_by(SyncPolicy::Every(K), none, K));
        assert!(!Durability::Each.satisfied_by(SyncPolicy::Every(2 * K), none, K));
        for s in [SyncPolicy::None, SyncPolicy::End, SyncPolicy::Each, SyncPolicy::Every(K)] {
            assert!(Durability::None.satisfied_by(s, none, K));
        }
    }

    #[test]
    fn the_loosest_policy_meets_its_durability() {
        for d in [Durability::None, Durability::End, Durability::Every(512 * K), Durability::Each] {
            assert!(d.satisfied_by(d.loosest(), OpenSync::None, 64 * K), "{d:?}");
            assert_eq!(Durability::parse(&d.label()), Ok(d));
        }
        assert!(Durability::parse("sometimes").is_err());
    }
}
