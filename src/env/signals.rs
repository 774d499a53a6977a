//! SIGINT and SIGTERM: the handler only records the signal; running phases see it before their
//! next op (or within about 50 ms through their monitor) and stop, and the steps between phases (creating files,
//! laying them out, setting the cache state) check it as they go; then iolab cleans up, keeps
//! what was measured, and exits 128 + the signal. SIGXFSZ is ignored, so a file size limit
//! shows up as a short write or EFBIG that names the file and offset, rather than a silent kill.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::error::{Error, Result};

static PENDING: AtomicI32 = AtomicI32::new(0);
/// Set with [`PENDING`]; the timed loops read it (with their own stop flag) before each op, so
/// a worker running on the thread the signal reaches stops too.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    PENDING.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Whether a stop signal has arrived (one relaxed load: cheap enough for every op).
#[inline(always)]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Installs the handlers (the binary does this once; the library never does).
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        also_stop_on(sig);
    }
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// Makes `sig` a stop signal like SIGINT and SIGTERM (rank 0 of an MPI run: SIGUSR1, which
/// mpirun passes on to its ranks, where its SIGINT and SIGTERM kill them).
pub fn also_stop_on(sig: libc::c_int) {
    // SAFETY: sigaction is plain data; we install a handler that only stores to an atomic,
    // which is async-signal-safe. No SA_RESTART, so blocking calls return EINTR promptly.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// A deadline as a stop signal (a time budget, `iolab tune`): SIGALRM becomes a stop signal
/// and arrives once `after` has passed, stopping a running phase as SIGINT does (the caller
/// tells the two apart by [`pending`]); `None` cancels a deadline not yet reached.
pub fn alarm_after(after: Option<std::time::Duration>) {
    let d = after.unwrap_or_default();
    if after.is_some() {
        also_stop_on(libc::SIGALRM);
    }
    let value = libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        // A zero value would cancel: a deadline already reached fires at once.
        tv_usec: (d.subsec_micros() as libc::suseconds_t).max(i64::from(after.is_some() && d.is_zero()) as _),
    };
    let timer = libc::itimerval { it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 }, it_value: value };
    // SAFETY: setitimer reads a valid itimerval and may write the old one, for which we pass null.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
}

/// How long a loop that tidies up (removing a work directory) goes on after a stop signal:
/// enough to finish a run's few files, so an interrupted run leaves nothing of them, and short
/// enough that a stop ends it within about a second whatever it had left.
pub const TIDY_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// A long loop's stop: `passed()` is true once a stop signal has arrived and `grace` has gone
/// by since this loop first saw it (the signal may have come before the loop began).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    grace: std::time::Duration,
    at: Option<std::time::Instant>,
}

impl Deadline {
    pub fn after(grace: std::time::Duration) -> Deadline {
        Deadline { grace, at: None }
    }

    /// Whether the loop should stop now (one relaxed load while no signal came).
    #[inline]
    pub fn passed(&mut self) -> bool {
        if !stop_requested() {
            return false;
        }
        let now = std::time::Instant::now();
        now >= *self.at.get_or_insert(now + self.grace)
    }
}

impl Default for Deadline {
    /// A tidying loop's: [`TIDY_GRACE`].
    fn default() -> Deadline {
        Deadline::after(TIDY_GRACE)
    }
}

/// The signal received, if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// `Err(Interrupted)` once a stop signal has arrived: for the steps between phases.
pub fn check() -> Result<()> {
    match pending() {
        Some(sig) => Err(Error::Interrupted(sig)),
        None => Ok(()),
    }
}

/// Files a stop signal removes before the process ends ([`exit_on_stop`]): the temporary
/// files of outputs not yet complete.
static REMOVE_ON_STOP: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Registers a file for [`exit_on_stop`] to remove.
pub fn remove_on_stop(path: &std::path::Path) {
    REMOVE_ON_STOP.lock().unwrap_or_else(|e| e.into_inner()).push(path.to_path_buf());
}

/// Unregisters a file (it is complete, or removed already).
pub fn keep_on_stop(path: &std::path::Path) {
    REMOVE_ON_STOP.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| p != path);
}

/// For commands that only read and print (report, plot, results show/list/export/trace/
/// compare/strategies, info), which have nothing to keep or clean up but their unfinished
/// outputs: a watcher thread that, within [`WATCH_POLL`] of a stop signal, removes those and
/// ends the process with 128 + the signal, whatever the command was doing (an SQLite query, a
/// figure being drawn).
pub fn exit_on_stop() {
    let _ = std::thread::Builder::new().name("stop-watch".into()).spawn(|| {
        let _blocked = Blocked::new();
        loop {
            if let Some(sig) = pending() {
                let files = std::mem::take(&mut *REMOVE_ON_STOP.lock().unwrap_or_else(|e| e.into_inner()));
                for f in files {
                    let _ = std::fs::remove_file(f);
                }
                eprintln!("error: {}", Error::Interrupted(sig));
                std::process::exit(128 + sig);
            }
            std::thread::sleep(WATCH_POLL);
        }
    });
}

/// How often the watcher of [`exit_on_stop`] looks for a stop signal.
pub const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Blocks the stop signals (SIGINT, SIGTERM, SIGUSR1) in the calling thread while alive, so threads spawned meanwhile
/// inherit the block; restores the previous mask on drop.
pub struct Blocked {
    old: libc::sigset_t,
}

impl Blocked {
    pub fn new() -> Blocked {
        // SAFETY: sigset_t is plain data initialised by sigemptyset/sigaddset; pthread_sigmask
        // only reads `set` and writes `old`, both valid for the call.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked { old }
        }
    }
}

impl Default for Blocked {
    fn default() -> Self {
        Blocked::new()
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`; `old` is a valid sigset_t.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}
