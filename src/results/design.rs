//! How an experiment was built, stored with its results (`design` in the JSON): its sweep
//! axes and zipped groups, the statistic that heads each point and the rate it summarises,
//! and the preset it reproduces.

use serde::{Deserialize, Serialize};

use super::{PhaseResult, Repetition, Status};
use crate::stats::Summary;
use crate::units::RateUnit;

/// The statistic a point's result is summarised by (`headline` in a preset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Headline {
    #[default]
    Mean,
    Median,
    /// Russell 1998: the mean over samples within mean +/- 2 sd.
    TwoSigmaMean,
    /// Benson, Long and Pacheco 2003: the mean without the lowest and highest 10%.
    #[serde(rename = "trimmed_mean_10")]
    TrimmedMean10,
}

impl Headline {
    pub const NAMES: &'static [&'static str] = &["mean", "median", "two_sigma_mean", "trimmed_mean_10"];

    pub fn parse(s: &str) -> Option<Headline> {
        Some(match s {
            "mean" => Headline::Mean,
            "median" => Headline::Median,
            "two_sigma_mean" => Headline::TwoSigmaMean,
            "trimmed_mean_10" => Headline::TrimmedMean10,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Headline::NAMES[self as usize]
    }

    /// The column it heads in the table.
    pub fn column(self) -> &'static str {
        ["mean", "median", "2σ-mean", "trim-mean"][self as usize]
    }

    /// What it is, for the footnote under a table.
    pub fn about(self) -> &'static str {
        [
            "the mean",
            "the median",
            "the 2-sigma mean: mean over the runs within mean ± 2 sd (Russell 1998)",
            "the 10% trimmed mean (Benson, Long and Pacheco 2003)",
        ][self as usize]
    }

    pub fn value(self, s: &Summary) -> f64 {
        match self {
            Headline::Mean => s.mean,
            Headline::Median => s.median,
            Headline::TwoSigmaMean => s.two_sigma_mean,
            Headline::TrimmedMean10 => s.trimmed_mean_10,
        }
    }
}

/// The per-run rate a point's statistic summarises (`figure` in a preset): `agg` for a plain
/// run, the study's own figure for a preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// IOR's aggregate: all bytes over the time from the first open to the last close,
    /// commits included (`agg_bytes_per_s`).
    #[default]
    Agg,
    /// max_SAR: the sum of the workers' rates (Russell's total rate; French et al.).
    MaxSar,
    /// min_SAR: all bytes over the slowest worker's time (French et al.).
    MinSar,
    /// The average individual rate: the mean of the workers' rates (French et al.).
    AvgIndividual,
}

impl Rate {
    pub const NAMES: &'static [&'static str] = &["agg", "max_sar", "min_sar", "avg_individual"];

    pub fn parse(s: &str) -> Option<Rate> {
        Rate::NAMES.iter().position(|n| *n == s).map(|i| Rate::ALL[i])
    }

    const ALL: [Rate; 4] = [Rate::Agg, Rate::MaxSar, Rate::MinSar, Rate::AvgIndividual];

    pub fn name(self) -> &'static str {
        Rate::NAMES[self as usize]
    }

    /// Its column in a table.
    pub fn column(self) -> &'static str {
        ["agg", "max_SAR", "min_SAR", "indiv"][self as usize]
    }

    /// What it is, in words, of data phases' bytes.
    pub fn about(self) -> &'static str {
        self.about_in(RateUnit::Bytes)
    }

    /// What it is, in words, of what `unit` counts (bytes, or the ops of metadata phases).
    pub fn about_in(self, unit: RateUnit) -> &'static str {
        let i = self as usize;
        match unit {
            RateUnit::Bytes => [
                "agg = all bytes / (first open to last close), commits included (IOR's bandwidth)",
                "max_SAR = sum of the workers' rates (Russell's total rate)",
                "min_SAR = all bytes / the slowest worker's time",
                "indiv = the mean of the workers' rates",
            ][i],
            RateUnit::Ops => [
                "agg = all ops / (first open to last close), commits included",
                "max_SAR = sum of the workers' op rates",
                "min_SAR = all ops / the slowest worker's time, the rate mdtest reports",
                "indiv = the mean of the workers' op rates",
            ][i],
        }
    }

    /// Its JSON field in a repetition.
    pub fn field(self) -> &'static str {
        self.field_in(RateUnit::Bytes)
    }

    /// Its JSON field in a repetition, of what `unit` counts.
    pub fn field_in(self, unit: RateUnit) -> &'static str {
        let i = self as usize;
        match unit {
            RateUnit::Bytes => [
                "agg_bytes_per_s",
                "max_sar_bytes_per_s",
                "min_sar_bytes_per_s",
                "avg_individual_bytes_per_s",
            ][i],
            RateUnit::Ops => {
                ["agg_ops_per_s", "max_sar_ops_per_s", "min_sar_ops_per_s", "avg_individual_ops_per_s"][i]
            }
        }
    }

    /// Its value in a run (bytes per second); None where not measured (agg in results stored
    /// before iolab measured it).
    pub fn of(self, r: &Repetition) -> Option<f64> {
        match self {
            Rate::Agg => r.agg_bytes_per_s,
            Rate::MaxSar => Some(r.max_sar_bytes_per_s),
            Rate::MinSar => Some(r.min_sar_bytes_per_s),
            Rate::AvgIndividual => Some(r.avg_individual_bytes_per_s),
        }
    }

    /// Its value in a run of a metadata phase (`md`), of ops: agg all ops over the span
    /// (`agg_ops_per_s`), min_SAR all ops over the slowest worker's time (the rate mdtest
    /// reports), max_SAR the sum of the workers' op rates, indiv none; of any other phase as
    /// [`Rate::of`].
    pub fn of_in(self, md: bool, r: &Repetition) -> Option<f64> {
        if !md {
            return self.of(r);
        }
        match self {
            Rate::Agg => r.agg_ops_per_s,
            Rate::MinSar => Some(r.min_sar_ops_per_s),
            Rate::MaxSar => Some(r.max_sar_ops_per_s),
            Rate::AvgIndividual => None,
        }
    }

    /// Its values over a phase's complete runs that have it.
    pub fn values(self, ph: &PhaseResult) -> Vec<f64> {
        let md = ph.op.is_metadata();
        ph.repetitions
            .iter()
            .filter(|r| r.status == Status::Complete)
            .filter_map(|r| self.of_in(md, r))
            .collect()
    }

    /// Its summary over a phase's complete runs; None without any.
    pub fn summary(self, ph: &PhaseResult) -> Option<Summary> {
        let xs = self.values(ph);
        (!xs.is_empty()).then(|| Summary::of(self.field_in(ph.unit()), &xs))
    }

    /// The rate of designs stored before iolab had a choice: max_SAR.
    fn stored_default() -> Rate {
        Rate::MaxSar
    }
}

/// The preset an experiment reproduces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresetRef {
    pub id: String,
    pub study: String,
    pub title: String,
    /// `quick`, `default` or `paper`; empty when run from an edited file.
    pub scale: String,
}

/// How an experiment was built; stored with it (`design` in the JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// Sweep axes in the order given (the first turns slowest).
    pub axes: Vec<Axis>,
    pub zip: Vec<Vec<String>>,
    pub headline: Headline,
    /// The rate the headline statistic summarises (max_SAR in designs stored before iolab
    /// measured agg).
    #[serde(default = "Rate::stored_default")]
    pub figure: Rate,
    pub preset: Option<PresetRef>,
}

/// One axis: a key and its values, in order, with the text they were written as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    pub key: String,
    /// What the user wrote (`1..8`, `2KiB,16KiB`), for display and reprinting.
    pub text: String,
    pub values: Vec<String>,
}
