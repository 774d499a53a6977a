//! What guides a user from the terminal: `run --help` grouped under headings with defaults
//! and examples in 100 columns, size refusals that name the sizes that would do, one line of
//! what to do under each flag, and a last line after a run saying what to look at next.

use crate::util::*;

/// `iolab run --help` (not on a terminal: 100 columns): every line fits, the flags sit under
/// their headings in order, options show their defaults, no help says "(repeatable)" twice,
/// MPI flags are shown only in a build with MPI, and every example it ends with resolves.
#[test]
fn run_help_is_grouped_with_defaults_and_examples_in_100_columns() {
    let s = Scratch::new();
    let o = s.iolab(&["run", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = String::from_utf8(o.stdout).unwrap();
    let long: Vec<&str> = help.lines().filter(|l| l.chars().count() > 100).collect();
    assert!(long.is_empty(), "lines over 100 columns: {long:#?}");
    let mut headings =
        vec!["Workload:", "Phases and cache:", "Engine:", "Layout:", "Repetitions and sweeps:"];
    if iolab::launch::HAS_MPI {
        headings.push("MPI and servers:");
    }
    headings.extend(["Safety:", "Output:", "Examples:"]);
    let at: Vec<usize> = headings
        .iter()
        .map(|h| help.lines().position(|l| l == *h).unwrap_or_else(|| panic!("no {h} in\n{help}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "headings out of order: {at:?}\n{help}");
    // A flag's line and the lines its help wraps onto, up to the next flag.
    let flag = |name: &str| -> String {
        let mut lines = help.lines().skip_while(|l| !l.trim_start().starts_with(&format!("--{name} ")));
        let first = lines.next().unwrap_or_else(|| panic!("no --{name}"));
        let rest = lines.take_while(|l| !l.trim_start().starts_with('-') && !l.trim().is_empty());
        std::iter::once(first).chain(rest).map(str::trim).collect::<Vec<_>>().join(" ")
    };
    assert!(flag("size").contains("[default: 512MiB]"), "{}", flag("size"));
    assert!(flag("bs").contains("[default: 1MiB]"), "{}", flag("bs"));
    assert!(flag("reps").contains("[default: 5]"), "{}", flag("reps"));
    assert!(flag("runtime").contains("time_based"), "{}", flag("runtime"));
    assert!(!help.contains("(repeatable) (repeatable)"), "{help}");
    assert_eq!(help.contains("--servers <S>"), iolab::launch::HAS_MPI, "{help}");
    assert_eq!(help.contains("built without the mpi feature"), !iolab::launch::HAS_MPI, "{help}");
    // Each example resolves (as `iolab plan`, in the repository for its example file).
    let dir = s.path().to_str().unwrap();
    for (cmd, what) in iolab::cli::RUN_EXAMPLES {
        let one_line = help.lines().any(|l| l.trim_start().starts_with(cmd) && l.ends_with(what));
        assert!(one_line, "{cmd} and {what} on one line:\n{help}");
        let mut args: Vec<&str> = cmd.split_whitespace().skip(2).collect();
        args.splice(0..0, ["plan", "--dir", dir]);
        let o = command()
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("IOLAB_DB", s.db())
            .output()
            .unwrap();
        // Resolved; only this disk's free space may refuse it (exit 2, naming the space).
        let space = o.status.code() == Some(2) && stderr(&o).contains("not enough free space");
        assert!(o.status.success() || space, "{cmd}: {}", stderr(&o));
    }
}

/// A size that is no whole number of blocks, or smaller than a block, is refused (exit 2,
/// nothing made) with the nearest sizes that would be accepted.
#[test]
fn size_refusals_name_the_sizes_that_would_do() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    for (args, want) in [
        (
            &["--size", "1GB"][..],
            "size = `1GB`: 1000000000 bytes is not a whole number of blocks (bs = 1 MiB): the nearest sizes that are: 953MiB or 954MiB; or a bs that divides it, such as 1MB",
        ),
        (
            &["--size", "10KiB", "--bs", "3KiB"][..],
            "the nearest sizes that are: 9KiB or 12KiB; or a bs that divides it, such as 2KiB",
        ),
        (
            &["--layout", "striped", "--stripe-unit", "1000", "--bs", "4KiB", "--size", "64KiB"][..],
            "stripe_unit = `1000`: must be a positive multiple of 512 bytes: 512 or 1KiB would do",
        ),
        (
            &["--size", "64KiB"][..],
            "bs = `1MiB`: larger than size (64 KiB): give a bs of at most 64KiB or a size of at least 1MiB",
        ),
        (
            &["--bs", "1MiB", "--mem-len", "100000", "--mem-stride", "200000", "--size", "4MiB"][..],
            "mem_len = `100000`: must divide bs (1048576 bytes): 64KiB or 128KiB would do",
        ),
        (
            &["--engine", "mmap", "--window", "10000", "--size", "4MiB"][..],
            "window = `10000`: must be a multiple of the page size (4096 bytes): 8KiB or 12KiB would do",
        ),
    ] {
        let mut all = vec!["run", "--dir", dir];
        all.extend_from_slice(args);
        let o = s.iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(s.leftovers().is_empty() && !s.db().exists(), "{args:?}");
    }
}

/// Under a flagged row's legend, one line of what to do; after a run, on stderr, a last line
/// saying what to look at next, but not with --quiet, --json or --csv.
#[test]
fn flags_say_what_to_do_and_a_run_ends_with_what_next() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let base = ["run", "--dir", dir, "--size", "1MiB", "--reps", "1", "--op", "write,read:asis"];
    let o = s.iolab(&[&base[..], &["--explain"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("  cache not controlled: an asis phase"), "{out}");
    assert!(out.contains("    what to do: give the phase a cache state (read:cold, read:warm)"), "{out}");
    let last = stderr(&o).lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("next: iolab report last -o report.html"), "{}", stderr(&o));
    assert!(last.contains("iolab plot last --kind timeline"), "{last}");
    for extra in ["--quiet", "--json", "--csv"] {
        let mut args = base.to_vec();
        args.push(extra);
        let o = s.iolab(&args);
        assert!(o.status.success() && !stderr(&o).contains("next:"), "{extra}: {}", stderr(&o));
    }
    let mut args = base.to_vec();
    args.push("--no-store");
    let o = s.iolab(&args);
    assert!(
        stderr(&o).trim_end().ends_with(
            "next: run without --no-store to keep the results for `iolab report` and `iolab plot`"
        ),
        "{}",
        stderr(&o)
    );
}
