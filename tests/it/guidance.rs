//! What guides a user from the terminal: `run --help` grouped under headings with defaults
//! and examples in 100 columns, size refusals that name the sizes that would do.

use crate::util::*;

/// `iolab run --help` (not on a terminal: 100 columns): every line fits, the flags sit under
/// their headings in order, options show their defaults, no help says "(repeatable)" twice,
/// MPI flags are shown only in a build with MPI, and every example it ends with plans fine.
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
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
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
            &["--size", "64KiB"][..],
            "bs = `1MiB`: larger than size (64 KiB): give a bs of at most 64KiB or a size of at least 1MiB",
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
