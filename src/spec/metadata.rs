//! The namespace of the metadata phases as a spec says it (mdtest's `-n`, `-u`, `-z`, `-b`,
//! `-w`/`-e` and `-N`): how many items each worker has, whether each worker has a tree of its
//! own or all share one, the tree's depth and fan-out, the bytes a created file holds, which
//! worker's items a stat, open or read visits, and the name filter of a tree walk. Every name
//! is computed from these (`crate::plan::namespace`), never stored.

use serde::{Deserialize, Serialize};

/// The deepest tree.
pub const MAX_DEPTH: u32 = 64;

/// Where each worker's items live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MdDirs {
    /// A tree per worker (mdtest `-u`, IO500's mdtest-easy).
    #[default]
    Unique,
    /// One tree for all workers (IO500's mdtest-hard: one shared directory).
    Shared,
}

impl MdDirs {
    pub fn parse(s: &str) -> Option<MdDirs> {
        match s {
            "unique" => Some(MdDirs::Unique),
            "shared" => Some(MdDirs::Shared),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            MdDirs::Unique => "unique",
            MdDirs::Shared => "shared",
        }
    }
}

/// What a run's items are: files (create, open, read-files, unlink) or directories (mkdir,
/// rmdir); stat, rename and find work on either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    #[default]
    Files,
    Dirs,
}

impl ItemKind {
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Files => "files",
            ItemKind::Dirs => "dirs",
        }
    }
}

/// Which calls the metadata phases make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MdCalls {
    /// iolab's: each call on one name beneath its directory, opened once per directory of
    /// items; a phase's commit a syncfs; find stats every entry.
    #[default]
    Beneath,
    /// mdtest's and pfind's: each call on the item's whole path from the test directory
    /// (walked at every call), a phase's commit the `sync` command (mdtest's `-Y`); find reads
    /// every directory and stats only the names that match, counting every entry (pfind).
    Mdtest,
}

impl MdCalls {
    pub fn parse(s: &str) -> Option<MdCalls> {
        match s {
            "beneath" => Some(MdCalls::Beneath),
            "mdtest" => Some(MdCalls::Mdtest),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            MdCalls::Beneath => "beneath",
            MdCalls::Mdtest => "mdtest",
        }
    }
}

/// The namespace the metadata phases of a run work in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// Items per worker (mdtest `-n`).
    pub items: u64,
    pub dirs: MdDirs,
    /// Levels of directories below each tree's root (mdtest `-z`); 0: the root alone.
    pub depth: u32,
    /// Subdirectories per directory above the last level (mdtest `-b`).
    pub fanout: u32,
    /// Bytes `create` writes into each file and `read-files` reads back (mdtest `-w`, `-e`).
    pub file_bytes: u64,
    /// A stat, open or read of files by worker w visits worker (w + shift) mod W's items
    /// (mdtest `-N`), so no worker looks at what it made itself.
    pub shift: u32,
    /// The names `find` counts as found (`*` any run of characters, `?` one).
    pub find: String,
    /// Files or directories (from the phases).
    pub kind: ItemKind,
    /// iolab's calls or mdtest's.
    #[serde(default)]
    pub calls: MdCalls,
}

impl Namespace {
    /// Directories of one tree: 1 + B + B^2 + ... + B^D.
    pub fn tree_dirs(&self) -> u64 {
        let (mut level, mut all) = (1u64, 1u64);
        for _ in 0..self.depth {
            level = level.saturating_mul(self.fanout as u64);
            all = all.saturating_add(level);
        }
        all
    }
}
