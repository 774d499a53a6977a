//! The ownership marker of a work directory (`.iolab-owner`): which process made it, how its
//! data was written, and every file iolab created there; and the run ids that name work
//! directories.

use std::fs;
use std::path::Path;

/// Name of the marker file inside every work directory.
pub const MARKER: &str = ".iolab-owner";
/// Prefix of work directory names.
pub const PREFIX: &str = ".iolab-";
/// The first line of every marker.
pub const MAGIC: &str = "iolab work directory";

pub use super::owner::{Owner, OwnerState};

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
    /// The namespace of the metadata phases, from which every name in `md/` follows.
    pub namespace: Option<super::namespace::NsRecord>,
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
            "{MAGIC}\nversion = 1\nrun_id = {}\nhost = {}\nboot_id = {}\npid_ns = {}\n\
             boottime_offset_ns = {}\npid = {}\npid_start = {}\n\
             created_unix_s = {:.0}\nkeep = {}\nseed = {}\nbs = {}\nverify = {}\n",
            self.run_id,
            self.owner.host,
            self.owner.boot_id,
            self.owner.pid_ns,
            self.owner.boottime_offset_ns,
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
                "pid_ns" => m.owner.pid_ns = num(k, v)?,
                "boottime_offset_ns" => {
                    m.owner.boottime_offset_ns =
                        v.parse().map_err(|_| format!("`{k} = {v}` is not a number"))?
                }
                "created_unix_s" => m.created_unix_s = v.parse().unwrap_or(0.0),
                "keep" => m.keep = v == "true",
                "seed" => m.seed = num(k, v)?,
                "bs" => m.bs = num(k, v)?,
                "verify" => m.verify = v == "true",
                "written" => m.written = Some(num(k, v)? as u32),
                "namespace" => m.namespace = Some(super::namespace::NsRecord::parse(v)?),
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

/// A new run id: 128 random bits in hex; stable across stores, so imports never duplicate.
pub fn new_run_id() -> String {
    format!("{:016x}{:016x}", crate::env::sys::random_u64(), crate::env::sys::random_u64())
}
