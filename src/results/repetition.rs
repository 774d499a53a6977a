//! A repetition's figures from its workers' samples: its rates (max_SAR, min_SAR, IOPS, the
//! IOR span), its per-host shares, a failed repetition; a run's repetitions kept in its point
//! (moved, not copied), their traces let go and their workers spooled once stored.

use super::*;

impl Repetition {
    /// Lets its workers' traces go (what results keep in memory once stored: none).
    pub fn drop_traces(&mut self) {
        if self.workers.is_spooled() {
            return; // (a spooled worker holds no trace)
        }
        for w in self.workers.make_mut() {
            w.trace = None;
        }
    }

    /// Builds a complete repetition from its workers' samples, taken: what each worker's
    /// result holds is moved from its sample, not copied. Its rate over time is `summed`, the
    /// workers' series summed already (MPI ranks up the tree), else the sum of the samples'.
    pub fn from_samples(
        rep: u32,
        run_id: &str,
        mut samples: Vec<WorkerSample>,
        summed: Option<RateSeries>,
        cache: &CacheCheck,
    ) -> Repetition {
        let timing = timing::PhaseTiming::of(&samples);
        // The workers' class histograms merged for the repetition before their results are made.
        let mut classes = crate::latency::classes::ClassMerge::default();
        for m in samples.iter_mut().filter_map(|s| s.mix.as_mut()) {
            m.classes.merge_into(&mut classes);
        }
        let cold = samples.iter().any(|s| s.mix.as_ref().is_some_and(|m| m.cold));
        let flags = cache
            .flags
            .iter()
            .cloned()
            .chain(flags::trace_wait_flag(&samples))
            .chain(timing.flag(&samples))
            .chain(timing::stall_flag(&samples))
            .collect();
        let syncs_in_flight_max =
            samples.iter().filter_map(|s| s.role.as_ref()).map(|r| r.syncs_in_flight_max).max();
        let rate = match summed {
            Some(sum) => Some(series::PhaseRate::of_sum(sum, &samples)),
            None => series::PhaseRate::of(&samples),
        };
        // Made in the samples' place (a result is no larger than a sample): a phase's samples
        // and their results are never held at once.
        let workers: Vec<WorkerResult> = samples
            .into_iter()
            .map(|s| {
                let start_offset_ns = timing.start_offset(&s);
                WorkerResult { start_offset_ns, ..WorkerResult::from_sample(s) }
            })
            .collect();
        let r = stats::rates(workers.iter().map(|w| (w.bytes, w.time_ns)));
        let mut rep = Repetition {
            rep,
            run_id: run_id.to_string(),
            status: Status::Complete,
            error: None,
            total_bytes: workers.iter().map(|w| w.bytes).sum(),
            ops: workers.iter().map(|w| w.ops).sum(),
            time_ns: workers.iter().map(|w| w.time_ns).max().unwrap_or(0),
            max_sar_bytes_per_s: r.max_sar,
            min_sar_bytes_per_s: r.min_sar,
            avg_individual_bytes_per_s: r.avg_individual,
            ops_per_s: 0.0,
            agg_bytes_per_s: timing.agg_bytes_per_s,
            span_ns: timing.span_ns,
            overlap: Some(timing.overlap),
            max_sar_ops_per_s: 0.0,
            min_sar_ops_per_s: 0.0,
            agg_ops_per_s: None,
            resident_fraction: cache.resident_fraction,
            prealloc_ns: 0,
            flags,
            workers: workers.into(),
            env: RunEnv::default(),
            file_layout: None,
            syncs_in_flight_max,
            hosts: vec![],
            servers: vec![],
            rate,
            namespace: None,
            latency_histogram_ns: Buckets::default(),
            again_fraction: None,
            mix: None,
        }
        .with_hosts()
        .with_again();
        rep.set_mix(classes.finish());
        if let Some(a) = rep.again_fraction.filter(|&a| cold && a > COLD_MAX_RESIDENT) {
            rep.flags.push(format!(
                "re-read: {:.1}% of its bytes were of blocks it had already moved in the phase (a pass after the first, or a repeat), which the page cache may serve",
                a * 100.0
            ));
        }
        rep
    }

    /// Its workload apart again with the class histograms rank 0 merged as the replies came
    /// (MPI ranks; None: the samples had their own, nothing to do).
    pub fn merged_classes(&mut self, classes: Option<crate::latency::classes::ClassSample>) {
        if classes.is_some() {
            self.set_mix(classes);
        }
    }

    /// The repetition with the share of its bytes its workers moved again worked out.
    pub fn with_again(mut self) -> Repetition {
        let again: u64 = self.workers.iter().filter_map(|w| w.mix.as_ref().map(|m| m.again_bytes)).sum();
        self.again_fraction =
            (again > 0 && self.total_bytes > 0).then(|| again as f64 / self.total_bytes as f64);
        self
    }

    /// Its workload apart from its workers' figures and their class histograms merged
    /// (`classes`: of its samples, or as rank 0 merged them as the replies came), and the flag
    /// of workers behind their schedule.
    pub fn set_mix(&mut self, classes: Option<crate::latency::classes::ClassSample>) {
        let workers = self.workers.load();
        let of: Vec<(&mix::WorkerMix, u64)> =
            workers.iter().filter_map(|w| w.mix.as_deref().map(|m| (m, w.time_ns))).collect();
        let mixed = mix::Mix::of(&of, classes.as_ref());
        drop(of);
        drop(workers);
        self.flags.retain(|f| !f.starts_with("behind schedule"));
        if let Some(f) = mixed.as_ref().and_then(mix::Mix::behind_flag) {
            self.flags.push(f);
        }
        self.mix = mixed.map(Box::new);
    }

    /// Every op's latency bucket of all its workers: the merged histogram when it has one,
    /// else each worker's.
    pub fn latency_buckets(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        if self.latency_histogram_ns.is_empty() {
            self.workers.latency_buckets()
        } else {
            Box::new(self.latency_histogram_ns.0.iter().copied())
        }
    }

    /// Its workers' ops per second, summed (what `ops_per_s` holds).
    pub fn iops(&self) -> f64 {
        self.workers.iter().map(|w| stats::individual_rate(w.ops, w.time_ns)).filter(|r| r.is_finite()).sum()
    }

    /// The repetition with its per-host figures and its op rates worked out from its workers.
    pub fn with_hosts(mut self) -> Repetition {
        // No time (no worker, or none that ran) gives no rate: 0, as in a failed repetition.
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        let workers = self.workers.make_mut();
        for w in workers.iter_mut() {
            w.ops_per_s = finite(stats::individual_rate(w.ops, w.time_ns));
        }
        let ops = stats::rates(workers.iter().map(|w| (w.ops, w.time_ns)));
        (self.max_sar_ops_per_s, self.min_sar_ops_per_s) = (finite(ops.max_sar), finite(ops.min_sar));
        self.hosts = hosts::host_shares(workers);
        self.ops_per_s = self.iops();
        self.agg_ops_per_s = self.span_ns.filter(|&s| s > 0).map(|s| self.ops as f64 * 1e9 / s as f64);
        self
    }

    /// Its headline rates: max_SAR and min_SAR of ops for a metadata phase (`md`), of bytes
    /// otherwise.
    pub fn sar(&self, md: bool) -> (f64, f64) {
        if md {
            (self.max_sar_ops_per_s, self.min_sar_ops_per_s)
        } else {
            (self.max_sar_bytes_per_s, self.min_sar_bytes_per_s)
        }
    }

    /// A repetition that did not complete.
    pub fn failed(rep: u32, run_id: &str, status: Status, error: String, cache: &CacheCheck) -> Repetition {
        Repetition {
            rep,
            run_id: run_id.to_string(),
            status,
            error: Some(error),
            total_bytes: 0,
            ops: 0,
            time_ns: 0,
            max_sar_bytes_per_s: 0.0,
            min_sar_bytes_per_s: 0.0,
            avg_individual_bytes_per_s: 0.0,
            ops_per_s: 0.0,
            agg_bytes_per_s: None,
            span_ns: None,
            overlap: None,
            max_sar_ops_per_s: 0.0,
            min_sar_ops_per_s: 0.0,
            agg_ops_per_s: None,
            resident_fraction: cache.resident_fraction,
            prealloc_ns: 0,
            flags: cache.flags.clone(),
            workers: Default::default(),
            env: RunEnv::default(),
            file_layout: None,
            syncs_in_flight_max: None,
            hosts: vec![],
            servers: vec![],
            rate: None,
            namespace: None,
            latency_histogram_ns: Buckets::default(),
            again_fraction: None,
            mix: None,
        }
    }
}

impl PointResult {
    /// Keeps a run's repetitions, (phase, repetition), among its phases' warm-ups or measured
    /// repetitions, moved, not copied, and brings the phases' figures up to date; where each
    /// went: (phase, index).
    pub fn keep_run(&mut self, reps: Vec<(usize, Repetition)>, warmup: bool) -> Vec<(usize, usize)> {
        let kept = reps
            .into_iter()
            .map(|(phase, r)| {
                let runs = runs_mut(&mut self.phases[phase], warmup);
                runs.push(r);
                (phase, runs.len() - 1)
            })
            .collect();
        for ph in &mut self.phases {
            ph.refresh();
        }
        kept
    }

    /// The run kept at `kept` ([`PointResult::keep_run`]), as a sink is handed it.
    pub fn kept_run(&self, kept: &[(usize, usize)], warmup: bool) -> Vec<(usize, &Repetition)> {
        kept.iter().map(|&(phase, i)| (phase, &runs(&self.phases[phase], warmup)[i])).collect()
    }

    /// Lets the traces of the run kept at `kept` go, and moves its workers' results to the
    /// spool when they are many, the experiment keeping `others` in memory besides this run
    /// ([`Workers::spool_if_many`]). Returns how many of this run's stay in memory.
    pub fn release_run(&mut self, kept: &[(usize, usize)], warmup: bool, others: usize) -> usize {
        let mut held = 0;
        for &(phase, i) in kept {
            let r = &mut runs_mut(&mut self.phases[phase], warmup)[i];
            r.drop_traces();
            r.workers.spool_if_many(others + held);
            if !r.workers.is_spooled() {
                held += r.workers.len();
            }
        }
        held
    }
}

/// A phase's warm-up runs, or its measured repetitions.
fn runs(ph: &PhaseResult, warmup: bool) -> &[Repetition] {
    if warmup { &ph.warmups } else { &ph.repetitions }
}

/// As [`runs`], to change.
fn runs_mut(ph: &mut PhaseResult, warmup: bool) -> &mut Vec<Repetition> {
    if warmup { &mut ph.warmups } else { &mut ph.repetitions }
}
