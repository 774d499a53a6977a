//! The studies' findings checked against an experiment's results. Each finding quotes its
//! study word for word (with section, figure or table), then compares one figure of two sides
//! (sweep points and phases) as a ratio, or one side's figure with a range, by the study's own
//! statistic over the repetitions (Russell's 2-sigma mean, Benson's 10% trimmed mean, the mean
//! otherwise); the verdict comes from 95% intervals, never from one run (docs/experiments.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Headline, PointResult};

mod pick;
mod rule;
#[cfg(test)]
mod tests;

pub use pick::FIGURES;
pub use rule::{decide, num, side_value, summarize, unpaired_interval};

/// A finding as a preset declares it (`[[preset.finding]]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSpec {
    /// What the study found, in our words.
    pub claim: String,
    /// The study's own words for it: a sentence, or pieces of its text, each word for word as
    /// it is there (spaces and line breaks aside).
    pub quote: Quote,
    /// Where in the study the quote and the figures are: section, figure or table.
    pub source: String,
    /// The study's figures for it (`6.0 -> 5.2 MB/s`).
    pub paper: String,
    /// The figure compared, unless a side names its own (`max_sar` if not given).
    #[serde(default)]
    pub figure: Option<String>,
    /// The phase compared, unless a side names its own (the point's first phase if not given).
    #[serde(default)]
    pub phase: Option<String>,
    /// The statistic over a side's repetitions (`mean`, `median`, `two_sigma_mean`,
    /// `trimmed_mean_10`); default: the experiment's headline, the study's own.
    #[serde(default)]
    pub statistic: Option<String>,
    /// The numerator's side: sweep values (a list: the first one the run has), `phase`,
    /// `figure`, and `best` (keys whose values are chosen, per side, as the best point).
    pub a: BTreeMap<String, Sel>,
    /// The denominator's side; without it, a's own figure is compared with the range.
    #[serde(default)]
    pub b: Option<BTreeMap<String, Sel>>,
    /// The claim holds when a / b (or a) lies within [min_ratio, max_ratio] (either may be open).
    #[serde(default)]
    pub min_ratio: Option<f64>,
    #[serde(default)]
    pub max_ratio: Option<f64>,
}

/// A finding's quote: one passage, or pieces of the text (a table may stand between them).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Quote {
    One(String),
    Pieces(Vec<String>),
}

impl Quote {
    /// Each piece, as written.
    pub fn pieces(&self) -> Vec<&str> {
        match self {
            Quote::One(s) => vec![s.as_str()],
            Quote::Pieces(v) => v.iter().map(String::as_str).collect(),
        }
    }

    /// The quote as printed: pieces joined by ` [...] `.
    pub fn text(&self) -> String {
        self.pieces().join(" [...] ")
    }
}

/// A side's value for one key: one value, or alternatives (the first the run has).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Sel {
    One(String),
    Int(i64),
    Bool(bool),
    Any(Vec<toml::Value>),
}

impl Sel {
    fn values(&self) -> Vec<String> {
        let s = |v: &toml::Value| v.as_str().map(String::from).unwrap_or_else(|| v.to_string());
        match self {
            Sel::One(v) => vec![v.clone()],
            Sel::Int(i) => vec![i.to_string()],
            Sel::Bool(b) => vec![b.to_string()],
            Sel::Any(vs) => vs.iter().map(s).collect(),
        }
    }
}

/// The verdict of a finding on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    DoesNotHold,
    Inconclusive,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One side as measured: which points and phase, the statistic of its figure and its 95%
/// interval (on the log scale: the figures are positive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideResult {
    /// The points' sweep values (`sync=each bs=4MiB`), or why none matched.
    pub point: String,
    pub phase: String,
    pub figure: String,
    pub n: usize,
    /// The statistic of the figure over the side's repetitions (the mean unless the finding's
    /// statistic is another: see `statistic` in [`Finding`]).
    pub mean: f64,
    pub ci95: Option<[f64; 2]>,
    /// Flags of its runs that make the figure doubtful (`workers did not overlap`, `stalled`),
    /// each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// What a period figure rests on: the period each run found with its share of the time,
    /// and the read-ahead the host facts record (empty for other figures).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// What a finding needs of the host besides the runs: the read-ahead of the target (KiB, as
/// the host facts record it) and its device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub read_ahead_kb: Option<u64>,
    pub device: Option<String>,
}

impl Facts {
    /// The first target's with a read-ahead recorded.
    pub fn of(host: &crate::env::host::HostFacts) -> Facts {
        let t = host.targets.iter().find(|t| t.read_ahead_kb.is_some());
        Facts { read_ahead_kb: t.and_then(|t| t.read_ahead_kb), device: t.and_then(|t| t.device.clone()) }
    }
}

/// A finding checked against one experiment (`findings` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub claim: String,
    /// The study's words, pieces joined by ` [...] `, and where they are.
    #[serde(default)]
    pub quote: String,
    #[serde(default)]
    pub source: String,
    pub paper: String,
    /// The rule in words: `a / b <= 1`, `0.9 <= a / b <= 1.1`, `a >= 0.5`.
    pub rule: String,
    /// The statistic of each side (`mean`, `two_sigma_mean`, ...).
    #[serde(default)]
    pub statistic: String,
    pub a: SideResult,
    /// None when the finding compares a's figure with the range.
    pub b: Option<SideResult>,
    /// The measured a / b (ratio of the statistics, or the statistic of the paired ratios),
    /// or a alone.
    pub ratio: Option<f64>,
    /// Its 95% interval.
    pub interval: Option<[f64; 2]>,
    /// Whether the repetitions were paired (both sides from the same runs).
    pub paired: bool,
    pub verdict: Verdict,
    /// Why that verdict, in words.
    pub why: String,
}

impl FindingSpec {
    /// The rule in words.
    pub fn rule(&self) -> String {
        let x = if self.b.is_some() { "a / b" } else { "a" };
        match (self.min_ratio, self.max_ratio) {
            (Some(lo), Some(hi)) => format!("{lo} <= {x} <= {hi}"),
            (Some(lo), None) => format!("{x} >= {lo}"),
            (None, Some(hi)) => format!("{x} <= {hi}"),
            (None, None) => format!("{x} (no range)"),
        }
    }

    /// The spec's own errors: an unknown figure or statistic, no range, an empty range, an
    /// empty quote or source.
    pub fn check(&self) -> std::result::Result<(), String> {
        for side in std::iter::once(&self.a).chain(self.b.as_ref()) {
            if let Some(f) = pick::first(side, "figure").or(self.figure.clone())
                && !FIGURES.iter().any(|(n, _)| *n == f)
            {
                let names: Vec<&str> = FIGURES.iter().map(|f| f.0).collect();
                return Err(format!("unknown figure `{f}` (known: {})", names.join(", ")));
            }
        }
        if let Some(s) = &self.statistic
            && Headline::parse(s).is_none()
        {
            return Err(format!("unknown statistic `{s}` (known: {})", Headline::NAMES.join(", ")));
        }
        if self.quote.pieces().iter().any(|p| p.trim().is_empty()) || self.source.trim().is_empty() {
            return Err("a finding quotes its study (`quote`) and says where (`source`)".into());
        }
        match (self.min_ratio, self.max_ratio) {
            (None, None) => Err("give min_ratio, max_ratio or both".into()),
            (Some(lo), Some(hi)) if lo > hi => Err(format!("min_ratio {lo} is above max_ratio {hi}")),
            _ => Ok(()),
        }
    }

    /// The sweep keys the sides name (for checking them against the preset's axes), the keys
    /// of `best` among them.
    pub fn keys(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![];
        for side in std::iter::once(&self.a).chain(self.b.as_ref()) {
            for (k, sel) in side {
                if k == "best" {
                    v.extend(sel.values());
                } else if !pick::OWN_KEYS.contains(&k.as_str()) {
                    v.push(k.clone());
                }
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The statistic of the sides: the finding's own, else `headline` (the experiment's).
    pub fn statistic(&self, headline: Headline) -> Headline {
        self.statistic.as_deref().and_then(Headline::parse).unwrap_or(headline)
    }

    /// Checks the finding against an experiment's results, with `headline` the statistic
    /// unless the finding names its own.
    pub fn evaluate(&self, points: &[PointResult], headline: Headline) -> Finding {
        self.evaluate_with(points, headline, &Facts::default())
    }

    /// [`Self::evaluate`], with what the host facts say (the read-ahead of `period_readahead`).
    pub fn evaluate_with(&self, points: &[PointResult], headline: Headline, facts: &Facts) -> Finding {
        let stat = self.statistic(headline);
        let pa = self.pick(&self.a, points, stat, facts);
        let sa = pick::samples(&pa, points, facts);
        let a = pick::side(&pa, &sa, points, stat, facts);
        let (b, ratio, interval, paired) = match &self.b {
            None => (None, Some(a.mean).filter(|m| m.is_finite()), a.ci95, false),
            Some(side_b) => {
                let pb = self.pick(side_b, points, stat, facts);
                let sb = pick::samples(&pb, points, facts);
                let b = pick::side(&pb, &sb, points, stat, facts);
                let paired = pa.points == pb.points && !sa.is_empty();
                let (ratio, interval) = if paired {
                    let xs: Vec<f64> = sa
                        .iter()
                        .filter_map(|(k, a)| sb.iter().find(|(j, _)| j == k).map(|(_, b)| a / b))
                        .filter(|r| r.is_finite())
                        .collect();
                    let (m, ci) = summarize(&xs, stat);
                    (Some(m).filter(|m| m.is_finite()), ci)
                } else {
                    (Some(a.mean / b.mean).filter(|r| r.is_finite()), unpaired_interval(a.ci95, b.ci95))
                };
                (Some(b), ratio, interval, paired)
            }
        };
        let sides: Vec<&SideResult> = std::iter::once(&a).chain(b.as_ref()).collect();
        let (verdict, why) = if let Some(s) = sides.iter().find(|s| s.n < 2) {
            let why = format!("{} repetition(s) of {} {}: at least 2 are needed", s.n, s.point, s.phase);
            (Verdict::Inconclusive, why)
        } else if let Some((s, f)) = sides.iter().find_map(|s| s.flags.first().map(|f| (s, f))) {
            let why = format!(
                "the runs of {} {} were flagged `{f}`: its figure is not the storage's",
                s.point, s.phase
            );
            (Verdict::Inconclusive, why)
        } else {
            decide(interval, self.min_ratio, self.max_ratio)
        };
        Finding {
            claim: self.claim.clone(),
            quote: self.quote.text(),
            source: self.source.clone(),
            paper: self.paper.clone(),
            rule: self.rule(),
            statistic: stat.name().to_string(),
            a,
            b,
            ratio,
            interval,
            paired,
            verdict,
            why,
        }
    }
}
