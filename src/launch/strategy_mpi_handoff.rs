//! The hand-off of strategies on MPI ranks: a producer's buffers sent with `MPI_Isend` (two
//! per producer, each reused once its send completed) and received by the writer with
//! `MPI_Recv`; strided memory packed into a contiguous message and spread again on arrival,
//! or, for S2DT and S3DT, sent and received as one `MPI_Type_vector` with no copy of ours.

use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::engine::mpiio::Datatype;
use crate::env::sys::AlignedBuf;
use crate::error::{Error, Result};
use crate::launch::strategy_mpi_coord::{DATA, MpiCoord, byte, comm};
use crate::strategy::coord::{Receiver, Sender};

pub(super) fn buffer(len: usize) -> Result<AlignedBuf> {
    AlignedBuf::new(len.max(1), 4096).map_err(|e| Error::Run(format!("hand-off buffer of {len} bytes: {e}")))
}

/// Whether request `req` has completed (the null request has).
fn done(req: &mut ffi::MPI_Request) -> bool {
    let mut done = 0;
    // SAFETY: an active request or the null request (which tests as done); status ignored.
    unsafe { ffi::MPI_Test(req, &mut done, ffi::RSMPI_STATUS_IGNORE) };
    done != 0
}

/// Polls request `req` until it completes.
fn complete(co: &MpiCoord, req: &mut ffi::MPI_Request) -> Result<()> {
    if done(req) {
        return Ok(());
    }
    co.wait_until(|| done(req))
}

/// A producer's end: two buffers, each free again once its `MPI_Isend` has completed.
pub(super) struct MpiSender<'a> {
    pub(super) co: &'a MpiCoord,
    /// The producer's memory (strided when memory is).
    pub(super) bufs: Vec<AlignedBuf>,
    /// Packed copies, when strided memory is sent without a datatype.
    pub(super) packed: Vec<AlignedBuf>,
    pub(super) reqs: [ffi::MPI_Request; 2],
    pub(super) next: usize,
    /// Bytes of one message on disk.
    pub(super) disk: usize,
    pub(super) dt: Option<Datatype>,
}

// SAFETY: MPI handles are opaque pointers the MPI library owns; the sender is used only on the
// rank's main thread (the roles that send run there), as MPI_THREAD_FUNNELED requires.
unsafe impl Send for MpiSender<'_> {}

impl Sender for MpiSender<'_> {
    fn buffer(&mut self) -> Result<&mut [u8]> {
        let k = self.next % 2;
        complete(self.co, &mut self.reqs[k])?;
        Ok(&mut self.bufs[k][..])
    }

    fn send(&mut self) -> Result<()> {
        let k = self.next % 2;
        let tag = self.co.tag(DATA);
        let (ptr, count, ty) = match (&self.dt, self.co.mem) {
            (Some(dt), _) => (self.bufs[k].as_ptr(), 1, dt.0),
            (None, Some(m)) => {
                m.gather(&self.bufs[k], &mut self.packed[k][..self.disk]);
                (self.packed[k].as_ptr(), self.disk as c_int, byte())
            }
            (None, None) => (self.bufs[k].as_ptr(), self.disk as c_int, byte()),
        };
        // SAFETY: the buffer holds the message (one `dt`, or `count` bytes) and is not touched
        // again until the request completes (`buffer` waits for it; drop waits or leaks it).
        let rc =
            unsafe { ffi::MPI_Isend(ptr.cast::<c_void>(), count, ty, 0, tag, comm(), &mut self.reqs[k]) };
        if rc != 0 {
            return Err(Error::Run(format!("MPI_Isend of the hand-off failed (code {rc})")));
        }
        self.next += 1;
        Ok(())
    }
}

impl Drop for MpiSender<'_> {
    fn drop(&mut self) {
        for k in 0..2 {
            if complete(self.co, &mut self.reqs[k]).is_err() && !done(&mut self.reqs[k]) {
                // Stopped with a send in flight: the receiver may never take it, so its memory
                // must outlive the request.
                // SAFETY: an active request; freeing it lets MPI finish or drop it on its own.
                unsafe { ffi::MPI_Request_free(&mut self.reqs[k]) };
                std::mem::forget(std::mem::take(&mut self.bufs));
                std::mem::forget(std::mem::take(&mut self.packed));
            }
        }
    }
}

/// The writer's end of one producer's hand-off.
pub(super) struct MpiReceiver<'a> {
    pub(super) co: &'a MpiCoord,
    pub(super) from: c_int,
    pub(super) disk: usize,
    pub(super) dt: Option<Datatype>,
    /// Where a packed message lands before it is spread into strided memory.
    pub(super) staging: Option<AlignedBuf>,
}

// SAFETY: as for `MpiSender`: used only on the rank's main thread.
unsafe impl Send for MpiReceiver<'_> {}

impl Receiver for MpiReceiver<'_> {
    fn wait(&mut self) -> Result<()> {
        self.co.wait_until(|| self.co.probe(self.from, DATA).is_some())
    }

    fn take_into(&mut self, dst: &mut [u8]) -> Result<()> {
        let tag = self.co.tag(DATA);
        let (ptr, count, ty) = match (&self.dt, self.staging.as_mut()) {
            (Some(dt), _) => (dst.as_mut_ptr(), 1, dt.0),
            (None, Some(st)) => (st.as_mut_ptr(), self.disk as c_int, byte()),
            (None, None) => (dst.as_mut_ptr(), self.disk as c_int, byte()),
        };
        let need = self.co.mem.map_or(self.disk, |m| m.mem_bytes(self.disk));
        if dst.len() < need {
            return Err(Error::Run(format!(
                "hand-off: {} bytes of memory for a {need}-byte message",
                dst.len()
            )));
        }
        // SAFETY: the message was probed; the destination holds one `dt` (strided memory of
        // `need` bytes, checked above) or `count` bytes.
        let rc = unsafe {
            ffi::MPI_Recv(ptr.cast::<c_void>(), count, ty, self.from, tag, comm(), ffi::RSMPI_STATUS_IGNORE)
        };
        if rc != 0 {
            return Err(Error::Run(format!(
                "MPI_Recv of the hand-off from rank {} failed (code {rc})",
                self.from
            )));
        }
        if let (Some(st), Some(m)) = (&self.staging, self.co.mem) {
            m.scatter(&st[..self.disk], dst);
        }
        Ok(())
    }
}
