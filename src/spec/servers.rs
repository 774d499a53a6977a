//! I/O-server ranks as a spec says them (Russell 1998's BPFS servers, the I/O nodes of Intel
//! CFS): how many MPI ranks serve the files, the directory each keeps its files in, how many
//! requests a client keeps in flight per server, whether servers use their disk or only memory,
//! and how a network blast moves its bytes.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The ranks that serve: the last `count` ranks of the MPI world; the first `workers` ranks
/// are the clients (worker i on rank i).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Servers {
    pub count: u32,
    /// Each server's directory on its own host (node-local): its work directory, with the
    /// files (or stripe components) it holds.
    pub dir: PathBuf,
    /// Requests a client keeps in flight to one server at once (a block's pieces issued
    /// together, `pieces = parallel`).
    pub depth: u32,
    pub store: ServerStore,
    /// How a blast phase moves its bytes.
    pub blast: BlastTransport,
}

/// Where servers keep the data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerStore {
    /// Files on the server's disk, read and written with pread/pwrite.
    #[default]
    Disk,
    /// No file and no disk I/O: writes are received and dropped, reads are answered with the
    /// bytes the file would hold, made in memory (Russell's R9: the protocol's own cost).
    Memory,
}

impl ServerStore {
    pub fn parse(s: &str) -> Option<ServerStore> {
        match s {
            "disk" => Some(ServerStore::Disk),
            "memory" | "mem" => Some(ServerStore::Memory),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ServerStore::Disk => "disk",
            ServerStore::Memory => "memory",
        }
    }
}

/// The transport of a blast (`ops = blast`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlastTransport {
    /// MPI point-to-point: one `MPI_Send` per block.
    #[default]
    Mpi,
    /// A plain TCP connection between the two ranks' hosts (the server's address and port
    /// sent over MPI), one `write` per block, as Russell's blast test did, with TCP_NODELAY
    /// (each block goes out as it is written).
    Tcp,
    /// The same connection without TCP_NODELAY: Nagle's algorithm holds small segments back
    /// until the last one is acknowledged, as on Russell's kernel, which lacked the patches
    /// the "no delay" option needs.
    #[serde(rename = "tcp-nagle")]
    TcpNagle,
}

impl BlastTransport {
    pub fn parse(s: &str) -> Option<BlastTransport> {
        match s {
            "mpi" => Some(BlastTransport::Mpi),
            "tcp" => Some(BlastTransport::Tcp),
            "tcp-nagle" => Some(BlastTransport::TcpNagle),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            BlastTransport::Mpi => "mpi",
            BlastTransport::Tcp => "tcp",
            BlastTransport::TcpNagle => "tcp-nagle",
        }
    }

    /// Whether the blast goes over a TCP connection (with or without TCP_NODELAY).
    pub fn is_tcp(self) -> bool {
        matches!(self, BlastTransport::Tcp | BlastTransport::TcpNagle)
    }
}

impl Servers {
    /// The rank of server `j` in a world of `size` ranks: the servers are its last ranks.
    pub fn rank_of(&self, j: u32, size: u32) -> u32 {
        size - self.count + j
    }

    /// Which server rank `rank` is, if it is one.
    pub fn index_of(&self, rank: u32, size: u32) -> Option<u32> {
        (rank + self.count >= size && rank < size).then(|| rank + self.count - size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_the_last_ranks() {
        let s = Servers {
            count: 2,
            dir: PathBuf::from("/x"),
            depth: 1,
            store: ServerStore::Disk,
            blast: BlastTransport::Mpi,
        };
        assert_eq!((s.rank_of(0, 6), s.rank_of(1, 6)), (4, 5));
        let idx: Vec<Option<u32>> = (0..6).map(|r| s.index_of(r, 6)).collect();
        assert_eq!(idx, [None, None, None, None, Some(0), Some(1)]);
        assert_eq!(ServerStore::parse("memory"), Some(ServerStore::Memory));
        assert_eq!(BlastTransport::parse("tcp").map(BlastTransport::name), Some("tcp"));
    }
}
