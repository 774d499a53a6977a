//! The mount table as /proc/self/mountinfo gives it, one parser for every reader (host facts,
//! the cgroup's memory limit, the device guard): each line's fields, its paths and source
//! decoded per proc(5), whose octal escapes stand for a space (`\040`), a tab (`\011`), a
//! newline (`\012`) and a backslash (`\134`).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountLine {
    /// `MAJOR:MINOR` of its device.
    pub dev: String,
    /// The directory of its file system it shows (`/` unless a bind mount of a subdirectory).
    pub root: PathBuf,
    pub mount_point: PathBuf,
    /// The mount's own options, then its file system's (`rw,relatime,rw,discard`).
    pub options: String,
    pub fs_type: String,
    /// What was mounted: a device, `mfs#10.0.0.1:9421`, `h1:pfs`.
    pub source: String,
    /// The file system's options alone.
    pub super_options: String,
}

/// Undoes mountinfo's octal escapes (`\040` for a space, `\134` for a backslash), as bytes.
pub fn unescape_bytes(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Three octal digits that make a byte (at most \377).
        let octal =
            i + 3 < b.len() && b[i + 1] <= b'3' && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c));
        if b[i] == b'\\' && octal {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// [`unescape_bytes`] as text (bytes that are not UTF-8 replaced).
pub fn unescape(s: &str) -> String {
    String::from_utf8_lossy(&unescape_bytes(s)).into_owned()
}

fn path(s: &str) -> PathBuf {
    PathBuf::from(OsString::from_vec(unescape_bytes(s)))
}

/// One line of the table; None for a line not shaped as mountinfo's.
pub fn parse_line(line: &str) -> Option<MountLine> {
    let (pre, post) = line.split_once(" - ")?;
    let f: Vec<&str> = pre.split(' ').collect();
    let g: Vec<&str> = post.split(' ').collect();
    if f.len() < 6 || g.len() < 3 {
        return None;
    }
    Some(MountLine {
        dev: f[2].to_string(),
        root: path(f[3]),
        mount_point: path(f[4]),
        options: format!("{},{}", f[5], g[2]),
        fs_type: unescape(g[0]),
        source: unescape(g[1]),
        super_options: g[2].to_string(),
    })
}

/// Every mount of a table's text, in its order.
pub fn parse(text: &str) -> impl Iterator<Item = MountLine> + '_ {
    text.lines().filter_map(parse_line)
}

/// This process's mount table (empty when it cannot be read).
pub fn read() -> Vec<MountLine> {
    parse(&super::sys::read_kernel_file("/proc/self/mountinfo").unwrap_or_default()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// A mount point with each of proc(5)'s escapes, and a source with a space, read back as
    /// they are; a backslash not followed by three octal digits stays as written.
    #[test]
    fn fields_are_decoded_per_proc_5() {
        let line = "36 35 0:40 /sub /mnt/a\\040b\\011c\\012d\\134e rw,relatime shared:1 - fuse.sshfs me@h:/x\\040y rw,user_id=0";
        let m = parse_line(line).unwrap();
        assert_eq!(m.mount_point.as_os_str().as_bytes(), b"/mnt/a b\tc\nd\\e");
        assert_eq!(m.root, PathBuf::from("/sub"));
        assert_eq!(
            (m.dev.as_str(), m.fs_type.as_str(), m.source.as_str()),
            ("0:40", "fuse.sshfs", "me@h:/x y")
        );
        assert_eq!(m.options, "rw,relatime,rw,user_id=0");
        assert_eq!(unescape("a\\9b\\04"), "a\\9b\\04");
        assert_eq!(parse_line("not a mount"), None);
    }
}
