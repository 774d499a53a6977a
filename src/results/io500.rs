//! The IO500 workload set's figures and score from an experiment laid out as the IO500
//! preset: points told apart by a `workload` axis (`ior-easy`, `ior-hard`, `mdtest-easy`,
//! `mdtest-hard`), their phases mapped to IO500's twelve (ior-easy-write is the `write` phase
//! of the `ior-easy` point, mdtest-hard-read its `read-files`, find the `find` phases of both
//! mdtest points together). IO500's definitions (github.com/IO500/io500, `src/main.c`,
//! `calc_score`): a bandwidth phase's figure is all bytes over the phase's time in GiB/s, a
//! metadata phase's all items over its time in thousands per second (kIOPS; find: the entries
//! it examined); BW is the geometric mean of the four bandwidth figures, MD of the eight
//! metadata ones, and the score the square root of BW x MD. Here a bandwidth phase's time is
//! IOR's, from the first open to the last close, commits included (agg; min_SAR in results
//! stored before iolab measured agg), a metadata phase's the slowest worker's (min_SAR, as
//! mdtest's barrier to barrier); every figure comes per repetition: the score of repetition k
//! is made of every phase's repetition k, and the statistics are over those scores.
//!
//! A score is worked out only for the IO500 workload set itself: every workload point checked
//! against IO500's (its phases, layout, transfer size, directories, file size, the stats'
//! shift and find's pattern). An experiment whose `workload` axis merely names IO500's
//! workloads gets no score, and its section says which of its points differ, and how.

use serde::{Deserialize, Serialize};

use super::{ExperimentResult, PhaseResult, Repetition, Status};
use crate::spec::{Layout, MdDirs, OpKind, Spec};
use crate::stats::Summary;

/// The four workloads, as the `workload` axis names them.
pub const WORKLOADS: [&str; 4] = ["ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"];

/// IO500's scored phases: (name, workload, op, bandwidth?), in IO500's order of scoring.
const PHASES: [(&str, &str, OpKind, bool); 11] = [
    ("ior-easy-write", "ior-easy", OpKind::Write, true),
    ("ior-easy-read", "ior-easy", OpKind::Read, true),
    ("ior-hard-write", "ior-hard", OpKind::Write, true),
    ("ior-hard-read", "ior-hard", OpKind::Read, true),
    ("mdtest-easy-write", "mdtest-easy", OpKind::Create, false),
    ("mdtest-easy-stat", "mdtest-easy", OpKind::Stat, false),
    ("mdtest-easy-delete", "mdtest-easy", OpKind::Unlink, false),
    ("mdtest-hard-write", "mdtest-hard", OpKind::Create, false),
    ("mdtest-hard-stat", "mdtest-hard", OpKind::Stat, false),
    ("mdtest-hard-read", "mdtest-hard", OpKind::ReadFiles, false),
    ("mdtest-hard-delete", "mdtest-hard", OpKind::Unlink, false),
];

/// One IO500 phase: its figure in each repetition that has it, and their summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Io500Phase {
    pub name: String,
    /// `bw` (GiB/s) or `md` (kIOPS).
    pub group: String,
    /// The figure of each repetition (by repetition index), `null` where it did not complete.
    pub values: Vec<Option<f64>>,
    pub summary: Option<Summary>,
}

/// The IO500 figures of an experiment (`io500` in JSON: worked out when shown, never stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Io500 {
    /// Says what this is and is not.
    pub note: String,
    pub phases: Vec<Io500Phase>,
    /// Per repetition (where every phase completed): BW (GiB/s), MD (kIOPS) and the score.
    pub bw: Vec<f64>,
    pub md: Vec<f64>,
    pub score: Vec<f64>,
    pub bw_summary: Option<Summary>,
    pub md_summary: Option<Summary>,
    pub score_summary: Option<Summary>,
    /// The IO500 phases this experiment lacks (then there is no score).
    pub missing: Vec<String>,
    /// How its points differ from the IO500 workload set's, each in words (then there is no
    /// score, nor any phase's figure: the experiment is not the IO500 set); empty when every
    /// workload point was checked and matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_io500: Vec<String>,
}

/// One IO500 workload's point: (workload, the ops of its phases in order, the data phases'
/// layout and transfer size, the metadata phases' directories and file size).
type Shape = (&'static str, &'static [OpKind], Option<(Layout, u64)>, Option<(MdDirs, u64)>);

/// What the IO500 workload set's points are.
const SHAPES: [Shape; 4] = [
    ("ior-easy", &[OpKind::Write, OpKind::Read], Some((Layout::FilePerWorker, 2 << 20)), None),
    ("ior-hard", &[OpKind::Write, OpKind::Read], Some((Layout::SharedStrided, 47008)), None),
    (
        "mdtest-easy",
        &[OpKind::Create, OpKind::Find, OpKind::Stat, OpKind::Unlink],
        None,
        Some((MdDirs::Unique, 0)),
    ),
    (
        "mdtest-hard",
        &[OpKind::Create, OpKind::Find, OpKind::Stat, OpKind::ReadFiles, OpKind::Unlink],
        None,
        Some((MdDirs::Shared, 3901)),
    ),
];

/// What the IO500 set's metadata points share: stats and reads of the next worker's items
/// (mdtest `-N 1`), and find's pattern.
const MD_SHIFT: u32 = 1;
const FIND: &str = "*01*";

/// How `spec`, the point of `workload`, differs from IO500's point of that workload.
fn differences(workload: &str, spec: &Spec) -> Vec<String> {
    let Some((_, ops, data, md)) = SHAPES.iter().find(|(w, ..)| *w == workload) else { return vec![] };
    let mut out = vec![];
    let have: Vec<OpKind> = spec.phases.iter().map(|p| p.op).collect();
    if have != *ops {
        let names = |o: &[OpKind]| o.iter().map(|k| k.name()).collect::<Vec<_>>().join(",");
        out.push(format!("{workload}'s phases are {}, IO500's {}", names(&have), names(ops)));
    }
    if let Some((layout, bs)) = data {
        if spec.layout != *layout {
            out.push(format!("{workload}'s layout is {}, IO500's {}", spec.layout.name(), layout.name()));
        }
        if spec.bs_bytes != *bs {
            out.push(format!("{workload}'s transfers are {} bytes, IO500's {bs}", spec.bs_bytes));
        }
    }
    if let Some((dirs, bytes)) = md {
        match &spec.md {
            None => out.push(format!("{workload} has no metadata phases")),
            Some(ns) => {
                if ns.dirs != *dirs {
                    out.push(format!(
                        "{workload}'s directories are {}, IO500's {}",
                        ns.dirs.name(),
                        dirs.name()
                    ));
                }
                if ns.file_bytes != *bytes {
                    out.push(format!("{workload}'s files hold {} bytes, IO500's {bytes}", ns.file_bytes));
                }
                if ns.shift != MD_SHIFT {
                    out.push(format!(
                        "{workload}'s stats visit worker w+{}'s items, IO500's w+{MD_SHIFT}'s",
                        ns.shift
                    ));
                }
                if ns.find != FIND {
                    out.push(format!("{workload}'s find matches {}, IO500's {FIND}", ns.find));
                }
            }
        }
    }
    out
}

/// How an experiment with a `workload` axis differs from the IO500 workload set: each point
/// of an IO500 workload checked (once each), and a point's spec that was not stored named.
fn not_io500(exp: &ExperimentResult) -> Vec<String> {
    let mut out = vec![];
    for w in WORKLOADS {
        let points: Vec<_> =
            exp.points.iter().filter(|p| p.params.get("workload").map(String::as_str) == Some(w)).collect();
        match points.as_slice() {
            [] => {}
            [p] => match &p.spec {
                Some(spec) => out.extend(differences(w, spec)),
                None => {
                    out.push(format!("{w}'s spec was not stored with its results, so it cannot be checked"))
                }
            },
            more => out.push(format!("{} points are {w}, IO500 has one", more.len())),
        }
    }
    out
}

/// What every IO500 section says first.
pub const NOTE: &str = "the IO500 workload set run by iolab: not a valid IO500 submission (not the io500 application, not its rules' sizes or stonewall unless run at --scale paper, no rule checks); each figure has iolab's repetitions and intervals; its points checked against IO500's (phases, layouts, transfer sizes, directories, file sizes, the stats' shift and find's pattern)";

/// What the section says of an experiment with a `workload` axis that is not the IO500 set.
pub const NOTE_NOT: &str = "no IO500 score: the experiment's workload axis names IO500's workloads, but its points are not the IO500 workload set";

const GIB: f64 = (1u64 << 30) as f64;

/// The phase of `workload`'s point doing `op` (the first such).
fn phase_of<'a>(exp: &'a ExperimentResult, workload: &str, op: OpKind) -> Option<&'a PhaseResult> {
    let p = exp.points.iter().find(|p| p.params.get("workload").map(String::as_str) == Some(workload))?;
    p.phases.iter().find(|ph| ph.op == op)
}

/// Repetition `k` of a phase, if it completed.
fn rep(ph: &PhaseResult, k: u32) -> Option<&Repetition> {
    ph.repetitions.iter().find(|r| r.rep == k && r.status == Status::Complete)
}

/// The geometric mean of positive figures; None if any is not.
fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// The IO500 figures of `exp`, or None when it is not laid out as the IO500 set (no point
/// has a `workload` of the set).
pub fn of(exp: &ExperimentResult) -> Option<Io500> {
    let has = |w: &str| exp.points.iter().any(|p| p.params.get("workload").map(String::as_str) == Some(w));
    if !WORKLOADS.iter().any(|w| has(w)) {
        return None;
    }
    let reps: u32 = exp
        .points
        .iter()
        .flat_map(|p| &p.phases)
        .flat_map(|ph| ph.repetitions.iter().map(|r| r.rep + 1))
        .max()
        .unwrap_or(0);
    let not_io500 = not_io500(exp);
    if !not_io500.is_empty() {
        return Some(Io500 {
            note: format!("{NOTE_NOT}: {}", not_io500.join("; ")),
            phases: vec![],
            bw: vec![],
            md: vec![],
            score: vec![],
            bw_summary: None,
            md_summary: None,
            score_summary: None,
            missing: vec![],
            not_io500,
        });
    }
    let mut missing = vec![];
    let mut phases = vec![];
    for (name, workload, op, bw) in PHASES {
        let Some(ph) = phase_of(exp, workload, op) else {
            missing.push(name.to_string());
            continue;
        };
        let values: Vec<Option<f64>> = (0..reps)
            .map(|k| {
                let r = rep(ph, k)?;
                Some(if bw {
                    r.agg_bytes_per_s.unwrap_or(r.min_sar_bytes_per_s) / GIB
                } else {
                    r.min_sar_ops_per_s / 1e3
                })
            })
            .collect();
        phases.push(Io500Phase {
            name: name.into(),
            group: if bw { "bw" } else { "md" }.into(),
            values,
            summary: None,
        });
    }
    // find: the entries of both trees over the time of both walks.
    let finds: Vec<&PhaseResult> =
        ["mdtest-easy", "mdtest-hard"].iter().filter_map(|w| phase_of(exp, w, OpKind::Find)).collect();
    if finds.is_empty() {
        missing.push("find".into());
    } else {
        let values = (0..reps)
            .map(|k| {
                let rs: Option<Vec<&Repetition>> = finds.iter().map(|ph| rep(ph, k)).collect();
                let rs = rs?;
                let ops: u64 = rs.iter().map(|r| r.ops).sum();
                let ns: u64 = rs.iter().map(|r| r.time_ns).sum();
                (ns > 0).then(|| ops as f64 * 1e9 / ns as f64 / 1e3)
            })
            .collect();
        // IO500 scores find after mdtest-hard-write.
        let at = phases.iter().position(|p| p.name == "mdtest-hard-write").map_or(phases.len(), |i| i + 1);
        phases.insert(at, Io500Phase { name: "find".into(), group: "md".into(), values, summary: None });
    }
    for p in &mut phases {
        let xs: Vec<f64> = p.values.iter().flatten().copied().collect();
        p.summary =
            (!xs.is_empty()).then(|| Summary::of(if p.group == "bw" { "gib_per_s" } else { "kiops" }, &xs));
    }
    let (mut bws, mut mds, mut scores) = (vec![], vec![], vec![]);
    if missing.is_empty() {
        for k in 0..reps as usize {
            let group = |g: &str| -> Option<Vec<f64>> {
                phases.iter().filter(|p| p.group == g).map(|p| p.values.get(k).copied().flatten()).collect()
            };
            let (Some(b), Some(m)) =
                (group("bw").and_then(|v| geomean(&v)), group("md").and_then(|v| geomean(&v)))
            else {
                continue;
            };
            bws.push(b);
            mds.push(m);
            scores.push((b * m).sqrt());
        }
    }
    let summary = |name: &str, xs: &[f64]| (!xs.is_empty()).then(|| Summary::of(name, xs));
    Some(Io500 {
        note: NOTE.into(),
        bw_summary: summary("bw_gib_per_s", &bws),
        md_summary: summary("md_kiops", &mds),
        score_summary: summary("score", &scores),
        phases,
        bw: bws,
        md: mds,
        score: scores,
        missing,
        not_io500,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_means() {
        assert_eq!(geomean(&[4.0, 9.0]), Some(6.0));
        assert!((geomean(&[1.0, 10.0, 100.0]).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert_eq!(geomean(&[]), None);
    }
}
