//! When a phase's workers ran, on one clock: IOR's aggregate rate (`agg_bytes_per_s`: all
//! bytes over the time from the first open to the last close, commits included), the workers'
//! overlap and its flag, each worker's start on that clock (docs/json.md); and stalls, gaps of
//! no progress in a worker's rate over time far beyond its typical op (a stopped process, a
//! descheduled VM, a device that froze).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::stats::span::{Moments, Span};
use crate::units::fmt_ns;
use crate::worker::WorkerSample;

pub use crate::latency::series::{STALL_FACTOR, STALL_MIN_NS};

/// Below this overlap a phase is flagged `workers did not overlap`: all its workers ran
/// together for less than half of it, so the sum of their rates (max_SAR) is no rate the
/// storage ever delivered at once.
pub const MIN_OVERLAP: f64 = 0.5;

/// A repetition's span, rate and overlap from its workers' samples (their clock readings made
/// comparable by the launcher: one host's monotonic clock, or rank 0's for MPI ranks).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseTiming {
    pub span_ns: Option<u64>,
    pub agg_bytes_per_s: Option<f64>,
    pub overlap: f64,
    /// The earliest worker's start.
    pub first_start_ns: u64,
}

impl PhaseTiming {
    pub fn of(samples: &[WorkerSample]) -> PhaseTiming {
        let mut span = Span::default();
        for s in samples {
            span.add(&Moments {
                bytes: s.bytes,
                ops: s.ops,
                start_ns: s.start_ns,
                end_ns: s.end_ns,
                open_ns: s.open_ns,
                close_ns: s.close_ns,
            });
        }
        let first = samples.iter().map(|s| s.start_ns).min().unwrap_or(0);
        PhaseTiming {
            span_ns: span.span_ns(),
            agg_bytes_per_s: span.agg_bytes_per_s(),
            overlap: span.overlap(),
            first_start_ns: first,
        }
    }

    /// A worker's start after the earliest worker's.
    pub fn start_offset(&self, s: &WorkerSample) -> StartOffset {
        StartOffset::at(s.start_ns - self.first_start_ns)
    }

    /// The flag of a phase whose workers did not run together, if they did not.
    pub fn flag(&self, samples: &[WorkerSample]) -> Option<String> {
        let movers = samples.iter().filter(|s| s.bytes > 0 || s.ops > 0).count();
        (self.overlap < MIN_OVERLAP).then(|| {
            format!(
                "workers did not overlap: all {movers} ran together for {:.0}% of the phase",
                self.overlap * 100.0
            )
        })
    }
}

pub use crate::latency::series::Stall;

/// A worker's start after its phase's earliest worker's (`start_offset_ns` of a worker's
/// result), or none (results stored before iolab recorded it): an `Option<u64>` in 8 bytes,
/// `u64::MAX` standing for none (no offset comes near 584 years), so that a result stays no
/// larger than the sample it is made from in place. In JSON a number, or `null` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartOffset(u64);

impl StartOffset {
    pub const NONE: StartOffset = StartOffset(u64::MAX);

    /// A start `ns` after the earliest.
    pub fn at(ns: u64) -> StartOffset {
        StartOffset(ns)
    }

    pub fn get(self) -> Option<u64> {
        (self != StartOffset::NONE).then_some(self.0)
    }
}

impl Default for StartOffset {
    fn default() -> StartOffset {
        StartOffset::NONE
    }
}

impl From<Option<u64>> for StartOffset {
    fn from(ns: Option<u64>) -> StartOffset {
        ns.map_or(StartOffset::NONE, StartOffset::at)
    }
}

impl Serialize for StartOffset {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de> Deserialize<'de> for StartOffset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StartOffset, D::Error> {
        Option::<u64>::deserialize(d).map(StartOffset::from)
    }
}

/// The flag of a phase in which some worker stalled: the longest stall, and how many there
/// were.
pub fn stall_flag(samples: &[WorkerSample]) -> Option<String> {
    let all: Vec<Stall> = samples.iter().flat_map(WorkerSample::stalls).collect();
    let worst = all.iter().max_by_key(|s| s.gap_ns)?;
    let more = if all.len() > 1 { format!("; {} stalls in all", all.len()) } else { String::new() };
    Some(format!(
        "stalled: no progress for {:.2} s from {:.2} s into the phase (worker {}, whose typical op takes {}){more}",
        worst.gap_ns as f64 / 1e9,
        worst.at_ns as f64 / 1e9,
        worst.worker,
        fmt_ns(worst.typical_ns)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker from `start_ns` whose ops all took `op_ns`, with bytes per 10 ms interval.
    fn sample(worker: u32, start_ns: u64, op_ns: u64, bytes: Vec<u64>) -> WorkerSample {
        let mut hist = crate::latency::new_hist();
        hist.record(op_ns).unwrap();
        WorkerSample {
            hist: crate::latency::SampleHist::Full(Box::new(hist)),
            ..WorkerSample::with_series(worker, start_ns, bytes)
        }
    }

    /// Ops of 1 ms, one per interval, with `gap` empty intervals after the 100th.
    fn with_gap(gap: usize) -> Vec<u64> {
        let mut b = vec![4096; 100];
        b.extend(vec![0; gap]);
        b.extend(vec![4096; 100]);
        b
    }

    #[test]
    fn a_stop_of_seconds_is_a_stall_and_a_short_pause_is_not() {
        // Stopped for 3 s (300 intervals) after 1 s.
        let s = sample(0, 0, 1_000_000, with_gap(300));
        // The median op as the histogram keeps it (3 significant digits).
        let typical_ns = s.hist.median();
        assert!(typical_ns.abs_diff(1_000_000) < 1_000);
        assert_eq!(
            s.stalls(),
            [Stall { gap_ns: 3_000_000_000, at_ns: 1_000_000_000, worker: 0, typical_ns }]
        );
        let flag = stall_flag(&[s]).unwrap();
        assert!(
            flag.starts_with("stalled: no progress for 3.00 s from 1.00 s into the phase (worker 0"),
            "{flag}"
        );
        // A 200 ms pause (the kernel's longest write throttle) is no stall, nor a gap after the
        // last op (the final commit) or before the first.
        assert!(stall_flag(&[sample(0, 0, 1_000_000, with_gap(20))]).is_none());
        let mut tail = vec![0; 50];
        tail.extend(vec![4096; 10]);
        tail.extend(vec![0; 500]);
        assert!(stall_flag(&[sample(0, 0, 1_000_000, tail)]).is_none());
        // Ops that each take 200 ms: a 1.5 s gap is under 10 of them.
        assert!(stall_flag(&[sample(0, 0, 200_000_000, with_gap(150))]).is_none());
        // Nor commits that each take 400 ms (sync every so often): 3 s is within 10 of them.
        let mut c = sample(0, 0, 1_000_000, with_gap(300));
        (c.sync_ns, c.sync_calls) = (2_000_000_000, 5);
        assert!(c.stalls().is_empty());
        // Without a series (latency = off) nothing can be said.
        let mut off = sample(0, 0, 1_000_000, with_gap(300));
        off.series = None;
        assert!(stall_flag(&[off]).is_none());
        // Two workers, one stalled twice: the longest is named, with the count.
        let mut twice = with_gap(150);
        twice.extend(vec![0; 120]);
        twice.push(1);
        let flag =
            stall_flag(&[sample(0, 0, 1_000_000, with_gap(0)), sample(1, 0, 1_000_000, twice)]).unwrap();
        assert!(
            flag.contains("no progress for 1.50 s")
                && flag.contains("(worker 1,")
                && flag.ends_with("; 2 stalls in all"),
            "{flag}"
        );
    }

    #[test]
    fn a_start_offset_reads_and_writes_as_an_optional_number() {
        for (o, text) in
            [(StartOffset::at(0), "0"), (StartOffset::at(7_000_000), "7000000"), (StartOffset::NONE, "null")]
        {
            assert_eq!(crate::json::to_string(&o).unwrap(), text);
            assert_eq!(crate::json::from_str::<StartOffset>(text).unwrap(), o);
        }
        assert_eq!((StartOffset::at(5).get(), StartOffset::NONE.get()), (Some(5), None));
        assert_eq!(StartOffset::default(), StartOffset::NONE, "absent in results stored before");
        assert_eq!(std::mem::size_of::<StartOffset>(), 8);
    }

    #[test]
    fn workers_one_after_another_are_flagged() {
        // Russell's R4 at quick scale: each reader took 3 ms of a 33 ms phase.
        let ws: Vec<WorkerSample> =
            (0..3).map(|i| sample(i, i as u64 * 10_000_000, 1_000, vec![4096])).collect();
        let t = PhaseTiming::of(&ws);
        assert_eq!(t.overlap, 0.0);
        let offsets: Vec<Option<u64>> = ws.iter().map(|s| t.start_offset(s).get()).collect();
        assert_eq!(offsets, [Some(0), Some(10_000_000), Some(20_000_000)]);
        assert_eq!(t.flag(&ws).unwrap(), "workers did not overlap: all 3 ran together for 0% of the phase");
        // Three 10 ms workers over a 30 ms span: 3 x 4096 B in 30 ms.
        assert_eq!(t.span_ns, Some(30_000_000));
        assert!((t.agg_bytes_per_s.unwrap() - 3.0 * 4096.0 / 0.03).abs() < 1e-6);
        // From one barrier: full overlap, no flag.
        let ws: Vec<WorkerSample> = (0..3).map(|i| sample(i, 5, 1_000, vec![4096])).collect();
        let t = PhaseTiming::of(&ws);
        assert_eq!((t.overlap, t.flag(&ws)), (1.0, None));
        // Metadata workers move no bytes (stat, unlink, empty files), yet they work: one after
        // another, they are flagged as well.
        let md: Vec<WorkerSample> = (0..2)
            .map(|i| WorkerSample { bytes: 0, ops: 500, ..sample(i, i as u64 * 10_000_000, 1_000, vec![1]) })
            .collect();
        let t = PhaseTiming::of(&md);
        assert_eq!(t.overlap, 0.0);
        assert_eq!(t.flag(&md).unwrap(), "workers did not overlap: all 2 ran together for 0% of the phase");
    }
}
