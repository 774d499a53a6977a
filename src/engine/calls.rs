//! Per-worker counts of the system (and MPI-IO) calls an engine made: fixed-size counters that the hot loop
//! bumps without allocating, turned into a `{"pwrite": n, ...}` map for results.

use std::collections::BTreeMap;

/// A system call an engine may make while moving or committing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Pread,
    Pwrite,
    Preadv,
    Pwritev,
    Fsync,
    Fdatasync,
    Msync,
    Mmap,
    Munmap,
    Ftruncate,
    Fallocate,
    IoUringEnter,
    IoUringRegister,
    MpiFileWriteAt,
    MpiFileWriteAtAll,
    MpiFileReadAt,
    MpiFileReadAtAll,
    MpiFileSync,
    /// Requests to I/O-server ranks (engine `servers`), and a blast's sends.
    WriteRequest,
    ReadRequest,
    CommitRequest,
    MpiSend,
    Send,
    /// The metadata phases' calls.
    Openat,
    Close,
    Write,
    Read,
    Fstatat,
    Renameat2,
    Unlinkat,
    Mkdirat,
    Getdents64,
}

impl Call {
    /// Every call, in the order of the counters.
    pub const ALL: [Call; 32] = [
        Call::Pread,
        Call::Pwrite,
        Call::Preadv,
        Call::Pwritev,
        Call::Fsync,
        Call::Fdatasync,
        Call::Msync,
        Call::Mmap,
        Call::Munmap,
        Call::Ftruncate,
        Call::Fallocate,
        Call::IoUringEnter,
        Call::IoUringRegister,
        Call::MpiFileWriteAt,
        Call::MpiFileWriteAtAll,
        Call::MpiFileReadAt,
        Call::MpiFileReadAtAll,
        Call::MpiFileSync,
        Call::WriteRequest,
        Call::ReadRequest,
        Call::CommitRequest,
        Call::MpiSend,
        Call::Send,
        Call::Openat,
        Call::Close,
        Call::Write,
        Call::Read,
        Call::Fstatat,
        Call::Renameat2,
        Call::Unlinkat,
        Call::Mkdirat,
        Call::Getdents64,
    ];

    /// The system call's name (the key in results).
    pub fn name(self) -> &'static str {
        match self {
            Call::Pread => "pread",
            Call::Pwrite => "pwrite",
            Call::Preadv => "preadv",
            Call::Pwritev => "pwritev",
            Call::Fsync => "fsync",
            Call::Fdatasync => "fdatasync",
            Call::Msync => "msync",
            Call::Mmap => "mmap",
            Call::Munmap => "munmap",
            Call::Ftruncate => "ftruncate",
            Call::Fallocate => "fallocate",
            Call::IoUringEnter => "io_uring_enter",
            Call::IoUringRegister => "io_uring_register",
            Call::MpiFileWriteAt => "MPI_File_write_at",
            Call::MpiFileWriteAtAll => "MPI_File_write_at_all",
            Call::MpiFileReadAt => "MPI_File_read_at",
            Call::MpiFileReadAtAll => "MPI_File_read_at_all",
            Call::MpiFileSync => "MPI_File_sync",
            Call::WriteRequest => "write_request",
            Call::ReadRequest => "read_request",
            Call::CommitRequest => "commit_request",
            Call::MpiSend => "MPI_Send",
            Call::Send => "send",
            Call::Openat => "openat",
            Call::Close => "close",
            Call::Write => "write",
            Call::Read => "read",
            Call::Fstatat => "fstatat",
            Call::Renameat2 => "renameat2",
            Call::Unlinkat => "unlinkat",
            Call::Mkdirat => "mkdirat",
            Call::Getdents64 => "getdents64",
        }
    }
}

/// How many times each [`Call`] was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallCounts([u64; Call::ALL.len()]);

impl CallCounts {
    #[inline(always)]
    pub fn add(&mut self, call: Call) {
        self.0[call as usize] += 1;
    }

    #[inline(always)]
    pub fn add_n(&mut self, call: Call, n: u64) {
        self.0[call as usize] += n;
    }

    pub fn get(&self, call: Call) -> u64 {
        self.0[call as usize]
    }

    /// The non-zero counts by call name.
    pub fn to_map(self) -> BTreeMap<String, u64> {
        Call::ALL.iter().filter(|c| self.get(**c) > 0).map(|c| (c.name().to_string(), self.get(*c))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_map_by_name_and_skip_zeros() {
        let mut c = CallCounts::default();
        c.add(Call::Pwrite);
        c.add(Call::Pwrite);
        c.add_n(Call::Msync, 3);
        let m = c.to_map();
        assert_eq!(m.len(), 2);
        assert_eq!(m["pwrite"], 2);
        assert_eq!(m["msync"], 3);
        for (i, call) in Call::ALL.iter().enumerate() {
            assert_eq!(*call as usize, i, "ALL is in discriminant order");
        }
    }
}
