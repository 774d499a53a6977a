//! A tuning run (`iolab tune`, docs/tune.md): the job, the candidates raced (each a point of
//! the tuning's experiment), every round's intervals, what was dropped when and by whom, how
//! the race ended and its verdict. The JSON `iolab tune --json` prints and the store keeps
//! beside the experiment; the racing rule itself is [`race`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::spec::job::Job;

pub mod race;
#[cfg(test)]
mod race_tests;

pub use race::{Interval, Rule};

/// Version of the tuning JSON. Fields may be added; none is renamed or removed.
pub const TUNE_SCHEMA_VERSION: u32 = 1;

/// One candidate: a way to do the job, run as one point of the tuning's experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Its point in the experiment.
    pub point: usize,
    /// What sets it apart, in words (`uring, depth 16, O_DIRECT`).
    pub label: String,
    /// The values of the searched keys (the point's axis values).
    pub values: BTreeMap<String, String>,
    /// Every spec parameter it runs with (what the recommended spec prints).
    pub params: BTreeMap<String, Vec<String>>,
    /// The job's time of each complete run, in seconds (start barrier to the end of its last
    /// phase, the final commit included; the phases' times summed for read-after-write).
    pub times_s: Vec<f64>,
    /// What each run cost, warm-ups included: wall seconds from its settle to its files'
    /// removal (what the budget pays).
    pub costs_s: Vec<f64>,
    /// Runs stopped part-way by the deadline or a signal (stored as interrupted; no time).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut: u32,
    /// What one run was expected to cost before the race (from the rates this host's store
    /// measured, else the assumed rate): what the budget was planned with.
    #[serde(default)]
    pub expected_cost_s: f64,
    /// Why it left the race, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<Out>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Candidate {
    pub fn new(point: usize, label: String, values: BTreeMap<String, String>) -> Candidate {
        Candidate {
            point,
            label,
            values,
            params: BTreeMap::new(),
            times_s: vec![],
            costs_s: vec![],
            cut: 0,
            expected_cost_s: 0.0,
            out: None,
        }
    }
    /// Still racing.
    pub fn alive(&self) -> bool {
        self.out.is_none()
    }
    /// Runs that count (complete ones).
    pub fn runs(&self) -> u32 {
        self.times_s.len() as u32
    }
    /// The interval of its mean time.
    pub fn interval(&self) -> Interval {
        Interval::of(&self.times_s)
    }
}

/// Why a candidate left the race.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "kebab-case")]
pub enum Out {
    /// Clearly slower: after `round`, its interval lay wholly above candidate `by`'s.
    Dropped { round: u32, by: usize },
    /// A run of it failed (the error's message); the experiment keeps the failed run.
    Failed { round: u32, error: String },
    /// Not raced: the budget held too few rounds for every candidate, so the race took the
    /// baseline and those expected to gain most (`raced` of them).
    NotRaced { raced: usize },
}

impl Out {
    pub fn round(&self) -> u32 {
        match self {
            Out::Dropped { round, .. } | Out::Failed { round, .. } => *round,
            Out::NotRaced { .. } => 0,
        }
    }
}

/// The state after one round: each candidate's interval (None once out of the race).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub round: u32,
    /// Seconds since the tuning began, when the round ended.
    pub elapsed_s: f64,
    /// Runs made in the round (warm-ups included).
    pub runs: u32,
    /// Per candidate, in candidate order: its interval after the round while it races.
    pub intervals: Vec<Option<Interval>>,
    /// The candidates dropped after this round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<usize>,
}

/// Why the race stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    /// Every other candidate was dropped.
    OneLeft,
    /// Every candidate still racing had the most runs the rule allows.
    MaxRuns,
    /// The next round (or run) would not have finished within the budget.
    Budget,
    /// A stop signal (Ctrl-C): the answer is the best so far.
    Interrupted,
    /// A run could not be stored; the race stopped there.
    Failed,
}

impl Ended {
    pub fn about(self) -> &'static str {
        match self {
            Ended::OneLeft => "every other candidate was dropped",
            Ended::MaxRuns => "every candidate still racing had the most runs the rule allows",
            Ended::Budget => "the budget left no room for another round",
            Ended::Interrupted => "interrupted: the best answer so far",
            Ended::Failed => "a run could not be stored",
        }
    }
}

/// What the race found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// `best` is faster than every other candidate with 95% confidence: its interval lies
    /// wholly below the interval of every candidate still racing, and every other was dropped
    /// so on the way (or failed).
    Winner { best: usize },
    /// `best` has the lowest mean, but the intervals of `tied` overlap its own.
    NoClearWinner { best: usize, tied: Vec<usize> },
    /// No candidate had the runs to be judged.
    Undecided,
}

impl Verdict {
    /// The candidate recommended: the winner, else the one with the lowest mean.
    pub fn best(&self) -> Option<usize> {
        match self {
            Verdict::Winner { best } | Verdict::NoClearWinner { best, .. } => Some(*best),
            Verdict::Undecided => None,
        }
    }
}

/// The recommended settings, runnable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommended {
    /// An experiment file for `iolab run FILE`.
    pub toml: String,
    /// The same as one command line.
    pub command: String,
}

/// A whole tuning run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    pub schema_version: u32,
    /// The experiment holding every run (one point per candidate).
    pub experiment_id: String,
    pub hostname: String,
    pub host_id: String,
    pub created_unix_s: f64,
    pub job: Job,
    pub budget_ns: u64,
    /// Wall time the tuning took so far.
    pub elapsed_ns: u64,
    pub rule: Rule,
    /// The searched keys with their values (`engine=psync,vsync,mmap,uring`).
    pub searched: Vec<String>,
    /// Combinations of the searched values that are no candidate, with the reason
    /// resolution gave (one line per reason, with how many).
    #[serde(default)]
    pub not_candidates: Vec<String>,
    pub candidates: Vec<Candidate>,
    /// The plain program (write() or read() with the job's op size and commits).
    pub baseline: usize,
    pub rounds: Vec<Round>,
    /// None while the race runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended: Option<Recommended>,
}

/// How the recommended candidate compares with the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gain {
    /// Baseline's mean time over the best one's (above 1: faster than the baseline).
    pub speedup: f64,
    pub baseline_mean_s: f64,
    pub best_mean_s: f64,
    /// The intervals are apart: the gain holds with 95% confidence.
    pub clear: bool,
}

impl Tuning {
    /// Whether every candidate it names by index is one of its candidates (the baseline, the
    /// verdict's, a dropped one's and who dropped it): what its readers index, checked before
    /// a record from elsewhere is stored. The first index at fault, in words.
    pub fn check(&self) -> std::result::Result<(), String> {
        let n = self.candidates.len();
        let mut named: Vec<(String, usize)> = vec![("baseline".into(), self.baseline)];
        match &self.verdict {
            Verdict::Winner { best } => named.push(("verdict's best".into(), *best)),
            Verdict::NoClearWinner { best, tied } => {
                named.push(("verdict's best".into(), *best));
                named.extend(tied.iter().map(|&t| ("verdict's tied".into(), t)));
            }
            Verdict::Undecided => {}
        }
        for (i, c) in self.candidates.iter().enumerate() {
            if let Some(Out::Dropped { by, .. }) = c.out {
                named.push((format!("candidate {i} dropped by"), by));
            }
        }
        for r in &self.rounds {
            named.extend(r.dropped.iter().map(|&d| (format!("round {}'s dropped", r.round), d)));
        }
        match named.into_iter().find(|(_, i)| *i >= n) {
            Some((what, i)) => Err(format!("its {what} is candidate {i}, and it has {n}")),
            None => Ok(()),
        }
    }

    /// The gain of the recommended candidate over the baseline, once both have runs.
    pub fn gain(&self) -> Option<Gain> {
        let best = self.verdict.best()?;
        let (b, w) = (self.candidates[self.baseline].interval(), self.candidates[best].interval());
        if b.n == 0 || w.n == 0 {
            return None;
        }
        let clear = matches!((w.ci95_s, b.ci95_s), (Some(wi), Some(bi)) if wi[1] < bi[0]);
        Some(Gain { speedup: b.mean_s / w.mean_s, baseline_mean_s: b.mean_s, best_mean_s: w.mean_s, clear })
    }

    /// How the recommended candidate stands, in words: `the clear winner`, `the only
    /// candidate` (or `the only candidate with runs` when others never completed one), or
    /// `the lowest mean; no clear winner`.
    pub fn standing(&self) -> Option<&'static str> {
        Some(match &self.verdict {
            Verdict::Winner { best } if self.next_after(*best).is_none() => {
                if self.candidates.len() == 1 {
                    "the only candidate"
                } else {
                    "the only candidate with runs"
                }
            }
            Verdict::Winner { .. } => "the clear winner",
            Verdict::NoClearWinner { .. } => "the lowest mean; no clear winner",
            Verdict::Undecided => return None,
        })
    }

    /// The candidate with the next lowest mean after `best` (any, raced to the end or not).
    pub fn next_after(&self, best: usize) -> Option<usize> {
        let mut order: Vec<usize> =
            (0..self.candidates.len()).filter(|&i| i != best && self.candidates[i].runs() > 0).collect();
        order.sort_by(|&a, &b| {
            self.candidates[a].interval().mean_s.total_cmp(&self.candidates[b].interval().mean_s)
        });
        order.first().copied()
    }

    /// Candidates ranked: those racing at the end by mean time, then the dropped ones by mean
    /// time, then the failed ones, then those not raced.
    pub fn ranked(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.candidates.len()).collect();
        let key = |i: usize| {
            let c = &self.candidates[i];
            let group = match c.out {
                None => 0,
                Some(Out::Dropped { .. }) => 1,
                Some(Out::Failed { .. }) => 2,
                Some(Out::NotRaced { .. }) => 3,
            };
            (group, if c.runs() > 0 { c.interval().mean_s } else { f64::INFINITY })
        };
        v.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        });
        v
    }
}

/// A finished race for tests: candidate 0 (`psync`) won over 1 (`mmap`, the baseline), which
/// was dropped after round 3 of 4; a checkpoint job of `bytes`.
#[cfg(test)]
pub(crate) fn sample(experiment_id: &str, host: &str, created: f64, bytes: u64) -> Tuning {
    use crate::spec::job::{Access, Direction, Durability};
    let mut a = Candidate::new(0, "psync".into(), BTreeMap::from([("engine".into(), "psync".into())]));
    let mut b = Candidate::new(1, "mmap".into(), BTreeMap::from([("engine".into(), "mmap".into())]));
    a.times_s = vec![1.0, 1.1, 0.9, 1.0];
    b.times_s = vec![2.0, 2.1, 1.9];
    b.out = Some(Out::Dropped { round: 3, by: 0 });
    let rounds = (1..=4)
        .map(|r| Round {
            round: r,
            elapsed_s: r as f64,
            runs: 2,
            intervals: vec![
                Some(Interval::of(&a.times_s[..r as usize])),
                (r <= 3).then(|| Interval::of(&b.times_s[..r as usize])),
            ],
            dropped: if r == 3 { vec![1] } else { vec![] },
        })
        .collect();
    Tuning {
        schema_version: TUNE_SCHEMA_VERSION,
        experiment_id: experiment_id.into(),
        hostname: host.into(),
        host_id: host.into(),
        created_unix_s: created,
        job: Job {
            name: "checkpoint".into(),
            bytes,
            direction: Direction::Write,
            access: Access::Seq,
            op_bytes: 1 << 20,
            op_fixed: false,
            durability: Durability::End,
            comptime_ns: 0,
            workers: 1,
            memory_bytes: None,
            dirs: vec![".".into()],
        },
        budget_ns: 60_000_000_000,
        elapsed_ns: 4_000_000_000,
        rule: Rule::default(),
        searched: vec!["engine=psync,mmap".into()],
        not_candidates: vec![],
        candidates: vec![a, b],
        baseline: 1,
        rounds,
        ended: Some(Ended::OneLeft),
        verdict: Verdict::Winner { best: 0 },
        recommended: None,
    }
}
