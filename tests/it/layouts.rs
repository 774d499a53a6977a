//! Layouts and access patterns on real files: striped files read back by content, file sets
//! split among phases with their own workers, round-robin and strided orders.

use std::path::{Path, PathBuf};

use crate::util::*;

/// The logical file rebuilt from its components with the striping formula, computed here
/// independently of iolab: component t byte c is logical byte (c / U) x U x T + t x U + c mod U.
fn unstripe(components: &[Vec<u8>], unit: usize) -> Vec<u8> {
    let t_count = components.len();
    let len: usize = components.iter().map(Vec::len).sum();
    let mut out = vec![0u8; len];
    let mut filled = vec![false; len];
    for (t, comp) in components.iter().enumerate() {
        for (c, &b) in comp.iter().enumerate() {
            let o = (c / unit) * unit * t_count + t * unit + c % unit;
            assert!(!filled[o], "logical byte {o} stored twice");
            filled[o] = true;
            out[o] = b;
        }
    }
    assert!(filled.iter().all(|&f| f), "a logical byte is stored nowhere");
    out
}

fn targets(s: &Scratch, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = s.path().join(format!("t{i}"));
            std::fs::create_dir_all(&d).unwrap();
            d
        })
        .collect()
}

fn join(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.to_str().unwrap()).collect::<Vec<_>>().join(",")
}

fn run_in(s: &Scratch, args: &[&str]) -> Value {
    let mut all = vec!["run", "--json", "--quiet", "--no-store", "--reps", "1", "--keep"];
    all.extend_from_slice(args);
    let out = s.iolab(&all);
    assert!(out.status.success(), "iolab {args:?} failed: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn run_id(doc: &Value) -> String {
    phases(doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string()
}

fn read(dir: &Path, run_id: &str, name: &str) -> Vec<u8> {
    std::fs::read(work_dir(dir, run_id).join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One logical file striped over T = 1..4 targets, for several units and block sizes both
/// smaller and larger than the unit, with partial last stripes: every component holds exactly
/// the bytes the formula puts there, so the logical file reads back byte for byte.
#[test]
fn striped_file_components_hold_the_right_bytes() {
    for t_count in 1..=4usize {
        for unit in [4096usize, 16384] {
            for bs in [unit / 4, unit * 2] {
                let s = Scratch::new();
                let dirs = targets(&s, t_count);
                // 7 blocks per worker, 2 workers: the last stripe is partial for most T.
                let size = 7 * bs;
                let doc = run_in(
                    &s,
                    &[
                        "--layout",
                        "striped",
                        "--targets",
                        &join(&dirs),
                        "--stripe-unit",
                        &unit.to_string(),
                        "--bs",
                        &bs.to_string(),
                        "--size",
                        &size.to_string(),
                        "--workers",
                        "2",
                        "--seed",
                        "9",
                        "--op",
                        "write,read",
                    ],
                );
                let id = run_id(&doc);
                let comps: Vec<Vec<u8>> =
                    (0..t_count).map(|t| read(&dirs[t], &id, &format!("striped.s{t:02}.dat"))).collect();
                let logical = unstripe(&comps, unit);
                let want = expected_file(9, 0, 2 * size as u64, bs.min(unit) as u64);
                assert!(logical == want, "T={t_count} unit={unit} bs={bs}: logical file differs");
                let read_rep = &phases(&doc)[1]["repetitions"][0];
                assert_eq!(read_rep["total_bytes"], 2 * size as u64);
                let pieces = (bs / bs.min(unit)) as u64;
                assert_eq!(read_rep["ops"], 2 * 7 * pieces, "T={t_count} unit={unit} bs={bs}");
            }
        }
    }
}

/// One disk as several logical targets: the same dir three times.
#[test]
fn a_dir_may_repeat_as_several_targets() {
    let s = Scratch::new();
    let d = targets(&s, 1).remove(0);
    let dirs = vec![d.clone(), d.clone(), d.clone()];
    let doc = run_in(
        &s,
        &[
            "--layout",
            "striped",
            "--targets",
            &join(&dirs),
            "--stripe-unit",
            "4KiB",
            "--bs",
            "8KiB",
            "--size",
            "96KiB",
            "--op",
            "write",
        ],
    );
    let id = run_id(&doc);
    let comps: Vec<Vec<u8>> = (0..3).map(|t| read(&d, &id, &format!("striped.s{t:02}.dat"))).collect();
    assert!(unstripe(&comps, 4096) == expected_file(1, 0, 96 << 10, 4096));
    // Without --keep, the shared work directory goes away.
    let s2 = Scratch::new();
    let d2 = targets(&s2, 1).remove(0);
    let out = s2.iolab(&[
        "run",
        "--quiet",
        "--no-store",
        "--reps",
        "2",
        "--layout",
        "striped",
        "--targets",
        &join(&[d2.clone(), d2.clone()]),
        "--stripe-unit",
        "4KiB",
        "--size",
        "64KiB",
        "--bs",
        "4KiB",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&d2).unwrap().count(), 0, "work directory left behind");
}

/// C7C: each worker's own file striped over the targets; C7B: file-per-worker spread over
/// the targets (file w on target w mod T).
#[test]
fn per_worker_files_striped_or_spread_over_targets() {
    let s = Scratch::new();
    let dirs = targets(&s, 2);
    let doc = run_in(
        &s,
        &[
            "--layout",
            "striped-per-worker",
            "--targets",
            &join(&dirs),
            "--stripe-unit",
            "8KiB",
            "--bs",
            "16KiB",
            "--size",
            "64KiB",
            "--workers",
            "3",
            "--op",
            "write",
        ],
    );
    let id = run_id(&doc);
    for w in 0..3u32 {
        let comps: Vec<Vec<u8>> =
            (0..2).map(|t| read(&dirs[t], &id, &format!("w{w:04}.s{t:02}.dat"))).collect();
        assert!(unstripe(&comps, 8192) == expected_file(1, w, 64 << 10, 8192), "worker {w}");
    }
    let s = Scratch::new();
    let dirs = targets(&s, 2);
    let doc = run_in(&s, &["--targets", &join(&dirs), "--bs", "16KiB", "--size", "64KiB", "--workers", "4"]);
    let id = run_id(&doc);
    for w in 0..4u32 {
        let data = read(&dirs[w as usize % 2], &id, &format!("w{w:04}.dat"));
        assert!(data == expected_file(1, w, 64 << 10, 16384), "file {w}");
    }
}

/// R4 and R6: a file set written by k workers and read by n, in the same run.
#[test]
fn phases_with_their_own_workers_share_one_file_set() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let doc = run_in(
        &s,
        &[
            "--dir",
            &dir,
            "--files",
            "4",
            "--bs",
            "16KiB",
            "--size",
            "128KiB",
            "--op",
            "write:workers=4,read:workers=1,read:workers=2:round_robin=2,read:workers=4",
        ],
    );
    let ph = phases(&doc);
    let workers: Vec<usize> =
        ph.iter().map(|p| p["repetitions"][0]["workers"].as_array().unwrap().len()).collect();
    assert_eq!(workers, [4, 1, 2, 4]);
    for p in ph {
        assert_eq!(p["repetitions"][0]["total_bytes"], 4 * 128 * 1024, "{}", p["name"]);
    }
    assert_eq!(ph[1]["repetitions"][0]["workers"][0]["bytes"], 4 * 128 * 1024);
    let id = run_id(&doc);
    for f in 0..4u32 {
        assert!(read(s.path(), &id, &format!("w{f:04}.dat")) == expected_file(1, f, 128 << 10, 16384));
    }
}

/// R5: one worker writes N files round-robin; every file ends up whole and right.
#[test]
fn files_per_worker_writes_every_file_whole() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let doc = run_in(
        &s,
        &[
            "--dir",
            &dir,
            "--files-per-worker",
            "3",
            "--workers",
            "2",
            "--bs",
            "4KiB",
            "--size",
            "32KiB",
            "--op",
            "write",
        ],
    );
    let id = run_id(&doc);
    assert_eq!(doc["spec"]["files"], 6);
    assert_eq!(doc["spec"]["round_robin"], 3);
    for f in 0..6u32 {
        assert!(read(s.path(), &id, &format!("w{f:04}.dat")) == expected_file(1, f, 32 << 10, 4096));
    }
}

#[test]
fn shared_strided_writes_the_whole_file() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let doc = run_in(
        &s,
        &[
            "--dir",
            &dir,
            "--layout",
            "shared-strided",
            "--workers",
            "3",
            "--bs",
            "4KiB",
            "--size",
            "20KiB",
            "--op",
            "write,read:layout=shared:workers=2",
        ],
    );
    let id = run_id(&doc);
    assert!(read(s.path(), &id, "shared.dat") == expected_file(1, 0, 60 << 10, 4096));
    assert_eq!(phases(&doc)[1]["repetitions"][0]["total_bytes"], 60 << 10);
}

/// Impossible combinations exit 2 naming the field, and write nothing.
#[test]
fn layout_errors_exit_2_and_write_nothing() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--files", "2", "--op", "write:workers=3"], "ops", "every worker needs its own file"),
        (&["--workers", "4", "--files", "2"], "files", "every worker needs its own file"),
        (&["--layout", "shared", "--files", "4"], "files", "one shared file"),
        (
            &["--layout", "striped", "--stripe-unit", "12KiB", "--bs", "16KiB", "--size", "64KiB"],
            "stripe_unit",
            "multiple or a divisor",
        ),
        (&["--layout", "striped", "--stripe-count", "3"], "stripe_count", "only 1 target"),
        (&["--launcher", "fork"], "launcher", "thread, process or mpi"),
        (&["--start", "later"], "start", "barrier or free"),
    ];
    for (args, field, why) in cases {
        let mut all = vec!["run", "--dir", &dir];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("{field} = `")), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
        assert!(s.leftovers().is_empty(), "{args:?} left {:?}", s.leftovers());
    }
}

/// The table shows what a phase paid besides its data ops, the periods of traced phases and
/// the file layout after writing; CSV carries open and close times per worker.
#[test]
fn table_shows_costs_periods_and_layout() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let out = s.iolab(&[
        "run",
        "--dir",
        &dir,
        "--files",
        "2",
        "--op",
        "write,read:cold",
        "--prealloc",
        "--trace",
        "--size",
        "1MiB",
        "--bs",
        "16KiB",
        "--reps",
        "2",
        "--no-store",
        "--quiet",
        "--explain",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("file-per-worker (2 files)"), "{t}");
    assert!(t.contains("traced"), "{t}");
    let costs = t.lines().find(|l| l.starts_with("phase") && l.contains("open")).expect("costs table");
    assert!(costs.contains("close") && costs.contains("commit") && costs.contains("prealloc"), "{costs}");
    let write = t.lines().skip_while(|l| !l.contains("prealloc")).find(|l| l.starts_with("write")).unwrap();
    assert_eq!(write.split_whitespace().filter(|w| *w == "-").count(), 0, "write pays all four: {write}");
    assert!(t.contains("periods in per-op latency"), "{t}");
    assert!(t.contains("read:cold: "), "{t}");
    assert!(t.contains("file layout after writing"), "{t}");
    assert!(t.contains("write: 2 files, "), "{t}");
    let out = s.iolab(&[
        "run",
        "--dir",
        &dir,
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--no-store",
        "--csv",
        "--op",
        "write",
    ]);
    let mut rdr = csv::Reader::from_reader(&out.stdout[..]);
    let h = rdr.headers().unwrap().clone();
    let open = h.iter().position(|c| c == "worker_open_ns").unwrap();
    let row = rdr.records().next().unwrap().unwrap();
    assert!(row[open].parse::<u64>().unwrap() > 0);
}

/// Reading first lays a striped file out through the same data path a write uses.
#[test]
fn a_striped_file_read_first_is_laid_out_through_the_stripe() {
    let s = Scratch::new();
    let dirs = targets(&s, 3);
    let doc = run_in(
        &s,
        &[
            "--layout",
            "striped",
            "--targets",
            &join(&dirs),
            "--stripe-unit",
            "8KiB",
            "--bs",
            "16KiB",
            "--size",
            "80KiB",
            "--workers",
            "2",
            "--op",
            "read:cold",
        ],
    );
    let id = run_id(&doc);
    let comps: Vec<Vec<u8>> = (0..3).map(|t| read(&dirs[t], &id, &format!("striped.s{t:02}.dat"))).collect();
    assert!(unstripe(&comps, 8192) == expected_file(1, 0, 160 << 10, 8192));
    assert_eq!(phases(&doc)[0]["repetitions"][0]["total_bytes"], 160 << 10);
}

/// The spec line says what each phase moved: with 8 files, 4 writers write 2 files each and 2
/// readers read 4 each (512 KiB either way, not "1 worker x 64 KiB"), and those are the bytes
/// the stored result counts.
#[test]
fn the_spec_line_states_the_bytes_each_phase_moves() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let args = [
        "run",
        "--dir",
        &dir,
        "--quiet",
        "--explain",
        "--reps",
        "1",
        "--files",
        "8",
        "--size",
        "64KiB",
        "--bs",
        "16KiB",
        "--op",
        "write:workers=4,read:workers=2:cold",
    ];
    let out = s.iolab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    let spec = lines.iter().find(|l| l.starts_with("spec ")).unwrap();
    assert!(
        spec.starts_with("spec    psync · per phase below · bs 16 KiB · file-per-worker (8 files)"),
        "{spec}"
    );
    let per = lines.iter().find(|l| l.starts_with("phases ")).unwrap();
    assert_eq!(
        *per,
        "phases  write:workers=4: 4 workers x 2 files x 64 KiB = 512 KiB · read:workers=2:cold: 2 workers x 4 files x 64 KiB = 512 KiB"
    );
    let doc: Value =
        serde_json::from_slice(&s.iolab(&["results", "export", "last", "--json"]).stdout).unwrap();
    for ph in phases(&doc) {
        let rep = &ph["repetitions"][0];
        assert_eq!(rep["total_bytes"], 512 << 10, "{}", ph["name"]);
        let workers = rep["workers"].as_array().unwrap();
        assert_eq!(workers.len(), if ph["name"] == "write:workers=4" { 4 } else { 2 });
        assert!(workers.iter().all(|w| w["bytes"] == (512 << 10) / workers.len() as u64));
    }
}

/// `pieces = parallel` issues each block's pieces together, one io_uring batch per block: the
/// components hold exactly the bytes serial pieces leave (and the formula puts there), every
/// piece is read back and checked, each block is one timed op, and each block costs one
/// io_uring_enter, with no pread or pwrite.
#[test]
fn parallel_pieces_leave_the_bytes_serial_pieces_leave() {
    for t_count in 2..=4usize {
        for bs in [8192usize, 16384] {
            let unit = 4096;
            let size = 5 * bs;
            let mut comps_by_mode = vec![];
            for mode in ["serial", "parallel"] {
                let s = Scratch::new();
                let dirs = targets(&s, t_count);
                let doc = run_in(
                    &s,
                    &[
                        "--layout",
                        "striped",
                        "--targets",
                        &join(&dirs),
                        "--stripe-unit",
                        "4KiB",
                        "--bs",
                        &bs.to_string(),
                        "--size",
                        &size.to_string(),
                        "--workers",
                        "2",
                        "--seed",
                        "5",
                        "--op",
                        "write,read:cold",
                        "--pieces",
                        mode,
                    ],
                );
                let id = run_id(&doc);
                let comps: Vec<Vec<u8>> =
                    (0..t_count).map(|t| read(&dirs[t], &id, &format!("striped.s{t:02}.dat"))).collect();
                let want = expected_file(5, 0, 2 * size as u64, unit as u64);
                assert!(unstripe(&comps, unit) == want, "{mode} T={t_count} bs={bs}: logical file differs");
                let (pieces, blocks) = ((bs / unit) as u64, 5u64);
                for ph in phases(&doc) {
                    for w in ph["repetitions"][0]["workers"].as_array().unwrap() {
                        let calls = &w["calls"];
                        let data_call = if ph["op"] == "write" { "pwrite" } else { "pread" };
                        if mode == "serial" {
                            assert_eq!(w["ops"], blocks * pieces, "{mode} T={t_count} bs={bs}");
                            assert_eq!(calls[data_call], blocks * pieces, "{calls}");
                            assert!(calls.get("io_uring_enter").is_none(), "{calls}");
                        } else {
                            assert_eq!(w["ops"], blocks, "{mode} T={t_count} bs={bs}");
                            assert_eq!(calls["io_uring_enter"], blocks, "{calls}");
                            assert!(calls.get(data_call).is_none(), "{calls}");
                            assert_eq!(w["max_inflight"], pieces);
                        }
                    }
                }
                comps_by_mode.push(comps);
            }
            assert!(comps_by_mode[0] == comps_by_mode[1], "T={t_count} bs={bs}: serial and parallel differ");
        }
    }
}

/// A phase's `files=N` works on the first N files of the set: Russell's n readers each read one
/// of n files (R4), not n readers over all eight.
#[test]
fn a_phase_may_work_on_the_first_files_only() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--files",
        "8",
        "--size",
        "1MiB",
        "--bs",
        "256KiB",
        "--op",
        "write:workers=4,read:workers=2:files=2:cold",
        "--reps",
        "1",
    ]);
    let read = &phases(&doc)[1]["repetitions"][0];
    assert_eq!(phases(&doc)[0]["repetitions"][0]["total_bytes"], 8 << 20);
    assert_eq!(read["total_bytes"], 2 << 20, "two files of 1 MiB");
    let w = read["workers"].as_array().unwrap();
    assert_eq!(w.len(), 2);
    assert!(w.iter().all(|w| w["bytes"] == 1 << 20 && w["calls"]["pread"] == 4), "{w:?}");
    let dir = s.path().to_str().unwrap().to_string();
    for (ops, why) in [("write,read:files=9", "files=9"), ("write,read:workers=3:files=2", "3 workers")] {
        let out = s.iolab(&["run", "--dir", &dir, "--files", "8", "--op", ops, "--no-store"]);
        assert_eq!(out.status.code(), Some(2), "{ops}: {}", stderr(&out));
        assert!(stderr(&out).contains("ops = `"), "{ops}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{ops}: {}", stderr(&out));
    }
}
