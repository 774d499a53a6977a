//! Rigs for the safety and fault tests: real mounts (tmpfs, loop devices with ext4 or btrfs,
//! bind mounts), iolab as a child process to signal or kill, and direct reads of its store.
//! Everything that needs root or a kernel feature skips with a printed reason when missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// Prints why a test is skipped and returns from it.
#[macro_export]
macro_rules! skip {
    ($($arg:tt)*) => {{
        eprintln!("skipped: {}", format!($($arg)*));
        return;
    }};
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a command; Ok(stdout) or Err(stderr).
pub fn sh(cmd: &str, args: &[&str]) -> Result<String, String> {
    match Command::new(cmd).args(args).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!("{cmd} {args:?}: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("{cmd}: {e}")),
    }
}

/// A mount, unmounted (lazily, so a busy one cannot wedge the suite) when dropped.
pub struct Mount {
    pub path: PathBuf,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = sh("umount", &["-l", self.path.to_str().unwrap()]);
    }
}

/// Mounts a tmpfs of `size` (e.g. "80m") on a new directory `dir`.
pub fn tmpfs(dir: &Path, size: &str) -> Result<Mount, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    sh("mount", &["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs", dir.to_str().unwrap()])?;
    Ok(Mount { path: dir.to_path_buf() })
}

/// Mounts a tmpfs on `dir` (made if needed) with mount options `opts` (`size=64m,nr_inodes=3000`).
pub fn tmpfs_with(dir: &Path, opts: &str) -> Result<Mount, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    sh("mount", &["-t", "tmpfs", "-o", &format!("{opts},mode=0755"), "tmpfs", dir.to_str().unwrap()])?;
    Ok(Mount { path: dir.to_path_buf() })
}

/// A loop device, detached when dropped.
pub struct Loop {
    pub dev: String,
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = sh("losetup", &["-d", &self.dev]);
    }
}

/// Attaches `file` to a free loop device (`-P` scans partitions).
pub fn loop_dev(file: &Path, partitions: bool) -> Result<Loop, String> {
    let mut args = vec!["-f", "--show"];
    if partitions {
        args.push("-P");
    }
    args.push(file.to_str().unwrap());
    Ok(Loop { dev: sh("losetup", &args)? })
}

/// A file system made by the test on an image file and mounted on `dir`. Fields drop in
/// order: unmount, then detach.
pub struct ImageFs {
    pub mount: Mount,
    pub dev: Loop,
}

/// Makes an image of `size_mib` (sparse) in `dir`, a file system with `mkfs` on it, and mounts
/// it at `dir/mnt`.
pub fn image_fs(dir: &Path, size_mib: u64, mkfs: &[&str], opts: &str) -> Result<ImageFs, String> {
    let img = dir.join("fs.img");
    let f = std::fs::File::create(&img).map_err(|e| e.to_string())?;
    f.set_len(size_mib << 20).map_err(|e| e.to_string())?;
    let dev = loop_dev(&img, false)?;
    let mut args: Vec<&str> = mkfs[1..].to_vec();
    args.push(&dev.dev);
    sh(mkfs[0], &args)?;
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
    let mut margs = vec![];
    if !opts.is_empty() {
        margs.extend(["-o", opts]);
    }
    margs.extend([dev.dev.as_str(), mnt.to_str().unwrap()]);
    sh("mount", &margs)?;
    Ok(ImageFs { mount: Mount { path: mnt }, dev })
}

/// Starts `iolab ARGS` in the background with the scratch store.
pub fn spawn(s: &Scratch, args: &[&str]) -> Child {
    spawn_with(s, args, |c| c)
}

/// As [`spawn`], letting the caller adjust the command (uid, limits).
pub fn spawn_with(s: &Scratch, args: &[&str], f: impl FnOnce(&mut Command) -> &mut Command) -> Child {
    let mut c = command();
    c.args(args).env("IOLAB_DB", s.db()).current_dir(s.path()).stdout(Stdio::piped()).stderr(Stdio::piped());
    f(&mut c).spawn().unwrap()
}

/// Waits for `child` at most `secs`; kills it and panics if it does not exit.
pub fn finish(mut child: Child, secs: u64) -> std::process::Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("iolab did not stop within {secs} s; stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Polls `cond` every 5 ms for at most `secs`.
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The runs in the store, oldest first: (status, error). Empty if the store is not there yet.
pub fn runs(db: &Path) -> Vec<(String, Option<String>)> {
    if !db.exists() {
        return vec![];
    }
    let Ok(c) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return vec![];
    };
    let _ = c.busy_timeout(Duration::from_secs(5));
    let Ok(mut st) = c.prepare("SELECT status, error FROM runs ORDER BY finished_unix_s, rowid") else {
        return vec![];
    };
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map(|rows| rows.flatten().collect()).unwrap_or_default()
}

/// Counts runs by status.
pub fn count(runs: &[(String, Option<String>)], status: &str) -> usize {
    runs.iter().filter(|(s, _)| s == status).count()
}

/// The `.iolab-*` entries under `dir`.
pub fn work_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(".iolab-"))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The data files inside the work directories (with a marker) under `dir`.
pub fn data_files(dir: &Path) -> Vec<PathBuf> {
    work_dirs(dir)
        .iter()
        .filter(|d| d.join(".iolab-owner").is_file())
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dat"))
        .collect()
}

/// Content hash of a file (XXH64 over all its bytes) and its length.
pub fn content_hash(p: &Path) -> (u64, usize) {
    let b = std::fs::read(p).unwrap();
    (iolab::plan::verify::xxh64(&b, 0), b.len())
}

/// Sends `sig` to a child.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Makes `dir` and its parents reachable and `dir` writable by everyone (for an unprivileged
/// iolab under setpriv).
pub fn open_to_all(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut p = dir.to_path_buf();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    while let Some(parent) = p.parent() {
        if parent == Path::new("/") || parent.as_os_str().is_empty() {
            break;
        }
        let mode = std::fs::metadata(parent).unwrap().permissions().mode();
        if mode & 0o001 == 0 {
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(mode | 0o011)).unwrap();
        }
        p = parent.to_path_buf();
    }
}

/// Runs the command as uid/gid 65534 (nobody), so permission bits apply.
pub fn as_nobody(c: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    c.uid(65534).gid(65534)
}
