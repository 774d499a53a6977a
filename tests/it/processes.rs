//! Process workers: the binary re-executes itself once per worker; barrier and free starts
//! both produce correct files and per-worker times; a child that dies fails the run cleanly.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// Starts a long write with process workers and waits until all `n` children run. The
/// caller waits for the returned process.
#[allow(clippy::zombie_processes)]
fn start_long_run(s: &Scratch, n: usize) -> (Child, Vec<u32>) {
    let mut child = command()
        .args([
            "run",
            "--launcher",
            "process",
            "--workers",
            &n.to_string(),
            "--size",
            "256MiB",
            "--bs",
            "4KiB",
            "--sync",
            "each",
            "--op",
            "write",
            "--reps",
            "1",
            "--quiet",
            "--dir",
            s.path().to_str().unwrap(),
        ])
        .env("IOLAB_DB", s.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let kids = children_of(child.id());
        if kids.len() == n {
            // Let them open their files and start writing.
            std::thread::sleep(Duration::from_millis(300));
            return (child, kids);
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("worker processes did not appear");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_with_timeout(mut child: Child, secs: u64) -> std::process::Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("iolab did not stop within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn process_workers_with_barrier_and_free_starts_write_correct_files() {
    for start in ["barrier", "free"] {
        let s = Scratch::new();
        let doc = s.run_json(&[
            "--launcher",
            "process",
            "--start",
            start,
            "--workers",
            "3",
            "--size",
            "2MiB",
            "--bs",
            "64KiB",
            "--op",
            "write,read:cold",
            "--trace",
            "--reps",
            "2",
            "--keep",
        ]);
        assert_eq!(doc["spec"]["launcher"], "process");
        assert_eq!(doc["spec"]["start"], start);
        for ph in phases(&doc) {
            for rep in ph["repetitions"].as_array().unwrap() {
                assert_eq!(rep["status"], "complete", "{start}: {rep}");
                let ws = rep["workers"].as_array().unwrap();
                assert_eq!(ws.len(), 3);
                for (i, w) in ws.iter().enumerate() {
                    assert_eq!(w["worker"], i as u64);
                    assert_eq!(w["bytes"], 2 << 20);
                    assert_eq!(w["ops"], 32);
                    assert!(w["time_ns"].as_u64().unwrap() > 0);
                    assert!(w["open_ns"].as_u64().unwrap() > 0);
                    assert!(w["latency_ns"]["p50"].as_u64().unwrap() > 0, "histogram crossed the pipe");
                    assert!(w["periods"].is_array(), "traced");
                }
            }
            // Each repetition's files hold exactly what the plan says.
            for rep in ph["repetitions"].as_array().unwrap() {
                let wd = work_dir(s.path(), rep["run_id"].as_str().unwrap());
                for w in 0..3u32 {
                    let data = std::fs::read(wd.join(format!("w{w:04}.dat"))).unwrap();
                    assert!(data == expected_file(1, w, 2 << 20, 64 << 10), "{start}: file {w}");
                }
            }
        }
        // Traces came over the pipe into the store: 2 phases x 2 reps x 3 workers x 32 ops.
        let out = s.iolab(&["results", "trace", "last"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 1 + 2 * 2 * 3 * 32);
    }
}

/// The workers really are processes: with no executable to start, the run fails saying so.
#[test]
fn workers_are_separate_executables() {
    let s = Scratch::new();
    let out = command()
        .args(["run", "--launcher", "process", "--size", "1MiB", "--reps", "1", "--no-store", "--quiet"])
        .args(["--dir", s.path().to_str().unwrap()])
        .env("IOLAB_WORKER_EXE", s.path().join("no-such-iolab"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot start worker process 0"), "{}", stderr(&out));
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// A child killed mid-run fails the run with its signal named; the other child is stopped,
/// no data file is left, and the failed run is in the store.
#[test]
fn a_killed_child_fails_the_run_cleanly() {
    let s = Scratch::new();
    let (parent, kids) = start_long_run(&s, 2);
    // SAFETY: sending SIGKILL to a child process this test started through iolab.
    unsafe { libc::kill(kids[0] as i32, libc::SIGKILL) };
    let out = wait_with_timeout(parent, 30);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("(process {})", kids[0])), "{err}");
    assert!(err.contains("was killed by signal 9 (SIGKILL)"), "{err}");
    assert!(!alive(kids[1]), "the other worker still runs");
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    let list = String::from_utf8(s.iolab(&["results", "list"]).stdout).unwrap();
    assert!(list.lines().nth(1).is_some_and(|l| l.trim_end().ends_with('1')), "failed run stored: {list}");
}

/// SIGINT to the parent stops the children too and leaves nothing behind.
#[test]
fn a_signal_to_the_parent_stops_its_children() {
    let s = Scratch::new();
    let (parent, kids) = start_long_run(&s, 2);
    // SAFETY: sending SIGINT to the iolab process this test started.
    unsafe { libc::kill(parent.id() as i32, libc::SIGINT) };
    let out = wait_with_timeout(parent, 30);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    for k in kids {
        assert!(!alive(k), "worker process {k} outlived the run");
    }
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// Threads may start free too: each as soon as its files are open.
#[test]
fn threads_with_a_free_start() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--start",
        "free",
        "--workers",
        "2",
        "--size",
        "1MiB",
        "--bs",
        "64KiB",
        "--op",
        "write",
        "--reps",
        "1",
        "--keep",
    ]);
    let rep = &phases(&doc)[0]["repetitions"][0];
    let wd = work_dir(s.path(), rep["run_id"].as_str().unwrap());
    for w in 0..2u32 {
        assert!(
            std::fs::read(wd.join(format!("w{w:04}.dat"))).unwrap() == expected_file(1, w, 1 << 20, 65536)
        );
    }
}
