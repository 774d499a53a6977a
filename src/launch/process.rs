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
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::latency::trace::{RECORD_BYTES, TraceSpill};
use crate::launch::child::{Kid, SampleWire, stop_all};
use crate::spec::{Spec, StartMode};
use crate::worker::{Monitor, PhaseJob, StartGate, WorkerSample};

/// The hidden subcommand a child runs.
pub const SUBCOMMAND: &str = "__worker";

/// What a child needs to run one worker of one phase.
#[derive(Debug, Serialize, Deserialize)]
struct ChildJob {
    spec: Spec,
    phase: usize,
    worker: usize,
    /// Paths of all files of the run, by global file id.
    paths: Vec<PathBuf>,
    /// What each file must still be (the inode iolab created), by global file id.
    ids: Vec<crate::engine::FileId>,
    /// What the blocks carry or must carry (verification).
    tag: crate::plan::verify::BlockTag,
    parent_pid: u32,
    /// Per worker: the ops with data, when fewer than planned ([`PhaseJob::extents`]).
    #[serde(default)]
    extents: Vec<u64>,
    /// Stonewall with wear-out: the descriptor of the meeting's shared memory (inherited).
    #[serde(default)]
    wear_fd: Option<i32>,
    /// The work directory under each target (the metadata phases' trees).
    #[serde(default)]
    workdirs: Vec<PathBuf>,
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
    Done(Box<SampleWire>),
    Failed(String),
}

enum Event {
    Msg(ChildMsg),
    /// The child's results, with its traced ops if it sent any.
    Done(Box<SampleWire>, Option<TraceSpill>),
    Garbage(String),
    /// Its traced ops could not be kept.
    TraceFailed(String),
    Eof,
}

/// Starts worker process `i` of the phase and sends it its job (and, with wear-out, the
/// descriptor of the meeting, which survives the exec).
fn spawn(
    exe: &Path,
    job: &PhaseJob<'_>,
    i: usize,
    wear_fd: Option<i32>,
    tx: mpsc::Sender<(usize, Event)>,
) -> Result<Kid> {
    use std::os::unix::process::CommandExt;
    let cj = ChildJob {
        spec: job.spec.clone(),
        phase: job.phase.index,
        worker: i,
        paths: job.paths.to_vec(),
        ids: job.ids.to_vec(),
        tag: job.tag,
        parent_pid: std::process::id(),
        extents: job.extents.to_vec(),
        wear_fd,
        workdirs: job.workdirs.to_vec(),
    };
    let keep_fd = |cmd: &mut std::process::Command| {
        if let Some(fd) = wear_fd {
            // SAFETY: runs in the child between fork and exec; fcntl is async-signal-safe and
            // the closure allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
    };
    let mut kid =
        Kid::spawn(exe, SUBCOMMAND, i, &cj, keep_fd, move |out| read_child(BufReader::new(out), i, &tx))?;
    // Free start: nothing more to say. Barrier: closing stdin is the start signal.
    if job.spec.start != StartMode::Barrier {
        kid.stdin = None;
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
        let ev = match crate::json::from_str::<ChildMsg>(text) {
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
                let spill = match (s.traced(), spill.take()) {
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

/// Runs a phase's workers as child processes.
pub fn run_phase_processes(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let n = job.phase.workers.len();
    let exe = crate::launch::child::exe()?;
    let wear = if job.wears_out() { Some(super::shared_wear::SharedWear::create(n as u64)?) } else { None };
    let (tx, rx) = mpsc::channel::<(usize, Event)>();
    let mut kids: Vec<Kid> = Vec::with_capacity(n);
    for i in 0..n {
        match spawn(&exe, job, i, wear.as_ref().map(|w| w.fd()), tx.clone()) {
            Ok(k) => kids.push(k),
            Err(e) => {
                stop_all(&mut kids);
                return Err(e);
            }
        }
    }
    drop(tx);
    let mut samples: Vec<Option<WorkerSample>> = (0..n).map(|_| None).collect();
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
                bytes_done += s.bytes();
                match s.into_sample(spill) {
                    Ok(s) => samples[i] = Some(s),
                    Err(e) => failure = Some(e),
                }
            }
            Ok((i, Event::TraceFailed(msg))) => {
                failure = Some(kids[i].failed(i, &format!("keeping its trace: {msg}")));
            }
            Ok((_, Event::Msg(ChildMsg::Done(_) | ChildMsg::Trace { .. }))) => {}
            Ok((i, Event::Msg(ChildMsg::Failed(msg)))) => {
                failure = Some(kids[i].failed(i, &msg));
            }
            Ok((i, Event::Garbage(line))) => failure = Some(kids[i].garbage(i, &line)),
            Ok((i, Event::Eof)) => {
                ended += 1;
                if let Err(e) = kids[i].ended(i, samples[i].is_some())
                    && failure.is_none()
                {
                    failure = Some(e);
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
    crate::launch::child::finish(&mut kids, signal, failure, samples)
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
        if crate::launch::child::send(&ChildMsg::Ready).is_err() {
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

/// Sends one batch of traced ops to the parent (from the worker's trace writer thread): the
/// line and the bytes under one lock, so no other message comes between them.
fn send_trace_batch(bytes: &[u8], ops: u64) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    crate::json::to_writer(&mut out, &ChildMsg::Trace { ops })?;
    out.write_all(b"\n")?;
    out.write_all(bytes)?;
    out.flush()
}

/// The body of `iolab __worker`: runs one worker as the parent asks; returns the exit code.
pub fn child_main() -> i32 {
    crate::latency::trace::send_batches_with(send_trace_batch);
    crate::launch::child::serve(
        BufReader::new(std::io::stdin()),
        "worker",
        |job: &ChildJob| job.parent_pid,
        ChildMsg::Failed,
        |job, input| Ok(ChildMsg::Done(Box::new(SampleWire::of(run_child(job, input)?, false)?))),
    )
}

fn run_child(job: &ChildJob, input: BufReader<std::io::Stdin>) -> Result<WorkerSample> {
    let plan = crate::plan::plan(&job.spec);
    let phase = plan
        .phases
        .get(job.phase)
        .filter(|p| job.worker < p.workers.len())
        .ok_or_else(|| Error::Run(format!("no worker {} in phase {}", job.worker, job.phase)))?;
    let engine = crate::worker::registry::find(&job.spec.engine)
        .ok_or_else(|| Error::Run(format!("no engine {}", job.spec.engine)))?;
    let abort = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    let gate = PipeGate { input: Mutex::new(input), abort: &abort, free: job.spec.start == StartMode::Free };
    let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
    let pj = PhaseJob {
        spec: &job.spec,
        phase,
        paths: &job.paths,
        ids: &job.ids,
        sizes: &sizes,
        engine,
        tag: job.tag,
        extents: &job.extents,
        workdirs: &job.workdirs,
        namespace: plan.namespace.as_ref(),
    };
    let wear = job.wear_fd.map(super::shared_wear::SharedWear::attach).transpose()?;
    let mut ctx = pj.ctx(job.worker, &gate, &abort, &progress);
    ctx.wear = wear.as_ref().map(|w| w.get());
    crate::worker::run(engine, &ctx)
}
