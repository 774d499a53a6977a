//! Host and storage facts recorded with every result: machine, kernel, CPU, memory, and for each
//! target its file system, mount options and backing device.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env::netfs::{self, ClientCache, FsIdentity};
use crate::error::{Error, Result};

/// The machine a result was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Stable identity: /etc/machine-id if present, else the hostname.
    pub host_id: String,
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    /// The machine's online CPUs (not the affinity of this process).
    pub cpus: u32,
    pub cpu_mhz: f64,
    /// The memory iolab could use ([`ram_bytes`]: MemTotal, or a lower cgroup limit), which
    /// `xRAM` sizes were relative to.
    pub mem_bytes: u64,
    pub iolab_version: String,
    pub git_rev: String,
    pub targets: Vec<TargetFacts>,
    /// The Slurm job the run was part of, as rank 0 saw it (None outside one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmJob>,
}

/// A Slurm job, from the variables Slurm sets in its processes (`launch::slurm`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlurmJob {
    pub job_id: String,
    /// The job step the ranks ran as (`srun`); None in the batch script itself or under an
    /// `mpirun` of the allocation (whose ranks are no step's tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The step's nodes (`h[1-3]`), else the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_list: Option<String>,
    /// The step's tasks per node (`2(x3)`), else the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_per_node: Option<String>,
    /// srun's MPI plugin, when srun started the ranks itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_plugin: Option<String>,
}

impl SlurmJob {
    /// In words: `job 42 step 0 on cluster iolab, partition main, nodes h[1-3], 2(x3) tasks per node, srun --mpi=pmix`.
    pub fn describe(&self) -> String {
        let mut s = format!("job {}", self.job_id);
        if let Some(st) = &self.step_id {
            s += &format!(" step {st}");
        }
        let mut rest = vec![];
        if let Some(c) = &self.cluster {
            rest.push(format!("cluster {c}"));
        }
        if let Some(p) = &self.partition {
            rest.push(format!("partition {p}"));
        }
        if let Some(n) = &self.node_list {
            rest.push(format!("nodes {n}"));
        }
        if let Some(t) = &self.tasks_per_node {
            rest.push(format!("{t} tasks per node"));
        }
        if let Some(m) = &self.mpi_plugin {
            rest.push(format!("started by srun --mpi={m}"));
        }
        if !rest.is_empty() {
            s += &format!(": {}", rest.join(", "));
        }
        s
    }
}

/// One target directory and the storage under it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetFacts {
    pub dir: PathBuf,
    pub fs_type: String,
    pub mount_point: String,
    pub mount_options: String,
    /// Block device holding the file system (whole disk, not the partition), if any.
    pub device: Option<String>,
    pub device_model: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub read_ahead_kb: Option<u64>,
    pub logical_block_bytes: Option<u64>,
    /// Offset and length alignment O_DIRECT needs here.
    pub direct_io_align_bytes: u64,
    /// The mount's source as mountinfo gives it: a device, `mfs#10.0.0.1:9421`, `h1:pfs`.
    #[serde(default)]
    pub mount_source: String,
    /// The file system as its users know it (empty in results stored before it was kept).
    #[serde(default)]
    pub fs: FsIdentity,
    /// What the file system's client keeps of files' data beside the kernel's pages, which a
    /// cold read's eviction does not reach (None: nothing iolab knows of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cache: Option<ClientCache>,
    /// What iolab learned of the file system client's configuration and from where, or that it
    /// could not (ceph-fuse: its object cacher, from its admin socket or command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_config: Option<String>,
    /// What the file system says of placement in the directory: MooseFS's goal and chunk
    /// size, GlusterFS's bricks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
}

impl TargetFacts {
    /// The file system as its users know it, in words (`moosefs (fuse) via mfs#10.0.0.1:9421,
    /// a network file system`); the kernel's type for results stored before that was kept.
    pub fn fs_described(&self) -> String {
        if self.fs.name.is_empty() { self.fs_type.clone() } else { self.fs.describe() }
    }

    /// The file system's name (`moosefs`, `ext4`).
    pub fn fs_name(&self) -> &str {
        if self.fs.name.is_empty() { &self.fs_type } else { &self.fs.name }
    }
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// MemTotal from /proc/meminfo, in bytes.
pub fn mem_total_bytes() -> Option<u64> {
    let text = super::sys::read_kernel_file("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The variable that sets the memory size iolab assumes (for tests, and for planning a run
/// for another machine): a size, `25276510208` or `24GiB`.
pub const RAM_ENV: &str = "IOLAB_RAM_BYTES";

/// The memory this process can use, which `xRAM` sizes are relative to: $IOLAB_RAM_BYTES if
/// set, else MemTotal, or the memory limit of this process's cgroup when that is lower (the
/// page cache is charged to the cgroup, so a limit bounds the cache a run can fill).
/// `Ok(None)` when none of these can be read; an error names a bad $IOLAB_RAM_BYTES.
pub fn ram_bytes() -> Result<Option<u64>> {
    if let Some(v) = std::env::var_os(RAM_ENV).filter(|v| !v.is_empty()) {
        let v = v.to_string_lossy();
        return match crate::units::parse_abs_size(&v) {
            Ok(0) => Err(Error::spec(RAM_ENV, &v, "must be positive")),
            Ok(n) => Ok(Some(n)),
            Err(_) if crate::units::is_ram_relative(&v) => Err(Error::spec(
                RAM_ENV,
                &v,
                "takes an absolute size (it sets the memory that xRAM sizes are relative to), e.g. 24GiB",
            )),
            Err(e) => Err(Error::spec(RAM_ENV, &v, e.0)),
        };
    }
    let total = mem_total_bytes();
    let limit = cgroup_memory_limit(
        Path::new("/"),
        &super::sys::read_kernel_file("/proc/self/cgroup").unwrap_or_default(),
        &super::sys::read_kernel_file("/proc/self/mountinfo").unwrap_or_default(),
    );
    Ok(match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    })
}

/// Limits at or above this are "no limit" (cgroup v1 writes one just below 2^63).
const NO_LIMIT: u64 = 1 << 62;

/// The lowest memory limit on this process's cgroup and its ancestors, cgroup v2
/// (`memory.max`) or v1 (`memory.limit_in_bytes`), from the texts of /proc/self/cgroup and
/// /proc/self/mountinfo; `root` is prepended to mount points (`/`, or a test's directory).
fn cgroup_memory_limit(root: &Path, cgroup: &str, mountinfo: &str) -> Option<u64> {
    let mut best: Option<u64> = None;
    for m in super::mountinfo::parse(mountinfo) {
        let (mount_root, mount_point) = (m.root, m.mount_point);
        let (file, path) = match m.fs_type.as_str() {
            "cgroup2" => ("memory.max", cgroup.lines().find_map(|l| l.strip_prefix("0::"))),
            "cgroup" if m.super_options.split(',').any(|o| o == "memory") => (
                "memory.limit_in_bytes",
                cgroup.lines().find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, ctl, path) = (parts.next()?, parts.next()?, parts.next()?);
                    ctl.split(',').any(|c| c == "memory").then_some(path)
                }),
            ),
            _ => continue,
        };
        let Some(path) = path else { continue };
        // The process's cgroup as seen under this mount, then each ancestor up to the mount.
        let Some(rel) = Path::new(path).strip_prefix(&mount_root).ok() else { continue };
        let top = root.join(mount_point.strip_prefix("/").unwrap_or(&mount_point));
        let mut dir = Some(top.join(rel));
        while let Some(d) = dir {
            let limit = fs::read_to_string(d.join(file)).ok().and_then(|t| t.trim().parse::<u64>().ok());
            if let Some(l) = limit.filter(|&l| l > 0 && l < NO_LIMIT) {
                best = Some(best.map_or(l, |b| b.min(l)));
            }
            dir = d.parent().filter(|p| p.starts_with(&top)).map(Path::to_path_buf);
        }
    }
    best
}

/// The machine's online CPUs (not this process's affinity: mpirun binds each rank to a core).
/// The CPUs online on this machine (not this process's affinity).
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as u32 } else { std::thread::available_parallelism().map_or(1, |n| n.get() as u32) }
}

/// This machine's host name (uname's nodename; empty if unknown).
pub fn hostname() -> String {
    uname().0
}

fn uname() -> (String, String, String) {
    // SAFETY: utsname is plain data; uname fills it with NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let s = |f: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates every field within its array.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned()
    };
    (s(&u.nodename), s(&u.sysname), format!("{} {}", s(&u.release), s(&u.version)))
}

/// This machine's id as results record it (`host_id`): /etc/machine-id, else the host name.
pub fn host_id() -> String {
    read_trim("/etc/machine-id").unwrap_or_else(|| uname().0)
}

/// Collects the facts of this machine and of each target directory.
pub fn probe(dirs: &[PathBuf]) -> HostFacts {
    let (hostname, os, kernel) = uname();
    let cpuinfo = super::sys::read_kernel_file("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    HostFacts {
        host_id: host_id(),
        hostname,
        os,
        kernel,
        cpu_model: field("model name").unwrap_or_default(),
        cpus: online_cpus(),
        cpu_mhz: field("cpu MHz").and_then(|v| v.parse().ok()).unwrap_or(0.0),
        mem_bytes: ram_bytes().ok().flatten().unwrap_or(0),
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_rev: env!("IOLAB_GIT_REV").to_string(),
        targets: dirs.iter().map(|d| target_facts(d)).collect(),
        slurm: None,
    }
}

/// The mount holding `dir`: the mountinfo entry with its device number and the longest
/// mount point that is a prefix of the path (mount points decoded: one at `/mnt/a b` is
/// `/mnt/a\040b` in the table).
fn find_mount(dir: &Path, dev: (u32, u32)) -> Option<super::mountinfo::MountLine> {
    let want = format!("{}:{}", dev.0, dev.1);
    let mut best: Option<super::mountinfo::MountLine> = None;
    for m in super::mountinfo::read() {
        if m.dev != want || !dir.starts_with(&m.mount_point) {
            continue;
        }
        if best.as_ref().is_none_or(|b| m.mount_point.as_os_str().len() >= b.mount_point.as_os_str().len()) {
            best = Some(m);
        }
    }
    best
}

/// The file system holding `dir` as its users know it (default when `dir` cannot be seen).
pub fn fs_identity(dir: &Path) -> FsIdentity {
    let Ok(meta) = fs::metadata(dir) else { return FsIdentity::default() };
    let dev = meta.dev();
    find_mount(dir, (libc::major(dev), libc::minor(dev)))
        .map(|m| netfs::identify(&m.fs_type, &m.source))
        .unwrap_or_default()
}

#[cfg(test)]
thread_local! {
    /// How many times this thread has read a target's facts ([`target_facts`]).
    pub static TARGET_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Facts about one target directory.
pub fn target_facts(dir: &Path) -> TargetFacts {
    #[cfg(test)]
    TARGET_READS.with(|n| n.set(n.get() + 1));
    let mut t = TargetFacts { dir: dir.to_path_buf(), direct_io_align_bytes: 4096, ..Default::default() };
    let Ok(meta) = fs::metadata(dir) else { return t };
    let dev = meta.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    if let Some(m) = find_mount(dir, (maj, min)) {
        t.fs = netfs::identify(&m.fs_type, &m.source);
        // What a ceph-fuse client says of itself (its file system, monitors and object cacher),
        // asked once.
        let ceph = (t.fs.name == "cephfs" && t.fs.fuse).then(|| super::cephfs::client(&m.mount_point));
        t.client_cache = netfs::client_cache(&t.fs, &m.mount_point, &m.options, ceph.as_ref());
        if let Some(c) = ceph {
            t.fs.via = Some(c.via());
            t.client_config = Some(c.describe());
        }
        t.placement = crate::env::placement::of_dir(&t.fs, dir);
        t.fs_type = m.fs_type;
        t.mount_point = m.mount_point.to_string_lossy().into_owned();
        t.mount_options = m.options;
        t.mount_source = m.source;
    }
    if let Some(block) = block_dir(maj, min) {
        let q = block.join("queue");
        t.device = block.file_name().map(|n| format!("/dev/{}", n.to_string_lossy()));
        t.rotational = read_trim(q.join("rotational")).map(|v| v == "1");
        t.scheduler = read_trim(q.join("scheduler")).map(|s| {
            s.split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or(s)
        });
        t.read_ahead_kb = read_trim(q.join("read_ahead_kb")).and_then(|v| v.parse().ok());
        t.logical_block_bytes = logical_block_bytes(&block);
        t.device_model = read_trim(block.join("device/model")).or_else(|| {
            let driver = fs::read_link(block.join("device/driver")).ok()?;
            let name = driver.file_name()?.to_string_lossy().into_owned();
            Some(match read_trim(block.join("device/vendor")) {
                Some(v) => format!("{name} (vendor {v})"),
                None => name,
            })
        });
        if let Some(lb) = t.logical_block_bytes {
            t.direct_io_align_bytes = lb;
        }
    }
    t
}

/// The sysfs directory of the whole disk behind device maj:min (a partition's parent).
fn block_dir(maj: u32, min: u32) -> Option<PathBuf> {
    if maj == 0 {
        return None; // tmpfs, overlay, proc: no block device
    }
    let p = fs::canonicalize(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    if p.join("partition").exists() { p.parent().map(Path::to_path_buf) } else { Some(p) }
}

/// The logical block size of the disk whose sysfs directory is `block`.
fn logical_block_bytes(block: &Path) -> Option<u64> {
    read_trim(block.join("queue/logical_block_size")).and_then(|v| v.parse().ok())
}

/// The O_DIRECT alignment for files in `dir` (logical block size; 4096 if unknown), from the
/// disk alone: not the other target facts, whose client probes (a ceph-fuse admin socket, a
/// GlusterFS graph) this is asked too often to repeat (every point's resolution).
pub fn direct_io_alignment(dir: &Path) -> u64 {
    let Ok(meta) = fs::metadata(dir) else { return 4096 };
    let dev = meta.dev();
    block_dir(libc::major(dev), libc::minor(dev)).and_then(|b| logical_block_bytes(&b)).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limit is read from the process's own cgroup and its ancestors, under the mount
    /// of either version, as mountinfo and /proc/self/cgroup describe them.
    #[test]
    fn cgroup_limits_are_found_in_both_versions() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = root.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        // v2: the job's own cgroup says max, its parent 3 GiB.
        write("sys/fs/cgroup/jobs/memory.max", "3221225472\n");
        write("sys/fs/cgroup/jobs/job1/memory.max", "max\n");
        let v2_mounts = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup_memory_limit(root.path(), "0::/jobs/job1\n", v2_mounts), Some(3 << 30));
        // Another cgroup: no limit anywhere.
        assert_eq!(cgroup_memory_limit(root.path(), "0::/other\n", v2_mounts), None);
        // v1: the memory controller's mount, whose root is the container's cgroup; the
        // unlimited value (just below 2^63) is no limit.
        write("cg v1/memory/limit_in_bytes_parent/memory.limit_in_bytes", "9223372036854771712\n");
        write("cg v1/memory/limit_in_bytes_parent/c/memory.limit_in_bytes", "1000000007\n");
        let v1_mounts = "35 31 0:32 /box /cg\\040v1/memory rw,relatime - cgroup cgroup rw,memory\n\
                         36 31 0:33 / /cg\\040v1/cpu rw,relatime - cgroup cgroup rw,cpu\n";
        let cgroup = "5:cpu:/box/limit_in_bytes_parent/c\n4:memory:/box/limit_in_bytes_parent/c\n";
        assert_eq!(cgroup_memory_limit(root.path(), cgroup, v1_mounts), Some(1_000_000_007));
        assert_eq!(cgroup_memory_limit(root.path(), "4:memory:/elsewhere\n", v1_mounts), None);
    }

    #[test]
    fn probes_this_machine() {
        let dir = std::env::temp_dir();
        let h = probe(std::slice::from_ref(&dir));
        assert!(!h.hostname.is_empty());
        assert_eq!(h.os, "Linux");
        assert!(h.cpus >= 1);
        assert!(h.mem_bytes > 1 << 20);
        let t = &h.targets[0];
        assert!(!t.fs_type.is_empty(), "{t:?}");
        assert!(t.direct_io_align_bytes.is_power_of_two());
        // The alignment alone is the facts' figure, read without them.
        let before = TARGET_READS.with(|n| n.get());
        assert_eq!(direct_io_alignment(&dir), t.direct_io_align_bytes);
        assert_eq!(TARGET_READS.with(|n| n.get()), before);
        assert_eq!(direct_io_alignment(Path::new("/no/such/dir")), 4096);
    }
}
