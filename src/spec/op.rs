//! What a phase does: write, rewrite or read data, or both in one stream (rw), blast bytes at
//! a server, or one of the metadata phases on the namespace's items (create, stat, open,
//! read-files, rename, unlink, mkdir, rmdir, find).

use serde::{Deserialize, Serialize};

/// What a phase does to the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// Files are created empty (or truncated) before the phase, then written.
    Write,
    /// Existing data is overwritten in place.
    Rewrite,
    /// Existing data is read.
    Read,
    /// Existing data is read and overwritten in place, each op's direction drawn from the
    /// seeded generator by the read share (fio's `rw`/`randrw` with `rwmixread`).
    Rw,
    /// Bytes sent to an I/O-server rank, which counts and drops them (Russell's network
    /// blast): no file anywhere.
    Blast,
    /// Metadata: each worker creates its items (files, each written with `file_bytes`) and
    /// closes them.
    Create,
    /// Metadata: each item's attributes looked up (fstatat, not following links).
    Stat,
    /// Metadata: each file opened and closed.
    Open,
    /// Metadata: each file opened, read whole and closed.
    #[serde(rename = "read-files")]
    ReadFiles,
    /// Metadata: each item renamed within its directory (and back, the next time).
    Rename,
    /// Metadata: each file removed.
    Unlink,
    /// Metadata: each item made as a directory.
    Mkdir,
    /// Metadata: each directory item removed.
    Rmdir,
    /// Metadata: the trees walked (readdir, and a stat of every entry), names matched.
    Find,
}

impl OpKind {
    /// Writes data and only writes it (to files or, in a blast, to a server).
    pub fn is_write(self) -> bool {
        matches!(self, OpKind::Write | OpKind::Rewrite | OpKind::Blast)
    }
    /// Writes data, alone or among reads (a mixed phase): its files are opened for writing
    /// and its commits follow the sync policy.
    pub fn writes(self) -> bool {
        self.is_write() || self == OpKind::Rw
    }
    /// Reads data, alone or among writes.
    pub fn reads(self) -> bool {
        matches!(self, OpKind::Read | OpKind::Rw)
    }
    /// Works on the namespace's items rather than on data files.
    pub fn is_metadata(self) -> bool {
        !matches!(self, OpKind::Write | OpKind::Rewrite | OpKind::Read | OpKind::Rw | OpKind::Blast)
    }
    /// A metadata phase that makes its items (and so may be stonewalled).
    pub fn makes_items(self) -> bool {
        matches!(self, OpKind::Create | OpKind::Mkdir)
    }
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Rewrite => "rewrite",
            OpKind::Read => "read",
            OpKind::Rw => "rw",
            OpKind::Blast => "blast",
            OpKind::Create => "create",
            OpKind::Stat => "stat",
            OpKind::Open => "open",
            OpKind::ReadFiles => "read-files",
            OpKind::Rename => "rename",
            OpKind::Unlink => "unlink",
            OpKind::Mkdir => "mkdir",
            OpKind::Rmdir => "rmdir",
            OpKind::Find => "find",
        }
    }
    /// The metadata ops, as `--op` names them.
    pub const METADATA: [OpKind; 9] = [
        OpKind::Create,
        OpKind::Stat,
        OpKind::Open,
        OpKind::ReadFiles,
        OpKind::Rename,
        OpKind::Unlink,
        OpKind::Mkdir,
        OpKind::Rmdir,
        OpKind::Find,
    ];
}
