//! Traces under MPI ranks (build with `--features mpi`): every rank checks its own trace spool
//! before anything runs, and a rank's traced ops reach rank 0's store whole, streamed in chunks.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::mpi::mpirun_cmd;
use crate::util::*;

/// A tmpfs of `size` mounted at `dir` for the test's length (None where mounting is refused).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status();
        st.is_ok_and(|s| s.success()).then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Two ranks running `args`, rank 1 with `tmpdir` as its temporary directory (an MPMD launch
/// of the same arguments, the second through `env`).
fn two_ranks_rank1_tmpdir(s: &Scratch, tmpdir: &Path, args: &[&str]) -> std::process::Output {
    let mut c = mpirun_cmd(s, 1, args);
    c.args([":", "-np", "1", "env"]).arg(format!("TMPDIR={}", tmpdir.display())).arg(bin()).args(args);
    c.output().unwrap()
}

/// Beside an I/O-server rank the same holds: client rank 1 (worker 1, whose ops go to the
/// server) checks its own spool and refuses the run by name, exit 2, nothing made.
#[test]
fn a_client_rank_beside_server_ranks_checks_its_spool_too() {
    let s = Scratch::new();
    let Some((small, _t)) = small_tmpdir(&s) else { return };
    let (work, srv) = (s.path().join("work"), s.path().join("srv"));
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&srv).unwrap();
    let (w, sv) = (work.to_str().unwrap(), srv.to_str().unwrap());
    let args = [
        "run",
        "--servers",
        "1",
        "--server-dir",
        sv,
        "--dir",
        w,
        "--size",
        "4MiB",
        "--bs",
        "4KiB",
        "--reps",
        "1",
        "--trace",
        "--quiet",
    ];
    // Ranks 0 and 1 are the clients (rank 1 with the small TMPDIR), rank 2 the server.
    let mut c = mpirun_cmd(&s, 1, &args);
    c.args([":", "-np", "1", "env"]).arg(format!("TMPDIR={}", small.display())).arg(bin()).args(args);
    c.args([":", "-np", "1"]).arg(bin()).args(args);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want =
        format!("rank 1 on host {}: its trace spool {} needs 41 KiB (1024 ops", hostname(), small.display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(!s.db().exists(), "a store was made");
    for d in [&work, &srv, &small] {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{} is not empty", d.display());
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

/// A 32 MiB tmpfs in the scratch directory, for a rank's TMPDIR: less than the preflight's
/// margin, so any trace is refused there (None, saying so, where mounting is refused).
fn small_tmpdir(s: &Scratch) -> Option<(PathBuf, Tmpfs)> {
    let small = s.path().join("small");
    let Some(t) = Tmpfs::mount(&small, "32M") else {
        eprintln!("skip: cannot mount a tmpfs here (needs root)");
        return None;
    };
    Some((small, t))
}

/// Rank 1's temporary directory (where a rank other than 0 spools its workers' traces) is a
/// 32 MiB tmpfs: less than the preflight's margin, so any trace is refused there, by rank,
/// host, directory and figures, with exit 2 on every rank, before anything runs: no store, no
/// work directory, no spool file. Rank 0's own spool beside the store had room.
#[test]
fn a_rank_whose_trace_spool_is_too_small_refuses_the_run() {
    let s = Scratch::new();
    let Some((small, _t)) = small_tmpdir(&s) else { return };
    let work = s.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let w = work.to_str().unwrap();
    let args = ["run", "--dir", w, "--size", "4MiB", "--bs", "4KiB", "--reps", "1", "--trace", "--quiet"];
    let o = two_ranks_rank1_tmpdir(&s, &small, &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!(
        "trace = `true`: rank 1 on host {}: its trace spool {} needs 41 KiB (1024 ops of its workers in one phase at 41 B per op; ",
        hostname(),
        small.display()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(stderr(&o).contains(" with the margin of 5% + 64 MiB) and has "), "{}", stderr(&o));
    assert!(!s.db().exists(), "a store was made");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "a work directory was left");
    assert_eq!(std::fs::read_dir(&small).unwrap().count(), 0, "a spool file was left");
    // Without the trace, the same run goes ahead.
    let o = two_ranks_rank1_tmpdir(&s, &small, &args[..args.len() - 2]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A traced run of two ranks, each worker tracing more ops than one chunk holds (16384): every
/// op reaches the store, rank 1's streamed to rank 0 chunk by chunk; each worker's ops are
/// numbered 0..n with the offsets its sequential blocks have, in both phases.
#[test]
fn a_ranks_traced_ops_arrive_whole() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let args = [
        "run",
        "--dir",
        &dir,
        "--size",
        "12MiB",
        "--bs",
        "512",
        "--op",
        "write,read",
        "--reps",
        "1",
        "--trace",
        "--quiet",
    ];
    let o = mpirun_cmd(&s, 2, &args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let n: i64 = (12 << 20) / 512;
    let c = rusqlite::Connection::open(s.db()).unwrap();
    let mut q = c
        .prepare(
            "SELECT phase, worker, COUNT(*), MIN(op), MAX(op), SUM(offset_bytes), MIN(duration_ns) > 0 \
             FROM trace_ops GROUP BY phase, worker ORDER BY phase, worker",
        )
        .unwrap();
    let rows: Vec<(i64, i64, i64, i64, i64, i64, bool)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let offsets = 512 * n * (n - 1) / 2;
    let want: Vec<(i64, i64, i64, i64, i64, i64, bool)> =
        [(0, 0), (0, 1), (1, 0), (1, 1)].iter().map(|&(p, w)| (p, w, n, 0, n - 1, offsets, true)).collect();
    assert_eq!(rows, want);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}
