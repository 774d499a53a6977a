//! A rank's reply to a phase order and what rank 0 keeps of the replies. The reply crosses in
//! a compact binary encoding (postcard: integers as varints, no field names). Rank 0 takes the
//! replies one at a time as they arrive: each worker's latency histogram is added to the
//! phase's one histogram at once, and of the worker only its figures stay (its percentiles,
//! bytes, times, counts, rank and host), so what rank 0 holds for a phase grows by a fixed,
//! small number of bytes per worker, never by a histogram (docs/mpi.md, "Rank 0's memory").

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::latency::classes::ClassMerge;
use crate::latency::series::SeriesSum;
use crate::latency::trace::TraceSpill;
use crate::latency::{FastHist, SampleHist};
use crate::launch::child::SampleWire;
use crate::launch::{Launched, WorldInfo};
use crate::worker::{ServerSample, WorkerSample};

/// A rank's answer to a phase order.
#[derive(Serialize, Deserialize)]
pub(super) struct Reply {
    pub rank: u32,
    pub result: std::result::Result<Vec<SampleWire>, String>,
    /// A server rank's figures.
    pub servers: Vec<ServerSample>,
}

impl Reply {
    /// The reply's bytes; a reply that cannot be encoded becomes its rank's failure.
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        self.encode_or_failure().0
    }

    /// The reply's bytes and whether they are the reply (else its rank's failure to encode it).
    pub fn encode_or_failure(&self) -> (Vec<u8>, bool) {
        match postcard::to_allocvec(self) {
            Ok(b) => (b, true),
            Err(e) => {
                let r = Reply {
                    rank: self.rank,
                    result: Err(format!("its results could not be sent: {e}")),
                    servers: vec![],
                };
                (postcard::to_allocvec(&r).unwrap_or_default(), false)
            }
        }
    }

    pub fn decode(bytes: &[u8]) -> std::result::Result<Reply, String> {
        postcard::from_bytes(bytes).map_err(|e| e.to_string())
    }
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
        let (counts, series, replies) = match super::mpi_tree::open(bytes) {
            Ok(b) => b,
            Err(e) => return self.not_sent(from, w, "a bundle", e),
        };
        self.latency.add(&counts);
        if let Some((sum, _)) = &mut self.series {
            sum.merge(&series);
        }
        for reply in super::mpi_tree::replies(replies) {
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
                                super::mpi_clock::to_root(s.start_ns, offset),
                                super::mpi_clock::to_root(s.end_ns, offset),
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
#[path = "mpi_reply_tests.rs"]
mod tests;
