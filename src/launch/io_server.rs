//! I/O-server ranks (`servers = S` under mpirun): the roles of a phase's ranks. The last S
//! ranks are servers, each holding file f (a striped file's component f) when f mod S is its
//! index, in its own directory on its own host; ranks 0..C-1 are the clients, one worker each
//! on the rank's main thread (engine `servers`); any other rank only meets the barriers.
//! Rank 0 is client 0 and coordinates as for every MPI phase (the order, two barriers, the
//! replies), so servers are ranks with a role, not a second program.
//!
//! A phase: each host's first server rank makes the work directory and the files of the
//! servers on its host (as a node-local directory's host does for workers), all ranks meet at
//! the first barrier, each server checks its files and sets their cache state on its host
//! (evicted and checked with mincore for cold phases), all meet at the start barrier, then the
//! servers answer requests ([`crate::launch::io_server_loop`]) until every client has said it
//! is done, which each client rank does once its worker has ended, however it ended. So every
//! request is answered and no rank waits for a message that never comes: a failing server
//! answers with its error, a failing client still says it is done, and a rank that dies takes
//! the run with it (mpirun ends every rank).

use std::path::PathBuf;

use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::*;

use crate::engine::servers::{Header, Kind};
use crate::engine::wire::{HEADER_BYTES, TAG_REQ};
use crate::error::{Error, Result};
use crate::launch::io_server_loop::{Serving, Store, who};
use crate::launch::launched::Launched;
use crate::launch::mpi_gather::run_phase_with;
use crate::launch::mpi_hosts::HostFiles;
use crate::launch::mpi_order::PhaseOrder;
use crate::launch::mpi_sync::phase_barrier;
use crate::launch::threads;
use crate::launch::world::{WorldInfo, placed, world};
use crate::plan::{RunPlan, target_of};
use crate::spec::{OpKind, ServerStore, Servers, Spec};
use crate::worker::{Monitor, PhaseJob, ServerSample, WorkerSample};

/// Rank 0's side of a phase with servers: it is client 0 (if the phase has a worker for it),
/// then gathers every rank's samples and every server's figures.
pub fn run_phase(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Launched> {
    let w = world().ok_or_else(|| Error::Run("servers outside an MPI world".into()))?;
    run_phase_with(job, monitor, |mine, watch| {
        let r = threads::run_workers(job, mine, Some(&phase_barrier), None, watch);
        client_done(job.spec, w);
        r
    })
}

/// A serving rank's part of a phase with servers: its role's, with the samples of a client
/// and the figures of a server.
pub(super) fn serve_phase(
    p: &PhaseOrder,
    plan: &RunPlan,
    files: &mut HostFiles,
) -> (Result<Vec<WorkerSample>>, Vec<ServerSample>) {
    let w = world().expect("the world is known");
    let Some(servers) = p.spec.servers.as_ref() else {
        return (Err(Error::Run("a server phase without servers".into())), vec![]);
    };
    if let Some(j) = servers.index_of(w.rank, w.size) {
        return match serve(p, plan, servers, j, files, w) {
            Ok(s) => (Ok(vec![]), vec![s]),
            Err(e) => (Err(e), vec![]),
        };
    }
    if w.rank >= p.spec.workers {
        // Neither client nor server in this point: only the barriers.
        phase_barrier();
        phase_barrier();
        return (Ok(vec![]), vec![]);
    }
    phase_barrier();
    let r = client(p, plan, w);
    client_done(&p.spec, w);
    (r, vec![])
}

/// A client rank's worker (if the phase has one for it), timed from the start barrier.
fn client(p: &PhaseOrder, plan: &RunPlan, w: &WorldInfo) -> Result<Vec<WorkerSample>> {
    let (Some(phase), Some(engine)) =
        (plan.phases.get(p.phase), crate::worker::registry::find(&p.spec.engine))
    else {
        phase_barrier();
        return Err(Error::Run(format!("no phase {} or no engine {} here", p.phase, p.spec.engine)));
    };
    let sizes: Vec<u64> = plan.files.iter().map(|f| f.size_bytes).collect();
    let job = PhaseJob {
        spec: &p.spec,
        phase,
        paths: &p.paths,
        ids: &p.ids,
        sizes: &sizes,
        engine,
        tag: p.tag,
        extents: &[],
        workdirs: &[],
        namespace: None,
    };
    let mine: Vec<usize> = (w.rank as usize..phase.workers.len()).take(1).collect();
    let samples = threads::run_workers(&job, &mine, Some(&phase_barrier), None, &crate::env::monitor::Quiet)?;
    Ok(samples.into_iter().map(|s| placed(s, w, None)).collect())
}

/// Tells every server that this client rank is done with the phase.
fn client_done(spec: &Spec, w: &WorldInfo) {
    let Some(servers) = spec.servers.as_ref() else { return };
    let comm = SimpleCommunicator::world();
    let mut b = [0u8; HEADER_BYTES];
    Header { kind: Kind::Done, gid: 0, slot: 0, arg: 0, offset: 0, len: 0 }.encode(&mut b);
    for j in 0..servers.count {
        comm.process_at_rank(servers.rank_of(j, w.size) as i32).send_with_tag(&b[..], TAG_REQ);
    }
}

/// The global ids of the files server `j` holds.
fn held_by(spec: &Spec, plan: &RunPlan, j: u32) -> Vec<usize> {
    (0..plan.files.len()).filter(|&g| target_of(spec, g as u32) == j).collect()
}

/// Whether the servers keep files in this phase (not with the memory store, not in a blast).
fn on_disk(servers: &Servers, plan: &RunPlan, phase: usize) -> bool {
    servers.store == ServerStore::Disk && plan.phases.get(phase).is_some_and(|ph| ph.op != OpKind::Blast)
}

/// Server `j`'s part of a phase: its host's files made ready (by the host's first server
/// rank), its own files checked and their cache state set, then requests answered from the
/// start barrier until every client is done.
fn serve(
    p: &PhaseOrder,
    plan: &RunPlan,
    servers: &Servers,
    j: u32,
    files: &mut HostFiles,
    w: &WorldInfo,
) -> Result<ServerSample> {
    let spec = &p.spec;
    let host = &w.hosts[w.rank as usize];
    let disk = on_disk(servers, plan, p.phase);
    let on_host = |r: u32| w.hosts[r as usize] == *host;
    let first_on_host =
        (0..servers.count).map(|k| servers.rank_of(k, w.size)).find(|&r| on_host(r)) == Some(w.rank);
    let ready = if disk && first_on_host {
        let here: Vec<usize> = (0..plan.files.len())
            .filter(|&g| on_host(servers.rank_of(target_of(spec, g as u32), w.size)))
            .collect();
        // The servers' work directory is under their own directory, not the clients' targets.
        let local = Spec { dirs: vec![servers.dir.clone()], ..spec.clone() };
        files.prepare(&local, plan, p.phase, &p.paths, &p.ids, p.tag, &here).map(|_| ())
    } else {
        Ok(())
    };
    let block = Serving::block(p);
    phase_barrier();
    let mine = held_by(spec, plan, j);
    let paths: Vec<PathBuf> = mine.iter().map(|&g| p.paths[g].clone()).collect();
    let store = ready.and_then(|()| Store::open(p, plan, &mine, &paths, disk));
    let mut serving = Serving::new(p, j, w, store, block);
    serving.send_blast_addresses();
    let probe = crate::env::envctl::PhaseProbe::start(&crate::env::envctl::devices_of(std::slice::from_ref(
        &servers.dir,
    )));
    phase_barrier();
    let sample = serving.run();
    let env = probe.finish();
    let mut s = sample.map_err(|e| Error::Run(format!("{}: {e}", who(j, w))))?;
    s.device_read_bytes = env.devices.iter().map(|d| d.read_bytes).sum();
    s.device_write_bytes = env.devices.iter().map(|d| d.write_bytes).sum();
    Ok(s)
}
