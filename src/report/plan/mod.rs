//! `iolab plan`: what a run would do, computed without touching anything. Its formats (text,
//! JSON) are the exporters of [`FORMATS`], one file each under `plan/`.

use super::{Exporter, render};
use crate::plan::RunPlan;
use crate::spec::Spec;

mod json;
mod text;

/// A plan as its formats read it: the spec, its plan, and the free bytes and inodes of each of
/// [`space_dirs`] (None where unknown), measured by the caller: the report makes no system call.
pub struct Planned<'a> {
    pub spec: &'a Spec,
    pub plan: &'a RunPlan,
    pub free: &'a [Option<(u64, u64)>],
}

/// The formats of `iolab plan`.
pub static FORMATS: &[&(dyn for<'a> Exporter<Planned<'a>> + Sync)] = &[&text::Text, &json::Json];

/// The directories the files go in: the targets, or with I/O-server ranks the servers'
/// directory (node-local: this host's view of it).
pub fn space_dirs(spec: &Spec) -> Vec<std::path::PathBuf> {
    match &spec.servers {
        Some(s) => vec![s.dir.clone()],
        None => spec.dirs.clone(),
    }
}

/// Disk space the whole experiment needs at its peak: one repetition's files, or all of them
/// when files are kept; none when its engine moves no data, it reads kept files, or its
/// servers keep nothing on disk.
pub fn disk_bytes_total(spec: &Spec, plan: &RunPlan) -> u64 {
    let memory = spec.servers.as_ref().is_some_and(|s| s.store == crate::spec::ServerStore::Memory);
    if !crate::worker::registry::real_io(&spec.engine) || spec.reuse.is_some() || memory {
        return 0;
    }
    plan.disk_bytes().saturating_mul(if spec.keep { spec.reps as u64 } else { 1 })
}

/// The plan as JSON.
pub fn plan_json(spec: &Spec, plan: &RunPlan) -> String {
    render(&json::Json, &Planned { spec, plan, free: &[] }).expect("the plan is written to memory")
}

/// The plan as text, with the free space of the targets (`free`, as in [`Planned`]).
pub fn plan_text(spec: &Spec, plan: &RunPlan, free: &[Option<(u64, u64)>]) -> String {
    render(&text::Text, &Planned { spec, plan, free }).expect("the plan is written to memory")
}
