//! The race of a tuning (`iolab tune`): each candidate's mean time with its 95% interval after
//! every round it raced (x: the round, each candidate a little apart so intervals do not
//! hide one another), a line ending where it was dropped; the lower the better.

use super::axis::{Axis, Unit};
use super::figure::{Draw, Figure, Panel, Point, Series, Style};
use crate::error::{Error, Result};
use crate::results::ExperimentResult;
use crate::results::tune::Tuning;
use crate::store::Store;

/// The race of the tuning stored with `exp`.
pub fn figure(store: &Store, exp: &ExperimentResult) -> Result<Figure> {
    let t = store.load_tuning(&exp.experiment_id)?.ok_or_else(|| {
        Error::NotFound(format!("experiment {} is no tuning (iolab tune makes one)", exp.experiment_id))
    })?;
    of(&t)
}

/// The race of a tuning record.
pub fn of(t: &Tuning) -> Result<Figure> {
    if t.rounds.is_empty() {
        return Err(Error::NotFound(format!("tuning {} has no round yet", t.experiment_id)));
    }
    let ranked = t.ranked();
    let n = ranked.len().max(1) as f64;
    let (mut series, mut legend, mut ys, mut xs) = (vec![], vec![], vec![], vec![]);
    for (k, &i) in ranked.iter().enumerate() {
        let dx = (k as f64 - (n - 1.0) / 2.0) * 0.5 / n;
        let points: Vec<Point> = t
            .rounds
            .iter()
            .filter_map(|r| {
                let iv = r.intervals.get(i).copied().flatten().filter(|iv| iv.n > 0)?;
                let x = r.round as f64 + dx;
                // The interval once the rule judges it (below, t-intervals of 2 runs dwarf the rest).
                let bar = iv.ci95_s.filter(|_| iv.n >= t.rule.min_runs).map(|[lo, hi]| (lo, hi));
                ys.extend([iv.mean_s].into_iter().chain(bar.into_iter().flat_map(|(a, b)| [a, b])));
                xs.push(x);
                Some(Point { x, y: iv.mean_s, bar, span: None })
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        // Colour and marker both cycle, the marker one step further each cycle, so no two of
        // up to 49 candidates look alike.
        let j = legend.len();
        let label = format!("#{} {}", k + 1, super::super::tune::name(t, i));
        let (colors, markers) = (super::figure::PALETTE, super::figure::MARKERS);
        legend.push(Style {
            label,
            color: colors[j % colors.len()],
            marker: markers[(j + j / colors.len()) % markers.len()],
        });
        series.push(Series { style: legend.len() - 1, draw: Draw::LineMarkers, points });
    }
    xs.extend([0.5, t.rounds.len() as f64 + 0.5]);
    // A log axis when times span decades and no interval reaches zero; else linear from zero,
    // intervals cut there (a time is never negative).
    let positive = ys.iter().all(|&y| y > 0.0);
    if !positive {
        for p in series.iter_mut().flat_map(|s: &mut Series| s.points.iter_mut()) {
            p.bar = p.bar.map(|(lo, hi)| (lo.max(0.0), hi));
        }
        ys.retain(|&y| y >= 0.0);
        ys.push(0.0);
    }
    Ok(Figure {
        title: format!("Tuning race · {}", t.job.describe()),
        subtitle: vec![
            format!("{} · experiment {}", t.hostname, t.experiment_id),
            format!(
                "each point: a candidate's mean time after the round, its bar the 95% interval of that mean (from {} runs on); a line ends where its candidate was dropped",
                t.rule.min_runs
            ),
        ],
        panels: vec![Panel {
            title: String::new(),
            x: Axis::numeric("round", &xs, Unit::Number, Some(false), false),
            y: if positive {
                Axis::numeric("job time (s), lower is better", &ys, Unit::Number, None, false)
            } else {
                Axis::numeric("job time (s), lower is better", &ys, Unit::Number, Some(false), true)
            },
            series,
        }],
        legend,
        notes: vec![short_verdict(t)],
        size: None,
    })
}

/// The verdict in a few words, for under the plot.
fn short_verdict(t: &Tuning) -> String {
    use crate::results::tune::Verdict;
    let c = |i: usize| {
        format!(
            "{}, {}",
            super::super::tune::name(t, i),
            super::super::tune::interval_text(&t.candidates[i].interval())
        )
    };
    match &t.verdict {
        Verdict::Winner { best } => format!("winner: {}", c(*best)),
        Verdict::NoClearWinner { best, tied } => {
            format!("no clear winner between {}: the lowest mean is {}", tied.len() + 1, c(*best))
        }
        Verdict::Undecided => "undecided".into(),
    }
}
