//! The fio workloads on real files: a mixed phase's ops are the seeded plan's, op for op, on
//! every engine and launcher, reported apart and together; orders that draw and block-size
//! mixes give their shares; a rate-limited worker stopped for 200 ms shows the backlog in its
//! response times and not in its service times; think time spaces ops; a time-bounded cold
//! read that goes round its file is labelled with what it read again; what cannot run is
//! refused by name.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::*;

/// One traced op: (worker, file, offset, length, write, start, duration, response).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Traced {
    pub worker: u32,
    pub file: u32,
    pub offset: u64,
    pub len: u64,
    pub write: bool,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub response_ns: Option<u64>,
}

/// Every traced op of the last experiment in the scratch store, of the phase named `phase`.
pub(crate) fn trace(s: &Scratch, phase: &str) -> Vec<Traced> {
    let o = s.iolab(&["results", "trace", "last", "--json", "--phase", phase]);
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Traced {
                worker: v["worker"].as_u64().unwrap() as u32,
                file: v["file"].as_u64().unwrap() as u32,
                offset: v["offset_bytes"].as_u64().unwrap(),
                len: v["len_bytes"].as_u64().unwrap(),
                write: v["write"].as_bool().unwrap(),
                start_ns: v["start_ns"].as_u64().unwrap(),
                duration_ns: v["duration_ns"].as_u64().unwrap(),
                response_ns: v["response_ns"].as_u64(),
            }
        })
        .collect()
}

/// The resolved spec of `pairs` (as the run resolves it, with the test memory size).
fn spec_of(s: &Scratch, pairs: &[(&str, &str)]) -> iolab::spec::Spec {
    let mut p = iolab::experiment::Params::default();
    for (k, v) in pairs {
        p.set(k, v.split(',').map(String::from).collect()).unwrap();
    }
    let env = iolab::experiment::ResolveEnv { ram_bytes: TEST_RAM_BYTES, cwd: s.path().to_path_buf() };
    iolab::experiment::resolve(&p, &env).unwrap()
}

/// The ops the plan gives phase `phase`, worker by worker: (worker, local file, offset, len,
/// write), in each worker's order.
fn planned(spec: &iolab::spec::Spec, phase: usize) -> Vec<(u32, u32, u64, u64, bool)> {
    let plan = iolab::plan::plan(spec);
    let ph = &plan.phases[phase];
    let mut out = vec![];
    for w in &ph.workers {
        let write = ph.op.writes() && ph.op != iolab::spec::OpKind::Rw;
        out.extend(
            w.ops
                .steps(write)
                .map(|st| (w.worker, w.files[st.op.file as usize], st.op.offset, st.op.len, st.write)),
        );
    }
    out
}

/// A share measured over `n` ops is within `k` binomial standard errors of `p`.
fn near(got: f64, p: f64, n: usize, k: f64, what: &str) {
    let se = (p * (1.0 - p) / n as f64).sqrt();
    assert!((got - p).abs() <= k * se + 1e-9, "{what}: {got} vs {p} over {n} ops (se {se:.4})");
}

/// A mixed 70/30 random phase does exactly the plan's ops (each block once, each op's
/// direction as drawn from the seed) with threads and with processes, on every synchronous and
/// asynchronous engine; its reads and writes are counted apart and together, their latency
/// histograms hold every op, the files hold the written bytes afterwards.
#[test]
fn a_mixed_phase_does_the_seeded_plans_ops_on_every_engine_and_launcher() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let base =
        [("ops", "rw:rwmixread=70"), ("order", "random"), ("size", "1MiB"), ("bs", "4KiB"), ("workers", "2")];
    let mut pairs: Vec<(&str, &str)> = base.to_vec();
    pairs.push(("dirs", dir));
    let want = planned(&spec_of(&s, &pairs), 0);
    assert_eq!(want.len(), 512);
    let reads = want.iter().filter(|o| !o.4).count();
    near(reads as f64 / 512.0, 0.7, 512, 5.0, "planned read share");
    let mut cases: Vec<(&str, &str)> = ["psync", "vsync", "mmap"].iter().map(|e| (*e, "thread")).collect();
    cases.push(("psync", "process"));
    if iolab::worker::registry::find("uring").is_some_and(|r| (r.def.caps.probe)().is_ok()) {
        cases.push(("uring", "thread"));
    }
    for (engine, launcher) in cases {
        let mut args = vec!["--op", "rw:rwmixread=70", "--order", "random", "--size", "1MiB", "--bs", "4KiB"];
        args.extend(["--workers", "2", "--reps", "1", "--trace", "--engine", engine, "--launcher", launcher]);
        if engine == "uring" {
            args.extend(["--iodepth", "4"]);
        }
        let doc = s.run_json(&args);
        let what = format!("{engine} with {launcher}s");
        let mut got: Vec<(u32, u32, u64, u64, bool)> = trace(&s, "rw:rwmixread=70")
            .iter()
            .map(|t| (t.worker, t.file, t.offset, t.len, t.write))
            .collect();
        // (An asynchronous engine completes ops out of order: compare as sets per worker.)
        let mut w = want.clone();
        got.sort_unstable_by_key(|o| (o.0, o.1, o.2));
        w.sort_unstable_by_key(|o| (o.0, o.1, o.2));
        assert_eq!(got, w, "{what}: the traced ops are the plan's");
        let r = &phases(&doc)[0]["repetitions"][0];
        let m = &r["mix"];
        assert_eq!(m["read"]["ops"].as_u64(), Some(reads as u64), "{what}");
        assert_eq!(m["write"]["ops"].as_u64(), Some(512 - reads as u64), "{what}");
        assert_eq!(m["read"]["bytes"].as_u64(), Some(reads as u64 * 4096), "{what}");
        assert!((m["read_share_ops"].as_f64().unwrap() - reads as f64 / 512.0).abs() < 1e-12, "{what}");
        for (d, n) in [("read", reads), ("write", 512 - reads)] {
            let hist: u64 =
                m[d]["latency_histogram_ns"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
            assert_eq!(hist, n as u64, "{what}: the {d} histogram holds every {d}");
            let rate = m[d]["bytes_per_s"].as_f64().unwrap();
            assert!(rate > 0.0 && rate < r["max_sar_bytes_per_s"].as_f64().unwrap(), "{what}: {d} {rate}");
        }
        let workers = r["workers"].as_array().unwrap();
        let w_reads: u64 = workers.iter().map(|w| w["mix"]["read_ops"].as_u64().unwrap()).sum();
        assert_eq!(w_reads, reads as u64, "{what}");
        let summary = &phases(&doc)[0]["mix_summary"];
        assert!(summary["read"]["ops_per_s"]["mean"].as_f64().unwrap() > 0.0, "{what}");
    }
    // The CSV carries the split too: the repetition's on every row, each worker's on its own.
    let (reads, writes) = (reads as u64, 512 - reads as u64);
    let o = s.iolab(&["results", "export", "last", "--csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut rdr = csv::Reader::from_reader(&o.stdout[..]);
    let h = rdr.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2, "one row per worker");
    let n = |r: &csv::StringRecord, c: &str| r[col(c)].parse::<u64>().unwrap();
    for r in &rows {
        assert_eq!((n(r, "read_ops"), n(r, "write_ops")), (reads, writes));
        assert_eq!(n(r, "worker_read_ops") + n(r, "worker_write_ops"), n(r, "worker_ops"));
        assert!(r[col("read_latency_p99_ns")].parse::<u64>().unwrap() > 0);
        assert_eq!(&r[col("response_latency_p99_ns")], "", "not rate-limited");
    }
    assert_eq!(rows.iter().map(|r| n(r, "worker_read_ops")).sum::<u64>(), reads);
}

/// The bytes a mixed phase leaves are those a write would: reads of blocks not yet written
/// read what the file holds, and every block reads back with its offset's stamp.
#[test]
fn a_mixed_phase_keeps_the_files_bytes() {
    let s = Scratch::new();
    s.run_json(&[
        "--op",
        "rw:rwmixread=50,read:cold",
        "--order",
        "random",
        "--size",
        "256KiB",
        "--bs",
        "4KiB",
        "--reps",
        "1",
        "--keep",
    ]);
    let doc: Value = serde_json::from_slice(&s.iolab(&["results", "show", "last", "--json"]).stdout).unwrap();
    let run = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let f = work_dir(s.path(), &run).join("w0000.dat");
    assert_eq!(std::fs::read(&f).unwrap(), expected_file(1, 0, 256 << 10, 4096));
    assert!(s.iolab(&["clean", s.path().to_str().unwrap()]).status.success());
}

/// zipf and pareto put their shares on the hottest blocks as their definitions say, and the
/// skew the run reports is the trace's: the share of the ops on the hottest tenth of the
/// blocks, counted from every traced op.
#[test]
fn orders_that_draw_report_the_skew_their_trace_has() {
    let s = Scratch::new();
    // (theta or h, the first tenth's share of the ranks by the generator's definition)
    for (order, want) in [
        ("zipf:1.2", None),
        ("pareto:0.2", Some((103.0f64 / 1023.0).powf(1.0 / (0.2f64.ln() / 0.8f64.ln())))),
    ] {
        // A second at most 20,000 ops: past one pass of 1,024 blocks on any machine, and a
        // trace a debug build stores and reads back in seconds (unbounded it drew 480,000).
        let phase = format!("read:{order}:runtime=1s");
        let doc = s.run_json(&[
            "--op",
            &phase,
            "--size",
            "4MiB",
            "--bs",
            "4KiB",
            "--reps",
            "1",
            "--rate-iops",
            "20000",
            "--trace",
        ]);
        let t = trace(&s, &phase);
        let mut hits: BTreeMap<u64, usize> = BTreeMap::new();
        for op in &t {
            *hits.entry(op.offset / 4096).or_default() += 1;
        }
        let mut counts: Vec<usize> = hits.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let hot: usize = counts.iter().take(103).sum();
        let share = hot as f64 / t.len() as f64;
        let r = &phases(&doc)[0]["repetitions"][0];
        let reported = r["mix"]["hot10_share_ops"].as_f64().unwrap();
        assert!((reported - share).abs() < 1e-9, "{order}: reported {reported}, trace {share}");
        assert!(t.len() > 1024, "{order}: the runtime draws past one pass ({} ops)", t.len());
        // Past the first pass it draws afresh: more distinct blocks than one pass of 1024 ops has.
        assert!(hits.len() > 600, "{order}: {} blocks", hits.len());
        if let Some(p) = want {
            near(share, p, t.len(), 6.0, order);
        } else {
            assert!(share > 0.8 && share < 0.9, "{order}: {share}");
        }
        // Repeats: most of the bytes were of blocks already read, and the cold phase says so.
        assert!(r["again_fraction"].as_f64().unwrap() > 0.5, "{order}");
        assert!(
            r["flags"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().starts_with("re-read:")),
            "{order}"
        );
    }
}

/// A block-size mix: a sequential write covers each file exactly with ops of the mix's sizes
/// in their shares, a uniform read draws its sizes in theirs, the run counts each size apart
/// with its histogram, and the files read back as written.
#[test]
fn a_block_size_mix_gives_its_shares_and_keeps_the_bytes() {
    let s = Scratch::new();
    let split = "4KiB/50:16KiB/30:64KiB/20";
    let doc = s.run_json(&[
        "--op",
        "write,read:uniform",
        "--bssplit",
        split,
        "--size",
        "8MiB",
        "--reps",
        "1",
        "--trace",
        "--keep",
    ]);
    let w = trace(&s, "write");
    let mut at = 0;
    let mut sorted = w.clone();
    sorted.sort_by_key(|o| o.offset);
    for op in &sorted {
        assert_eq!(op.offset, at, "the sequential mix leaves no gap and no overlap");
        at += op.len;
        assert!([4096, 16384, 65536].contains(&op.len) && op.write);
    }
    assert_eq!(at, 8 << 20);
    for phase in ["write", "read:uniform"] {
        let t = trace(&s, phase);
        let i = phases(&doc).iter().position(|p| p["name"] == phase).unwrap();
        let sizes = phases(&doc)[i]["repetitions"][0]["mix"]["block_sizes"].as_array().unwrap().clone();
        for (bs, p) in [(4096u64, 0.5), (16384, 0.3), (65536, 0.2)] {
            let n = t.iter().filter(|o| o.len == bs).count();
            let c = sizes.iter().find(|c| c["bs_bytes"] == bs).unwrap();
            assert_eq!(c["figures"]["ops"].as_u64(), Some(n as u64), "{phase} {bs}");
            let hist: u64 = c["figures"]["latency_histogram_ns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b[1].as_u64().unwrap())
                .sum();
            assert_eq!(hist, n as u64, "{phase} {bs}");
            // A size that no longer fits before the end of the file is made smaller: the
            // shares of a pass are the mix's, to within the noise of its ops.
            near(n as f64 / t.len() as f64, p, t.len(), 5.0, &format!("{phase} {bs}"));
        }
        assert!(t.iter().all(|o| o.offset % 4096 == 0 && o.offset + o.len <= 8 << 20), "{phase}");
    }
    let run = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let f = work_dir(s.path(), &run).join("w0000.dat");
    // Each op wrote the first `len` bytes of the worker's buffer (filled once from the seed,
    // as large as the mix's largest size) with the stamp of its offset at every 4 KiB.
    let mut buf = vec![0u8; 65536];
    iolab::plan::fill::fill(&mut buf, 1);
    let salt = iolab::plan::fill::file_salt(1, 0);
    let mut want = vec![0u8; 8 << 20];
    for op in &sorted {
        let block = &mut buf[..op.len as usize];
        iolab::plan::fill::stamp(block, salt, op.offset);
        want[op.offset as usize..(op.offset + op.len) as usize].copy_from_slice(block);
    }
    let got = std::fs::read(&f).unwrap();
    assert!(got == want, "the file holds the bytes its ops wrote");
    assert!(s.iolab(&["clean", s.path().to_str().unwrap()]).status.success());
}

/// The threads of process `pid`, by name.
fn threads_named(pid: u32, name: &str) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    dir.filter_map(|e| e.ok())
        .any(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == name))
}

/// The coordinated-omission test: a worker reading at 1000 IOPS is stopped for 200 ms
/// (SIGSTOP). The ~200 ops planned during the stop go back to back once it resumes, so their
/// response times (from each op's planned start) run from about 200 ms down to nothing, in one
/// stretch, while their service times stay those of cached reads; the phase is flagged
/// behind schedule by about as much as it was stopped. Timing only bounds what must be true
/// on a loaded machine: the stop's length is measured, and the counts are asserted within
/// wide margins of it.
#[test]
fn a_stalled_rate_limited_worker_shows_the_backlog_in_its_response_times() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let phase = "read:warm:rate_iops=1000:runtime=2s";
    let child = command()
        .args(["run", "--json", "--quiet", "--dir", &dir, "--op", phase, "--size", "1MiB", "--bs", "4KiB"])
        .args(["--order", "random", "--reps", "1", "--trace"])
        .env("IOLAB_DB", s.db())
        .current_dir(s.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The worker's trace writer starts with the worker, once the warming read is done; the
    // stop comes well inside the phase's 2 s.
    let t0 = Instant::now();
    while !threads_named(pid, "iolab-trace") && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(600));
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
    let stopped = Instant::now();
    std::thread::sleep(Duration::from_millis(200));
    let stop_ms = stopped.elapsed().as_secs_f64() * 1e3;
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGCONT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = trace(&s, phase);
    assert!(
        t.iter().all(|o| o.response_ns.is_some()),
        "every op of a rate-limited phase has a response time"
    );
    // The longest stretch of ops late by more than 20 ms: the backlog.
    let late = |o: &Traced| o.response_ns.unwrap().saturating_sub(o.duration_ns) > 20_000_000;
    let (mut best, mut run, mut at, mut best_at) = (0usize, 0usize, 0usize, 0usize);
    for (i, o) in t.iter().enumerate() {
        if late(o) {
            if run == 0 {
                at = i;
            }
            run += 1;
            if run > best {
                (best, best_at) = (run, at);
            }
        } else {
            run = 0;
        }
    }
    let backlog = &t[best_at..best_at + best];
    let max_resp = t.iter().map(|o| o.response_ns.unwrap()).max().unwrap() as f64 / 1e6;
    // About one op per ms of the stop was planned during it (less the 20 ms cut above).
    assert!(
        best as f64 >= 0.6 * (stop_ms - 20.0) && (best as f64) <= 1.6 * stop_ms + 50.0,
        "backlog of {best} ops for a stop of {stop_ms:.0} ms"
    );
    assert!(
        max_resp >= 0.8 * stop_ms && max_resp <= stop_ms + 150.0,
        "max response {max_resp:.1} ms, stop {stop_ms:.0} ms"
    );
    // Its first ops waited longest: responses fall across the stretch.
    let first = backlog[0].response_ns.unwrap();
    let last = backlog[best - 1].response_ns.unwrap();
    assert!(first > last + 50_000_000, "first {first}, last {last}");
    // Their service times are a cached read's: the wait is not in them.
    let mut service: Vec<u64> = backlog.iter().map(|o| o.duration_ns).collect();
    service.sort_unstable();
    assert!(service[service.len() / 2] < 5_000_000, "median service {} ns", service[service.len() / 2]);
    let r = &phases(&doc)[0]["repetitions"][0];
    let m = &r["mix"];
    let p99_service = phases(&doc)[0]["latency_ns"]["p99"].as_u64().unwrap();
    assert!(p99_service < 50_000_000, "service p99 {p99_service} ns");
    assert!(m["response_latency_ns"]["max"].as_u64().unwrap() as f64 >= 0.8 * stop_ms * 1e6);
    let b = &m["behind"];
    assert!(b["late_ops"].as_u64().unwrap() as usize >= best, "{b}");
    assert!(b["max_late_ns"].as_u64().unwrap() as f64 >= 0.7 * stop_ms * 1e6, "{b}");
    assert!(
        r["flags"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().starts_with("behind schedule:"))
    );
    // The schedule held outside the stall: about 1000 ops per second over the phase.
    let ops = r["ops"].as_u64().unwrap() as f64;
    assert!(ops > 1500.0 && ops < 2100.0, "{ops} ops in 2 s at 1000 IOPS");
}

/// Think time: every second op is followed by a pause of 3 ms (the first 1 ms spinning), which
/// counts in the worker's time and in no op's latency.
#[test]
fn think_time_spaces_the_ops() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "read:warm",
        "--size",
        "256KiB",
        "--bs",
        "4KiB",
        "--reps",
        "1",
        "--trace",
        "--thinktime",
        "3ms",
        "--thinktime-spin",
        "1ms",
        "--thinktime-blocks",
        "2",
    ]);
    let t = trace(&s, "read:warm");
    assert_eq!(t.len(), 64);
    for (i, w) in t.windows(2).enumerate() {
        let gap = w[1].start_ns - (w[0].start_ns + w[0].duration_ns);
        if i % 2 == 1 {
            assert!(gap >= 3_000_000, "after op {i}: {gap} ns");
        }
    }
    let r = &phases(&doc)[0]["repetitions"][0];
    assert!(r["time_ns"].as_u64().unwrap() >= 32 * 3_000_000);
    assert!(phases(&doc)[0]["latency_ns"]["p50"].as_u64().unwrap() < 3_000_000);
}

/// What cannot run is refused by name (exit 2) before anything is made.
#[test]
fn workloads_that_cannot_run_are_refused_by_name() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    for (args, field, why) in [
        (&["--op", "rw", "--verify"][..], "verify", "a mixed phase"),
        (&["--op", "write", "--order", "zipf:1.2"], "ops", "use rewrite"),
        (&["--op", "read", "--order", "zipf:1"], "order", "not 1"),
        (&["--op", "read", "--bssplit", "4KiB/50:64KiB/50", "--order", "random"], "ops", "uniform"),
        (
            &[
                "--op",
                "read",
                "--bssplit",
                "4KiB/50:64KiB/50",
                "--layout",
                "shared-strided",
                "--workers",
                "2",
            ],
            "bssplit",
            "layout shared-strided",
        ),
        (&["--op", "read", "--bssplit", "4KiB/50:6KiB/50"], "bssplit", "4 KiB"),
        (&["--op", "read", "--bssplit", "4KiB/50:64KiB/40"], "bssplit", "90%"),
        (&["--op", "read", "--bssplit", "4KiB/50:64KiB/50", "--bs", "8KiB"], "bs", "smallest size"),
        (&["--op", "read", "--rate", "10MB/s", "--rate-iops", "100"], "rate_iops", "not with rate"),
        (&["--op", "read", "--rwmixread", "70"], "rwmixread", "would do nothing"),
        (&["--op", "read:rwmixread=70"], "ops", "mixed phase"),
        (&["--op", "read", "--rate-process", "poisson"], "rate_process", "would do nothing"),
        (&["--op", "read", "--thinktime", "1ms", "--thinktime-spin", "2ms"], "thinktime_spin", "longer"),
        (&["--op", "read", "--thinktime-blocks", "4"], "thinktime_blocks", "thinktime"),
        (&["--op", "rw", "--strategy", "S1A"], "ops", "a strategy is one write phase"),
        (&["--op", "write", "--strategy", "S1A", "--rate-iops", "100"], "strategy", "rate limits"),
        (&["--op", "stat", "--rate-iops", "10"], "rate", "would do nothing"),
    ] {
        let mut all = vec!["run", "--dir", dir, "--size", "1MiB"];
        all.extend_from_slice(args);
        let o = s.iolab(&all);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(&format!("{field} = ")) && e.contains(why), "{args:?}: {e}");
        assert!(s.leftovers().is_empty(), "{args:?}: {:?}", s.leftovers());
    }
}

/// A cold read bounded by a runtime that goes round its file again: after the first pass its
/// bytes are of blocks it has already read, and the table's cache column says how many
/// (`cold 0.0%, N% again`) beside the `re-read` flag, where it said plain `cold 0.0%` before.
/// One pass bounded by a stonewall moves nothing again and carries neither.
#[test]
fn a_cold_read_that_wraps_says_what_it_read_again() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let o = s.iolab(&[
        "run",
        "--dir",
        dir,
        "--op",
        "write,read:cold:runtime=1s,read:cold:stonewall=30s",
        "--size",
        "1MiB",
        "--bs",
        "4KiB",
        "--reps",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc: Value = serde_json::from_slice(&s.iolab(&["results", "show", "last", "--json"]).stdout).unwrap();
    let r = &phases(&doc)[1]["repetitions"][0];
    let ops = r["ops"].as_u64().unwrap();
    assert!(ops > 2 * 256, "the runtime goes round the 256 blocks more than twice: {ops} ops");
    // Every op after the first pass is of a block read before.
    let again = r["again_fraction"].as_f64().unwrap();
    assert!((again - (ops - 256) as f64 / ops as f64).abs() < 1e-9, "{again} of {ops} ops");
    assert!(r["flags"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().starts_with("re-read:")));
    let row = out.lines().find(|l| l.starts_with("read:cold:runtime=1s ")).unwrap();
    assert!(row.contains(&format!("cold 0.0%, {:.1}% again", again * 100.0)), "{row}");
    // One pass: nothing again, no flag, the plain label.
    let one = &phases(&doc)[2]["repetitions"][0];
    assert_eq!(one["ops"].as_u64(), Some(256));
    assert!(one.get("again_fraction").is_none(), "{one}");
    let row = out.lines().find(|l| l.starts_with("read:cold:stonewall=30s ")).unwrap();
    assert!(row.contains("cold ") && !row.contains("again"), "{row}");
    // The CSV's again_fraction is the JSON's; empty for the single pass.
    let o = s.iolab(&["results", "export", "last", "--csv"]);
    let mut rdr = csv::Reader::from_reader(&o.stdout[..]);
    let h = rdr.headers().unwrap().clone();
    let (pc, ac) =
        (h.iter().position(|c| c == "phase").unwrap(), h.iter().position(|c| c == "again_fraction").unwrap());
    for r in rdr.records().map(|r| r.unwrap()) {
        match &r[pc] {
            "read:cold:runtime=1s" => assert_eq!(r[ac].parse::<f64>().unwrap(), again),
            _ => assert_eq!(&r[ac], "", "{}", &r[pc]),
        }
    }
}

/// The full table's section (`--explain`) on the workload apart: a mixed phase's reads and writes with
/// their shares and IOPS, a mix's sizes, and a drawn order's skew, as the JSON has them.
#[test]
fn the_table_shows_the_workload_apart() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let o = s.iolab(&[
        "run",
        "--dir",
        dir,
        "--op",
        "write,rw:rwmixread=70,read:zipf:1.2",
        "--bssplit",
        "4KiB/50:16KiB/50",
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--explain",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc: Value = serde_json::from_slice(&s.iolab(&["results", "show", "last", "--json"]).stdout).unwrap();
    let section: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("workload apart")).collect();
    assert!(section.len() > 8, "{out}");
    let cells = |phase: &str, class: &str| -> Vec<String> {
        let l = section
            .iter()
            .find(|l| l.starts_with(&format!("{phase} ")) && l[phase.len()..].trim_start().starts_with(class))
            .unwrap_or_else(|| panic!("no {phase} {class} row in {section:?}"));
        l.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
    };
    let m = &phases(&doc)[1]["mix_summary"];
    let share = m["read_share_ops"].as_f64().unwrap();
    let read = cells("rw:rwmixread=70", "read");
    assert_eq!(read[2], format!("{:.1}%", share * 100.0), "{read:?}");
    let iops = m["read"]["ops_per_s"]["mean"].as_f64().unwrap();
    assert_eq!(read[4], iolab::units::fmt_ops(iops), "{read:?}");
    let write = cells("rw:rwmixread=70", "write");
    assert_eq!(write[2], format!("{:.1}%", (1.0 - share) * 100.0), "{write:?}");
    for phase in ["write", "rw:rwmixread=70", "read:zipf:1.2"] {
        let i = phases(&doc).iter().position(|p| p["name"] == phase).unwrap();
        let sizes = phases(&doc)[i]["mix_summary"]["block_sizes"].as_array().unwrap().clone();
        let small = cells(phase, "4 KiB");
        assert_eq!(small[2], format!("{:.1}%", sizes[0][1].as_f64().unwrap() * 100.0), "{phase}: {small:?}");
    }
    let hot = phases(&doc)[2]["mix_summary"]["hot10_share_ops"].as_f64().unwrap();
    assert_eq!(cells("read:zipf:1.2", "hot tenth")[2], format!("{:.1}%", hot * 100.0));
    // A plain phase has no row.
    let plain = s.iolab(&["run", "--dir", dir, "--op", "write", "--size", "1MiB", "--reps", "1"]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("workload apart"));
}

/// The entries of fio's own trace (`write_iolog`, version 3: `TIME FILE ACTION OFFSET
/// LENGTH`) of reads, writes and syncs, as (file, action, offset, length), in the log's order
/// (each job's part of it in that job's order); the header and file lines are skipped.
pub(crate) fn fio_log(text: &str) -> Vec<(String, String, u64, u64)> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|t| t.len() == 5)
        .map(|t| (t[1].into(), t[2].into(), t[3].parse().unwrap(), t[4].parse().unwrap()))
        .collect()
}

/// The ops fio's own trace (`write_iolog`) lists for a file, as (offset, length) of each read.
fn fio_reads(s: &Scratch, name: &str, args: &[&str]) -> Option<Vec<(u64, u64)>> {
    let file = s.path().join(format!("fio-{name}.dat"));
    let log = s.path().join(format!("fio-{name}.log"));
    let o = Command::new("fio")
        .args([format!("--name={name}"), format!("--filename={}", file.display())])
        .args(["--rw=randread", "--ioengine=psync", "--randseed=7"])
        .arg(format!("--write_iolog={}", log.display()))
        .args(args)
        .output()
        .ok()?;
    assert!(o.status.success(), "fio {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = (std::fs::remove_file(&file), std::fs::remove_file(&log));
    Some(fio_log(&text).into_iter().filter(|o| o.1 == "read").map(|o| (o.2, o.3)).collect())
}

/// Against fio with its own trace: a permutation visits the same set of blocks, zipf:1.2 puts
/// the same share of its ops on the hottest tenth of the blocks, and a bssplit gives the same
/// proportions, each within six standard deviations of the difference of two samples of
/// their sizes. Skipped (said) where fio is not installed.
#[test]
fn fio_with_its_own_trace_agrees_on_blocks_skew_and_sizes() {
    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("fio is not installed: the comparison with fio's trace is skipped");
        return;
    }
    let s = Scratch::new();
    // A permutation: every block once, as fio's random map.
    s.run_json(&["--op", "read:random", "--size", "1MiB", "--bs", "4KiB", "--reps", "1", "--trace"]);
    let mut ours: Vec<u64> = trace(&s, "read:random").iter().map(|o| o.offset).collect();
    let mut theirs: Vec<u64> =
        fio_reads(&s, "perm", &["--bs=4k", "--size=1m"]).unwrap().iter().map(|o| o.0).collect();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours.len(), 256);
    assert_eq!(ours, theirs, "the same set of blocks");
    // zipf:1.2 over 1024 blocks, as many ops each.
    let phase = "read:zipf:1.2:runtime=300ms";
    s.run_json(&["--op", phase, "--size", "4MiB", "--bs", "4KiB", "--reps", "1", "--trace"]);
    let ours: Vec<u64> = trace(&s, phase).iter().map(|o| o.offset).collect();
    let n = ours.len();
    let io = format!("--io_size={}", n * 4096);
    let theirs: Vec<u64> = fio_reads(
        &s,
        "zipf",
        &["--bs=4k", "--size=4m", "--norandommap", "--random_distribution=zipf:1.2", &io],
    )
    .unwrap()
    .iter()
    .map(|o| o.0)
    .collect();
    let hot = |offs: &[u64]| {
        let mut hits: BTreeMap<u64, usize> = BTreeMap::new();
        offs.iter().for_each(|o| *hits.entry(o / 4096).or_default() += 1);
        let mut c: Vec<usize> = hits.into_values().collect();
        c.sort_unstable_by(|a, b| b.cmp(a));
        c.iter().take(103).sum::<usize>() as f64 / offs.len() as f64
    };
    let (a, b) = (hot(&ours), hot(&theirs));
    let sd = (a * (1.0 - a) * (1.0 / n as f64 + 1.0 / theirs.len() as f64)).sqrt();
    assert!((a - b).abs() < 6.0 * sd, "hottest tenth: iolab {a:.4} of {n}, fio {b:.4} of {}", theirs.len());
    // bssplit: the same proportions.
    let phase = "read:uniform:runtime=300ms";
    let split = "4KiB/50:16KiB/30:64KiB/20";
    s.run_json(&["--op", phase, "--bssplit", split, "--size", "8MiB", "--reps", "1", "--trace"]);
    let ours: Vec<u64> = trace(&s, phase).iter().map(|o| o.len).collect();
    let io = format!("--io_size={}", 40 << 20);
    let theirs: Vec<u64> =
        fio_reads(&s, "bssplit", &["--size=8m", "--norandommap", "--bssplit=4k/50:16k/30:64k/20", &io])
            .unwrap()
            .iter()
            .map(|o| o.1)
            .collect();
    for bs in [4096u64, 16384, 65536] {
        let share = |v: &[u64]| v.iter().filter(|&&l| l == bs).count() as f64 / v.len() as f64;
        let (a, b) = (share(&ours), share(&theirs));
        let sd = (a * (1.0 - a) * (1.0 / ours.len() as f64 + 1.0 / theirs.len() as f64)).sqrt();
        assert!(
            (a - b).abs() < 6.0 * sd,
            "{bs}: iolab {a:.4} of {}, fio {b:.4} of {}",
            ours.len(),
            theirs.len()
        );
    }
}
