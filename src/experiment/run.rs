//! Runs an experiment: for every point and repetition, create the work directories and files,
//! set the cache state before each phase, launch the workers, and hand each finished run to a
//! [`Sink`] (the store) at once, so an interruption loses nothing already measured.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::cache_view::{on_servers, phase_results, with_remote_views};
use crate::env::envctl::{self, PhaseProbe};
use crate::env::host::HostFacts;
use crate::env::sys;
use crate::error::{Error, Result};
use crate::experiment::Design;
use crate::experiment::ids::new_experiment_id;
use crate::experiment::progress;
use crate::experiment::schedule::{Slot, schedule};
use crate::launch::launch;
use crate::plan::verify::BlockTag;
use crate::plan::{self, RunPlan};
use crate::results::{CacheCheck, ExperimentResult, PointResult, Repetition, SCHEMA_VERSION, Status};
use crate::spec::{OpKind, Spec};
use crate::target::cache;
use crate::target::owned::{self, FileId};
use crate::target::workdir::WorkDirs;
use crate::worker::registry::Registered;
use crate::worker::{Monitor, PhaseJob};

/// One point of an experiment: its own parameters (empty without a sweep) and resolved spec.
#[derive(Debug, Clone)]
pub struct Point {
    pub params: BTreeMap<String, String>,
    pub spec: Spec,
}

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
    for slot in schedule(&reps, &warmups, base.interleave) {
        // A stop asked for between runs ends the experiment before the next one starts.
        error = crate::env::signals::check().err();
        if error.is_some() {
            break;
        }
        let spec = &points[slot.point].spec;
        let n = if slot.warmup { spec.warmup } else { spec.reps };
        let label = progress::run_label(slot.point, points.len(), slot.rep, n, slot.warmup);
        if let Some(e) = runner.run(slot, &label).error {
            error = Some(e);
            break;
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
            let error = Some(match err {
                Some(run_err) => {
                    self.monitor.note(&format!("the store failed too: {e}"));
                    run_err
                }
                None => e,
            });
            return RunDone { job_time_s, error, stored: false };
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

/// One repetition of one point (`label` names it on the progress line: "rep 3/5"), watching the
/// I/O of `devices` (its targets' block devices): the repetitions of the phases that ran, and
/// the error that stopped it, if any. A failure outside a phase (creating, laying out or
/// preparing files) is recorded as a failed repetition of the phase it kept from running, so the stored run is
/// never complete when it was not. The work directory is always removed (unless kept); if
/// that fails, the monitor is told what was left. `kept`: how many workers' results the
/// experiment keeps in memory already (a phase's go to the spool as it ends when they are
/// many, [`crate::results::Workers::spool_if_many`]).
pub fn run_once(
    spec: &Spec,
    plan: &RunPlan,
    devices: &[String],
    (rep, label): (u32, &str),
    (run_id, kept): (&str, usize),
    monitor: &dyn Monitor,
) -> (Vec<(usize, Repetition)>, Option<Error>) {
    let engine = crate::worker::registry::find(&spec.engine).expect("engine checked at resolve");
    let mut out = vec![];
    let mut wd = None;
    let mut at_phase = 0;
    let err = run_phases(
        spec,
        plan,
        (engine, devices),
        (rep, label),
        (run_id, kept),
        monitor,
        &mut wd,
        &mut out,
        &mut at_phase,
    )
    .err();
    if let Some(e) = &err
        && !out.iter().any(|(i, _)| *i == at_phase)
        && at_phase < plan.phases.len()
    {
        out.push((
            at_phase,
            Repetition::failed(rep, run_id, status_of(e), e.to_string(), &CacheCheck::default()),
        ));
    }
    let cleanup_err = wd.as_mut().and_then(|w: &mut WorkDirs| w.cleanup().err());
    match (err, cleanup_err) {
        (Some(e), Some(c)) => {
            monitor.note(&format!("{c}; remove what is left with `iolab clean`"));
            (out, Some(e))
        }
        // The run was measured and kept; only removing its work directory failed.
        (None, Some(c)) => (out, Some(Error::Run(format!("{c}; remove what is left with `iolab clean`")))),
        (e, None) => (out, e),
    }
}

fn status_of(e: &Error) -> Status {
    if matches!(e, Error::Interrupted(_)) { Status::Interrupted } else { Status::Failed }
}

/// The write generation of the data during phase `index`: layout-first writes generation 1,
/// and every write or rewrite phase adds one.
pub fn generation(plan: &RunPlan, index: usize) -> u32 {
    let before =
        plan.layout_first as u32 + plan.phases[..index].iter().filter(|p| p.op.is_write()).count() as u32;
    before + plan.phases[index].op.is_write() as u32
}

#[allow(clippy::too_many_arguments)]
fn run_phases(
    spec: &Spec,
    plan: &RunPlan,
    (engine, devices): (&'static Registered, &[String]),
    (rep, label): (u32, &str),
    (run_id, in_memory_before): (&str, usize),
    monitor: &dyn Monitor,
    wd_slot: &mut Option<WorkDirs>,
    out: &mut Vec<(usize, Repetition)>,
    at_phase: &mut usize,
) -> Result<()> {
    let real = engine.def.caps.real_io;
    // With I/O-server ranks the files are theirs, on their hosts: nothing is made here.
    let remote = spec.servers.as_ref();
    let local = real && remote.is_none();
    crate::env::signals::check()?;
    let devices = if local { devices } else { &[] };
    let mut base_tag = BlockTag {
        verify: spec.verify,
        run: crate::plan::verify::run_tag(run_id),
        generation: 0,
        written_bs: spec.bs_bytes,
    };
    let kept = spec.reuse.is_some() && real;
    // Every file by path and by identity: each later open checks that the path still names the
    // inode iolab created, through no link, with one link (target::owned).
    let (paths, ids): (Vec<PathBuf>, Vec<FileId>) = if kept {
        let k = crate::target::reuse::open(spec, plan)?;
        base_tag = k.tag;
        (k.paths, k.ids)
    } else if let Some(servers) = remote {
        let dir = servers.dir.join(format!("{}{run_id}", crate::target::workdir::PREFIX));
        (plan.files.iter().map(|f| dir.join(&f.name)).collect(), vec![FileId::default(); plan.files.len()])
    } else if real {
        let wd = wd_slot.insert(WorkDirs::create(spec, run_id)?);
        let paths: Vec<PathBuf> = plan.files.iter().map(|f| wd.dir(f.target).join(&f.name)).collect();
        let mut ids = Vec::with_capacity(paths.len());
        for p in &paths {
            crate::env::signals::check()?;
            let f = wd.create_file(p)?;
            ids.push(FileId::of_file(&f, p)?);
        }
        wd.sync_markers()?;
        if let Some(ns) = &plan.namespace {
            wd.make_namespace(ns)?;
        }
        if plan.layout_first {
            crate::worker::prepare::lay_out(
                spec,
                plan,
                &paths,
                &ids,
                BlockTag { generation: 1, ..base_tag },
                |_| true,
            )?;
            wd.record_written(1)?;
        }
        (paths, ids)
    } else {
        (
            plan.files.iter().map(|f| PathBuf::from(&f.name)).collect(),
            vec![FileId::default(); plan.files.len()],
        )
    };

    let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
    // Per worker, the ops with data after a bounded write stopped early; per owner, items made.
    let (mut extents, mut made): (Vec<u64>, Vec<u64>) = (vec![], vec![]);
    let workdirs = wd_slot.as_ref().map(WorkDirs::by_target).unwrap_or_default();
    for phase in &plan.phases {
        *at_phase = phase.index;
        crate::env::signals::check()?;
        if phase.index > 0 {
            pause_for_tests()?;
        }
        let tag =
            if kept { base_tag } else { BlockTag { generation: generation(plan, phase.index), ..base_tag } };
        let mut prealloc_ns = 0;
        if phase.op == OpKind::Write {
            extents.clear();
        }
        if local && phase.op == OpKind::Write {
            prealloc_ns = crate::worker::prepare::recreate(spec, plan, &paths, &ids, |_| true)?;
        }
        let md = match (&plan.namespace, phase.op.is_metadata()) {
            (Some(ns), true) => Some(super::md_run::before(plan, ns, phase, &workdirs, spec.seed, &made)?),
            _ => None,
        };
        let fraction = if local && md.is_none() {
            cache::prepare(phase.cache, &paths, &ids, spec.drop_caches)?
        } else {
            0.0
        };
        let check =
            md.as_ref().map_or_else(|| CacheCheck::judge(phase.cache, fraction, real), |m| m.1.clone());
        let job = PhaseJob {
            spec,
            phase,
            paths: &paths,
            ids: &ids,
            sizes: &sizes,
            engine,
            tag,
            extents: if phase.op.is_metadata() { &made } else { &extents },
            workdirs: &workdirs,
            namespace: plan.namespace.as_ref(),
        };
        match (phase.op.is_metadata(), spec.phase_bound(&spec.phases[phase.index])) {
            (true, _) => monitor.begin_ops(&format!("{label} {}", phase.name), phase.md_ops()),
            (false, Some(b)) => {
                monitor.begin_bounded(&format!("{label} {}", phase.name), phase.bytes(), b.ns())
            }
            (false, None) => monitor.begin(&format!("{label} {}", phase.name), phase.bytes()),
        }
        if local {
            // The spool of earlier phases' workers' results too, should its file system share
            // the targets' device.
            envctl::settle_writeback(spec.dirs.iter().cloned().chain([std::env::temp_dir()]));
        }
        let probe = PhaseProbe::start(devices);
        let outcome = launch(&job, monitor);
        let env = probe.finish();
        monitor.end();
        match outcome {
            Ok(launched) => {
                let samples = launched.samples;
                if phase.op.is_write() && spec.phase_bound(&spec.phases[phase.index]).is_some() {
                    extents = crate::worker::bound::extents_after(phase, &samples, &extents);
                }
                let check = match (remote, &md) {
                    (_, Some((_, c))) => c.clone(),
                    (Some(_), None) => on_servers(phase.cache, &launched.servers),
                    (None, None) => with_remote_views(phase.cache, fraction, &samples, real),
                };
                let namespace = md.map(|(s, _)| super::md_run::after(spec, phase, s, &samples, &mut made));
                let mut r = Repetition::from_samples(rep, run_id, samples, launched.series, &check);
                super::ranks::note_hints(spec, &r.workers.load(), monitor);
                (r.namespace, r.servers, r.latency_histogram_ns) =
                    (namespace, launched.servers, launched.latency);
                r.merged_classes(launched.classes);
                r.prealloc_ns = prealloc_ns;
                // A metadata phase's device I/O (inodes, journal) is no bytes of it: no noise judgement.
                if !phase.op.is_metadata() {
                    let (write, commits) = (phase.op.writes(), r.workers.iter().map(|w| w.sync_calls).sum());
                    r.flags.extend(envctl::judge_noise(write, r.total_bytes, commits, &env.devices));
                }
                r.flags.extend(crate::launch::oversubscription());
                r.env = env;
                if local && phase.op.is_write() && crate::env::signals::pending().is_none() {
                    // Where the data landed; a file system without FIEMAP just has no facts.
                    let names: Vec<String> = plan.files.iter().map(|f| f.name.clone()).collect();
                    let open = |i: usize| {
                        crate::env::signals::check().map_err(std::io::Error::other)?;
                        owned::open(&paths[i], ids[i], false, 0).map_err(std::io::Error::other)
                    };
                    r.file_layout = crate::env::forensics::probe_or_place(&names, &paths, open);
                    if let Some(facts) = r.file_layout.as_mut() {
                        let piece = crate::plan::piece_len(spec);
                        facts.blocks = plan.files.iter().map(|f| f.size_bytes.div_ceil(piece)).sum();
                        let together =
                            super::phases::written_together(spec, phase).filter(|_| extents.is_empty());
                        if let (true, Some(flag)) = (spec.alloc_block, together.and_then(|k| facts.judge(k)))
                        {
                            r.flags.push(flag);
                        }
                    }
                }
                // Its workers' results leave memory for the spool, when they are many, before the
                // next phase runs.
                let in_memory: usize =
                    out.iter().filter(|(_, r)| !r.workers.is_spooled()).map(|(_, r)| r.workers.len()).sum();
                r.workers.spool_if_many(in_memory_before + in_memory);
                out.push((phase.index, r));
                if let (Some(wd), true) = (wd_slot.as_mut(), phase.op.is_write()) {
                    wd.record_written(tag.generation)?;
                }
            }
            Err(e) => {
                let mut r = Repetition::failed(rep, run_id, status_of(&e), e.to_string(), &check);
                r.env = env;
                out.push((phase.index, r));
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Test hook, not for users: with IOLAB_TEST_PAUSE_BETWEEN_PHASES=FILE in the environment,
/// the coordinator waits before every phase but the first until FILE exists (iolab never
/// removes it), so a test can change the work directory between two phases. A stop signal ends
/// the wait.
pub const PAUSE_VAR: &str = "IOLAB_TEST_PAUSE_BETWEEN_PHASES";

fn pause_for_tests() -> Result<()> {
    let Some(go) = std::env::var_os(PAUSE_VAR).filter(|v| !v.is_empty()) else { return Ok(()) };
    while std::fs::symlink_metadata(&go).is_err() {
        crate::env::signals::check()?;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(())
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
