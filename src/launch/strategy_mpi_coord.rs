//! The coordination of strategy roles on MPI ranks (`strategy_mpi`): message tags per phase, a
//! barrier of zero-byte messages through rank 0, the S1B commit token rank 0 grants, and every
//! wait polling for a stop, which a failing rank sends to every other rank.

use std::os::raw::c_int;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};

use mpi::ffi;

use crate::error::Result;
use crate::plan::mem::Strided;
use crate::strategy::coord::{self, CommitOrder, Group};
use crate::strategy::{Plan, gettid};

/// Message kinds (a tag is the phase's base plus one of these).
const ARRIVE: c_int = 0;
const RELEASE: c_int = 1;
const STOP: c_int = 2;
const TOKEN_ASK: c_int = 3;
const TOKEN_GRANT: c_int = 4;
const TOKEN_BACK: c_int = 5;
pub(super) const DATA: c_int = 6;
const KINDS: c_int = 8;
/// Tags start above the launcher's own (its reply tag is 7); MPI guarantees tags to 32767.
const TAG_BASE: c_int = 64;
const EPOCHS: u32 = 4000;

/// Strategy phases run so far by this rank (every rank runs every phase, so all agree).
static EPOCH: AtomicU32 = AtomicU32::new(0);

pub(super) fn comm() -> ffi::MPI_Comm {
    // SAFETY: a constant handle, valid while MPI is initialised.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

pub(super) fn byte() -> ffi::MPI_Datatype {
    // SAFETY: a constant handle.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// Rank 0's S1B token: who holds it and who waits for it, in order.
#[derive(Default)]
struct Token {
    holder: Option<c_int>,
    queue: std::collections::VecDeque<c_int>,
}

/// The coordination of one rank's role.
pub struct MpiCoord {
    rank: c_int,
    size: c_int,
    base: c_int,
    main_tid: u32,
    stopped: AtomicBool,
    /// The stop was told to the other ranks (or came from one).
    told: AtomicBool,
    /// Rank 0 only, touched by its main thread only.
    token: Mutex<Token>,
    pub(super) mem: Option<Strided>,
    pub(super) datatypes: bool,
    pub(super) bs: u64,
    /// Each hand-off's producer and its message size in parts.
    pub(super) rings: Vec<(u32, u32)>,
}

impl MpiCoord {
    pub fn new(plan: &Plan, rank: u32, size: u32, mem: Option<Strided>) -> MpiCoord {
        let epoch = EPOCH.fetch_add(1, Relaxed) % EPOCHS;
        MpiCoord {
            rank: rank as c_int,
            size: size as c_int,
            base: TAG_BASE + epoch as c_int * KINDS,
            main_tid: gettid(),
            stopped: AtomicBool::new(false),
            told: AtomicBool::new(false),
            token: Mutex::new(Token::default()),
            mem,
            datatypes: plan.strategy.datatypes(),
            bs: plan.bs,
            rings: plan.rings(),
        }
    }

    fn on_main(&self) -> bool {
        gettid() == self.main_tid
    }

    pub(super) fn tag(&self, kind: c_int) -> c_int {
        self.base + kind
    }

    /// A zero-byte message (sent eagerly: returns at once).
    fn note(&self, to: c_int, kind: c_int) {
        // SAFETY: no data is read (count 0); a valid rank, tag and communicator.
        unsafe { ffi::MPI_Send(std::ptr::null(), 0, byte(), to, self.tag(kind), comm()) };
    }

    /// The source of a waiting message of `kind` from `from` (or any rank), if one is there.
    pub(super) fn probe(&self, from: c_int, kind: c_int) -> Option<c_int> {
        let mut flag = 0;
        // SAFETY: MPI_Status is plain data the call fills.
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: a valid source (or ANY_SOURCE), tag and communicator; flag and status to fill.
        unsafe { ffi::MPI_Iprobe(from, self.tag(kind), comm(), &mut flag, &mut status) };
        (flag != 0).then_some(status.MPI_SOURCE)
    }

    /// Takes a zero-byte message of `kind` from `from`, if one is there.
    fn take_note(&self, from: c_int, kind: c_int) -> Option<c_int> {
        let src = self.probe(from, kind)?;
        // SAFETY: receives the zero-byte message just probed; nothing is written.
        unsafe {
            ffi::MPI_Recv(
                std::ptr::null_mut(),
                0,
                byte(),
                src,
                self.tag(kind),
                comm(),
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        Some(src)
    }

    fn any() -> c_int {
        // SAFETY: a constant.
        unsafe { ffi::RSMPI_ANY_SOURCE }
    }

    /// One round of the main thread's duties: tell a stop, see one, serve the token (rank 0).
    /// Err once the run is stopped.
    fn poll(&self) -> Result<()> {
        if crate::env::signals::stop_requested() {
            self.stopped.store(true, Release);
        }
        if self.stopped.load(Acquire) {
            if !self.told.swap(true, AcqRel) {
                for r in (0..self.size).filter(|&r| r != self.rank) {
                    self.note(r, STOP);
                }
            }
            return Err(coord::stopped());
        }
        if self.take_note(Self::any(), STOP).is_some() {
            self.told.store(true, Release);
            self.stopped.store(true, Release);
            return Err(coord::stopped());
        }
        if self.rank == 0 {
            let mut t = self.token.lock().unwrap_or_else(|e| e.into_inner());
            while let Some(src) = self.take_note(Self::any(), TOKEN_ASK) {
                t.queue.push_back(src);
            }
            while self.take_note(Self::any(), TOKEN_BACK).is_some() {
                t.holder = None;
            }
            if t.holder.is_none()
                && let Some(next) = t.queue.pop_front()
            {
                t.holder = Some(next);
                if next != 0 {
                    self.note(next, TOKEN_GRANT);
                }
            }
        }
        Ok(())
    }

    /// Polls until `ready`.
    pub(super) fn wait_until(&self, mut ready: impl FnMut() -> bool) -> Result<()> {
        loop {
            self.poll()?;
            if ready() {
                return Ok(());
            }
            std::thread::yield_now();
        }
    }
}

impl Group for MpiCoord {
    fn barrier(&self) -> Result<()> {
        if self.rank == 0 {
            let mut arrived = 0;
            self.wait_until(|| {
                while self.take_note(Self::any(), ARRIVE).is_some() {
                    arrived += 1;
                }
                arrived == self.size - 1
            })?;
            (1..self.size).for_each(|r| self.note(r, RELEASE));
            Ok(())
        } else {
            self.poll()?;
            self.note(0, ARRIVE);
            self.wait_until(|| self.take_note(0, RELEASE).is_some())
        }
    }

    fn stop(&self) {
        self.stopped.store(true, Release);
        if self.on_main() {
            let _ = self.poll();
        }
    }

    fn stopped(&self) -> bool {
        if self.on_main() {
            return self.poll().is_err();
        }
        self.stopped.load(Acquire)
    }

    /// Rank 0 runs its role on its main thread and shows no progress meanwhile.
    fn progress(&self, _worker: u32, _bytes: u64) {}
}

impl CommitOrder for MpiCoord {
    fn begin(&self, exclusive: bool) -> Result<()> {
        if exclusive {
            if self.rank == 0 {
                self.token.lock().unwrap_or_else(|e| e.into_inner()).queue.push_back(0);
                self.wait_until(|| self.token.lock().unwrap_or_else(|e| e.into_inner()).holder == Some(0))?;
            } else {
                self.note(0, TOKEN_ASK);
                self.wait_until(|| self.take_note(0, TOKEN_GRANT).is_some())?;
            }
        }
        Ok(())
    }

    fn end(&self, exclusive: bool) {
        if exclusive {
            if self.rank == 0 {
                self.token.lock().unwrap_or_else(|e| e.into_inner()).holder = None;
                let _ = self.poll();
            } else {
                self.note(0, TOKEN_BACK);
            }
        }
    }
}
