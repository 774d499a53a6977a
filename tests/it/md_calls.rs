//! The metadata phases with mdtest's calls (`md_calls = mdtest`): every item named by its
//! whole path from the test directory (seen in strace: openat2 and fstatat of `md/w0/t1/f0.5`,
//! an O_PATH walk to the directory before each unlink), the `sync` command after each phase
//! that changes the namespace, and find counting as pfind (every entry an op, only the names
//! that match stated); the counts in `calls` and `found` are these.

use std::process::Command;

use crate::util::*;

/// The names iolab gives worker `w`'s `n` items (`f<w>.<k>`) that match `*1*`.
fn matching(w: u64, n: u64) -> u64 {
    (0..n).filter(|k| format!("f{w}.{k}").contains('1')).count() as u64
}

#[test]
fn mdtest_calls_name_every_item_by_its_path_and_find_counts_as_pfind() {
    let s = Scratch::new();
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skip: no strace (scripts/test.sh installs it)");
        return;
    }
    let dir = s.path().to_str().unwrap();
    let log = s.path().join("strace.log");
    let args = [
        "run",
        "--op",
        "create,find,stat,read-files,unlink",
        "--md-files",
        "40",
        "--md-size",
        "100",
        "--md-calls",
        "mdtest",
        "--md-depth",
        "1",
        "--md-fanout",
        "2",
        "--workers",
        "2",
        "--md-find",
        "*1*",
        "--reps",
        "1",
        "--json",
        "--quiet",
        "--no-store",
        "--dir",
        dir,
    ];
    let o = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat2,newfstatat,unlinkat,execve", "-o"])
        .arg(&log)
        .arg(bin())
        .args(args)
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .current_dir(s.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let phase =
        |name: &str| phases(&doc).iter().find(|p| p["name"] == name).unwrap()["repetitions"][0].clone();
    let calls = |r: &Value, w: usize, call: &str| r["workers"][w]["calls"][call].as_u64().unwrap_or(0);
    // 40 items per worker in 3 directories (14, 14, 12).
    for (name, call, per) in [
        ("create", "openat2", 40),
        ("stat", "fstatat", 40),
        ("read-files", "openat2", 40),
        ("unlink", "unlinkat", 40),
    ] {
        let r = phase(name);
        assert_eq!(r["ops"], 80, "{name}");
        for w in 0..2 {
            assert_eq!(calls(&r, w, call), per, "{name} worker {w}: {}", r["workers"][w]["calls"]);
        }
    }
    for name in ["create", "unlink"] {
        let r = phase(name);
        for w in 0..2 {
            assert_eq!(calls(&r, w, "sync"), 1, "{name}: the sync command once per worker");
        }
    }
    // The walk to each item's directory before its unlink.
    assert_eq!(calls(&phase("unlink"), 0, "openat2"), 40);
    // find: every entry an op; only the 13 (of 40) names with a 1 stated, per worker.
    let r = phase("find");
    assert_eq!(r["ops"], 80);
    for w in 0..2 {
        assert_eq!(calls(&r, w, "fstatat"), matching(w as u64, 40), "worker {w}");
    }
    assert_eq!(r["namespace"]["found"], matching(0, 40) + matching(1, 40));
    // In the calls themselves: whole paths from the test directory.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let has = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert!(has("\"md/w1/t2/f1.39\"") >= 3, "create, read and stat by path: {}", has("\"md/w1/t2/f1.39\""));
    assert!(lines.iter().any(|l| l.contains("newfstatat(") && l.contains("\"md/w0/f0.0\"")), "stat by path");
    assert!(
        lines.iter().any(|l| l.contains("openat2(") && l.contains("\"md/w0/t1/.\"") && l.contains("O_PATH")),
        "the walk before an unlink"
    );
    assert!(
        lines.iter().any(|l| l.contains("unlinkat(") && l.contains("\"f0.14\"")),
        "unlink of the name there"
    );
    assert!(lines.iter().any(|l| l.contains("execve(") && l.contains("\"sync\"")), "the sync command");
    assert!(
        !lines.iter().any(|l| l.contains("unlinkat(") && l.contains("\"md/")),
        "no removal by a path that could cross a link"
    );
}
