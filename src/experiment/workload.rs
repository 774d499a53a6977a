//! The workload parameters of a spec (`rwmixread`, `bssplit`, `rate`, `rate_iops`,
//! `rate_process`, `thinktime`, `thinktime_spin`, `thinktime_blocks`, and a phase's own
//! `rwmixread=N`, `rate=SIZE/s`, `rate_iops=N`) parsed and checked with the rest of the spec:
//! everything they cannot go with (strategies, striped and strided layouts for a block-size
//! mix, verification of a mixed phase, ...) refused by name before any I/O.

use super::Params;
use crate::error::{Error, Result};
use crate::spec::{BsSplit, OpKind, Order, RateLimit, RateProcess, Spec, ThinkTime};
use crate::units::{fmt_size_spec, parse_abs_size, parse_duration_ns};

/// The most ops per second a worker may be asked for, and the longest think time (an hour).
const MAX_IOPS: u64 = 100_000_000;
const MAX_THINK_NS: u64 = 3_600_000_000_000;

/// A rate: bytes per second, written as a size per second (`200MB/s`, `1GiB/s`; `/s` may be
/// left out).
pub fn parse_rate(v: &str) -> std::result::Result<u64, String> {
    let t = v.trim();
    let size = t.strip_suffix("/s").or_else(|| t.strip_suffix("ps")).unwrap_or(t);
    parse_abs_size(size).map_err(|e| format!("{} (a size per second, e.g. 200MB/s or 64MiB/s)", e.0))
}

/// The default `bs` of a spec with a block-size mix: the mix's smallest size (else 1 MiB).
pub(super) fn default_bs(params: &Params) -> String {
    let unit = params.one("bssplit").and_then(|v| BsSplit::parse(v).ok()).map(|b| b.unit());
    unit.map_or("1MiB".to_string(), fmt_size_spec)
}

/// A phase's own workload modifiers.
#[derive(Debug, Default)]
pub(super) struct PhasePace {
    pub rwmixread: Option<u8>,
    pub rate_bytes_per_s: Option<u64>,
    pub rate_iops: Option<u64>,
}

impl PhasePace {
    /// Takes `m` if it is one of its modifiers (`rwmixread=N`, `rate=SIZE/s`, `rate_iops=N`).
    pub fn modifier(&mut self, phase: &str, m: &str) -> Result<bool> {
        let Some((k, v)) = m.split_once('=') else { return Ok(false) };
        let bad = |why: String| Error::spec("ops", phase, format!("{k}: {why}"));
        match k.replace('-', "_").as_str() {
            "rwmixread" => self.rwmixread = Some(percent(v).map_err(bad)?),
            "rate" => self.rate_bytes_per_s = Some(parse_rate(v).map_err(bad)?),
            "rate_iops" => self.rate_iops = Some(iops(v).map_err(bad)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fn percent(v: &str) -> std::result::Result<u8, String> {
    v.trim()
        .parse::<u8>()
        .ok()
        .filter(|&p| p <= 100)
        .ok_or_else(|| format!("`{v}` is no whole percent, 0 to 100"))
}

fn iops(v: &str) -> std::result::Result<u64, String> {
    match v.trim().parse::<u64>() {
        Ok(n) if n <= MAX_IOPS => Ok(n),
        _ => Err(format!("`{v}` is no whole number of ops per second up to {MAX_IOPS}")),
    }
}

fn think(field: &str, v: &str) -> Result<u64> {
    let ns = parse_duration_ns(v).map_err(|e| Error::spec(field, v, e.0))?;
    if ns > MAX_THINK_NS {
        return Err(Error::spec(field, v, "must be at most an hour"));
    }
    Ok(ns)
}

/// Sets the spec's workload parameters from `params` and checks them with the rest of the spec.
pub(super) fn resolve_into(params: &Params, spec: &mut Spec) -> Result<()> {
    let get = |k: &str| params.one(k);
    if let Some(v) = get("rwmixread") {
        spec.workload.rwmixread = Some(percent(v).map_err(|e| Error::spec("rwmixread", v, e))?);
    }
    if let Some(v) = get("bssplit") {
        let split = BsSplit::parse(v).map_err(|e| Error::spec("bssplit", v, e))?;
        check_bssplit(spec, &split, v, get("bs"))?;
        spec.bs_bytes = split.unit();
        spec.workload.bssplit = Some(split);
    }
    spec.workload.rate = match (get("rate"), get("rate_iops")) {
        (Some(_), Some(n)) => {
            return Err(Error::spec(
                "rate_iops",
                n,
                "not with rate: a worker's load is in bytes or in ops per second; give one",
            ));
        }
        (Some(v), None) => Some(RateLimit::Bytes(parse_rate(v).map_err(|e| Error::spec("rate", v, e))?)),
        (None, Some(v)) => Some(RateLimit::Iops(iops(v).map_err(|e| Error::spec("rate_iops", v, e))?)),
        (None, None) => None,
    }
    .filter(|r| !matches!(r, RateLimit::Bytes(0) | RateLimit::Iops(0)));
    spec.workload.rate_process = match get("rate_process").unwrap_or("linear") {
        "linear" => RateProcess::Linear,
        "poisson" => RateProcess::Poisson,
        other => return Err(Error::spec("rate_process", other, "expected linear or poisson")),
    };
    if let Some(v) = get("thinktime") {
        let ns = think("thinktime", v)?;
        let spin_ns = get("thinktime_spin").map_or(Ok(0), |s| think("thinktime_spin", s))?;
        if spin_ns > ns {
            return Err(Error::spec(
                "thinktime_spin",
                get("thinktime_spin").unwrap_or(""),
                "the spinning part of the think time cannot be longer than thinktime",
            ));
        }
        let blocks = match get("thinktime_blocks") {
            None => 1,
            Some(b) => b.trim().parse::<u64>().ok().filter(|&n| n >= 1).ok_or_else(|| {
                Error::spec("thinktime_blocks", b, "must be a whole number of ops, at least 1")
            })?,
        };
        spec.workload.thinktime = (ns > 0).then_some(ThinkTime { ns, spin_ns, blocks });
    } else if let Some(k) = ["thinktime_spin", "thinktime_blocks"].into_iter().find(|k| get(k).is_some()) {
        return Err(Error::spec(k, get(k).unwrap_or(""), "goes with thinktime, which is not given"));
    }
    check(spec, get("rate_process").is_some())
}

/// What a block-size mix needs of the rest of the spec.
fn check_bssplit(spec: &Spec, split: &BsSplit, v: &str, bs: Option<&str>) -> Result<()> {
    let unit = split.unit();
    let refuse = |why: String| Err(Error::spec("bssplit", v, why));
    if let Some(b) = bs
        && parse_abs_size(b).ok() != Some(unit)
    {
        return Err(Error::spec(
            "bs",
            b,
            format!("with bssplit, bs is the mix's smallest size, {}; leave bs out", fmt_size_spec(unit)),
        ));
    }
    if let Some(b) = split.0.iter().find(|b| b.bytes % crate::plan::fill::STAMP_EVERY != 0) {
        return refuse(format!(
            "{} is not a whole number of 4 KiB: iolab stamps every 4 KiB of the data it moves, so a mix's sizes are multiples of 4 KiB",
            fmt_size_spec(b.bytes)
        ));
    }
    if let Some(b) = split.0.iter().find(|b| b.bytes % unit != 0) {
        return refuse(format!(
            "{} is not a multiple of the smallest size, {} (every op starts at a multiple of it)",
            fmt_size_spec(b.bytes),
            fmt_size_spec(unit)
        ));
    }
    if split.largest() > spec.size_bytes || spec.size_bytes % unit != 0 {
        return refuse(format!(
            "each worker's size ({}) must hold the largest block and be a whole number of the smallest",
            fmt_size_spec(spec.size_bytes)
        ));
    }
    if split.largest() > u32::MAX as u64 {
        return refuse("a block must be below 4 GiB".into());
    }
    let layouts = std::iter::once(spec.layout).chain(spec.phases.iter().filter_map(|p| p.layout));
    if let Some(l) = layouts.into_iter().find(|l| l.striped() || *l == crate::spec::Layout::SharedStrided) {
        return refuse(format!(
            "a block-size mix is not built for layout {} (its blocks are cut at fixed places); use file-per-worker or shared",
            l.name()
        ));
    }
    let rr = std::iter::once(spec.round_robin).chain(spec.phases.iter().filter_map(|p| p.round_robin));
    if rr.into_iter().any(|r| r > 1) {
        return refuse("a block-size mix visits one file after another (round_robin = 1)".into());
    }
    if let Some(p) = spec.phases.iter().find(|p| p.order == Order::Random) {
        return Err(Error::spec(
            "ops",
            &p.name,
            "order random visits every block once, which blocks of several sizes cannot do; use uniform (random with repeats, fio's norandommap) or a distribution (zipf:THETA, ...)",
        ));
    }
    let other = [
        (spec.verify, "verify", "verification headers sit at fixed block boundaries"),
        (spec.mem_len_bytes.is_some(), "mem_len", "strided memory is cut at fixed block sizes"),
        (spec.servers.is_some(), "servers", "I/O-server ranks serve blocks of one size"),
        (spec.strategy.is_some(), "strategy", "a strategy writes blocks of bs"),
        (
            spec.window_bytes.is_some(),
            "window",
            "an mmap window is cut at fixed block sizes; map the whole file",
        ),
    ];
    match other.iter().find(|(set, _, _)| *set) {
        Some((_, k, why)) => refuse(format!("not with {k}: {why}")),
        None => Ok(()),
    }
}

/// The rules the workload parameters follow with the phases.
fn check(spec: &Spec, process_given: bool) -> Result<()> {
    let data: Vec<&crate::spec::Phase> =
        spec.phases.iter().filter(|p| !p.op.is_metadata() && p.op != OpKind::Blast).collect();
    let none_takes = |k: &str, v: String, what: &str| -> Result<()> {
        Err(Error::spec(k, v, format!("no phase {what}: it would do nothing")))
    };
    if let Some(r) = spec.workload.rwmixread
        && !spec.phases.iter().any(|p| p.op == OpKind::Rw)
    {
        return none_takes("rwmixread", r.to_string(), "mixes reads and writes (rw)");
    }
    if let Some(p) = spec.phases.iter().find(|p| p.rwmixread.is_some() && p.op != OpKind::Rw) {
        return Err(Error::spec("ops", &p.name, "rwmixread sets the read share of a mixed phase (rw)"));
    }
    let any_rate = data.iter().any(|p| spec.phase_rate(p).is_some());
    let knobs = [
        (spec.workload.bssplit.is_some(), "bssplit"),
        (spec.workload.rate.is_some(), "rate"),
        (spec.workload.thinktime.is_some(), "thinktime"),
    ];
    if data.is_empty()
        && let Some((_, k)) = knobs.iter().find(|(set, _)| *set)
    {
        return none_takes(k, params_value(spec, k), "moves data blocks");
    }
    if let Some(p) = spec
        .phases
        .iter()
        .find(|p| p.op == OpKind::Blast && (p.rate_iops.is_some() || p.rate_bytes_per_s.is_some()))
    {
        return Err(Error::spec(
            "ops",
            &p.name,
            "a blast sends as fast as it can; a rate limit is not built for it",
        ));
    }
    if process_given && spec.workload.rate_process == RateProcess::Poisson && !any_rate {
        return none_takes("rate_process", "poisson".into(), "is rate-limited (rate, rate_iops)");
    }
    if let Some(st) = spec.strategy
        && (any_rate || spec.workload.thinktime.is_some() || spec.phases.iter().any(|p| p.op == OpKind::Rw))
    {
        return Err(Error::spec(
            "strategy",
            st.name(),
            "a strategy runs its own loop (compute, then write): rate limits, think time and mixed phases are not built for it; use comptime",
        ));
    }
    for p in &spec.phases {
        if p.op == OpKind::Write && p.order.repeats() {
            return Err(Error::spec(
                "ops",
                &p.name,
                format!(
                    "order {} draws blocks with repeats, so a write from emptied files would leave the blocks it never draws as holes; use rewrite (the files laid out first, as fio lays a file out before it overwrites it)",
                    p.order.label()
                ),
            ));
        }
        if p.op != OpKind::Rw {
            continue;
        }
        let refuse = |k: &str, v: &str, why: &str| {
            Err(Error::spec(k, v, format!("a mixed phase ({}): {why}", p.name)))
        };
        if spec.verify {
            return refuse(
                "verify",
                "true",
                "verification checks each block against one write generation, and a mixed phase rewrites only some of them",
            );
        }
        if spec.mpiio.as_ref().is_some_and(|m| m.collective) {
            return refuse(
                "mpiio",
                "collective",
                "a collective call needs every rank to move the same way, and each op's direction is drawn (use independent)",
            );
        }
        if spec.reuse.is_some() {
            return refuse("reuse", spec.reuse.as_deref().unwrap_or(""), "reuse only reads the kept files");
        }
        if spec.servers.is_some() {
            return refuse("servers", "", "I/O-server ranks serve reads and writes in phases of their own");
        }
    }
    Ok(())
}

/// The value of a workload parameter as the spec holds it, for a message.
fn params_value(spec: &Spec, k: &str) -> String {
    match k {
        "bssplit" => spec.workload.bssplit.as_ref().map(BsSplit::label).unwrap_or_default(),
        "rate" => spec.workload.rate.map(RateLimit::label).unwrap_or_default(),
        "thinktime" => {
            spec.workload.thinktime.map(|t| crate::units::fmt_duration_spec(t.ns)).unwrap_or_default()
        }
        _ => String::new(),
    }
}
