//! `mmap`: files mapped (MAP_SHARED) in windows of `window` bytes (default: the whole file).
//! Writes copy the op's bytes into the mapping and reads copy them out, so every page is really
//! touched. Each file has its own current window (a worker visiting several files round-robin,
//! or the components of a striped file, keeps one mapping per file). Windows start at
//! multiples of `window` in the file; when an op reaches past its file's current window, that
//! window is unmapped and the one holding the next byte is mapped. Write
//! phases size each file first (ftruncate), so stores never reach past its end.
//!
//! Commits: `msync` calls msync(MS_SYNC) over the pages of the current window written since
//! its last commit. msync reaches only mapped memory, so under a commit policy a window that
//! still holds uncommitted writes is msync'd just before it is unmapped. `fsync` and
//! `fdatasync` call that on the descriptor instead, which commits every dirty page of the file,
//! mapped or not.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

use super::{
    Call, CallCounts, CallError, CallResult, Caps, Engine, EngineDef, Setup, buffer, fd_sync, open_files,
};
use crate::env::sys::AlignedBuf;
use crate::error::{Error, Result};
use crate::plan::Op;
use crate::plan::mem::Strided;
use crate::spec::{SyncCall, SyncPolicy};

pub static DEF: EngineDef = EngineDef {
    name: "mmap",
    about: "memcpy into/out of MAP_SHARED windows of the file; commits with msync(MS_SYNC)",
    caps: Caps {
        direct: false,
        open_sync: false,
        real_io: true,
        sync_calls: &[SyncCall::Msync, SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: 1,
        strided: Some("copies each piece into the mapping"),
        strided_to_kernel: false,
        window: true,
        probe: super::always_available,
        main_thread: false,
        parallel_pieces: false,
    },
};

/// A mapped window: `len` bytes of one file from file offset `start`.
struct Window {
    start: u64,
    len: usize,
    ptr: *mut u8,
    /// Byte range within the window written since its last commit.
    dirty: Option<(usize, usize)>,
}

pub struct Mmap {
    files: Vec<File>,
    sizes: Vec<u64>,
    window: Option<u64>,
    write: bool,
    mem: Option<Strided>,
    buf: AlignedBuf,
    /// The current window of each local file.
    maps: Vec<Option<Window>>,
    /// msync a window with uncommitted writes before unmapping it.
    flush_on_unmap: bool,
    calls: CallCounts,
}

// SAFETY: the only raw pointers are the engine's own mappings, which no one else refers to; a
// mapping is valid in any thread of the process.
unsafe impl Send for Mmap {}

impl Mmap {
    /// Makes sure the window holding byte `off` of local file `file` is mapped.
    #[inline]
    fn ensure(&mut self, file: u32, off: u64) -> CallResult<()> {
        if let Some(w) = &self.maps[file as usize]
            && off >= w.start
            && off < w.start + w.len as u64
        {
            return Ok(());
        }
        self.unmap(file)?;
        let size = self.sizes[file as usize];
        let wsize = self.window.unwrap_or(size).max(1);
        let start = off / wsize * wsize;
        let len = wsize.min(size - start) as usize;
        let prot = if self.write { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        self.calls.add(Call::Mmap);
        // SAFETY: a fresh shared mapping of an open file, within its size (checked or set at
        // open); nothing else refers to the returned range.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                self.files[file as usize].as_raw_fd(),
                start as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(CallError::last(Call::Mmap));
        }
        self.maps[file as usize] = Some(Window { start, len, ptr: ptr.cast(), dirty: None });
        Ok(())
    }

    /// msync(MS_SYNC) over the written pages of a file's current window, if any.
    fn msync_dirty(&mut self, file: u32) -> CallResult<()> {
        let Some(w) = &mut self.maps[file as usize] else { return Ok(()) };
        let Some((lo, hi)) = w.dirty.take() else { return Ok(()) };
        let page = crate::env::sys::page_size();
        let lo = lo / page * page;
        self.calls.add(Call::Msync);
        // SAFETY: [lo, hi) lies within the live mapping; `lo` is page-aligned because the
        // mapping and the window start are.
        let rc = unsafe { libc::msync(w.ptr.add(lo).cast(), hi - lo, libc::MS_SYNC) };
        if rc != 0 {
            return Err(CallError::last(Call::Msync));
        }
        Ok(())
    }

    /// Unmaps a file's current window (msync'ing it first if it must be).
    fn unmap(&mut self, file: u32) -> CallResult<()> {
        let flushed = if self.flush_on_unmap { self.msync_dirty(file) } else { Ok(()) };
        if let Some(w) = self.maps[file as usize].take() {
            self.calls.add(Call::Munmap);
            // SAFETY: unmapping exactly the mapping made in `ensure`; no slice into it outlives
            // the op that made it.
            if unsafe { libc::munmap(w.ptr.cast(), w.len) } != 0 {
                return Err(CallError::last(Call::Munmap));
            }
        }
        flushed
    }
}

impl Engine for Mmap {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        let files = open_files(setup)?;
        let mut calls = CallCounts::default();
        for ((f, &size), p) in files.iter().zip(setup.sizes).zip(setup.paths) {
            let len = f.metadata().map_err(|e| Error::io("fstat", p, None, e))?.len();
            if setup.write && len < size {
                calls.add(Call::Ftruncate);
                f.set_len(size).map_err(|e| Error::io("ftruncate", p, Some(size), e))?;
            } else if len < size {
                // A load past the end of a mapped file is a SIGBUS, not an error: refuse first.
                return Err(Error::io(
                    "mmap",
                    p,
                    None,
                    io::Error::other(format!("the file holds {len} bytes, the plan reads {size}")),
                ));
            }
        }
        Ok(Mmap {
            maps: files.iter().map(|_| None).collect(),
            files,
            sizes: setup.sizes.to_vec(),
            window: setup.window,
            write: setup.write,
            mem: setup.mem,
            buf: buffer(setup, setup.mem_bytes())?,
            flush_on_unmap: setup.write
                && setup.sync_call == SyncCall::Msync
                && setup.sync != SyncPolicy::None,
            calls,
        })
    }

    #[inline(always)]
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    fn io(&mut self, op: Op, write: bool) -> CallResult<u64> {
        let len = op.len as usize;
        let mut pos = 0usize;
        while pos < len {
            let off = op.offset + pos as u64;
            self.ensure(op.file, off)?;
            let w = self.maps[op.file as usize].as_mut().expect("window mapped by ensure");
            let at = (off - w.start) as usize;
            let n = (len - pos).min(w.len - at);
            // SAFETY: [at, at + n) lies within the live mapping; the plan gives each worker
            // byte ranges no other worker touches in this phase, so this slice aliases nothing.
            let mapped = unsafe { std::slice::from_raw_parts_mut(w.ptr.add(at), n) };
            match (self.mem, write) {
                (None, true) => mapped.copy_from_slice(&self.buf[pos..pos + n]),
                (None, false) => self.buf[pos..pos + n].copy_from_slice(mapped),
                (Some(m), true) => m.gather_range(&self.buf, pos, mapped),
                (Some(m), false) => m.scatter_range(mapped, pos, &mut self.buf),
            }
            if write {
                w.dirty = Some(match w.dirty {
                    None => (at, at + n),
                    Some((lo, hi)) => (lo.min(at), hi.max(at + n)),
                });
            }
            pos += n;
        }
        Ok(len as u64)
    }

    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()> {
        let mapped_here = self.maps[file as usize].is_some();
        match call {
            SyncCall::Msync if mapped_here => self.msync_dirty(file),
            // Its dirty pages were msync'd when their window was unmapped.
            SyncCall::Msync => Ok(()),
            _ => {
                fd_sync(&self.files[file as usize], call, &mut self.calls)?;
                if let Some(w) = self.maps[file as usize].as_mut() {
                    w.dirty = None;
                }
                Ok(())
            }
        }
    }

    fn close(mut self) -> io::Result<CallCounts> {
        for f in 0..self.maps.len() as u32 {
            self.unmap(f).map_err(|e| e.err)?;
        }
        Ok(self.calls)
    }

    fn call_name(_write: bool) -> &'static str {
        "memcpy (mmap)"
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        for w in self.maps.iter_mut().filter_map(Option::take) {
            // SAFETY: a mapping made in `ensure`, still live (close unmaps them first).
            unsafe { libc::munmap(w.ptr.cast(), w.len) };
        }
    }
}
