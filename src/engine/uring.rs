//! `uring`: io_uring with up to `iodepth` ops in flight per worker. Each slot has its own
//! buffer; the buffers and the worker's files are registered with the ring, so every op is a
//! fixed read or write (IORING_OP_READ_FIXED / WRITE_FIXED) on a registered file. Ops are
//! queued in batches and submitted, with the wait for completions, in one io_uring_enter; all
//! finished ops are reaped at once. The ring belongs to one worker thread, which creates it,
//! submits to it and reaps it. The completion ring has as many entries as the submission
//! ring, so with every slot in flight it can be completely full; iolab never has more ops in
//! flight than it has entries, so none are lost.

use std::fs::File;
use std::io;
use std::mem::ManuallyDrop;
use std::os::unix::io::AsRawFd;
use std::sync::OnceLock;

use io_uring::{IoUring, opcode, types};

use super::{
    AsyncEngine, Call, CallCounts, CallError, CallResult, Caps, Done, EngineDef, Setup, buffer, fd_sync,
    open_files,
};
use crate::env::sys::AlignedBuf;
use crate::error::{Error, Result};
use crate::plan::Op;
use crate::spec::SyncCall;

/// The largest `iodepth` (io_uring rings hold up to 32768 entries; this keeps buffers sane).
pub const MAX_IODEPTH: u32 = 4096;
/// The kernel refuses to register a buffer larger than 1 GiB.
const MAX_REGISTERED_BUF: usize = 1 << 30;

pub static DEF: EngineDef = EngineDef {
    name: "uring",
    about: "io_uring: iodepth ops in flight, registered buffers and files, batched submit/reap",
    caps: Caps {
        direct: true,
        open_sync: true,
        real_io: true,
        sync_calls: &[SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: MAX_IODEPTH,
        strided: None,
        strided_to_kernel: false,
        window: false,
        probe,
        main_thread: false,
        parallel_pieces: false,
    },
};

/// Whether this kernel lets this process use io_uring with fixed reads and writes (checked
/// once per process).
pub fn probe() -> std::result::Result<(), String> {
    static RESULT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            let ring = IoUring::new(2).map_err(|e| {
                format!(
                    "the kernel refuses io_uring ({e}); check /proc/sys/kernel/io_uring_disabled, \
                     seccomp or container limits"
                )
            })?;
            let mut probe = io_uring::Probe::new();
            if ring.submitter().register_probe(&mut probe).is_ok()
                && !(probe.is_supported(opcode::ReadFixed::CODE)
                    && probe.is_supported(opcode::WriteFixed::CODE))
            {
                return Err("this kernel's io_uring lacks fixed-buffer reads and writes".into());
            }
            Ok(())
        })
        .clone()
}

/// A ring of `entries` submission and completion entries. Only the worker that made it uses
/// it, and it reaps only inside io_uring_enter, so where the kernel offers them (6.1+) the ring
/// is single-issuer with deferred, cooperative task work: completions are posted when the worker
/// asks for them, not by interrupting it. Older kernels get a plain ring.
pub(super) fn new_ring(entries: u32) -> io::Result<IoUring> {
    let lean = IoUring::builder()
        .setup_cqsize(entries)
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries);
    match lean {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            IoUring::builder().setup_cqsize(entries).build(entries)
        }
        other => other,
    }
}

pub struct Uring {
    ring: IoUring,
    files: Vec<File>,
    /// `depth` slot buffers, `stride` bytes apart (registered with the ring). Freed only when
    /// the kernel is done with them (see `Drop`).
    bufs: ManuallyDrop<AlignedBuf>,
    stride: usize,
    bs: usize,
    /// Ops queued or submitted and not yet reaped.
    inflight: usize,
    calls: CallCounts,
}

impl Uring {
    /// Waits for every op in flight to finish. False if the ring failed and some may not have.
    fn drain(&mut self) -> bool {
        while self.inflight > 0 {
            self.calls.add(Call::IoUringEnter);
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

impl AsyncEngine for Uring {
    fn buffers(setup: &Setup<'_>) -> Vec<usize> {
        // One page-aligned slot per op in flight; none when open will refuse the block size.
        let slot = setup.bs.next_multiple_of(4096);
        slot.checked_mul(setup.iodepth.max(1))
            .filter(|_| setup.bs <= MAX_REGISTERED_BUF)
            .into_iter()
            .collect()
    }

    fn open(setup: &Setup<'_>) -> Result<Self> {
        let path0 = setup.paths.first().cloned().unwrap_or_default();
        let refused =
            |what: &str, e: io::Error| Error::Run(format!("io_uring on {}: {what}: {e}", path0.display()));
        if setup.bs > MAX_REGISTERED_BUF {
            return Err(refused(
                "registered buffers hold at most 1 GiB",
                io::Error::from_raw_os_error(libc::EINVAL),
            ));
        }
        let depth = setup.iodepth.max(1);
        let files = open_files(setup)?;
        let ring = new_ring(depth as u32).map_err(|e| {
            refused(&format!("the kernel refused a ring of {depth} entries (is io_uring disabled?)"), e)
        })?;
        let mut calls = CallCounts::default();
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        calls.add(Call::IoUringRegister);
        ring.submitter().register_files(&fds).map_err(|e| refused("registering files", e))?;
        // Page-aligned slots so the same buffers serve O_DIRECT.
        let stride = setup.bs.next_multiple_of(4096);
        let len = stride.checked_mul(depth).ok_or_else(|| {
            refused("buffers", io::Error::new(io::ErrorKind::OutOfMemory, "iodepth x bs overflows"))
        })?;
        let mut bufs = buffer(setup, len)?;
        let base = bufs.as_mut_ptr();
        let iovecs: Vec<libc::iovec> = (0..depth)
            // SAFETY: slot s starts at s * stride, inside the buffer of depth * stride bytes.
            .map(|s| libc::iovec { iov_base: unsafe { base.add(s * stride) }.cast(), iov_len: setup.bs })
            .collect();
        calls.add(Call::IoUringRegister);
        // SAFETY: the iovecs describe memory owned by the engine, which is freed only after the
        // ring has finished every op that uses it (see `Drop`).
        unsafe { ring.submitter().register_buffers(&iovecs) }.map_err(|e| {
            refused(
                &format!(
                    "registering {depth} buffers of {} bytes (pinned memory counts against RLIMIT_MEMLOCK)",
                    setup.bs
                ),
                e,
            )
        })?;
        Ok(Uring { ring, files, bufs: ManuallyDrop::new(bufs), stride, bs: setup.bs, inflight: 0, calls })
    }

    #[inline(always)]
    fn slot_buf(&mut self, slot: usize) -> &mut [u8] {
        &mut self.bufs[slot * self.stride..slot * self.stride + self.bs]
    }

    #[inline]
    fn queue(&mut self, slot: usize, op: Op, write: bool) -> CallResult<()> {
        // SAFETY: the slot lies inside the registered buffer (see `open`).
        let ptr = unsafe { self.bufs.as_mut_ptr().add(slot * self.stride) };
        let file = types::Fixed(op.file);
        let len = op.len as u32;
        let entry = if write {
            opcode::WriteFixed::new(file, ptr, len, slot as u16).offset(op.offset).build()
        } else {
            opcode::ReadFixed::new(file, ptr, len, slot as u16).offset(op.offset).build()
        }
        .user_data(slot as u64);
        loop {
            // SAFETY: the entry's buffer is slot `slot` of the registered buffers, which the
            // worker loop leaves alone until the op is reaped, and which outlive the ring's use
            // of them (see `Drop`).
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                break;
            }
            // The submission ring is full: hand it to the kernel and retry.
            self.calls.add(Call::IoUringEnter);
            self.ring.submit().map_err(|e| CallError::new(Call::IoUringEnter, e))?;
        }
        self.inflight += 1;
        Ok(())
    }

    #[inline]
    fn wait(&mut self, min_complete: usize, done: &mut [Done]) -> CallResult<usize> {
        loop {
            self.calls.add(Call::IoUringEnter);
            match self.ring.submit_and_wait(min_complete) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Completions are waiting to be reaped first.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(CallError::new(Call::IoUringEnter, e)),
            }
        }
        let mut n = 0;
        for cqe in self.ring.completion() {
            done[n] = Done { slot: cqe.user_data() as u32, res: cqe.result() as i64 };
            n += 1;
            if n == done.len() {
                break;
            }
        }
        self.inflight -= n;
        Ok(n)
    }

    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()> {
        fd_sync(&self.files[file as usize], call, &mut self.calls)
    }

    fn close(mut self) -> io::Result<CallCounts> {
        if !self.drain() {
            return Err(io::Error::other("io_uring: ops still in flight at close"));
        }
        Ok(self.calls)
    }

    fn call_name(write: bool) -> &'static str {
        if write { "io_uring write_fixed" } else { "io_uring read_fixed" }
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        if self.drain() {
            // SAFETY: nothing is in flight, so the kernel no longer writes into the buffers.
            unsafe { ManuallyDrop::drop(&mut self.bufs) };
        }
        // Otherwise the buffers are leaked: the kernel may still write into them.
    }
}
