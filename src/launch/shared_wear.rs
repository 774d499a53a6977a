//! The wear-out meeting ([`WearOut`]) of process workers: a memfd mapping the parent makes and
//! each child maps through the descriptor it inherits, so the children meet after a stonewall
//! as threads do.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};

use crate::error::{Error, Result};
use crate::worker::bound::WearOut;

/// A [`WearOut`] in a shared mapping.
pub struct SharedWear {
    ptr: *mut WearOut,
    fd: File,
}

// SAFETY: the mapping holds only atomics (WearOut), shared on purpose between threads and
// processes; it lives as long as this value.
unsafe impl Send for SharedWear {}
// SAFETY: as above.
unsafe impl Sync for SharedWear {}

fn os_err(what: &str, e: std::io::Error) -> Error {
    Error::Run(format!("shared memory for the wear-out ({what}): {e}"))
}

const LEN: usize = std::mem::size_of::<WearOut>();

impl SharedWear {
    /// A meeting of `workers` child processes (the descriptor is close-on-exec: a child gets
    /// it through its spawn's preparation).
    pub fn create(workers: u64) -> Result<SharedWear> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"iolab-wear-out".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("memfd_create", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(LEN as u64).map_err(|e| os_err("ftruncate", e))?;
        let w = SharedWear::map(file)?;
        w.get().init(workers, false);
        Ok(w)
    }

    /// The parent's meeting, through the descriptor this child inherited.
    pub fn attach(fd: i32) -> Result<SharedWear> {
        // SAFETY: the parent passed this descriptor for this purpose; this process owns it now.
        let file = unsafe { File::from_raw_fd(fd) };
        let len = file.metadata().map_err(|e| os_err("fstat", e))?.len();
        if len != LEN as u64 {
            return Err(Error::Run(format!("the wear-out region holds {len} bytes, not {LEN}")));
        }
        SharedWear::map(file)
    }

    fn map(fd: File) -> Result<SharedWear> {
        // SAFETY: a new shared mapping of the whole memfd, which is LEN bytes long.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_err("mmap", std::io::Error::last_os_error()));
        }
        Ok(SharedWear { ptr: ptr.cast(), fd })
    }

    /// The descriptor, for a child to inherit.
    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    pub fn get(&self) -> &WearOut {
        // SAFETY: the mapping is page-aligned, LEN bytes long and lives as long as `self`;
        // WearOut is made of atomics only, for which any bytes (a zeroed memfd) are valid.
        unsafe { &*self.ptr }
    }
}

impl Drop for SharedWear {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `map`; no reference from `get` outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), LEN) };
    }
}
