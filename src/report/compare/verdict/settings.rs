//! The settings two experiments differ in: every field of their specs, their sweep axes, the
//! facts of their hosts and targets that bear on a rate, and the statistic their figures are
//! summarised by.

use serde_json::Value;

use super::Setting;
use crate::results::ExperimentResult;

/// The host facts compared (the rest, such as free space, change from run to run).
const HOST_KEYS: [&str; 8] =
    ["hostname", "os", "kernel", "cpu_model", "cpus", "mem_bytes", "iolab_version", "git_rev"];

/// The target facts compared, per target.
const TARGET_KEYS: [&str; 8] = [
    "fs_type",
    "mount_point",
    "mount_options",
    "device_model",
    "rotational",
    "scheduler",
    "read_ahead_kb",
    "mount_source",
];

/// Flattens a JSON tree into `a.b.0.c = value` pairs under `prefix`.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&key(k), v, out)),
        Value::Array(xs) if !xs.is_empty() => {
            xs.iter().enumerate().for_each(|(i, v)| flatten(&key(&i.to_string()), v, out))
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Null => out.push((prefix.to_string(), "none".into())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// One experiment's settings, flattened, in a fixed order: the spec, then the host, then its
/// targets, then the design's sweep axes and statistic.
fn settings(e: &ExperimentResult) -> Vec<(String, String)> {
    let mut out = vec![];
    if let Ok(v) = crate::json::to_value(&e.spec) {
        flatten("", &v, &mut out);
    }
    if let Ok(Value::Object(h)) = crate::json::to_value(&e.host) {
        for k in HOST_KEYS {
            if let Some(v) = h.get(k) {
                flatten(&format!("host.{k}"), v, &mut out);
            }
        }
    }
    for (i, t) in e.host.targets.iter().enumerate() {
        if let Ok(Value::Object(m)) = crate::json::to_value(t) {
            for k in TARGET_KEYS {
                if let Some(v) = m.get(k) {
                    flatten(&format!("target.{i}.{k}"), v, &mut out);
                }
            }
        }
    }
    for a in &e.design.axes {
        out.push((format!("sweep.{}", a.key), a.text.clone()));
    }
    out.push(("headline".into(), e.design.headline.name().into()));
    out.push(("figure".into(), e.design.figure.name().into()));
    out
}

/// The settings whose values differ, in A's order, then those only B has.
pub fn differ(a: &ExperimentResult, b: &ExperimentResult) -> Vec<Setting> {
    let (sa, sb) = (settings(a), settings(b));
    let get = |s: &[(String, String)], k: &str| s.iter().find(|(j, _)| j == k).map(|(_, v)| v.clone());
    let none = || "(none)".to_string();
    let mut out: Vec<Setting> = sa
        .iter()
        .filter(|(k, v)| get(&sb, k).as_ref() != Some(v))
        .map(|(k, v)| Setting { key: k.clone(), a: v.clone(), b: get(&sb, k).unwrap_or_else(none) })
        .collect();
    out.extend(sb.iter().filter(|(k, _)| get(&sa, k).is_none()).map(|(k, v)| Setting {
        key: k.clone(),
        a: none(),
        b: v.clone(),
    }));
    out
}
