//! The simulated hosts (`tests/hosts.sh`) from the tests. One test at a time uses them: a test
//! holds an exclusive flock on the hosts' lock file from before `up` to after `down`, which
//! excludes other test processes (nextest runs each test in its own), other threads (each
//! takes its own open file) and anyone running the script by hand; the script, called under
//! it with IOLAB_HOSTS_LOCK naming the held descriptor, does not wait for it again.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use crate::util::stderr;

/// The lock file `tests/hosts.sh` takes (outside its state directory, which `down` removes).
const LOCK: &str = "/var/tmp/iolab-hosts.lock";

/// `PID:FD` of the lock this process holds, for the script's calls.
static MARK: Mutex<Option<String>> = Mutex::new(None);

/// The hosts' lock, held until dropped.
pub(crate) struct HostsLock {
    _file: File,
}

impl HostsLock {
    /// Waits for the lock (other tests using the hosts finish first).
    pub(crate) fn take() -> HostsLock {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(LOCK).unwrap();
        loop {
            // SAFETY: flock on a descriptor this File owns; no memory is passed.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "flock {LOCK}: {e}");
        }
        *MARK.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(format!("{}:{}", std::process::id(), file.as_raw_fd()));
        HostsLock { _file: file }
    }
}

impl Drop for HostsLock {
    fn drop(&mut self) {
        *MARK.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The script with the lock this process holds (if any) named in its environment.
pub(crate) fn hosts_command() -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosts.sh");
    let mut c = Command::new("timeout");
    c.arg("240").arg("bash").arg(script);
    if let Some(mark) = MARK.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        c.env("IOLAB_HOSTS_LOCK", mark);
    }
    c
}

/// `tests/hosts.sh` with `args`; None when it says the simulated hosts cannot be made here
/// (exit 77: not root, no namespaces).
pub(crate) fn hosts_sh(args: &[&str], cwd: &Path) -> Option<Output> {
    let o = hosts_command().args(args).current_dir(cwd).output().unwrap();
    if o.status.code() == Some(77) {
        eprintln!("{}", stderr(&o).trim());
        return None;
    }
    Some(o)
}

/// The simulated hosts, up, for one test: holds the lock, takes them down when dropped
/// (however the test ends), then lets the lock go.
pub(crate) struct Hosts {
    _lock: HostsLock,
}

impl Hosts {
    /// Waits for the lock and brings the hosts up, with the distributed file systems named
    /// (`moosefs`, `glusterfs`: `tests/hosts.sh up --fs NAME`) over them; None (after a
    /// `skip:` line) where they cannot be had (not root, no namespaces, no FUSE, no packages).
    /// `up` is asserted to succeed.
    pub(crate) fn up_with(cwd: &Path, file_systems: &[&str]) -> Option<Hosts> {
        Hosts::up_all(cwd, file_systems, false)
    }

    /// As [`Hosts::up_with`], and a Slurm cluster over the hosts (`tests/hosts.sh up --slurm`:
    /// slurmctld on h1, slurmd and munged on every host).
    #[cfg(feature = "mpi")]
    pub(crate) fn up_with_slurm(cwd: &Path, file_systems: &[&str]) -> Option<Hosts> {
        Hosts::up_all(cwd, file_systems, true)
    }

    fn up_all(cwd: &Path, file_systems: &[&str], slurm: bool) -> Option<Hosts> {
        let lock = HostsLock::take();
        // Down however `up` ends, skipped or not: it may have made the hosts before skipping.
        let hosts = Hosts { _lock: lock };
        let mut args = vec!["up"];
        for f in file_systems {
            args.extend(["--fs", f]);
        }
        if slurm {
            args.push("--slurm");
        }
        let up = hosts_sh(&args, cwd)?;
        assert!(up.status.success(), "{}", stderr(&up));
        Some(hosts)
    }
}

/// What `cmd` prints on `host` (a shell line there), asserted to succeed.
pub(crate) fn on(host: &str, cmd: &str) -> String {
    String::from_utf8_lossy(&on_bytes(host, cmd)).into_owned()
}

/// As [`on`], its bytes.
pub(crate) fn on_bytes(host: &str, cmd: &str) -> Vec<u8> {
    let o = hosts_sh(&["run", host, cmd], Path::new("/")).expect("the hosts are up");
    assert!(o.status.success(), "{host}: {cmd}: {}", stderr(&o));
    o.stdout
}

/// Bytes the processes whose PIDs `tests/hosts.sh` keeps in `pid_files` (under its state
/// directory) have read so far, by /proc/PID/io's `rchar`: a file system's servers (MooseFS
/// chunkservers, GlusterFS bricks) read every byte they serve.
pub(crate) fn servers_read_bytes(pid_files: &[String]) -> u64 {
    pid_files
        .iter()
        .map(|f| {
            let path = Path::new("/var/tmp/iolab-hosts/fs").join(f);
            let pid = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let io = std::fs::read_to_string(format!("/proc/{}/io", pid.trim())).unwrap();
            let line = io.lines().find(|l| l.starts_with("rchar:")).unwrap();
            line[6..].trim().parse::<u64>().unwrap()
        })
        .sum()
}

impl Drop for Hosts {
    fn drop(&mut self) {
        hosts_sh(&["down"], Path::new("/"));
    }
}
