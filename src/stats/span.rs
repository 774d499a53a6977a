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
//!   did work (moved bytes, or made, visited or removed items): 1 when they all ran from the same start to the same end, 0 when one ended
//!   before another began. One worker (or none) overlaps fully.

/// One worker's moments in a phase, on the phase's common clock (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Moments {
    pub bytes: u64,
    /// Ops done (a metadata phase's items move no bytes, yet its workers work).
    pub ops: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub open_ns: u64,
    pub close_ns: u64,
}

/// The span, aggregate rate and overlap of workers added one at a time ([`Span::add`]), in
/// the same few bytes however many there are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    bytes: u64,
    /// The first open and the last close, once a worker is added.
    opened_closed: Option<(u64, u64)>,
    /// Of the workers that did work (moved bytes or did ops): how many, their first and latest starts, their
    /// earliest and last ends.
    movers: u64,
    first_start: u64,
    latest_start: u64,
    earliest_end: u64,
    last_end: u64,
}

impl Span {
    pub fn add(&mut self, w: &Moments) {
        self.bytes += w.bytes;
        let (open, close) = (w.start_ns.saturating_sub(w.open_ns), w.end_ns.saturating_add(w.close_ns));
        self.opened_closed = Some(match self.opened_closed {
            Some((first, last)) => (first.min(open), last.max(close)),
            None => (open, close),
        });
        if w.bytes > 0 || w.ops > 0 {
            if self.movers == 0 {
                (self.first_start, self.latest_start) = (w.start_ns, w.start_ns);
                (self.earliest_end, self.last_end) = (w.end_ns, w.end_ns);
            }
            self.movers += 1;
            self.first_start = self.first_start.min(w.start_ns);
            self.latest_start = self.latest_start.max(w.start_ns);
            self.earliest_end = self.earliest_end.min(w.end_ns);
            self.last_end = self.last_end.max(w.end_ns);
        }
    }

    /// The time from the first open to the last close (ns); None without workers.
    pub fn span_ns(&self) -> Option<u64> {
        self.opened_closed.map(|(first, last)| last.saturating_sub(first))
    }

    /// IOR's aggregate rate, bytes per second: all bytes over the span; None without workers
    /// or for an empty span.
    pub fn agg_bytes_per_s(&self) -> Option<f64> {
        let span = self.span_ns().filter(|&s| s > 0)?;
        Some(self.bytes as f64 * 1e9 / span as f64)
    }

    /// The share of the phase (from the first start to the last end of the workers that did
    /// work) during which all of them were running, in [0, 1].
    pub fn overlap(&self) -> f64 {
        if self.movers < 2 || self.last_end <= self.first_start {
            return 1.0;
        }
        self.earliest_end.saturating_sub(self.latest_start) as f64 / (self.last_end - self.first_start) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn of(ws: &[Moments]) -> Span {
        let mut s = Span::default();
        for w in ws {
            s.add(w);
        }
        s
    }

    fn span_ns(ws: &[Moments]) -> Option<u64> {
        of(ws).span_ns()
    }

    fn agg_bytes_per_s(ws: &[Moments]) -> Option<f64> {
        of(ws).agg_bytes_per_s()
    }

    fn overlap(ws: &[Moments]) -> f64 {
        of(ws).overlap()
    }

    fn w(bytes: u64, start_ns: u64, end_ns: u64) -> Moments {
        Moments { bytes, ops: 0, start_ns, end_ns, open_ns: 0, close_ns: 0 }
    }

    #[test]
    fn ior_aggregate_by_hand() {
        // Two workers from one gate at t = 1 s: 100 MB in 1 s and 100 MB in 2 s; opens of
        // 10 ms and 30 ms, closes of 5 ms and 20 ms. First open 1 s - 30 ms, last close
        // 3 s + 20 ms: span 2.05 s, agg = 200 MB / 2.05 s.
        let ws = [
            Moments {
                bytes: 100_000_000,
                ops: 0,
                start_ns: 1_000_000_000,
                end_ns: 2_000_000_000,
                open_ns: 10_000_000,
                close_ns: 5_000_000,
            },
            Moments {
                bytes: 100_000_000,
                ops: 0,
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
                .map(|&(b, s, t, o, c)| Moments { bytes: b, ops: 0, start_ns: s + (1 << 30), end_ns: s + (1 << 30) + t, open_ns: o, close_ns: c })
                .collect();
            let total: u64 = ms.iter().map(|m| m.bytes).sum();
            let tmax = ms.iter().map(|m| m.end_ns - m.start_ns).max().unwrap();
            // The span holds every worker's time, so agg never exceeds min_SAR.
            let min_sar = total as f64 * 1e9 / tmax as f64;
            prop_assert!(agg_bytes_per_s(&ms).unwrap() <= min_sar * (1.0 + 1e-9));
            let o = overlap(&ms);
            prop_assert!((0.0..=1.0).contains(&o));
            // The definitions written out over the whole set, as the module's doc gives them.
            let first = ms.iter().map(|m| m.start_ns - m.open_ns).min().unwrap();
            let last = ms.iter().map(|m| m.end_ns + m.close_ns).max().unwrap();
            prop_assert_eq!(span_ns(&ms), Some(last - first));
            let (s0, s1) = (ms.iter().map(|m| m.start_ns).min().unwrap(), ms.iter().map(|m| m.start_ns).max().unwrap());
            let (e0, e1) = (ms.iter().map(|m| m.end_ns).min().unwrap(), ms.iter().map(|m| m.end_ns).max().unwrap());
            let by_hand = if ms.len() < 2 { 1.0 } else { e0.saturating_sub(s1) as f64 / (e1 - s0) as f64 };
            prop_assert_eq!(o, by_hand);
            // All from one start to one end: full overlap.
            let same: Vec<Moments> = ms.iter().map(|m| Moments { start_ns: 5, end_ns: 9, ..*m }).collect();
            prop_assert_eq!(overlap(&same), 1.0);
        }
    }
}
