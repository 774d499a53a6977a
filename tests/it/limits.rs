//! Limits: sizes near 2^64, buffers the machine cannot give, more phases than a run may have,
//! and a stop while memory is being primed. Every refusal is exit 2 naming the field and the
//! figure, with nothing created: no work directory, no store.

use std::path::Path;

use crate::rig::*;
use crate::skip;
use crate::util::*;

/// Runs `iolab run --dir SCRATCH ARGS`; asserts the refusal (exit 2, nothing created) and
/// returns its message.
fn refused(s: &Scratch, args: &[&str]) -> String {
    let dir = s.path().to_str().unwrap().to_string();
    let mut all = vec!["run", "-q"];
    if !args.contains(&"--targets") {
        all.extend(["--dir", &dir]);
    }
    all.extend_from_slice(args);
    let out = s.iolab(&all);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
    assert!(err.starts_with("error: "), "{all:?}: {err}");
    assert!(work_dirs(s.path()).is_empty(), "{all:?} made a work directory");
    assert!(!s.db().exists(), "{all:?} made a store");
    err
}

/// MemAvailable from /proc/meminfo, in bytes.
fn mem_available() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with("MemAvailable:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[test]
fn sizes_near_2_pow_64_are_refused_by_name() {
    let s = Scratch::new();
    let d = s.path().to_str().unwrap().to_string();
    let four = format!("{d},{d},{d},{d}");
    for (args, says) in [
        (
            vec!["--size", "18446744073709551615", "--bs", "1"],
            "size = `18446744073709551615`: a file (size) = 16777216.00 TiB, more than a 64-bit file offset reaches",
        ),
        (vec!["--size", "9223372036854775808", "--workers", "2"], "size = `8388608TiB`: a file (size)"),
        (
            vec!["--size", "4611686018427387904", "--workers", "2"],
            "size = `4194304TiB`: the run's total (size x files) = 4194304 TiB x 2 = 8388608 TiB",
        ),
        (
            vec!["--size", "4611686018427387904", "--workers", "4", "--layout", "shared"],
            "size = `4194304TiB`: the shared file (size x workers) = 4194304 TiB x 4 overflows 64 bits",
        ),
        (
            vec!["--targets", &four, "--layout", "striped", "--stripe-unit", "4611686018427387904"],
            "stripe_unit = `4194304TiB`: a stripe (stripe_unit x stripe_count) = 4194304 TiB x 4 overflows",
        ),
        (
            vec!["--layout", "striped", "--stripe-count", "18446744073709551615"],
            "stripe_count = `18446744073709551615`: must be between 1 and 4096",
        ),
        (
            vec!["--size", "1TiB", "--files", "1000000", "--keep", "--reps", "100000"],
            "reps = `100000`: with keep, the kept data (run's total x reps) = 1000000 TiB x 100000 overflows",
        ),
        (
            vec!["--mem-len", "4096", "--mem-stride", "18446744073709551615"],
            "mem_stride = `18446744073709551615`: each worker would need more than 16 EiB",
        ),
    ] {
        let err = refused(&s, &args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The same sizes from a spec file, and through `iolab plan`.
#[test]
fn spec_files_with_sizes_near_2_pow_64_are_refused_by_name() {
    let s = Scratch::new();
    let files = tempfile::tempdir().unwrap();
    for (toml, says) in [
        ("size = \"18446744073709551615\"\nbs = \"1\"\n", "size = `18446744073709551615`: a file (size)"),
        ("size = \"16777215TiB\"\nworkers = 3\n", "size = `16777215TiB`: a file (size)"),
        (
            "size = \"4194304TiB\"\nworkers = 4\nlayout = \"shared\"\n",
            "the shared file (size x workers) = 4194304 TiB x 4 overflows 64 bits",
        ),
    ] {
        let spec = files.path().join("spec.toml");
        std::fs::write(&spec, toml).unwrap();
        let err = refused(&s, &[spec.to_str().unwrap()]);
        assert!(err.contains(says), "{toml}: {err}");
        let out = s.iolab(&["plan", "--dir", s.path().to_str().unwrap(), spec.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}

/// `--engine uring --iodepth 64 --bs 1GiB` once aborted on a 64 GiB allocation, leaving a work
/// directory and an empty experiment. Now the buffers are counted first: refused, naming the
/// fields and the figures. Workers are added until the need passes this machine's memory.
#[test]
fn buffers_larger_than_memory_are_refused_before_anything_is_made() {
    let s = Scratch::new();
    let avail = mem_available();
    let workers = (avail / (64 << 30) + 1).to_string();
    let dir = s.path().to_str().unwrap().to_string();
    let probe = s.iolab(&["plan", "--dir", &dir, "--engine", "uring", "--size", "1MiB"]);
    if !probe.status.success() {
        skip!("io_uring is not available here: {}", stderr(&probe));
    }
    let err = refused(
        &s,
        &["--engine", "uring", "--iodepth", "64", "--bs", "1GiB", "--size", "1GiB", "--workers", &workers],
    );
    assert!(err.contains(&format!("bs x iodepth x workers = `1GiB x 64 x {workers}`")), "{err}");
    assert!(err.contains("of memory (64 GiB of buffers per worker"), "{err}");
    assert!(err.contains(" is available ("), "{err}");

    // psync: one block per worker, 1 GiB each, one worker more than memory holds.
    let workers = avail / (1 << 30) + 1;
    if workers > 4096 {
        skip!("more than 4 TiB of memory available: no psync run can need more");
    }
    let w = workers.to_string();
    let err = refused(&s, &["--engine", "psync", "--bs", "1GiB", "--size", "1GiB", "--workers", &w]);
    assert!(err.contains(&format!("bs x workers = `1GiB x {w}`: the run's buffers need")), "{err}");
}

#[test]
fn more_than_a_thousand_phases_are_refused_and_a_thousand_run() {
    let s = Scratch::new();
    let files = tempfile::tempdir().unwrap();
    let spec = files.path().join("many.toml");
    let many: Vec<&str> = vec!["\"read\""; 200_000];
    std::fs::write(&spec, format!("ops = [\"write\", {}]\n", many.join(", "))).unwrap();
    let err = refused(&s, &[spec.to_str().unwrap(), "--size", "64KiB", "--bs", "4KiB"]);
    assert!(err.contains("ops = `200001 phases`: a run has at most 1000 phases"), "{err}");

    let few: Vec<&str> = vec!["\"read\""; 999];
    std::fs::write(&spec, format!("ops = [\"write\", {}]\n", few.join(", "))).unwrap();
    let out = s.iolab(&[
        "plan",
        "--dir",
        s.path().to_str().unwrap(),
        spec.to_str().unwrap(),
        "--size",
        "64KiB",
        "--bs",
        "4KiB",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1000 phases x 5 repetitions"), "{text}");
    assert!(text.contains("phase 1000 `read#999`"), "{text}");
}

/// This process's resident memory (/proc/PID/statm).
fn resident(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    let pages: u64 = text.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// SIGINT while `--prime-memory` touches its memory stops the priming itself: exit 130, and
/// no repetition ran (priming used to finish first, then the run began and was interrupted).
#[test]
fn sigint_during_memory_priming_stops_it() {
    let s = Scratch::new();
    let prime = (mem_available() / 4).min(4 << 30) >> 20 << 20;
    if prime < 256 << 20 {
        skip!("less than 1 GiB of memory available");
    }
    let dir = s.path().to_str().unwrap().to_string();
    let size = format!("{}MiB", prime >> 20);
    let child = spawn(
        &s,
        &[
            "run",
            "--json",
            "-q",
            "--no-store",
            "--dir",
            &dir,
            "--size",
            "1MiB",
            "--reps",
            "1",
            "--prime-memory",
            &size,
        ],
    );
    let pid = child.id();
    // Past 64 MiB resident it is priming (iolab alone holds some 15 MiB); a loaded machine
    // hands out freed pages slowly, so waiting for much more proves nothing more.
    wait_until(120, "priming to start", || resident(pid) > 64 << 20);
    signal(&child, libc::SIGINT);
    let out = finish(child, 60);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for ph in phases(&doc) {
        assert_eq!(ph["repetitions"].as_array().unwrap().len(), 0, "a repetition ran: {ph}");
    }
    assert!(work_dirs(Path::new(&dir)).is_empty());
}

/// A tmpfs is checked against memory, not only its own size: one sized beyond the machine's
/// memory (and swap), with a file larger than they hold, is refused by `plan` and `run` naming
/// the memory (statvfs alone passed it, and a run would then have filled memory); so is one
/// without an inode limit planning four billion files, whose inodes alone pass any machine's
/// memory. A small run there still runs.
#[test]
fn a_memory_file_system_is_checked_against_memory_too() {
    if !is_root() {
        skip!("mounting a tmpfs needs root");
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let field = |k: &str| -> u64 {
        let l = meminfo.lines().find(|l| l.starts_with(k)).unwrap();
        l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    };
    let room_mib = (mem_available() + field("SwapFree:")) / (1 << 20) + 1024;
    let s = Scratch::new();
    let t = s.path().join("t");
    let _m = match tmpfs_with(&t, &format!("size={}m", 4 * room_mib)) {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    let td = t.to_str().unwrap();
    let size = format!("{room_mib}MiB");
    for cmd in ["plan", "run"] {
        let out = s.iolab(&[cmd, "--dir", td, "--op", "write", "--size", &size, "--reps", "1"]);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {e}");
        assert!(e.contains("not enough memory for the file system holding"), "{cmd}: {e}");
        assert!(
            e.contains("it is a tmpfs, whose files live in memory") && e.contains("of memory is available"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0, "{cmd}: nothing made");
    }
    let out =
        s.iolab(&["run", "-q", "--dir", td, "--op", "write", "--size", "4MiB", "--reps", "1", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let u = s.path().join("u");
    let _m = match tmpfs_with(&u, "size=1t,nr_inodes=0") {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs without an inode limit: {e}"),
    };
    let ud = u.to_str().unwrap();
    let out = s.iolab(&[
        "plan",
        "--dir",
        ud,
        "--op",
        "create",
        "--md-files",
        "1000000000",
        "--workers",
        "4",
        "--reps",
        "1",
    ]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("not enough memory for the file system holding")
            && e.contains("4000000007 files and directories"),
        "{e}"
    );
}

/// A trace spool and the store it goes to, or the temporary directory a `--no-store` run spools
/// to, on a tmpfs sized beyond the machine's memory: refused by `run` and `plan` naming the
/// memory (statvfs alone passed them: a null-engine run traces every op, so the spool would
/// have grown in memory until it ran out). Nothing is made there.
#[test]
fn a_trace_spool_in_memory_is_checked_against_memory_too() {
    if !is_root() {
        skip!("mounting a tmpfs needs root");
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let swap = meminfo.lines().find(|l| l.starts_with("SwapFree:")).unwrap();
    let swap = swap.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024;
    let room_mib = (mem_available() + swap) / (1 << 20) + 1024;
    let s = Scratch::new();
    let t = s.path().join("t");
    let _m = match tmpfs_with(&t, &format!("size={}m", 4 * room_mib)) {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    let td = t.to_str().unwrap();
    // 41 B of spool per 512 B op of the default's three phases: one repetition's spool is
    // about 1.5 times the room, and with its stored rows about 3 times: more than memory, less
    // than the tmpfs's size.
    let size = format!("{}GiB", room_mib / 164);
    let db = t.join("s.db");
    let traced = ["--engine", "null", "--size", &size, "--bs", "512", "--reps", "1", "--trace"];
    for cmd in ["plan", "run"] {
        for store in [true, false] {
            let mut args = vec![cmd];
            args.extend(traced);
            let out = if store {
                args.extend(["--db", db.to_str().unwrap()]);
                s.iolab(&args)
            } else {
                args.push("--no-store");
                s.iolab_env(&args, &[("TMPDIR", td)])
            };
            let e = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd} {store}: {e}");
            assert!(e.contains("trace = `true`: a repetition's trace of "), "{cmd} {store}: {e}");
            assert!(
                e.contains(&format!("{td} is on a tmpfs, whose files live in memory: "))
                    && e.contains("of memory is available"),
                "{cmd} {store}: {e}"
            );
            assert_eq!(e.contains(", then stores every repetition's there: "), store, "{cmd} {store}: {e}");
            assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0, "{cmd} {store}: nothing made");
        }
    }
    // A small traced run there still runs.
    let out = s.iolab(&[
        "run",
        "-q",
        "--engine",
        "null",
        "--size",
        "64KiB",
        "--bs",
        "512",
        "--reps",
        "1",
        "--trace",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}
