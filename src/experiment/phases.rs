//! Phases from the spec's `ops` list: `write,read:cold,read:warm,rw:zipf:1.2` and their
//! modifiers (`:seq|:reverse|:random|:uniform|:zipf:THETA|...`, `:cold|:warm|:asis`,
//! `workers=N`, `rr=N`, `rwmixread=N`, `rate_iops=N`, ...), each phase named uniquely. A run has at most [`MAX_PHASES`] phases; naming them is linear in their number.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::spec::*;

use super::layout;

/// The most phases one run may have.
pub const MAX_PHASES: usize = 1000;

pub(super) fn parse_phases(
    values: &[String],
    default_cache: CachePolicy,
    default_order: Order,
) -> Result<Vec<Phase>> {
    let items: Vec<&str> =
        values.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|i| !i.is_empty()).collect();
    if items.len() > MAX_PHASES {
        return Err(Error::spec(
            "ops",
            format!("{} phases", items.len()),
            format!("a run has at most {MAX_PHASES} phases"),
        ));
    }
    let mut phases: Vec<Phase> = Vec::with_capacity(items.len());
    // How often each phase text was seen so far: the second `read` is `read#2`. (`#` cannot
    // appear in a valid phase, so a suffixed name never equals another phase's text.)
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for item in items {
        let mut parts = item.split(':').peekable();
        let op = match parts.next().unwrap_or("") {
            "write" => OpKind::Write,
            "rewrite" => OpKind::Rewrite,
            "read" => OpKind::Read,
            "rw" | "readwrite" => OpKind::Rw,
            "blast" => OpKind::Blast,
            other => match OpKind::METADATA.into_iter().find(|k| k.name() == other) {
                Some(k) => k,
                None => {
                    return Err(Error::spec(
                        "ops",
                        item,
                        format!(
                            "unknown operation `{other}` (write, rewrite, read, rw, blast; metadata: create, stat, open, read-files, rename, unlink, mkdir, rmdir, find)"
                        ),
                    ));
                }
            },
        };
        // A metadata phase leaves the namespace's caches alone unless it names a state: the
        // data phases' default (evicting files' pages) says nothing about directory entries.
        let (mut order, mut cache) =
            (default_order, if op.is_metadata() { CachePolicy::Asis } else { default_cache });
        let (mut workers, mut round_robin, mut layout, mut files) = (None, None, None, None);
        let (mut runtime_ns, mut stonewall_ns) = (None, None);
        // Each modifier once: a second one would silently win over the first (`read:cold:warm`
        // ran warm), so two are refused, naming both.
        let mut given: Vec<(String, String)> = vec![];
        let mut pace = super::workload::PhasePace::default();
        while let Some(m) = parts.next() {
            // An order with a parameter spans two parts: `zipf:1.2`, `order=zipf:1.2`.
            let mut m = m.to_string();
            let kind = m.strip_prefix("order=").unwrap_or(&m);
            if Order::takes_param(kind)
                && let Some(p) = parts.next_if(|p| p.trim().parse::<f64>().is_ok())
            {
                m = format!("{m}:{p}");
            }
            let m = m.as_str();
            let slot = match m.split_once('=') {
                Some((k, _)) => match k.replace('-', "_").as_str() {
                    "rr" | "round_robin" => "round_robin".to_string(),
                    "order" => "an order".to_string(),
                    "cache" => "a cache state".to_string(),
                    k => k.to_string(),
                },
                None if Order::parse(m).is_some() || Order::takes_param(m.split(':').next().unwrap_or(m)) => {
                    "an order".to_string()
                }
                None if CachePolicy::parse(m).is_some() => "a cache state".to_string(),
                None => String::new(),
            };
            if let Some((_, first)) = given.iter().find(|(s, _)| !slot.is_empty() && *s == slot) {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!("{slot} is given twice ({first}, then {m}): a phase takes one"),
                ));
            }
            given.push((slot, m.to_string()));
            if pace.modifier(item, m)? {
                continue;
            } else if let Some((k, v)) = m.split_once('=') {
                let k = k.replace('-', "_");
                match k.as_str() {
                    "workers" => workers = Some(layout::phase_count(item, &k, v, 4096)?),
                    "round_robin" | "rr" => round_robin = Some(layout::phase_count(item, &k, v, 1 << 20)?),
                    "files" => files = Some(layout::phase_count(item, &k, v, 1_000_000)?),
                    "runtime" => runtime_ns = Some(super::bound::phase_duration(item, &k, v)?),
                    "stonewall" => stonewall_ns = Some(super::bound::phase_duration(item, &k, v)?),
                    "layout" => {
                        layout = Some(Layout::parse(v).ok_or_else(|| {
                            Error::spec(
                                "ops",
                                item,
                                format!("unknown layout `{v}` ({})", Layout::NAMES.join(", ")),
                            )
                        })?)
                    }
                    "order" => order = Order::parse_checked(v).map_err(|e| Error::spec("ops", item, e))?,
                    "cache" => {
                        cache = CachePolicy::parse(v)
                            .ok_or_else(|| Error::spec("ops", item, format!("unknown cache policy `{v}`")))?
                    }
                    _ => {
                        return Err(Error::spec(
                            "ops",
                            item,
                            format!(
                                "unknown phase key `{k}` (workers, round_robin, files, layout, order, cache, runtime, stonewall, rwmixread, rate, rate_iops)"
                            ),
                        ));
                    }
                }
            } else if let Some(o) = Order::parse(m) {
                order = o;
            } else if Order::takes_param(m.split(':').next().unwrap_or(m)) {
                return Err(Error::spec("ops", item, Order::parse_checked(m).err().unwrap_or_default()));
            } else if let Some(c) = CachePolicy::parse(m) {
                cache = c;
            } else {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!(
                        "unknown modifier `{m}` (seq, reverse, random, uniform, zipf:THETA, pareto:H, normal:DEV, cold, warm, asis, workers=N, round_robin=R, files=N, layout=L, runtime=D, stonewall=D, rwmixread=N, rate=SIZE/s, rate_iops=N)"
                    ),
                ));
            }
        }
        if op.is_metadata() {
            let data_only = [
                (workers.is_some(), "workers"),
                (round_robin.is_some(), "round_robin"),
                (files.is_some(), "files"),
                (layout.is_some(), "layout"),
                (order != default_order, "order"),
                (pace.rate_bytes_per_s.is_some() || pace.rate_iops.is_some(), "rate"),
            ];
            if let Some((_, k)) = data_only.iter().find(|(set, _)| *set) {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!(
                        "a metadata phase takes no `{k}`: every worker of the run visits its items in order (the namespace's md_* parameters shape them)"
                    ),
                ));
            }
            order = Order::Seq;
            if runtime_ns.is_some_and(|ns| ns > 0) {
                return Err(Error::spec(
                    "ops",
                    item,
                    "runtime: a metadata phase is not run for a time, it goes through its items; a create or mkdir takes a stonewall (create:stonewall=D), as mdtest's -W",
                ));
            }
            if stonewall_ns.is_some_and(|ns| ns > 0) && !op.makes_items() {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!(
                        "stonewall: only create and mkdir take one; {} goes through the items they made",
                        op.name()
                    ),
                ));
            }
        }
        let repeats = seen.entry(item).or_insert(0);
        *repeats += 1;
        let name = if *repeats == 1 { item.to_string() } else { format!("{item}#{repeats}") };
        phases.push(Phase {
            name,
            op,
            order,
            cache,
            workers,
            round_robin,
            layout,
            files,
            runtime_ns,
            stonewall_ns,
            rwmixread: pace.rwmixread,
            rate_bytes_per_s: pace.rate_bytes_per_s,
            rate_iops: pace.rate_iops,
        });
    }
    if phases.is_empty() {
        return Err(Error::spec("ops", values.join(","), "at least one phase is needed"));
    }
    Ok(phases)
}

/// Files a write phase of the per-worker layouts writes at a time, block by block (its workers
/// times its round-robin width, at most the files); None for one file or a shared file.
pub(super) fn written_together(spec: &Spec, phase: &crate::plan::PhasePlan) -> Option<u64> {
    let files = spec.file_count() as u64;
    let k = (phase.workers.len() as u64 * phase.round_robin as u64).min(files);
    (spec.layout.per_worker_files() && files >= 2).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(items: Vec<String>) -> Result<Vec<Phase>> {
        parse_phases(&items, CachePolicy::Cold, Order::Seq)
    }

    /// A thousand phases are named as before (the n-th `read` is `read#n`); more are refused
    /// before any is parsed.
    #[test]
    fn a_thousand_phases_at_most_named_in_one_pass() {
        let mut items = vec!["write".to_string()];
        items.extend((1..MAX_PHASES).map(|i| if i % 2 == 0 { "read:warm" } else { "read" }.to_string()));
        let p = parse(items).unwrap();
        assert_eq!(p.len(), MAX_PHASES);
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names[..5], ["write", "read", "read:warm", "read#2", "read:warm#2"]);
        assert_eq!(names[MAX_PHASES - 1], "read#500");
        match parse(vec!["read".to_string(); 200_000]) {
            Err(Error::Spec { field, value, reason }) => {
                assert_eq!((field.as_str(), value.as_str()), ("ops", "200000 phases"));
                assert_eq!(reason, "a run has at most 1000 phases");
            }
            other => panic!("{other:?}"),
        }
        // One comma-separated value counts phase by phase too.
        assert!(parse(vec![vec!["read"; 1001].join(",")]).is_err());
        assert_eq!(parse(vec![vec!["read"; 1000].join(",")]).unwrap().len(), 1000);
    }
}
