//! `latency = off | histogram | trace`: what each keeps of every op, with every engine loop.

use crate::util::*;

/// The engines of both loops; uring only where the kernel allows it (else says why).
fn engines() -> Vec<&'static str> {
    match iolab::worker::registry::find("uring").map(|e| (e.def.caps.probe)()) {
        Some(Ok(())) => vec!["psync", "uring"],
        other => {
            eprintln!("skipping uring: {other:?}");
            vec!["psync"]
        }
    }
}

/// With `off` the run measures what it always does (bytes, ops, times, rates, commits) and
/// records no latency: an empty histogram, zero percentiles, a dash in the table.
#[test]
fn latency_off_keeps_rates_and_no_latency() {
    let s = Scratch::new();
    for engine in engines() {
        let doc = random_4k(&s, engine, "off");
        assert_eq!(doc["spec"]["latency"], "off");
        for ph in phases(&doc) {
            let r = &ph["repetitions"][0];
            assert_eq!(r["status"], "complete", "{engine}: {r}");
            assert_eq!(r["ops"], 256, "{engine}");
            assert_eq!(r["total_bytes"], 1 << 20, "{engine}");
            assert!(r["min_sar_bytes_per_s"].as_f64().unwrap() > 0.0, "{engine}");
            let w = &r["workers"][0];
            assert!(w["time_ns"].as_u64().unwrap() > 0, "{engine}");
            assert_eq!(w["latency_histogram_ns"], serde_json::json!([]), "{engine}");
            assert_eq!(w["latency_ns"]["max"], 0, "{engine}");
            assert_eq!(w["latency_ns"]["p50"], 0, "{engine}");
        }
        // The write phase committed once, and its commit was timed.
        let w = &phases(&doc)[0]["repetitions"][0]["workers"][0];
        assert_eq!(w["sync_calls"], 1, "{engine}");
        assert!(w["sync_ns"].as_u64().unwrap() > 0, "{engine}");
        assert!(w["sync_ns"].as_u64().unwrap() <= w["time_ns"].as_u64().unwrap(), "{engine}");
    }
    let out = s.iolab(&[
        "run",
        "--latency",
        "off",
        "--size",
        "64KiB",
        "--bs",
        "4KiB",
        "--op",
        "write",
        "--reps",
        "1",
        "--dir",
        s.path().to_str().unwrap(),
        "--explain",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The full table, with its two latency columns (p50 and p99).
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table.lines().find(|l| l.starts_with("write")).unwrap();
    // The flags column comes last and may say `noisy: ...` when other I/O hit the device.
    let cells = row.split("noisy").next().unwrap();
    assert!(cells.split_whitespace().rev().take(2).all(|c| c == "-"), "latency columns of {row}");
    // The HTML report's summary row says the same.
    let html = s.path().join("r.html");
    let out = s.iolab(&["report", "--last", "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    let summary = page.split("<section id=\"summary\">").nth(1).expect("a summary section");
    let row = summary.split("<tr>").find(|r| r.contains("<td>write</td>")).expect("the write phase's row");
    let cells: Vec<&str> =
        row.split("<td").skip(1).map(|c| c.split('>').nth(1).unwrap().split('<').next().unwrap()).collect();
    // The last columns: the two latencies, the unit, the flags.
    assert_eq!(cells[cells.len() - 4..cells.len() - 2], ["-", "-"], "latency cells of {cells:?}");
    assert_eq!(cells[cells.len() - 2], "MB/s", "the unit cell of {cells:?}");
}

/// With `histogram` every op lands in the histogram once, with both loops.
#[test]
fn histograms_count_every_op_once() {
    let s = Scratch::new();
    for engine in engines() {
        let doc = random_4k(&s, engine, "histogram");
        for ph in phases(&doc) {
            let w = &ph["repetitions"][0]["workers"][0];
            let counted: u64 =
                w["latency_histogram_ns"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
            assert_eq!(counted, 256, "{engine}");
            let (p50, max) =
                (w["latency_ns"]["p50"].as_u64().unwrap(), w["latency_ns"]["max"].as_u64().unwrap());
            assert!(p50 > 0 && p50 <= max, "{engine}: {w}");
        }
    }
}

/// 256 random 4 KiB writes of 1 MiB, committed at the end, then 256 random reads; one rep.
fn random_4k(s: &Scratch, engine: &str, latency: &str) -> serde_json::Value {
    s.run_json(&[
        "--engine",
        engine,
        "--latency",
        latency,
        "--size",
        "1MiB",
        "--bs",
        "4KiB",
        "--order",
        "random",
        "--op",
        "write,read",
        "--sync",
        "end",
        "--reps",
        "1",
    ])
}
