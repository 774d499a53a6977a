//! Time-bounded phases on one host: `--runtime` runs every worker for the time, wrapping
//! around its blocks; `--stonewall` stops each at the time, and `--wear-out` then takes every
//! worker to the most ops any had done; a later read reads, per worker, what its writer wrote.
//! Counted per worker (bytes = ops x bs), with threads and with processes, through the store.

use crate::util::*;

const BS: u64 = 4096;

/// One worker's counts: (worker, bytes, ops, time_ns, stonewall_ops).
pub(crate) type Counts = (u64, u64, u64, u64, Option<u64>);

/// Every worker of every complete repetition of `ph`, with bytes = ops x bs checked.
pub(crate) fn workers(ph: &Value) -> Vec<Vec<Counts>> {
    ph["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "complete", "{r}");
            let ws: Vec<_> = r["workers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| {
                    let (bytes, ops) = (w["bytes"].as_u64().unwrap(), w["ops"].as_u64().unwrap());
                    assert_eq!(bytes, ops * BS, "bytes = ops x bs: {w}");
                    let t = w["time_ns"].as_u64().unwrap();
                    (w["worker"].as_u64().unwrap(), bytes, ops, t, w["stonewall_ops"].as_u64())
                })
                .collect();
            let sum: u64 = ws.iter().map(|w| w.1).sum();
            assert_eq!(r["total_bytes"].as_u64().unwrap(), sum, "{r}");
            ws
        })
        .collect()
}

/// 300 ms of 4 KiB ops over 2 blocks per worker: every worker (threads, then processes) goes
/// round its blocks more than once (3 ops in 300 ms, however loaded the machine) and runs at
/// least the time; the kept files stay 8 KiB and their bytes verify (every block read checks
/// its header).
#[test]
fn a_runtime_runs_every_worker_for_the_time_around_its_blocks() {
    for launcher in ["thread", "process"] {
        let s = Scratch::new();
        let doc = s.run_json(&[
            "--launcher",
            launcher,
            "--runtime",
            "300ms",
            "--workers",
            "2",
            "--size",
            "8KiB",
            "--bs",
            "4KiB",
            "--op",
            "write,read:cold",
            "--reps",
            "2",
            "--verify",
            "--keep",
        ]);
        for ph in phases(&doc) {
            assert_eq!(ph["time_bound"], serde_json::json!({"kind": "runtime", "ns": 300_000_000}));
            for rep in workers(ph) {
                assert_eq!(rep.len(), 2);
                for (w, _, ops, t, wall) in rep {
                    assert!(ops > 2, "{launcher} {} worker {w}: {ops} ops did not wrap", ph["name"]);
                    assert!(t >= 300_000_000, "{launcher} worker {w}: {t} ns");
                    assert_eq!(wall, None);
                }
            }
        }
        let kept: Vec<u64> = walk(s.path())
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "dat"))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .collect();
        assert_eq!(kept, [8 << 10; 4], "{launcher}: two repetitions' two files");
    }
}

/// Files under `dir`, recursively.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out.sort();
    out
}

/// A stonewall of 50 ms on 512 MiB per worker in 4 KiB ops (131072 ops, more than any machine
/// does in 50 ms): each worker stops at the stonewall with its own count, and the cold read
/// after it reads, per worker, exactly the ops its writer did (a debug build checks every
/// block's stamps, so a block never written would fail the run). With wear-out, every worker
/// goes on to the most ops any had done at the stonewall. Threads and processes; the store
/// keeps every count.
#[test]
fn a_stonewall_stops_each_worker_and_wear_out_evens_them() {
    for launcher in ["thread", "process"] {
        for wear in [false, true] {
            let s = Scratch::new();
            let mut args = vec![
                "--launcher",
                launcher,
                "--workers",
                "3",
                "--size",
                "512MiB",
                "--bs",
                "4KiB",
                "--op",
                "write:stonewall=50ms,read:cold",
                "--reps",
                "2",
            ];
            if wear {
                args.push("--wear-out");
            }
            let doc = s.run_json(&args);
            let (w, r) = (&phases(&doc)[0], &phases(&doc)[1]);
            assert_eq!(
                w["time_bound"],
                serde_json::json!({"kind": "stonewall", "ns": 50_000_000, "wear_out": wear})
            );
            assert!(r.get("time_bound").is_none(), "{r}");
            let case = format!("{launcher}, wear-out {wear}");
            for (wrote, read) in workers(w).into_iter().zip(workers(r)) {
                let most = wrote.iter().map(|x| x.4.expect("every worker met the stonewall")).max().unwrap();
                for (&(worker, _, ops, t, wall), &(rw, _, rops, _, rwall)) in wrote.iter().zip(&read) {
                    let wall = wall.unwrap();
                    assert!(ops < 131_072, "{case}: worker {worker} did all its ops");
                    assert!(t >= 50_000_000, "{case}: worker {worker} stopped at {t} ns");
                    if wear {
                        assert_eq!(ops, most, "{case}: worker {worker} went on to {ops}, not {most}");
                        assert!(wall <= ops);
                    } else {
                        assert_eq!(ops, wall, "{case}: worker {worker} did ops after the stonewall");
                    }
                    assert_eq!((rw, rops, rwall), (worker, ops, None), "{case}: the read of worker {worker}");
                }
            }
            // The store keeps what the table and JSON showed.
            let o = s.iolab(&["results", "show", "last", "--json"]);
            assert!(o.status.success(), "{}", stderr(&o));
            let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(phases(&stored)[0]["repetitions"], w["repetitions"], "{case}");
            assert_eq!(phases(&stored)[0]["time_bound"], w["time_bound"], "{case}");
            let table = s.iolab(&["results", "show", "last", "--explain"]);
            let text = String::from_utf8_lossy(&table.stdout);
            let label = if wear { "stonewall 50ms + wear-out" } else { "stonewall 50ms" };
            assert!(text.contains("time-bounded phases"), "{text}");
            let row = text
                .lines()
                .find(|l| l.starts_with("write:stonewall=50ms ") && l.contains(label))
                .unwrap_or_else(|| panic!("{text}"));
            assert!(row.ends_with('%'), "{row}");
            assert!(
                text.lines()
                    .any(|l| l.starts_with("read:cold ")
                        && l.contains("reads what write:stonewall=50ms wrote")),
                "{text}"
            );
        }
    }
}

/// A sweep over the runtime with repetitions: each point's workers run at least its time, and
/// the IOPS of each repetition is its workers' ops / t_i summed.
#[test]
fn a_sweep_over_the_runtime_keeps_each_points_time() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--sweep",
        "runtime=100ms,250ms",
        "--size",
        "64KiB",
        "--bs",
        "4KiB",
        "--op",
        "write",
        "--reps",
        "2",
    ]);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (p, want) in points.iter().zip([100_000_000u64, 250_000_000]) {
        let ph = &p["phases"][0];
        assert_eq!(ph["time_bound"]["ns"], want);
        for rep in ph["repetitions"].as_array().unwrap() {
            let mut iops = 0.0;
            for w in rep["workers"].as_array().unwrap() {
                let t = w["time_ns"].as_u64().unwrap();
                assert!(t >= want, "{t} < {want}");
                iops += w["ops"].as_f64().unwrap() * 1e9 / t as f64;
            }
            let got = rep["ops_per_s"].as_f64().unwrap();
            assert!((got - iops).abs() <= 1e-9 * iops, "{got} vs {iops}");
        }
        assert_eq!(ph["ops_summary"]["n"], 2);
    }
    // The CSV rows carry the IOPS and the bound, named.
    let o = s.iolab(&["results", "show", "last", "--csv"]);
    let mut csv = csv::Reader::from_reader(&o.stdout[..]);
    let head = csv.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4, "{}", String::from_utf8_lossy(&o.stdout));
    let bounds: Vec<&str> = rows.iter().map(|r| &r[col("time_bound")]).collect();
    assert_eq!(bounds, ["runtime 100ms", "runtime 100ms", "runtime 250ms", "runtime 250ms"]);
    assert!(rows.iter().all(|r| r[col("ops_per_s")].parse::<f64>().unwrap() > 0.0));
}

/// Bounds that cannot work are refused before anything is made (exit 2), naming the field.
#[test]
fn impossible_bounds_are_refused_before_anything_is_made() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    for (args, want) in [
        (&["--runtime", "1s", "--stonewall", "1s"][..], "stonewall = `1s`: not with runtime"),
        (
            &["--stonewall", "1s", "--op", "write,read:random"][..],
            "ops = `read:random`: reads what the time-bounded phase write wrote",
        ),
        (&["--wear-out"][..], "wear_out = `true`: goes with stonewall"),
        (&["--runtime", "-2s"][..], "runtime = `-2s`"),
    ] {
        let mut all = vec!["run", "--dir", dir, "--size", "1MiB"];
        all.extend_from_slice(args);
        let o = s.iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(s.leftovers().is_empty(), "{args:?}: {:?}", s.leftovers());
    }
}
