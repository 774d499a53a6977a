//! The search space of `iolab tune`: which spec keys are searched (by default, or as
//! `--search KEY[=V1,V2,...]` says) and their values, each drawn from what the engines,
//! layouts, strategies and launchers declare (the engine registry, their capabilities,
//! `Layout::NAMES`, `Strategy::NAMES`) and from the job (its size, op size and durability),
//! never from a list kept here. Every combination becomes raw parameters over the baseline's
//! and resolves through the normal path ([`crate::experiment::resolve`]): what resolution
//! refuses, what misses the job's durability, op size or memory, is no candidate, and the
//! reasons are kept.

use std::collections::BTreeMap;

use super::candidates::{self, Cand};
use crate::error::{Error, Result};
use crate::experiment::{PARAMS, Params, ResolveEnv};
use crate::spec::job::Job;
use crate::spec::{Launcher, Layout, Strategy, SyncCall, SyncPolicy};
use crate::units::fmt_size_spec;

/// The most combinations a search may hold before resolution filters them.
pub const MAX_COMBINATIONS: usize = 20_000;

/// Keys that state the job or how the tuning runs, not a way to do the job: never searched.
const NOT_SEARCHED: &[(&str, &str)] = &[
    ("name", "a label"),
    ("dirs", "where the job runs (--dir)"),
    ("ops", "the job's direction (--direction)"),
    ("size", "the job's bytes (--bytes)"),
    ("order", "the job's access (--access)"),
    ("cache", "the job reads cold"),
    ("iters", "the job's bytes and op size"),
    ("comptime", "the job's compute (--comptime)"),
    ("reps", "the race decides the runs"),
    ("warmup", "a setting of the race (--warmup)"),
    ("settle", "a setting of the race (--settle)"),
    ("prime_memory", "a setting of the race (--prime-memory)"),
    ("interleave", "a setting of the race (--interleave)"),
    ("seed", "a setting of the race (--seed)"),
    ("keep", "every candidate's files are removed"),
    ("reuse", "every candidate writes its own files"),
    ("verify", "no way to do the job"),
    ("allow_device", "command line only"),
];

/// One searched key and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    pub key: String,
    pub values: Vec<String>,
    /// The values were given (`--search KEY=V1,V2`), not drawn.
    pub given: bool,
}

/// `--search KEY` (its values drawn) or `--search KEY=V1,V2,...` (these values), in order.
pub fn parse_search(args: &[String]) -> Result<Vec<(String, Option<Vec<String>>)>> {
    let mut out: Vec<(String, Option<Vec<String>>)> = vec![];
    for a in args.iter().flat_map(|a| split_keys(a)) {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (
                k.trim().replace('-', "_"),
                Some(v.split(',').map(|x| x.trim().to_string()).collect::<Vec<_>>()),
            ),
            None => (a.trim().replace('-', "_"), None),
        };
        if let Some((_, why)) = NOT_SEARCHED.iter().find(|(n, _)| *n == k) {
            return Err(Error::spec("search", &a, format!("`{k}` is not searched: {why}")));
        }
        if !PARAMS.iter().any(|d| d.key == k) {
            return Err(Error::spec("search", &a, "not a spec parameter (see docs/spec.md)"));
        }
        if let Some(vals) = &v
            && (vals.is_empty() || vals.iter().any(String::is_empty))
        {
            return Err(Error::spec("search", &a, "empty value; write KEY=V1,V2,..."));
        }
        out.retain(|(o, _)| *o != k);
        out.push((k, v));
    }
    Ok(out)
}

/// `engine,direct` (several keys without values) is several searches; `sync=a,b` is one.
fn split_keys(a: &str) -> Vec<String> {
    if a.contains('=') { vec![a.to_string()] } else { a.split(',').map(String::from).collect() }
}

/// The keys searched when `--search` names none of them: a strategy, its engine, for a job
/// with compute; else the engine with its own knobs (O_DIRECT, ops in flight), and with
/// several workers available, their number and layout.
pub fn default_keys(job: &Job) -> Vec<&'static str> {
    if job.comptime_ns > 0 {
        return vec!["strategy", "engine"];
    }
    let mut keys = vec!["engine", "direct", "iodepth"];
    if job.workers > 1 {
        keys.extend(["workers", "layout"]);
    }
    keys
}

/// `lo`, `lo x factor`, ... up to `hi`.
fn geometric(lo: u64, hi: u64, factor: u64) -> Vec<u64> {
    let mut v = vec![];
    let mut x = lo.max(1);
    while x <= hi {
        v.push(x);
        x = match x.checked_mul(factor) {
            Some(n) => n,
            None => break,
        };
    }
    v
}

/// At most `n` of `v`, spread evenly and keeping both ends.
fn spread<T: Clone>(v: &[T], n: usize) -> Vec<T> {
    if v.len() <= n || n < 2 {
        return v.to_vec();
    }
    (0..n).map(|i| v[i * (v.len() - 1) / (n - 1)].clone()).collect()
}

const MIB: u64 = 1 << 20;

/// The values drawn for `key` (None: the key has no rule, so values must be given).
pub fn draw(key: &str, job: &Job) -> Option<Vec<String>> {
    let engines = || crate::worker::registry::ENGINES.iter().filter(|e| e.def.caps.real_io);
    let sizes = |v: Vec<u64>| v.into_iter().map(fmt_size_spec).collect();
    // The most one worker writes (one worker doing it all).
    let largest = job.bytes;
    Some(match key {
        "strategy" => Strategy::NAMES.iter().map(|s| s.to_string()).collect(),
        "launcher" => Launcher::ALL.iter().map(|l| l.name().to_string()).collect(),
        "engine" => engines().map(|e| e.def.name.to_string()).collect(),
        "iodepth" => {
            let most = engines().map(|e| e.def.caps.max_iodepth).max().unwrap_or(1).min(64);
            geometric(1, most as u64, 4).iter().map(u64::to_string).collect()
        }
        "direct" => vec!["false".into(), "true".into()],
        "window" => {
            let least = match job.durability.loosest() {
                SyncPolicy::Every(n) => n.max(MIB),
                _ => MIB,
            };
            let w = geometric(least, largest.saturating_sub(1), 4);
            let mut v = vec!["file".to_string()];
            v.extend(sizes(spread(&w, 3)));
            v
        }
        "bs" => {
            let mut v = geometric(64 << 10, (16 * MIB).min(largest), 4);
            if !v.contains(&job.op_bytes) {
                v.push(job.op_bytes);
                v.sort_unstable();
            }
            sizes(v)
        }
        "sync" => sync_values(job),
        "sync_call" => SyncCall::ALL.iter().map(|c| c.name().to_string()).collect(),
        "open_sync" => vec!["none".into(), "dsync".into(), "sync".into()],
        "workers" => {
            let mut v = geometric(1, job.workers as u64, 2);
            if v.last() != Some(&(job.workers as u64)) {
                v.push(job.workers as u64);
            }
            v.iter().map(u64::to_string).collect()
        }
        "layout" => Layout::NAMES
            .iter()
            .filter(|l| job.dirs.len() > 1 || !Layout::parse(l).is_some_and(Layout::striped))
            .map(|l| l.to_string())
            .collect(),
        _ => return None,
    })
}

/// Commit policies within the job's durability, loosest first: `end` and periodic commits
/// (every 1 MiB x 4^k, three of them at most) for durability at the end; the bound and its
/// quarters and sixteenths down to the op size for a bound; each op for each.
fn sync_values(job: &Job) -> Vec<String> {
    use crate::spec::job::Durability;
    let every = |v: Vec<u64>| v.into_iter().rev().map(|n| SyncPolicy::Every(n).label()).collect::<Vec<_>>();
    match job.durability {
        Durability::None => vec!["none".into(), "end".into()],
        Durability::End => {
            let mut v = vec!["end".to_string()];
            v.extend(every(spread(&geometric(MIB, job.bytes.saturating_sub(1), 4), 3)));
            v
        }
        Durability::Every(n) => {
            let mut v: Vec<u64> =
                (0..3).map(|k| n >> (2 * k)).filter(|&x| x >= job.op_bytes.min(n)).collect();
            v.dedup();
            v.reverse();
            every(v)
        }
        Durability::Each => vec!["each".into()],
    }
}

/// The searched keys: the defaults, overlaid by `--search` (which may add keys or give a key
/// its own values); a key needs values of its own when no rule draws them.
pub fn dims(job: &Job, search: &[(String, Option<Vec<String>>)]) -> Result<Vec<Dim>> {
    let mut dims: Vec<Dim> = default_keys(job)
        .into_iter()
        .map(|k| Dim { key: k.into(), values: draw(k, job).unwrap_or_default(), given: false })
        .collect();
    for (k, v) in search {
        let dim = match v {
            Some(values) => Dim { key: k.clone(), values: values.clone(), given: true },
            None => Dim {
                key: k.clone(),
                values: draw(k, job).ok_or_else(|| {
                    Error::spec("search", k, format!("no rule draws values of `{k}`: give them, {k}=V1,V2"))
                })?,
                given: false,
            },
        };
        match dims.iter_mut().find(|d| d.key == *k) {
            Some(d) => *d = dim,
            None => dims.push(dim),
        }
    }
    let total = dims.iter().try_fold(1usize, |n, d| n.checked_mul(d.values.len().max(1)));
    match total {
        Some(n) if n <= MAX_COMBINATIONS => Ok(dims),
        _ => Err(Error::spec(
            "search",
            dims.iter().map(|d| format!("{}={}", d.key, d.values.len())).collect::<Vec<_>>().join(" x "),
            format!("more than {MAX_COMBINATIONS} combinations; search fewer keys or values"),
        )),
    }
}

/// The candidates: every combination of the dims' values over the baseline's parameters
/// that resolves and does the job, the same spec once; the baseline is candidate 0 (in the
/// space or not). Also the reasons the other combinations are none, with how many each.
pub struct Space {
    pub dims: Vec<Dim>,
    pub cands: Vec<Cand>,
    pub refused: Vec<String>,
}

/// Builds the space of `job` over the baseline's parameters `base`.
pub fn build(job: &Job, dims: Vec<Dim>, base: &Params, env: &ResolveEnv) -> Result<Space> {
    let baseline = candidates::make(job, base, &[], &dims, env).map_err(|e| match e {
        candidates::Refusal::Resolve(e) => e,
        candidates::Refusal::Job(why) => Error::spec("job", &job.name, why),
    })?;
    let mut cands = vec![baseline];
    let mut refused: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let n: usize = dims.iter().map(|d| d.values.len().max(1)).product();
    for i in 0..n {
        crate::env::signals::check()?;
        let mut rest = i;
        let combo: Vec<(String, String)> = dims
            .iter()
            .rev()
            .map(|d| {
                let v = d.values[rest % d.values.len()].clone();
                rest /= d.values.len();
                (d.key.clone(), v)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        match candidates::make(job, base, &combo, &dims, env) {
            Ok(c) => {
                if !cands.iter().any(|o| o.same_as(&c)) {
                    cands.push(c);
                }
            }
            Err(r) => {
                let why = r.to_string();
                let e = refused.entry(why).or_insert((0, String::new()));
                e.0 += 1;
                if e.1.is_empty() {
                    e.1 = combo.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
                }
            }
        }
    }
    let mut refused: Vec<(String, (usize, String))> = refused.into_iter().collect();
    refused.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0)));
    let refused = refused.into_iter().map(|(why, (n, eg))| format!("{n} x {why} (e.g. {eg})")).collect();
    Ok(Space { dims, cands, refused })
}
