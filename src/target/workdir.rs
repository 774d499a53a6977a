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
//! the directory go only when nothing else is left in it. The metadata phases' namespace
//! (`md/`) is named by one `namespace = ...` line and removed by its own rule first
//! ([`crate::target::namespace`]). A stop signal ends a removal after a short grace
//! ([`crate::env::signals::TIDY_GRACE`]), the marker kept with what is left.

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spec::Spec;

pub use super::marker::*;

/// What removing a work directory did (or, in a dry run, would do).
#[derive(Debug, Default)]
pub struct Removal {
    /// Files deleted, with their sizes.
    pub removed: Vec<(String, u64)>,
    /// Items of the namespace deleted (files and directories), and their bytes.
    pub ns_items: u64,
    pub ns_bytes: u64,
    /// Entries left in place, each with the reason.
    pub left: Vec<(String, String)>,
    pub dir_removed: bool,
    /// Calls that failed (and a stop signal that ended the removal).
    pub errors: Vec<Error>,
    /// A stop signal ended the removal part way: what was not removed yet stays.
    pub stopped: bool,
}

impl Removal {
    pub fn bytes(&self) -> u64 {
        self.removed.iter().map(|(_, b)| b).sum::<u64>() + self.ns_bytes
    }
}

/// The one removal rule. In work directory `dir`, removes the namespace `ns` names (by its own
/// rule, [`crate::target::namespace::remove`]), deletes each file in `files` that is still a
/// regular file with the recorded inode; then, only if nothing but the marker is left, the
/// marker and the directory. Anything else (a file iolab did not create, a replaced file, a
/// subdirectory, a symlink) is left where it is, and so is the directory holding it.
pub fn remove_owned(
    dir: &Path,
    files: &[(String, u64)],
    ns: Option<&super::namespace::NsRecord>,
    dry_run: bool,
) -> Removal {
    let mut r = Removal::default();
    let mut ns_left = false;
    if let Some(rec) = ns {
        let n = super::namespace::remove(dir, rec, dry_run);
        (r.ns_items, r.ns_bytes) = (n.items, n.bytes);
        ns_left = n.left_count > 0 || !n.errors.is_empty();
        r.stopped = n.stopped;
        r.left.extend(n.left);
        let more = n.left_count.saturating_sub(super::namespace::LEFT_NAMED as u64);
        if more > 0 {
            r.left.push((format!("{more} more in {}", super::namespace::BASE_DIR), "likewise".into()));
        }
        r.errors.extend(n.errors);
        if r.stopped {
            return r;
        }
    }
    let mut stop = crate::env::signals::Deadline::default();
    for (name, ino) in files {
        if stop.passed() {
            r.stopped = true;
            r.errors.push(Error::Interrupted(crate::env::signals::pending().unwrap_or(libc::SIGINT)));
            return r;
        }
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
            // The namespace's base: what is left in it is named above (in a dry run it stays).
            .filter(|n| !((ns_left || dry_run) && ns.is_some() && n == super::namespace::BASE_DIR))
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
    /// The namespace made here, if any.
    namespace: Option<super::namespace::NsRecord>,
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

/// Whether `mkdir` of the fresh random name `d`, begun at `before_s`, failed with EEXIST only
/// because a network file system's client sent the request twice (it re-sends a request whose
/// reply it lost, and the server made the directory the first time): the name is 128 random
/// bits drawn for this run, so it exists only if this very call made it, and then it is an
/// empty directory of this user's, changed no earlier than the call began (a 2-second slack for
/// the server's whole-second times). Anything else under that name is refused as before.
fn replayed_mkdir(d: &Path, e: &std::io::Error, before_s: f64) -> bool {
    if e.kind() != std::io::ErrorKind::AlreadyExists {
        return false;
    }
    let Ok(meta) = fs::symlink_metadata(d) else { return false };
    // SAFETY: geteuid takes no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    let now = crate::env::sys::unix_time_s();
    let fresh = (before_s.floor() - 2.0..=now + 2.0).contains(&(meta.ctime() as f64));
    let empty = fs::read_dir(d).is_ok_and(|mut r| r.next().is_none());
    meta.is_dir() && meta.uid() == me && fresh && empty
}

impl WorkDirs {
    /// Creates `TARGET/.iolab-RUNID/` with its marker under each distinct target of `spec`;
    /// the caller commits the markers once it has made its files ([`WorkDirs::sync_markers`]).
    /// Fails rather than reuse anything that exists.
    /// On a failure part way, what was made is removed; what cannot be is named in the error,
    /// for `iolab clean`.
    pub fn create(spec: &Spec, run_id: &str) -> Result<WorkDirs> {
        let mut wd = WorkDirs { dirs: vec![], map: vec![], keep: false };
        match wd.make(spec, run_id) {
            Ok(()) => {
                wd.keep = spec.keep;
                Ok(wd)
            }
            Err(e) => match wd.cleanup() {
                Ok(()) => Err(e),
                Err(c) => Err(Error::Run(format!("{e}; {c}; remove what is left with `iolab clean`"))),
            },
        }
    }

    fn make(&mut self, spec: &Spec, run_id: &str) -> Result<()> {
        let wd = self;
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
            namespace: None,
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
            let before_s = crate::env::sys::unix_time_s();
            fs::create_dir(&d)
                .or_else(|e| if replayed_mkdir(&d, &e, before_s) { Ok(()) } else { Err(e) })
                .map_err(|e| Error::io("mkdir", &d, None, e))?;
            wd.dirs.push(WorkDir { path: d.clone(), marker: None, created: vec![], namespace: None });
            let mpath = d.join(MARKER);
            let mut f = fs::OpenOptions::new()
                .append(true)
                .create_new(true)
                .open(&mpath)
                .map_err(|e| Error::io("open", &mpath, None, e))?;
            let last = wd.dirs.last_mut().expect("just pushed");
            last.marker = Some(f.try_clone().map_err(|e| Error::io("dup", &mpath, None, e))?);
            // Committed with the lines of the files made next, in their one commit
            // ([`WorkDirs::sync_markers`]): a crash before it can leave what a crash between a
            // file's creation and that commit could anyway, a file its marker may not name.
            f.write_all(text.as_bytes()).map_err(|e| Error::io("write", &mpath, None, e))?;
        }
        Ok(())
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
            let mut r = remove_owned(&d.path, &d.created, d.namespace.as_ref(), false);
            if r.stopped {
                first_err.get_or_insert(Error::Run(format!(
                    "work directory {} kept: its removal stopped at the signal ({} of its files and {} namespace items removed)",
                    d.path.display(),
                    r.removed.len(),
                    r.ns_items
                )));
            } else if let Some(e) = r.errors.drain(..).next() {
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

    /// The work directory under each logical target (a directory named twice: twice).
    pub fn by_target(&self) -> Vec<PathBuf> {
        (0..self.map.len()).map(|i| self.dir(i).to_path_buf()).collect()
    }

    /// Records the namespace of the metadata phases in every marker (committed), then makes
    /// its trees: so a crash at any point leaves nothing the marker does not account for.
    pub fn make_namespace(&mut self, p: &crate::plan::namespace::NsPlan) -> Result<()> {
        let rec = super::namespace::NsRecord::of(p);
        for d in &mut self.dirs {
            d.append(&rec.line())?;
            d.namespace = Some(rec);
        }
        self.sync_markers()?;
        super::namespace::make(&self.by_target(), p)
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

    /// A name that holds anything, or names a file or a link, is never taken over.
    #[test]
    fn refuses_an_existing_directory() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join(".iolab-xyz");
        fs::create_dir(&d).unwrap();
        fs::write(d.join("theirs"), b"theirs").unwrap();
        let e = WorkDirs::create(&spec(&[t.path()], false), "xyz").err().expect("refused").to_string();
        assert!(e.contains("mkdir") && e.contains("exists"), "{e}");
        assert_eq!(fs::read(d.join("theirs")).unwrap(), b"theirs");
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1, "nothing added");
        fs::write(t.path().join(".iolab-file"), b"x").unwrap();
        assert!(WorkDirs::create(&spec(&[t.path()], false), "file").is_err());
        std::os::unix::fs::symlink(t.path().join("elsewhere"), t.path().join(".iolab-link")).unwrap();
        fs::create_dir(t.path().join("elsewhere")).unwrap();
        assert!(WorkDirs::create(&spec(&[t.path()], false), "link").is_err());
        assert_eq!(fs::read_dir(t.path().join("elsewhere")).unwrap().count(), 0);
    }

    /// An empty directory of this user's, made as the call began, is the call's own mkdir sent
    /// twice by a network file system's client: the run goes on in it and removes it at the end.
    #[test]
    fn a_mkdir_sent_twice_is_the_runs_own_directory() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join(".iolab-twice");
        fs::create_dir(&d).unwrap();
        let mut wd = WorkDirs::create(&spec(&[t.path()], false), "twice").unwrap();
        assert!(d.join(MARKER).is_file());
        wd.cleanup().unwrap();
        assert!(!d.exists());
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
