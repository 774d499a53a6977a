//! The store from outside a run: commands that only read never create or change one and read
//! it from read-only media; imports check what comes in, name the user's file, store each
//! experiment with its runs or not at all, and leave nothing behind when they fail.

use std::path::{Path, PathBuf};

use crate::rig::{self, is_root};
use crate::util::*;

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Rows of the store's tables, as counts: (experiments, runs, phase results).
fn counts(db: &Path) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let n = |t: &str| c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap();
    (n("experiments"), n("runs"), n("phase_results"))
}

/// A store holding one small experiment of two runs, with its JSON.
fn small_store(s: &Scratch) -> Value {
    s.run_json(&["--op", "write,read:cold", "--size", "256KiB", "--bs", "64KiB", "--reps", "2"])
}

/// A read-only command with a store that is not there fails naming the path, exit 2, and
/// creates nothing: no store, no directory, no sidecar file.
#[test]
fn read_only_commands_never_create_a_store() {
    let s = Scratch::new();
    let before = files(s.path());
    for db in [s.path().join("typo.db"), s.path().join("no/such/dir/iolab.db")] {
        let d = db.to_str().unwrap();
        for args in [
            vec!["results", "list", "--db", d],
            vec!["results", "show", "last", "--db", d],
            vec!["results", "export", "last", "--json", "--db", d],
            vec!["results", "trace", "last", "--db", d],
            vec!["results", "compare", "--db", d],
            vec!["results", "strategies", "last", "--db", d],
            vec!["report", "--last", "--db", d],
            vec!["plot", "last", "--db", d],
        ] {
            let out = s.iolab(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
            assert!(
                stderr(&out).contains(&format!("db = `{d}`: no store there")),
                "{args:?}: {}",
                stderr(&out)
            );
            assert!(out.stdout.is_empty(), "{args:?}");
            assert_eq!(files(s.path()), before, "{args:?} left files");
        }
    }
    // The default store ($IOLAB_DB) likewise.
    let out = s.iolab(&["results", "list"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("db = `{}`", s.db().display())), "{}", stderr(&out));
    assert_eq!(files(s.path()), before);
    // A path that is something else than a file is named with what it is.
    let out = s.iolab(&["results", "list", "--db", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("db = `/dev/null`: a character device, not a store"), "{}", stderr(&out));
}

/// A store copied onto read-only media (a tmpfs remounted read-only, as root; else a
/// directory and file without write permission) is read by `results list`, `show`, `report`
/// and imported from, exactly as where it was made, and nothing is written beside it.
#[test]
fn a_store_on_read_only_media_is_read() {
    let s = Scratch::new();
    let doc = small_store(&s);
    let id = doc["experiment_id"].as_str().unwrap();
    let want_list = s.iolab(&["results", "list"]).stdout;
    let want_show = s.iolab(&["results", "show", id, "--json"]).stdout;
    assert_eq!(serde_json::from_slice::<Value>(&want_show).unwrap(), doc);

    let ro = s.path().join("ro");
    let _mount = if is_root() {
        match rig::tmpfs(&ro, "16m") {
            Ok(m) => Some(m),
            Err(e) => crate::skip!("cannot mount a tmpfs: {e}"),
        }
    } else {
        eprintln!(
            "not root: the read-only store is in a directory without write permission instead of on a read-only mount"
        );
        std::fs::create_dir(&ro).unwrap();
        None
    };
    let db = ro.join("copy.db");
    std::fs::copy(s.db(), &db).unwrap();
    if is_root() {
        rig::sh("mount", &["-o", "remount,ro", ro.to_str().unwrap()]).unwrap();
        assert!(std::fs::write(ro.join("probe"), b"x").is_err(), "the mount is not read-only");
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let d = db.to_str().unwrap();
    let out = s.iolab(&["results", "list", "--db", d]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, want_list);
    let out = s.iolab(&["results", "show", &id[..8], "--json", "--db", d]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), doc);
    let out = s.iolab(&["report", "--last", "--db", d]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8(out.stdout).unwrap().contains(id));
    assert_eq!(files(&ro), ["copy.db"], "nothing written beside the store");

    // Imported from there into a new store: the same experiment.
    let other = s.path().join("other.db");
    let out = s.iolab(&["results", "import", d, "--db", other.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 new; 2 run(s) added"), "{out:?}");
    let back = s.iolab(&["results", "show", id, "--json", "--db", other.to_str().unwrap()]).stdout;
    assert_eq!(serde_json::from_slice::<Value>(&back).unwrap(), doc);
    assert_eq!(files(&ro), ["copy.db"]);
    if !is_root() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Writes `doc` as JSON to `name` in the scratch directory.
fn json_file(s: &Scratch, name: &str, doc: &Value) -> PathBuf {
    let p = s.path().join(name);
    std::fs::write(&p, serde_json::to_vec(doc).unwrap()).unwrap();
    p
}

/// Imports refuse a schema version this build does not read and ids iolab would never make
/// (paths, markup), naming the field, the value and the file; nothing is stored, and a store
/// that did not exist is not created.
#[test]
fn imports_refuse_unknown_schemas_and_ids_iolab_never_makes() {
    let s = Scratch::new();
    let doc = small_store(&s);
    let before = counts(&s.db());
    assert_eq!(before, (1, 2, 4));
    let run0 = doc["points"][0]["phases"][0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let new_db = s.path().join("new/sub/iolab.db");
    // (what, the field as a JSON pointer, its new value, the error's start)
    let cases = [
        ("schema", "/schema_version", Value::from(999), "schema_version = `999`"),
        ("path id", "/experiment_id", "../../etc/evil".into(), "experiment_id = `../../etc/evil`"),
        (
            "markup id",
            "/experiment_id",
            "<img src=x onerror=alert(1)>".into(),
            "experiment_id = `<img src=x onerror=alert(1)>`",
        ),
        ("run id", "/points/0/phases/1/repetitions/1/run_id", "../x".into(), "run_id = `../x`"),
    ];
    for (what, field, value, want) in cases {
        let mut bad = doc.clone();
        // A fresh experiment id, so that only the check under test can refuse it.
        bad["experiment_id"] = "20200101-000000-abcdef".into();
        *bad.pointer_mut(field).unwrap() = value;
        let file = json_file(&s, "bad.json", &bad);
        let f = file.to_str().unwrap();
        for db in [s.db(), new_db.clone()] {
            let out = s.iolab(&["results", "import", f, "--db", db.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
            let err = stderr(&out);
            assert!(err.contains(want) && err.contains(f), "{what}: {err}");
            if what == "schema" {
                assert!(err.contains("reads schema versions 1 to 2"), "{err}");
            }
        }
        assert_eq!(counts(&s.db()), before, "{what}");
        assert!(!s.path().join("new").exists(), "{what}: a failed import made a store");
    }
    // The good document still imports (nothing new: it is the same experiment), and the run
    // ids are the ones iolab made.
    assert!(run0.len() == 32 && run0.bytes().all(|b| b.is_ascii_hexdigit()), "{run0}");
    let file = json_file(&s, "good.json", &doc);
    let out = s.iolab(&["results", "import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(counts(&s.db()), before);
}

/// An experiment is stored with its runs or not at all: a document whose second run cannot be
/// stored (its phases listed twice under one run id) leaves neither the experiment nor its
/// first run behind, in an existing store or a new one.
#[test]
fn an_experiment_is_imported_with_all_its_runs_or_not_at_all() {
    let s = Scratch::new();
    let mut doc = small_store(&s);
    let before = counts(&s.db());
    doc["experiment_id"] = "20200101-000000-123456".into();
    for ph in doc["points"][0]["phases"].as_array_mut().unwrap() {
        let reps = ph["repetitions"].as_array_mut().unwrap();
        reps[0]["run_id"] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into();
        reps[1]["run_id"] = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb".into();
    }
    // Run b's write phase appears twice: the second copy cannot be stored.
    let dup = doc["points"][0]["phases"][0]["repetitions"][1].clone();
    doc["points"][0]["phases"][0]["repetitions"].as_array_mut().unwrap().push(dup);
    let file = json_file(&s, "torn.json", &doc);
    let out = s.iolab(&["results", "import", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(counts(&s.db()), before, "part of the experiment was stored");
    let list = String::from_utf8(s.iolab(&["results", "list"]).stdout).unwrap();
    assert!(!list.contains("20200101-000000-123456"), "{list}");
    // Into a store that did not exist: none is left.
    let new_db = s.path().join("fresh/iolab.db");
    let out = s.iolab(&["results", "import", file.to_str().unwrap(), "--db", new_db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!s.path().join("fresh").exists(), "{:?}", files(s.path()));
}

/// Importing an SQLite file that is not an iolab store names that file (not the copy it is
/// read through), exit 2; the copy is removed and no store is created.
#[test]
fn a_foreign_sqlite_file_is_named_as_given() {
    let s = Scratch::new();
    let foreign = s.path().join("photos.sqlite");
    let c = rusqlite::Connection::open(&foreign).unwrap();
    c.execute_batch(
        "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos VALUES (1, 'a');",
    )
    .unwrap();
    drop(c);
    let before = files(s.path());
    let f = foreign.to_str().unwrap();
    let out = s.iolab(&["results", "import", f]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("import = `{f}`: not an iolab store")), "{err}");
    assert!(!err.contains(".iolab-import-"), "{err}");
    assert_eq!(files(s.path()), before, "the copy or a store was left behind");
    // Into an existing store too: it is unchanged.
    small_store(&s);
    let before = (counts(&s.db()), files(s.path()));
    let out = s.iolab(&["results", "import", f]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains(".iolab-import-"), "{}", stderr(&out));
    assert_eq!((counts(&s.db()), files(s.path())), before);
}

/// Several iolabs creating one store at the same instant all get it, with its schema, however
/// their opens interleave (one of them sets the journal mode while the others wait).
#[test]
fn stores_created_at_once_by_several_openers_all_open() {
    let s = Scratch::new();
    for round in 0..40 {
        let path = s.path().join(format!("race{round}.db"));
        let gate = std::sync::Barrier::new(4);
        std::thread::scope(|sc| {
            let opened: Vec<_> = (0..4)
                .map(|_| {
                    sc.spawn(|| {
                        gate.wait();
                        iolab::store::Store::open(&path).map(|st| st.list().unwrap().len())
                    })
                })
                .collect();
            for h in opened {
                assert_eq!(h.join().unwrap().unwrap_or_else(|e| panic!("round {round}: {e}")), 0);
            }
        });
    }
}
