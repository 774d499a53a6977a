//! Memory the machine can give a run now: MemAvailable from /proc/meminfo, or less where the
//! memory cgroup this process runs in (v1 or v2, and every cgroup above it) leaves less room.

use std::path::{Path, PathBuf};

/// Memory available now, and where the figure comes from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Available {
    pub bytes: u64,
    pub source: String,
}

/// A cgroup limit at or above this is "no limit" (v1 reports 2^63 rounded down to a page).
const NO_LIMIT: u64 = 1 << 60;

/// How long a reading of [`available`] is reused (resolving a sweep of many points asks once
/// per point).
const FRESH: std::time::Duration = std::time::Duration::from_millis(500);

/// The memory this process can take now: the smaller of MemAvailable and the room left under
/// its cgroups' memory limits (read at most every [`FRESH`]). `None` when /proc/meminfo cannot
/// be read.
pub fn available() -> Option<Available> {
    static LAST: std::sync::Mutex<Option<(std::time::Instant, Option<Available>)>> =
        std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((at, a)) = last.as_ref()
        && at.elapsed() < FRESH
    {
        return a.clone();
    }
    let read = || {
        let meminfo = super::sys::read_kernel_file("/proc/meminfo").ok()?;
        let cgroups = super::sys::read_kernel_file("/proc/self/cgroup").unwrap_or_default();
        available_in(&meminfo, &cgroups, Path::new("/sys/fs/cgroup"))
    };
    let a = read();
    *last = Some((std::time::Instant::now(), a.clone()));
    a
}

/// [`available`] from the text of /proc/meminfo and /proc/self/cgroup and the cgroup file
/// systems mounted under `root`.
pub fn available_in(meminfo: &str, cgroups: &str, root: &Path) -> Option<Available> {
    let avail = meminfo_field(meminfo, "MemAvailable:")?;
    let mut best = Available { bytes: avail, source: "MemAvailable in /proc/meminfo".into() };
    if let Some((room, dir)) = cgroup_room(cgroups, root)
        && room < best.bytes
    {
        best = Available { bytes: room, source: format!("the memory limit of cgroup {}", dir.display()) };
    }
    Some(best)
}

/// A `Name:  N kB` field of /proc/meminfo, in bytes.
pub fn meminfo_field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok()?.checked_mul(1024)
}

/// The least room (limit minus what is used and cannot be reclaimed at once, i.e. minus the
/// inactive page cache) over the memory cgroups of this process and their ancestors, and the
/// directory that gives it; `None` where no cgroup limits memory.
fn cgroup_room(cgroups: &str, root: &Path) -> Option<(u64, PathBuf)> {
    let mut best: Option<(u64, PathBuf)> = None;
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else { continue };
        let (base, v2) = if controllers.is_empty() {
            (root.to_path_buf(), true)
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), false)
        } else {
            continue;
        };
        // The cgroup and each one above it, up to the mount's root (which, in a cgroup
        // namespace, is the process's own cgroup).
        let mut rel = PathBuf::from(path.trim_start_matches('/'));
        loop {
            let dir = base.join(&rel);
            if let Some(room) = room_in(&dir, v2)
                && best.as_ref().is_none_or(|(b, _)| room < *b)
            {
                best = Some((room, dir));
            }
            if !rel.pop() {
                break;
            }
        }
    }
    best
}

/// The room left in one cgroup directory, if it limits memory.
fn room_in(dir: &Path, v2: bool) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let num = |name: &str| read(name)?.trim().parse::<u64>().ok();
    let (limit, usage) = if v2 {
        (num("memory.max")?, num("memory.current")?)
    } else {
        (num("memory.limit_in_bytes")?, num("memory.usage_in_bytes")?)
    };
    if limit >= NO_LIMIT {
        return None;
    }
    let stat = read("memory.stat").unwrap_or_default();
    let field = |k: &str| {
        stat.lines().find_map(|l| {
            l.strip_prefix(k).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse::<u64>().ok())
        })
    };
    let inactive = if v2 {
        field("inactive_file")
    } else {
        field("total_inactive_file").or_else(|| field("inactive_file"))
    };
    Some(limit.saturating_sub(usage.saturating_sub(inactive.unwrap_or(0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str =
        "MemTotal:       24683656 kB\nMemFree:         1000000 kB\nMemAvailable:   23352068 kB\n";

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn mem_available_without_a_cgroup_limit() {
        let t = tempfile::tempdir().unwrap();
        let a = available_in(MEMINFO, "0::/\n", t.path()).unwrap();
        assert_eq!(a.bytes, 23_352_068 * 1024);
        assert_eq!(a.source, "MemAvailable in /proc/meminfo");
        assert_eq!(available_in("MemTotal: 5 kB\n", "", t.path()), None);
    }

    /// A v1 memory cgroup under a parent: the parent's unlimited, the child's 1 GiB with
    /// 700 MiB used of which 200 MiB is inactive page cache: 1024 - 500 = 524 MiB of room.
    #[test]
    fn a_v1_cgroup_limit_below_mem_available_wins() {
        let t = tempfile::tempdir().unwrap();
        let m = t.path().join("memory");
        write(&m.join("memory.limit_in_bytes"), "9223372036854771712\n");
        write(&m.join("memory.usage_in_bytes"), "1000\n");
        let c = m.join("jobs/a");
        write(&c.join("memory.limit_in_bytes"), &format!("{}\n", 1u64 << 30));
        write(&c.join("memory.usage_in_bytes"), &format!("{}\n", 700u64 << 20));
        write(
            &c.join("memory.stat"),
            &format!("cache 5\ninactive_file 1\ntotal_inactive_file {}\n", 200u64 << 20),
        );
        let a = available_in(MEMINFO, "4:memory:/jobs/a\n1:cpu:/\n", t.path()).unwrap();
        assert_eq!(a.bytes, 524 << 20);
        assert_eq!(a.source, format!("the memory limit of cgroup {}", c.display()));
    }

    /// v2: the tighter of a cgroup and its parent counts; "max" is no limit.
    #[test]
    fn a_v2_parent_limit_counts_too() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("svc");
        write(&p.join("memory.max"), &format!("{}\n", 2u64 << 30));
        write(&p.join("memory.current"), &format!("{}\n", 1u64 << 30));
        write(&p.join("memory.stat"), "anon 5\ninactive_file 0\n");
        let c = p.join("job");
        write(&c.join("memory.max"), "max\n");
        write(&c.join("memory.current"), "4096\n");
        let a = available_in(MEMINFO, "0::/svc/job\n", t.path()).unwrap();
        assert_eq!(a.bytes, 1 << 30);
        assert!(a.source.ends_with("svc"), "{}", a.source);
    }
}
