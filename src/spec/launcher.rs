//! How workers come to exist, as a spec says it: the launcher word, and for MPI ranks which
//! rank reads what another wrote.

use serde::{Deserialize, Serialize};

/// How workers are started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Threads of the iolab process.
    #[default]
    Thread,
    /// Child processes: the binary re-executes itself once per worker.
    Process,
    /// MPI ranks (`mpirun -np N iolab ...`, in a build with the `mpi` feature): every rank
    /// runs workers; rank 0 plans, gathers and stores.
    Mpi,
}

impl Launcher {
    pub const ALL: [Launcher; 3] = [Launcher::Thread, Launcher::Process, Launcher::Mpi];

    /// The word a spec uses.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Thread => "thread",
            Launcher::Process => "process",
            Launcher::Mpi => "mpi",
        }
    }

    /// The launcher named `s` (or its plural).
    pub fn parse(s: &str) -> Option<Launcher> {
        let plural = |l: Launcher| match l {
            Launcher::Thread => "threads",
            Launcher::Process => "processes",
            Launcher::Mpi => "mpi",
        };
        Launcher::ALL.into_iter().find(|&l| s == l.name() || s == plural(l))
    }
}

/// MPI read reordering: rank r reads what rank r + shift wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reorder {
    /// A fixed number of ranks.
    Shift(u32),
    /// The ranks per host (rank 0's host), so reads come from another host.
    Node,
}

impl Reorder {
    /// The value a spec uses: a number, or `node`.
    pub fn label(self) -> String {
        match self {
            Reorder::Shift(n) => n.to_string(),
            Reorder::Node => "node".into(),
        }
    }
}

/// The MPI-IO engine's settings (`engine = mpiio`): collective or independent data calls, and
/// the hints given to `MPI_File_open` (ROMIO's `cb_nodes`, `romio_cb_write`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MpiIo {
    /// `MPI_File_write_at_all` / `read_at_all` rather than `write_at` / `read_at`.
    pub collective: bool,
    /// (key, value) pairs, in the order given.
    #[serde(default)]
    pub hints: Vec<(String, String)>,
}
