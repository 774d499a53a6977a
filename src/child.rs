//! What both kinds of worker processes share (`iolab __worker` and `iolab __strategy-worker`):
//! finding the executable, the job and message lines on the pipes, the child's start, and an
//! ended child's status in words.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitStatus;

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::CallCounts;
use crate::error::{Error, Result};
use crate::strategy::RoleSample;
use crate::trace::{RECORD_BYTES, TraceOp, TraceSpill, WorkerTrace};
use crate::worker::{Buckets, WorkerSample};

/// Environment variable naming the executable to start workers with (tests set it; default:
/// this executable).
pub const EXE_VAR: &str = "IOLAB_WORKER_EXE";

/// The executable that runs worker processes.
pub fn exe() -> Result<PathBuf> {
    match std::env::var_os(EXE_VAR).filter(|v| !v.is_empty()) {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe()
            .map_err(|e| Error::Run(format!("cannot find the iolab executable to start workers: {e}"))),
    }
}

/// `msg` as one JSON line.
pub fn line<T: Serialize>(msg: &T) -> Result<Vec<u8>> {
    let mut line = serde_json::to_vec(msg).map_err(|e| Error::Run(format!("worker job: {e}")))?;
    line.push(b'\n');
    Ok(line)
}

/// Sends `msg` to the parent as one JSON line on stdout.
pub fn send<T: Serialize>(msg: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, msg)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// A child's start: default dispositions for SIGINT and SIGTERM (the parent stops its children),
/// death with the parent, then the job, one JSON line read from `input`. `what` names the
/// internal command in the error a person who ran it by hand sees.
pub fn start<T: DeserializeOwned>(input: &mut impl BufRead, what: &str) -> std::result::Result<T, String> {
    // SAFETY: resetting two signal dispositions to their defaults and asking the kernel to
    // kill us if the parent dies are plain system calls with no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    }
    let mut line = String::new();
    input.read_line(&mut line).map_err(|e| e.to_string())?;
    serde_json::from_str(&line).map_err(|e| format!("this is iolab's internal {what} command: {e}"))
}

/// Whether the process that sent the job (`parent_pid`) is still this process's parent.
pub fn parent_alive(parent_pid: u32) -> bool {
    // SAFETY: getppid has no preconditions.
    (unsafe { libc::getppid() }) as u32 == parent_pid
}

/// A [`WorkerSample`] as it crosses the pipe.
#[derive(Debug, Serialize, Deserialize)]
pub struct SampleWire {
    worker: u32,
    bytes: u64,
    ops: u64,
    start_ns: u64,
    end_ns: u64,
    sync_ns: u64,
    sync_calls: u64,
    open_ns: u64,
    close_ns: u64,
    hist: Buckets,
    /// Traced: (ops, ns the loop waited for its trace writer).
    traced: Option<(u64, u64)>,
    /// The traced ops, when they come with the sample (a strategy writer's, at most `iters`)
    /// rather than in batches while the worker runs.
    #[serde(default)]
    trace_ops: Vec<TraceOp>,
    calls: CallCounts,
    max_inflight: u64,
    #[serde(default)]
    role: Option<RoleSample>,
}

impl SampleWire {
    /// The sample to send; `with_ops`: its traced ops too, read back from the child's spill.
    pub fn of(s: WorkerSample, with_ops: bool) -> Result<SampleWire> {
        let mut trace_ops = vec![];
        if let Some(spill) = s.trace.as_ref().and_then(|t| t.spill.as_ref()).filter(|_| with_ops) {
            spill.for_each_batch(|_, batch| {
                trace_ops.extend_from_slice(batch);
                Ok(())
            })?;
        }
        Ok(SampleWire {
            worker: s.worker,
            bytes: s.bytes,
            ops: s.ops,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            sync_ns: s.sync_ns,
            sync_calls: s.sync_calls,
            open_ns: s.open_ns,
            close_ns: s.close_ns,
            hist: Buckets::from_hist(&s.hist),
            traced: s.trace.map(|t| (t.ops, t.waited_ns)),
            trace_ops,
            calls: s.calls,
            max_inflight: s.max_inflight,
            role: s.role,
        })
    }

    /// Traced: (ops, ns the loop waited for its trace writer).
    pub fn traced(&self) -> Option<(u64, u64)> {
        self.traced
    }

    /// Bytes the worker moved.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The sample, its traced ops in `spill` (the batches the parent spilled as they came) or,
    /// if they came with the sample, spilled now.
    pub fn into_sample(self, spill: Option<TraceSpill>) -> Result<WorkerSample> {
        let spill = match spill {
            Some(s) => Some(s),
            None if !self.trace_ops.is_empty() => Some(
                (|| {
                    let mut spill = TraceSpill::new()?;
                    let mut bytes = Vec::with_capacity(self.trace_ops.len() * RECORD_BYTES);
                    self.trace_ops.iter().for_each(|op| op.encode(&mut bytes));
                    spill.append_encoded(&bytes, self.trace_ops.len() as u64)?;
                    Ok(spill)
                })()
                .map_err(crate::worker::trace_err)?,
            ),
            None => None,
        };
        Ok(WorkerSample {
            worker: self.worker,
            bytes: self.bytes,
            ops: self.ops,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            sync_ns: self.sync_ns,
            sync_calls: self.sync_calls,
            open_ns: self.open_ns,
            close_ns: self.close_ns,
            hist: self.hist.to_hist(),
            trace: self.traced.map(|(ops, waited_ns)| WorkerTrace {
                spill: spill.map(Arc::new),
                ops,
                waited_ns,
            }),
            calls: self.calls,
            max_inflight: self.max_inflight,
            role: self.role,
        })
    }
}

/// How a child ended, in words: "exited with status 3", "was killed by signal 9 (SIGKILL)".
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
        _ => format!("ended ({status})"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn statuses_in_words() {
        assert_eq!(describe(ExitStatus::from_raw(3 << 8)), "exited with status 3");
        assert_eq!(describe(ExitStatus::from_raw(9)), "was killed by signal 9 (SIGKILL)");
        assert_eq!(describe(ExitStatus::from_raw(15)), "was killed by signal 15 (SIGTERM)");
    }
}
