//! Refusals that name the user's own value and what to do, before anything is made: a key
//! swept twice, no place for the default store, a preset's values from `--set` or `--ram`, a
//! memory size given relative to memory, a directory whose files would pass PATH_MAX, a trace
//! spool under /dev, and a build without MPI under an MPI launcher.

use std::path::Path;

use crate::util::*;

/// `iolab ARGS` in the scratch directory: exit 2 with `want` on stderr, and no store made.
fn refused(s: &Scratch, args: &[&str], vars: &[(&str, &str)], want: &str) {
    let o = s.iolab_env(args, vars);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    assert!(!s.db().exists(), "{args:?} made a store");
}

/// Two sweeps of one key were one: the last. Now refused, naming both.
#[test]
fn a_key_swept_twice_is_refused() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    refused(
        &s,
        &["run", "--dir", dir, "--size", "64KiB", "--sweep", "bs=4KiB,8KiB", "--sweep", "bs=16KiB"],
        &[],
        "sweep bs = `16KiB`: bs is swept twice (bs=4KiB,8KiB and bs=16KiB); give its values in one sweep",
    );
    refused(&s, &["plan", "--dir", dir, "--sweep", "dir=a", "--sweep", "dirs=b"], &[], "dirs is swept twice");
    let toml = s.path().join("t.toml");
    std::fs::write(&toml, "size = \"64KiB\"\n[sweep]\ndir = \"/a;/b\"\ndirs = \"/c\"\n").unwrap();
    refused(&s, &["run", toml.to_str().unwrap()], &[], "dirs is swept twice");
    // A command-line sweep over the file's is no repeat: it replaces it.
    std::fs::write(
        &toml,
        format!("size = \"64KiB\"\nreps = 1\ndirs = [\"{dir}\"]\n[sweep]\nbs = \"4KiB\"\n"),
    )
    .unwrap();
    let o = s.iolab(&["plan", toml.to_str().unwrap(), "--sweep", "bs=8KiB,16KiB"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 points"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// With HOME unset, empty or relative (and no XDG_DATA_HOME, or a relative one), there is no
/// default store: refused naming both variables, and nothing made under the current directory.
#[test]
fn no_absolute_home_means_no_default_store() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    for (home, xdg, says) in [
        (None, None, "XDG_DATA_HOME is unset and HOME is unset"),
        (Some(""), None, "HOME is empty"),
        (Some("rel"), Some("data"), "XDG_DATA_HOME is `data`, not absolute and HOME is `rel`, not absolute"),
    ] {
        for args in [
            vec!["run", "--dir", &dir, "--size", "64KiB", "--bs", "16KiB", "--reps", "1"],
            vec!["results", "list"],
        ] {
            let mut c = command();
            c.args(&args)
                .current_dir(s.path())
                .env_remove("IOLAB_DB")
                .env_remove("HOME")
                .env_remove("XDG_DATA_HOME");
            if let Some(h) = home {
                c.env("HOME", h);
            }
            if let Some(x) = xdg {
                c.env("XDG_DATA_HOME", x);
            }
            let o = c.output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            let e = stderr(&o);
            assert!(e.contains(says) && e.contains("name the store with --db PATH or IOLAB_DB"), "{e}");
            let left: Vec<_> = std::fs::read_dir(s.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(left.is_empty(), "{args:?} left {left:?}");
        }
    }
    // --db still works without a HOME.
    let mut c = command();
    c.args(["run", "--dir", &dir, "--size", "64KiB", "--bs", "16KiB", "--reps", "1", "-q", "--db", "x.db"])
        .current_dir(s.path())
        .env_remove("IOLAB_DB")
        .env_remove("HOME");
    assert!(c.output().unwrap().status.success());
}

/// A preset that cannot be built with the user's `--set` or `--ram` blames those values,
/// never "not available in this build"; `--ram` and $IOLAB_RAM_BYTES take absolute sizes and
/// say so for `NxRAM`.
#[test]
fn the_users_values_are_blamed_as_such() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    for (args, want) in [
        (
            &["reproduce", "L2", "--scale", "quick", "--dir", dir, "--set", "reps=0"][..],
            "from the values given: --set reps=0",
        ),
        (
            &["reproduce", "R1", "--scale", "paper", "--dir", dir, "--ram", "9223372036854775807"][..],
            "from the values given: --ram 9223372036854775807",
        ),
    ] {
        let o = s.iolab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("not available in this build"), "{args:?}: {}", stderr(&o));
        assert!(!s.db().exists());
    }
    let why =
        "--ram takes an absolute size (it sets the memory that xRAM sizes are relative to), e.g. --ram 24GiB";
    refused(&s, &["run", "--dir", dir, "--ram", "0.5xRAM"], &[], &format!("ram = `0.5xRAM`: {why}"));
    refused(&s, &["reproduce", "L2", "--dir", dir, "--ram", "2xram"], &[], why);
    refused(
        &s,
        &["plan", "--dir", dir],
        &[("IOLAB_RAM_BYTES", "2xRAM")],
        "IOLAB_RAM_BYTES = `2xRAM`: takes an absolute size",
    );
    refused(
        &s,
        &["run", "--dir", dir, "--layout", "striped", "--stripe-unit", "1xRAM"],
        &[],
        "is a multiple of the machine's memory; this takes an absolute size",
    );
    for o in [
        s.iolab(&["run", "--dir", dir, "--ram", "0.5xRAM"]),
        s.iolab_env(&["plan"], &[("IOLAB_RAM_BYTES", "2xRAM")]),
    ] {
        assert!(!stderr(&o).contains("unknown"), "{}", stderr(&o));
    }
}

/// A directory whose work directory and files would pass PATH_MAX is refused up front, naming
/// the figures; nothing is stored and nothing made there.
#[test]
fn a_directory_too_deep_for_its_files_is_refused_up_front() {
    let s = Scratch::new();
    let base = s.path().canonicalize().unwrap();
    // Components of 200 bytes up to about 4000 bytes in all (each mkdir path stays below 4096).
    let mut deep = base.clone();
    while deep.as_os_str().len() < 4000 - 200 {
        deep.push("d".repeat(200));
    }
    deep.push("e".repeat(4000 - deep.as_os_str().len() - 1));
    std::fs::create_dir_all(&deep).unwrap();
    let d = deep.to_str().unwrap();
    refused(&s, &["run", "--dir", d, "--size", "64KiB", "--bs", "16KiB", "--reps", "1"], &[], "(PATH_MAX)");
    assert_eq!(std::fs::read_dir(&deep).unwrap().count(), 0);
    // One level up leaves room.
    let up = deep.parent().unwrap().parent().unwrap();
    let o = s.iolab(&[
        "run",
        "--dir",
        up.to_str().unwrap(),
        "--size",
        "64KiB",
        "--bs",
        "16KiB",
        "--reps",
        "1",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(base.join("d".repeat(200)));
}

/// Traces spool beside the store: a store under /dev makes a spool there, refused like a
/// target under /dev unless `--allow-device` names it.
#[test]
fn the_trace_spool_goes_through_the_device_guard() {
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("skipped: no /dev/shm");
        return;
    }
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let name = format!("/dev/shm/iolab-spool-test-{}", std::process::id());
    let db = format!("{name}/s.db");
    let o = s.iolab_env(
        &["run", "--dir", dir, "--size", "64KiB", "--bs", "16KiB", "--reps", "1", "--trace"],
        &[("IOLAB_DB", &db)],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("trace_spool = `{name}`: {name} is under /dev")), "{}", stderr(&o));
    assert!(!Path::new(&name).exists());
}

/// A traced run of the null engine writes no data but spools 41 B per op beside the store, and
/// then stores every op there: more than the free space there is refused (exit 2) naming the figures, before
/// anything runs. (It grew until the disk or memory ran out.) The size is chosen from the free
/// space, so the spool needs about ten times it.
#[test]
fn a_trace_spool_past_the_free_space_is_refused() {
    let s = Scratch::new();
    let c = std::ffi::CString::new(s.path().to_str().unwrap()).unwrap();
    // SAFETY: statvfs is plain data, filled by the call on a valid path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid path and `st` a writable statvfs.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    let size = format!("{}GiB", (free >> 30) * 64 + 64);
    let db = s.db();
    let o = std::process::Command::new("timeout")
        .arg("60")
        .arg(bin())
        .args(["run", "--engine", "null", "--size", &size, "--bs", "512", "--reps", "1", "--trace"])
        .env("IOLAB_DB", &db)
        .current_dir(s.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("trace = `true`: a repetition's trace of ") && e.contains(" ops spools "), "{e}");
    assert!(e.contains("(41 B per op) to ") && e.contains(" free (a 5% + 64 MiB margin kept)"), "{e}");
    assert!(e.contains(", then stores every repetition's there: "), "{e}");
    assert!(!db.exists());
    // `iolab plan` refuses it the same way, after its plan.
    let o = s.iolab(&["plan", "--engine", "null", "--size", &size, "--bs", "512", "--reps", "1", "--trace"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("trace = `true`: a repetition's trace of "), "{}", stderr(&o));
    // A spool that fits runs.
    let o = s.iolab(&["run", "--engine", "null", "--size", "64KiB", "--bs", "512", "--reps", "1", "--trace"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A build without MPI started by an MPI launcher refuses (exit 2) saying to build with
/// `--features mpi`, once (the first rank), and stores nothing; under a real mpirun too.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_refuses_to_run_under_a_launcher() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let run = ["run", "--dir", dir, "--size", "64KiB", "--bs", "16KiB", "--reps", "1"];
    for (var, value) in [("OMPI_COMM_WORLD_SIZE", "2"), ("PMI_SIZE", "2"), ("PMIX_RANK", "0")] {
        refused(
            &s,
            &run,
            &[(var, value)],
            &format!("mpirun = `{var}={value}`: this iolab was built without MPI"),
        );
    }
    // One of six tasks of a Slurm job step (srun with no MPI plugin), each alone.
    refused(
        &s,
        &run,
        &[("SLURM_STEP_NUM_TASKS", "6"), ("SLURM_PROCID", "0")],
        "srun = `SLURM_STEP_NUM_TASKS=6`: srun started 6 tasks: this iolab was built without MPI",
    );
    let o = s.iolab_env(&run, &[("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "1")]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "", "only the first rank says it");
    if std::process::Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("skipped the real launcher: no mpirun");
        return;
    }
    let o = std::process::Command::new("timeout")
        .args(["120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(bin())
        .args(run)
        .env("IOLAB_DB", s.db())
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .current_dir(s.path())
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("--features mpi").count(), 1, "{}", stderr(&o));
    assert!(!s.db().exists());
}

/// Options that would do nothing are refused, naming the value and what makes it do nothing,
/// before anything is made: a data phase's option on metadata phases alone, a metadata
/// option without them, an `md_shift` that brings every worker back to its own items or moves
/// no phase, a phase modifier given twice (the second once won silently: `read:cold:warm` ran
/// warm), a run-wide time bound that no phase takes (each has its own), a value the sweep
/// overrides at every point (`reproduce IO500 --set md_files=7` ran 500), and through that,
/// a `--set` value refused elsewhere (`md_files=0`).
#[test]
fn options_that_would_do_nothing_are_refused_naming_both_values() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let md = ["run", "--dir", dir, "--op", "create,stat", "--md-files", "10", "--reps", "1"];
    let on_md = "the phases (create,stat) are all metadata phases, which move no data blocks";
    for (extra, value) in [
        (&["--direct"][..], "direct = `true`"),
        (&["--open-sync", "dsync"], "open_sync = `dsync`"),
        (&["--prealloc"], "prealloc = `true`"),
        (&["--engine", "uring", "--iodepth", "8"], "engine = `uring`"),
        (&["--verify"], "verify = `true`"),
        (&["--layout", "shared"], "layout = `shared`"),
        (&["--bs", "4KiB"], "bs = `4KiB`"),
        (&["--cache", "warm"], "cache = `warm`"),
    ] {
        let args: Vec<&str> = md.iter().chain(extra).copied().collect();
        refused(&s, &args, &[], &format!("{value}: {on_md}"));
    }
    // At its default it changes nothing (a printed spec states every value): accepted.
    let args: Vec<&str> = md.iter().chain(&["--layout", "file-per-worker", "--no-store"]).copied().collect();
    let o = s.iolab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let data = ["run", "--dir", dir, "--op", "write", "--size", "64KiB", "--bs", "16KiB", "--reps", "1"];
    let args: Vec<&str> = data.iter().chain(&["--md-files", "10"]).copied().collect();
    refused(&s, &args, &[], "md_files = `10`: the phases (write) are all data phases");
    for (extra, want) in [
        (
            &["--md-shift", "2", "--workers", "2"][..],
            "md_shift = `2`: with 2 workers, worker w + 2 is worker w: each would visit its own items",
        ),
        (
            &["--md-shift", "1", "--workers", "2"],
            "md_shift = `1`: it shifts the items stat, open and read-files visit; the phases (create,unlink) have none",
        ),
    ] {
        let mut args: Vec<&str> = md.iter().chain(extra).copied().collect();
        if want.contains("create,unlink") {
            args[4] = "create,unlink";
        }
        refused(&s, &args, &[], want);
    }
    for (ops, want) in [
        ("write,read:cold:warm", "ops = `read:cold:warm`: a cache state is given twice (cold, then warm)"),
        ("write:seq:random", "ops = `write:seq:random`: an order is given twice (seq, then random)"),
        ("write,read:workers=1:workers=2", "workers is given twice (workers=1, then workers=2)"),
        ("write,read:runtime=1s:runtime=2s", "runtime is given twice (runtime=1s, then runtime=2s)"),
    ] {
        refused(&s, &["run", "--dir", dir, "--size", "64KiB", "--bs", "16KiB", "--op", ops], &[], want);
    }
    // A run-wide time bound that every phase overrides, or that no phase takes.
    for (bound, ops, want) in [
        (
            "--runtime",
            "write:runtime=2s",
            "runtime = `1s`: no phase takes it: each of the phases (write:runtime=2s)",
        ),
        ("--stonewall", "write:runtime=1s,read:runtime=0", "stonewall = `1s`: no phase takes it"),
    ] {
        let args = ["run", "--dir", dir, "--size", "64KiB", "--bs", "16KiB", "--op", ops, bound, "1s"];
        refused(&s, &args, &[], want);
    }
    refused(
        &s,
        &["run", "--dir", dir, "--size", "64KiB", "--bs", "16KiB", "--sweep", "bs=4KiB,8KiB"],
        &[],
        "bs = `16KiB`: the sweep sets bs at every point (bs = 4KiB,8KiB), so this value would never be used",
    );
    for set in ["md_files=7", "md_files=0"] {
        refused(
            &s,
            &["reproduce", "IO500", "--scale", "quick", "--dir", dir, "--set", set],
            &[],
            &format!("md_files = `{}`: the sweep sets md_files at every point", &set[9..]),
        );
    }
    assert_eq!(s.leftovers(), Vec::<String>::new(), "nothing made");
}

/// Messages that say what is wrong: a size relative to memory where none is taken (it said the
/// memory size was unknown), what a cold metadata phase writes to drop_caches (it said 2;
/// iolab writes 3), `--drop-caches` without the right to write it refused up front (it failed
/// at the first cold phase, exit 1, a failed run stored), the temporary directory of a traced
/// run named as TMPDIR, kept metadata items counted in the warning about leftovers (it said
/// `0 B`), and `--reuse` with a metadata phase refused for being one.
#[test]
fn messages_say_what_is_wrong() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let md = ["run", "--dir", dir, "--op", "create,stat", "--md-files", "10", "--reps", "1"];
    let args: Vec<&str> = md.iter().chain(&["--md-size", "1xRAM"]).copied().collect();
    refused(
        &s,
        &args,
        &[],
        "md_size = `1xRAM`: `1xRAM` is a multiple of the machine's memory; this takes an absolute size",
    );
    let traced =
        ["run", "--dir", dir, "--op", "write", "--size", "64KiB", "--bs", "16KiB", "--trace", "--no-store"];
    refused(
        &s,
        &traced,
        &[("TMPDIR", "/nonexistent")],
        "TMPDIR = `/nonexistent`: a traced run without a store spools its traces in the temporary directory",
    );
    let reuse = ["run", "--dir", dir, "--reuse", "0123456789abcdef0123456789abcdef", "--op", "stat"];
    refused(&s, &reuse, &[], "reuse reads the data files of a kept run; metadata phases make their own");
    if crate::rig::is_root() {
        crate::rig::open_to_all(s.path());
        for (args, want) in [
            (
                vec![
                    "run",
                    "--dir",
                    dir,
                    "--op",
                    "write,read:cold",
                    "--size",
                    "64KiB",
                    "--bs",
                    "16KiB",
                    "--drop-caches",
                ],
                "drop_caches = `true`: it writes 3 to /proc/sys/vm/drop_caches, which this process may not write",
            ),
            (
                vec!["run", "--dir", dir, "--op", "create,stat:cold", "--md-files", "10"],
                "writing 3 to /proc/sys/vm/drop_caches), which needs root",
            ),
        ] {
            let mut c = command();
            c.args(&args).env("IOLAB_DB", s.db()).current_dir(s.path());
            let o = crate::rig::as_nobody(&mut c).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
            assert!(!s.db().exists(), "{args:?} made a store");
        }
    }
    // Kept metadata items are counted in the warning about leftovers.
    let keep: Vec<&str> = md.iter().chain(&["--keep", "--no-store"]).copied().collect();
    assert!(s.iolab(&keep).status.success());
    let o = s.iolab(&["run", "--dir", dir, "--size", "64KiB", "--bs", "16KiB", "--reps", "1", "--no-store"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let warning = stderr(&o);
    assert!(warning.contains("(0 B and 10 items of metadata phases, kept by run "), "{warning}");
    assert!(s.iolab(&["clean", dir]).status.success());
}
