//! The process launcher of strategies (`launcher = process`): the binary re-executes itself
//! once per worker (`iolab __strategy-worker`), as the study's MPI processes on one node.
//! The parent creates the shared region (a memfd) and passes its descriptor to every child,
//! which maps it: barriers, the S1B token and the hand-offs between processes all go through
//! it, as between threads. Each child reads its job as one JSON line on stdin and answers with
//! its samples as one JSON line on stdout. A child that fails stops the run (through the
//! region); one that dies is reported with its exit status, and the others are killed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::launch::child::{Kid, SampleWire, stop_all};
use crate::spec::Spec;
use crate::strategy::Plan;
use crate::strategy::coord::Group;
use crate::strategy::loops::{self, RoleCtx};
use crate::strategy::shm::{Layout, Shm};
use crate::worker::{Monitor, PhaseJob, WorkerSample};

/// The hidden subcommand a child runs.
pub const SUBCOMMAND: &str = "__strategy-worker";

/// What a child needs to run one role.
#[derive(Debug, Serialize, Deserialize)]
struct Job {
    spec: Spec,
    worker: u32,
    paths: Vec<PathBuf>,
    /// What each file must still be (the inode iolab created).
    ids: Vec<crate::engine::FileId>,
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

/// Starts worker process `i` and sends it its job; the shared region's descriptor survives
/// the exec.
fn spawn(exe: &Path, job: &Job, tx: mpsc::Sender<(usize, Event)>, i: usize) -> Result<Kid> {
    use std::os::unix::process::CommandExt;
    let fd = job.shm_fd;
    let keep_region = |cmd: &mut std::process::Command| {
        // SAFETY: runs in the child between fork and exec; fcntl is async-signal-safe and the
        // closure allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    };
    let read = move |stdout| {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let ev = match crate::json::from_str::<Msg>(&line) {
                Ok(m) => Event::Msg(m),
                Err(_) => Event::Garbage(line),
            };
            if tx.send((i, ev)).is_err() {
                return;
            }
        }
        let _ = tx.send((i, Event::Eof));
    };
    let mut kid = Kid::spawn(exe, SUBCOMMAND, i, job, keep_region, read)?;
    kid.stdin = None; // the job is all a strategy worker reads
    Ok(kid)
}

/// Runs the phase's roles as child processes.
pub fn run(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let spec = job.spec;
    let plan = Plan::of(spec).ok_or_else(|| Error::Run("no strategy in this spec".into()))?;
    let shm = Shm::create(Layout::of(&plan, spec.mem()))?;
    let exe = crate::launch::child::exe()?;
    let (tx, rx) = mpsc::channel();
    let mut kids: Vec<Kid> = vec![];
    for (i, r) in plan.roles.iter().enumerate() {
        let j = Job {
            spec: spec.clone(),
            worker: r.worker,
            paths: job.paths.to_vec(),
            ids: job.ids.to_vec(),
            sizes: job.sizes.to_vec(),
            shm_fd: shm.fd(),
            shm_len: shm.layout().len,
            parent_pid: std::process::id(),
        };
        match spawn(&exe, &j, tx.clone(), i) {
            Ok(k) => kids.push(k),
            Err(e) => {
                shm.stop();
                stop_all(&mut kids);
                return Err(e);
            }
        }
    }
    drop(tx);
    let n = kids.len();
    let mut samples: Vec<Option<Vec<WorkerSample>>> = (0..n).map(|_| None).collect();
    let (mut ended, mut failure, mut signal): (usize, Option<Error>, Option<i32>) = (0, None, None);
    let mut give_up: Option<Instant> = None;
    let fail = |e: Error, failure: &mut Option<Error>, give_up: &mut Option<Instant>| {
        Error::keep_telling(failure, e);
        shm.stop();
        // Let the others report (a real cause may come after an echo), then kill them.
        give_up.get_or_insert(Instant::now() + Duration::from_secs(2));
    };
    while ended < n && give_up.is_none_or(|t| Instant::now() < t) {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((i, Event::Msg(Msg::Done(v)))) => {
                match v.into_iter().map(|w| w.into_sample(None)).collect::<Result<Vec<_>>>() {
                    Ok(v) => samples[i] = Some(v),
                    Err(e) => fail(e, &mut failure, &mut give_up),
                }
            }
            Ok((i, Event::Msg(Msg::Failed(m)))) => {
                let e = if m.starts_with("aborted") { Error::Run(m) } else { kids[i].failed(i, &m) };
                fail(e, &mut failure, &mut give_up);
            }
            Ok((i, Event::Garbage(line))) => fail(kids[i].garbage(i, &line), &mut failure, &mut give_up),
            Ok((i, Event::Eof)) => {
                ended += 1;
                if let Err(e) = kids[i].ended(i, samples[i].is_some()) {
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
    let samples = crate::launch::child::finish(&mut kids, signal, failure, samples)?;
    crate::launch::strategy_threads::finish(samples.into_iter().map(Ok).collect())
}

/// The body of `iolab __strategy-worker`: runs one role as the parent asks; returns the exit
/// code.
pub fn child_main() -> i32 {
    crate::launch::child::serve(
        std::io::stdin().lock(),
        "strategy worker",
        |job: &Job| job.parent_pid,
        Msg::Failed,
        |job, _| {
            Ok(Msg::Done(
                run_child(job)?.into_iter().map(|s| SampleWire::of(s, true)).collect::<Result<_>>()?,
            ))
        },
    )
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
    let ctx = RoleCtx {
        spec: &job.spec,
        plan: &plan,
        role,
        paths: &job.paths,
        ids: &job.ids,
        sizes: &job.sizes,
        coord: &shm,
    };
    loops::run(&ctx)
}
