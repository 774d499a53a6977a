//! Real faults in the middle of runs: a full file system (ENOSPC), a read-only one (EROFS),
//! permission revoked (EACCES), a dead file system (EIO), a quota (EDQUOT), a file size limit
//! (short write, EFBIG). Each must stop the run with the file, offset and call named, keep the
//! runs finished before it (complete) and the failed one (failed, with the error), exit 1, and
//! leave nothing behind that it could remove.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Child;

use crate::rig::*;
use crate::skip;
use crate::util::*;

/// `iolab run` on `dir` that goes on until something stops it.
fn endless(s: &Scratch, dir: &Path, ops: &str, size: &str, nobody: bool) -> Child {
    let d = dir.to_str().unwrap().to_string();
    let args = [
        "run", "-q", "--dir", &d, "--op", ops, "--size", size, "--bs", "64KiB", "--sync", "each", "--reps",
        "100000",
    ];
    if nobody { spawn_with(s, &args, as_nobody) } else { spawn(s, &args) }
}

fn wait_complete(s: &Scratch, n: usize, child: &mut Child) {
    wait_until(120, "finished runs", || {
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("iolab ended early: {st}: {err}");
        }
        count(&runs(&s.db()), "complete") >= n
    });
}

/// The stored runs end with exactly one failed run whose error contains `want`.
fn assert_stored(s: &Scratch, complete_at_least: usize, want: &str) -> String {
    let r = runs(&s.db());
    assert!(count(&r, "complete") >= complete_at_least, "{r:?}");
    assert_eq!(count(&r, "failed"), 1, "{r:?}");
    let (status, err) = r.last().unwrap().clone();
    assert_eq!(status, "failed");
    let err = err.unwrap();
    assert!(err.contains(want), "{err}");
    err
}

/// The error names a call and a path inside a work directory of `dir`.
fn assert_names_call_and_file(err: &str, dir: &Path) {
    let calls = ["pwrite", "write", "open", "fdatasync", "fsync", "mkdir", "ftruncate", "unlink", "rmdir"];
    // A call is named as `open on PATH` or with its flags, `open(O_CREAT|O_EXCL) on PATH`.
    let named = |c: &str| err.contains(&format!("{c} on ")) || err.contains(&format!("{c}(O_"));
    assert!(calls.iter().any(|c| named(c)), "no call named: {err}");
    assert!(err.contains(&format!("{}/.iolab-", dir.display())), "no work directory path: {err}");
}

/// Runs iolab on `t` until two runs finished and a data file is being written, then fills
/// the file system behind iolab's back (after its preflight) and keeps it full as iolab frees
/// its files, until iolab stops. Returns the stored error.
fn enospc_on(s: &Scratch, t: &Path, what: &str) -> String {
    let mut child = endless(s, t, "write,read:cold", "4MiB", false);
    wait_complete(s, 2, &mut child);
    wait_until(60, "a write in progress", || {
        data_files(t).iter().any(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > 0 && m.len() < 4 << 20))
    });
    let filler = t.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0xEEu8; 1 << 20];
    while child.try_wait().unwrap().is_none() {
        use std::io::Write;
        if f.write(&chunk).is_err() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let out = finish(child, 10);
    eprintln!("ENOSPC ({what}): exit {:?}: {}", out.status.code(), stderr(&out).trim());
    assert_eq!(out.status.code(), Some(1));
    let err = assert_stored(s, 2, "No space left on device");
    assert_names_call_and_file(&err, t);
    assert!(stderr(&out).contains("No space left on device"));
    drop(f);
    std::fs::remove_file(&filler).unwrap();
    assert!(work_dirs(t).is_empty(), "left behind: {:?}", work_dirs(t));
    err
}

#[test]
fn enospc_mid_run_on_tmpfs() {
    if !is_root() {
        skip!("mounting a tmpfs needs root");
    }
    let s = Scratch::new();
    let t = s.path().join("t");
    let _m = match tmpfs(&t, "80m") {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    // 4 MiB per run passes preflight: 4 MiB + 5% + 64 MiB < 80 MiB.
    enospc_on(&s, &t, "tmpfs");
    assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0);
}

#[test]
fn enospc_mid_run_on_ext4() {
    if !is_root() {
        skip!("loop devices need root");
    }
    let s = Scratch::new();
    let fs = match image_fs(s.path(), 128, &["mkfs.ext4", "-q", "-F"], "") {
        Ok(f) => f,
        Err(e) => skip!("cannot make a loop-mounted ext4: {e}"),
    };
    enospc_on(&s, &fs.mount.path, "ext4");
    let names: Vec<_> = std::fs::read_dir(&fs.mount.path).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names, ["lost+found"]);
}

#[test]
fn erofs_at_start_and_mid_run() {
    if !is_root() {
        skip!("bind mounts need root");
    }
    let s = Scratch::new();
    let (src, t) = (s.path().join("src"), s.path().join("t"));
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&t).unwrap();
    if let Err(e) = sh("mount", &["--bind", src.to_str().unwrap(), t.to_str().unwrap()]) {
        skip!("cannot bind-mount: {e}");
    }
    let _m = Mount { path: t.clone() };
    let ts = t.to_str().unwrap();
    let mut child = endless(&s, &t, "write,read:cold,write", "4MiB", false);
    wait_complete(&s, 2, &mut child);
    // Read-only as soon as no file is open for writing (the kernel refuses before: EBUSY).
    wait_until(60, "a moment without writers", || {
        assert!(child.try_wait().unwrap().is_none(), "iolab ended before the remount");
        sh("mount", &["-o", "remount,bind,ro", ts]).is_ok()
    });
    let out = finish(child, 20);
    eprintln!("EROFS: exit {:?}: {}", out.status.code(), stderr(&out).trim());
    assert_eq!(out.status.code(), Some(1));
    // The remount lands inside a run (stored as failed, naming the call), or between a run
    // that was measured and stored whole and the removal of its work directory (the error
    // names the call and says to clean up).
    let r = runs(&s.db());
    let err = if count(&r, "failed") == 0 && count(&r, "complete") >= 2 {
        let err = stderr(&out);
        assert!(err.contains("Read-only file system"), "{err}");
        assert!(err.contains("remove what is left with `iolab clean`"), "{err}");
        err
    } else {
        assert_stored(&s, 2, "Read-only file system")
    };
    assert_names_call_and_file(&err, &t);
    let left = work_dirs(&t);
    assert!(left.len() <= 1, "{left:?}");
    if !left.is_empty() {
        assert!(stderr(&out).contains("remove what is left with `iolab clean`"), "{}", stderr(&out));
    }

    // A read-only target is refused before anything is written.
    let out = s.iolab(&["run", "-q", "--dir", ts, "--op", "write", "--size", "1MiB", "--reps", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("dirs = `{ts}`: not writable: Read-only file system")),
        "{}",
        stderr(&out)
    );

    // Writable again, `iolab clean` removes what the read-only file system kept.
    sh("mount", &["-o", "remount,bind,rw", ts]).unwrap();
    let out = s.iolab(&["clean", ts]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(work_dirs(&t).is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// A run measured whole whose work directory cannot be removed afterwards (someone put a file
/// in it during the run) keeps its stored result, exits 1 naming what was left, and says to
/// clean up; `iolab clean` then removes iolab's part and leaves the user's file.
#[test]
fn a_work_directory_that_cannot_be_removed_keeps_the_measured_run() {
    let s = Scratch::new();
    let t = s.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let ts = t.to_str().unwrap();
    // Two iterations of 3 s of compute each: time to reach into the work directory.
    let child = spawn(
        &s,
        &[
            "run",
            "-q",
            "--dir",
            ts,
            "--strategy",
            "S1A",
            "--comptime",
            "6s",
            "--iters",
            "2",
            "--bs",
            "64KiB",
            "--reps",
            "1",
        ],
    );
    wait_until(60, "the work directory", || work_dirs(&t).len() == 1);
    let wd = work_dirs(&t).remove(0);
    std::fs::write(wd.join("user.txt"), b"mine").unwrap();
    let out = finish(child, 60);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("user.txt (not created by iolab)"), "{err}");
    assert!(err.contains("remove what is left with `iolab clean`"), "{err}");
    let r = runs(&s.db());
    assert_eq!((count(&r, "complete"), count(&r, "failed")), (1, 0), "{r:?}");
    let out = s.iolab(&["clean", ts]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(wd.join("user.txt")).unwrap(), b"mine");
}

#[test]
fn eacces_at_start_and_mid_run() {
    if !is_root() {
        skip!("switching to an unprivileged user needs root");
    }
    let s = Scratch::new();
    let t = s.path().join("acc");
    std::fs::create_dir(&t).unwrap();
    open_to_all(&t);
    open_to_all(s.path());
    // Permission revoked on the data files during the run (root bypasses permission bits, so
    // iolab runs as nobody): the next open of one fails.
    let mut child = endless(&s, &t, "write,read:cold", "8MiB", true);
    wait_complete(&s, 2, &mut child);
    while child.try_wait().unwrap().is_none() {
        for f in data_files(&t) {
            let _ = std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o000));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let out = finish(child, 10);
    eprintln!("EACCES: exit {:?}: {}", out.status.code(), stderr(&out).trim());
    assert_eq!(out.status.code(), Some(1));
    let err = assert_stored(&s, 2, "Permission denied");
    assert_names_call_and_file(&err, &t);
    assert!(err.contains("open on "), "{err}");
    assert!(work_dirs(&t).is_empty(), "{:?}", work_dirs(&t));

    // A target the user may not write is refused before anything is written.
    let closed = s.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    let cs = closed.to_str().unwrap();
    let out = spawn_with(
        &s,
        &["run", "-q", "--dir", cs, "--op", "write", "--size", "1MiB", "--reps", "1"],
        as_nobody,
    );
    let out = finish(out, 20);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("dirs = `{cs}`: not writable: Permission denied")),
        "{}",
        stderr(&out)
    );
}

/// FS_IOC_SHUTDOWN, flushing the journal first: from then on every call on the file system
/// fails with EIO, as when its device dies.
fn shutdown(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    const FS_IOC_SHUTDOWN: libc::c_ulong = 0x8004_587D;
    let d = std::fs::File::open(dir)?;
    let flags: u32 = 1; // FS_SHUTDOWN_FLAGS_LOGFLUSH
    // SAFETY: the ioctl reads one u32 from a valid pointer; `d` is an open directory.
    if unsafe { libc::ioctl(d.as_raw_fd(), FS_IOC_SHUTDOWN, &flags) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[test]
fn eio_mid_run() {
    if !is_root() {
        skip!("loop devices need root");
    }
    let s = Scratch::new();
    let fs = match image_fs(s.path(), 128, &["mkfs.ext4", "-q", "-F"], "") {
        Ok(f) => f,
        Err(e) => skip!("cannot make a loop-mounted ext4: {e}"),
    };
    let mnt = fs.mount.path.clone();
    let mut child = endless(&s, &mnt, "write,read:cold", "4MiB", false);
    wait_complete(&s, 2, &mut child);
    if let Err(e) = shutdown(&mnt) {
        let _ = child.kill();
        skip!("FS_IOC_SHUTDOWN: {e}");
    }
    let out = finish(child, 20);
    eprintln!("EIO: exit {:?}: {}", out.status.code(), stderr(&out).trim());
    assert_eq!(out.status.code(), Some(1));
    // A shut-down ext4 answers data calls with EIO and some metadata calls (the ftruncate that
    // empties a file before a write phase) with EROFS, whichever iolab was making.
    let err = assert_stored(&s, 2, "");
    assert!(err.contains("Input/output error") || err.contains("Read-only file system"), "{err}");
    assert_names_call_and_file(&err, &mnt);
    // Nothing can be removed from a dead file system; mounted again, `iolab clean` removes
    // what the marker that reached the disk names. The shutdown flushed the journal but not
    // the data (FS_SHUTDOWN_FLAGS_LOGFLUSH): a file created after the marker's last commit, or
    // a marker whose content never reached the disk, is not provably iolab's, so it stays, and
    // clean names its directory and why.
    sh("umount", &[mnt.to_str().unwrap()]).unwrap();
    sh("mount", &[&fs.dev.dev, mnt.to_str().unwrap()]).unwrap();
    let out = s.iolab(&["clean", mnt.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("EIO, after remount: {}", report.trim());
    for d in work_dirs(&mnt) {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let line = report
            .lines()
            .find(|l| l.contains(&name))
            .unwrap_or_else(|| panic!("{name} not named: {report}"));
        assert!(line.contains("kept the directory because of") || line.contains("not touched"), "{line}");
    }
}

#[test]
fn edquot_from_a_quota() {
    if !is_root() {
        skip!("btrfs on a loop device needs root");
    }
    if sh("mkfs.btrfs", &["--version"]).is_err() {
        skip!("mkfs.btrfs is not installed (btrfs-progs)");
    }
    let s = Scratch::new();
    let fs = match image_fs(s.path(), 200, &["mkfs.btrfs", "-q", "-f"], "") {
        Ok(f) => f,
        Err(e) => skip!("cannot make a loop-mounted btrfs: {e}"),
    };
    let mnt = fs.mount.path.clone();
    if let Err(e) = sh("btrfs", &["quota", "enable", mnt.to_str().unwrap()]) {
        skip!("btrfs quotas: {e}");
    }
    let sub = |name: &str| {
        let p = mnt.join(name);
        sh("btrfs", &["subvolume", "create", p.to_str().unwrap()]).unwrap();
        sh("btrfs", &["qgroup", "limit", "8m", p.to_str().unwrap()]).unwrap();
        p
    };
    // A run larger than the quota (statvfs does not show quotas, so preflight passes).
    let (a, b) = (sub("a"), sub("b"));
    let out = s.iolab(&[
        "run",
        "-q",
        "--dir",
        a.to_str().unwrap(),
        "--op",
        "write",
        "--size",
        "12MiB",
        "--bs",
        "64KiB",
        "--reps",
        "2",
    ]);
    eprintln!("EDQUOT: exit {:?}: {}", out.status.code(), stderr(&out).trim());
    assert_eq!(out.status.code(), Some(1));
    let err = assert_stored(&s, 0, "Disk quota exceeded");
    assert_names_call_and_file(&err, &a);
    assert!(work_dirs(&a).is_empty(), "{:?}", work_dirs(&a));

    // Runs kept with --keep fill the quota: the first completes, the second fails, both stay
    // (kept), and `iolab clean` removes them.
    let out = s.iolab(&[
        "run",
        "-q",
        "--dir",
        b.to_str().unwrap(),
        "--op",
        "write",
        "--size",
        "5MiB",
        "--bs",
        "64KiB",
        "--reps",
        "3",
        "--keep",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = runs(&s.db());
    assert_eq!(
        r.iter().rev().take(2).map(|x| x.0.as_str()).collect::<Vec<_>>(),
        ["failed", "complete"],
        "{r:?}"
    );
    assert!(r.last().unwrap().1.as_deref().unwrap().contains("Disk quota exceeded"));
    assert_eq!(work_dirs(&b).len(), 2);
    let out = s.iolab(&["clean", b.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(work_dirs(&b).is_empty());
}

/// RLIMIT_FSIZE on the child: a write that crosses the limit is cut short by the kernel, and
/// one that starts at it fails with EFBIG (SIGXFSZ is ignored, so iolab is not killed).
#[test]
fn short_write_and_efbig_from_a_file_size_limit() {
    let cases: [(&str, u64, &str); 3] = [
        (
            "write",
            (1 << 20) + 512,
            "pwrite on {W}/w0000.dat at offset 1048576: short write: 512 of 65536 bytes",
        ),
        (
            "read",
            (1 << 20) + 512,
            "pwrite on {W}/w0000.dat at offset 1048576: short write: 512 of 65536 bytes",
        ),
        ("write", 1 << 20, "pwrite on {W}/w0000.dat at offset 1048576: File too large"),
    ];
    for (op, limit, want) in cases {
        let s = Scratch::new();
        let d = s.path().to_str().unwrap().to_string();
        let child = spawn_with(
            &s,
            &["run", "-q", "--dir", &d, "--op", op, "--size", "2MiB", "--bs", "64KiB", "--reps", "2"],
            |c| {
                // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
                unsafe {
                    c.pre_exec(move || {
                        let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                        if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    })
                }
            },
        );
        let out = finish(child, 60);
        eprintln!("RLIMIT_FSIZE {limit} ({op}): exit {:?}: {}", out.status.code(), stderr(&out).trim());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = assert_stored(&s, 0, "w0000.dat at offset 1048576");
        let wd = err.split("/w0000.dat").next().unwrap().rsplit(' ').next().unwrap().to_string();
        assert!(err.contains(&want.replace("{W}", &wd)), "{err}");
        assert!(work_dirs(s.path()).is_empty());
    }
}

/// The store's file system fills up mid-experiment: the run that cannot be stored is still
/// printed with every other result, and iolab exits 1 naming the store.
#[test]
fn a_full_store_loses_no_measured_result() {
    if !is_root() {
        skip!("mounting a tmpfs needs root");
    }
    let s = Scratch::new();
    let st = s.path().join("store");
    let _m = match tmpfs(&st, "4m") {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    let db = st.join("iolab.db");
    let d = s.path().to_str().unwrap().to_string();
    let child = spawn_with(
        &s,
        &[
            "run", "-q", "--json", "--dir", &d, "--op", "write", "--size", "1MiB", "--bs", "64KiB", "--reps",
            "100000",
        ],
        |c| c.env("IOLAB_DB", &db),
    );
    wait_until(60, "two stored runs", || count(&runs(&db), "complete") >= 2);
    let filler = st.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    use std::io::Write;
    while f.write(&[0xEE; 4096]).is_ok() {}
    drop(f);
    let out = finish(child, 60);
    eprintln!("store full: exit {:?}: {}", out.status.code(), stderr(&out).trim());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("store {}: ", db.display())), "{}", stderr(&out));
    let stored = count(&runs(&db), "complete");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the results are printed");
    let printed = phases(&doc)[0]["repetitions"].as_array().unwrap().len();
    assert!(printed > stored, "printed {printed}, stored {stored}: the unstored run is printed too");
    assert!(work_dirs(s.path()).is_empty());
}

/// `pieces = parallel`: a piece the kernel refuses (EFBIG past RLIMIT_FSIZE) or cuts short is
/// reported with its own component file and offset, not the block's first.
#[test]
fn a_failed_piece_is_named_by_its_component_and_offset() {
    // Two targets, 64 KiB units, 128 KiB blocks: each block is a piece on s00 and one on s01,
    // at the same component offset. 512 bytes past 1 MiB on s00 and s01 alike; a limit of 1
    // MiB + 512 cuts both pieces at that offset short, and the first is reported.
    let cases: [(u64, &str); 2] = [
        ((1 << 20) + 512, "pwrite on {W}/striped.s00.dat at offset 1048576: short write: 512 of 65536 bytes"),
        (1 << 20, "pwrite on {W}/striped.s00.dat at offset 1048576: File too large"),
    ];
    for (limit, want) in cases {
        let s = Scratch::new();
        let d = s.path().to_str().unwrap().to_string();
        let targets = format!("{d},{d}");
        let args = [
            "run",
            "-q",
            "--targets",
            &targets,
            "--layout",
            "striped",
            "--stripe-unit",
            "64KiB",
            "--bs",
            "128KiB",
            "--pieces",
            "parallel",
            "--op",
            "write",
            "--size",
            "4MiB",
            "--reps",
            "1",
        ];
        let child = spawn_with(&s, &args, |c| {
            // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
            unsafe {
                c.pre_exec(move || {
                    let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                })
            }
        });
        let out = finish(child, 60);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = assert_stored(&s, 0, "striped.s00.dat at offset 1048576");
        let wd = err.split("/striped.s00.dat").next().unwrap().rsplit(' ').next().unwrap().to_string();
        assert!(err.contains(&want.replace("{W}", &wd)), "{err}");
        assert!(work_dirs(s.path()).is_empty());
    }
}

/// A temporary directory with room for less than one repetition's results: the spool that
/// takes the results of a repetition of 256 workers (docs/safety.md) fails part-way with
/// ENOSPC, and the results stay in memory. The run ends well, every worker's result is in the
/// JSON and in the store, and the temporary directory has back all the room it had.
#[test]
fn a_full_temporary_directory_keeps_the_results_in_memory() {
    if !is_root() {
        skip!("loop devices need root");
    }
    let s = Scratch::new();
    let fs = match image_fs(s.path(), 16, &["mkfs.ext4", "-q", "-F", "-m", "0"], "") {
        Ok(f) => f,
        Err(e) => skip!("cannot make a loop-mounted ext4: {e}"),
    };
    let tmp = &fs.mount.path;
    // Full, then 32 KiB freed: two of the spool's 16 KiB writes, of about 85 KiB of results.
    let filler = tmp.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    for piece in [64 << 10, 1 << 10] {
        while std::io::Write::write_all(&mut f, &vec![0xA5u8; piece]).is_ok() {}
    }
    f.sync_all().unwrap();
    f.set_len(f.metadata().unwrap().len() - (32 << 10)).unwrap();
    f.sync_all().unwrap();
    let free = || {
        let o = std::process::Command::new("df").args(["--output=avail", "-B1"]).arg(tmp).output().unwrap();
        String::from_utf8_lossy(&o.stdout).lines().nth(1).unwrap().trim().parse::<u64>().unwrap()
    };
    let room = free();
    // Some room, and less than the 85 KiB one repetition's spooled results take.
    assert!(room > 0 && room < 64 << 10, "{room} bytes free");

    let t = s.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let args = [
        "run",
        "--json",
        "--quiet",
        "--dir",
        t.to_str().unwrap(),
        "--workers",
        "256",
        "--op",
        "write,read",
        "--size",
        "4KiB",
        "--bs",
        "4KiB",
        "--reps",
        "2",
    ];
    let out = s.iolab_env(&args, &[("TMPDIR", tmp.to_str().unwrap())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut runs = 0;
    for p in phases(&doc) {
        for r in p["repetitions"].as_array().unwrap() {
            let w = r["workers"].as_array().unwrap();
            let mut ids: Vec<u64> = w.iter().map(|w| w["worker"].as_u64().unwrap()).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..256).collect::<Vec<u64>>(), "{}", p["op"]);
            assert!(w.iter().all(|w| w["bytes"] == 4096), "{}", p["op"]);
            runs += 1;
        }
    }
    assert_eq!(runs, 4);
    let stored = s.iolab(&["results", "export", "last", "--json"]);
    assert!(stored.status.success(), "{}", stderr(&stored));
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap();
    for (a, b) in phases(&doc).iter().zip(phases(&stored)) {
        for (ra, rb) in a["repetitions"].as_array().unwrap().iter().zip(b["repetitions"].as_array().unwrap())
        {
            assert_eq!(ra["workers"], rb["workers"], "{}", a["op"]);
        }
    }
    assert_eq!(free(), room, "the spool's blocks were not given back");
    let mut names: Vec<_> = std::fs::read_dir(tmp).unwrap().flatten().map(|e| e.file_name()).collect();
    names.sort();
    assert_eq!(names, ["filler", "lost+found"]);
    assert!(work_dirs(&t).is_empty());
}

/// The descriptor of the spool of workers' results that process `pid` holds in `tmp` (an
/// unlinked file), once it holds something.
fn spool_fd(pid: u32, tmp: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten().map(|e| e.path()).find(|p| {
        let to = std::fs::read_link(p).map(|l| l.to_string_lossy().into_owned()).unwrap_or_default();
        to.starts_with(&format!("{}/#", tmp.display()))
            && to.ends_with("(deleted)")
            && std::fs::metadata(p).is_ok_and(|m| m.len() > 0)
    })
}

/// The spool of finished repetitions' workers' results truncated under a run (through
/// /proc/PID/fd, as a fault of the temporary directory's disk would lose it) between its two
/// phases: the run ends failed with the store's error naming the spool, the table is printed
/// with what could be read, and nothing panics (the table's costs once did, exit 101); the
/// store stays readable.
#[test]
fn a_spool_lost_mid_run_ends_it_with_the_store_error_and_no_panic() {
    let s = Scratch::new();
    let (tmp, t, go) = (s.path().join("tmp"), s.path().join("t"), s.path().join("go"));
    std::fs::create_dir(&tmp).unwrap();
    std::fs::create_dir(&t).unwrap();
    let args = [
        "run",
        "--dir",
        t.to_str().unwrap(),
        "--workers",
        "256",
        "--op",
        "write,read",
        "--size",
        "4KiB",
        "--bs",
        "4KiB",
        "--reps",
        "2",
    ];
    let child = spawn_with(&s, &args, |c| c.env("TMPDIR", &tmp).env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go));
    let pid = child.id();
    wait_until(60, "the write phase's results on the spool", || spool_fd(pid, &tmp).is_some());
    let fd = spool_fd(pid, &tmp).unwrap();
    std::fs::OpenOptions::new().write(true).open(&fd).unwrap().set_len(0).unwrap();
    std::fs::write(&go, b"").unwrap();
    let out = finish(child, 60);
    let (e, table) = (stderr(&out), String::from_utf8_lossy(&out.stdout).into_owned());
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(e.contains("reading back workers' results from iolab's temporary spool failed"), "{e}");
    assert!(e.contains(&format!("store {}", s.db().display())), "the store's error: {e}");
    assert!(table.contains("write") && table.contains("read"), "the table is printed: {table}");
    let list = s.iolab(&["results", "list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0, "no work directory left");
}

/// An experiment that ends early counts the runs it did not run and says why: a file put in
/// the work directory while repetition 1 of 3 runs (its removal then keeps the directory and
/// ends the experiment), or SIGINT there. It was printed `1/1` and listed `1 ok, 0 failed`, as
/// if nothing more had been planned; now the table says `1/1 of 3` and `not run: 2 of the 3
/// runs planned` with the reason, `results list` and `show` say it again, and so does the JSON.
#[test]
fn an_experiment_that_ends_early_counts_the_runs_not_run_and_says_why() {
    for (case, says) in
        [("foreign", "it holds foreign (not created by iolab)"), ("SIGINT", "interrupted by signal 2")]
    {
        let s = Scratch::new();
        let (t, go) = (s.path().join("t"), s.path().join("go"));
        std::fs::create_dir(&t).unwrap();
        let args = [
            "run",
            "--dir",
            t.to_str().unwrap(),
            "--size",
            "1MiB",
            "--op",
            "write,read",
            "--reps",
            "3",
            "--explain",
        ];
        let child = spawn_with(&s, &args, |c| c.env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go));
        let wd = std::cell::RefCell::new(None);
        wait_until(60, "repetition 1 held between its phases", || {
            let d = std::fs::read_dir(&t).unwrap().flatten().map(|e| e.path()).find(|p| {
                std::fs::read_to_string(p.join(".iolab-owner")).is_ok_and(|m| m.contains("written = 1"))
            });
            d.map(|d| *wd.borrow_mut() = Some(d)).is_some()
        });
        let out = if case == "foreign" {
            std::fs::write(wd.into_inner().unwrap().join("foreign"), b"mine").unwrap();
            std::fs::write(&go, b"").unwrap();
            finish(child, 60)
        } else {
            signal(&child, libc::SIGINT);
            finish(child, 60)
        };
        let (table, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), stderr(&out));
        assert_eq!(out.status.code(), Some(if case == "foreign" { 1 } else { 130 }), "{case}: {e}");
        let line = "not run: 2 of the 3 runs planned (runs: complete / measured of the repetitions planned); the experiment ended early: ";
        assert!(table.contains(line) && table.contains(says), "{case}: {table}");
        assert!(table.contains(" of 3 "), "{case}: the runs column: {table}");
        let list = String::from_utf8_lossy(&s.iolab(&["results", "list"]).stdout).into_owned();
        let (head, row) = (list.lines().next().unwrap(), list.lines().nth(1).unwrap());
        assert!(head.trim_end().ends_with("not run") && row.trim_end().ends_with(" 2"), "{case}: {list}");
        let shown =
            String::from_utf8_lossy(&s.iolab(&["results", "show", "last", "--explain"]).stdout).into_owned();
        assert!(shown.contains(line) && shown.contains(says), "{case}: {shown}");
        // The brief table's runs column says so too.
        let brief = String::from_utf8_lossy(&s.iolab(&["results", "show", "last"]).stdout).into_owned();
        assert!(brief.contains(" of 3 "), "{case}: the brief runs column: {brief}");
        let doc: Value =
            serde_json::from_slice(&s.iolab(&["results", "export", "last", "--json"]).stdout).unwrap();
        assert_eq!(
            (doc["not_run"]["runs"].as_u64(), doc["not_run"]["planned"].as_u64()),
            (Some(2), Some(3)),
            "{case}"
        );
        assert!(doc["not_run"]["reason"].as_str().unwrap().contains(says), "{case}: {}", doc["not_run"]);
    }
}
