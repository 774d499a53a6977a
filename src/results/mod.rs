//! The result model: what an experiment measured, shaped as the versioned JSON contract
//! (`docs/json.md`). Built from worker samples after each run and rebuilt from the store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::env::envctl::RunEnv;
use std::sync::Arc;

use crate::env::forensics::LayoutFacts;
use crate::env::host::HostFacts;
use crate::latency::Buckets;
use crate::latency::period::{self, Period};
use crate::latency::series::RateSeries;
use crate::latency::trace::TraceSpill;
use crate::spec::{CachePolicy, Spec};
use crate::stats::{self, Summary};
use crate::worker::WorkerSample;

mod design;
pub mod findings;
mod flags;
pub mod hosts;
pub mod io500;
pub mod mix;
mod repetition;
mod workers;
pub use workers::{Workers, take_spool_fault};
pub mod series;
pub mod timing;
pub mod tune;
/// The namespace's state before a metadata phase (`namespace` of a repetition in JSON).
pub use crate::target::ns_cache::NsState;
/// One I/O-server rank's figures in one repetition of one phase (`servers[]` in JSON).
pub use crate::worker::ServerSample as ServerResult;
mod cache;
pub use cache::{COLD_KERNEL_ONLY, CacheCheck, CacheInfo, WARM_NAMES_NOT_KEPT};
pub use design::{Axis, Design, Headline, PresetRef, Rate};
pub use flags::{FLAG_KINDS, flag_advice, flag_kind, flag_meaning};
pub use hosts::HostShare;

/// Version of the JSON layout. Fields may be added; a change of what a field holds raises it
/// (docs/json.md says what each version changed).
pub const SCHEMA_VERSION: u32 = 2;

/// A resident fraction above this makes a cold phase "not cold".
pub const COLD_MAX_RESIDENT: f64 = 0.05;
/// A resident fraction below this makes a warm phase "not warm".
pub const WARM_MIN_RESIDENT: f64 = 0.95;

pub use crate::latency::LatencyNs;

/// One worker's figures in one repetition of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    pub worker: u32,
    pub bytes: u64,
    pub ops: u64,
    /// t_i: from the start gate to the end of its last op including its final commit.
    pub time_ns: u64,
    pub sync_ns: u64,
    pub sync_calls: u64,
    pub open_ns: u64,
    /// Allocating its buffers (every page written) before the open was timed; absent where
    /// nothing is allocated (metadata phases, a sync thread) and in results stored before
    /// iolab timed it apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_ns: Option<u64>,
    /// MPI-IO: the hints the MPI-IO layer applied to the worker's file after its open
    /// (MPI_File_get_info), as key and value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpiio_hints: Option<Box<BTreeMap<String, String>>>,
    pub close_ns: u64,
    /// r_i = bytes / t_i.
    pub bytes_per_s: f64,
    /// ops / t_i (worked out from `ops` and `time_ns`, not stored).
    #[serde(default)]
    pub ops_per_s: f64,
    pub latency_ns: LatencyNs,
    /// The latency histogram as (value_ns, count) pairs.
    pub latency_histogram_ns: Buckets,
    /// Dominant periods of the latency series (traced phases only; empty: none found).
    /// (Boxed, here and in `commit_tids`: one pointer where it is absent, so that a result is
    /// no larger than its sample and is made in the sample's place, [`Repetition::from_samples`].)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(clippy::box_collection)]
    pub periods: Option<Box<Vec<Period>>>,
    /// The per-op trace, on its way to the store; never printed (`iolab results trace`).
    #[serde(skip)]
    pub trace: Option<SpillRef>,
    /// System calls the engine made, by name (non-zero counts only).
    #[serde(default)]
    pub calls: crate::engine::CallMap,
    /// The most ops the worker had in flight at once.
    #[serde(default)]
    pub max_inflight: u64,
    /// Strategies: the worker's role (`compute-write`, `compute`, `write`, or `sync` for the
    /// S5 sync thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<crate::spec::strategy::Role>,
    /// Strategies: where the role's time went (docs/strategies.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times_ns: Option<Box<crate::strategy::RoleTimes>>,
    /// Strategies: the thread that ran the role, and the threads that issued its commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(clippy::box_collection)]
    pub commit_tids: Option<Box<Vec<u32>>>,
    /// MPI: the rank the worker ran on, and that rank's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Arc<str>>,
    /// Bytes completed per interval of t_i (None with `latency = off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Box<RateSeries>>,
    /// Stonewall: the ops it had done when the stonewall came (absent: no stonewall, or its
    /// blocks ran out first); with wear-out, `ops` is where it went on to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_ops: Option<u64>,
    /// When it left the start gate, after the phase's earliest worker did, on the phase's
    /// common clock (None in results stored before iolab recorded it).
    #[serde(default)]
    pub start_offset_ns: timing::StartOffset,
    /// Its workload apart: reads and writes, block sizes, schedule, repeats (None: a plain
    /// phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Box<mix::WorkerMix>>,
}

impl WorkerResult {
    /// The result of a sample, its call counts, hints, series and role moved, not copied.
    pub fn from_sample(s: WorkerSample) -> WorkerResult {
        let time_ns = s.time_ns();
        let (latency_ns, latency_histogram_ns) = s.hist.into_figures_and_buckets();
        let (periods, trace) = match s.trace {
            // After a stop signal no search for periods begins (seconds over a long trace):
            // the periods are then unknown, not none.
            Some(t) if crate::env::signals::stop_requested() => (None, t.spill.map(SpillRef)),
            Some(t) => {
                let periods = match &t.spill {
                    Some(spill) => period::detect(&spill.durations(period::MAX_OPS).unwrap_or_default()),
                    None => vec![],
                };
                (Some(Box::new(periods)), t.spill.map(SpillRef))
            }
            None => (None, None),
        };
        let (role, times_ns, tid, commit_tids) = match s.role {
            Some(r) => (Some(r.role), Some(Box::new(r.times)), Some(r.tid), Some(Box::new(r.commit_tids))),
            None => (None, None, None, None),
        };
        WorkerResult {
            worker: s.worker,
            bytes: s.bytes,
            ops: s.ops,
            time_ns,
            sync_ns: s.sync_ns,
            sync_calls: s.sync_calls,
            open_ns: s.open_ns,
            alloc_ns: s.alloc_ns,
            mpiio_hints: s.hints.map(|h| Box::new(h.into_vec().into_iter().collect())),
            close_ns: s.close_ns,
            bytes_per_s: stats::individual_rate(s.bytes, time_ns),
            ops_per_s: 0.0,
            latency_ns,
            latency_histogram_ns,
            periods,
            trace,
            calls: s.calls,
            max_inflight: s.max_inflight,
            role,
            times_ns,
            tid,
            commit_tids,
            rank: s.place.as_ref().map(|p| p.rank),
            host: s.place.map(|p| p.host),
            series: s.series,
            stonewall_ops: s.stonewall_ops,
            start_offset_ns: timing::StartOffset::NONE,
            mix: s.mix.map(|m| Box::new(mix::WorkerMix::of(*m).0)),
        }
    }
}

/// A worker's spilled trace, shared (two results are equal when they share one spill).
#[derive(Debug, Clone)]
pub struct SpillRef(pub Arc<TraceSpill>);

impl PartialEq for SpillRef {
    fn eq(&self, other: &SpillRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Status of one repetition of one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Complete,
    Failed,
    Interrupted,
}

/// One repetition of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetition {
    pub rep: u32,
    pub run_id: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    pub total_bytes: u64,
    pub ops: u64,
    /// The slowest worker's t_i.
    pub time_ns: u64,
    pub max_sar_bytes_per_s: f64,
    pub min_sar_bytes_per_s: f64,
    pub avg_individual_bytes_per_s: f64,
    /// Operations per second (IOPS), summed over the workers as max_SAR is: sum of ops_i / t_i.
    #[serde(default)]
    pub ops_per_s: f64,
    /// IOR's aggregate rate: all bytes over `span_ns` (None when not measured: a failed run,
    /// or results stored before iolab measured it).
    #[serde(default)]
    pub agg_bytes_per_s: Option<f64>,
    /// From the first worker's open to the last worker's close, commits included, on the
    /// phase's common clock ([`timing`]).
    #[serde(default)]
    pub span_ns: Option<u64>,
    /// The share of the phase during which all its workers that moved bytes were running
    /// (1: together throughout; 0: one ended before another began).
    #[serde(default)]
    pub overlap: Option<f64>,
    /// The same of ops, the figures of metadata phases: sum of ops_i / t_i, and ops / the
    /// slowest t_i (the rate mdtest reports). Worked out from the workers, not stored.
    #[serde(default)]
    pub max_sar_ops_per_s: f64,
    #[serde(default)]
    pub min_sar_ops_per_s: f64,
    /// IOR's aggregate of ops: all ops over `span_ns` (the figure `agg` of a metadata phase;
    /// None without a span). Worked out from `ops` and `span_ns`, not stored.
    #[serde(default)]
    pub agg_ops_per_s: Option<f64>,
    /// Fraction of the phase's file pages in the page cache just before it started.
    pub resident_fraction: f64,
    /// Time spent preallocating before a write phase (not part of t_i).
    pub prealloc_ns: u64,
    pub flags: Vec<String>,
    pub workers: Workers,
    /// Settle, priming, load average and device I/O around this repetition.
    #[serde(default)]
    pub env: RunEnv,
    /// After a write or rewrite phase: where the files' extents landed (FIEMAP), when the
    /// file system can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_layout: Option<LayoutFacts>,
    /// Strategies: the most commits that were in flight at once (all workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncs_in_flight_max: Option<u64>,
    /// MPI: each host's ranks, workers, bytes and rates (from the workers; empty on one host
    /// without MPI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostShare>,
    /// I/O-server ranks: what each server did (empty without servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerResult>,
    /// Bytes per interval and the steady window (None with `latency = off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<series::PhaseRate>,
    /// Metadata phases: the namespace's state before the phase, and what a find found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<NsState>,
    /// Every worker's latency histogram merged, as (value_ns, count) pairs, when the workers
    /// do not each keep theirs (MPI ranks: merged at rank 0 as each rank's reply arrived);
    /// absent when they do.
    #[serde(default, skip_serializing_if = "Buckets::is_empty")]
    pub latency_histogram_ns: Buckets,
    /// The share of its bytes of blocks the phase had already moved (docs/spec.md,
    /// "Time-bounded phases"; absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub again_fraction: Option<f64>,
    /// Its workload apart: reads and writes, block sizes, response times (None: a plain phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Box<mix::Mix>>,
}

/// One phase across repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    pub op: crate::spec::OpKind,
    pub cache: CacheInfo,
    /// The phase's time bound (`runtime`, `stonewall`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_bound: Option<crate::spec::TimeBound>,
    pub repetitions: Vec<Repetition>,
    /// Warm-up runs: measured and kept, never part of the summary or flags.
    #[serde(default)]
    pub warmups: Vec<Repetition>,
    /// Summary of max_SAR over the complete repetitions; None if none completed.
    pub summary: Option<Summary>,
    /// Summary of the ops per second (IOPS) over the same repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_summary: Option<Summary>,
    /// Summary of agg over the complete repetitions that measured it; None if none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agg_summary: Option<Summary>,
    /// Flags from any repetition, deduplicated (e.g. "not cold: 7.1% resident").
    pub flags: Vec<String>,
    /// Latency percentiles over all workers and complete repetitions.
    pub latency_ns: LatencyNs,
    /// Strategy phases: the run's time in seconds (start barrier to after the final sync)
    /// across complete repetitions: the study's figure, lower is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_summary: Option<Summary>,
    /// Its workload apart across the complete repetitions (None: a plain phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix_summary: Option<mix::MixSummary>,
}

impl PhaseResult {
    pub fn new(name: &str, op: crate::spec::OpKind, policy: CachePolicy, method: String) -> PhaseResult {
        PhaseResult {
            name: name.to_string(),
            op,
            cache: CacheInfo {
                policy,
                resident_fraction: 0.0,
                method,
                client_cache_not_controlled: None,
                names_not_kept: None,
            },
            time_bound: None,
            repetitions: vec![],
            warmups: vec![],
            summary: None,
            ops_summary: None,
            agg_summary: None,
            flags: vec![],
            latency_ns: LatencyNs::default(),
            time_summary: None,
            mix_summary: None,
        }
    }

    /// The unit its rates are in: ops for a metadata phase, else bytes.
    pub fn unit(&self) -> crate::units::RateUnit {
        crate::units::RateUnit::of(self.op.is_metadata())
    }

    /// Recomputes the summary, flags and merged latency from the repetitions.
    pub fn refresh(&mut self) {
        // (A spooled repetition's were worked out as it was made.)
        for r in self.repetitions.iter_mut().chain(&mut self.warmups).filter(|r| !r.workers.is_spooled()) {
            r.ops_per_s = r.iops();
        }
        let complete: Vec<&Repetition> =
            self.repetitions.iter().filter(|r| r.status == Status::Complete).collect();
        let md = self.op.is_metadata();
        let xs: Vec<f64> = complete.iter().map(|r| r.sar(md).0).collect();
        let of = if md { "max_sar_ops_per_s" } else { "max_sar_bytes_per_s" };
        self.summary = (!xs.is_empty()).then(|| Summary::of(of, &xs));
        let ops: Vec<f64> = complete.iter().map(|r| r.ops_per_s).collect();
        self.ops_summary = (!ops.is_empty()).then(|| Summary::of("ops_per_s", &ops));
        self.agg_summary = Rate::Agg.summary(self);
        let strategy = complete.iter().any(|r| r.workers.any_role());
        let times: Vec<f64> = complete.iter().map(|r| r.time_ns as f64 / 1e9).collect();
        self.time_summary = (strategy && !times.is_empty()).then(|| Summary::of("time_s", &times));
        self.cache.resident_fraction =
            self.repetitions.iter().map(|r| r.resident_fraction).fold(0.0, f64::max);
        // One flag per kind ("not cold: ..."), the first seen, with how many runs had it when
        // not all of them did.
        let kind = |f: &str| f.split(':').next().unwrap_or(f).to_string();
        let mut flags: Vec<(String, String, usize)> = vec![];
        for r in &self.repetitions {
            let mut kinds: Vec<String> = r.flags.iter().map(|f| kind(f)).collect();
            kinds.dedup();
            for (f, k) in r.flags.iter().zip(r.flags.iter().map(|f| kind(f))) {
                if !flags.iter().any(|(g, _, _)| *g == k) {
                    flags.push((k, f.clone(), 0));
                }
            }
            for (g, _, n) in &mut flags {
                if kinds.contains(g) {
                    *n += 1;
                }
            }
        }
        let total = self.repetitions.len();
        self.flags = flags
            .into_iter()
            .map(|(_, f, n)| if n < total { format!("{f} ({n} of {total} runs)") } else { f })
            .collect();
        let mut merged = crate::latency::new_hist();
        for r in &complete {
            for (v, c) in r.latency_buckets() {
                crate::latency::record_n(&mut merged, v, c);
            }
        }
        self.latency_ns = LatencyNs::from_hist(&merged);
        self.mix_summary =
            mix::MixSummary::of(&complete.iter().filter_map(|r| r.mix.as_deref()).collect::<Vec<_>>());
    }
}

/// One sweep point (one point when there is no sweep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    pub params: BTreeMap<String, String>,
    /// The point's own resolved spec (the experiment's base spec with its axis values).
    #[serde(default)]
    pub spec: Option<Spec>,
    pub phases: Vec<PhaseResult>,
}

/// A whole experiment: the JSON document `iolab run --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResult {
    pub schema_version: u32,
    pub iolab_version: String,
    pub experiment_id: String,
    pub created_unix_s: f64,
    pub host: HostFacts,
    pub spec: Spec,
    pub points: Vec<PointResult>,
    /// Sweep axes, headline statistic and preset the experiment was built from.
    #[serde(default)]
    pub design: Design,
    /// The preset's findings checked against these results (worked out when shown, from the
    /// preset this build knows; never stored, never read back: an imported JSON's findings
    /// are worked out again).
    #[serde(default, skip_serializing_if = "Vec::is_empty", skip_deserializing)]
    pub findings: Vec<findings::Finding>,
    /// An experiment laid out as the IO500 workload set: its IO500 figures and score (worked
    /// out when shown, never stored, never read back).
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub io500: Option<io500::Io500>,
    /// The runs it planned and did not run, when it ended early (an error, a stop signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<NotRun>,
}

/// The runs an experiment planned and did not run because it ended early, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRun {
    /// Runs (repetitions and warm-ups of its points) not run.
    pub runs: u64,
    /// Runs planned in all.
    pub planned: u64,
    /// What ended it: the error of the last run that ran.
    pub reason: String,
}

impl ExperimentResult {
    /// How many workers' results it keeps in memory (not spooled), warm-ups included (what
    /// the runner counts as it goes, checked against this in tests).
    #[cfg(test)]
    pub fn kept_workers(&self) -> usize {
        let phases = self.points.iter().flat_map(|p| &p.phases);
        let reps = phases.flat_map(|ph| ph.repetitions.iter().chain(&ph.warmups));
        reps.filter(|r| !r.workers.is_spooled()).map(|r| r.workers.len()).sum()
    }
}

/// Receives results as they are measured.
pub trait Sink {
    /// Before the first run: the experiment's identity, host and spec (no results yet).
    fn begin(&mut self, exp: &ExperimentResult) -> crate::Result<()>;
    /// After each run (one repetition of one point, or a warm-up run: `warmup`), complete or
    /// not, with its phases.
    fn run_done(
        &mut self,
        exp: &ExperimentResult,
        point: usize,
        run_id: &str,
        reps: &[(usize, &Repetition)],
        warmup: bool,
    ) -> crate::Result<()>;
    /// A tuning's record (`iolab tune`), after each of its rounds and when it ends; its runs
    /// came through [`Sink::run_done`] first.
    fn tuning(&mut self, _tuning: &tune::Tuning) -> crate::Result<()> {
        Ok(())
    }
    /// The experiment ended early: the runs it did not run, and why (`exp.not_run`).
    fn not_run(&mut self, _exp: &ExperimentResult) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
