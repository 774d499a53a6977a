//! The words of the compute/I-O overlap strategies (Benson, Long and Pacheco 2003): which
//! strategy, and the roles its workers play.

use serde::{Deserialize, Serialize};

/// One of the study's parallelisation strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// Every worker computes and writes its own file, syncing on its own.
    S1A,
    /// As S1A, but only one sync is in flight at a time (a token).
    S1B,
    /// Every worker computes; worker 0 also writes everything to one file, receiving the
    /// others' buffers each iteration, and syncs.
    S2,
    /// One worker computes everything, the other writes it to one file and syncs.
    S3,
    /// As S2, but a sync thread of the writer commits, woken every sync size.
    S5,
    /// As S2 on MPI ranks, strided data sent as an MPI derived datatype instead of packed.
    S2DT,
    /// As S3 on MPI ranks, strided data sent as an MPI derived datatype instead of packed.
    S3DT,
    /// Every MPI rank computes and writes its parts of the one file with
    /// `MPI_File_write_at_all` through a file view; commits are `MPI_File_sync`.
    #[serde(rename = "MPI-IO")]
    MpiIo,
}

impl Strategy {
    pub const NAMES: &'static [&'static str] = &["S1A", "S1B", "S2", "S3", "S5", "S2DT", "S3DT", "MPI-IO"];

    pub fn parse(s: &str) -> Option<Strategy> {
        Some(match s.to_ascii_uppercase().as_str() {
            "S1A" => Strategy::S1A,
            "S1B" => Strategy::S1B,
            "S2" => Strategy::S2,
            "S3" => Strategy::S3,
            "S5" => Strategy::S5,
            "S2DT" => Strategy::S2DT,
            "S3DT" => Strategy::S3DT,
            "MPI-IO" | "MPIIO" => Strategy::MpiIo,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Strategy::NAMES[self as usize]
    }

    /// Every worker writes its own file (else one writer writes one file).
    pub fn own_files(self) -> bool {
        matches!(self, Strategy::S1A | Strategy::S1B)
    }

    /// The order of the study's table (Fig. 1): each strategy beside its derived-datatype form.
    pub const TABLE_ORDER: [Strategy; 8] = [
        Strategy::S1A,
        Strategy::S1B,
        Strategy::S2,
        Strategy::S2DT,
        Strategy::S3,
        Strategy::S3DT,
        Strategy::S5,
        Strategy::MpiIo,
    ];

    /// Its column in the study's table.
    pub fn table_rank(self) -> usize {
        Strategy::TABLE_ORDER.iter().position(|&s| s == self).unwrap_or(0)
    }

    /// Only MPI ranks can run it (derived datatypes, MPI-IO).
    pub fn mpi_only(self) -> bool {
        matches!(self, Strategy::S2DT | Strategy::S3DT | Strategy::MpiIo)
    }

    /// Strided data travels as an MPI derived datatype (else it is packed before it is sent).
    pub fn datatypes(self) -> bool {
        matches!(self, Strategy::S2DT | Strategy::S3DT)
    }

    /// The study's one-line description.
    pub fn about(self) -> &'static str {
        match self {
            Strategy::S1A => "every worker computes and writes its own file, syncing on its own",
            Strategy::S1B => "as S1A, with one sync in flight at a time",
            Strategy::S2 => "all compute; worker 0 receives the others' buffers and writes one file",
            Strategy::S3 => "worker 1 computes everything; worker 0 writes it to one file",
            Strategy::S5 => "as S2, with a sync thread in the writer woken every sync size",
            Strategy::S2DT => "as S2 on MPI ranks, strided data sent as a derived datatype",
            Strategy::S3DT => "as S3 on MPI ranks, strided data sent as a derived datatype",
            Strategy::MpiIo => {
                "every rank computes and writes its parts with MPI_File_write_at_all through a file view"
            }
        }
    }
}

/// What a worker (or the S5 sync thread) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Computes its part and writes it (S1A, S1B; worker 0 of S2 and S5, which also receives
    /// the other parts).
    ComputeWrite,
    /// Computes and hands its output to the writer.
    Compute,
    /// Only writes what it receives (worker 0 of S3).
    Write,
    /// The S5 sync thread inside the writer: commits when woken.
    Sync,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::ComputeWrite, Role::Compute, Role::Write, Role::Sync];

    /// The role of this name ([`Role::name`]), if there is one.
    pub fn named(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::ComputeWrite => "compute-write",
            Role::Compute => "compute",
            Role::Write => "write",
            Role::Sync => "sync",
        }
    }
}
