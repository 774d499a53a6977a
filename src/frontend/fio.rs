//! A fio job file (`iolab fio JOBFILE`) translated into one iolab experiment: each stonewall
//! group a phase in order (one job of `numjobs` workers each), fio's options mapped onto
//! iolab's parameters (rw and its mix, the random orders, bssplit, rates, think time, the
//! engines, syncs, files per job), each with the options it came from. An option iolab cannot
//! honour is refused by name, with the nearest iolab option where there is one.

use std::path::Path;

use crate::error::{Error, Result};

use super::Translation;
use super::fio_ini;
use super::fio_job::{Tr, job};

/// Parameters a phase may set apart from the others (as `read:runtime=10s`).
const PER_PHASE: &[&str] = &["rwmixread", "rate", "rate_iops", "runtime", "stonewall"];

/// Parameters only the phases that write use.
const WRITE_ONLY: &[&str] = &["sync", "sync_call", "prealloc", "open_sync"];

/// Translates a job file's text (`file` for messages and includes, `env` for `${VAR}`).
pub fn translate(text: &str, file: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Translation> {
    let jobs = fio_ini::parse(text, file, env)?;
    let trs: Vec<Tr> = jobs.iter().enumerate().map(|(i, j)| job(j, i == 0)).collect::<Result<_>>()?;
    // Jobs of one stonewall group run at once in fio; iolab runs one phase at a time.
    for (a, b) in trs.iter().zip(trs.iter().skip(1)) {
        if !b.new_group {
            return Err(Error::spec(
                format!("fio job [{}]", b.name),
                "no stonewall",
                format!(
                    "runs at once with [{}] in fio; iolab runs one phase at a time: put stonewall in [{}] (its jobs then run one after another), or give each job its own file",
                    a.name, b.name
                ),
            ));
        }
    }
    let mut t = Translation::new("fio");
    let names: Vec<&str> = trs.iter().map(|t| t.name.as_str()).collect();
    t.set("name", names.join("+"), "the job sections")?;
    let keys: std::collections::BTreeSet<&str> = trs.iter().flat_map(|t| t.params.keys().copied()).collect();
    let mut suffix: Vec<String> = vec![String::new(); trs.len()];
    let mut extra: Vec<Vec<String>> = vec![vec![]; trs.len()];
    let some_write = trs.iter().any(|t| t.op != "read");
    for key in keys {
        // What commits writes matters to the phases that write only.
        let writes = |t: &Tr| t.op != "read" || !WRITE_ONLY.contains(&key);
        let tj: Vec<&Tr> = trs.iter().filter(|t| !some_write || writes(t)).collect();
        let vals: Vec<Option<&(String, String)>> = tj.iter().map(|t| t.params.get(key)).collect();
        let same = vals.iter().all(|v| v.map(|x| &x.0) == vals[0].map(|x| &x.0));
        if same {
            let (v, _) = vals[0].unwrap();
            let mut from: Vec<&str> = vals.iter().map(|v| v.unwrap().1.as_str()).collect();
            from.dedup();
            t.set(key, v, &from.join(", "))?;
        } else if PER_PHASE.contains(&key) {
            for (i, v) in vals.iter().enumerate() {
                let mixed = trs[i].op == "rw";
                match v {
                    Some((v, from)) if key != "rwmixread" || mixed => {
                        suffix[i] += &format!(":{key}={v}");
                        extra[i].push(from.clone());
                    }
                    None if key != "rwmixread" => suffix[i] += &format!(":{key}=0"),
                    _ => {}
                }
            }
        } else {
            let i = vals.iter().position(|v| v.map(|x| &x.0) != vals[0].map(|x| &x.0)).unwrap();
            let shown = |k: usize| vals[k].map_or("fio's default".to_string(), |v| v.1.clone());
            return Err(Error::spec(
                format!("fio job [{}] ({key})", tj[i].name),
                shown(i),
                format!(
                    "differs from [{}]'s {}; iolab's phases share {key}: run the jobs as two job files",
                    tj[0].name,
                    shown(0)
                ),
            ));
        }
    }
    let ops: Vec<String> = trs
        .iter()
        .zip(&suffix)
        .map(|(tr, s)| {
            let order = if tr.order.0 == "seq" { String::new() } else { format!(":{}", tr.order.0) };
            format!("{}{order}{s}", tr.op)
        })
        .collect();
    let from: Vec<String> = trs
        .iter()
        .zip(&extra)
        .map(|(tr, extra)| {
            let o = if tr.order.1.is_empty() { String::new() } else { format!(" {}", tr.order.1) };
            let more: String = extra.iter().map(|e| format!(" {e}")).collect();
            format!("[{}] {}{o}{more}", tr.name, tr.op_from)
        })
        .collect();
    t.set_list("ops", ops, &from.join("; "))?;
    for tr in trs {
        for n in tr.notes {
            if !t.notes.contains(&n) {
                t.note(n);
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
#[path = "fio_tests.rs"]
mod tests;
