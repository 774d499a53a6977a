//! Per-op traces: what the store keeps for every op, the order it proves, and per-phase cache
//! control in access sequences (C5).

use crate::util::*;

/// (phase, worker, file, offset, start_ns, duration_ns) of every traced op, in order.
fn trace_rows(s: &Scratch, filter: &[&str]) -> Vec<(String, u32, u32, u64, u64, u64)> {
    let mut args = vec!["results", "trace", "last"];
    args.extend_from_slice(filter);
    let out = s.iolab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut rdr = csv::Reader::from_reader(&out.stdout[..]);
    let headers = rdr.headers().unwrap().clone();
    assert_eq!(
        headers.iter().collect::<Vec<_>>(),
        [
            "run_id",
            "point",
            "rep",
            "phase",
            "worker",
            "op",
            "file",
            "offset_bytes",
            "start_ns",
            "duration_ns",
            "len_bytes",
            "write",
            "response_ns"
        ]
    );
    rdr.records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[3].to_string(),
                r[4].parse().unwrap(),
                r[6].parse().unwrap(),
                r[7].parse().unwrap(),
                r[8].parse().unwrap(),
                r[9].parse().unwrap(),
            )
        })
        .collect()
}

fn ops_of(rows: &[(String, u32, u32, u64, u64, u64)], phase: &str, worker: u32) -> Vec<(u32, u64)> {
    rows.iter().filter(|r| r.0 == phase && r.1 == worker).map(|r| (r.2, r.3 / 4096)).collect()
}

/// Round-robin visits block 1 of every file, then block 2, ...; the per-op trace shows the
/// exact (file, block) sequence of each worker in each phase.
#[test]
fn round_robin_order_is_visible_in_the_trace() {
    let s = Scratch::new();
    s.run_json(&[
        "--files",
        "4",
        "--size",
        "16KiB",
        "--bs",
        "4KiB",
        "--trace",
        "--reps",
        "1",
        "--op",
        "write:workers=1:round_robin=4,read:workers=2:round_robin=2,read:workers=1",
    ]);
    let rows = trace_rows(&s, &[]);
    assert_eq!(rows.len(), 3 * 16);
    let rr4: Vec<(u32, u64)> = (0..4).flat_map(|b| (0..4).map(move |f| (f, b))).collect();
    assert_eq!(ops_of(&rows, "write:workers=1:round_robin=4", 0), rr4);
    let pair = |a: u32, b: u32| (0..4).flat_map(move |blk| [(a, blk), (b, blk)]).collect::<Vec<_>>();
    assert_eq!(ops_of(&rows, "read:workers=2:round_robin=2", 0), pair(0, 2));
    assert_eq!(ops_of(&rows, "read:workers=2:round_robin=2", 1), pair(1, 3));
    let seq: Vec<(u32, u64)> = (0..4).flat_map(|f| (0..4).map(move |b| (f, b))).collect();
    assert_eq!(ops_of(&rows, "read:workers=1", 0), seq);
    // Ops follow each other: each starts when the previous one ended (no commit in between).
    for w in rows.windows(2).filter(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1) {
        assert_eq!(w[1].4, w[0].4 + w[0].5, "{w:?}");
    }
    assert!(rows.iter().all(|r| r.5 > 0));
    // Filters.
    assert_eq!(trace_rows(&s, &["--phase", "read:workers=1"]).len(), 16);
    assert_eq!(trace_rows(&s, &["--rep", "0"]).len(), 3 * 16);
    let out = s.iolab(&["results", "trace", "last", "--phase", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("phase = `nope`"), "{}", stderr(&out));
}

/// A striped file's trace names component files and component offsets.
#[test]
fn striped_ops_are_traced_per_piece() {
    let s = Scratch::new();
    let d = s.path().to_str().unwrap().to_string();
    s.run_json(&[
        "--layout",
        "striped",
        "--targets",
        &format!("{d},{d}"),
        "--stripe-unit",
        "4KiB",
        "--bs",
        "8KiB",
        "--size",
        "16KiB",
        "--trace",
        "--reps",
        "1",
        "--op",
        "write",
    ]);
    let rows = trace_rows(&s, &[]);
    let seq: Vec<(u32, u64)> = rows.iter().map(|r| (r.2, r.3)).collect();
    assert_eq!(seq, [(0, 0), (1, 0), (0, 4096), (1, 4096)]);
}

/// C5: reverse read from a cold cache, forward read after dropping it again, then a reread
/// with the cache left alone. The cache is dropped only where asked, the trace shows the
/// reverse order, and each traced phase reports its (possibly empty) periods.
#[test]
fn access_sequence_drops_the_cache_only_where_asked() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--size",
        "8MiB",
        "--bs",
        "4KiB",
        "--trace",
        "--reps",
        "1",
        "--op",
        "write,read:reverse:cold,read:cold,read:asis",
    ]);
    let ph = phases(&doc);
    let resident: Vec<f64> =
        ph.iter().map(|p| p["repetitions"][0]["resident_fraction"].as_f64().unwrap()).collect();
    assert!(resident[1] < 0.05 && resident[2] < 0.05, "{resident:?}");
    assert!(resident[3] > 0.95, "the forward read leaves the file cached: {resident:?}");
    assert_eq!(ph[3]["flags"][0], "cache not controlled");
    // The reverse read was cold; a `noisy` flag (other processes' device I/O on a shared
    // machine) says nothing about the cache, so only cache flags count here.
    let flags = ph[1]["flags"].as_array().unwrap();
    assert!(flags.iter().all(|f| f.as_str().unwrap().starts_with("noisy:")), "{flags:?}");
    for p in ph {
        assert!(p["repetitions"][0]["workers"][0]["periods"].is_array(), "{}: periods", p["name"]);
    }
    let rows = trace_rows(&s, &["--phase", "read:reverse:cold"]);
    let blocks: Vec<u64> = rows.iter().map(|r| r.3 / 4096).collect();
    assert_eq!(blocks, (0..2048).rev().collect::<Vec<u64>>());
    let fwd = trace_rows(&s, &["--phase", "read:asis"]);
    assert_eq!(fwd.iter().map(|r| r.3 / 4096).collect::<Vec<_>>(), (0..2048).collect::<Vec<u64>>());
    // The store gives back the periods the run printed.
    let id = doc["experiment_id"].as_str().unwrap();
    let back: Value = serde_json::from_slice(&s.iolab(&["results", "show", id, "--json"]).stdout).unwrap();
    assert_eq!(back, doc);
}

#[test]
fn untraced_runs_have_no_periods_and_no_trace() {
    let s = Scratch::new();
    let doc = s.run_json(&["--size", "1MiB", "--bs", "64KiB", "--reps", "1", "--op", "write"]);
    assert!(phases(&doc)[0]["repetitions"][0]["workers"][0].get("periods").is_none());
    let out = s.iolab(&["results", "trace", "last"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no traced ops"), "{}", stderr(&out));
}
