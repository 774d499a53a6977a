//! Runs an experiment: for every point and repetition, create the work directories and files,
//! set the cache state before each phase, launch the workers, and hand each finished run to a
//! [`Sink`] (the store) at once, so an interruption loses nothing already measured.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::cache;
use crate::engine::{self, EngineDef};
use crate::error::{Error, Result};
use crate::fill;
use crate::host::HostFacts;
use crate::plan::{self, RunPlan};
use crate::results::{
    CacheCheck, ExperimentResult, PhaseResult, PointResult, Repetition, SCHEMA_VERSION, Status,
};
use crate::spec::{OpKind, Spec};
use crate::sys;
use crate::workdir::WorkDirs;
use crate::worker::{Monitor, PhaseJob, run_phase_threads};

/// One point of an experiment: its own parameters (empty without a sweep) and resolved spec.
#[derive(Debug, Clone)]
pub struct Point {
    pub params: BTreeMap<String, String>,
    pub spec: Spec,
}

/// Receives results as they are measured.
pub trait Sink {
    /// Before the first run: the experiment's identity, host and spec (no results yet).
    fn begin(&mut self, exp: &ExperimentResult) -> Result<()>;
    /// After each run (one repetition of one point), complete or not, with its phases.
    fn run_done(
        &mut self,
        exp: &ExperimentResult,
        point: usize,
        run_id: &str,
        reps: &[(usize, Repetition)],
    ) -> Result<()>;
}

/// A sink that keeps nothing (`--no-store`).
pub struct NoSink;

impl Sink for NoSink {
    fn begin(&mut self, _: &ExperimentResult) -> Result<()> {
        Ok(())
    }
    fn run_done(&mut self, _: &ExperimentResult, _: usize, _: &str, _: &[(usize, Repetition)]) -> Result<()> {
        Ok(())
    }
}

/// What an experiment produced: everything measured, and the error that stopped it, if any.
pub struct Outcome {
    pub result: ExperimentResult,
    pub error: Option<Error>,
}

/// A new experiment id: UTC date and time plus random hex, e.g. `20261121-103600-4f2a9c`.
pub fn new_experiment_id() -> String {
    let secs = sys::unix_time_s() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{:06x}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        sys::random_u64() & 0xff_ffff
    )
}

/// A new run id: 128 random bits in hex; stable across stores, so imports never duplicate.
pub fn new_run_id() -> String {
    format!("{:016x}{:016x}", sys::random_u64(), sys::random_u64())
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Runs every point `reps` times, repetitions interleaved round-robin over points so a slow
/// drift of the machine does not bias one point.
pub fn run_experiment(
    base: &Spec,
    points: &[Point],
    host: HostFacts,
    sink: &mut dyn Sink,
    monitor: &dyn Monitor,
) -> Result<Outcome> {
    let mut result = ExperimentResult {
        schema_version: SCHEMA_VERSION,
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        experiment_id: new_experiment_id(),
        created_unix_s: sys::unix_time_s(),
        host,
        spec: base.clone(),
        points: points
            .iter()
            .map(|p| PointResult {
                params: p.params.clone(),
                phases: p
                    .spec
                    .phases
                    .iter()
                    .map(|ph| {
                        let method = cache::method(ph.cache, p.spec.direct, p.spec.drop_caches);
                        PhaseResult::new(&ph.name, ph.op, ph.cache, method)
                    })
                    .collect(),
            })
            .collect(),
    };
    sink.begin(&result)?;
    let plans: Vec<RunPlan> = points.iter().map(|p| plan::plan(&p.spec)).collect();
    let max_reps = points.iter().map(|p| p.spec.reps).max().unwrap_or(0);
    let mut error = None;
    'reps: for rep in 0..max_reps {
        for (pi, point) in points.iter().enumerate() {
            if rep >= point.spec.reps {
                continue;
            }
            let run_id = new_run_id();
            let (reps, err) = run_once(&point.spec, &plans[pi], rep, &run_id, monitor);
            for (phase, r) in &reps {
                result.points[pi].phases[*phase].repetitions.push(r.clone());
            }
            for ph in &mut result.points[pi].phases {
                ph.refresh();
            }
            sink.run_done(&result, pi, &run_id, &reps)?;
            if let Some(e) = err {
                error = Some(e);
                break 'reps;
            }
        }
    }
    Ok(Outcome { result, error })
}

/// One repetition of one point: the repetitions of the phases that ran, and the error that
/// stopped it, if any. The work directory is always removed (unless kept).
pub fn run_once(
    spec: &Spec,
    plan: &RunPlan,
    rep: u32,
    run_id: &str,
    monitor: &dyn Monitor,
) -> (Vec<(usize, Repetition)>, Option<Error>) {
    let engine = engine::find(&spec.engine).expect("engine checked at resolve");
    let mut out = vec![];
    let mut wd = None;
    let err = run_phases(spec, plan, engine, rep, run_id, monitor, &mut wd, &mut out).err();
    let cleanup_err = wd.as_mut().and_then(|w: &mut WorkDirs| w.cleanup().err());
    (out, err.or(cleanup_err))
}

#[allow(clippy::too_many_arguments)]
fn run_phases(
    spec: &Spec,
    plan: &RunPlan,
    engine: &'static EngineDef,
    rep: u32,
    run_id: &str,
    monitor: &dyn Monitor,
    wd_slot: &mut Option<WorkDirs>,
    out: &mut Vec<(usize, Repetition)>,
) -> Result<()> {
    let real = engine.caps.real_io;
    let paths: Vec<PathBuf> = if real {
        let wd = wd_slot.insert(WorkDirs::create(&spec.dirs, run_id, spec.keep)?);
        let paths: Vec<PathBuf> = plan.files.iter().map(|f| wd.dir(f.target).join(&f.name)).collect();
        for p in &paths {
            wd.create_file(p)?;
        }
        if plan.layout_first {
            lay_out(spec, plan, &paths)?;
        }
        paths
    } else {
        plan.files.iter().map(|f| PathBuf::from(&f.name)).collect()
    };

    let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
    for phase in &plan.phases {
        let mut prealloc_ns = 0;
        if real && phase.op == OpKind::Write {
            prealloc_ns = recreate(spec, plan, &paths)?;
        }
        let fraction = if real { cache::prepare(phase.cache, &paths, spec.drop_caches)? } else { 0.0 };
        let check = CacheCheck::judge(phase.cache, fraction, real);
        let job = PhaseJob { spec, phase, paths: &paths, sizes: &sizes, engine };
        monitor.begin(&format!("rep {} {}", rep + 1, phase.name), phase.bytes());
        let outcome = run_phase_threads(&job, monitor);
        monitor.end();
        match outcome {
            Ok(samples) => {
                let mut r = Repetition::from_samples(rep, run_id, &samples, &check);
                r.prealloc_ns = prealloc_ns;
                out.push((phase.index, r));
            }
            Err(e) => {
                let status =
                    if matches!(e, Error::Interrupted(_)) { Status::Interrupted } else { Status::Failed };
                out.push((phase.index, Repetition::failed(rep, run_id, status, e.to_string(), &check)));
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Before a write phase: empty every file, then preallocate if asked. Returns the time
/// preallocation took (reported separately, not part of any worker's t_i).
fn recreate(spec: &Spec, plan: &RunPlan, paths: &[PathBuf]) -> Result<u64> {
    let mut ns = 0;
    for (f, p) in plan.files.iter().zip(paths) {
        let file =
            std::fs::OpenOptions::new().write(true).open(p).map_err(|e| Error::io("open", p, None, e))?;
        file.set_len(0).map_err(|e| Error::io("ftruncate", p, None, e))?;
        if spec.prealloc {
            let t = sys::now_ns();
            sys::fallocate(&file, f.size_bytes).map_err(|e| Error::io("fallocate", p, Some(0), e))?;
            ns += sys::now_ns() - t;
        }
    }
    Ok(ns)
}

/// Writes every file in full (untimed) when the first phase reads or rewrites: the same
/// bytes a write phase would produce, committed.
fn lay_out(spec: &Spec, plan: &RunPlan, paths: &[PathBuf]) -> Result<()> {
    let bs = spec.bs_bytes as usize;
    let mut buf = vec![0u8; bs];
    fill::fill(&mut buf, spec.seed);
    for (gid, (f, p)) in plan.files.iter().zip(paths).enumerate() {
        let file = File::options().write(true).open(p).map_err(|e| Error::io("open", p, None, e))?;
        let salt = fill::file_salt(spec.seed, gid as u32);
        let mut off = 0;
        while off < f.size_bytes {
            let len = bs.min((f.size_bytes - off) as usize);
            fill::stamp(&mut buf[..len], salt, off);
            file.write_all_at(&buf[..len], off).map_err(|e| Error::io("pwrite", p, Some(off), e))?;
            off += len as u64;
        }
        file.sync_data().map_err(|e| Error::io("fdatasync", p, None, e))?;
    }
    Ok(())
}

/// A monitor that shows nothing and never stops a run (library use and tests).
pub struct Silent;

impl Monitor for Silent {
    fn tick(&self, _bytes_done: u64) -> Option<i32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_413), (2025, 11, 21));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn ids_look_right() {
        let id = new_experiment_id();
        assert_eq!(id.len(), 22, "{id}");
        assert_ne!(new_run_id(), new_run_id());
    }
}
