//! One repetition of one point: its work directories and files, each phase's cache state,
//! the workers launched, each phase's repetition made from their samples; a failure stored as
//! a failed repetition of the phase it kept from running, and the work directory removed
//! whatever happened (unless kept).

use std::path::PathBuf;

use super::cache_view::{on_servers, with_remote_views};
use crate::env::envctl::{self, PhaseProbe};
use crate::error::{Error, Result};
use crate::launch::launch;
use crate::plan::RunPlan;
use crate::plan::verify::BlockTag;
use crate::results::{CacheCheck, Repetition, Status};
use crate::spec::{OpKind, Spec};
use crate::target::cache;
use crate::target::owned::{self, FileId};
use crate::target::workdir::WorkDirs;
use crate::worker::registry::Registered;
use crate::worker::{Monitor, PhaseJob};

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
        // The run was measured and kept; only removing its work directory failed (or a stop
        // signal ended the removal: the signal's error, the rest said).
        (None, Some(c)) => match crate::env::signals::pending() {
            Some(sig) => {
                monitor.note(&format!("{c}; remove what is left with `iolab clean`"));
                (out, Some(Error::Interrupted(sig)))
            }
            None => (out, Some(Error::Run(format!("{c}; remove what is left with `iolab clean`")))),
        },
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
