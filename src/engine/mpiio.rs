//! `mpiio`: MPI-IO through the MPI library's own file calls (IOR's MPIIO backend), in a build
//! with the `mpi` feature, one worker per rank on the rank's main thread. A file every rank
//! shares (the shared layouts) is opened on all ranks together (`MPI_COMM_WORLD`), any other
//! on this rank alone (`MPI_COMM_SELF`); with the hints given (`MPI_Info`). Each op is one
//! `MPI_File_write_at` / `read_at` at its offset, or with `mpiio = collective` one
//! `write_at_all` / `read_at_all`, which every rank calls the same number of times (every rank
//! has as many ops); a commit is `MPI_File_sync` (collective on a shared file), whatever the
//! commit call asked for. MPI opens by path: the file is first checked to still be the one
//! iolab created (no link, same inode, one link).

use std::ffi::CString;
use std::io;
use std::os::raw::{c_int, c_void};

use mpi::ffi;

use super::{Call, CallCounts, CallError, CallResult, Caps, Engine, EngineDef, FileView, Setup, buffer};
use crate::env::sys::AlignedBuf;
use crate::error::{Error, Result};
use crate::plan::Op;
use crate::spec::SyncCall;

pub static DEF: EngineDef = EngineDef {
    name: "mpiio",
    about: "MPI-IO (MPI_File_write_at/read_at, or the _all collective calls with mpiio = collective), MPI_File_sync; MPI ranks only",
    caps: Caps {
        direct: false,
        open_sync: false,
        real_io: true,
        sync_calls: &[SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: 1,
        strided: Some("one MPI derived datatype per op (MPI_Type_vector), gathered by MPI"),
        strided_to_kernel: false,
        window: false,
        probe: super::always_available,
        main_thread: true,
        parallel_pieces: false,
    },
};

pub struct MpiIo {
    files: Vec<ffi::MPI_File>,
    collective: bool,
    buf: AlignedBuf,
    /// The memory of one strided op: a vector of its pieces (`None`: contiguous bytes).
    mem_type: Option<Datatype>,
    /// The file view the worker sees its blocks through.
    view: Option<FileView>,
    calls: CallCounts,
    /// The hints the MPI-IO layer applied to the first file (MPI_File_get_info).
    applied: Vec<(String, String)>,
}

// SAFETY: an MPI_File handle is an opaque pointer the MPI library owns; the engine is used by
// one thread at a time (a rank's main thread), as MPI_THREAD_FUNNELED requires.
unsafe impl Send for MpiIo {}

/// The text of MPI error code `code`.
fn mpi_error(code: c_int) -> io::Error {
    let mut text = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING (at most 1024 here) bytes; MPI writes at
    // most that many and the length.
    unsafe { ffi::MPI_Error_string(code, text.as_mut_ptr().cast(), &mut len) };
    text.truncate(len.max(0) as usize);
    io::Error::other(format!("MPI error {code}: {}", String::from_utf8_lossy(&text)))
}

fn check(code: c_int, call: Call) -> CallResult<()> {
    if code == ffi::MPI_SUCCESS as c_int { Ok(()) } else { Err(CallError::new(call, mpi_error(code))) }
}

/// An `MPI_Info` with the hints, freed when dropped.
struct Info(ffi::MPI_Info);

impl Info {
    fn new(hints: &[(String, String)]) -> Result<Info> {
        // SAFETY: RSMPI_INFO_NULL is a constant handle.
        let mut info = unsafe { ffi::RSMPI_INFO_NULL };
        if hints.is_empty() {
            return Ok(Info(info));
        }
        // SAFETY: MPI_Info_create fills a fresh handle.
        unsafe { ffi::MPI_Info_create(&mut info) };
        for (k, v) in hints {
            let bad = |_| Error::spec("mpiio_hint", format!("{k}={v}"), "holds a NUL byte");
            let (k, v) = (CString::new(k.as_str()).map_err(bad)?, CString::new(v.as_str()).map_err(bad)?);
            // SAFETY: `info` is a valid handle; key and value are NUL-terminated strings that
            // MPI copies.
            unsafe { ffi::MPI_Info_set(info, k.as_ptr(), v.as_ptr()) };
        }
        Ok(Info(info))
    }
}

/// The hints in effect on an open file, as the MPI-IO layer reports them (MPI_File_get_info),
/// in its order.
fn applied_hints(fh: ffi::MPI_File) -> Vec<(String, String)> {
    const KEY: usize = ffi::MPI_MAX_INFO_KEY as usize + 1;
    const VAL: usize = ffi::MPI_MAX_INFO_VAL as usize + 1;
    // SAFETY: RSMPI_INFO_NULL is a constant handle.
    let mut info = Info(unsafe { ffi::RSMPI_INFO_NULL });
    // SAFETY: an open file and a handle to fill with a new info object (freed by `Info`).
    if unsafe { ffi::MPI_File_get_info(fh, &mut info.0) } != ffi::MPI_SUCCESS as c_int {
        return vec![];
    }
    let mut n: c_int = 0;
    // SAFETY: a valid info handle and an int to fill.
    unsafe { ffi::MPI_Info_get_nkeys(info.0, &mut n) };
    let text = |b: &[u8]| {
        String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).into_owned()
    };
    let mut out = vec![];
    for i in 0..n {
        let (mut key, mut val, mut flag) = ([0u8; KEY], vec![0u8; VAL], 0 as c_int);
        // SAFETY: `key` holds MPI_MAX_INFO_KEY + 1 bytes, as MPI_Info_get_nthkey may write;
        // `val` holds MPI_MAX_INFO_VAL + 1 bytes and MPI writes at most valuelen + 1 of them.
        unsafe {
            ffi::MPI_Info_get_nthkey(info.0, i, key.as_mut_ptr().cast());
            ffi::MPI_Info_get(
                info.0,
                key.as_ptr().cast(),
                (VAL - 1) as c_int,
                val.as_mut_ptr().cast(),
                &mut flag,
            );
        }
        if flag != 0 {
            out.push((text(&key), text(&val)));
        }
    }
    out
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: only a handle made by MPI_Info_create is freed, once.
        if self.0 != unsafe { ffi::RSMPI_INFO_NULL } {
            unsafe { ffi::MPI_Info_free(&mut self.0) };
        }
    }
}

impl Engine for MpiIo {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        let mpiio = setup.mpiio.cloned().unwrap_or_default();
        let info = Info::new(&mpiio.hints)?;
        // SAFETY: constant communicator handles.
        let comm = unsafe { if setup.shared_by_all { ffi::RSMPI_COMM_WORLD } else { ffi::RSMPI_COMM_SELF } };
        let mode = if setup.write { ffi::MPI_MODE_WRONLY } else { ffi::MPI_MODE_RDONLY } as c_int;
        let mut files = Vec::with_capacity(setup.paths.len());
        for (p, &id) in setup.paths.iter().zip(setup.ids) {
            // MPI opens by path: only the file iolab created, checked just before.
            drop(crate::target::owned::open(p, id, setup.write, 0)?);
            let c = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str())).map_err(|_| {
                Error::Run(format!("{}: a path with a NUL byte", crate::text::escape_path(p)))
            })?;
            // SAFETY: a valid communicator, a NUL-terminated path, a valid info handle and a
            // handle to fill.
            let mut fh = unsafe { ffi::RSMPI_FILE_NULL };
            let code = unsafe { ffi::MPI_File_open(comm, c.as_ptr(), mode, info.0, &mut fh) };
            if code != ffi::MPI_SUCCESS as c_int {
                return Err(Error::io("MPI_File_open", p, None, mpi_error(code)));
            }
            files.push(fh);
        }
        if let Some(v) = setup.view {
            let ty = Datatype::view(v)?;
            for (fh, p) in files.iter().zip(setup.paths) {
                // SAFETY: an open file, a committed type, a NUL-terminated data representation
                // and a valid info handle; collective over the ranks that opened the file, which
                // all set their views here. MPI keeps what it needs of the type.
                let code = unsafe {
                    ffi::MPI_File_set_view(
                        *fh,
                        v.disp as ffi::MPI_Offset,
                        ffi::RSMPI_UINT8_T,
                        ty.0,
                        c"native".as_ptr(),
                        info.0,
                    )
                };
                if code != ffi::MPI_SUCCESS as c_int {
                    return Err(Error::io("MPI_File_set_view", p, None, mpi_error(code)));
                }
            }
        }
        let mem_type = setup.mem.map(|m| Datatype::vector(m, setup.bs)).transpose()?;
        let applied = files.first().map(|&fh| applied_hints(fh)).unwrap_or_default();
        Ok(MpiIo {
            files,
            collective: mpiio.collective,
            buf: buffer(setup, setup.mem_bytes())?,
            mem_type,
            view: setup.view,
            calls: CallCounts::default(),
            applied,
        })
    }

    fn hints(&self) -> Option<&[(String, String)]> {
        Some(&self.applied)
    }

    #[inline(always)]
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    #[inline(always)]
    fn io(&mut self, op: Op, write: bool) -> CallResult<u64> {
        let fh = self.files[op.file as usize];
        // SAFETY: a constant handle.
        let (ty, len) =
            self.mem_type.as_ref().map_or((unsafe { ffi::RSMPI_UINT8_T }, op.len as c_int), |t| (t.0, 1));
        let at = match self.view {
            None => op.offset,
            Some(v) => match v.view_offset(op.offset) {
                Some(k) => k,
                None => {
                    let why = format!("offset {} is outside this worker's file view {v:?}", op.offset);
                    return Err(CallError::new(Call::MpiFileWriteAt, io::Error::other(why)));
                }
            },
        } as ffi::MPI_Offset;
        // SAFETY: MPI_Status is plain data the calls fill.
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: the buffer holds at least `len` bytes (bs); `fh` is open; the datatype is a
        // constant handle.
        let (call, code) = unsafe {
            match (write, self.collective) {
                (true, false) => (
                    Call::MpiFileWriteAt,
                    ffi::MPI_File_write_at(fh, at, self.buf.as_ptr().cast::<c_void>(), len, ty, &mut status),
                ),
                (true, true) => (
                    Call::MpiFileWriteAtAll,
                    ffi::MPI_File_write_at_all(
                        fh,
                        at,
                        self.buf.as_ptr().cast::<c_void>(),
                        len,
                        ty,
                        &mut status,
                    ),
                ),
                (false, false) => (
                    Call::MpiFileReadAt,
                    ffi::MPI_File_read_at(
                        fh,
                        at,
                        self.buf.as_mut_ptr().cast::<c_void>(),
                        len,
                        ty,
                        &mut status,
                    ),
                ),
                (false, true) => (
                    Call::MpiFileReadAtAll,
                    ffi::MPI_File_read_at_all(
                        fh,
                        at,
                        self.buf.as_mut_ptr().cast::<c_void>(),
                        len,
                        ty,
                        &mut status,
                    ),
                ),
            }
        };
        self.calls.add(call);
        check(code, call)?;
        let mut count: c_int = 0;
        // SAFETY: `status` was filled by the data call above, with datatype `ty`; its basic
        // elements are bytes.
        check(unsafe { ffi::MPI_Get_elements(&status, ty, &mut count) }, call)?;
        Ok(count.max(0) as u64)
    }

    fn sync(&mut self, file: u32, _call: SyncCall) -> CallResult<()> {
        self.calls.add(Call::MpiFileSync);
        // SAFETY: the handle is open.
        check(unsafe { ffi::MPI_File_sync(self.files[file as usize]) }, Call::MpiFileSync)
    }

    fn close(mut self) -> io::Result<CallCounts> {
        for fh in &mut self.files {
            // SAFETY: each handle is open and closed once.
            let code = unsafe { ffi::MPI_File_close(fh) };
            if code != ffi::MPI_SUCCESS as c_int {
                return Err(mpi_error(code));
            }
        }
        Ok(self.calls)
    }

    fn call_name(write: bool) -> &'static str {
        if write { "MPI_File_write_at" } else { "MPI_File_read_at" }
    }
}

/// A committed MPI derived datatype of bytes, freed when dropped.
pub struct Datatype(pub ffi::MPI_Datatype);

impl Datatype {
    /// `bytes` bytes of strided memory: `bytes / len` pieces of `len` bytes every `stride`.
    pub fn vector(m: crate::plan::mem::Strided, bytes: usize) -> Result<Datatype> {
        let int =
            |v: usize| c_int::try_from(v).map_err(|_| Error::spec("mem_stride", v, "too large for MPI"));
        let (count, len, stride) = (int(bytes / m.len)?, int(m.len)?, int(m.stride)?);
        // SAFETY: a handle to fill, valid counts and a constant base type.
        Datatype::commit("MPI_Type_vector", |ty| unsafe {
            ffi::MPI_Type_vector(count, len, stride, ffi::RSMPI_UINT8_T, ty)
        })
    }

    /// The filetype of a view: `block` bytes, then a hole up to `stride` (tiled by MPI).
    pub fn view(v: FileView) -> Result<Datatype> {
        let block = c_int::try_from(v.block).map_err(|_| Error::spec("bs", v.block, "too large for MPI"))?;
        // SAFETY: a handle to fill, a valid count and a constant base type.
        let one = Datatype::commit("MPI_Type_contiguous", |ty| unsafe {
            ffi::MPI_Type_contiguous(block, ffi::RSMPI_UINT8_T, ty)
        })?;
        // SAFETY: a committed type and a handle to fill; `one` is freed after, as MPI allows.
        Datatype::commit("MPI_Type_create_resized", |ty| unsafe {
            ffi::MPI_Type_create_resized(one.0, 0, v.stride as ffi::MPI_Aint, ty)
        })
    }

    /// Makes a type with `make` and commits it.
    fn commit(what: &str, make: impl FnOnce(&mut ffi::MPI_Datatype) -> c_int) -> Result<Datatype> {
        // SAFETY: a constant handle, overwritten by `make`.
        let mut ty = unsafe { ffi::RSMPI_DATATYPE_NULL };
        let code = make(&mut ty);
        if code != ffi::MPI_SUCCESS as c_int {
            return Err(Error::Run(format!("{what}: {}", mpi_error(code))));
        }
        // Freed by drop if the commit fails.
        let mut ty = Datatype(ty);
        // SAFETY: a type just made, not yet committed.
        let code = unsafe { ffi::MPI_Type_commit(&mut ty.0) };
        if code != ffi::MPI_SUCCESS as c_int {
            return Err(Error::Run(format!("MPI_Type_commit after {what}: {}", mpi_error(code))));
        }
        Ok(ty)
    }
}

impl Drop for Datatype {
    fn drop(&mut self) {
        // SAFETY: a type made by `Datatype::commit`, freed once.
        unsafe { ffi::MPI_Type_free(&mut self.0) };
    }
}

// SAFETY: a datatype handle is an opaque pointer MPI owns; it is used on one thread at a time
// (a rank's main thread).
unsafe impl Send for Datatype {}
