//! `iolab results trace`: an experiment's per-op traces from the store, as CSV (one row per
//! op) or JSON lines (one object per op), filtered by phase and repetition.

use std::io::Write;

use serde::Serialize;

use super::write_err;
use crate::error::{Error, Result};
use crate::store::Store;

/// Which ops to export.
#[derive(Debug, Clone, Default)]
pub struct TraceFilter {
    /// A phase name as tables show it (`read:cold`, `read#2`).
    pub phase: Option<String>,
    pub rep: Option<u32>,
}

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
}

/// Writes the traces of experiment `id`; fails if none match.
pub fn export(store: &Store, id: &str, filter: &TraceFilter, json: bool, out: &mut dyn Write) -> Result<()> {
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
    let mut sink = if json { Sink::Json(out) } else { Sink::Csv(Box::new(::csv::Writer::from_writer(out))) };
    let mut written = 0u64;
    store.for_each_trace_op(id, |r| {
        let phase = names.get(r.point).and_then(|p| p.get(r.phase)).map(String::as_str).unwrap_or("?");
        if filter.phase.as_deref().is_some_and(|p| p != phase) || filter.rep.is_some_and(|rep| rep != r.rep) {
            return Ok(());
        }
        written += 1;
        sink.write(&Line {
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
        })
    })?;
    sink.flush()?;
    if written == 0 {
        return Err(Error::NotFound(format!(
            "experiment {id} has no traced ops{} (run with --trace or latency = trace)",
            if filter.phase.is_some() || filter.rep.is_some() { " matching the filter" } else { "" }
        )));
    }
    Ok(())
}

enum Sink<'a> {
    Csv(Box<::csv::Writer<&'a mut dyn Write>>),
    Json(&'a mut dyn Write),
}

impl Sink<'_> {
    fn write(&mut self, line: &Line<'_>) -> Result<()> {
        match self {
            Sink::Csv(w) => w.serialize(line).map_err(write_err),
            Sink::Json(out) => {
                serde_json::to_writer(&mut **out, line).map_err(write_err)?;
                out.write_all(b"\n").map_err(write_err)
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        match self {
            Sink::Csv(w) => w.flush().map_err(write_err),
            Sink::Json(out) => out.flush().map_err(write_err),
        }
    }
}
