//! The metadata phases on real directories: every item made, looked at and removed exactly
//! once per worker, the names on disk the computed ones with the bytes iolab wrote, nothing
//! left after a run, kept names removed by `iolab clean` by the namespace's rule, refusals
//! before any I/O, process workers, and a full file system stopping the run by name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::rig::*;
use crate::skip;
use crate::util::*;

/// The phase named `name` of point 0.
fn phase<'a>(doc: &'a Value, name: &str) -> &'a Value {
    phases(doc).iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no phase {name}"))
}

/// Each worker's (ops, calls) in repetition `rep` of a phase.
fn worker_ops(ph: &Value, rep: usize) -> Vec<(u64, Value)> {
    ph["repetitions"][rep]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["ops"].as_u64().unwrap(), w["calls"].clone()))
        .collect()
}

/// Every path under `dir`, relative to it, directories with a trailing `/`.
fn tree(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"));
                walk(base, &p, out);
            } else {
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// Two workers, a tree of depth 1 and fan-out 3 each: every phase does exactly its items' ops
/// and system calls, find stats every entry once and finds the names the pattern matches, the
/// bytes count what create wrote and read-files read, and nothing is left.
#[test]
fn every_item_is_made_visited_and_removed_exactly_once() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "create,stat,read-files,open,rename,stat,find,unlink",
        "--workers",
        "2",
        "--md-files",
        "50",
        "--md-depth",
        "1",
        "--md-fanout",
        "3",
        "--md-size",
        "100",
        "--md-find",
        "*1",
        "--reps",
        "2",
    ]);
    assert!(doc["spec"]["md"]["items"] == 50, "{}", doc["spec"]["md"]);
    let calls = |c: &[(&str, u64)]| -> Value {
        Value::Object(c.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect())
    };
    let want: &[(&str, Value)] = &[
        ("create", calls(&[("openat", 50), ("write", 50), ("close", 50)])),
        ("stat", calls(&[("fstatat", 50)])),
        ("read-files", calls(&[("openat", 50), ("read", 50), ("close", 50)])),
        ("open", calls(&[("openat", 50), ("close", 50)])),
        ("rename", calls(&[("renameat2", 50)])),
        ("unlink", calls(&[("unlinkat", 50)])),
    ];
    for rep in 0..2 {
        for (name, c) in want {
            let ph = phase(&doc, name);
            assert_eq!(ph["repetitions"][rep]["status"], "complete", "{name}");
            assert_eq!(worker_ops(ph, rep), vec![(50, c.clone()), (50, c.clone())], "{name} rep {rep}");
        }
        let bytes = |name: &str| phase(&doc, name)["repetitions"][rep]["total_bytes"].as_u64().unwrap();
        assert_eq!((bytes("create"), bytes("read-files"), bytes("stat")), (10_000, 10_000, 0));
        // find: each worker walks its own tree: 3 subdirectories and 50 items, all stated.
        let find = phase(&doc, "find");
        let f = worker_ops(find, rep);
        assert_eq!(f.iter().map(|(n, _)| n).collect::<Vec<_>>(), [&53, &53]);
        assert!(f.iter().all(|(_, c)| c["fstatat"] == 53 && c["getdents64"].as_u64().unwrap() >= 8), "{f:?}");
        // The names (renamed: `f<w>.<k>.r`) ending in 1: none renamed end in 1; the tree's
        // `t1` does: one per worker.
        let ns = &find["repetitions"][rep]["namespace"];
        assert_eq!(ns["found"], 2, "{ns}");
        // Names: per tree 4 directories and 50 items.
        assert_eq!(ns["names"], 2 * (4 + 50), "{ns}");
        for name in ["stat", "stat#2", "find"] {
            let r = &phase(&doc, name)["repetitions"][rep];
            assert!(r["max_sar_ops_per_s"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["min_sar_ops_per_s"].as_f64().unwrap() <= r["max_sar_ops_per_s"].as_f64().unwrap());
        }
    }
    assert_eq!(phase(&doc, "stat")["summary"]["of"], "max_sar_ops_per_s");
    assert_eq!(phase(&doc, "stat")["cache"]["policy"], "asis");
    assert!(s.leftovers().is_empty(), "left behind: {:?}", s.leftovers());
}

/// The bytes create writes into item `k` of `owner`: the seeded fill with the item's stamps.
fn item_bytes(seed: u64, owner: u32, k: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    iolab::plan::fill::fill(&mut b, seed ^ owner as u64);
    iolab::plan::fill::stamp(&mut b, iolab::plan::namespace::item_salt(seed, owner, k), 0);
    b
}

/// A kept create leaves exactly the names the namespace computes (worker 1 of 2, 20 files of
/// 10 bytes, depth 1, fan-out 2: 7 items per directory) with the bytes iolab wrote; `iolab
/// clean` removes them and leaves a file someone put among them, with the directories
/// holding it.
#[test]
fn kept_names_are_the_computed_ones_and_clean_removes_only_them() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "create",
        "--workers",
        "2",
        "--md-files",
        "20",
        "--md-depth",
        "1",
        "--md-fanout",
        "2",
        "--md-size",
        "10",
        "--reps",
        "1",
        "--keep",
    ]);
    let run = phase(&doc, "create")["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let wd = work_dir(s.path(), &run);
    let mut want = BTreeSet::from(["md/".to_string()]);
    for w in 0..2u32 {
        want.insert(format!("md/w{w}/"));
        want.insert(format!("md/w{w}/t1/"));
        want.insert(format!("md/w{w}/t2/"));
        for k in 0..20u64 {
            let dir = ["", "t1/", "t2/"][(k / 7) as usize];
            want.insert(format!("md/w{w}/{dir}f{w}.{k}"));
        }
    }
    let mut got = tree(&wd);
    got.remove(".iolab-owner");
    assert_eq!(got, want);
    for (w, k) in [(0u32, 0u64), (1, 13), (1, 19)] {
        let dir = ["", "t1/", "t2/"][(k / 7) as usize];
        let bytes = std::fs::read(wd.join(format!("md/w{w}/{dir}f{w}.{k}"))).unwrap();
        assert_eq!(bytes, item_bytes(1, w, k, 10), "f{w}.{k}");
    }
    let marker = std::fs::read_to_string(wd.join(".iolab-owner")).unwrap();
    assert!(
        marker.contains("namespace = items=20 owners=2 dirs=unique depth=1 fanout=2 kind=files\n"),
        "{marker}"
    );
    // Someone else's file among iolab's names, and one with an iolab-like name of a worker
    // that does not exist.
    std::fs::write(wd.join("md/w0/t1/notes"), b"mine").unwrap();
    std::fs::write(wd.join("md/w1/f7.3"), b"mine too").unwrap();
    let out = s.iolab(&["clean", s.path().to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{report}{}", stderr(&out));
    assert!(report.contains("0 files and 40 namespace items, 400 B"), "{report}");
    let mut left = tree(&wd);
    left.remove(".iolab-owner");
    let left: Vec<String> = left.into_iter().collect();
    assert_eq!(left, ["md/", "md/w0/", "md/w0/t1/", "md/w0/t1/notes", "md/w1/", "md/w1/f7.3"], "{report}");
    assert!(report.contains("notes (not created by iolab)"), "{report}");
}

/// Directories as items: mkdir, stat, rename, rmdir; shared tree, find shares its entries
/// among the workers so every entry is stated once.
#[test]
fn directory_items_in_a_shared_tree() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "mkdir,stat,find,rename,rmdir",
        "--workers",
        "3",
        "--md-files",
        "40",
        "--md-dirs",
        "shared",
        "--md-depth",
        "2",
        "--md-fanout",
        "2",
        "--md-shift",
        "1",
        "--reps",
        "1",
    ]);
    for (name, call) in
        [("mkdir", "mkdirat"), ("stat", "fstatat"), ("rename", "renameat2"), ("rmdir", "unlinkat")]
    {
        let w = worker_ops(phase(&doc, name), 0);
        assert_eq!(w.len(), 3);
        assert!(w.iter().all(|(n, c)| *n == 40 && c[call] == 40), "{name}: {w:?}");
    }
    // One tree of 7 directories (6 below the root) holding 3 x 40 items: 126 entries, each
    // stated by exactly one worker.
    let f = worker_ops(phase(&doc, "find"), 0);
    assert_eq!(f.iter().map(|(n, _)| n).sum::<u64>(), 126, "{f:?}");
    assert!(f.iter().all(|(n, _)| *n > 0), "every worker has a share: {f:?}");
    assert_eq!(phase(&doc, "find")["repetitions"][0]["namespace"]["found"], 126);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// Process workers run the same loop: the same counts.
#[test]
fn process_workers_run_metadata_phases() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "create,stat,unlink",
        "--launcher",
        "process",
        "--workers",
        "2",
        "--md-files",
        "30",
        "--reps",
        "1",
    ]);
    for name in ["create", "stat", "unlink"] {
        let w = worker_ops(phase(&doc, name), 0);
        assert_eq!(w.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [30, 30], "{name}");
    }
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// A first phase that needs items gets them made untimed; a traced stat keeps each item's
/// directory and number; a cold phase says what the kernel's counts allow.
#[test]
fn a_first_stat_finds_its_items_and_a_cold_one_is_bounded() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "stat,stat:warm",
        "--md-files",
        "25",
        "--md-depth",
        "1",
        "--reps",
        "1",
        "--trace",
    ]);
    let w = worker_ops(phase(&doc, "stat"), 0);
    assert_eq!(w[0].0, 25);
    assert_eq!(phase(&doc, "stat:warm")["repetitions"][0]["namespace"]["looked_up"], 25 + 1);
    let run = phase(&doc, "stat")["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let id = doc["experiment_id"].as_str().unwrap();
    let out = s.iolab(&["results", "trace", id, "--phase", "stat"]);
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    // A metadata op's `file` is its item's directory in the tree, `offset_bytes` its number.
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 25, "{csv}");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(
            (r[0], r[3], r[5], r[7]),
            (run.as_str(), "stat", k.to_string().as_str(), k.to_string().as_str())
        );
        // 25 items over 2 directories: 13 in the root, 12 in t1.
        assert_eq!(r[6], if k < 13 { "0" } else { "1" }, "{r:?}");
    }
    if !is_root() {
        skip!("a cold metadata phase drops the kernel's caches, which needs root");
    }
    let doc = s.run_json(&["--op", "create,stat:cold", "--md-files", "25", "--reps", "1"]);
    let ns = &phase(&doc, "stat:cold")["repetitions"][0]["namespace"];
    assert!(ns["dentries_after"].as_u64().is_some() && ns["cached_at_most"].as_f64().is_some(), "{ns}");
    let flags = phase(&doc, "stat:cold")["flags"].as_array().unwrap();
    let unverified = flags.iter().any(|f| f.as_str().unwrap().starts_with("cold unverified"));
    assert_eq!(unverified, ns["cached_at_most"].as_f64().unwrap() > 0.05, "{flags:?} {ns}");
}

/// A cold read of small files (IO500's mdtest-hard read) reads them from the disk: the drop
/// takes the files' pages too, not only the names (an inode stays cached while its pages do).
#[test]
fn a_cold_read_of_small_files_reads_them_from_the_disk() {
    if !is_root() {
        skip!("a cold metadata phase drops the kernel's caches, which needs root");
    }
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--op",
        "create,read-files:cold",
        "--md-files",
        "200",
        "--md-size",
        "3901",
        "--reps",
        "1",
    ]);
    let r = &phase(&doc, "read-files:cold")["repetitions"][0];
    assert_eq!(r["total_bytes"].as_u64(), Some(200 * 3901), "{r}");
    let devices = r["env"]["devices"].as_array().unwrap();
    if devices.is_empty() {
        skip!("the scratch directory is on no block device: no read count to check");
    }
    let read: u64 = devices.iter().map(|d| d["read_bytes"].as_u64().unwrap()).sum();
    // Every file's one page, from the device (read-ahead may add to it, never take away).
    assert!(read >= 200 * 4096, "read {read} bytes from the device for 200 cold files: {devices:?}");
}

/// What cannot run is refused before anything is made (exit 2, the parameter named).
#[test]
fn impossible_namespaces_are_refused_by_name() {
    refused_by_name(&[
        (&["--op", "create,create"][..], "ops", "exist already"),
        (&["--op", "create,unlink,stat"][..], "ops", "removed by an earlier phase"),
        (&["--op", "create,mkdir"][..], "ops", "not both"),
        (&["--op", "mkdir", "--md-size", "10"][..], "md_size", "directories"),
        (&["--op", "create", "--engine", "null"][..], "engine", "real files"),
        (&["--op", "create", "--md-files", "0"][..], "md_files", "between 1"),
        (&["--op", "create", "--md-dirs", "many"][..], "md_dirs", "unique or shared"),
        (&["--op", "create", "--md-depth", "30", "--md-fanout", "10"][..], "md_depth", "directories"),
        (&["--op", "create:workers=2"][..], "ops", "takes no `workers`"),
        (&["--op", "create", "--md-find", "a/b"][..], "md_find", "no `/`"),
        (&["--op", "create", "--md-shift", "node"][..], "md_shift", "MPI"),
    ]);
}

/// A file system that runs out of inodes mid-run stops it: exit 1, the call and the item's
/// path named, the finished runs kept, the failed one stored failed, nothing of iolab's left.
#[test]
fn running_out_of_inodes_stops_the_run_naming_the_call_and_path() {
    if !is_root() {
        skip!("mounting a tmpfs needs root");
    }
    let s = Scratch::new();
    let t: PathBuf = s.path().join("t");
    let _m = match tmpfs_with(&t, "size=100m,nr_inodes=3000") {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    let d = t.to_str().unwrap().to_string();
    let args = ["run", "-q", "--dir", &d, "--op", "create,unlink", "--md-files", "500", "--reps", "100000"];
    let mut child = spawn(&s, &args);
    wait_until(120, "finished runs", || {
        assert!(child.try_wait().unwrap().is_none(), "iolab ended early");
        count(&runs(&s.db()), "complete") >= 2
    });
    // Take every inode iolab does not hold now, and those it frees, until it stops.
    let mut n = 0u64;
    while child.try_wait().unwrap().is_none() {
        if std::fs::write(t.join(format!("filler.{n}")), b"").is_ok() {
            n += 1;
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let out = finish(child, 10);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let r = runs(&s.db());
    assert!(count(&r, "complete") >= 2, "{r:?}");
    let (status, msg) = r.last().unwrap().clone();
    assert_eq!(status, "failed");
    let msg = msg.unwrap();
    assert!(msg.contains("No space left on device"), "{msg}");
    assert!(msg.contains("openat(O_CREAT|O_EXCL) on ") || msg.contains("mkdir on "), "{msg}");
    assert!(msg.contains(&format!("{d}/.iolab-")), "{msg}");
    for i in 0..n {
        std::fs::remove_file(t.join(format!("filler.{i}"))).unwrap();
    }
    assert!(work_dirs(&t).is_empty(), "left behind: {:?}", work_dirs(&t));
}

/// `iolab run --dir SCRATCH ARGS` for each case: exit 2, the message names the field (or the
/// phase as written) and says why, and nothing is made.
pub(crate) fn refused_by_name(cases: &[(&[&str], &str, &str)]) {
    let s = Scratch::new();
    for &(args, field, why) in cases {
        let mut all = vec!["run", "--dir", s.path().to_str().unwrap()];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(field) && err.contains(why), "{args:?}: {err}");
        assert!(s.leftovers().is_empty(), "{args:?} left {:?}", s.leftovers());
    }
}

/// Makes a chain of `n` directories `x/x/x/...` under `dir`, one `mkdirat` and `openat` at a
/// time (its path passes PATH_MAX).
fn plant_chain(dir: &Path, n: usize) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain libc calls on NUL-terminated names and descriptors this test opened.
    unsafe {
        let mut fd = libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        assert!(fd >= 0);
        for _ in 0..n {
            assert_eq!(libc::mkdirat(fd, c"x".as_ptr(), 0o755), 0);
            let next = libc::openat(fd, c"x".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        libc::close(fd);
    }
}

/// How deep the chain `x/x/...` under `dir` goes.
fn chain_depth(dir: &Path) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    let mut depth = 0;
    // SAFETY: as above.
    unsafe {
        let mut fd = libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        loop {
            let next = libc::openat(fd, c"x".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
            libc::close(fd);
            if next < 0 {
                return depth;
            }
            (fd, depth) = (next, depth + 1);
        }
    }
}

/// A chain of 3,000 directories planted in a worker's tree between the create and the find
/// (the walk once recursed down it and overflowed its stack: exit 134, an experiment stored
/// with nothing): the find goes no deeper than iolab made the tree, fails naming the first
/// directory below it, the chain stays whole, and `clean` keeps it, naming it.
#[test]
fn a_foreign_chain_3000_deep_stops_find_by_name_and_stays() {
    let s = Scratch::new();
    let t = s.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let go = s.path().join("go");
    let child = spawn_with(
        &s,
        &[
            "run",
            "-q",
            "--dir",
            t.to_str().unwrap(),
            "--op",
            "create,find,unlink",
            "--md-files",
            "10",
            "--reps",
            "3",
        ],
        |c| c.env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go),
    );
    let root = std::cell::RefCell::new(PathBuf::new());
    wait_until(60, "the create phase's ten files", || {
        let made = std::fs::read_dir(&t)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("md/w0"))
            .find(|p| std::fs::read_dir(p).is_ok_and(|d| d.count() == 10));
        made.map(|p| *root.borrow_mut() = p).is_some()
    });
    let root = root.into_inner();
    plant_chain(&root, 3000);
    std::fs::write(&go, b"").unwrap();
    let out = finish(child, 60);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    let x = root.join("x");
    assert!(
        e.contains(&format!(
            "find: {}: a directory 1 level below the tree's root, deeper than any iolab made there (at most 0)",
            x.display()
        )),
        "{e}"
    );
    assert!(e.contains("md/w0/x (not created by iolab)"), "the work directory is kept, naming it: {e}");
    assert_eq!(chain_depth(&root), 3000, "the chain stays whole");
    let out = s.iolab(&["clean", t.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!("kept the directory because of {} (not created by iolab)", x.display())),
        "{report}"
    );
    assert_eq!(chain_depth(&root), 3000, "clean leaves the chain whole");
}
