//! `iolab tune` on real files: a candidate made slower on purpose (a commit after every 4 KiB
//! instead of one at the end) is dropped and never picked; two candidates doing the same work
//! leave no clear winner; the budget holds; the recommended spec, run with `iolab run`, lands
//! within the winner's interval; Ctrl-C ends with the best answer so far, stored; the store,
//! the report and the per-host comparison show the tuning.

use std::time::Instant;

use crate::rig::*;
use crate::util::*;

/// `iolab tune ARGS --dir SCRATCH --json`, its document and how long it took; panics on failure.
fn tune(s: &Scratch, args: &[&str]) -> (Value, f64) {
    let dir = s.path().to_str().unwrap().to_string();
    let mut all = vec!["tune"];
    all.extend_from_slice(args);
    all.extend(["--dir", &dir, "--json", "--quiet"]);
    let t = Instant::now();
    let out = s.iolab(&all);
    let secs = t.elapsed().as_secs_f64();
    assert!(out.status.success(), "iolab {all:?}: {}", stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), secs)
}

fn candidates(t: &Value) -> &Vec<Value> {
    t["candidates"].as_array().unwrap()
}

/// The candidate whose searched `key` has `value`.
fn find<'a>(t: &'a Value, key: &str, value: &str) -> (usize, &'a Value) {
    candidates(t).iter().enumerate().find(|(_, c)| c["values"][key] == value).unwrap()
}

/// The mean and 95% interval of a candidate's times.
fn interval(c: &Value) -> (f64, f64, f64) {
    let xs: Vec<f64> = c["times_s"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let iv = iolab::results::tune::Interval::of(&xs);
    let [lo, hi] = iv.ci95_s.unwrap();
    (iv.mean_s, lo, hi)
}

/// Syncing after every 4 KiB against once at the end: the first is dropped (after the rule's
/// minimum of runs) and the second wins with 95% confidence; the race stops as soon as one is
/// left, long before its budget. The store has it: `results show`, the report's Tuning section
/// and race plot, and the per-host table.
#[test]
fn a_candidate_made_slower_is_dropped_and_never_picked() {
    let s = Scratch::new();
    let (t, secs) = tune(
        &s,
        &[
            "checkpoint",
            "--bytes",
            "2MiB",
            "--op-size",
            "4KiB",
            "--search",
            "engine=psync",
            "--search",
            "direct=false",
            "--search",
            "sync=end,each",
            "--budget",
            "120s",
        ],
    );
    assert_eq!(candidates(&t).len(), 2, "{t}");
    let (slow, each) = find(&t, "sync", "each");
    let (fast, _) = find(&t, "sync", "end");
    assert_eq!(each["out"]["why"], "dropped", "{t}");
    assert_eq!(each["out"]["by"], fast);
    assert!(each["times_s"].as_array().unwrap().len() >= 3, "dropped only after 3 runs");
    assert_eq!(t["verdict"], serde_json::json!({"kind": "winner", "best": fast}));
    assert_eq!(t["ended"], "one-left");
    assert!(secs < 120.0, "{secs} s");
    assert_ne!(slow, fast);
    assert!(t["recommended"]["toml"].as_str().unwrap().contains("sync = \"end\""));

    let id = t["experiment_id"].as_str().unwrap();
    let show = s.iolab(&["results", "show", id]);
    assert!(show.status.success());
    let text = String::from_utf8(show.stdout).unwrap();
    assert!(text.contains("\ntuning\n") && text.contains("winner"), "{text}");
    assert!(text.contains("dropped after round"), "{text}");
    let page = s.path().join("r.html");
    assert!(s.iolab(&["report", id, "-o", page.to_str().unwrap()]).status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<section id=\"tuning\">")
            && html.contains("iolab plot ")
            && html.contains("--kind race")
    );
    let cmp = s.iolab(&["results", "compare", "--by", "host"]);
    assert!(cmp.status.success(), "{}", stderr(&cmp));
    let text = String::from_utf8(cmp.stdout).unwrap();
    assert!(text.contains("tuned job checkpoint: write 2 MiB") && text.contains(id), "{text}");
    let csv = s.iolab(&["results", "compare", "--tuned", "--format", "csv"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().count(), 2, "a header and one host: {csv}");
}

/// Two candidates that do the same work (with nothing to commit, fsync and fdatasync are never
/// called): no clear winner. The verdict's 95% intervals are apart by chance in a few races in
/// a thousand, so a race that claims a winner is raced again: two such claims in a row would
/// be the rule failing, not chance.
#[test]
fn equal_candidates_give_no_clear_winner() {
    let s = Scratch::new();
    let args = [
        "checkpoint",
        "--bytes",
        "4MiB",
        "--durable",
        "none",
        "--search",
        "engine=psync",
        "--search",
        "direct=false",
        "--search",
        "sync_call=fdatasync,fsync",
        "--max-runs",
        "4",
        "--budget",
        "60s",
    ];
    let mut verdicts = vec![];
    for _ in 0..2 {
        let (t, _) = tune(&s, &args);
        assert_eq!(candidates(&t).len(), 2, "{t}");
        let kind = t["verdict"]["kind"].as_str().unwrap().to_string();
        verdicts.push(kind.clone());
        if kind == "no-clear-winner" {
            assert!(candidates(&t).iter().all(|c| c.get("out").is_none()), "none is dropped: {t}");
            return;
        }
    }
    panic!("two races between equal candidates claimed a winner: {verdicts:?}");
}

/// The budget holds: the race ends within the budget x 1.25 + 3 s (process start, building
/// the space, the report), whatever the disk. The candidates run in a fixed order, the quick
/// one first: the slow one's first run is expected to cost what the quick one's did, so it
/// starts, and on a disk where 2048 commits of 4 KiB take longer than the budget left, the
/// deadline stops it there (kept as an interrupted run). The 3 s tuning plans from the rates
/// the first one stored: where those say one baseline run takes longer than 3 s, it is refused
/// before anything runs, naming that.
#[test]
fn the_budget_holds() {
    let s = Scratch::new();
    for budget in [8.0, 3.0] {
        let b = format!("{budget}s");
        let dir = s.path().to_str().unwrap().to_string();
        let args = [
            "tune",
            "checkpoint",
            "--bytes",
            "8MiB",
            "--op-size",
            "4KiB",
            "--search",
            "engine=psync",
            "--search",
            "direct=false",
            "--search",
            "sync=end,each",
            "--set",
            "interleave=round-robin",
            "--budget",
            &b,
            "--dir",
            &dir,
            "--json",
            "--quiet",
        ];
        let start = Instant::now();
        let out = s.iolab(&args);
        let secs = start.elapsed().as_secs_f64();
        if budget < 5.0 && out.status.code() == Some(2) {
            let e = stderr(&out);
            assert!(e.contains("budget = `3s`: too small for one run of the baseline"), "{e}");
            continue;
        }
        assert!(out.status.success(), "{}", stderr(&out));
        let t: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(secs <= budget * 1.25 + 3.0, "budget {budget} s took {secs} s");
        let elapsed = t["elapsed_ns"].as_f64().unwrap() / 1e9;
        assert!(elapsed <= budget * 1.05 + 1.0, "budget {budget} s: the tuning says {elapsed} s");
        assert!(["budget", "one-left", "max-runs"].contains(&t["ended"].as_str().unwrap()), "{}", t["ended"]);
        if budget > 5.0 {
            // Estimated from the assumed rate (an empty store), the first round fits in 8 s; the
            // 3 s tuning's estimate comes from the store's rates, which its slow runs weigh.
            assert!(!t["rounds"].as_array().unwrap().is_empty(), "a round ran");
        }
    }
    let all = runs(&s.db());
    assert!(count(&all, "complete") > 0, "some runs complete");
    assert!(count(&all, "interrupted") <= 2, "at most one run per tuning stopped at its deadline: {all:?}");
}

/// The recommended spec, run with `iolab run`, is the winner: it runs with the winner's
/// searched values (engine, O_DIRECT), exactly; and its mean time over 5 runs lands within the
/// winner's 95% interval. Times taken apart drift with the machine's state (seen here: a
/// winner at 48.4 ms [45.5, 51.3], reruns at 55.7, 51.8 and 54.9 ms; on other races reruns
/// landed inside), so each race gets up to five reruns and up to three races are made; one
/// rerun must land inside. It runs alone, after the suite, so that other tests' load does not
/// add to the drift.
#[test]
#[ignore = "compares times taken apart: scripts/test.sh runs it alone, after the suite"]
fn the_recommended_spec_reproduces_the_winner() {
    let s = Scratch::new();
    let spec = s.path().join("tuned.toml");
    let mut seen = vec![];
    for _race in 0..3 {
        let (t, _) = tune(
            &s,
            &[
                "checkpoint",
                "--bytes",
                "64MiB",
                "--op-size",
                "64KiB",
                "--search",
                "engine=psync,vsync",
                "--search",
                "direct=false,true",
                "--budget",
                "40s",
                "--max-runs",
                "8",
                "--save-spec",
                spec.to_str().unwrap(),
            ],
        );
        let best = &candidates(&t)[t["verdict"]["best"].as_u64().unwrap() as usize];
        let (mean, lo, hi) = interval(best);
        let toml = std::fs::read_to_string(&spec).unwrap();
        assert_eq!(toml, t["recommended"]["toml"].as_str().unwrap());
        let mut means = vec![];
        for _ in 0..5 {
            let out = s.iolab(&["run", spec.to_str().unwrap(), "--json", "--quiet", "--no-store"]);
            assert!(out.status.success(), "{}", stderr(&out));
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(doc["spec"]["engine"], best["values"]["engine"], "{toml}");
            assert_eq!(doc["spec"]["direct"].to_string(), best["values"]["direct"], "{toml}");
            let reps = phases(&doc)[0]["repetitions"].as_array().unwrap();
            assert_eq!(reps.len(), 5);
            let m =
                reps.iter().map(|r| r["time_ns"].as_f64().unwrap() / 1e9).sum::<f64>() / reps.len() as f64;
            means.push(m);
            if (lo..=hi).contains(&m) {
                println!(
                    "winner {mean:.4} s [{lo:.4}, {hi:.4}]; the recommended spec's runs took {means:.4?}"
                );
                return;
            }
        }
        seen.push(format!("winner {mean} s [{lo}, {hi}]; the recommended spec's runs took {means:?}"));
    }
    panic!("{seen:#?}");
}

/// SIGINT during the race: the best answer so far is printed, the exit is 130, the record is
/// stored as interrupted with the runs measured, and no work directory is left.
#[test]
fn ctrl_c_ends_with_the_best_answer_so_far() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let child = spawn(
        &s,
        &["tune", "checkpoint", "--bytes", "8MiB", "--budget", "300s", "--dir", &dir, "--json", "-q"],
    );
    wait_until(120, "a few complete runs", || count(&runs(&s.db()), "complete") >= 15);
    signal(&child, libc::SIGINT);
    let out = finish(child, 60);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["ended"], "interrupted");
    let measured: usize = candidates(&t).iter().map(|c| c["times_s"].as_array().unwrap().len()).sum();
    assert!(measured >= 15, "{measured}");
    assert!(t["verdict"]["best"].is_u64(), "a best answer: {}", t["verdict"]);
    let stored = s.iolab(&["results", "show", t["experiment_id"].as_str().unwrap()]);
    let text = String::from_utf8(stored.stdout).unwrap();
    assert!(text.contains("interrupted: the best answer so far"), "{text}");
    assert!(work_dirs(s.path()).is_empty(), "{:?}", work_dirs(s.path()));
}

/// Bad input is named, exits 2 and runs nothing.
#[test]
fn bad_input_is_refused_by_name() {
    let s = Scratch::new();
    for (args, field) in [
        (&["tune", "nightly"][..], "job"),
        (&["tune", "checkpoint", "--budget", "0s"], "budget"),
        (&["tune", "checkpoint", "--search", "size"], "search"),
        (&["tune", "checkpoint", "--min-runs", "1"], "min_runs"),
        (&["tune", "checkpoint", "--set", "engine=mmap"], "set"),
        (&["tune", "custom"], "bytes"),
        (&["tune", "checkpoint", "--explain"], "explain"),
    ] {
        let out = s.iolab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("{field} = ")), "{args:?}: {}", stderr(&out));
    }
    assert!(!s.db().exists(), "nothing stored");
    let list = s.iolab(&["tune", "list"]);
    assert!(String::from_utf8(list.stdout).unwrap().contains("benson"));
}

/// A budget too small for every candidate races the baseline and those expected to gain most
/// (planned from the assumed rate in an empty store: 8 MiB at 200 MB/s and half a second, about
/// 0.54 s a run, so 2 s hold one round of three); the rest are marked not raced and the text
/// says what a larger budget would buy. A budget below one baseline run is refused before
/// anything is made.
#[test]
fn a_small_budget_races_what_fits_and_a_tiny_one_is_refused() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["tune", "checkpoint", "--bytes", "8MiB", "--budget", "100ms", "--dir", dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("budget = `100ms`: too small for one run of the baseline"), "{e}");
    assert!(e.contains("one round of all") && e.contains("a race that likely decides (3 runs each)"), "{e}");
    assert!(!s.db().exists() && work_dirs(s.path()).is_empty(), "nothing made");
    // The text as printed (not read back from the store).
    let list: Value = serde_json::from_slice(
        &s.iolab(&["tune", "checkpoint", "--bytes", "8MiB", "--dir", dir, "--list", "--json"]).stdout,
    )
    .unwrap();
    let n = candidates(&list).len();
    assert!(n > 3, "{n} candidates");
    let out = s.iolab(&["tune", "checkpoint", "--bytes", "8MiB", "--budget", "2s", "--dir", dir, "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("not raced: the budget held 3 candidates").count(), n - 3, "{text}");
    assert!(
        !text.lines().any(|l| l.contains("(baseline)") && l.contains("not raced")),
        "the baseline races: {text}"
    );
    let budget =
        text.lines().find(|l| l.starts_with("budget:  a budget of ")).unwrap_or_else(|| panic!("{text}"));
    assert!(budget.contains(&format!("would race all {n} candidates 3 runs")), "{budget}");
    let verdict = text.lines().skip_while(|l| !l.starts_with("verdict: "));
    let wrapped: Vec<&str> = verdict.take_while(|l| !l.is_empty()).collect();
    assert!(wrapped.len() >= 2 && wrapped.iter().all(|l| l.chars().count() <= 100), "{text}");
}
