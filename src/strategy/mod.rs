//! Compute/I-O overlap strategies (Benson, Long and Pacheco 2003): workers that simulate a
//! computation (fill a buffer, then spin on the clock) and write its output, organised as one
//! of the study's strategies S1A, S1B, S2, S3, S5, with threads or processes.
//!
//! The pieces, each behind an interface so that MPI ranks can plug in later:
//! - [`plan`]: which worker computes what, who writes, who hands data to whom (pure);
//! - [`coord`]: the interfaces between roles: a group barrier, the S1B commit token, the
//!   hand-off sender and receiver; [`shm`] implements them in shared memory for threads and
//!   processes alike;
//! - [`mechanism`]: the write mechanism of a writer is an [`crate::engine::Engine`]; the S5
//!   sync thread commits through its own descriptor or mapping;
//! - [`loops`]: the timed loops of the compute, writer and sync roles;
//! - [`crate::launch::strategy_threads`] and [`crate::launch::strategy_process`]: the launchers.
//!
//! Definitions (docs/strategies.md): with W workers, each iteration the program produces
//! W x bs bytes and computes W x comptime / iters seconds of CPU work, split evenly among its
//! compute workers; so the whole run writes W x iters x bs bytes (2 x iters x bs with the
//! study's two workers) and spins W x comptime seconds of CPU.

pub mod coord;
pub mod data;
pub mod loops;
pub mod mechanism;
pub mod plan;
pub mod shm;
pub mod sync_thread;

pub use crate::spec::strategy::{Role, Strategy};
use crate::worker::WorkerSample;
pub use crate::worker::{RoleSample, RoleTimes};
pub use plan::Plan;

/// The calling thread's id (gettid).
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Run-queue delay of the calling thread so far, in ns: time runnable but not running
/// (second field of /proc/thread-self/schedstat); 0 if the kernel does not keep it.
pub fn thread_runq_ns() -> u64 {
    crate::env::sys::read_kernel_file("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// CPU time of the calling thread, user + system, in ns (getrusage RUSAGE_THREAD).
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: rusage is plain data, filled by the call.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The most commits in flight at once among `spans` (start, end on one clock; a span that ends
/// when another starts does not overlap it).
pub fn max_overlap(spans: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut events: Vec<(u64, i64)> = spans.into_iter().flat_map(|(a, b)| [(a, 1), (b, -1)]).collect();
    // Ends before starts at the same instant.
    events.sort_unstable();
    let (mut n, mut max) = (0i64, 0i64);
    for (_, d) in events {
        n += d;
        max = max.max(n);
    }
    max as u64
}

/// Tells every role sample the run's most commits in flight at once, from the commit spans the
/// roles recorded, which it then drops: over all workers on one clock (threads, processes of
/// one machine), and on MPI ranks the most on any one host (each host has its own clock).
pub fn count_in_flight(samples: &mut [WorkerSample]) {
    let mut by_host: std::collections::BTreeMap<Option<std::sync::Arc<str>>, Vec<(u64, u64)>> =
        Default::default();
    for s in samples.iter_mut() {
        let host = s.place.as_ref().map(|p| p.host.clone());
        if let Some(r) = s.role.as_mut() {
            by_host.entry(host).or_default().append(&mut r.commit_spans_ns);
        }
    }
    let max = by_host.into_values().map(max_overlap).max().unwrap_or(0);
    for r in samples.iter_mut().filter_map(|s| s.role.as_mut()) {
        r.syncs_in_flight_max = max;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_spans_are_counted_touching_ones_not() {
        assert_eq!(max_overlap([]), 0);
        assert_eq!(max_overlap([(0, 10), (10, 20), (20, 30)]), 1);
        assert_eq!(max_overlap([(0, 10), (5, 20), (6, 7), (19, 30)]), 3);
    }

    #[test]
    fn names_round_trip() {
        for n in Strategy::NAMES {
            assert_eq!(Strategy::parse(n).unwrap().name(), *n);
        }
        assert_eq!(Strategy::parse("s1b"), Some(Strategy::S1B));
        assert_eq!(Strategy::parse("S4"), None);
        // A worker's role: its name in JSON and in the store, read back by that name.
        for r in crate::spec::strategy::Role::ALL {
            assert_eq!(crate::json::to_string(&r).unwrap(), format!("\"{}\"", r.name()));
            assert_eq!(crate::spec::strategy::Role::named(r.name()), Some(r));
        }
        assert_eq!(crate::spec::strategy::Role::named("writer"), None);
    }

    #[test]
    fn thread_cpu_time_counts_spinning_not_sleeping() {
        let t0 = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(60));
        let slept = thread_cpu_ns() - t0;
        let t1 = thread_cpu_ns();
        let end = crate::env::sys::now_ns() + 60_000_000;
        while crate::env::sys::now_ns() < end {
            std::hint::spin_loop();
        }
        let spun = thread_cpu_ns() - t1;
        assert!(slept < 20_000_000, "sleeping took {slept} ns of CPU");
        assert!(spun > slept, "spinning took {spun} ns of CPU, sleeping {slept}");
    }
}
