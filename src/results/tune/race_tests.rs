//! Tests of the racing rule on synthetic candidates: what is dropped and when, the verdicts,
//! the budget's arithmetic, and by simulation the rule's error rates (docs/tune.md quotes
//! them): how often a race among equal candidates drops one, and how often the truly fastest
//! is dropped.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::race::{self, Interval, Rule};
use super::{Candidate, Ended, Out, Verdict};

fn cand(times: &[f64]) -> Candidate {
    let mut c = Candidate::new(0, String::new(), BTreeMap::new());
    c.times_s = times.to_vec();
    c.costs_s = times.to_vec();
    c
}

fn rule() -> Rule {
    Rule { min_runs: 3, max_runs: 10 }
}

#[test]
fn intervals_are_the_log_scale_interval_of_the_mean() {
    let iv = Interval::of(&[1.0, 2.0, 3.0]);
    assert_eq!((iv.n, iv.mean_s), (3, 2.0));
    // sd 1, t(0.975, 2) = 4.3027: f = exp(4.3027 / sqrt(3) / 2), [2 / f, 2 * f]; the Student t
    // interval 2 +/- 2.484 would start below 0.
    let f = (4.3027 / 3f64.sqrt() / 2.0).exp();
    let [lo, hi] = iv.ci95_s.unwrap();
    assert!((lo - 2.0 / f).abs() < 1e-9 && (hi - 2.0 * f).abs() < 1e-9);
    assert!(lo > 0.0);
    let one = Interval::of(&[5.0]);
    assert_eq!((one.ci95_s, one.lo(), one.hi()), (None, 5.0, f64::INFINITY));
    assert!(!one.below(&iv) && !iv.below(&one), "one run says nothing");
}

#[test]
fn a_clearly_slower_candidate_is_dropped_only_once_both_have_the_runs() {
    let fast = cand(&[1.0, 1.02, 0.98]);
    let mut slow = cand(&[5.0, 5.1]);
    // 95% intervals apart but 99% ones not: not yet dropped.
    let (a, b) = (cand(&[1.0, 1.1, 0.9]), cand(&[1.6, 1.7, 1.5]));
    assert!(a.interval().below(&b.interval()));
    assert!(race::to_drop(&[a, b], rule()).is_empty());
    assert!(race::to_drop(&[fast.clone(), slow.clone()], rule()).is_empty(), "slow has 2 runs");
    slow.times_s.push(4.9);
    assert_eq!(race::to_drop(&[fast.clone(), slow.clone()], rule()), [(1, 0)]);
    // Overlapping intervals: nothing is dropped.
    let near = cand(&[1.05, 0.9, 1.2]);
    assert!(race::to_drop(&[fast.clone(), near], rule()).is_empty());
    // Out of the race: neither judged nor judging.
    slow.out = Some(Out::Dropped { round: 3, by: 0 });
    assert!(race::to_drop(&[fast, slow], rule()).is_empty());
}

#[test]
fn verdicts() {
    let a = cand(&[1.0, 1.01, 0.99]);
    let b = cand(&[2.0, 2.02, 1.98]);
    let c = cand(&[1.0, 1.2, 0.9]);
    assert_eq!(race::verdict(&[b.clone(), a.clone()], rule()), Verdict::Winner { best: 1 });
    assert_eq!(
        race::verdict(&[a.clone(), c.clone()], rule()),
        Verdict::NoClearWinner { best: 0, tied: vec![1] }
    );
    // A candidate racing without an interval cannot be beaten yet.
    let fresh = cand(&[3.0]);
    assert_eq!(race::verdict(&[a.clone(), fresh], rule()), Verdict::NoClearWinner { best: 0, tied: vec![1] });
    // The dropped do not count against the winner.
    let mut dropped = c;
    dropped.out = Some(Out::Dropped { round: 2, by: 0 });
    assert_eq!(race::verdict(&[a, dropped], rule()), Verdict::Winner { best: 0 });
    assert_eq!(race::verdict(&[cand(&[])], rule()), Verdict::Undecided);
    assert_eq!(race::verdict(&[cand(&[1.0])], rule()), Verdict::Undecided);
    // Intervals apart, but the rule judges from 3 runs: not yet a winner.
    assert_eq!(
        race::verdict(&[cand(&[1.0, 1.01]), cand(&[2.0, 2.01])], rule()),
        Verdict::NoClearWinner { best: 0, tied: vec![1] }
    );
    // Early (a stop after a round): the lowest mean so far, tied with every other.
    assert_eq!(
        race::verdict(&[cand(&[2.0]), cand(&[1.0])], rule()),
        Verdict::NoClearWinner { best: 1, tied: vec![0] }
    );
}

#[test]
fn the_race_ends_with_one_left_or_at_the_run_cap() {
    let mut r = rule();
    let a = cand(&[1.0, 1.0, 1.0]);
    let mut b = cand(&[2.0, 2.0, 2.0]);
    assert_eq!(race::finished(&[a.clone(), b.clone()], r), None);
    b.out = Some(Out::Dropped { round: 3, by: 0 });
    assert_eq!(race::finished(&[a.clone(), b.clone()], r), Some(Ended::OneLeft));
    b.out = None;
    r.max_runs = 3;
    assert_eq!(race::finished(&[a, b], r), Some(Ended::MaxRuns));
}

#[test]
fn costs_and_the_budget() {
    let mut a = cand(&[1.0]);
    a.costs_s = vec![1.5, 2.5];
    let b = Candidate::new(1, String::new(), BTreeMap::new());
    let cands = [a, b];
    assert_eq!(race::run_cost(&cands, 0, 9.0), 2.5, "its own worst run");
    assert_eq!(race::run_cost(&cands, 1, 9.0), 2.5, "before its first run: the worst of any");
    assert_eq!(race::run_cost(&[Candidate::new(0, String::new(), BTreeMap::new())], 0, 9.0), 9.0);
    assert!(race::fits(10.0, 5.0, 15.0) && !race::fits(10.0, 5.1, 15.0));
}

/// SplitMix64 and Box-Muller: normal deviates from a seed, so the simulations are exact
/// reproductions.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 + f64::EPSILON
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Races candidates with these true mean times and relative noise (`lognormal`: heavy-tailed
/// instead of normal) for up to `rounds` rounds; returns the indexes dropped.
fn race_once(means: &[f64], cv: f64, lognormal: bool, rounds: u32, rng: &mut Rng) -> Vec<usize> {
    let r = Rule { min_runs: 3, max_runs: rounds };
    let mut cands: Vec<Candidate> =
        means.iter().map(|_| Candidate::new(0, String::new(), BTreeMap::new())).collect();
    for round in 1..=rounds {
        for (c, m) in cands.iter_mut().zip(means) {
            if c.alive() {
                let e = rng.normal();
                c.times_s.push(if lognormal { m * (cv * e).exp() } else { m * (1.0 + cv * e) });
            }
        }
        for (i, by) in race::to_drop(&cands, r) {
            cands[i].out = Some(Out::Dropped { round, by });
        }
        if race::finished(&cands, r).is_some() {
            break;
        }
    }
    (0..cands.len()).filter(|&i| !cands[i].alive()).collect()
}

/// Among equal candidates any drop is a false one: raced to 10 runs with 10% noise, under
/// 0.5% of races between 2 equal candidates drop one (normal or heavy-tailed noise), under 5%
/// among 8. Dropping among equals loses little (an equal one stays); the next test bounds what
/// matters more, the fastest being dropped.
#[test]
fn equal_candidates_are_rarely_dropped() {
    let mut rng = Rng(1);
    let trials = 2000;
    let rate = |k: usize, lognormal: bool, rng: &mut Rng| {
        let hits =
            (0..trials).filter(|_| !race_once(&vec![1.0; k], 0.1, lognormal, 10, rng).is_empty()).count();
        hits as f64 / trials as f64
    };
    let (two, two_heavy, eight) =
        (rate(2, false, &mut rng), rate(2, true, &mut rng), rate(8, false, &mut rng));
    println!("false drops: 2 equal {two:.4}, heavy-tailed {two_heavy:.4}, 8 equal {eight:.4}");
    assert!(two < 0.005, "{two}");
    assert!(two_heavy < 0.005, "{two_heavy}");
    assert!(eight < 0.05, "{eight}");
}

/// The fastest of 8 candidates (the others 10% to 80% slower, 10% noise) is dropped in under
/// 1% of races, and the clearly slower ones (40% and more) are gone by the tenth round in most.
#[test]
fn the_fastest_is_almost_never_dropped() {
    let mut rng = Rng(7);
    let means = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8];
    let trials = 2000;
    let (mut best_dropped, mut slow_gone) = (0, 0);
    for _ in 0..trials {
        let d = race_once(&means, 0.1, false, 10, &mut rng);
        best_dropped += d.contains(&0) as usize;
        slow_gone += (4..8).all(|i| d.contains(&i)) as usize;
    }
    let (bd, sg) = (best_dropped as f64 / trials as f64, slow_gone as f64 / trials as f64);
    println!("fastest dropped {bd:.4}; 40%+ slower all gone {sg:.4}");
    assert!(bd < 0.01, "{bd}");
    assert!(sg > 0.8, "{sg}");
}

proptest! {
    /// Whatever the times: a drop always names a judged candidate whose interval lies wholly
    /// below the dropped one's; the leader is never dropped; a winner lies below every other
    /// candidate racing.
    #[test]
    fn drops_and_verdicts_follow_the_intervals(
        runs in prop::collection::vec(prop::collection::vec(0.1f64..10.0, 0..6), 1..6),
    ) {
        let cands: Vec<Candidate> = runs.iter().map(|t| cand(t)).collect();
        let r = rule();
        let drops = race::to_drop(&cands, r);
        for &(i, by) in &drops {
            prop_assert!(cands[i].runs() >= 3 && cands[by].runs() >= 3);
            prop_assert!(cands[by].interval().below(&cands[i].interval()));
            prop_assert!(!drops.iter().any(|&(j, _)| j == by));
        }
        if let Some(l) = race::leader(&cands, r) {
            prop_assert!(!drops.iter().any(|&(j, _)| j == l), "the leader is dropped");
        }
        if let Verdict::Winner { best } = race::verdict(&cands, r) {
            for (i, c) in cands.iter().enumerate().filter(|&(i, _)| i != best) {
                prop_assert!(cands[best].interval().below(&c.interval()), "{i}");
            }
        }
    }

    /// Identical times for every candidate: nothing is dropped and there is no clear winner.
    #[test]
    fn identical_candidates_tie(times in prop::collection::vec(0.1f64..10.0, 3..8), k in 2usize..6) {
        let cands: Vec<Candidate> = (0..k).map(|_| cand(&times)).collect();
        prop_assert!(race::to_drop(&cands, rule()).is_empty());
        let winner = matches!(race::verdict(&cands, rule()), Verdict::Winner { .. });
        prop_assert!(!winner);
    }
}

/// A budget too small for every candidate races the baseline and those expected to gain most:
/// as many as the rule can judge, else as many as one round holds; below one baseline run,
/// refused with what that run needs.
#[test]
fn a_small_budget_races_the_candidates_that_fit() {
    let rule = Rule::default();
    // Baseline 2 s; others 1, 3, 1.5, 4 s: by expected gain 1 (1 s), 3 (1.5 s), 2 (3 s), 4.
    let costs = [2.0, 1.0, 3.0, 1.5, 4.0];
    let all = race::plan_budget(&costs, 0, 100.0, rule).unwrap();
    assert_eq!(all.raced, [0, 1, 3, 2, 4]);
    assert_eq!((all.round_s, all.decide_s), (11.5, 34.5));
    // Three rounds of baseline + 1 + 3 cost 13.5 s.
    assert_eq!(race::plan_budget(&costs, 0, 14.0, rule).unwrap().raced, [0, 1, 3]);
    // Three rounds of two cost 9 s: below that, one round of as many as fit.
    assert_eq!(race::plan_budget(&costs, 0, 5.0, rule).unwrap().raced, [0, 1, 3]);
    assert_eq!(race::plan_budget(&costs, 0, 2.5, rule).unwrap().raced, [0]);
    assert_eq!(race::plan_budget(&costs, 0, 1.9, rule), Err(2.0));
}
