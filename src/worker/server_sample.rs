//! What one I/O-server rank did in one phase: its requests, bytes, and where its time went.

use serde::{Deserialize, Serialize};

/// What one I/O-server rank did in one phase (`servers[]` of a repetition in JSON). Its
/// times are durations on its own host's clock, like every worker's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// The server's index (0..S): it holds file f (a striped file's component f) when f mod S
    /// is this index.
    pub server: u32,
    pub rank: u32,
    pub host: String,
    /// `disk` or `memory`.
    pub store: String,
    /// Files (or stripe components) it held in the phase.
    pub files: u32,
    /// Requests answered: writes, reads, commits, a blast's end.
    pub requests: u64,
    /// Bytes clients wrote to it (or sent it in a blast), and bytes it sent them in reads.
    pub write_bytes: u64,
    pub read_bytes: u64,
    /// From the phase's start barrier to the last of its clients' end.
    pub time_ns: u64,
    /// Answering requests; the rest of `time_ns` it waited for one.
    pub busy_ns: u64,
    /// In its disk calls (pread, pwrite, fsync, fdatasync): part of `busy_ns`.
    pub disk_ns: u64,
    /// Moving requests' bytes to and from clients (MPI, or TCP in a blast): part of `busy_ns`.
    pub net_ns: u64,
    /// Resident fraction of its files before the phase, measured with mincore on its host
    /// (None: no file, with the memory store or in a blast).
    pub resident_fraction: Option<f64>,
    /// What its directory's device read and wrote during the phase (/proc/diskstats there).
    pub device_read_bytes: u64,
    pub device_write_bytes: u64,
}
