//! Workers: what one worker of one phase is given ([`WorkerCtx`], built from a [`PhaseJob`]),
//! what it measures ([`WorkerSample`]), and the pieces of its timed loops: [`sync_loop`] and
//! [`async_loop`], [`data`] stamping, [`commits`], and the [`registry`] binding each engine to
//! its loop. Launchers ([`crate::launch`]) start workers; this layer runs them.
//!
//! A worker opens its files, waits at the start gate, then runs its ops. Its time t_i runs
//! from the gate to the end of its own last op including its final commit. The loop reads the
//! clock once per op (the end of one op is the start of the next; not at all with `latency =
//! off`), records latency into a preallocated HDR histogram (and, traced, into a batch buffer
//! handed to a writer thread a batch at a time), and allocates nothing and takes no locks.

use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

use crate::engine::{FileId, Setup};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::trace::WorkerTrace;
use crate::plan::{PhasePlan, WorkerPlan};
use crate::spec::{Spec, SyncPolicy};

pub use crate::env::monitor::Monitor;

pub mod alloc;
pub mod async_loop;
mod block_loop;
pub mod bound;
pub mod commits;
pub mod data;
mod find;
pub mod md_loop;
mod md_paths;
pub mod mix;
pub mod pace;
mod pfind;
pub mod prepare;
pub mod registry;
mod server_sample;
pub use server_sample::ServerSample;
pub mod sync_loop;

use crate::plan::verify::BlockTag;

/// Where workers wait so that they start together.
pub trait StartGate: Sync {
    fn wait(&self);
}

impl StartGate for Barrier {
    fn wait(&self) {
        Barrier::wait(self);
    }
}

/// `start = free`: no waiting; each worker starts as soon as its files are open.
pub struct FreeStart;

impl StartGate for FreeStart {
    fn wait(&self) {}
}

/// Keeps a value on its own cache lines so workers do not slow each other down.
#[repr(align(128))]
#[derive(Default)]
pub struct Padded<T>(pub T);

/// Everything one worker needs for one phase.
pub struct WorkerCtx<'a> {
    pub spec: &'a Spec,
    pub plan: &'a WorkerPlan,
    /// The worker's files (local index order).
    pub paths: Vec<PathBuf>,
    /// What each of them must still be: the inode iolab created.
    pub ids: Vec<FileId>,
    /// Global file id of each local file (what stamps and checks are keyed on).
    pub gids: Vec<u32>,
    /// Final size of each local file.
    pub sizes: Vec<u64>,
    pub write: bool,
    pub gate: &'a dyn StartGate,
    /// Set when the phase must stop (another worker failed, or a signal arrived).
    pub abort: &'a AtomicBool,
    /// Bytes done so far, for progress display.
    pub progress: &'a AtomicU64,
    /// What written blocks carry and read blocks are checked against (verification).
    pub tag: BlockTag,
    /// The phase's index among the spec's, and its time bound (`runtime`, `stonewall`).
    pub phase: usize,
    pub bound: Option<crate::spec::TimeBound>,
    /// The timed ops of its plan that hold data: all of them, or, after a time-bounded phase
    /// that wrote stopped early, the ops that phase's worker of the same index did. A metadata
    /// phase's: the items it visits (those its owner made).
    pub extent: u64,
    /// Stonewall with wear-out: where the workers meet after the stonewall.
    pub wear: Option<&'a bound::WearOut>,
    /// Stonewall with wear-out, on the one thread of an MPI rank: the target across ranks.
    pub wear_cross: Option<bound::Cross<'a>>,
    /// A metadata phase: the worker's items and where the trees are.
    pub md: Option<MdCtx<'a>>,
    /// A blast: its transport (no file is written; errors name the connection).
    pub blast: Option<crate::spec::BlastTransport>,
}

/// What a worker of a metadata phase is given.
#[derive(Clone, Copy)]
pub struct MdCtx<'a> {
    pub work: crate::plan::namespace::MdWork,
    pub ns: &'a crate::plan::namespace::NsPlan,
    /// The work directory under each target.
    pub workdirs: &'a [PathBuf],
}

/// Runs one worker: a metadata phase's loop, or the timed loop its engine is registered with.
pub fn run(engine: &registry::Registered, ctx: &WorkerCtx<'_>) -> Result<WorkerSample> {
    if ctx.md.is_some() { md_loop::run_md_worker(ctx) } else { (engine.run)(ctx) }
}

/// How long a worker took to get its buffers (allocated, every page written) and then to
/// open its engine, before the start gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Opened {
    pub alloc_ns: u64,
    pub open_ns: u64,
}

/// What one worker measured in one phase.
#[derive(Debug, Clone)]
pub struct WorkerSample {
    pub worker: u32,
    pub bytes: u64,
    pub ops: u64,
    /// CLOCK_MONOTONIC at the start gate and after the final commit.
    pub start_ns: u64,
    pub end_ns: u64,
    pub sync_ns: u64,
    pub sync_calls: u64,
    pub open_ns: u64,
    /// Allocating its buffers before the open (None where nothing is allocated: metadata
    /// phases, a strategy's sync thread).
    pub alloc_ns: Option<u64>,
    /// MPI-IO: the hints the MPI-IO layer applied to its file (None for other engines).
    pub hints: Option<Box<[(String, String)]>>,
    pub close_ns: u64,
    /// Per-op latency in ns (commits excluded).
    pub hist: crate::latency::SampleHist,
    /// Every op (with `latency = trace`), files as global ids.
    pub trace: Option<Box<WorkerTrace>>,
    /// System calls the engine made, from open to close.
    pub calls: crate::engine::CallMap,
    /// The most ops this worker had in flight at once (1 for synchronous engines).
    pub max_inflight: u64,
    /// A strategy's role: what it was and where its time went (None for plain workers).
    pub role: Option<Box<RoleSample>>,
    /// Where it ran, under the MPI launcher (None for threads and processes of one host).
    pub place: Option<Placement>,
    /// Bytes completed per interval of its time (None with `latency = off` and for a
    /// strategy's roles).
    pub series: Option<Box<crate::latency::series::RateSeries>>,
    /// Stonewall: the ops it had done when the stonewall came (None: no stonewall, or its
    /// blocks ran out first).
    pub stonewall_ops: Option<u64>,
    /// find: the entries it stated whose names matched (None for other phases).
    pub found: Option<u64>,
    /// Its workload figures apart from its latency (None for a plain phase).
    pub mix: Option<Box<mix::MixSample>>,
}

/// Where a worker ran under the MPI launcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub rank: u32,
    /// Shared with the world's list of hosts (one name per host). Not sent with a rank's
    /// reply: rank 0 names the host from the world's list by the rank.
    #[serde(skip)]
    pub host: std::sync::Arc<str>,
    /// The resident fraction of the worker's files on its host before the phase, measured
    /// there when that host is not the coordinator's (whose check covers its own view).
    pub resident: Option<f64>,
}

/// Where a role's time went, in ns, from the start barrier to its end (`times_ns` in JSON).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleTimes {
    /// Simulated computation: filling the output buffer, then spinning on the clock.
    pub compute: u64,
    /// The computation this role was asked for in all (its share of the run's compute).
    pub compute_target: u64,
    /// Inside the engine's data calls (write, writev, stores into a mapping).
    pub write: u64,
    /// Inside commit calls (fsync, fdatasync, msync).
    pub sync: u64,
    /// Moving buffers through the hand-off (taking a received buffer into the write memory).
    pub handoff: u64,
    /// Blocked: barriers, a full or empty hand-off, the S1B token, the S5 sync thread, or
    /// (sync thread) waiting for work.
    pub wait: u64,
    /// CPU time of the thread (user + system, getrusage RUSAGE_THREAD).
    pub cpu: u64,
    /// Time the thread was runnable but waiting for a CPU (the scheduler's run-queue delay,
    /// /proc/thread-self/schedstat; 0 where the kernel does not say). A role that spins is
    /// always on a CPU or waiting for one: its cpu + runq covers its compute.
    #[serde(default)]
    pub runq: u64,
}

/// What a role adds to its worker's sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleSample {
    pub role: crate::spec::strategy::Role,
    /// The thread that ran the role (gettid).
    pub tid: u32,
    pub times: RoleTimes,
    /// The threads that issued this role's commits (distinct, in order of first commit).
    pub commit_tids: Vec<u32>,
    /// The most commits in flight at once in the whole run (all workers; on MPI ranks, on
    /// one host).
    pub syncs_in_flight_max: u64,
    /// Each commit's (start, end) on the role's clock, until the launcher has counted
    /// [`RoleSample::syncs_in_flight_max`] from every role's. (Always sent: the MPI replies'
    /// encoding has no field names, so no field may be left out.)
    #[serde(default)]
    pub commit_spans_ns: Vec<(u64, u64)>,
}

impl WorkerSample {
    /// t_i: from the start gate to the end of the last op including the final commit.
    pub fn time_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// Every stall in its rate over time (none without a series): gaps of no progress far
    /// beyond its typical op ([`crate::latency::series::RateSeries::stalls`]).
    pub fn stalls(&self) -> Vec<crate::latency::series::Stall> {
        self.series
            .as_ref()
            .map_or(vec![], |r| r.stalls(self.worker, self.hist.median(), self.sync_ns, self.sync_calls))
    }

    /// A worker for tests of the figures made from samples: from `start_ns`, moving `bytes[i]`
    /// in the i-th interval of its rate series ([`crate::latency::series::BASE_NS`] each), one
    /// op per interval that moved bytes, its ops' latencies not recorded.
    #[cfg(test)]
    pub fn with_series(worker: u32, start_ns: u64, bytes: Vec<u64>) -> WorkerSample {
        use crate::latency::series::{BASE_NS, RateSeries};
        let time_ns = bytes.len() as u64 * BASE_NS;
        WorkerSample {
            worker,
            bytes: bytes.iter().sum(),
            ops: bytes.iter().filter(|&&b| b > 0).count() as u64,
            start_ns,
            end_ns: start_ns + time_ns,
            sync_ns: 0,
            sync_calls: 0,
            open_ns: 0,
            alloc_ns: None,
            hints: None,
            close_ns: 0,
            hist: crate::latency::SampleHist::empty(),
            trace: None,
            calls: Default::default(),
            max_inflight: 1,
            role: None,
            place: None,
            series: Some(Box::new(RateSeries::of_bytes(BASE_NS, time_ns, bytes))),
            stonewall_ops: None,
            found: None,
            mix: None,
        }
    }
}

impl WorkerCtx<'_> {
    /// The commit policy of this worker's phase (reads commit nothing).
    pub fn sync_policy(&self) -> SyncPolicy {
        if self.write { self.spec.sync } else { SyncPolicy::None }
    }

    /// What the engine is asked to open.
    pub fn setup(&self) -> Setup<'_> {
        let spec = self.spec;
        Setup {
            paths: &self.paths,
            ids: &self.ids,
            sizes: &self.sizes,
            write: self.write,
            direct: spec.direct,
            open_sync: spec.open_sync,
            bs: spec.max_op_bytes() as usize,
            mem: spec.mem(),
            iodepth: spec.iodepth as usize,
            pieces: self.plan.ops.parallel_pieces() as usize,
            window: spec.window_bytes,
            sync: self.sync_policy(),
            sync_call: spec.sync_call,
            shared_by_all: !spec.layout.per_worker_files(),
            mpiio: spec.mpiio.as_ref(),
            // MPI-IO sees a worker's blocks of a strided or segmented file through a file view.
            view: (spec.engine == "mpiio")
                .then(|| self.plan.ops.map.tiling(self.plan.ops.bs))
                .flatten()
                .map(|(disp, block, stride)| crate::engine::FileView { disp, block, stride }),
            remote: spec.servers.as_ref().map(|s| crate::engine::Remote {
                gids: &self.gids,
                servers: self.gids.iter().map(|&g| crate::plan::target_of(spec, g)).collect(),
                count: s.count,
                depth: s.depth as usize,
                blast: spec.phases.iter().any(|p| p.op == crate::spec::OpKind::Blast).then_some(s.blast),
            }),
            buffers: None,
        }
    }

    /// Allocates the buffers of `lens` bytes, every page written (timed as alloc_ns), then
    /// opens the engine, which takes them (timed as open_ns, which so holds no allocation).
    /// On failure, tells the other workers and still meets them at the gate so nobody waits
    /// forever.
    pub fn open_engine<T>(
        &self,
        lens: impl FnOnce(&Setup<'_>) -> Vec<usize>,
        open: impl FnOnce(&Setup<'_>) -> Result<T>,
    ) -> Result<(T, Opened)> {
        let t_alloc = now_ns();
        let setup = self.setup();
        let buffers = self.before_gate(crate::engine::Buffers::allocate(&setup, &lens(&setup)))?;
        let alloc_ns = now_ns() - t_alloc;
        let setup = Setup { buffers: Some(&buffers), ..setup };
        let t_open = now_ns();
        let opened = open(&setup);
        let open_ns = now_ns() - t_open;
        self.before_gate(opened).map(|e| (e, Opened { alloc_ns, open_ns }))
    }

    /// A step before the gate: on failure, tells the other workers and still meets them at the
    /// gate so nobody waits forever.
    pub fn before_gate<T>(&self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.abort.store(true, Relaxed);
            self.gate.wait();
        }
        r
    }

    /// The error for op `k`'s failed call (`op`: what it was).
    pub fn op_error(&self, k: u64, op: crate::plan::Op, call: &'static str, e: std::io::Error) -> Error {
        match self.blast {
            Some(t) => blast_error(t, call, &format!("block {k}"), e),
            None => Error::io(call, &self.paths[op.file as usize], Some(op.offset), e),
        }
    }

    /// A commit's error as it reaches the user: a blast's end names the connection, not the
    /// file path a blast never has.
    pub fn commit_error(&self, e: Error) -> Error {
        match (self.blast, e) {
            (Some(t), Error::Io { call, source, .. }) => blast_error(t, call, "its end", source),
            (_, e) => e,
        }
    }
}

/// One phase's work, handed to a launcher.
pub struct PhaseJob<'a> {
    pub spec: &'a Spec,
    pub phase: &'a PhasePlan,
    /// Paths of all files of the run, by global file id.
    pub paths: &'a [PathBuf],
    /// What each file must still be (the inode iolab created), by global file id.
    pub ids: &'a [FileId],
    /// Final sizes of all files of the run, by global file id.
    pub sizes: &'a [u64],
    pub engine: &'static registry::Registered,
    /// What written blocks carry and read blocks are checked against.
    pub tag: BlockTag,
    /// Per worker: the timed ops of its plan that hold data, when fewer than planned (after a
    /// time-bounded phase that wrote stopped early); empty: all of them. A metadata phase's:
    /// per owner, the items there are (after a stonewalled create or mkdir stopped early).
    pub extents: &'a [u64],
    /// The work directory under each target (where the metadata phases' trees are).
    pub workdirs: &'a [PathBuf],
    /// The namespace of the metadata phases, if the run has any.
    pub namespace: Option<&'a crate::plan::namespace::NsPlan>,
}

impl PhaseJob<'_> {
    /// Builds worker `i`'s context.
    pub fn ctx<'a>(
        &'a self,
        i: usize,
        gate: &'a dyn StartGate,
        abort: &'a AtomicBool,
        progress: &'a AtomicU64,
    ) -> WorkerCtx<'a> {
        let plan = &self.phase.workers[i];
        WorkerCtx {
            spec: self.spec,
            plan,
            paths: plan.files.iter().map(|&g| self.paths[g as usize].clone()).collect(),
            ids: plan.files.iter().map(|&g| self.ids.get(g as usize).copied().unwrap_or_default()).collect(),
            gids: plan.files.clone(),
            sizes: plan.files.iter().map(|&g| self.sizes[g as usize]).collect(),
            write: self.phase.op.writes(),
            gate,
            abort,
            progress,
            tag: self.tag,
            phase: self.phase.index,
            bound: self.spec.phase_bound(&self.spec.phases[self.phase.index]),
            extent: match plan.md {
                // A metadata phase's extents are by owner: the items each worker made.
                Some(m) => self.extents.get(m.owner as usize).map_or(m.items, |&e| e.min(m.items)),
                None => self.extents.get(i).map_or(plan.ops.timed_ops(), |&e| e.min(plan.ops.timed_ops())),
            },
            wear: None,
            wear_cross: None,
            md: plan.md.zip(self.namespace).map(|(work, ns)| MdCtx { work, ns, workdirs: self.workdirs }),
            blast: (self.phase.op == crate::spec::OpKind::Blast)
                .then(|| self.spec.servers.as_ref().map(|s| s.blast))
                .flatten(),
        }
    }

    /// Whether the phase's workers meet after a stonewall (wear-out).
    pub fn wears_out(&self) -> bool {
        let ph = &self.spec.phases[self.phase.index];
        matches!(self.spec.phase_bound(ph), Some(crate::spec::TimeBound::Stonewall { wear_out: true, .. }))
    }
}

/// A failed call of a blast (`what`: the block, or its end), named by the connection: the
/// blast's transport to its I/O-server rank.
pub fn blast_error(t: crate::spec::BlastTransport, call: &str, what: &str, e: std::io::Error) -> Error {
    let how = if t.is_tcp() { "its TCP connection" } else { "MPI" };
    Error::Run(format!(
        "{call} of {what} of the blast to the I/O-server rank over {how} (blast_transport = {}): {e}",
        t.name()
    ))
}

/// A trace that could not be written.
pub fn trace_err(e: std::io::Error) -> Error {
    Error::Run(format!("trace: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::BlastTransport;

    /// A blast's failed send or end names the connection and the block, never a file path
    /// (a blast writes no file).
    #[test]
    fn a_blast_error_names_the_connection() {
        let e = blast_error(
            BlastTransport::Tcp,
            "send",
            "block 7",
            std::io::Error::other("Connection reset by peer"),
        );
        assert_eq!(
            e.to_string(),
            "send of block 7 of the blast to the I/O-server rank over its TCP connection (blast_transport = tcp): Connection reset by peer"
        );
        let e = blast_error(BlastTransport::Mpi, "commit-request", "its end", std::io::Error::other("short"));
        assert!(e.to_string().contains("over MPI (blast_transport = mpi): short"), "{e}");
        assert!(!e.to_string().replace("I/O", "").contains('/'), "no path: {e}");
    }
}
