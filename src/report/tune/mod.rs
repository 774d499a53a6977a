//! A tuning run (`iolab tune`) as people and programs read it: the ranked table of every
//! candidate (its runs, its interval, when and why it left the race), the verdict in words,
//! the gain over the baseline and the recommended spec. Its formats are the exporters of
//! [`FORMATS`] (`text.rs`, `json.rs`, `csv.rs`); its section of the HTML page is
//! `html::tune`, its plot `plot::race`, and the winners per host `hosts/`.

use crate::results::tune::{Ended, Out, Tuning, Verdict};
use crate::units::{fmt_ns, fmt_rate};

use super::Exporter;

mod csv;
pub mod hosts;
mod json;
mod text;

pub use text::render as render_text;

/// The formats of a tuning: `iolab tune` (`--json`, `--csv`, else the text).
pub static FORMATS: &[&(dyn Exporter<Tuning> + Sync)] = &[&text::Text, &json::Json, &csv::Csv];

/// The exporter of a format name (`text`, `json`, `csv`).
pub fn exporter(name: &str) -> crate::error::Result<&'static dyn Exporter<Tuning>> {
    super::find(FORMATS, name)
}

pub use crate::results::tune::race::Interval;

/// A time in seconds with the precision its size asks for.
pub fn secs(s: f64) -> String {
    if !s.is_finite() {
        "-".into()
    } else if s >= 100.0 {
        format!("{s:.0}")
    } else if s >= 10.0 {
        format!("{s:.1}")
    } else if s >= 1.0 {
        format!("{s:.2}")
    } else {
        format!("{s:.3}")
    }
}

/// `1.93 s [1.88, 1.99]`, `1.93 s (1 run)`, or `no run`.
pub fn interval_text(iv: &Interval) -> String {
    match iv.ci95_s {
        Some([lo, hi]) => format!("{} s [{}, {}]", secs(iv.mean_s), secs(lo), secs(hi)),
        None if iv.n > 0 => format!("{} s (1 run)", secs(iv.mean_s)),
        None => "no run".into(),
    }
}

/// The candidate's name as tables show it: its label, with `(baseline)` for the baseline.
pub fn name(t: &Tuning, i: usize) -> String {
    let c = &t.candidates[i];
    if i == t.baseline { format!("{} (baseline)", c.label) } else { c.label.clone() }
}

/// Where a candidate ended: racing, winner, dropped after round N (slower than #k), failed.
pub fn status(t: &Tuning, i: usize, rank_of: &dyn Fn(usize) -> usize) -> String {
    let c = &t.candidates[i];
    match &c.out {
        Some(Out::Dropped { round, by }) => {
            format!("dropped after round {round} (slower than #{})", rank_of(*by))
        }
        Some(Out::Failed { round, error }) => format!("failed in round {round}: {error}"),
        None if c.runs() == 0 && c.cut > 0 => format!(
            "stopped: {} run{} cut by {}, stored as interrupted",
            c.cut,
            if c.cut == 1 { "" } else { "s" },
            if t.ended == Some(crate::results::tune::Ended::Budget) { "the deadline" } else { "a signal" }
        ),
        None if c.runs() == 0 && !c.costs_s.is_empty() => "warm-up only".into(),
        Some(Out::NotRaced { raced }) => format!("not raced: the budget held {raced} candidates"),
        None if c.runs() == 0 => "not run".into(),
        None => match &t.verdict {
            Verdict::Winner { best } if *best == i => "winner".into(),
            Verdict::NoClearWinner { best, .. } if *best == i => "racing (lowest mean)".into(),
            Verdict::NoClearWinner { tied, .. } if tied.contains(&i) => "racing (tied)".into(),
            _ => "racing".into(),
        },
    }
}

/// One row per candidate, in rank order: rank, candidate, runs, mean, interval, MB/s, status.
pub fn rows(t: &Tuning) -> Vec<Vec<String>> {
    let ranked = t.ranked();
    let rank_of = |i: usize| ranked.iter().position(|&r| r == i).map_or(0, |p| p + 1);
    ranked
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let c = &t.candidates[i];
            let iv = c.interval();
            let (mean, ci) = match (iv.n, iv.ci95_s) {
                (0, _) => ("-".into(), "-".into()),
                (_, Some([lo, hi])) => (secs(iv.mean_s), format!("[{}, {}]", secs(lo), secs(hi))),
                (_, None) => (secs(iv.mean_s), "-".into()),
            };
            let rate =
                if iv.n > 0 { fmt_rate(t.job.bytes as f64 * phases(t) / iv.mean_s) } else { "-".into() };
            vec![
                (k + 1).to_string(),
                name(t, i),
                if c.cut > 0 { format!("{} (+{} cut)", c.runs(), c.cut) } else { c.runs().to_string() },
                mean,
                ci,
                rate,
                status(t, i, &rank_of),
            ]
        })
        .collect()
}

/// The column headers of [`rows`].
pub const HEADERS: [&str; 7] = ["rank", "candidate", "runs", "time s", "95% interval", "MB/s", "status"];

/// The job's bytes are moved this many times (a read after the write moves them twice).
fn phases(t: &Tuning) -> f64 {
    t.job.direction.ops().len() as f64
}

/// The verdict in one sentence, as the issue states it: `X: 1.93 s [1.88, 1.99], faster than
/// the next (Y, 2.40 s [2.31, 2.52]) with 95% confidence`, or no clear winner between some.
pub fn verdict_text(t: &Tuning) -> String {
    let c = |i: usize| format!("{}, {}", name(t, i), interval_text(&t.candidates[i].interval()));
    match &t.verdict {
        Verdict::Winner { best } => match t.next_after(*best) {
            Some(n) => format!("{}: faster than the next ({}) with 95% confidence", c(*best), c(n)),
            None => format!("{}: {}", c(*best), t.standing().unwrap_or_default()),
        },
        Verdict::NoClearWinner { best, tied } => {
            // The closest three, then how many more.
            let mut others: Vec<String> = tied.iter().take(3).map(|&i| c(i)).collect();
            if tied.len() > 3 {
                others.push(format!("and {} more", tied.len() - 3));
            }
            format!(
                "no clear winner between these {}: the lowest mean is {}; overlapping it: {}",
                tied.len() + 1,
                c(*best),
                others.join("; ")
            )
        }
        Verdict::Undecided => "undecided: no candidate had the runs to be judged".into(),
    }
}

/// What a larger budget would buy, when the race ended before the rule could judge every
/// candidate: the budget for `min_runs` runs of every candidate (from what runs cost, else
/// what they were expected to cost).
pub fn more_budget_text(t: &Tuning) -> Option<String> {
    let not_raced = t.candidates.iter().filter(|c| matches!(c.out, Some(Out::NotRaced { .. }))).count();
    let undecided = !matches!(t.verdict, Verdict::Winner { .. }) && t.ended == Some(Ended::Budget);
    if not_raced == 0 && !undecided {
        return None;
    }
    let cost = |c: &crate::results::tune::Candidate| {
        let ran = c.costs_s.iter().copied().fold(f64::NAN, f64::max);
        if ran.is_finite() { ran } else { c.expected_cost_s }
    };
    let round: f64 =
        t.candidates.iter().filter(|c| !matches!(c.out, Some(Out::Failed { .. }))).map(cost).sum();
    if round <= 0.0 {
        return None;
    }
    let decide = round * t.rule.min_runs as f64;
    let what = if not_raced > 0 {
        format!("race all {} candidates", t.candidates.len())
    } else {
        "give every candidate".to_string()
    };
    Some(format!(
        "a budget of {} would {what} {} runs, the least that lets the rule judge them; {} holds one round",
        crate::units::fmt_about(decide),
        t.rule.min_runs,
        crate::units::fmt_about(round)
    ))
}

/// The gain over the baseline in one sentence, if there is one to state.
pub fn gain_text(t: &Tuning) -> Option<String> {
    let g = t.gain()?;
    let best = t.verdict.best()?;
    if best == t.baseline {
        return Some(format!(
            "the baseline itself is the best: {}",
            interval_text(&t.candidates[best].interval())
        ));
    }
    Some(format!(
        "{:.2}x the baseline's speed ({} -> {} s){}",
        g.speedup,
        interval_text(&t.candidates[t.baseline].interval()),
        secs(g.best_mean_s),
        if g.clear { ", the intervals apart" } else { ", the intervals overlapping: not a clear gain" }
    ))
}

/// The header lines: job, where and when, budget, how the race ended, the space and the rule.
pub fn header(t: &Tuning) -> Vec<(&'static str, String)> {
    let ended = t.ended.map_or("still racing".to_string(), |e| e.about().to_string());
    vec![
        ("job", t.job.describe()),
        ("host", format!("{} · experiment {}", t.hostname, t.experiment_id)),
        (
            "budget",
            format!(
                "{} · used {} in {} round{} · {ended}",
                fmt_ns(t.budget_ns),
                fmt_ns(t.elapsed_ns),
                t.rounds.len(),
                if t.rounds.len() == 1 { "" } else { "s" }
            ),
        ),
        (
            "searched",
            format!(
                "{} · {} candidates{}",
                t.searched.join(" · "),
                t.candidates.len(),
                if t.not_candidates.is_empty() {
                    String::new()
                } else {
                    format!(" ({} kinds of combination are none: --list)", t.not_candidates.len())
                }
            ),
        ),
        (
            "rule",
            format!(
                "time = start barrier to the last phase's end, final commit included; 95% intervals of its mean; dropped when 99% intervals are apart, judged from {} runs, at most {}",
                t.rule.min_runs, t.rule.max_runs
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render;

    /// A finished race: `a` won over `b`, which was dropped after round 3.
    fn tuning(host: &str, created: f64, bytes: u64) -> Tuning {
        crate::results::tune::sample(&format!("e-{host}-{created}"), host, created, bytes)
    }

    #[test]
    fn the_table_and_the_words() {
        let t = tuning("h", 1.0, 1 << 30);
        let r = rows(&t);
        assert_eq!(r[0][..3], ["1", "psync", "4"]);
        assert_eq!(r[0][6], "winner");
        assert_eq!(r[1][1], "mmap (baseline)");
        assert_eq!(r[1][6], "dropped after round 3 (slower than #1)");
        let v = verdict_text(&t);
        assert!(
            v.starts_with("psync, 1.00 s [") && v.contains("faster than the next (mmap (baseline), 2.00 s ["),
            "{v}"
        );
        assert!(gain_text(&t).unwrap().starts_with("2.00x the baseline's speed"), "{:?}", gain_text(&t));
        let csv = render(exporter("csv").unwrap(), &t).unwrap();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.starts_with("rank,point,candidate,baseline,engine,runs,mean_s"), "{csv}");
        let json: Tuning = crate::json::from_str(&render(exporter("json").unwrap(), &t).unwrap()).unwrap();
        assert_eq!(json, t);
    }

    /// The verdict and the saved spec say the same of a winner no other candidate ran beside
    /// ("the only candidate", never "the clear winner"); a candidate whose run was cut by the
    /// deadline says so, never `0 runs ... not run`.
    #[test]
    fn an_only_candidate_and_a_cut_one_are_named_as_they_are() {
        let mut t = tuning("h", 1.0, 1 << 30);
        t.candidates.truncate(1);
        t.baseline = 0;
        assert_eq!(t.standing(), Some("the only candidate"));
        assert!(verdict_text(&t).ends_with(": the only candidate"), "{}", verdict_text(&t));
        let mut t = tuning("h", 1.0, 1 << 30);
        t.candidates[1].times_s.clear();
        t.candidates[1].out = None;
        t.candidates[1].costs_s = vec![2.5];
        t.candidates[1].cut = 1;
        t.ended = Some(crate::results::tune::Ended::Budget);
        assert_eq!(t.standing(), Some("the only candidate with runs"));
        let r = rows(&t);
        assert_eq!(r[1][2], "0 (+1 cut)");
        assert_eq!(r[1][6], "stopped: 1 run cut by the deadline, stored as interrupted");
        assert!(verdict_text(&t).ends_with(": the only candidate with runs"), "{}", verdict_text(&t));
        t.candidates[1].cut = 0;
        assert_eq!(rows(&t)[1][6], "warm-up only");
        t.candidates[1].costs_s.clear();
        assert_eq!(rows(&t)[1][6], "not run");
    }

    /// Per job, the newest tuning of each host, hosts in order.
    #[test]
    fn winners_per_job_and_host() {
        let ts = [
            tuning("b", 3.0, 1 << 30),
            tuning("a", 2.0, 1 << 30),
            tuning("b", 1.0, 1 << 30),
            tuning("a", 1.0, 1 << 20),
        ];
        let rs = hosts::rows(&ts);
        let got: Vec<(&str, &str)> =
            rs.iter().map(|r| (r.hostname.as_str(), r.experiment_id.as_str())).collect();
        assert_eq!(
            got,
            [("a", "e-a-2"), ("b", "e-b-3"), ("a", "e-a-1")],
            "by job (1 GiB before 1 MiB), then host"
        );
        assert_eq!(hosts::by_job(&rs).len(), 2);
        assert_eq!((rs[0].verdict.as_str(), rs[0].speedup), ("clear", Some(2.0)));
        let names: Vec<&str> = hosts::FORMATS.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["text", "csv", "markdown"]);
        let text = render(crate::report::find(hosts::FORMATS, "text").unwrap(), &rs[..]).unwrap();
        assert_eq!(text.matches("tuned job checkpoint").count(), 2, "{text}");
        let csv = render(crate::report::find(hosts::FORMATS, "csv").unwrap(), &rs[..]).unwrap();
        assert_eq!(csv.lines().count(), 4);
    }

    /// The race plot: a series per candidate that raced, the dropped one ending at its round.
    #[test]
    fn the_race_plot() {
        let f = crate::report::plot::race::of(&tuning("h", 1.0, 1 << 30)).unwrap();
        let lens: Vec<usize> = f.panels[0].series.iter().map(|s| s.points.len()).collect();
        assert_eq!(lens, [4, 3]);
        assert!(f.panels[0].series[0].points[1].bar.is_none(), "not judged yet: no interval drawn");
        assert!(f.panels[0].series[0].points[2].bar.is_some());
        assert_eq!(f.legend[0].label, "#1 psync");
        crate::report::plot::draw::svg(&f).unwrap();
    }
}
