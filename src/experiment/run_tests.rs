//! Tests of the coordinator: over real experiments, what it reads once per experiment and what
//! it keeps of each run; its write generations and ids.

use crate::env::host::{self, HostFacts, TARGET_READS};
use crate::experiment::run::{NoSink, Outcome, Silent, run_experiment};
use crate::experiment::{Experiment, ResolveEnv};
use crate::results::Status;

/// A sweep of 3 points (bs 1, 2 and 4 KiB over 8 KiB), 2 repetitions each, of a write and a
/// cold read into `dir` with the psync engine, given `facts` as the experiment's host facts;
/// with the number of target-fact reads it made.
fn sweep(dir: &std::path::Path, facts: HostFacts) -> (Outcome, u64) {
    let mut e = Experiment::default();
    let d = dir.to_string_lossy().into_owned();
    for (k, v) in [("engine", "psync"), ("size", "8KiB"), ("reps", "2"), ("dirs", d.as_str())] {
        e.params.set(k, v.split(',').map(String::from).collect()).unwrap();
    }
    e.params.set("ops", vec!["write".into(), "read".into()]).unwrap();
    e.sweep.add(crate::experiment::sweep::parse_arg("bs=1KiB,2KiB,4KiB", 1 << 30).unwrap()).unwrap();
    let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    let b = e.build(&env).unwrap();
    assert_eq!(b.points.len(), 3);
    let before = TARGET_READS.with(|n| n.get());
    let out = run_experiment(&b.base, &b.points, b.design, facts, &mut NoSink, &Silent).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    (out, TARGET_READS.with(|n| n.get()) - before)
}

/// The devices every repetition of `out` watched, all complete; 3 points x 2 phases x 2 reps.
fn watched(out: &Outcome) -> Vec<Vec<String>> {
    let reps: Vec<_> =
        out.result.points.iter().flat_map(|p| &p.phases).flat_map(|ph| &ph.repetitions).collect();
    assert_eq!(reps.len(), 12);
    assert!(reps.iter().all(|r| r.status == Status::Complete));
    reps.iter().map(|r| r.env.devices.iter().map(|d| d.device.clone()).collect()).collect()
}

#[test]
fn host_facts_are_read_once_per_experiment_not_per_run() {
    let dir = tempfile::tempdir().unwrap();
    // The facts probed before the experiment are all it reads: its 6 runs read none again.
    let facts = host::probe(&[dir.path().to_path_buf()]);
    let want: Vec<String> =
        facts.targets[0].device.iter().map(|d| d.trim_start_matches("/dev/").to_string()).collect();
    let (out, reads) = sweep(dir.path(), facts.clone());
    assert_eq!(reads, 0);
    assert_eq!(out.result.host, facts);
    assert!(watched(&out).iter().all(|d| *d == want), "{:?} != {want:?}", watched(&out));
    // Facts that lack the target: it is read once, for all 3 points and their 6 runs.
    let (out, reads) = sweep(dir.path(), HostFacts::default());
    assert_eq!(reads, 1);
    assert!(watched(&out).iter().all(|d| *d == want));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "work directories left");
}

/// A sink that notes where each run's workers lie in memory and whether they held their
/// traces when handed over.
#[derive(Default)]
struct Where {
    /// (whether it was the very repetition the experiment keeps, whether its workers were in
    /// memory, how many held a trace, how many workers) per repetition handed over.
    seen: Vec<(bool, bool, usize, usize)>,
}

impl crate::results::Sink for Where {
    fn begin(&mut self, _: &crate::results::ExperimentResult) -> crate::Result<()> {
        Ok(())
    }
    fn run_done(
        &mut self,
        exp: &crate::results::ExperimentResult,
        point: usize,
        _: &str,
        reps: &[(usize, &crate::results::Repetition)],
        warmup: bool,
    ) -> crate::Result<()> {
        for &(phase, r) in reps {
            let ph = &exp.points[point].phases[phase];
            let own = std::ptr::eq(r, if warmup { &ph.warmups } else { &ph.repetitions }.last().unwrap());
            let traced = r.workers.iter().filter(|w| w.trace.is_some()).count();
            self.seen.push((own, !r.workers.is_spooled(), traced, r.workers.len()));
        }
        Ok(())
    }
}

/// Two repetitions of a 16 KiB write and read phase in 4 KiB blocks with `params`, into a
/// temporary directory, handed to a [`Where`].
fn write_and_read(params: &[(&str, &str)]) -> (Outcome, Where) {
    // Every repetition spooled, however few its workers (spooling is invisible to every other
    // test that shares this process).
    crate::results::Workers::spool_from(1);
    let dir = tempfile::tempdir().unwrap();
    let mut e = Experiment::default();
    let d = dir.path().to_string_lossy().into_owned();
    let base = [("engine", "psync"), ("size", "16KiB"), ("bs", "4KiB"), ("reps", "2"), ("dirs", d.as_str())];
    for (k, v) in base.iter().chain(params) {
        e.params.set(k, vec![v.to_string()]).unwrap();
    }
    e.params.set("ops", vec!["write".into(), "read".into()]).unwrap();
    let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    let b = e.build(&env).unwrap();
    let mut sink = Where::default();
    let out = run_experiment(&b.base, &b.points, b.design, HostFacts::default(), &mut sink, &Silent).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    (out, sink)
}

/// A run's results are kept once: the sink is handed the repetitions the experiment keeps (the
/// same workers in memory, not a copy), with their traces, which go once it has them; then
/// the workers go to the spool.
#[test]
fn a_run_is_kept_once_and_its_traces_go_once_stored() {
    let (out, sink) = write_and_read(&[("workers", "2"), ("warmup", "1"), ("latency", "trace")]);
    let kept: Vec<&crate::results::Repetition> =
        out.result.points[0].phases.iter().flat_map(|ph| ph.warmups.iter().chain(&ph.repetitions)).collect();
    assert_eq!(kept.len(), 6, "2 phases x (1 warm-up + 2 repetitions)");
    assert_eq!(sink.seen.len(), 6);
    for r in &kept {
        assert_eq!(r.workers.len(), 2);
        assert!(r.workers.is_spooled(), "kept in memory once stored");
        assert!(r.workers.iter().all(|w| w.trace.is_none() && w.bytes == 16 << 10));
    }
    // The sink saw the very repetitions the experiment keeps, their workers in memory with
    // their traces.
    assert_eq!(sink.seen, vec![(true, true, 2, 2); 6]);
}

/// Without traces a phase's workers go to the spool as soon as it is made, before the next
/// phase runs: the sink reads them back from there, and the experiment's JSON is the same.
#[test]
fn untraced_workers_are_spooled_as_each_phase_ends() {
    let (out, sink) = write_and_read(&[("workers", "3")]);
    assert_eq!(sink.seen, vec![(true, false, 0, 3); 4], "the sink read spooled workers");
    let phases = &out.result.points[0].phases;
    let json = crate::json::to_string(&out.result).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    for (i, ph) in phases.iter().enumerate() {
        for (k, r) in ph.repetitions.iter().enumerate() {
            assert!(r.workers.is_spooled());
            let ws = &doc["points"][0]["phases"][i]["repetitions"][k]["workers"];
            let bytes: Vec<u64> =
                ws.as_array().unwrap().iter().map(|w| w["bytes"].as_u64().unwrap()).collect();
            assert_eq!(bytes, [16 << 10; 3], "phase {i} rep {k}");
            let ops: u64 = r.workers.iter().map(|w| w.ops).sum();
            assert_eq!((ops, r.ops), (12, 12));
        }
    }
    // Read back from JSON the workers are in memory and equal to the spooled ones.
    let back: crate::results::ExperimentResult = crate::json::from_str(&json).unwrap();
    let r = &back.points[0].phases[1].repetitions[1];
    assert!(!r.workers.is_spooled());
    assert_eq!(r.workers, phases[1].repetitions[1].workers);
}

#[test]
fn write_generations_count_layout_and_write_phases() {
    let mut p = crate::experiment::Params::default();
    p.set("ops", vec!["read".into(), "write".into(), "read".into(), "rewrite".into(), "read".into()])
        .unwrap();
    let env = crate::experiment::ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    let plan = crate::plan::plan(&crate::experiment::resolve(&p, &env).unwrap());
    let g: Vec<u32> = (0..5).map(|i| crate::experiment::run::generation(&plan, i)).collect();
    assert_eq!(g, [1, 2, 2, 3, 3]);
}

#[test]
fn ids_look_right() {
    let id = crate::experiment::ids::new_experiment_id();
    assert_eq!(id.len(), 22, "{id}");
    assert_ne!(crate::target::workdir::new_run_id(), crate::target::workdir::new_run_id());
}

/// A spool that cannot be read back after its run is an error of the JSON and CSV exports,
/// naming the spool; the table, its sections, the findings and the plots show what they can
/// read, never a panic (they once stopped iolab with one, exit 101), and the failure is kept
/// for the command to end with.
#[test]
fn an_unreadable_spool_is_an_error_of_the_json_and_csv_exports() {
    let (out, _) = write_and_read(&[("workers", "2")]);
    let mut exp = out.result;
    for f in [crate::report::Format::Json, crate::report::Format::Csv] {
        let mut fine = vec![];
        crate::report::exporter(f).export(&exp, &mut fine).unwrap();
        assert!(!fine.is_empty());
    }
    exp.points[0].phases[1].repetitions[1].workers = crate::results::Workers::unreadable_for_tests(2);
    for f in [crate::report::Format::Json, crate::report::Format::Csv] {
        let err = crate::report::exporter(f).export(&exp, &mut vec![]).unwrap_err().to_string();
        assert!(
            err.contains("reading back workers' results from iolab's temporary spool failed"),
            "{f:?}: {err}"
        );
    }
    let _ = crate::results::take_spool_fault();
    // The full table reads the workers' results (its sections); the brief one does not.
    let mut table = vec![];
    crate::report::exporter(crate::report::Format::Explain).export(&exp, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(table.contains("read"), "{table}");
    assert!(crate::results::take_spool_fault().is_some_and(|f| f.contains("temporary spool failed")));
    let _ = crate::experiment::preset::findings(&exp);
    let _ = crate::report::details::render_details(&exp);
    let o = crate::report::plot::Options::default();
    let _ = crate::report::plot::workers::figure(&exp, &o);
    let _ = crate::report::plot::latency::cdf(&exp, &o);
    let _ = crate::report::plot::latency::histogram(&exp, &o);
    let _ = crate::report::plot::timeline::figure(&exp, &o);
    let _ = crate::report::plot::bars::figure(&exp, &o);
    let _ = crate::results::take_spool_fault();
}
