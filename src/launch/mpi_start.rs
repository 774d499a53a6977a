//! What every rank tells the others as the MPI world starts (in a build with the `mpi`
//! feature), before anything is planned: its host name, its CPUs, its clock (its host and time
//! namespace: ranks of one host in another time namespace read another CLOCK_MONOTONIC), its
//! build and its arguments. A world of ranks of different builds is refused; other arguments
//! than rank 0's are warned of (every rank runs rank 0's experiment).

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::error::{Error, Result};
use crate::launch::world::shared_host_names;

/// The longest host name sent (bytes): Linux's HOST_NAME_MAX. Every rank holds the world's
/// names once, this many bytes per rank, while they are gathered.
const HOST_BYTES: usize = 64;
/// The longest build description sent to rank 0 by a rank of another build.
const BUILD_BYTES: usize = 256;
/// The tag of that description (a tag of its own, though no other message is in flight yet).
const BUILD: i32 = 13;

/// What the ranks told each other, by rank.
pub(super) struct Joined {
    pub hosts: Vec<std::sync::Arc<str>>,
    pub cpus: Vec<u32>,
    /// Which clock each rank reads: its host name and time namespace, hashed.
    pub clocks: Vec<u64>,
}

/// This build in words: `iolab 0.1.0 (git 66a75b3b1f2c)`, with `, debug build` for an
/// unoptimised one.
pub fn build() -> String {
    let profile = if cfg!(debug_assertions) { ", debug build" } else { "" };
    format!("iolab {} (git {}{profile})", env!("CARGO_PKG_VERSION"), env!("IOLAB_GIT_REV"))
}

/// This process's time namespace (`time:[4026531834]`; empty where the kernel has none).
fn time_namespace() -> String {
    std::fs::read_link("/proc/self/ns/time").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(bytes, 0)
}

/// Collective: every rank's host, CPUs, clock, build and arguments. A rank of another build
/// than rank 0's fails the start on every rank (rank 0's error names it; exit 2).
pub(super) fn exchange(comm: &SimpleCommunicator) -> Result<Joined> {
    let (rank, size) = (comm.rank() as usize, comm.size() as usize);
    let host = crate::env::host::hostname();
    let mut name = host.clone().into_bytes();
    name.truncate(HOST_BYTES);
    name.resize(HOST_BYTES, 0);
    let mut all = vec![0u8; HOST_BYTES * size];
    comm.all_gather_into(&name[..], &mut all[..]);
    let hosts = shared_host_names(all.chunks(HOST_BYTES).map(|c| {
        String::from_utf8_lossy(&c[..c.iter().position(|&b| b == 0).unwrap_or(HOST_BYTES)]).into_owned()
    }));
    let mut cpus = vec![0u32; size];
    comm.all_gather_into(&crate::env::host::online_cpus(), &mut cpus[..]);
    let mut args = vec![];
    std::env::args_os().skip(1).for_each(|a| args.extend(a.as_encoded_bytes().iter().copied().chain([0])));
    let clock = hash(format!("{host}\0{}", time_namespace()).as_bytes());
    let mine = [hash(build().as_bytes()), hash(&args), clock];
    let mut told = vec![0u64; 3 * size];
    comm.all_gather_into(&mine[..], &mut told[..]);
    let of = |k: usize| -> Vec<u64> { told.chunks(3).map(|t| t[k]).collect() };
    same_build(comm, &of(0), &hosts)?;
    if rank == 0 {
        say_other_arguments(&of(1));
    }
    Ok(Joined { hosts, cpus, clocks: of(2) })
}

/// Every rank runs rank 0's build, else an error on every rank: rank 0's names the first rank
/// of another build (which sends it its build's words), its host and how many differ.
fn same_build(comm: &SimpleCommunicator, builds: &[u64], hosts: &[std::sync::Arc<str>]) -> Result<()> {
    let others: Vec<usize> = (0..builds.len()).filter(|&r| builds[r] != builds[0]).collect();
    let Some(&first) = others.first() else { return Ok(()) };
    let rank = comm.rank() as usize;
    if rank == first {
        let mut words = build().into_bytes();
        words.resize(BUILD_BYTES, 0);
        comm.process_at_rank(0).send_with_tag(&words[..], BUILD);
    }
    if rank != 0 {
        return Err(Error::spec("build", build(), "not rank 0's"));
    }
    let mut words = vec![0u8; BUILD_BYTES];
    comm.process_at_rank(first as i32).receive_into_with_tag(&mut words[..], BUILD);
    let theirs = String::from_utf8_lossy(&words[..words.iter().position(|&b| b == 0).unwrap_or(BUILD_BYTES)])
        .into_owned();
    Err(Error::spec(
        "build",
        format!("rank {first} on {}: {theirs}", hosts[first]),
        mismatch(&others, builds.len()),
    ))
}

/// The rest of a mismatch's message, for the ranks `others` of `size` that differ from rank 0.
fn mismatch(others: &[usize], size: usize) -> String {
    let more = match others.len() {
        1 => String::new(),
        n => format!(" ({n} of the {size} ranks run another build than rank 0's)"),
    };
    format!(
        "rank 0 runs {}{more}; every rank of a run must run the same build (version and git revision), or their results would not come from one program: put one build at the same path on every node (`srun iolab --version` on each shows it)",
        build()
    )
}

/// Every rank runs rank 0's experiment: a rank started with other arguments (an MPMD launch,
/// `mpirun -np 1 iolab run A : -np 1 iolab run B`) follows rank 0, and rank 0 says so once.
fn say_other_arguments(args: &[u64]) {
    let others: Vec<String> =
        args.iter().enumerate().filter(|&(_, &h)| h != args[0]).map(|(r, _)| r.to_string()).collect();
    if !others.is_empty() {
        let s = if others.len() > 1 { "s" } else { "" };
        eprintln!(
            "warning: rank{s} {} started with other arguments than rank 0 (an MPMD launch): every rank runs rank 0's experiment; their own arguments are ignored",
            others.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_names_its_version_and_revision() {
        let b = build();
        assert!(
            b.starts_with(&format!("iolab {} (git {}", env!("CARGO_PKG_VERSION"), env!("IOLAB_GIT_REV"))),
            "{b}"
        );
        assert!(b.len() < BUILD_BYTES);
        assert!(mismatch(&[3], 4).starts_with(&format!("rank 0 runs {b}; every rank")));
        assert!(mismatch(&[1, 2], 4).contains(" (2 of the 4 ranks run another build than rank 0's);"));
    }
}
