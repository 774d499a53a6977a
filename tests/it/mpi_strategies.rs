//! Benson et al.'s strategies on MPI ranks (build with `--features mpi`), under real `mpirun`:
//! every strategy, S2DT, S3DT and MPI-IO included, writes exactly its bytes with contiguous
//! and strided memory; S1B's token keeps one sync in flight; the MPI-IO writers make the MPI-IO
//! calls; a rank that fails mid-run ends the run on every rank within seconds; the B-mpi
//! preset runs and its table comes from the store.

use std::process::Stdio;
use std::time::{Duration, Instant};

use iolab::spec::Spec;

use crate::mpi::{mpirun, ok_json};
use crate::strategies::check_files;
use crate::util::*;

/// Every strategy on two ranks, contiguous and strided (8 bytes of every 32, the study's), with
/// syncs every 16 KiB: each file byte for byte, every role's time attributed, the calls each
/// writer made, and S1B never more than one sync in flight.
#[test]
fn every_strategy_on_two_ranks_writes_exactly_its_bytes() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    for strategy in ["S1A", "S1B", "S2", "S2DT", "S3", "S3DT", "S5", "MPI-IO"] {
        for strided in [false, true] {
            let mut args = vec![
                "run",
                "--strategy",
                strategy,
                "--iters",
                "16",
                "--bs",
                "4KiB",
                "--sync",
                "every:16KiB",
                "--seed",
                "11",
                "--reps",
                "1",
                "--keep",
                "--json",
                "--quiet",
                "--no-store",
                "--dir",
                &dir,
            ];
            if strided {
                args.extend(["--mem-len", "8", "--mem-stride", "32"]);
            }
            let doc = ok_json(&mpirun(&s, 2, &args));
            let point = &doc["points"][0];
            let spec: Spec = serde_json::from_value(point["spec"].clone()).unwrap();
            assert_eq!(spec.strategy.unwrap().name(), strategy);
            let rep = &point["phases"][0]["repetitions"][0];
            assert_eq!(rep["status"], "complete", "{strategy}: {}", rep["error"]);
            assert_eq!(rep["total_bytes"], 2 * 16 * 4096, "{strategy}: W x iters x bs");
            let workers = rep["workers"].as_array().unwrap();
            for w in workers {
                let t = &w["times_ns"];
                let sum: u64 = ["compute", "write", "sync", "handoff", "wait"]
                    .iter()
                    .map(|k| t[k].as_u64().unwrap())
                    .sum();
                assert_eq!(sum, w["time_ns"].as_u64().unwrap(), "{strategy}: worker {}", w["worker"]);
                // Worker r on rank r; S5's sync thread (worker 2) inside the writer, rank 0.
                let wk = w["worker"].as_u64().unwrap();
                assert_eq!(w["rank"], if wk < 2 { wk } else { 0 }, "{strategy}: one role per rank");
            }
            if strategy == "MPI-IO" {
                // Each rank writes its 16 parts collectively through its view; 64 KiB of its
                // own in all, a collective sync every 16 KiB of it (4).
                for w in workers {
                    assert_eq!(w["calls"]["MPI_File_write_at_all"], 16, "{}", w["calls"]);
                    assert_eq!(w["calls"]["MPI_File_sync"], 4, "{}", w["calls"]);
                }
            }
            if strategy == "S1B" {
                assert_eq!(rep["syncs_in_flight_max"], 1, "S1B: one sync at a time");
            }
            let d = work_dir(s.path(), rep["run_id"].as_str().unwrap());
            check_files(&d, &spec);
            std::fs::remove_dir_all(&d).unwrap();
        }
    }
    // The table's spec line names the MPI-IO strategy's commit call.
    let out = mpirun(
        &s,
        2,
        &["run", "--strategy", "MPI-IO", "--iters", "4", "--bs", "4KiB", "--sync", "end"]
            .into_iter()
            .chain(["--reps", "1", "--quiet", "--no-store", "--dir", &dir])
            .collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    // (As printed, the spec line wrapped to the width.)
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("commit end by MPI_File_sync"), "{text}");
}

/// A rank whose writes fail mid-run (a file size limit set on it while the run computes): the
/// run ends on both ranks within seconds with exit 1, the error names the rank, the call and
/// the file; nothing is left. S1A fails on rank 1 while rank 0 goes on; S2 fails on the writer,
/// rank 0, while rank 1 waits to hand it its next buffer.
#[test]
fn a_failing_rank_ends_a_strategy_run_on_every_rank() {
    for (strategy, rank, file) in [("S1A", 1usize, "w0001.dat"), ("S2", 0, "shared.dat")] {
        let s = Scratch::new();
        let dir = s.path().to_str().unwrap().to_string();
        let args = [
            "run",
            "--strategy",
            strategy,
            "--iters",
            "4096",
            "--bs",
            "4KiB",
            "--comptime",
            "8s",
            "--reps",
            "1",
            "--quiet",
            "--dir",
            &dir,
        ];
        let child = crate::mpi::mpirun_cmd(&s, 2, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ranks = crate::mpi::ranks_of(&dir, 2);
        let limit = std::process::Command::new("prlimit")
            .args(["--pid", &ranks[rank].to_string(), "--fsize=4194304"])
            .status()
            .unwrap();
        assert!(limit.success());
        let t = Instant::now();
        let o = child.wait_with_output().unwrap();
        assert!(t.elapsed() < Duration::from_secs(60), "{strategy}: took {:?}", t.elapsed());
        assert_eq!(o.status.code(), Some(1), "{strategy}: {}", stderr(&o));
        let err = stderr(&o);
        if rank != 0 {
            assert!(err.contains(&format!("rank {rank} (")), "{strategy}: {err}");
        }
        assert!(err.contains(file) && err.contains("File too large"), "{strategy}: {err}");
        assert!(
            !err.contains("aborted: the run was stopped"),
            "{strategy}: the failure, not its echo: {err}"
        );
        assert!(s.leftovers().is_empty(), "{strategy}: {:?}", s.leftovers());
    }
}

/// `iolab reproduce B-mpi --scale quick` under mpirun: the study's strategies on two ranks, with
/// and without compute, stored as one experiment, its findings compared at the compute they
/// name, and `iolab results strategies` shows them in Figure 1's table.
#[test]
fn the_b_mpi_preset_runs_and_its_table_comes_from_the_store() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = mpirun(&s, 2, &["reproduce", "B-mpi", "--scale", "quick", "--dir", &dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MPI ranks"), "{out}");
    // Every strategy's point stored, each repetition complete with W x iters x bs bytes.
    let shown = s.iolab(&["results", "show", "last", "--json"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let doc: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let mut ran: Vec<String> = vec![];
    for point in doc["points"].as_array().unwrap() {
        ran.push(point["params"]["strategy"].as_str().unwrap().to_string());
        for rep in point["phases"][0]["repetitions"].as_array().unwrap() {
            assert_eq!(rep["status"], "complete", "{}", point["params"]);
            assert_eq!(rep["total_bytes"], 2 * 64 * 65536, "{}", point["params"]);
        }
    }
    ran.sort();
    let want: Vec<&str> =
        ["MPI-IO", "S1A", "S1B", "S2", "S3", "S5"].into_iter().flat_map(|n| [n, n]).collect();
    assert_eq!(ran, want, "every strategy at both compute times");
    // The finding "with compute" compares the runs with compute; the one without, those without.
    let f = doc["findings"].as_array().unwrap();
    assert_eq!(f.len(), 2);
    // Each strategy at its best sync size (one at quick scale), by the study's trimmed mean.
    assert_eq!(f[0]["a"]["point"], "comptime=100ms strategy=S1A best=f=1MiB of 1", "{}", f[0]);
    assert_eq!(f[0]["b"]["point"], "comptime=100ms strategy=S3 best=f=1MiB of 1", "{}", f[0]);
    assert_eq!(f[1]["a"]["point"], "comptime=0s strategy=MPI-IO best=f=1MiB of 1", "{}", f[1]);
    assert_eq!(f[0]["statistic"], "trimmed_mean_10", "{}", f[0]);
    let table = s.iolab(&["results", "strategies", "last"]);
    assert!(table.status.success(), "{}", stderr(&table));
    let t = String::from_utf8_lossy(&table.stdout);
    for name in ["S1A", "S1B", "S2", "S3", "S5", "MPI-IO"] {
        assert!(t.contains(name), "{name} missing from:\n{t}");
    }
    // Derived datatypes are for strided data (Table 2): not here.
    assert!(!t.contains("S2DT") && !t.contains("S3DT"), "{t}");
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// `iolab reproduce B-mpi-strided --scale quick` under mpirun: Table 2's strategies on two
/// ranks with strided data (8 of every 32 bytes): S2DT and S3DT are points of their own, with
/// writev() (vsync) and MPI-IO with its own engine, every repetition complete with
/// W x iters x bs bytes, and its findings compare S3DT with S3 and S1A.
#[test]
fn the_b_mpi_strided_preset_runs_table_2_with_derived_datatypes() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = mpirun(
        &s,
        2,
        &["reproduce", "B-mpi-strided", "--scale", "quick", "--dir", &dir, "--json", "--quiet"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut ran: Vec<(String, String)> = vec![];
    for point in doc["points"].as_array().unwrap() {
        let strategy = point["params"]["strategy"].as_str().unwrap().to_string();
        let spec = &point["spec"];
        assert_eq!(
            (spec["mem_len_bytes"].as_u64(), spec["mem_stride_bytes"].as_u64()),
            (Some(8), Some(32)),
            "{spec}"
        );
        ran.push((strategy, spec["engine"].as_str().unwrap().to_string()));
        for rep in point["phases"][0]["repetitions"].as_array().unwrap() {
            assert_eq!(rep["status"], "complete", "{}", point["params"]);
            assert_eq!(rep["total_bytes"], 2 * 64 * 65536, "{}", point["params"]);
        }
    }
    ran.sort();
    ran.dedup();
    let want: Vec<(String, String)> = [
        ("MPI-IO", "mpiio"),
        ("S1A", "vsync"),
        ("S1B", "vsync"),
        ("S2", "vsync"),
        ("S2DT", "vsync"),
        ("S3", "vsync"),
        ("S3DT", "vsync"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(ran, want);
    let f = doc["findings"].as_array().unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(f[0]["a"]["point"], "comptime=0s strategy=S3DT best=f=1MiB of 1", "{}", f[0]);
    assert_eq!(f[0]["b"]["point"], "comptime=0s strategy=S3 best=f=1MiB of 1", "{}", f[0]);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// `iolab reproduce B-mpi-mmap` and `B-mpi-strided-mmap --scale quick` under mpirun: the mmap()
/// halves of Tables 1 and 2 on two ranks, every point through the mmap engine with msync at
/// its (sync size, window) pair, contiguous and 8 of every 32 bytes, every repetition complete
/// with W x iters x bs bytes, and their findings compared at the best pair.
#[test]
fn the_mmap_halves_of_tables_1_and_2_run_on_mpi_ranks() {
    for (preset, strided, strategies, finding) in [
        ("B-mpi-mmap", false, ["S1B", "S3"], ("S1B", "S3")),
        ("B-mpi-strided-mmap", true, ["S1A", "S3DT"], ("S3DT", "S1A")),
    ] {
        let s = Scratch::new();
        let dir = s.path().to_str().unwrap().to_string();
        let o = mpirun(&s, 2, &["reproduce", preset, "--scale", "quick", "--dir", &dir, "--json", "--quiet"]);
        assert!(o.status.success(), "{preset}: {}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut ran = vec![];
        for point in doc["points"].as_array().unwrap() {
            let (params, spec) = (&point["params"], &point["spec"]);
            ran.push(params["strategy"].as_str().unwrap().to_string());
            assert_eq!(spec["engine"], "mmap", "{preset}: {spec}");
            assert_eq!(
                (params["f"].as_str(), params["window"].as_str()),
                (Some("1MiB"), Some("2MiB")),
                "{params}"
            );
            let mem = (spec["mem_len_bytes"].as_u64(), spec["mem_stride_bytes"].as_u64());
            assert_eq!(mem == (Some(8), Some(32)), strided, "{preset}: {spec}");
            for rep in point["phases"][0]["repetitions"].as_array().unwrap() {
                assert_eq!(rep["status"], "complete", "{preset}: {params}");
                assert_eq!(rep["total_bytes"], 2 * 64 * 65536, "{preset}: {params}");
            }
        }
        assert_eq!(ran, strategies, "{preset}");
        let f = doc["findings"].as_array().unwrap();
        assert_eq!(f.len(), 1, "{preset}");
        let point =
            |strategy: &str| format!("comptime=100ms strategy={strategy} best=f=1MiB window=2MiB of 1");
        assert_eq!(f[0]["a"]["point"], point(finding.0), "{}", f[0]);
        assert_eq!(f[0]["b"]["point"], point(finding.1), "{}", f[0]);
        assert!(s.leftovers().is_empty(), "{preset}: {:?}", s.leftovers());
    }
}
