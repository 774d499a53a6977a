//! Work directories: iolab writes only inside a directory it creates under each target,
//! marked with an ownership file, and deletes only the files it created there.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Name of the marker file inside every work directory.
pub const MARKER: &str = ".iolab-owner";
/// Prefix of work directory names.
pub const PREFIX: &str = ".iolab-";

/// The work directories of one run, one per target, removed on drop unless kept.
pub struct WorkDirs {
    dirs: Vec<PathBuf>,
    /// Files created inside them (only these are ever deleted).
    created: Vec<PathBuf>,
    keep: bool,
}

impl WorkDirs {
    /// Creates `TARGET/.iolab-RUNID/` with its marker under each target. Fails rather than
    /// reuse anything that exists. A target listed twice (several logical targets on one
    /// disk) shares one work directory.
    pub fn create(targets: &[PathBuf], run_id: &str, keep: bool) -> Result<WorkDirs> {
        let mut wd = WorkDirs { dirs: vec![], created: vec![], keep };
        for (i, t) in targets.iter().enumerate() {
            let d = t.join(format!("{PREFIX}{run_id}"));
            if targets[..i].contains(t) {
                wd.dirs.push(d);
                continue;
            }
            fs::create_dir(&d).map_err(|e| Error::io("mkdir", &d, None, e))?;
            wd.dirs.push(d.clone());
            let marker = d.join(MARKER);
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&marker)
                .map_err(|e| Error::io("open", &marker, None, e))?;
            let text = format!(
                "iolab work directory\nrun_id = {run_id}\npid = {}\ncreated_unix_s = {:.0}\n",
                std::process::id(),
                crate::sys::unix_time_s()
            );
            f.write_all(text.as_bytes()).map_err(|e| Error::io("write", &marker, None, e))?;
        }
        Ok(wd)
    }

    /// The work directory under target `i`.
    pub fn dir(&self, i: usize) -> &Path {
        &self.dirs[i]
    }

    /// Creates a new, empty data file (never an existing one) and remembers it for removal.
    pub fn create_file(&mut self, path: &Path) -> Result<fs::File> {
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("open", path, None, e))?;
        self.created.push(path.to_path_buf());
        Ok(f)
    }

    /// Whether `path` is a file this run created.
    pub fn owns(&self, path: &Path) -> bool {
        self.created.iter().any(|p| p == path)
    }

    /// Removes the created files, the markers and the directories (unless kept).
    pub fn cleanup(&mut self) -> Result<()> {
        if self.keep {
            return Ok(());
        }
        let mut first_err = None;
        for p in self.created.drain(..) {
            if let Err(e) = fs::remove_file(&p)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                first_err.get_or_insert(Error::io("unlink", &p, None, e));
            }
        }
        // A repeated target shares its directory: remove each directory once.
        let mut removed: Vec<PathBuf> = vec![];
        for d in self.dirs.drain(..) {
            if removed.contains(&d) {
                continue;
            }
            removed.push(d.clone());
            let _ = fs::remove_file(d.join(MARKER));
            if let Err(e) = fs::remove_dir(&d) {
                first_err.get_or_insert(Error::io("rmdir", &d, None, e));
            }
        }
        first_err.map_or(Ok(()), Err)
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

    #[test]
    fn creates_marks_and_removes_only_its_own() {
        let t = tempfile::tempdir().unwrap();
        let targets = vec![t.path().to_path_buf()];
        let mut wd = WorkDirs::create(&targets, "abc", false).unwrap();
        let d = wd.dir(0).to_path_buf();
        assert!(d.join(MARKER).exists());
        let f = d.join("w0000.dat");
        wd.create_file(&f).unwrap();
        assert!(wd.create_file(&f).is_err(), "never reuses an existing file");
        // A file the user put in the work directory is not iolab's to delete.
        fs::write(d.join("user.txt"), b"mine").unwrap();
        assert!(wd.cleanup().is_err(), "rmdir fails because of the user's file");
        assert!(!f.exists());
        assert_eq!(fs::read(d.join("user.txt")).unwrap(), b"mine");
    }

    #[test]
    fn a_repeated_target_shares_one_directory() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().to_path_buf();
        let mut wd = WorkDirs::create(&[p.clone(), p.clone(), p], "rep", false).unwrap();
        assert_eq!(wd.dir(0), wd.dir(2));
        wd.create_file(&wd.dir(1).join("a.s01.dat")).unwrap();
        wd.create_file(&wd.dir(2).join("a.s02.dat")).unwrap();
        wd.cleanup().unwrap();
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn refuses_an_existing_directory() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join(".iolab-xyz")).unwrap();
        assert!(WorkDirs::create(&[t.path().to_path_buf()], "xyz", false).is_err());
        assert!(t.path().join(".iolab-xyz").exists());
    }
}
