//! The racing rule of `iolab tune` (docs/tune.md, "The stopping rule"), pure: each
//! candidate's figure is the job's time in seconds (lower is better), summarised by the 95%
//! confidence interval of its mean, on the log scale since a time is positive:
//! [mean / f, mean * f], f = exp(t(0.975, n-1) (s / sqrt(n)) / mean)
//! ([`crate::stats::positive_ci95`]); never a negative lower end.
//!
//! - A candidate is judged only once it has `min_runs` complete runs (default 3).
//! - After each round, a judged candidate is dropped when the lower end of its 99% interval
//!   lies above the upper end of another judged candidate's 99% interval (the one with the
//!   lowest upper end): slower with more than 99% confidence. The stricter level pays for the
//!   repeated looks and the many pairs: among equal candidates, few races drop any
//!   (docs/tune.md gives the simulated rates, `race_tests.rs` holds them).
//! - The race ends when one candidate is left, when every one still racing has `max_runs`
//!   runs, or when the budget cannot hold another round.
//! - The verdict, on the 95% intervals the tables show: the candidate racing with the lowest
//!   mean is the winner when its interval lies wholly below the interval of every other
//!   candidate still racing; else "no clear winner" between it and those whose intervals
//!   overlap its own (or that have too few runs for an interval).
//! - The budget: a round starts only if the estimated cost of all its runs fits in the time
//!   left, each run only if its own estimate does; a candidate's cost is the most any of its
//!   runs cost, and before its first run the most any run of the tuning cost.
//! - Before the race ([`plan_budget`]): a budget too small for `min_runs` rounds of every
//!   candidate races fewer: the baseline, then the candidates expected to gain most (the
//!   shortest expected runs first), as many as `min_runs` rounds of them fit (two at least),
//!   else as many as one round of them fits; a budget below one run of the baseline is
//!   refused.

use serde::{Deserialize, Serialize};

use super::{Candidate, Ended, Verdict};
use crate::stats;

/// The rule's settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Runs a candidate needs before it can be dropped or drop another.
    pub min_runs: u32,
    /// The race ends when every candidate racing has this many runs.
    pub max_runs: u32,
}

impl Default for Rule {
    fn default() -> Rule {
        Rule { min_runs: 3, max_runs: 20 }
    }
}

/// A candidate's mean time and the 95% confidence interval of that mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub n: u32,
    pub mean_s: f64,
    /// None below two runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_s: Option<[f64; 2]>,
}

impl Interval {
    /// The interval of these times (n = 0: a mean of NaN).
    pub fn of(times_s: &[f64]) -> Interval {
        Interval {
            n: times_s.len() as u32,
            mean_s: stats::mean(times_s),
            ci95_s: stats::positive_ci95(times_s),
        }
    }
    /// Lower end (the mean below two runs).
    pub fn lo(&self) -> f64 {
        self.ci95_s.map_or(self.mean_s, |c| c[0])
    }
    /// Upper end (infinite below two runs: nothing is known yet).
    pub fn hi(&self) -> f64 {
        self.ci95_s.map_or(f64::INFINITY, |c| c[1])
    }
    /// Wholly below `other`: every time in this interval is shorter than any in `other`.
    pub fn below(&self, other: &Interval) -> bool {
        self.ci95_s.is_some() && other.ci95_s.is_some() && self.hi() < other.lo()
    }
}

/// The candidates racing that the rule may judge (alive, with `min_runs` runs).
fn judged(cands: &[Candidate], rule: Rule) -> impl Iterator<Item = (usize, Interval)> + '_ {
    cands
        .iter()
        .enumerate()
        .filter(move |(_, c)| c.alive() && c.runs() >= rule.min_runs.max(2))
        .map(|(i, c)| (i, c.interval()))
}

/// The candidates to drop after a round, each with the candidate it is clearly slower than
/// (the judged one whose 99% interval has the lowest upper end).
pub fn to_drop(cands: &[Candidate], rule: Rule) -> Vec<(usize, usize)> {
    let judged: Vec<(usize, [f64; 2])> = judged(cands, rule)
        .filter_map(|(i, _)| Some((i, stats::positive_ci99(&cands[i].times_s)?)))
        .collect();
    let Some(&(by, best)) = judged.iter().min_by(|a, b| a.1[1].total_cmp(&b.1[1])) else {
        return vec![];
    };
    judged.iter().filter(|(i, iv)| *i != by && best[1] < iv[0]).map(|&(i, _)| (i, by)).collect()
}

/// The candidate racing with the lowest mean among those judged (else among those with any
/// run).
pub fn leader(cands: &[Candidate], rule: Rule) -> Option<usize> {
    let lowest =
        |it: &mut dyn Iterator<Item = (usize, f64)>| it.min_by(|a, b| a.1.total_cmp(&b.1)).map(|(i, _)| i);
    lowest(&mut judged(cands, rule).map(|(i, iv)| (i, iv.mean_s))).or_else(|| {
        lowest(
            &mut cands
                .iter()
                .enumerate()
                .filter(|(_, c)| c.alive() && c.runs() > 0)
                .map(|(i, c)| (i, c.interval().mean_s)),
        )
    })
}

/// The verdict on the race as it stands.
pub fn verdict(cands: &[Candidate], rule: Rule) -> Verdict {
    let Some(best) = leader(cands, rule) else { return Verdict::Undecided };
    let b = cands[best].interval();
    // Every other candidate racing must lie wholly above, both judged (with the rule's runs).
    let judged = |c: &Candidate| c.runs() >= rule.min_runs.max(2);
    let mut tied: Vec<usize> = cands
        .iter()
        .enumerate()
        .filter(|&(i, c)| i != best && c.alive() && !(judged(c) && b.below(&c.interval())))
        .map(|(i, _)| i)
        .collect();
    // Closest first: by mean, those without a run last.
    let mean = |i: usize| if cands[i].runs() > 0 { cands[i].interval().mean_s } else { f64::INFINITY };
    tied.sort_by(|&x, &y| mean(x).total_cmp(&mean(y)));
    match (tied.is_empty(), judged(&cands[best])) {
        (true, true) => Verdict::Winner { best },
        // Too few runs to judge it.
        (true, false) => Verdict::Undecided,
        (false, _) => Verdict::NoClearWinner { best, tied },
    }
}

/// Whether the race is over by the rule alone (the budget aside).
pub fn finished(cands: &[Candidate], rule: Rule) -> Option<Ended> {
    let alive: Vec<&Candidate> = cands.iter().filter(|c| c.alive()).collect();
    if alive.len() <= 1 && alive.iter().all(|c| c.runs() >= rule.min_runs) {
        return Some(Ended::OneLeft);
    }
    if alive.iter().all(|c| c.runs() >= rule.max_runs) {
        return Some(Ended::MaxRuns);
    }
    None
}

/// The cost a run of candidate `i` is expected to have, in seconds: the most any of its
/// runs cost; before its first run, the most any run cost; `fallback` before any run at all.
pub fn run_cost(cands: &[Candidate], i: usize, fallback: f64) -> f64 {
    let most = |xs: &mut dyn Iterator<Item = f64>| xs.fold(f64::NAN, f64::max);
    let own = most(&mut cands[i].costs_s.iter().copied());
    if own.is_finite() {
        return own;
    }
    let any = most(&mut cands.iter().flat_map(|c| c.costs_s.iter().copied()));
    if any.is_finite() { any } else { fallback }
}

/// Whether work expected to cost `cost_s` fits in what is left of the budget.
pub fn fits(elapsed_s: f64, cost_s: f64, budget_s: f64) -> bool {
    elapsed_s + cost_s <= budget_s
}

/// What the budget allows, planned before the race from each candidate's expected cost.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetPlan {
    /// The candidates to race: the baseline, then by expected gain.
    pub raced: Vec<usize>,
    /// One round of every candidate, seconds.
    pub round_s: f64,
    /// `min_runs` rounds of every candidate: the least that lets the rule judge them all.
    pub decide_s: f64,
}

/// Plans the race within `budget_s` from each candidate's expected run cost (`costs_s`, the
/// baseline at `baseline`); Err with the least budget for one run of the baseline when not
/// even that fits.
pub fn plan_budget(costs_s: &[f64], baseline: usize, budget_s: f64, rule: Rule) -> Result<BudgetPlan, f64> {
    let round_s: f64 = costs_s.iter().sum();
    let decide_s = round_s * rule.min_runs as f64;
    if budget_s < costs_s[baseline] {
        return Err(costs_s[baseline]);
    }
    let mut order: Vec<usize> = (0..costs_s.len()).filter(|&i| i != baseline).collect();
    order.sort_by(|&a, &b| costs_s[a].total_cmp(&costs_s[b]));
    order.insert(0, baseline);
    let fitting = |rounds: f64| {
        let mut sum = 0.0;
        order
            .iter()
            .take_while(|&&i| {
                sum += costs_s[i] * rounds;
                sum <= budget_s
            })
            .count()
    };
    let judged = fitting(rule.min_runs as f64);
    let n = if judged >= 2 { judged } else { fitting(1.0) };
    Ok(BudgetPlan { raced: order[..n.max(1)].to_vec(), round_s, decide_s })
}
