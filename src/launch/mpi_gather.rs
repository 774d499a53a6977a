//! Rank 0's side of an MPI phase: the order to every rank, its own part, then the replies as
//! they arrive, up the tree (`mpi_tree`) or one per rank. Rank 0 takes them one at a time:
//! each worker's latency histogram is added to the phase's one histogram at once, and of the
//! worker only its figures stay (its percentiles, bytes, times, counts, rank and host), so what
//! rank 0 holds for a phase grows by a fixed, small number of bytes per worker, never by a
//! histogram (docs/mpi.md, "Rank 0's memory").

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::error::{Error, Result};
use crate::latency::classes::ClassMerge;
use crate::latency::series::SeriesSum;
use crate::latency::trace::TraceSpill;
use crate::latency::{FastHist, SampleHist};
use crate::launch::launched::Launched;
use crate::launch::mpi_order::{Order, PhaseOrder, REPLY, broadcast_order};
use crate::launch::mpi_reply::Reply;
use crate::launch::mpi_sync::phase_barrier;
use crate::launch::mpi_tree;
use crate::launch::mpi_watch::{RootWatch, share};
use crate::launch::world::{WorldInfo, my_workers, placed, world};
use crate::spec::{LatencyMode, OpKind};
use crate::worker::{Monitor, PhaseJob, ServerSample, WorkerSample};

/// How long rank 0, stopped by a signal, waits for the other ranks' replies (each stops its
/// workers within about 50 ms of hearing the stop) before it ends the run without them.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// The phases rank 0 has ordered so far: each phase's number.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Rank 0's side of any phase: the order, the first barrier, its own part (`own`, given its
/// workers and the monitor to tick; it meets the start barrier), then the replies as they
/// arrive (its children's bundles up the tree, else every rank's reply): the samples (their
/// histograms merged into the phase's at once) and, from server ranks, their figures. Stopped
/// by a signal, it tells every rank to stop and still waits for their replies (at most
/// [`STOP_WAIT`]), so no rank is still making files when the run removes them.
pub(super) fn run_phase_with(
    job: &PhaseJob<'_>,
    monitor: &dyn Monitor,
    own: impl FnOnce(&[usize], &dyn Monitor) -> Result<Vec<WorkerSample>>,
) -> Result<Launched> {
    let w = world().ok_or_else(|| Error::Run("launcher = mpi outside an MPI world".into()))?;
    let comm = SimpleCommunicator::world();
    let seq = SEQ.fetch_add(1, Relaxed) + 1;
    let servers = job.spec.servers.is_some();
    let report = monitor.wants_ranks() && !servers && job.spec.strategy.is_none() && w.size > 1;
    let order = PhaseOrder {
        spec: job.spec.clone(),
        phase: job.phase.index,
        paths: job.paths.to_vec(),
        ids: job.ids.to_vec(),
        tag: job.tag,
        extents: job.extents.to_vec(),
        workdirs: job.workdirs.to_vec(),
        seq,
        report,
    };
    broadcast_order(&comm, &Order::Phase(Box::new(order)))?;
    let barrier = phase_barrier;
    // The other hosts' files are ready (node-local directories filled by each host's first rank).
    barrier();
    let mine = my_workers(job.phase.workers.len(), job.phase.op == OpKind::Read, job.spec, w, 0);
    let part = share(job.spec, job.phase, &mine);
    let watch = RootWatch::new(monitor, (seq, report, !servers), part, &w.hosts);
    let own = own(&mine, &watch);
    let md = job.phase.op.is_metadata();
    let own_done: u64 = own.as_ref().map_or(0, |s| s.iter().map(|s| if md { s.ops } else { s.bytes }).sum());
    let mut gathering = Gathering::new(job.spec.latency == LatencyMode::Trace, job.phase.workers.len());
    // Up the tree, every rank learns the phase's earliest start first (its rate series are
    // summed from it), and rank 0 hears from its children in it; else from every rank.
    let tree = mpi_tree::up_the_tree(job.spec);
    if tree {
        let mine = own.as_ref().ok().and_then(|s| s.iter().map(|s| s.start_ns).min());
        gathering.sum_series_from(crate::launch::mpi_sync::earliest_start(mine.unwrap_or(u64::MAX)));
    }
    gathering.own(own.map(|s| s.into_iter().map(|s| placed(s, w, None)).collect()));
    let (tag, mut waiting) = if tree {
        (mpi_tree::BUNDLE, mpi_tree::children(0, w.size).count())
    } else {
        (REPLY, w.size as usize - 1)
    };
    let mut last_tick = std::time::Instant::now();
    let mut stopped: Option<(i32, std::time::Instant)> = None;
    while waiting > 0 {
        let Some(probed) = comm.any_process().immediate_matched_probe_with_tag(tag) else {
            if last_tick.elapsed() >= Duration::from_millis(50) {
                last_tick = std::time::Instant::now();
                if let Some(sig) = watch.tick(own_done) {
                    let (sig, since) = *stopped.get_or_insert((sig, std::time::Instant::now()));
                    if since.elapsed() >= STOP_WAIT {
                        eprintln!(
                            "warning: not every rank had stopped {} s after the stop; what their workers made since may be left",
                            STOP_WAIT.as_secs()
                        );
                        return Err(Error::Interrupted(sig));
                    }
                }
            }
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        waiting -= 1;
        let from = status.source_rank() as u32;
        if tree {
            gathering.bundle(from, &bytes, w);
            continue;
        }
        let mut fetch = |worker: u32, ops: u64| crate::launch::mpi_trace::receive(&comm, from, worker, ops);
        gathering.reply_streamed(from, &bytes, w, &mut fetch);
    }
    if let Some(sig) = stopped.map(|s| s.0).or_else(crate::env::signals::pending) {
        return Err(Error::Interrupted(sig));
    }
    gathering.finish()
}

/// Rank 0's side of one phase's replies: every worker's sample (its histogram merged into the
/// phase's), the servers' figures, and every rank's failure.
pub(super) struct Gathering {
    samples: Vec<WorkerSample>,
    servers: Vec<ServerSample>,
    /// Every worker's latency counts, merged as they arrived.
    latency: FastHist,
    /// Keep each worker's buckets too (`latency = trace`).
    keep: bool,
    /// Up the tree: every worker's rate series summed, from the phase's earliest start (ns on
    /// rank 0's clock), a worker's own series kept only when a stall shows in it.
    series: Option<(SeriesSum, u64)>,
    /// Every worker's class histograms, merged as they arrived.
    classes: ClassMerge,
    failures: Vec<(u32, Error)>,
}

impl Gathering {
    /// For a phase of `workers` workers.
    pub fn new(keep: bool, workers: usize) -> Gathering {
        Gathering {
            samples: Vec::with_capacity(workers),
            servers: vec![],
            latency: FastHist::new(),
            keep,
            series: None,
            classes: ClassMerge::default(),
            failures: vec![],
        }
    }

    /// Sums the workers' rate series as they come (up the tree), from the phase's earliest
    /// start `first_ns`, before any sample is taken.
    pub fn sum_series_from(&mut self, first_ns: u64) {
        self.series = Some((SeriesSum::default(), first_ns));
    }

    /// Rank 0's own workers' samples (placed), or its failure.
    pub fn own(&mut self, own: Result<Vec<WorkerSample>>) {
        match own {
            Ok(s) => {
                for mut s in s {
                    if let Some((sum, first)) = &mut self.series {
                        sum.add(s.start_ns.saturating_sub(*first), s.series.as_deref());
                        if s.stalls().is_empty() {
                            s.series = None;
                        }
                    }
                    s.hist = std::mem::replace(&mut s.hist, SampleHist::empty_merged())
                        .merge_into(&mut self.latency, self.keep);
                    if let Some(m) = s.mix.as_mut() {
                        m.classes.merge_into(&mut self.classes);
                    }
                    self.samples.push(s);
                }
            }
            Err(e) => self.failures.push((0, e)),
        }
    }

    /// The reply rank `from` sent (its bytes): its samples onto rank 0's clock, their
    /// histograms merged; or its failure.
    #[cfg(test)]
    pub fn reply(&mut self, from: u32, bytes: &[u8], w: &WorldInfo) {
        self.reply_streamed(from, bytes, w, &mut |_, _| Err(Error::Run("no traced ops follow here".into())));
    }

    /// As [`Gathering::reply`], the traced ops of each worker whose wire says they follow
    /// taken by `fetch(worker, ops)` (once for each such worker, in order, whatever fails).
    pub fn reply_streamed(
        &mut self,
        from: u32,
        bytes: &[u8],
        w: &WorldInfo,
        fetch: &mut dyn FnMut(u32, u64) -> Result<TraceSpill>,
    ) {
        match Reply::decode(bytes) {
            Ok(r) => self.take(r, w, fetch),
            Err(e) => self.not_sent(from, w, "a reply", e),
        }
    }

    /// The bundle rank `from` sent up the tree (`mpi_tree`): its subtree's counts merged into
    /// the phase's and its series into the phase's sum, then each of its replies taken as it
    /// is read.
    pub fn bundle(&mut self, from: u32, bytes: &[u8], w: &WorldInfo) {
        let (counts, series, replies) = match mpi_tree::open(bytes) {
            Ok(b) => b,
            Err(e) => return self.not_sent(from, w, "a bundle", e),
        };
        self.latency.add(&counts);
        if let Some((sum, _)) = &mut self.series {
            sum.merge(&series);
        }
        for reply in mpi_tree::replies(replies) {
            match reply {
                Ok(r) => self.take(r, w, &mut |_, _| Err(Error::Run("no traced ops follow a bundle".into()))),
                Err(e) => self.not_sent(from, w, "a bundle", e),
            }
        }
    }

    /// Rank `from` sent bytes that are not `what`.
    fn not_sent(&mut self, from: u32, w: &WorldInfo, what: &str, e: String) {
        let host = w.hosts.get(from as usize).map_or("", |h| h);
        let e = Error::Run(format!("rank {from} ({host}) sent something that is not {what}: {e}"));
        self.failures.push((from, e));
    }

    /// A rank's reply: its samples onto rank 0's clock, their histograms merged; or its failure.
    fn take(&mut self, reply: Reply, w: &WorldInfo, fetch: &mut dyn FnMut(u32, u64) -> Result<TraceSpill>) {
        let host = w.hosts.get(reply.rank as usize).map_or("", |h| h);
        self.servers.extend(reply.servers);
        match reply.result {
            Ok(wires) => {
                let offset = w.clock_offset_ns.get(reply.rank as usize).copied().unwrap_or(0);
                for wire in wires {
                    let spill = match wire.streamed() {
                        true => match fetch(wire.worker(), wire.traced().map_or(0, |t| t.0)) {
                            Ok(s) => Some(s),
                            Err(e) => {
                                self.failures.push((reply.rank, e));
                                continue;
                            }
                        },
                        false => None,
                    };
                    match wire.into_merged(&mut self.latency, self.keep, spill) {
                        Ok(mut s) => {
                            // The host's one name, shared by its workers' results (no reply
                            // carries it).
                            if let Some(p) = &mut s.place {
                                match w.hosts.get(p.rank as usize) {
                                    Some(name) => p.host = name.clone(),
                                    None => {
                                        let e =
                                            format!("a worker placed on rank {}, not in the world", p.rank);
                                        self.failures.push((reply.rank, Error::Run(e)));
                                        continue;
                                    }
                                }
                            }
                            // Onto rank 0's clock, so the phase's span compares one clock.
                            (s.start_ns, s.end_ns) = (
                                crate::launch::mpi_clock::to_root(s.start_ns, offset),
                                crate::launch::mpi_clock::to_root(s.end_ns, offset),
                            );
                            if let Some(m) = s.mix.as_mut() {
                                m.classes.merge_into(&mut self.classes);
                            }
                            // The job's workers mostly made the same calls: held once.
                            if let Some(last) = self.samples.last() {
                                s.calls.share_equal(&last.calls);
                            }
                            self.samples.push(s)
                        }
                        Err(e) => self.failures.push((reply.rank, e)),
                    }
                }
            }
            Err(msg) => {
                // An echo of another rank's failure stays one.
                let e = if msg.starts_with("aborted") {
                    Error::Run(msg)
                } else {
                    Error::Run(format!("rank {} ({host}): {msg}", reply.rank))
                };
                self.failures.push((reply.rank, e));
            }
        }
    }

    /// The phase's samples in worker order with the merged histogram, or the failure told: the
    /// lowest rank's real one (a host's first rank says why its host failed, the others only
    /// what that left them), else an echo.
    pub fn finish(mut self) -> Result<Launched> {
        if let Some((_, e)) = self.failures.into_iter().min_by_key(|(rank, e)| (e.is_echo(), *rank)) {
            return Err(e);
        }
        self.samples.sort_by_key(|s| s.worker);
        self.servers.sort_by_key(|s| s.server);
        Ok(Launched {
            samples: self.samples,
            servers: self.servers,
            latency: self.latency.buckets(),
            series: self.series.and_then(|(sum, _)| sum.finish()),
            classes: self.classes.finish(),
        })
    }
}

#[cfg(test)]
#[path = "mpi_gather_tests.rs"]
mod tests;
