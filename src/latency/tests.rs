//! Tests of the latency histograms: the fast histogram has HDR's layout, converts to the
//! histogram direct recording gives, and comes back empty when reused.

use super::*;
use proptest::prelude::*;

#[test]
fn the_layout_is_hdrs() {
    let h = new_hist();
    // Every bucket boundary region, and the clamp at the top.
    let mut values: Vec<u64> = (0..5000).collect();
    for shift in 10..41 {
        for d in [0u64, 1, 2, 3] {
            values.push((1u64 << shift) - d);
            values.push((1u64 << shift) + d);
        }
    }
    values.push(u64::MAX);
    for v in values {
        let i = FastHist::index(v);
        assert!(i < COUNTS, "{v}");
        let v = v.min(HIGHEST_NS);
        assert_eq!(FastHist::value_at(i), h.lowest_equivalent(v), "value {v}, index {i}");
    }
}

#[test]
fn a_dropped_histogram_comes_back_empty_and_a_short_one_is_small() {
    let mut a = FastHist::new();
    for v in [3u64, 900, 45_000] {
        a.record(v);
    }
    let small = a.to_hdr();
    let mut full = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
    for v in [3u64, 900, 45_000] {
        full.record(v).unwrap();
    }
    assert_eq!(Buckets::from_hist(&small), Buckets::from_hist(&full));
    assert_eq!(small.len(), 3);
    // Counts up to 45 us: 6 levels of 1024 past the first 2048, not the 32 of 18 minutes.
    assert!(small.distinct_values() <= 8 * 1024, "{}", small.distinct_values());
    // The next one of the process is the dropped one (unless a test beside took it).
    let at = a.counts.as_ptr();
    drop(a);
    let b = FastHist::new();
    assert!(b.is_empty(), "reused: {}", b.counts.as_ptr() == at);
    assert_eq!(b.bytes(), COUNTS * 8);
}

proptest! {
    /// Recording through the fast histogram gives the HDR histogram that direct recording
    /// gives: the same buckets, percentiles, max and mean.
    #[test]
    fn it_converts_to_the_directly_recorded_histogram(
        values in prop::collection::vec(prop_oneof![0u64..5000, 0u64..10_000_000, any::<u64>()], 1..400)
    ) {
        let mut fast = FastHist::new();
        // The reference: HDR's histogram of the whole range, its counts all there at once.
        let mut hdr = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
        // And new_hist's, which grows as values come.
        let mut grown = new_hist();
        for &v in &values {
            fast.record(v);
            hdr.saturating_record(v);
            record_n(&mut grown, v, 1);
        }
        prop_assert_eq!(fast.len(), values.len() as u64);
        for h in [fast.to_hdr(), grown, Buckets::from_hist(&hdr).to_hist()] {
            prop_assert_eq!(Buckets::from_hist(&h), Buckets::from_hist(&hdr));
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                prop_assert_eq!(h.value_at_quantile(q), hdr.value_at_quantile(q));
            }
            prop_assert_eq!(h.max(), hdr.max());
            prop_assert_eq!(h.min(), hdr.min());
            let f = LatencyNs::from_hist(&h);
            let q = |q| hdr.value_at_quantile(q);
            prop_assert_eq!((f.p50, f.p90, f.p99, f.p999, f.max), (q(0.5), q(0.9), q(0.99), q(0.999), hdr.max()));
            prop_assert_eq!(f.mean, hdr.mean());
            prop_assert!((h.mean() - hdr.mean()).abs() <= 1e-9 * hdr.mean().max(1.0));
        }
    }
}
