//! The I/O-server parameters of a spec (`servers`, `server_dir`, `server_depth`,
//! `server_store`, `blast_transport`) and the blast phase: servers are MPI ranks (the last S of
//! the world, the clients its first ranks, one worker each), so everything that cannot run that
//! way is refused by name before any I/O.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::spec::{BlastTransport, Launcher, Layout, OpKind, ServerStore, Servers, Spec, SyncPolicy};

use super::Params;

/// The most servers one run may have.
pub const MAX_SERVERS: u32 = 4095;
/// The most requests a client keeps in flight to one server.
pub const MAX_DEPTH: u32 = 64;
/// Requests in flight per server unless told.
pub const DEFAULT_DEPTH: u32 = 4;

/// The keys that mean something only with servers.
const SERVER_KEYS: &[&str] = &["server_dir", "server_depth", "server_store", "blast_transport"];

/// The number of server ranks asked for (`None`: no servers), checked against this build and
/// the MPI world: servers are ranks, so they need a build with MPI, mpirun, and a client left.
pub(super) fn count(params: &Params) -> Result<Option<u32>> {
    let Some(v) = params.one("servers").map(str::trim).filter(|v| !matches!(*v, "0" | "none")) else {
        return Ok(None);
    };
    let n: u32 = v.parse().map_err(|_| Error::spec("servers", v, "expected a whole number of ranks"))?;
    if n > MAX_SERVERS {
        return Err(Error::spec("servers", v, format!("must be between 1 and {MAX_SERVERS}")));
    }
    if !crate::launch::HAS_MPI {
        return Err(Error::spec(
            "servers",
            v,
            "I/O servers are MPI ranks, and this iolab was built without MPI (build it with `cargo build --release --features mpi`)",
        ));
    }
    let Some(w) = crate::launch::world() else {
        return Err(Error::spec(
            "servers",
            v,
            "I/O servers are MPI ranks: run it as `mpirun -np N iolab ...`, N at least the clients plus the servers",
        ));
    };
    if n >= w.size {
        return Err(Error::spec(
            "servers",
            v,
            format!("{n} servers leave none of the {} MPI ranks to be a client", w.size),
        ));
    }
    Ok(Some(n))
}

/// The servers of `spec` (resolved without them): every combination that cannot run on
/// server ranks refused, naming the parameter.
pub(super) fn resolve(params: &Params, spec: &Spec, cwd: &std::path::Path) -> Result<Option<Servers>> {
    let blast = spec.phases.iter().find(|p| p.op == OpKind::Blast);
    let Some(count) = count(params)? else {
        if let Some(k) = SERVER_KEYS.iter().find(|k| params.one(k).is_some()) {
            return Err(Error::spec(*k, params.one(k).unwrap_or(""), "applies with servers only"));
        }
        if spec.engine == ENGINE {
            return Err(Error::spec(
                "engine",
                ENGINE,
                "the clients' side of I/O-server ranks: set servers = S and run under mpirun",
            ));
        }
        if let Some(p) = blast {
            return Err(Error::spec(
                "ops",
                &p.name,
                "a blast sends its bytes to an I/O-server rank: needs servers",
            ));
        }
        return Ok(None);
    };
    let size = crate::launch::world().map_or(1, |w| w.size);
    if spec.workers + count > size {
        return Err(Error::spec(
            "servers",
            count,
            format!(
                "{count} servers and {} clients need {} MPI ranks; mpirun started {size}",
                spec.workers,
                spec.workers + count
            ),
        ));
    }
    if spec.launcher != Launcher::Mpi {
        return Err(Error::spec("launcher", spec.launcher.name(), "servers are MPI ranks (launcher = mpi)"));
    }
    if spec.engine != ENGINE {
        return Err(Error::spec(
            "engine",
            &spec.engine,
            format!(
                "with servers the clients speak to the server ranks (engine {ENGINE}); the servers read and write their files with pread/pwrite"
            ),
        ));
    }
    let refuse = |field: &str, value: &str, what: &str| -> Result<()> {
        Err(Error::spec(field, value, format!("{what}: not with servers")))
    };
    if let Some(s) = spec.strategy {
        refuse("strategy", s.name(), "a strategy's roles are ranks of their own")?;
    }
    if let Some(r) = spec.reorder_reads {
        refuse("reorder_reads", &r.label(), "readers of other ranks' data")?;
    }
    if let Some(r) = &spec.reuse {
        refuse("reuse", r, "the servers make the files of each run")?;
    }
    if spec.alloc_block {
        refuse("alloc", "block", "allocation block by block on the servers")?;
    }
    // Every message between a client and a server carries at most one block, and an MPI count
    // is an int: refused here, before any rank allocates a block's buffer or opens anything.
    if spec.bs_bytes > i32::MAX as u64 {
        return Err(Error::spec(
            "bs",
            crate::units::fmt_size_spec(spec.bs_bytes),
            "with servers a block goes in one MPI message, at most 2 GiB - 1 bytes (an MPI count is an int)",
        ));
    }
    let depth = match params.one("server_depth") {
        None => DEFAULT_DEPTH,
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_DEPTH).contains(&n) => n,
            _ => return Err(Error::spec("server_depth", v, format!("must be between 1 and {MAX_DEPTH}"))),
        },
    };
    let store_s = params.one("server_store").unwrap_or("disk");
    let store = ServerStore::parse(store_s)
        .ok_or_else(|| Error::spec("server_store", store_s, "expected disk or memory"))?;
    let blast_s = params.one("blast_transport");
    let transport = BlastTransport::parse(blast_s.unwrap_or("mpi")).ok_or_else(|| {
        Error::spec("blast_transport", blast_s.unwrap_or(""), "expected mpi, tcp or tcp-nagle")
    })?;
    if let (Some(v), None) = (blast_s, blast) {
        return Err(Error::spec("blast_transport", v, "applies to blast phases (ops = blast)"));
    }
    if let Some(p) = blast {
        check_blast(spec, &p.name)?;
    }
    let dir = match params.one("server_dir") {
        None => spec.dirs.first().cloned().unwrap_or_else(|| cwd.to_path_buf()),
        Some(d) if d.trim().is_empty() || d.contains('\0') => {
            return Err(Error::spec("server_dir", d, "expected a directory path"));
        }
        Some(d) => cwd.join(PathBuf::from(d)),
    };
    // The same guard as every directory iolab writes to (devices, /dev, pseudo file systems,
    // PATH_MAX), on the path alone where it is another host's node-local directory.
    crate::target::device::check_remote_dir("server_dir", &dir, &spec.allow_device)?;
    Ok(Some(Servers { count, dir, depth, store, blast: transport }))
}

/// The engine name of the clients of server ranks.
pub const ENGINE: &str = "servers";

/// The engine of a spec that names none: the clients' with servers, else psync.
pub(super) fn default_engine(servers: Option<u32>) -> &'static str {
    if servers.is_some() { ENGINE } else { "psync" }
}

/// A blast is a phase of its own kind: only blast phases in the run (no file is ever made),
/// one file (stream) per client, no verification, and the server's acknowledgement as the end.
fn check_blast(spec: &Spec, name: &str) -> Result<()> {
    if let Some(p) = spec.phases.iter().find(|p| p.op != OpKind::Blast) {
        return Err(Error::spec(
            "ops",
            &p.name,
            "a run with blast phases has only blast phases (a blast makes no file to read or write)",
        ));
    }
    if spec.layout != Layout::FilePerWorker || spec.file_count() != spec.workers {
        return Err(Error::spec(
            "layout",
            spec.layout.name(),
            format!(
                "a blast is one stream per client (layout file-per-worker, one file each), not {name} over this layout"
            ),
        ));
    }
    if spec.verify {
        return Err(Error::spec(
            "verify",
            "true",
            "a blast's bytes are counted and dropped, never stored to check",
        ));
    }
    if spec.sync != SyncPolicy::End {
        return Err(Error::spec(
            "sync",
            spec.sync.label(),
            "a blast ends when the server acknowledges every byte (sync = end)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testing::{env, params};

    fn why(pairs: &[(&str, &str)]) -> String {
        match crate::experiment::resolve(&params(pairs, ','), &env()) {
            Err(Error::Spec { field, reason, .. }) => format!("{field}: {reason}"),
            other => format!("{other:?}"),
        }
    }

    /// Outside mpirun (the unit tests), servers and what only they use are refused by name.
    #[test]
    fn servers_need_mpi_ranks() {
        let w = why(&[("servers", "2")]);
        if crate::launch::HAS_MPI {
            assert!(w.starts_with("servers: I/O servers are MPI ranks: run it as `mpirun"), "{w}");
        } else {
            assert!(w.contains("built without MPI"), "{w}");
        }
        assert_eq!(why(&[("server_store", "memory")]), "server_store: applies with servers only");
        assert!(
            why(&[("ops", "blast")]).starts_with("ops: a blast sends its bytes"),
            "{}",
            why(&[("ops", "blast")])
        );
        assert!(why(&[("servers", "x")]).starts_with("servers: expected a whole number"));
        assert!(why(&[("servers", "0")]).starts_with("Ok("), "{}", why(&[("servers", "0")]));
    }
}
