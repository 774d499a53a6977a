//! What iolab says of a target's file system where its mount is hard to read or its client
//! unknown: a FUSE file system (bindfs) mounted at a path with every character mountinfo
//! escapes (space, tab, newline, backslash) is found and named; every cold phase on it, data
//! or metadata, carries the label of the client cache iolab cannot reach; and a metadata
//! phase's commit says what a syncfs does on FUSE; a rename phase, which FUSE daemons without
//! rename2 cannot make, is refused up front naming the file system.

use std::path::Path;

use crate::rig::*;
use crate::skip;
use crate::util::*;

#[test]
fn a_fuse_mount_at_an_escaped_path_is_found_and_every_cold_phase_labelled() {
    if !is_root() {
        skip!("mounting bindfs needs root");
    }
    if sh("bindfs", &["--version"]).is_err() {
        skip!("no bindfs here (scripts/test.sh installs it)");
    }
    let s = Scratch::new();
    let src = s.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let mnt = s.path().join("a b\tc\nd\\e");
    std::fs::create_dir(&mnt).unwrap();
    sh("bindfs", &[src.to_str().unwrap(), mnt.to_str().unwrap()]).unwrap();
    let _m = Mount { path: mnt.clone() };
    let dir = mnt.to_str().unwrap();
    let o = s.iolab(&["info", "--json", dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let info: Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &info["targets"][0];
    assert_eq!((t["fs_type"].as_str(), t["mount_point"].as_str()), (Some("fuse"), Some(dir)), "{t}");
    assert_eq!(t["mount_source"], src.to_str().unwrap());
    let label = "the fuse FUSE daemon, which iolab does not know (fuse)";
    let data = s.run_json(&["--dir", dir, "--op", "write,read:cold", "--size", "1MiB", "--reps", "1"]);
    assert_eq!(phases(&data)[1]["cache"]["client_cache_not_controlled"], label, "a data cold read");
    let md = s.run_json(&[
        "--dir",
        dir,
        "--op",
        "create,stat:cold,read-files:cold,unlink",
        "--md-files",
        "20",
        "--md-size",
        "100",
        "--reps",
        "1",
    ]);
    for ph in &phases(&md)[1..3] {
        assert_eq!(ph["cache"]["client_cache_not_controlled"], label, "{}", ph["name"]);
    }
    let table =
        String::from_utf8_lossy(&s.iolab(&["results", "show", "last", "--explain"]).stdout).into_owned();
    assert!(
        table.contains(
            "stat:cold        cold (kernel pages only; the file system client's cache not controlled)"
        ),
        "{table}"
    );
    assert!(
        table.contains("commit end by syncfs (on fuse, syncfs reaches no daemon, FUSE having no commit of a whole file system"),
        "{table}"
    );
    // bindfs has no RENAME_NOREPLACE (as MooseFS and GlusterFS): a rename phase is refused
    // up front, naming the file system, where it once failed mid-run with a bare EINVAL.
    let args = ["run", "--dir", dir, "--op", "create,rename,unlink", "--md-files", "20", "--reps", "1"];
    let o = s.iolab(&args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ops = `create,rename,unlink`: rename calls renameat2 with RENAME_NOREPLACE")
            && err.contains("(fuse, a FUSE file system iolab does not know")
            && err.contains("refuses: Invalid argument"),
        "{err}"
    );
    assert!(!Path::new(&src).read_dir().unwrap().any(|e| e.is_ok()), "left behind");
}
