//! A phase's replies gathered up a binomial tree of ranks, as MPI's own reductions gather: a
//! rank takes its children's bundles, adds its workers' latency counts and theirs into one
//! histogram, and sends its parent one bundle; rank 0 hears from about log2(ranks) ranks,
//! not from every rank, so neither its transport's state nor its messages grow with each rank.
//!
//! A bundle is the subtree's merged latency counts and rate series (summed from the phase's
//! earliest start, which every rank learns first: `mpi_sync::earliest_start`), then each of
//! the subtree's replies as it was encoded, every worker's counts and series already taken out
//! of it (its figures stay; a series with a stall in it stays too, for rank 0 to flag). Traced
//! phases (each worker's buckets and ops kept) and phases with I/O-server ranks (which listen
//! for any message while they serve) gather one reply per rank instead (`mpi::run_phase_with`).

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::latency::series::SeriesSum;
use crate::latency::{Buckets, FastHist};
use crate::launch::mpi_reply::Reply;
use crate::spec::{LatencyMode, Spec};

/// The tag of a bundle sent to a rank's parent.
pub(super) const BUNDLE: i32 = 10;

/// Whether a phase of `spec` gathers its replies up the tree (every rank decides the same from
/// the order's spec).
pub(super) fn up_the_tree(spec: &Spec) -> bool {
    spec.latency != LatencyMode::Trace && spec.servers.is_none()
}

/// The rank `rank` sends its bundle to: itself with its lowest set bit cleared (none for 0).
pub(super) fn parent(rank: u32) -> Option<u32> {
    (rank != 0).then(|| rank & (rank - 1))
}

/// The ranks that send `rank` their bundles in a world of `size`: `rank + 2^k` for each power
/// of two below `rank`'s lowest set bit (every power, for rank 0), within the world.
pub(super) fn children(rank: u32, size: u32) -> impl Iterator<Item = u32> {
    let below = if rank == 0 { 1u64 << 32 } else { u64::from(rank & rank.wrapping_neg()) };
    (0..32)
        .map(|k| 1u64 << k)
        .take_while(move |&b| b < below)
        .map(move |b| u64::from(rank) + b)
        .take_while(move |&c| c < u64::from(size))
        .map(|c| c as u32)
}

/// One rank's bundle as it is put together: its own reply, then its children's bundles.
pub(super) struct Bundler {
    latency: FastHist,
    series: SeriesSum,
    replies: Vec<u8>,
}

impl Bundler {
    /// A rank's bundle, starting from its own reply: its workers' counts go to the bundle's
    /// histogram and their rate series to its sum (each moved onto rank 0's clock by the
    /// rank's `offset_ns` and placed after the phase's earliest start `first_ns`), the rest of
    /// the reply is kept encoded.
    pub fn new(mut own: Reply, offset_ns: i64, first_ns: u64) -> Bundler {
        let mut latency = FastHist::new();
        let mut series = SeriesSum::default();
        if let Ok(wires) = &mut own.result {
            for w in wires {
                w.hand_counts(&mut latency);
                w.hand_series(&mut series, offset_ns, first_ns);
            }
        }
        Bundler { latency, series, replies: own.encode_or_failure().0 }
    }

    /// A child's bundle (its bytes, from rank `from`): its counts added, its replies appended
    /// as they came. Bytes that are not a bundle become rank `from`'s failure.
    pub fn child(&mut self, from: u32, bytes: &[u8]) {
        match open(bytes) {
            Ok((counts, series, replies)) => {
                self.latency.add(&counts);
                self.series.merge(&series);
                self.replies.extend_from_slice(replies);
            }
            Err(e) => {
                let r = Reply {
                    rank: from,
                    result: Err(format!("sent a bundle that is not one: {e}")),
                    servers: vec![],
                };
                self.replies.extend_from_slice(&r.encode_or_failure().0);
            }
        }
    }

    /// The bundle's bytes.
    pub fn finish(self) -> Vec<u8> {
        let mut bytes = postcard::to_allocvec(&self.latency.buckets()).unwrap_or_default();
        bytes.extend_from_slice(&postcard::to_allocvec(&self.series).unwrap_or_default());
        bytes.extend_from_slice(&self.replies);
        bytes
    }
}

/// A bundle's merged counts, its summed series and the bytes of its replies, one after another.
pub(super) fn open(bytes: &[u8]) -> std::result::Result<(Buckets, SeriesSum, &[u8]), String> {
    let (counts, rest) = postcard::take_from_bytes::<Buckets>(bytes).map_err(|e| e.to_string())?;
    let (series, rest) = postcard::take_from_bytes::<SeriesSum>(rest).map_err(|e| e.to_string())?;
    series.check()?;
    Ok((counts, series, rest))
}

/// The replies in a bundle's reply bytes, one at a time; a reply that cannot be read ends them.
pub(super) fn replies(mut bytes: &[u8]) -> impl Iterator<Item = std::result::Result<Reply, String>> + '_ {
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        match postcard::take_from_bytes::<Reply>(bytes) {
            Ok((r, rest)) => {
                bytes = rest;
                Some(Ok(r))
            }
            Err(e) => {
                bytes = &[];
                Some(Err(e.to_string()))
            }
        }
    })
}

/// A serving rank's part: its own reply and its children's bundles (waited for in the order
/// they come, `meanwhile` called as it waits: rank 0's stop passed on) to its parent, as one
/// bundle; first every rank learns the phase's earliest start (its clock's offset from rank
/// 0's: `offset_ns`).
pub(super) fn send_up(comm: &SimpleCommunicator, own: Reply, offset_ns: i64, meanwhile: &mut dyn FnMut()) {
    let rank = comm.rank() as u32;
    let mine = match &own.result {
        Ok(wires) => wires.iter().map(|w| w.start_on_root(offset_ns)).min(),
        Err(_) => None,
    };
    let first = crate::launch::mpi_sync::earliest_start(mine.unwrap_or(u64::MAX));
    let mut bundle = Bundler::new(own, offset_ns, first);
    for _ in children(rank, comm.size() as u32) {
        let probed = loop {
            match comm.any_process().immediate_matched_probe_with_tag(BUNDLE) {
                Some(p) => break p,
                None => {
                    meanwhile();
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
        };
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        bundle.child(status.source_rank() as u32, &bytes);
    }
    let bytes = bundle.finish();
    let to = parent(rank).expect("a serving rank is not rank 0");
    comm.process_at_rank(to as i32).send_with_tag(&bytes[..], BUNDLE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_but_0_has_one_parent_below_it_and_is_its_child() {
        for size in 1..=300u32 {
            let mut heard = vec![0u32; size as usize];
            for r in 0..size {
                for c in children(r, size) {
                    assert_eq!(parent(c), Some(r), "size {size}: {c} under {r}");
                    heard[c as usize] += 1;
                }
            }
            assert_eq!(heard[0], 0);
            assert!(heard[1..].iter().all(|&n| n == 1), "size {size}: {heard:?}");
            // Rank 0 hears from ceil(log2(size)) ranks; no path is longer than that.
            let log = u32::BITS - (size - 1).leading_zeros();
            assert_eq!(children(0, size).count() as u32, log, "size {size}");
            for r in 1..size {
                let (mut at, mut hops) = (r, 0);
                while let Some(p) = parent(at) {
                    (at, hops) = (p, hops + 1);
                }
                assert!(hops <= log, "size {size}: rank {r} is {hops} hops from 0");
            }
        }
        assert_eq!(children(0, 100_000).count(), 17);
        assert_eq!(children(6, 100_000).collect::<Vec<_>>(), vec![7]);
        assert_eq!(children(8, 12).collect::<Vec<_>>(), vec![9, 10]);
    }

    /// A middle rank gets from child 5 a bundle whose series no adding makes (3 bins of 10 ms
    /// reaching 10 ms): child 5's subtree becomes that rank's failure in the bundle it sends
    /// up, with the reason, and its own reply, counts and series are what they were. A good
    /// child's bundle beside it is kept whole.
    #[test]
    fn a_middle_rank_tells_a_childs_malformed_series_as_that_childs_failure() {
        use crate::latency::series::BASE_NS;
        let reply = |rank| Reply { rank, result: Ok(vec![]), servers: vec![] };
        let empty = Bundler::new(reply(6), 0, 0).finish();
        let mut bad = postcard::to_allocvec(&Buckets::default()).unwrap();
        // A SeriesSum's fields in order: of, interval_ns, end_ns, bytes, parts, missing.
        let of = crate::units::RateUnit::Bytes;
        bad.extend(postcard::to_allocvec(&(of, BASE_NS, BASE_NS, vec![1u64, 2, 3], 1u64, false)).unwrap());
        bad.extend(Reply { rank: 5, result: Ok(vec![]), servers: vec![] }.encode_or_failure().0);
        let mut b = Bundler::new(reply(4), 0, 0);
        b.child(5, &bad);
        b.child(6, &empty);
        let bytes = b.finish();
        let (counts, series, rest) = open(&bytes).unwrap();
        assert_eq!((counts, series), (Buckets::default(), SeriesSum::default()));
        let got: Vec<(u32, Result<usize, String>)> =
            replies(rest).map(|r| r.unwrap()).map(|r| (r.rank, r.result.map(|w| w.len()))).collect();
        let want = "sent a bundle that is not one: a rate series of 3 intervals of 10000000 ns to 10000000 ns \
                    is none iolab sums";
        assert_eq!(got, [(4, Ok(0)), (5, Err(want.to_string())), (6, Ok(0))]);
    }
}
