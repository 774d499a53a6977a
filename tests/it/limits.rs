//! Limits: sizes near 2^64. Every refusal is exit 2 naming the field and the figure, with
//! nothing created: no work directory, no store.

use crate::rig::*;
use crate::util::*;

/// Runs `iolab run --dir SCRATCH ARGS`; asserts the refusal (exit 2, nothing created) and
/// returns its message.
fn refused(s: &Scratch, args: &[&str]) -> String {
    let dir = s.path().to_str().unwrap().to_string();
    let mut all = vec!["run", "-q", "--dir", &dir];
    all.extend_from_slice(args);
    let out = s.iolab(&all);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
    assert!(err.starts_with("error: "), "{all:?}: {err}");
    assert!(work_dirs(s.path()).is_empty(), "{all:?} made a work directory");
    assert!(!s.db().exists(), "{all:?} made a store");
    err
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
