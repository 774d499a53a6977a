//! Several stored experiments drawn in one figure (`iolab plot ID ID...`): their points side by
//! side in one experiment, each tagged with the axis `experiment` (the experiment's name, or
//! its id where names repeat), so every plot kind that splits cells by an axis draws one line
//! (or bar group) per experiment: two designs measured apart, on one set of axes.

use crate::results::Axis;
use crate::results::ExperimentResult;

/// The axis that tells the experiments apart.
pub const EXPERIMENT: &str = "experiment";

/// The experiments as one: the first's host and spec, every experiment's points tagged with
/// [`EXPERIMENT`], the axes of all (each once, values joined) and then [`EXPERIMENT`]; no
/// preset, so the figure's defaults come from the axes.
pub fn merge(exps: &[ExperimentResult]) -> ExperimentResult {
    let names: Vec<String> = exps.iter().map(|e| e.spec.name.clone()).collect();
    let label = |i: usize| {
        if names.iter().filter(|n| **n == names[i]).count() == 1 {
            names[i].clone()
        } else {
            exps[i].experiment_id.clone()
        }
    };
    let mut out = exps[0].clone();
    out.points.clear();
    out.design.axes.clear();
    out.design.preset = None;
    out.findings.clear();
    for (i, e) in exps.iter().enumerate() {
        for a in &e.design.axes {
            match out.design.axes.iter_mut().find(|x| x.key == a.key) {
                Some(x) => {
                    for v in &a.values {
                        if !x.values.contains(v) {
                            x.values.push(v.clone());
                        }
                    }
                }
                None => out.design.axes.push(a.clone()),
            }
        }
        for p in &e.points {
            let mut p = p.clone();
            p.params.insert(EXPERIMENT.to_string(), label(i));
            out.points.push(p);
        }
    }
    let labels: Vec<String> = (0..exps.len()).map(label).collect();
    out.design.axes.push(Axis { key: EXPERIMENT.into(), text: labels.join(","), values: labels.clone() });
    out.spec.name = labels.join(" vs ");
    out.experiment_id = exps.iter().map(|e| e.experiment_id.as_str()).collect::<Vec<_>>().join(" + ");
    out
}
