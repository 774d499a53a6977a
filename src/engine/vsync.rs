//! `vsync`: preadv/pwritev at explicit offsets (fio's pvsync). Contiguous memory is one iovec;
//! strided memory (`mem_len` of every `mem_stride` bytes) is one iovec per piece, so the
//! kernel gathers and scatters it. The iovec list is built once per worker, at open. An op
//! with more than 1024 pieces (the kernel's UIO_MAXIOV) takes one call per 1024 pieces.

use std::io;
use std::os::unix::io::AsRawFd;

use super::{Call, CallCounts, CallError, CallResult, Caps, Engine, EngineDef, FdFiles, Setup, buffer};
use crate::env::sys::AlignedBuf;
use crate::error::Result;
use crate::plan::Op;
use crate::spec::SyncCall;

/// The most iovecs one preadv/pwritev accepts on Linux (UIO_MAXIOV).
pub const IOV_MAX: usize = 1024;

pub static DEF: EngineDef = EngineDef {
    name: "vsync",
    about: "preadv/pwritev at explicit offsets; strided memory goes to the kernel as an iovec list",
    caps: Caps {
        direct: true,
        open_sync: true,
        real_io: true,
        sync_calls: &[SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: 1,
        strided: Some("iovec per piece (1024 per call)"),
        strided_to_kernel: true,
        window: false,
        probe: super::always_available,
        main_thread: false,
        parallel_pieces: false,
    },
};

/// iovecs pointing into the engine's own buffer.
struct IoVecs(Vec<libc::iovec>);

// SAFETY: the iovecs point into the heap buffer of the same `Vsync`, which moves between
// threads together with them; the pointers stay valid wherever the struct goes.
unsafe impl Send for IoVecs {}

pub struct Vsync {
    fds: FdFiles,
    iov: IoVecs,
    /// Bytes on disk per iovec (`bs` when contiguous, `mem_len` when strided).
    piece: usize,
    /// Strided memory: one iovec per piece; otherwise one iovec over the op's bytes.
    strided: bool,
    buf: AlignedBuf,
}

impl Engine for Vsync {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        let fds = FdFiles::open(setup)?;
        // Page-aligned so the same buffer serves O_DIRECT.
        let mut buf = buffer(setup, setup.mem_bytes())?;
        let base = buf.as_mut_ptr();
        let (iov, piece) = match setup.mem {
            None => (vec![libc::iovec { iov_base: base.cast(), iov_len: setup.bs }], setup.bs),
            Some(m) => {
                let pieces = setup.bs / m.len;
                let iov = (0..pieces)
                    // SAFETY: piece k starts at k * stride < bs / len * stride = the buffer size.
                    .map(|k| libc::iovec {
                        iov_base: unsafe { base.add(k * m.stride) }.cast(),
                        iov_len: m.len,
                    })
                    .collect();
                (iov, m.len)
            }
        };
        let strided = setup.mem.is_some();
        Ok(Vsync { fds, iov: IoVecs(iov), piece, strided, buf })
    }

    #[inline(always)]
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    #[inline(always)]
    fn io(&mut self, op: Op, write: bool) -> CallResult<u64> {
        let fd = self.fds.files[op.file as usize].as_raw_fd();
        let n_iov = if self.strided {
            (op.len as usize / self.piece).min(self.iov.0.len())
        } else {
            // An op may be shorter than bs (a piece of a block split at a stripe unit).
            self.iov.0[0].iov_len = op.len as usize;
            1
        };
        let call = if write { Call::Pwritev } else { Call::Preadv };
        let mut done = 0u64;
        for chunk in self.iov.0[..n_iov].chunks(IOV_MAX) {
            let want = if self.strided { (chunk.len() * self.piece) as u64 } else { op.len };
            self.fds.calls.add(call);
            let off = (op.offset + done) as libc::off_t;
            // SAFETY: every iovec points into `self.buf`, which `&mut self` holds exclusively
            // for the call; the kernel reads (pwritev) or fills (preadv) exactly those ranges.
            let n = unsafe {
                if write {
                    libc::pwritev(fd, chunk.as_ptr(), chunk.len() as libc::c_int, off)
                } else {
                    libc::preadv(fd, chunk.as_ptr(), chunk.len() as libc::c_int, off)
                }
            };
            if n < 0 {
                return Err(CallError::last(call));
            }
            done += n as u64;
            if (n as u64) < want {
                break;
            }
        }
        Ok(done)
    }

    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()> {
        self.fds.sync(file, call)
    }

    fn close(self) -> io::Result<CallCounts> {
        self.fds.close()
    }

    fn call_name(write: bool) -> &'static str {
        if write { "pwritev" } else { "preadv" }
    }
}
