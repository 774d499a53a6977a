//! `iolab results trace`: an experiment's per-op traces from the store, filtered by phase and
//! repetition. Its formats (CSV, one row per op; JSON lines, one object per op) are the
//! exporters of [`FORMATS`], one file each under `trace/`.

use std::io::Write;

use serde::Serialize;

use super::Exporter;
use crate::error::{Error, Result};
use crate::store::Store;

mod csv;
mod json;

/// Which ops to export.
#[derive(Debug, Clone, Default)]
pub struct TraceFilter {
    /// A phase name as tables show it (`read:cold`, `read#2`).
    pub phase: Option<String>,
    pub rep: Option<u32>,
}

/// The traces of experiment `id` in `store` that pass `filter`: what the formats read.
pub struct Traces<'a> {
    pub store: &'a Store,
    pub id: &'a str,
    pub filter: &'a TraceFilter,
}

/// The formats of `iolab results trace`.
pub static FORMATS: &[&(dyn for<'a> Exporter<Traces<'a>> + Sync)] = &[&csv::Csv, &json::Json];

/// One traced op.
#[derive(Serialize)]
struct Line<'a> {
    run_id: &'a str,
    point: usize,
    rep: u32,
    phase: &'a str,
    worker: u32,
    op: u64,
    file: u32,
    offset_bytes: u64,
    start_ns: u64,
    duration_ns: u64,
    len_bytes: Option<u64>,
    write: Option<bool>,
    response_ns: Option<u64>,
}

/// Writes the traces of experiment `id`, as JSON lines or CSV; fails if none match.
pub fn export(store: &Store, id: &str, filter: &TraceFilter, json: bool, out: &mut dyn Write) -> Result<()> {
    let exporter: &dyn Exporter<Traces<'_>> = if json { &json::Json } else { &csv::Csv };
    exporter.export(&Traces { store, id, filter }, out)
}

/// Hands each op that passes the filter to `write`, in the store's order; fails if the phase
/// asked for does not exist, or if no op passes.
fn each_line(t: &Traces<'_>, mut write: impl FnMut(&Line<'_>) -> Result<()>) -> Result<()> {
    let (store, id, filter) = (t.store, t.id, t.filter);
    let exp = store.load(id)?;
    let names: Vec<Vec<String>> =
        exp.points.iter().map(|p| p.phases.iter().map(|ph| ph.name.clone()).collect()).collect();
    if let Some(want) = &filter.phase
        && !names.iter().flatten().any(|n| n == want)
    {
        let all: Vec<&str> =
            names.first().map(|v| v.iter().map(String::as_str).collect()).unwrap_or_default();
        return Err(Error::spec("phase", want, format!("no such phase (phases: {})", all.join(", "))));
    }
    let mut written = 0u64;
    store.for_each_trace_op(id, |r| {
        let phase = names.get(r.point).and_then(|p| p.get(r.phase)).map(String::as_str).unwrap_or("?");
        if filter.phase.as_deref().is_some_and(|p| p != phase) || filter.rep.is_some_and(|rep| rep != r.rep) {
            return Ok(());
        }
        written += 1;
        write(&Line {
            run_id: &r.run_id,
            point: r.point,
            rep: r.rep,
            phase,
            worker: r.worker,
            op: r.op,
            file: r.file,
            offset_bytes: r.offset_bytes,
            start_ns: r.start_ns,
            duration_ns: r.duration_ns,
            len_bytes: r.len_bytes,
            write: r.write,
            response_ns: r.response_ns,
        })
    })?;
    if written == 0 {
        return Err(Error::NotFound(format!(
            "experiment {id} has no traced ops{} (run with --trace or latency = trace)",
            if filter.phase.is_some() || filter.rep.is_some() { " matching the filter" } else { "" }
        )));
    }
    Ok(())
}
