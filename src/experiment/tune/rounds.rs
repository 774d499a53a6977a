//! The race of `iolab tune`, run: rounds in which every candidate still racing runs once, in
//! the order the interleave asks (shuffled anew each round by default), through the
//! experiment's own [`Runner`] (settle, memory priming, warm-ups, the store); after each round
//! the rule of [`crate::results::tune::race`] drops what is clearly slower and the record is
//! stored. A round starts only if its estimated cost fits in the budget left, a run only if
//! its own does, and a run still going at the deadline is stopped by a timer signal as Ctrl-C
//! would stop it (its partial run kept as interrupted), so the budget holds; a stop signal ends
//! the race with the best answer so far.

use std::time::Instant;

use crate::error::Error;
use crate::experiment::run::Runner;
use crate::experiment::schedule::{Interleave, Slot, schedule};
use crate::results::tune::{Ended, Out, Round, Tuning, race};

/// Why the race must stop now, if a stop signal arrived: the budget's deadline (SIGALRM, see
/// [`crate::env::signals::alarm_after`]) or someone else's (Ctrl-C, SIGTERM).
fn stopped() -> Option<Ended> {
    match crate::env::signals::pending()? {
        libc::SIGALRM => Some(Ended::Budget),
        _ => Some(Ended::Interrupted),
    }
}

/// How the race runs.
pub struct Settings {
    pub start: Instant,
    pub budget_s: f64,
    pub interleave: Interleave,
    /// Seconds one run is expected to take before any has run.
    pub first_cost_s: f64,
    /// Print a line per round on stderr.
    pub progress: bool,
}

fn fmt_s(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0}")
    } else if s >= 10.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.3}")
    }
}

/// `1.93 s [1.88, 1.99]` (the interval once there are two runs).
pub fn fmt_interval(iv: &crate::results::tune::Interval) -> String {
    match iv.ci95_s {
        Some([lo, hi]) => format!("{} s [{}, {}]", fmt_s(iv.mean_s), fmt_s(lo), fmt_s(hi)),
        None if iv.n > 0 => format!("{} s (1 run)", fmt_s(iv.mean_s)),
        None => "-".into(),
    }
}

/// The race: rounds until the rule or the budget ends it (or a signal, or the store failing).
/// The tuning record is brought up to date and stored after every round; the error is the
/// signal's or the store's.
pub fn race(t: &mut Tuning, runner: &mut Runner<'_>, set: &Settings) -> Option<Error> {
    let elapsed = || set.start.elapsed().as_secs_f64();
    let left = std::time::Duration::from_secs_f64((set.budget_s - elapsed()).max(0.0));
    crate::env::signals::alarm_after(Some(left));
    let error = rounds(t, runner, set);
    crate::env::signals::alarm_after(None);
    t.elapsed_ns = (elapsed() * 1e9) as u64;
    t.verdict = race::verdict(&t.candidates, t.rule);
    error
}

/// The rounds, until an end.
fn rounds(t: &mut Tuning, runner: &mut Runner<'_>, set: &Settings) -> Option<Error> {
    let n = t.candidates.len();
    let elapsed = || set.start.elapsed().as_secs_f64();
    let mut measured = vec![0u32; n];
    let mut warmed = vec![false; n];
    let mut error = None;
    let mut round = 0u32;
    let ended = 'race: loop {
        if let Some(end) = race::finished(&t.candidates, t.rule) {
            break end;
        }
        round += 1;
        let reps: Vec<u32> =
            t.candidates.iter().map(|c| u32::from(c.alive() && c.runs() < t.rule.max_runs)).collect();
        let warmups: Vec<u32> = (0..n)
            .map(|i| {
                if warmed[i] {
                    0
                } else {
                    runner.result.points[t.candidates[i].point].spec.as_ref().map_or(0, |s| s.warmup)
                }
            })
            .collect();
        let order = match set.interleave {
            Interleave::RoundRobin => schedule(&reps, &warmups, Interleave::RoundRobin),
            Interleave::Shuffle(seed) => {
                schedule(&reps, &warmups, Interleave::Shuffle(seed.wrapping_add(round as u64)))
            }
        };
        let cost = |i: usize, t: &Tuning| race::run_cost(&t.candidates, i, set.first_cost_s);
        let round_cost: f64 = order.iter().map(|s| cost(s.point, t)).sum();
        if !race::fits(elapsed(), round_cost, set.budget_s) {
            break Ended::Budget;
        }
        let racing = reps.iter().filter(|&&r| r > 0).count();
        let mut runs = 0;
        let mut stop = None;
        for (k, slot) in order.iter().enumerate() {
            let i = slot.point;
            let c = cost(i, t);
            if !race::fits(elapsed(), c, set.budget_s) {
                stop = Some(Ended::Budget);
                break;
            }
            if let Some(end) = stopped() {
                stop = Some(end);
                break;
            }
            let rep = if slot.warmup { slot.rep } else { measured[i] };
            let label = format!(
                "round {round} · {}/{} {} · {}",
                k + 1,
                order.len(),
                t.candidates[i].label,
                crate::experiment::progress::fmt_eta((set.budget_s - elapsed()).max(0.0)) + " left"
            );
            let t0 = Instant::now();
            let done = runner.run(Slot { rep, ..*slot }, &label);
            t.candidates[i].costs_s.push(t0.elapsed().as_secs_f64());
            runs += 1;
            if slot.warmup {
                warmed[i] = true;
            } else {
                measured[i] += 1;
            }
            match (done.error, stopped()) {
                (None, _) if !slot.warmup => t.candidates[i].times_s.push(done.job_time_s),
                (None, _) => {}
                // Stopped at the deadline, or by someone: whatever the call that saw it said.
                (Some(_), Some(Ended::Budget)) if done.stored => {
                    t.candidates[i].cut += 1;
                    stop = Some(Ended::Budget);
                    break;
                }
                (Some(e), Some(end)) if done.stored => {
                    t.candidates[i].cut += 1;
                    let sig = crate::env::signals::pending().unwrap_or(libc::SIGINT);
                    let e = if matches!(e, Error::Interrupted(_)) { e } else { Error::Interrupted(sig) };
                    (stop, error) = (Some(end), Some(e));
                    break;
                }
                (Some(e), _) if !done.stored => {
                    (stop, error) = (Some(Ended::Failed), Some(e));
                    break;
                }
                (Some(e), _) => t.candidates[i].out = Some(Out::Failed { round, error: e.to_string() }),
            }
        }
        if runs > 0 {
            close_round(t, round, runs, elapsed(), racing, set.progress);
            if let Err(e) = runner.sink().tuning(t) {
                error = Some(e);
                break 'race Ended::Failed;
            }
        }
        if let Some(end) = stop.or_else(stopped) {
            break end;
        }
    };
    t.ended = Some(ended);
    error
}

/// After a round: drops by the rule, the round's record, the verdict so far, a line on stderr.
fn close_round(t: &mut Tuning, round: u32, runs: u32, elapsed_s: f64, racing: usize, progress: bool) {
    let dropped = race::to_drop(&t.candidates, t.rule);
    let intervals = t.candidates.iter().map(|c| c.alive().then(|| c.interval())).collect();
    for &(i, by) in &dropped {
        t.candidates[i].out = Some(Out::Dropped { round, by });
    }
    t.rounds.push(Round {
        round,
        elapsed_s,
        runs,
        intervals,
        dropped: dropped.iter().map(|d| d.0).collect(),
    });
    t.elapsed_ns = (elapsed_s * 1e9) as u64;
    t.verdict = race::verdict(&t.candidates, t.rule);
    if !progress {
        return;
    }
    let alive = t.candidates.iter().filter(|c| c.alive()).count();
    let leader = race::leader(&t.candidates, t.rule)
        .map(|l| format!("leader {} {}", t.candidates[l].label, fmt_interval(&t.candidates[l].interval())))
        .unwrap_or_else(|| "no leader yet".into());
    let mut line = format!("round {round}: {alive} of {racing} still racing · {leader}");
    if !dropped.is_empty() {
        let names: Vec<&str> = dropped.iter().map(|&(i, _)| t.candidates[i].label.as_str()).collect();
        line += &format!(" · dropped {}", names.join("; "));
    }
    let left = (t.budget_ns as f64 / 1e9 - elapsed_s).max(0.0);
    eprintln!("{line} · {} left", crate::experiment::progress::fmt_eta(left));
}
