//! Time-bounded phases on MPI ranks (build with `--features mpi`): `--runtime` and
//! `--stonewall` with `--wear-out` under Open MPI's `mpirun`, one worker per rank and two
//! threads per rank, and with MPI-IO on the ranks' main threads: every worker's count, and the
//! wear-out meeting across ranks, also of a stonewalled create of metadata items.

use crate::bounds::workers;
use crate::mpi::{mpirun, ok_json};
use crate::util::*;

/// Three ranks, each worker of each rank: a runtime wraps round its blocks for the time; a
/// stonewall with wear-out takes every worker on every rank to the most ops any had done, and
/// the cold read reads exactly those ops per worker.
#[test]
fn ranks_run_for_the_time_and_wear_out_to_the_most_ops() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let base = ["run", "--json", "--quiet", "--dir", dir, "--bs", "4KiB", "--reps", "2"];
    let mut runtime = base.to_vec();
    runtime.extend(["--runtime", "200ms", "--size", "64KiB", "--op", "write,read:cold"]);
    let doc = ok_json(&mpirun(&s, 3, &runtime));
    for ph in phases(&doc) {
        for rep in workers(ph) {
            assert_eq!(rep.len(), 3);
            for (w, _, ops, t, _) in rep {
                assert!(ops > 16 && t >= 200_000_000, "{}: worker {w}: {ops} ops in {t} ns", ph["name"]);
            }
        }
    }
    // 512 MiB per worker in 4 KiB ops: more than any machine does in 50 ms.
    for (workers_n, engine) in [("3", "psync"), ("6", "psync"), ("3", "mpiio")] {
        let mut wall = base.to_vec();
        wall.extend([
            "--workers",
            workers_n,
            "--engine",
            engine,
            "--size",
            "512MiB",
            "--op",
            "write:stonewall=50ms,read:cold",
            "--wear-out",
        ]);
        let doc = ok_json(&mpirun(&s, 3, &wall));
        let case = format!("{workers_n} workers, {engine}");
        let (w, r) = (&phases(&doc)[0], &phases(&doc)[1]);
        for (wrote, read) in workers(w).into_iter().zip(workers(r)) {
            assert_eq!(wrote.len(), workers_n.parse::<usize>().unwrap(), "{case}");
            let most = wrote.iter().map(|x| x.4.expect("every worker met the stonewall")).max().unwrap();
            for (&(worker, _, ops, t, wall), &(_, _, rops, _, _)) in wrote.iter().zip(&read) {
                assert!(ops < 131_072 && t >= 50_000_000, "{case}: worker {worker}: {ops} ops in {t} ns");
                assert_eq!(ops, most, "{case}: worker {worker} went on to {ops}, not {most}");
                assert!(wall.unwrap() <= ops, "{case}");
                assert_eq!(rops, ops, "{case}: the read of worker {worker}");
            }
        }
    }
}

/// Two ranks, a create stonewalled at 150 ms with wear-out: the ranks' workers meet across
/// ranks, so both made the same count, more than none and fewer than planned; the stat of the
/// other rank's items and the unlink visit exactly that count; nothing is left.
#[test]
fn a_worn_out_create_makes_equal_counts_across_ranks() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let args = [
        "run",
        "--json",
        "--quiet",
        "--dir",
        dir,
        "--op",
        "create:stonewall=150ms,stat,unlink",
        "--workers",
        "2",
        "--md-files",
        "300000",
        "--md-shift",
        "1",
        "--wear-out",
        "--reps",
        "1",
    ];
    let doc = ok_json(&mpirun(&s, 2, &args));
    let counts = |name: &str| -> Vec<(u64, u64)> {
        let ph = phases(&doc).iter().find(|p| p["name"] == name).unwrap();
        let r = &ph["repetitions"][0];
        assert_eq!(r["status"], "complete", "{name}: {r}");
        let ws = r["workers"].as_array().unwrap();
        ws.iter().map(|w| (w["rank"].as_u64().unwrap(), w["ops"].as_u64().unwrap())).collect()
    };
    let made = counts("create:stonewall=150ms");
    let n = made[0].1;
    assert!(n > 0 && n < 300_000, "{made:?}");
    assert_eq!(made, [(0, n), (1, n)], "wear-out across ranks");
    for name in ["stat", "unlink"] {
        assert_eq!(counts(name), [(0, n), (1, n)], "{name}");
    }
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}
