//! The pieces of one striped block issued together (`pieces = parallel`): one io_uring batch
//! per block, each piece a positioned read or write (IORING_OP_READ / WRITE) on its own
//! component file, all submitted with the wait for every one of them in a single
//! io_uring_enter. Pieces on different targets are then in flight at once: O_DIRECT pieces go
//! to the device together, cold buffered reads start their page-cache fills together, and what
//! cannot proceed without blocking runs on the kernel's io-wq workers side by side.

use std::fs::File;
use std::io;
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::Path;

use io_uring::{IoUring, opcode, types};

use super::{Call, CallCounts, CallError, PiecesResult};
use crate::error::{Error, Result};
use crate::plan::Op;

/// A ring sized for one block's pieces, and the descriptors they go to.
pub struct Batch {
    ring: IoUring,
    fds: Vec<RawFd>,
    /// Pieces submitted and not yet reaped (0 between calls, unless the ring failed).
    inflight: usize,
}

impl Batch {
    /// A batch for blocks of up to `pieces` pieces over `files` (which must outlive it).
    pub fn new(files: &[File], pieces: usize, path0: &Path) -> Result<Batch> {
        let entries = pieces.max(1).next_power_of_two() as u32;
        let ring = super::uring::new_ring(entries).map_err(|e| {
            Error::Run(format!(
                "{}: pieces = parallel needs an io_uring of {entries} entries, which the kernel refused: {e}",
                path0.display()
            ))
        })?;
        Ok(Batch { ring, fds: files.iter().map(|f| f.as_raw_fd()).collect(), inflight: 0 })
    }

    /// Issues every piece (piece `i` from or into `buf[i x len..]`, `len` their common length)
    /// and returns once all are done, with the bytes each moved in `done[i]`.
    pub fn run(
        &mut self,
        buf: &mut [u8],
        pieces: &[Op],
        write: bool,
        done: &mut [u64],
        calls: &mut CallCounts,
    ) -> PiecesResult {
        let call = if write { Call::Pwrite } else { Call::Pread };
        let len = pieces.first().map_or(0, |p| p.len as usize);
        assert!(pieces.len() * len <= buf.len() && done.len() >= pieces.len(), "pieces beyond the buffer");
        for (i, p) in pieces.iter().enumerate() {
            let fd = types::Fd(self.fds[p.file as usize]);
            // SAFETY: piece i's bytes lie inside `buf` (asserted above).
            let ptr = unsafe { buf.as_mut_ptr().add(i * len) };
            let entry = if write {
                opcode::Write::new(fd, ptr, len as u32).offset(p.offset).build()
            } else {
                opcode::Read::new(fd, ptr, len as u32).offset(p.offset).build()
            }
            .user_data(i as u64);
            // SAFETY: the buffer outlives the op: this call returns only once every piece is
            // reaped (or, if the ring fails, the engine keeps the buffer until it drains).
            if unsafe { self.ring.submission().push(&entry) }.is_err() {
                // The ring was made for this many pieces; pushing fewer always fits.
                return Err((
                    i,
                    CallError::new(Call::IoUringEnter, io::Error::other("submission ring full")),
                ));
            }
            self.inflight += 1;
        }
        let mut failed: Option<(usize, CallError)> = None;
        while self.inflight > 0 {
            calls.add(Call::IoUringEnter);
            match self.ring.submit_and_wait(self.inflight) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => return Err((0, CallError::new(Call::IoUringEnter, e))),
            }
            for cqe in self.ring.completion() {
                self.inflight -= 1;
                let i = cqe.user_data() as usize;
                match cqe.result() {
                    n if n >= 0 => done[i] = n as u64,
                    errno => {
                        done[i] = 0;
                        let err = CallError::new(call, io::Error::from_raw_os_error(-errno));
                        if failed.as_ref().is_none_or(|(j, _)| i < *j) {
                            failed = Some((i, err));
                        }
                    }
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Waits for anything still in flight. False if the ring failed and some pieces may not
    /// have finished (their buffer must then never be freed).
    pub fn drain(&mut self) -> bool {
        while self.inflight > 0 {
            match self.ring.submit_and_wait(self.inflight) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(_) => return false,
            }
            let reaped = self.ring.completion().count();
            self.inflight -= reaped.min(self.inflight);
        }
        true
    }
}
