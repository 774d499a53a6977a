//! The rate over time of one phase: bytes completed per fixed time interval, recorded by a
//! worker's timed loop into a preallocated array (no allocation, no lock), summed over the
//! workers of a repetition, and the steady window that excludes the start-up transient (a
//! throttle's initial burst, the first op's latency) and the end (a partial last interval,
//! the final commit).

use serde::{Deserialize, Serialize};

use crate::units::RateUnit;

/// The most intervals a worker keeps; when a phase outlasts them, adjacent pairs are merged and
/// the interval doubles, so a series always has between `SLOTS / 2` and `SLOTS` intervals once
/// the phase is longer than `SLOTS * BASE_NS`.
pub const SLOTS: usize = 512;
/// The finest interval: 10 ms.
pub const BASE_NS: u64 = 10_000_000;
/// The fewest intervals a phase needs for a steady window (so each end drops at least one).
pub const MIN_INTERVALS: usize = 10;
/// The share of the intervals dropped at each end to find the steady window: 10%.
pub const TRIM: f64 = 0.10;
/// The fewest intervals of the steady window in which ops completed for it to have a rate:
/// below that (a phase of one op, or of a few long ones) the slope says nothing.
pub const MIN_STEPS: usize = 3;

/// Bytes completed per interval, as a worker's loop records them: the bytes of an op count in
/// the interval in which it ended.
pub struct RateRecorder {
    /// What it counts: bytes, or (a metadata phase's) ops.
    of: RateUnit,
    interval_ns: u64,
    buckets: Box<[u64; SLOTS]>,
    /// The interval the last op ended in, and its end: an op ending before that end counts
    /// there without a division (a worker's ops end in time order).
    cur: usize,
    edge: u64,
}

impl Default for RateRecorder {
    fn default() -> RateRecorder {
        RateRecorder::counting(RateUnit::Bytes)
    }
}

impl RateRecorder {
    /// A recorder of what `of` counts (bytes, or ops).
    pub fn counting(of: RateUnit) -> RateRecorder {
        RateRecorder { of, interval_ns: BASE_NS, buckets: Box::new([0; SLOTS]), cur: 0, edge: BASE_NS }
    }

    /// `bytes` completed `at_ns` after the worker's start (no earlier than the op before).
    /// Interval k covers (k*I, (k+1)*I].
    #[inline]
    pub fn add(&mut self, at_ns: u64, bytes: u64) {
        if at_ns > self.edge {
            self.seek(at_ns);
        }
        self.buckets[self.cur] += bytes;
    }

    /// Moves to the interval holding `at_ns`, merging intervals when it lies beyond the last.
    #[cold]
    fn seek(&mut self, at_ns: u64) {
        let mut i = at_ns.saturating_sub(1) / self.interval_ns;
        while i >= SLOTS as u64 {
            self.coarsen();
            i = at_ns.saturating_sub(1) / self.interval_ns;
        }
        self.cur = i as usize;
        self.edge = (i + 1) * self.interval_ns;
    }

    /// Merges adjacent pairs of intervals: the interval doubles.
    fn coarsen(&mut self) {
        for j in 0..SLOTS / 2 {
            self.buckets[j] = self.buckets[2 * j] + self.buckets[2 * j + 1];
        }
        self.buckets[SLOTS / 2..].fill(0);
        self.interval_ns *= 2;
    }

    /// The series of a worker whose time ended `end_ns` after its start.
    pub fn finish(mut self, end_ns: u64) -> RateSeries {
        while end_ns.div_ceil(self.interval_ns) > SLOTS as u64 {
            self.coarsen();
        }
        let n = (end_ns.div_ceil(self.interval_ns) as usize).max(1);
        RateSeries { of: self.of, interval_ns: self.interval_ns, end_ns, bytes: self.buckets[..n].to_vec() }
    }
}

/// Bytes (or, of a metadata phase, ops: `of`) completed in each interval of `interval_ns` from
/// the start; the last interval ends at `end_ns` (it may be shorter than the others). In JSON
/// the counts are named by what they count (`bytes` or `ops`); the compact encodings (MPI
/// replies, the spool) carry `of` as a field (`super::series_serde`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateSeries {
    pub of: RateUnit,
    pub interval_ns: u64,
    pub end_ns: u64,
    pub bytes: Vec<u64>,
}

/// The steady window of a series and the rate inside it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Steady {
    /// The window, in ns from the phase's start.
    pub from_ns: u64,
    pub to_ns: u64,
    /// Bytes completed inside it.
    pub bytes: u64,
    /// The steady rate, in B/s: the slope of the least-squares line through the cumulative
    /// bytes at every interval boundary of the window. Data that arrives in lumps (a throttle
    /// releasing a slice's worth at a time, read-ahead windows) moves the bytes between the
    /// window's two ends by up to a lump; the slope through all its boundaries barely moves.
    pub bytes_per_s: f64,
}

impl RateSeries {
    /// A series of bytes.
    pub fn of_bytes(interval_ns: u64, end_ns: u64, bytes: Vec<u64>) -> RateSeries {
        RateSeries { of: RateUnit::Bytes, interval_ns, end_ns, bytes }
    }

    /// Interval k's start and end, in ns from the start.
    pub fn span(&self, k: usize) -> (u64, u64) {
        let from = k as u64 * self.interval_ns;
        (from, (from + self.interval_ns).min(self.end_ns))
    }

    /// Interval k's rate in B/s (0 for an empty interval).
    pub fn rate(&self, k: usize) -> f64 {
        let (a, b) = self.span(k);
        if b > a { self.bytes[k] as f64 * 1e9 / (b - a) as f64 } else { 0.0 }
    }

    /// The series of a repetition: the workers' series summed, each shifted by its start
    /// (`offset_ns` after the earliest worker's) and re-binned to the coarsest interval among
    /// them, doubled while the sum would have more than `SLOTS` intervals (intervals are
    /// `BASE_NS` times a power of two, so re-binning is exact). The definition the streaming
    /// [`SeriesSum`] is checked against; iolab itself sums with `SeriesSum` as workers come.
    #[cfg(test)]
    pub fn sum(parts: &[(u64, &RateSeries)]) -> Option<RateSeries> {
        let mut sum = SeriesSum::default();
        for (offset, s) in parts {
            sum.add(*offset, Some(s));
        }
        sum.finish()
    }

    /// The steady window, by one rule: with at least [`MIN_INTERVALS`] intervals, drop
    /// `ceil(TRIM * n)` intervals at each end (at least one: the first holds the start-up
    /// transient, the last is partial or holds the final commit); the window is what remains.
    /// Its rate is the least-squares slope of the cumulative bytes against time at the
    /// window's interval boundaries. None for a shorter series, and when ops completed in
    /// fewer than [`MIN_STEPS`] of the window's intervals.
    pub fn steady(&self) -> Option<Steady> {
        let n = self.bytes.len();
        if n < MIN_INTERVALS {
            return None;
        }
        let drop = ((TRIM * n as f64).ceil() as usize).max(1);
        let (a, b) = (drop, n - drop);
        if self.bytes[a..b].iter().filter(|&&x| x > 0).count() < MIN_STEPS {
            return None;
        }
        let (from_ns, to_ns) = (self.span(a).0, self.span(b - 1).1);
        let bytes: u64 = self.bytes[a..b].iter().sum();
        // Boundaries a..=b: time k * interval, bytes completed before it.
        let mut cum: u64 = self.bytes[..a].iter().sum();
        let mut pts = Vec::with_capacity(b - a + 1);
        for k in a..=b {
            pts.push((self.span(k).0 as f64 / 1e9, cum as f64));
            if k < b {
                cum += self.bytes[k];
            }
        }
        let m = pts.len() as f64;
        let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / m, pts.iter().map(|p| p.1).sum::<f64>() / m);
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        Some(Steady { from_ns, to_ns, bytes, bytes_per_s: sxy / sxx })
    }
}

/// A gap of no progress is a stall from this long (five times the longest pause the kernel's
/// write throttling imposes, 200 ms)...
pub const STALL_MIN_NS: u64 = 1_000_000_000;
/// ...when it is also this many times the worker's typical op: its median op time, or its
/// mean commit when it commits (a commit moves no counted bytes, so it is a gap of its own).
pub const STALL_FACTOR: u64 = 10;

/// One gap of no progress: how long, where (ns after the worker's start), whose, and that
/// worker's typical op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub gap_ns: u64,
    pub at_ns: u64,
    pub worker: u32,
    pub typical_ns: u64,
}

impl RateSeries {
    /// Every stall in the series of worker `worker` (its median op `median_ns`, its commits
    /// `sync_calls` taking `sync_ns`): each run of empty intervals between two that have bytes,
    /// at least [`STALL_MIN_NS`] long and [`STALL_FACTOR`] times its typical op.
    pub fn stalls(&self, worker: u32, median_ns: u64, sync_ns: u64, sync_calls: u64) -> Vec<Stall> {
        let commit = sync_ns.checked_div(sync_calls).unwrap_or(0);
        let typical_ns = median_ns.max(commit);
        let limit = STALL_MIN_NS.max(STALL_FACTOR.saturating_mul(typical_ns));
        let mut out = vec![];
        let mut last_busy: Option<usize> = None;
        for (k, &b) in self.bytes.iter().enumerate() {
            if b == 0 {
                continue;
            }
            if let Some(j) = last_busy
                && k > j + 1
            {
                let gap_ns = (k - j - 1) as u64 * self.interval_ns;
                if gap_ns >= limit {
                    let at_ns = (j + 1) as u64 * self.interval_ns;
                    out.push(Stall { gap_ns, at_ns, worker, typical_ns });
                }
            }
            last_busy = Some(k);
        }
        out
    }
}

/// Workers' series summed as they come, each shifted by its start after the phase's earliest
/// worker's: what `RateSeries::sum` (tests) gives of them all, whatever their order and however
/// they were split into sums that were merged (MPI ranks sum their own workers' series and
/// their subtree's up the tree, so rank 0 holds one series per phase, not one per worker).
/// Bins are `interval_ns` wide from the earliest start; widening to the next power of two
/// merges pairs of bins, which puts every byte where binning at the wider interval would.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesSum {
    /// What the series count (that of the first added).
    of: RateUnit,
    interval_ns: u64,
    end_ns: u64,
    bytes: Vec<u64>,
    /// Series added (workers, or the workers of merged sums).
    parts: u64,
    /// A worker had no series (`latency = off`, a strategy's roles): the sum has none.
    missing: bool,
}

impl SeriesSum {
    /// A worker's series (None: it kept none), `offset_ns` after the earliest worker's start.
    pub fn add(&mut self, offset_ns: u64, s: Option<&RateSeries>) {
        self.parts += 1;
        let Some(s) = s else {
            self.missing = true;
            return;
        };
        if self.bytes.is_empty() {
            self.of = s.of;
        }
        self.fit(s.interval_ns, offset_ns + s.end_ns);
        for (k, &b) in s.bytes.iter().enumerate() {
            // The interval's end, shifted, decides where its bytes land.
            let at = offset_ns + s.span(k).1;
            let n = self.bytes.len();
            self.bytes[((at.saturating_sub(1) / self.interval_ns) as usize).min(n - 1)] += b;
        }
    }

    /// Another sum of workers on the same earliest start.
    pub fn merge(&mut self, other: &SeriesSum) {
        self.parts += other.parts;
        self.missing |= other.missing;
        if other.bytes.is_empty() {
            return;
        }
        if self.bytes.is_empty() {
            self.of = other.of;
        }
        self.fit(other.interval_ns, other.end_ns);
        let ratio = (self.interval_ns / other.interval_ns) as usize;
        for (k, &b) in other.bytes.iter().enumerate() {
            self.bytes[k / ratio] += b;
        }
    }

    /// Bins at least `interval_ns` wide reaching `end_ns`, no more than `SLOTS` of them.
    fn fit(&mut self, interval_ns: u64, end_ns: u64) {
        if self.bytes.is_empty() {
            self.interval_ns = interval_ns;
        }
        self.end_ns = self.end_ns.max(end_ns);
        while self.interval_ns < interval_ns || self.bins() > SLOTS as u64 {
            self.widen();
        }
        let n = self.bins() as usize;
        if self.bytes.len() < n {
            self.bytes.resize(n, 0);
        }
    }

    /// The bins that reach `end_ns` at the sum's interval (at least one).
    fn bins(&self) -> u64 {
        self.end_ns.div_ceil(self.interval_ns.max(1)).max(1)
    }

    /// Twice as wide: bins 2k and 2k + 1 become bin k.
    fn widen(&mut self) {
        self.interval_ns *= 2;
        let merged: Vec<u64> = self.bytes.chunks(2).map(|c| c.iter().sum()).collect();
        self.bytes = merged;
    }

    /// Whether it is a sum as [`SeriesSum::add`] and [`SeriesSum::merge`] make them (bytes
    /// read from elsewhere: a bundle up the tree), else what is wrong with it.
    pub fn check(&self) -> Result<(), String> {
        if self.bytes.is_empty() {
            return Ok(());
        }
        let n = self.bins();
        let power = self.interval_ns % BASE_NS == 0 && (self.interval_ns / BASE_NS).is_power_of_two();
        match power && self.bytes.len() as u64 == n && n <= SLOTS as u64 {
            true => Ok(()),
            false => Err(format!(
                "a rate series of {} intervals of {} ns to {} ns is none iolab sums",
                self.bytes.len(),
                self.interval_ns,
                self.end_ns
            )),
        }
    }

    /// The summed series; None when a worker had none, or none was added.
    pub fn finish(self) -> Option<RateSeries> {
        (!self.missing && !self.bytes.is_empty()).then_some(RateSeries {
            of: self.of,
            interval_ns: self.interval_ns,
            end_ns: self.end_ns,
            bytes: self.bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_keeps_every_byte_and_covers_the_time() {
        let mut r = RateRecorder::default();
        // 2000 ops of 1 MiB, one every 7 ms: 14 s, beyond 512 x 10 ms, so intervals merge.
        for k in 1..=2000u64 {
            r.add(k * 7_000_000, 1 << 20);
        }
        let s = r.finish(14_000_000_000);
        assert_eq!(s.bytes.iter().sum::<u64>(), 2000 << 20);
        assert_eq!(s.interval_ns, 40_000_000);
        assert_eq!(s.bytes.len(), 350);
        assert_eq!(s.span(349), (13_960_000_000, 14_000_000_000));
        // 40 ms hold 5 or 6 ops of 7 ms.
        assert!(s.bytes[1..349].iter().all(|&b| b == 5 << 20 || b == 6 << 20), "{:?}", &s.bytes[..8]);
    }

    #[test]
    fn an_op_ending_on_a_boundary_counts_in_the_interval_it_ends() {
        let mut r = RateRecorder::default();
        r.add(BASE_NS, 100);
        r.add(BASE_NS + 1, 7);
        let s = r.finish(BASE_NS + 1);
        assert_eq!(s.bytes, vec![100, 7]);
        assert_eq!(s.span(1), (BASE_NS, BASE_NS + 1));
    }

    #[test]
    fn steady_window_drops_a_burst_and_the_commit() {
        // 20 intervals of 10 ms: a burst of 9 units, 18 of 1 unit, a commit moving nothing.
        let mut bytes = vec![9u64 << 20];
        bytes.extend(std::iter::repeat_n(1u64 << 20, 18));
        bytes.push(0);
        let s = RateSeries::of_bytes(BASE_NS, 20 * BASE_NS, bytes);
        let st = s.steady().unwrap();
        // ceil(10% of 20) = 2 intervals dropped at each end: intervals 2..18.
        assert_eq!((st.from_ns, st.to_ns, st.bytes), (2 * BASE_NS, 18 * BASE_NS, 16 << 20));
        let flat = (1u64 << 20) as f64 * 100.0;
        assert!((st.bytes_per_s / flat - 1.0).abs() < 1e-12, "{}", st.bytes_per_s);
        // The whole phase: 27 units in 200 ms, 35% above the steady rate.
        let whole = (27u64 << 20) as f64 / 0.2;
        assert!((whole / st.bytes_per_s - 1.35).abs() < 1e-9);
        // Lumps: 3 units every third interval. The two ends of the window may cut a lump; the
        // slope through every boundary stays within 2% of the long-run 1 unit per interval.
        let lumps: Vec<u64> = (0..40u64).map(|k| if k % 3 == 2 { 3 << 20 } else { 0 }).collect();
        let s = RateSeries::of_bytes(BASE_NS, 40 * BASE_NS, lumps);
        let st = s.steady().unwrap();
        assert_eq!((st.from_ns, st.to_ns), (4 * BASE_NS, 36 * BASE_NS));
        let ends = st.bytes as f64 / 0.32;
        assert!((st.bytes_per_s / flat - 1.0).abs() < 0.02, "{}", st.bytes_per_s / flat);
        assert!((ends / flat - 1.0).abs() > 0.02, "the ends alone: {}", ends / flat);
        let short = RateSeries::of_bytes(BASE_NS, 9 * BASE_NS, vec![1; 9]);
        assert_eq!(short.steady(), None);
    }

    /// A phase of one op (its bytes in the last interval), or of ops that complete in fewer
    /// than three intervals of the window, has no steady rate (it was 0 B/s, ratio 0.000).
    #[test]
    fn a_window_with_too_few_completions_has_no_steady_rate() {
        let mut one = vec![0u64; 30];
        one[29] = 1 << 20;
        assert_eq!(RateSeries::of_bytes(BASE_NS, 30 * BASE_NS, one).steady(), None);
        let mut two = vec![0u64; 30];
        (two[10], two[20]) = (1 << 20, 1 << 20);
        assert_eq!(RateSeries::of_bytes(BASE_NS, 30 * BASE_NS, two.clone()).steady(), None);
        two[15] = 1 << 20;
        let st = RateSeries::of_bytes(BASE_NS, 30 * BASE_NS, two).steady().unwrap();
        assert!(st.bytes_per_s > 0.0);
    }

    #[test]
    fn sum_rebins_and_shifts_workers() {
        let a = RateSeries::of_bytes(BASE_NS, 4 * BASE_NS, vec![1, 2, 3, 4]);
        let b = RateSeries::of_bytes(2 * BASE_NS, 3 * BASE_NS, vec![10, 20]);
        let s = RateSeries::sum(&[(0, &a), (BASE_NS, &b)]).unwrap();
        assert_eq!(s.interval_ns, 2 * BASE_NS);
        assert_eq!(s.end_ns, 4 * BASE_NS);
        // a: 1+2 | 3+4; b's first interval ends at 10+20 ms (second bin), its second at 40 ms.
        assert_eq!(s.bytes, vec![3, 7 + 10 + 20]);
        assert_eq!(s.bytes.iter().sum::<u64>(), 40);
    }
    /// The sum of all the parts at once, binned directly at the final interval.
    fn sum_at_once(parts: &[(u64, &RateSeries)]) -> Option<RateSeries> {
        let mut interval_ns = parts.iter().map(|(_, s)| s.interval_ns).max()?;
        let end_ns = parts.iter().map(|(o, s)| o + s.end_ns).max()?;
        // Workers far apart (free starts) keep the sum within a worker's number of intervals.
        while end_ns.div_ceil(interval_ns) > SLOTS as u64 {
            interval_ns *= 2;
        }
        let n = (end_ns.div_ceil(interval_ns) as usize).max(1);
        let mut bytes = vec![0u64; n];
        for (offset, s) in parts {
            for (k, &b) in s.bytes.iter().enumerate() {
                // The interval's end, shifted, decides where its bytes land.
                let at = offset + s.span(k).1;
                bytes[((at.saturating_sub(1) / interval_ns) as usize).min(n - 1)] += b;
            }
        }
        Some(RateSeries::of_bytes(interval_ns, end_ns, bytes))
    }

    #[test]
    fn a_sum_made_as_parts_come_and_merged_is_the_sum_made_at_once() {
        use proptest::prelude::*;
        let part = (0u64..3_000_000_000, 0u32..4, proptest::collection::vec(0u64..1000, 0..600)).prop_map(
            |(offset, doublings, bytes)| {
                let interval_ns = BASE_NS << doublings;
                let end_ns = (bytes.len() as u64 * interval_ns).saturating_sub(interval_ns / 3);
                (offset, RateSeries::of_bytes(interval_ns, end_ns, bytes))
            },
        );
        proptest!(|(parts in proptest::collection::vec(part, 1..12), split in 0usize..12)| {
            let refs: Vec<(u64, &RateSeries)> = parts.iter().map(|(o, s)| (*o, s)).collect();
            let want = sum_at_once(&refs);
            prop_assert_eq!(RateSeries::sum(&refs), want.clone());
            // Split in two sums made apart (two ranks' subtrees), merged either way round.
            let split = split.min(parts.len());
            let (mut a, mut b) = (SeriesSum::default(), SeriesSum::default());
            refs[..split].iter().for_each(|(o, s)| a.add(*o, Some(s)));
            refs[split..].iter().rev().for_each(|(o, s)| b.add(*o, Some(s)));
            let (mut ab, mut ba) = (a.clone(), b.clone());
            ab.merge(&b);
            ba.merge(&a);
            prop_assert!(ab.check().is_ok() && ba.check().is_ok());
            prop_assert_eq!(ab.finish(), want.clone());
            prop_assert_eq!(ba.finish(), want);
        });
    }

    #[test]
    fn a_worker_without_a_series_leaves_the_sum_without_one() {
        let s = RateSeries::of_bytes(BASE_NS, BASE_NS, vec![5]);
        let mut a = SeriesSum::default();
        a.add(0, Some(&s));
        let mut b = SeriesSum::default();
        b.add(0, None);
        a.merge(&b);
        assert_eq!(a.finish(), None);
        assert_eq!(SeriesSum::default().finish(), None, "no worker");
        // Read from elsewhere: a sum no adding makes is told, not divided by.
        for (interval_ns, end_ns, n) in [(0, 10, 1), (3 * BASE_NS, BASE_NS, 1), (BASE_NS, BASE_NS, 2)] {
            let bad = SeriesSum {
                of: RateUnit::Bytes,
                interval_ns,
                end_ns,
                bytes: vec![1; n],
                parts: 1,
                missing: false,
            };
            assert!(bad.check().unwrap_err().contains("is none iolab sums"));
        }
    }
}
