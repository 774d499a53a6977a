//! Imports within bounds: another store's views and triggers are never read, a stop signal
//! ends an import at once leaving nothing, sizes past the caps are refused by name, every run
//! belongs to one experiment, and imported figures agree with their raw fields.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::*;

/// Experiments, runs and phase results in a store.
fn counts(db: &Path) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let n = |t: &str| c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap();
    (n("experiments"), n("runs"), n("phase_results"))
}

/// Files of `dir` an import may leave behind: copies and stores other than `keep`.
fn stray(dir: &Path, keep: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.iter().any(|k| n.starts_with(k)))
        .collect();
    v.sort();
    v
}

fn json_file(s: &Scratch, name: &str, doc: &Value) -> PathBuf {
    let p = s.path().join(name);
    std::fs::write(&p, serde_json::to_vec(doc).unwrap()).unwrap();
    p
}

/// A store whose `runs` is a recursive view (an import once spun forever at 100% CPU on it,
/// deaf to signals, leaving a copy beside the store each try), or that holds a trigger, is
/// refused at once naming it; nothing is made, no copy is left.
#[test]
fn views_and_triggers_are_never_read() {
    let s = Scratch::new();
    s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1"]);
    for (name, sql, what) in [
        (
            "view.db",
            "ALTER TABLE runs RENAME TO runs_kept;
             CREATE VIEW runs AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
               SELECT 'r' || x AS run_id, 'e' AS experiment_id, 0 AS point, 0 AS rep, 'complete' AS status,
                      NULL AS error, 0.0 AS finished_unix_s, 0 AS warmup FROM c;",
            "a view `runs`",
        ),
        ("trigger.db", "CREATE TRIGGER t AFTER INSERT ON meta BEGIN DELETE FROM runs; END;", "a trigger `t`"),
    ] {
        let p = s.path().join(name);
        std::fs::copy(s.db(), &p).unwrap();
        let c = rusqlite::Connection::open(&p).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        c.execute_batch(sql).unwrap();
        drop(c);
        let target = s.path().join("into.db");
        let t0 = Instant::now();
        // Under a timeout: an import that spins (as one did) fails the test instead of hanging it.
        let o = std::process::Command::new("timeout")
            .args(["60"])
            .arg(bin())
            .args(["results", "import", p.to_str().unwrap(), "--db", target.to_str().unwrap()])
            .current_dir(s.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(t0.elapsed() < Duration::from_secs(20));
        let e = stderr(&o);
        assert!(e.contains(&format!("it holds {what}; an iolab store holds tables only")), "{e}");
        assert!(e.contains(p.to_str().unwrap()), "{e}");
        assert!(!target.exists());
        assert_eq!(stray(s.path(), &["store.db", "view.db", "trigger.db"]), Vec::<String>::new());
    }
}

/// A JSON past the cap is refused by name with the figures before a byte is read; a store
/// with a cell past the cap, or an experiment with more worker rows than an import holds, is
/// refused by name; nothing is made.
#[test]
fn sizes_past_the_caps_are_refused_by_name() {
    let s = Scratch::new();
    s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1"]);
    let target = s.path().join("into.db");
    let t = target.to_str().unwrap();
    let big = s.path().join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((256 << 20) + 1).unwrap();
    drop(f);
    let o = s.iolab(&["results", "import", big.to_str().unwrap(), "--db", t]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("more than the 256 MiB of JSON an import reads"), "{}", stderr(&o));

    let cell = s.path().join("cell.db");
    std::fs::copy(s.db(), &cell).unwrap();
    let c = rusqlite::Connection::open(&cell).unwrap();
    c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    c.execute("UPDATE hosts SET facts_json = ?1", [format!("\"{}\"", "x".repeat(17 << 20))]).unwrap();
    drop(c);
    let o = s.iolab(&["results", "import", cell.to_str().unwrap(), "--db", t]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a cell of its table hosts holds 17.00 MiB, more than the 16 MiB"),
        "{}",
        stderr(&o)
    );

    let many = s.path().join("many.db");
    std::fs::copy(s.db(), &many).unwrap();
    let c = rusqlite::Connection::open(&many).unwrap();
    c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    c.execute_batch(
        "INSERT INTO worker_results (run_id, phase, worker, bytes, ops, time_ns, sync_ns, sync_calls, open_ns,
             close_ns, bytes_per_s, latency_json, histogram_json)
         WITH RECURSIVE k(x) AS (SELECT 1000 UNION ALL SELECT x + 1 FROM k WHERE x < 201000)
         SELECT (SELECT run_id FROM runs LIMIT 1), 0, x, 0, 0, 1, 0, 0, 0, 0, 0.0, '{}', '[]' FROM k;",
    )
    .unwrap();
    drop(c);
    let o = s.iolab(&["results", "import", many.to_str().unwrap(), "--db", t]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("more than the 200000 an import reads in one"), "{}", stderr(&o));
    assert!(!target.exists());
    assert_eq!(stray(s.path(), &["store.db", "big.json", "cell.db", "many.db"]), Vec::<String>::new());
}

/// A run belongs to exactly one experiment: a JSON with a new experiment id and runs this
/// store holds in another is refused naming the run and both experiments (it was stored as
/// an experiment without runs); six imports at once of a forged document and the genuine one
/// leave every run in one experiment, each experiment stored with all its runs.
#[test]
fn a_run_belongs_to_one_experiment() {
    let s = Scratch::new();
    let doc = s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "2"]);
    let id = doc["experiment_id"].as_str().unwrap().to_string();
    let mut forged = doc.clone();
    forged["experiment_id"] = "20200101-000000-f0f0f0".into();
    let file = json_file(&s, "forged.json", &forged);
    let before = counts(&s.db());
    let o = s.iolab(&["results", "import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("this store holds that run in experiment {id}, not 20200101-000000-f0f0f0")),
        "{e}"
    );
    assert_eq!(counts(&s.db()), before);

    // Into a fresh store, the genuine and the forged at once, three of each.
    let genuine = json_file(&s, "genuine.json", &doc);
    let fresh = s.path().join("fresh.db");
    let kids: Vec<_> = (0..6)
        .map(|k| {
            let f = if k % 2 == 0 { &genuine } else { &file };
            command()
                .args(["results", "import", f.to_str().unwrap(), "--db", fresh.to_str().unwrap()])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for k in kids {
        k.wait_with_output().unwrap();
    }
    let c = rusqlite::Connection::open(&fresh).unwrap();
    let exps: Vec<(String, i64)> = c
        .prepare("SELECT e.id, (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id) FROM experiments e")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(exps.len(), 1, "{exps:?}");
    assert_eq!(exps[0].1, 2, "{exps:?}");
}

/// Imported figures are checked against their raw fields: a worker that moved 10^6 bytes in
/// no time, a worker rate or a run's max_SAR that its workers do not give, a run id in two
/// points: each refused naming the run, the phase and the field; nothing is stored.
#[test]
fn imported_figures_must_agree_with_their_raw_fields() {
    let s = Scratch::new();
    let doc = s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1", "--workers", "2"]);
    let target = s.path().join("into.db");
    let rep = "/points/0/phases/0/repetitions/0";
    type Change<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let cases: Vec<(&str, Change<'_>, &str)> = vec![
        (
            "no time",
            Box::new(|d: &mut Value| {
                let w = d.pointer_mut(&format!("{rep}/workers/0")).unwrap();
                w["bytes"] = 1_000_000.into();
                w["time_ns"] = 0.into();
            }),
            "worker 0 moved 1000000 bytes in no time",
        ),
        (
            "worker rate",
            Box::new(|d: &mut Value| {
                let w = d.pointer_mut(&format!("{rep}/workers/1")).unwrap();
                w["bytes_per_s"] = (w["bytes_per_s"].as_f64().unwrap() * 10.0).into();
            }),
            "worker 1's bytes_per_s is",
        ),
        (
            "max_sar",
            Box::new(|d: &mut Value| {
                let r = d.pointer_mut(rep).unwrap();
                r["max_sar_bytes_per_s"] = 1e15.into();
            }),
            "max_sar_bytes_per_s is 1000000000000000, but its workers give",
        ),
        (
            "total",
            Box::new(|d: &mut Value| {
                let r = d.pointer_mut(rep).unwrap();
                r["total_bytes"] = 1.into();
            }),
            "total_bytes is 1, but its workers give",
        ),
    ];
    for (what, change, want) in cases {
        let mut d = doc.clone();
        d["experiment_id"] = "20200101-000000-0a0a0a".into();
        for ph in d["points"][0]["phases"].as_array_mut().unwrap() {
            ph["repetitions"][0]["run_id"] = "cccccccccccccccccccccccccccccccc".into();
        }
        change(&mut d);
        let f = json_file(&s, "x.json", &d);
        let o = s.iolab(&["results", "import", f.to_str().unwrap(), "--db", target.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("run cccccccccccccccccccccccccccccccc phase write: ") && e.contains(want),
            "{what}: {e}"
        );
        assert!(!target.exists(), "{what}");
    }
    // Unchanged, it imports.
    let f = json_file(&s, "ok.json", &doc);
    let o = s.iolab(&["results", "import", f.to_str().unwrap(), "--db", target.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Another store's traced ops come along with its runs (an import once stored the runs and
/// dropped every op: `results trace` then said the run had none); where they cannot (no room
/// where the store goes) the import is refused up front naming the figures, and with
/// `--no-traces` the rest comes without them, said so. A trace op naming no phase of its run
/// is refused; a JSON, which never holds traces, is imported with a note saying so.
#[test]
fn an_import_carries_traces_or_refuses_them_up_front() {
    let s = Scratch::new();
    s.run_json(&["--size", "1MiB", "--bs", "4KiB", "--reps", "2", "--trace"]);
    let (src, db) = (s.db(), s.path().join("into.db"));
    let trace = |db: &Path| s.iolab(&["results", "trace", "last", "--db", db.to_str().unwrap()]);
    let want = trace(&src);
    assert!(want.status.success(), "{}", stderr(&want));
    let ops = want.stdout.iter().filter(|&&b| b == b'\n').count() - 1;
    assert_eq!(ops, 2 * 3 * 256, "two runs of the default three phases of 256 blocks");
    let out = s.iolab(&["results", "import", src.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("2 run(s) added, 0 already present; {ops} traced op(s) carried")),
        "{said}"
    );
    assert_eq!(trace(&db).stdout, want.stdout, "the same ops, op for op");

    // An op of a phase its run does not have: refused naming the run, nothing stored.
    let forged = s.path().join("forged.db");
    std::fs::copy(&src, &forged).unwrap();
    let c = rusqlite::Connection::open(&forged).unwrap();
    c.execute("UPDATE trace_ops SET phase = 9 WHERE op = 0 AND phase = 0", []).unwrap();
    drop(c);
    let fresh = s.path().join("fresh.db");
    let out = s.iolab(&["results", "import", forged.to_str().unwrap(), "--db", fresh.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("of its traced ops name a phase or worker the run does not have"),
        "{}",
        stderr(&out)
    );
    assert!(!fresh.exists());

    // A JSON holds no traces: imported, and said so.
    let json = s.path().join("e.json");
    let o = s.iolab(&["results", "export", "last", "--json", "-o", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = s.iolab(&["results", "import", json.to_str().unwrap(), "--db", fresh.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("never holds its per-op traces: the runs are imported without them"),
        "{}",
        stderr(&out)
    );

    if !crate::rig::is_root() {
        eprintln!("skipped (the store on a small tmpfs): needs root to mount one");
        return;
    }
    let small = s.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let _m = crate::rig::tmpfs(&small, "16m").unwrap();
    let there = small.join("s.db");
    let out = s.iolab(&["results", "import", src.to_str().unwrap(), "--db", there.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains(&format!("its runs hold {ops} traced ops: at least")), "{e}");
    assert!(e.contains("import the rest without them (--no-traces)"), "{e}");
    assert_eq!(std::fs::read_dir(&small).unwrap().count(), 0, "nothing made there");
    let out = s.iolab(&[
        "results",
        "import",
        src.to_str().unwrap(),
        "--db",
        there.to_str().unwrap(),
        "--no-traces",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("its {ops} traced op(s) not carried (--no-traces)")), "{said}");
    assert!(!trace(&there).status.success(), "no traces were carried");
}

/// What the readers rely on is checked by an import: a metadata experiment's JSON without its
/// namespace (`spec.md`; `results show` of it once panicked indexing past an empty list), a
/// point with fewer phases than its spec, no point at all: refused naming the field, nothing
/// made. And a store that holds such an experiment already (stored before imports checked)
/// is read without a panic: the parts that need a plan of its spec are left out.
#[test]
fn imports_check_what_the_readers_rely_on() {
    let s = Scratch::new();
    let doc = s.run_json(&["--op", "create,stat,find,unlink", "--md-files", "20", "--reps", "1"]);
    let into = s.path().join("into.db");
    let import = |doc: &Value, name: &str| {
        let p = json_file(&s, name, doc);
        s.iolab(&["results", "import", p.to_str().unwrap(), "--db", into.to_str().unwrap()])
    };
    let mut no_md = doc.clone();
    no_md["spec"].as_object_mut().unwrap().remove("md");
    let mut point_no_md = doc.clone();
    point_no_md["points"][0]["spec"].as_object_mut().unwrap().remove("md");
    let mut short = doc.clone();
    short["points"][0]["phases"].as_array_mut().unwrap().pop();
    let mut empty = doc.clone();
    empty["points"] = serde_json::json!([]);
    for (doc, field, says) in [
        (&no_md, "spec.md", "phase create is a metadata phase, and the spec has no namespace"),
        (&point_no_md, "points[0].spec.md", "phase create is a metadata phase"),
        (&short, "points[0].phases", "3 phases, and its spec has 4"),
        (&empty, "points", "an experiment has at least one point"),
    ] {
        let out = import(doc, "bad.json");
        assert_eq!(out.status.code(), Some(2), "{field}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains(&format!("error: {field} = ``: in ")) && e.contains(says), "{field}: {e}");
        assert!(!into.exists(), "{field}: no store made");
    }

    // Such an experiment in a store already: every reader reads it, none panics.
    let c = rusqlite::Connection::open(s.db()).unwrap();
    c.execute(
        "UPDATE experiments SET spec_json = json_remove(spec_json, '$.md'),
                                points_json = json_remove(points_json, '$[0].spec.md')",
        [],
    )
    .unwrap();
    drop(c);
    let (html, svg) = (s.path().join("r.html"), s.path().join("p.svg"));
    for args in [
        &["results", "show", "last"][..],
        &["results", "export", "last", "--json"],
        &["results", "export", "last", "--csv"],
        &["report", "--last", "-o", html.to_str().unwrap()],
        &["plot", "last", "-o", svg.to_str().unwrap()],
        &["results", "list"],
    ] {
        let out = s.iolab(args);
        let e = stderr(&out);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert!(out.status.success(), "{args:?}: {e}");
    }
    let out = s.iolab(&["results", "show", "last"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("create") && table.contains("unlink"), "{table}");
}
