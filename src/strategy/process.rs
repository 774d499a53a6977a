//! The process launcher of strategies (`launcher = process`): the binary re-executes itself
//! once per worker (`iolab __strategy-worker`), as the study's MPI processes on one node.
//! The parent creates the shared region (a memfd) and passes its descriptor to every child,
//! which maps it: barriers, the S1B token and the hand-offs between processes all go through
//! it, as between threads. Each child reads its job as one JSON line on stdin and answers with
//! its samples as one JSON line on stdout. A child that fails stops the run (through the
//! region); one that dies is reported with its exit status, and the others are killed.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Plan;
use super::coord::{CommitOrder, Group};
use super::role::{self, RoleCtx};
use super::shm::{Layout, Shm};
use crate::child::SampleWire;
use crate::error::{Error, Result};
use crate::spec::Spec;
use crate::worker::{Monitor, PhaseJob, WorkerSample};

/// The hidden subcommand a child runs.
pub const SUBCOMMAND: &str = "__strategy-worker";

/// What a child needs to run one role.
#[derive(Debug, Serialize, Deserialize)]
struct Job {
    spec: Spec,
    worker: u32,
    paths: Vec<PathBuf>,
    sizes: Vec<u64>,
    /// The shared region's descriptor (inherited) and length.
    shm_fd: i32,
    shm_len: usize,
    parent_pid: u32,
}

#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    Done(Vec<SampleWire>),
    Failed(String),
}

enum Event {
    Msg(Msg),
    Garbage(String),
    Eof,
}

struct Kid {
    child: Child,
    reader: Option<std::thread::JoinHandle<()>>,
    samples: Option<Vec<WorkerSample>>,
    ended: bool,
}

fn spawn(exe: &PathBuf, job: &Job, tx: mpsc::Sender<(usize, Event)>, i: usize) -> Result<Kid> {
    use std::os::unix::process::CommandExt;
    let fd = job.shm_fd;
    let mut cmd = Command::new(exe);
    cmd.arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    // SAFETY: runs in the child between fork and exec; fcntl is async-signal-safe and the
    // closure allocates nothing. It lets the region's descriptor survive the exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Run(format!("cannot start worker process {i} ({}): {e}", exe.display())))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::Builder::new()
        .name(format!("iolab-sp{i}"))
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let ev = match serde_json::from_str::<Msg>(&line) {
                    Ok(m) => Event::Msg(m),
                    Err(_) => Event::Garbage(line),
                };
                if tx.send((i, ev)).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, Event::Eof));
        })
        .expect("spawn reader thread");
    let mut kid = Kid { child, reader: Some(reader), samples: None, ended: false };
    let line = crate::child::line(job)?;
    let mut stdin = kid.child.stdin.take().expect("piped stdin");
    if let Err(e) = stdin.write_all(&line).and_then(|_| stdin.flush()) {
        stop(std::slice::from_mut(&mut kid));
        return Err(Error::Run(format!("cannot send worker process {i} its job: {e}")));
    }
    Ok(kid)
}

/// Kills every child still running and reaps them all.
fn stop(kids: &mut [Kid]) {
    for k in kids.iter_mut().filter(|k| !k.ended) {
        let _ = k.child.kill();
    }
    for k in kids.iter_mut() {
        if !k.ended {
            let _ = k.child.wait();
            k.ended = true;
        }
        if let Some(r) = k.reader.take() {
            let _ = r.join();
        }
    }
}

/// Runs the phase's roles as child processes.
pub fn run(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let spec = job.spec;
    let plan = Plan::of(spec).ok_or_else(|| Error::Run("no strategy in this spec".into()))?;
    let shm = Shm::create(Layout::of(&plan, spec.mem()))?;
    let exe = crate::child::exe()?;
    let (tx, rx) = mpsc::channel();
    let mut kids: Vec<Kid> = vec![];
    for (i, r) in plan.roles.iter().enumerate() {
        let j = Job {
            spec: spec.clone(),
            worker: r.worker,
            paths: job.paths.to_vec(),
            sizes: job.sizes.to_vec(),
            shm_fd: shm.fd(),
            shm_len: shm.layout().len,
            parent_pid: std::process::id(),
        };
        match spawn(&exe, &j, tx.clone(), i) {
            Ok(k) => kids.push(k),
            Err(e) => {
                shm.stop();
                stop(&mut kids);
                return Err(e);
            }
        }
    }
    drop(tx);
    let n = kids.len();
    let (mut ended, mut failure, mut signal): (usize, Option<Error>, Option<i32>) = (0, None, None);
    let mut give_up: Option<Instant> = None;
    let fail = |e: Error, failure: &mut Option<Error>, give_up: &mut Option<Instant>| {
        if failure.as_ref().is_none_or(role::is_echo) && !(failure.is_some() && role::is_echo(&e)) {
            *failure = Some(e);
        }
        shm.stop();
        // Let the others report (a real cause may come after an echo), then kill them.
        give_up.get_or_insert(Instant::now() + Duration::from_secs(2));
    };
    while ended < n && give_up.is_none_or(|t| Instant::now() < t) {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((i, Event::Msg(Msg::Done(v)))) => {
                match v.into_iter().map(|w| w.into_sample(None)).collect::<Result<Vec<_>>>() {
                    Ok(samples) => kids[i].samples = Some(samples),
                    Err(e) => fail(e, &mut failure, &mut give_up),
                }
            }
            Ok((i, Event::Msg(Msg::Failed(m)))) => {
                let e = if m.starts_with("aborted") {
                    Error::Run(m)
                } else {
                    Error::Run(format!("worker {i} (process {}): {m}", kids[i].child.id()))
                };
                fail(e, &mut failure, &mut give_up);
            }
            Ok((i, Event::Garbage(line))) => {
                let line: String = line.chars().take(200).collect();
                let e = Error::Run(format!(
                    "worker {i} (process {}) sent something that is not a worker message: {line}",
                    kids[i].child.id()
                ));
                fail(e, &mut failure, &mut give_up);
            }
            Ok((i, Event::Eof)) => {
                ended += 1;
                let status = kids[i].child.wait();
                kids[i].ended = true;
                if kids[i].samples.is_none() {
                    let how = match status {
                        Ok(st) => crate::child::describe(st),
                        Err(e) => format!("could not be waited for ({e})"),
                    };
                    let e = Error::Run(format!(
                        "worker {i} (process {}) {how} before reporting its results",
                        kids[i].child.id()
                    ));
                    fail(e, &mut failure, &mut give_up);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if signal.is_none()
            && let Some(sig) = monitor.tick(shm.progress_total())
        {
            signal = Some(sig);
            shm.stop();
            break;
        }
    }
    stop(&mut kids);
    if let Some(sig) = signal {
        return Err(Error::Interrupted(sig));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let results = kids
        .into_iter()
        .enumerate()
        .map(|(i, k)| k.samples.ok_or_else(|| Error::Run(format!("worker {i} reported no results"))))
        .collect();
    super::threads::finish(results, shm.max_in_flight())
}

/// The body of `iolab __strategy-worker`: runs one role as the parent asks; returns the exit
/// code.
pub fn child_main() -> i32 {
    let job: Job = match crate::child::start(&mut std::io::stdin().lock(), "strategy worker") {
        Ok(j) => j,
        Err(e) => {
            let _ = crate::child::send(&Msg::Failed(e));
            return 2;
        }
    };
    if !crate::child::parent_alive(job.parent_pid) {
        return 1; // the parent is already gone
    }
    let msg = match run_child(&job) {
        Ok(v) => match v.into_iter().map(|s| SampleWire::of(s, true)).collect::<Result<Vec<_>>>() {
            Ok(w) => Msg::Done(w),
            Err(e) => Msg::Failed(e.to_string()),
        },
        Err(e) => Msg::Failed(e.to_string()),
    };
    let ok = matches!(msg, Msg::Done(_));
    match crate::child::send(&msg) {
        Ok(()) if ok => 0,
        _ => 1,
    }
}

fn run_child(job: &Job) -> Result<Vec<WorkerSample>> {
    let plan = Plan::of(&job.spec).ok_or_else(|| Error::Run("no strategy in the job's spec".into()))?;
    let layout = Layout::of(&plan, job.spec.mem());
    if layout.len != job.shm_len {
        return Err(Error::Run(format!(
            "shared region of {} bytes, the plan needs {}",
            job.shm_len, layout.len
        )));
    }
    let shm = Shm::attach(job.shm_fd, layout)?;
    let role = plan
        .roles
        .iter()
        .find(|r| r.worker == job.worker)
        .ok_or_else(|| Error::Run(format!("no worker {} in the plan", job.worker)))?;
    let ctx = RoleCtx { spec: &job.spec, plan: &plan, role, paths: &job.paths, sizes: &job.sizes, shm: &shm };
    role::run(&ctx)
}
