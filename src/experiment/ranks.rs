//! The checks of an experiment on MPI ranks: the launcher against the MPI world (the build,
//! mpirun, workers a multiple of the ranks, one rank per strategy worker), the read
//! reordering, and phases with more workers than the run.

use crate::error::{Error, Result};
use crate::spec::{Launcher, Layout, MpiIo, Phase, Reorder};

use super::Params;
use crate::worker::Monitor;

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
            format!(
                "must be a multiple of the {n} MPI ranks (each rank runs workers / ranks threads): {} would do",
                [workers / n * n, (workers / n + 1) * n]
                    .iter()
                    .filter(|&&w| w > 0)
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
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
    let hints = hints.iter().map(|h| hint(h)).collect::<Result<Vec<_>>>()?;
    Ok(Some(MpiIo { collective, hints }))
}

/// The longest hint key and value the MPI library takes (MPI_MAX_INFO_KEY and
/// MPI_MAX_INFO_VAL, less the terminating NUL); past them MPI aborts the rank.
#[cfg(feature = "mpi")]
pub const HINT_KEY_MAX: usize = mpi::ffi::MPI_MAX_INFO_KEY as usize - 1;
#[cfg(feature = "mpi")]
pub const HINT_VALUE_MAX: usize = mpi::ffi::MPI_MAX_INFO_VAL as usize - 1;
#[cfg(not(feature = "mpi"))]
pub const HINT_KEY_MAX: usize = 35;
#[cfg(not(feature = "mpi"))]
pub const HINT_VALUE_MAX: usize = 255;

/// The hints (the MPI standard's and ROMIO's) whose value is a count or a size in bytes, read
/// by the library as a C int: each must be a whole number from 1 to 2^31 - 1 (an earlier
/// version handed `cb_nodes=-5` on, and a rank crashed in the collective write).
pub const NUMERIC_HINTS: &[&str] = &[
    "cb_nodes",
    "cb_buffer_size",
    "cb_block_size",
    "striping_factor",
    "striping_unit",
    "ind_rd_buffer_size",
    "ind_wr_buffer_size",
    "romio_lustre_co_ratio",
];

/// ROMIO's switches: `enable`, `disable` or `automatic`.
pub const SWITCH_HINTS: &[&str] =
    &["romio_cb_read", "romio_cb_write", "romio_ds_read", "romio_ds_write", "romio_no_indep_rw"];

/// The hints the MPI standard reserves and those ROMIO reads; a key outside them is one an
/// MPI-IO layer most likely ignores.
pub const KNOWN_HINTS: &[&str] = &[
    "access_style",
    "cb_block_size",
    "cb_buffer_size",
    "cb_config_list",
    "cb_nodes",
    "chunked",
    "chunked_item",
    "chunked_size",
    "collective_buffering",
    "direct_read",
    "direct_write",
    "file_perm",
    "filename",
    "ind_rd_buffer_size",
    "ind_wr_buffer_size",
    "io_node_list",
    "nb_proc",
    "num_io_nodes",
    "romio_cb_alltoall",
    "romio_cb_ds_threshold",
    "romio_cb_fr_alignment",
    "romio_cb_fr_types",
    "romio_cb_pfr",
    "romio_cb_read",
    "romio_cb_write",
    "romio_ds_read",
    "romio_ds_write",
    "romio_lustre_co_ratio",
    "romio_lustre_coll_threshold",
    "romio_lustre_ds_in_coll",
    "romio_no_indep_rw",
    "striping_factor",
    "striping_unit",
];

/// Says once (each distinct line once per process; only rank 0 runs the coordinator) which
/// MPI-IO hints given did not take effect as given: one the MPI-IO layer does not report in
/// effect after the open (MPI_File_get_info), one it applied with another value, and one no
/// MPI-IO layer is known to read (a layer ignores keys it does not know, and may still report
/// them back).
pub fn note_hints(spec: &crate::spec::Spec, workers: &[crate::results::WorkerResult], monitor: &dyn Monitor) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Some(m) = &spec.mpiio else { return };
    let Some(applied) = workers.iter().find_map(|w| w.mpiio_hints.as_ref()) else { return };
    for (k, v) in &m.hints {
        let line = match applied.get(k) {
            None => format!(
                "MPI-IO hint {k}={v}: not applied (the MPI-IO layer does not report it in effect after the open)"
            ),
            Some(a) if a != v => format!("MPI-IO hint {k}={v}: the MPI-IO layer applied {k}={a}"),
            Some(_) if !KNOWN_HINTS.contains(&k.as_str()) => format!(
                "MPI-IO hint {k}={v}: neither the MPI standard nor ROMIO defines {k}; an MPI-IO layer ignores a hint it does not know"
            ),
            _ => continue,
        };
        let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !said.contains(&line) {
            monitor.note(&crate::text::one_line(&line));
            said.push(line);
        }
    }
}

/// One `--mpiio-hint KEY=VALUE`, checked before any rank opens a file: the form, the lengths
/// MPI takes, no control characters, and the known numeric and switch hints' values.
fn hint(h: &str) -> Result<(String, String)> {
    let Some((k, v)) = h.split_once('=') else {
        return Err(Error::spec("mpiio_hint", h, "expected KEY=VALUE"));
    };
    let (k, v) = (k.trim(), v.trim());
    let bad = |why: String| Err(Error::spec("mpiio_hint", crate::text::one_line(h), why));
    if k.is_empty() || v.is_empty() {
        return bad("expected KEY=VALUE, both non-empty".into());
    }
    if let Some(c) = h.chars().find(|c| c.is_control()) {
        return bad(format!("holds the control character {c:?}; a hint is printable text"));
    }
    if k.len() > HINT_KEY_MAX {
        return bad(format!(
            "the key is {} bytes; MPI takes at most {HINT_KEY_MAX} (MPI_MAX_INFO_KEY)",
            k.len()
        ));
    }
    if v.len() > HINT_VALUE_MAX {
        return bad(format!(
            "the value is {} bytes; MPI takes at most {HINT_VALUE_MAX} (MPI_MAX_INFO_VAL)",
            v.len()
        ));
    }
    if NUMERIC_HINTS.contains(&k) && !v.parse::<i32>().is_ok_and(|n| n >= 1) {
        return bad(format!("{k} is a count or a size: a whole number from 1 to {}", i32::MAX));
    }
    if SWITCH_HINTS.contains(&k) && !matches!(v, "enable" | "disable" | "automatic") {
        return bad(format!("{k} is enable, disable or automatic"));
    }
    Ok((k.to_string(), v.to_string()))
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

    /// Hints are checked before any rank opens a file: form, lengths, control characters, and
    /// the known numeric and switch hints' values; a sound one passes trimmed.
    #[test]
    fn mpiio_hints_are_checked_by_name() {
        let why = |h: &str| match hint(h) {
            Err(Error::Spec { field, reason, .. }) => format!("{field}: {reason}"),
            Ok(kv) => format!("{kv:?}"),
            other => format!("{other:?}"),
        };
        assert_eq!(why(" cb_nodes = 2 "), r#"("cb_nodes", "2")"#);
        assert_eq!(why("foo=bar"), r#"("foo", "bar")"#);
        assert!(why("cb_nodes=-5").contains("cb_nodes is a count or a size"), "{}", why("cb_nodes=-5"));
        for bad in ["cb_nodes=0", "cb_buffer_size=2147483648", "striping_unit=1k", "striping_factor=x"] {
            assert!(why(bad).contains("a whole number from 1 to 2147483647"), "{bad}: {}", why(bad));
        }
        assert!(why("romio_cb_write=yes").contains("enable, disable or automatic"));
        assert!(why("cb\nnodes=1").contains("control character '\\n'"), "{}", why("cb\nnodes=1"));
        assert!(why("a=b\u{1b}[31m").contains("control character"));
        let long_key = format!("{}=1", "k".repeat(HINT_KEY_MAX + 1));
        assert!(why(&long_key).contains("(MPI_MAX_INFO_KEY)"), "{}", why(&long_key));
        assert!(!why(&format!("{}=1", "k".repeat(HINT_KEY_MAX))).contains("MPI_MAX"));
        let long_value = format!("k={}", "v".repeat(HINT_VALUE_MAX + 1));
        assert!(why(&long_value).contains("(MPI_MAX_INFO_VAL)"), "{}", why(&long_value));
        assert!(why("novalue").contains("expected KEY=VALUE"));
        assert!(why("=1").contains("both non-empty"));
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
