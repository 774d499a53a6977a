//! The directory-relative system calls of the metadata phases: a directory opened beneath
//! another without following any symbolic link on the way (openat2 with RESOLVE_NO_SYMLINKS
//! and RESOLVE_BENEATH), and the `*at` calls on one name in it, none of which follows a link
//! at that name either. Each returns errno as an `io::Error`; none allocates.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

/// An open directory.
#[derive(Debug)]
pub struct Dir(OwnedFd);

/// The flags every directory is opened with.
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

impl Dir {
    /// Opens the directory at `path`, which must not itself be a symbolic link.
    pub fn open(path: &Path) -> io::Result<Dir> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` is a valid NUL-terminated path; the descriptor returned is ours.
        let fd = check(unsafe { libc::open(c.as_ptr(), DIR_FLAGS | libc::O_NOFOLLOW) })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Opens the directory `rel` (a relative path, possibly of several components) beneath
    /// this one, refusing any symbolic link and any step out of it (`..`).
    pub fn open_beneath(&self, rel: &CStr) -> io::Result<Dir> {
        // SAFETY: open_how is plain data; zeroed is a valid value to fill in.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = DIR_FLAGS as u64;
        how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH;
        // SAFETY: a valid directory descriptor, a NUL-terminated path and an open_how of the
        // size passed; the descriptor returned is ours.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.0.as_raw_fd(),
                rel.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        let fd = check(fd as libc::c_int)?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// openat2 of `rel` (a relative path of any components) beneath this directory, with
    /// `flags` and `mode`, refusing any symbolic link and any step out (`..`); the kernel
    /// walks the whole path, as an `open(path)` from the directory would.
    fn openat2(&self, rel: &CStr, flags: libc::c_int, mode: u64) -> io::Result<RawFd> {
        // SAFETY: open_how is plain data; zeroed is a valid value to fill in.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_CLOEXEC) as u64;
        how.mode = mode;
        how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH;
        // SAFETY: a valid directory descriptor, a NUL-terminated path and an open_how of the
        // size passed; the descriptor returned is the caller's.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.0.as_raw_fd(),
                rel.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        check(fd as libc::c_int)
    }

    /// Creates the file at path `rel` beneath this directory, which must not exist, for
    /// writing; no link followed on the way.
    #[inline]
    pub fn create_at_path(&self, rel: &CStr) -> io::Result<RawFd> {
        self.openat2(rel, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644)
    }

    /// Opens the file at path `rel` beneath this directory for reading (never blocking on a
    /// FIFO); no link followed on the way.
    #[inline]
    pub fn open_read_at_path(&self, rel: &CStr) -> io::Result<RawFd> {
        self.openat2(rel, libc::O_RDONLY | libc::O_NONBLOCK, 0)
    }

    /// The directory at path `rel` beneath this one as an O_PATH descriptor (for the `*at`
    /// call on a name in it), walked from here; no link followed.
    #[inline]
    pub fn dir_at_path(&self, rel: &CStr) -> io::Result<Dir> {
        let fd = self.openat2(rel, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Creates the file `name` here, which must not exist (O_CREAT|O_EXCL), for writing.
    #[inline]
    pub fn create(&self, name: &CStr) -> io::Result<RawFd> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::openat(self.fd(), name.as_ptr(), flags, 0o644 as libc::c_uint) })
    }

    /// Opens the file `name` here for reading: never through a link, never blocking on a FIFO.
    #[inline]
    pub fn open_read(&self, name: &CStr) -> io::Result<RawFd> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::openat(self.fd(), name.as_ptr(), flags) })
    }

    /// The attributes of `name` here, not following a link.
    #[inline]
    pub fn stat(&self, name: &CStr, st: &mut libc::stat) -> io::Result<()> {
        // SAFETY: a valid directory descriptor, a NUL-terminated name and a stat to fill.
        check(unsafe { libc::fstatat(self.fd(), name.as_ptr(), st, libc::AT_SYMLINK_NOFOLLOW) }).map(drop)
    }

    /// Renames `from` to `to` here, never replacing an existing `to` (RENAME_NOREPLACE).
    #[inline]
    pub fn rename(&self, from: &CStr, to: &CStr) -> io::Result<()> {
        // SAFETY: valid directory descriptors and NUL-terminated names.
        check(unsafe {
            libc::renameat2(self.fd(), from.as_ptr(), self.fd(), to.as_ptr(), libc::RENAME_NOREPLACE)
        })
        .map(drop)
    }

    /// Removes the file `name` here.
    #[inline]
    pub fn unlink(&self, name: &CStr) -> io::Result<()> {
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd(), name.as_ptr(), 0) }).map(drop)
    }

    /// Makes the directory `name` here.
    #[inline]
    pub fn mkdir(&self, name: &CStr) -> io::Result<()> {
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::mkdirat(self.fd(), name.as_ptr(), 0o755) }).map(drop)
    }

    /// Removes the (empty) directory `name` here.
    #[inline]
    pub fn rmdir(&self, name: &CStr) -> io::Result<()> {
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd(), name.as_ptr(), libc::AT_REMOVEDIR) }).map(drop)
    }

    /// Commits the directory itself (its entries).
    pub fn fsync(&self) -> io::Result<()> {
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fsync(self.fd()) }).map(drop)
    }

    /// Writes back the whole file system this directory is on (syncfs).
    pub fn syncfs(&self) -> io::Result<()> {
        // SAFETY: a valid descriptor.
        check(unsafe { libc::syncfs(self.fd()) }).map(drop)
    }

    /// Reads the next entries into `buf` (getdents64); 0 at the end.
    pub fn read_entries(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: a valid directory descriptor and a buffer of the length passed.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, self.fd(), buf.as_mut_ptr(), buf.len()) };
        if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
    }
}

/// One entry of a getdents64 buffer: its name (without the NUL) and type (`libc::DT_*`).
pub struct Entry<'a> {
    pub name: &'a [u8],
    pub kind: u8,
}

/// The entries of the first `len` bytes of a getdents64 buffer, `.` and `..` left out.
pub fn entries(buf: &[u8], len: usize) -> impl Iterator<Item = Entry<'_>> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let (e, next) = entry_at(buf, len, at)?;
        at = next;
        Some(e)
    })
}

/// The first entry at or after byte `at` of the first `len` bytes of a getdents64 buffer
/// (`.` and `..` left out), and where the next one starts: a walk that leaves a buffer for a
/// subdirectory resumes it there.
pub fn entry_at(buf: &[u8], len: usize, mut at: usize) -> Option<(Entry<'_>, usize)> {
    // struct linux_dirent64 { u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
    while at + 19 <= len {
        let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
        if reclen == 0 {
            return None;
        }
        let kind = buf[at + 18];
        let raw = &buf[at + 19..(at + reclen).min(len)];
        let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        at += reclen;
        if name != b"." && name != b".." {
            return Some((Entry { name, kind }, at));
        }
    }
    None
}

/// Writes all of `buf` to `fd` (a short write is continued; 0 bytes written is an error).
#[inline]
pub fn write_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: a valid descriptor and a buffer of the length passed.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "wrote 0 bytes"));
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Reads from `fd` until `buf` is full or the file ends: the bytes read, and the read calls it
/// took.
#[inline]
pub fn read_full(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, u64)> {
    let (mut got, mut calls) = (0usize, 0u64);
    while got < buf.len() {
        calls += 1;
        // SAFETY: a valid descriptor and the rest of a buffer of the length passed.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    Ok((got, calls))
}

/// Commits a file's data (fdatasync) or data and metadata (fsync).
#[inline]
pub fn sync_fd(fd: RawFd, data_only: bool) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    check(unsafe { if data_only { libc::fdatasync(fd) } else { libc::fsync(fd) } }).map(drop)
}

/// Closes a descriptor from [`Dir::create`] or [`Dir::open_read`].
#[inline]
pub fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is a descriptor this process opened and closes once.
    check(unsafe { libc::close(fd) }).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> std::ffi::CString {
        std::ffi::CString::new(s).unwrap()
    }

    #[test]
    fn calls_on_names_never_follow_links() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), t.path().join("sub/dangling")).unwrap();
        let d = Dir::open(t.path()).unwrap();
        assert!(d.open_beneath(&c("link")).is_err(), "a link to a directory is not followed");
        assert!(d.open_beneath(&c("sub/../link")).is_err());
        assert!(d.open_beneath(&c("..")).is_err(), "no step out");
        let sub = d.open_beneath(&c("sub")).unwrap();
        assert!(sub.create(&c("dangling")).is_err(), "a link at the name is not followed");
        assert!(!outside.path().join("x").exists());
        let fd = sub.create(&c("f")).unwrap();
        write_all(fd, b"hello").unwrap();
        close(fd).unwrap();
        assert_eq!(sub.create(&c("f")).unwrap_err().raw_os_error(), Some(libc::EEXIST));
        // SAFETY: zeroed is a valid stat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        sub.stat(&c("f"), &mut st).unwrap();
        assert_eq!(st.st_size, 5);
        let fd = sub.open_read(&c("f")).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(read_full(fd, &mut buf).unwrap(), (5, 2));
        close(fd).unwrap();
        sub.mkdir(&c("g")).unwrap();
        assert_eq!(sub.rename(&c("f"), &c("g")).unwrap_err().raw_os_error(), Some(libc::EEXIST));
        sub.rename(&c("f"), &c("f.r")).unwrap();
        let mut names = vec![];
        let mut ents = [0u8; 4096];
        loop {
            let n = sub.read_entries(&mut ents).unwrap();
            if n == 0 {
                break;
            }
            names.extend(entries(&ents, n).map(|e| (String::from_utf8_lossy(e.name).into_owned(), e.kind)));
        }
        names.sort();
        assert_eq!(
            names,
            [("dangling".into(), libc::DT_LNK), ("f.r".into(), libc::DT_REG), ("g".into(), libc::DT_DIR)]
        );
        sub.unlink(&c("f.r")).unwrap();
        sub.rmdir(&c("g")).unwrap();
        assert!(sub.unlink(&c("f.r")).is_err());
    }
}
