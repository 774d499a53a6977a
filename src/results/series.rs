//! A repetition's rate over time (`rate` in the JSON): its workers' per-interval series summed
//! on one time axis, and the steady window with the rate inside it, beside the whole-phase
//! rate (docs/reports.md, "Rate over time").

use serde::{Deserialize, Serialize};

use crate::latency::series::{RateSeries, Steady};
use crate::worker::WorkerSample;

/// The most of a worker's time its commits may take for the phase to have a steady rate: 10%.
/// The series counts bytes as their calls return; bytes a commit carries to the device move
/// inside that commit, which the series cannot split, so a phase whose commits take longer
/// (a write with `sync = end` that the page cache absorbed) has no steady rate: its
/// whole-phase rate, which includes the commit, is its figure.
pub const MAX_COMMIT_SHARE: f64 = 0.10;

/// The rate over time of one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRate {
    /// Bytes completed per interval by all workers, from the earliest worker's start.
    pub series: RateSeries,
    /// The steady window and its rate; None when the series is too short or commits took
    /// more than [`MAX_COMMIT_SHARE`] of a worker's time.
    #[serde(default)]
    pub steady: Option<Steady>,
}

impl PhaseRate {
    /// From the workers' samples: None when any worker kept no series (`latency = off`).
    pub fn of(samples: &[WorkerSample]) -> Option<PhaseRate> {
        let first = samples.iter().map(|s| s.start_ns).min()?;
        let parts: Option<Vec<(u64, &RateSeries)>> =
            samples.iter().map(|s| s.series.as_ref().map(|r| (s.start_ns - first, r))).collect();
        let series = RateSeries::sum(&parts?)?;
        let committed = samples.iter().any(|s| s.sync_ns as f64 > MAX_COMMIT_SHARE * s.time_ns() as f64);
        let steady = if committed { None } else { series.steady() };
        Some(PhaseRate { series, steady })
    }
}
