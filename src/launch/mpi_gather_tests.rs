//! The replies' encoding and what rank 0 keeps of them, fed replies as MPI would bring them.

use super::*;
use crate::engine::Call;
use crate::latency::series::RateSeries;
use crate::latency::{Buckets, LatencyNs, new_hist};
use crate::launch::child::SampleWire;
use crate::worker::Placement;

/// The most bytes one worker's sample takes in a reply, besides 2 to 10 bytes per bucket of
/// its latency histogram (value and count as varints).
const REPLY_BYTES_PER_WORKER: usize = 160;
/// The most bytes rank 0 keeps per worker of a phase (its sample: figures, bytes, times,
/// rank, host name, a short rate series; call counts the same as the other workers', so held
/// once for all), whatever its histogram held.
const KEPT_BYTES_PER_WORKER: usize = 400;

/// Worker `worker` of rank `rank`: `distinct` different latencies recorded, a rate series of
/// 3 intervals, as a tiny job's worker sends it.
fn sample(worker: u32, rank: u32, distinct: u64) -> WorkerSample {
    let mut h = new_hist();
    for v in 0..distinct {
        h.record(1000 + v * 7919 % 5_000_000).unwrap();
    }
    WorkerSample {
        worker,
        bytes: 1 << 20,
        ops: 256,
        // Ranks start 7 ms apart.
        start_ns: 1_000_000 + u64::from(rank) * 7_000_000,
        end_ns: 9_000_000 + u64::from(rank) * 7_000_000,
        sync_ns: 100_000,
        sync_calls: 1,
        open_ns: 20_000,
        close_ns: 5_000,
        hist: SampleHist::Full(Box::new(h)),
        trace: None,
        calls: {
            let mut c = crate::engine::CallCounts::default();
            for (call, n) in [(Call::Openat, 1), (Call::Pwrite, 16), (Call::Fsync, 1), (Call::Close, 1)] {
                c.add_n(call, n);
            }
            c.to_map()
        },
        max_inflight: 1,
        role: None,
        place: Some(Placement { rank, host: format!("node{:04}", rank / 32).into(), resident: None }),
        series: Some(Box::new(RateSeries::of_bytes(10_000_000, 8_000_000, vec![1 << 19, 1 << 19, 0]))),
        stonewall_ops: None,
        found: None,
        mix: None,
        alloc_ns: None,
        hints: None,
    }
}

fn reply(rank: u32, distinct: u64) -> Vec<u8> {
    let wire = SampleWire::of(sample(rank, rank, distinct), true).unwrap();
    Reply { rank, result: Ok(vec![wire]), servers: vec![] }.encode()
}

fn world(size: u32) -> WorldInfo {
    WorldInfo {
        rank: 0,
        size,
        hosts: crate::launch::shared_host_names((0..size).map(|r| format!("node{:04}", r / 32))),
        // Each host's clock 4 ms ahead of the one before.
        clock_offset_ns: (0..size).map(|r| i64::from(r / 32) * 4_000_000).collect(),
        clock_bound_ns: vec![0; size as usize],
        notes: vec![],
        cpus: vec![32; size as usize],
    }
}

/// Rank 0 gathering a phase of `ranks` ranks of one worker each, each with `distinct`
/// latencies: what it keeps, in bytes, and what it hands on.
fn gather(ranks: u32, distinct: u64, keep: bool) -> (usize, Launched) {
    let w = world(ranks);
    let mut g = Gathering::new(keep, ranks as usize);
    // Counted by the allocator: what feeding it adds, each reply made, read and let go as
    // MPI's buffer would be.
    let ((), fed) = crate::test_alloc::held_by(|| {
        g.own(Ok(vec![sample(0, 0, distinct)]));
        for r in 1..ranks {
            g.reply(r, &reply(r, distinct), &w);
        }
    });
    (made_room(ranks) + fed as usize, g.finish().unwrap())
}

/// What a gathering of `ranks` workers holds before it is fed, besides the phase's one
/// histogram (256 KiB whatever the ranks, and perhaps a buffer the process kept from an earlier
/// phase, allocated before and on another thread, so not counted here): room for every
/// worker's sample, made at its start.
fn made_room(ranks: u32) -> usize {
    ranks as usize * std::mem::size_of::<WorkerSample>()
}

#[test]
fn a_reply_crosses_intact() {
    let s = sample(3, 3, 500);
    let figures = s.hist.figures();
    let buckets = s.hist.buckets();
    let bytes =
        Reply { rank: 3, result: Ok(vec![SampleWire::of(s, true).unwrap()]), servers: vec![] }.encode();
    let back = Reply::decode(&bytes).unwrap();
    assert_eq!(back.rank, 3);
    let mut phase = FastHist::new();
    let got = back.result.unwrap().pop().unwrap().into_merged(&mut phase, true, None).unwrap();
    assert_eq!(
        (got.worker, got.bytes, got.ops, got.start_ns, got.end_ns),
        (3, 1 << 20, 256, 22_000_000, 30_000_000)
    );
    // The host's name stays off the wire: rank 0 names it from the world by the rank.
    assert!(!bytes.windows(8).any(|b| b == b"node0000"), "a host name sent");
    assert_eq!(got.place.as_ref().map(|p| (p.rank, &*p.host)), Some((3, "")));
    let w = world(40);
    let mut g = Gathering::new(false, 2);
    g.reply(33, &reply(33, 10), &w);
    let s = g.finish().unwrap().samples.pop().unwrap().place.unwrap();
    assert_eq!(&*s.host, "node0001");
    assert!(std::sync::Arc::ptr_eq(&s.host, &w.hosts[33]), "the world's one name, shared");
    // A worker placed on a rank the world does not have is a failure of its sender.
    let mut g = Gathering::new(false, 1);
    g.reply(3, &reply(45, 10), &w);
    let e = g.finish().err().expect("a failure").to_string();
    assert!(e.contains("rank 45, not in the world"), "{e}");
    assert_eq!(got.series.unwrap().bytes, vec![1 << 19, 1 << 19, 0]);
    assert_eq!(got.hist.figures(), figures);
    assert_eq!(got.hist.buckets(), buckets);
    assert_eq!(phase.buckets(), buckets);
    assert_eq!(phase.len(), 500);
    // A failure crosses as its words; bytes that are not a reply are said to be none.
    let failed = Reply { rank: 2, result: Err("pwrite: EIO".into()), servers: vec![] }.encode();
    assert_eq!(Reply::decode(&failed).unwrap().result.unwrap_err(), "pwrite: EIO");
    assert!(Reply::decode(b"{\"rank\": 1}").is_err());
}

#[test]
fn a_worker_takes_few_bytes_in_a_reply() {
    // The sample without its histogram, then its histogram's buckets at 2 to 10 bytes each.
    let empty = Reply { rank: 7, result: Ok(vec![]), servers: vec![] }.encode().len();
    let base = reply(7, 0).len() - empty;
    assert!(base <= REPLY_BYTES_PER_WORKER, "a worker without latencies takes {base} bytes");
    for distinct in [1, 100, 1000] {
        let buckets = sample(7, 7, distinct).hist.buckets().0.len();
        let bytes = reply(7, distinct).len() - empty;
        assert!(bytes >= base + 2 * buckets && bytes <= base + 10 * buckets, "{distinct}: {bytes} bytes");
        eprintln!("a worker with {buckets} latency buckets: {bytes} bytes ({base} without them)");
    }
    // JSON took about 20 bytes per bucket, and the figures that now come along were not there.
    let json = crate::json::to_vec(&SampleWire::of(sample(7, 7, 1000), true).unwrap()).unwrap().len();
    assert!(reply(7, 1000).len() * 2 < json, "{} bytes against {json} in JSON", reply(7, 1000).len());
}

#[test]
fn rank_0_keeps_a_fixed_size_per_worker_whatever_the_histograms() {
    let (k2, l2) = gather(2, 1000, false);
    let (k16, l16) = gather(16, 1000, false);
    let (k16_small, _) = gather(16, 10, false);
    // The histograms' sizes change nothing of what is kept; each worker adds the same bytes.
    assert_eq!(k16, k16_small);
    let per_worker = (k16 - k2) / 14;
    assert_eq!((k16 - k2) % 14, 0);
    assert!(per_worker <= KEPT_BYTES_PER_WORKER, "{per_worker} bytes per worker");
    let (k64, _) = gather(64, 1000, false);
    assert_eq!(k64 - k16, 48 * per_worker, "{k64} at 64 ranks, {k16} at 16");
    eprintln!("rank 0 keeps {k2} bytes at 2 ranks, {per_worker} more per worker");
    // Besides the phase's one histogram (`made_room`) and the workers, a few bytes and one
    // copy of the call counts all the workers share (its four calls at 16 bytes and 16).
    assert!(k2 <= 2 * per_worker + 64 + 80, "{k2} bytes at 2 ranks");
    // The figures are those of each worker's own histogram, the phase's histogram theirs summed.
    let mut all = new_hist();
    for s in (0..16).map(|r| sample(r, r, 1000)) {
        assert_eq!(l16.samples[s.worker as usize].hist.figures(), s.hist.figures());
        all.add(s.hist.to_hist()).unwrap();
    }
    assert_eq!(l16.latency, Buckets::from_hist(&all));
    assert_eq!(LatencyNs::from_hist(&l16.latency.to_hist()), LatencyNs::from_hist(&all));
    assert_eq!(l2.samples.len(), 2);
    assert!(l16.samples.iter().all(|s| s.hist.buckets().is_empty()), "no worker keeps its buckets");
}

#[test]
fn traced_runs_keep_each_workers_buckets() {
    let (kept, l) = gather(4, 100, true);
    let (without, _) = gather(4, 100, false);
    assert!(kept > without);
    for s in &l.samples {
        assert_eq!(s.hist.buckets(), sample(s.worker, s.worker, 100).hist.buckets());
    }
}

#[test]
fn the_lowest_ranks_real_failure_is_told() {
    let w = world(4);
    let mut g = Gathering::new(false, 4);
    g.own(Ok(vec![sample(0, 0, 10)]));
    let fail = |rank: u32, msg: &str| Reply { rank, result: Err(msg.into()), servers: vec![] }.encode();
    g.reply(3, &fail(3, "pwrite on f at offset 0: EIO"), &w);
    g.reply(1, &fail(1, "aborted: another rank failed"), &w);
    g.reply(2, &reply(2, 10), &w);
    let e = g.finish().err().unwrap().to_string();
    assert!(e.contains("rank 3 (node0000): pwrite on f at offset 0: EIO"), "{e}");
}

/// The same phase gathered up the binomial tree: each rank's bundle made of its own reply and
/// its children's bundles, highest rank first as they would come, then rank 0 taking its
/// children's; `fail`: ranks whose reply is a failure. What rank 0 keeps, what it hands on,
/// and the largest bundle it read, in bytes.
fn gather_up_the_tree(ranks: u32, distinct: u64, fail: &[u32]) -> (usize, Result<Launched>, usize) {
    use crate::launch::mpi_tree::{Bundler, children};
    let w = world(ranks);
    let own = |r: u32| match fail.contains(&r) {
        true => Reply { rank: r, result: Err(format!("pwrite on f{r}: EIO")), servers: vec![] },
        false => Reply {
            rank: r,
            result: Ok(vec![SampleWire::of(sample(r, r, distinct), true).unwrap()]),
            servers: vec![],
        },
    };
    // What every rank learns first: the earliest start on rank 0's clock.
    let first =
        (0..ranks).map(|r| sample(r, r, 0).start_ns - w.clock_offset_ns[r as usize] as u64).min().unwrap();
    let mut bundles: Vec<Option<Vec<u8>>> = vec![None; ranks as usize];
    for r in (1..ranks).rev() {
        let mut b = Bundler::new(own(r), w.clock_offset_ns[r as usize], first);
        for c in children(r, ranks) {
            b.child(c, &bundles[c as usize].take().unwrap());
        }
        bundles[r as usize] = Some(b.finish());
    }
    let top: Vec<(u32, Vec<u8>)> =
        children(0, ranks).map(|c| (c, bundles[c as usize].take().unwrap())).collect();
    assert!(bundles.iter().all(Option::is_none), "every bundle reached rank 0");
    let largest = top.iter().map(|(_, b)| b.len()).max().unwrap_or(0);
    let mut g = Gathering::new(false, ranks as usize);
    // Counted by the allocator as in `gather`, the bundles (MPI's buffers) apart.
    let ((), fed) = crate::test_alloc::held_by(|| {
        g.sum_series_from(first);
        g.own(Ok(vec![sample(0, 0, distinct)]));
        for (c, b) in &top {
            g.bundle(*c, b, &w);
        }
    });
    (made_room(ranks) + fed as usize, g.finish(), largest)
}

#[test]
fn the_tree_gathers_what_one_reply_per_rank_gathers() {
    for ranks in [1, 2, 3, 13, 16, 64] {
        let (kept_flat, flat) = gather(ranks, 1000, false);
        let (kept, tree, largest) = gather_up_the_tree(ranks, 1000, &[]);
        let tree = tree.unwrap();
        // The same, but for the workers' series (3 intervals each, boxed): one summed series instead.
        let sum = tree.series.as_ref().unwrap().bytes.capacity() * 8;
        let series = std::mem::size_of::<RateSeries>() + 3 * 8;
        assert_eq!(kept - sum, kept_flat - ranks as usize * series, "{ranks} ranks: rank 0 keeps the same");
        assert_eq!(tree.latency, flat.latency, "{ranks} ranks: the phase's histogram");
        assert_eq!(tree.samples.len(), ranks as usize);
        for (t, f) in tree.samples.iter().zip(&flat.samples) {
            assert_eq!(
                (t.worker, t.bytes, t.ops, t.start_ns, t.end_ns),
                (f.worker, f.bytes, f.ops, f.start_ns, f.end_ns)
            );
            assert_eq!(t.place, f.place);
            assert_eq!(t.series, None, "its series went into the phase's");
            assert_eq!(t.hist.figures(), f.hist.figures());
            assert!(t.hist.buckets().is_empty());
        }
        // The phase's rate over time: the sum of the workers' series, each from its start on
        // rank 0's clock, as one reply per rank gives it.
        assert_eq!(flat.series, None);
        let first = flat.samples.iter().map(|s| s.start_ns).min().unwrap();
        let parts: Vec<(u64, &RateSeries)> =
            flat.samples.iter().map(|s| (s.start_ns - first, s.series.as_deref().unwrap())).collect();
        let want = RateSeries::sum(&parts);
        assert!(want.as_ref().is_some_and(|r| r.bytes.iter().sum::<u64>() == u64::from(ranks) << 20));
        assert_eq!(tree.series, want, "{ranks} ranks");
        // Rank 0's largest bundle is half the world's workers without their buckets, and one
        // merged histogram (at most 10 bytes per bucket).
        let half = (ranks as usize).div_ceil(2);
        let merged = flat.latency.0.len();
        assert!(
            largest <= half * REPLY_BYTES_PER_WORKER + 10 * merged,
            "{ranks} ranks: a bundle of {largest} bytes"
        );
    }
}

#[test]
fn a_failure_deep_in_the_tree_and_a_bundle_that_is_not_one_are_told() {
    let (_, got, _) = gather_up_the_tree(16, 10, &[13, 6]);
    let e = got.err().unwrap().to_string();
    assert!(e.contains("rank 6 (node0000): pwrite on f6: EIO"), "{e}");
    // Bytes that are no histogram, and a histogram followed by bytes that are no reply.
    let w = world(4);
    let mut after_counts = postcard::to_allocvec(&sample(1, 1, 10).hist.buckets()).unwrap();
    after_counts.extend_from_slice(&[0xff; 3]);
    for bad in [&b"\xff"[..], &after_counts[..]] {
        let mut g = Gathering::new(false, 4);
        g.own(Ok(vec![sample(0, 0, 10)]));
        g.bundle(2, bad, &w);
        let e = g.finish().err().unwrap().to_string();
        assert!(e.contains("rank 2 (node0000) sent something that is not a bundle"), "{e}");
    }
}

/// Up the tree a worker's series goes into the phase's sum, but one with a stall in it (no
/// progress for seconds) stays with the worker too, so rank 0 flags the stall as on one host.
#[test]
fn a_series_with_a_stall_stays_with_its_worker_up_the_tree() {
    let stalled = |r: u32| {
        let mut s = sample(r, r, 10);
        let mut bytes = vec![0u64; 200];
        (bytes[0], bytes[199]) = (1 << 19, 1 << 19);
        s.series = Some(Box::new(RateSeries::of_bytes(10_000_000, 2_000_000_000, bytes)));
        s.end_ns = s.start_ns + 2_000_000_000;
        s
    };
    assert!(!stalled(1).stalls().is_empty() && sample(1, 1, 10).stalls().is_empty());
    let w = world(3);
    let mut b = crate::launch::mpi_tree::Bundler::new(
        Reply { rank: 1, result: Ok(vec![SampleWire::of(stalled(1), true).unwrap()]), servers: vec![] },
        0,
        1_000_000,
    );
    let two =
        Reply { rank: 2, result: Ok(vec![SampleWire::of(sample(2, 2, 10), true).unwrap()]), servers: vec![] };
    let mut c = crate::launch::mpi_tree::Bundler::new(two, 0, 1_000_000);
    c.child(
        3,
        &crate::launch::mpi_tree::Bundler::new(Reply { rank: 3, result: Ok(vec![]), servers: vec![] }, 0, 0)
            .finish(),
    );
    b.child(2, &c.finish());
    let mut g = Gathering::new(false, 3);
    g.sum_series_from(1_000_000);
    g.own(Ok(vec![stalled(0)]));
    g.bundle(1, &b.finish(), &w);
    let got = g.finish().unwrap();
    let kept: Vec<bool> = got.samples.iter().map(|s| s.series.is_some()).collect();
    assert_eq!(kept, [true, true, false], "the stalled workers' series stay, the other's does not");
    assert_eq!(got.samples[0].stalls().len(), 1);
    let sum = got.series.unwrap();
    assert_eq!(sum.bytes.iter().sum::<u64>(), 3 << 20, "every worker's bytes in the phase's series");
}
