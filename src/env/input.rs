//! Reads the files a user names (spec files, imports): regular files only, opened without
//! blocking (a FIFO or device is refused, never waited on), and never more than a cap or the
//! size the file had when it was opened.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, Result};
use crate::units::fmt_size;

/// Most bytes a spec file may hold.
pub const SPEC_FILE_CAP: u64 = 4 << 20;

/// What a file that is not regular is, for messages: `a FIFO`, `a character device`, ...
pub fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading if it is a regular file (following symlinks): returns it and its
/// size. The open does not block (O_NONBLOCK), so a FIFO without a writer is refused at once;
/// the type is checked on the open descriptor, so it cannot change in between. The error is a
/// reason, for the caller to name the file and field with.
pub fn open_regular(path: &Path) -> std::result::Result<(File, u64), String> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("cannot open: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("cannot stat: {e}"))?;
    if !meta.file_type().is_file() {
        return Err(format!("{}, not a regular file", kind_of(meta.file_type())));
    }
    Ok((f, meta.len()))
}

/// Reads the rest of `f`, at most `size` bytes (its size when it was opened): a file that
/// grows meanwhile is read as it was.
pub fn read_to_size(f: &mut File, size: u64, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    out.try_reserve(size.saturating_sub(out.len() as u64) as usize)
        .map_err(|_| format!("{} do not fit in memory", fmt_size(size)))?;
    let start = out.len() as u64;
    f.take(size.saturating_sub(start)).read_to_end(out).map_err(|e| format!("cannot read: {e}"))?;
    Ok(())
}

/// Reads a regular file of at most `cap` bytes; the error is a reason (see [`open_regular`]).
pub fn read_regular_file(path: &Path, cap: u64) -> std::result::Result<Vec<u8>, String> {
    let (mut f, size) = open_regular(path)?;
    if size > cap {
        return Err(format!("holds {}, more than the {} allowed", fmt_size(size), fmt_size(cap)));
    }
    let mut out = vec![];
    read_to_size(&mut f, size, &mut out)?;
    Ok(out)
}

/// Reads a spec (TOML) file: regular, at most [`SPEC_FILE_CAP`] bytes, UTF-8. Errors name
/// the file (field `spec file`).
pub fn read_spec_file(path: &Path) -> Result<String> {
    let bad = |reason: String| Error::spec("spec file", path.display(), reason);
    let bytes = read_regular_file(path, SPEC_FILE_CAP)
        .map_err(|r| bad(r.replace("allowed", "a spec file may hold")))?;
    String::from_utf8(bytes)
        .map_err(|e| bad(format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_whole_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        std::fs::write(&p, b"size = \"1MiB\"\n").unwrap();
        assert_eq!(read_regular_file(&p, 14).unwrap(), b"size = \"1MiB\"\n");
        let e = read_regular_file(&p, 13).unwrap_err();
        assert!(e.contains("14 B") && e.contains("13 B"), "{e}");
        assert_eq!(read_spec_file(&p).unwrap(), "size = \"1MiB\"\n");
    }

    #[test]
    fn other_kinds_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without O_NONBLOCK this open would wait for a writer forever.
        let e = read_regular_file(&fifo, 1 << 20).unwrap_err();
        assert!(e.contains("FIFO"), "{e}");
        let e = read_regular_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.contains("character device"), "{e}");
        let e = read_regular_file(dir.path(), 1 << 20).unwrap_err();
        assert!(e.contains("directory"), "{e}");
        match read_spec_file(Path::new("/dev/zero")) {
            Err(Error::Spec { field, value, reason }) => {
                assert_eq!((field.as_str(), value.as_str()), ("spec file", "/dev/zero"));
                assert!(reason.contains("character device"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}
