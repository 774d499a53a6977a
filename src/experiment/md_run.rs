//! The coordinator's part of the metadata phases: before the first, their items made untimed
//! when it needs them; before each, the namespace's cache state set and checked
//! (`target::ns_cache`); after each, what the workers found, and after a stonewalled create
//! or mkdir the items each worker made, which the phases after it visit (per owner, as
//! `PhaseJob::extents`). The trees themselves are made with the work directories
//! (`WorkDirs::make_namespace`).

use std::path::PathBuf;

use crate::error::Result;
use crate::plan::namespace::NsPlan;
use crate::plan::{PhasePlan, RunPlan};
use crate::results::CacheCheck;
use crate::spec::Spec;
use crate::target::ns_cache::{self, NsState};
use crate::worker::WorkerSample;

/// Before metadata phase `phase` of `plan`: its items made if it is the first and needs them,
/// then its cache state (over `made`, the items per owner there are; empty: all); the state
/// and its check.
pub(super) fn before(
    plan: &RunPlan,
    ns: &NsPlan,
    phase: &PhasePlan,
    workdirs: &[PathBuf],
    seed: u64,
    made: &[u64],
) -> Result<(NsState, CacheCheck)> {
    let first = plan.phases.iter().find(|p| p.op.is_metadata()).map(|p| p.index) == Some(phase.index);
    if first && ns.make_first {
        crate::target::namespace::lay_out(workdirs, ns, seed)?;
    }
    let exists = !phase.op.makes_items();
    let renamed = phase.workers.first().and_then(|w| w.md).is_some_and(|m| m.renamed);
    let mut state = ns_cache::prepare(phase.cache, workdirs, ns, exists, renamed, made)?;
    if exists && !made.is_empty() {
        state.items_made = Some(made.to_vec());
    }
    let check = CacheCheck { resident_fraction: 0.0, flags: state.flags(phase.cache) };
    Ok((state, check))
}

/// The state with what the workers of a find found. After a create or mkdir, `made` becomes
/// the items each worker made if a stonewall stopped any short of the namespace's items
/// (empty: all made), which the state records.
pub(super) fn after(
    spec: &Spec,
    phase: &PhasePlan,
    mut state: NsState,
    samples: &[WorkerSample],
    made: &mut Vec<u64>,
) -> NsState {
    let found: Vec<u64> = samples.iter().filter_map(|s| s.found).collect();
    if !found.is_empty() {
        state.found = Some(found.iter().sum());
    }
    if phase.op.makes_items() {
        made.clear();
        if spec.phase_bound(&spec.phases[phase.index]).is_some() {
            let items = spec.md.as_ref().map_or(0, |ns| ns.items);
            let mut per = vec![items; phase.workers.len()];
            for s in samples {
                if let Some(n) = per.get_mut(s.worker as usize) {
                    *n = s.ops.min(items);
                }
            }
            state.items_made = Some(per.clone());
            if per.iter().any(|&n| n < items) {
                *made = per;
            }
        }
    }
    state
}
