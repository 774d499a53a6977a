//! A repetition's rate over time (`rate` in the JSON): its workers' per-interval series summed
//! on one time axis, and the steady window with the rate inside it, beside the whole-phase
//! rate (docs/reports.md, "Rate over time").

use serde::{Deserialize, Serialize};

use crate::latency::series::{RateSeries, SeriesSum, Steady};
use crate::units::RateUnit;
use crate::worker::WorkerSample;

/// The most of a worker's time its commits may take for the phase to have a steady rate: 10%.
/// The series counts bytes as their calls return; bytes a commit carries to the device move
/// inside that commit, which the series cannot split, so a phase whose commits take longer
/// (a write with `sync = end` that the page cache absorbed) has no steady rate: its
/// whole-phase rate, which includes the commit, is its figure.
pub const MAX_COMMIT_SHARE: f64 = 0.10;

/// The rate over time of one repetition. In JSON the steady window's count and rate are
/// named by what the series counts: `bytes` and `bytes_per_s`, or (a metadata phase's)
/// `ops` and `ops_per_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "RateJson", try_from = "RateJson")]
pub struct PhaseRate {
    /// Bytes (ops, of a metadata phase) completed per interval by all workers, from the
    /// earliest worker's start.
    pub series: RateSeries,
    /// The steady window and its rate; None when the series is too short or commits took
    /// more than [`MAX_COMMIT_SHARE`] of a worker's time.
    pub steady: Option<Steady>,
}

/// [`PhaseRate`] as JSON.
#[derive(Serialize, Deserialize)]
struct RateJson {
    series: RateSeries,
    #[serde(default)]
    steady: Option<SteadyJson>,
}

/// [`Steady`] as JSON: `bytes` and `bytes_per_s`, or `ops` and `ops_per_s`.
#[derive(Serialize, Deserialize)]
struct SteadyJson {
    from_ns: u64,
    to_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ops_per_s: Option<f64>,
}

impl From<PhaseRate> for RateJson {
    fn from(r: PhaseRate) -> RateJson {
        let ops = r.series.of == RateUnit::Ops;
        let steady = r.steady.map(|s| SteadyJson {
            from_ns: s.from_ns,
            to_ns: s.to_ns,
            bytes: (!ops).then_some(s.bytes),
            bytes_per_s: (!ops).then_some(s.bytes_per_s),
            ops: ops.then_some(s.bytes),
            ops_per_s: ops.then_some(s.bytes_per_s),
        });
        RateJson { series: r.series, steady }
    }
}

impl TryFrom<RateJson> for PhaseRate {
    type Error = String;
    fn try_from(j: RateJson) -> Result<PhaseRate, String> {
        let ops = j.series.of == RateUnit::Ops;
        let steady = match j.steady {
            None => None,
            Some(s) => {
                let (n, rate) = if ops { (s.ops, s.ops_per_s) } else { (s.bytes, s.bytes_per_s) };
                let what = j.series.of.counted();
                let (Some(n), Some(rate)) = (n, rate) else {
                    return Err(format!(
                        "a steady window of a series of {what} has no `{what}` and `{what}_per_s`"
                    ));
                };
                Some(Steady { from_ns: s.from_ns, to_ns: s.to_ns, bytes: n, bytes_per_s: rate })
            }
        };
        Ok(PhaseRate { series: j.series, steady })
    }
}

impl PhaseRate {
    /// From the workers' samples: None when any worker kept no series (`latency = off`).
    /// Workers are placed by their start on the phase's common clock (one host's, or rank 0's
    /// for MPI ranks elsewhere).
    pub fn of(samples: &[WorkerSample]) -> Option<PhaseRate> {
        let first = samples.iter().map(|s| s.start_ns).min()?;
        // Summed as they come, as up the tree: nothing kept per worker.
        let mut sum = SeriesSum::default();
        for s in samples {
            sum.add(s.start_ns - first, Some(s.series.as_deref()?));
        }
        Some(PhaseRate::of_sum(sum.finish()?, samples))
    }

    /// From the workers' series summed already (MPI ranks: up the tree, as their replies
    /// came) and their samples.
    pub fn of_sum(series: RateSeries, samples: &[WorkerSample]) -> PhaseRate {
        let committed = samples.iter().any(|s| s.sync_ns as f64 > MAX_COMMIT_SHARE * s.time_ns() as f64);
        let steady = if committed { None } else { series.steady() };
        PhaseRate { series, steady }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::series::BASE_NS;
    use crate::units::RateUnit;

    /// One worker from `start_ns`, `sync_ns` of it committing, with bytes per interval.
    fn sample(start_ns: u64, sync_ns: u64, bytes: Vec<u64>) -> WorkerSample {
        WorkerSample { sync_ns, ..WorkerSample::with_series(0, start_ns, bytes) }
    }

    #[test]
    fn workers_add_up_on_one_clock_and_commits_withhold_the_steady_rate() {
        // The second worker starts one interval later.
        let ws = [sample(1_000, 0, vec![1; 20]), sample(1_000 + BASE_NS, 0, vec![2; 20])];
        let r = PhaseRate::of(&ws).unwrap();
        assert_eq!(r.series.end_ns, 21 * BASE_NS);
        assert_eq!(r.series.bytes.iter().sum::<u64>(), 60);
        assert_eq!((r.series.bytes[0], r.series.bytes[1], r.series.bytes[20]), (1, 3, 2));
        assert!(r.steady.is_some());
        // Free starts: the second worker began after the first ended; the series holds both,
        // one after the other, with nothing in between.
        let apart = [sample(1_000, 0, vec![1; 20]), sample(1_000 + 30 * BASE_NS, 0, vec![2; 20])];
        let r = PhaseRate::of(&apart).unwrap();
        assert_eq!(r.series.end_ns, 50 * BASE_NS);
        assert_eq!(r.series.bytes.iter().sum::<u64>(), 60);
        assert_eq!((r.series.bytes[19], r.series.bytes[25], r.series.bytes[30]), (1, 0, 2));
        // A commit over 10% of a worker's time: the series cannot say when its bytes moved.
        let committed = [sample(0, 3 * BASE_NS, vec![1; 20])];
        assert_eq!(PhaseRate::of(&committed).unwrap().steady, None);
        let mut off = sample(0, 0, vec![1; 20]);
        off.series = None;
        assert_eq!(PhaseRate::of(&[off]), None, "latency = off keeps no series");
    }

    /// A metadata phase's series counts ops, and says so: in JSON its counts are `ops` and its
    /// steady window's `ops` and `ops_per_s` (never `bytes`); the compact encodings (MPI
    /// replies, the spool) carry what it counts too; each reads back as written.
    #[test]
    fn a_series_of_ops_is_named_so_in_every_encoding() {
        let mut w = sample(0, 0, vec![7; 20]);
        w.series.as_mut().unwrap().of = RateUnit::Ops;
        let r = PhaseRate::of(&[w]).unwrap();
        assert_eq!(r.series.of, RateUnit::Ops, "the sum counts what its parts count");
        let json = crate::json::to_string(&r).unwrap();
        assert!(json.contains("\"ops\":[7,7,") && !json.contains("bytes"), "{json}");
        assert!(json.contains("\"ops_per_s\":"), "{json}");
        assert_eq!(crate::json::from_str::<PhaseRate>(&json).unwrap(), r);
        let bytes = sample(0, 0, vec![7; 20]);
        let json = crate::json::to_string(&PhaseRate::of(&[bytes]).unwrap()).unwrap();
        assert!(
            json.contains("\"bytes\":[7,7,") && json.contains("\"bytes_per_s\":") && !json.contains("ops")
        );
        let compact = postcard::to_allocvec(&r.series).unwrap();
        assert_eq!(postcard::from_bytes::<RateSeries>(&compact).unwrap(), r.series);
        let mut cbor = vec![];
        ciborium::into_writer(&r.series, &mut cbor).unwrap();
        assert_eq!(ciborium::from_reader::<RateSeries, _>(&cbor[..]).unwrap(), r.series);
    }
}
