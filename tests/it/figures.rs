//! Figures that can be undefined (a NaN mean of no runs, an infinite rate of no time) survive
//! the store and JSON as themselves, and a row of the store that cannot be decoded makes only
//! that item unreadable, named in a warning, never the whole store.

use iolab::store::Store;

use crate::util::*;

/// The values every float field is set to in turn.
const VALUES: [f64; 8] =
    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, f64::MAX, f64::MIN, f64::MIN_POSITIVE];

/// `v` as iolab's JSON writes it.
fn encoded(v: f64) -> Value {
    iolab::json::to_value(&v).unwrap()
}

/// Sets every float of a JSON tree (a number that is not an integer) to `v`; returns how many.
pub fn set_floats(doc: &mut Value, v: &Value) -> usize {
    match doc {
        Value::Number(n) if n.is_f64() => {
            *doc = v.clone();
            1
        }
        Value::Array(a) => a.iter_mut().map(|x| set_floats(x, v)).sum(),
        Value::Object(m) => m.values_mut().map(|x| set_floats(x, v)).sum(),
        _ => 0,
    }
}

/// The parts of an experiment the store keeps as they are (what it recomputes when it reads an
/// experiment back, from the repetitions, is left out: summaries, merged flags and latency,
/// per-host figures, and the op rates, from op counts and the workers' times).
fn stored_parts(mut doc: Value) -> Value {
    for p in doc["points"].as_array_mut().unwrap() {
        for ph in p["phases"].as_array_mut().unwrap() {
            let ph = ph.as_object_mut().unwrap();
            for k in ["summary", "agg_summary", "time_summary", "ops_summary", "flags", "latency_ns"] {
                ph.remove(k);
            }
            ph["cache"].as_object_mut().unwrap().remove("resident_fraction");
            for list in ["repetitions", "warmups"] {
                for r in ph[list].as_array_mut().unwrap() {
                    // The op rates are worked out from each worker's ops and time (agg: from the ops and
                    // the span), never stored.
                    let r = r.as_object_mut().unwrap();
                    for k in ["hosts", "ops_per_s", "max_sar_ops_per_s", "min_sar_ops_per_s", "agg_ops_per_s"]
                    {
                        r.remove(k);
                    }
                    for w in r["workers"].as_array_mut().unwrap() {
                        w.as_object_mut().unwrap().remove("ops_per_s");
                    }
                }
            }
        }
    }
    doc.as_object_mut().unwrap().remove("findings");
    doc
}

/// Every float field of a real experiment (two phases, traced, two runs and a warm-up, with
/// rate series, periods and file layouts) set to NaN, the infinities, zeros and the extremes
/// is stored and read back as it was; and the commands that read the store read it.
#[test]
fn every_figure_survives_the_store_as_itself() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "write,read:cold",
        "--size",
        "256KiB",
        "--bs",
        "16KiB",
        "--reps",
        "2",
        "--warmup",
        "1",
        "--trace",
    ]);
    for v in VALUES {
        let mut d = doc.clone();
        let n = set_floats(&mut d, &encoded(v));
        assert!(n > 40, "the experiment has {n} float fields");
        let db = s.path().join(format!("f{}.db", v.to_bits()));
        let exp: iolab::results::ExperimentResult = iolab::json::from_str(&d.to_string()).unwrap();
        let store = Store::open(&db).unwrap();
        iolab::store::import::import_experiment(&store, &exp).unwrap();
        let back = store.load(&exp.experiment_id).unwrap();
        let back = stored_parts(iolab::json::to_value(&back).unwrap());
        assert_eq!(back, stored_parts(d.clone()), "{v}");
        drop(store);
        let db = db.to_str().unwrap();
        for args in [
            vec!["results", "list", "--db", db],
            vec!["results", "show", "last", "--db", db],
            vec!["results", "show", "last", "--json", "--db", db],
            vec!["results", "show", "last", "--csv", "--db", db],
            vec!["results", "compare", "--db", db],
        ] {
            let out = s.iolab(&args);
            assert!(out.status.success() || args[1] == "compare", "{v} {args:?}: {}", stderr(&out));
            assert!(!stderr(&out).contains("cannot be read"), "{v} {args:?}: {}", stderr(&out));
        }
        // The JSON a store gives reads back as the same figures.
        let out = s.iolab(&["results", "export", "last", "--json", "--db", db]);
        let again: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(stored_parts(again), stored_parts(d), "{v}");
    }
}

/// A tuning record with every float field at each value is stored and read back as it was,
/// and `results show`, `compare --tuned` and `plot --kind race` read it.
#[test]
fn every_figure_of_a_tuning_survives_the_store() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let out = s.iolab(&[
        "tune",
        "custom",
        "--bytes",
        "256KiB",
        "--op-size",
        "64KiB",
        "--search",
        "engine=psync,vsync",
        "--budget",
        "20s",
        "--max-runs",
        "3",
        "--dir",
        &dir,
        "--json",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = doc["experiment_id"].as_str().unwrap().to_string();
    for v in VALUES {
        let mut d = doc.clone();
        assert!(set_floats(&mut d, &encoded(v)) > 10);
        let t: iolab::results::tune::Tuning = iolab::json::from_str(&d.to_string()).unwrap();
        let store = Store::open(&s.db()).unwrap();
        store.save_tuning(&t).unwrap();
        assert_eq!(iolab::json::to_value(&store.load_tuning(&id).unwrap().unwrap()).unwrap(), d, "{v}");
        drop(store);
        for args in [
            vec!["results", "show", "last"],
            vec!["results", "compare", "--tuned"],
            vec!["plot", "last", "--kind", "race", "-o", "race.svg"],
        ] {
            let out = s.iolab(&args);
            assert!(!stderr(&out).contains("cannot be read"), "{v} {args:?}: {}", stderr(&out));
            assert!(!stderr(&out).contains("invalid type"), "{v} {args:?}: {}", stderr(&out));
        }
    }
}

/// A tuning stored by an earlier version with `null` for an undefined figure reads as NaN; a
/// row that cannot be decoded at all leaves the rest of the store readable and is named in a
/// warning wherever it would have been shown.
#[test]
fn an_unreadable_row_is_named_and_the_rest_of_the_store_stays_readable() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let out = s.iolab(&[
        "tune",
        "custom",
        "--bytes",
        "256KiB",
        "--op-size",
        "64KiB",
        "--search",
        "engine=psync,vsync",
        "--budget",
        "20s",
        "--min-runs",
        "2",
        "--max-runs",
        "2",
        "--dir",
        &dir,
        "--json",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tuned: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tid = tuned["experiment_id"].as_str().unwrap().to_string();
    let plain = s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1"]);
    let pid = plain["experiment_id"].as_str().unwrap().to_string();
    let c = rusqlite::Connection::open(s.db()).unwrap();

    // What serde_json wrote for NaN before: null. It reads back as NaN, with no warning.
    let mut legacy = tuned.clone();
    legacy["rounds"][0]["intervals"][0]["mean_s"] = Value::Null;
    c.execute("UPDATE tunings SET tuning_json = ?1", [legacy.to_string()]).unwrap();
    let out = s.iolab(&["results", "show", &tid, "--json"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));

    // A tuning that is not JSON at all: only it is unreadable.
    c.execute("UPDATE tunings SET tuning_json = '{\"rounds\": [}'", []).unwrap();
    for args in [vec!["results", "show", &tid], vec!["results", "compare", "--tuned"], vec!["report", &tid]] {
        let out = s.iolab(&args);
        // With its only tuning unreadable, compare --tuned has nothing to compare.
        assert!(out.status.success() || args[2] == "--tuned", "{args:?}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.contains(&format!(
                "warning: store {}: the tuning of experiment {tid} cannot be read",
                s.db().display()
            )),
            "{args:?}: {e}"
        );
    }
    let out = s.iolab(&["plot", &tid, "--kind", "race", "-o", "r.svg"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("the tuning of experiment {tid} cannot be read")),
        "{}",
        stderr(&out)
    );
    assert!(!s.path().join("r.svg").exists());

    // An experiment whose spec cannot be read: listed no more, named; the other still is.
    c.execute("UPDATE experiments SET spec_json = 'x' WHERE id = ?1", [&pid]).unwrap();
    let out = s.iolab(&["results", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&tid));
    assert!(stderr(&out).contains(&format!("experiment {pid} cannot be read")), "{}", stderr(&out));
    let out = s.iolab(&["results", "show", &pid]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("experiment {pid}: ")), "{}", stderr(&out));
    let out = s.iolab(&["results", "show", &tid]);
    assert!(out.status.success(), "{}", stderr(&out));
}
