//! Tests of the result structures: flags of the cache and phase states, and the bytes a repetition holds per worker.

use super::*;

#[test]
fn cache_flags() {
    assert!(CacheCheck::judge(CachePolicy::Cold, 0.01, true).flags.is_empty());
    assert_eq!(CacheCheck::judge(CachePolicy::Cold, 0.2, true).flags, ["not cold: 20.0% resident"]);
    assert_eq!(CacheCheck::judge(CachePolicy::Warm, 0.5, true).flags, ["not warm: 50.0% resident"]);
    assert!(CacheCheck::judge(CachePolicy::Warm, 1.0, true).flags.is_empty());
    assert_eq!(CacheCheck::judge(CachePolicy::Asis, 0.5, true).flags, ["cache not controlled"]);
}

#[test]
fn phase_flags_count_the_runs_that_had_them() {
    let check = |flags: &[&str]| CacheCheck {
        resident_fraction: 0.0,
        flags: flags.iter().map(|s| s.to_string()).collect(),
    };
    let mut ph = PhaseResult::new("read", crate::spec::OpKind::Read, CachePolicy::Cold, String::new());
    for (i, f) in
        [&["noisy: a"][..], &[], &["noisy: b", "not cold: 9.0% resident"], &["cache not controlled"]]
            .iter()
            .enumerate()
    {
        ph.repetitions.push(Repetition::failed(i as u32, "r", Status::Complete, String::new(), &check(f)));
    }
    ph.refresh();
    assert_eq!(
        ph.flags,
        [
            "noisy: a (2 of 4 runs)",
            "not cold: 9.0% resident (1 of 4 runs)",
            "cache not controlled (1 of 4 runs)"
        ]
    );
    // Warm-ups never count.
    ph.warmups.push(Repetition::failed(9, "w", Status::Complete, String::new(), &check(&["noisy: w"])));
    ph.refresh();
    assert_eq!(ph.flags.len(), 3);
}

/// Worker `w` of an MPI phase as rank 0 gathers it: its histogram merged into the phase's as
/// it arrived, its host one of `hosts`, four kinds of call, a rate series of three intervals.
fn mpi_sample(w: u32, hosts: &[Arc<str>]) -> WorkerSample {
    use crate::engine::{Call, CallCounts};
    use crate::latency::SampleHist;
    use crate::latency::series::{BASE_NS, RateSeries};
    use crate::worker::Placement;
    let mut calls = CallCounts::default();
    for (c, n) in [(Call::Openat, 1), (Call::Pwrite, 16), (Call::Fsync, 1), (Call::Close, 1)] {
        calls.add_n(c, n);
    }
    WorkerSample {
        bytes: 1 << 20,
        ops: 16,
        calls: calls.to_map(),
        hist: SampleHist::Merged { figures: LatencyNs { p50: 9000, ..Default::default() }, buckets: None },
        place: Some(Placement { rank: w, host: hosts[w as usize % hosts.len()].clone(), resident: None }),
        series: Some(Box::new(RateSeries::of_bytes(BASE_NS, 3 * BASE_NS, vec![1 << 18, 1 << 19, 1 << 18]))),
        ..WorkerSample::with_series(w, 1000 + u64::from(w), vec![1 << 20])
    }
}

/// What a run's results hold per worker of a repetition of an MPI phase (workers as
/// [`mpi_sample`], each with call counts of its own): a fixed number of bytes, the same at 2
/// and 16 workers.
#[test]
fn a_repetition_holds_a_fixed_small_number_of_bytes_per_worker() {
    let hosts = crate::launch::shared_host_names((0..16).map(|w| format!("node{:04}", w / 4)));
    let sample = |w: u32| mpi_sample(w, &hosts);
    let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
    // What the workers' results hold, counted by the allocator: the samples made and taken,
    // the rest of the repetition let go.
    let held = |n: u32| {
        let (workers, held) = crate::test_alloc::held_by(|| {
            let samples: Vec<WorkerSample> = (0..n).map(sample).collect();
            // Moved into the result, not copied: the very series the sample held.
            let series = samples[1].series.as_ref().map(|r| r.bytes.as_ptr());
            let r = Repetition::from_samples(0, "r", samples, None, &check);
            assert_eq!(
                r.workers.load()[1].series.as_ref().map(|r| r.bytes.as_ptr()),
                series,
                "a series copied"
            );
            r.workers
        });
        assert_eq!(workers.load()[1].calls.get("pwrite"), Some(16));
        held as usize
    };
    let (h2, h16) = (held(2), held(16));
    assert_eq!(h16 % 16, 0);
    let per_worker = h16 / 16;
    assert_eq!(h2, 2 * per_worker, "nothing but the workers grows");
    eprintln!("a repetition holds {per_worker} bytes per worker");
    assert!(per_worker <= RESULT_BYTES_PER_WORKER, "{per_worker} bytes per worker");
}

/// The most bytes a repetition's results hold per worker of an MPI phase (docs/mpi.md,
/// "Rank 0's memory").
const RESULT_BYTES_PER_WORKER: usize = 480;

/// Rank 0 never holds a phase's samples and their results at once: each worker's result is
/// made in its sample's place (a result is no larger than a sample), and making the
/// repetition keeps nothing per worker beside them (span, rates, rate over time and per-host
/// shares worked out as the workers come) but each host's list of its ranks.
#[test]
fn a_repetition_is_made_in_its_samples_place() {
    let hosts = crate::launch::shared_host_names((0..8).map(|h| format!("node{h:04}")));
    let check = CacheCheck { resident_fraction: 0.0, flags: vec![] };
    let above_samples = |n: u32| {
        let samples: Vec<WorkerSample> = (0..n).map(|w| mpi_sample(w, &hosts)).collect();
        let at = samples.as_ptr() as usize;
        let (r, peak) =
            crate::test_alloc::peak_by(|| Repetition::from_samples(0, "r", samples, None, &check));
        assert_eq!(
            r.workers.kept_ptr().map(|p| p as usize),
            Some(at),
            "the results were made apart from their samples"
        );
        peak as usize
    };
    let (p16, p64) = (above_samples(16), above_samples(64));
    let per_worker = (p64 - p16) / 48;
    eprintln!("making a repetition needs {per_worker} bytes per worker beyond its samples");
    assert!(per_worker <= SCRATCH_BYTES_PER_WORKER, "{per_worker} bytes per worker");
}

/// The most bytes per worker making a repetition needs beyond its workers' samples: 0 measured
/// here, 19 at 100,000 workers on 2,500 hosts (`bench/rows.sh`); a result in a place of its
/// own would take 312 and more.
const SCRATCH_BYTES_PER_WORKER: usize = 24;
