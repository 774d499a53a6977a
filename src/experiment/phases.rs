//! Phases from the spec's `ops` list: `write,read:cold,read:warm` and their modifiers
//! (`:seq|:reverse|:random`, `:cold|:warm|:asis`, `workers=N`, `rr=N`, ...), each phase named
//! uniquely.

use crate::error::{Error, Result};
use crate::spec::*;

use super::layout;

pub(super) fn parse_phases(
    values: &[String],
    default_cache: CachePolicy,
    default_order: Order,
) -> Result<Vec<Phase>> {
    let mut phases: Vec<Phase> = Vec::new();
    for item in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let mut parts = item.split(':');
        let op = match parts.next().unwrap_or("") {
            "write" => OpKind::Write,
            "rewrite" => OpKind::Rewrite,
            "read" => OpKind::Read,
            other => {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!("unknown operation `{other}` (write, rewrite, read)"),
                ));
            }
        };
        let (mut order, mut cache) = (default_order, default_cache);
        let (mut workers, mut round_robin, mut layout) = (None, None, None);
        for m in parts {
            if let Some((k, v)) = m.split_once('=') {
                let k = k.replace('-', "_");
                match k.as_str() {
                    "workers" => workers = Some(layout::phase_count(item, &k, v, 4096)?),
                    "round_robin" | "rr" => round_robin = Some(layout::phase_count(item, &k, v, 1 << 20)?),
                    "layout" => {
                        layout = Some(Layout::parse(v).ok_or_else(|| {
                            Error::spec(
                                "ops",
                                item,
                                format!("unknown layout `{v}` ({})", Layout::NAMES.join(", ")),
                            )
                        })?)
                    }
                    "order" => {
                        order = Order::parse(v)
                            .ok_or_else(|| Error::spec("ops", item, format!("unknown order `{v}`")))?
                    }
                    "cache" => {
                        cache = CachePolicy::parse(v)
                            .ok_or_else(|| Error::spec("ops", item, format!("unknown cache policy `{v}`")))?
                    }
                    _ => {
                        return Err(Error::spec(
                            "ops",
                            item,
                            format!("unknown phase key `{k}` (workers, round_robin, layout, order, cache)"),
                        ));
                    }
                }
            } else if let Some(o) = Order::parse(m) {
                order = o;
            } else if let Some(c) = CachePolicy::parse(m) {
                cache = c;
            } else {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!(
                        "unknown modifier `{m}` (seq, reverse, random, cold, warm, asis, workers=N, round_robin=R, layout=L)"
                    ),
                ));
            }
        }
        let base = item.to_string();
        let repeats =
            phases.iter().filter(|p| p.name == base || p.name.starts_with(&format!("{base}#"))).count();
        let name = if repeats == 0 { base } else { format!("{base}#{}", repeats + 1) };
        phases.push(Phase { name, op, order, cache, workers, round_robin, layout });
    }
    if phases.is_empty() {
        return Err(Error::spec("ops", values.join(","), "at least one phase is needed"));
    }
    Ok(phases)
}
