//! The collectives every rank of an MPI run meets inside a phase (in a build with the `mpi`
//! feature): the barrier the phase starts from, after a stonewall with wear-out the meeting
//! that finds the most ops any worker had done, and after a phase gathered up the tree the one
//! that finds its earliest start. All are non-blocking calls polled, so a stop signal ends the
//! wait and the run ends with what was measured.

use mpi::topology::SimpleCommunicator;

/// The barrier all ranks start a phase from (the same non-blocking barrier on every rank: a
/// blocking and a non-blocking collective never match). Waited for by polling, so that on rank
/// 0 a stop signal ends the wait and the run ends with what was measured; the workers see the
/// stop themselves.
pub(super) fn phase_barrier() {
    use mpi::ffi;
    use mpi::raw::AsRaw;
    let comm = SimpleCommunicator::world();
    // SAFETY: a request handle is plain data; RSMPI_REQUEST_NULL is its null value.
    let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: a valid communicator and a request to fill; MPI_Ibarrier is collective and every
    // rank enters the phase's barrier.
    unsafe { ffi::MPI_Ibarrier(comm.as_raw(), &mut req) };
    loop {
        let mut done = 0;
        // SAFETY: `req` is the active request MPI_Ibarrier made; the status is ignored.
        unsafe { ffi::MPI_Test(&mut req, &mut done, ffi::RSMPI_STATUS_IGNORE) };
        if done != 0 || crate::env::signals::stop_requested() {
            // Left pending on a stop: the run ends and MPI with it.
            return;
        }
        std::thread::yield_now();
    }
}

/// The wear-out target after a stonewall: the most ops any worker of any rank had done
/// (`mine`: the most on this rank), met once per such phase by every rank.
pub(super) fn wear_cross(mine: u64) -> u64 {
    all_reduce(mine, Reduce::Max)
}

/// After a phase gathered up the tree: the earliest start of any worker of any rank on rank
/// 0's clock (`mine`: this rank's, `u64::MAX` without a worker that ran), met once per such
/// phase by every rank; the rate series are summed from it.
pub(super) fn earliest_start(mine: u64) -> u64 {
    all_reduce(mine, Reduce::Min)
}

enum Reduce {
    Max,
    Min,
}

/// `mine` reduced over every rank by a non-blocking `MPI_Iallreduce` that every rank calls at
/// the same point, polled as [`phase_barrier`] is so that a stop signal ends the wait (then
/// `mine` stands for the result: the run ends with what was measured).
fn all_reduce(mine: u64, op: Reduce) -> u64 {
    use mpi::ffi;
    use mpi::raw::AsRaw;
    let comm = SimpleCommunicator::world();
    // [sent, received], on the heap: left to MPI (leaked) if a stop ends the wait.
    let buf: *mut [u64; 2] = Box::into_raw(Box::new([mine, mine]));
    // SAFETY: a request handle is plain data; RSMPI_REQUEST_NULL is its null value.
    let mut req = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: reading an operation handle MPI defines.
    let op = unsafe {
        match op {
            Reduce::Max => ffi::RSMPI_MAX,
            Reduce::Min => ffi::RSMPI_MIN,
        }
    };
    // SAFETY: one u64 in and one out, in a live allocation that outlives the request (freed only
    // once it completed); the communicator is valid and every rank makes this call at the same
    // point of the same phase.
    unsafe {
        ffi::MPI_Iallreduce(
            (&raw const (*buf)[0]).cast(),
            (&raw mut (*buf)[1]).cast(),
            1,
            ffi::RSMPI_UINT64_T,
            op,
            comm.as_raw(),
            &mut req,
        )
    };
    loop {
        let mut done = 0;
        // SAFETY: `req` is the active request MPI_Iallreduce made; the status is ignored.
        unsafe { ffi::MPI_Test(&mut req, &mut done, ffi::RSMPI_STATUS_IGNORE) };
        if done != 0 {
            // SAFETY: made by Box::into_raw above; MPI is done with it.
            return unsafe { Box::from_raw(buf) }[1];
        }
        if crate::env::signals::stop_requested() {
            // Left pending: the run ends and MPI with it.
            return mine;
        }
        std::thread::yield_now();
    }
}
