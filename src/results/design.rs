//! How an experiment was built, stored with its results (`design` in the JSON): its sweep
//! axes and zipped groups, the statistic that heads each point, and the preset it reproduces.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

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
