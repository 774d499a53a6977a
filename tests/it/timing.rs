//! When workers ran, from their own clocks: the IOR-defined `agg` headline of a plain run in
//! every output and the store, workers that never ran together flagged, and a run stopped for
//! seconds flagged as stalled.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Two threads write and read back: agg is all bytes over the span, below min_SAR (the span
/// holds every worker's time and their opens and closes); it heads the table, and the store,
/// the CSV and the JSON carry it.
#[test]
fn agg_is_all_bytes_over_the_span_and_heads_a_plain_run() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--workers",
        "2",
        "--size",
        "2MiB",
        "--bs",
        "64KiB",
        "--op",
        "write,read:cold",
        "--reps",
        "2",
    ]);
    assert_eq!(doc["design"]["figure"], "agg");
    for ph in phases(&doc) {
        for r in ph["repetitions"].as_array().unwrap() {
            let (agg, span) = (num(&r["agg_bytes_per_s"]), num(&r["span_ns"]));
            assert_eq!(num(&r["total_bytes"]), 4.0 * 1024.0 * 1024.0);
            assert!((agg - 4.0 * 1024.0 * 1024.0 * 1e9 / span).abs() < 1e-6 * agg, "{r}");
            let slowest =
                r["workers"].as_array().unwrap().iter().map(|w| num(&w["time_ns"])).fold(0.0, f64::max);
            assert!(span >= slowest, "the span holds the slowest worker's time: {r}");
            assert!(agg <= num(&r["min_sar_bytes_per_s"]) * (1.0 + 1e-9), "{r}");
            // Threads started at a barrier overlap unless the machine runs one before the
            // other gets a core (a 2 MiB phase takes milliseconds): then the flag says so.
            assert_overlap_flagged_as_measured(r);
            for w in r["workers"].as_array().unwrap() {
                assert!(w["start_offset_ns"].is_u64(), "{w}");
            }
        }
        let a = &ph["agg_summary"];
        assert_eq!((a["of"].as_str(), a["n"].as_u64()), (Some("agg_bytes_per_s"), Some(2)), "{ph}");
    }
    // The store gives back the same figures.
    let id = doc["experiment_id"].as_str().unwrap();
    let o = s.iolab(&["results", "show", id, "--json"]);
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    for (a, b) in phases(&doc).iter().zip(phases(&stored)) {
        for (x, y) in a["repetitions"].as_array().unwrap().iter().zip(b["repetitions"].as_array().unwrap()) {
            for k in ["agg_bytes_per_s", "span_ns", "overlap"] {
                assert_eq!(x[k], y[k], "{k}");
            }
            assert_eq!(x["workers"][1]["start_offset_ns"], y["workers"][1]["start_offset_ns"]);
        }
    }
    // The table heads with it and says so.
    let table = String::from_utf8(s.iolab(&["results", "show", id, "--explain"]).stdout).unwrap();
    let head = table.lines().find(|l| l.starts_with("phase ")).unwrap();
    assert!(head.contains("mean*") && head.contains("max_SAR") && head.contains("min_SAR"), "{table}");
    assert!(table.contains("* headline: the mean of agg"), "{table}");
    let write = table.lines().find(|l| l.starts_with("write ")).unwrap();
    let mean = num(&phases(&doc)[0]["agg_summary"]["mean"]) / 1e6;
    let cell: f64 = write.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert!((cell - mean).abs() <= 0.01 * mean, "{write} against {mean}");
    // The CSV has its columns, with the run's value on every row of the run.
    let csv = s.iolab(&["results", "export", id, "--csv"]).stdout;
    let mut rdr = csv::Reader::from_reader(&csv[..]);
    let header = rdr.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name}"));
    let row = rdr.records().next().unwrap().unwrap();
    let first = &phases(&doc)[0]["repetitions"][0];
    assert_eq!(row[col("agg_bytes_per_s")].parse::<f64>().unwrap(), num(&first["agg_bytes_per_s"]));
    assert_eq!(row[col("span_ns")], first["span_ns"].to_string());
    assert!(row[col("worker_start_offset_ns")].parse::<u64>().is_ok());
}

/// Russell's R4 at quick scale, the case that showed it: reader processes started freely, each
/// reading its small file in microseconds, never all at once. The sum of their rates is no
/// rate the disk delivered: the phase says so.
#[test]
fn free_starts_that_never_ran_together_are_flagged() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--launcher",
        "process",
        "--start",
        "free",
        "--workers",
        "3",
        "--size",
        "64KiB",
        "--bs",
        "16KiB",
        "--op",
        "write,read:warm",
        "--reps",
        "1",
    ]);
    let read = &phases(&doc)[1];
    let r = &read["repetitions"][0];
    assert!(num(&r["overlap"]) < 0.5, "{r}");
    let flag = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|f| f.starts_with("workers did not overlap"));
    assert!(flag.is_some_and(|f| f.starts_with("workers did not overlap: all 3 ran together for ")), "{r}");
    assert!(
        read["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().starts_with("workers did not overlap"))
    );
    // The spread of the starts is on the workers, and agg is far below the sum of the rates.
    let offsets: Vec<f64> =
        r["workers"].as_array().unwrap().iter().map(|w| num(&w["start_offset_ns"])).collect();
    assert!(offsets.contains(&0.0) && offsets.iter().any(|&o| o > 0.0), "{offsets:?}");
    assert!(num(&r["agg_bytes_per_s"]) < num(&r["max_sar_bytes_per_s"]), "{r}");
    let table = String::from_utf8(s.iolab(&["results", "show", "last", "--explain"]).stdout).unwrap();
    assert!(
        table.contains("  workers did not overlap: all the workers were running together for less than 50%"),
        "{table}"
    );
}

/// The data file of the one running write under `dir` (in its work directory), if it exists.
fn data_file(dir: &Path) -> Option<PathBuf> {
    let work = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(".iolab-"))?;
    Some(work.path().join("w0000.dat")).filter(|p| p.exists())
}

/// A run stopped (SIGSTOP) for 3 s in the middle of its write is flagged as stalled, with the
/// gap seen in its rate over time: a clean-looking run at a fraction of the rate otherwise.
#[test]
fn a_run_stopped_for_seconds_is_flagged_as_stalled() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    // A commit after every 4 KiB write keeps the phase going for some time on any disk; where
    // the write ends before the stop lands, a larger one is tried.
    for size in ["1MiB", "4MiB", "16MiB"] {
        let mut child = command()
            .args([
                "run", "--json", "--quiet", "--dir", &dir, "--op", "write", "--size", size, "--bs", "4KiB",
            ])
            .args(["--sync", "each", "--reps", "1"])
            .env("IOLAB_DB", s.db())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let full = iolab::units::parse_size(size, 1 << 40).unwrap();
        let t0 = Instant::now();
        // Mid-write: the file exists and holds some of its bytes.
        let stopped = loop {
            let len = data_file(s.path()).and_then(|p| std::fs::metadata(p).ok()).map_or(0, |m| m.len());
            if len > 0 {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                let after =
                    data_file(s.path()).and_then(|p| std::fs::metadata(p).ok()).map_or(full, |m| m.len());
                break after < full;
            }
            if t0.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
                break false;
            }
            std::thread::sleep(Duration::from_micros(500));
        };
        if stopped {
            std::thread::sleep(Duration::from_secs(3));
        }
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        if !stopped {
            eprintln!("the {size} write ended before it could be stopped; trying a larger one");
            continue;
        }
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let r = &phases(&doc)[0]["repetitions"][0];
        let flag = r["flags"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|f| f.starts_with("stalled: "));
        let flag = flag.unwrap_or_else(|| panic!("no stall flag: {r}"));
        // "stalled: no progress for 3.01 s from ...": the gap is the stop, to within the
        // series' 10 ms intervals and the op in flight.
        let secs: f64 = flag["stalled: no progress for ".len()..].split(' ').next().unwrap().parse().unwrap();
        assert!((2.9..4.5).contains(&secs), "{flag}");
        assert!(num(&r["time_ns"]) / 1e9 >= secs, "the stop is inside the worker's time: {r}");
        return;
    }
    panic!("no write lasted long enough to be stopped in its middle");
}

/// MPI ranks whose clocks disagree by 1000 s (rank 1 in a time namespace of its own, named as
/// another host): rank 0 measures the offset when the world starts and moves rank 1's readings
/// onto its clock, so the span, agg and the starts are those of one clock.
#[cfg(feature = "mpi")]
#[test]
fn ranks_on_another_clock_are_moved_onto_rank_0s() {
    if !std::process::Command::new("unshare")
        .args(["--uts", "--time", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skip: no time namespaces here (unshare --time), so no second clock to test against");
        return;
    }
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    // Rank 1 runs as host `far`, its monotonic clock 1000 s ahead.
    let script = r#"if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec unshare --uts --time --monotonic 1000 sh -c 'hostname far && exec "$@"' sh "$@"; fi; exec "$@""#;
    let bin = bin();
    let args = ["sh", "-c", script, "sh", bin.to_str().unwrap(), "run", "--dir", dir, "--layout", "shared"];
    let more =
        ["--op", "write,read:cold", "--size", "1MiB", "--bs", "64KiB", "--reps", "1", "--json", "--quiet"];
    let mut c = std::process::Command::new("timeout");
    c.args(["240", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .args(args)
        .args(more)
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .env("IOLAB_DB", s.db())
        .current_dir(s.path());
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    for ph in phases(&doc) {
        let r = &ph["repetitions"][0];
        let hosts: Vec<&str> =
            r["hosts"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap()).collect();
        assert_eq!(hosts.len(), 2, "{r}");
        assert_eq!(hosts[1], "far", "{r}");
        for w in r["workers"].as_array().unwrap() {
            assert!(num(&w["start_offset_ns"]) < 1e9, "a start 1000 s apart: {w}");
        }
        let span = num(&r["span_ns"]);
        assert!(span < 100e9, "a span of {} s", span / 1e9);
        assert!(num(&r["agg_bytes_per_s"]) <= num(&r["min_sar_bytes_per_s"]) * (1.0 + 1e-9), "{r}");
        // On rank 0's clock the ranks' times are a fraction of one span; whether two ranks of a
        // 1 MiB phase ran at once is the machine's doing, and the flag says so when they did not.
        assert_overlap_flagged_as_measured(r);
    }
}

/// A repetition's overlap is a fraction, and it carries the flag `workers did not overlap`
/// exactly when that fraction is below iolab's threshold.
fn assert_overlap_flagged_as_measured(r: &Value) {
    let overlap = num(&r["overlap"]);
    assert!((0.0..=1.0).contains(&overlap), "{r}");
    let flagged = r["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().unwrap().starts_with("workers did not overlap"));
    assert_eq!(flagged, overlap < iolab::results::timing::MIN_OVERLAP, "the flag goes with the overlap: {r}");
}
