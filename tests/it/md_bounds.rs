//! Stonewalled metadata phases on one host: a create stopped at its stonewall makes fewer
//! items than planned, `--wear-out` takes every worker to the most any made, and every later
//! phase (stat, read-files, rename, unlink) visits exactly the items their owner made, also
//! with the look-ups shifted to the next worker's items; `iolab clean` removes what a kept
//! stonewalled create made; a bound where metadata phases take none is refused by name.

use crate::metadata::refused_by_name;
use crate::util::*;

/// Items per worker: more than any machine creates in the short stonewalls below.
const ITEMS: u64 = 300_000;

/// Each worker's (ops, stonewall_ops, calls) in each complete repetition of phase `name`.
fn per_worker(doc: &Value, name: &str) -> Vec<Vec<(u64, Option<u64>, Value)>> {
    let ph = phases(doc).iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no phase {name}"));
    ph["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "complete", "{name}: {r}");
            let ws = r["workers"].as_array().unwrap();
            ws.iter()
                .map(|w| (w["ops"].as_u64().unwrap(), w["stonewall_ops"].as_u64(), w["calls"].clone()))
                .collect()
        })
        .collect()
}

/// The items each worker made, as the repetitions of phase `name` record them.
fn items_made(doc: &Value, name: &str) -> Vec<Vec<u64>> {
    let ph = phases(doc).iter().find(|p| p["name"] == name).unwrap();
    let reps = ph["repetitions"].as_array().unwrap();
    reps.iter()
        .map(|r| serde_json::from_value(r["namespace"]["items_made"].clone()).expect("items_made"))
        .collect()
}

/// Two workers, a create stonewalled at 200 ms with wear-out: each made the same count, more
/// than none and fewer than planned, the most any had made at the stonewall; stat (of the
/// next worker's items), rename and unlink each did exactly that many ops and calls; nothing
/// is left.
#[test]
fn a_worn_out_create_makes_equal_counts_that_the_later_phases_visit() {
    let s = Scratch::new();
    let items = ITEMS.to_string();
    let doc = s.run_json(&[
        "--op",
        "create:stonewall=200ms,stat,rename,unlink",
        "--workers",
        "2",
        "--md-files",
        &items,
        "--md-shift",
        "1",
        "--wear-out",
        "--reps",
        "2",
    ]);
    let created = per_worker(&doc, "create:stonewall=200ms");
    let made = items_made(&doc, "create:stonewall=200ms");
    assert_eq!(created.len(), 2);
    for (rep, ws) in created.iter().enumerate() {
        let n = ws[0].0;
        assert!(n > 0 && n < ITEMS, "rep {rep}: {ws:?}");
        assert!(ws.iter().all(|w| w.0 == n), "rep {rep}: wear-out left unequal counts {ws:?}");
        let walls: Vec<u64> = ws.iter().map(|w| w.1.expect("every worker met the stonewall")).collect();
        assert_eq!(walls.iter().max(), Some(&n), "rep {rep}: {walls:?}");
        assert!(ws.iter().all(|w| w.2["openat"] == n && w.2["close"] == n), "rep {rep}: {ws:?}");
        assert_eq!(made[rep], [n, n]);
        for (name, call) in [("stat", "fstatat"), ("rename", "renameat2"), ("unlink", "unlinkat")] {
            let later = &per_worker(&doc, name)[rep];
            assert!(later.iter().all(|w| w.0 == n && w.2[call] == n), "rep {rep} {name}: {later:?}");
            assert_eq!(items_made(&doc, name)[rep], [n, n], "{name}");
        }
    }
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// Without wear-out each worker keeps what it made by the stonewall: stat and read-files of
/// the next worker's items visit that worker's count, unlink the worker's own; a kept
/// stonewalled create is removed by `iolab clean`, item for item.
#[test]
fn without_wear_out_each_phase_visits_the_count_its_owner_made() {
    let s = Scratch::new();
    let items = ITEMS.to_string();
    let base =
        ["--workers", "2", "--md-files", &items, "--md-size", "64", "--md-depth", "1", "--md-fanout", "3"];
    let mut args = base.to_vec();
    args.extend(["--op", "create:stonewall=150ms,stat,read-files,unlink", "--md-shift", "1", "--reps", "1"]);
    let doc = s.run_json(&args);
    let made: Vec<u64> = per_worker(&doc, "create:stonewall=150ms")[0].iter().map(|w| w.0).collect();
    assert!(made.iter().all(|&n| n > 0 && n < ITEMS), "{made:?}");
    assert_eq!(items_made(&doc, "create:stonewall=150ms")[0], made);
    for (name, shift) in [("stat", 1), ("read-files", 1), ("unlink", 0)] {
        let ops: Vec<u64> = per_worker(&doc, name)[0].iter().map(|w| w.0).collect();
        assert_eq!(ops, [made[shift], made[(1 + shift) % 2]], "{name}");
    }
    let rf = &per_worker(&doc, "read-files")[0];
    assert!(rf.iter().all(|w| w.2["read"] == w.0), "{rf:?}");
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());

    let mut kept = base.to_vec();
    kept.extend(["--op", "create:stonewall=100ms", "--reps", "1", "--keep"]);
    let doc = s.run_json(&kept);
    let made: u64 = per_worker(&doc, "create:stonewall=100ms")[0].iter().map(|w| w.0).sum();
    assert!(made > 0 && made < 2 * ITEMS, "{made}");
    let out = s.iolab(&["clean", s.path().to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{report}{}", stderr(&out));
    let want = format!("0 files and {made} namespace items, ");
    assert!(report.contains(&want), "{want}: {report}");
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// A runtime on a metadata phase, or a stonewall on one that makes no items, or a run of such
/// phases alone under a run-wide bound: exit 2, the field and value named, nothing made.
#[test]
fn bounds_metadata_phases_do_not_take_are_refused_by_name() {
    refused_by_name(&[
        (&["--op", "create:runtime=1s,unlink"][..], "create:runtime=1s", "not run for a time"),
        (&["--op", "create,find:stonewall=1s,unlink"][..], "find:stonewall=1s", "only create and mkdir"),
        (&["--op", "create,unlink", "--runtime", "1s"][..], "runtime", "not run for a time"),
        (&["--op", "stat,unlink", "--stonewall", "1s"][..], "stonewall", "none makes items"),
    ]);
}
