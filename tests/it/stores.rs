//! The store from outside a run: commands that only read never create or change one and read
//! it from read-only media.

use std::path::Path;

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
