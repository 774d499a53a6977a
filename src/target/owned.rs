//! Opening a file iolab created, and only that file: never through a symbolic link, only the
//! inode iolab created (device and inode numbers, recorded at its O_EXCL creation and in the
//! marker), and only while that inode has one link, so no write or truncation can reach a file
//! outside the work directory that someone linked or swapped in between two phases.
//!
//! Every open of a data file (emptying and preallocating it, laying it out, setting its cache
//! state, the engines' opens in worker threads and processes, a strategy's writers, a short
//! write's second try, layout forensics) goes through [`open`]. The checks are made on the
//! path (lstat) before opening, so nothing is even opened when the name is a link, a device or
//! a FIFO, and again on the descriptor (fstat) after, so a swap between the two is caught too;
//! the open itself has O_NOFOLLOW and O_NONBLOCK (cleared once the file is known to be the
//! right one), so it can neither follow a link nor hang on a FIFO.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which file a name must still be: the device and inode numbers of the file iolab created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(meta: &Metadata) -> FileId {
        FileId { dev: meta.dev(), ino: meta.ino() }
    }

    /// The identity of the open file `f` (named `path` in errors).
    pub fn of_file(f: &File, path: &Path) -> Result<FileId> {
        Ok(FileId::of(&f.metadata().map_err(|e| Error::io("fstat", path, None, e))?))
    }
}

/// What is wrong with what `meta` describes, if it is not the file `id` with one link.
fn fault(meta: &Metadata, id: FileId) -> Option<String> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Some("it is a symbolic link, not the file iolab created there".into());
    }
    if !ft.is_file() {
        return Some("it is not a regular file, so not the file iolab created there".into());
    }
    let here = FileId::of(meta);
    let mut why = vec![];
    if here != id {
        why.push(format!(
            "it is inode {} on device {:#x}, not inode {} on device {:#x} that iolab created there (the file was replaced)",
            here.ino, here.dev, id.ino, id.dev
        ));
    }
    if meta.nlink() != 1 {
        why.push(format!(
            "it has {} links: another name (a hard link) points at the same data, so writing it would change a file outside the work directory",
            meta.nlink()
        ));
    }
    (!why.is_empty()).then(|| why.join("; and "))
}

fn refused(path: &Path, why: String) -> Error {
    Error::io("open", path, None, io::Error::other(format!("refused: {why}")))
}

/// Opens `path`, which must be the file `id` iolab created, with one link: for reading, and
/// for writing if `write`, with the extra open flags `flags` (O_DIRECT, O_SYNC, ...). Never
/// creates or truncates. Anything else (a symbolic link, another inode, a hard link, not a
/// regular file) is an error naming the path and what is wrong.
pub fn open(path: &Path, id: FileId, write: bool, flags: i32) -> Result<File> {
    let before = std::fs::symlink_metadata(path).map_err(|e| Error::io("open", path, None, e))?;
    if let Some(why) = fault(&before, id) {
        return Err(refused(path, why));
    }
    let f = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW's answer when the name became a link after the lstat.
            Some(libc::ELOOP) => {
                refused(path, "it is a symbolic link, not the file iolab created there".into())
            }
            _ => Error::io("open", path, None, e),
        })?;
    let after = f.metadata().map_err(|e| Error::io("fstat", path, None, e))?;
    if let Some(why) = fault(&after, id) {
        return Err(refused(path, why));
    }
    // The right regular file: blocking again, as the engines expect (io_uring in particular
    // treats a non-blocking descriptor differently).
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own; no memory is passed.
    let rc = unsafe {
        let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if fl < 0 { fl } else { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK) }
    };
    if rc < 0 {
        return Err(Error::io("fcntl", path, None, io::Error::last_os_error()));
    }
    Ok(f)
}

/// The identities of the files at `paths` as they are now (lstat: a link is its own file),
/// for callers that open files they just made themselves (tests, tools).
pub fn ids_of(paths: &[std::path::PathBuf]) -> Result<Vec<FileId>> {
    paths
        .iter()
        .map(|p| {
            std::fs::symlink_metadata(p).map(|m| FileId::of(&m)).map_err(|e| Error::io("stat", p, None, e))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(p: &Path) -> FileId {
        FileId::of(&std::fs::symlink_metadata(p).unwrap())
    }

    fn refusal(r: Result<File>) -> String {
        match r {
            Err(e @ Error::Io { .. }) => e.to_string(),
            Err(other) => panic!("expected an Io error, got {other:?}"),
            Ok(_) => panic!("opened"),
        }
    }

    #[test]
    fn opens_the_file_it_was_given_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let (ours, victim) = (t.path().join("w0000.dat"), t.path().join("victim"));
        std::fs::write(&ours, b"ours").unwrap();
        std::fs::write(&victim, b"precious").unwrap();
        let me = id(&ours);
        let f = open(&ours, me, true, 0).unwrap();
        // SAFETY: F_GETFL on an open descriptor.
        let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(fl & libc::O_NONBLOCK, 0, "blocking once checked");
        drop(f);

        // A symbolic link to a file elsewhere, in its place.
        let keep = t.path().join("kept");
        std::fs::rename(&ours, &keep).unwrap();
        std::os::unix::fs::symlink(&victim, &ours).unwrap();
        let e = refusal(open(&ours, me, true, 0));
        assert!(e.starts_with(&format!("open on {}: refused: it is a symbolic link", ours.display())), "{e}");

        // A hard link to a file elsewhere: another inode, with two links.
        std::fs::remove_file(&ours).unwrap();
        std::fs::hard_link(&victim, &ours).unwrap();
        let e = refusal(open(&ours, me, true, 0));
        assert!(e.contains(&format!("it is inode {} on device", id(&victim).ino)), "{e}");
        assert!(e.contains("it has 2 links"), "{e}");

        // Our own file, hard-linked from elsewhere: the right inode, but two names.
        std::fs::remove_file(&ours).unwrap();
        std::fs::rename(&keep, &ours).unwrap();
        std::fs::hard_link(&ours, t.path().join("elsewhere")).unwrap();
        let e = refusal(open(&ours, me, true, 0));
        assert!(!e.contains("replaced") && e.contains("it has 2 links"), "{e}");

        // A FIFO is refused without opening it (which would block).
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = refusal(open(&fifo, id(&fifo), false, 0));
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }
}
