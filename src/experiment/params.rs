//! The raw `key = value` map ([`Params`]) that TOML files, CLI flags and sweep axes all become,
//! keyed by the spec parameters ([`PARAMS`], declared once with the spec's vocabulary in
//! [`crate::spec::params`]); and the parameter table of `docs/spec.md`, made from them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use crate::spec::params::{Flag, FlagKind, PARAMS, ParamDef};

/// The parameter table of `docs/spec.md`: one row per parameter, its key, flags, default and
/// meaning (the help line, then the rest).
pub fn markdown_table() -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from("| key | flag | default | meaning |\n|---|---|---|---|\n");
    for def in PARAMS {
        let flags: Vec<String> = def
            .flags
            .iter()
            .map(|f| match f.kind {
                FlagKind::Value | FlagKind::Switch(_) => format!("`--{}`", f.name),
                FlagKind::Repeated => format!("`--{} {}` (repeatable)", f.name, f.value_name),
                FlagKind::Commas => format!("`--{} {}`", f.name, f.value_name),
            })
            .collect();
        let meaning =
            if def.more.is_empty() { def.help.to_string() } else { format!("{}. {}", def.help, def.more) };
        out += &format!(
            "| `{}` | {} | {} | {} |\n",
            def.key,
            cell(&flags.join(", ")),
            cell(def.default),
            cell(&meaning)
        );
    }
    out
}

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

    /// Sets `KEY=VALUE` (`--set`): the directories and phases are comma-separated lists.
    pub fn set_kv(&mut self, kv: &str) -> Result<()> {
        let (k, v) = kv.split_once('=').ok_or_else(|| Error::spec("set", kv, "expected KEY=VALUE"))?;
        let values = if matches!(k, "dirs" | "dir" | "ops" | "op" | "targets") {
            v.split(',').map(String::from).collect()
        } else {
            vec![v.to_string()]
        };
        self.set(k, values)
    }

    /// Overlays `other` on `self` (keys in `other` win).
    pub fn overlay(&mut self, other: &Params) {
        for (k, v) in &other.0 {
            self.0.insert(k.clone(), v.clone());
        }
    }

    /// The (first) value of a key, if set.
    pub fn one(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.first()).map(String::as_str)
    }
}

/// A boolean parameter: true, yes, 1, on or false, no, 0, off.
pub(super) fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v {
        "true" | "yes" | "1" | "on" => Ok(true),
        "false" | "no" | "0" | "off" => Ok(false),
        _ => Err(Error::spec(key, v, "expected true or false")),
    }
}

/// A whole-number parameter.
pub(super) fn parse_u64(key: &str, v: &str) -> Result<u64> {
    v.trim().parse().map_err(|_| Error::spec(key, v, "expected a non-negative whole number"))
}

/// `alloc`: `fs` (false) or `block` (true), which contradicts `prealloc`.
pub fn alloc(value: Option<&str>, prealloc: bool) -> Result<bool> {
    let block = match value.unwrap_or("fs") {
        "fs" => false,
        "block" => true,
        other => return Err(Error::spec("alloc", other, "expected fs or block")),
    };
    if block && prealloc {
        return Err(Error::spec(
            "alloc",
            "block",
            "prealloc allocates every file before the phase; choose one",
        ));
    }
    Ok(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_has_its_own_flag_and_a_help_line() {
        for def in PARAMS {
            let own = def.flags.first().unwrap_or_else(|| panic!("{} has no flag", def.key));
            assert!(!matches!(own.kind, FlagKind::Switch(v) if v != "true"), "{}", def.key);
            // One line, which the docs row follows with ". " and the rest, which ends bare.
            let sentence_end = |s: &str| s.ends_with('.') && !s.ends_with("...");
            assert!(!def.help.is_empty() && !def.help.contains('\n'), "{}", def.key);
            assert!(!sentence_end(def.help) && !sentence_end(def.more), "{}", def.key);
            // Its own flag names it (`--dir` and `--op` through their aliases).
            let mut p = Params::default();
            p.set(own.name, vec!["x".into()]).unwrap();
            assert!(p.0.contains_key(def.key), "--{} does not name {}", own.name, def.key);
            for f in def.flags {
                // What a flag gives must be what the parameter takes.
                let many = matches!(f.kind, FlagKind::Repeated | FlagKind::Commas);
                assert!(!many || def.list, "--{} gives {} several values", f.name, def.key);
            }
        }
        let mut names: Vec<&str> = PARAMS.iter().flat_map(|d| d.flags).map(|f| f.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a flag name is used twice");
    }

    #[test]
    fn set_kv_splits_lists_and_refuses_what_is_not_key_value() {
        let mut p = Params::default();
        p.set_kv("targets=a,b").unwrap();
        p.set_kv("op=write,read").unwrap();
        p.set_kv("name=a,b").unwrap();
        assert_eq!(p.0["dirs"], ["a", "b"]);
        assert_eq!(p.0["ops"], ["write", "read"]);
        assert_eq!(p.one("name"), Some("a,b"));
        let e = p.set_kv("size").unwrap_err();
        assert!(matches!(e, Error::Spec { ref field, .. } if field == "set"), "{e:?}");
        let e = p.set_kv("blocksize=4k").unwrap_err();
        assert!(matches!(e, Error::Spec { ref field, .. } if field == "blocksize"), "{e:?}");
    }
}
