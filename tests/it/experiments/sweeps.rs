//! Sweeps, run order, warm-ups and environment control, on real files through the binary.

use iolab::experiment::schedule::Interleave;
use iolab::experiment::schedule::{Slot, schedule};

use crate::util::*;

/// Run ids in the order the store received them (each run is stored as soon as it ends).
fn stored_run_order(s: &Scratch) -> Vec<String> {
    let conn = rusqlite::Connection::open(s.db()).unwrap();
    let mut stmt = conn.prepare("SELECT run_id FROM runs ORDER BY rowid").unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().map(|r| r.unwrap()).collect()
}

/// The run id the JSON gives a slot of the schedule.
fn run_id_of(doc: &Value, slot: &Slot) -> String {
    let ph = &doc["points"][slot.point]["phases"][0];
    let list = if slot.warmup { &ph["warmups"] } else { &ph["repetitions"] };
    let r = list.as_array().unwrap().iter().find(|r| r["rep"] == slot.rep).unwrap();
    r["run_id"].as_str().unwrap().to_string()
}

/// A 2 x 2 sweep: every point runs with its own spec, the right bytes and ops, its warm-up
/// kept apart from its statistics, in round-robin order.
#[test]
fn sweep_points_run_with_their_own_spec_in_round_robin_order() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write,read:cold",
        "--size",
        "1MiB",
        "--sweep",
        "bs=64KiB,256KiB",
        "--sweep",
        "workers=1..2",
        "--reps",
        "2",
        "--warmup",
        "1",
    ]);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let want = [
        ("64KiB", "1", 65536u64, 1u64),
        ("64KiB", "2", 65536, 2),
        ("256KiB", "1", 262144, 1),
        ("256KiB", "2", 262144, 2),
    ];
    for (p, (bs, w, bs_bytes, workers)) in points.iter().zip(want) {
        assert_eq!(p["params"]["bs"], bs);
        assert_eq!(p["params"]["workers"], w);
        assert_eq!(p["spec"]["bs_bytes"], bs_bytes);
        assert_eq!(p["spec"]["workers"], workers);
        for ph in p["phases"].as_array().unwrap() {
            let reps = ph["repetitions"].as_array().unwrap();
            assert_eq!(reps.len(), 2);
            for (i, r) in reps.iter().enumerate() {
                assert_eq!(r["status"], "complete");
                assert_eq!(r["rep"], i as u64);
                assert_eq!(r["total_bytes"], workers << 20);
                assert_eq!(r["ops"], workers * (1 << 20) / bs_bytes);
            }
            let warm = ph["warmups"].as_array().unwrap();
            assert_eq!(warm.len(), 1);
            assert_eq!(warm[0]["total_bytes"], workers << 20);
            assert_eq!(ph["summary"]["n"], 2, "warm-ups are not in the statistics");
        }
    }
    assert_eq!(doc["design"]["axes"][0]["key"], "bs");
    assert_eq!(doc["design"]["axes"][1]["values"], serde_json::json!(["1", "2"]));
    let expect: Vec<String> =
        schedule(&[2; 4], &[1; 4], Interleave::RoundRobin).iter().map(|sl| run_id_of(&doc, sl)).collect();
    assert_eq!(expect.len(), 12);
    assert_eq!(stored_run_order(&s), expect, "runs ran in round-robin order, warm-ups first");

    // The table shows one row per point and phase, the warm-up column and the headline mark.
    let out = s.iolab(&["results", "show", "last", "--explain"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("sweep   bs = 64KiB,256KiB × workers = 1..2 · 4 points"), "{table}");
    assert!(table.contains("mean*") && table.contains("warm-up"), "{table}");
    // Two runs: a 10% trim drops none, so the column is left out and the legend says why.
    assert!(!table.contains(" trim-mean ") && table.contains("trim-mean not shown"), "{table}");
    assert_eq!(table.lines().filter(|l| l.starts_with("256KiB")).count(), 4, "{table}");

    // The store gives back exactly what the run printed, sweep, warm-ups and env included.
    let back: Value =
        serde_json::from_slice(&s.iolab(&["results", "show", "last", "--json"]).stdout).unwrap();
    assert_eq!(back, doc);

    // CSV export: one row per worker per run, warm-ups marked, the run's facts as columns.
    let csv = s.iolab(&["results", "export", "last", "--csv"]);
    let mut rdr = csv::Reader::from_reader(&csv.stdout[..]);
    let head = rdr.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    // 2 phases x 3 runs (2 + 1 warm-up) x (1 + 2 + 1 + 2 workers)
    assert_eq!(rows.len(), 2 * 3 * 6);
    assert_eq!(rows.iter().filter(|r| &r[col("warmup")] == "true").count(), 2 * 6);
    assert!(rows.iter().all(|r| r[col("params")].starts_with("bs=")));
    assert!(rows.iter().all(|r| r[col("load_avg_1m_end")].parse::<f64>().unwrap() >= 0.0));
}

/// `--interleave shuffle:SEED` runs the points' repetitions in the seeded order.
#[test]
fn shuffled_runs_follow_the_seeded_schedule() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write",
        "--size",
        "256KiB",
        "--bs",
        "64KiB",
        "--sweep",
        "seed=1..3",
        "--reps",
        "3",
        "--interleave",
        "shuffle:5",
    ]);
    assert_eq!(doc["spec"]["interleave"], "shuffle:5");
    let slots = schedule(&[3; 3], &[0; 3], Interleave::Shuffle(5));
    let rr = schedule(&[3; 3], &[0; 3], Interleave::RoundRobin);
    assert_ne!(slots, rr, "seed 5 must not give the round-robin order");
    let expect: Vec<String> = slots.iter().map(|sl| run_id_of(&doc, sl)).collect();
    assert_eq!(stored_run_order(&s), expect);
}

/// Zipped axes and a variable from a TOML file.
#[test]
fn toml_sweeps_zip_axes_and_substitute_variables() {
    let s = Scratch::new();
    let file = s.path().join("exp.toml");
    std::fs::write(
        &file,
        "ops = [\"write\", \"read:{mode}\"]\nbs = \"64KiB\"\nreps = 1\n\n[sweep]\nworkers = [1, 2]\nsize = [\"512KiB\", \"256KiB\"]\nmode = \"cold,warm\"\nzip = [\"workers\", \"size\"]\n",
    )
    .unwrap();
    let doc = s.run_json(&[file.to_str().unwrap()]);
    let got: Vec<(String, String, String)> = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let ph = p["phases"][1]["name"].as_str().unwrap().to_string();
            (
                p["params"]["workers"].as_str().unwrap().into(),
                p["params"]["size"].as_str().unwrap().into(),
                ph,
            )
        })
        .collect();
    let want = [
        ("1", "512KiB", "read:cold"),
        ("1", "512KiB", "read:warm"),
        ("2", "256KiB", "read:cold"),
        ("2", "256KiB", "read:warm"),
    ];
    assert_eq!(got.len(), 4);
    for (g, w) in got.iter().zip(want) {
        assert_eq!((g.0.as_str(), g.1.as_str(), g.2.as_str()), w);
    }
    // Each point wrote half a MiB in all (workers x size).
    for p in doc["points"].as_array().unwrap() {
        assert_eq!(p["phases"][0]["repetitions"][0]["total_bytes"], 512 * 1024);
    }
    assert_eq!(doc["design"]["zip"], serde_json::json!([["workers", "size"]]));
}

/// Bad axes exit 2, name the axis or the point, and write nothing (no store, no files).
#[test]
fn bad_sweeps_exit_2_naming_the_axis() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "16KiB", "--sweep", "bs=4KiB,3KiB"], "size (at sweep point bs=3KiB)"),
        (&["--sweep", "workers=8..1"], "sweep workers"),
        (&["--sweep", "workers=1..4:x1"], "sweep workers"),
        (&["--sweep", "k=1,2"], "sweep k"),
        (&["--sweep", "workers=1,2", "--zip", "workers,bs"], "sweep bs"),
        (&["--sweep", "workers=1,2", "--sweep", "bs=4KiB", "--zip", "workers,bs"], "sweep workers"),
        (&["--sweep", "interleave=shuffle"], "sweep interleave"),
        (&["--sweep", "size=1MiB,2xRAM", "--prime-memory", "0.95xRAM"], "prime_memory"),
        (&["--settle", "a while"], "settle"),
        (&["--interleave", "sideways"], "interleave"),
    ];
    for (args, field) in cases {
        let mut all = vec!["run", "--quiet", "--dir", dir];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(field), "{args:?} should name `{field}`: {}", stderr(&out));
        assert!(s.leftovers().is_empty(), "{args:?} left {:?}", s.leftovers());
        assert!(!s.db().exists(), "{args:?} created the store");
    }
}

fn device_known(doc: &Value) -> bool {
    doc["host"]["targets"][0]["device"].is_string()
}

/// Settle and priming happen before every run and are stored with it; each phase records the
/// load average and what the target's device did.
#[test]
fn environment_is_controlled_and_recorded_per_run() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write,read:cold",
        "--size",
        "8MiB",
        "--bs",
        "1MiB",
        "--reps",
        "2",
        "--settle",
        "200ms",
        "--prime-memory",
        "32MiB",
    ]);
    assert_eq!(doc["spec"]["settle_ns"], 200_000_000u64);
    assert_eq!(doc["spec"]["prime_memory_bytes"], 32u64 << 20);
    for (i, ph) in phases(&doc).iter().enumerate() {
        for r in ph["repetitions"].as_array().unwrap() {
            let env = &r["env"];
            assert!(env["settle_ns"].as_u64().unwrap() >= 200_000_000, "{env}");
            assert_eq!(env["prime_memory_bytes"], 32u64 << 20);
            assert!(env["prime_ns"].as_u64().unwrap() > 0);
            assert!(env["load_avg_1m_start"].as_f64().unwrap() >= 0.0);
            assert!(env["load_avg_1m_end"].as_f64().unwrap() >= 0.0);
            if !device_known(&doc) {
                eprintln!("skip: the scratch directory has no block device, so no device I/O to check");
                continue;
            }
            let dev = &env["devices"][0];
            assert_eq!(
                dev["device"].as_str().unwrap(),
                doc["host"]["targets"][0]["device"].as_str().unwrap().trim_start_matches("/dev/")
            );
            if i == 0 {
                // The write commits at the end: all 8 MiB reached the device during the phase.
                assert!(dev["write_bytes"].as_u64().unwrap() >= 8 << 20, "write phase: {dev}");
            } else {
                // A verified-cold read must come from the device.
                let resident = r["resident_fraction"].as_f64().unwrap();
                let need = ((8u64 << 20) as f64 * (1.0 - resident) * 0.99) as u64;
                assert!(dev["read_bytes"].as_u64().unwrap() >= need, "read phase: {dev}");
            }
        }
    }
}

/// Other I/O on the device during a phase flags the run noisy: a thread of this test writes
/// and commits 4 MiB at a time into the same file system while iolab reads.
#[test]
fn other_io_on_the_device_flags_runs_noisy() {
    let s = Scratch::new();
    let probe =
        s.run_json(&["--op", "write", "--size", "64KiB", "--bs", "64KiB", "--reps", "1", "--no-store"]);
    if !device_known(&probe) {
        eprintln!("skip: the scratch directory has no block device, so device I/O cannot be compared");
        return;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let noise_path = s.path().join("noise.bin");
    let noise = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(&noise_path).unwrap();
            let block = vec![0x5au8; 4 << 20];
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.write_all(&block).unwrap();
                f.sync_data().unwrap();
                n += 1;
                if n % 8 == 0 {
                    f.set_len(0).unwrap();
                    use std::io::Seek;
                    f.seek(std::io::SeekFrom::Start(0)).unwrap();
                }
            }
            std::fs::remove_file(&noise_path).unwrap();
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let doc =
        s.run_json(&["--op", "read:cold", "--size", "64MiB", "--bs", "64KiB", "--reps", "3", "--no-store"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    noise.join().unwrap();
    let reps = phases(&doc)[0]["repetitions"].as_array().unwrap().clone();
    let noisy: Vec<&Value> = reps
        .iter()
        .filter(|r| r["flags"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().starts_with("noisy:")))
        .collect();
    assert!(
        !noisy.is_empty(),
        "no run flagged noisy: {:?}",
        reps.iter().map(|r| &r["env"]).collect::<Vec<_>>()
    );
    for r in noisy {
        let written: u64 =
            r["env"]["devices"].as_array().unwrap().iter().map(|d| d["write_bytes"].as_u64().unwrap()).sum();
        assert!(written > 1 << 20, "a read phase is noisy because the device wrote: {}", r["env"]);
    }
    assert!(
        phases(&doc)[0]["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().starts_with("noisy:"))
    );
}
