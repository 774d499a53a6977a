//! Before and after (`iolab results compare A B`): an experiment against itself is no change;
//! a phase at half the rate (a synthetic fixture made from a real run's repetitions, every rate
//! halved and every time doubled, imported through the store's JSON import) is slower with an
//! interval about 0.5; a real slower setting (the null engine at 512 B blocks against 8 KiB: 16
//! times the calls for the same bytes) is slower; `--fail-if-slower PCT` exits 0 or 1 by the
//! interval; bad input exits 2 naming the field and value; `iolab run --compare-to ID` prints
//! the comparison after its table.

use crate::util::*;

/// `iolab results compare ARGS --format json`, parsed; panics unless it exits `code`.
fn compare_json(s: &Scratch, args: &[&str], code: i32) -> Value {
    let mut all = vec!["results", "compare"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let o = s.iolab(&all);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(code), "{all:?}: {}\n{out}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The shared phase named `phase` of a comparison.
fn phase<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["shared"].as_array().unwrap().iter().find(|s| s["phase"] == name).unwrap_or_else(|| panic!("{name}"))
}

fn ci(s: &Value) -> [f64; 2] {
    [s["ci95"][0].as_f64().unwrap(), s["ci95"][1].as_f64().unwrap()]
}

/// A synthetic fixture: the run's document with its `write` phase at half the rate (every rate
/// of its repetitions and their workers halved, every time doubled, so that the import's checks
/// of each figure against its raw fields hold), new ids and the name `half (synthetic)`.
fn halved_write(doc: &Value) -> Value {
    let mut d = doc.clone();
    let id = format!("{}-half", d["experiment_id"].as_str().unwrap());
    d["experiment_id"] = id.into();
    d["created_unix_s"] = (d["created_unix_s"].as_f64().unwrap() + 1.0).into();
    d["spec"]["name"] = "half (synthetic)".into();
    let half = |v: &mut Value| {
        if let Some(x) = v.as_f64() {
            *v = (x / 2.0).into();
        }
    };
    let twice = |v: &mut Value| {
        if let Some(x) = v.as_u64() {
            *v = (x * 2).into();
        }
    };
    for ph in d["points"][0]["phases"].as_array_mut().unwrap() {
        let write = ph["name"] == "write";
        for key in ["repetitions", "warmups"] {
            for r in ph[key].as_array_mut().unwrap() {
                r["run_id"] = format!("{}-half", r["run_id"].as_str().unwrap()).into();
                if !write {
                    continue;
                }
                for k in [
                    "max_sar_bytes_per_s",
                    "min_sar_bytes_per_s",
                    "avg_individual_bytes_per_s",
                    "agg_bytes_per_s",
                ] {
                    half(&mut r[k]);
                }
                for k in ["time_ns", "span_ns"] {
                    twice(&mut r[k]);
                }
                for w in r["workers"].as_array_mut().unwrap() {
                    half(&mut w["bytes_per_s"]);
                    half(&mut w["ops_per_s"]);
                    twice(&mut w["time_ns"]);
                }
            }
        }
    }
    d
}

#[test]
fn an_experiment_against_itself_is_no_change_in_every_phase() {
    let s = Scratch::new();
    s.run_json(&["--engine", "null", "--op", "write,read", "--size", "4MiB", "--bs", "64KiB", "--reps", "3"]);
    let doc = compare_json(&s, &["last", "last", "--fail-if-slower", "0"], 0);
    assert_eq!(doc["schema"], "iolab.compare/1");
    assert_eq!(doc["settings_differ"], serde_json::json!([]));
    assert_eq!(doc["shared"].as_array().unwrap().len(), 2);
    for name in ["write", "read"] {
        let p = phase(&doc, name);
        assert_eq!(p["ratio"].as_f64().unwrap(), 1.0, "{name}");
        let [lo, hi] = ci(p);
        assert!(lo < 1.0 && hi > 1.0, "{name}: {lo}..{hi}");
        assert_eq!(p["verdict"], "no_change", "{name}");
        assert_eq!(p["a"]["runs"], 3);
        assert_eq!(p["a"]["latency_ns"], p["b"]["latency_ns"]);
    }
    // The text: both sides named, the verdicts, within 100 columns.
    let o = s.iolab(&["results", "compare", "last", "last"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("settings: the same"), "{text}");
    assert_eq!(text.matches("no change").count(), 2, "{text}");
    assert!(text.contains("Welch"), "{text}");
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
}

#[test]
fn a_phase_at_half_the_rate_is_slower_with_an_interval_about_one_half() {
    let s = Scratch::new();
    let a = s.run_json(&[
        "--engine",
        "null",
        "--name",
        "before",
        "--op",
        "write,read",
        "--size",
        "4MiB",
        "--bs",
        "64KiB",
        "--reps",
        "4",
    ]);
    let fixture = s.path().join("half.json");
    std::fs::write(&fixture, serde_json::to_vec(&halved_write(&a)).unwrap()).unwrap();
    let o = s.iolab(&["results", "import", fixture.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A by its name; B is the newest (the fixture).
    let doc = compare_json(&s, &["--baseline", "before"], 0);
    assert_eq!(doc["a"]["experiment_id"], a["experiment_id"]);
    assert_eq!(doc["b"]["name"], "half (synthetic)");
    assert_eq!(doc["settings_differ"][0]["key"], "name", "{}", doc["settings_differ"]);
    let w = phase(&doc, "write");
    assert!((w["ratio"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{}", w["ratio"]);
    let [lo, hi] = ci(w);
    assert!(lo < 0.5 && 0.5 < hi && hi < 1.0, "{lo}..{hi}");
    assert_eq!(w["verdict"], "slower");
    // The interval by hand: Welch's t on the logs, equal spreads, 4 runs each: df 6, t 2.4469.
    let logs: Vec<f64> =
        w["a"]["runs_per_s"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap().ln()).collect();
    let m = logs.iter().sum::<f64>() / 4.0;
    let var = logs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 3.0;
    let half = 2.4469 * (2.0 * var / 4.0).sqrt();
    assert!((lo - 0.5 * (-half).exp()).abs() < 1e-6 && (hi - 0.5 * half.exp()).abs() < 1e-6, "{lo}..{hi}");
    let r = phase(&doc, "read");
    assert_eq!(r["ratio"].as_f64().unwrap(), 1.0);
    assert_eq!(r["verdict"], "no_change");

    // Slower by more than 10%: exit 1, the phase named; by more than 50%: not with confidence.
    let id_a = a["experiment_id"].as_str().unwrap();
    let o = s.iolab(&["results", "compare", id_a, "last", "--fail-if-slower", "10"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("write at 0.500 of A"), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("slower"));
    let o = s.iolab(&["results", "compare", id_a, "last", "--fail-if-slower", "50"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Markdown and CSV carry the same verdicts.
    let o = s.iolab(&["results", "compare", "--baseline", "before", "--format", "markdown"]);
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(md.contains("| write | ") && md.contains("| slower |"), "{md}");
    let o = s.iolab(&["results", "compare", "--baseline", "before", "--format", "csv"]);
    let mut rd = csv::Reader::from_reader(o.stdout.as_slice());
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!((&rows[0][0], &rows[0][10]), ("write", "slower"));
    assert_eq!((&rows[1][0], &rows[1][10]), ("read", "no change"));
}

#[test]
fn a_slower_real_setting_is_slower_and_phases_in_one_only_are_listed() {
    let s = Scratch::new();
    let common = ["--engine", "null", "--size", "32MiB", "--reps", "5"];
    let mut a = common.to_vec();
    a.extend(["--op", "write,read", "--bs", "8KiB"]);
    let a = s.run_json(&a);
    let mut b = common.to_vec();
    b.extend(["--op", "write", "--bs", "512"]);
    s.run_json(&b);
    let id_a = a["experiment_id"].as_str().unwrap();
    let doc = compare_json(&s, &[id_a, "last", "--fail-if-slower", "10"], 1);
    let w = phase(&doc, "write");
    assert_eq!(w["verdict"], "slower", "{w}");
    assert!(ci(w)[1] < 0.9, "{w}");
    assert_eq!(doc["only_a"], serde_json::json!(["read"]));
    assert_eq!(doc["only_b"], serde_json::json!([]));
    let keys: Vec<&str> =
        doc["settings_differ"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert!(keys.contains(&"bs_bytes") && keys.iter().any(|k| k.starts_with("phases.1")), "{keys:?}");
    let o = s.iolab(&["results", "compare", id_a, "last"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("only in A: read"), "{text}");
    assert!(text.find("bs_bytes: 8192 -> 512").unwrap() < text.find("verdict").unwrap(), "{text}");
}

#[test]
fn bad_input_exits_2_naming_the_field_and_value() {
    let s = Scratch::new();
    s.run_json(&["--engine", "null", "--op", "write", "--size", "1MiB", "--reps", "2"]);
    for (args, want) in [
        (vec!["nosuch", "last"], "A = `nosuch`"),
        (vec!["last", "nosuch"], "B = `nosuch`"),
        (vec!["last"], "B = `last`"),
        (vec!["last", "last", "--fail-if-slower", "ten"], "--fail-if-slower = `ten`"),
        (vec!["last", "last", "--fail-if-slower", "-5"], "--fail-if-slower = `-5`"),
        (vec!["last", "last", "--fail-if-slower", "100"], "--fail-if-slower = `100`"),
        (vec!["last", "last", "--fail-if-slower", "nan"], "--fail-if-slower = `nan`"),
        (vec!["--baseline", "nosuch"], "--baseline = `nosuch`"),
        (vec!["--fail-if-slower", "5"], "--fail-if-slower = `5`"),
        (vec!["--format", "json"], "--format = `json`"),
    ] {
        let mut all = vec!["results", "compare"];
        all.extend(&args);
        let o = s.iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_run_compares_itself_with_a_stored_experiment_after_its_table() {
    let s = Scratch::new();
    let args = ["--engine", "null", "--op", "write", "--size", "4MiB", "--bs", "64KiB", "--reps", "3"];
    let a = s.run_json(&args);
    let id_a = a["experiment_id"].as_str().unwrap();
    let dir = s.path().to_str().unwrap();
    let mut run = vec!["run", "--quiet", "--dir", dir, "--compare-to", id_a];
    run.extend(args);
    let o = s.iolab(&run);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let new = s.iolab(&["results", "list"]);
    let newest =
        String::from_utf8(new.stdout).unwrap().lines().nth(1).unwrap().split(' ').next().unwrap().to_string();
    assert_ne!(newest, id_a);
    assert!(text.contains(&format!("compared with {id_a}")), "{text}");
    assert!(
        text.contains(&format!("A (before): {id_a}")) && text.contains(&format!("B (after):  {newest}")),
        "{text}"
    );
    assert!(text.contains("settings: the same"), "{text}");
    // An unknown experiment is refused before anything runs: nothing stored.
    let mut bad = vec!["run", "--quiet", "--dir", dir, "--compare-to", "nosuch"];
    bad.extend(args);
    let o = s.iolab(&bad);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--compare-to = `nosuch`"), "{}", stderr(&o));
    let list = String::from_utf8(s.iolab(&["results", "list"]).stdout).unwrap();
    assert_eq!(list.lines().count(), 3, "{list}");
    // A plan of the same run says what the run would do.
    let o = s.iolab(&["plan", "--dir", dir, "--compare-to", id_a]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--compare-to"), "{}", stderr(&o));
}

#[test]
fn sweep_points_pair_by_their_axis_values_and_differing_axes_are_listed() {
    let s = Scratch::new();
    let common = ["--engine", "null", "--size", "4MiB", "--reps", "2"];
    let mut a = common.to_vec();
    a.extend(["--op", "write", "--sweep", "bs=4KiB,64KiB"]);
    let a = s.run_json(&a);
    let mut b = common.to_vec();
    b.extend(["--op", "write", "--sweep", "bs=4KiB,1MiB"]);
    s.run_json(&b);
    let doc = compare_json(&s, &[a["experiment_id"].as_str().unwrap(), "last"], 0);
    let shared: Vec<&str> =
        doc["shared"].as_array().unwrap().iter().map(|p| p["point"].as_str().unwrap()).collect();
    assert_eq!(shared, ["bs=4KiB"]);
    assert_eq!(doc["only_a"], serde_json::json!(["bs=64KiB write"]));
    assert_eq!(doc["only_b"], serde_json::json!(["bs=1MiB write"]));
    let sweep = doc["settings_differ"].as_array().unwrap().iter().find(|s| s["key"] == "sweep.bs");
    assert_eq!(
        sweep,
        Some(&serde_json::json!({"key": "sweep.bs", "a": "4KiB,64KiB", "b": "4KiB,1MiB"})),
        "{doc}"
    );
}
