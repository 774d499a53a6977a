//! Work directories: iolab writes only inside a directory it creates under each target, marked
//! with an ownership file that names every file iolab created there, and deletes only those.
//!
//! The marker (`.iolab-owner`) is plain text: a first line `iolab work directory`, then
//! `key = value` lines. It says which process made the directory (host, boot, pid and the pid's
//! start time, so a later run can tell a crashed owner from a running one), how the data was
//! written (seed, block size, verify), one `file = INODE NAME` line per file, appended right
//! after iolab creates that file with O_EXCL, and one `written = N` line after each write phase
//! that completed. Removal, here and in `iolab clean`, follows one rule ([`remove_owned`]): a
//! file is deleted only if the marker names it and it is still the same inode; the marker and
//! the directory go only when nothing else is left in it.

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spec::Spec;

/// Name of the marker file inside every work directory.
pub const MARKER: &str = ".iolab-owner";
/// Prefix of work directory names.
pub const PREFIX: &str = ".iolab-";
/// The first line of every marker.
pub const MAGIC: &str = "iolab work directory";

/// A process, identified well enough to tell later whether it still runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Owner {
    pub host: String,
    /// /proc/sys/kernel/random/boot_id: a pid from another boot is certainly gone.
    pub boot_id: String,
    pub pid: u32,
    /// Start time of the pid in clock ticks after boot (/proc/PID/stat field 22), so a reused
    /// pid is not mistaken for the owner.
    pub pid_start: u64,
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
}

fn read_trim(p: &str) -> String {
    fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Start time (field 22 of /proc/PID/stat) of a running pid.
fn pid_start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: split after the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            host: read_trim("/proc/sys/kernel/hostname"),
            boot_id: read_trim("/proc/sys/kernel/random/boot_id"),
            pid,
            pid_start: pid_start_time(pid).unwrap_or(0),
        }
    }

    /// Whether this owner may still be running, judged from `me` (this process).
    pub fn state(&self, me: &Owner) -> OwnerState {
        if self.host != me.host {
            return OwnerState::OtherHost(self.host.clone());
        }
        if !self.boot_id.is_empty() && self.boot_id != me.boot_id {
            return OwnerState::Gone;
        }
        match pid_start_time(self.pid) {
            Some(t) if t == self.pid_start => OwnerState::Running,
            _ => OwnerState::Gone,
        }
    }
}

/// The contents of a marker.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Marker {
    pub run_id: String,
    pub owner: Owner,
    pub created_unix_s: f64,
    /// Made with `--keep`: the data was meant to stay.
    pub keep: bool,
    pub seed: u64,
    pub bs: u64,
    /// Blocks carry verification headers.
    pub verify: bool,
    /// Files iolab created here, in creation order: (name, inode number).
    pub files: Vec<(String, u64)>,
    /// Write generation of the data after the last write phase that completed, if any did.
    pub written: Option<u32>,
}

/// Whether `name` is a plain file name iolab may have created (no path, not `.`/`..`).
pub fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && name != MARKER && !name.contains(['/', '\0', '\n'])
}

/// Whether `id` can be a run id (what follows [`PREFIX`] in a work directory name).
pub fn valid_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Marker {
    /// The marker's first lines, written when the directory is created.
    pub fn header(&self) -> String {
        format!(
            "{MAGIC}\nversion = 1\nrun_id = {}\nhost = {}\nboot_id = {}\npid = {}\npid_start = {}\n\
             created_unix_s = {:.0}\nkeep = {}\nseed = {}\nbs = {}\nverify = {}\n",
            self.run_id,
            self.owner.host,
            self.owner.boot_id,
            self.owner.pid,
            self.owner.pid_start,
            self.created_unix_s,
            self.keep,
            self.seed,
            self.bs,
            self.verify
        )
    }

    /// Parses a marker; any doubt (a wrong first line, a bad file entry) makes it invalid.
    pub fn parse(text: &str) -> std::result::Result<Marker, String> {
        // A crash during an append can leave a partial last line: only whole lines count.
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let mut lines = whole.lines();
        if lines.next() != Some(MAGIC) {
            return Err(format!("its first line is not `{MAGIC}`"));
        }
        let mut m = Marker::default();
        let num = |k: &str, v: &str| v.parse::<u64>().map_err(|_| format!("`{k} = {v}` is not a number"));
        for line in lines {
            let Some((k, v)) = line.split_once(" = ") else { continue };
            match k {
                "run_id" => m.run_id = v.to_string(),
                "host" => m.owner.host = v.to_string(),
                "boot_id" => m.owner.boot_id = v.to_string(),
                "pid" => m.owner.pid = num(k, v)? as u32,
                "pid_start" => m.owner.pid_start = num(k, v)?,
                "created_unix_s" => m.created_unix_s = v.parse().unwrap_or(0.0),
                "keep" => m.keep = v == "true",
                "seed" => m.seed = num(k, v)?,
                "bs" => m.bs = num(k, v)?,
                "verify" => m.verify = v == "true",
                "written" => m.written = Some(num(k, v)? as u32),
                "file" => {
                    let (ino, name) = v.split_once(' ').ok_or_else(|| format!("bad file entry `{v}`"))?;
                    if !plain_name(name) {
                        return Err(format!("file entry `{name}` is not a plain file name"));
                    }
                    m.files.push((name.to_string(), num(k, ino)?));
                }
                _ => {}
            }
        }
        if !valid_run_id(&m.run_id) {
            return Err("it names no valid run id".into());
        }
        Ok(m)
    }

    /// Reads and parses the marker of work directory `dir`, which must be a real directory
    /// (not a symlink) named `.iolab-RUNID` holding a regular-file marker for that run id.
    pub fn read(dir: &Path) -> std::result::Result<Marker, String> {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let id = name.strip_prefix(PREFIX).ok_or("not named .iolab-RUNID")?;
        let meta = fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
        if !meta.is_dir() {
            return Err("not a directory".into());
        }
        let path = dir.join(MARKER);
        let meta = fs::symlink_metadata(&path).map_err(|_| format!("no {MARKER} file"))?;
        if !meta.is_file() {
            return Err(format!("{MARKER} is not a regular file"));
        }
        if meta.len() > 64 << 20 {
            return Err(format!("{MARKER} is too large to be iolab's"));
        }
        let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {MARKER}: {e}"))?;
        let m = Marker::parse(&text)?;
        if m.run_id != id {
            return Err(format!("its marker names run {} but the directory is named {name}", m.run_id));
        }
        Ok(m)
    }
}

/// What removing a work directory did (or, in a dry run, would do).
#[derive(Debug, Default)]
pub struct Removal {
    /// Files deleted, with their sizes.
    pub removed: Vec<(String, u64)>,
    /// Entries left in place, each with the reason.
    pub left: Vec<(String, String)>,
    pub dir_removed: bool,
    /// Calls that failed.
    pub errors: Vec<Error>,
}

impl Removal {
    pub fn bytes(&self) -> u64 {
        self.removed.iter().map(|(_, b)| b).sum()
    }
}

/// The one removal rule. In work directory `dir`, deletes each file in `files` that is still a
/// regular file with the recorded inode; then, only if nothing but the marker is left, the marker
/// and the directory. Anything else (a file iolab did not create, a replaced file, a
/// subdirectory, a symlink) is left where it is, and so is the directory holding it.
pub fn remove_owned(dir: &Path, files: &[(String, u64)], dry_run: bool) -> Removal {
    let mut r = Removal::default();
    for (name, ino) in files {
        let p = dir.join(name);
        match fs::symlink_metadata(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => r.errors.push(Error::io("stat", &p, None, e)),
            Ok(m) if !m.is_file() || m.ino() != *ino => {
                r.left.push((name.clone(), "not the file iolab created there".into()));
            }
            Ok(m) => {
                if dry_run {
                    r.removed.push((name.clone(), m.len()));
                } else {
                    match fs::remove_file(&p) {
                        Ok(()) => r.removed.push((name.clone(), m.len())),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => r.errors.push(Error::io("unlink", &p, None, e)),
                    }
                }
            }
        }
    }
    let removed: Vec<&str> = r.removed.iter().map(|(n, _)| n.as_str()).collect();
    let others: Vec<String> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != MARKER && !(dry_run && removed.contains(&n.as_str())))
            .collect(),
        Err(e) => {
            r.errors.push(Error::io("readdir", dir, None, e));
            return r;
        }
    };
    for n in others {
        if !r.left.iter().any(|(l, _)| *l == n) {
            r.left.push((n, "not created by iolab".into()));
        }
    }
    if !r.left.is_empty() || !r.errors.is_empty() {
        return r;
    }
    if dry_run {
        r.dir_removed = true;
        return r;
    }
    let marker = dir.join(MARKER);
    match fs::remove_file(&marker) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            r.errors.push(Error::io("unlink", &marker, None, e));
            return r;
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => r.dir_removed = true,
        Err(e) => r.errors.push(Error::io("rmdir", dir, None, e)),
    }
    r
}

/// One work directory of this run.
struct WorkDir {
    path: PathBuf,
    /// The marker, open for appending.
    marker: Option<fs::File>,
    /// Files this run created here: (name, inode).
    created: Vec<(String, u64)>,
}

impl WorkDir {
    fn append(&mut self, line: &str) -> Result<()> {
        let path = self.path.join(MARKER);
        let f =
            self.marker.as_mut().ok_or_else(|| Error::Run(format!("{} has no marker", path.display())))?;
        // One write(2) per line on an O_APPEND descriptor: a crash leaves whole lines or a
        // partial last line, which the parser ignores.
        f.write_all(line.as_bytes()).map_err(|e| Error::io("write", &path, None, e))
    }

    /// Commits the marker, so it names its files even after a power cut or a dead file system.
    fn sync(&mut self) -> Result<()> {
        let path = self.path.join(MARKER);
        match self.marker.as_mut() {
            Some(f) => f.sync_data().map_err(|e| Error::io("fdatasync", &path, None, e)),
            None => Ok(()),
        }
    }
}

/// The work directories of one run, one per distinct target directory, removed on drop
/// unless kept.
pub struct WorkDirs {
    dirs: Vec<WorkDir>,
    /// Logical target index -> index into `dirs` (a directory named twice is one work dir).
    map: Vec<usize>,
    keep: bool,
}

impl WorkDirs {
    /// Creates `TARGET/.iolab-RUNID/` with its marker under each distinct target of `spec`.
    /// Fails rather than reuse anything that exists.
    pub fn create(spec: &Spec, run_id: &str) -> Result<WorkDirs> {
        let mut wd = WorkDirs { dirs: vec![], map: vec![], keep: spec.keep };
        let marker = Marker {
            run_id: run_id.to_string(),
            owner: Owner::current(),
            created_unix_s: crate::env::sys::unix_time_s(),
            keep: spec.keep,
            seed: spec.seed,
            bs: spec.bs_bytes,
            verify: spec.verify,
            files: vec![],
            written: None,
        };
        let text = marker.header();
        let mut seen: Vec<(u64, u64)> = vec![];
        for t in &spec.dirs {
            let meta = fs::metadata(t).map_err(|e| Error::io("stat", t, None, e))?;
            let key = (meta.dev(), meta.ino());
            if let Some(i) = seen.iter().position(|k| *k == key) {
                wd.map.push(i);
                continue;
            }
            seen.push(key);
            wd.map.push(wd.dirs.len());
            let d = t.join(format!("{PREFIX}{run_id}"));
            fs::create_dir(&d).map_err(|e| Error::io("mkdir", &d, None, e))?;
            wd.dirs.push(WorkDir { path: d.clone(), marker: None, created: vec![] });
            let mpath = d.join(MARKER);
            let mut f = fs::OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&mpath)
                .map_err(|e| Error::io("open", &mpath, None, e))?;
            let last = wd.dirs.last_mut().expect("just pushed");
            last.marker = Some(f.try_clone().map_err(|e| Error::io("dup", &mpath, None, e))?);
            f.write_all(text.as_bytes()).map_err(|e| Error::io("write", &mpath, None, e))?;
            f.sync_all().map_err(|e| Error::io("fsync", &mpath, None, e))?;
        }
        Ok(wd)
    }

    /// The work directory under logical target `i`.
    pub fn dir(&self, i: usize) -> &Path {
        &self.dirs[self.map[i]].path
    }

    /// Creates a new, empty data file (never an existing one) in one of the work directories
    /// and records it in that directory's marker, so only it is ever removed.
    pub fn create_file(&mut self, path: &Path) -> Result<fs::File> {
        let parent = path.parent().unwrap_or(Path::new(""));
        let name = path.file_name().and_then(|n| n.to_str()).filter(|n| plain_name(n));
        let (Some(wd), Some(name)) = (self.dirs.iter_mut().find(|d| d.path == parent), name) else {
            return Err(Error::Run(format!("{} is not a plain file in a work directory", path.display())));
        };
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("open(O_CREAT|O_EXCL)", path, None, e))?;
        let ino = f.metadata().map_err(|e| Error::io("fstat", path, None, e))?.ino();
        if let Err(e) = wd.append(&format!("file = {ino} {name}\n")) {
            // Unrecorded, it could never be cleaned: remove it now, while it is surely ours.
            let _ = fs::remove_file(path);
            return Err(e);
        }
        wd.created.push((name.to_string(), ino));
        Ok(f)
    }

    /// Whether `path` is a file this run created.
    pub fn owns(&self, path: &Path) -> bool {
        let parent = path.parent().unwrap_or(Path::new(""));
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        self.dirs.iter().any(|d| d.path == parent && d.created.iter().any(|(n, _)| n == name))
    }

    /// Records in every marker that a write phase completed, leaving the data at `generation`.
    pub fn record_written(&mut self, generation: u32) -> Result<()> {
        for d in &mut self.dirs {
            d.append(&format!("written = {generation}\n"))?;
        }
        self.sync_markers()
    }

    /// Commits every marker (after creating files: one commit for all of them).
    pub fn sync_markers(&mut self) -> Result<()> {
        self.dirs.iter_mut().try_for_each(WorkDir::sync)
    }

    /// Removes the created files, the markers and the directories (unless kept), by the rule
    /// of [`remove_owned`]. Anything left is named in the error.
    pub fn cleanup(&mut self) -> Result<()> {
        if self.keep {
            return Ok(());
        }
        let mut first_err = None;
        for mut d in self.dirs.drain(..) {
            d.marker = None;
            let mut r = remove_owned(&d.path, &d.created, false);
            if let Some(e) = r.errors.drain(..).next() {
                first_err.get_or_insert(e);
            } else if !r.dir_removed {
                let names: Vec<String> = r.left.iter().map(|(n, why)| format!("{n} ({why})")).collect();
                first_err.get_or_insert(Error::Run(format!(
                    "work directory {} kept: it holds {}",
                    d.path.display(),
                    names.join(", ")
                )));
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// The work directories (one per distinct target).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.path.clone()).collect()
    }
}

impl Drop for WorkDirs {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

/// A new run id: 128 random bits in hex; stable across stores, so imports never duplicate.
pub fn new_run_id() -> String {
    format!("{:016x}{:016x}", crate::env::sys::random_u64(), crate::env::sys::random_u64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Params, ResolveEnv, resolve};

    fn spec(dirs: &[&Path], keep: bool) -> Spec {
        let mut p = Params::default();
        p.set("dirs", dirs.iter().map(|d| d.display().to_string()).collect()).unwrap();
        p.set_one("keep", keep).unwrap();
        resolve(&p, &ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }).unwrap()
    }

    #[test]
    fn creates_marks_and_removes_only_its_own() {
        let t = tempfile::tempdir().unwrap();
        let mut wd = WorkDirs::create(&spec(&[t.path()], false), "abc").unwrap();
        let d = wd.dir(0).to_path_buf();
        let f = d.join("w0000.dat");
        wd.create_file(&f).unwrap();
        assert!(wd.owns(&f));
        assert!(wd.create_file(&f).is_err(), "never reuses an existing file");
        let m = Marker::read(&d).unwrap();
        assert_eq!(m.run_id, "abc");
        assert_eq!(m.owner, Owner::current());
        assert_eq!(m.files, [("w0000.dat".to_string(), fs::metadata(&f).unwrap().ino())]);
        assert_eq!(m.owner.state(&Owner::current()), OwnerState::Running);
        // A file the user put in the work directory is not iolab's to delete.
        fs::write(d.join("user.txt"), b"mine").unwrap();
        let e = wd.cleanup().unwrap_err().to_string();
        assert!(e.contains("user.txt (not created by iolab)"), "{e}");
        assert!(!f.exists());
        assert_eq!(fs::read(d.join("user.txt")).unwrap(), b"mine");
        assert!(d.join(MARKER).exists(), "the marker stays with the directory it still describes");
    }

    #[test]
    fn a_replaced_file_is_not_removed() {
        let t = tempfile::tempdir().unwrap();
        let mut wd = WorkDirs::create(&spec(&[t.path()], false), "r1").unwrap();
        let f = wd.dir(0).join("a.dat");
        wd.create_file(&f).unwrap();
        // Someone swaps in their own file under the same name (a new inode, kept alive).
        let keep_old = fs::File::open(&f).unwrap();
        fs::remove_file(&f).unwrap();
        fs::write(&f, b"theirs").unwrap();
        drop(keep_old);
        assert!(wd.cleanup().is_err());
        assert_eq!(fs::read(&f).unwrap(), b"theirs");
    }

    #[test]
    fn refuses_an_existing_directory() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join(".iolab-xyz")).unwrap();
        assert!(WorkDirs::create(&spec(&[t.path()], false), "xyz").is_err());
        assert!(t.path().join(".iolab-xyz").exists());
    }

    #[test]
    fn a_directory_named_twice_is_one_work_directory() {
        let t = tempfile::tempdir().unwrap();
        let mut wd = WorkDirs::create(&spec(&[t.path(), t.path()], false), "twice").unwrap();
        assert_eq!(wd.dir(0), wd.dir(1));
        wd.create_file(&wd.dir(1).join("b.dat")).unwrap();
        wd.record_written(1).unwrap();
        assert_eq!(Marker::read(wd.dir(0)).unwrap().written, Some(1));
        wd.cleanup().unwrap();
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn markers_parse_strictly() {
        assert!(Marker::parse("hello\nrun_id = a\n").is_err());
        assert!(Marker::parse(&format!("{MAGIC}\n")).is_err(), "no run id");
        assert!(Marker::parse(&format!("{MAGIC}\nrun_id = a\nfile = 1 ../etc\n")).is_err());
        assert!(Marker::parse(&format!("{MAGIC}\nrun_id = a\nfile = 1 x/y\n")).is_err());
        assert!(Marker::parse(&format!("{MAGIC}\nrun_id = a/b\n")).is_err());
        let m =
            Marker::parse(&format!("{MAGIC}\nrun_id = a\nfile = 12 w.dat\nwritten = 2\nfile = 1")).unwrap();
        assert_eq!(m.files, [("w.dat".to_string(), 12)]);
        assert_eq!(m.written, Some(2));
    }
}
