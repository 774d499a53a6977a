//! Tests of the coordinator over real experiments: what it reads once per experiment.

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
