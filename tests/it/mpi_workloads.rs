//! The fio workloads on MPI ranks: a mixed, block-size-mixed, rate-limited phase on two ranks
//! does the very ops two threads do (the same seed gives the same plan), and rank 0 merges the
//! ranks' ops apart (directions, sizes, response times) as their replies arrive.

use crate::mpi::{mpirun, ok_json};
use crate::util::*;
use crate::workloads::trace;

/// Two ranks and two threads of `rw:rwmixread=70` over `uniform` blocks with a bssplit at
/// 2000 IOPS per worker: the same ops (offsets, sizes, directions) per worker; the repetition's
/// counts apart agree, its histograms hold every op, its response times are kept.
#[test]
fn ranks_do_the_ops_threads_do_and_rank_0_merges_them_apart() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let phase = "rw:rwmixread=70:rate_iops=2000";
    let args = [
        "--op",
        phase,
        "--order",
        "uniform",
        "--bssplit",
        "4KiB/70:16KiB/30",
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--trace",
        "--json",
        "--quiet",
        "--dir",
        &dir,
    ];
    let mut mpi_args = vec!["run", "--launcher", "mpi"];
    mpi_args.extend_from_slice(&args);
    let doc = ok_json(&mpirun(&s, 2, &mpi_args));
    let ranks = trace(&s, phase);
    let mut thread_args = vec!["run", "--workers", "2"];
    thread_args.extend_from_slice(&args);
    let o = s.iolab(&thread_args);
    assert!(o.status.success(), "{}", stderr(&o));
    let threads = trace(&s, phase);
    let key = |t: &crate::workloads::Traced| (t.worker, t.file, t.offset, t.len, t.write);
    let mut a: Vec<_> = ranks.iter().map(key).collect();
    let mut b: Vec<_> = threads.iter().map(key).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "ranks and threads do the same ops");
    let r = &phases(&doc)[0]["repetitions"][0];
    let m = &r["mix"];
    let writes = ranks.iter().filter(|t| t.write).count() as u64;
    assert_eq!(m["write"]["ops"].as_u64(), Some(writes));
    assert_eq!(m["read"]["ops"].as_u64(), Some(ranks.len() as u64 - writes));
    for d in ["read", "write"] {
        let n: u64 =
            m[d]["latency_histogram_ns"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
        assert_eq!(n, m[d]["ops"].as_u64().unwrap(), "rank 0 merged every rank's {d}s");
        assert!(m[d]["response_latency_ns"]["max"].as_u64().unwrap() > 0, "{d}");
    }
    let sizes = m["block_sizes"].as_array().unwrap();
    let small = ranks.iter().filter(|t| t.len == 4096).count() as u64;
    assert_eq!(sizes[0]["figures"]["ops"].as_u64(), Some(small));
    let hist: u64 =
        m["response_histogram_ns"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
    assert_eq!(hist, ranks.len() as u64);
    assert!(
        r["workers"].as_array().unwrap().iter().all(|w| w["rank"].is_u64() && w["mix"]["read_ops"].is_u64())
    );
}
