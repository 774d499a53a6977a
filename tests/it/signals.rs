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
