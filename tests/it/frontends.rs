//! The front ends on the real binary: `iolab ior` and `iolab mdtest` run their command lines
//! (tasks as threads without mpirun), write the bytes IOR's pattern puts at each offset (each
//! worker's transfers where IOR's rule puts its task's, in its order, from the per-op trace),
//! print IOR's and mdtest's summaries with iolab's figures, print their translation, refuse
//! what they cannot do by name with nothing made; `reproduce IO500 --ini` runs io500's file.

use crate::util::*;

/// The trace of phase `phase`: (worker, file, offset) in each worker's order.
fn trace(s: &Scratch, phase: &str) -> Vec<(u64, u64, u64)> {
    let o = s.iolab(&["results", "trace", "last", "--phase", phase]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut rows: Vec<(u64, u64, u64, u64)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[4].parse().unwrap(), f[5].parse().unwrap(), f[6].parse().unwrap(), f[7].parse().unwrap())
        })
        .collect();
    rows.sort();
    rows.into_iter().map(|(w, _, f, off)| (w, f, off)).collect()
}

#[test]
fn an_ior_command_line_writes_iors_pattern_and_prints_iors_summary() {
    let s = Scratch::new();
    let file = s.path().join("testFile");
    let f = file.to_str().unwrap();
    // Three tasks (threads here), 3 segments of 64 KiB blocks in 16 KiB transfers, kept.
    let args =
        ["ior", "-w", "-r", "-b", "64k", "-t", "16k", "-s", "3", "-N", "3", "-e", "-k", "-i", "2", "-o", f];
    let mut run = args.to_vec();
    run.extend(["--set", "latency=trace", "--format", "ior", "--quiet"]);
    let o = s.iolab(&run);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    // The kept file: one shared file, every transfer's bytes at their offset.
    let kept: Vec<_> = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".iolab-"))
        .collect();
    assert_eq!(kept.len(), 2, "one work directory per repetition: {kept:?}");
    for w in &kept {
        let bytes = std::fs::read(w.join("shared.dat")).unwrap();
        assert_eq!(bytes, expected_file(1, 0, 3 * 3 * 65536, 16384), "{w:?}");
    }
    // Each worker's transfers where IOR puts task r's: segment s at s N b + r b + k t.
    let mut want = vec![];
    for r in 0..3u64 {
        for seg in 0..3u64 {
            for k in 0..4u64 {
                want.push((r, 0, seg * 3 * 65536 + r * 65536 + k * 16384));
            }
        }
    }
    let mut twice = want.clone();
    twice.extend(want.iter().copied());
    twice.sort();
    let mut got = trace(&s, "write");
    got.sort();
    assert_eq!(got, twice, "both repetitions");
    // IOR's summary, its figures iolab's agg of each repetition.
    let doc = {
        let o = s.iolab(&["results", "show", "last", "--json"]);
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let mib = |x: f64| x / 1048576.0;
    for (i, name) in ["write", "read"].iter().enumerate() {
        let aggs: Vec<f64> = phases(&doc)[i]["repetitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["agg_bytes_per_s"].as_f64().unwrap())
            .collect();
        let max = aggs.iter().cloned().fold(0.0, f64::max);
        let summary = &text[text.find("Summary of all tests:").unwrap()..];
        let row = summary
            .lines()
            .find(|l| l.starts_with(&format!("{name:<9} ")))
            .unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], format!("{:.2}", mib(max)), "{row}");
        assert_eq!(&cells[13..16], ["3", "3", "2"], "{row}: #Tasks tPN reps");
        assert_eq!(cells[21], "3", "{row}: segcnt");
        assert_eq!(&cells[22..24], ["65536", "16384"], "{row}: blksiz xsize");
        let mean = aggs.iter().sum::<f64>() / aggs.len() as f64;
        assert_eq!(cells[3], format!("{:.2}", mib(mean)), "{row}: Mean(MiB)");
        let results = text[text.find("Results:").unwrap()..text.find("Summary of all tests:").unwrap()]
            .lines()
            .filter(|l| l.starts_with(&format!("{name:<10}")))
            .count();
        assert_eq!(results, 2, "a Results row per repetition: {text}");
    }
    assert!(text.contains("Summary of all tests:"), "{text}");
    assert!(text.contains("segments            : 3"), "{text}");
    // A file per task in 4 segments: IOR's -s and -b in its summary, as IOR prints them.
    let o = s.iolab(&[
        "ior",
        "-w",
        "-b",
        "64k",
        "-t",
        "16k",
        "-s",
        "4",
        "-F",
        "-o",
        f,
        "--format",
        "ior",
        "--quiet",
        "--no-store",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for line in [
        "segments            : 4",
        "blocksize           : 65536 bytes",
        "access              : file-per-process",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    let row = text
        .lines()
        .find(|l| l.starts_with("write ") && l.contains("POSIX"))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[16], cells[21], cells[22]), ("1", "4", "65536"), "{row}: fPP segcnt blksiz");
}

#[test]
fn ior_and_mdtest_print_their_translation_and_refuse_by_name() {
    let s = Scratch::new();
    let o = s.iolab(&["ior", "-w", "-r", "-b", "4m", "-t", "1m", "-s", "2", "-F", "-e", "--print"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = String::from_utf8(o.stdout).unwrap();
    assert!(toml.lines().any(|l| l.starts_with("size = 8388608") && l.ends_with("# -b 4m x -s 2")), "{toml}");
    std::fs::write(s.path().join("ior.toml"), &toml).unwrap();
    let o = s.iolab(&["plan", "ior.toml"]);
    assert!(o.status.success(), "the printed file plans: {}", stderr(&o));
    for (args, want) in [
        (&["ior", "-w", "-Z"][..], "ior option = `-Z`"),
        (&["ior", "-w", "-b", "3k", "-t", "2k"][..], "block size must be a multiple of transfer size"),
        (&["ior", "-w", "--frobnicate"][..], "`--frobnicate`"),
        (&["ior", "-w", "-t", "104", "-b", "1040", "-R"][..], "bs (from IOR -t 104)"),
        (
            &["ior", "-w", "-t", "100", "-b", "1000"][..],
            "`-t 100`: transfer size must be a multiple of access size",
        ),
        (&["ior", "-w", "-F", "-z", "-b", "64k", "-t", "64k"][..], "choose blocksize > transferSize"),
        (&["mdtest", "-n", "10", "-S"][..], "mdtest option = `-S`"),
        (&["mdtest", "-n", "10", "-F", "--format", "fio"][..], "--format = `fio`"),
    ] {
        let o = s.iolab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(s.leftovers(), ["ior.toml"], "nothing made");
    assert!(!s.db().exists(), "no store made");
}

#[test]
fn an_mdtest_command_line_runs_its_phases_and_prints_mdtests_summary() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let args =
        ["mdtest", "-n", "60", "-u", "-F", "-w", "3901", "-e", "3901", "-N", "1", "-Y", "-i", "2", "-d", dir];
    let mut run = args.to_vec();
    run.extend(["--set", "workers=2", "--json", "--quiet"]);
    let o = s.iolab(&run);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = phases(&doc).iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["create", "stat", "read-files", "unlink"]);
    for ph in phases(&doc) {
        for r in ph["repetitions"].as_array().unwrap() {
            assert_eq!(r["ops"], 120, "{}", ph["name"]);
        }
    }
    assert_eq!(doc["spec"]["md"]["shift"], 1);
    assert_eq!(doc["spec"]["sync"], "end");
    let mut fmt = args.to_vec();
    fmt.extend(["--set", "workers=2", "--format", "mdtest", "--quiet", "--no-store"]);
    let o = s.iolab(&fmt);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("SUMMARY rate (in ops/sec): (of 2 iterations)"), "{text}");
    for row in ["File creation", "File stat", "File read", "File removal"] {
        let line =
            text.lines().find(|l| l.trim_start().starts_with(row)).unwrap_or_else(|| panic!("{row}: {text}"));
        let cells: Vec<f64> =
            line.trim_start()[row.len()..].split_whitespace().map(|c| c.parse().unwrap()).collect();
        assert_eq!(cells.len(), 4, "{line}");
        assert!(cells[0] >= cells[2] && cells[2] >= cells[1] && cells[1] > 0.0, "{line}");
    }
    assert!(!text.contains("Directory creation"), "files only: {text}");
}

#[test]
fn io500s_config_file_sets_the_workload_set() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let ini = format!(
        "# io500's own syntax\n[global]\ndatadir = {dir}\n[debug]\nstonewall-time = 60\n[ior-easy]\ntransferSize = 256k\nblockSize = 1m\n[ior-hard]\nrun = FALSE\n[mdtest-easy]\nn = 40\n[mdtest-hard]\nrun = FALSE\n"
    );
    std::fs::write(s.path().join("io500.ini"), ini).unwrap();
    let o = s.iolab(&[
        "reproduce",
        "IO500",
        "--ini",
        "io500.ini",
        "--scale",
        "quick",
        "--json",
        "--quiet",
        "--set",
        "reps=1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let points = doc["points"].as_array().unwrap();
    let workloads: Vec<&str> = points.iter().map(|p| p["params"]["workload"].as_str().unwrap()).collect();
    assert_eq!(workloads, ["ior-easy", "mdtest-easy"]);
    let easy = &points[0]["phases"][0]["repetitions"][0];
    assert_eq!((easy["total_bytes"].as_u64(), easy["ops"].as_u64()), (Some(1 << 20), Some(4)));
    let bound = &points[0]["phases"][0]["time_bound"];
    assert_eq!(
        (bound["kind"].as_str(), bound["ns"].as_u64()),
        (Some("stonewall"), Some(60_000_000_000)),
        "{bound}"
    );
    assert_eq!(points[1]["phases"][0]["repetitions"][0]["ops"], 40);
    std::fs::write(s.path().join("bad.ini"), "[ior-easy]\nuniqueDir = TRUE\n").unwrap();
    let o = s.iolab(&["reproduce", "IO500", "--ini", "bad.ini", "--scale", "quick"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("io500 ini = `[ior-easy] uniqueDir = TRUE`"), "{}", stderr(&o));
}
