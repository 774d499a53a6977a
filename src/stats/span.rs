//! A phase's span on one clock, from its workers' own readings: IOR's aggregate rate (all
//! bytes over the time from the first open to the last close, commits included) and the
//! overlap of the workers (the share of the span during which all of them were running).
//!
//! Definitions:
//! - A worker's moments on the phase's common clock: `start` (it left the start gate), `end`
//!   (its last op ended, its final commit included), `open_ns` and `close_ns` (how long its open
//!   and close took). Its open is placed just before its start and its close just after its
//!   end: iolab opens before the start gate, so a worker's wait at the gate for the others
//!   is not counted, as IOR's barrier before the open leaves none.
//! - span = max(end + close_ns) - min(start - open_ns); agg = total bytes / span (IOR's
//!   bandwidth: "totalBytes / (max close end - min open start)", reduced over all tasks).
//! - overlap = max(0, min(end) - max(start)) / (max(end) - min(start)) over the workers that
//!   moved bytes: 1 when they all ran from the same start to the same end, 0 when one ended
//!   before another began. One worker (or none) overlaps fully.

/// One worker's moments in a phase, on the phase's common clock (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Moments {
    pub bytes: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub open_ns: u64,
    pub close_ns: u64,
}

/// The time from the first open to the last close (ns); None without workers.
pub fn span_ns(ws: &[Moments]) -> Option<u64> {
    let first = ws.iter().map(|w| w.start_ns.saturating_sub(w.open_ns)).min()?;
    let last = ws.iter().map(|w| w.end_ns.saturating_add(w.close_ns)).max()?;
    Some(last.saturating_sub(first))
}

/// IOR's aggregate rate, bytes per second: all bytes over [`span_ns`]; None without workers or
/// for an empty span.
pub fn agg_bytes_per_s(ws: &[Moments]) -> Option<f64> {
    let span = span_ns(ws).filter(|&s| s > 0)?;
    let total: u64 = ws.iter().map(|w| w.bytes).sum();
    Some(total as f64 * 1e9 / span as f64)
}

/// The share of the phase (from the first start to the last end of the workers that moved
/// bytes) during which all of them were running, in [0, 1].
pub fn overlap(ws: &[Moments]) -> f64 {
    let movers: Vec<&Moments> = ws.iter().filter(|w| w.bytes > 0).collect();
    let (Some(first), Some(last)) =
        (movers.iter().map(|w| w.start_ns).min(), movers.iter().map(|w| w.end_ns).max())
    else {
        return 1.0;
    };
    let (latest_start, earliest_end) = (
        movers.iter().map(|w| w.start_ns).max().unwrap_or(first),
        movers.iter().map(|w| w.end_ns).min().unwrap_or(last),
    );
    if movers.len() < 2 || last <= first {
        return 1.0;
    }
    earliest_end.saturating_sub(latest_start) as f64 / (last - first) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(bytes: u64, start_ns: u64, end_ns: u64) -> Moments {
        Moments { bytes, start_ns, end_ns, open_ns: 0, close_ns: 0 }
    }

    #[test]
    fn ior_aggregate_by_hand() {
        // Two workers from one gate at t = 1 s: 100 MB in 1 s and 100 MB in 2 s; opens of
        // 10 ms and 30 ms, closes of 5 ms and 20 ms. First open 1 s - 30 ms, last close
        // 3 s + 20 ms: span 2.05 s, agg = 200 MB / 2.05 s.
        let ws = [
            Moments {
                bytes: 100_000_000,
                start_ns: 1_000_000_000,
                end_ns: 2_000_000_000,
                open_ns: 10_000_000,
                close_ns: 5_000_000,
            },
            Moments {
                bytes: 100_000_000,
                start_ns: 1_000_000_000,
                end_ns: 3_000_000_000,
                open_ns: 30_000_000,
                close_ns: 20_000_000,
            },
        ];
        assert_eq!(span_ns(&ws), Some(2_050_000_000));
        assert!((agg_bytes_per_s(&ws).unwrap() - 200e6 / 2.05).abs() < 1e-3);
        // max_SAR would say 150 MB/s, min_SAR 100 MB/s: agg is below both, as it counts the
        // open and close.
        assert_eq!(overlap(&ws), 0.5);
        assert_eq!(span_ns(&[]), None);
        assert_eq!(agg_bytes_per_s(&[w(5, 7, 7)]), None, "an empty span has no rate");
    }

    #[test]
    fn workers_that_never_ran_together_do_not_overlap() {
        // R4 at quick scale: readers of 3 ms each, one after the other.
        let ws = [w(1, 0, 3), w(1, 10, 13), w(1, 20, 23)];
        assert_eq!(overlap(&ws), 0.0);
        // Staggered by a tenth of their time: 0.8 of the span has all of them.
        let ws = [w(1, 0, 100), w(1, 10, 110)];
        assert!((overlap(&ws) - 90.0 / 110.0).abs() < 1e-12);
        // Workers that moved nothing (a compute role) do not count; one mover overlaps fully.
        assert_eq!(overlap(&[w(1, 0, 10), w(0, 50, 60)]), 1.0);
        assert_eq!(overlap(&[]), 1.0);
    }

    proptest! {
        #[test]
        fn agg_lies_below_min_sar_and_overlap_in_range(
            ws in proptest::collection::vec((1u64..1 << 40, 0u64..1 << 40, 1u64..1 << 40, 0u64..1 << 30, 0u64..1 << 30), 1..16)
        ) {
            let ms: Vec<Moments> = ws.iter()
                .map(|&(b, s, t, o, c)| Moments { bytes: b, start_ns: s + (1 << 30), end_ns: s + (1 << 30) + t, open_ns: o, close_ns: c })
                .collect();
            let total: u64 = ms.iter().map(|m| m.bytes).sum();
            let tmax = ms.iter().map(|m| m.end_ns - m.start_ns).max().unwrap();
            // The span holds every worker's time, so agg never exceeds min_SAR.
            let min_sar = total as f64 * 1e9 / tmax as f64;
            prop_assert!(agg_bytes_per_s(&ms).unwrap() <= min_sar * (1.0 + 1e-9));
            let o = overlap(&ms);
            prop_assert!((0.0..=1.0).contains(&o));
            // All from one start to one end: full overlap.
            let same: Vec<Moments> = ms.iter().map(|m| Moments { start_ns: 5, end_ns: 9, ..*m }).collect();
            prop_assert_eq!(overlap(&same), 1.0);
        }
    }
}
