//! MPI runs (build with `--features mpi`): the real binary under Open MPI's `mpirun` on this
//! host; a rank's I/O error, a rank killed with -9 and a stop through mpirun; misuse refused
//! before anything is made; MPICH's launcher on the Open MPI build; three simulated hosts.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::hosts::{Hosts, hosts_sh};
use crate::util::*;

/// `mpirun` (Open MPI) with `np` ranks of the test binary, as root and oversubscribed, with the
/// test memory size and the scratch store, in the scratch directory; ended after 240 s.
pub(crate) fn mpirun_cmd(s: &Scratch, np: usize, args: &[&str]) -> Command {
    let mut c = Command::new("timeout");
    c.args(["240", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", &np.to_string()])
        .arg(bin())
        .args(args)
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .env("IOLAB_DB", s.db())
        .current_dir(s.path());
    c
}

pub(crate) fn mpirun(s: &Scratch, np: usize, args: &[&str]) -> Output {
    mpirun_cmd(s, np, args)
        .output()
        .expect("mpirun (Open MPI) must be installed: scripts/test.sh installs it")
}

/// `iolab run --size 1MiB --dir SCRATCH EXTRA` under `mpirun -np NP` for each case: exit 2
/// with the message `want`, no work directory left and no store made.
pub(crate) fn refused_under_mpirun(s: &Scratch, np: usize, cases: &[(&[&str], &str)]) {
    let dir = s.path().to_str().unwrap();
    for &(extra, want) in cases {
        let mut args = vec!["run", "--size", "1MiB", "--dir", dir];
        args.extend_from_slice(extra);
        let o = mpirun(s, np, &args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{extra:?}: {}", stderr(&o));
        assert!(s.leftovers().is_empty(), "{extra:?}: {:?}", s.leftovers());
        assert!(!s.db().exists(), "{extra:?} made a store");
    }
}

pub(crate) fn ok_json(o: &Output) -> Value {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), stderr(o));
    // One document: rank 0 prints, the other ranks print nothing.
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

/// The experiments in the scratch store (none when there is no store yet).
pub(crate) fn experiments(s: &Scratch) -> Vec<iolab::store::ExperimentRow> {
    if !s.db().exists() {
        return vec![];
    }
    iolab::store::Store::open_read_only(&s.db()).and_then(|st| st.list()).unwrap_or_default()
}

/// Complete runs of the one stored experiment (0 before there is one).
pub(crate) fn runs_ok(s: &Scratch) -> u64 {
    experiments(s).first().map_or(0, |e| e.runs_complete)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

/// Four ranks write one shared file and read it back cold: one table's worth of results (one
/// JSON document, one stored experiment), four workers on ranks 0-3 of this host, the phase's
/// rate over time summed up the tree, and the file's bytes exactly what four writers of their
/// quarter must leave.
#[test]
fn four_ranks_share_one_file_and_store_one_experiment() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = mpirun(
        &s,
        4,
        &[
            "run",
            "--layout",
            "shared",
            "--op",
            "write,read:cold",
            "--size",
            "1MiB",
            "--bs",
            "64KiB",
            "--reps",
            "2",
            "--seed",
            "5",
            "--keep",
            "--json",
            "--quiet",
            "--dir",
            &dir,
        ],
    );
    let doc = ok_json(&o);
    assert_eq!(doc["spec"]["launcher"], "mpi");
    let host = hostname();
    // More ranks than this machine's CPUs are flagged, every phase and repetition; fewer not.
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let plural = if cpus == 1 { "" } else { "s" };
    let over = (4 > cpus).then(|| format!("oversubscribed: 4 MPI ranks on the {cpus} CPU{plural} of {host}"));
    for ph in phases(&doc) {
        let reps = ph["repetitions"].as_array().unwrap();
        assert_eq!(reps.len(), 2, "{ph}");
        for r in reps {
            let flags = r["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap());
            let flagged: Vec<&str> = flags.filter(|f| f.starts_with("oversubscribed")).collect();
            assert_eq!(flagged, over.iter().map(String::as_str).collect::<Vec<_>>(), "{r}");
            assert_eq!(r["status"], "complete");
            assert_eq!(r["total_bytes"], 4 << 20);
            let ranks: Vec<u64> =
                r["workers"].as_array().unwrap().iter().map(|w| w["rank"].as_u64().unwrap()).collect();
            assert_eq!(ranks, [0, 1, 2, 3]);
            assert!(r["workers"].as_array().unwrap().iter().all(|w| w["host"] == host.as_str()));
            let hosts = r["hosts"].as_array().unwrap();
            assert_eq!(hosts.len(), 1);
            assert_eq!(hosts[0]["ranks"], serde_json::json!([0, 1, 2, 3]));
            assert_eq!(hosts[0]["bytes"], 4 << 20);
            // The phase's rate over time, summed up the tree: every byte in it, the workers'
            // own series not kept (none stalled).
            let series = &r["rate"]["series"];
            let summed: u64 = series["bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum();
            assert_eq!(summed, 4 << 20, "{series}");
            assert!(r["workers"].as_array().unwrap().iter().all(|w| w.get("series").is_none()), "{r}");
        }
        assert_eq!(ph["cache"]["policy"], "cold");
    }
    // The kept file of the last repetition: the four quarters as one writer would lay them.
    let run_id = phases(&doc)[0]["repetitions"][1]["run_id"].as_str().unwrap().to_string();
    let data = std::fs::read(work_dir(s.path(), &run_id).join("shared.dat")).unwrap();
    assert!(data == expected_file(5, 0, 4 << 20, 64 << 10), "shared file bytes differ");
    let exps = experiments(&s);
    assert_eq!(exps.len(), 1, "{exps:?}");
}

/// Threads per rank: 2 ranks x 2 workers; the table names the host and its ranks.
#[test]
fn ranks_run_threads_and_the_table_shows_hosts() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = mpirun(
        &s,
        2,
        &[
            "run",
            "--workers",
            "4",
            "--op",
            "write,read:cold",
            "--size",
            "1MiB",
            "--reps",
            "1",
            "--dir",
            &dir,
            "--explain",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("4 workers x 1 MiB"), "{out}");
    let host = hostname();
    let row =
        out.lines().find(|l| l.starts_with("write ") && l.contains(&host)).unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..4], ["write", host.as_str(), "0-1", "4"], "{row}");
    assert_eq!(stderr(&o).matches("stored as experiment").count(), 1, "{}", stderr(&o));
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    let o = mpirun(&s, 2, &["plan", "--workers", "4", "--dir", &dir]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("placement: 2 MPI ranks on 1 host, 2 workers per rank"), "{out}");
    assert!(out.contains(&format!("{host}: ranks 0-1, workers 0-3")), "{out}");
}

/// Misuse is refused with exit 2 before anything is made: workers that are no multiple of the
/// ranks, another launcher under mpirun, more workers in a phase than the run has, a strategy
/// with other than one worker per rank.
#[test]
fn misuse_under_mpirun_is_refused_up_front() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--workers", "3"], "must be a multiple of the 2 MPI ranks"),
        (&["--launcher", "thread"], "under mpirun with 2 ranks"),
        (&["--op", "write,read:workers=4"], "more workers than the run's 2"),
        (&["--strategy", "S1A", "--workers", "4"], "runs one worker per rank"),
    ];
    refused_under_mpirun(&s, 2, &cases);
    // Outside mpirun, the launcher is refused too.
    let o = s.iolab(&["run", "--launcher", "mpi", "--size", "1MiB", "--dir", &dir]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not started by an MPI launcher"), "{}", stderr(&o));
}

/// Pids of the ranks of a run whose arguments contain `marker`, by rank.
pub(crate) fn ranks_of(marker: &str, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut found = vec![0u32; n];
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
            if !String::from_utf8_lossy(&cmd).contains(marker)
                || !cmd.starts_with(bin().to_str().unwrap().as_bytes())
            {
                continue;
            }
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            for var in env.split(|&b| b == 0) {
                if let Some(r) = var.strip_prefix(b"OMPI_COMM_WORLD_RANK=") {
                    let r: usize = String::from_utf8_lossy(r).parse().unwrap();
                    if r < n {
                        found[r] = pid;
                    }
                }
            }
        }
        if found.iter().all(|&p| p != 0) {
            return found;
        }
        assert!(Instant::now() < deadline, "the ranks did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a work directory under `dir` holds `name` with `len` bytes.
fn written(dir: &Path, name: &str, len: u64) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with(".iolab-")
            && std::fs::metadata(e.path().join(name)).is_ok_and(|m| m.len() == len)
    })
}

pub(crate) fn wait_for(child: std::process::Child, secs: u64) -> (Output, Duration) {
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    let took = t.elapsed();
    assert!(took < Duration::from_secs(secs), "took {took:?}");
    (o, took)
}

/// A write error on rank 1 (a file size limit set on it between two phases): the run ends on
/// every rank with exit 1, the error names the rank, host, call, file and offset; rank 0 stored
/// the phases that completed; no work directory is left.
#[test]
fn an_io_error_on_one_rank_ends_the_run_naming_rank_and_offset() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let go = s.path().join("go");
    let child = mpirun_cmd(
        &s,
        2,
        &[
            "run",
            "--op",
            "write,read:cold,write",
            "--size",
            "4MiB",
            "--bs",
            "256KiB",
            "--reps",
            "1",
            "--dir",
            &dir,
        ],
    )
    .env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let ranks = ranks_of(&dir, 2);
    // Once the first write is done (every rank is past its start), limit rank 1's file size.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !written(s.path(), "w0001.dat", 4 << 20) {
        assert!(Instant::now() < deadline, "the first phase did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let limit =
        Command::new("prlimit").args(["--pid", &ranks[1].to_string(), "--fsize=1048576"]).status().unwrap();
    assert!(limit.success());
    std::fs::write(&go, b"").unwrap();
    let (o, _) = wait_for(child, 120);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let host = hostname();
    assert!(err.contains(&format!("rank 1 ({host}): pwrite on ")), "{err}");
    assert!(err.contains("w0001.dat at offset 1048576: File too large"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("write#2 rep 0 failed: rank 1"), "{out}");
    let exps = experiments(&s);
    assert_eq!(exps.len(), 1);
    let shown = s.iolab(&["results", "show", &exps[0].id, "--json"]);
    let doc: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let statuses: Vec<&str> =
        phases(&doc).iter().map(|p| p["repetitions"][0]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["complete", "complete", "failed"]);
    let mut left = s.leftovers();
    left.retain(|n| n != "go");
    assert!(left.is_empty(), "{left:?}");
}

/// Starts a long run on `np` ranks and waits until rank 0 has stored a repetition; the
/// `timeout` process around mpirun and the ranks' pids.
fn long_run_with_a_stored_rep(s: &Scratch, np: usize) -> (std::process::Child, Vec<u32>) {
    let dir = s.path().to_str().unwrap().to_string();
    let args =
        ["run", "--op", "write,read:cold", "--size", "16MiB", "--reps", "1000", "--quiet", "--dir", &dir];
    let child = mpirun_cmd(s, np, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let ranks = ranks_of(&dir, np);
    let deadline = Instant::now() + Duration::from_secs(120);
    while runs_ok(s) == 0 {
        assert!(Instant::now() < deadline, "no repetition stored");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, ranks)
}

/// A rank killed with -9 ends the run within seconds on every rank (mpirun kills the others);
/// the repetitions rank 0 stored before are kept.
#[test]
fn a_rank_killed_with_9_ends_the_run_within_seconds() {
    let s = Scratch::new();
    let (child, ranks) = long_run_with_a_stored_rep(&s, 3);
    let t = Instant::now();
    assert!(Command::new("kill").args(["-9", &ranks[2].to_string()]).status().unwrap().success());
    let (o, _) = wait_for(child, 150);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(10), "the run took {took:?} to end after the kill");
    assert!(!o.status.success());
    // Every rank is gone (or a zombie about to be reaped) within a few seconds.
    let gone = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat")).is_err_and(|_| true)
            || std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| s.contains(") Z "))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ranks.iter().all(|&p| gone(p)) {
        let left: Vec<String> = ranks
            .iter()
            .filter(|&&p| !gone(p))
            .map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default())
            .collect();
        assert!(Instant::now() < deadline, "ranks still running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(experiments(&s).len(), 1);
    assert!(runs_ok(&s) >= 1);
}

/// SIGUSR1 to mpirun (which passes it on; its SIGINT and SIGTERM kill the ranks) stops rank 0
/// as Ctrl-C does on one host: what was measured is stored, the work directory removed, exit
/// 128 + 10.
#[test]
fn sigusr1_through_mpirun_stops_cleanly_and_keeps_results() {
    let s = Scratch::new();
    let (child, _) = long_run_with_a_stored_rep(&s, 2);
    // `timeout` runs mpirun as its child: signal mpirun itself.
    let kids = children_of(child.id());
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(Command::new("kill").args(["-USR1", &kids[0].to_string()]).status().unwrap().success());
    let (o, _) = wait_for(child, 60);
    assert_eq!(o.status.code(), Some(138), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted by signal 10"), "{}", stderr(&o));
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    assert!(runs_ok(&s) >= 1);
}

/// The Open MPI build started by MPICH's launcher: each process is a world of one; refused with
/// exit 2, said once, nothing made.
#[test]
fn another_mpis_launcher_is_refused() {
    if Command::new("mpiexec.mpich").arg("--version").output().is_err() {
        eprintln!("skip: no mpiexec.mpich (MPICH) here");
        return;
    }
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = Command::new("timeout")
        .args(["120", "mpiexec.mpich", "-n", "2"])
        .arg(bin())
        .args(["run", "--size", "1MiB", "--dir", &dir])
        .env("IOLAB_DB", s.db())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("MPI sees a world of 1").count(), 1, "{err}");
    assert!(err.contains("PMI_SIZE=2"), "{err}");
    assert!(s.leftovers().is_empty() && !s.db().exists());
}

/// The build against MPICH ($IOLAB_TEST_MPICH_BIN, which scripts/test.sh builds) under MPICH's
/// launcher: three ranks, one shared file, one document, ranks 0-2.
#[test]
fn an_mpich_build_runs_under_mpiexec_mpich() {
    let Some(mpich_bin) = std::env::var_os("IOLAB_TEST_MPICH_BIN") else {
        eprintln!("skip: IOLAB_TEST_MPICH_BIN names no build against MPICH (scripts/test.sh makes one)");
        return;
    };
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = Command::new("timeout")
        .args(["240", "mpiexec.mpich", "-n", "3"])
        .arg(&mpich_bin)
        .args(["run", "--layout", "shared", "--op", "write,read:cold", "--size", "1MiB", "--bs", "64KiB"])
        .args(["--reps", "1", "--seed", "3", "--keep", "--json", "--quiet", "--dir", &dir])
        .env("IOLAB_DB", s.db())
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .output()
        .unwrap();
    let doc = ok_json(&o);
    let r = &phases(&doc)[0]["repetitions"][0];
    let ranks: Vec<u64> =
        r["workers"].as_array().unwrap().iter().map(|w| w["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [0, 1, 2]);
    let run_id = r["run_id"].as_str().unwrap();
    let data = std::fs::read(work_dir(s.path(), run_id).join("shared.dat")).unwrap();
    assert!(data == expected_file(3, 0, 3 << 20, 64 << 10), "shared file bytes differ");
    assert_eq!(experiments(&s).len(), 1);
}

/// A reordering under which every rank would read what it wrote itself is refused under a
/// real mpirun, naming why: a shift that is a multiple of the ranks, `node` with every rank on
/// this one host, or with no read phase to reorder. (Such runs measured unreordered reads
/// under a reordered name.)
#[test]
fn a_reordering_that_reorders_nothing_is_refused_under_mpirun() {
    let s = Scratch::new();
    let cases: [(&[&str], &str); 4] = [
        (&["--reorder-reads", "4"], "reorder_reads = `4`: 4 is a multiple of the 2 ranks"),
        (&["--reorder-reads", "node"], "reorder_reads = `node`: all 2 ranks are on one host"),
        (&["--reorder-reads", "0"], "reorder_reads = `0`: a shift of 0 reorders nothing"),
        (
            &["--reorder-reads", "1", "--op", "write"],
            "reorder_reads = `1`: it reorders the ranks of read phases; the phases (write) have none",
        ),
    ];
    refused_under_mpirun(&s, 2, &cases);
}

/// Task reordering: with `--reorder-reads 1`, rank r reads the files rank r+1 wrote (IOR's
/// `-C`); the write is as without it.
#[test]
fn reorder_reads_shifts_readers_by_ranks() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = mpirun(
        &s,
        4,
        &[
            "run",
            "--workers",
            "8",
            "--op",
            "write,read:cold",
            "--size",
            "1MiB",
            "--reps",
            "1",
            "--reorder-reads",
            "1",
        ]
        .iter()
        .copied()
        .chain(["--json", "--quiet", "--no-store", "--dir", &dir])
        .collect::<Vec<_>>(),
    );
    let doc = ok_json(&o);
    let pairs = |p: usize| -> Vec<(u64, u64)> {
        phases(&doc)[p]["repetitions"][0]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["worker"].as_u64().unwrap(), w["rank"].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(pairs(0), [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (7, 3)]);
    assert_eq!(pairs(1), [(0, 3), (1, 3), (2, 0), (3, 0), (4, 1), (5, 1), (6, 2), (7, 2)]);
    // Without MPI it is refused.
    let o = s.iolab(&["run", "--reorder-reads", "1", "--size", "1MiB", "--dir", &dir]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("needs launcher = mpi"), "{}", stderr(&o));
}

/// `LAUNCHER -np 6 EXE ARGS...` across the simulated hosts (`tests/hosts.sh`), six ranks.
pub(crate) fn on_hosts(launcher: &str, exe: &str, args: &[&str], cwd: &Path) -> Output {
    let np = if launcher == "mpirun" { "-np" } else { "-n" };
    let call: Vec<&str> = [launcher, np, "6", exe].into_iter().chain(args.iter().copied()).collect();
    hosts_sh(&call, cwd).expect("the hosts are up")
}

/// Three simulated hosts (network namespaces with their own host names and node-local disks):
/// six ranks, two per host, under Open MPI and under MPICH, write and read one shared file:
/// one document with three hosts and their ranks, the file's bytes exact, one experiment
/// stored. A node-local `--dir`: each host's disk holds exactly its workers' files, with their
/// bytes; nothing is left without `--keep`; a directory one host lacks is an error naming it.
#[test]
fn three_simulated_hosts_show_in_every_output() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &[]) else { return };
    let dir = s.path().to_str().unwrap().to_string();
    let db = s.db().to_str().unwrap().to_string();
    let bin = bin().to_str().unwrap().to_string();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "run",
            "--layout",
            "shared",
            "--op",
            "write,read:cold",
            "--size",
            "1MiB",
            "--bs",
            "64KiB",
            "--reps",
            "1",
            "--seed",
            "7",
            "--keep",
            "--json",
            "--quiet",
            "--dir",
            &dir,
            "--db",
            &db,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    let mut launchers = vec![("mpirun", bin.clone())];
    if let Some(m) = std::env::var_os("IOLAB_TEST_MPICH_BIN") {
        launchers.push(("mpiexec", m.to_string_lossy().into_owned()));
    } else {
        eprintln!("skip the MPICH half: IOLAB_TEST_MPICH_BIN names no build against MPICH");
    }
    for (n, (launcher, exe)) in launchers.iter().enumerate() {
        let args = args(&[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = on_hosts(launcher, exe, &args, s.path());
        let doc = ok_json(&o);
        for ph in phases(&doc) {
            let r = &ph["repetitions"][0];
            assert_eq!(r["status"], "complete", "{launcher}: {r}");
            let placed: Vec<(u64, String)> = r["workers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| (w["rank"].as_u64().unwrap(), w["host"].as_str().unwrap().to_string()))
                .collect();
            let want: Vec<(u64, String)> = (0..6).map(|i| (i, format!("h{}", i / 2 + 1))).collect();
            assert_eq!(placed, want, "{launcher}");
            let hosts: Vec<(String, Value)> = r["hosts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h["host"].as_str().unwrap().to_string(), h["ranks"].clone()))
                .collect();
            assert_eq!(
                hosts,
                [
                    ("h1".into(), serde_json::json!([0, 1])),
                    ("h2".into(), serde_json::json!([2, 3])),
                    ("h3".into(), serde_json::json!([4, 5]))
                ],
                "{launcher}"
            );
            // agg, from the ranks' readings on one clock: never above min_SAR, per host too.
            let agg = r["agg_bytes_per_s"].as_f64().unwrap();
            assert!(agg > 0.0 && agg <= r["min_sar_bytes_per_s"].as_f64().unwrap() * (1.0 + 1e-9), "{r}");
            for h in r["hosts"].as_array().unwrap() {
                let host_agg = h["agg_bytes_per_s"].as_f64().unwrap();
                assert!(
                    host_agg > 0.0 && host_agg <= h["min_sar_bytes_per_s"].as_f64().unwrap() * (1.0 + 1e-9),
                    "{h}"
                );
            }
        }
        let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap();
        let data = std::fs::read(work_dir(s.path(), run_id).join("shared.dat")).unwrap();
        assert!(data == expected_file(7, 0, 6 << 20, 64 << 10), "{launcher}: shared file bytes differ");
        assert_eq!(experiments(&s).len(), n + 1, "{launcher}: one experiment per run");
    }
    // A node-local directory (`/mnt/node` is each host's own disk): each host's first rank
    // makes the work directory there; each host's disk holds its workers' files, exact.
    let args = [
        "run",
        "--dir",
        "/mnt/node",
        "--op",
        "write,read:cold",
        "--size",
        "1MiB",
        "--bs",
        "64KiB",
        "--reps",
        "1",
        "--seed",
        "9",
        "--keep",
        "--json",
        "--quiet",
        "--db",
        &db,
    ];
    let doc = ok_json(&on_hosts("mpirun", &bin, &args, s.path()));
    let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    for ph in phases(&doc) {
        assert_eq!(ph["repetitions"][0]["status"], "complete");
        assert_eq!(ph["repetitions"][0]["hosts"].as_array().unwrap().len(), 3);
    }
    for (h, host) in ["h1", "h2", "h3"].iter().enumerate() {
        for gid in [2 * h as u32, 2 * h as u32 + 1] {
            let cat = format!("cat /mnt/node/.iolab-{run_id}/w{gid:04}.dat");
            let o = hosts_sh(&["run", host, &cat], s.path()).unwrap();
            assert!(o.stdout == expected_file(9, gid, 1 << 20, 64 << 10), "{host}: file {gid} bytes differ");
        }
        if *host != "h1" {
            let ls = hosts_sh(&["run", host, &format!("ls /mnt/node/.iolab-{run_id}")], s.path()).unwrap();
            let names =
                String::from_utf8_lossy(&ls.stdout).split_whitespace().map(String::from).collect::<Vec<_>>();
            assert_eq!(names, [format!("w{:04}.dat", 2 * h), format!("w{:04}.dat", 2 * h + 1)], "{host}");
        }
        hosts_sh(&["run", host, &format!("rm -rf /mnt/node/.iolab-{run_id}")], s.path()).unwrap();
    }
    // The workers plot groups each host's bars, one colour and legend entry per host.
    let svg = s.path().join("workers.svg");
    let o = s.iolab(&["plot", "last", "--kind", "workers", "--db", &db, "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    for h in ["h1", "h2", "h3"] {
        assert!(text.contains(&format!("r_i on host {h}")), "no legend for {h}");
    }
    // Without --keep every host's disk is left as it was.
    let o = on_hosts(
        "mpirun",
        &bin,
        &["run", "--dir", "/mnt/node", "--size", "1MiB", "--reps", "2", "--quiet", "--db", &db],
        s.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for h in ["h1", "h2", "h3"] {
        let ls = hosts_sh(&["run", h, "ls -A /mnt/node"], s.path()).unwrap();
        assert_eq!(String::from_utf8_lossy(&ls.stdout).trim(), "lost+found", "{h}");
    }
    // A directory only rank 0's host has: the first host without it is named, exit 1.
    hosts_sh(&["run", "h1", "mkdir -p /mnt/node/only-h1"], s.path()).unwrap();
    let o = on_hosts(
        "mpirun",
        &bin,
        &["run", "--dir", "/mnt/node/only-h1", "--size", "1MiB", "--reps", "1", "--db", &db],
        s.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("(h2): ") || stderr(&o).contains("(h3): "), "{}", stderr(&o));
    hosts_sh(&["run", "h1", "rmdir /mnt/node/only-h1"], s.path()).unwrap();
    // A node-local disk short of space on h2 only (a filler there): the run stops before
    // anything is written, naming h2 and the figures, and every host's disk is as it was.
    hosts_sh(&["run", "h2", "fallocate -l 120M /mnt/node/filler"], s.path()).unwrap();
    let o = on_hosts(
        "mpirun",
        &bin,
        &["run", "--dir", "/mnt/node", "--size", "20MiB", "--reps", "1", "--quiet", "--db", &db],
        s.path(),
    );
    hosts_sh(&["run", "h2", "rm -f /mnt/node/filler"], s.path()).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "not enough free space on host h2's node-local /mnt/node: this host's workers write 40 MiB there"
        ),
        "{err}"
    );
    for h in ["h1", "h2", "h3"] {
        let ls = hosts_sh(&["run", h, "ls -A /mnt/node"], s.path()).unwrap();
        assert_eq!(String::from_utf8_lossy(&ls.stdout).trim(), "lost+found", "{h}");
    }
}

/// The one-host `mpirun` lines of README.md, docs/mpi.md, docs/engines.md, docs/strategies.md and
/// docs/ior.md run (small: `--size 1MiB --reps 1` in place of theirs; IOR's and mdtest's lines
/// with 1 repetition, mdtest's with 20 items per task, in the scratch directory), with the test
/// binary; lines with a hostfile need a cluster (the simulated hosts test runs the same
/// commands across hosts).
#[test]
fn documented_mpirun_lines_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let mut ran = 0;
    for f in ["README.md", "docs/mpi.md", "docs/engines.md", "docs/strategies.md", "docs/ior.md"] {
        let text = std::fs::read_to_string(root.join(f)).unwrap();
        for line in
            text.lines().map(str::trim).filter(|l| l.starts_with("mpirun -np ") && !l.contains("--hostfile"))
        {
            let line = line.split(" #").next().unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            let np: usize = words[2].parse().unwrap();
            assert!(["target/release/iolab", "iolab"].contains(&words[3]), "{f}: {line}");
            let mut args: Vec<String> = words[4..].iter().map(|w| w.to_string()).collect();
            if ["ior", "mdtest"].contains(&args[0].as_str()) {
                // Their own options: one repetition, few items, the files in the scratch dir.
                let small: &[(&str, &str)] =
                    if args[0] == "ior" { &[("-i", "1")] } else { &[("-i", "1"), ("-n", "20")] };
                for (flag, value) in small {
                    if let Some(i) = args.iter().position(|a| a == flag) {
                        args[i + 1] = value.to_string();
                    }
                }
                let at = if args[0] == "ior" {
                    ["-o".to_string(), format!("{dir}/testFile")]
                } else {
                    ["-d".to_string(), dir.clone()]
                };
                args.extend(at);
                args.push("--quiet".into());
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = mpirun(&s, np, &args);
                assert!(o.status.success(), "{f}: {line}: {}", stderr(&o));
                ran += 1;
                continue;
            }
            for (flag, value) in [("--size", "1MiB"), ("--reps", "1")] {
                match args.iter().position(|a| a == flag) {
                    Some(i) => args[i + 1] = value.into(),
                    None if args[0] == "run" => args.extend([flag.to_string(), value.to_string()]),
                    None => {}
                }
            }
            args.extend(["--dir".to_string(), dir.clone()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = mpirun(&s, np, &args);
            assert!(o.status.success(), "{f}: {line}: {}", stderr(&o));
            ran += 1;
        }
    }
    assert!(ran >= 4, "only {ran} lines");
}

/// `--engine mpiio`: four ranks write one shared file with collective calls and read it back;
/// its bytes are exact; the calls made are the MPI-IO ones. Independent calls over one file per
/// rank, with a hint: each file's bytes. Misuse refused with exit 2.
#[test]
fn mpiio_collective_and_independent_write_exact_bytes() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let base = [
        "--op",
        "write,read:cold",
        "--size",
        "1MiB",
        "--bs",
        "64KiB",
        "--reps",
        "1",
        "--keep",
        "--json",
        "--quiet",
        "--no-store",
        "--dir",
        &dir,
    ];
    let mut args =
        vec!["run", "--engine", "mpiio", "--mpiio", "collective", "--layout", "shared", "--seed", "5"];
    args.extend_from_slice(&base);
    let doc = ok_json(&mpirun(&s, 4, &args));
    let calls = |p: usize| phases(&doc)[p]["repetitions"][0]["workers"][0]["calls"].clone();
    assert_eq!(calls(0), serde_json::json!({"MPI_File_sync": 1, "MPI_File_write_at_all": 16}));
    assert_eq!(calls(1), serde_json::json!({"MPI_File_read_at_all": 16}));
    let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let data = std::fs::read(work_dir(s.path(), &run_id).join("shared.dat")).unwrap();
    assert!(data == expected_file(5, 0, 4 << 20, 64 << 10), "collective: shared file bytes differ");

    // Shared-strided through file views, strided memory as a derived datatype: the bytes four
    // psync threads leave from the same strided memory (their engine gathers the pieces).
    let strided = ["--layout", "shared-strided", "--mem-len", "8", "--mem-stride", "32", "--seed", "5"];
    let shared_file = |doc: &Value| {
        let run_id = phases(doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
        std::fs::read(work_dir(s.path(), &run_id).join("shared.dat")).unwrap()
    };
    let mut args = vec!["run", "--engine", "mpiio", "--mpiio", "collective"];
    args.extend_from_slice(&strided);
    args.extend_from_slice(&base);
    let views = ok_json(&mpirun(&s, 4, &args));
    let view_calls = phases(&views)[0]["repetitions"][0]["workers"][0]["calls"].clone();
    assert_eq!(view_calls, serde_json::json!({"MPI_File_sync": 1, "MPI_File_write_at_all": 16}));
    let mut args = vec!["run", "--engine", "psync", "--workers", "4"];
    args.extend_from_slice(&strided);
    args.extend_from_slice(&base);
    let o = s.iolab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let threads: Value = serde_json::from_slice(&o.stdout).unwrap();
    let (a, b) = (shared_file(&views), shared_file(&threads));
    assert_eq!(a.len(), 4 << 20);
    assert!(a == b, "views with a derived datatype: bytes differ from psync's");

    let mut args = vec!["run", "--engine", "mpiio", "--mpiio-hint", "romio_cb_write=enable", "--seed", "6"];
    args.extend_from_slice(&base);
    let doc = ok_json(&mpirun(&s, 2, &args));
    assert_eq!(doc["spec"]["mpiio"]["hints"], serde_json::json!([["romio_cb_write", "enable"]]));
    let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    for gid in 0..2u32 {
        let data = std::fs::read(work_dir(s.path(), &run_id).join(format!("w{gid:04}.dat"))).unwrap();
        assert!(data == expected_file(6, gid, 1 << 20, 64 << 10), "independent: file {gid} bytes differ");
    }

    let cases: [(&[&str], &str); 4] = [
        (&["--engine", "mpiio", "--workers", "4"], "one worker per MPI rank"),
        (
            &["--engine", "mpiio", "--mpiio", "collective"],
            "collective I/O needs the one file all ranks share",
        ),
        (&["--mpiio-hint", "cb_nodes=2"], "applies to engine = mpiio only"),
        (&["--engine", "mpiio", "--mpiio-hint", "novalue"], "expected KEY=VALUE"),
    ];
    let fresh = Scratch::new();
    let fdir = fresh.path().to_str().unwrap().to_string();
    for (extra, want) in cases {
        let mut args = vec!["run", "--size", "1MiB", "--dir", &fdir];
        args.extend_from_slice(extra);
        let o = mpirun(&fresh, 2, &args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{extra:?}: {}", stderr(&o));
        assert!(fresh.leftovers().is_empty(), "{extra:?}");
    }
    let o = fresh.iolab(&["run", "--engine", "mpiio", "--size", "1MiB", "--dir", &fdir]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("start iolab with mpirun"), "{}", stderr(&o));
}

/// tune races on one host: under mpirun it is refused for what it is (the launcher), not for a
/// value of its baseline, with exit 2 and nothing made.
#[test]
fn tune_under_mpirun_is_refused_as_such() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let o = mpirun(&s, 2, &["tune", "checkpoint", "--workers", "2", "--budget", "10s", "--dir", dir]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(
            "mpirun = `2 ranks`: iolab tune races candidates on one host and does not run under mpirun"
        ),
        "{e}"
    );
    assert!(!e.contains("workers = `1`"), "{e}");
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    assert!(!s.db().exists(), "tune under mpirun made a store");
}

/// An MPMD launch (`mpirun -np 1 iolab run A : -np 2 iolab run B`): every rank runs rank 0's
/// experiment, and rank 0 says once that ranks 1 and 2 were started with other arguments,
/// which are ignored (an earlier version said nothing). The same arguments on every rank draw
/// no such line.
#[test]
fn ranks_started_with_other_arguments_are_named_once() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let mine =
        ["run", "--size", "1MiB", "--bs", "64KiB", "--op", "write", "--reps", "1", "--json", "--quiet"];
    let mut c = mpirun_cmd(&s, 1, &mine);
    c.args(["--dir", &dir, ":", "-np", "2"]).arg(bin()).args(["run", "--size", "2MiB", "--dir", &dir]);
    let o = c.output().unwrap();
    let doc = ok_json(&o);
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("started with other arguments")).collect();
    assert_eq!(
        said,
        [
            "warning: ranks 1, 2 started with other arguments than rank 0 (an MPMD launch): every rank runs rank 0's experiment; their own arguments are ignored"
        ],
        "{err}"
    );
    // Rank 0's experiment: three workers of 1 MiB each.
    let rep = &phases(&doc)[0]["repetitions"][0];
    assert_eq!(rep["total_bytes"], 3 << 20, "{rep}");
    let o =
        mpirun(&s, 2, &["run", "--size", "1MiB", "--op", "write", "--reps", "1", "--quiet", "--dir", &dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("other arguments"), "{}", stderr(&o));
}
