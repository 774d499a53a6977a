//! Workers: the timed I/O loop every engine runs in, and the launchers that start workers.
//!
//! A worker opens its files, waits at the start gate, then runs its ops. Its time t_i runs
//! from the gate to the end of its own last op including its final commit. The loop reads the
//! clock once per op (the end of one op is the start of the next; not at all with `latency =
//! off`), records latency into a preallocated HDR histogram (and, traced, into a batch buffer
//! handed to a writer thread a batch at a time), and allocates nothing and takes no locks.

use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engine::{CallCounts, CallError, Engine, EngineDef, Setup};
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::latency::trace::WorkerTrace;
use crate::latency::{Hist, Off, Recorder, Traced};
use crate::plan::fill;
use crate::plan::{FileRole, PhasePlan, WorkerPlan};
use crate::spec::{LatencyMode, Launcher, Spec, StartMode, SyncCall, SyncPolicy};

pub mod async_loop;
pub mod verify;
use verify::BlockTag;

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
    pub close_ns: u64,
    /// Per-op latency in ns (commits excluded).
    pub hist: Histogram<u64>,
    /// Every op (with `latency = trace`), files as global ids.
    pub trace: Option<WorkerTrace>,
    /// System calls the engine made, from open to close.
    pub calls: CallCounts,
    /// The most ops this worker had in flight at once (1 for synchronous engines).
    pub max_inflight: u64,
    /// A strategy's role: what it was and where its time went (None for plain workers).
    pub role: Option<crate::strategy::RoleSample>,
}

impl WorkerSample {
    /// t_i: from the start gate to the end of the last op including the final commit.
    pub fn time_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// A latency histogram as (value_ns, count) pairs: what crosses a pipe and goes in the store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Buckets(pub Vec<(u64, u64)>);

/// A new histogram covering 1 ns to about 18 minutes at 3 significant digits.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 40, 3).expect("valid histogram bounds")
}

impl Buckets {
    pub fn from_hist(h: &Histogram<u64>) -> Buckets {
        Buckets(h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect())
    }
    pub fn to_hist(&self) -> Histogram<u64> {
        let mut h = new_hist();
        for &(v, c) in &self.0 {
            h.saturating_record_n(v, c);
        }
        h
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
            sizes: &self.sizes,
            write: self.write,
            direct: spec.direct,
            open_sync: spec.open_sync,
            bs: spec.bs_bytes as usize,
            mem: spec.mem(),
            iodepth: spec.iodepth as usize,
            window: spec.window_bytes,
            sync: self.sync_policy(),
            sync_call: spec.sync_call,
        }
    }

    /// Opens the engine (timed as open_ns). On failure, tells the other workers and still
    /// meets them at the gate so nobody waits forever.
    pub fn open_engine<T>(&self, open: impl FnOnce(&Setup<'_>) -> Result<T>) -> Result<(T, u64)> {
        let t_open = now_ns();
        let opened = open(&self.setup());
        let open_ns = now_ns() - t_open;
        self.before_gate(opened).map(|e| (e, open_ns))
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

    /// The error for op `k`'s failed call.
    pub fn op_error(&self, k: u64, call: &'static str, e: std::io::Error) -> Error {
        let op = self.plan.ops.op(k);
        Error::io(call, &self.paths[op.file as usize], Some(op.offset), e)
    }
}

/// The timed loop, the same for every synchronous engine; monomorphised per engine and per
/// latency mode (so the mode costs no branch per op).
pub fn run_worker<E: Engine>(ctx: &WorkerCtx<'_>) -> Result<WorkerSample> {
    match ctx.spec.latency {
        LatencyMode::Off => timed_loop::<E, Off>(ctx, Ok(Off)),
        LatencyMode::Histogram => timed_loop::<E, Hist>(ctx, Ok(Hist::new())),
        LatencyMode::Trace => timed_loop::<E, Traced>(ctx, Traced::start(&ctx.gids).map_err(trace_err)),
    }
}

/// A trace that could not be written.
pub fn trace_err(e: std::io::Error) -> Error {
    Error::Run(format!("trace: {e}"))
}

fn timed_loop<E: Engine, R: Recorder>(ctx: &WorkerCtx<'_>, rec: Result<R>) -> Result<WorkerSample> {
    let ops = ctx.plan.ops;
    let (mut engine, open_ns) = ctx.open_engine(E::open)?;
    let mut rec = ctx.before_gate(rec)?;
    let mut data = DataPath::new(ctx);
    if ctx.write {
        data.init_write_buf(engine.buf());
    }
    let mut commits = Commits::new(ctx.spec.sync_call, ctx.paths.len());
    let sync_policy = ctx.sync_policy();
    let io_err = |k: u64, e: CallError| ctx.op_error(k, e.call.name(), e.err);

    ctx.gate.wait();
    if ctx.abort.load(Relaxed) {
        return Err(Error::Run("aborted before start".into()));
    }
    let start_ns = now_ns();
    // The end of the last op (with `latency = off`, read only where it is needed).
    let mut prev = start_ns;
    let (mut bytes, mut since_sync) = (0u64, 0u64);
    for k in 0..ops.n_ops {
        if ctx.abort.load(Relaxed) || crate::env::signals::stop_requested() {
            return Err(Error::Run("aborted".into()));
        }
        let op = ops.op(k);
        if ctx.write {
            data.before_write(engine.buf(), op);
        }
        let done = engine.io(op, ctx.write).map_err(|e| io_err(k, e))?;
        if R::CLOCKED {
            let t = now_ns();
            rec.record(op, prev - start_ns, t - prev);
            prev = t;
        }
        if done != op.len {
            ctx.abort.store(true, Relaxed);
            let msg = if ctx.write && done < op.len {
                let rest = &engine.buf()[done as usize..op.len as usize];
                short_write(&ctx.paths[op.file as usize], rest, op.offset + done, done, op.len)
            } else {
                format!("short {}: {done} of {} bytes", if ctx.write { "write" } else { "read" }, op.len)
            };
            return Err(ctx.op_error(k, E::call_name(ctx.write), std::io::Error::other(msg)));
        }
        if !ctx.write {
            data.after_read(engine.buf(), op).map_err(|e| {
                ctx.abort.store(true, Relaxed);
                Error::Run(format!("{}: {e}", ctx.paths[op.file as usize].display()))
            })?;
        }
        bytes += done;
        ctx.progress.store(bytes, Relaxed);
        match sync_policy {
            // Reads commit nothing (their policy is None): no bookkeeping.
            SyncPolicy::None if !ctx.write => {}
            SyncPolicy::None | SyncPolicy::End => commits.dirty[op.file as usize] = true,
            SyncPolicy::Each => {
                if !R::CLOCKED {
                    prev = now_ns();
                }
                commits.one(&mut |f, c| engine.sync(f, c), op.file, &mut prev, &ctx.paths)?
            }
            SyncPolicy::Every(n) => {
                commits.dirty[op.file as usize] = true;
                since_sync += done;
                if since_sync >= n {
                    if !R::CLOCKED {
                        prev = now_ns();
                    }
                    commits.all_dirty(&mut |f, c| engine.sync(f, c), &mut prev, &ctx.paths)?;
                    since_sync = 0;
                }
            }
        }
    }
    let end_ns = commits.at_end(R::CLOCKED, sync_policy, &mut |f, c| engine.sync(f, c), prev, &ctx.paths)?;
    let done =
        LoopDone { start_ns, open_ns, end_ns, bytes, ops: ops.n_ops, max_inflight: u64::from(ops.n_ops > 0) };
    done.sample(ctx, &commits, rec, || engine.close())
}

/// Where a timed loop ended, after its final commit.
pub(crate) struct LoopDone {
    pub start_ns: u64,
    pub open_ns: u64,
    pub end_ns: u64,
    pub bytes: u64,
    pub ops: u64,
    pub max_inflight: u64,
}

impl LoopDone {
    /// Closes the engine (timed as close_ns, outside the worker's time) and makes the sample.
    pub fn sample<R: Recorder>(
        self,
        ctx: &WorkerCtx<'_>,
        commits: &Commits,
        rec: R,
        close: impl FnOnce() -> std::io::Result<CallCounts>,
    ) -> Result<WorkerSample> {
        let t_close = now_ns();
        let calls = close().map_err(|e| Error::io("close", &ctx.paths[0], None, e))?;
        let close_ns = now_ns() - t_close;
        let (hist, trace) = rec.finish().map_err(trace_err)?;
        Ok(WorkerSample {
            worker: ctx.plan.worker,
            bytes: self.bytes,
            ops: self.ops,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            sync_ns: commits.sync_ns,
            sync_calls: commits.calls,
            open_ns: self.open_ns,
            close_ns,
            hist,
            trace,
            calls,
            max_inflight: self.max_inflight,
            role: None,
        })
    }
}

/// The data path of one worker: which bytes written blocks carry, and what read blocks are
/// checked against. Engines move bytes; this decides which bytes. Every engine's loop calls
/// [`DataPath::before_write`] before handing a block to the engine and
/// [`DataPath::after_read`] after a block comes back.
///
/// Stamps: a stripe component's bytes carry the logical (striped) file's salt and offsets, so
/// the components read back through the striping formula give the logical file byte for byte.
/// An op's memory is `op.len` contiguous bytes, or with strided memory (`mem_len` of every
/// `mem_stride` bytes) the `op.len / len * stride` bytes whose pieces the op gathers; then the
/// bytes stamped are those that land on the on-disk stamp positions, so files carry the same
/// stamps whatever the memory layout.
///
/// Verification (`verify`): written blocks get a header ([`crate::worker::verify`]) keyed on the op's
/// (global file id, offset), and every read block is checked, whatever the engine or layout
/// (strided memory is refused with verification). Without it, debug builds (so the whole test
/// suite) still check every block read: each stamp must name the file and offset the op read,
/// in the memory places the op's layout gives, so an engine that reads the wrong bytes, or into
/// the wrong place, fails the run.
pub struct DataPath {
    seed: u64,
    /// Per local file: the stamp salt of its logical file, and how its offsets map to logical
    /// offsets.
    files: Vec<(u64, FileRole)>,
    /// Global file id per local file (what verification headers name).
    gids: Vec<u32>,
    tag: BlockTag,
    mem: Option<crate::plan::mem::Strided>,
    check_reads: bool,
}

impl DataPath {
    /// The data path of the worker `ctx` describes.
    pub fn new(ctx: &WorkerCtx<'_>) -> DataPath {
        DataPath::with(ctx.spec, &ctx.gids, ctx.tag)
    }

    /// A data path for files `gids` (global ids, in local order).
    pub fn with(spec: &Spec, gids: &[u32], tag: BlockTag) -> DataPath {
        let files = gids
            .iter()
            .map(|&g| {
                let role = FileRole::of(spec, g);
                (fill::file_salt(spec.seed, role.logical), role)
            })
            .collect();
        DataPath {
            seed: spec.seed,
            files,
            gids: gids.to_vec(),
            tag,
            mem: spec.mem(),
            check_reads: cfg!(debug_assertions)
                && !tag.verify
                && crate::engine::find(&spec.engine).is_some_and(|e| e.caps.real_io),
        }
    }

    /// Fills a write buffer once, before timing starts.
    pub fn init_write_buf(&self, buf: &mut [u8]) {
        fill::fill(buf, self.seed);
    }

    /// Prepares `mem`, the memory of `op`, to be written: stamps its offsets and, when
    /// verifying, writes its header.
    #[inline(always)]
    pub fn before_write(&mut self, mem: &mut [u8], op: crate::plan::Op) {
        let (salt, role) = self.files[op.file as usize];
        let at = role.logical_offset(op.offset);
        match self.mem {
            None => {
                let block = &mut mem[..op.len as usize];
                fill::stamp(block, salt, at);
                if self.tag.verify {
                    verify::seal(block, &self.tag, self.gids[op.file as usize], op.offset);
                }
            }
            Some(m) => m.stamp(mem, salt, at, op.len as usize),
        }
    }

    /// Checks `mem`, the memory `op` read into: every written block it spans against its header
    /// when verifying; otherwise its stamps in debug builds, and nothing in release builds.
    #[inline(always)]
    pub fn after_read(&mut self, mem: &[u8], op: crate::plan::Op) -> std::result::Result<(), String> {
        if self.tag.verify {
            return self.verify_read(&mem[..op.len as usize], op);
        }
        // A constant in release builds: the stamp check is compiled out, not skipped per op.
        if !(cfg!(debug_assertions) && self.check_reads) {
            return Ok(());
        }
        let (salt, role) = self.files[op.file as usize];
        let at = role.logical_offset(op.offset);
        let bad = match self.mem {
            None => fill::check_stamps(&mem[..op.len as usize], salt, at, op.len),
            Some(m) => m.check_stamps(mem, salt, at, op.len as usize),
        };
        match bad {
            None => Ok(()),
            Some(at) => Err(format!(
                "read check: the {} bytes read at offset {} do not carry the stamp of offset {at}",
                op.len, op.offset
            )),
        }
    }

    /// A read may span several written blocks; each is checked against its header.
    fn verify_read(&self, block: &[u8], op: crate::plan::Op) -> std::result::Result<(), String> {
        let gid = self.gids[op.file as usize];
        let (salt, role) = self.files[op.file as usize];
        let bs = self.tag.written_bs.max(1) as usize;
        for (i, b) in block.chunks(bs).enumerate() {
            let off = op.offset + (i * bs) as u64;
            let stamp_at = role.logical_offset(off);
            if let Err(m) = verify::check(b, &self.tag, gid, off, salt, stamp_at) {
                return Err(self.explain(b, gid, off, (salt, stamp_at), m));
            }
        }
        Ok(())
    }

    #[cold]
    fn explain(&self, block: &[u8], gid: u32, offset: u64, stamp: (u64, u64), m: verify::Mismatch) -> String {
        let mut s = m.to_string();
        if m.field == "checksum"
            && let Some((at, want, got)) =
                verify::first_difference(block, &self.tag, self.seed, gid, offset, stamp)
        {
            s += &format!("; first differing byte at offset {at}: expected 0x{want:02x}, found 0x{got:02x}");
        }
        s
    }
}

/// Describes a short write with its cause: the rest of the block is written once more, through
/// a plain descriptor of the same (iolab's own) file, and the kernel's answer names the reason
/// where there is one (a quota, a file size limit, a full disk). Only on the failure path.
#[cold]
pub fn short_write(path: &std::path::Path, rest: &[u8], at: u64, done: u64, len: u64) -> String {
    use std::os::unix::fs::FileExt;
    let again = std::fs::OpenOptions::new().write(true).open(path).and_then(|f| f.write_at(rest, at));
    match again {
        Err(e) => format!("short write: {done} of {len} bytes (writing the rest: {e})"),
        Ok(n) => format!("short write: {done} of {len} bytes (writing the rest then moved {n} more)"),
    }
}

/// Commit bookkeeping of one worker: which files have uncommitted writes, and the time and
/// number of commits. Every engine loop commits through this, with nothing in flight.
pub(crate) struct Commits {
    call: SyncCall,
    pub dirty: Vec<bool>,
    pub sync_ns: u64,
    pub calls: u64,
}

/// An engine's commit of one file.
pub(crate) type SyncFn<'a> = dyn FnMut(u32, SyncCall) -> std::result::Result<(), CallError> + 'a;

impl Commits {
    pub fn new(call: SyncCall, files: usize) -> Commits {
        Commits { call, dirty: vec![false; files], sync_ns: 0, calls: 0 }
    }

    /// Commits one file; the time from the end of the last op to now counts as commit time.
    pub fn one(&mut self, sync: &mut SyncFn<'_>, file: u32, prev: &mut u64, paths: &[PathBuf]) -> Result<()> {
        sync(file, self.call).map_err(|e| Error::io(e.call.name(), &paths[file as usize], None, e.err))?;
        let t = now_ns();
        self.sync_ns += t - *prev;
        *prev = t;
        self.calls += 1;
        self.dirty[file as usize] = false;
        Ok(())
    }

    /// The end of a timed loop: the clock read a loop without per-op clocks did not take, then
    /// the final commit of what `end` and `every` left. Returns the loop's end time.
    pub fn at_end(
        &mut self,
        clocked: bool,
        policy: SyncPolicy,
        sync: &mut SyncFn<'_>,
        mut prev: u64,
        paths: &[PathBuf],
    ) -> Result<u64> {
        if !clocked {
            prev = now_ns();
        }
        if matches!(policy, SyncPolicy::End | SyncPolicy::Every(_)) {
            self.all_dirty(sync, &mut prev, paths)?;
        }
        Ok(prev)
    }

    /// Commits every file written since its last commit.
    pub fn all_dirty(&mut self, sync: &mut SyncFn<'_>, prev: &mut u64, paths: &[PathBuf]) -> Result<()> {
        for f in 0..self.dirty.len() as u32 {
            if self.dirty[f as usize] {
                self.one(sync, f, prev, paths)?;
            }
        }
        Ok(())
    }
}

/// The name of a commit call, for error messages.
pub fn call_name(call: SyncCall) -> &'static str {
    crate::engine::sync_call_name(call)
}

/// One phase's work, handed to a launcher.
pub struct PhaseJob<'a> {
    pub spec: &'a Spec,
    pub phase: &'a PhasePlan,
    /// Paths of all files of the run, by global file id.
    pub paths: &'a [PathBuf],
    /// Final sizes of all files of the run, by global file id.
    pub sizes: &'a [u64],
    pub engine: &'static EngineDef,
    /// What written blocks carry and read blocks are checked against.
    pub tag: BlockTag,
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
            gids: plan.files.clone(),
            sizes: plan.files.iter().map(|&g| self.sizes[g as usize]).collect(),
            write: self.phase.op.is_write(),
            gate,
            abort,
            progress,
            tag: self.tag,
        }
    }
}

/// Watches a running phase: progress display and stop requests (signals).
pub trait Monitor: Sync {
    /// A phase starts: a label and the bytes it will move.
    fn begin(&self, _label: &str, _total_bytes: u64) {}
    /// Called about every 50 ms with the bytes done so far; returns a signal number to stop.
    fn tick(&self, bytes_done: u64) -> Option<i32>;
    /// Whether ticks show anything (a progress bar). When not, a phase of one thread worker
    /// runs on the calling thread: no thread to start, and a process with one thread makes
    /// cheaper system calls (Linux skips the file reference count of each call when no other
    /// thread shares the descriptor table).
    fn wants_ticks(&self) -> bool {
        true
    }
    /// The phase ended.
    fn end(&self) {}
    /// A warning for the user (e.g. a work directory that could not be removed).
    fn note(&self, _msg: &str) {}
}

/// Runs a phase's workers with the spec's launcher (threads or processes).
pub fn launch(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    if job.spec.strategy.is_some() {
        return crate::strategy::launch(job, monitor);
    }
    match job.spec.launcher {
        Launcher::Thread => run_phase_threads(job, monitor),
        Launcher::Process => crate::launch::process::run_phase_processes(job, monitor),
    }
}

/// Runs workers as threads of this process (one worker, with nothing to show while it runs:
/// on this thread).
pub fn run_phase_threads(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Vec<WorkerSample>> {
    let n = job.phase.workers.len();
    if n == 1 && !monitor.wants_ticks() {
        return run_inline(job);
    }
    let (barrier, free) = (Barrier::new(n), FreeStart);
    let gate: &dyn StartGate = if job.spec.start == StartMode::Free { &free } else { &barrier };
    let abort = AtomicBool::new(false);
    let progress: Vec<Padded<AtomicU64>> = (0..n).map(|_| Padded::default()).collect();
    let finished = AtomicUsize::new(0);
    // Workers wake this thread as they finish, so a phase ends as soon as its last worker
    // does, not at the next 50 ms tick.
    let coordinator = std::thread::current();
    let mut signal = None;
    let results: Vec<Result<WorkerSample>> = std::thread::scope(|s| {
        // Workers start with SIGINT/SIGTERM blocked, so the signals reach this thread (which
        // stops the phase) and never interrupt a worker's system call.
        let masked = crate::env::signals::Blocked::new();
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let ctx = job.ctx(i, gate, &abort, &progress[i].0);
                let (abort, finished, coordinator) = (&abort, &finished, &coordinator);
                std::thread::Builder::new()
                    .name(format!("iolab-w{i}"))
                    .spawn_scoped(s, move || {
                        // Counts the worker as finished even if it panics, so the loop below
                        // always ends (the panic is reported by join).
                        let _done = Finished { finished, abort, coordinator };
                        let r = (job.engine.run)(&ctx);
                        if r.is_err() {
                            abort.store(true, Relaxed);
                        }
                        r
                    })
                    .expect("spawn worker thread")
            })
            .collect();
        drop(masked);
        let tick = std::time::Duration::from_millis(50);
        let mut last_tick = std::time::Instant::now();
        while finished.load(Acquire) < n {
            std::thread::park_timeout(tick.saturating_sub(last_tick.elapsed()));
            if finished.load(Acquire) == n {
                break;
            }
            if last_tick.elapsed() < tick {
                continue;
            }
            last_tick = std::time::Instant::now();
            let done = progress.iter().map(|p| p.0.load(Relaxed)).sum();
            if let Some(sig) = monitor.tick(done) {
                signal = Some(sig);
                abort.store(true, Relaxed);
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::Run("a worker thread panicked".into()))))
            .collect()
    });
    if let Some(sig) = signal {
        return Err(Error::Interrupted(sig));
    }
    collect(results)
}

/// Runs the one worker of a phase on this thread. A stop signal reaches it through
/// [`crate::env::signals::stop_requested`], which the loop reads before each op; a panic is
/// reported as an error, as from a thread.
fn run_inline(job: &PhaseJob<'_>) -> Result<Vec<WorkerSample>> {
    let (abort, progress) = (AtomicBool::new(false), AtomicU64::new(0));
    let ctx = job.ctx(0, &FreeStart, &abort, &progress);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (job.engine.run)(&ctx)))
        .unwrap_or_else(|_| Err(Error::Run("a worker panicked".into())));
    if let Some(sig) = crate::env::signals::pending() {
        return Err(Error::Interrupted(sig));
    }
    collect(vec![r])
}

/// Marks a worker finished when dropped (at return or during a panic); a panic also stops the
/// other workers.
struct Finished<'a> {
    finished: &'a AtomicUsize,
    abort: &'a AtomicBool,
    coordinator: &'a std::thread::Thread,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.abort.store(true, Relaxed);
        }
        self.finished.fetch_add(1, Release);
        self.coordinator.unpark();
    }
}

/// All samples, or the most telling error: a real failure before the "aborted" echoes of it.
pub fn collect(results: Vec<Result<WorkerSample>>) -> Result<Vec<WorkerSample>> {
    let mut first_err = None;
    let mut samples = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(s) => samples.push(s),
            Err(e) => {
                let echo = matches!(&e, Error::Run(m) if m.starts_with("aborted"));
                if first_err.is_none() || (!echo && matches!(first_err, Some((true, _)))) {
                    first_err = Some((echo, e));
                }
            }
        }
    }
    match first_err {
        Some((_, e)) => Err(e),
        None => Ok(samples),
    }
}
