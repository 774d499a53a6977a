//! Process workers (`launcher = process`): the binary re-executes itself once per worker
//! (`iolab __worker`), as Russell's parent process spawned its children.
//!
//! The parent writes one JSON line to each child's stdin: the resolved spec, the phase and
//! worker index, and the paths of the run's files; the child rebuilds the plan (a pure
//! function of the spec) and runs the same timed loop as a thread would, through a
//! [`StartGate`] made of its pipes. With `start = barrier` each child says `Ready` on stdout
//! after opening its files and then blocks reading stdin; once every child is ready the
//! parent closes their stdins and all reads return at once. With `start = free` a child starts
//! as soon as its files are open. A traced child sends its ops while it runs, a batch at a
//! time (a line, then the batch's encoded ops), and the parent spills them as they come; at the
//! end the child sends its sample (histogram as [`Buckets`]) as one JSON line and exits. A child that dies or fails stops the phase: the others
//! are killed, the error names the worker, its pid and its exit status or signal.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Buckets, Monitor, PhaseJob, StartGate, WorkerSample};
use crate::error::{Error, Result};
use crate::spec::{Spec, StartMode};
use crate::trace::{RECORD_BYTES, TraceSpill, WorkerTrace};

/// The hidden subcommand a child runs.
pub const SUBCOMMAND: &str = "__worker";
/// Environment variable naming the executable to start as a worker (default: this one).
pub const EXE_VAR: &str = "IOLAB_WORKER_EXE";

/// What a child needs to run one worker of one phase.
#[derive(Debug, Serialize, Deserialize)]
struct ChildJob {
    spec: Spec,
    phase: usize,
    worker: usize,
    /// Paths of all files of the run, by global file id.
    paths: Vec<PathBuf>,
    /// What the blocks carry or must carry (verification).
    tag: crate::verify::BlockTag,
    parent_pid: u32,
}

/// A line a child writes on stdout.
#[derive(Debug, Serialize, Deserialize)]
enum ChildMsg {
    /// Files open, waiting at the gate.
    Ready,
    /// A batch of traced ops: `ops` encoded ops ([`RECORD_BYTES`] each) follow the line.
    Trace {
        ops: u64,
    },
    Done(SampleWire),
    Failed(String),
}

/// A [`WorkerSample`] as it crosses the pipe.
#[derive(Debug, Serialize, Deserialize)]
struct SampleWire {
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
    /// Traced: (ops, ns the loop waited for its trace writer); the ops came as batches.
    traced: Option<(u64, u64)>,
    calls: crate::engine::CallCounts,
    max_inflight: u64,
}

impl SampleWire {
    fn from_sample(s: WorkerSample) -> SampleWire {
        SampleWire {
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
            calls: s.calls,
            max_inflight: s.max_inflight,
        }
    }

    /// The sample, with the traced ops the parent spilled as they came.
    fn into_sample(self, spill: Option<TraceSpill>) -> WorkerSample {
        WorkerSample {
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
            role: None,
        }
    }
}

/// What a reader thread reports about one child's stdout.
enum Event {
    Msg(ChildMsg),
    /// The child's results, with its traced ops if it sent any.
    Done(SampleWire, Option<TraceSpill>),
    Garbage(String),
    /// Its traced ops could not be kept.
    TraceFailed(String),
    Eof,
}

struct Kid {
    child: Child,
    stdin: Option<ChildStdin>,
    reader: Option<std::thread::JoinHandle<()>>,
    sample: Option<WorkerSample>,
    status: Option<ExitStatus>,
}

fn worker_exe() -> Result<PathBuf> {
    match std::env::var_os(EXE_VAR).filter(|v| !v.is_empty()) {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe()
            .map_err(|e| Error::Run(format!("cannot find the iolab executable to start workers: {e}"))),
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

fn spawn(exe: &PathBuf, job: &PhaseJob<'_>, i: usize, tx: mpsc::Sender<(usize, Event)>) -> Result<Kid> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(exe)
        .arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: a Ctrl-C reaches the parent, which stops the children.
        .process_group(0)
        .spawn()
        .map_err(|e| Error::Run(format!("cannot start worker process {i} ({}): {e}", exe.display())))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::Builder::new()
        .name(format!("iolab-p{i}"))
        .spawn(move || read_child(BufReader::new(stdout), i, &tx))
        .expect("spawn reader thread");
    let mut kid = Kid { child, stdin: None, reader: Some(reader), sample: None, status: None };
    let cj = ChildJob {
        spec: job.spec.clone(),
        phase: job.phase.index,
        worker: i,
        paths: job.paths.to_vec(),
        tag: job.tag,
        parent_pid: std::process::id(),
    };
    let mut stdin = kid.child.stdin.take().expect("piped stdin");
    let mut line = serde_json::to_vec(&cj).map_err(|e| Error::Run(format!("worker job: {e}")))?;
    line.push(b'\n');
    if let Err(e) = stdin.write_all(&line).and_then(|_| stdin.flush()) {
        stop(std::slice::from_mut(&mut kid));
        return Err(Error::Run(format!("cannot send worker process {i} its job: {e}")));
    }
    // Free start: nothing more to say. Barrier: closing stdin is the start signal.
    if job.spec.start == StartMode::Barrier {
        kid.stdin = Some(stdin);
    }
    Ok(kid)
}

/// Reads one child's stdout: JSON lines, each trace batch followed by its encoded ops, which
/// go straight into a spill file (so the parent holds one batch at a time, whatever the
/// trace's length).
fn read_child(mut out: BufReader<std::process::ChildStdout>, i: usize, tx: &mpsc::Sender<(usize, Event)>) {
    let mut spill: Option<TraceSpill> = None;
    let mut bytes = vec![];
    let mut line = String::new();
    loop {
        line.clear();
        match out.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = line.trim_end_matches('\n');
        let ev = match serde_json::from_str::<ChildMsg>(text) {
            Ok(ChildMsg::Trace { ops }) => {
                bytes.resize(ops as usize * RECORD_BYTES, 0);
                if out.read_exact(&mut bytes).is_err() {
                    break;
                }
                let kept = match spill.as_mut() {
                    Some(s) => Ok(s),
                    None => TraceSpill::new().map(|s| spill.insert(s)),
                }
                .and_then(|s| s.append_encoded(&bytes, ops));
                match kept {
                    Ok(()) => continue,
                    Err(e) => Event::TraceFailed(e.to_string()),
                }
            }
            Ok(ChildMsg::Done(s)) => {
                let spill = match (s.traced, spill.take()) {
                    (Some(_), None) => match TraceSpill::new() {
                        Ok(empty) => Some(empty),
                        Err(e) => {
                            let _ = tx.send((i, Event::TraceFailed(e.to_string())));
                            None
                        }
                    },
                    (_, sp) => sp,
                };
                Event::Done(s, spill)
            }
            Ok(m) => Event::Msg(m),
            Err(_) => Event::Garbage(text.to_string()),
        };
        if tx.send((i, ev)).is_err() {
            return;
        }
    }
    let _ = tx.send((i, Event::Eof));
}

/// Kills every child still running and reaps them all.
fn stop(kids: &mut [Kid]) {
    for k in kids.iter_mut() {
        k.stdin = None;
        if k.status.is_none() {
            let _ = k.child.kill();
        }
    }
    for k in kids.iter_mut() {
        if k.status.is_none() {
            k.status = k.child.wait().ok();
        }
        if let Some(r) = k.reader.take() {
            let _ = r.join();
        }
    }
}

/// Runs a phase's workers as child processes.
pub fn run_phase_processes(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let n = job.phase.workers.len();
    let exe = worker_exe()?;
    let (tx, rx) = mpsc::channel::<(usize, Event)>();
    let mut kids: Vec<Kid> = Vec::with_capacity(n);
    for i in 0..n {
        match spawn(&exe, job, i, tx.clone()) {
            Ok(k) => kids.push(k),
            Err(e) => {
                stop(&mut kids);
                return Err(e);
            }
        }
    }
    drop(tx);
    let mut failure: Option<Error> = None;
    let mut signal = None;
    let (mut ready, mut ended, mut bytes_done) = (0usize, 0usize, 0u64);
    let mut last_tick = Instant::now();
    while ended < n && failure.is_none() {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((_, Event::Msg(ChildMsg::Ready))) => {
                ready += 1;
                if ready == n {
                    // Everyone is at the gate: open it (each child's read returns EOF).
                    for k in &mut kids {
                        k.stdin = None;
                    }
                }
            }
            Ok((i, Event::Done(s, spill))) => {
                bytes_done += s.bytes;
                kids[i].sample = Some(s.into_sample(spill));
            }
            Ok((i, Event::TraceFailed(msg))) => {
                failure = Some(Error::Run(format!(
                    "worker {i} (process {}): keeping its trace: {msg}",
                    kids[i].child.id()
                )));
            }
            Ok((_, Event::Msg(ChildMsg::Done(_) | ChildMsg::Trace { .. }))) => {}
            Ok((i, Event::Msg(ChildMsg::Failed(msg)))) => {
                failure = Some(Error::Run(format!("worker {i} (process {}): {msg}", kids[i].child.id())));
            }
            Ok((i, Event::Garbage(line))) => {
                let line: String = line.chars().take(200).collect();
                failure = Some(Error::Run(format!(
                    "worker {i} (process {}) sent something that is not a worker message: {line}",
                    kids[i].child.id()
                )));
            }
            Ok((i, Event::Eof)) => {
                ended += 1;
                let status = kids[i].child.wait();
                kids[i].status = status.as_ref().ok().copied();
                if kids[i].sample.is_none() && failure.is_none() {
                    let how = match status {
                        Ok(st) => describe(st),
                        Err(e) => format!("could not be waited for ({e})"),
                    };
                    failure = Some(Error::Run(format!(
                        "worker {i} (process {}) {how} before reporting its results",
                        kids[i].child.id()
                    )));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if last_tick.elapsed() >= Duration::from_millis(50) {
            last_tick = Instant::now();
            if let Some(sig) = monitor.tick(bytes_done) {
                signal = Some(sig);
                break;
            }
        }
    }
    stop(&mut kids);
    if let Some(sig) = signal {
        return Err(Error::Interrupted(sig));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    kids.into_iter()
        .enumerate()
        .map(|(i, k)| k.sample.ok_or_else(|| Error::Run(format!("worker {i} reported no results"))))
        .collect()
}

/// The start gate of a child: pipes to the parent.
struct PipeGate<'a> {
    input: Mutex<BufReader<std::io::Stdin>>,
    abort: &'a AtomicBool,
    free: bool,
}

impl StartGate for PipeGate<'_> {
    fn wait(&self) {
        if self.abort.load(Relaxed) {
            // Opening failed: no readiness to announce; the error follows.
            return;
        }
        if send(&ChildMsg::Ready).is_err() {
            self.abort.store(true, Relaxed);
            return;
        }
        if !self.free {
            let mut byte = [0u8; 1];
            let mut input = self.input.lock().unwrap_or_else(|p| p.into_inner());
            if !matches!(input.read(&mut byte), Ok(0)) {
                self.abort.store(true, Relaxed);
            }
        }
    }
}

fn send(msg: &ChildMsg) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, msg)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Sends one batch of traced ops to the parent (from the worker's trace writer thread): the
/// line and the bytes under one lock, so no other message comes between them.
fn send_trace_batch(bytes: &[u8], ops: u64) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &ChildMsg::Trace { ops })?;
    out.write_all(b"\n")?;
    out.write_all(bytes)?;
    out.flush()
}

/// The body of `iolab __worker`: runs one worker as the parent asks; returns the exit code.
pub fn child_main() -> i32 {
    // SAFETY: resetting two signal dispositions to their defaults and asking the kernel to
    // kill us if the parent dies are plain system calls with no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    }
    crate::trace::send_batches_with(send_trace_batch);
    let mut input = BufReader::new(std::io::stdin());
    let mut line = String::new();
    let job: ChildJob = match input.read_line(&mut line).map_err(|e| e.to_string()).and_then(|_| {
        serde_json::from_str(&line).map_err(|e| format!("this is iolab's internal worker command: {e}"))
    }) {
        Ok(j) => j,
        Err(e) => {
            let _ = send(&ChildMsg::Failed(e));
            return 2;
        }
    };
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } as u32 != job.parent_pid {
        return 1; // the parent is already gone
    }
    let msg = match run_child(&job, input) {
        Ok(s) => ChildMsg::Done(SampleWire::from_sample(s)),
        Err(e) => ChildMsg::Failed(e.to_string()),
    };
    let ok = matches!(msg, ChildMsg::Done(_));
    match send(&msg) {
        Ok(()) if ok => 0,
        _ => 1,
    }
}

fn run_child(job: &ChildJob, input: BufReader<std::io::Stdin>) -> Result<WorkerSample> {
    let plan = crate::plan::plan(&job.spec);
    let phase = plan
        .phases
        .get(job.phase)
        .filter(|p| job.worker < p.workers.len())
        .ok_or_else(|| Error::Run(format!("no worker {} in phase {}", job.worker, job.phase)))?;
    let engine = crate::engine::find(&job.spec.engine)
        .ok_or_else(|| Error::Run(format!("no engine {}", job.spec.engine)))?;
    let abort = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    let gate = PipeGate { input: Mutex::new(input), abort: &abort, free: job.spec.start == StartMode::Free };
    let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
    let pj = PhaseJob { spec: &job.spec, phase, paths: &job.paths, sizes: &sizes, engine, tag: job.tag };
    let ctx = pj.ctx(job.worker, &gate, &abort, &progress);
    (engine.run)(&ctx)
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
