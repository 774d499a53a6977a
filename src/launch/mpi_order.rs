//! What rank 0 tells the other ranks of an MPI run (in a build with the `mpi` feature): a
//! phase's order (the resolved spec, the phase, the files and their identities), a trace
//! spool check, the stop; broadcast as JSON to every rank. And the tag of a rank's reply.

use std::path::PathBuf;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use serde::{Deserialize, Serialize};

use crate::engine::FileId;
use crate::error::{Error, Result};
use crate::plan::verify::BlockTag;
use crate::spec::Spec;

/// The tag of a rank's reply to rank 0.
pub(super) const REPLY: i32 = 7;

/// What rank 0 tells the other ranks.
#[derive(Serialize, Deserialize)]
pub(super) enum Order {
    Phase(Box<PhaseOrder>),
    /// Before a traced run: check this rank's trace spool has room for its part of the specs'.
    CheckSpool(Vec<Spec>),
    /// End with this exit code.
    Stop(i32),
}

/// One phase, as every rank needs it.
#[derive(Serialize, Deserialize)]
pub(super) struct PhaseOrder {
    pub spec: Spec,
    pub phase: usize,
    /// Paths of all files of the run, by global file id.
    pub paths: Vec<PathBuf>,
    /// The files as rank 0 created them.
    pub ids: Vec<FileId>,
    pub tag: BlockTag,
    /// Per worker: the ops with data, when fewer than planned ([`PhaseJob::extents`]).
    #[serde(default)]
    pub extents: Vec<u64>,
    /// The work directory under each target (the metadata phases' trees).
    #[serde(default)]
    pub workdirs: Vec<PathBuf>,
    /// The phase's number in the run (its messages beside the I/O carry it: `mpi_watch`).
    #[serde(default)]
    pub seq: u64,
    /// Every rank sends its count up the tree while its workers run (rank 0 shows them).
    #[serde(default)]
    pub report: bool,
}

pub(super) fn broadcast_order(comm: &SimpleCommunicator, order: &Order) -> Result<()> {
    let mut bytes = crate::json::to_vec(order).map_err(|e| Error::Run(format!("MPI order: {e}")))?;
    let root = comm.process_at_rank(0);
    let mut len = bytes.len() as u64;
    root.broadcast_into(&mut len);
    root.broadcast_into(&mut bytes[..]);
    Ok(())
}

pub(super) fn receive_order(comm: &SimpleCommunicator) -> std::result::Result<Order, String> {
    let root = comm.process_at_rank(0);
    let mut len = 0u64;
    root.broadcast_into(&mut len);
    let mut bytes = vec![0u8; len as usize];
    root.broadcast_into(&mut bytes[..]);
    crate::json::from_slice(&bytes).map_err(|e| format!("an order from rank 0 that is not one: {e}"))
}
