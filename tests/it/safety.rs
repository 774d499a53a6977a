//! Safety: work directories and `iolab clean`, user files never touched, devices refused,
//! preflight per file system, signals, kill -9, a shared store, malformed stores.

use std::path::Path;

use crate::rig::*;
use crate::skip;
use crate::util::*;

/// A user's files around the target: a sibling file, a file with a name iolab uses for its data,
/// a directory named like a work directory but without a marker, and a file named like a
/// marker. Returns (path, content) of each file, to check later.
fn plant_user_files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mine = dir.join(".iolab-mine");
    std::fs::create_dir(&mine).unwrap();
    let files = vec![
        (dir.join("notes.txt"), b"the user's notes\n".to_vec()),
        (dir.join("w0000.dat"), vec![0x5a; 10_000]),
        (dir.join(".iolab-owner"), b"not a marker\n".to_vec()),
        (mine.join("w0000.dat"), b"also mine".to_vec()),
    ];
    for (p, c) in &files {
        std::fs::write(p, c).unwrap();
    }
    files
}

fn assert_untouched(files: &[(std::path::PathBuf, Vec<u8>)]) {
    for (p, c) in files {
        let (h, n) = content_hash(p);
        assert_eq!((h, n), (iolab::plan::verify::xxh64(c, 0), c.len()), "{} was modified", p.display());
    }
}

#[test]
fn user_files_with_iolab_names_are_never_touched() {
    let s = Scratch::new();
    let user = plant_user_files(s.path());
    s.run_json(&["--size", "1MiB", "--bs", "64KiB", "--reps", "2", "--no-store"]);
    let out = s.iolab(&["clean", s.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_untouched(&user);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains(".iolab-mine: not touched: not an iolab work directory"), "{report}");
    assert!(report.contains(".iolab-owner: not touched"), "{report}");
    assert_eq!(work_dirs(s.path()).len(), 2, "only the user's two .iolab-* entries remain");
}

#[test]
fn kill_9_leaves_a_work_directory_that_the_next_run_reports_and_clean_removes() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let user = plant_user_files(s.path());
    let child = spawn(
        &s,
        &[
            "run", "-q", "--dir", &dir, "--op", "write", "--size", "16MiB", "--bs", "128KiB", "--sync",
            "each", "--reps", "100000",
        ],
    );
    wait_until(60, "a finished run and a data file being written", || {
        count(&runs(&s.db()), "complete") >= 1
            && data_files(s.path()).iter().any(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > 0))
    });
    signal(&child, libc::SIGKILL);
    let out = finish(child, 10);
    assert_eq!(out.status.code(), None, "killed by a signal");
    let left: Vec<_> = work_dirs(s.path()).into_iter().filter(|d| !d.ends_with(".iolab-mine")).collect();
    let stale: Vec<_> = left.iter().filter(|d| d.is_dir()).collect();
    assert_eq!(stale.len(), 1, "{left:?}");
    let stale = stale[0].clone();
    assert!(stale.join(".iolab-owner").is_file());

    // The store is intact: the runs finished before the kill are there.
    let before = runs(&s.db());
    assert!(count(&before, "complete") >= 1);
    let out = s.iolab(&["results", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // The next run names the leftover and the command that removes it, and leaves it alone.
    let out = s.iolab(&[
        "run",
        "-q",
        "--dir",
        &dir,
        "--op",
        "write",
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--no-store",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&stale.display().to_string()) && err.contains("which is gone"), "{err}");
    assert!(err.contains(&format!("iolab clean {dir}")), "{err}");
    assert!(stale.exists());

    let out = s.iolab(&["clean", &dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains(&format!("{}: removed (1 file,", stale.display())), "{report}");
    assert!(!stale.exists());
    assert_untouched(&user);
    assert_eq!(work_dirs(s.path()), [s.path().join(".iolab-mine"), s.path().join(".iolab-owner")]);
}

/// SIGINT or SIGTERM mid-phase: exit 130 or 143 within a second or so, the finished runs stored
/// complete, the interrupted one stored as interrupted, and no work directory left.
#[test]
fn signals_stop_the_run_keep_results_and_clean_up() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let s = Scratch::new();
        let dir = s.path().to_str().unwrap().to_string();
        let child = spawn(
            &s,
            &[
                "run",
                "-q",
                "--dir",
                &dir,
                "--op",
                "write,read:cold",
                "--size",
                "16MiB",
                "--bs",
                "128KiB",
                "--sync",
                "each",
                "--reps",
                "100000",
            ],
        );
        wait_until(60, "two finished runs and a write in progress", || {
            count(&runs(&s.db()), "complete") >= 2
                && data_files(s.path())
                    .iter()
                    .any(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > 0 && m.len() < 16 << 20))
        });
        let t = std::time::Instant::now();
        signal(&child, sig);
        let out = finish(child, 20);
        let took = t.elapsed();
        eprintln!("signal {sig}: exited {:?} after {took:?}", out.status.code());
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
        assert!(stderr(&out).contains(&format!("interrupted by signal {sig}")), "{}", stderr(&out));
        let r = runs(&s.db());
        assert!(count(&r, "complete") >= 2, "{r:?}");
        assert_eq!(count(&r, "failed"), 0, "{r:?}");
        assert_eq!(r.last().unwrap().0, "interrupted", "{r:?}");
        assert!(work_dirs(s.path()).is_empty(), "{:?}", work_dirs(s.path()));
        // The stored experiment still reads back, with its complete repetitions.
        let shown = s.iolab(&["results", "show", "last", "--json"]);
        let doc: Value = serde_json::from_slice(&shown.stdout).unwrap();
        let reps = phases(&doc)[0]["repetitions"].as_array().unwrap();
        assert!(reps.iter().filter(|r| r["status"] == "complete").count() >= 2);
        assert_eq!(reps.last().unwrap()["status"], "interrupted");
    }
}

#[test]
fn two_processes_share_one_store() {
    let s = Scratch::new();
    let a = s.path().join("a");
    let b = s.path().join("b");
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let run = |d: &Path| {
        spawn(
            &s,
            &[
                "run",
                "-q",
                "--dir",
                d.to_str().unwrap(),
                "--op",
                "write,read",
                "--size",
                "2MiB",
                "--bs",
                "64KiB",
                "--reps",
                "6",
            ],
        )
    };
    let (ca, cb) = (run(&a), run(&b));
    let (oa, ob) = (finish(ca, 120), finish(cb, 120));
    assert!(oa.status.success(), "{}", stderr(&oa));
    assert!(ob.status.success(), "{}", stderr(&ob));
    let r = runs(&s.db());
    assert_eq!(count(&r, "complete"), 12, "{r:?}");
    let list = String::from_utf8(s.iolab(&["results", "list"]).stdout).unwrap();
    assert_eq!(list.lines().filter(|l| l.contains("write,read")).count(), 2, "{list}");
}

#[test]
fn malformed_stores_give_a_clear_error_and_nothing_is_written() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    // A real store to damage.
    s.run_json(&["--op", "write", "--size", "1MiB", "--reps", "2"]);
    let good = std::fs::read(s.db()).unwrap();
    assert!(good.len() >= 8192);
    let bad = s.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("text", b"name,rate\nx,1\n".repeat(400), "not an iolab store"),
        ("truncated", good[..good.len() / 2].to_vec(), "malformed"),
        ("zeroed header", [vec![0u8; 100], good[100..].to_vec()].concat(), "not an iolab store"),
    ];
    let mut torn = good.clone();
    for b in &mut torn[4096..8192] {
        *b = 0xA5;
    }
    cases.push(("garbage page", torn, "malformed"));
    for (what, bytes, want) in cases {
        let db = bad.join(format!("{}.db", what.replace(' ', "-")));
        std::fs::write(&db, &bytes).unwrap();
        let db_s = db.to_str().unwrap();
        let out = s.iolab(&["results", "list", "--db", db_s]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("store {db_s}:")) && err.contains(want), "{what}: {err}");
        let out = s.iolab(&[
            "run", "-q", "--dir", &dir, "--op", "write", "--size", "1MiB", "--reps", "1", "--db", db_s,
        ]);
        assert_ne!(out.status.code(), Some(0), "{what}");
        assert!(stderr(&out).contains(&format!("store {db_s}:")), "{what}: {}", stderr(&out));
        assert!(work_dirs(s.path()).is_empty(), "{what}");
        assert_eq!(std::fs::read(&db).unwrap(), bytes, "{what}: the damaged store was modified");
    }
}

#[test]
fn devices_and_paths_under_dev_are_refused() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let refuse = |args: &[&str], want: &str| {
        let mut all = vec!["run", "-q", "--size", "1MiB", "--reps", "1"];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
        assert!(!s.db().exists());
    };
    refuse(&["--dir", "/dev/null"], "dirs = `/dev/null`: /dev/null is a character device");
    refuse(&["--dir", "/dev/null", "--allow-device", "/dev/null"], "iolab writes only files in directories");
    refuse(
        &["--dir", "/dev/shm"],
        "/dev/shm is under /dev; iolab never writes to devices unless --allow-device",
    );
    refuse(&["--dir", "/dev/shm", "--allow-device", "/dev"], "--allow-device names this exact path");
    refuse(&["--dir", "/dev/shm", "--allow-device", "/no/such"], "allow_device = `/no/such`");
    let toml = s.path().join("dev.toml");
    std::fs::write(&toml, "dirs = [\"/dev/shm\"]\nallow_device = [\"/dev/shm\"]\n").unwrap();
    refuse(&[toml.to_str().unwrap()], "allow_device = `[\"/dev/shm\"]`: only on the command line");
    // Allowed exactly, a directory under /dev is a target like any other.
    if Path::new("/dev/shm").is_dir() && iolab::env::sys::writable(Path::new("/dev/shm")).is_ok() {
        let out = s.iolab(&[
            "run",
            "-q",
            "--dir",
            "/dev/shm",
            "--allow-device",
            "/dev/shm",
            "--op",
            "write",
            "--size",
            "1MiB",
            "--reps",
            "1",
            "--no-store",
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
        assert!(!Path::new("/dev/shm").join(format!(".iolab-{id}")).exists());
    }

    if !is_root() {
        skip!("loop devices need root");
    }
    // A block device: refused without an allowance, refused with one (raw devices are not
    // written), refused as in use once it or a partition of it is mounted; never written.
    let img = s.path().join("disk.img");
    let mut mbr = vec![0u8; 512];
    // One Linux partition from sector 2048 to the end of a 64 MiB disk.
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&(131_072u32 - 2048).to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xAA;
    std::fs::write(&img, &mbr).unwrap();
    std::fs::OpenOptions::new().write(true).open(&img).unwrap().set_len(64 << 20).unwrap();
    let lo = match loop_dev(&img, true) {
        Ok(l) => l,
        Err(e) => skip!("no loop device: {e}"),
    };
    let dev = lo.dev.clone();
    let before = content_hash(&img);
    refuse(
        &["--dir", &dev],
        &format!("dirs = `{dev}`: {dev} is a block device; iolab never writes to devices"),
    );
    refuse(&["--dir", &dev, "--allow-device", &dev], "writing to raw block devices is not built");
    let link = s.path().join("disk-link");
    std::os::unix::fs::symlink(&dev, &link).unwrap();
    refuse(&["--dir", link.to_str().unwrap()], "is a block device");
    assert_eq!(content_hash(&img), before, "nothing was written to the device");
    let part = format!("{dev}p1");
    // Kernels without a partition-table parser get the partition added by hand (BLKPG).
    std::thread::sleep(std::time::Duration::from_millis(200));
    if !Path::new(&part).exists()
        && let Err(e) = sh("addpart", &[&dev, "1", "2048", "129024"])
    {
        skip!("no partition on the loop device: {e}");
    }
    wait_until(10, "the partition device", || Path::new(&part).exists());
    if let Err(e) = sh("mkfs.ext4", &["-q", "-F", &part]) {
        skip!("mkfs.ext4: {e}");
    }
    let mnt = s.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    sh("mount", &[&part, mnt.to_str().unwrap()]).unwrap();
    let _m = Mount { path: mnt.clone() };
    refuse(
        &["--dir", &dev, "--allow-device", &dev],
        &format!("in use ({part} is mounted at {}); iolab never touches a device in use", mnt.display()),
    );
    refuse(&["--dir", &part, "--allow-device", &part], &format!("{part} is mounted at"));
    let _ = dir;
}

/// The same file system named twice (or through two directories) is counted once, with the sum
/// of what the plan puts there, and the refusal shows the numbers.
#[test]
fn preflight_counts_a_file_system_once_with_the_sum_of_needs() {
    if !is_root() {
        skip!("mounting a tmpfs needs root");
    }
    let s = Scratch::new();
    let t = s.path().join("t");
    let _m = match tmpfs(&t, "70m") {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    std::fs::create_dir(t.join("a")).unwrap();
    let (td, ta) = (t.to_str().unwrap(), t.join("a"));
    let ta = ta.to_str().unwrap();
    // One worker of 4 MiB fits (4 MiB + 5% + 64 MiB < 70 MiB)...
    let out =
        s.iolab(&["run", "-q", "--dir", td, "--op", "write", "--size", "4MiB", "--reps", "1", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // ...two, on the same file system named twice or by two paths, do not.
    for dirs in [[td, td], [td, ta]] {
        let out = s.iolab(&[
            "run",
            "-q",
            "--dir",
            dirs[0],
            "--dir",
            dirs[1],
            "--workers",
            "2",
            "--op",
            "write",
            "--size",
            "4MiB",
            "--reps",
            "1",
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        assert!(e.contains("not enough free space on the file system holding"), "{e}");
        assert!(
            e.contains(
                "the plan writes 8 MiB there; with the margin of 5% + 64 MiB that is 72.40 MiB, but 70"
            ),
            "{e}"
        );
        assert!(e.contains("; a size of at most ") && e.ends_with("MiB fits\n"), "{e}");
        assert!(work_dirs(&t).is_empty() && work_dirs(&t.join("a")).is_empty());
        assert!(!s.db().exists());
    }
    // iolab plan shows the same need.
    let out = s.iolab(&["plan", "--dir", td, "--dir", ta, "--workers", "2", "--size", "4MiB"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("disk space needed: 8 MiB"));
}

#[test]
fn clean_takes_a_work_directory_itself_and_refuses_what_is_not_a_directory() {
    let s = Scratch::new();
    let doc = s.run_json(&["--op", "write", "--size", "1MiB", "--reps", "1", "--keep", "--no-store"]);
    let id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let wd = work_dir(s.path(), &id);
    assert!(wd.join("w0000.dat").is_file());
    let out = s.iolab(&["clean", "--dry-run", wd.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("would remove (1 file, 1 MiB; kept by run"));
    assert!(wd.join("w0000.dat").is_file(), "a dry run removes nothing");
    let out = s.iolab(&["clean", wd.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!wd.exists());
    let out = s.iolab(&["clean", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("dir = `/no/such/dir`: cannot use"), "{}", stderr(&out));
    let f = s.path().join("file");
    std::fs::write(&f, b"x").unwrap();
    let out = s.iolab(&["clean", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"));
    assert_eq!(std::fs::read(&f).unwrap(), b"x");
}

/// Between two write phases (held there by the test hook IOLAB_TEST_PAUSE_BETWEEN_PHASES), the
/// worker's file in the work directory is swapped for a symbolic link to a file outside it, for
/// a hard link to such a file, or given a second name outside. The second phase would empty and
/// rewrite it; instead the run ends with exit 1 and an error naming the file and what is wrong,
/// stored as failed, and the file outside keeps every byte.
#[test]
fn a_data_file_swapped_for_a_link_between_phases_is_never_written() {
    type Swap = fn(&Path, &Path, &Path);
    let cases: [(&str, Swap, &str); 3] = [
        (
            "symlink",
            |file, victim, _| {
                std::fs::remove_file(file).unwrap();
                std::os::unix::fs::symlink(victim, file).unwrap();
            },
            "refused: it is a symbolic link, not the file iolab created there",
        ),
        (
            "hard link to a file outside",
            |file, victim, _| {
                std::fs::remove_file(file).unwrap();
                std::fs::hard_link(victim, file).unwrap();
            },
            "that iolab created there (the file was replaced); and it has 2 links",
        ),
        (
            "second name outside",
            |file, _, outside| std::fs::hard_link(file, outside).unwrap(),
            "refused: it has 2 links: another name (a hard link) points at the same data",
        ),
    ];
    for (what, swap, says) in cases {
        let s = Scratch::new();
        let target = s.path().join("t");
        std::fs::create_dir(&target).unwrap();
        let victim = s.path().join("victim.txt");
        let precious: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&victim, &precious).unwrap();
        let outside = s.path().join("outside.dat");
        let go = s.path().join("go");
        let t = target.to_str().unwrap().to_string();
        let child = spawn_with(
            &s,
            &[
                "run",
                "-q",
                "--dir",
                &t,
                "--op",
                "write,write",
                "--size",
                "1MiB",
                "--bs",
                "64KiB",
                "--reps",
                "1",
            ],
            |c| c.env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go),
        );
        let mut wd = None;
        wait_until(60, "the first write phase to complete", || {
            wd = work_dirs(&target).into_iter().next();
            wd.as_ref().is_some_and(|d| {
                std::fs::read_to_string(d.join(".iolab-owner")).is_ok_and(|m| m.contains("\nwritten = 1\n"))
            })
        });
        let file = wd.unwrap().join("w0000.dat");
        swap(&file, &victim, &outside);
        let outside_before = outside.exists().then(|| content_hash(&outside));
        std::fs::write(&go, b"").unwrap();
        let out = finish(child, 60);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(err.contains(&format!("error: open on {}: refused: ", file.display())), "{what}: {err}");
        assert!(err.contains(says), "{what}: {err}");
        assert_eq!(std::fs::read(&victim).unwrap(), precious, "{what}: the file outside was written");
        if let Some(h) = outside_before {
            assert_eq!(content_hash(&outside), h, "{what}: the second name's data changed");
            assert_eq!(h.1, 1 << 20);
        }
        let r = runs(&s.db());
        assert_eq!(r.len(), 1, "{what}: {r:?}");
        assert_eq!(r[0].0, "failed", "{what}: {r:?}");
        assert!(r[0].1.as_deref().unwrap_or("").contains(&file.display().to_string()), "{what}: {r:?}");
    }
}
