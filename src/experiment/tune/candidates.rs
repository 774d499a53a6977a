//! One candidate of `iolab tune`: the baseline's raw parameters with one combination of the
//! searched values over them, its size worked out from the job, resolved as any spec is, and
//! checked against what the job demands (durability, a fixed op size, its memory); its
//! label in words and its searched values as the resolved spec states them.

use std::collections::BTreeMap;

use super::space::Dim;
use crate::error::Error;
use crate::experiment::{Params, ResolveEnv, resolve};
use crate::spec::job::Job;
use crate::spec::{Launcher, SyncPolicy};
use crate::units::{fmt_size, fmt_size_spec};

/// A candidate: its raw parameters, its resolved spec, what sets it apart.
#[derive(Debug, Clone)]
pub struct Cand {
    pub params: Params,
    pub spec: crate::spec::Spec,
    /// The searched keys' values, as its spec states them.
    pub values: BTreeMap<String, String>,
    pub label: String,
}

impl Cand {
    /// The same run as `other` (the same spec; a combination that changes nothing).
    pub fn same_as(&self, other: &Cand) -> bool {
        self.spec == other.spec
    }
}

/// Why a combination is no candidate.
#[derive(Debug)]
pub enum Refusal {
    /// Resolution refused it (the message names the parameter and the value).
    Resolve(Error),
    /// It runs, but does not do the job asked.
    Job(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Resolve(e) => write!(f, "{e}"),
            Refusal::Job(why) => write!(f, "{why}"),
        }
    }
}

/// The candidate of `combo` (key, value pairs) over the baseline's parameters `base`.
pub fn make(
    job: &Job,
    base: &Params,
    combo: &[(String, String)],
    dims: &[Dim],
    env: &ResolveEnv,
) -> Result<Cand, Refusal> {
    let mut p = base.clone();
    for (k, v) in combo {
        p.set_one(k, v).map_err(Refusal::Resolve)?;
    }
    let workers: u64 = p.one("workers").and_then(|w| w.parse().ok()).unwrap_or(1);
    if workers == 0 || job.bytes % workers != 0 {
        return Err(Refusal::Job(format!("{} do not split over {workers} workers", fmt_size(job.bytes))));
    }
    p.set_one("size", fmt_size_spec(job.bytes / workers)).map_err(Refusal::Resolve)?;
    let spec = resolve(&p, env).map_err(Refusal::Resolve)?;
    // One worker with one file of its own, or the only one in a shared file: the same run.
    if spec.workers == 1 && !spec.layout.striped() && spec.layout != crate::spec::Layout::FilePerWorker {
        return Err(Refusal::Job(format!(
            "with one worker, layout {} is file-per-worker's run",
            spec.layout.name()
        )));
    }
    if job.op_fixed && spec.bs_bytes != job.op_bytes {
        return Err(Refusal::Job(format!("the job's op size is fixed at {}", fmt_size(job.op_bytes))));
    }
    if job.direction.writes() && !job.durability.satisfied_by(spec.sync, spec.open_sync, spec.bs_bytes) {
        return Err(Refusal::Job(format!(
            "sync = {} does not make the data durable {}",
            spec.sync.label(),
            job.durability.label()
        )));
    }
    if let Some(limit) = job.memory_bytes {
        let buffers = crate::experiment::memory::need(&spec).map_or(u64::MAX, |n| n.bytes);
        let mapped = if spec.engine == "mmap" {
            spec.window_bytes.unwrap_or(spec.size_bytes).saturating_mul(spec.workers as u64)
        } else {
            0
        };
        if buffers.saturating_add(mapped) > limit {
            return Err(Refusal::Job(format!(
                "needs {} of buffers and mappings, more than the job's memory ({})",
                fmt_size(buffers.saturating_add(mapped)),
                fmt_size(limit)
            )));
        }
    }
    let values = values_of(&spec, dims);
    let label = label_of(&spec, dims);
    Ok(Cand { params: p, spec, values, label })
}

/// The searched keys' values as `spec` states them (`window = file` for a whole-file map,
/// `strategy = none` without one).
fn values_of(spec: &crate::spec::Spec, dims: &[Dim]) -> BTreeMap<String, String> {
    let all = spec.to_params();
    dims.iter()
        .map(|d| {
            let v = match all.0.get(&d.key) {
                Some(v) => v.join(","),
                None => match d.key.as_str() {
                    "window" => "file".into(),
                    "strategy" => "none".into(),
                    _ => "-".into(),
                },
            };
            (d.key.clone(), v)
        })
        .collect()
}

/// What sets a candidate apart, in words: its strategy, engine (with its depth or window), O_DIRECT,
/// workers and layout, and whichever other searched key, as the study would name them
/// (`S1A, mmap, 4 MiB windows, syncs every 1 MiB`).
pub fn label_of(spec: &crate::spec::Spec, dims: &[Dim]) -> String {
    let searched = |k: &str| dims.iter().any(|d| d.key == k);
    let mut parts: Vec<String> = vec![];
    if let Some(s) = spec.strategy {
        parts.push(s.name().to_string());
    }
    if searched("launcher") || spec.launcher != Launcher::Thread {
        parts.push(match spec.launcher {
            Launcher::Thread => "threads".into(),
            Launcher::Process => "processes".into(),
            Launcher::Mpi => "MPI ranks".into(),
        });
    }
    let mut engine = spec.engine.clone();
    if spec.iodepth > 1 || (searched("iodepth") && spec.engine == "uring") {
        engine += &format!(" depth {}", spec.iodepth);
    }
    parts.push(engine);
    if spec.engine == "mmap" && (searched("window") || spec.window_bytes.is_some()) {
        parts.push(match spec.window_bytes {
            Some(w) => format!("{} windows", fmt_size(w)),
            None => "whole-file map".into(),
        });
    }
    if spec.direct {
        parts.push("O_DIRECT".into());
    }
    if searched("workers") || (searched("layout") && spec.workers > 1) {
        let w = if spec.workers == 1 { "1 worker".to_string() } else { format!("{} workers", spec.workers) };
        parts.push(if spec.workers > 1 { format!("{w}, {}", spec.layout.name()) } else { w });
    }
    if searched("bs") {
        parts.push(format!("{} ops", fmt_size(spec.bs_bytes)));
    }
    if searched("sync") {
        parts.push(match spec.sync {
            SyncPolicy::None => "no sync".into(),
            SyncPolicy::End => "sync at end".into(),
            SyncPolicy::Each => "sync each op".into(),
            SyncPolicy::Every(n) => format!("syncs every {}", fmt_size(n)),
        });
    }
    if searched("sync_call") && spec.sync != SyncPolicy::None {
        parts.push(format!("by {}", spec.sync_call.name()));
    }
    let named = ["strategy", "launcher", "engine", "iodepth", "window", "direct", "workers", "layout", "bs"];
    let all = spec.to_params();
    for d in dims
        .iter()
        .filter(|d| !named.contains(&d.key.as_str()) && !["sync", "sync_call"].contains(&d.key.as_str()))
    {
        let v = all.0.get(&d.key).map(|v| v.join(",")).unwrap_or_else(|| "-".into());
        parts.push(format!("{}={v}", d.key));
    }
    parts.join(", ")
}
