//! The plan as JSON: the spec, every file, the disk space, and per phase and worker its files,
//! ops and first few ops.

use std::io::Write;

use serde::Serialize;

use super::{Planned, disk_bytes_total};
use crate::error::Result;
use crate::report::{Exporter, write_err};
use crate::spec::Spec;

pub struct Json;

impl Exporter<Planned<'_>> for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, p: &Planned<'_>, out: &mut dyn Write) -> Result<()> {
        let (spec, plan) = (p.spec, p.plan);
        let fname = |g: u32| plan.files[g as usize].name.clone();
        let j = PlanJson {
            spec,
            files: plan
                .files
                .iter()
                .map(|f| FileJson {
                    target: match &spec.servers {
                        Some(s) => format!("server {}: {}", f.target, s.dir.display()),
                        None => spec.dirs[f.target].display().to_string(),
                    },
                    name: f.name.clone(),
                    size_bytes: f.size_bytes,
                })
                .collect(),
            disk_bytes_per_rep: plan.disk_bytes(),
            disk_bytes_total: disk_bytes_total(spec, plan),
            layout_first: plan.layout_first,
            namespace: plan.namespace.as_ref().map(|n| NamespaceJson {
                roots: n.roots.iter().map(|r| r.path.clone()).collect(),
                items: n.items(),
                dirs: n.dirs(),
                made_first: n.make_first,
            }),
            phases: plan
                .phases
                .iter()
                .map(|ph| PhaseJson {
                    name: ph.name.clone(),
                    op: ph.op.name(),
                    order: ph.order.label(),
                    cache: ph.cache.name(),
                    layout: ph.layout.name(),
                    round_robin: ph.round_robin,
                    bytes: ph.bytes(),
                    workers: ph
                        .workers
                        .iter()
                        .map(|w| WorkerJson {
                            worker: w.worker,
                            files: w.files.iter().map(|&g| fname(g)).collect(),
                            ops: w.ops.timed_ops(),
                            op_bytes: if w.ops.parallel_pieces() > 0 { w.ops.bs } else { w.ops.op_len() },
                            bytes: w.ops.bytes(),
                            first_ops: w
                                .ops
                                .iter()
                                .take(8)
                                .map(|o| (fname(w.files[o.file as usize]), o.offset, o.len))
                                .collect(),
                            items: w.md.map(|m| m.items),
                            items_of: w.md.map(|m| m.owner),
                        })
                        .collect(),
                })
                .collect(),
        };
        crate::json::to_writer_pretty(&mut *out, &j).map_err(write_err)?;
        writeln!(out).map_err(write_err)
    }
}

#[derive(Serialize)]
struct PlanJson<'a> {
    spec: &'a Spec,
    files: Vec<FileJson>,
    disk_bytes_per_rep: u64,
    disk_bytes_total: u64,
    layout_first: bool,
    /// The metadata phases' trees (under each target's work directory) and their size.
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<NamespaceJson>,
    phases: Vec<PhaseJson>,
}

#[derive(Serialize)]
struct NamespaceJson {
    roots: Vec<String>,
    items: u64,
    dirs: u64,
    /// The first metadata phase needs items: they are made first, untimed.
    made_first: bool,
}

#[derive(Serialize)]
struct FileJson {
    target: String,
    name: String,
    size_bytes: u64,
}

#[derive(Serialize)]
struct PhaseJson {
    name: String,
    op: &'static str,
    order: String,
    cache: &'static str,
    layout: &'static str,
    round_robin: u32,
    bytes: u64,
    workers: Vec<WorkerJson>,
}

#[derive(Serialize)]
struct WorkerJson {
    worker: u32,
    files: Vec<String>,
    ops: u64,
    /// Bytes per op (bs, or the piece length of a striped file).
    op_bytes: u64,
    bytes: u64,
    /// The first few ops as [file, offset, len].
    first_ops: Vec<(String, u64, u64)>,
    /// A metadata phase: the items it visits and whose they are (their creator).
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    items_of: Option<u32>,
}
