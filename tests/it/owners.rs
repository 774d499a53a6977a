//! The owner of a work directory judged across namespaces: a live run started in another PID
//! namespace (`unshare --pid --fork --mount-proc`) or time namespace (`unshare --time
//! --boottime N`) is never taken for gone by `iolab clean` from outside; once it is gone, it is.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// Whether `unshare ARGS true` works here; else the reason, for the skip line.
fn unshare_works(args: &[&str]) -> Result<(), String> {
    match Command::new("unshare").args(args).arg("true").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("unshare {} failed: {}", args.join(" "), stderr(&o).trim())),
        Err(e) => Err(format!("no unshare here ({e})")),
    }
}

/// Starts `unshare NS... iolab run` of a write then a read phase, held between them until
/// `go` exists (the coordinator's test hook); returns once its work directory records the
/// finished write. (The child goes back to the caller, which waits for it.)
#[allow(clippy::zombie_processes)]
fn start_held(s: &Scratch, ns: &[&str], go: &Path) -> (Child, PathBuf) {
    let dir = s.path().join("t");
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new("unshare")
        .args(ns)
        .arg(bin())
        .args(["run", "-q", "--dir", dir.to_str().unwrap(), "--size", "4MiB", "--op", "write,read"])
        .args(["--reps", "1"])
        .env("IOLAB_DB", s.db())
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", go)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let wd = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| {
            std::fs::read_to_string(p.join(".iolab-owner")).is_ok_and(|m| m.contains("written = 1"))
        });
        if let Some(wd) = wd {
            return (child, wd);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the held run never finished its write phase");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn clean(s: &Scratch, dir: &Path) -> String {
    let out = s.iolab(&["clean", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn clean_never_takes_a_live_run_in_another_pid_or_time_namespace_for_gone() {
    let cases: [(&str, &[&str]); 2] =
        [("PID", &["--pid", "--fork", "--mount-proc"]), ("time", &["--time", "--boottime", "100000"])];
    for (what, ns) in cases {
        if let Err(why) = unshare_works(ns) {
            eprintln!("skipped ({what} namespace): {why}");
            continue;
        }
        let s = Scratch::new();
        let go = s.path().join("go");
        let (child, wd) = start_held(&s, ns, &go);
        let data = wd.join("w0000.dat");
        let report = clean(&s, wd.parent().unwrap());
        assert!(report.contains("not touched: in use by running run"), "{what}: {report}");
        if what == "PID" {
            assert!(report.contains("in PID namespace pid:["), "{what}: {report}");
        }
        assert_eq!(std::fs::metadata(&data).unwrap().len(), 4 << 20, "{what}: the live run's data stays");
        std::fs::write(&go, b"").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert!(!wd.exists(), "{what}: the run removed its own work directory");
    }
}

/// The other half: once the run in another PID namespace is killed (and its namespace with
/// it), `clean` from the first namespace, which sees every process, knows it is gone.
#[test]
fn clean_removes_what_a_run_killed_in_another_pid_namespace_left() {
    let ns = ["--pid", "--fork", "--mount-proc"];
    if let Err(why) = unshare_works(&ns) {
        eprintln!("skipped: {why}");
        return;
    }
    let s = Scratch::new();
    let (mut child, wd) = start_held(&s, &ns, &s.path().join("go"));
    // unshare's child is the namespace's first process, iolab itself: killing it ends them all.
    let inner = children_of(child.id());
    assert_eq!(inner.len(), 1, "{inner:?}");
    // SAFETY: kill with a pid this test started and a valid signal.
    assert_eq!(unsafe { libc::kill(inner[0] as i32, libc::SIGKILL) }, 0);
    child.wait().unwrap();
    let report = clean(&s, wd.parent().unwrap());
    assert!(report.contains("removed (1 file, 4 MiB; left by run"), "{report}");
    assert!(report.contains("which is gone"), "{report}");
    assert!(!wd.exists(), "{report}");
}
