//! Tests of the search space and what `iolab tune` hands back, on real directories: the
//! space is drawn from the registry and the capabilities and filtered by resolution and the
//! job; the exhaustive grid file and the recommended spec resolve to the candidates' specs.

use super::job::{JobArgs, build};
use super::space::parse_search;
use super::*;
use crate::error::Error;
use crate::experiment::resolve;
use crate::spec::job::Durability;

fn env(dir: &std::path::Path) -> ResolveEnv {
    ResolveEnv { ram_bytes: 1 << 30, cwd: dir.to_path_buf() }
}

fn request(dir: &std::path::Path, job: &str, flags: &[(&str, &str)], search: &[&str]) -> Request {
    let mut a = JobArgs { job: job.into(), dirs: vec![dir.display().to_string()], ..Default::default() };
    for (k, v) in flags {
        let v = Some(v.to_string());
        match *k {
            "bytes" => a.bytes = v,
            "op_size" => a.op_size = v,
            "durable" => a.durable = v,
            "workers" => a.workers = v,
            "memory" => a.memory = v,
            "comptime" => a.comptime = v,
            other => panic!("{other}"),
        }
    }
    Request {
        job: build(&a, 1 << 30).unwrap(),
        search: parse_search(&search.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap(),
        budget_ns: 1,
        rule: Rule::default(),
        extra: Params::default(),
    }
}

/// The engines searched are the registry's engines that really do I/O, whatever they are;
/// every candidate resolved, none twice; what resolution refuses is no candidate, with its
/// reason; the baseline is the plain program.
#[test]
fn the_space_is_drawn_from_the_registry_and_filtered_by_resolution() {
    let d = tempfile::tempdir().unwrap();
    let req = request(d.path(), "checkpoint", &[("bytes", "64MiB")], &[]);
    let prep = prepare(&req, &env(d.path())).unwrap();
    let registry: Vec<&str> =
        crate::worker::registry::ENGINES.iter().filter(|e| e.def.caps.real_io).map(|e| e.def.name).collect();
    let engines = &prep.space.dims.iter().find(|d| d.key == "engine").unwrap().values;
    assert_eq!(engines, &registry);
    let b = &prep.space.cands[0].spec;
    assert_eq!(
        (b.engine.as_str(), b.bs_bytes, b.direct, b.iodepth, b.workers),
        ("psync", 1 << 20, false, 1, 1)
    );
    assert_eq!((b.sync, b.size_bytes), (crate::spec::SyncPolicy::End, 64 << 20));
    for (i, c) in prep.space.cands.iter().enumerate() {
        assert!(registry.contains(&c.spec.engine.as_str()));
        assert!(!(c.spec.engine == "mmap" && c.spec.direct), "mmap cannot do O_DIRECT");
        let caps = crate::worker::registry::find(&c.spec.engine).unwrap().def.caps;
        assert!(c.spec.iodepth <= caps.max_iodepth);
        assert!(prep.space.cands[..i].iter().all(|o| o.spec != c.spec), "{} twice", c.label);
    }
    assert!(
        prep.space.refused.iter().any(|r| r.contains("engine mmap cannot do O_DIRECT")),
        "{:?}",
        prep.space.refused
    );
    assert!(prep.space.cands.iter().any(|c| c.label == "psync, O_DIRECT"));
}

/// Commit policies are drawn within the job's durability and the ones given outside it are
/// none; a fixed op size and the job's memory limit the space too.
#[test]
fn the_job_limits_the_space() {
    let d = tempfile::tempdir().unwrap();
    let flags = [("bytes", "8MiB"), ("op_size", "64KiB"), ("durable", "every:1MiB")];
    let prep = prepare(
        &request(d.path(), "checkpoint", &flags, &["sync", "engine=psync", "direct=false", "bs"]),
        &env(d.path()),
    )
    .unwrap();
    let syncs: Vec<String> = prep.space.cands.iter().map(|c| c.spec.sync.label()).collect();
    assert_eq!(syncs, ["every:1MiB", "every:256KiB", "every:64KiB"]);
    for c in &prep.space.cands {
        assert!(Durability::Every(1 << 20).satisfied_by(c.spec.sync, c.spec.open_sync, c.spec.bs_bytes));
        assert_eq!(c.spec.bs_bytes, 64 << 10, "the op size is fixed");
    }
    assert!(prep.space.refused.iter().any(|r| r.contains("op size is fixed")), "{:?}", prep.space.refused);
    let given = request(
        d.path(),
        "checkpoint",
        &flags,
        &["sync=end,every:4MiB,every:512KiB", "engine=psync", "direct=false"],
    );
    let prep = prepare(&given, &env(d.path())).unwrap();
    let syncs: Vec<String> = prep.space.cands.iter().map(|c| c.spec.sync.label()).collect();
    assert_eq!(syncs, ["every:1MiB", "every:512KiB"], "the baseline, and the one value within durability");
    assert!(
        prep.space
            .refused
            .iter()
            .any(|r| r.contains("x sync = end does not make the data durable every:1MiB"))
    );
    // 4 MiB of buffers allows no uring depth above 1 with 1 MiB ops (latency records and the
    // coordinator's block take their share).
    let mem = request(d.path(), "checkpoint", &[("bytes", "8MiB"), ("memory", "4MiB")], &["engine=uring"]);
    let prep = prepare(&mem, &env(d.path())).unwrap();
    assert!(prep.space.cands.iter().all(|c| c.spec.iodepth == 1), "{:?}", prep.space.refused);
    assert!(prep.space.refused.iter().any(|r| r.contains("more than the job's memory")));
}

/// A job with compute races the strategies this build can run (not those needing MPI ranks)
/// with the engines they can write with; its workers stay the job's.
#[test]
fn compute_makes_the_strategies_the_candidates() {
    let d = tempfile::tempdir().unwrap();
    let req = request(d.path(), "benson", &[("bytes", "4MiB"), ("comptime", "10ms")], &[]);
    let prep = prepare(&req, &env(d.path())).unwrap();
    let mut strategies: Vec<&str> =
        prep.space.cands.iter().map(|c| c.spec.strategy.unwrap().name()).collect();
    strategies.dedup();
    assert_eq!(strategies, ["S1A", "S1B", "S2", "S3", "S5"]);
    for c in &prep.space.cands {
        assert!(crate::strategy::mechanism::MECHANISMS.contains(&c.spec.engine.as_str()));
        assert_eq!((c.spec.workers, c.spec.comptime_ns, c.spec.size_bytes), (2, Some(10_000_000), 2 << 20));
    }
    assert_eq!(prep.space.cands[3].label, "S1B, psync");
}

/// The grid file holds every candidate as one point: run as an experiment, each point
/// resolves to its candidate's spec.
#[test]
fn the_grid_file_is_the_space() {
    let d = tempfile::tempdir().unwrap();
    let req = request(d.path(), "checkpoint", &[("bytes", "8MiB"), ("workers", "2")], &["engine=psync,mmap"]);
    let prep = prepare(&req, &env(d.path())).unwrap();
    assert!(prep.axes.iter().any(|a| a.key == "size"), "the size follows the workers");
    // One worker in a shared file is one worker with its own file: one candidate.
    let one: Vec<_> = prep.space.cands.iter().filter(|c| c.spec.workers == 1).collect();
    assert_eq!(one.len(), 3, "psync, psync with O_DIRECT, mmap");
    assert!(one.iter().all(|c| c.spec.layout == crate::spec::Layout::FilePerWorker));
    assert!(prep.space.refused.iter().any(|r| r.contains("with one worker, layout shared is")));
    let file = d.path().join("grid.toml");
    std::fs::write(&file, emit::grid_toml(&prep.base, &prep.axes, 5, "grid")).unwrap();
    let exp =
        crate::experiment::Experiment::from_command_line(Some(&file), &Params::default(), &[], &[], 1 << 30)
            .unwrap();
    let built = exp.build(&env(d.path())).unwrap();
    assert_eq!(built.points.len(), prep.space.cands.len());
    for (i, (p, c)) in built.points.iter().zip(&prep.space.cands).enumerate() {
        let mut spec = p.spec.clone();
        spec.interleave = c.spec.interleave;
        assert_eq!(spec, c.spec, "{}", c.label);
        assert_eq!(p.params, emit::point_params(&prep.axes, i));
    }
}

/// The recommended spec, as a file and as a command line, is the candidate's spec (named after
/// the job, with its repetitions).
#[test]
fn the_recommended_spec_is_the_candidate() {
    let d = tempfile::tempdir().unwrap();
    let req = request(d.path(), "checkpoint", &[("bytes", "8MiB")], &["sync"]);
    let prep = prepare(&req, &env(d.path())).unwrap();
    let c = prep.space.cands.iter().find(|c| c.spec.engine == "uring" && c.spec.direct).unwrap();
    let p = emit::recommended_params(c, "checkpoint", 7);
    let mut want = c.spec.clone();
    (want.name, want.reps) = ("tuned-checkpoint".into(), 7);
    let from_file = Params::from_toml(&emit::recommended_toml(&p, "about\nit")).unwrap();
    assert_eq!(resolve(&from_file, &env(d.path())).unwrap(), want);
    let line = emit::command_line(&p);
    let words: Vec<&str> = line.split_whitespace().collect();
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(&words).unwrap();
    let crate::cli::Command::Run(args) = cli.command else { panic!("{line}") };
    assert_eq!(resolve(&args.spec.params().unwrap(), &env(d.path())).unwrap(), want, "{line}");
}

#[test]
fn searches_name_what_they_refuse() {
    let field = |args: &[&str]| match parse_search(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()) {
        Err(Error::Spec { field, reason, .. }) => format!("{field}: {reason}"),
        other => panic!("{other:?}"),
    };
    assert!(field(&["size"]).contains("the job's bytes"));
    assert!(field(&["colour"]).contains("not a spec parameter"));
    assert!(field(&["bs="]).contains("empty value"));
    let d = tempfile::tempdir().unwrap();
    let job = request(d.path(), "checkpoint", &[("bytes", "8MiB")], &[]).job;
    let s = parse_search(&["prealloc".to_string()]).unwrap();
    assert!(
        matches!(space::dims(&job, &s), Err(Error::Spec { ref reason, .. }) if reason.contains("no rule"))
    );
    let s = parse_search(&["engine,direct".to_string(), "bs=4KiB,8KiB".into()]).unwrap();
    assert_eq!(s.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["engine", "direct", "bs"]);
}
