//! MPI ranks on three simulated hosts over a real distributed file system (MooseFS:
//! `tests/hosts.sh up --fs moosefs`, a chunkserver on every host, an `mfsmount` per host with
//! its own page cache). A shared file written by all and read back with `--reorder-reads node`
//! comes from the chunkservers, every byte (counted in their /proc/PID/io), though every host
//! had read the whole file through its own mount just before: the cold read evicted it on each
//! host, and each host's view was 0% resident. A node-local and a shared target in one run are
//! told apart. SLAC's per-host table across the three hosts names the file system. Russell's
//! R7 and R10 shapes run over iolab's server ranks and on MooseFS on the same hosts and disks,
//! each pair drawn in one figure.

use std::path::Path;
use std::process::Command;

use crate::hosts::{Hosts, hosts_sh, on, on_bytes, servers_read_bytes};
use crate::mpi::{ok_json, on_hosts};
use crate::util::*;

const MIB: u64 = 1 << 20;

fn chunkservers() -> Vec<String> {
    ["h1", "h2", "h3"].iter().map(|h| format!("moosefs/{h}.cs.pid")).collect()
}

fn run_id(doc: &Value) -> String {
    phases(doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string()
}

fn strings(args: &[&str], extra: &[&str]) -> Vec<String> {
    args.iter().chain(extra).map(|a| a.to_string()).collect()
}

/// A shared file on MooseFS written by six ranks (two per host), then read cold with every
/// rank reading what a rank on the next host wrote, under Open MPI and (when a build against
/// it is named) under MPICH.
#[test]
fn a_shared_file_on_moosefs_is_read_from_the_chunkservers_by_every_host() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["moosefs"]) else { return };
    let db = s.db().to_str().unwrap().to_string();
    let mut launchers = vec![("mpirun", bin().to_str().unwrap().to_string())];
    match std::env::var_os("IOLAB_TEST_MPICH_BIN") {
        Some(m) => launchers.push(("mpiexec", m.to_string_lossy().into_owned())),
        None => eprintln!("skip the MPICH half: IOLAB_TEST_MPICH_BIN names no build against MPICH"),
    }
    let base = [
        "run",
        "--dir",
        "/mnt/moosefs",
        "--layout",
        "shared",
        "--size",
        "4MiB",
        "--bs",
        "1MiB",
        "--reps",
        "1",
    ];
    let total = 24 * MIB;
    for (launcher, exe) in &launchers {
        let w = strings(&base, &["--op", "write", "--seed", "5", "--keep", "--json", "--quiet", "--db", &db]);
        let w =
            ok_json(&on_hosts(launcher, exe, &w.iter().map(String::as_str).collect::<Vec<_>>(), s.path()));
        let rid = run_id(&w);
        let file = format!("/mnt/moosefs/.iolab-{rid}/shared.dat");
        assert!(
            on_bytes("h3", &format!("cat {file}")) == expected_file(5, 0, total, MIB),
            "{launcher}: bytes differ"
        );
        // Every host reads the whole file through its own mount: its page cache holds it now.
        // (Under memory pressure a read may leave a few pages out: read again, up to 5 times.)
        for h in ["h1", "h2", "h3"] {
            let held = (0..5)
                .map(|_| {
                    on(h, &format!("cat {file} > /dev/null"));
                    on(h, &format!("fincore --bytes --noheadings --output RES {file}"))
                        .trim()
                        .parse::<u64>()
                        .unwrap()
                })
                .find(|&b| b == total);
            assert_eq!(held, Some(total), "{launcher}: {h} does not hold the file after 5 reads");
        }
        let before = servers_read_bytes(&chunkservers());
        let r = strings(
            &base,
            &[
                "--op",
                "read:cold",
                "--seed",
                "5",
                "--reuse",
                &rid,
                "--reorder-reads",
                "node",
                "--json",
                "--quiet",
                "--db",
                &db,
            ],
        );
        let r =
            ok_json(&on_hosts(launcher, exe, &r.iter().map(String::as_str).collect::<Vec<_>>(), s.path()));
        let served = servers_read_bytes(&chunkservers()) - before;
        let ph = &phases(&r)[0];
        let rep = &ph["repetitions"][0];
        assert_eq!(rep["status"], "complete", "{launcher}: {rep}");
        // Plainly cold (mfsmount keeps nothing the eviction misses), and no host held any of it.
        assert_eq!(ph["cache"]["policy"], "cold");
        assert!(ph["cache"].get("client_cache_not_controlled").is_none(), "{launcher}");
        assert_eq!(rep["resident_fraction"], 0.0, "{launcher}: some host's view was not cold");
        assert!(
            served >= total,
            "{launcher}: the chunkservers read {served} bytes for a cold read of {total}"
        );
        // Worker i wrote from rank i; reading, rank r runs worker r + 2: what a rank on the next
        // host wrote.
        let pairs: Vec<(u64, u64)> = rep["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["worker"].as_u64().unwrap(), w["rank"].as_u64().unwrap()))
            .collect();
        assert_eq!(pairs, [(0, 4), (1, 5), (2, 0), (3, 1), (4, 2), (5, 3)], "{launcher}");
        // One row per host, in host order, each its two ranks' 8 MiB.
        let hosts: Vec<(String, u64)> = rep["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["host"].as_str().unwrap().to_string(), h["bytes"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            hosts,
            [("h1".into(), 8 * MIB), ("h2".into(), 8 * MIB), ("h3".into(), 8 * MIB)],
            "{launcher}"
        );
        assert_eq!(r["host"]["targets"][0]["fs"]["name"], "moosefs");
        on("h1", &format!("rm -rf /mnt/moosefs/.iolab-{rid}"));
    }
}

/// One run over a node-local target (/mnt/node, each host's own disk) and a shared one
/// (/mnt/moosefs): files 0, 2, 4 on the first, 1, 3, 5 on the second. Each host fills its own
/// node-local directory with its workers' files and uses rank 0's files on MooseFS: every host's
/// disk holds exactly its file there, and MooseFS holds the odd files once, every byte as
/// written. SLAC's per-host table, run on each host over MooseFS, names each host and the file
/// system.
#[test]
fn node_local_and_shared_targets_in_one_run_and_the_per_host_table_on_moosefs() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["moosefs"]) else { return };
    let db = s.db().to_str().unwrap().to_string();
    let args = [
        "run",
        "--targets",
        "/mnt/node,/mnt/moosefs",
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
    let doc = ok_json(&on_hosts("mpirun", bin().to_str().unwrap(), &args, s.path()));
    let rid = run_id(&doc);
    for ph in phases(&doc) {
        assert_eq!(ph["repetitions"][0]["status"], "complete", "{ph}");
    }
    let ls = |h: &str, dir: &str| -> Vec<String> {
        on(h, &format!("ls {dir}/.iolab-{rid}")).split_whitespace().map(String::from).collect()
    };
    for (i, h) in ["h1", "h2", "h3"].iter().enumerate() {
        let gid = 2 * i as u32;
        let own = on_bytes(h, &format!("cat /mnt/node/.iolab-{rid}/w{gid:04}.dat"));
        assert!(own == expected_file(9, gid, MIB, 64 << 10), "{h}: node-local file {gid} differs");
        if *h != "h1" {
            assert_eq!(ls(h, "/mnt/node"), [format!("w{gid:04}.dat")], "{h}");
        }
        // Every host sees the same shared directory: the odd files, rank 0's.
        assert_eq!(ls(h, "/mnt/moosefs"), ["w0001.dat", "w0003.dat", "w0005.dat"], "{h}");
    }
    for gid in [1u32, 3, 5] {
        let bytes = on_bytes("h2", &format!("cat /mnt/moosefs/.iolab-{rid}/w{gid:04}.dat"));
        assert!(bytes == expected_file(9, gid, MIB, 64 << 10), "shared file {gid} differs");
    }
    for h in ["h1", "h2", "h3"] {
        on(h, &format!("rm -rf /mnt/node/.iolab-{rid}"));
    }
    on("h1", &format!("rm -rf /mnt/moosefs/.iolab-{rid}"));

    // L4 on each host over MooseFS, into one store: the last one's table has a row per host.
    let mut out = String::new();
    for h in ["h1", "h2", "h3"] {
        out = on(
            h,
            &format!("{} reproduce L4 --scale quick --dir /mnt/moosefs --quiet --db {db}", bin().display()),
        );
    }
    // The table's rows: HOST OS CPUS FILE-SYSTEM FIGURES...
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|w| ["h1", "h2", "h3"].contains(&w)))
        .filter(|l| l.contains(" moosefs "))
        .collect();
    for h in ["h1", "h2", "h3"] {
        assert!(rows.iter().any(|r| r.starts_with(h)), "no row for {h}: {out}");
    }
    assert_eq!(rows.len(), 3, "{out}");
    assert!(Path::new(&db).exists());
}

/// `mpirun -np NP --map-by node` of the test binary across the hosts: rank r on host
/// r mod 3 + 1.
fn by_node(np: usize, args: &[String], cwd: &Path) -> Value {
    let (np, exe) = (np.to_string(), bin().to_str().unwrap().to_string());
    let mut call = vec!["mpirun", "-np", &np, "--map-by", "node", &exe];
    call.extend(args.iter().map(String::as_str));
    ok_json(&hosts_sh(&call, cwd).expect("the hosts are up"))
}

/// Russell's R7 shape (Fig. 21: one client reads, cold, one file whose pieces lie on S servers)
/// both ways on the same hosts and disks: over S = 1, 2 iolab server ranks (the file striped in
/// 16 KiB units, each server keeping its piece on its host's /mnt/srv) and on MooseFS (a file
/// of the same size; its chunkservers keep their chunks on the same /mnt/srv), then both in one
/// figure on the file's size. Each server rank read its piece and nothing more; the MooseFS
/// file's one chunk lies on a chunkserver MooseFS names, which served the cold read.
#[test]
fn russell_r7_over_server_ranks_and_on_moosefs_in_one_figure() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["moosefs"]) else { return };
    let db = s.db().to_str().unwrap().to_string();
    let common = ["--bs", "64KiB", "--op", "write,read:cold", "--reps", "1", "--seed", "7"];
    let tail = ["--json", "--quiet", "--db", &db];
    let sizes = [MIB, 2 * MIB];

    // Rank 0 (h1) the client; its S servers the last S of ranks 1 (h2) and 2 (h3).
    let servers = strings(
        &["run", "--name", "r7-servers", "--clients", "1", "--server-dir", "/mnt/srv"],
        &["--layout", "striped", "--stripe-unit", "16KiB", "--fanout", "parallel"],
    );
    let sweep = ["--sweep", "servers=1,2", "--sweep", "size=1MiB,2MiB", "--zip", "servers,size"];
    let args: Vec<String> =
        servers.into_iter().chain(strings(&common, &sweep)).chain(strings(&tail, &[])).collect();
    let doc = by_node(3, &args, s.path());
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (k, p) in points.iter().enumerate() {
        assert_eq!(p["phases"][1]["repetitions"][0]["total_bytes"], sizes[k]);
        let (_, served) = who(p, 1);
        let want: Vec<Served> = match k {
            0 => vec![("h3".into(), MIB, 0)],
            _ => vec![("h2".into(), MIB, 0), ("h3".into(), MIB, 0)],
        };
        assert_eq!(served, want, "point {k}: each server reads its piece");
    }
    let servers_id = doc["experiment_id"].as_str().unwrap().to_string();

    // One client on h1, MooseFS: the same sizes, each file one chunk on one chunkserver.
    let chunkservers = chunkservers();
    let before = servers_read_bytes(&chunkservers);
    let sweep = ["--sweep", "size=1MiB,2MiB"];
    let args: Vec<String> = strings(&["run", "--name", "r7-moosefs", "--dir", "/mnt/moosefs"], &common)
        .into_iter()
        .chain(strings(&sweep, &tail))
        .collect();
    let doc = by_node(1, &args, s.path());
    let served = servers_read_bytes(&chunkservers) - before;
    for (k, p) in doc["points"].as_array().unwrap().iter().enumerate() {
        let placed = &p["phases"][0]["repetitions"][0]["file_layout"]["placement"][0]["pieces"];
        let on: Vec<&str> =
            placed.as_array().unwrap().iter().map(|x| x["servers"][0].as_str().unwrap()).collect();
        assert_eq!(on.len(), 1, "point {k}: one chunk: {placed}");
        assert!(on[0].starts_with("10.213.77."), "point {k}: a chunkserver of the hosts: {placed}");
        let (ph, rep) = (&p["phases"][1], &p["phases"][1]["repetitions"][0]);
        assert_eq!(ph["cache"]["policy"], "cold");
        assert_eq!((rep["status"].as_str(), rep["total_bytes"].as_u64()), (Some("complete"), Some(sizes[k])));
        assert_eq!(rep["resident_fraction"], 0.0);
    }
    // The cold reads came from the chunkservers (writes read nothing there).
    assert!(served >= 3 * MIB, "the chunkservers read {served} bytes for cold reads of 3 MiB");
    let moosefs_id = doc["experiment_id"].as_str().unwrap().to_string();

    // Both designs in one figure, a line each, on the file's size.
    let lines = plot_lines(&db, [&servers_id, &moosefs_id], "size", "read:cold");
    assert_eq!(lines, [("experiment=r7-servers".into(), vec![2]), ("experiment=r7-moosefs".into(), vec![2])]);
}

/// `iolab plot A B --x X --phase P --y median --bars none` (as docs/pfs.md draws these
/// figures): each line's label and its polylines' point counts.
fn plot_lines(db: &str, ids: [&str; 2], x: &str, phase: &str) -> Vec<(String, Vec<usize>)> {
    let out = Command::new(bin())
        .args([
            "plot", ids[0], ids[1], "--x", x, "--phase", phase, "--y", "median", "--bars", "none", "--db", db,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = String::from_utf8(out.stdout).unwrap();
    let gs = crate::plots::groups(&svg);
    crate::plots::of_class(&gs, "series").iter().map(|g| (g.label.clone(), g.polylines())).collect()
}

/// A worker's bytes and host.
type Moved = (u64, String);
/// A server rank's host, bytes read and bytes written.
type Served = (String, u64, u64);

/// Each worker's bytes and host, and each server rank's host, read and written bytes, of a
/// point's phase.
fn who(point: &Value, phase: usize) -> (Vec<Moved>, Vec<Served>) {
    let rep = &point["phases"][phase]["repetitions"][0];
    assert_eq!(rep["status"], "complete", "{rep}");
    let s = |v: &Value| v.as_str().unwrap().to_string();
    let workers =
        rep["workers"].as_array().unwrap().iter().map(|w| (w["bytes"].as_u64().unwrap(), s(&w["host"])));
    let servers = rep["servers"].as_array().map(|v| v.to_vec()).unwrap_or_default();
    let servers = servers
        .iter()
        .map(|x| (s(&x["host"]), x["read_bytes"].as_u64().unwrap(), x["write_bytes"].as_u64().unwrap()));
    (workers.collect(), servers.collect())
}

/// Russell's R10 shape (Fig. 26: C clients, each writing and then reading its own file, two
/// servers) both ways on the same hosts: clients on h1, h2, h3 (C = 1, 2, 3) over two server
/// ranks (on h1 and h2, each file striped over both in 16 KiB units) and on MooseFS, then the
/// write rates of both in one figure against C. Each client moved its own file; each server
/// rank took and served half of every file; MooseFS's chunkservers served the cold reads.
#[test]
fn russell_r10_over_server_ranks_and_on_moosefs_in_one_figure() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["moosefs"]) else { return };
    let db = s.db().to_str().unwrap().to_string();
    let ops = "write:workers={c}:files={c},read:workers={c}:files={c}:cold";
    let common = ["--bs", "64KiB", "--size", "1MiB", "--op", ops, "--sweep", "c=1,2,3", "--reps", "1"];
    let tail = ["--seed", "8", "--json", "--quiet", "--db", &db];
    let hosts = ["h1", "h2", "h3"];

    // Ranks 0-2 the clients (h1, h2, h3), ranks 3 and 4 the servers (h1, h2).
    let servers = strings(
        &["run", "--name", "r10-servers", "--servers", "2", "--clients", "3", "--server-dir", "/mnt/srv"],
        &["--layout", "striped-per-worker", "--stripe-unit", "16KiB", "--fanout", "parallel"],
    );
    let args: Vec<String> = servers.into_iter().chain(strings(&common, &tail)).collect();
    let doc = by_node(5, &args, s.path());
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for (k, p) in points.iter().enumerate() {
        let c = k as u64 + 1;
        let clients: Vec<Moved> = hosts[..k + 1].iter().map(|h| (MIB, h.to_string())).collect();
        let half = c * MIB / 2;
        let (w, sv) = who(p, 0);
        assert_eq!(w, clients, "c = {c}: each client writes its own file");
        assert_eq!(sv, [("h1".to_string(), 0, half), ("h2".to_string(), 0, half)], "c = {c}");
        let (r, sv) = who(p, 1);
        assert_eq!(r, clients, "c = {c}: each client reads its own file");
        assert_eq!(sv, [("h1".to_string(), half, 0), ("h2".to_string(), half, 0)], "c = {c}");
    }
    let servers_id = doc["experiment_id"].as_str().unwrap().to_string();

    // Ranks 0-2 (h1, h2, h3) the clients on MooseFS.
    let chunkservers = chunkservers();
    let before = servers_read_bytes(&chunkservers);
    let args: Vec<String> = strings(&["run", "--name", "r10-moosefs", "--dir", "/mnt/moosefs"], &common)
        .into_iter()
        .chain(strings(&tail, &[]))
        .collect();
    let doc = by_node(3, &args, s.path());
    let served = servers_read_bytes(&chunkservers) - before;
    for (k, p) in doc["points"].as_array().unwrap().iter().enumerate() {
        let clients: Vec<Moved> = hosts[..k + 1].iter().map(|h| (MIB, h.to_string())).collect();
        assert_eq!(who(p, 0).0, clients, "c = {}", k + 1);
        assert_eq!(who(p, 1).0, clients, "c = {}", k + 1);
        assert_eq!(p["phases"][1]["cache"]["policy"], "cold");
        assert_eq!(p["phases"][1]["repetitions"][0]["resident_fraction"], 0.0);
    }
    assert!(served >= 6 * MIB, "the chunkservers read {served} bytes for cold reads of 6 MiB");
    let moosefs_id = doc["experiment_id"].as_str().unwrap().to_string();

    let lines = plot_lines(&db, [&servers_id, &moosefs_id], "c", "write");
    assert_eq!(
        lines,
        [("experiment=r10-servers".into(), vec![3]), ("experiment=r10-moosefs".into(), vec![3])]
    );
}
