//! IOR's command line (`iolab ior -a POSIX -b 16m -t 1m -s 4 -F -C ...`) translated into one
//! iolab experiment: IOR's API as the engine, its blocks, transfers and segments as the
//! layout (each rank's transfer k of segment s at s N b + r b + k t in the shared file, s b + k
//! t in its own), its task reordering for reads (`-C`, `-Q`) as the ranks' read shift by IOR's
//! own rule, its fsyncs as the commit policy, its stonewall and wear-out as iolab's. What iolab
//! cannot do as IOR does is refused by name.

use crate::error::{Error, Result};

use super::Translation;
use super::args::{self, Given};
pub use super::ior_opts::OPTIONS;
use super::ior_opts::{FIELD, Ior, apply};

/// The MPI world a job is translated for: its ranks, those on rank 0's host, and whether rank
/// 1 shares rank 0's host (IOR's "block mapping" of tasks to nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranks {
    pub size: u32,
    pub on_first_host: u32,
    pub block_mapping: bool,
}

impl Ranks {
    /// This process's world (one rank without MPI).
    pub fn here() -> Ranks {
        match crate::launch::world() {
            Some(w) => Ranks {
                size: w.size,
                on_first_host: w.hosts.iter().filter(|h| **h == w.hosts[0]).count() as u32,
                block_mapping: w.size == 1 || w.hosts.get(1) == w.hosts.first(),
            },
            None => Ranks { size: 1, on_first_host: 1, block_mapping: true },
        }
    }
}

/// IOR's rank offset of a read with `-C -Q q`: task r reads what task (r + offset) mod N
/// wrote, the offset q times the tasks on node 0 when tasks are mapped to nodes in blocks (rank
/// 1 on rank 0's node), else q (tasks dealt round-robin to nodes), mod N.
pub fn rank_offset(q: u64, ranks: Ranks) -> u64 {
    let shift = if ranks.block_mapping { u64::from(ranks.on_first_host) } else { 1 };
    q.saturating_mul(shift) % u64::from(ranks.size.max(1))
}

/// Translates IOR's command line (without iolab's own options) for the world `ranks`.
pub fn translate(words: &[String], ranks: Ranks) -> Result<Translation> {
    let given: Vec<Given> = args::parse("IOR", OPTIONS, words)?;
    let mut ior = Ior::default();
    for g in &given {
        apply(&mut ior, &g.name(), g.value.as_deref(), &g.words)?;
    }
    let mut t = build(&ior, words, ranks)?;
    for g in given.iter().filter(|g| g.in_value) {
        t.note(format!("{}, and so does iolab", g.words));
    }
    Ok(t)
}

fn build(ior: &Ior, words: &[String], ranks: Ranks) -> Result<Translation> {
    let mut t = Translation::new("IOR");
    let from = |k: &str, dflt: &str| ior.from.get(k).map_or(dflt.to_string(), |w| w.join(" "));
    let bad = |what: &str, why: &str| Err(Error::spec(FIELD, what, why));
    // IOR's own checks, in its words and its order.
    let seeds = ior.from.get("seed").map_or(&[][..], |w| &w[..]);
    let offset_seed = seeds.iter().any(|w| w.starts_with("--random-offset-seed"));
    let signature = seeds.iter().any(|w| !w.starts_with("--random-offset-seed"));
    if !(ior.write || ior.check_write) && ior.check_read && !signature {
        return bad("-R", "using readCheck only requires to write a timeStampSignature -- use -G");
    }
    if ior.block % 8 != 0 {
        return bad(&from("size", "-b"), "block size must be a multiple of access size (8 bytes)");
    }
    if ior.transfer % 8 != 0 {
        return bad(&from("bs", "-t"), "transfer size must be a multiple of access size (8 bytes)");
    }
    if ior.transfer == 0 {
        return bad(&from("bs", "-t"), "test will not complete with zero transfer size");
    }
    if ior.block < ior.transfer || ior.block % ior.transfer != 0 {
        return bad(&from("size", "-b"), "block size must be a multiple of transfer size (and not smaller)");
    }
    if ior.segments == 0 {
        return bad(&from("segments", "-s"), "segment count must be positive");
    }
    if ior.wear_out && ior.deadline == 0 {
        return bad(
            &from("wear_out", "-O stoneWallingWearOut=1"),
            "the stoneWallingWearOut is only sensible when setting a stonewall deadline with -D",
        );
    }
    if ior.random > 1 {
        return bad(
            "-z -z",
            "IOR's random offsets with repeats (-z twice) are not built; -z visits every transfer once in a random order",
        );
    }
    if ior.random == 1 && ior.block == ior.transfer {
        return bad(
            "-z",
            "IOR will randomize access within a block and repeats the same pattern for all segments, therefore choose blocksize > transferSize",
        );
    }
    if ior.random > 0 && ior.check_read && !offset_seed {
        return bad(
            "-z",
            "random offset with read check option requires to set the random seed (--random-offset-seed)",
        );
    }
    if ior.random == 1 && !ior.fpp {
        return bad(
            "-z",
            "in one shared file IOR deals the transfers to tasks at random (each task's set differs from its block); iolab keeps each task's block: use -F -z, or iolab run --layout shared --order random",
        );
    }
    if ior.check_write && ior.reorder {
        return bad(
            "-W",
            "IOR checks a write one node further than -C reads; iolab reorders every read phase by one shift: give -W or -C, or -R to check the reads",
        );
    }
    t.set("name", format!("ior {}", words.join(" ")), "the command line")?;
    let engine = match ior.api.as_str() {
        "POSIX" => "psync",
        "MPIIO" => "mpiio",
        "MMAP" => "mmap",
        other => {
            return bad(
                &from("engine", "-a"),
                &format!("API {other} is not built in iolab (POSIX: psync, MPIIO: mpiio, MMAP: mmap)"),
            );
        }
    };
    t.set("engine", engine, &from("engine", "-a POSIX (IOR's default)"))?;
    if ior.collective {
        if engine != "mpiio" {
            return bad("-c", "collective I/O is MPI-IO's (-a MPIIO)");
        }
        t.set("mpiio", "collective", &from("mpiio", "-c"))?;
    }
    // Sizes: each worker's bytes are -b x -s; ops of -t.
    let size =
        ior.block.checked_mul(ior.segments).ok_or_else(|| Error::spec(FIELD, "-b", "-b x -s overflows"))?;
    t.set("bs", ior.transfer, &from("bs", "-t 256k (IOR's default)"))?;
    let size_from = [
        from("size", "-b 1m (IOR's default)"),
        ior.from.get("segments").map(|w| w.join(" ")).unwrap_or_default(),
    ];
    t.set(
        "size",
        size,
        size_from.iter().filter(|s| !s.is_empty()).cloned().collect::<Vec<_>>().join(" x ").as_str(),
    )?;
    if ior.fpp {
        t.set("layout", "file-per-worker", &from("layout", "-F"))?;
    } else {
        t.set("layout", "shared", "no -F: one shared file")?;
    }
    if ior.segments > 1 {
        t.set("segments", ior.segments, &from("segments", "-s"))?;
    }
    // Phases: IOR writes and reads when told neither.
    let (write, read) = if !(ior.write || ior.read || ior.check_write || ior.check_read) {
        (true, true)
    } else {
        (ior.write, ior.read || ior.check_read)
    };
    let mut ops = vec![];
    let mut ops_from = vec![];
    if write {
        ops.push("write".to_string());
    }
    if ior.check_write {
        if !write {
            return bad("-W", "checkWrite checks what this run writes: give -w too");
        }
        ops.push("read:asis".to_string());
        ops_from.push("-W: the check, untimed in IOR");
    }
    if read {
        ops.push("read".to_string());
    }
    if ior.random == 1 {
        t.set("order", "random", &from("order", "-z"))?;
        t.note("-z: each task visits every transfer of its file once in a random order; IOR permutes the transfers of one block and repeats that order in every segment, iolab permutes all the file's transfers (the same set)");
    }
    let ops_origin = match ior.from.get("ops") {
        Some(w) => w.join(" "),
        None => "neither -w nor -r: IOR writes, then reads".to_string(),
    };
    t.set_list(
        "ops",
        ops,
        &[ops_origin]
            .into_iter()
            .chain(ops_from.iter().map(|s| s.to_string()))
            .collect::<Vec<_>>()
            .join("; "),
    )?;
    if read && !write {
        t.note("-r without -w: IOR reads an existing file; iolab lays its own files out first, untimed, then reads them");
    }
    // The page cache as IOR leaves it.
    t.set("cache", "asis", "IOR sets no cache state (--set cache=cold reads from a cache verified cold)")?;
    // Commits.
    if ior.fsync_each {
        t.set("sync", "each", &from("sync", "-Y"))?;
        t.set("sync_call", "fsync", "-Y: fsync")?;
    } else if ior.fsync {
        t.set("sync", "end", &from("sync", "-e"))?;
        t.set("sync_call", "fsync", "-e: fsync")?;
    } else {
        t.set("sync", "none", "no -e: IOR commits nothing")?;
    }
    if ior.direct {
        t.set("direct", "true", &from("direct", "--posix.odirect"))?;
    }
    if ior.check_read || ior.check_write {
        t.set("verify", "true", &from("verify", "-R"))?;
        t.note("-R/-W: iolab writes a verify header in every transfer and checks every transfer read (its own data, not IOR's signature)");
    }
    t.set("reps", ior.reps.max(1), &from("reps", "-i 1 (IOR's default)"))?;
    if ior.deadline > 0 {
        t.set("stonewall", format!("{}s", ior.deadline), &from("stonewall", "-D"))?;
        if ior.wear_out {
            t.set("wear_out", "true", &from("wear_out", "-O stoneWallingWearOut=1"))?;
        }
    }
    if let Some(s) = ior.seed {
        t.set("seed", s, &from("seed", "-G"))?;
    }
    if ior.keep {
        t.set("keep", "true", &from("keep", "-k"))?;
    }
    if ior.delay > 0 {
        t.set("settle", format!("{}s", ior.delay), &from("settle", "-d"))?;
    }
    if let Some(f) = &ior.test_file {
        if f.contains('@') {
            return bad(&from("dirs", "-o"), "several test files (@) are not built; give one -o");
        }
        let p = std::path::Path::new(f);
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or(".".to_string(), |d| d.display().to_string());
        t.set_list("dirs", vec![dir.clone()], &from("dirs", "-o"))?;
        t.note(format!("-o {f}: iolab writes in its own work directory under {dir} (.iolab-RUNID), its files named by iolab"));
    }
    // Tasks: the ranks under mpirun; without it, IOR is one task (or -N threads here).
    if let Some(n) = ior.tasks {
        if ranks.size > 1 && n != u64::from(ranks.size) {
            return bad(
                &from("workers", "-N"),
                &format!("iolab runs on every rank of mpirun ({}); start as many ranks as tasks", ranks.size),
            );
        }
        if ranks.size <= 1 && n > 1 {
            t.set("workers", n, &from("workers", "-N"))?;
            t.note(format!("-N {n} without mpirun: {n} worker threads in one process stand for IOR's tasks"));
        }
    }
    // Read reordering, by IOR's rule for this world.
    if ior.reorder {
        let off = rank_offset(ior.q, ranks);
        if off == 0 {
            t.note(format!(
                "-C: IOR's shift is {} x {} mod {} = 0 ranks here (every task on one node): reads are not reordered, as IOR's are not",
                ior.q,
                if ranks.block_mapping { ranks.on_first_host } else { 1 },
                ranks.size
            ));
        } else {
            let q = if ior.q_given { format!(" -Q {}", ior.q) } else { String::new() };
            t.set(
                "reorder_reads",
                off,
                &format!("-C{q}: IOR's rank offset, task r reads what task r+{off} wrote"),
            )?;
        }
    } else if ior.q_given {
        t.note("-Q without -C: no effect, as in IOR");
    }
    for g in ["-E", "-g", "-m"] {
        if words.iter().any(|w| w == g) {
            t.note(match g {
                "-E" => "-E: iolab's files are its own, emptied before each write phase",
                "-g" => "-g: iolab's workers always meet at a barrier after opening their files; no barrier before the close",
                _ => "-m: every iolab repetition writes files of its own",
            });
        }
    }
    Ok(t)
}

/// The help of `iolab ior --help`.
pub fn help() -> String {
    format!(
        "Run an IOR command line as an iolab experiment: iolab ior [IOR OPTIONS] [iolab options]\n\
         (under mpirun as IOR: mpirun -np 4 iolab ior -a POSIX -b 16m -t 1m -s 4 -F -C -e)\n\n\
         IOR options iolab reads (docs/ior.md has the table; any other is refused):\n{}\n{}",
        args::help_table(OPTIONS),
        super::OWN_HELP
    )
}

#[cfg(test)]
#[path = "ior_tests.rs"]
mod tests;
