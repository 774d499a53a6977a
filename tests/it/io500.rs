//! The IO500 preset at quick scale: every workload's phases complete with the bytes and items
//! asked for, and the IO500 figures and score are IO500's formula over each repetition's
//! phases, worked out again here from the raw figures; the output says it is no submission.

use crate::util::*;

/// Repetition `k`'s figure of phase `name` of the point of `workload`: IOR's aggregate rate
/// (agg) for bytes, as io500 reports its ior phases; min_SAR for items, as mdtest's rate.
fn figure(doc: &Value, workload: &str, name: &str, k: usize, bytes: bool) -> f64 {
    let p = doc["points"].as_array().unwrap().iter().find(|p| p["params"]["workload"] == workload).unwrap();
    let ph = p["phases"].as_array().unwrap().iter().find(|ph| ph["name"] == name).unwrap();
    let r = &ph["repetitions"][k];
    assert_eq!(r["status"], "complete", "{workload} {name}");
    let key = if bytes { "agg_bytes_per_s" } else { "min_sar_ops_per_s" };
    r[key].as_f64().unwrap()
}

fn repetition<'a>(doc: &'a Value, workload: &str, name: &str, k: usize) -> &'a Value {
    let p = doc["points"].as_array().unwrap().iter().find(|p| p["params"]["workload"] == workload).unwrap();
    &p["phases"].as_array().unwrap().iter().find(|ph| ph["name"] == name).unwrap()["repetitions"][k]
}

#[test]
fn the_io500_set_runs_and_its_score_is_io500s_formula() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let args =
        ["reproduce", "IO500", "--scale", "quick", "--dir", dir, "--json", "--quiet", "--set", "workers=2"];
    let out = s.iolab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let io = &doc["io500"];
    assert!(io["note"].as_str().unwrap().contains("not a valid IO500 submission"), "{io}");
    // Its points were checked against IO500's, and matched; the experiment is named for all
    // four workloads, not its first point's.
    assert!(io["note"].as_str().unwrap().contains("its points checked against IO500's"), "{io}");
    assert!(io.get("not_io500").is_none(), "{io}");
    assert_eq!(doc["spec"]["name"], "IO500 ior-easy, ior-hard, mdtest-easy, mdtest-hard");
    assert_eq!(io["missing"].as_array().unwrap().len(), 0, "{io}");
    let names: Vec<&str> =
        io["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "ior-easy-write",
            "ior-easy-read",
            "ior-hard-write",
            "ior-hard-read",
            "mdtest-easy-write",
            "mdtest-easy-stat",
            "mdtest-easy-delete",
            "mdtest-hard-write",
            "find",
            "mdtest-hard-stat",
            "mdtest-hard-read",
            "mdtest-hard-delete"
        ]
    );
    // The workloads did what IO500's do: 2 workers, ior-hard's 47008-byte transfers
    // interleaved in one file, mdtest-hard's 3901-byte files in one directory.
    let r = repetition(&doc, "ior-hard", "write", 0);
    assert_eq!((r["total_bytes"].as_u64(), r["ops"].as_u64()), (Some(2 * 3_008_512), Some(128)));
    let r = repetition(&doc, "mdtest-hard", "create", 0);
    assert_eq!((r["total_bytes"].as_u64(), r["ops"].as_u64()), (Some(600 * 3901), Some(600)));
    let r = repetition(&doc, "mdtest-easy", "unlink", 0);
    assert_eq!(r["ops"], 1000);
    // find walks both trees: 2 x 500 easy files (and the two roots' trees have no
    // subdirectories), 600 hard files.
    let walked = |w: &str| repetition(&doc, w, "find", 0)["ops"].as_u64().unwrap();
    assert_eq!((walked("mdtest-easy"), walked("mdtest-hard")), (1000, 600));
    // Names with 01 in them: f0.1, f0.10 ... : count them as IO500's pattern sees them.
    let matching = |n: u64, w: u32| (0..n).filter(|k| format!("f{w}.{k}").contains("01")).count() as u64;
    let found = |w: &str| repetition(&doc, w, "find", 0)["namespace"]["found"].as_u64().unwrap();
    assert_eq!(found("mdtest-easy"), matching(500, 0) + matching(500, 1));
    assert_eq!(found("mdtest-hard"), matching(300, 0) + matching(300, 1));

    let gib = (1u64 << 30) as f64;
    let geomean = |xs: &[f64]| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp();
    for k in 0..2 {
        let bw = [
            figure(&doc, "ior-easy", "write", k, true) / gib,
            figure(&doc, "ior-easy", "read:cold", k, true) / gib,
            figure(&doc, "ior-hard", "write", k, true) / gib,
            figure(&doc, "ior-hard", "read:cold", k, true) / gib,
        ];
        let find = {
            let (e, h) =
                (repetition(&doc, "mdtest-easy", "find", k), repetition(&doc, "mdtest-hard", "find", k));
            let ops = e["ops"].as_f64().unwrap() + h["ops"].as_f64().unwrap();
            let s = (e["time_ns"].as_f64().unwrap() + h["time_ns"].as_f64().unwrap()) / 1e9;
            ops / s / 1e3
        };
        let md = [
            figure(&doc, "mdtest-easy", "create", k, false) / 1e3,
            figure(&doc, "mdtest-easy", "stat", k, false) / 1e3,
            figure(&doc, "mdtest-easy", "unlink", k, false) / 1e3,
            figure(&doc, "mdtest-hard", "create", k, false) / 1e3,
            find,
            figure(&doc, "mdtest-hard", "stat", k, false) / 1e3,
            figure(&doc, "mdtest-hard", "read-files", k, false) / 1e3,
            figure(&doc, "mdtest-hard", "unlink", k, false) / 1e3,
        ];
        let (b, m) = (geomean(&bw), geomean(&md));
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(close(io["bw"][k].as_f64().unwrap(), b), "{} vs {b}", io["bw"][k]);
        assert!(close(io["md"][k].as_f64().unwrap(), m), "{} vs {m}", io["md"][k]);
        assert!(close(io["score"][k].as_f64().unwrap(), (b * m).sqrt()));
        let find_k = io["phases"][8]["values"][k].as_f64().unwrap();
        assert!(close(find_k, find), "{find_k} vs {find}");
    }
    assert_eq!(io["score_summary"]["n"], 2);
    // The terminal table says the same, with the note first.
    let id = doc["experiment_id"].as_str().unwrap();
    let shown = s.iolab(&["results", "show", id]);
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(
        text.contains("IO500: the IO500 workload set run by iolab: not a valid IO500 submission"),
        "{text}"
    );
    assert!(text.contains("score: sqrt(BW x MD)"), "{text}");
    assert!(s.leftovers().iter().all(|f| !f.starts_with(".iolab-")), "{:?}", s.leftovers());
}

/// An experiment whose `workload` axis names IO500's workloads but whose points are not IO500's
/// (here ior-hard in a segmented shared file, mdtest-hard in a tree per worker) gets no IO500
/// score, and says which points differ, and how.
#[test]
fn a_workload_axis_named_like_io500s_is_not_scored_unless_its_points_are_io500s() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let o = s.iolab(&["reproduce", "IO500", "--scale", "quick", "--print", "--dir", dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout)
        .replace("\"shared-strided\"", "\"shared\"")
        .replace(
            "md_dirs = [\"unique\", \"unique\", \"unique\", \"shared\"]",
            "md_dirs = [\"unique\", \"unique\", \"unique\", \"unique\"]",
        )
        .replace("reps = 2", "reps = 1");
    let file = s.path().join("not-io500.toml");
    std::fs::write(&file, text).unwrap();
    let out = s.iolab(&["run", file.to_str().unwrap(), "--json", "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let io = &doc["io500"];
    let not: Vec<&str> = io["not_io500"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        not,
        [
            "ior-hard's layout is shared, IO500's shared-strided",
            "mdtest-hard's directories are unique, IO500's shared"
        ]
    );
    assert!(io["note"].as_str().unwrap().starts_with("no IO500 score:"), "{io}");
    assert!(
        io["score"].as_array().unwrap().is_empty() && io["phases"].as_array().unwrap().is_empty(),
        "{io}"
    );
    let shown = s.iolab(&["results", "show", "last"]);
    let table = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(
        table.contains("IO500: no IO500 score: the experiment's workload axis names IO500's workloads"),
        "{table}"
    );
    assert!(!table.contains("score: sqrt(BW x MD)"), "{table}");
}
