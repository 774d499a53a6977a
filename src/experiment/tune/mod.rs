//! `iolab tune` (docs/tune.md): finds the fastest way to do a job on this machine within a
//! time budget. The job ([`job`]) gives the baseline's parameters (the plain program); the
//! search space ([`space`]) is every combination of the searched keys that resolves and does
//! the job ([`candidates`]); the race ([`rounds`]) runs them as the points of one experiment,
//! interleaved, and drops what is clearly slower, by the rule of
//! [`crate::results::tune::race`]; [`emit`] writes the winner back as a runnable spec.

use std::time::Instant;

use crate::env::host::HostFacts;
use crate::error::Result;
use crate::experiment::run::{Point, Runner};
use crate::experiment::{Design, Params, ResolveEnv};
use crate::results::tune::race::BudgetPlan;
use crate::results::tune::{Candidate, Out, Recommended, Rule, TUNE_SCHEMA_VERSION, Tuning, Verdict};
use crate::results::{Axis, ExperimentResult, Sink};
use crate::spec::job::Job;
use crate::units::{fmt_duration_spec, fmt_size_spec};
use crate::worker::Monitor;

pub mod candidates;
pub mod emit;
pub mod job;
pub mod rounds;
pub mod space;

#[cfg(test)]
mod tests;

/// What to tune and how.
#[derive(Debug, Clone)]
pub struct Request {
    pub job: Job,
    pub search: Vec<(String, Option<Vec<String>>)>,
    pub budget_ns: u64,
    pub rule: Rule,
    /// Parameters every candidate takes besides the job's (settle, prime_memory, warmup,
    /// interleave, seed).
    pub extra: Params,
}

/// The space, ready to race.
pub struct Prepared {
    pub job: Job,
    /// The baseline's raw parameters (the plain program).
    pub base: Params,
    pub space: space::Space,
    /// The keys that differ between candidates, with each candidate's value.
    pub axes: Vec<Axis>,
}

/// The plain program: `write()` (or `read()`) with the job's op size and the commits its
/// durability needs, one worker (all of them, each computing and writing its own file, S1A,
/// for a job with compute), and the job's settings.
pub fn baseline_params(job: &Job, extra: &Params) -> Result<Params> {
    let mut p = Params::default();
    p.set_one("name", format!("tune-{}", job.name))?;
    p.set("dirs", job.dirs.iter().map(|d| d.display().to_string()).collect())?;
    p.set("ops", job.direction.ops().iter().map(|s| s.to_string()).collect())?;
    p.set_one("order", job.access.name())?;
    p.set_one("bs", fmt_size_spec(job.op_bytes))?;
    p.set_one("engine", "psync")?;
    if job.direction.writes() {
        p.set_one("sync", job.durability.loosest().label())?;
    }
    if job.comptime_ns > 0 {
        p.set_one("strategy", "S1A")?;
        p.set_one("comptime", fmt_duration_spec(job.comptime_ns))?;
        p.set_one("workers", job.workers)?;
    } else {
        p.set_one("workers", 1)?;
    }
    p.set_one("size", fmt_size_spec(job.bytes / p.one("workers").and_then(|w| w.parse().ok()).unwrap_or(1)))?;
    p.overlay(extra);
    Ok(p)
}

/// The space of a request: its keys, its candidates (the baseline first), and its axes.
pub fn prepare(req: &Request, env: &ResolveEnv) -> Result<Prepared> {
    let base = baseline_params(&req.job, &req.extra)?;
    let dims = space::dims(&req.job, &req.search)?;
    let space = space::build(&req.job, dims, &base, env)?;
    let axes = emit::axes(&space.cands);
    Ok(Prepared { job: req.job.clone(), base, space, axes })
}

/// The tuning record before any run: the job, the rule, the candidates.
pub fn record(prep: &Prepared, req: &Request, experiment_id: &str, host: &HostFacts) -> Tuning {
    Tuning {
        schema_version: TUNE_SCHEMA_VERSION,
        experiment_id: experiment_id.to_string(),
        hostname: host.hostname.clone(),
        host_id: host.host_id.clone(),
        created_unix_s: crate::env::sys::unix_time_s(),
        job: prep.job.clone(),
        budget_ns: req.budget_ns,
        elapsed_ns: 0,
        rule: req.rule,
        searched: prep.space.dims.iter().map(|d| format!("{}={}", d.key, d.values.join(","))).collect(),
        not_candidates: prep.space.refused.clone(),
        candidates: prep
            .space
            .cands
            .iter()
            .enumerate()
            .map(|(i, c)| Candidate {
                params: c.params.0.clone(),
                ..Candidate::new(i, c.label.clone(), c.values.clone())
            })
            .collect(),
        baseline: 0,
        rounds: vec![],
        ended: None,
        verdict: Verdict::Undecided,
        recommended: None,
    }
}

/// The points of the tuning's experiment: one per candidate.
pub fn points(prep: &Prepared) -> Vec<Point> {
    prep.space
        .cands
        .iter()
        .enumerate()
        .map(|(i, c)| Point { params: emit::point_params(&prep.axes, i), spec: c.spec.clone() })
        .collect()
}

/// The recommended candidate's spec, as a file and a command line (`reps` repetitions).
pub fn recommend(prep: &Prepared, t: &Tuning, reps: u32) -> Option<Recommended> {
    let best = t.verdict.best()?;
    let c = &prep.space.cands[best];
    let p = emit::recommended_params(c, &prep.job.name, reps);
    let iv = t.candidates[best].interval();
    let how = t.standing().unwrap_or("undecided");
    let about = format!(
        "iolab tune {} on {} (experiment {}): {}\n{}: {}, {how}",
        prep.job.name,
        t.hostname,
        t.experiment_id,
        prep.job.describe(),
        c.label,
        rounds::fmt_interval(&iv)
    );
    Some(Recommended { toml: emit::recommended_toml(&p, &about), command: emit::command_line(&p) })
}

/// What a tuning produced: its record, the experiment holding its runs, and the error that
/// stopped it (a signal's, the store's).
pub struct Outcome {
    pub tuning: Tuning,
    pub result: ExperimentResult,
    pub error: Option<crate::error::Error>,
}

/// Races the candidates of `prep` within the budget; the runs go to `sink` as one experiment,
/// the record after every round.
#[allow(clippy::too_many_arguments)]
pub fn run(
    prep: &Prepared,
    req: &Request,
    host: HostFacts,
    sink: &mut dyn Sink,
    monitor: &dyn Monitor,
    start: Instant,
    plan: &(Vec<f64>, BudgetPlan),
    progress: bool,
) -> Result<Outcome> {
    let (costs, plan) = (&plan.0, &plan.1);
    let pts = points(prep);
    let keys: Vec<String> = prep.axes.iter().map(|a| a.key.clone()).collect();
    let design = Design {
        axes: prep.axes.clone(),
        zip: if keys.len() > 1 { vec![keys] } else { vec![] },
        ..Design::default()
    };
    let budget_s = req.budget_ns as f64 / 1e9;
    let base = &pts[0].spec;
    let mut runner = Runner::begin(base, &pts, design, host.clone(), sink, monitor)?;
    let mut t = record(prep, req, &runner.result.experiment_id, &host);
    for (i, c) in t.candidates.iter_mut().enumerate() {
        c.expected_cost_s = costs[i];
        if !plan.raced.contains(&i) {
            c.out = Some(Out::NotRaced { raced: plan.raced.len() });
        }
    }
    runner.sink().tuning(&t)?;
    let first_cost_s = costs[t.baseline];
    let set = rounds::Settings { start, budget_s, interleave: base.interleave, first_cost_s, progress };
    let error = rounds::race(&mut t, &mut runner, &set);
    t.recommended = recommend(prep, &t, 5);
    t.elapsed_ns = start.elapsed().as_nanos() as u64;
    let stored = runner.sink().tuning(&t);
    let error = error.or(stored.err());
    Ok(Outcome { tuning: t, result: runner.result, error })
}

/// Seconds one run of each candidate is expected to take before any has run (the baseline
/// first): its phases at the rates this host measured (or the assumed rate), its compute, and
/// half a second for making and removing its files.
pub fn expected_costs_s(prep: &Prepared, rates: &crate::experiment::estimate::Rates) -> Vec<f64> {
    prep.space
        .cands
        .iter()
        .map(|c| {
            let mut spec = c.spec.clone();
            (spec.reps, spec.warmup) = (1, 0);
            let p = Point { params: Default::default(), spec };
            crate::experiment::estimate::estimate(std::slice::from_ref(&p), rates).seconds + 0.5
        })
        .collect()
}
