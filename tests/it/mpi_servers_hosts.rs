//! I/O-server ranks across three simulated hosts (`tests/hosts.sh`: network namespaces with
//! their own host names and node-local disks at /mnt/node): clients on h1, servers on h2 and
//! h3. Each server's disk holds exactly its stripe components; a cold read after eviction on
//! the servers verifies every block; the memory store moves no disk byte there; a blast over
//! TCP and over MPI moves exactly N bytes between hosts; a full disk on h2 and a server rank
//! killed on h3 end the run within seconds, keeping what was stored.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::hosts::{Hosts, hosts_command, hosts_sh};
use crate::mpi::ok_json;
use crate::mpi_servers::{servers, unstripe};
use crate::util::*;

/// `mpirun -np NP` of the test binary across the hosts (2 slots each: ranks 0-1 on h1, 2-3 on
/// h2, 4-5 on h3), started with `env` in its environment, not waited for.
fn spawn_on_hosts(np: usize, args: &[&str], env: &[(&str, &Path)], cwd: &Path) -> Child {
    let mut c = hosts_command();
    c.args(["mpirun", "-np", &np.to_string()]).arg(bin()).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.current_dir(cwd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn on_hosts(np: usize, args: &[&str], cwd: &Path) -> Output {
    spawn_on_hosts(np, args, &[], cwd).wait_with_output().unwrap()
}

/// What `cmd` prints on `host`.
fn on(host: &str, cmd: &str, cwd: &Path) -> Vec<u8> {
    let o = hosts_sh(&["run", host, cmd], cwd).unwrap();
    assert!(o.status.success(), "{host}: {cmd}: {}", stderr(&o));
    o.stdout
}

fn node_is_empty(host: &str, cwd: &Path) -> bool {
    String::from_utf8_lossy(&on(host, "ls -A /mnt/node", cwd)).trim() == "lost+found"
}

#[test]
fn server_ranks_across_three_simulated_hosts() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &[]) else { return };
    let (dir, db) = (s.path().to_str().unwrap().to_string(), s.db().to_str().unwrap().to_string());
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "--server-dir", "/mnt/node", "--dir", &dir, "--db", &db, "--quiet"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    let run = |np: usize, extra: &[&str]| {
        let args = base(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        on_hosts(np, &args, s.path())
    };

    // Four servers (ranks 2-5 on h2 and h3), two clients (ranks 0-1 on h1): each server's disk
    // holds its components, exact; the clients' host holds nothing.
    let striped = ["--servers", "4", "--workers", "2", "--layout", "striped", "--stripe-unit", "16KiB"];
    let mut args = striped.to_vec();
    args.extend(["--bs", "64KiB", "--size", "1MiB", "--fanout", "parallel", "--op", "write,read:cold"]);
    args.extend(["--reps", "1", "--seed", "11", "--keep", "--json"]);
    let doc = ok_json(&run(6, &args));
    let placed: Vec<(u64, String)> = servers(&doc, 0)
        .iter()
        .map(|x| (x["rank"].as_u64().unwrap(), x["host"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(u64, String)> =
        [(2, "h2"), (3, "h2"), (4, "h3"), (5, "h3")].map(|(r, h)| (r, h.to_string())).to_vec();
    assert_eq!(placed, want);
    let workers: Vec<(u64, String)> = phases(&doc)[1]["repetitions"][0]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["rank"].as_u64().unwrap(), w["host"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(workers, [(0, "h1".to_string()), (1, "h1".to_string())]);
    for x in servers(&doc, 1) {
        assert!(x["resident_fraction"].as_f64().unwrap() <= 0.05, "not evicted on its host: {x}");
        assert_eq!(x["read_bytes"], 512 << 10, "{x}");
    }
    let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let comps: Vec<Vec<u8>> = (0..4)
        .map(|t| {
            let host = if t < 2 { "h2" } else { "h3" };
            let ls = on(host, &format!("ls /mnt/node/.iolab-{run_id}"), s.path());
            let mine: Vec<String> =
                String::from_utf8_lossy(&ls).split_whitespace().map(String::from).collect();
            let both = if t < 2 {
                ["striped.s00.dat", "striped.s01.dat"]
            } else {
                ["striped.s02.dat", "striped.s03.dat"]
            };
            assert_eq!(mine, both, "{host}");
            on(host, &format!("cat /mnt/node/.iolab-{run_id}/striped.s{t:02}.dat"), s.path())
        })
        .collect();
    assert!(
        unstripe(&comps, 16384) == expected_file(11, 0, 2 << 20, 16384),
        "the components are not the file"
    );
    assert!(node_is_empty("h1", s.path()), "the clients' host holds files");
    for h in ["h2", "h3"] {
        on(h, &format!("rm -rf /mnt/node/.iolab-{run_id}"), s.path());
    }

    // A cold read after eviction on the servers, every block verified; nothing left behind.
    let mut args = striped.to_vec();
    args.extend([
        "--bs",
        "16KiB",
        "--size",
        "2MiB",
        "--verify",
        "--op",
        "write,read:cold",
        "--reps",
        "2",
        "--json",
    ]);
    let doc = ok_json(&run(6, &args));
    for r in phases(&doc)[1]["repetitions"].as_array().unwrap() {
        assert_eq!(r["status"], "complete", "{r}");
        assert_eq!(r["total_bytes"], 4 << 20);
        // No cache or noise flag; whether the two clients overlapped depends on the machine's
        // load (under load they ran together for 43% of the phase once), not on the servers.
        let flags: Vec<&str> = r["flags"].as_array().unwrap().iter().filter_map(|f| f.as_str()).collect();
        assert!(flags.iter().all(|f| f.starts_with("workers did not overlap")), "{r}");
    }
    for h in ["h1", "h2", "h3"] {
        assert!(node_is_empty(h, s.path()), "{h} kept files");
    }

    // The memory store (R9): no disk byte moves on the servers' node disks, and no file is made.
    // (What the runs before left for the journal to commit is written back first.)
    for h in ["h2", "h3"] {
        on(h, "sync -f /mnt/node", s.path());
    }
    let mut args = striped.to_vec();
    args.extend(["--server-store", "memory", "--bs", "16KiB", "--size", "4MiB", "--op", "write,read:cold"]);
    args.extend(["--reps", "2", "--json"]);
    let doc = ok_json(&run(6, &args));
    for p in 0..2 {
        for r in phases(&doc)[p]["repetitions"].as_array().unwrap() {
            assert_eq!(r["status"], "complete");
            for x in r["servers"].as_array().unwrap() {
                assert_eq!(
                    (x["device_read_bytes"].as_u64(), x["device_write_bytes"].as_u64()),
                    (Some(0), Some(0)),
                    "{x}"
                );
                assert_eq!(x["files"], 0);
            }
        }
    }
    for h in ["h1", "h2", "h3"] {
        assert!(node_is_empty(h, s.path()), "{h}: the memory store made files");
    }

    // The blast from h1 to h2, over TCP and over MPI: exactly N bytes at each server.
    for transport in ["tcp", "mpi"] {
        let args = ["--servers", "4", "--workers", "2", "--op", "blast", "--blast-transport", transport];
        let mut args = args.to_vec();
        args.extend(["--size", "8MiB", "--bs", "64KiB", "--reps", "2", "--json"]);
        let doc = ok_json(&run(6, &args));
        for r in phases(&doc)[0]["repetitions"].as_array().unwrap() {
            assert_eq!(r["status"], "complete", "{transport}: {r}");
            let got: Vec<(String, u64)> = r["servers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| (x["host"].as_str().unwrap().to_string(), x["write_bytes"].as_u64().unwrap()))
                .collect();
            let want =
                [("h2", 8 << 20), ("h2", 8 << 20), ("h3", 0), ("h3", 0)].map(|(h, n)| (h.to_string(), n));
            assert_eq!(got, want, "{transport}");
        }
    }

    // A full node-local disk on h2: the first phase writes one file, the last two; between
    // them h2's disk is filled. The run ends with exit 1 naming the server on h2 and its file;
    // the phases before are stored.
    let go = s.path().join("go");
    let mut args =
        base(&["--servers", "4", "--workers", "1", "--layout", "striped-per-worker", "--files", "2"]);
    let more =
        ["--stripe-unit", "16KiB", "--bs", "64KiB", "--size", "8MiB", "--reps", "1", "--name", "enospc"];
    args.extend(more.iter().map(|a| a.to_string()));
    args.extend(["--op", "write:files=1,read:files=1:cold,write"].iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn_on_hosts(6, &args, &[("IOLAB_TEST_PAUSE_BETWEEN_PHASES", &go)], s.path());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ls =
            hosts_sh(&["run", "h2", "ls /mnt/node/.iolab-*/w0000.s00.dat 2>/dev/null | head -1"], s.path())
                .unwrap();
        let f = String::from_utf8_lossy(&ls.stdout).trim().to_string();
        let size = if f.is_empty() {
            0
        } else {
            String::from_utf8_lossy(&on("h2", &format!("stat -c %s {f}"), s.path()))
                .trim()
                .parse::<u64>()
                .unwrap()
        };
        if size == 2 << 20 {
            break;
        }
        assert!(Instant::now() < deadline, "the first phase did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // Everything free, reserved blocks too (the servers run as root), less what fallocate's
    // own metadata takes.
    on(
        "h2",
        "n=$(( $(stat -f -c '%f * %S' /mnt/node) )); while ! fallocate -l $n /mnt/node/filler 2>/dev/null; do n=$((n - 262144)); done",
        s.path(),
    );
    std::fs::write(&go, b"").unwrap();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    on("h2", "rm -f /mnt/node/filler", s.path());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("write_request on /mnt/node/.iolab-"), "{err}");
    assert!(
        err.contains("w0001.s00.dat at offset 0: server 0 (rank 2 on h2): pwrite: No space left on device")
            || err.contains(
                "w0001.s01.dat at offset 0: server 1 (rank 3 on h2): pwrite: No space left on device"
            ),
        "{err}"
    );
    let list = s.iolab(&["results", "show", "last", "--json", "--db", &db]);
    let doc: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(doc["spec"]["name"], "enospc");
    let statuses: Vec<&str> =
        phases(&doc).iter().map(|p| p["repetitions"][0]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["complete", "complete", "failed"]);
    for h in ["h1", "h2", "h3"] {
        assert!(node_is_empty(h, s.path()), "{h} kept files after the failure");
    }

    // A server rank on h3 killed with -9: every rank ends within seconds; what was stored stays.
    let mut args = base(&striped);
    let more = [
        "--bs",
        "64KiB",
        "--size",
        "4MiB",
        "--op",
        "write,read:cold",
        "--reps",
        "1000",
        "--name",
        "killed-server",
    ];
    args.extend(more.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn_on_hosts(6, &args, &[], s.path());
    let ranks = crate::mpi::ranks_of("killed-server", 6);
    let deadline = Instant::now() + Duration::from_secs(120);
    let stored = || {
        let o = s.iolab(&["results", "list", "--db", &db]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.contains("killed-server"))
            .map_or(0, |l| l.split_whitespace().rev().nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0))
    };
    while stored() == 0 {
        assert!(Instant::now() < deadline, "no repetition stored");
        std::thread::sleep(Duration::from_millis(200));
    }
    let t = Instant::now();
    assert!(Command::new("kill").args(["-9", &ranks[5].to_string()]).status().unwrap().success());
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(15), "the run took {:?} to end after the kill", t.elapsed());
    assert_eq!(o.status.code(), Some(137), "mpirun's status for a rank killed by signal 9: {}", stderr(&o));
    assert!(stderr(&o).contains("rank 5") && stderr(&o).contains("h3"), "{}", stderr(&o));
    assert!(stored() >= 1);
}
