//! Test support: the tests' global allocator, which counts per thread the bytes allocated and
//! not yet freed, and the most of them at once, so that a test measures what a structure holds,
//! or what making it needed, instead of working it out.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Bytes this thread allocated less those it freed (the allocator's requests, not what
    /// malloc adds around them).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The most `LIVE` has been since [`peak_by`] last began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(bytes: isize) {
    // A thread being torn down has no counter left; what it frees then is not counted.
    let _ = LIVE.try_with(|c| {
        let live = c.get() + bytes;
        c.set(live);
        let _ = PEAK.try_with(|p| p.set(p.get().max(live)));
    });
}

struct Counting;

// SAFETY: every call goes to the system allocator unchanged, with the caller's own layout and
// pointer; the count beside it is a thread-local cell that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller keeps GlobalAlloc::alloc's contract, which System's has too.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for alloc.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from System, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from System with `layout`; the caller keeps realloc's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// What `make` leaves allocated on this thread, in bytes: what the value it returns holds
/// (its own heap, not its size in place), less what it freed of memory allocated before.
pub fn held_by<T>(make: impl FnOnce() -> T) -> (T, isize) {
    let before = LIVE.with(Cell::get);
    let value = make();
    (value, LIVE.with(Cell::get) - before)
}

/// The most `make` had allocated at once on this thread, in bytes, above what was allocated
/// when it began (not to be nested: each call starts the count again).
pub fn peak_by<T>(make: impl FnOnce() -> T) -> (T, isize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let value = make();
    (value, PEAK.with(Cell::get) - before)
}

#[test]
fn counts_what_a_value_holds() {
    let (v, held) = held_by(|| {
        let mut v: Vec<u64> = Vec::with_capacity(10);
        v.extend(0..10);
        let _scratch = vec![0u8; 4096];
        v
    });
    assert_eq!(held, 80, "the vector's 10 u64s; the scratch buffer freed");
    let (_, freed) = held_by(move || drop(v));
    assert_eq!(freed, -80);
    let (s, held) = held_by(|| {
        let mut s = String::with_capacity(4);
        s.push_str("grown past four bytes");
        s
    });
    assert_eq!(held, s.capacity() as isize, "a reallocation counts its new size only");
}

#[test]
fn counts_the_most_held_at_once() {
    let (sum, peak) = peak_by(|| {
        let a = vec![1u8; 1000];
        let b = vec![2u8; 500];
        let sum = a.len() + b.len();
        drop((a, b));
        let _c = vec![3u8; 700];
        sum
    });
    assert_eq!((sum, peak), (1500, 1500), "both vectors at once; the third came after them");
    let (_, peak) = peak_by(|| vec![0u64; 4]);
    assert_eq!(peak, 32, "each call counts from where it began");
}
