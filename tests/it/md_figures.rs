//! What the metadata phases report, in every output: their figures carry the unit they have
//! (ops/s, never MB/s: the JSON's fields and summaries, the table's legend, the CSV's columns,
//! the plot's bars and axis, the HTML page), their rate over time counts items, so a stopped
//! create is flagged `stalled`; and listings and titles name what ran, not data parameters no
//! phase used.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A metadata run's figures in each output: the JSON's agg summary is of `agg_ops_per_s`, the
/// repetitions' own `agg_ops_per_s` (all items over the span), the series counts `ops`; the
/// table's legend says ops/s and no MB/s; the CSV has the same agg; the bars of the plot stand
/// at the agg of ops on an ops/s axis; the HTML page states the unit per row; the listing and
/// the plot's title name the items, not the unused size and block size.
#[test]
fn metadata_figures_state_their_unit_in_every_output() {
    let s = Scratch::new();
    let doc =
        s.run_json(&["--op", "create,stat,unlink", "--md-files", "300", "--workers", "2", "--reps", "2"]);
    for ph in phases(&doc) {
        let name = ph["name"].as_str().unwrap();
        assert_eq!(ph["agg_summary"]["of"], "agg_ops_per_s", "{name}");
        assert_eq!(ph["summary"]["of"], "max_sar_ops_per_s", "{name}");
        let aggs: Vec<f64> =
            ph["repetitions"].as_array().unwrap().iter().map(|r| num(&r["agg_ops_per_s"])).collect();
        for (r, agg) in ph["repetitions"].as_array().unwrap().iter().zip(&aggs) {
            // All items over the span from the first open to the last close.
            let want = num(&r["ops"]) * 1e9 / num(&r["span_ns"]);
            assert!((agg - want).abs() <= want * 1e-9, "{name}: {agg} vs {want}");
            assert_eq!(num(&r["ops"]), 600.0, "{name}");
            // The rate over time counts the items, every one of them.
            let series = &r["rate"]["series"];
            assert!(series.get("bytes").is_none(), "{name}: {series}");
            let items: u64 = series["ops"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum();
            assert_eq!(items, 600, "{name}");
        }
        let mean = aggs.iter().sum::<f64>() / aggs.len() as f64;
        assert!((num(&ph["agg_summary"]["mean"]) - mean).abs() <= mean * 1e-9, "{name}");
    }
    let table =
        String::from_utf8_lossy(&s.iolab(&["results", "show", "last", "--explain"]).stdout).into_owned();
    assert!(
        table.contains(
            "rates in ops/s (one op: one item, or one entry a find stats) of agg = all ops / (first open to last close), commits included"
        ),
        "{table}"
    );
    assert!(!table.contains("MB/s") && !table.contains("all bytes"), "{table}");
    let csv = String::from_utf8_lossy(&s.iolab(&["results", "show", "last", "--csv"]).stdout).into_owned();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let header = rd.headers().unwrap().clone();
    let col = |k: &str| header.iter().position(|h| h == k).unwrap_or_else(|| panic!("no column {k}"));
    let row = rd.records().next().unwrap().unwrap();
    let first = &phases(&doc)[0]["repetitions"][0];
    assert_eq!(row[col("agg_ops_per_s")].parse::<f64>().unwrap(), num(&first["agg_ops_per_s"]), "{csv}");
    // Bars at the mean agg of ops, on an axis of ops/s.
    let svg = s.path().join("md.svg");
    let o = s.iolab(&["plot", "last", "--kind", "bars", "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fig = std::fs::read_to_string(&svg).unwrap();
    assert!(fig.contains("agg (ops/s)"), "{fig}");
    assert!(fig.contains("agg = all ops / (first open to last close)"), "{fig}");
    assert!(!fig.contains("bs 1 MiB") && fig.contains("300 files per worker"), "{fig}");
    let heights: Vec<f64> = fig
        .lines()
        .filter(|l| l.starts_with("<rect") && l.contains("opacity=\"0.85\""))
        .map(|l| l.split("height=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(heights.len(), 3, "{fig}");
    assert!(heights.iter().all(|h| *h > 0.0), "every phase's bar stands: {heights:?}");
    let page = s.path().join("md.html");
    let o = s.iolab(&["report", "last", "-o", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<th>unit</th>") && html.contains("<td>ops/s</td>"), "the page states the unit");
    let list = String::from_utf8_lossy(&s.iolab(&["results", "list"]).stdout).into_owned();
    assert!(list.contains("metadata x2 300 files") && !list.contains("512 MiB"), "{list}");
}

/// A create stopped (SIGSTOP) for 3 s mid-phase is flagged `stalled`: its rate over time has
/// 3 s without an item.
#[test]
fn a_create_stopped_for_seconds_is_flagged_as_stalled() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    // A commit of every file keeps the create going for a while on any disk.
    for items in ["2000", "20000"] {
        let mut child = command()
            .args(["run", "--json", "--quiet", "--dir", &dir, "--op", "create", "--md-files", items])
            .args(["--sync", "each", "--reps", "1"])
            .env("IOLAB_DB", s.db())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let made = || {
            let work = std::fs::read_dir(s.path())
                .ok()
                .into_iter()
                .flatten()
                .flatten()
                .find(|e| e.file_name().to_string_lossy().starts_with(".iolab-"));
            work.and_then(|w| std::fs::read_dir(w.path().join("md/w0")).ok()).map_or(0, |d| d.count())
        };
        let t0 = Instant::now();
        // Stopped once some items are made: a stop before the first item is no gap between two.
        let stopped = loop {
            if made() > 20 {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                break made() < items.parse().unwrap();
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
            eprintln!("the create of {items} ended before it could be stopped; trying a larger one");
            continue;
        }
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let r = &phases(&doc)[0]["repetitions"][0];
        let flags: Vec<&str> = r["flags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let flag =
            flags.iter().find(|f| f.starts_with("stalled: ")).unwrap_or_else(|| panic!("no stall flag: {r}"));
        let secs: f64 = flag["stalled: no progress for ".len()..].split(' ').next().unwrap().parse().unwrap();
        assert!((2.9..4.5).contains(&secs), "{flag}");
        return;
    }
    panic!("no create lasted long enough to be stopped in its middle");
}

/// Both ways of making metadata calls (iolab's own beneath the item's directory, and mdtest's
/// and pfind's by whole paths, the IO500 preset's) keep the rate over time, so that the stall
/// and overlap checks see every metadata phase: its series counts every op the phase counts.
#[test]
fn every_way_of_making_metadata_calls_keeps_the_rate_series() {
    for calls in ["beneath", "mdtest"] {
        let s = Scratch::new();
        let doc = s.run_json(&[
            "--op",
            "create,stat,find,unlink",
            "--md-files",
            "300",
            "--md-calls",
            calls,
            "--workers",
            "2",
            "--reps",
            "1",
        ]);
        let names: Vec<&str> = phases(&doc).iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["create", "stat", "find", "unlink"], "{calls}");
        for ph in phases(&doc) {
            let name = ph["name"].as_str().unwrap();
            let r = &ph["repetitions"][0];
            let series = &r["rate"]["series"];
            let counted: u64 = series["ops"]
                .as_array()
                .unwrap_or_else(|| panic!("{calls} {name}: no rate series"))
                .iter()
                .map(|x| x.as_u64().unwrap())
                .sum();
            assert!(num(&r["ops"]) >= 600.0, "{calls} {name}");
            assert_eq!(counted as f64, num(&r["ops"]), "{calls} {name}");
        }
    }
}
