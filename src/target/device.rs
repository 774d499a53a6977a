//! Devices: a block or character device, or any path under /dev, is refused as a target unless
//! `--allow-device` names that exact path; a block device in use (mounted itself, a partition
//! of it mounted, held by device-mapper/md, or used as swap) is refused even then. iolab writes
//! only files in directories: writing to a raw block device is not built, so an allowed block
//! device is refused too, with that reason. `--allow-device` therefore admits only directories
//! under /dev (such as the tmpfs /dev/shm). Kernel pseudo file systems (proc, sysfs, cgroup,
//! ...) are no place for data and are refused by name.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A target directory as given (`d`, relative to `cwd`): it exists, is a directory, is no device
/// (unless allowed) and no pseudo file system, its files' paths fit PATH_MAX, and it is
/// writable; its canonical path.
pub fn check_dir(d: &str, cwd: &Path, allow_device: &[PathBuf]) -> Result<PathBuf> {
    check_dir_as("dirs", d, cwd, allow_device)
}

/// [`check_dir`] for any directory iolab writes to (`field` names its option: `dirs`,
/// `server_dir`, the trace spool), so every one goes through the same guard.
pub fn check_dir_as(field: &str, d: &str, cwd: &Path, allow_device: &[PathBuf]) -> Result<PathBuf> {
    let p = if Path::new(d).is_absolute() { PathBuf::from(d) } else { cwd.join(d) };
    let meta = std::fs::metadata(&p).map_err(|e| Error::spec(field, d, format!("cannot use: {e}")))?;
    let canon = p.canonicalize().map_err(|e| Error::spec(field, d, format!("cannot resolve: {e}")))?;
    check_target_as(field, d, &canon, &meta, allow_device)?;
    check_place(field, d, &canon)?;
    if !meta.is_dir() {
        return Err(Error::spec(field, d, "not a directory"));
    }
    if let Err(e) = crate::env::sys::writable(&p) {
        return Err(Error::spec(field, d, format!("not writable: {e}")));
    }
    Ok(canon)
}

/// The rules a directory's path alone decides (for a directory that may exist only on
/// another host, as a node-local server directory): no kernel pseudo file system, and files'
/// paths within PATH_MAX.
pub fn check_place(field: &str, given: &str, canon: &Path) -> Result<()> {
    if let Some(fs) = pseudo_fs(canon) {
        return Err(Error::spec(
            field,
            crate::text::escape_path(Path::new(given)),
            format!("{fs} is a pseudo file system (kernel state shown as files), not a place for data"),
        ));
    }
    check_path_length(field, given, canon)
}

/// A directory that may not exist on this host (a node-local server directory): refused if
/// its path is under /dev (unless allowed) or a pseudo file system, or too long; checked in
/// full by [`check_dir_as`] where it exists here.
pub fn check_remote_dir(field: &str, d: &Path, allow_device: &[PathBuf]) -> Result<()> {
    let given = d.to_string_lossy();
    match std::fs::metadata(d) {
        Ok(_) => check_dir_as(field, &given, Path::new("/"), allow_device).map(|_| ()),
        Err(_) => {
            let canon = std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf());
            if canon.starts_with("/dev") && !allow_device.contains(&canon) {
                return Err(Error::spec(
                    field,
                    crate::text::escape_path(d),
                    format!(
                        "{} is under /dev; iolab never writes to devices unless --allow-device names this exact path ({0})",
                        canon.display()
                    ),
                ));
            }
            check_place(field, &given, &canon)
        }
    }
}

/// What iolab puts beneath a directory it writes to, at most: `/.iolab-` and a 32-digit run
/// id, then `/` and a file name (`w0000123.s00.dat`, a marker, a temporary file), with room.
pub const BENEATH_BYTES: usize = 1 + 7 + 32 + 1 + 64;

/// Refuses a directory whose files' paths would pass the system's limit (PATH_MAX): every
/// call on them would fail mid-run with ENAMETOOLONG.
pub fn check_path_length(field: &str, given: &str, canon: &Path) -> Result<()> {
    let len = canon.as_os_str().len();
    let max = libc::PATH_MAX as usize;
    if len + BENEATH_BYTES >= max {
        return Err(Error::spec(
            field,
            crate::text::escape_path(Path::new(given)),
            format!(
                "its path is {len} bytes long; with the work directory and file names iolab puts beneath it \
                 (up to {BENEATH_BYTES} bytes more) it would pass the system's limit of {max} bytes (PATH_MAX)"
            ),
        ));
    }
    Ok(())
}

/// Kernel file systems that show kernel state as files (statfs magic, name): no place for data.
const PSEUDO: &[(u64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x6165_676c, "pstore"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0x1cd1, "devpts"),
    (0x1980_0202, "mqueue"),
    (0x9584_58f6, "hugetlbfs"),
    (0xde5e_81e4, "efivarfs"),
    (0x4249_4e4d, "binfmt_misc"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x6e73_6673, "nsfs"),
    (0x6573_5543, "fusectl"),
];

#[cfg(test)]
mod pseudo_tests {
    use super::*;

    #[test]
    fn kernel_state_is_no_place_for_data() {
        assert_eq!(pseudo_fs(Path::new("/proc")), Some("proc"));
        assert_eq!(pseudo_fs(Path::new("/proc/self")), Some("proc"));
        assert_eq!(pseudo_fs(Path::new("/sys/kernel")), Some("sysfs"));
        assert_eq!(pseudo_fs(Path::new("/sys/fs/cgroup")), Some("sysfs"));
        assert_eq!(pseudo_fs(&std::env::temp_dir()), None);
        assert_eq!(pseudo_fs(Path::new(env!("CARGO_MANIFEST_DIR"))), None);
    }
}

/// The name of the pseudo file system holding `dir` (proc, sysfs, cgroup, ...), if it is one;
/// anything under /proc or /sys counts (cgroup v1 mounts a tmpfs at /sys/fs/cgroup).
pub fn pseudo_fs(dir: &Path) -> Option<&'static str> {
    if dir.starts_with("/proc") {
        return Some("proc");
    }
    if dir.starts_with("/sys") {
        return Some("sysfs");
    }
    let magic = crate::env::sys::fs_magic(dir).ok()?;
    PSEUDO.iter().find(|(m, _)| *m == magic).map(|(_, n)| *n)
}

/// Checks target `given` (resolved to `canon`, with metadata `meta`) against the device rules.
pub fn check_target(given: &str, canon: &Path, meta: &fs::Metadata, allowed: &[PathBuf]) -> Result<()> {
    check_target_as("dirs", given, canon, meta, allowed)
}

/// [`check_target`] for the option `field`.
pub fn check_target_as(
    field: &str,
    given: &str,
    canon: &Path,
    meta: &fs::Metadata,
    allowed: &[PathBuf],
) -> Result<()> {
    let ft = meta.file_type();
    let (block, chr) = (ft.is_block_device(), ft.is_char_device());
    let under_dev = canon.starts_with("/dev");
    if !(block || chr || under_dev) {
        return Ok(());
    }
    let what = if block {
        format!("{} is a block device", canon.display())
    } else if chr {
        format!("{} is a character device", canon.display())
    } else {
        format!("{} is under /dev", canon.display())
    };
    if !allowed.iter().any(|a| a == canon) {
        return Err(Error::spec(
            field,
            given,
            format!(
                "{what}; iolab never writes to devices unless --allow-device names this exact path ({})",
                canon.display()
            ),
        ));
    }
    if block {
        let users = users(meta.rdev());
        if !users.is_empty() {
            return Err(Error::spec(
                field,
                given,
                format!("{what} in use ({}); iolab never touches a device in use", users.join("; ")),
            ));
        }
        return Err(Error::spec(
            field,
            given,
            format!(
                "{what}; writing to raw block devices is not built (iolab writes files in directories): \
                 make a file system on it, mount it, and give a directory there"
            ),
        ));
    }
    if chr {
        return Err(Error::spec(field, given, format!("{what}; iolab writes only files in directories")));
    }
    Ok(())
}

/// Resolves the `--allow-device` paths (they must exist).
pub fn resolve_allowed(values: &[String], cwd: &Path) -> Result<Vec<PathBuf>> {
    values
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| {
            let p = if Path::new(v).is_absolute() { PathBuf::from(v) } else { cwd.join(v) };
            p.canonicalize().map_err(|e| Error::spec("allow_device", v, format!("cannot resolve: {e}")))
        })
        .collect()
}

/// Who uses block device `rdev` on this machine, in words; empty if nobody.
pub fn users(rdev: u64) -> Vec<String> {
    let mountinfo = crate::env::sys::read_kernel_file("/proc/self/mountinfo").unwrap_or_default();
    let swaps = crate::env::sys::read_kernel_file("/proc/swaps").unwrap_or_default();
    users_in(Path::new("/sys"), &mountinfo, &swaps, (libc::major(rdev), libc::minor(rdev)))
}

/// A block device and its partitions: (name, "major:minor").
fn family(sys: &Path, dev: (u32, u32)) -> Vec<(String, String)> {
    let id = format!("{}:{}", dev.0, dev.1);
    let Ok(link) = fs::canonicalize(sys.join("dev/block").join(&id)) else {
        return vec![];
    };
    let Some(name) = link.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return vec![];
    };
    let mut out = vec![(name, id)];
    if let Ok(rd) = fs::read_dir(&link) {
        for e in rd.flatten() {
            let p = e.path();
            if p.join("partition").is_file()
                && let Ok(d) = fs::read_to_string(p.join("dev"))
            {
                out.push((e.file_name().to_string_lossy().into_owned(), d.trim().to_string()));
            }
        }
    }
    out.sort();
    out
}

/// [`users`] with the sources given (so tests can feed their own).
pub fn users_in(sys: &Path, mountinfo: &str, swaps: &str, dev: (u32, u32)) -> Vec<String> {
    let fam = family(sys, dev);
    let mut out = vec![];
    for (name, id) in &fam {
        let dev_path = format!("/dev/{name}");
        for line in crate::env::mountinfo::parse(mountinfo) {
            if line.dev == *id || line.source == dev_path {
                let m = format!("{dev_path} is mounted at {}", crate::text::escape_path(&line.mount_point));
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
        for line in swaps.lines().skip(1) {
            if line.split_whitespace().next() == Some(dev_path.as_str()) {
                out.push(format!("{dev_path} is used as swap"));
            }
        }
        if let Ok(rd) = fs::read_dir(sys.join("class/block").join(name).join("holders")) {
            for h in rd.flatten() {
                out.push(format!("{dev_path} is held by {}", h.file_name().to_string_lossy()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /sys with disk `vdz` (250:0) and its partition `vdz1` (250:1), held by dm-3.
    fn fake_sys() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let dev = t.path().join("devices/virtual/block/vdz");
        fs::create_dir_all(dev.join("vdz1")).unwrap();
        fs::write(dev.join("dev"), "250:0\n").unwrap();
        fs::write(dev.join("vdz1/dev"), "250:1\n").unwrap();
        fs::write(dev.join("vdz1/partition"), "1\n").unwrap();
        fs::create_dir_all(t.path().join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&dev, t.path().join("dev/block/250:0")).unwrap();
        std::os::unix::fs::symlink(dev.join("vdz1"), t.path().join("dev/block/250:1")).unwrap();
        fs::create_dir_all(t.path().join("class/block/vdz1/holders/dm-3")).unwrap();
        fs::create_dir_all(t.path().join("class/block/vdz/holders")).unwrap();
        t
    }

    #[test]
    fn a_mounted_partition_or_a_holder_makes_the_disk_busy() {
        let sys = fake_sys();
        let none = users_in(sys.path(), "", "Filename Type\n", (250, 0));
        assert_eq!(none, ["/dev/vdz1 is held by dm-3"]);
        let mi = "36 27 250:1 / /data rw,relatime - ext4 /dev/vdz1 rw\n";
        let u = users_in(sys.path(), mi, "", (250, 0));
        assert!(u.contains(&"/dev/vdz1 is mounted at /data".to_string()), "{u:?}");
        // btrfs shows an anonymous device number: the mount source names the device.
        let mi = "40 27 0:52 / /b rw - btrfs /dev/vdz rw\n";
        assert!(users_in(sys.path(), mi, "", (250, 0)).contains(&"/dev/vdz is mounted at /b".to_string()));
        let sw = "Filename Type Size Used Priority\n/dev/vdz partition 100 0 -2\n";
        assert!(users_in(sys.path(), "", sw, (250, 0)).contains(&"/dev/vdz is used as swap".to_string()));
        assert!(users_in(sys.path(), "", "", (251, 0)).is_empty(), "an unknown device has no users");
    }

    #[test]
    fn paths_under_dev_need_an_exact_allowance() {
        let meta = fs::metadata("/dev/shm").unwrap();
        let canon = Path::new("/dev/shm");
        assert!(check_target("/dev/shm", canon, &meta, &[]).is_err());
        assert!(check_target("/dev/shm", canon, &meta, &[PathBuf::from("/dev")]).is_err());
        assert!(check_target("/dev/shm", canon, &meta, &[PathBuf::from("/dev/shm")]).is_ok());
        let null = fs::metadata("/dev/null").unwrap();
        let e = check_target("/dev/null", Path::new("/dev/null"), &null, &[PathBuf::from("/dev/null")]);
        assert!(e.unwrap_err().to_string().contains("character device"));
        let tmp = std::env::temp_dir();
        assert!(check_target("x", &tmp, &fs::metadata(&tmp).unwrap(), &[]).is_ok());
    }
}
