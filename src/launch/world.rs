//! The MPI world this process is part of (in a build with the `mpi` feature): its size, this
//! process's rank, every rank's host, CPUs and clock offset, and which of a phase's workers
//! each rank runs.

use std::collections::HashMap;
use std::sync::Arc;

#[cfg(feature = "mpi")]
use crate::spec::{Reorder, Spec};
#[cfg(feature = "mpi")]
use crate::worker::{Placement, WorkerSample};

/// The MPI world this process belongs to (`mpirun -np N iolab ...` in a build with the `mpi`
/// feature): its size, this process's rank, and every rank's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldInfo {
    pub rank: u32,
    pub size: u32,
    /// Host name of each rank, by rank: one name per host, shared by its ranks and by the
    /// results of its workers ([`shared_host_names`]).
    pub hosts: Vec<Arc<str>>,
    /// On rank 0: each rank's monotonic clock minus rank 0's (ns; 0 on rank 0's host), and the
    /// bound of that estimate (half the shortest round trip of the exchanges that made it); on
    /// another rank, its own offset (the rest 0).
    pub clock_offset_ns: Vec<i64>,
    pub clock_bound_ns: Vec<u64>,
    /// The CPUs online on each rank's host, by rank.
    pub cpus: Vec<u32>,
    /// What rank 0 says of the world once a run starts (ranks in another time namespace than
    /// rank 0 on its own host); empty on the other ranks.
    pub notes: Vec<String>,
}

impl WorldInfo {
    /// The distinct hosts, in order of their first rank, with the ranks on each.
    pub fn placement(&self) -> Vec<(String, Vec<u32>)> {
        let mut out: Vec<(String, Vec<u32>)> = vec![];
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (r, h) in self.hosts.iter().enumerate() {
            let i = *index.entry(h).or_insert_with(|| {
                out.push((h.to_string(), vec![]));
                out.len() - 1
            });
            out[i].1.push(r as u32);
        }
        out
    }

    /// The flag of a world with more ranks than CPUs on a host (the host with the most ranks
    /// per CPU, and how many more there are): ranks waiting in MPI calls poll for messages and
    /// take CPU from those doing I/O. None when every host has a CPU per rank.
    pub fn oversubscribed(&self) -> Option<String> {
        let over: Vec<(String, usize, u32)> = self
            .placement()
            .into_iter()
            .map(|(h, ranks)| {
                let cpus = self.cpus.get(ranks[0] as usize).copied().unwrap_or(0);
                (h, ranks.len(), cpus)
            })
            .filter(|&(_, n, cpus)| cpus > 0 && n > cpus as usize)
            .collect();
        let (h, n, cpus) =
            over.iter().max_by(|a, b| (a.1 * b.2 as usize).cmp(&(b.1 * a.2 as usize)).then(b.0.cmp(&a.0)))?;
        let more = match over.len() - 1 {
            0 => String::new(),
            1 => " (and 1 more host)".into(),
            k => format!(" (and {k} more hosts)"),
        };
        let cpus = if *cpus == 1 { "1 CPU".to_string() } else { format!("{cpus} CPUs") };
        Some(format!("oversubscribed: {n} MPI ranks on the {cpus} of {h}{more}"))
    }
}

/// Host names by rank, each distinct name held once and shared by the ranks that have it: a
/// rank's name then costs its world 16 bytes, not a string of its own.
pub fn shared_host_names(names: impl IntoIterator<Item = String>) -> Vec<Arc<str>> {
    let mut seen: HashMap<String, Arc<str>> = HashMap::new();
    names.into_iter().map(|n| seen.entry(n).or_insert_with_key(|k| Arc::from(k.as_str())).clone()).collect()
}

/// The flag of every phase of an MPI run with more ranks than CPUs on a host
/// ([`WorldInfo::oversubscribed`]); None on one host without MPI.
pub fn oversubscription() -> Option<String> {
    world().and_then(WorldInfo::oversubscribed)
}

static WORLD: std::sync::OnceLock<WorldInfo> = std::sync::OnceLock::new();

/// The MPI world, when this process was started by an MPI launcher in a build with the `mpi`
/// feature; `None` otherwise.
pub fn world() -> Option<&'static WorldInfo> {
    WORLD.get()
}

/// Records the MPI world (once, at start-up).
pub fn set_world(w: WorldInfo) {
    let _ = WORLD.set(w);
}

/// The rank a phase's worker `i` runs on: with `threads` workers per rank, rank `i / threads`.
pub fn rank_of(worker: usize, threads: usize) -> usize {
    worker / threads.max(1)
}

/// The workers (plan indices) of a phase of `n` workers that rank `rank` runs: worker i runs
/// on rank i / threads; a read phase with `reorder_reads` shifts that, so rank r runs the
/// workers rank r + shift ran when writing (IOR's task reordering).
#[cfg(feature = "mpi")]
pub(super) fn my_workers(n: usize, read: bool, spec: &Spec, w: &WorldInfo, rank: u32) -> Vec<usize> {
    let threads = (spec.workers / w.size).max(1) as usize;
    let shift = match spec.reorder_reads.filter(|_| read) {
        None => 0,
        Some(Reorder::Shift(s)) => s as usize,
        Some(Reorder::Node) => w.hosts.iter().filter(|h| **h == w.hosts[0]).count(),
    };
    // Worker i ran on rank i / threads when writing; reading, rank r runs the workers of rank
    // r + shift: worker i goes to the rank of worker i - shift x threads.
    let back = (shift % w.size as usize) * threads % n.max(1);
    (0..n).filter(|&i| rank_of((i + n - back) % n, threads) == rank as usize).collect()
}

/// A sample with where it ran.
#[cfg(feature = "mpi")]
pub(super) fn placed(mut s: WorkerSample, w: &WorldInfo, resident: Option<f64>) -> WorkerSample {
    s.place = Some(Placement { rank: w.rank, host: w.hosts[w.rank as usize].clone(), resident });
    s
}

#[cfg(test)]
mod tests {
    use super::WorldInfo;

    fn world(hosts: &[(&str, u32, u32)]) -> WorldInfo {
        let mut w = WorldInfo {
            rank: 0,
            size: 0,
            hosts: vec![],
            clock_offset_ns: vec![],
            clock_bound_ns: vec![],
            cpus: vec![],
            notes: vec![],
        };
        for &(h, ranks, cpus) in hosts {
            w.hosts.extend((0..ranks).map(|_| h.into()));
            w.cpus.extend((0..ranks).map(|_| cpus));
        }
        w.size = w.hosts.len() as u32;
        w
    }

    /// Ranks of one host share one name (the world's list and every worker's result hold a
    /// pointer to it), in rank order, and the placement lists each host once, in order of its
    /// first rank.
    #[test]
    fn a_host_name_is_held_once_for_all_its_ranks() {
        let names = ["b", "a", "b", "c", "a", "b"].map(String::from);
        let hosts = super::shared_host_names(names.clone());
        assert_eq!(hosts.iter().map(|h| &**h).collect::<Vec<_>>(), names);
        assert!(std::sync::Arc::ptr_eq(&hosts[0], &hosts[2]) && std::sync::Arc::ptr_eq(&hosts[0], &hosts[5]));
        assert!(std::sync::Arc::ptr_eq(&hosts[1], &hosts[4]));
        assert!(!std::sync::Arc::ptr_eq(&hosts[0], &hosts[1]));
        assert_eq!(std::sync::Arc::strong_count(&hosts[0]), 3, "one allocation for b's three ranks");
        let w = WorldInfo { size: 6, hosts, ..world(&[]) };
        assert_eq!(
            w.placement(),
            [("b".to_string(), vec![0, 2, 5]), ("a".to_string(), vec![1, 4]), ("c".to_string(), vec![3])]
        );
    }

    /// A host with more ranks than CPUs flags the world, naming the host with the most ranks
    /// per CPU and counting the others; a CPU per rank everywhere, or one rank, does not.
    #[test]
    fn more_ranks_than_cpus_on_a_host_is_oversubscribed() {
        assert_eq!(world(&[("h1", 2, 2), ("h2", 2, 4)]).oversubscribed(), None);
        assert_eq!(world(&[("h1", 1, 1)]).oversubscribed(), None);
        assert_eq!(
            world(&[("h1", 2, 2), ("h2", 5, 2)]).oversubscribed().unwrap(),
            "oversubscribed: 5 MPI ranks on the 2 CPUs of h2"
        );
        assert_eq!(
            world(&[("h1", 3, 2), ("h2", 8, 2), ("h3", 4, 2)]).oversubscribed().unwrap(),
            "oversubscribed: 8 MPI ranks on the 2 CPUs of h2 (and 2 more hosts)"
        );
        // 3 on 1 CPU is worse than 4 on 2.
        assert_eq!(
            world(&[("a", 4, 2), ("b", 3, 1)]).oversubscribed().unwrap(),
            "oversubscribed: 3 MPI ranks on the 1 CPU of b (and 1 more host)"
        );
    }
}
