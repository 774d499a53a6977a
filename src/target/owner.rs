//! Who made a work directory, and whether it may still be running, judged from the process
//! that asks: a pid means something only in the PID namespace it was taken in, and a start
//! time only with the boot-time offset of the time namespace it was read in. A process in
//! another PID namespace is never judged gone by a pid lookup here: it is looked for among the
//! processes of that namespace, and judged gone only when every process of the machine can be
//! seen from here and it is not one of them.

use std::fs;

/// The inode of the machine's first PID namespace (the kernel's PROC_PID_INIT_INO): a process
/// in it sees every process of the machine in /proc.
const INIT_PID_NS: u64 = 0xEFFF_FFFC;

/// A process, identified well enough to tell later whether it still runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Owner {
    pub host: String,
    /// /proc/sys/kernel/random/boot_id: a pid from another boot is certainly gone.
    pub boot_id: String,
    pub pid: u32,
    /// Start time of the pid in clock ticks after boot (/proc/PID/stat field 22), so a reused
    /// pid is not mistaken for the owner; as read in its own time namespace.
    pub pid_start: u64,
    /// The inode of its PID namespace (/proc/self/ns/pid), in which `pid` is its number; 0 in
    /// a marker of an iolab that did not record it (taken as the reader's own namespace).
    pub pid_ns: u64,
    /// The boot-time offset of its time namespace (/proc/self/timens_offsets), in ns, which
    /// every start time it read is shifted by.
    pub boottime_offset_ns: i64,
}

/// Whether the process that made a work directory may still be using it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerState {
    /// The same process is running on this host: the directory is in use.
    Running,
    /// The process is gone (it ended, crashed, or the machine rebooted).
    Gone,
    /// Made on another host (a shared file system): iolab cannot tell.
    OtherHost(String),
    /// Made in a PID namespace this process cannot see all of: it may still run (the reason).
    Unknown(String),
}

fn read_trim(p: &str) -> String {
    fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Start time (field 22 of /proc/PID/stat) of a running pid; `None` once it has ended, even
/// while its entry stays as a zombie (state Z or X, field 3) until its parent reaps it: a
/// rank killed under mpirun stays one until the launcher's orphans are reaped.
pub(super) fn pid_start_time(pid: u32) -> Option<u64> {
    let stat = crate::env::sys::read_kernel_file(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: split after the last `)`.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(rest.next()?, "Z" | "X") {
        return None;
    }
    rest.nth(18)?.parse().ok()
}

/// The inode of the PID namespace a `/proc/.../ns/pid` link names (`pid:[4026531836]`).
fn ns_inode(link: &std::path::Path) -> std::io::Result<u64> {
    let target = fs::read_link(link)?;
    let s = target.to_string_lossy();
    s.strip_prefix("pid:[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("unexpected namespace link {s}")))
}

/// The boot-time offset of this process's time namespace in ns (0 without time namespaces).
fn boottime_offset_ns() -> i64 {
    let text = crate::env::sys::read_kernel_file("/proc/self/timens_offsets").unwrap_or_default();
    parse_boottime_offset(&text)
}

fn parse_boottime_offset(text: &str) -> i64 {
    let line = text.lines().find(|l| l.split_whitespace().next() == Some("boottime"));
    let mut f = line.into_iter().flat_map(|l| l.split_whitespace().skip(1));
    let (s, ns) =
        (f.next().and_then(|x| x.parse::<i64>().ok()), f.next().and_then(|x| x.parse::<i64>().ok()));
    s.unwrap_or(0).saturating_mul(1_000_000_000).saturating_add(ns.unwrap_or(0))
}

/// Clock ticks per second, the unit of /proc/PID/stat's start time.
fn ticks_per_s() -> i64 {
    // SAFETY: sysconf takes a constant and has no other effect.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t } else { 100 }
}

/// What a search of another PID namespace found.
enum Search {
    /// A process of that namespace with the owner's pid there: its start time (None: a zombie).
    Found(Option<u64>),
    /// No such process, and every process of the machine was seen.
    Absent,
    /// No such process among those this process could see; the reason it cannot see all.
    Unseen(String),
}

/// Looks for the process numbered `pid` in PID namespace `ns` among every process /proc shows
/// here (its number there is the last of the `NSpid` line of its status).
fn search(ns: u64, pid: u32, me: &Owner) -> Search {
    let ours = fs::read_link("/proc/self").ok().and_then(|p| p.to_string_lossy().parse::<u32>().ok());
    let mut unseen = if me.pid_ns != INIT_PID_NS {
        Some(format!(
            "this process runs in PID namespace pid:[{}], which does not see every process",
            me.pid_ns
        ))
    } else if ours != Some(std::process::id()) {
        Some("/proc here is not this process's PID namespace's".to_string())
    } else {
        None
    };
    let Ok(dir) = fs::read_dir("/proc") else {
        return Search::Unseen("/proc cannot be read".into());
    };
    let full_view = unseen.is_none();
    for e in dir.filter_map(|e| e.ok()) {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(status) = crate::env::sys::read_kernel_file(format!("/proc/{p}/status")) else { continue };
        // Its pid in each namespace from the first one down: one number, in a full view, is a
        // process of the first namespace, which is not the owner's (its link may be unreadable:
        // a process this one may not trace).
        let nspid: Vec<u32> = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .map(|l| l.split_whitespace().filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default();
        if full_view && nspid.len() == 1 {
            continue;
        }
        match ns_inode(&e.path().join("ns/pid")) {
            Ok(i) if i == ns => {}
            Ok(_) => continue,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                unseen.get_or_insert(format!("the PID namespace of process {p} cannot be read ({err})"));
                continue;
            }
        }
        if nspid.last() == Some(&pid) {
            return Search::Found(pid_start_time(p));
        }
    }
    match unseen {
        Some(why) => Search::Unseen(why),
        None => Search::Absent,
    }
}

impl Owner {
    /// This process: read once per process (every run's work directory names it), again only
    /// in a forked child, whose pid differs.
    pub fn current() -> Owner {
        static CURRENT: std::sync::Mutex<Option<Owner>> = std::sync::Mutex::new(None);
        let pid = std::process::id();
        let mut cached = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
        match cached.as_ref() {
            Some(o) if o.pid == pid => o.clone(),
            _ => {
                let o = Owner {
                    host: read_trim("/proc/sys/kernel/hostname"),
                    boot_id: read_trim("/proc/sys/kernel/random/boot_id"),
                    pid,
                    pid_start: pid_start_time(pid).unwrap_or(0),
                    pid_ns: ns_inode(std::path::Path::new("/proc/self/ns/pid")).unwrap_or(0),
                    boottime_offset_ns: boottime_offset_ns(),
                };
                *cached = Some(o.clone());
                o
            }
        }
    }

    /// Whether `seen`, a start time read here, is this owner's start time: both taken back to
    /// the machine's boot clock by their time namespaces' offsets (within a tick when an
    /// offset is not a whole number of ticks, erring toward a match: a running owner).
    fn started_at(&self, seen: u64, me: &Owner) -> bool {
        let tick_ns = 1_000_000_000 / ticks_per_s();
        let whole = self.boottime_offset_ns % tick_ns == 0 && me.boottime_offset_ns % tick_ns == 0;
        let want = self.pid_start as i128 - (self.boottime_offset_ns / tick_ns) as i128;
        let got = seen as i128 - (me.boottime_offset_ns / tick_ns) as i128;
        if whole { want == got } else { (want - got).abs() <= 1 }
    }

    /// Whether this owner may still be running, judged from `me` (this process).
    pub fn state(&self, me: &Owner) -> OwnerState {
        if self.host != me.host {
            return OwnerState::OtherHost(self.host.clone());
        }
        if !self.boot_id.is_empty() && self.boot_id != me.boot_id {
            return OwnerState::Gone;
        }
        if self.pid_ns == 0 || self.pid_ns == me.pid_ns {
            return match pid_start_time(self.pid) {
                Some(t) if self.started_at(t, me) => OwnerState::Running,
                _ => OwnerState::Gone,
            };
        }
        // Another PID namespace: its pid numbers mean nothing here.
        match search(self.pid_ns, self.pid, me) {
            Search::Found(Some(t)) if self.started_at(t, me) => OwnerState::Running,
            Search::Found(_) | Search::Absent => OwnerState::Gone,
            Search::Unseen(why) => OwnerState::Unknown(format!(
                "it ran in PID namespace pid:[{}], whose processes cannot all be seen from here ({why})",
                self.pid_ns
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that has exited but is not yet reaped is gone, though its /proc entry remains;
    /// while it runs it is running.
    #[test]
    fn a_zombie_owner_is_gone() {
        let me = Owner::current();
        let mut child = std::process::Command::new("sleep").arg("0.2").spawn().unwrap();
        let owner = Owner { pid: child.id(), pid_start: pid_start_time(child.id()).unwrap(), ..me.clone() };
        assert_eq!(owner.state(&me), OwnerState::Running);
        let stat = || fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        let zombie = |s: String| s[s.rfind(')').unwrap() + 1..].split_whitespace().next() == Some("Z");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !zombie(stat()) {
            assert!(std::time::Instant::now() < deadline, "the child never exited: {}", stat());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(owner.state(&me), OwnerState::Gone);
        child.wait().unwrap();
        assert_eq!(owner.state(&me), OwnerState::Gone);
    }

    /// A start time read in a time namespace shifted by 100,000 s is this process's own once
    /// the offsets are taken off; read without them it would be another process's.
    #[test]
    fn start_times_are_compared_on_the_boot_clock() {
        let me = Owner::current();
        let tick = ticks_per_s() as u64;
        let shifted = Owner {
            pid_start: me.pid_start + 100_000 * tick,
            boottime_offset_ns: me.boottime_offset_ns + 100_000_000_000_000,
            ..me.clone()
        };
        assert_eq!(shifted.state(&me), OwnerState::Running);
        let unshifted = Owner { boottime_offset_ns: me.boottime_offset_ns, ..shifted.clone() };
        assert_eq!(unshifted.state(&me), OwnerState::Gone);
        assert_eq!(parse_boottime_offset("monotonic 0 0\nboottime 100000 5\n"), 100_000_000_000_005);
        assert_eq!(parse_boottime_offset(""), 0);
    }

    /// An owner in a PID namespace that no process is in any more (or never was) is gone only
    /// when every process can be seen; from a namespace that cannot, it may still run.
    #[test]
    fn an_owner_in_another_pid_namespace_is_looked_for_there() {
        let me = Owner::current();
        let elsewhere = Owner { pid_ns: 1, pid: 1, ..me.clone() };
        let from_a_child_namespace = Owner { pid_ns: 7, ..me.clone() };
        match elsewhere.state(&from_a_child_namespace) {
            OwnerState::Unknown(why) => assert!(why.contains("pid:[1]") && why.contains("pid:[7]"), "{why}"),
            other => panic!("{other:?}"),
        }
        if me.pid_ns == INIT_PID_NS {
            assert_eq!(elsewhere.state(&me), OwnerState::Gone, "no process is in namespace 1");
        }
    }
}
