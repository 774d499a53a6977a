//! The terminal table's section on time-bounded phases: each phase's bound (`runtime`,
//! `stonewall`, with or without wear-out, or that it read what a bounded phase wrote, or
//! visited the items a stonewalled create made), the ops its workers did (and had done at the
//! stonewall) and how much of its blocks (its items) that is.

use crate::results::{ExperimentResult, PhaseResult, Status};
use crate::spec::{OpKind, Spec};

use super::text_table;

/// `a` or `a..b`.
fn span(mut xs: Vec<u64>) -> String {
    xs.sort_unstable();
    match (xs.first(), xs.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}..{b}"),
        _ => "-".into(),
    }
}

/// The bounded phase that wrote what phase `i` reads or rewrites, if any (since the last
/// write phase); for a metadata phase, the stonewalled create or mkdir whose items it visits.
fn read_after(spec: &Spec, i: usize) -> Option<&str> {
    let ph = spec.phases.get(i)?;
    if ph.op.is_metadata() && !ph.op.makes_items() {
        let maker = spec.phases[..i].iter().rev().find(|q| q.op.makes_items())?;
        return spec.phase_bound(maker).is_some().then_some(maker.name.as_str());
    }
    if !matches!(ph.op, OpKind::Read | OpKind::Rewrite | OpKind::Rw) {
        return None;
    }
    let from = spec.phases[..i].iter().rposition(|q| q.op == OpKind::Write).unwrap_or(0);
    spec.phases[from..i]
        .iter()
        .rev()
        .find(|q| q.op.is_write() && spec.phase_bound(q).is_some())
        .map(|q| q.name.as_str())
}

/// One row: phase, bound, ops per worker, ops at the stonewall, share of its blocks (of those
/// that hold data, after a bounded phase that wrote).
fn row(spec: &Spec, plan: &crate::plan::RunPlan, i: usize, phases: &[PhaseResult]) -> Option<Vec<String>> {
    let ph = &phases[i];
    let after = read_after(spec, i);
    let bound = match (ph.time_bound, after) {
        (Some(b), Some(w)) => format!("{}, in what {w} wrote", b.label()),
        (Some(b), None) => b.label(),
        (None, Some(w)) if ph.op.is_metadata() => format!("the items {w} made"),
        (None, Some(w)) => format!("reads what {w} wrote"),
        (None, None) => return None,
    };
    let reps: Vec<_> = ph.repetitions.iter().filter(|r| r.status == Status::Complete).collect();
    let ops: Vec<u64> = reps.iter().flat_map(|r| r.workers.iter().map(|w| w.ops)).collect();
    let walls: Vec<u64> =
        reps.iter().flat_map(|r| r.workers.iter().filter_map(|w| w.stonewall_ops)).collect();
    let at_wall = match (ph.time_bound.is_some_and(|b| !b.wraps()), walls.is_empty()) {
        (false, _) => "-".to_string(),
        (true, true) => "none came".to_string(),
        (true, false) => span(walls),
    };
    let planned: u64 = plan.phases.get(i).map_or(0, |p| {
        let md = p.op.is_metadata();
        p.workers.iter().map(|w| if md { w.md.map_or(0, |m| m.items) } else { w.ops.timed_ops() }).sum()
    });
    // The blocks with data in each run: the planned ones, or those the writer did in that run.
    let writer = after.and_then(|w| phases.iter().find(|q| q.name == w));
    let held = |run: &str| -> u64 {
        let wrote = writer.and_then(|w| w.repetitions.iter().find(|r| r.run_id == run)).map(|r| r.ops);
        wrote.map_or(planned, |n| n.min(planned))
    };
    let shares: Vec<f64> =
        reps.iter().filter(|r| held(&r.run_id) > 0).map(|r| r.ops as f64 / held(&r.run_id) as f64).collect();
    let share = match shares.len() {
        0 => "-".to_string(),
        n => {
            let x = shares.iter().sum::<f64>() / n as f64;
            if x > 1.0 { format!("{x:.1} passes") } else { format!("{:.1}%", x * 100.0) }
        }
    };
    Some(vec![ph.name.clone(), bound, span(ops), at_wall, share])
}

/// What the section's columns are.
pub const LEGEND: &str = "runtime: each worker ran for the time, wrapping around its blocks; stonewall: each worker stopped at the time or at its last block (a create or mkdir: its last item); wear-out: then went on to the most ops any worker had done; of its blocks: of those holding data (a metadata phase: of the items made); the rates above are bytes (items) / time, as for any phase";

/// The section, or nothing when no phase is bounded in time.
pub fn render_bounds(exp: &ExperimentResult) -> String {
    let Some((headers, rows, right)) = parts(exp) else { return String::new() };
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut out = String::from("\ntime-bounded phases (over the complete runs):\n");
    out += &text_table(&headers, &rows, &right);
    out + &crate::text::wrap(LEGEND, 100, "", 0)
}

/// The section's headers, rows and right-aligned columns; None when no phase is bounded.
pub fn parts(exp: &ExperimentResult) -> Option<super::TableParts> {
    let mut rows = vec![];
    for p in &exp.points {
        let spec = p.spec.as_ref().unwrap_or(&exp.spec);
        // A spec planning cannot rely on (one stored before imports checked it) is not planned.
        if !spec.time_bounded() || crate::plan::check(spec).is_err() {
            continue;
        }
        let plan = crate::plan::plan(spec);
        for i in 0..p.phases.len() {
            if let Some(mut r) = row(spec, &plan, i, &p.phases) {
                r.insert(0, super::point_params(p));
                rows.push(r);
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut headers = vec!["point", "phase", "bound", "ops per worker", "at the stonewall", "of its blocks"];
    let mut right = vec![3, 4, 5];
    if exp.points.len() < 2 {
        headers.remove(0);
        rows.iter_mut().for_each(|r| drop(r.remove(0)));
        right = vec![2, 3, 4];
    }
    Some((headers.into_iter().map(String::from).collect(), rows, right))
}
