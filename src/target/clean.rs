//! Work directories left behind (by a crash, kill -9, a file system that turned read-only, or
//! `--keep`): finding them under a target, so `iolab run` can warn about them, and removing
//! them with `iolab clean`, by the one rule of [`crate::target::workdir::remove_owned`].
//!
//! `iolab clean DIR` looks only at entries of DIR named `.iolab-*` (or at DIR itself if it is
//! one). It touches one only if it is a real directory holding a valid marker for its own run
//! id, and only if the process that made it is gone: a directory whose owner still runs on this
//! machine is in use, one whose owner ran in a PID namespace that cannot all be seen from here
//! may be, and one made on another host is left alone; `--force` says no iolab runs there.
//! Anything else is reported and left untouched.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::target::workdir::{MARKER, Marker, Owner, OwnerState, PREFIX, remove_owned};
use crate::units::fmt_size;

/// A work directory found under a target.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub marker: Marker,
    pub state: OwnerState,
}

impl Found {
    /// Bytes of the files its marker names that are still there.
    pub fn bytes(&self) -> u64 {
        self.marker
            .files
            .iter()
            .filter_map(|(n, _)| fs::symlink_metadata(self.path.join(n)).ok())
            .map(|m| m.len())
            .sum()
    }

    /// What it holds, in words: the bytes of its files, and the items of its namespace, counted
    /// by the namespace's rule without removing anything (`1.00 GiB`, `0 B and 102400 items`).
    pub fn holds(&self) -> String {
        let mut bytes = self.bytes();
        let Some(rec) = &self.marker.namespace else { return fmt_size(bytes) };
        let ns = super::namespace::remove(&self.path, rec, true);
        bytes += ns.bytes;
        let what = if rec.kind == crate::spec::ItemKind::Dirs { "directory items" } else { "items" };
        format!("{} and {} {what} of metadata phases", fmt_size(bytes), ns.items)
    }

    /// Who left it, in words.
    pub fn origin(&self) -> String {
        let o = &self.marker.owner;
        let ns = match o.pid_ns {
            0 => String::new(),
            n if n == Owner::current().pid_ns => String::new(),
            n => format!(" in PID namespace pid:[{n}]"),
        };
        let who = format!("run {} (pid {}{ns} on {})", self.marker.run_id, o.pid, o.host);
        match &self.state {
            OwnerState::Running => format!("in use by running {who}"),
            OwnerState::Gone if self.marker.keep => format!("kept by {who} with --keep"),
            OwnerState::Gone => format!("left by {who}, which is gone"),
            OwnerState::OtherHost(h) => format!("made on host {h} by {who}"),
            OwnerState::Unknown(why) => format!("made by {who}, which may still run: {why}"),
        }
    }
}

/// An `.iolab-*` entry: a work directory, or something else with the reason it is not one.
#[derive(Debug)]
pub enum Entry {
    Work(Found),
    NotWork { path: PathBuf, reason: String },
}

fn classify(path: PathBuf, me: &Owner) -> Entry {
    match Marker::read(&path) {
        Ok(marker) => {
            let state = marker.owner.state(me);
            Entry::Work(Found { path, marker, state })
        }
        Err(reason) => Entry::NotWork { path, reason },
    }
}

/// The `.iolab-*` entries directly under `target`, by name.
pub fn scan(target: &Path) -> std::io::Result<Vec<Entry>> {
    let me = Owner::current();
    let mut names: Vec<PathBuf> = fs::read_dir(target)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
        .map(|e| e.path())
        .collect();
    names.sort();
    Ok(names.into_iter().map(|p| classify(p, &me)).collect())
}

/// Work directories under `targets` whose owner is not running here (crashed, killed, kept,
/// or from another host), excluding run `except`; each target is scanned once.
pub fn leftovers(targets: &[PathBuf], except: Option<&str>) -> Vec<Found> {
    let mut seen: Vec<&PathBuf> = vec![];
    let mut out = vec![];
    for t in targets {
        if seen.contains(&t) {
            continue;
        }
        seen.push(t);
        for e in scan(t).unwrap_or_default() {
            if let Entry::Work(f) = e
                && f.state != OwnerState::Running
                && Some(f.marker.run_id.as_str()) != except
            {
                out.push(f);
            }
        }
    }
    out
}

/// The warning `iolab run` prints when its targets hold work directories of earlier runs.
pub fn leftovers_warning(targets: &[PathBuf], except: Option<&str>) -> Option<String> {
    let found = leftovers(targets, except);
    if found.is_empty() {
        return None;
    }
    let mut s = format!(
        "warning: {} work director{} of earlier iolab runs found:\n",
        found.len(),
        if found.len() == 1 { "y" } else { "ies" }
    );
    let mut dirs: Vec<String> = vec![];
    for f in &found {
        s += &format!("  {} ({}, {})\n", crate::text::escape_path(&f.path), f.holds(), f.origin());
        let parent = crate::text::escape_path(f.path.parent().unwrap_or(Path::new(".")));
        if !dirs.contains(&parent) {
            dirs.push(parent);
        }
    }
    s += &format!("  remove them with `iolab clean {}`", dirs.join(" "));
    Some(s)
}

/// Whether `path` is a directory (not a link) named `.iolab-RUNID` with a run id's shape (32 hex
/// digits) holding nothing but, at most, an empty marker: a run's work directory whose marker
/// was never written or never committed (the file system failed or turned read-only, or the
/// machine stopped, between the mkdir and the marker's first commit, which comes once the run's
/// files are made). Removing it loses nothing: the empty marker goes first, if it is still empty
/// and alone, then `rmdir`, which removes only an empty directory.
fn unmarked_run_dir(path: &Path) -> bool {
    let id = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix(PREFIX));
    let shaped = id.is_some_and(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    shaped && fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) && only_an_empty_marker(path)
}

/// Whether directory `path` holds nothing, or only a marker of 0 bytes that is a plain file.
fn only_an_empty_marker(path: &Path) -> bool {
    let Ok(entries) = fs::read_dir(path) else { return false };
    let names: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.file_name()).take(2).collect();
    match names.as_slice() {
        [] => true,
        [n] if n == MARKER => {
            fs::symlink_metadata(path.join(MARKER)).is_ok_and(|m| m.is_file() && m.len() == 0)
        }
        _ => false,
    }
}

/// Removes a directory [`unmarked_run_dir`] accepted: its empty marker, if it is still that,
/// then the directory.
fn remove_unmarked(path: &Path) -> std::io::Result<()> {
    let marker = path.join(MARKER);
    if only_an_empty_marker(path) && marker.exists() {
        fs::remove_file(&marker)?;
    }
    fs::remove_dir(path)
}

/// Options of `iolab clean`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CleanOpts {
    /// Report what would be removed, remove nothing.
    pub dry_run: bool,
    /// Also remove directories made on another host.
    pub force: bool,
}

/// Cleans the work directories under (or at) `target`, appending one report line per entry
/// to `report`. Returns the calls that failed.
pub fn clean(target: &Path, opts: CleanOpts, report: &mut String) -> Result<Vec<Error>> {
    let meta =
        fs::metadata(target).map_err(|e| Error::spec("dir", target.display(), format!("cannot use: {e}")))?;
    if !meta.is_dir() {
        return Err(Error::spec("dir", target.display(), "not a directory"));
    }
    let is_work = target.file_name().is_some_and(|n| n.to_string_lossy().starts_with(PREFIX))
        && Marker::read(target).is_ok();
    let entries = if is_work {
        vec![classify(target.to_path_buf(), &Owner::current())]
    } else {
        scan(target).map_err(|e| Error::io("readdir", target, None, e))?
    };
    let mut errors = vec![];
    if entries.is_empty() {
        *report += &format!("{}: no iolab work directories\n", crate::text::escape_path(target));
    }
    for e in entries {
        if let Err(stop) = crate::env::signals::check() {
            errors.push(stop);
            break;
        }
        let f = match e {
            Entry::NotWork { path, .. } if unmarked_run_dir(&path) => {
                let p = crate::text::escape_path(&path);
                let what = "an empty work directory whose marker was never written or committed";
                if opts.dry_run {
                    *report += &format!("{p}: would remove ({what})\n");
                } else if let Err(e) = remove_unmarked(&path) {
                    *report += &format!("{p}: kept ({what}): {e}\n");
                    errors.push(Error::io("rmdir", &path, None, e));
                } else {
                    *report += &format!("{p}: removed ({what})\n");
                }
                continue;
            }
            Entry::NotWork { path, reason } => {
                *report += &format!(
                    "{}: not touched: not an iolab work directory ({reason})\n",
                    crate::text::escape_path(&path)
                );
                continue;
            }
            Entry::Work(f) => f,
        };
        let p = crate::text::escape_path(&f.path);
        match &f.state {
            OwnerState::Running => {
                *report += &format!("{p}: not touched: {}\n", f.origin());
                continue;
            }
            OwnerState::OtherHost(_) if !opts.force => {
                *report += &format!(
                    "{p}: not touched: {}; iolab cannot tell whether it still runs there (--force removes it)\n",
                    f.origin()
                );
                continue;
            }
            OwnerState::Unknown(_) if !opts.force => {
                *report += &format!("{p}: not touched: {} (--force removes it)\n", f.origin());
                continue;
            }
            _ => {}
        }
        let mut r = remove_owned(&f.path, &f.marker.files, f.marker.namespace.as_ref(), opts.dry_run);
        if r.stopped {
            *report += &format!(
                "{p}: stopped by the signal after removing {} file{} and {} namespace item{}; the rest stays with its marker (`iolab clean` again removes it)\n",
                r.removed.len(),
                if r.removed.len() == 1 { "" } else { "s" },
                r.ns_items,
                if r.ns_items == 1 { "" } else { "s" }
            );
            errors.append(&mut r.errors);
            break;
        }
        let verb = if opts.dry_run { "would remove" } else { "removed" };
        let items = match f.marker.namespace {
            Some(_) => {
                format!(" and {} namespace item{}", r.ns_items, if r.ns_items == 1 { "" } else { "s" })
            }
            None => String::new(),
        };
        let files = format!(
            "{} file{}{items}, {}",
            r.removed.len(),
            if r.removed.len() == 1 { "" } else { "s" },
            fmt_size(r.bytes())
        );
        if r.dir_removed {
            *report += &format!("{p}: {verb} ({files}; {})\n", f.origin());
        } else {
            let left: Vec<String> = r.left.iter().map(|(n, why)| format!("{n} ({why})")).collect();
            let why = if left.is_empty() { "an error".to_string() } else { left.join(", ") };
            *report += &format!("{p}: {verb} {files}; kept the directory because of {why}\n");
        }
        errors.append(&mut r.errors);
    }
    Ok(errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::workdir::{MAGIC, MARKER};
    use std::os::unix::fs::MetadataExt;

    fn marker(dir: &Path, id: &str, owner: &Owner, files: &[&str]) {
        fs::create_dir(dir).unwrap();
        let mut m = Marker { run_id: id.into(), owner: owner.clone(), ..Default::default() };
        for f in files {
            fs::write(dir.join(f), b"data").unwrap();
            m.files.push((f.to_string(), fs::metadata(dir.join(f)).unwrap().ino()));
        }
        let mut text = m.header();
        for (n, i) in &m.files {
            text += &format!("file = {i} {n}\n");
        }
        fs::write(dir.join(MARKER), text).unwrap();
    }

    #[test]
    fn removes_only_dead_owners_marked_files() {
        let t = tempfile::tempdir().unwrap();
        let me = Owner::current();
        let dead = Owner { pid: 999_999_999, ..me.clone() };
        marker(&t.path().join(".iolab-dead"), "dead", &dead, &["w0000.dat"]);
        marker(&t.path().join(".iolab-live"), "live", &me, &["w0000.dat"]);
        let other = Owner { host: "elsewhere".into(), ..dead.clone() };
        marker(&t.path().join(".iolab-far"), "far", &other, &["a.dat"]);
        fs::create_dir(t.path().join(".iolab-mine")).unwrap();
        fs::write(t.path().join(".iolab-mine/notes"), b"x").unwrap();
        fs::create_dir(t.path().join(".iolab-liar")).unwrap();
        fs::write(t.path().join(".iolab-liar").join(MARKER), format!("{MAGIC}\nrun_id = other\n")).unwrap();
        marker(&t.path().join(".iolab-mixed"), "mixed", &dead, &["w0000.dat"]);
        // A run's directory whose marker was never written: empty, a run id's name.
        let unmarked = t.path().join(".iolab-0123456789abcdef0123456789abcdef");
        fs::create_dir(&unmarked).unwrap();
        // One whose marker was made but never committed (the machine stopped before): 0 bytes.
        let uncommitted = t.path().join(".iolab-00000000000000000000000000000001");
        fs::create_dir(&uncommitted).unwrap();
        fs::write(uncommitted.join(MARKER), b"").unwrap();
        // And one such with a file beside it, which no marker names: left alone.
        let unnamed = t.path().join(".iolab-00000000000000000000000000000002");
        fs::create_dir(&unnamed).unwrap();
        fs::write(unnamed.join(MARKER), b"").unwrap();
        fs::write(unnamed.join("w0000.dat"), b"data").unwrap();
        fs::create_dir(t.path().join(".iolab-empty")).unwrap();
        fs::write(t.path().join(".iolab-mixed/user.txt"), b"keep me").unwrap();

        let mut dry = String::new();
        assert!(clean(t.path(), CleanOpts { dry_run: true, force: false }, &mut dry).unwrap().is_empty());
        assert!(t.path().join(".iolab-dead/w0000.dat").exists(), "a dry run removes nothing");
        assert!(dry.contains(".iolab-dead: would remove (1 file, 4 B;"), "{dry}");

        assert!(unmarked.exists(), "a dry run removes nothing");
        assert!(dry.contains("abcdef: would remove (an empty work directory whose marker"), "{dry}");
        let mut report = String::new();
        assert!(clean(t.path(), CleanOpts::default(), &mut report).unwrap().is_empty());
        assert!(!t.path().join(".iolab-dead").exists(), "{report}");
        assert!(!unmarked.exists(), "{report}");
        assert!(!uncommitted.exists(), "{report}");
        assert!(report.contains("00000001: removed (an empty work directory"), "{report}");
        assert_eq!(fs::read(unnamed.join("w0000.dat")).unwrap(), b"data", "{report}");
        assert!(unnamed.join(MARKER).exists(), "{report}");
        assert!(t.path().join(".iolab-empty").exists(), "not a run id's name: {report}");
        assert!(t.path().join(".iolab-live/w0000.dat").exists(), "a running owner's files stay");
        assert!(report.contains(".iolab-live: not touched: in use by running run live"), "{report}");
        assert!(t.path().join(".iolab-far/a.dat").exists());
        assert_eq!(fs::read(t.path().join(".iolab-mine/notes")).unwrap(), b"x");
        assert!(
            report.contains(".iolab-mine: not touched: not an iolab work directory (no .iolab-owner file)")
        );
        assert!(report.contains(".iolab-liar: not touched"), "{report}");
        assert!(!t.path().join(".iolab-mixed/w0000.dat").exists());
        assert_eq!(fs::read(t.path().join(".iolab-mixed/user.txt")).unwrap(), b"keep me");
        assert!(report.contains("user.txt (not created by iolab)"), "{report}");

        let mut forced = String::new();
        clean(t.path(), CleanOpts { dry_run: false, force: true }, &mut forced).unwrap();
        assert!(!t.path().join(".iolab-far").exists(), "{forced}");
    }

    #[test]
    fn a_symlinked_work_directory_is_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let dead = Owner { pid: 999_999_999, ..Owner::current() };
        marker(&elsewhere.path().join(".iolab-x"), "x", &dead, &["w0000.dat"]);
        std::os::unix::fs::symlink(elsewhere.path().join(".iolab-x"), t.path().join(".iolab-x")).unwrap();
        let mut report = String::new();
        clean(t.path(), CleanOpts::default(), &mut report).unwrap();
        assert!(elsewhere.path().join(".iolab-x/w0000.dat").exists(), "{report}");
        assert!(report.contains("not a directory"), "{report}");
    }
}
