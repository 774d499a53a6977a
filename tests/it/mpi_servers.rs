//! I/O-server ranks under Open MPI's `mpirun` on this host (build with `--features mpi`): a
//! file striped over server ranks holds exactly the bytes the striped layout over directories
//! holds, with serial and parallel fan-out, read back cold; the memory store makes no file;
//! misuse is refused before anything is made.

use std::path::{Path, PathBuf};

use crate::mpi::{mpirun, ok_json};
use crate::rig::*;
use crate::skip;
use crate::util::*;

/// The logical file rebuilt from its components with the striping formula (component t byte c
/// is logical byte (c / U) x U x T + t x U + c mod U), computed here independently of iolab.
pub(crate) fn unstripe(components: &[Vec<u8>], unit: usize) -> Vec<u8> {
    let t_count = components.len();
    let len: usize = components.iter().map(Vec::len).sum();
    let mut out = vec![0u8; len];
    for (t, comp) in components.iter().enumerate() {
        for (c, &b) in comp.iter().enumerate() {
            out[(c / unit) * unit * t_count + t * unit + c % unit] = b;
        }
    }
    out
}

/// Every `.iolab-*` entry under `dir`.
pub(crate) fn work_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return vec![] };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".iolab-"))
        .collect()
}

/// The servers of repetition 0 of phase `p`.
pub(crate) fn servers(doc: &Value, p: usize) -> Vec<Value> {
    phases(doc)[p]["repetitions"][0]["servers"].as_array().cloned().unwrap_or_default()
}

/// Two clients write one file striped over two server ranks and read it back cold, for blocks
/// smaller and larger than the stripe unit, with serial and parallel fan-out: each server's
/// directory holds its component, and the components are the logical file byte for byte; each
/// server received and served exactly its component; the clients verified every block read
/// (debug builds check every stamp); the clients' own directory holds nothing.
#[test]
fn a_file_striped_over_server_ranks_holds_exact_bytes() {
    let s = Scratch::new();
    let srv = s.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    let (unit, size) = (16384usize, 256 << 10);
    for bs in [8192usize, 65536] {
        for fanout in ["serial", "parallel"] {
            let (bs_s, size_s) = (bs.to_string(), size.to_string());
            let args = [
                "run",
                "--servers",
                "2",
                "--workers",
                "2",
                "--server-dir",
                srv.to_str().unwrap(),
                "--layout",
                "striped",
                "--stripe-unit",
                "16KiB",
                "--bs",
                &bs_s,
                "--size",
                &size_s,
                "--fanout",
                fanout,
                "--op",
                "write,read:cold",
                "--reps",
                "1",
                "--seed",
                "9",
                "--keep",
                "--json",
                "--quiet",
                "--no-store",
                "--dir",
                s.path().to_str().unwrap(),
            ];
            let doc = ok_json(&mpirun(&s, 4, &args));
            let what = format!("bs {bs}, fan-out {fanout}");
            let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
            let dir = work_dir(&srv, &run_id);
            let comps: Vec<Vec<u8>> =
                (0..2).map(|t| std::fs::read(dir.join(format!("striped.s{t:02}.dat"))).unwrap()).collect();
            assert_eq!(comps.iter().map(Vec::len).sum::<usize>(), 2 * size, "{what}");
            let want = expected_file(9, 0, 2 * size as u64, bs.min(unit) as u64);
            assert!(unstripe(&comps, unit) == want, "{what}: the components are not the logical file");
            for (p, field) in [(0, "write_bytes"), (1, "read_bytes")] {
                let ss = servers(&doc, p);
                let got: Vec<(u64, u64, u64)> = ss
                    .iter()
                    .map(|x| {
                        (
                            x["server"].as_u64().unwrap(),
                            x["rank"].as_u64().unwrap(),
                            x[field].as_u64().unwrap(),
                        )
                    })
                    .collect();
                assert_eq!(got, [(0, 2, size as u64), (1, 3, size as u64)], "{what}: phase {p}");
                let pieces_per_server = (size / bs.min(unit)) as u64;
                assert!(ss.iter().all(|x| x["requests"].as_u64().unwrap() >= pieces_per_server), "{what}");
            }
            for x in servers(&doc, 1) {
                assert!(
                    x["resident_fraction"].as_f64().unwrap() <= 0.05,
                    "{what}: not cold on the server: {x}"
                );
            }
            let r = &phases(&doc)[1]["repetitions"][0];
            assert_eq!(r["status"], "complete", "{what}");
            assert_eq!(r["total_bytes"], 2 * size as u64, "{what}");
            let ranks: Vec<u64> =
                r["workers"].as_array().unwrap().iter().map(|w| w["rank"].as_u64().unwrap()).collect();
            assert_eq!(ranks, [0, 1], "{what}");
            let pieces = (size / bs.min(unit)) as u64;
            for w in r["workers"].as_array().unwrap() {
                assert_eq!(w["calls"]["read_request"], pieces, "{what}: {w}");
                let inflight = w["max_inflight"].as_u64().unwrap();
                let want = if fanout == "parallel" && bs > unit { (bs / unit) as u64 } else { 1 };
                assert_eq!(inflight, want, "{what}");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    assert!(work_dirs(s.path()).is_empty(), "the clients' directory holds {:?}", work_dirs(s.path()));
}

/// The memory store: the servers make no file and no work directory, drop what is written and
/// answer reads with the bytes the file would hold, which the clients verify.
#[test]
fn the_memory_store_makes_no_file() {
    let s = Scratch::new();
    let srv = s.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    let args = [
        "run",
        "--servers",
        "2",
        "--server-store",
        "memory",
        "--server-dir",
        srv.to_str().unwrap(),
        "--layout",
        "striped",
        "--stripe-unit",
        "16KiB",
        "--bs",
        "64KiB",
        "--size",
        "1MiB",
        "--fanout",
        "parallel",
        "--verify",
        "--op",
        "write,read:cold",
        "--reps",
        "2",
        "--keep",
        "--json",
        "--quiet",
        "--dir",
        s.path().to_str().unwrap(),
    ];
    let doc = ok_json(&mpirun(&s, 3, &args));
    // The store keeps every server's figures as the run printed them.
    let shown = s.iolab(&["results", "show", "last", "--json"]);
    let stored: Value = serde_json::from_slice(&shown.stdout).unwrap();
    for p in 0..2 {
        let reps = |d: &Value| phases(d)[p]["repetitions"].as_array().unwrap().clone();
        for (a, b) in reps(&doc).iter().zip(&reps(&stored)) {
            assert_eq!(a["servers"].as_array().unwrap().len(), 2);
            assert_eq!(a["servers"], b["servers"], "phase {p}");
        }
    }
    // The header describes the servers' directory (this host's view) beside the clients' target.
    let table = String::from_utf8(s.iolab(&["results", "show", "last"]).stdout).unwrap();
    assert!(table.contains(&format!("\nservers {}: ", srv.display())), "{table}");
    assert!(table.contains(&format!("\ntarget  {}: ", s.path().display())), "{table}");
    // The CSV has a row per server per repetition beside the clients' rows, with its figures.
    let csv_all = s.iolab(&["results", "export", "last", "--csv"]).stdout;
    let mut rdr = csv::Reader::from_reader(csv_all.as_slice());
    let head = rdr.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|c| c == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    let server_rows: Vec<&csv::StringRecord> =
        rows.iter().filter(|r| &r[col("worker_role")] == "server").collect();
    assert_eq!(server_rows.len(), 2 * 2 * 2, "2 phases x 2 reps x 2 servers");
    assert_eq!(rows.len() - server_rows.len(), 2 * 2, "2 phases x 2 reps x 1 client");
    for r in &server_rows {
        let p = usize::from(r[col("phase")] != phases(&doc)[0]["name"]);
        let rep = r[col("rep")].parse::<usize>().unwrap();
        let server = r[col("server")].parse::<usize>().unwrap();
        let x = &phases(&doc)[p]["repetitions"][rep]["servers"][server];
        assert_eq!(r[col("worker_rank")], x["rank"].to_string());
        assert_eq!(&r[col("worker_host")], x["host"].as_str().unwrap());
        assert_eq!(&r[col("server_store")], "memory");
        for k in ["files", "requests", "write_bytes", "read_bytes", "busy_ns", "device_write_bytes"] {
            assert_eq!(r[col(&format!("server_{k}"))], x[k].to_string(), "{k}");
        }
        assert!(r[col("worker_bytes")].is_empty() && r[col("server_resident_fraction")].is_empty());
    }
    assert!(rows.iter().filter(|r| &r[col("worker_role")] != "server").all(|r| r[col("server")].is_empty()));
    for p in 0..2 {
        for r in phases(&doc)[p]["repetitions"].as_array().unwrap() {
            assert_eq!(r["status"], "complete", "{r}");
            assert_eq!(r["total_bytes"], 1 << 20);
        }
        for x in servers(&doc, p) {
            assert_eq!(x["store"], "memory");
            assert_eq!(x["files"], 0);
            assert!(x["resident_fraction"].is_null(), "{x}");
            let field = if p == 0 { "write_bytes" } else { "read_bytes" };
            assert_eq!(x[field], 512 << 10, "{x}");
        }
    }
    assert_eq!(phases(&doc)[1]["cache"]["method"], "no files: the servers serve from memory (no disk I/O)");
    assert!(work_dirs(&srv).is_empty() && work_dirs(s.path()).is_empty(), "{:?}", work_dirs(&srv));
}

/// `iolab plan` with servers: each component in its server's directory, the space that
/// directory has on this host (none needed with the memory store), and the placement of
/// clients and servers by rank; nothing made.
#[test]
fn the_plan_shows_the_servers_directory_and_placement() {
    let s = Scratch::new();
    let srv = s.path().join("srv-plan");
    std::fs::create_dir(&srv).unwrap();
    let (srv_s, dir) = (srv.to_str().unwrap(), s.path().to_str().unwrap());
    for (store, need) in [("disk", "8 MiB"), ("memory", "0 B")] {
        let args = [
            "plan",
            "--servers",
            "2",
            "--server-store",
            store,
            "--server-dir",
            srv_s,
            "--layout",
            "striped",
            "--stripe-unit",
            "16KiB",
            "--bs",
            "64KiB",
            "--size",
            "8MiB",
            "--op",
            "write,read:cold",
            "--dir",
            dir,
        ];
        let o = crate::mpi::mpirun(&s, 3, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(&format!("striped.s01.dat      4 MiB  in server 1's {srv_s}\n")), "{out}");
        assert!(
            out.contains(&format!("\ndisk space needed: {need} (free in {srv_s} on this host: ")),
            "{out}"
        );
        assert!(
            out.contains(
                "placement: 3 MPI ranks: clients on rank 0 (one worker each), I/O servers on ranks 1-2"
            ),
            "{out}"
        );
    }
    assert!(work_dirs(&srv).is_empty() && work_dirs(s.path()).is_empty());
}

/// What cannot run on server ranks is refused with exit 2, naming the field, before anything
/// is made.
#[test]
fn misuse_of_servers_is_refused_up_front() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let cases: [(&[&str], &str); 11] = [
        (&["--servers", "3"], "servers = `3`: 3 servers leave none of the 3 MPI ranks"),
        (&["--servers", "2", "--workers", "2"], "2 servers and 2 clients need 4 MPI ranks; mpirun started 3"),
        (&["--servers", "1", "--engine", "psync"], "engine = `psync`: with servers the clients speak"),
        (&["--servers", "1", "--server-depth", "0"], "server_depth = `0`: must be between 1 and 64"),
        (&["--servers", "1", "--op", "write,blast"], "only blast phases"),
        (
            &["--servers", "1", "--op", "blast", "--sync", "none"],
            "sync = `none`: a blast ends when the server",
        ),
        (&["--server-store", "memory"], "server_store = `memory`: applies with servers only"),
        (&["--servers", "1", "--reorder-reads", "1"], "not with servers"),
        (&["--servers", "1", "--layout", "striped", "--stripe-count", "2"], "only 1 server(s)"),
        (&["--servers", "1", "--blast-transport", "tcp"], "applies to blast phases"),
        // The servers' directory goes through the guard --dir goes through.
        (&["--servers", "1", "--server-dir", "/dev/shm"], "server_dir = `/dev/shm`: /dev/shm is under /dev"),
    ];
    crate::mpi::refused_under_mpirun(&s, 3, &cases);
    let o = s.iolab(&["run", "--servers", "1", "--size", "1MiB", "--dir", &dir]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("I/O servers are MPI ranks: run it as `mpirun"), "{}", stderr(&o));
}

/// A block larger than one MPI message (2 GiB and more) is refused as the spec resolves, on
/// every rank, before any rank allocates a block or starts a phase: exit 2 naming `bs`, no
/// store, no work directory (it used to fail after each rank had filled a 2 GiB buffer, and
/// store a failed run).
#[test]
fn a_block_larger_than_an_mpi_message_is_refused_before_anything_runs() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    for op in ["blast", "write"] {
        let args = ["run", "--servers", "1", "--op", op, "--bs", "2GiB", "--size", "4GiB", "--dir", &dir];
        let o = mpirun(&s, 2, &args);
        assert_eq!(o.status.code(), Some(2), "{op}: {}", stderr(&o));
        assert!(
            stderr(&o)
                .contains("bs = `2GiB`: with servers a block goes in one MPI message, at most 2 GiB - 1"),
            "{op}: {}",
            stderr(&o)
        );
        assert!(!s.db().exists(), "{op}: a store was made");
        assert!(s.leftovers().is_empty(), "{op}: {:?}", s.leftovers());
    }
}

/// The local ports of the TCP connections between two iolab processes (a blast's; the ranks'
/// other connections go to mpirun), as `ss` shows them.
fn blast_ports() -> Vec<String> {
    let out = std::process::Command::new("ss").args(["-Htnp"]).output().expect("ss (iproute2)");
    let iolab: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("ESTAB") && l.contains("((\"iolab\""))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.get(3)?.to_string(), f.get(4)?.to_string()))
        })
        .collect();
    iolab
        .iter()
        .filter(|(_, peer)| iolab.iter().any(|(local, _)| local == peer))
        .filter_map(|(local, _)| local.rsplit(':').next().map(String::from))
        .collect()
}

/// A blast over TCP whose connection is cut mid-way (`ss -K` aborts the server's socket,
/// MPI goes on): the client's failed send names the connection and its block, not a file (a
/// blast has none); the run exits 1 with the repetition stored as failed, and nothing is left.
#[test]
fn a_blast_cut_mid_way_names_its_connection() {
    let s = Scratch::new();
    let srv = s.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    let dir = s.path().to_str().unwrap();
    let args = [
        "run",
        "--servers",
        "1",
        "--op",
        "blast",
        "--blast-transport",
        "tcp",
        "--size",
        "64GiB",
        "--bs",
        "64KiB",
        "--reps",
        "1",
        "--server-dir",
        srv.to_str().unwrap(),
        "--quiet",
        "--dir",
        dir,
    ];
    let child = crate::mpi::mpirun_cmd(&s, 2, &args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ports = vec![];
    wait_until(60, "the blast's connection", || {
        ports = blast_ports();
        !ports.is_empty()
    });
    for p in &ports {
        std::process::Command::new("ss")
            .args(["-K", "-Htn", "state", "established", &format!("( sport = :{p} )")])
            .output()
            .unwrap();
    }
    let t = std::time::Instant::now();
    while blast_ports().iter().any(|p| ports.contains(p)) {
        if t.elapsed() > std::time::Duration::from_secs(10) {
            let mut child = child;
            let _ = child.kill();
            let _ = child.wait();
            skip!("ss -K destroys no socket here (a kernel without CONFIG_INET_DIAG_DESTROY)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = finish(child, 60);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err.lines().find(|l| l.contains("of the blast")).unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("send of block ")
            && line.contains("to the I/O-server rank over its TCP connection (blast_transport = tcp)"),
        "{line}"
    );
    assert!(!line.contains(".iolab-"), "a blast has no file to name: {line}");
    let r = runs(&s.db());
    assert_eq!((count(&r, "failed"), count(&r, "complete")), (1, 0), "{r:?}");
    assert!(work_dirs(&srv).is_empty() && work_dirs(s.path()).is_empty(), "{:?}", s.leftovers());
}

/// The network blast: each client rank sends N bytes to its server rank in blocks, over MPI
/// and over TCP with and without TCP_NODELAY (the server's address sent over MPI); the servers count exactly N bytes from
/// each, the clients' calls are one send per block and one acknowledged end, and no file is
/// made anywhere.
#[test]
fn a_blast_moves_exactly_n_bytes_over_mpi_and_tcp() {
    let s = Scratch::new();
    let srv = s.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    let n: u64 = 3 << 20;
    for (np, pairs) in [(2usize, 1u64), (4, 2)] {
        for (transport, call) in [("mpi", "MPI_Send"), ("tcp", "send"), ("tcp-nagle", "send")] {
            let pairs_s = pairs.to_string();
            let args = [
                "run",
                "--servers",
                &pairs_s,
                "--op",
                "blast",
                "--blast-transport",
                transport,
                "--size",
                "3MiB",
                "--bs",
                "48KiB",
                "--reps",
                "2",
                "--server-dir",
                srv.to_str().unwrap(),
                "--json",
                "--quiet",
                "--no-store",
                "--dir",
                s.path().to_str().unwrap(),
            ];
            let doc = ok_json(&mpirun(&s, np, &args));
            let what = format!("{pairs} pair(s) over {transport}");
            assert_eq!(
                phases(&doc)[0]["cache"]["method"],
                "no files: bytes counted and dropped by the servers"
            );
            for r in phases(&doc)[0]["repetitions"].as_array().unwrap() {
                assert_eq!(r["status"], "complete", "{what}: {r}");
                assert_eq!(r["total_bytes"], n * pairs, "{what}");
                for w in r["workers"].as_array().unwrap() {
                    assert_eq!(w["bytes"], n, "{what}");
                    assert_eq!(w["calls"][call], n / (48 << 10), "{what}: {w}");
                    assert_eq!(w["calls"]["commit_request"], 1, "{what}: {w}");
                }
                let got: Vec<(u64, u64, u64)> = r["servers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| {
                        (
                            x["rank"].as_u64().unwrap(),
                            x["write_bytes"].as_u64().unwrap(),
                            x["files"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                let want: Vec<(u64, u64, u64)> = (0..pairs).map(|j| (np as u64 - pairs + j, n, 0)).collect();
                assert_eq!(got, want, "{what}");
            }
        }
    }
    assert!(work_dirs(&srv).is_empty() && work_dirs(s.path()).is_empty());
}

/// A server whose disk fills (a tmpfs as its directory, filled between two phases, the second
/// writing twice what the first did): the client's request gets the server's error, the run
/// ends with exit 1 naming the server, its host and the file, and the phases finished before
/// are stored.
#[test]
fn a_full_server_disk_ends_the_run_naming_server_host_and_file() {
    use std::process::{Command, Stdio};
    let s = Scratch::new();
    let srv = s.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=80M", "tmpfs"]).arg(&srv).status();
    if !mounted.is_ok_and(|st| st.success()) {
        eprintln!("skip: cannot mount a tmpfs here (needs root)");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(srv.clone());
    let go = s.path().join("go");
    let args = [
        "run",
        "--servers",
        "2",
        "--server-dir",
        srv.to_str().unwrap(),
        "--layout",
        "striped-per-worker",
        "--files",
        "2",
        "--workers",
        "1",
        "--stripe-unit",
        "16KiB",
        "--bs",
        "64KiB",
        "--size",
        "4MiB",
        "--op",
        "write:files=1,read:files=1:cold,write",
        "--reps",
        "1",
        "--dir",
        s.path().to_str().unwrap(),
    ];
    let child = crate::mpi::mpirun_cmd(&s, 3, &args)
        .env("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first phase is done (the servers' first components are full), fill the disk.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let full = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.len() == 2 << 20);
    while !work_dirs(&srv).first().is_some_and(|d| full(&d.join("w0000.s01.dat"))) {
        assert!(std::time::Instant::now() < deadline, "the first phase did not finish");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = Command::new("df").args(["--output=avail", "-B1"]).arg(&srv).output().unwrap();
    let avail: u64 = String::from_utf8_lossy(&out.stdout).lines().last().unwrap().trim().parse().unwrap();
    let filled = Command::new("fallocate").args(["-l", &avail.to_string()]).arg(srv.join("filler")).status();
    assert!(filled.unwrap().success());
    std::fs::write(&go, b"").unwrap();
    let (o, took) = crate::mpi::wait_for(child, 120);
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    assert!(err.contains("write_request on "), "{err}");
    assert!(
        err.contains("/w0001.s00.dat at offset 0: server 0 (rank 1 on ")
            || err.contains("/w0001.s01.dat at offset 0: server 1 (rank 2 on "),
        "{err}"
    );
    assert!(err.contains(&format!(" on {host}): pwrite: No space left on device")), "{err}");
    let exps = crate::mpi::experiments(&s);
    assert_eq!(exps.len(), 1);
    let shown = s.iolab(&["results", "show", &exps[0].id, "--json"]);
    let doc: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let statuses: Vec<&str> =
        phases(&doc).iter().map(|p| p["repetitions"][0]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["complete", "complete", "failed"]);
    std::fs::remove_file(srv.join("filler")).unwrap();
    assert!(work_dirs(&srv).is_empty(), "{:?}", work_dirs(&srv));
}

/// A server rank killed with -9 mid-run: mpirun ends every rank within seconds (the clients
/// waiting for it included) and exits 137 naming the rank, and the repetitions stored before
/// are kept.
#[test]
fn a_server_rank_killed_with_9_ends_the_run_within_seconds() {
    use std::process::{Command, Stdio};
    let s = Scratch::new();
    let srv = s.path().join("srv-kill");
    std::fs::create_dir(&srv).unwrap();
    let args = [
        "run",
        "--servers",
        "2",
        "--server-dir",
        srv.to_str().unwrap(),
        "--layout",
        "striped",
        "--stripe-unit",
        "16KiB",
        "--bs",
        "64KiB",
        "--size",
        "8MiB",
        "--op",
        "write,read:cold",
        "--reps",
        "1000",
        "--quiet",
        "--dir",
        s.path().to_str().unwrap(),
    ];
    let child =
        crate::mpi::mpirun_cmd(&s, 3, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let ranks = crate::mpi::ranks_of(srv.to_str().unwrap(), 3);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while crate::mpi::runs_ok(&s) == 0 {
        assert!(std::time::Instant::now() < deadline, "no repetition stored");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let t = std::time::Instant::now();
    assert!(Command::new("kill").args(["-9", &ranks[2].to_string()]).status().unwrap().success());
    let (o, _) = crate::mpi::wait_for(child, 150);
    assert!(t.elapsed() < std::time::Duration::from_secs(10), "the run took {:?} to end", t.elapsed());
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    assert!(stderr(&o).contains("rank 2"), "{}", stderr(&o));
    assert!(crate::mpi::runs_ok(&s) >= 1);
    // What the killed ranks could not remove is the servers' work directory (when the kill
    // landed inside a repetition): `iolab clean` on the server directory removes it, and the
    // clients' directory holds nothing.
    assert!(work_dirs(s.path()).is_empty(), "{:?}", work_dirs(s.path()));
    let left = work_dirs(&srv);
    println!("left by the kill: {left:?}");
    if !left.is_empty() {
        // The next run with servers in that directory names what is left and how to remove it.
        let srv_s = srv.to_str().unwrap();
        let next = [
            "run",
            "--servers",
            "1",
            "--server-dir",
            srv_s,
            "--size",
            "1MiB",
            "--op",
            "write",
            "--reps",
            "1",
            "--quiet",
            "--no-store",
            "--dir",
            s.path().to_str().unwrap(),
        ];
        let o = crate::mpi::mpirun(&s, 2, &next);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains(&format!("remove them with `iolab clean {srv_s}`")), "{}", stderr(&o));
    }
    let cleaned = s.iolab(&["clean", srv.to_str().unwrap()]);
    assert!(cleaned.status.success(), "{}", stderr(&cleaned));
    for d in &left {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            String::from_utf8_lossy(&cleaned.stdout).contains(&name),
            "{}",
            String::from_utf8_lossy(&cleaned.stdout)
        );
    }
    assert!(work_dirs(&srv).is_empty(), "{:?}", work_dirs(&srv));
}

/// R7, R8, R9 and R10 at quick scale under mpirun on this host, with as many ranks as
/// `reproduce --list` says each needs: every point's repetitions complete, servers report
/// their figures, and `iolab plot last` draws each study figure.
#[test]
fn the_server_presets_run_at_quick_scale_and_plot() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let list = s.iolab(&["reproduce", "--list", "--scale", "quick"]);
    let text = unwrap_entries(&String::from_utf8_lossy(&list.stdout));
    for (id, np) in [("R7", 5), ("R8", 2), ("R9", 3), ("R10", 4)] {
        let run = format!("`mpirun -np {np} iolab reproduce {id} --scale quick`");
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(&format!("{id} ")) && l.contains(&run)),
            "{id}: {text}"
        );
        let args = ["reproduce", id, "--scale", "quick", "--dir", &dir, "--json", "--quiet"];
        let doc = ok_json(&mpirun(&s, np, &args));
        assert_eq!(doc["design"]["preset"]["id"], id);
        for point in doc["points"].as_array().unwrap() {
            for ph in point["phases"].as_array().unwrap() {
                for r in ph["repetitions"].as_array().unwrap() {
                    assert_eq!(r["status"], "complete", "{id} {}: {r}", point["params"]);
                    assert!(!r["servers"].as_array().unwrap().is_empty(), "{id}");
                }
            }
        }
        assert!(doc["findings"].as_array().is_some_and(|f| !f.is_empty()), "{id}");
        // Stored too: the same run again into the store, then its figure.
        let o = mpirun(&s, np, &["reproduce", id, "--scale", "quick", "--dir", &dir, "--quiet"]);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
        let svg = s.path().join(format!("{id}.svg"));
        let o = s.iolab(&["plot", "last", "-o", svg.to_str().unwrap()]);
        assert!(o.status.success(), "{id}: {}", stderr(&o));
        let fig = std::fs::read_to_string(&svg).unwrap();
        assert!(fig.contains("<svg") && fig.contains(id), "{id}");
    }
    assert!(work_dirs(s.path()).is_empty(), "{:?}", work_dirs(s.path()));
}
