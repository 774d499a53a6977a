//! The front ends under `mpirun` (build with `--features mpi`): an IOR command line on four
//! ranks of this host writes IOR's pattern (each rank's transfers where IOR puts its task's,
//! from the per-op trace, and the kept file's bytes), mdtest's on two ranks runs its phases;
//! on the three simulated hosts IOR's `-C` makes each rank read what the rank one host further
//! wrote, as IOR's rule says (two ranks per host in blocks: a shift of 2).

use crate::hosts::Hosts;
use crate::mpi::{mpirun, ok_json, on_hosts};
use crate::util::*;

#[test]
fn an_ior_command_line_on_four_ranks_writes_iors_pattern() {
    let s = Scratch::new();
    let file = s.path().join("testFile");
    let f = file.to_str().unwrap();
    let args = [
        "ior",
        "-a",
        "POSIX",
        "-w",
        "-r",
        "-b",
        "64k",
        "-t",
        "16k",
        "-s",
        "3",
        "-e",
        "-k",
        "-o",
        f,
        "--set",
        "latency=trace",
        "--json",
        "--quiet",
    ];
    let doc = ok_json(&mpirun(&s, 4, &args));
    assert_eq!(doc["spec"]["launcher"], "mpi");
    assert_eq!(doc["spec"]["segments"], 3);
    let w = &phases(&doc)[0]["repetitions"][0];
    let ranks: Vec<(u64, u64)> = w["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["worker"].as_u64().unwrap(), x["rank"].as_u64().unwrap()))
        .collect();
    assert_eq!(ranks, [(0, 0), (1, 1), (2, 2), (3, 3)]);
    // Transfer k of segment s of rank r at s N b + r b + k t, in that order.
    let o = s.iolab(&["results", "trace", "last", "--phase", "write"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut rows: Vec<(u64, u64, u64)> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[4].parse().unwrap(), c[5].parse().unwrap(), c[7].parse().unwrap())
        })
        .collect();
    rows.sort();
    let mut want = vec![];
    for r in 0..4u64 {
        let mut op = 0;
        for seg in 0..3u64 {
            for k in 0..4u64 {
                want.push((r, op, seg * 4 * 65536 + r * 65536 + k * 16384));
                op += 1;
            }
        }
    }
    assert_eq!(rows, want);
    let run_id = w["run_id"].as_str().unwrap();
    let bytes = std::fs::read(work_dir(s.path(), run_id).join("shared.dat")).unwrap();
    assert_eq!(bytes, expected_file(1, 0, 4 * 3 * 65536, 16384));
}

#[test]
fn an_mdtest_command_line_on_two_ranks_runs_its_phases() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let args = [
        "mdtest", "-n", "50", "-u", "-F", "-w", "100", "-e", "100", "-N", "1", "-Y", "-d", dir, "--json",
        "--quiet",
    ];
    let doc = ok_json(&mpirun(&s, 2, &args));
    let names: Vec<&str> = phases(&doc).iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["create", "stat", "read-files", "unlink"]);
    for ph in phases(&doc) {
        let r = &ph["repetitions"][0];
        assert_eq!(
            (r["status"].as_str(), r["ops"].as_u64()),
            (Some("complete"), Some(100)),
            "{}",
            ph["name"]
        );
        let ranks: Vec<u64> =
            r["workers"].as_array().unwrap().iter().map(|w| w["rank"].as_u64().unwrap()).collect();
        assert_eq!(ranks, [0, 1]);
    }
}

#[test]
fn iors_task_reordering_reads_one_host_further_on_the_simulated_hosts() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &[]) else { return };
    let dir = s.path().to_str().unwrap().to_string();
    let db = s.db().to_str().unwrap().to_string();
    let bin = bin().to_str().unwrap().to_string();
    let file = format!("{dir}/testFile");
    let args = [
        "ior", "-w", "-r", "-b", "64k", "-t", "16k", "-s", "2", "-C", "-e", "-o", &file, "--db", &db,
        "--json", "--quiet",
    ];
    let doc = ok_json(&on_hosts("mpirun", &bin, &args, s.path()));
    assert_eq!(doc["spec"]["reorder_reads"], serde_json::json!({"shift": 2}), "{}", doc["spec"]);
    let placed = |p: usize| -> Vec<(u64, u64, String)> {
        phases(&doc)[p]["repetitions"][0]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                (
                    w["worker"].as_u64().unwrap(),
                    w["rank"].as_u64().unwrap(),
                    w["host"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // Writing, task w on rank w (two per host); reading, rank r reads task r + 2's data.
    let hosts = ["h1", "h1", "h2", "h2", "h3", "h3"];
    let write: Vec<(u64, u64, String)> = (0..6).map(|w| (w, w, hosts[w as usize].to_string())).collect();
    assert_eq!(placed(0), write);
    let mut read = placed(1);
    read.sort();
    let want: Vec<(u64, u64, String)> =
        (0..6u64).map(|w| (w, (w + 4) % 6, hosts[((w + 4) % 6) as usize].to_string())).collect();
    assert_eq!(read, want);
    for (w, _, h) in &read {
        assert_ne!(hosts[*w as usize], h, "task {w}'s data read on the host that wrote it");
    }
}
