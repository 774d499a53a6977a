//! What `iolab tune` hands back to run: the recommended candidate as an experiment file and
//! as the equivalent `iolab run` command line (both from the same raw parameters, so they are
//! the same spec), and the whole space as one experiment file whose `[sweep]` zips the keys
//! that differ between candidates, so `iolab run FILE` runs the exhaustive grid.

use std::collections::BTreeMap;

use super::candidates::Cand;
use crate::experiment::{FlagKind, PARAMS, Params};
use crate::results::Axis;

/// Whole numbers and booleans bare, everything else as a TOML string.
fn q(s: &str) -> String {
    let bare = (!s.is_empty() && s.len() < 19 && s.chars().all(|c| c.is_ascii_digit()))
        || s == "true"
        || s == "false";
    if bare { s.to_string() } else { toml::Value::String(s.to_string()).to_string() }
}

/// Parameters as the lines of an experiment file, in the order of [`PARAMS`].
fn toml_lines(p: &Params) -> String {
    let mut out = String::new();
    for def in PARAMS {
        if let Some(values) = p.0.get(def.key) {
            if def.list {
                out += &format!(
                    "{} = [{}]\n",
                    def.key,
                    values.iter().map(|v| q(v)).collect::<Vec<_>>().join(", ")
                );
            } else {
                out += &format!("{} = {}\n", def.key, q(&values[0]));
            }
        }
    }
    out
}

/// The parameters a recommended run takes: the candidate's, named after the job, with
/// `reps` repetitions.
pub fn recommended_params(c: &Cand, job: &str, reps: u32) -> Params {
    let mut p = c.params.clone();
    p.0.insert("name".into(), vec![format!("tuned-{job}")]);
    p.0.insert("reps".into(), vec![reps.to_string()]);
    p
}

/// The experiment file of the recommended candidate.
pub fn recommended_toml(p: &Params, about: &str) -> String {
    let mut s = String::new();
    for line in about.lines() {
        s += &format!("# {line}\n");
    }
    s + "# Run it with: iolab run THIS_FILE.toml\n\n" + &toml_lines(p)
}

/// Quotes a word for `sh` when it needs it.
fn sh(w: &str) -> String {
    if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c)) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// The same parameters as one `iolab run` command line: each key by its own flag (a switch
/// when true, left out when false; lists by their flag's form).
pub fn command_line(p: &Params) -> String {
    let mut words = vec!["iolab".to_string(), "run".to_string()];
    for def in PARAMS {
        let (Some(values), Some(flag)) = (p.0.get(def.key), def.flags.first()) else { continue };
        let name = format!("--{}", flag.name);
        match flag.kind {
            FlagKind::Switch(_) => {
                if values.first().is_some_and(|v| v == "true") {
                    words.push(name);
                }
            }
            FlagKind::Repeated => {
                for v in values {
                    words.extend([name.clone(), sh(v)]);
                }
            }
            FlagKind::Commas | FlagKind::Value => words.extend([name, sh(&values.join(","))]),
        }
    }
    words.join(" ")
}

/// The keys whose values differ between candidates, each with every candidate's value (as its
/// spec states it, so a key a candidate leaves at its default still has a value that
/// resolves to it): the zipped axes of the tuning's experiment.
pub fn axes(cands: &[Cand]) -> Vec<Axis> {
    let all: Vec<Params> = cands.iter().map(|c| c.spec.to_params()).collect();
    let value = |p: &Params, k: &str| match p.0.get(k) {
        Some(v) => v.join(","),
        None => match k {
            "window" => "file".into(),
            "strategy" => "none".into(),
            _ => String::new(),
        },
    };
    let mut keys: Vec<&str> =
        PARAMS.iter().map(|d| d.key).filter(|k| !["name", "iters"].contains(k)).collect();
    keys.retain(|k| {
        let first = value(&all[0], k);
        all.iter().any(|p| value(p, k) != first)
    });
    keys.iter()
        .map(|k| {
            let values: Vec<String> = all.iter().map(|p| value(p, k)).collect();
            Axis { key: k.to_string(), text: values.join(","), values }
        })
        .collect()
}

/// The point parameters of each candidate: its values on the axes.
pub fn point_params(axes: &[Axis], i: usize) -> BTreeMap<String, String> {
    axes.iter().map(|a| (a.key.clone(), a.values[i].clone())).collect()
}

/// The whole space as an experiment file: the baseline's parameters but the axes' keys, then
/// `[sweep]` with every axis zipped, `reps` each.
pub fn grid_toml(base: &Params, axes: &[Axis], reps: u32, about: &str) -> String {
    let mut p = base.clone();
    for a in axes {
        p.0.remove(&a.key);
    }
    p.0.insert("reps".into(), vec![reps.to_string()]);
    p.0.insert("interleave".into(), vec!["shuffle".into()]);
    let mut s = String::new();
    for line in about.lines() {
        s += &format!("# {line}\n");
    }
    s += "# Every candidate, each one point: run it with iolab run THIS_FILE.toml\n\n";
    s += &toml_lines(&p);
    if !axes.is_empty() {
        s += "\n[sweep]\n";
        for a in axes {
            s += &format!("{} = [{}]\n", a.key, a.values.iter().map(|v| q(v)).collect::<Vec<_>>().join(", "));
        }
        if axes.len() > 1 {
            s += &format!("zip = [[{}]]\n", axes.iter().map(|a| q(&a.key)).collect::<Vec<_>>().join(", "));
        }
    }
    s
}
