//! Traces stream to the store in batches: a trace far larger than the recorder's in-memory
//! bound is stored completely and exactly, while the process's peak memory stays bounded.

use std::process::Command;

use crate::util::*;

/// Set (to the command line, as JSON) in the subprocess that runs one traced experiment.
const CHILD_ARGS: &str = "IOLAB_TRACE_STREAM_ARGS";
/// Ops per worker: 512 Ki ops of 8 bytes (8 times the recorder's ring of 4 x 16 Ki ops).
const OPS_PER_WORKER: u64 = 1 << 19;
const BS: u64 = 8;
const WORKERS: u64 = 2;
/// Peak resident memory allowed to the process running the experiment. Streaming needs the
/// baseline (about 12 MiB), the recorders' rings (2.5 MiB per worker) and the periodicity
/// analysis of one worker's latencies at a time (about 35 MiB for 2^19 ops): under 60 MiB.
/// Holding the traces in memory takes 32 bytes per op and per copy: 32 MiB per copy here, and
/// the results held two copies while the analysis ran (over 110 MiB).
const MAX_PEAK_KIB: u64 = 80 << 10;

/// The experiment, in a process of its own (this test binary, re-executed by
/// `traces_far_larger_than_the_ring_stream_in_bounded_memory`), so that its peak memory (VmHWM) is
/// the experiment's alone; prints it.
#[test]
#[ignore = "run in a subprocess by traces_far_larger_than_the_ring_stream_in_bounded_memory"]
fn traced_experiment_in_a_subprocess() {
    let Ok(args) = std::env::var(CHILD_ARGS) else { return };
    let args: Vec<String> = serde_json::from_str(&args).unwrap();
    let cli = <iolab::cli::Cli as clap::Parser>::parse_from(args);
    iolab::cmd::main(cli).unwrap();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    println!("peak {}", hwm.split_whitespace().nth(1).unwrap());
}

#[test]
fn traces_far_larger_than_the_ring_stream_in_bounded_memory() {
    for launcher in ["thread", "process"] {
        let s = Scratch::new();
        let size = (OPS_PER_WORKER * BS).to_string();
        let args = [
            "iolab",
            "run",
            "--launcher",
            launcher,
            "--workers",
            &WORKERS.to_string(),
            "--size",
            &size,
            "--bs",
            &BS.to_string(),
            "--op",
            "write",
            "--sync",
            "none",
            "--latency",
            "trace",
            "--reps",
            "1",
            "--quiet",
            "--dir",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(s.path().display().to_string());
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "trace_stream::traced_experiment_in_a_subprocess", "--ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(CHILD_ARGS, serde_json::to_string(&args).unwrap())
            .env("IOLAB_DB", s.db())
            .env("IOLAB_WORKER_EXE", bin())
            .current_dir(s.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{launcher}: {text}\n{}", stderr(&out));
        let peak_kib: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("peak "))
            .unwrap_or_else(|| panic!("{launcher}: no peak in {text}"))
            .parse()
            .unwrap();
        println!("{launcher} workers: peak resident {} MiB", peak_kib >> 10);
        assert!(peak_kib < MAX_PEAK_KIB, "{launcher} workers: peak resident {peak_kib} KiB");

        // Every op of every worker, once, in order, at its offset, its start the end of the
        // op before it (one clock read per op: the end of one op is the start of the next).
        let db = rusqlite::Connection::open(s.db()).unwrap();
        // Per worker: ops, first and last op index, ops at their offset, first and last file.
        type Row = (i64, i64, i64, i64, i64, i64, i64);
        let per_worker: Vec<Row> = db
            .prepare(&format!(
                "SELECT worker, count(*), min(op), max(op), sum(offset_bytes = op * {BS}), min(file), max(file)
                 FROM trace_ops GROUP BY worker ORDER BY worker"
            ))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let n = OPS_PER_WORKER as i64;
        // Worker w writes its own file, global id w.
        let want: Vec<Row> = (0..WORKERS as i64).map(|w| (w, n, 0, n - 1, n, w, w)).collect();
        assert_eq!(per_worker, want, "{launcher}");
        let unchained: i64 = db
            .query_row(
                "SELECT count(*) FROM trace_ops a JOIN trace_ops b
                 ON b.run_id = a.run_id AND b.phase = a.phase AND b.worker = a.worker AND b.op = a.op + 1
                 WHERE b.start_ns != a.start_ns + a.duration_ns",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(unchained, 0, "{launcher}");
        let first: i64 =
            db.query_row("SELECT max(start_ns) FROM trace_ops WHERE op = 0", [], |r| r.get(0)).unwrap();
        assert_eq!(first, 0, "{launcher}: op 0 starts at the gate");
    }
}
