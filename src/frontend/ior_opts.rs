//! IOR's options as its own parser reads them into IOR's parameters, with IOR's defaults:
//! every option iolab reads, the ones it refuses with their reasons, and `-O` directives by
//! IOR's parameter names.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

use super::args::{self, Opt, both, flag, long, val};

/// The options of IOR that iolab reads (the others are refused as unknown).
pub const OPTIONS: &[Opt] = &[
    val('a', "API: POSIX (psync), MPIIO (mpiio), MMAP (mmap)"),
    val('b', "blockSize: contiguous bytes per task and segment (1m)"),
    val('t', "transferSize: bytes per I/O call (256k)"),
    val('s', "segmentCount (1)"),
    flag('F', "filePerProc: a file per task"),
    both('c', "collective", false, "collective MPI-IO (with -a MPIIO)"),
    flag('C', "reorderTasks: each task reads what another wrote (IOR's shift, by node)"),
    val('Q', "taskPerNodeOffset of -C (1)"),
    flag('e', "fsync at the end of each write phase"),
    flag('Y', "fsync after every write"),
    flag('E', "useExistingTestFile (iolab's files are always its own)"),
    flag('k', "keepFile: keep the files"),
    flag('w', "write"),
    flag('r', "read"),
    flag('W', "checkWrite: read back and check after the write"),
    flag('R', "checkRead: check what is read"),
    val('i', "repetitions (1)"),
    val('D', "deadlineForStonewalling: seconds"),
    val('O', "directives: stoneWallingWearOut=1, summaryFormat=default, or any option by name"),
    flag('z', "randomOffset: transfers in random order (with -F)"),
    flag('B', "O_DIRECT (IOR 3's useO_DIRECT)"),
    long("posix.odirect", false, "O_DIRECT"),
    long("random-offset-seed", true, "the seed of -z"),
    val('o', "testFile: its directory is where iolab's work directory goes"),
    flag('g', "intraTestBarriers (iolab's workers always meet after opening)"),
    val('d', "interTestDelay: seconds before each repetition"),
    flag('m', "multiFile: a file per repetition (as iolab always does)"),
    val('N', "numTasks: must be the ranks; without mpirun, worker threads"),
    val('G', "setTimeStampSignature: the data's seed"),
    flag('v', "verbose (iolab's output is the same)"),
    flag('Z', "reorderTasksRandom (refused)"),
    val('A', "refNum (refused)"),
    val('j', "outlierThreshold (refused)"),
    flag('K', "keepFileWithError (refused)"),
    val('X', "reorderTasksRandomSeed (refused)"),
    flag('u', "uniqueDir (refused)"),
    both('l', "dataPacketType", true, "dataPacketType (refused)"),
    val('M', "memoryPerNode (refused)"),
    val('T', "maxTimeDuration (refused)"),
    val('f', "scriptFile (refused)"),
    flag('y', "dualMount (refused)"),
    flag('x', "singleXferAttempt (refused)"),
    long("dryRun", false, "(refused: --print shows the translation)"),
];

/// IOR's parameters as given, with IOR's defaults.
#[derive(Debug, Clone)]
pub(super) struct Ior {
    pub(super) api: String,
    pub(super) block: u64,
    pub(super) transfer: u64,
    pub(super) segments: u64,
    pub(super) fpp: bool,
    pub(super) collective: bool,
    pub(super) reorder: bool,
    pub(super) q: u64,
    pub(super) q_given: bool,
    pub(super) fsync: bool,
    pub(super) fsync_each: bool,
    pub(super) keep: bool,
    pub(super) write: bool,
    pub(super) read: bool,
    pub(super) check_write: bool,
    pub(super) check_read: bool,
    pub(super) reps: u64,
    pub(super) deadline: u64,
    pub(super) wear_out: bool,
    pub(super) random: u32,
    pub(super) seed: Option<u64>,
    pub(super) direct: bool,
    pub(super) test_file: Option<String>,
    pub(super) delay: u64,
    pub(super) tasks: Option<u64>,
    /// The words each parameter key came from, in order.
    pub(super) from: BTreeMap<&'static str, Vec<String>>,
}

impl Default for Ior {
    fn default() -> Ior {
        Ior {
            api: "POSIX".into(),
            block: 1 << 20,
            transfer: 256 << 10,
            segments: 1,
            fpp: false,
            collective: false,
            reorder: false,
            q: 1,
            q_given: false,
            fsync: false,
            fsync_each: false,
            keep: false,
            write: false,
            read: false,
            check_write: false,
            check_read: false,
            reps: 1,
            deadline: 0,
            wear_out: false,
            random: 0,
            seed: None,
            direct: false,
            test_file: None,
            delay: 0,
            tasks: None,
            from: Default::default(),
        }
    }
}

pub(super) const FIELD: &str = "ior option";

/// Why an option IOR has is refused, with the nearest iolab option.
fn refused(name: &str) -> Option<&'static str> {
    Some(match name {
        "-Z" | "-X" => {
            "IOR's random task reordering draws each task's offset from the C library's rand(), so tasks may read the same data; iolab reorders reads by a fixed shift: use -C (with -Q), or --set reorder_reads=SHIFT"
        }
        "-u" => "iolab puts every worker's file in one work directory (a directory per task is not built)",
        "-l" => {
            "iolab writes its own data (non-repeating, stamped with each block's offset); IOR's data packets are not built"
        }
        "-M" => {
            "memory hogging is not built; --set prime_memory=SIZE touches and frees memory before each run"
        }
        "-T" => "a time limit over repetitions is not built; -D bounds each phase",
        "-f" => "IOR's test scripts are not read; give one command line per experiment (or a TOML sweep)",
        "-y" => "dual mounts are not built",
        "-A" => {
            "a reference number is not built: iolab's summary's RefNum is 0; iolab's store keeps each run's own id"
        }
        "-j" => {
            "IOR's outlier warning is not built; iolab's statistics show every repetition and flag the spread"
        }
        "-K" => "iolab stops a check at its first error and says where; files are kept with -k",
        "-x" => "iolab fails a short transfer, never retries it",
        "--dryRun" => "nothing to dry-run: --print shows the translated experiment without running it",
        _ => return None,
    })
}

/// Applies one option (or a `-O key=value` directive given by IOR's parameter name).
pub(super) fn apply(ior: &mut Ior, name: &str, value: Option<&str>, words: &str) -> Result<()> {
    if let Some(why) = refused(name) {
        return Err(Error::spec(FIELD, words, why));
    }
    let num = |v: Option<&str>| -> Result<u64> {
        args::number(&format!("{FIELD} {name}"), v.ok_or_else(|| Error::spec(FIELD, words, "needs a value"))?)
    };
    // A flag given as `-F=0` is off, `-F` or `-F=1` on (as IOR's parser reads them).
    let on =
        |v: Option<&str>| -> Result<bool> { Ok(v.map(|v| num(Some(v))).transpose()?.is_none_or(|n| n > 0)) };
    let key: &'static str = match name {
        "-a" => {
            ior.api = value.unwrap_or_default().to_ascii_uppercase();
            "engine"
        }
        "-b" => {
            ior.block = num(value)?;
            "size"
        }
        "-t" => {
            ior.transfer = num(value)?;
            "bs"
        }
        "-s" => {
            ior.segments = num(value)?;
            "segments"
        }
        "-F" => {
            ior.fpp = on(value)?;
            "layout"
        }
        "-c" => {
            ior.collective = on(value)?;
            "mpiio"
        }
        "-C" => {
            ior.reorder = on(value)?;
            "reorder_reads"
        }
        "-Q" => {
            ior.q = num(value)?;
            ior.q_given = true;
            "reorder_reads"
        }
        "-e" => {
            ior.fsync = on(value)?;
            "sync"
        }
        "-Y" => {
            ior.fsync_each = on(value)?;
            "sync"
        }
        "-k" => {
            ior.keep = on(value)?;
            "keep"
        }
        "-w" => {
            ior.write = on(value)?;
            "ops"
        }
        "-r" => {
            ior.read = on(value)?;
            "ops"
        }
        "-W" => {
            ior.check_write = on(value)?;
            "verify"
        }
        "-R" => {
            ior.check_read = on(value)?;
            "verify"
        }
        "-i" => {
            ior.reps = num(value)?;
            "reps"
        }
        "-D" => {
            ior.deadline = num(value)?;
            "stonewall"
        }
        "stoneWallingWearOut" => {
            ior.wear_out = on(value)?;
            "wear_out"
        }
        "-z" => {
            ior.random += 1;
            "order"
        }
        "-B" | "--posix.odirect" => {
            ior.direct = on(value)?;
            "direct"
        }
        "--random-offset-seed" | "-G" => {
            ior.seed = Some(num(value)?);
            "seed"
        }
        "-o" => {
            ior.test_file = value.map(String::from);
            "dirs"
        }
        "-d" => {
            ior.delay = num(value)?;
            "settle"
        }
        "-N" => {
            ior.tasks = Some(num(value)?);
            "workers"
        }
        "-E" | "-g" | "-m" | "-v" => "",
        "-O" => {
            for d in value.unwrap_or_default().split(',').filter(|d| !d.is_empty()) {
                let (k, v) = d
                    .split_once('=')
                    .ok_or_else(|| Error::spec(FIELD, words, format!("directive `{d}` is not KEY=VALUE")))?;
                directive(ior, k.trim(), v.trim(), &format!("-O {d}"))?;
            }
            return Ok(());
        }
        other => return Err(Error::spec(FIELD, other, "not an option of IOR that iolab knows")),
    };
    if !key.is_empty() {
        ior.from.entry(key).or_default().push(words.to_string());
    }
    Ok(())
}

/// A `-O KEY=VALUE` directive: IOR's parameter names (case-insensitive), each as its option.
fn directive(ior: &mut Ior, key: &str, value: &str, words: &str) -> Result<()> {
    let by_name: &[(&str, &str)] = &[
        ("api", "-a"),
        ("blocksize", "-b"),
        ("transfersize", "-t"),
        ("segmentcount", "-s"),
        ("fileperproc", "-F"),
        ("collective", "-c"),
        ("reordertasks", "-C"),
        ("reordertasksconstant", "-C"),
        ("taskpernodeoffset", "-Q"),
        ("fsync", "-e"),
        ("fsyncperwrite", "-Y"),
        ("keepfile", "-k"),
        ("writefile", "-w"),
        ("readfile", "-r"),
        ("checkwrite", "-W"),
        ("checkread", "-R"),
        ("repetitions", "-i"),
        ("deadlineforstonewalling", "-D"),
        ("randomoffset", "-z"),
        ("testfile", "-o"),
        ("intertestdelay", "-d"),
        ("numtasks", "-N"),
        ("usefileview", ""),
        ("useexistingtestfile", "-E"),
        ("intratestbarriers", "-g"),
        ("multifile", "-m"),
        ("settimestampsignature", "-G"),
        ("reordertasksrandom", "-Z"),
        ("reordertasksrandomseed", "-X"),
        ("uniquedir", "-u"),
        ("useo_direct", "--posix.odirect"),
    ];
    let lower = key.to_ascii_lowercase();
    if lower == "stonewallingwearout" {
        return apply(ior, "stoneWallingWearOut", Some(value), words);
    }
    if lower == "summaryformat" {
        return match value.to_ascii_lowercase().as_str() {
            "default" => Ok(()),
            _ => Err(Error::spec(
                FIELD,
                words,
                "IOR's JSON and CSV summaries are not built: --format ior prints IOR's text summary, --json and --csv iolab's own",
            )),
        };
    }
    match by_name.iter().find(|(n, _)| *n == lower) {
        Some((_, opt)) if !opt.is_empty() => {
            // A flag's directive carries its number (`filePerProc=1`).
            let flagged = OPTIONS.iter().any(|o| o.written() == *opt && !o.value);
            if flagged && args::number(FIELD, value)? == 0 {
                return Ok(());
            }
            apply(ior, opt, Some(value), words)
        }
        _ => Err(Error::spec(
            FIELD,
            words,
            "not a directive of IOR that iolab knows (stoneWallingWearOut, summaryFormat, or an option's parameter name)",
        )),
    }
}
