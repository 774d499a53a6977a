//! A finding's sides: the points whose sweep values match (the first alternative the run has;
//! with `best`, the one point that did best over those keys), their phase and figure, and the
//! figure's value in each complete repetition.

use std::collections::BTreeMap;

use super::rule::summarize;
use super::{Facts, FindingSpec, Sel, SideResult};
use crate::results::{Headline, PointResult, Repetition, Status, flag_kind};
use crate::stats;

/// The keys of a side that name its own phase and figure, or the keys to take the best over,
/// rather than a sweep value.
pub(super) const OWN_KEYS: [&str; 3] = ["phase", "figure", "best"];

/// The flags of a run that make its figure doubtful for a finding.
const DOUBTS: [&str; 3] = ["workers did not overlap", "stalled", "oversubscribed"];

/// A side's first value for `key`.
pub(super) fn first(side: &BTreeMap<String, Sel>, key: &str) -> Option<String> {
    side.get(key).and_then(|s| s.values().into_iter().next())
}

/// The figures a finding can compare: name, what it is, and how to print it.
pub const FIGURES: &[(&str, &str)] = &[
    ("agg", "agg: all bytes / (first open to last close) (MB/s)"),
    ("max_sar", "max_SAR (MB/s)"),
    ("min_sar", "min_SAR (MB/s)"),
    ("avg_individual", "average individual rate (MB/s)"),
    ("time", "time (s)"),
    ("prealloc_time", "preallocation time (s)"),
    ("open_time", "opening a worker's files (s; the workers' mean)"),
    ("close_time", "closing a worker's files (s; the workers' mean)"),
    ("latency_p50", "median time of one op (s; the workers' mean)"),
    ("latency_max", "slowest single op (s; over the workers)"),
    (
        "period_ops",
        "the fundamental period of the slow ops (ops; the first worker's first, the one carrying the most time)",
    ),
    ("period_explains", "share of the slow ops on the fundamental period (0..1; the workers' mean)"),
    (
        "period_time_share",
        "share of the excess time (over the median) on the fundamental period (0..1; the workers' mean)",
    ),
    (
        "period_readahead",
        "the fundamental period's bytes over the target's read-ahead (period x block size / read_ahead_kb, as the host facts record it; the first worker's)",
    ),
];

/// Whether a figure is a time (printed in seconds; lower is better) rather than a rate (MB/s).
pub(super) fn is_time(figure: &str) -> bool {
    !is_plain(figure) && (figure.contains("time") || figure.starts_with("latency"))
}

/// Whether a figure is neither a rate nor a time (printed as it is).
pub(super) fn is_plain(figure: &str) -> bool {
    figure.starts_with("period")
}

/// The value of a figure in one repetition of a point of block size `bs_bytes`.
fn figure_of(r: &Repetition, figure: &str, bs_bytes: Option<u64>, facts: &Facts) -> Option<f64> {
    let mean_of = |f: &dyn Fn(&crate::results::WorkerResult) -> f64| {
        let xs: Vec<f64> = r.workers.iter().map(|w| f(&w)).collect();
        Some(stats::mean(&xs)).filter(|m| m.is_finite())
    };
    Some(match figure {
        "agg" => r.agg_bytes_per_s?,
        "max_sar" => r.max_sar_bytes_per_s,
        "min_sar" => r.min_sar_bytes_per_s,
        "avg_individual" => r.avg_individual_bytes_per_s,
        "time" => r.time_ns as f64 / 1e9,
        "prealloc_time" => r.prealloc_ns as f64 / 1e9,
        "open_time" => mean_of(&|w| w.open_ns as f64 / 1e9)?,
        "close_time" => mean_of(&|w| w.close_ns as f64 / 1e9)?,
        "latency_p50" => mean_of(&|w| w.latency_ns.p50 as f64 / 1e9)?,
        "latency_max" => r.workers.iter().map(|w| w.latency_ns.max).max()? as f64 / 1e9,
        "period_ops" => r.workers.iter().next()?.periods.as_ref()?.first()?.every_ops as f64,
        "period_explains" | "period_time_share" => {
            // A worker with no period found explains none of its slow ops, nor of its time.
            let of = |p: &crate::latency::period::Period| {
                if figure == "period_explains" { p.explains } else { p.time_share }
            };
            let xs: Vec<f64> = r
                .workers
                .iter()
                .filter_map(|w| w.periods.as_ref().map(|p| p.first().map_or(0.0, of)))
                .collect();
            Some(stats::mean(&xs)).filter(|m| m.is_finite())?
        }
        "period_readahead" => {
            // No period found: none of the window's size (0), as a run that found none.
            let ra = facts.read_ahead_kb.filter(|&k| k > 0)? as f64 * 1024.0;
            let w = r.workers.iter().next()?;
            let period = w.periods.as_ref()?.first().map_or(0, |p| p.every_ops);
            period as f64 * bs_bytes? as f64 / ra
        }
        _ => return None,
    })
}

/// Whether a point's value for a key equals a wanted value (sizes compare as bytes).
fn same_value(have: &str, want: &str) -> bool {
    if have == want {
        return true;
    }
    // Any memory size will do, as long as multiples of it stay apart.
    let size = |s: &str| crate::units::parse_size(s, 1 << 40).ok();
    matches!((size(have), size(want)), (Some(a), Some(b)) if a == b)
}

/// A side resolved: the indices of its points, its phase name and figure.
pub(super) struct Picked {
    pub points: Vec<usize>,
    pub label: String,
    pub phase: String,
    pub figure: String,
}

impl FindingSpec {
    pub(super) fn pick(
        &self,
        side: &BTreeMap<String, Sel>,
        points: &[PointResult],
        stat: Headline,
        facts: &Facts,
    ) -> Picked {
        let figure = first(side, "figure").or(self.figure.clone()).unwrap_or_else(|| "max_sar".into());
        let phase = first(side, "phase").or(self.phase.clone());
        let mut chosen: Vec<(String, String)> = vec![];
        let mut idx: Vec<usize> = (0..points.len()).collect();
        for (k, sel) in side.iter().filter(|(k, _)| !OWN_KEYS.contains(&k.as_str())) {
            let hit = sel.values().into_iter().find(|want| {
                idx.iter().any(|&i| points[i].params.get(k).is_some_and(|h| same_value(h, want)))
            });
            match hit {
                Some(want) => {
                    idx.retain(|&i| points[i].params.get(k).is_some_and(|h| same_value(h, &want)));
                    chosen.push((k.clone(), want));
                }
                None => {
                    idx.clear();
                    chosen.push((k.clone(), format!("{} (not run)", sel.values().join("|"))));
                }
            }
        }
        let phase_of = |idx: &[usize]| {
            phase
                .clone()
                .or_else(|| idx.first().and_then(|&i| points[i].phases.first()).map(|p| p.name.clone()))
                .unwrap_or_default()
        };
        // `best`: of the points left, the one whose statistic is best (the highest rate, the
        // shortest time), as the study's tables give each strategy's best over sync sizes.
        if let Some(best) = side.get("best").map(Sel::values)
            && !idx.is_empty()
        {
            let value = |i: usize| {
                let p = Picked {
                    points: vec![i],
                    label: String::new(),
                    phase: phase_of(&[i]),
                    figure: figure.clone(),
                };
                let xs: Vec<f64> = samples(&p, points, facts).into_iter().map(|s| s.1).collect();
                (xs.len() >= 2).then(|| summarize(&xs, stat).0).filter(|v| v.is_finite())
            };
            let lower = is_time(&figure);
            let scored: Vec<(usize, f64)> = idx.iter().filter_map(|&i| value(i).map(|v| (i, v))).collect();
            let top = match idx[..] {
                // One point left: it is the best there is (named all the same).
                [only] => Some(only),
                _ => scored
                    .iter()
                    .copied()
                    .reduce(|x, y| if (y.1 < x.1) == lower { y } else { x })
                    .map(|t| t.0),
            };
            if let Some(i) = top {
                let of: Vec<String> = best
                    .iter()
                    .map(|k| format!("{k}={}", points[i].params.get(k).cloned().unwrap_or_default()))
                    .collect();
                chosen.push(("best".into(), format!("{} of {}", of.join(" "), idx.len())));
                idx = vec![i];
            }
        }
        let label = if chosen.is_empty() {
            "every point".to_string()
        } else {
            chosen.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        };
        let phase = phase_of(&idx);
        Picked { points: idx, label, phase, figure }
    }
}

/// The side's samples by (point, repetition), from complete repetitions only.
pub(super) fn samples(p: &Picked, points: &[PointResult], facts: &Facts) -> Vec<((usize, u32), f64)> {
    let mut out = vec![];
    for (i, r) in runs(p, points) {
        let bs = points[i].spec.as_ref().map(|s| s.bs_bytes);
        if let Some(v) = figure_of(r, &p.figure, bs, facts) {
            out.push(((i, r.rep), v));
        }
    }
    out
}

/// The complete repetitions of a side's phase, with their point.
fn runs<'a>(p: &Picked, points: &'a [PointResult]) -> Vec<(usize, &'a Repetition)> {
    let mut out = vec![];
    for &i in &p.points {
        let want = expand(&p.phase, &points[i].params);
        for ph in points[i].phases.iter().filter(|ph| ph.name == want) {
            out.extend(ph.repetitions.iter().filter(|r| r.status == Status::Complete).map(|r| (i, r)));
        }
    }
    out
}

/// The side as measured, by the statistic `stat`.
pub(super) fn side(
    p: &Picked,
    s: &[((usize, u32), f64)],
    points: &[PointResult],
    stat: Headline,
    facts: &Facts,
) -> SideResult {
    let xs: Vec<f64> = s.iter().map(|x| x.1).collect();
    let (mean, ci95) = summarize(&xs, stat);
    let mut flags: Vec<String> = vec![];
    for (_, r) in runs(p, points) {
        for f in &r.flags {
            if let Some(k) = flag_kind(f).filter(|k| DOUBTS.contains(k))
                && !flags.iter().any(|x| x == k)
            {
                flags.push(k.to_string());
            }
        }
    }
    SideResult {
        point: p.label.clone(),
        phase: p.phase.clone(),
        figure: p.figure.clone(),
        n: xs.len(),
        mean,
        ci95,
        flags,
        note: if is_plain(&p.figure) { period_note(p, points, facts) } else { String::new() },
    }
}

/// What a period figure rests on: the period each run found (its first worker's first, the
/// one carrying the most time) with its share of the time, and the read-ahead the host facts
/// record, in ops of the block size (`2048 ops in 3 of 3 runs (82% of the time); read-ahead
/// of /dev/vda 8192 KiB = 2048 ops of 4 KiB`).
fn period_note(p: &Picked, points: &[PointResult], facts: &Facts) -> String {
    let runs = runs(p, points);
    // every_ops (0: none found) -> (runs, sum of time share).
    let mut found: BTreeMap<u64, (usize, f64)> = BTreeMap::new();
    for (_, r) in &runs {
        let first = r.workers.iter().next().and_then(|w| w.periods.as_ref().and_then(|p| p.first().copied()));
        let e = found.entry(first.map_or(0, |p| p.every_ops)).or_default();
        e.0 += 1;
        e.1 += first.map_or(0.0, |p| p.time_share);
    }
    let mut by: Vec<(u64, (usize, f64))> = found.into_iter().collect();
    by.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0)));
    let mut parts: Vec<String> = by
        .iter()
        .take(3)
        .map(|(k, (n, share))| match k {
            0 => format!("no period in {n} of {} runs", runs.len()),
            k => format!(
                "{k} ops in {n} of {} runs ({:.0}% of the time)",
                runs.len(),
                100.0 * share / *n as f64
            ),
        })
        .collect();
    if let Some(ra) = facts.read_ahead_kb {
        let bs = p.points.first().and_then(|&i| points[i].spec.as_ref()).map(|s| s.bs_bytes);
        let of = facts.device.as_deref().map(|d| format!(" of {d}")).unwrap_or_default();
        let ops = bs
            .filter(|&b| b > 0)
            .map(|b| format!(" = {} ops of {}", ra * 1024 / b, crate::units::fmt_size(b)))
            .unwrap_or_default();
        parts.push(format!("read-ahead{of} {ra} KiB{ops}"));
    } else if p.figure == "period_readahead" {
        parts.push("no read-ahead recorded for the target".into());
    }
    parts.join("; ")
}

/// A phase name with the point's sweep values put in for `{key}` (`read:workers={n}:cold`).
fn expand(phase: &str, params: &BTreeMap<String, String>) -> String {
    params.iter().fold(phase.to_string(), |s, (k, v)| s.replace(&format!("{{{k}}}"), v))
}
