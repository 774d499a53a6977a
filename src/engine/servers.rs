//! `servers`: the clients' side of I/O-server ranks (`servers = S` under mpirun, in a build with
//! the `mpi` feature), one worker per client rank on the rank's main thread. Each op is a
//! request to the server rank holding its file (a striped file's component, by the same stripe
//! map as over directories), over MPI point-to-point: a write sends a header and its bytes, a
//! read sends a header and receives the bytes straight into the worker's buffer, a commit asks
//! the server to fsync or fdatasync; every request is answered with a status, which on failure
//! carries the server's own error (naming the server, its host and its file). With `pieces =
//! parallel` a block's pieces go out at once, at most `server_depth` requests in flight per
//! server, as Intel CFS's compute nodes sent a buffer's requests to its I/O nodes together. A
//! blast sends each block to the server (one `MPI_Send`, or one `write` on a TCP connection to
//! the server's host), which counts and drops it; its commit is the server's acknowledgement of
//! every byte.

use std::io::{self, Write};
use std::net::TcpStream;
use std::os::raw::{c_int, c_void};

use mpi::ffi;

use super::{Call, CallCounts, CallError, CallResult, Caps, Engine, EngineDef, PiecesResult, Setup, buffer};
use crate::env::sys::AlignedBuf;
use crate::error::{Error, Result};
use crate::plan::Op;
use crate::spec::{BlastTransport, SyncCall};

pub use super::wire::{Header, Kind};

pub static DEF: EngineDef = EngineDef {
    name: "servers",
    about: "requests to I/O-server ranks over MPI point-to-point (servers = S under mpirun; set by it); MPI ranks only",
    caps: Caps {
        direct: false,
        open_sync: false,
        real_io: true,
        sync_calls: &[SyncCall::Fdatasync, SyncCall::Fsync],
        max_iodepth: 1,
        strided: None,
        strided_to_kernel: false,
        window: false,
        probe: super::always_available,
        main_thread: true,
        parallel_pieces: true,
    },
};

use super::wire::*;

/// Keeps the failure of the lowest piece.
fn keep(r: PiecesResult, failed: &mut Option<(usize, CallError)>) {
    if let Err((i, e)) = r
        && failed.as_ref().is_none_or(|(j, _)| i < *j)
    {
        *failed = Some((i, e));
    }
}

/// How a blast moves its bytes.
enum Blast {
    Mpi,
    Tcp(TcpStream),
}

pub struct ServersEngine {
    comm: ffi::MPI_Comm,
    /// The rank of the server holding each file, and that server's index.
    ranks: Vec<c_int>,
    servers: Vec<u32>,
    gids: Vec<u32>,
    depth: u32,
    buf: AlignedBuf,
    /// Per slot: its header, its status, its three requests (status, header, data) and, for a
    /// block's pieces, whether it is in flight.
    headers: Vec<[u8; HEADER_BYTES]>,
    status: Vec<[u8; STATUS_BYTES]>,
    reqs: Vec<ffi::MPI_Request>,
    pending: Vec<bool>,
    /// Per slot: the server its request went to.
    slot_srv: Vec<u32>,
    /// Per server: its requests in flight now, and the first slot that may still be in flight.
    inflight: Vec<u32>,
    cursor: Vec<usize>,
    blast: Option<Blast>,
    /// Bytes a blast sent so far.
    sent: u64,
    calls: CallCounts,
}

// SAFETY: the MPI handles are opaque values the MPI library owns; the engine is used by one
// thread at a time (a rank's main thread), as MPI_THREAD_FUNNELED requires.
unsafe impl Send for ServersEngine {}

fn mpi_error(code: c_int, what: &str) -> io::Error {
    io::Error::other(format!("{what} failed with MPI error {code}"))
}

fn check(code: c_int, call: Call, what: &str) -> CallResult<()> {
    if code == ffi::MPI_SUCCESS as c_int { Ok(()) } else { Err(CallError::new(call, mpi_error(code, what))) }
}

impl ServersEngine {
    /// Starts slot `slot`'s request for `op`, its bytes at `at` in the buffer: the status
    /// receive first (and a read's data receive, so the bytes land in place), then the header
    /// (and a write's bytes).
    fn post(&mut self, slot: usize, op: Op, write: bool, at: usize) -> CallResult<()> {
        let call = if write { Call::WriteRequest } else { Call::ReadRequest };
        let rank = self.ranks[op.file as usize];
        self.slot_srv[slot] = self.servers[op.file as usize];
        let kind = if write { Kind::Write } else { Kind::Read };
        let h = Header {
            kind,
            gid: self.gids[op.file as usize],
            slot: slot as u32,
            arg: 0,
            offset: op.offset,
            len: op.len,
        };
        h.encode(&mut self.headers[slot]);
        let len = op.len as c_int;
        let tag = slot as c_int;
        let r = &mut self.reqs[3 * slot..3 * slot + 3];
        let data = self.buf[at..at + op.len as usize].as_mut_ptr().cast::<c_void>();
        self.calls.add(call);
        // SAFETY: every buffer (the slot's status and header, `len` bytes of the worker's
        // buffer at `at`) stays in place until the slot's requests are waited for, which
        // happens before this engine returns from the call that posted them.
        unsafe {
            let u8t = ffi::RSMPI_UINT8_T;
            let st = self.status[slot].as_mut_ptr().cast::<c_void>();
            check(
                ffi::MPI_Irecv(st, STATUS_BYTES as c_int, u8t, rank, TAG_STATUS + tag, self.comm, &mut r[0]),
                call,
                "MPI_Irecv",
            )?;
            if !write {
                check(
                    ffi::MPI_Irecv(data, len, u8t, rank, TAG_RDATA + tag, self.comm, &mut r[2]),
                    call,
                    "MPI_Irecv",
                )?;
            }
            let hd = self.headers[slot].as_ptr().cast::<c_void>().cast_mut();
            check(
                ffi::MPI_Isend(hd, HEADER_BYTES as c_int, u8t, rank, TAG_REQ, self.comm, &mut r[1]),
                call,
                "MPI_Isend",
            )?;
            if write {
                check(
                    ffi::MPI_Isend(data, len, u8t, rank, TAG_WDATA, self.comm, &mut r[2]),
                    call,
                    "MPI_Isend",
                )?;
            }
        }
        Ok(())
    }

    /// Waits for slot `slot`'s request; the bytes the server moved, or its error.
    fn finish(&mut self, slot: usize, call: Call) -> CallResult<u64> {
        // SAFETY: MPI_Status is plain data that MPI fills.
        let mut st: [ffi::MPI_Status; 3] = unsafe { std::mem::zeroed() };
        // SAFETY: the slot's three requests are active or null (a commit posts two).
        check(
            unsafe { ffi::MPI_Waitall(3, self.reqs[3 * slot..].as_mut_ptr(), st.as_mut_ptr()) },
            call,
            "MPI_Waitall",
        )?;
        let mut n: c_int = 0;
        // SAFETY: the status of the completed status receive, of bytes.
        unsafe { ffi::MPI_Get_count(&st[0], ffi::RSMPI_UINT8_T, &mut n) };
        let (code, count, text) = decode_status(&self.status[slot][..n.max(0) as usize]);
        if code != 0 {
            return Err(CallError::new(call, io::Error::other(text)));
        }
        Ok(count)
    }

    /// Finishes the oldest request in flight to server `srv` (the server answers in order).
    fn finish_oldest(&mut self, srv: usize, pieces: &[Op], write: bool, done: &mut [u64]) -> PiecesResult {
        let mut i = self.cursor[srv];
        while i < pieces.len() && !(self.pending[i] && self.servers[pieces[i].file as usize] as usize == srv)
        {
            i += 1;
        }
        self.cursor[srv] = i + 1;
        self.complete(i, write, done)
    }

    fn complete(&mut self, i: usize, write: bool, done: &mut [u64]) -> PiecesResult {
        let call = if write { Call::WriteRequest } else { Call::ReadRequest };
        self.pending[i] = false;
        self.inflight[self.slot_srv[i] as usize] -= 1;
        let r = self.finish(i, call);
        done[i] = *r.as_ref().unwrap_or(&0);
        r.map(|_| ()).map_err(|e| (i, e))
    }

    /// One request without bytes (a commit, a blast's end) to the server of `file`.
    fn control(&mut self, file: u32, kind: Kind, arg: u32, len: u64, call: Call) -> CallResult<u64> {
        let rank = self.ranks[file as usize];
        let h = Header { kind, gid: self.gids[file as usize], slot: 0, arg, offset: 0, len };
        h.encode(&mut self.headers[0]);
        self.calls.add(call);
        let r = &mut self.reqs[0..3];
        // SAFETY: the slot's status and header stay in place until waited for below; the
        // third request is null.
        unsafe {
            r[2] = ffi::RSMPI_REQUEST_NULL;
            let st = self.status[0].as_mut_ptr().cast::<c_void>();
            check(
                ffi::MPI_Irecv(
                    st,
                    STATUS_BYTES as c_int,
                    ffi::RSMPI_UINT8_T,
                    rank,
                    TAG_STATUS,
                    self.comm,
                    &mut r[0],
                ),
                call,
                "MPI_Irecv",
            )?;
            let hd = self.headers[0].as_ptr().cast::<c_void>().cast_mut();
            check(
                ffi::MPI_Isend(
                    hd,
                    HEADER_BYTES as c_int,
                    ffi::RSMPI_UINT8_T,
                    rank,
                    TAG_REQ,
                    self.comm,
                    &mut r[1],
                ),
                call,
                "MPI_Isend",
            )?;
        }
        self.finish(0, call)
    }
}

/// Connects to the TCP address server rank `rank` sends for a blast.
fn connect_blast(comm: ffi::MPI_Comm, rank: c_int, nodelay: bool) -> Result<TcpStream> {
    let mut msg = [0u8; ADDR_BYTES];
    // SAFETY: MPI_Status is plain data that MPI fills.
    let mut st: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: a buffer of ADDR_BYTES bytes; the server always sends its address or an error.
    unsafe {
        ffi::MPI_Recv(
            msg.as_mut_ptr().cast(),
            ADDR_BYTES as c_int,
            ffi::RSMPI_UINT8_T,
            rank,
            TAG_ADDR,
            comm,
            &mut st,
        )
    };
    let mut n: c_int = 0;
    // SAFETY: the status of the receive above, of bytes.
    unsafe { ffi::MPI_Get_count(&st, ffi::RSMPI_UINT8_T, &mut n) };
    let text = String::from_utf8_lossy(&msg[..n.clamp(0, ADDR_BYTES as c_int) as usize]).into_owned();
    let (addr, token) = match text.strip_prefix("error ") {
        None => super::wire::decode_addr(&text).map_err(Error::Run)?,
        Some(why) => return Err(Error::Run(why.to_string())),
    };
    let mut s = TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(30))
        .map_err(|e| Error::Run(format!("blast: connecting to the server at {addr}: {e}")))?;
    // The token first: the server admits only the connection that sends it.
    super::wire::present(&mut s, &token)
        .map_err(|e| Error::Run(format!("blast: the token to the server at {addr}: {e}")))?;
    // With `tcp`, each block goes out as it is written; `tcp-nagle` leaves Nagle's algorithm
    // on, as Russell's kernel did (it lacked the patches TCP's "no delay" option needs).
    s.set_nodelay(nodelay).map_err(|e| Error::Run(format!("blast: TCP_NODELAY on {addr}: {e}")))?;
    Ok(s)
}

impl Engine for ServersEngine {
    fn open(setup: &Setup<'_>) -> Result<Self> {
        let remote =
            setup.remote.as_ref().ok_or_else(|| Error::Run("engine servers without servers".into()))?;
        if setup.bs > i32::MAX as usize {
            return Err(Error::spec(
                "bs",
                setup.bs,
                "requests to servers move at most 2 GiB - 1 (an MPI count is an int)",
            ));
        }
        // SAFETY: a constant handle.
        let comm = unsafe { ffi::RSMPI_COMM_WORLD };
        let mut size: c_int = 0;
        // SAFETY: a valid communicator and an int to fill.
        unsafe { ffi::MPI_Comm_size(comm, &mut size) };
        let ranks: Vec<c_int> =
            remote.servers.iter().map(|&j| size - remote.count as c_int + j as c_int).collect();
        let slots = setup.pieces.max(1);
        if slots > MAX_SLOTS {
            return Err(Error::spec(
                "pieces",
                slots,
                format!("at most {MAX_SLOTS} requests in flight per block"),
            ));
        }
        let blast = match remote.blast {
            None => None,
            Some(BlastTransport::Mpi) => Some(Blast::Mpi),
            Some(t @ (BlastTransport::Tcp | BlastTransport::TcpNagle)) => {
                Some(Blast::Tcp(connect_blast(comm, ranks[0], t == BlastTransport::Tcp)?))
            }
        };
        Ok(ServersEngine {
            comm,
            ranks,
            servers: remote.servers.clone(),
            gids: remote.gids.to_vec(),
            depth: remote.depth.max(1) as u32,
            buf: buffer(setup, setup.mem_bytes())?,
            headers: vec![[0; HEADER_BYTES]; slots],
            status: vec![[0; STATUS_BYTES]; slots],
            // SAFETY: a constant handle.
            reqs: vec![unsafe { ffi::RSMPI_REQUEST_NULL }; 3 * slots],
            pending: vec![false; slots],
            slot_srv: vec![0; slots],
            inflight: vec![0; remote.count as usize],
            cursor: vec![0; remote.count as usize],
            blast,
            sent: 0,
            calls: CallCounts::default(),
        })
    }

    #[inline(always)]
    fn buf(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    fn io(&mut self, op: Op, write: bool) -> CallResult<u64> {
        let len = op.len as usize;
        match &mut self.blast {
            Some(Blast::Mpi) => {
                self.calls.add(Call::MpiSend);
                let (rank, data) = (self.ranks[op.file as usize], self.buf.as_ptr().cast::<c_void>());
                // SAFETY: `len` bytes of the buffer, sent before the call returns.
                let code = unsafe {
                    ffi::MPI_Send(
                        data.cast_mut(),
                        len as c_int,
                        ffi::RSMPI_UINT8_T,
                        rank,
                        TAG_BLAST,
                        self.comm,
                    )
                };
                check(code, Call::MpiSend, "MPI_Send")?;
            }
            Some(Blast::Tcp(s)) => {
                self.calls.add(Call::Send);
                s.write_all(&self.buf[..len]).map_err(|e| CallError::new(Call::Send, e))?;
            }
            None => {
                self.post(0, op, write, 0)?;
                return self.finish(0, if write { Call::WriteRequest } else { Call::ReadRequest });
            }
        }
        self.sent += op.len;
        Ok(op.len)
    }

    fn io_pieces(&mut self, pieces: &[Op], write: bool, done: &mut [u64]) -> PiecesResult {
        let len = pieces.first().map_or(0, |p| p.len as usize);
        self.cursor.fill(0);
        let mut failed: Option<(usize, CallError)> = None;
        for (i, p) in pieces.iter().enumerate() {
            let srv = self.servers[p.file as usize] as usize;
            while self.inflight[srv] >= self.depth {
                let r = self.finish_oldest(srv, pieces, write, done);
                keep(r, &mut failed);
            }
            if failed.is_some() {
                break;
            }
            if let Err(e) = self.post(i, *p, write, i * len) {
                keep(Err((i, e)), &mut failed);
                break;
            }
            self.pending[i] = true;
            self.inflight[srv] += 1;
        }
        // Every request posted is waited for, failed or not: no buffer is left to MPI.
        for i in 0..pieces.len() {
            if self.pending[i] {
                let r = self.complete(i, write, done);
                keep(r, &mut failed);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    fn sync(&mut self, file: u32, call: SyncCall) -> CallResult<()> {
        if self.blast.is_some() {
            let sent = self.sent;
            let got = self.control(file, Kind::BlastEnd, 0, sent, Call::CommitRequest)?;
            if got != sent {
                let why = format!("the server received {got} of the {sent} bytes sent");
                return Err(CallError::new(Call::CommitRequest, io::Error::other(why)));
            }
            return Ok(());
        }
        let arg = u32::from(call == SyncCall::Fsync);
        self.control(file, Kind::Commit, arg, 0, Call::CommitRequest).map(|_| ())
    }

    fn close(self) -> io::Result<CallCounts> {
        if let Some(Blast::Tcp(s)) = self.blast {
            // Every byte was acknowledged at the commit; nothing more goes either way.
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        Ok(self.calls)
    }

    fn call_name(write: bool) -> &'static str {
        if write { "write request" } else { "read request" }
    }
}
