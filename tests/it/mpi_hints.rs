//! MPI-IO hints under Open MPI's `mpirun` (build with `--features mpi`): a hint MPI would abort
//! on or a rank would crash on is refused before any rank opens a file; the hints the MPI-IO
//! layer applied are reported per worker and stored; a hint that did not take effect as given
//! is said once, on rank 0.

use crate::mpi::{mpirun, ok_json, refused_under_mpirun};
use crate::util::*;

/// `--mpiio-hint` is checked as the spec resolves, on every rank: a negative `cb_nodes` (a rank
/// crashed with it, exit 139, and left its work directory), a key or value longer than MPI
/// takes (MPI aborted), a key with a newline, a zero stripe unit, a switch that is not one:
/// exit 2 naming the hint, no work directory, no store.
#[test]
fn bad_mpiio_hints_are_refused_before_any_rank_opens_a_file() {
    let s = Scratch::new();
    let long_value = format!("cb_config_list={}", "x".repeat(300));
    let long_key = format!("{}=1", "k".repeat(40));
    let base = ["--engine", "mpiio", "--mpiio", "collective", "--layout", "shared", "--mpiio-hint"];
    let with = |h: &'static str| -> Vec<&'static str> { base.iter().copied().chain([h]).collect() };
    let leak = |h: String| -> &'static str { Box::leak(h.into_boxed_str()) };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            with("cb_nodes=-5"),
            "mpiio_hint = `cb_nodes=-5`: cb_nodes is a count or a size: a whole number from 1",
        ),
        (with(leak(long_value)), "the value is 300 bytes; MPI takes at most 255 (MPI_MAX_INFO_VAL)"),
        (with(leak(long_key)), "the key is 40 bytes; MPI takes at most 35 (MPI_MAX_INFO_KEY)"),
        (with("cb\nnodes=2"), "mpiio_hint = `cb\\nnodes=2`: holds the control character '\\n'"),
        (with("striping_unit=0"), "striping_unit is a count or a size"),
        (with("romio_cb_write=on"), "romio_cb_write is enable, disable or automatic"),
    ];
    let cases: Vec<(&[&str], &str)> = cases.iter().map(|(a, w)| (a.as_slice(), *w)).collect();
    refused_under_mpirun(&s, 2, &cases);
}

/// Two ranks write and read one shared file collectively with a known hint and one no MPI-IO
/// layer reads: every worker reports the hints in effect after its open (MPI_File_get_info), the
/// store keeps them, and stderr says once (not per phase or rank) that the unknown one is
/// ignored; the known one, applied as given, draws no word.
#[test]
fn applied_mpiio_hints_are_reported_and_an_unknown_one_is_said_once() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let args = [
        "run",
        "--engine",
        "mpiio",
        "--mpiio",
        "collective",
        "--layout",
        "shared",
        "--mpiio-hint",
        "cb_nodes=1",
        "--mpiio-hint",
        "iolab_no_such_hint=7",
        "--op",
        "write,read:cold",
        "--size",
        "1MiB",
        "--bs",
        "64KiB",
        "--reps",
        "1",
        "--json",
        "--quiet",
        "--dir",
        &dir,
    ];
    let o = mpirun(&s, 2, &args);
    let doc = ok_json(&o);
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: MPI-IO hint")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].starts_with("warning: MPI-IO hint iolab_no_such_hint=7: "), "{err}");
    let mut applied = None;
    for ph in phases(&doc) {
        for w in ph["repetitions"][0]["workers"].as_array().unwrap() {
            let hints = w["mpiio_hints"].as_object().unwrap_or_else(|| panic!("no hints: {w}"));
            assert!(!hints.is_empty(), "{w}");
            if let Some(v) = hints.get("cb_nodes") {
                assert_eq!(v, "1", "cb_nodes reported applied with another value, and no warning said so");
            }
            applied.get_or_insert_with(|| w["mpiio_hints"].clone());
        }
    }
    let o = s.iolab(&["results", "show", "last", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(phases(&stored)[0]["repetitions"][0]["workers"][0]["mpiio_hints"], applied.unwrap());
}
