//! A stop signal (SIGINT, SIGTERM) ends every long command within a second or so: the
//! commands that only read and print (report, plot, results show/export/trace/compare), and
//! an import, with exit 130/143, no output file and nothing an import would have made.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::util::*;

/// A store whose one experiment holds `copies` + 1 runs of 64 workers each, made from one real
/// run by copying its rows in SQL (a store too large for these commands to finish in a
/// second, made in about one).
fn big_store(s: &Scratch, copies: u32) {
    s.run_json(&[
        "--engine",
        "null",
        "--workers",
        "64",
        "--size",
        "16KiB",
        "--bs",
        "4KiB",
        "--reps",
        "1",
        "--op",
        "write,read",
    ]);
    let c = rusqlite::Connection::open(s.db()).unwrap();
    c.execute_batch(&format!(
        "CREATE TEMP TABLE k AS WITH RECURSIVE k(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM k WHERE x < {copies}) SELECT x FROM k;"
    ))
    .unwrap();
    for table in ["runs", "phase_results", "worker_results"] {
        let cols: Vec<String> = c
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let select: Vec<String> = cols
            .iter()
            .map(|n| match n.as_str() {
                "run_id" => "printf('d%031d', k.x)".to_string(),
                "rep" if table == "runs" => "k.x".to_string(),
                other => format!("t.\"{other}\""),
            })
            .collect();
        c.execute_batch(&format!(
            "INSERT INTO {table} SELECT {} FROM {table} t, temp.k k;",
            select.join(", ")
        ))
        .unwrap();
    }
}

/// Runs `iolab ARGS`, sends `sig` once it has run `after`, and returns its exit code and the
/// time from the signal to its end.
fn stop(s: &Scratch, args: &[&str], sig: i32, after: Duration) -> (Option<i32>, Duration, String) {
    let mut child = command()
        .args(args)
        .env("IOLAB_DB", s.db())
        .current_dir(s.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    assert!(child.try_wait().unwrap().is_none(), "{args:?} ended before the signal: make the store larger");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), t0.elapsed(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The entries of `dir`, but the store's own side files (which any reader may leave).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
        .collect();
    v.sort();
    v
}

#[test]
fn long_commands_stop_at_a_signal_and_leave_nothing() {
    let s = Scratch::new();
    big_store(&s, 1500);
    let before = names(s.path());
    let import_to = s.path().join("copy.db");
    let db = s.db();
    let cases: [(&[&str], i32); 6] = [
        (&["report", "--last", "-o", "r.html"], libc::SIGINT),
        (&["plot", "last", "-o", "p.png"], libc::SIGTERM),
        (&["results", "show", "last"], libc::SIGINT),
        (&["results", "export", "last", "--json", "-o", "e.json"], libc::SIGTERM),
        (&["results", "export", "last", "--csv", "-o", "e.csv"], libc::SIGINT),
        (&["results", "import", db.to_str().unwrap(), "--db", import_to.to_str().unwrap()], libc::SIGTERM),
    ];
    for (args, sig) in cases {
        let (code, took, err) = stop(&s, args, sig, Duration::from_millis(400));
        eprintln!("{args:?}: exit {code:?} {:.0} ms after signal {sig}", took.as_secs_f64() * 1e3);
        assert_eq!(code, Some(128 + sig), "{args:?}: {err}");
        assert!(err.contains(&format!("interrupted by signal {sig}")), "{args:?}: {err}");
        assert!(took < Duration::from_secs(2), "{args:?} took {took:?} to stop");
        assert_eq!(names(s.path()), before, "{args:?} left files");
    }
}

/// Sends `sig` to `child` and waits for it at most `secs`: its output, and the time it took.
fn stop_child(child: std::process::Child, sig: i32, secs: u64) -> (std::process::Output, Duration) {
    let t0 = Instant::now();
    crate::rig::signal(&child, sig);
    let out = crate::rig::finish(child, secs);
    (out, t0.elapsed())
}

/// SIGTERM while the last repetition's per-op traces are stored (32,768 rows here, sent as its
/// work directory goes, just before they are; 8.4 million took 7.7 s, then exit 0): iolab ends
/// within about a second with 143, the run stored without its traces and said so, the store
/// readable.
#[test]
fn a_signal_while_traces_are_stored_ends_the_store_at_once() {
    let s = Scratch::new();
    let t = s.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let args = [
        "run",
        "-q",
        "--dir",
        t.to_str().unwrap(),
        "--size",
        "16MiB",
        "--bs",
        "512",
        "--reps",
        "1",
        "--op",
        "write",
        "--trace",
    ];
    let child = crate::rig::spawn(&s, &args);
    // The phase is over once its work directory is gone: its traces are being stored.
    crate::rig::wait_until(60, "the phase's work directory", || std::fs::read_dir(&t).unwrap().count() > 0);
    crate::rig::wait_until(60, "the phase's end", || std::fs::read_dir(&t).unwrap().count() == 0);
    let (out, took) = stop_child(child, libc::SIGTERM, 60);
    let e = stderr(&out);
    eprintln!("stopped {:.2} s after SIGTERM", took.as_secs_f64());
    assert_eq!(out.status.code(), Some(143), "{e}");
    assert!(took < Duration::from_millis(2500), "{took:?}: {e}");
    assert!(
        e.contains("interrupted while storing the per-op traces of run") && e.contains("stored without them"),
        "{e}"
    );
    assert_eq!(crate::rig::count(&crate::rig::runs(&s.db()), "complete"), 1, "the run is stored");
    let trace = s.iolab(&["results", "trace", "last"]);
    assert!(stderr(&trace).contains("has no traced ops"), "{}", stderr(&trace));
    assert!(s.iolab(&["results", "show", "last"]).status.success());
}

/// The removal of a namespace of 200,000 items after an interrupted run, and `iolab clean` of
/// what it left, each end within about a second of the signal (they took 28 s and more: deaf to
/// it), with 130 or 143, the work directory kept whole with its marker; a last `clean` removes
/// it.
#[test]
fn removing_a_large_namespace_stops_at_a_signal() {
    let s = Scratch::new();
    let (t, go) = (s.path().join("t"), s.path().join("go"));
    std::fs::create_dir(&t).unwrap();
    let args = [
        "run",
        "-q",
        "--dir",
        t.to_str().unwrap(),
        "--op",
        "create,stat",
        "--md-files",
        "200000",
        "--reps",
        "2",
    ];
    let child = crate::rig::spawn_with(&s, &args, |c| c.env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go));
    let items = || -> usize {
        let wd = std::fs::read_dir(&t).unwrap().flatten().next().map(|e| e.path().join("md/w0"));
        wd.and_then(|p| std::fs::read_dir(p).ok()).map_or(0, |d| d.count())
    };
    // Held before the stat, all 200,000 made: the signal ends the run there. Each removal goes
    // on for at most half a second after its signal (TIDY_GRACE), so the tree is large enough
    // that neither can finish in that time.
    crate::rig::wait_until(300, "the create phase's 200,000 files", || items() == 200_000);
    let (out, took) = stop_child(child, libc::SIGINT, 60);
    let e = stderr(&out);
    eprintln!("the run stopped {:.2} s after SIGINT", took.as_secs_f64());
    assert_eq!(out.status.code(), Some(130), "{e}");
    assert!(took < Duration::from_millis(2500), "{took:?}: {e}");
    assert!(e.contains("its removal stopped at the signal") && e.contains("iolab clean"), "{e}");
    let left = items();
    assert!(left > 0, "the removal was stopped part way");

    let clean = crate::rig::spawn(&s, &["clean", t.to_str().unwrap()]);
    // Signalled as soon as its removal has begun: what is left may go in a fraction of a second.
    crate::rig::wait_until(60, "clean's first removal", || items() < left);
    let (out, took) = stop_child(clean, libc::SIGTERM, 60);
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("clean stopped {:.2} s after SIGTERM", took.as_secs_f64());
    assert_eq!(out.status.code(), Some(143), "{report}{}", stderr(&out));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(report.contains("stopped by the signal after removing"), "{report}");
    assert!(items() > 0 && items() <= left);
    let out = s.iolab(&["clean", t.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0, "{}", String::from_utf8_lossy(&out.stdout));
}
