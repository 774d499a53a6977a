//! Runs an experiment: for every point and repetition, create the work directories and files,
//! set the cache state before each phase, launch the workers, and hand each finished run to a
//! [`Sink`] (the store) at once, so an interruption loses nothing already measured.

use std::collections::BTreeMap;

use super::cache_view::phase_results;
use crate::env::envctl;
use crate::env::host::HostFacts;
use crate::env::sys;
use crate::error::{Error, Result};
use crate::experiment::Design;
use crate::experiment::ids::new_experiment_id;
use crate::experiment::progress;
use crate::experiment::schedule::{Slot, schedule};
use crate::plan::{self, RunPlan};
use crate::results::{ExperimentResult, NotRun, PointResult, Repetition, SCHEMA_VERSION};
use crate::spec::Spec;
use crate::worker::Monitor;

/// One point of an experiment: its own parameters (empty without a sweep) and resolved spec.
#[derive(Debug, Clone)]
pub struct Point {
    pub params: BTreeMap<String, String>,
    pub spec: Spec,
}

pub use super::repetition::{PAUSE_VAR, generation, run_once};
pub use crate::results::Sink;

/// A sink that keeps nothing (`--no-store`).
pub struct NoSink;

impl Sink for NoSink {
    fn begin(&mut self, _: &ExperimentResult) -> Result<()> {
        Ok(())
    }
    fn run_done(
        &mut self,
        _: &ExperimentResult,
        _: usize,
        _: &str,
        _: &[(usize, &Repetition)],
        _: bool,
    ) -> Result<()> {
        Ok(())
    }
}

/// What an experiment produced: everything measured, and the error that stopped it, if any.
pub struct Outcome {
    pub result: ExperimentResult,
    pub error: Option<Error>,
}

/// Runs every point `reps` times (plus its warm-ups), in the order `base.interleave` asks for
/// (round-robin over points by default) so a slow drift of the machine does not bias one
/// point; before each run, settles and primes memory as the point's spec asks.
pub fn run_experiment(
    base: &Spec,
    points: &[Point],
    design: Design,
    host: HostFacts,
    sink: &mut dyn Sink,
    monitor: &dyn Monitor,
) -> Result<Outcome> {
    let mut runner = Runner::begin(base, points, design, host, sink, monitor)?;
    let reps: Vec<u32> = points.iter().map(|p| p.spec.reps).collect();
    let warmups: Vec<u32> = points.iter().map(|p| p.spec.warmup).collect();
    let mut error = None;
    let slots = schedule(&reps, &warmups, base.interleave);
    let mut ran = 0u64;
    for slot in slots.iter().copied() {
        // A stop asked for between runs ends the experiment before the next one starts.
        error = crate::env::signals::check().err();
        if error.is_some() {
            break;
        }
        let spec = &points[slot.point].spec;
        let n = if slot.warmup { spec.warmup } else { spec.reps };
        let label = progress::run_label(slot.point, points.len(), slot.rep, n, slot.warmup);
        ran += 1;
        if let Some(e) = runner.run(slot, &label).error {
            error = Some(e);
            break;
        }
    }
    // Ended early: the runs it did not run are counted, with why, and stored so.
    let planned = slots.len() as u64;
    if let Some(e) = error.as_ref().filter(|_| ran < planned) {
        runner.result.not_run = Some(NotRun { runs: planned - ran, planned, reason: e.to_string() });
        if let Err(s) = runner.sink.not_run(&runner.result) {
            monitor.note(&format!("the store failed too: {s}"));
        }
    }
    Ok(Outcome { result: runner.result, error })
}

/// Runs the runs of an experiment one at a time, in any order its caller picks (the schedule
/// of [`run_experiment`], or a tuner's rounds): keeps every result and hands each run to the
/// sink as it ends.
pub struct Runner<'a> {
    /// Everything measured so far.
    pub result: ExperimentResult,
    points: &'a [Point],
    plans: Vec<RunPlan>,
    /// Per point, the block devices under its targets, whose I/O each phase records.
    devices: Vec<Vec<String>>,
    sink: &'a mut dyn Sink,
    monitor: &'a dyn Monitor,
    /// How many workers' results `result` keeps in memory (not spooled), warm-ups included.
    held: usize,
}

/// What one run left (its phases' repetitions are in [`Runner::result`]): the job's time, and
/// the error that stopped it (the run's own, or the store's when the run could not be stored:
/// then `stored` is false).
pub struct RunDone {
    /// Its phases' times summed, in seconds (the slowest worker's t_i of each).
    pub job_time_s: f64,
    pub error: Option<Error>,
    pub stored: bool,
}

impl<'a> Runner<'a> {
    /// The experiment's identity, handed to the sink before its first run.
    pub fn begin(
        base: &Spec,
        points: &'a [Point],
        design: Design,
        host: HostFacts,
        sink: &'a mut dyn Sink,
        monitor: &'a dyn Monitor,
    ) -> Result<Runner<'a>> {
        let plans: Vec<plan::RunPlan> = points.iter().map(|p| plan::plan(&p.spec)).collect();
        // From the host facts, read once per experiment (a target they lack is read here, once).
        let mut known = host.targets.clone();
        let real = |s: &Spec| crate::worker::registry::find(&s.engine).is_some_and(|e| e.def.caps.real_io);
        let devices = points
            .iter()
            .map(|p| if real(&p.spec) { envctl::devices_in(&mut known, &p.spec.dirs) } else { vec![] })
            .collect();
        let points_result = points
            .iter()
            .zip(&plans)
            .map(|(p, plan)| PointResult {
                params: p.params.clone(),
                spec: Some(p.spec.clone()),
                phases: phase_results(&host, &p.spec, plan),
            })
            .collect();
        let result = ExperimentResult {
            schema_version: SCHEMA_VERSION,
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            experiment_id: new_experiment_id(),
            created_unix_s: sys::unix_time_s(),
            host,
            spec: base.clone(),
            points: points_result,
            design,
            findings: vec![],
            io500: None,
            not_run: None,
        };
        sink.begin(&result)?;
        Ok(Runner { result, points, plans, devices, sink, monitor, held: 0 })
    }

    /// The sink runs go to (a tuner records its rounds there too).
    pub fn sink(&mut self) -> &mut dyn Sink {
        self.sink
    }

    /// Runs one slot (`label` names it on the progress line): settles and primes memory as
    /// its point asks, runs it, keeps what it measured and stores it.
    pub fn run(&mut self, slot: Slot, label: &str) -> RunDone {
        let (pi, spec) = (slot.point, &self.points[slot.point].spec);
        let run_id = crate::target::workdir::new_run_id();
        let (reps, err) = match before_run(spec, self.monitor) {
            Ok(pre) => {
                let (plan, devices) = (&self.plans[pi], &self.devices[pi]);
                let (mut reps, err) =
                    run_once(spec, plan, devices, (slot.rep, label), (&run_id, self.held), self.monitor);
                for (_, r) in &mut reps {
                    (r.env.settle_ns, r.env.prime_memory_bytes, r.env.prime_ns) = pre;
                }
                (reps, err)
            }
            Err(e) => (vec![], Some(e)),
        };
        let job_time_s = reps.iter().map(|(_, r)| r.time_ns as f64 / 1e9).sum();
        // Kept once, where the experiment keeps it, and handed to the sink from there: no
        // second copy of every worker's result while it is stored.
        let kept = self.result.points[pi].keep_run(reps, slot.warmup);
        let run = self.result.points[pi].kept_run(&kept, slot.warmup);
        // A store that fails now must not lose what is in hand: the caller still prints it.
        let stored = if run.is_empty() {
            Ok(())
        } else {
            self.sink.run_done(&self.result, pi, &run_id, &run, slot.warmup)
        };
        // The traces are stored (or not kept): their spills go, and many workers to the spool.
        self.held += self.result.points[pi].release_run(&kept, slot.warmup, self.held);
        #[cfg(test)]
        assert_eq!(self.held, self.result.kept_workers(), "workers' results counted as held in memory");
        if let Err(e) = stored {
            // A stop signal while its traces were stored: the run is stored, without them.
            let kept = matches!(e, Error::Interrupted(_));
            let error = Some(match err {
                Some(run_err) if !kept => {
                    self.monitor.note(&format!("the store failed too: {e}"));
                    run_err
                }
                Some(run_err) => run_err,
                None => e,
            });
            return RunDone { job_time_s, error, stored: kept };
        }
        RunDone { job_time_s, error: err, stored: true }
    }
}

/// Settles and primes memory before a run: (slept ns, primed bytes, priming ns).
fn before_run(spec: &Spec, monitor: &dyn Monitor) -> Result<(u64, u64, u64)> {
    let slept = if spec.settle_ns > 0 { envctl::settle(spec.settle_ns, monitor)? } else { 0 };
    let primed = envctl::prime_memory(spec.prime_memory_bytes)?;
    Ok((slept, spec.prime_memory_bytes, primed.ns))
}

/// A monitor that shows nothing and never stops a run (library use and tests).
pub struct Silent;

impl Monitor for Silent {
    fn tick(&self, _bytes_done: u64) -> Option<i32> {
        None
    }
    fn wants_ticks(&self) -> bool {
        false
    }
}
