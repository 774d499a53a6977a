//! `--format mdtest`: an experiment's metadata phases as mdtest prints its summary (`SUMMARY
//! rate: (of N iterations)`, one row per operation with Max, Min, Mean and Std Dev), so that
//! scripts that read mdtest's output read iolab's. Each iteration's rate is mdtest's: the items
//! of all tasks over the slowest task's time (iolab's min_SAR in ops/s, the phase's commit
//! inside it); Std Dev over the iterations with n - 1, 0 for one. The tree rows are left out:
//! iolab makes the trees before the first phase, untimed.

use std::io::Write;

use super::{Exporter, write_err};
use crate::error::Result;
use crate::results::{ExperimentResult, Status};
use crate::spec::{ItemKind, OpKind, Spec};

pub struct Mdtest;

impl Exporter for Mdtest {
    fn name(&self) -> &'static str {
        "mdtest"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        out.write_all(render(exp).as_bytes()).map_err(write_err)
    }
}

/// mdtest's rows in its order: (test name, op, items' kind).
const ROWS: &[(&str, OpKind, ItemKind)] = &[
    ("Directory creation", OpKind::Mkdir, ItemKind::Dirs),
    ("Directory stat", OpKind::Stat, ItemKind::Dirs),
    ("Directory rename", OpKind::Rename, ItemKind::Dirs),
    ("Directory removal", OpKind::Rmdir, ItemKind::Dirs),
    ("File creation", OpKind::Create, ItemKind::Files),
    ("File stat", OpKind::Stat, ItemKind::Files),
    ("File read", OpKind::ReadFiles, ItemKind::Files),
    ("File removal", OpKind::Unlink, ItemKind::Files),
];

/// The per-iteration rates of the first phase of `op` over items of `kind`, if it ran.
fn rates(exp: &ExperimentResult, op: OpKind, kind: ItemKind) -> Option<Vec<f64>> {
    exp.points.iter().find_map(|p| {
        let spec: &Spec = p.spec.as_ref().unwrap_or(&exp.spec);
        let md = spec.md.as_ref()?;
        if md.kind != kind {
            return None;
        }
        let ph = p.phases.iter().find(|ph| ph.op == op)?;
        let xs = ph
            .repetitions
            .iter()
            .filter(|r| r.status == Status::Complete)
            .map(|r| r.min_sar_ops_per_s)
            .collect();
        Some(xs)
    })
}

pub fn render(exp: &ExperimentResult) -> String {
    let spec = &exp.spec;
    let tasks = spec.workers;
    let nodes = exp
        .points
        .iter()
        .flat_map(|p| &p.phases)
        .flat_map(|ph| &ph.repetitions)
        .find(|r| !r.hosts.is_empty())
        .map_or(1, |r| r.hosts.len());
    let mut out = format!(
        "-- started at {} --\n\niolab {}: the run in mdtest's layout (iolab's measurement; docs/ior.md says what each figure is)\nmdtest translated by iolab was launched with {tasks} total task(s) on {nodes} node(s)\nCommand line used: {}\n",
        super::html::utc(exp.created_unix_s),
        exp.iolab_version,
        spec.name,
    );
    if let Some(d) = spec.dirs.first() {
        out += &format!("Path: {}\n", d.display());
    }
    let items = spec.md.as_ref().map_or(0, |m| m.items);
    let what =
        if spec.md.as_ref().is_some_and(|m| m.kind == ItemKind::Dirs) { "directories" } else { "files" };
    out += &format!("\n{tasks} tasks, {} {what}\n", items * tasks as u64);
    let iterations =
        exp.points.iter().flat_map(|p| &p.phases).map(|ph| ph.repetitions.len()).max().unwrap_or(0);
    out += &format!("\nSUMMARY rate (in ops/sec): (of {iterations} iterations)\n");
    out += &format!("   Operation     {:15} Max            Min           Mean        Std Dev\n", "");
    out += &format!("   ---------      {:15}---            ---           ----        -------\n", "");
    let kinds: Vec<ItemKind> = exp
        .points
        .iter()
        .filter_map(|p| p.spec.as_ref().unwrap_or(&exp.spec).md.as_ref().map(|m| m.kind))
        .collect();
    for (name, op, kind) in ROWS {
        if !kinds.contains(kind) {
            continue;
        }
        let xs = rates(exp, *op, *kind).unwrap_or_default();
        let (max, min, mean, sd) = summary(&xs);
        out += &format!("   {name:<18}     {max:14.3} {min:14.3} {mean:14.3} {sd:14.3}\n");
    }
    out += &format!("-- finished at {} --\n", super::html::utc(exp.created_unix_s + elapsed_s(exp)));
    out
}

/// Max, min, mean, sd (n - 1; 0 for fewer than two) of `xs`; zeros when empty (a phase that
/// did not run, as mdtest prints it).
fn summary(xs: &[f64]) -> (f64, f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() < 2 {
        0.0
    } else {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    (xs.iter().cloned().fold(f64::MIN, f64::max), xs.iter().cloned().fold(f64::MAX, f64::min), mean, sd)
}

fn elapsed_s(exp: &ExperimentResult) -> f64 {
    let reps = exp.points.iter().flat_map(|p| &p.phases).flat_map(|ph| &ph.repetitions);
    reps.map(|r| r.time_ns as f64 / 1e9).sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_is_mdtests() {
        assert_eq!(super::summary(&[2.0, 4.0]), (4.0, 2.0, 3.0, 2f64.sqrt()));
        assert_eq!(super::summary(&[5.0]), (5.0, 5.0, 5.0, 0.0));
        assert_eq!(super::summary(&[]), (0.0, 0.0, 0.0, 0.0));
    }
}
