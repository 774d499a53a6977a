//! The coordinator's part of the metadata phases: before the first, their items made untimed
//! when it needs them; before each, the namespace's cache state set and checked
//! (`target::ns_cache`); after each, what the workers found. The trees themselves are made
//! with the work directories (`WorkDirs::make_namespace`).

use std::path::PathBuf;

use crate::error::Result;
use crate::plan::namespace::NsPlan;
use crate::plan::{PhasePlan, RunPlan};
use crate::results::CacheCheck;
use crate::spec::OpKind;
use crate::target::ns_cache::{self, NsState};
use crate::worker::WorkerSample;

/// Before metadata phase `phase` of `plan`: its items made if it is the first and needs them,
/// then its cache state; the state and its check.
pub(super) fn before(
    plan: &RunPlan,
    ns: &NsPlan,
    phase: &PhasePlan,
    workdirs: &[PathBuf],
    seed: u64,
) -> Result<(NsState, CacheCheck)> {
    let first = plan.phases.iter().find(|p| p.op.is_metadata()).map(|p| p.index) == Some(phase.index);
    if first && ns.make_first {
        crate::target::namespace::lay_out(workdirs, ns, seed)?;
    }
    let exists = !matches!(phase.op, OpKind::Create | OpKind::Mkdir);
    let renamed = phase.workers.first().and_then(|w| w.md).is_some_and(|m| m.renamed);
    let state = ns_cache::prepare(phase.cache, workdirs, ns, exists, renamed)?;
    let check = CacheCheck { resident_fraction: 0.0, flags: state.flags(phase.cache) };
    Ok((state, check))
}

/// The state with what the workers of a find found.
pub(super) fn after(mut state: NsState, samples: &[WorkerSample]) -> NsState {
    let found: Vec<u64> = samples.iter().filter_map(|s| s.found).collect();
    if !found.is_empty() {
        state.found = Some(found.iter().sum());
    }
    state
}
