//! Tests of a repetition's workers' results kept and spooled: read back as they were, what a
//! spooled repetition holds, where a spool may be made and which repetitions go to it.

use super::*;
use crate::engine::{Call, CallCounts};
use crate::worker::{Placement, WorkerSample};

/// `n` workers as a run measures them: a histogram each, call counts, a host of two, one
/// with a role, a result with a period, one that took no time (its rate NaN). Their latencies
/// fall in a few buckets, as a phase's do, however many they are.
fn workers(n: u32) -> Vec<WorkerResult> {
    let hosts = crate::launch::shared_host_names(["node0", "node1"].map(String::from));
    let mut calls = CallCounts::default();
    calls.add_n(Call::Pwrite, 4);
    calls.add_n(Call::Fsync, 1);
    (0..n)
        .map(|w| {
            let mut s = WorkerSample::with_series(w, 100 * u64::from(w), vec![4096, 8192, 4096]);
            s.calls = calls.to_map();
            s.place =
                Some(Placement { rank: w / 2, host: hosts[(w / 4) as usize % 2].clone(), resident: None });
            let mut h = crate::latency::new_hist();
            crate::latency::record_n(&mut h, 1000 + 100 * u64::from(w % 4), 1);
            crate::latency::record_n(&mut h, 50_000, 1);
            s.hist = crate::latency::SampleHist::Full(Box::new(h));
            let mut r = WorkerResult::from_sample(s);
            if w == 1 {
                r.role = Some(crate::spec::strategy::Role::Write);
                r.periods = Some(Box::new(vec![]));
            }
            if w == 2 {
                (r.time_ns, r.bytes_per_s) = (0, f64::NAN);
            }
            r
        })
        .collect()
}

#[test]
fn spooled_workers_read_back_as_they_were() {
    let kept = workers(9);
    let mut w = Workers::from(kept.clone());
    let json_kept = crate::json::to_string(&w).unwrap();
    w.spool();
    assert!(w.is_spooled() && w.kept_ptr().is_none());
    assert_eq!(w.len(), 9);
    // The same JSON, written one result at a time from the spool.
    assert_eq!(crate::json::to_string(&w).unwrap(), json_kept);
    let back = w.load();
    assert_eq!(back.len(), 9);
    for (a, b) in back.iter().zip(&kept) {
        assert_eq!(a.bytes_per_s.to_bits(), b.bytes_per_s.to_bits(), "worker {}", a.worker);
        if !a.bytes_per_s.is_nan() {
            assert_eq!(a, b);
        }
    }
    assert!(back[2].bytes_per_s.is_nan());
    assert_eq!(back[1].role, Some(crate::spec::strategy::Role::Write));
    // Hosts and call counts held once, as when measured.
    assert!(Arc::ptr_eq(back[0].host.as_ref().unwrap(), back[3].host.as_ref().unwrap()));
    assert!(!Arc::ptr_eq(back[3].host.as_ref().unwrap(), back[4].host.as_ref().unwrap()));
    assert!(back[8].calls.is_shared_with(&back[0].calls));
    // What a phase needs of them without reading them back.
    assert!(w.any_role());
    let mut merged: Vec<(u64, u64)> = w.latency_buckets().collect();
    let mut each: Vec<(u64, u64)> = Workers::from(kept).latency_buckets().collect();
    let total = |b: &[(u64, u64)]| b.iter().map(|x| x.1).sum::<u64>();
    assert_eq!((total(&merged), total(&each)), (18, 18));
    let as_hist = |b: &mut Vec<(u64, u64)>| {
        let mut h = crate::latency::new_hist();
        b.iter().for_each(|&(v, c)| crate::latency::record_n(&mut h, v, c));
        crate::latency::LatencyNs::from_hist(&h)
    };
    assert_eq!(as_hist(&mut merged), as_hist(&mut each));
    // Made to change, they come back into memory.
    w.make_mut()[0].bytes = 7;
    assert!(!w.is_spooled());
    assert_eq!(w.iter().next().unwrap().bytes, 7);
}

/// Spooled, a repetition's workers hold the same few bytes however many they are.
#[test]
fn spooled_workers_hold_nothing_per_worker() {
    let held = |n: u32| {
        let (w, held) = crate::test_alloc::held_by(|| {
            let mut w = Workers::from(workers(n));
            w.spool();
            w
        });
        assert!(w.is_spooled());
        assert_eq!(w.iter().map(|x| x.worker).collect::<Vec<_>>(), (0..n).collect::<Vec<_>>());
        held
    };
    // (The first frees no spool of before: the spool a dead one leaves is freed with the
    // next.)
    held(8);
    let (h8, h800) = (held(8), held(800));
    assert_eq!(h8, h800, "spooled workers hold nothing per worker");
    assert!(h800 < 4096, "{h800} bytes");
}

/// The spool goes where any directory iolab writes to may go, and leaves no name there.
#[test]
fn a_spool_is_made_only_where_iolab_may_write() {
    for refused in ["/dev/shm", "/proc", "/sys"] {
        let e = SpoolFile::open_in(std::path::Path::new(refused)).err().expect(refused);
        assert!(e.to_string().contains("TMPDIR"), "{refused}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let spool = SpoolFile::open_in(dir.path()).unwrap();
    spool.file.write_all_at(b"results", 0).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a name left in the directory");
}

/// Many workers are spooled, a few kept, unless the experiment keeps many already.
#[test]
fn only_many_workers_are_spooled() {
    assert!(!many(255, 0, 256), "255 workers spooled");
    assert!(many(256, 0, 256), "256 workers kept");
    assert!(!many(255, KEEP_AT_MOST - 255, 256), "spooled at the most kept");
    assert!(many(255, KEEP_AT_MOST - 254, 256), "kept past the most kept");
    assert!(many(1, KEEP_AT_MOST, 256));
    // As the rule says, whatever the count tests set (the default, or 1).
    let at = SPOOL_AT.load(Relaxed);
    let mut w = Workers::from(workers(2));
    w.spool_if_many(0);
    assert_eq!(w.is_spooled(), at <= 2);
    w.spool_if_many(KEEP_AT_MOST);
    assert!(w.is_spooled(), "kept past the most kept");
}

/// A worker holding a per-op trace stays in memory until the store has the trace.
#[test]
fn workers_with_a_trace_are_not_spooled() {
    let spill = crate::latency::trace::TraceSpill::new().unwrap();
    let mut v = workers(2);
    v[1].trace = Some(super::super::SpillRef(Arc::new(spill)));
    let mut w = Workers::from(v);
    w.spool();
    assert!(!w.is_spooled());
    w.make_mut()[1].trace = None;
    w.spool();
    assert!(w.is_spooled());
}
