//! Who started this process, from the variables launchers set in the processes they start:
//! an MPI launcher (Open MPI's mpirun, MPICH's Hydra, MVAPICH) or Slurm's srun itself (a task
//! of a job step, with its MPI plugin), the world's size it announced and this process's rank.
//! A build without MPI started as many processes is refused: each would run an experiment of
//! its own.

use crate::error::{Error, Result};
use crate::launch::slurm;

/// How this process was started, when a launcher started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// `VAR=VALUE` of the variable that told the world's size (for messages).
    pub var: String,
    /// The world's size the launcher announced.
    pub size: u64,
    /// This process's rank as the launcher numbered it.
    pub rank: u64,
    /// Started by srun itself, as a task of a job step: the step's MPI plugin (`pmix`,
    /// `pmi2`, `none`).
    pub srun: Option<String>,
}

fn var(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

fn num(k: &str) -> Option<u64> {
    var(k).and_then(|v| v.trim().parse().ok())
}

/// The launch this process is part of, from its environment; None when no launcher started it
/// (or srun started it as the one task of its step, with no MPI plugin).
pub fn start() -> Option<Start> {
    let step = slurm::step();
    let at = |k: &str, n: u64| format!("{k}={n}");
    if let Some(n) = num("OMPI_COMM_WORLD_SIZE") {
        let rank = num("OMPI_COMM_WORLD_RANK").unwrap_or(0);
        return Some(Start { var: at("OMPI_COMM_WORLD_SIZE", n), size: n, rank, srun: None });
    }
    // srun's pmi2 plugin names the step in PMI_JOBID (`JOB.STEP`); Hydra, started inside an
    // allocation, does not (its ranks see the step of its proxies, one per node).
    let pmi2 = var("PMI_JOBID").is_some_and(|j| step.as_ref().is_some_and(|s| j == s.id()));
    for (size, rank) in
        [("PMI_SIZE", "PMI_RANK"), ("PMIX_SIZE", "PMIX_RANK"), ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK")]
    {
        if let Some(n) = num(size) {
            let srun = (pmi2 && size == "PMI_SIZE").then(|| "pmi2".to_string());
            return Some(Start { var: at(size, n), size: n, rank: num(rank).unwrap_or(0), srun });
        }
    }
    let step = step?;
    // srun's pmix plugin sets no size; its namespace is `slurm.pmix.JOB.STEP`.
    if let Some(rank) = num("PMIX_RANK") {
        let srun =
            var("PMIX_NAMESPACE").is_some_and(|ns| ns.starts_with("slurm.pmix.")).then(|| "pmix".into());
        let srun = srun.or_else(|| Some(step.plugin.clone()));
        return Some(Start { var: at("SLURM_STEP_NUM_TASKS", step.tasks), size: step.tasks, rank, srun });
    }
    // No MPI plugin: each task alone, a world of one unless it is the step's only task.
    (step.tasks > 1).then(|| Start {
        var: at("SLURM_STEP_NUM_TASKS", step.tasks),
        size: step.tasks,
        rank: step.procid,
        srun: Some(step.plugin.clone()),
    })
}

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
    LAUNCHER_VARS.iter().find_map(|k| var(k).map(|v| format!("{k}={v}")))
}

/// This process's rank as its launcher set it (0 when none did): who says an error once.
pub fn launcher_rank() -> u64 {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|k| num(k))
        .unwrap_or(0)
}

/// A build without MPI started by an MPI launcher (or as one of several tasks of a Slurm job
/// step) would run an experiment of its own in every process and store each: refused (exit 2)
/// saying how to build one that joins the world.
pub fn refuse_launcher_without_mpi() -> Result<()> {
    if cfg!(feature = "mpi") {
        return Ok(());
    }
    let built = "this iolab was built without MPI, so each process the launcher started would run an \
                 experiment of its own; build it with `cargo build --release --features mpi` to run ranks";
    match (slurm::step().filter(|s| s.tasks > 1), launcher_var()) {
        (Some(step), _) => Err(Error::spec(
            "srun",
            format!("SLURM_STEP_NUM_TASKS={}", step.tasks),
            format!("srun started {} tasks: {built}", step.tasks),
        )),
        (None, Some(var)) => Err(Error::spec("mpirun", var, built)),
        (None, None) => Ok(()),
    }
}
