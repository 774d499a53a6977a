//! Experiment files: a TOML file's parameters (`[[phases]]` tables become `ops`), and a spec
//! back into parameters, so it can be printed as TOML, stored and re-run.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::units::fmt_size_spec;

use super::Params;

impl Params {
    /// Parses a TOML experiment file into parameters. Nested `[[phases]]` tables become `ops`.
    pub fn from_toml(text: &str) -> Result<Params> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| Error::spec("TOML", "", e.message().trim().to_string()))?;
        let mut p = Params::default();
        for (key, value) in &table {
            if key == "allow_device" {
                return Err(Error::spec(
                    key,
                    value,
                    "only on the command line (--allow-device), so a spec file can never point iolab at a device by itself",
                ));
            }
            if key == "phases" {
                p.set("ops", phases_from_toml(value)?)?;
                continue;
            }
            // Sweep axes and preset metadata are read by `crate::experiment`.
            if key == "sweep" || key == "preset" {
                continue;
            }
            p.set(key, toml_values(key, value)?)?;
        }
        Ok(p)
    }
}

fn toml_scalar(key: &str, v: &toml::Value) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(Error::spec(key, other, "expected a string, number or boolean")),
    }
}

fn toml_values(key: &str, v: &toml::Value) -> Result<Vec<String>> {
    match v {
        toml::Value::Array(items) => items.iter().map(|i| toml_scalar(key, i)).collect(),
        other => Ok(vec![toml_scalar(key, other)?]),
    }
}

/// `[[phases]]` tables: `op = "read"`, optional `order`, `cache`, `workers`, `round_robin`,
/// `files`, `layout`, `runtime`, `stonewall`. Each becomes
/// `op:workers=N:round_robin=R:files=F:layout=L:order:cache:runtime=D:stonewall=D`.
/// Each value is checked here, so an error names `phases[N].KEY` (N counts from 1).
fn phases_from_toml(v: &toml::Value) -> Result<Vec<String>> {
    let arr =
        v.as_array().ok_or_else(|| Error::spec("phases", v, "expected an array of tables ([[phases]])"))?;
    arr.iter()
        .enumerate()
        .map(|(i, t)| {
            let at = format!("phases[{}]", i + 1);
            let t = t.as_table().ok_or_else(|| Error::spec(&at, t, "expected a table"))?;
            let mut parts: BTreeMap<usize, String> = BTreeMap::new();
            for (k, v) in t {
                let field = format!("{at}.{k}");
                let val = toml_scalar(&field, v)?;
                let text_only = |ok: bool, what: &str| match (v, ok) {
                    (toml::Value::String(_), true) => Ok(()),
                    _ => Err(Error::spec(&field, v, format!("expected {what}"))),
                };
                let (rank, text) = match k.as_str() {
                    "op" => {
                        text_only(
                            !val.is_empty() && !val.contains(':'),
                            "an operation name (read, write, ...)",
                        )?;
                        (0, val)
                    }
                    "workers" | "round_robin" | "files" => {
                        let n = match v {
                            toml::Value::Integer(n) => u64::try_from(*n).ok(),
                            toml::Value::String(s) => s.parse::<u64>().ok(),
                            _ => None,
                        };
                        if n.is_none_or(|n| n == 0) {
                            return Err(Error::spec(&field, v, "expected a whole number of at least 1"));
                        }
                        (PHASE_KEYS.iter().position(|p| p == k).unwrap_or(0) + 1, format!("{k}={val}"))
                    }
                    "layout" => {
                        let what = format!("one of {}", crate::spec::Layout::NAMES.join(", "));
                        text_only(crate::spec::Layout::parse(&val).is_some(), &what)?;
                        (4, format!("{k}={val}"))
                    }
                    "order" => {
                        text_only(crate::spec::Order::parse(&val).is_some(), crate::spec::Order::CHOICES)?;
                        (5, val)
                    }
                    "cache" => {
                        text_only(crate::spec::CachePolicy::parse(&val).is_some(), "cold, warm or asis")?;
                        (6, val)
                    }
                    "runtime" | "stonewall" => {
                        let ok = crate::units::parse_duration_ns(&val).is_ok();
                        text_only(ok, "a duration such as 30s or 500ms")?;
                        (if k == "runtime" { 7 } else { 8 }, format!("{k}={val}"))
                    }
                    "rwmixread" | "rate" | "rate_iops" => {
                        let rank = 9 + ["rwmixread", "rate", "rate_iops"].iter().position(|p| p == k).unwrap_or(0);
                        (rank, format!("{k}={val}"))
                    }
                    _ => {
                        return Err(Error::spec(
                            field,
                            val,
                            "unknown phase key (op, workers, round_robin, files, layout, order, cache, runtime, stonewall, rwmixread, rate, rate_iops)",
                        ));
                    }
                };
                parts.insert(rank, text);
            }
            if !parts.contains_key(&0) {
                return Err(Error::spec(format!("{at}.op"), "", "each phase needs an `op`"));
            }
            Ok(parts.into_values().collect::<Vec<_>>().join(":"))
        })
        .collect()
}

/// An error met reading the experiment file `path` (whose text is `text`), told as
/// `FILE:LINE:COL: field = value: reason`: the position is the TOML parser's for a syntax
/// error, and the value's (or key's) for a bad value.
pub fn located(path: &std::path::Path, text: &str, e: Error) -> Error {
    let Error::Spec { field, value, reason } = e else { return e };
    let file = crate::text::escape_path(path);
    if let Err(te) = text.parse::<toml::Table>() {
        let at = te.span().map(|s| line_col(text, s.start)).unwrap_or_default();
        let line = te.span().map(|s| line_of(text, s.start)).unwrap_or_default();
        return Error::spec(format!("{file}{at}: TOML"), line, te.message().trim().to_string());
    }
    let at = value_span(text, &field).map(|o| line_col(text, o)).unwrap_or_default();
    Error::Spec { field: format!("{file}{at}: {field}"), value, reason }
}

/// `:LINE:COL` (from 1) of byte offset `off` in `text`.
fn line_col(text: &str, off: usize) -> String {
    let head = &text[..off.min(text.len())];
    let line = head.matches('\n').count() + 1;
    let col = head.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!(":{line}:{col}")
}

/// The line of `text` holding byte offset `off`, trimmed.
fn line_of(text: &str, off: usize) -> String {
    let off = off.min(text.len());
    let start = text[..off].rfind('\n').map_or(0, |i| i + 1);
    let end = text[off..].find('\n').map_or(text.len(), |i| off + i);
    text[start..end].trim().to_string()
}

/// Byte offset of the value a field path such as `bs` or `phases[2].cache` names.
fn value_span(text: &str, field: &str) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut cur: toml::de::DeValue<'_> = toml::de::DeValue::Table(doc.into_inner());
    let mut span = None;
    for seg in field.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (seg, None),
        };
        let next = cur.get(name)?;
        let next = match index {
            Some(i) => next.get_ref().get(i.checked_sub(1)?)?,
            None => next,
        };
        span = Some(next.span().start);
        cur = next.get_ref().clone();
    }
    span
}

/// The `key=value` modifiers a phase may carry, in the order phase names list them.
const PHASE_KEYS: &[&str] = &["workers", "round_robin", "files", "layout"];

impl crate::spec::Spec {
    /// The spec as parameters again, so it can be printed as TOML, stored and re-run.
    pub fn to_params(&self) -> Params {
        let mut p = Params::default();
        let mut set = |k: &str, v: Vec<String>| {
            p.0.insert(k.to_string(), v);
        };
        set("name", vec![self.name.clone()]);
        set("dirs", self.dirs.iter().map(|d| d.display().to_string()).collect());
        set("ops", self.phases.iter().map(|ph| ph.written().to_string()).collect());
        set("workers", vec![self.workers.to_string()]);
        set("size", vec![fmt_size_spec(self.size_bytes)]);
        set("bs", vec![fmt_size_spec(self.bs_bytes)]);
        set("layout", vec![self.layout.name().into()]);
        set("order", vec![self.order.label()]);
        set("cache", vec![self.cache.name().into()]);
        set("seed", vec![self.seed.to_string()]);
        set("engine", vec![self.engine.clone()]);
        if let Some(m) = &self.mpiio {
            set("mpiio", vec![if m.collective { "collective" } else { "independent" }.into()]);
            if !m.hints.is_empty() {
                set("mpiio_hint", m.hints.iter().map(|(k, v)| format!("{k}={v}")).collect());
            }
        }
        set("direct", vec![self.direct.to_string()]);
        set("sync", vec![self.sync.label()]);
        set("sync_call", vec![serde_json::to_value(self.sync_call).unwrap().as_str().unwrap().into()]);
        set("open_sync", vec![serde_json::to_value(self.open_sync).unwrap().as_str().unwrap().into()]);
        set("prealloc", vec![self.prealloc.to_string()]);
        set("alloc", vec![if self.alloc_block { "block" } else { "fs" }.into()]);
        set("drop_caches", vec![self.drop_caches.to_string()]);
        set("reps", vec![self.reps.to_string()]);
        set("keep", vec![self.keep.to_string()]);
        set("warmup", vec![self.warmup.to_string()]);
        set("settle", vec![format!("{}ns", self.settle_ns)]);
        set("prime_memory", vec![fmt_size_spec(self.prime_memory_bytes)]);
        set("interleave", vec![self.interleave.label()]);
        if self.layout.per_worker_files() && self.files != 0 && self.files != self.workers {
            set("files", vec![self.files.to_string()]);
        }
        if self.round_robin != 1 {
            set("round_robin", vec![self.round_robin.to_string()]);
        }
        if self.segments != 1 {
            set("segments", vec![self.segments.to_string()]);
        }
        if let Some(u) = self.stripe_unit_bytes {
            set("stripe_unit", vec![fmt_size_spec(u)]);
        }
        if let Some(c) = self.stripe_count {
            set("stripe_count", vec![c.to_string()]);
        }
        if self.pieces != crate::spec::PiecesMode::Serial {
            set("pieces", vec![self.pieces.name().into()]);
        }
        set("launcher", vec![serde_json::to_value(self.launcher).unwrap().as_str().unwrap().into()]);
        set("start", vec![serde_json::to_value(self.start).unwrap().as_str().unwrap().into()]);
        if let Some(r) = self.reorder_reads {
            set("reorder_reads", vec![r.label()]);
        }
        set("latency", vec![serde_json::to_value(self.latency).unwrap().as_str().unwrap().into()]);
        set("verify", vec![self.verify.to_string()]);
        if !self.allow_device.is_empty() {
            set("allow_device", self.allow_device.iter().map(|d| d.display().to_string()).collect());
        }
        if let Some(r) = &self.reuse {
            set("reuse", vec![r.clone()]);
        }
        set("iodepth", vec![self.iodepth.to_string()]);
        if let Some(w) = self.window_bytes {
            set("window", vec![fmt_size_spec(w)]);
        }
        if let (Some(l), Some(st)) = (self.mem_len_bytes, self.mem_stride_bytes) {
            set("mem_len", vec![fmt_size_spec(l)]);
            set("mem_stride", vec![fmt_size_spec(st)]);
        }
        if let Some(s) = self.strategy {
            set("strategy", vec![s.name().into()]);
            set("iters", vec![self.iters.unwrap_or(0).to_string()]);
            set("comptime", vec![crate::units::fmt_duration_spec(self.comptime_ns.unwrap_or(0))]);
        }
        if let Some(ns) = self.runtime_ns {
            set("runtime", vec![crate::units::fmt_duration_spec(ns)]);
        }
        if let Some(ns) = self.stonewall_ns {
            set("stonewall", vec![crate::units::fmt_duration_spec(ns)]);
        }
        if self.wear_out {
            set("wear_out", vec!["true".into()]);
        }
        let w = &self.workload;
        if let Some(r) = w.rwmixread {
            set("rwmixread", vec![r.to_string()]);
        }
        if let Some(b) = &w.bssplit {
            set("bssplit", vec![b.label()]);
        }
        match w.rate {
            Some(crate::spec::RateLimit::Bytes(b)) => set("rate", vec![format!("{}/s", fmt_size_spec(b))]),
            Some(crate::spec::RateLimit::Iops(n)) => set("rate_iops", vec![n.to_string()]),
            None => {}
        }
        if w.rate_process != crate::spec::RateProcess::Linear {
            set("rate_process", vec![w.rate_process.name().into()]);
        }
        if let Some(t) = w.thinktime {
            set("thinktime", vec![crate::units::fmt_duration_spec(t.ns)]);
            set("thinktime_spin", vec![crate::units::fmt_duration_spec(t.spin_ns)]);
            set("thinktime_blocks", vec![t.blocks.to_string()]);
        }
        if let Some(md) = &self.md {
            set("md_files", vec![md.items.to_string()]);
            set("md_dirs", vec![md.dirs.name().into()]);
            set("md_depth", vec![md.depth.to_string()]);
            set("md_fanout", vec![md.fanout.to_string()]);
            set("md_size", vec![fmt_size_spec(md.file_bytes)]);
            set("md_shift", vec![md.shift.to_string()]);
            set("md_find", vec![md.find.clone()]);
            if md.calls != crate::spec::MdCalls::Beneath {
                set("md_calls", vec![md.calls.name().into()]);
            }
        }
        p
    }
}
