//! Per-op traces (`latency = trace`): each op's file, offset, start, duration, length and
//! direction (and a rate-limited op's response time), streamed out of the timed loop in batches
//! so that a trace of any length needs a fixed amount of memory.
//!
//! The loop writes ops into a batch buffer ([`TraceRecorder`], in `trace/record.rs`); a full
//! batch goes to a writer thread, which encodes it into a spill file ([`TraceSpill`]: an
//! unlinked file in the store's directory, so nothing is left behind whatever happens) or,
//! in a process worker, onto the pipe to the parent, which spills it. Each worker owns a fixed
//! ring of batch buffers, so only whole batches change hands. When the run ends, the store
//! reads the spill back batch by batch into its `trace_ops` table, in the run's transaction.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

mod record;
pub use record::{BATCH_OPS, PipeFn, RING_BATCHES, TraceRecorder, send_batches_with};

/// One traced op. `start_ns` counts from the worker's start (the gate), `file` is the op's
/// worker-local file index while recording and the run's global file id once encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceOp {
    pub file: u32,
    pub offset: u64,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Its bytes, and whether it wrote.
    pub len: u32,
    pub write: bool,
    /// A rate-limited op: from its planned start to its completion (0 otherwise).
    pub response_ns: u64,
}

/// Bytes of one encoded op: file (u32), offset, start, duration (u64), length (u32), write
/// (u8), response (u64), little-endian.
pub const RECORD_BYTES: usize = 41;

impl TraceOp {
    /// Appends the op's encoding to `out`.
    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.file.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.start_ns.to_le_bytes());
        out.extend_from_slice(&self.duration_ns.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.push(self.write as u8);
        out.extend_from_slice(&self.response_ns.to_le_bytes());
    }

    /// The op encoded in `b` (at least [`RECORD_BYTES`] long).
    #[inline]
    pub fn decode(b: &[u8]) -> TraceOp {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        TraceOp {
            file: u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")),
            offset: u64_at(4),
            start_ns: u64_at(12),
            duration_ns: u64_at(20),
            len: u32::from_le_bytes(b[28..32].try_into().expect("4 bytes")),
            write: b[32] != 0,
            response_ns: u64_at(33),
        }
    }
}

static SPILL_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Where spill files go: the store's directory, when the command line opens a store (set once,
/// before any run); else the system's temporary directory.
pub fn set_spill_dir(dir: PathBuf) {
    let _ = SPILL_DIR.set(dir);
}

/// Where this process's spill files go.
pub fn spill_dir() -> PathBuf {
    SPILL_DIR.get().cloned().unwrap_or_else(std::env::temp_dir)
}

/// An unlinked file holding one worker's traced ops of one phase, in op order. It has no
/// name, so it disappears with its last descriptor, even after a crash.
#[derive(Debug)]
pub struct TraceSpill {
    file: File,
    ops: u64,
}

/// A worker's finished trace of one phase.
#[derive(Debug, Clone)]
pub struct WorkerTrace {
    /// Its ops; `None` in a worker process, which sent them to its parent.
    pub spill: Option<Arc<TraceSpill>>,
    /// Ops recorded.
    pub ops: u64,
    /// Time the worker's loop waited for the writer (a free batch buffer).
    pub waited_ns: u64,
}

impl TraceSpill {
    /// A new, empty spill file in the spill directory.
    pub fn new() -> io::Result<TraceSpill> {
        let dir = spill_dir();
        std::fs::create_dir_all(&dir)?;
        Ok(TraceSpill { file: unnamed_file(&dir)?, ops: 0 })
    }

    /// Appends `ops` ops encoded in `bytes` ([`RECORD_BYTES`] each).
    pub fn append_encoded(&mut self, bytes: &[u8], ops: u64) -> io::Result<()> {
        debug_assert_eq!(bytes.len() as u64, ops * RECORD_BYTES as u64);
        self.file.write_all_at(bytes, self.ops * RECORD_BYTES as u64)?;
        self.ops += ops;
        Ok(())
    }

    /// Ops held.
    pub fn len(&self) -> u64 {
        self.ops
    }

    pub fn is_empty(&self) -> bool {
        self.ops == 0
    }

    /// Calls `f(k, ops)` for consecutive batches of the ops, `k` being the index of the batch's
    /// first op; reads at most [`BATCH_OPS`] ops at a time.
    pub fn for_each_batch(
        &self,
        mut f: impl FnMut(u64, &[TraceOp]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        let mut bytes = vec![0u8; BATCH_OPS * RECORD_BYTES];
        let mut ops = Vec::with_capacity(BATCH_OPS);
        let mut k = 0u64;
        while k < self.ops {
            let n = (self.ops - k).min(BATCH_OPS as u64) as usize;
            let buf = &mut bytes[..n * RECORD_BYTES];
            self.file
                .read_exact_at(buf, k * RECORD_BYTES as u64)
                .map_err(|e| crate::Error::Run(format!("reading a spilled trace: {e}")))?;
            ops.clear();
            ops.extend(buf.chunks_exact(RECORD_BYTES).map(TraceOp::decode));
            f(k, &ops)?;
            k += n as u64;
        }
        Ok(())
    }

    /// Calls `f` with consecutive chunks of the ops as encoded on disk, each at most `buf`'s
    /// length in whole ops (`buf` at least [`RECORD_BYTES`] long).
    pub fn for_each_encoded(
        &self,
        buf: &mut [u8],
        mut f: impl FnMut(&[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        let per = (buf.len() / RECORD_BYTES).max(1) as u64;
        let mut k = 0u64;
        while k < self.ops {
            let n = (self.ops - k).min(per) as usize;
            let chunk = &mut buf[..n * RECORD_BYTES];
            self.file
                .read_exact_at(chunk, k * RECORD_BYTES as u64)
                .map_err(|e| crate::Error::Run(format!("reading a spilled trace: {e}")))?;
            f(chunk)?;
            k += n as u64;
        }
        Ok(())
    }

    /// The durations of the first `max` ops, in op order.
    pub fn durations(&self, max: usize) -> crate::Result<Vec<u64>> {
        let mut out = Vec::with_capacity((self.ops as usize).min(max));
        self.for_each_batch(|_, ops| {
            let room = max - out.len();
            out.extend(ops.iter().take(room).map(|o| o.duration_ns));
            Ok(())
        })?;
        Ok(out)
    }
}

/// A file with no name in `dir` (O_TMPFILE); where the file system lacks it, a uniquely named
/// file unlinked at once.
fn unnamed_file(dir: &std::path::Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir);
    match tmp {
        Ok(f) => Ok(f),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => {
            let path = dir.join(format!(".iolab-trace-{:016x}", crate::env::sys::random_u64()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            Ok(f)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_through_their_encoding() {
        let op = TraceOp {
            file: 7,
            offset: 1 << 40,
            start_ns: 123_456_789,
            duration_ns: u64::MAX - 1,
            len: 65536,
            write: true,
            response_ns: 5_000_000,
        };
        let mut b = vec![];
        op.encode(&mut b);
        assert_eq!(b.len(), RECORD_BYTES);
        assert_eq!(TraceOp::decode(&b), op);
    }

    #[test]
    fn a_spill_reads_back_in_batches() {
        let mut s = TraceSpill::new().unwrap();
        let n = BATCH_OPS as u64 * 2 + 5;
        let mut bytes = vec![];
        for k in 0..n {
            TraceOp {
                file: (k % 3) as u32,
                offset: k * 4096,
                start_ns: k * 10,
                duration_ns: k + 1,
                ..Default::default()
            }
            .encode(&mut bytes);
        }
        // Appended in uneven pieces.
        let cut = 1000 * RECORD_BYTES;
        s.append_encoded(&bytes[..cut], 1000).unwrap();
        s.append_encoded(&bytes[cut..], n - 1000).unwrap();
        assert_eq!(s.len(), n);
        let mut next = 0u64;
        let mut batches = 0;
        s.for_each_batch(|k, ops| {
            assert_eq!(k, next);
            for (i, o) in ops.iter().enumerate() {
                let j = k + i as u64;
                assert_eq!(
                    *o,
                    TraceOp {
                        file: (j % 3) as u32,
                        offset: j * 4096,
                        start_ns: j * 10,
                        duration_ns: j + 1,
                        ..Default::default()
                    }
                );
            }
            next += ops.len() as u64;
            batches += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((next, batches), (n, 3));
        assert_eq!(s.durations(4).unwrap(), [1, 2, 3, 4]);
        assert_eq!(s.durations(usize::MAX).unwrap().len() as u64, n);
    }

    #[test]
    fn a_spill_streams_out_in_whole_op_chunks_as_written() {
        let mut s = TraceSpill::new().unwrap();
        let n = 1000u64;
        let mut bytes = vec![];
        (0..n).for_each(|k| {
            TraceOp { file: 1, offset: k, start_ns: k, duration_ns: k, ..Default::default() }
                .encode(&mut bytes)
        });
        s.append_encoded(&bytes, n).unwrap();
        let mut buf = vec![0u8; 300 * RECORD_BYTES + 5];
        let (mut got, mut sizes) = (vec![], vec![]);
        s.for_each_encoded(&mut buf, |c| {
            sizes.push(c.len() / RECORD_BYTES);
            got.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
        assert_eq!(sizes, [300, 300, 300, 100]);
        assert_eq!(got, bytes);
    }
}
