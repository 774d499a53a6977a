//! Compute/I-O overlap strategies (Benson, Long and Pacheco 2003): workers that simulate a
//! computation (fill a buffer, then spin on the clock) and write its output, organised as one
//! of the study's strategies S1A, S1B, S2, S3, S5, with threads or processes.
//!
//! The pieces, each behind an interface so that MPI ranks can plug in later:
//! - [`roles`]: which worker computes what, who writes, who hands data to whom (pure);
//! - [`coord`]: the interfaces between roles: a group barrier, the S1B commit token, the
//!   hand-off sender and receiver; [`shm`] implements them in shared memory for threads and
//!   processes alike;
//! - [`mechanism`]: the write mechanism of a writer is an [`crate::engine::Engine`]; the S5
//!   sync thread commits through its own descriptor or mapping;
//! - [`role`]: the timed loops of the compute, writer and sync roles;
//! - [`threads`] and [`process`]: the launchers.
//!
//! Definitions (docs/strategies.md): with W workers, each iteration the program produces
//! W x bs bytes and computes W x comptime / iters seconds of CPU work, split evenly among its
//! compute workers; so the whole run writes W x iters x bs bytes (2 x iters x bs with the
//! study's two workers) and spins W x comptime seconds of CPU.

use serde::{Deserialize, Serialize};

pub mod coord;
pub mod data;
pub mod mechanism;
pub mod role;
pub mod roles;
pub mod shm;
pub mod spec;

pub use roles::{Plan, Role};

/// One of the study's parallelisation strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// Every worker computes and writes its own file, syncing on its own.
    S1A,
    /// As S1A, but only one sync is in flight at a time (a token).
    S1B,
    /// Every worker computes; worker 0 also writes everything to one file, receiving the
    /// others' buffers each iteration, and syncs.
    S2,
    /// One worker computes everything, the other writes it to one file and syncs.
    S3,
    /// As S2, but a sync thread of the writer commits, woken every sync size.
    S5,
}

impl Strategy {
    pub const NAMES: &'static [&'static str] = &["S1A", "S1B", "S2", "S3", "S5"];

    pub fn parse(s: &str) -> Option<Strategy> {
        Some(match s.to_ascii_uppercase().as_str() {
            "S1A" => Strategy::S1A,
            "S1B" => Strategy::S1B,
            "S2" => Strategy::S2,
            "S3" => Strategy::S3,
            "S5" => Strategy::S5,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Strategy::NAMES[self as usize]
    }

    /// Every worker writes its own file (else one writer writes one file).
    pub fn own_files(self) -> bool {
        matches!(self, Strategy::S1A | Strategy::S1B)
    }

    /// The study's one-line description.
    pub fn about(self) -> &'static str {
        match self {
            Strategy::S1A => "every worker computes and writes its own file, syncing on its own",
            Strategy::S1B => "as S1A, with one sync in flight at a time",
            Strategy::S2 => "all compute; worker 0 receives the others' buffers and writes one file",
            Strategy::S3 => "worker 1 computes everything; worker 0 writes it to one file",
            Strategy::S5 => "as S2, with a sync thread in the writer woken every sync size",
        }
    }
}

/// Where a role's time went, in ns, from the start barrier to its end (`times_ns` in JSON).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleTimes {
    /// Simulated computation: filling the output buffer, then spinning on the clock.
    pub compute: u64,
    /// The computation this role was asked for in all (its share of the run's compute).
    pub compute_target: u64,
    /// Inside the engine's data calls (write, writev, stores into a mapping).
    pub write: u64,
    /// Inside commit calls (fsync, fdatasync, msync).
    pub sync: u64,
    /// Moving buffers through the hand-off (taking a received buffer into the write memory).
    pub handoff: u64,
    /// Blocked: barriers, a full or empty hand-off, the S1B token, the S5 sync thread, or
    /// (sync thread) waiting for work.
    pub wait: u64,
    /// CPU time of the thread (user + system, getrusage RUSAGE_THREAD).
    pub cpu: u64,
    /// Time the thread was runnable but waiting for a CPU (the scheduler's run-queue delay,
    /// /proc/thread-self/schedstat; 0 where the kernel does not say). A role that spins is
    /// always on a CPU or waiting for one: its cpu + runq covers its compute.
    #[serde(default)]
    pub runq: u64,
}

/// What a role adds to its worker's sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleSample {
    pub role: Role,
    /// The thread that ran the role (gettid).
    pub tid: u32,
    pub times: RoleTimes,
    /// The threads that issued this role's commits (distinct, in order of first commit).
    pub commit_tids: Vec<u32>,
    /// The most commits in flight at once in the whole run (all workers).
    pub syncs_in_flight_max: u64,
}

/// Runs one phase of a strategy with the spec's launcher.
pub fn launch(
    job: &crate::worker::PhaseJob<'_>,
    monitor: &dyn crate::worker::Monitor,
) -> crate::error::Result<Vec<crate::worker::WorkerSample>> {
    match job.spec.launcher {
        crate::spec::Launcher::Thread => crate::launch::strategy_threads::run(job, monitor),
        crate::spec::Launcher::Process => crate::launch::strategy_process::run(job, monitor),
    }
}

/// The calling thread's id (gettid).
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Run-queue delay of the calling thread so far, in ns: time runnable but not running
/// (second field of /proc/thread-self/schedstat); 0 if the kernel does not keep it.
pub fn thread_runq_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in Strategy::NAMES {
            assert_eq!(Strategy::parse(n).unwrap().name(), *n);
        }
        assert_eq!(Strategy::parse("s1b"), Some(Strategy::S1B));
        assert_eq!(Strategy::parse("S4"), None);
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
