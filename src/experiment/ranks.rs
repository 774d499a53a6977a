//! The checks of an experiment on MPI ranks: the launcher against the MPI world (the build,
//! mpirun, workers a multiple of the ranks, one rank per strategy worker), the read
//! reordering, and phases with more workers than the run.

use crate::error::{Error, Result};
use crate::spec::{Launcher, Layout, MpiIo, Phase, Reorder};

use super::Params;

/// The launcher against the MPI world (`ranks`: its size, None when not started by an MPI
/// launcher): `mpi` needs a build with MPI and mpirun, and then as many workers as ranks or a
/// multiple (threads per rank); under mpirun with several ranks, only `mpi` makes sense.
pub(super) fn check_world(launcher: Launcher, workers: u32, ranks: Option<u32>, servers: bool) -> Result<()> {
    match (launcher, ranks) {
        (Launcher::Mpi, _) if !crate::launch::HAS_MPI => Err(Error::spec(
            "launcher",
            "mpi",
            "this iolab was built without MPI (build it with `cargo build --release --features mpi`)",
        )),
        (Launcher::Mpi, None) => Err(Error::spec(
            "launcher",
            "mpi",
            "not started by an MPI launcher (run it as `mpirun -np N iolab ...`)",
        )),
        // With servers, the clients are ranks 0..workers-1 (checked with the servers).
        (Launcher::Mpi, Some(n)) if workers % n != 0 && !servers => Err(Error::spec(
            "workers",
            workers,
            format!("must be a multiple of the {n} MPI ranks (each rank runs workers / ranks threads)"),
        )),
        (l, Some(n)) if n > 1 && l != Launcher::Mpi => Err(Error::spec(
            "launcher",
            l.name(),
            format!("under mpirun with {n} ranks, workers are the ranks (launcher = mpi)"),
        )),
        _ => Ok(()),
    }
}

/// The MPI parameters of a spec: `reorder_reads` parsed and allowed only on ranks; a strategy
/// with other than one worker per rank, and phases with more workers than the run's, refused.
pub(super) fn check(
    params: &Params,
    launcher: Launcher,
    workers: u64,
    phases: &[Phase],
) -> Result<Option<Reorder>> {
    let get = |k: &str| params.one(k);
    let reorder_reads = match get("reorder_reads") {
        None | Some("none") => None,
        Some("node") => Some(Reorder::Node),
        Some(v) => Some(Reorder::Shift(
            v.parse::<u32>()
                .map_err(|_| Error::spec("reorder_reads", v, "expected none, node or a number of ranks"))?,
        )),
    };
    if let Some(r) = reorder_reads
        && launcher != Launcher::Mpi
    {
        return Err(Error::spec(
            "reorder_reads",
            r.label(),
            "reorders MPI ranks: needs launcher = mpi (mpirun)",
        ));
    }
    if launcher != Launcher::Mpi {
        return Ok(None);
    }
    if let Some(r) = reorder_reads {
        let (size, first) = crate::launch::world().map_or((0, 0), |w| {
            (w.size, w.hosts.iter().filter(|h| w.hosts.first() == Some(*h)).count() as u32)
        });
        if let Some(why) = reorders_nothing(r, size, first) {
            return Err(Error::spec("reorder_reads", r.label(), why));
        }
    }
    if let Some(s) = get("strategy")
        && let Some(ranks) = crate::launch::world().map(|w| u64::from(w.size))
        && workers != ranks
    {
        return Err(Error::spec(
            "workers",
            workers,
            format!(
                "strategy {s} on MPI ranks runs one worker per rank ({ranks} ranks): start as many ranks as workers"
            ),
        ));
    }
    if let Some(p) = phases.iter().find(|p| p.workers.is_some_and(|n| u64::from(n) > workers)) {
        return Err(Error::spec(
            "ops",
            &p.name,
            format!("more workers than the run's {workers} (the MPI ranks times their threads)"),
        ));
    }
    Ok(reorder_reads)
}

/// Why a read reordering would leave every rank reading what it wrote itself, in a world of
/// `size` ranks (0: not known yet) of which `on_first_host` share rank 0's host: a shift of 0,
/// a shift that is a multiple of the ranks, or `node` with every rank on one host. Such a run
/// would measure unreordered reads under a reordered name.
fn reorders_nothing(r: Reorder, size: u32, on_first_host: u32) -> Option<String> {
    let shift = match r {
        Reorder::Shift(0) => return Some("a shift of 0 reorders nothing (say none)".into()),
        Reorder::Shift(s) => s,
        Reorder::Node => on_first_host,
    };
    (size > 0 && shift % size == 0).then(|| match r {
        Reorder::Node => format!(
            "all {size} ranks are on one host, so each would read what it wrote; run on several hosts (a hostfile) or drop it"
        ),
        _ => format!("{shift} is a multiple of the {size} ranks, so each would read what it wrote; give a shift that is not"),
    })
}

/// The MPI-IO engine's settings: `mpiio` and `mpiio_hint` only with `engine = mpiio`, which
/// runs on MPI ranks, one worker each (MPI is called from each rank's main thread), on whole
/// blocks below 2 GiB (an MPI count is an int), without O_DIRECT; collective I/O needs the
/// one file all ranks share.
#[allow(clippy::too_many_arguments)]
pub(super) fn mpiio(
    params: &Params,
    engine: &str,
    launcher: Launcher,
    workers: u64,
    layout: Layout,
    direct: bool,
    bs: u64,
) -> Result<Option<MpiIo>> {
    let mode = params.one("mpiio");
    let hints = params.0.get("mpiio_hint").cloned().unwrap_or_default();
    if engine != "mpiio" {
        if let Some(m) = mode {
            return Err(Error::spec("mpiio", m, "applies to engine = mpiio only"));
        }
        if let Some(h) = hints.first() {
            return Err(Error::spec("mpiio_hint", h, "applies to engine = mpiio only"));
        }
        return Ok(None);
    }
    if launcher != Launcher::Mpi {
        return Err(Error::spec("engine", engine, "MPI-IO runs on MPI ranks: start iolab with mpirun"));
    }
    let ranks = crate::launch::world().map_or(1, |w| u64::from(w.size));
    if workers != ranks {
        return Err(Error::spec(
            "workers",
            workers,
            format!(
                "engine = mpiio runs one worker per MPI rank ({ranks} ranks): MPI is called from each rank's main thread"
            ),
        ));
    }
    if direct {
        return Err(Error::spec(
            "direct",
            "true",
            "engine = mpiio opens files through MPI; O_DIRECT is not passed",
        ));
    }
    if bs > i32::MAX as u64 {
        return Err(Error::spec(
            "bs",
            bs,
            "engine = mpiio moves at most 2 GiB - 1 per call (an MPI count is an int)",
        ));
    }
    let collective = match mode.unwrap_or("independent") {
        "independent" => false,
        "collective" => true,
        other => return Err(Error::spec("mpiio", other, "expected independent or collective")),
    };
    if collective && layout.per_worker_files() {
        return Err(Error::spec(
            "mpiio",
            "collective",
            format!(
                "collective I/O needs the one file all ranks share (layout shared or shared-strided, not {})",
                layout.name()
            ),
        ));
    }
    let hints = hints
        .iter()
        .map(|h| match h.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !k.contains('\0') && !v.contains('\0') => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(Error::spec("mpiio_hint", h, "expected KEY=VALUE")),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(MpiIo { collective, hints }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mpi_launcher_needs_the_build_mpirun_and_whole_ranks() {
        let why = |r: Result<()>| match r {
            Err(Error::Spec { field, reason, .. }) => format!("{field}: {reason}"),
            other => format!("{other:?}"),
        };
        if crate::launch::HAS_MPI {
            assert!(
                why(check_world(Launcher::Mpi, 4, None, false)).contains("not started by an MPI launcher")
            );
            assert!(
                why(check_world(Launcher::Mpi, 6, Some(4), false))
                    .starts_with("workers: must be a multiple of the 4")
            );
            assert!(check_world(Launcher::Mpi, 8, Some(4), false).is_ok());
        } else {
            assert!(why(check_world(Launcher::Mpi, 4, Some(4), false)).contains("built without MPI"));
        }
        assert!(
            why(check_world(Launcher::Thread, 4, Some(4), false))
                .starts_with("launcher: under mpirun with 4 ranks")
        );
        assert!(check_world(Launcher::Thread, 4, Some(1), false).is_ok());
        assert!(check_world(Launcher::Process, 4, None, false).is_ok());
    }

    #[test]
    fn reorder_reads_parses_and_needs_ranks() {
        let mut p = Params::default();
        p.set_one("reorder_reads", "2").unwrap();
        assert_eq!(check(&p, Launcher::Mpi, 4, &[]).unwrap(), Some(Reorder::Shift(2)));
        assert!(check(&p, Launcher::Thread, 4, &[]).is_err());
        p.set_one("reorder_reads", "node").unwrap();
        assert_eq!(check(&p, Launcher::Mpi, 4, &[]).unwrap(), Some(Reorder::Node));
        p.set_one("reorder_reads", "x").unwrap();
        assert!(check(&p, Launcher::Mpi, 4, &[]).is_err());
        p.set_one("reorder_reads", "none").unwrap();
        assert_eq!(check(&p, Launcher::Thread, 4, &[]).unwrap(), None);
        // A shift of 0 was taken as none, silently.
        p.set_one("reorder_reads", "0").unwrap();
        let e = check(&p, Launcher::Mpi, 4, &[]).unwrap_err().to_string();
        assert!(e.contains("reorder_reads = `0`: a shift of 0 reorders nothing"), "{e}");
    }

    /// A reordering that leaves every rank on its own data is refused, naming why.
    #[test]
    fn a_reordering_that_reorders_nothing_is_refused() {
        assert!(reorders_nothing(Reorder::Shift(0), 0, 0).is_some());
        let e = reorders_nothing(Reorder::Shift(8), 4, 4).unwrap();
        assert_eq!(
            e,
            "8 is a multiple of the 4 ranks, so each would read what it wrote; give a shift that is not"
        );
        assert!(reorders_nothing(Reorder::Shift(4), 4, 4).is_some());
        let e = reorders_nothing(Reorder::Node, 4, 4).unwrap();
        assert!(e.starts_with("all 4 ranks are on one host"), "{e}");
        assert_eq!(reorders_nothing(Reorder::Node, 4, 2), None);
        assert_eq!(reorders_nothing(Reorder::Shift(1), 4, 4), None);
        assert_eq!(reorders_nothing(Reorder::Shift(5), 4, 4), None);
        assert_eq!(reorders_nothing(Reorder::Shift(2), 0, 0), None);
    }
}
