//! The interfaces between a strategy's roles. Each is small on purpose, so that another
//! transport can implement it: [`crate::strategy::shm`] implements all of them in shared
//! memory (threads of one process, or processes of one machine); on MPI ranks
//! (`crate::launch::strategy_mpi`, with the `mpi` feature) [`Group`] is a barrier of messages,
//! [`CommitOrder`] a token rank 0 grants, and the hand-off MPI_Isend / MPI_Recv (S2, S3) or
//! derived datatypes (S2DT, S3DT).

use super::plan::Receive;
use crate::error::{Error, Result};

/// Everything a role coordinates through: the group, the commit order, and the ends of the
/// hand-offs it uses (made before the timed loop).
pub trait Coord: Group + CommitOrder {
    /// The sending end of hand-off `ring` (a producer's).
    fn sender(&self, ring: u32) -> Result<Box<dyn Sender + '_>>;
    /// The receiving end of hand-off `r` (the writer's).
    fn receiver(&self, r: Receive) -> Result<Box<dyn Receiver + '_>>;
}

/// The error a role returns when another worker (or a signal) stopped the run; the launcher
/// reports the original failure instead of these echoes.
pub fn stopped() -> Error {
    Error::Run("aborted: the run was stopped (another worker failed or a signal arrived)".into())
}

/// The workers of one strategy run.
pub trait Group: Sync {
    /// Returns once every worker of the run has arrived (the study's barriers); Err if the
    /// run was stopped meanwhile.
    fn barrier(&self) -> Result<()>;
    /// Stops the run: every wait returns an error soon after.
    fn stop(&self);
    fn stopped(&self) -> bool;
    /// Publishes how many bytes worker `worker` has written (for progress display).
    fn progress(&self, worker: u32, bytes: u64);
}

/// Orders commits. Every commit of the run is bracketed by `begin` and `end`; with `exclusive`
/// (S1B), `begin` first waits for the run's one token, so at most one exclusive commit is ever
/// in flight. (How many were in flight at once is counted afterwards from the spans the roles
/// record: [`crate::strategy::count_in_flight`].)
pub trait CommitOrder: Sync {
    fn begin(&self, exclusive: bool) -> Result<()>;
    fn end(&self, exclusive: bool);
}

/// The producer's end of a hand-off: it fills buffers the hand-off owns and sends them in order.
pub trait Sender: Send {
    /// The buffer to fill with the next message; waits while every buffer is still on its way.
    fn buffer(&mut self) -> Result<&mut [u8]>;
    /// Sends the buffer filled last.
    fn send(&mut self) -> Result<()>;
}

/// The writer's end of a hand-off from one producer.
pub trait Receiver: Send {
    /// Waits until the next message has arrived.
    fn wait(&mut self) -> Result<()>;
    /// Takes the message that arrived into `dst` (its length), freeing its buffer.
    fn take_into(&mut self, dst: &mut [u8]) -> Result<()>;
}
