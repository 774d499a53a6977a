//! Slurm as a launch environment beside mpirun (docs/slurm.md): what Slurm tells a process it
//! starts (the job, the step, its nodes and tasks, the MPI plugin), the job's facts kept with
//! the results, and the plugin check. srun starts an MPI program as one world only with the
//! plugin its MPI takes (`--mpi=pmix` for Open MPI, `--mpi=pmi2` for MPICH); with another, Open
//! MPI's ranks fail in MPI_Init and MPICH's each run as a world of one with exit code 0, so a
//! mismatched launch is refused before MPI starts, naming the plugin to use.

use crate::env::host::SlurmJob;
use crate::error::{Error, Result};

/// The job step this process is a task of (srun started it, or an MPI launcher's daemon that
/// srun started: then its tasks are the daemons, one per node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub job: String,
    pub step: String,
    /// The step's tasks (`SLURM_STEP_NUM_TASKS`).
    pub tasks: u64,
    /// This task's number in the step (`SLURM_PROCID`).
    pub procid: u64,
    /// The step's MPI plugin (`SLURM_MPI_TYPE`; `none` when unset).
    pub plugin: String,
}

impl Step {
    /// `JOB.STEP`, as srun's PMI plugins name the step.
    pub fn id(&self) -> String {
        format!("{}.{}", self.job, self.step)
    }
}

fn var(k: &str) -> Option<String> {
    std::env::var(k).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// The step this process is a task of, if any (the batch script itself is no step's task).
pub fn step() -> Option<Step> {
    let tasks = var("SLURM_STEP_NUM_TASKS")?.parse().ok()?;
    Some(Step {
        job: var("SLURM_JOB_ID").or_else(|| var("SLURM_JOBID")).unwrap_or_default(),
        step: var("SLURM_STEP_ID").or_else(|| var("SLURM_STEPID")).unwrap_or_default(),
        tasks,
        procid: var("SLURM_PROCID").and_then(|p| p.parse().ok()).unwrap_or(0),
        plugin: var("SLURM_MPI_TYPE").unwrap_or_else(|| "none".into()),
    })
}

/// The Slurm job this process runs in, as the results keep it. `srun_plugin`: srun's MPI
/// plugin when srun started the ranks itself (then the step's nodes and tasks are the run's);
/// else (the batch script, an `mpirun` in the allocation) the job's.
pub fn job(srun_plugin: Option<&str>) -> Option<SlurmJob> {
    let job_id = var("SLURM_JOB_ID").or_else(|| var("SLURM_JOBID"))?;
    let direct = srun_plugin.is_some();
    let pick = |step: &str, job: &str| if direct { var(step).or_else(|| var(job)) } else { var(job) };
    Some(SlurmJob {
        job_id,
        step_id: if direct { var("SLURM_STEP_ID").or_else(|| var("SLURM_STEPID")) } else { None },
        cluster: var("SLURM_CLUSTER_NAME"),
        partition: var("SLURM_JOB_PARTITION"),
        node_list: pick("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST").or_else(|| var("SLURM_NODELIST")),
        tasks_per_node: pick("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"),
        mpi_plugin: srun_plugin.map(str::to_string),
    })
}

/// The MPI library in a few words, from its version string (`Open MPI v4.1.4`, `MPICH
/// Version: 4.0.2`).
pub fn library_name(version: &str) -> String {
    let first = version.trim_end_matches('\0').lines().next().unwrap_or("");
    let first = first.split(',').next().unwrap_or("");
    first.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The srun plugin that starts programs of the MPI library `version` as one world: `pmix`
/// for Open MPI (built against PMIx, with no Slurm PMI of its own), `pmi2` for MPICH (Hydra's
/// PMI, which srun's pmi2 plugin speaks). None for a library not known here.
pub fn plugin_for(version: &str) -> Option<&'static str> {
    let name = library_name(version);
    if name.starts_with("Open MPI") {
        Some("pmix")
    } else if name.starts_with("MPICH") {
        Some("pmi2")
    } else {
        None
    }
}

/// Before MPI starts, for a process srun started with `plugin` as one of `tasks` tasks: the
/// plugin is the one the MPI library `version` takes, else refused (exit 2) naming it.
pub fn check_plugin(plugin: &str, tasks: u64, version: &str) -> Result<()> {
    let Some(want) = plugin_for(version) else { return Ok(()) };
    // Slurm's pmix plugin answers to `pmix` and to its versioned names (`pmix_v4`).
    let fits = if want == "pmix" { plugin.starts_with("pmix") } else { plugin == want };
    if fits || tasks <= 1 {
        return Ok(());
    }
    let name = library_name(version);
    let what = if want == "pmix" && plugin == "pmi2" {
        "Open MPI's MPI_Init fails under pmi2".to_string()
    } else {
        format!("each of the {tasks} tasks would run alone, a world of one")
    };
    Err(Error::spec(
        "srun",
        format!("--mpi={plugin}"),
        format!(
            "this iolab was built with {name}, which srun starts as one world only with --mpi={want} ({what}): run it as `srun --mpi={want} ...`, or set SLURM_MPI_TYPE={want}"
        ),
    ))
}

/// After MPI started, for a process srun started with `plugin` as one of `tasks` tasks in a
/// world of `size` (a library [`plugin_for`] does not know): refused when the world is smaller.
pub fn check_world(plugin: &str, tasks: u64, size: u64, version: &str) -> Result<()> {
    if size >= tasks {
        return Ok(());
    }
    let name = library_name(version);
    Err(Error::spec(
        "srun",
        format!("--mpi={plugin}"),
        format!(
            "srun started {tasks} tasks but MPI sees a world of {size}: this iolab was built with {name}; start it with the --mpi plugin that MPI takes (`srun --mpi=list` lists them)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMPI: &str =
        "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022\0";
    const MPICH: &str = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Mar 31 11:01:40 AM CDT 2022\n";

    /// Each MPI's plugin passes; another is refused naming the one to use, also with no plugin;
    /// one task, or a library not known here, is not judged before MPI starts.
    #[test]
    fn a_plugin_other_than_the_one_its_mpi_takes_is_refused() {
        assert_eq!(library_name(OMPI), "Open MPI v4.1.4");
        assert_eq!(library_name(MPICH), "MPICH Version: 4.0.2");
        assert!(check_plugin("pmix", 6, OMPI).is_ok() && check_plugin("pmix_v4", 6, OMPI).is_ok());
        assert!(check_plugin("pmi2", 6, MPICH).is_ok());
        let e = check_plugin("pmi2", 6, OMPI).unwrap_err().to_string();
        assert_eq!(
            e,
            "srun = `--mpi=pmi2`: this iolab was built with Open MPI v4.1.4, which srun starts as one world only with --mpi=pmix (Open MPI's MPI_Init fails under pmi2): run it as `srun --mpi=pmix ...`, or set SLURM_MPI_TYPE=pmix"
        );
        let e = check_plugin("none", 6, MPICH).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--mpi=pmi2 (each of the 6 tasks would run alone"), "{e}");
        assert!(check_plugin("pmix", 6, MPICH).is_err());
        assert!(check_plugin("none", 1, MPICH).is_ok());
        assert!(check_plugin("none", 6, "Intel(R) MPI Library 2021.6").is_ok());
        let e = check_world("pmix", 6, 1, "Intel(R) MPI Library 2021.6").unwrap_err().to_string();
        assert!(e.contains("srun started 6 tasks but MPI sees a world of 1"), "{e}");
        assert!(check_world("pmi2", 6, 6, MPICH).is_ok());
    }
}
