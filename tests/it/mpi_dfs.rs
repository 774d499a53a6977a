//! Six MPI ranks on three simulated hosts over a real distributed file system (MooseFS:
//! `tests/hosts.sh up --fs moosefs`, a chunkserver on every host, an `mfsmount` per host with
//! its own page cache). A shared file written by all and read back with `--reorder-reads node`
//! comes from the chunkservers, every byte (counted in their /proc/PID/io), though every host
//! had read the whole file through its own mount just before: the cold read evicted it on each
//! host, and each host's view was 0% resident. A node-local and a shared target in one run are
//! told apart. SLAC's per-host table across the three hosts names the file system.

use std::path::Path;

use crate::hosts::{Hosts, on, on_bytes, servers_read_bytes};
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
