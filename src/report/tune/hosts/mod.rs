//! The winners of `iolab tune` across hosts (`iolab results compare --by host`): per job, one
//! row per host with its newest tuning's recommended candidate, its interval, the verdict and
//! the gain over the baseline. Its formats are the exporters of [`FORMATS`], one file each;
//! the HTML page's section is in `html::compare`.

use crate::report::Exporter;
use crate::results::tune::{Tuning, Verdict};

mod csv;
mod markdown;
mod text;

/// The formats of the tuned-jobs table.
pub static FORMATS: &[&(dyn Exporter<[Row]> + Sync)] = &[&text::Text, &csv::Csv, &markdown::Markdown];

/// One host's answer for one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The job in words (what must be equal for rows to compare).
    pub job: String,
    pub hostname: String,
    pub winner: String,
    /// `clear`, `no clear winner` or `undecided`.
    pub verdict: String,
    pub mean_s: Option<f64>,
    pub ci95_s: Option<[f64; 2]>,
    /// Baseline's mean time over the recommended one's.
    pub speedup: Option<f64>,
    pub candidates: usize,
    pub experiment_id: String,
}

/// One row per job and host: the newest tuning of each (`tunings` newest first), ordered by
/// job, then host.
pub fn rows(tunings: &[Tuning]) -> Vec<Row> {
    let mut seen: Vec<(String, String)> = vec![];
    let mut out = vec![];
    for t in tunings {
        let key = (t.job.describe(), t.host_id.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let best = t.verdict.best();
        let iv = best.map(|b| t.candidates[b].interval());
        out.push(Row {
            job: t.job.describe(),
            hostname: t.hostname.clone(),
            winner: best.map_or("-".into(), |b| super::name(t, b)),
            verdict: match t.verdict {
                Verdict::Winner { .. } => "clear",
                Verdict::NoClearWinner { .. } => "no clear winner",
                Verdict::Undecided => "undecided",
            }
            .into(),
            mean_s: iv.filter(|i| i.n > 0).map(|i| i.mean_s),
            ci95_s: iv.and_then(|i| i.ci95_s),
            speedup: t.gain().map(|g| g.speedup),
            candidates: t.candidates.len(),
            experiment_id: t.experiment_id.clone(),
        });
    }
    out.sort_by(|a, b| (&a.job, &a.hostname).cmp(&(&b.job, &b.hostname)));
    out
}

/// Column headers (the job is a heading above its rows, or a column in CSV).
pub const HEADERS: [&str; 7] =
    ["host", "recommended", "verdict", "time s", "95% interval", "gain", "experiment"];

/// The cells of a row under [`HEADERS`].
pub fn cells(r: &Row) -> Vec<String> {
    let s = super::secs;
    vec![
        r.hostname.clone(),
        r.winner.clone(),
        r.verdict.clone(),
        r.mean_s.map_or("-".into(), s),
        r.ci95_s.map_or("-".into(), |[lo, hi]| format!("[{}, {}]", s(lo), s(hi))),
        r.speedup.map_or("-".into(), |g| format!("{g:.2}x")),
        r.experiment_id.clone(),
    ]
}

/// The rows grouped by job, in order.
pub fn by_job(rows: &[Row]) -> Vec<(&str, Vec<&Row>)> {
    let mut out: Vec<(&str, Vec<&Row>)> = vec![];
    for r in rows {
        match out.last_mut() {
            Some((j, v)) if *j == r.job => v.push(r),
            _ => out.push((&r.job, vec![r])),
        }
    }
    out
}

/// What the figures are, under the table.
pub const FOOTER: &str = "time s: the recommended candidate's mean time for the job, with the 95% interval of that mean; gain: the baseline's mean time over it (the plain program on that host); verdict: clear when its interval lay below every other candidate's";
