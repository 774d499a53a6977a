//! What both kinds of worker processes share (`iolab __worker` and `iolab __strategy-worker`):
//! finding the executable, starting, stopping and reaping children, the job and message lines
//! on the pipes, the sample on the wire, the child's start, and an ended child's status in
//! words.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::engine::CallCounts;
use crate::error::{Error, Result};
use crate::latency::trace::{RECORD_BYTES, TraceOp, TraceSpill, WorkerTrace};
use crate::latency::{Buckets, FastHist, LatencyNs, SampleHist};
use crate::strategy::RoleSample;
use crate::worker::WorkerSample;

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

/// One worker process, seen from the parent: its stdin (kept open while it waits at a start
/// barrier), the thread reading its stdout, and whether it has been reaped.
pub struct Kid {
    child: Child,
    pub stdin: Option<ChildStdin>,
    reader: Option<JoinHandle<()>>,
    reaped: bool,
}

impl Kid {
    /// Starts `exe subcommand` as worker process `i`, in its own process group (a Ctrl-C
    /// reaches the parent, which stops the children), with `prepare` applied to the command
    /// first; hands its stdout to `read` on a thread of its own and sends it `job` as one JSON
    /// line.
    pub fn spawn<J: Serialize>(
        exe: &Path,
        subcommand: &str,
        i: usize,
        job: &J,
        prepare: impl FnOnce(&mut Command),
        read: impl FnOnce(ChildStdout) + Send + 'static,
    ) -> Result<Kid> {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(exe);
        cmd.arg(subcommand)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        prepare(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Run(format!("cannot start worker process {i} ({}): {e}", exe.display())))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let reader = std::thread::Builder::new()
            .name(format!("iolab-p{i}"))
            .spawn(move || read(stdout))
            .expect("spawn reader thread");
        let stdin = child.stdin.take();
        let mut kid = Kid { child, stdin, reader: Some(reader), reaped: false };
        let line = line(job)?;
        let sent = kid.stdin.as_mut().expect("piped stdin").write_all(&line);
        if let Err(e) = sent.and_then(|_| kid.stdin.as_mut().expect("piped stdin").flush()) {
            stop_all(std::slice::from_mut(&mut kid));
            return Err(Error::Run(format!("cannot send worker process {i} its job: {e}")));
        }
        Ok(kid)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reaps it once its stdout has ended; unless it `reported` its results, the error that
    /// says how it ended.
    pub fn ended(&mut self, i: usize, reported: bool) -> Result<()> {
        let status = self.child.wait();
        self.reaped = true;
        if reported {
            return Ok(());
        }
        let how = match status {
            Ok(st) => describe(st),
            Err(e) => format!("could not be waited for ({e})"),
        };
        Err(Error::Run(format!("worker {i} (process {}) {how} before reporting its results", self.pid())))
    }

    /// A failure worker `i` reported.
    pub fn failed(&self, i: usize, msg: &str) -> Error {
        Error::Run(format!("worker {i} (process {}): {msg}", self.pid()))
    }

    /// Worker `i` wrote a line that is not one of its messages.
    pub fn garbage(&self, i: usize, line: &str) -> Error {
        let line: String = line.chars().take(200).collect();
        Error::Run(format!(
            "worker {i} (process {}) sent something that is not a worker message: {line}",
            self.pid()
        ))
    }
}

/// Kills every child still running, reaps them all and joins their readers.
pub fn stop_all(kids: &mut [Kid]) {
    for k in kids.iter_mut() {
        k.stdin = None;
        if !k.reaped {
            let _ = k.child.kill();
        }
    }
    for k in kids.iter_mut() {
        if !k.reaped {
            let _ = k.child.wait();
            k.reaped = true;
        }
        if let Some(r) = k.reader.take() {
            let _ = r.join();
        }
    }
}

/// The end of a launch: stops and reaps every child, then the interruption (a signal), the
/// failure, or every worker's results in worker order (an error naming the first that
/// reported none).
pub fn finish<T>(
    kids: &mut [Kid],
    signal: Option<i32>,
    failure: Option<Error>,
    results: Vec<Option<T>>,
) -> Result<Vec<T>> {
    stop_all(kids);
    if let Some(sig) = signal {
        return Err(Error::Interrupted(sig));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or_else(|| Error::Run(format!("worker {i} reported no results"))))
        .collect()
}

/// `msg` as one JSON line.
pub fn line<T: Serialize>(msg: &T) -> Result<Vec<u8>> {
    let mut line = crate::json::to_vec(msg).map_err(|e| Error::Run(format!("worker job: {e}")))?;
    line.push(b'\n');
    Ok(line)
}

/// Sends `msg` to the parent as one JSON line on stdout.
pub fn send<T: Serialize>(msg: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    crate::json::to_writer(&mut out, msg)?;
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
    crate::json::from_str(&line).map_err(|e| format!("this is iolab's internal {what} command: {e}"))
}

/// The body of a worker process: the job from `input` ([`start`]), a check that the parent
/// still lives, then `run`, and its outcome sent to the parent: `run`'s message, or
/// `failed` with the error. The exit code: 0 when the message sent is `run`'s, 2 when the job
/// could not be read, else 1.
pub fn serve<J: DeserializeOwned, R: BufRead, M: Serialize>(
    mut input: R,
    what: &str,
    parent_pid: impl Fn(&J) -> u32,
    failed: impl Fn(String) -> M,
    run: impl FnOnce(&J, R) -> Result<M>,
) -> i32 {
    let job: J = match start(&mut input, what) {
        Ok(j) => j,
        Err(e) => {
            let _ = send(&failed(e));
            return 2;
        }
    };
    if !parent_alive(parent_pid(&job)) {
        return 1; // the parent is already gone
    }
    let (msg, ok) = match run(&job, input) {
        Ok(m) => (m, true),
        Err(e) => (failed(e.to_string()), false),
    };
    match send(&msg) {
        Ok(()) if ok => 0,
        _ => 1,
    }
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
    #[serde(default)]
    alloc_ns: Option<u64>,
    #[serde(default)]
    hints: Option<Box<[(String, String)]>>,
    close_ns: u64,
    hist: Buckets,
    /// Its percentiles, worked out from the histogram where it was recorded.
    #[serde(default)]
    figures: LatencyNs,
    /// Traced: (ops, ns the loop waited for its trace writer).
    traced: Option<(u64, u64)>,
    /// The traced ops, when they come with the sample (a strategy writer's, at most `iters`)
    /// rather than in batches while the worker runs.
    #[serde(default)]
    trace_ops: Vec<TraceOp>,
    /// Its traced ops follow the reply in chunks (an MPI rank's, streamed from its spill).
    #[serde(default)]
    streamed: bool,
    calls: CallCounts,
    max_inflight: u64,
    #[serde(default)]
    role: Option<Box<RoleSample>>,
    #[serde(default)]
    place: Option<crate::worker::Placement>,
    #[serde(default)]
    series: Option<Box<crate::latency::series::RateSeries>>,
    #[serde(default)]
    stonewall_ops: Option<u64>,
    #[serde(default)]
    found: Option<u64>,
    #[serde(default)]
    mix: Option<Box<crate::worker::mix::MixSample>>,
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
        let (figures, hist) = s.hist.into_figures_and_buckets();
        Ok(SampleWire {
            worker: s.worker,
            bytes: s.bytes,
            ops: s.ops,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            sync_ns: s.sync_ns,
            sync_calls: s.sync_calls,
            open_ns: s.open_ns,
            alloc_ns: s.alloc_ns,
            hints: s.hints,
            close_ns: s.close_ns,
            hist,
            figures,
            traced: s.trace.map(|t| (t.ops, t.waited_ns)),
            trace_ops,
            streamed: false,
            calls: s.calls.counts(),
            max_inflight: s.max_inflight,
            role: s.role,
            place: s.place,
            series: s.series,
            stonewall_ops: s.stonewall_ops,
            found: s.found,
            mix: s.mix,
        })
    }

    /// Traced: (ops, ns the loop waited for its trace writer).
    pub fn traced(&self) -> Option<(u64, u64)> {
        self.traced
    }

    /// Adds its latency counts to `h` and drops them from itself; its figures stay (a rank
    /// bundling its subtree's replies, `mpi_tree`).
    #[cfg(feature = "mpi")]
    pub fn hand_counts(&mut self, h: &mut FastHist) {
        h.add(&self.hist);
        self.hist = Buckets::default();
    }

    /// Its start on rank 0's clock, given its rank's offset.
    #[cfg(feature = "mpi")]
    pub fn start_on_root(&self, offset_ns: i64) -> u64 {
        super::mpi_clock::to_root(self.start_ns, offset_ns)
    }

    /// Adds its rate series to `sum`, its start `offset_ns` from the rank's clock and placed
    /// after the phase's earliest start `first_ns` (a rank bundling its subtree's replies,
    /// `mpi_tree`), and drops the series from itself unless a stall shows in it: then it keeps
    /// it, so that rank 0 flags the stall as it does on one host.
    #[cfg(feature = "mpi")]
    pub fn hand_series(
        &mut self,
        sum: &mut crate::latency::series::SeriesSum,
        offset_ns: i64,
        first_ns: u64,
    ) {
        let at = self.start_on_root(offset_ns).saturating_sub(first_ns);
        sum.add(at, self.series.as_deref());
        let stalled = self.series.as_ref().is_some_and(|r| {
            !r.stalls(self.worker, self.figures.p50, self.sync_ns, self.sync_calls).is_empty()
        });
        if !stalled {
            self.series = None;
        }
    }

    /// Marks its traced ops as following in chunks rather than coming with it.
    pub fn set_streamed(&mut self) {
        self.streamed = true;
    }

    /// The worker it is the sample of.
    pub fn worker(&self) -> u32 {
        self.worker
    }

    /// Whether its traced ops follow in chunks.
    pub fn streamed(&self) -> bool {
        self.streamed
    }

    /// Bytes the worker moved.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The sample, its traced ops in `spill` (the batches the parent spilled as they came) or,
    /// if they came with the sample, spilled now.
    pub fn into_sample(self, spill: Option<TraceSpill>) -> Result<WorkerSample> {
        let hist = SampleHist::Full(Box::new(self.hist.to_hist()));
        self.into_sample_with(spill, hist)
    }

    /// The sample with its histogram's counts added to `phase` rather than kept: its figures
    /// stay, and its buckets too if `keep`; its traced ops in `spill` when they came in chunks.
    pub fn into_merged(
        mut self,
        phase: &mut FastHist,
        keep: bool,
        spill: Option<TraceSpill>,
    ) -> Result<WorkerSample> {
        phase.add(&self.hist);
        let buckets = std::mem::take(&mut self.hist);
        let hist = SampleHist::Merged { figures: self.figures, buckets: keep.then_some(buckets) };
        self.into_sample_with(spill, hist)
    }

    fn into_sample_with(self, spill: Option<TraceSpill>, hist: SampleHist) -> Result<WorkerSample> {
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
            alloc_ns: self.alloc_ns,
            hints: self.hints,
            close_ns: self.close_ns,
            hist,
            trace: self
                .traced
                .map(|(ops, waited_ns)| Box::new(WorkerTrace { spill: spill.map(Arc::new), ops, waited_ns })),
            calls: self.calls.to_map(),
            max_inflight: self.max_inflight,
            role: self.role,
            place: self.place,
            series: self.series,
            stonewall_ops: self.stonewall_ops,
            found: self.found,
            mix: self.mix,
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
