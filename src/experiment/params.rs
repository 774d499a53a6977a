//! The raw `key = value` map ([`Params`]) that TOML files, CLI flags and sweep axes all become,
//! keyed by the spec parameters ([`PARAMS`], declared with the spec's vocabulary).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::units::fmt_size_spec;

pub use crate::spec::params::{PARAMS, ParamDef};

/// Raw parameters: key -> values, before parsing. Later layers override earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Params(pub BTreeMap<String, Vec<String>>);

impl Params {
    /// Sets one key (normalising `-` to `_`), replacing earlier values. Unknown keys are refused.
    pub fn set(&mut self, key: &str, values: Vec<String>) -> Result<()> {
        let key = key.replace('-', "_");
        let key = if matches!(key.as_str(), "dir" | "targets" | "target") { "dirs".to_string() } else { key };
        let key = if key == "op" { "ops".to_string() } else { key };
        let def = PARAMS
            .iter()
            .find(|d| d.key == key)
            .ok_or_else(|| Error::spec(&key, values.join(","), "unknown parameter"))?;
        if !def.list && values.len() != 1 {
            return Err(Error::spec(&key, values.join(","), "takes exactly one value"));
        }
        self.0.insert(key, values);
        Ok(())
    }

    /// Sets a scalar key.
    pub fn set_one(&mut self, key: &str, value: impl ToString) -> Result<()> {
        self.set(key, vec![value.to_string()])
    }

    /// Overlays `other` on `self` (keys in `other` win).
    pub fn overlay(&mut self, other: &Params) {
        for (k, v) in &other.0 {
            self.0.insert(k.clone(), v.clone());
        }
    }

    pub(super) fn one(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.first()).map(String::as_str)
    }

    /// Parses a TOML experiment file into parameters. Nested `[[phases]]` tables become `ops`.
    pub fn from_toml(text: &str) -> Result<Params> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| Error::spec("spec file", "TOML", e.message().to_string()))?;
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
/// `layout`. Each becomes the phase string `op:workers=N:round_robin=R:layout=L:order:cache`.
fn phases_from_toml(v: &toml::Value) -> Result<Vec<String>> {
    let arr =
        v.as_array().ok_or_else(|| Error::spec("phases", v, "expected an array of tables ([[phases]])"))?;
    arr.iter()
        .map(|t| {
            let t = t.as_table().ok_or_else(|| Error::spec("phases", t, "expected a table"))?;
            let mut parts: BTreeMap<usize, String> = BTreeMap::new();
            for (k, v) in t {
                let val = toml_scalar(&format!("phases.{k}"), v)?;
                let (rank, text) = match k.as_str() {
                    "op" => (0, val),
                    "workers" | "round_robin" | "layout" => {
                        (PHASE_KEYS.iter().position(|p| p == k).unwrap_or(0) + 1, format!("{k}={val}"))
                    }
                    "order" => (4, val),
                    "cache" => (5, val),
                    _ => {
                        return Err(Error::spec(
                            format!("phases.{k}"),
                            val,
                            "unknown phase key (op, workers, round_robin, layout, order, cache)",
                        ));
                    }
                };
                parts.insert(rank, text);
            }
            if !parts.contains_key(&0) {
                return Err(Error::spec("phases.op", "", "each phase needs an `op`"));
            }
            Ok(parts.into_values().collect::<Vec<_>>().join(":"))
        })
        .collect()
}

/// The `key=value` modifiers a phase may carry, in the order phase names list them.
const PHASE_KEYS: &[&str] = &["workers", "round_robin", "layout"];

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
        set("order", vec![self.order.name().into()]);
        set("cache", vec![self.cache.name().into()]);
        set("seed", vec![self.seed.to_string()]);
        set("engine", vec![self.engine.clone()]);
        set("direct", vec![self.direct.to_string()]);
        set("sync", vec![self.sync.label()]);
        set("sync_call", vec![serde_json::to_value(self.sync_call).unwrap().as_str().unwrap().into()]);
        set("open_sync", vec![serde_json::to_value(self.open_sync).unwrap().as_str().unwrap().into()]);
        set("prealloc", vec![self.prealloc.to_string()]);
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
        if let Some(u) = self.stripe_unit_bytes {
            set("stripe_unit", vec![fmt_size_spec(u)]);
        }
        if let Some(c) = self.stripe_count {
            set("stripe_count", vec![c.to_string()]);
        }
        set("launcher", vec![serde_json::to_value(self.launcher).unwrap().as_str().unwrap().into()]);
        set("start", vec![serde_json::to_value(self.start).unwrap().as_str().unwrap().into()]);
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
            set("comptime", vec![crate::strategy::spec::fmt_duration_spec(self.comptime_ns.unwrap_or(0))]);
        }
        p
    }
}
