//! Launchers: how workers come to exist (threads, child processes, MPI ranks) and how their
//! samples come back; the child-process protocol; the strategies' launchers; the MPI world
//! this process is part of, if any.

pub mod child;
#[cfg(feature = "mpi")]
pub mod io_server;
#[cfg(feature = "mpi")]
mod io_server_loop;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "mpi")]
mod mpi_clock;
#[cfg(feature = "mpi")]
pub mod mpi_hosts;
#[cfg(feature = "mpi")]
mod mpi_reply;
#[cfg(feature = "mpi")]
mod mpi_sync;
#[cfg(feature = "mpi")]
mod mpi_trace;
#[cfg(feature = "mpi")]
mod mpi_tree;
pub mod process;
mod shared_wear;
#[cfg(feature = "mpi")]
pub mod strategy_mpi;
#[cfg(feature = "mpi")]
mod strategy_mpi_handoff;
pub mod strategy_process;
pub mod strategy_threads;
pub mod threads;

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::latency::Buckets;
use crate::spec::Launcher;
use crate::worker::{Monitor, PhaseJob, ServerSample, WorkerSample};

/// What a phase's launch brings back: every worker's sample and, with I/O-server ranks, every
/// server's figures.
pub struct Launched {
    pub samples: Vec<WorkerSample>,
    pub servers: Vec<ServerSample>,
    /// Every worker's latency histogram merged, when the samples carry only their figures
    /// (MPI ranks: merged as each reply arrived); empty when each sample has its own.
    pub latency: Buckets,
    /// Every worker's rate series summed, when the samples do not carry theirs (MPI ranks up
    /// the tree: summed by each rank and its subtree); None when each sample has its own.
    pub series: Option<crate::latency::series::RateSeries>,
    /// Every worker's class histograms (directions, sizes, response times) merged, when the
    /// samples carry only their counts (MPI ranks); None when each sample has its own.
    pub classes: Option<crate::latency::classes::ClassSample>,
}

impl Launched {
    /// Samples that carry their own histograms.
    pub fn of(samples: Vec<WorkerSample>) -> Launched {
        Launched { samples, servers: vec![], latency: Buckets::default(), series: None, classes: None }
    }
}

/// Runs a phase's workers with the spec's launcher (threads, processes or MPI ranks; with
/// I/O-server ranks, the servers' roles too).
pub fn launch(job: &PhaseJob<'_>, monitor: &dyn Monitor) -> Result<Launched> {
    #[cfg(feature = "mpi")]
    if job.spec.servers.is_some() {
        return io_server::run_phase(job, monitor);
    }
    let def = LAUNCHERS
        .iter()
        .find(|d| d.launcher == job.spec.launcher)
        .ok_or_else(|| Error::spec("launcher", job.spec.launcher.name(), "not available in this build"))?;
    if job.spec.strategy.is_some() { (def.strategy)(job, monitor) } else { (def.workers)(job, monitor) }
}

/// Under MPI ranks, before a traced run: every rank but 0 checks its own trace spool has room
/// for its part of `specs`' traces; a refusal (exit 2) names the rank. Nothing elsewhere.
pub fn check_trace_spools(specs: &[crate::spec::Spec]) -> Result<()> {
    #[cfg(feature = "mpi")]
    return mpi::check_spools(specs);
    #[cfg(not(feature = "mpi"))]
    {
        let _ = specs;
        Ok(())
    }
}

/// Runs one phase's workers; returns their samples in worker order.
pub type PhaseFn = fn(&PhaseJob<'_>, &dyn Monitor) -> Result<Launched>;

/// A launcher: how the workers of a phase come to exist, for plain workers and for the roles
/// of a strategy.
pub struct LauncherDef {
    /// The word a spec uses for it (`launcher = ...`).
    pub launcher: Launcher,
    pub workers: PhaseFn,
    pub strategy: PhaseFn,
}

/// Every launcher of this build. Adding one is its file(s) here, one line in this table and
/// its word in [`Launcher`].
pub static LAUNCHERS: &[LauncherDef] = &[
    LauncherDef {
        launcher: Launcher::Thread,
        workers: |job, monitor| threads::run_phase_threads(job, monitor).map(Launched::of),
        strategy: |job, monitor| strategy_threads::run(job, monitor).map(Launched::of),
    },
    LauncherDef {
        launcher: Launcher::Process,
        workers: |job, monitor| process::run_phase_processes(job, monitor).map(Launched::of),
        strategy: |job, monitor| strategy_process::run(job, monitor).map(Launched::of),
    },
    #[cfg(feature = "mpi")]
    LauncherDef { launcher: Launcher::Mpi, workers: mpi::run_phase, strategy: mpi::run_strategy },
];

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

/// Whether this build can run MPI ranks.
pub const HAS_MPI: bool = cfg!(feature = "mpi");

/// The variables MPI launchers set in the processes they start (Open MPI, MPICH's Hydra and
/// Slurm's PMI, PMIx, MVAPICH): the world's size and this process's rank.
const LAUNCHER_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "PMI_SIZE",
    "PMI_RANK",
    "PMIX_SIZE",
    "PMIX_RANK",
    "MV2_COMM_WORLD_SIZE",
    "MV2_COMM_WORLD_RANK",
];

/// `VAR=VALUE` of the first MPI launcher variable set in this process, if any.
pub fn launcher_var() -> Option<String> {
    LAUNCHER_VARS.iter().find_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}")))
}

/// This process's rank as its launcher set it (0 when none did).
pub fn launcher_rank() -> u64 {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK"]
        .iter()
        .find_map(|k| std::env::var(k).ok().and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0)
}

/// A build without MPI started by an MPI launcher would run an experiment of its own in every
/// process and store each: refused (exit 2) saying how to build one that joins the world.
pub fn refuse_launcher_without_mpi() -> Result<()> {
    match launcher_var() {
        Some(var) if !HAS_MPI => Err(Error::spec(
            "mpirun",
            var,
            "this iolab was built without MPI, so each process the launcher started would run an \
             experiment of its own; build it with `cargo build --release --features mpi` to run ranks",
        )),
        _ => Ok(()),
    }
}

/// The rank a phase's worker `i` runs on: with `threads` workers per rank, rank `i / threads`.
pub fn rank_of(worker: usize, threads: usize) -> usize {
    worker / threads.max(1)
}

/// Every worker's result, or the most telling error: a real failure before the "aborted"
/// echoes of it.
pub fn collect<T>(results: Vec<Result<T>>) -> Result<Vec<T>> {
    let mut err = None;
    let mut all = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(s) => all.push(s),
            Err(e) => Error::keep_telling(&mut err, e),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(all),
    }
}

/// Joins scoped worker threads in order; a thread that panicked is an error naming `what`.
pub fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>, what: &str) -> Vec<Result<T>> {
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| Err(Error::Run(format!("{what} panicked")))))
        .collect()
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
