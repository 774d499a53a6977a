//! The core pipeline: layouts, orders, sync policies, O_DIRECT, cache state, outputs and
//! input validation, checked on real files.

use crate::util::*;

/// Writes with each layout and worker count, keeps the files, and compares every byte with
/// what the plan says must be there.
#[test]
fn layouts_write_exact_sizes_and_contents() {
    for layout in ["file-per-worker", "shared"] {
        for workers in [1u32, 3, 4] {
            for order in ["seq", "reverse", "random"] {
                let s = Scratch::new();
                let doc = s.run_json(&[
                    "--op",
                    "write",
                    "--layout",
                    layout,
                    "--workers",
                    &workers.to_string(),
                    "--size",
                    "96KiB",
                    "--bs",
                    "8KiB",
                    "--order",
                    order,
                    "--seed",
                    "77",
                    "--reps",
                    "1",
                    "--keep",
                    "--no-store",
                ]);
                let rep = &phases(&doc)[0]["repetitions"][0];
                assert_eq!(rep["total_bytes"], workers as u64 * 96 * 1024);
                assert_eq!(rep["ops"], workers as u64 * 12);
                let wd = work_dir(s.path(), rep["run_id"].as_str().unwrap());
                let files: Vec<(String, u32, u64)> = if layout == "shared" {
                    vec![("shared.dat".into(), 0, workers as u64 * 96 * 1024)]
                } else {
                    (0..workers).map(|w| (format!("w{w:04}.dat"), w, 96 * 1024)).collect()
                };
                for (name, gid, size) in files {
                    let data = std::fs::read(wd.join(&name)).unwrap();
                    assert_eq!(data.len() as u64, size, "{layout} {workers} {order} {name}");
                    assert!(
                        data == expected_file(77, gid, size, 8192),
                        "{layout} {workers} {order} {name}: contents differ from the plan"
                    );
                }
            }
        }
    }
}

/// Reverse and random orders visit every block exactly once: each block's stamp names its
/// own offset, and the op count equals the block count.
#[test]
fn orders_touch_every_block_once() {
    for order in ["reverse", "random"] {
        let s = Scratch::new();
        let doc = s.run_json(&[
            "--op",
            "write",
            "--order",
            order,
            "--size",
            "1MiB",
            "--bs",
            "4KiB",
            "--reps",
            "1",
            "--keep",
            "--no-store",
        ]);
        let rep = &phases(&doc)[0]["repetitions"][0];
        assert_eq!(rep["workers"][0]["ops"], 256);
        let data =
            std::fs::read(work_dir(s.path(), rep["run_id"].as_str().unwrap()).join("w0000.dat")).unwrap();
        let salt = iolab::plan::fill::file_salt(1, 0);
        let mut seen = vec![false; 256];
        for (i, block) in data.chunks(4096).enumerate() {
            let off = u64::from_le_bytes(block[..8].try_into().unwrap()) ^ salt;
            assert_eq!(off, i as u64 * 4096, "{order}: block {i} carries offset {off}");
            assert!(!std::mem::replace(&mut seen[i], true));
        }
        assert!(seen.iter().all(|&b| b));
    }
}

/// Each sync policy issues exactly the commits it should, per worker.
#[test]
fn sync_policies_issue_the_right_number_of_commits() {
    // 1 MiB per worker in 16 ops of 64 KiB.
    for (sync, call, want) in [
        ("none", "fdatasync", 0),
        ("end", "fdatasync", 1),
        ("end", "fsync", 1),
        ("each", "fsync", 16),
        ("every:256KiB", "fdatasync", 4),
        ("every:200KiB", "fdatasync", 4),
        ("every:1000KiB", "fdatasync", 1),
        ("every:384KiB", "fdatasync", 3),
    ] {
        let s = Scratch::new();
        let doc = s.run_json(&[
            "--op",
            "write,rewrite,read",
            "--workers",
            "2",
            "--size",
            "1MiB",
            "--bs",
            "64KiB",
            "--sync",
            sync,
            "--sync-call",
            call,
            "--reps",
            "1",
            "--no-store",
        ]);
        for ph in phases(&doc) {
            let expect = if ph["name"] == "read" { 0 } else { want };
            for w in ph["repetitions"][0]["workers"].as_array().unwrap() {
                assert_eq!(w["sync_calls"], expect, "sync {sync}, phase {}", ph["name"]);
                if expect == 0 {
                    assert_eq!(w["sync_ns"], 0);
                } else {
                    assert!(w["sync_ns"].as_u64().unwrap() > 0);
                    assert!(w["sync_ns"].as_u64().unwrap() <= w["time_ns"].as_u64().unwrap());
                }
            }
        }
    }
}

#[test]
fn direct_io_with_aligned_sizes() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write,read",
        "--direct",
        "--size",
        "1MiB",
        "--bs",
        "4KiB",
        "--reps",
        "1",
        "--keep",
        "--no-store",
    ]);
    let rep = &phases(&doc)[1]["repetitions"][0];
    assert_eq!(rep["total_bytes"], 1 << 20);
    assert!(phases(&doc)[1]["cache"]["method"].as_str().unwrap().contains("O_DIRECT"));
    let data = std::fs::read(work_dir(s.path(), rep["run_id"].as_str().unwrap()).join("w0000.dat")).unwrap();
    assert!(data == expected_file(1, 0, 1 << 20, 4096));
}

#[test]
fn direct_io_refuses_unaligned_block_sizes() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["run", "--direct", "--bs", "1000", "--size", "1MB", "--dir", dir]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bs = `1000`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("O_DIRECT"));
    assert!(s.leftovers().is_empty());
}

#[test]
fn cold_and_warm_phases_are_verified() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write,read:cold,read:warm,read:asis",
        "--size",
        "16MiB",
        "--bs",
        "1MiB",
        "--reps",
        "2",
        "--no-store",
    ]);
    let ph = phases(&doc);
    for r in ph[1]["repetitions"].as_array().unwrap() {
        assert!(r["resident_fraction"].as_f64().unwrap() < 0.05, "cold: {r}");
    }
    for r in ph[2]["repetitions"].as_array().unwrap() {
        assert!(r["resident_fraction"].as_f64().unwrap() > 0.95, "warm: {r}");
    }
    // No cache flag (a `noisy` flag is about the device, and other I/O on this machine may
    // raise it at any time).
    assert!(ph[1]["flags"].as_array().unwrap().iter().all(|f| f.as_str().unwrap().starts_with("noisy:")));
    assert_eq!(ph[3]["flags"][0], "cache not controlled");
    assert_eq!(ph[1]["cache"]["policy"], "cold");
}

#[test]
fn json_carries_schema_version_units_and_raw_repetitions() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write,read",
        "--workers",
        "2",
        "--size",
        "2MiB",
        "--bs",
        "256KiB",
        "--reps",
        "3",
    ]);
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["spec"]["size_bytes"], 2 << 20);
    assert_eq!(doc["spec"]["bs_bytes"], 256 << 10);
    assert_eq!(doc["points"].as_array().unwrap().len(), 1);
    assert!(doc["points"][0]["params"].as_object().unwrap().is_empty());
    let ph = &phases(&doc)[0];
    assert_eq!(ph["repetitions"].as_array().unwrap().len(), 3);
    let sum = &ph["summary"];
    assert_eq!(sum["of"], "max_sar_bytes_per_s");
    assert_eq!(sum["n"], 3);
    for key in ["mean", "sd", "min", "median", "max", "two_sigma_mean", "trimmed_mean_10"] {
        assert!(sum[key].as_f64().unwrap() > 0.0, "{key}");
    }
    let rep = &ph["repetitions"][0];
    for key in [
        "total_bytes",
        "ops",
        "time_ns",
        "max_sar_bytes_per_s",
        "min_sar_bytes_per_s",
        "avg_individual_bytes_per_s",
    ] {
        assert!(rep.get(key).is_some(), "{key}");
    }
    let w = &rep["workers"][0];
    for key in ["worker", "bytes", "ops", "time_ns", "sync_ns", "bytes_per_s"] {
        assert!(w.get(key).is_some(), "{key}");
    }
    for key in ["p50", "p90", "p99", "p999", "max"] {
        assert!(w["latency_ns"][key].as_u64().unwrap() > 0, "{key}");
    }
    // max_SAR is the sum of worker rates; min_SAR is bytes over the slowest time.
    let ws = rep["workers"].as_array().unwrap();
    let sum_r: f64 = ws.iter().map(|w| w["bytes_per_s"].as_f64().unwrap()).sum();
    assert!((sum_r - rep["max_sar_bytes_per_s"].as_f64().unwrap()).abs() < 1.0);
    let tmax = ws.iter().map(|w| w["time_ns"].as_u64().unwrap()).max().unwrap();
    let min_sar = rep["total_bytes"].as_f64().unwrap() * 1e9 / tmax as f64;
    assert!((min_sar - rep["min_sar_bytes_per_s"].as_f64().unwrap()).abs() < 1.0);
    assert_eq!(rep["time_ns"].as_u64().unwrap(), tmax);
}

#[test]
fn results_round_trip_through_the_store() {
    let s = Scratch::new();
    let doc = s.run_json(&["--op", "write,read", "--size", "1MiB", "--bs", "64KiB", "--reps", "2"]);
    let id = doc["experiment_id"].as_str().unwrap();
    let out = s.iolab(&["results", "show", &id[..12], "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let back: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(back, doc, "the store gives back exactly what the run printed");
    let list = String::from_utf8(s.iolab(&["results", "list"]).stdout).unwrap();
    assert!(list.contains(id));
    let csv = String::from_utf8(s.iolab(&["results", "export", "last", "--csv"]).stdout).unwrap();
    // header + 2 phases x 2 reps x 1 worker
    assert_eq!(csv.lines().count(), 5);
    assert!(csv.lines().next().unwrap().contains("max_sar_bytes_per_s"));
}

#[test]
fn csv_and_table_outputs() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&[
        "run",
        "--engine",
        "null",
        "--workers",
        "3",
        "--size",
        "1MiB",
        "--bs",
        "4KiB",
        "--reps",
        "2",
        "--csv",
        "--no-store",
        "--dir",
        dir,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    // 3 phases x 2 reps x 3 workers
    assert_eq!(rows.len(), 18);
    assert!(rows.iter().all(|r| &r[17] == "1048576"), "worker_bytes");
    let out =
        s.iolab(&["run", "--engine", "null", "--size", "1MiB", "--reps", "1", "--no-store", "--dir", dir]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("read:warm"), "{table}");
    assert!(table.contains("no I/O (null engine)"));
    assert!(s.leftovers().is_empty(), "the null engine creates nothing");
}

/// Every bad input exits 2, names the field, and writes nothing (not even the store).
#[test]
fn bad_inputs_exit_2_naming_the_field() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let spec_file = s.path().join("bad.toml");
    std::fs::write(&spec_file, "size = \"1MiB\"\nblocksize = \"4k\"\n").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "0"], "size"),
        (&["--size", "-1MiB"], "size"),
        (&["--bs", "0"], "bs"),
        (&["--bs", "2MiB", "--size", "1MiB"], "bs"),
        (&["--bs", "3KiB", "--size", "10KiB"], "size"),
        (&["--engine", "warp"], "engine"),
        (&["--layout", "zigzag"], "layout"),
        (&["--order", "sideways"], "order"),
        (&["--workers", "0"], "workers"),
        (&["--sync", "sometimes"], "sync"),
        (&["--sync-call", "msync"], "sync_call"),
        (&["--open-sync", "maybe"], "open_sync"),
        (&["--cache", "lukewarm"], "cache"),
        (&["--reps", "0"], "reps"),
        (&["--op", "write,scribble"], "ops"),
        (&["--direct", "--bs", "1000", "--size", "1MB"], "bs"),
        (&["--dir", "/no/such/dir"], "dirs"),
        (&["--set", "blocksize=4k"], "blocksize"),
    ];
    for (args, field) in cases {
        let mut all = vec!["run", "--dir", dir];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("{field} = `")), "{args:?}: {}", stderr(&out));
        assert!(s.leftovers().iter().all(|n| n == "bad.toml"), "{args:?} left {:?}", s.leftovers());
        assert!(!s.db().exists(), "{args:?} created the store");
    }
    let out = s.iolab(&["run", spec_file.to_str().unwrap(), "--dir", dir]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("blocksize = `"), "{}", stderr(&out));
    let ro = s.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let file_as_dir = s.path().join("bad.toml");
    let out = s.iolab(&["run", "--dir", file_as_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"));
}

#[test]
fn plan_touches_nothing_and_shows_the_layout() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&[
        "plan",
        "--workers",
        "3",
        "--layout",
        "shared",
        "--size",
        "1MiB",
        "--bs",
        "256KiB",
        "--dir",
        dir,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p["files"][0]["size_bytes"], 3 << 20);
    assert_eq!(p["disk_bytes_total"], 3 << 20);
    assert_eq!(p["phases"][0]["workers"][1]["first_ops"][0][1], 1 << 20);
    // The estimate: no store yet, so every phase run at the assumed rate: 5 runs of 3 phases
    // of 3 MiB each.
    let e = &p["estimate"];
    assert_eq!((e["runs"].as_u64(), e["points"].as_u64()), (Some(5), Some(1)), "{e}");
    assert_eq!(e["disk_bytes"], 3 << 20);
    assert_eq!(
        (e["phase_runs_at_measured_rates"].as_u64(), e["phase_runs_at_assumed_rate"].as_u64()),
        (Some(0), Some(15))
    );
    let want = 15.0 * (3 << 20) as f64 / e["assumed_bytes_per_s"].as_f64().unwrap();
    assert!((e["time_s"].as_f64().unwrap() - want).abs() < 1e-9, "{e}");
    assert!(s.leftovers().is_empty());
    assert!(!s.db().exists());
}

#[test]
fn plan_calibrates_the_engines_the_store_has_not_measured() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let plan = |size: &str, extra: &[&str]| {
        let mut args =
            vec!["plan", "--size", size, "--op", "write,read:cold", "--reps", "2", "--dir", dir, "--json"];
        args.extend_from_slice(extra);
        let out = s.iolab(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["estimate"].clone()
    };
    // 32 MiB phases; a 2 MiB calibration is of another size class, so it stands in for both
    // directions: 2 repetitions x 2 phases at its rates.
    let e = plan("32MiB", &["--calibrate=2MiB"]);
    assert_eq!(e["phase_runs_at_calibrated_rates"], 4, "{e}");
    assert_eq!(
        (e["phase_runs_at_measured_rates"].as_u64(), e["phase_runs_at_assumed_rate"].as_u64()),
        (Some(0), Some(0))
    );
    let cal = e["calibrations"].as_array().unwrap();
    assert_eq!(cal.len(), 2, "{e}");
    let rate = |d: &str| {
        let c = cal.iter().find(|c| c["direction"] == d).unwrap();
        assert_eq!((c["engine"].as_str(), c["bytes"].as_u64()), (Some("psync"), Some(2 << 20)));
        c["bytes_per_s"].as_f64().unwrap()
    };
    let want = 2.0 * ((32u64 << 20) as f64 / rate("write") + (32u64 << 20) as f64 / rate("read"));
    assert!((e["time_s"].as_f64().unwrap() - want).abs() < 1e-6 * want, "{e} vs {want}");
    // The calibration is an ordinary stored experiment: 2 MiB written and read back cold, its
    // work directory gone.
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    let out = s.iolab(&["results", "show", "last", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["spec"]["name"], "calibration");
    let names: Vec<_> = phases(&doc).iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["write", "read:cold"]);
    for p in phases(&doc) {
        assert_eq!(p["repetitions"][0]["total_bytes"], 2 << 20, "{p}");
    }
    let id = doc["experiment_id"].clone();
    // 2 MiB phases are of the stored class: measured rates, and nothing calibrated again.
    let e = plan("2MiB", &["--calibrate=2MiB"]);
    assert_eq!(
        (e["phase_runs_at_measured_rates"].as_u64(), e["phase_runs_at_calibrated_rates"].as_u64()),
        (Some(4), Some(0)),
        "{e}"
    );
    let out = s.iolab(&["results", "show", "last", "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["experiment_id"], id);
    // A calibration smaller than its one block is refused by name.
    let out = s.iolab(&["plan", "--dir", dir, "--calibrate=1KiB"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("calibrate = `1KiB`"), "{}", stderr(&out));
}

#[test]
fn reading_first_lays_the_files_out() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "read,rewrite",
        "--size",
        "2MiB",
        "--bs",
        "128KiB",
        "--reps",
        "1",
        "--keep",
        "--no-store",
    ]);
    let rep = &phases(&doc)[0]["repetitions"][0];
    assert_eq!(rep["total_bytes"], 2 << 20);
    let data = std::fs::read(work_dir(s.path(), rep["run_id"].as_str().unwrap()).join("w0000.dat")).unwrap();
    assert!(data == expected_file(1, 0, 2 << 20, 128 << 10));
}

#[test]
fn preallocation_is_timed_separately() {
    let s = Scratch::new();
    let doc = s.run_json(&["--op", "write", "--prealloc", "--size", "8MiB", "--reps", "1", "--no-store"]);
    let rep = &phases(&doc)[0]["repetitions"][0];
    assert!(rep["prealloc_ns"].as_u64().unwrap() > 0);
    let doc = s.run_json(&["--op", "write", "--size", "8MiB", "--reps", "1", "--no-store"]);
    assert_eq!(phases(&doc)[0]["repetitions"][0]["prealloc_ns"], 0);
}

#[test]
fn work_directories_are_removed_after_the_run() {
    let s = Scratch::new();
    s.run_json(&["--size", "1MiB", "--reps", "2", "--no-store"]);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

#[test]
fn docs_list_every_parameter() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/spec.md")).unwrap();
    for p in iolab::experiment::PARAMS {
        assert!(doc.contains(&format!("| `{}` |", p.key)), "docs/spec.md does not document `{}`", p.key);
    }
}

#[test]
fn example_specs_resolve() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut n = 0;
    for entry in std::fs::read_dir(examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = s.iolab(&["plan", path.to_str().unwrap(), "--dir", dir, "--size", "1MiB"]);
            assert!(out.status.success(), "{}: {}", path.display(), stderr(&out));
            n += 1;
        }
    }
    assert!(n >= 4);
}

/// On a file system no one else uses (an ext4 image on its own loop device), a run's phases
/// carry no `noisy` flag: the device I/O the flag judges is the run's own, including the
/// metadata writeback of its earlier phases, which is settled before each phase.
#[test]
fn a_run_alone_on_its_device_is_not_noisy() {
    use crate::rig::*;
    if !is_root() {
        crate::skip!("loop devices need root");
    }
    let s = Scratch::new();
    // Inode tables and journal initialised now, not by a kernel thread during the run.
    let mkfs = ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"];
    let fs = match image_fs(s.path(), 1024, &mkfs, "") {
        Ok(f) => f,
        Err(e) => crate::skip!("cannot make a loop-mounted ext4: {e}"),
    };
    let dir = fs.mount.path.to_str().unwrap();
    // The store on the same file system, as with the default run (`--db` in the current
    // directory's file system): its commits are the run's own I/O too.
    let db = fs.mount.path.join("store.db");
    let args = ["run", "--json", "--quiet", "--dir", dir, "--db", db.to_str().unwrap(), "--size", "512MiB"];
    let out = s.iolab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut checked = 0;
    for ph in phases(&doc) {
        for r in ph["repetitions"].as_array().unwrap() {
            let devices = r["env"]["devices"].as_array().unwrap();
            let names: Vec<&str> = devices.iter().map(|d| d["device"].as_str().unwrap()).collect();
            assert!(
                names.len() == 1 && names[0].starts_with("loop"),
                "the run watches its own device: {names:?}"
            );
            let flags: Vec<&str> =
                r["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
            assert!(!flags.iter().any(|f| f.starts_with("noisy")), "{}: {flags:?} ({devices:?})", ph["name"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 15);
}
