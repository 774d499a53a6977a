//! The coordination of a strategy run in one shared memory region (a memfd mapping): the
//! barrier, the stop flag, per-worker progress, the S1B token with its in-flight counter, and
//! one bounded hand-off ring per producer with preallocated buffers. Threads share the mapping;
//! process workers map the same memfd, passed to them by descriptor. Waiting spins briefly,
//! then sleeps on a futex (with a short timeout, so a stopped run is noticed), so a blocked
//! role leaves its CPU to the ones that compute.
//!
//! Layout (offsets in bytes; every word on its own cache line): stop flag, barrier count and
//! generation, token, in-flight count and maximum; per worker a progress counter; per ring a
//! head (messages sent) and tail (messages taken); then the rings' buffers, page-aligned.

use std::fs::File;
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

use super::coord::{self, CommitOrder, Group, Receiver, Sender};
use crate::error::{Error, Result};

const LINE: usize = 64;
const PAGE: usize = 4096;
const STOP: usize = 0;
const BAR_COUNT: usize = LINE;
const BAR_GEN: usize = 2 * LINE;
const TOKEN: usize = 3 * LINE;
const PROGRESS: usize = PAGE;
/// Buffers per hand-off: a producer fills the next while the writer takes the last.
pub const DEPTH: u32 = 2;
/// Spins before sleeping on a futex.
const SPINS: u32 = 200;
/// The longest a futex sleep lasts before the stop flag is checked again.
pub(crate) const NAP_NS: u64 = 10_000_000;

/// Where everything lives in the region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub workers: u32,
    /// Bytes of one buffer of the ring of each worker (0: it sends nothing).
    pub slot_bytes: Vec<usize>,
    rings_at: usize,
    slots_at: Vec<usize>,
    pub len: usize,
}

impl Layout {
    /// The region for `workers` workers, where worker w hands over messages of `slot_bytes[w]`
    /// bytes (0 for none).
    pub fn new(workers: u32, slot_bytes: Vec<usize>) -> Layout {
        let w = workers as usize;
        let rings_at = (PROGRESS + w * LINE).next_multiple_of(PAGE);
        let mut at = (rings_at + w * 2 * LINE).next_multiple_of(PAGE);
        let mut slots_at = vec![];
        for &b in &slot_bytes {
            slots_at.push(at);
            at += (b.next_multiple_of(PAGE)) * DEPTH as usize;
        }
        Layout { workers, slot_bytes, rings_at, slots_at, len: at }
    }

    /// The region a strategy plan needs: one ring per producer, buffers the size of its memory
    /// for one message.
    pub fn of(plan: &super::Plan, mem: Option<crate::plan::mem::Strided>) -> Layout {
        let mut slots = vec![0usize; plan.workers as usize];
        for (ring, parts) in plan.rings() {
            let disk = parts as usize * plan.bs as usize;
            slots[ring as usize] = mem.map_or(disk, |m| m.mem_bytes(disk));
        }
        Layout::new(plan.workers, slots)
    }
}

/// A mapped region and its layout.
pub struct Shm {
    ptr: *mut u8,
    layout: Layout,
    fd: File,
}

// SAFETY: every shared word is accessed through atomics; a ring buffer is written only by its
// producer while not yet sent and read only by the writer once sent (ordered by the head and
// tail atomics), so no byte is ever accessed by two threads at once without ordering.
unsafe impl Send for Shm {}
// SAFETY: as above.
unsafe impl Sync for Shm {}

fn os_err(what: &str, e: std::io::Error) -> Error {
    Error::Run(format!("shared memory for the strategy ({what}): {e}"))
}

impl Shm {
    /// A new zeroed region (memfd, close-on-exec).
    pub fn create(layout: Layout) -> Result<Shm> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"iolab-strategy".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("memfd_create", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(layout.len as u64).map_err(|e| os_err("ftruncate", e))?;
        Shm::map(file, layout)
    }

    /// Maps the region of another process, given its descriptor (inherited) and layout.
    pub fn attach(fd: i32, layout: Layout) -> Result<Shm> {
        // SAFETY: the parent passed this descriptor to us for this purpose; we own it now.
        let file = unsafe { File::from_raw_fd(fd) };
        let len = file.metadata().map_err(|e| os_err("fstat", e))?.len();
        if len != layout.len as u64 {
            return Err(Error::Run(format!(
                "shared memory holds {len} bytes, the plan needs {}",
                layout.len
            )));
        }
        Shm::map(file, layout)
    }

    fn map(fd: File, layout: Layout) -> Result<Shm> {
        // SAFETY: a fresh shared mapping of the whole memfd, which is `layout.len` bytes long.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_err("mmap", std::io::Error::last_os_error()));
        }
        Ok(Shm { ptr: ptr.cast(), layout, fd })
    }

    /// The descriptor, for passing to process workers.
    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off % LINE == 0 && off + 4 <= self.layout.len);
        // SAFETY: `off` is inside the mapping and 4-byte aligned; AtomicU32 has the layout of
        // u32; the mapping lives as long as `self`.
        unsafe { &*self.ptr.add(off).cast::<AtomicU32>() }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off % LINE == 0 && off + 8 <= self.layout.len);
        // SAFETY: as in `u32_at`, 8-byte aligned.
        unsafe { &*self.ptr.add(off).cast::<AtomicU64>() }
    }

    /// Bytes each worker has written so far, summed.
    pub fn progress_total(&self) -> u64 {
        (0..self.layout.workers as usize).map(|w| self.u64_at(PROGRESS + w * LINE).load(Relaxed)).sum()
    }

    /// Waits until `ready()`, sleeping on `word` while it holds `idle` (the value that means
    /// "not ready").
    fn block_until(&self, word: &AtomicU32, idle: u32, ready: impl Fn() -> bool) -> Result<()> {
        for _ in 0..SPINS {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        loop {
            if ready() {
                return Ok(());
            }
            if self.stopped() {
                return Err(coord::stopped());
            }
            futex_wait(word, idle, NAP_NS);
        }
    }

    fn ring(&self, w: u32) -> (&AtomicU32, &AtomicU32) {
        let at = self.layout.rings_at + w as usize * 2 * LINE;
        (self.u32_at(at), self.u32_at(at + LINE))
    }

    /// Buffer `k` of worker `w`'s ring.
    ///
    /// # Safety
    /// The caller must have exclusive access to that buffer (the ring protocol gives it).
    #[allow(clippy::mut_from_ref)]
    unsafe fn slot(&self, w: u32, k: u32) -> &mut [u8] {
        let bytes = self.layout.slot_bytes[w as usize];
        let at = self.layout.slots_at[w as usize] + (k % DEPTH) as usize * bytes.next_multiple_of(PAGE);
        // SAFETY: inside the mapping (see `Layout::new`); exclusive by the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), bytes) }
    }

    /// The sending end of worker `w`'s ring.
    pub fn sender(&self, w: u32) -> ShmSender<'_> {
        ShmSender { shm: self, ring: w }
    }

    /// The receiving end of worker `w`'s ring.
    pub fn receiver(&self, w: u32) -> ShmReceiver<'_> {
        ShmReceiver { shm: self, ring: w }
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `map`; nothing borrows it any more
        // (every borrow is tied to `&self`).
        unsafe { libc::munmap(self.ptr.cast(), self.layout.len) };
    }
}

impl coord::Coord for Shm {
    fn sender(&self, ring: u32) -> Result<Box<dyn Sender + '_>> {
        Ok(Box::new(Shm::sender(self, ring)))
    }
    fn receiver(&self, r: super::plan::Receive) -> Result<Box<dyn Receiver + '_>> {
        Ok(Box::new(Shm::receiver(self, r.ring)))
    }
}

impl Group for Shm {
    fn barrier(&self) -> Result<()> {
        let (count, generation) = (self.u32_at(BAR_COUNT), self.u32_at(BAR_GEN));
        let g = generation.load(Acquire);
        if self.stopped() {
            return Err(coord::stopped());
        }
        if count.fetch_add(1, AcqRel) + 1 == self.layout.workers {
            count.store(0, Relaxed);
            generation.store(g.wrapping_add(1), Release);
            futex_wake(generation, i32::MAX);
            return Ok(());
        }
        self.block_until(generation, g, || generation.load(Acquire) != g)
    }

    fn stop(&self) {
        self.u32_at(STOP).store(1, Release);
        futex_wake(self.u32_at(BAR_GEN), i32::MAX);
        futex_wake(self.u32_at(TOKEN), i32::MAX);
        for w in 0..self.layout.workers {
            let (head, tail) = self.ring(w);
            futex_wake(head, i32::MAX);
            futex_wake(tail, i32::MAX);
        }
    }

    fn stopped(&self) -> bool {
        self.u32_at(STOP).load(Acquire) != 0
    }

    fn progress(&self, worker: u32, bytes: u64) {
        self.u64_at(PROGRESS + worker as usize * LINE).store(bytes, Relaxed);
    }
}

impl CommitOrder for Shm {
    fn begin(&self, exclusive: bool) -> Result<()> {
        if exclusive {
            let token = self.u32_at(TOKEN);
            loop {
                if token.compare_exchange(0, 1, Acquire, Relaxed).is_ok() {
                    break;
                }
                self.block_until(token, 1, || token.load(Relaxed) == 0)?;
            }
        }
        Ok(())
    }

    fn end(&self, exclusive: bool) {
        if exclusive {
            let token = self.u32_at(TOKEN);
            token.store(0, Release);
            futex_wake(token, 1);
        }
    }
}

/// The producer's end of a ring: messages numbered from 0; buffer k % DEPTH holds message k.
pub struct ShmSender<'a> {
    shm: &'a Shm,
    ring: u32,
}

impl Sender for ShmSender<'_> {
    fn buffer(&mut self) -> Result<&mut [u8]> {
        let (head, tail) = self.shm.ring(self.ring);
        // Only this end moves `head`.
        let h = head.load(Relaxed);
        let full = h.wrapping_sub(DEPTH);
        self.shm.block_until(tail, full, || h.wrapping_sub(tail.load(Acquire)) < DEPTH)?;
        // SAFETY: message h's buffer is free (the writer took message h - DEPTH) and unsent, so
        // only this end touches it until `send`.
        Ok(unsafe { self.shm.slot(self.ring, h) })
    }

    fn send(&mut self) -> Result<()> {
        let (head, _) = self.shm.ring(self.ring);
        head.fetch_add(1, Release);
        futex_wake(head, 1);
        Ok(())
    }
}

/// The writer's end of a ring.
pub struct ShmReceiver<'a> {
    shm: &'a Shm,
    ring: u32,
}

impl Receiver for ShmReceiver<'_> {
    fn wait(&mut self) -> Result<()> {
        let (head, tail) = self.shm.ring(self.ring);
        let t = tail.load(Relaxed);
        self.shm.block_until(head, t, || head.load(Acquire) != t)
    }

    fn take_into(&mut self, dst: &mut [u8]) -> Result<()> {
        let (head, tail) = self.shm.ring(self.ring);
        let t = tail.load(Relaxed);
        if head.load(Acquire) == t {
            return Err(Error::Run("hand-off: no message to take".into()));
        }
        // SAFETY: message t was sent (head > t) and not yet taken, so the producer no longer
        // touches its buffer until this end moves `tail` past it.
        let src = unsafe { self.shm.slot(self.ring, t) };
        dst.copy_from_slice(&src[..dst.len()]);
        tail.store(t.wrapping_add(1), Release);
        futex_wake(tail, 1);
        Ok(())
    }
}

/// Sleeps while `word` holds `idle`, at most `timeout_ns` (FUTEX_WAIT, shared).
pub(crate) fn futex_wait(word: &AtomicU32, idle: u32, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `word` is a live, aligned u32 (in memory shared with other processes, hence the
    // non-private futex op); `ts` is a valid relative timeout. The call only reads them.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            idle,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0,
        )
    };
}

/// Wakes up to `n` sleepers on `word` (FUTEX_WAKE, shared).
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: as in `futex_wait`; waking reads nothing but the address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n,
            std::ptr::null::<u8>(),
            std::ptr::null::<u32>(),
            0,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn the_barrier_holds_everyone_until_the_last_arrives() {
        let shm = Shm::create(Layout::new(3, vec![0; 3])).unwrap();
        let arrived = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for round in 0..50 {
                        arrived.fetch_add(1, SeqCst);
                        shm.barrier().unwrap();
                        // Nobody passes round r before all three arrived at it.
                        assert!(arrived.load(SeqCst) >= 3 * (round + 1));
                        shm.barrier().unwrap();
                    }
                });
            }
        });
        assert_eq!(arrived.load(SeqCst), 150);
    }

    #[test]
    fn the_token_admits_one_commit_at_a_time() {
        use crate::env::sys::now_ns;
        let shm = Shm::create(Layout::new(4, vec![0; 4])).unwrap();
        let spans = std::sync::Mutex::new(vec![]);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..200 {
                        shm.begin(true).unwrap();
                        let t0 = now_ns();
                        std::hint::spin_loop();
                        let t1 = now_ns();
                        shm.end(true);
                        spans.lock().unwrap().push((t0, t1));
                    }
                });
            }
        });
        let spans = spans.into_inner().unwrap();
        assert_eq!(spans.len(), 800);
        assert_eq!(crate::strategy::max_overlap(spans), 1);
        // Without the token, commits overlap (here: both begin before either ends).
        let begun = AtomicUsize::new(0);
        let spans = std::sync::Mutex::new(vec![]);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    shm.begin(false).unwrap();
                    let t0 = now_ns();
                    begun.fetch_add(1, SeqCst);
                    while begun.load(SeqCst) < 2 {
                        std::hint::spin_loop();
                    }
                    spans.lock().unwrap().push((t0, now_ns()));
                    shm.end(false);
                });
            }
        });
        assert_eq!(crate::strategy::max_overlap(spans.into_inner().unwrap()), 2);
    }

    #[test]
    fn messages_arrive_in_order_and_intact() {
        let shm = Shm::create(Layout::new(2, vec![0, 4096 + 8])).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut tx = shm.sender(1);
                for k in 0..100u32 {
                    let b = tx.buffer().unwrap();
                    b.fill(k as u8);
                    b[..4].copy_from_slice(&k.to_le_bytes());
                    tx.send().unwrap();
                }
            });
            s.spawn(|| {
                let mut rx = shm.receiver(1);
                let mut dst = vec![0u8; 4096 + 8];
                for k in 0..100u32 {
                    rx.wait().unwrap();
                    rx.take_into(&mut dst).unwrap();
                    assert_eq!(u32::from_le_bytes(dst[..4].try_into().unwrap()), k);
                    assert!(dst[4..].iter().all(|&b| b == k as u8));
                }
            });
        });
    }

    #[test]
    fn a_stop_releases_every_wait() {
        let shm = Shm::create(Layout::new(2, vec![0, 64])).unwrap();
        std::thread::scope(|s| {
            let a = s.spawn(|| shm.barrier());
            let b = s.spawn(|| shm.receiver(1).wait());
            std::thread::sleep(std::time::Duration::from_millis(30));
            shm.stop();
            assert!(a.join().unwrap().is_err());
            assert!(b.join().unwrap().is_err());
        });
    }
}
