//! Strategies on MPI ranks (`mpirun -np W iolab run --strategy ...`): rank r plays worker r's
//! role, and the roles coordinate by MPI messages, implementing the interfaces of
//! [`crate::strategy::coord`]: a barrier of zero-byte messages through rank 0, the S1B commit
//! token granted by rank 0, and the hand-off as `MPI_Isend` / `MPI_Recv` of the producer's
//! buffer (packed first when memory is strided; S2DT and S3DT send it as an `MPI_Type_vector`
//! instead, and the writer receives it with the same type straight into its strided memory).
//!
//! Every wait polls (`MPI_Test`, `MPI_Iprobe`) and also watches for a stop: a rank that fails
//! sends a stop message to every other rank, so no rank waits forever for a peer that will
//! never arrive. MPI is called only from each rank's main thread (the S5 sync thread only
//! reads and sets flags). Tags carry the phase's number, so a message of a stopped phase can
//! never match one of a later phase.

use std::os::raw::c_int;

use mpi::ffi;

use crate::engine::mpiio::Datatype;
use crate::error::{Error, Result};
use crate::launch::strategy_mpi_coord::MpiCoord;
use crate::launch::strategy_mpi_handoff::{MpiReceiver, MpiSender, buffer};
use crate::strategy::Plan;
use crate::strategy::coord::{Coord, Group, Receiver, Sender};
use crate::strategy::loops::{self, RoleCtx};
use crate::strategy::plan::Receive;
use crate::worker::{PhaseJob, WorkerSample};

impl Coord for MpiCoord {
    fn sender(&self, ring: u32) -> Result<Box<dyn Sender + '_>> {
        let parts = self.rings.iter().find(|r| r.0 == ring).map_or(1, |r| r.1);
        let disk = (u64::from(parts) * self.bs) as usize;
        let mem = self.mem.map_or(disk, |m| m.mem_bytes(disk));
        let dt = match (self.datatypes, self.mem) {
            (true, Some(m)) => Some(Datatype::vector(m, disk)?),
            _ => None,
        };
        let packed =
            if dt.is_none() && self.mem.is_some() { vec![buffer(disk)?, buffer(disk)?] } else { vec![] };
        Ok(Box::new(MpiSender {
            co: self,
            bufs: vec![buffer(mem)?, buffer(mem)?],
            packed,
            // SAFETY: a constant handle.
            reqs: [unsafe { ffi::RSMPI_REQUEST_NULL }; 2],
            next: 0,
            disk,
            dt,
        }))
    }

    fn receiver(&self, r: Receive) -> Result<Box<dyn Receiver + '_>> {
        let disk = (r.parts.parts as u64 * self.bs) as usize;
        let dt = match (self.datatypes, self.mem) {
            (true, Some(m)) => Some(Datatype::vector(m, disk)?),
            _ => None,
        };
        let staging = (dt.is_none() && self.mem.is_some()).then(|| buffer(disk)).transpose()?;
        Ok(Box::new(MpiReceiver { co: self, from: r.from as c_int, disk, dt, staging }))
    }
}

/// This rank's role of a strategy phase, run on this (main) thread; its samples (rank 0 counts
/// the commits in flight from every rank's).
pub fn run_rank(job: &PhaseJob<'_>, rank: u32, size: u32) -> Result<Vec<WorkerSample>> {
    let spec = job.spec;
    let plan = Plan::of(spec).ok_or_else(|| Error::Run("no strategy in this spec".into()))?;
    if plan.roles.len() != size as usize {
        return Err(Error::spec(
            "workers",
            plan.roles.len(),
            format!("strategy {} on MPI ranks runs one worker per rank ({size} ranks)", plan.strategy.name()),
        ));
    }
    let co = MpiCoord::new(&plan, rank, size, spec.mem());
    let role = plan.roles.iter().find(|r| r.worker == rank).expect("one role per rank");
    let ctx =
        RoleCtx { spec, plan: &plan, role, paths: job.paths, ids: job.ids, sizes: job.sizes, coord: &co };
    let samples = loops::run(&ctx)?;
    // Untimed: every role has ended, so rank 0 serves the S1B token until the last commit of
    // every rank is done.
    co.barrier()?;
    Ok(samples)
}
