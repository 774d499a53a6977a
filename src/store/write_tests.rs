//! Tests of storing runs: traces under a signal, unreadable spools, many workers' rows.

use crate::engine::Call;
use crate::latency::{LatencyNs, SampleHist};
use crate::results::{CacheCheck, Repetition, Workers};
use crate::worker::{Placement, WorkerSample};

/// Runs test `name` of this binary alone in a process of its own (it raises the
/// process-wide stop flag, which no other test may see), `IOLAB_TEST_ALONE` set.
fn alone(name: &str) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--test-threads=1", "--nocapture"])
        .env("IOLAB_TEST_ALONE", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// A stop signal while a run's per-op traces are stored ends that at once (the trace loop
/// polls it between batches; millions of rows once took seconds, deaf to it): the run is
/// stored without its traces, every figure and worker row there, and the signal is the
/// error.
#[test]
fn a_signal_while_traces_are_stored_keeps_the_run_without_them() {
    alone("store::write::tests::signalled_while_storing_traces");
}

#[test]
#[ignore = "run alone, in a process of its own, by a_signal_while_traces_are_stored_keeps_the_run_without_them"]
fn signalled_while_storing_traces() {
    assert!(std::env::var_os("IOLAB_TEST_ALONE").is_some(), "run it through its caller");
    let dir = tempfile::tempdir().unwrap();
    let store = super::Store::open(&dir.path().join("s.db")).unwrap();
    store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
    let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
    let mut spill = crate::latency::trace::TraceSpill::new().unwrap();
    let mut bytes = vec![];
    for k in 0..100_000u64 {
        let op = crate::latency::trace::TraceOp {
            file: 0,
            offset: k * 512,
            start_ns: k,
            duration_ns: 1,
            ..Default::default()
        };
        op.encode(&mut bytes);
    }
    spill.append_encoded(&bytes, 100_000).unwrap();
    let mut r =
        Repetition::from_samples(0, "t", vec![WorkerSample::with_series(0, 0, vec![4096])], None, &check);
    r.workers.make_mut()[0].trace = Some(crate::results::SpillRef(std::sync::Arc::new(spill)));
    crate::env::signals::install();
    // SAFETY: raising a signal this process handles (the handler stores to atomics).
    unsafe { libc::raise(libc::SIGTERM) };
    let t = std::time::Instant::now();
    let e = store.insert_run("e", 0, "t", &[(0, &r)], false).unwrap_err();
    assert!(matches!(e, crate::Error::Interrupted(libc::SIGTERM)), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(1), "{:?}", t.elapsed());
    let count = |sql: &str| store.conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT COUNT(*) FROM runs WHERE run_id = 't' AND status = 'complete'"), 1);
    assert_eq!(count("SELECT COUNT(*) FROM worker_results WHERE run_id = 't'"), 1);
    assert_eq!(count("SELECT COUNT(*) FROM trace_ops"), 0);
}

/// A run whose spooled workers cannot be read back while it is stored: the store says so,
/// naming the spool, and keeps no part of that run; the run stored before it stays whole.
#[test]
fn an_unreadable_spool_fails_its_run_and_leaves_no_part_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = super::Store::open(&dir.path().join("s.db")).unwrap();
    store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
    let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
    let samples = || (0..3).map(|w| WorkerSample::with_series(w, 1000, vec![4096])).collect();
    let good = Repetition::from_samples(0, "a", samples(), None, &check);
    store.insert_run("e", 0, "a", &[(0, &good)], false).unwrap();
    let mut bad = Repetition::from_samples(0, "b", samples(), None, &check);
    bad.workers = Workers::unreadable_for_tests(3);
    let err = store.insert_run("e", 0, "b", &[(0, &bad)], false).unwrap_err().to_string();
    assert!(err.contains("reading back workers' results from iolab's temporary spool failed"), "{err}");
    let count = |sql: &str| store.conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT COUNT(*) FROM runs WHERE run_id = 'b'"), 0);
    assert_eq!(count("SELECT COUNT(*) FROM phase_results WHERE run_id = 'b'"), 0);
    assert_eq!(count("SELECT COUNT(*) FROM worker_results WHERE run_id = 'b'"), 0);
    assert_eq!(count("SELECT COUNT(*) FROM worker_results WHERE run_id = 'a'"), 3);
}

/// Rank 0's work on a phase's replies past the gather, at many workers: the repetition made
/// from their samples, its workers spooled and its rows stored from the spool; then a whole
/// run's ten phase repetitions. Prints the times and the memory (counted by the tests'
/// allocator); asserts every row is there. `IOLAB_ROWS` workers (100,000), 40 per
/// host, each as rank 0 holds it gathered (figures, no buckets, a host, a 3-interval rate
/// series, four kinds of call made, the same for all and so held once).
#[test]
#[ignore = "measurement: run by bench/rows.sh"]
fn rows_of_many_workers() {
    let n: u32 = std::env::var("IOLAB_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let hosts = crate::launch::shared_host_names((0..n).map(|r| format!("node{:05}", r / 40)));
    let mut calls = crate::engine::CallCounts::default();
    for (c, k) in [(Call::Openat, 1), (Call::Pwrite, 16), (Call::Fsync, 1), (Call::Close, 1)] {
        calls.add_n(c, k);
    }
    let calls = calls.to_map();
    let gathered = || {
        (0..n)
            .map(|w| WorkerSample {
                calls: calls.clone(),
                hist: SampleHist::Merged {
                    figures: LatencyNs { p50: 9000, ..Default::default() },
                    buckets: None,
                },
                place: Some(Placement { rank: w, host: hosts[w as usize].clone(), resident: None }),
                ..WorkerSample::with_series(w, 1000 + u64::from(w), vec![1 << 18, 1 << 19, 1 << 18])
            })
            .collect::<Vec<_>>()
    };
    let (samples, sampled) = crate::test_alloc::held_by(gathered);
    let dir = tempfile::tempdir().unwrap();
    let store = super::Store::open(&dir.path().join("s.db")).unwrap();
    // Only the rows are measured: no experiment row for them to point to.
    store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
    let t = std::time::Instant::now();
    let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
    let ((r, peak), held) = crate::test_alloc::held_by(|| {
        crate::test_alloc::peak_by(|| Repetition::from_samples(0, "r", samples, None, &check))
    });
    let made = t.elapsed();
    // Then, as a run does, its workers spooled and stored from the spool.
    let mut r = r;
    let t = std::time::Instant::now();
    let ((), freed) = crate::test_alloc::held_by(|| r.workers.spool());
    let spooled = t.elapsed();
    assert!(r.workers.is_spooled());
    let t = std::time::Instant::now();
    store.insert_run("e", 0, "r", &[(0, &r)], false).unwrap();
    let stored = t.elapsed();
    let rows: u32 = store.conn.query_row("SELECT count(*) FROM worker_results", [], |x| x.get(0)).unwrap();
    assert_eq!(rows, n);
    println!(
        "rows: {n} workers: repetition made in {:.3} s, spooled in {:.3} s, stored in {:.3} s ({:.2} us per worker in all)",
        made.as_secs_f64(),
        spooled.as_secs_f64(),
        stored.as_secs_f64(),
        (made + spooled + stored).as_secs_f64() * 1e6 / f64::from(n)
    );
    let per = |b: isize| b as f64 / f64::from(n);
    let (kept, peak) = (sampled + held, sampled + peak);
    println!(
        "memory: {n} workers: samples {:.1} MB ({:.0} B per worker), at most {:.1} MB ({:.0} B per worker) while the repetition was made, {:.1} MB ({:.0} B per worker) kept",
        sampled as f64 / 1e6,
        per(sampled),
        peak as f64 / 1e6,
        per(peak),
        kept as f64 / 1e6,
        per(kept)
    );
    // Read back once more, as --json writes it.
    let t = std::time::Instant::now();
    let (written, read_peak) = crate::test_alloc::peak_by(|| {
        let mut out = std::io::BufWriter::new(std::io::sink());
        crate::json::to_writer(&mut out, &r.workers).unwrap();
        r.workers.len()
    });
    let read = t.elapsed();
    assert_eq!(written, n as usize);
    println!(
        "spool: {n} workers: {:.0} B per worker on disk, {:.1} MB ({:.0} B per worker) kept spooled, read back as JSON in {:.3} s holding at most {:.1} MB",
        r.workers.spooled_bytes() as f64 / f64::from(n),
        (kept + freed) as f64 / 1e6,
        per(kept + freed),
        read.as_secs_f64(),
        read_peak as f64 / 1e6,
    );
    // A whole run of five repetitions of a write and a read phase: each phase's samples
    // gathered, its repetition made, stored and spooled before the next, all kept.
    let (kept_run, run_peak) = crate::test_alloc::peak_by(|| {
        let mut run = vec![r];
        for _ in 1..10 {
            let mut r = Repetition::from_samples(0, "r", gathered(), None, &check);
            r.workers.spool();
            run.push(r);
        }
        run
    });
    assert!(kept_run.iter().all(|r| r.workers.is_spooled() && r.workers.len() == n as usize));
    let held_run = kept + freed;
    let (_, held_more) = crate::test_alloc::held_by(|| drop(kept_run));
    println!(
        "run: {n} workers, 5 repetitions of a write and a read: at most {:.1} MB held, {:.1} MB kept at its end",
        (held_run + run_peak) as f64 / 1e6,
        -held_more as f64 / 1e6,
    );
}

/// Workers read back from the store hold the counts of calls they made alike once.
#[test]
fn workers_read_back_share_the_same_call_counts() {
    use crate::engine::{Call, CallCounts};
    let calls = |pwrites: u64| {
        let mut c = CallCounts::default();
        c.add_n(Call::Pwrite, pwrites);
        c.add(Call::Fsync);
        c.to_map()
    };
    let samples: Vec<WorkerSample> = [16, 16, 17]
        .into_iter()
        .enumerate()
        .map(|(w, n)| WorkerSample { calls: calls(n), ..WorkerSample::with_series(w as u32, 0, vec![1]) })
        .collect();
    let r = Repetition::from_samples(
        0,
        "r",
        samples,
        None,
        &CacheCheck { resident_fraction: 0.0, flags: vec![] },
    );
    let dir = tempfile::tempdir().unwrap();
    let store = super::Store::open(&dir.path().join("s.db")).unwrap();
    store.conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
    store.insert_run("e", 0, "r", &[(0, &r)], false).unwrap();
    let back = store.load_workers("r", 0).unwrap();
    assert_eq!(
        back.iter().map(|w| w.calls.get("pwrite")).collect::<Vec<_>>(),
        [Some(16), Some(16), Some(17)]
    );
    assert!(back[1].calls.is_shared_with(&back[0].calls), "the same calls, held once");
    assert!(!back[2].calls.is_shared_with(&back[1].calls), "other calls, held apart");
}
