//! Every `iolab` command shown in a fenced block of README.md and docs/*.md runs here, in a
//! scratch directory with a scratch store, through `sh` (so redirections work), with `iolab`
//! the binary under test. Runs are made small: `--size`, `--reps` and `--iters` are replaced
//! (or added), time bounds made 200 ms; a run with a sweep is planned (`iolab plan`, which resolves every point and
//! checks it) rather than run; a tuning (`iolab tune JOB`) moves 8 MiB (Benson's job 4 MiB with
//! 10 ms of compute) in two runs of each candidate; a preset (`iolab reproduce ID`) is printed rather than run (the
//! presets' own tests run each at quick scale), except L1 at quick scale, which the per-host
//! commands after it need. A command that reads traces first gets a traced run to read. Placeholders (RUNID, FILE..., ID, /data, /mnt/pfs, /d1..)
//! become real ones. Lines that are not commands (sample output, usage synopses) are told
//! apart by rule, and the few that cannot run here are listed with the reason.

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// Commands that cannot run in a test, with the reason.
const CANNOT: &[(&str, &str)] = &[
    ("iolab run --settle 2s --prime-memory 4GiB", "primes 4 GiB of memory: the memory tests cover priming"),
    (
        "iolab plot R7_SERVERS_ID R7_MOOSEFS_ID",
        "plots two runs made on the simulated hosts over MooseFS: mpi_dfs::russell_r7_* makes them and draws this figure",
    ),
    (
        "iolab plot R10_SERVERS_ID R10_MOOSEFS_ID",
        "plots two runs made on the simulated hosts over MooseFS: mpi_dfs::russell_r10_* makes them and draws this figure",
    ),
];

/// The subcommands a command line may start with (anything else is sample output).
const SUBCOMMANDS: &[&str] = &[
    "run",
    "plan",
    "results",
    "info",
    "engines",
    "reproduce",
    "plot",
    "report",
    "clean",
    "tune",
    "ior",
    "mdtest",
    "fio",
];

/// Every fenced line of the docs that starts with `iolab ` or `cargo run --release -- `, with
/// its file; continuation lines (`\` at the end) joined.
fn doc_commands() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = vec![];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut fenced = false;
        let mut pending = String::new();
        for line in text.lines() {
            if line.starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if !fenced {
                continue;
            }
            let l = line.trim();
            if !pending.is_empty() {
                pending.push(' ');
                pending.push_str(l.trim_end_matches('\\').trim());
                if !l.ends_with('\\') {
                    out.push((f.display().to_string(), std::mem::take(&mut pending)));
                }
                continue;
            }
            let l = l
                .strip_prefix("cargo run --release -- ")
                .map(|r| format!("iolab {r}"))
                .unwrap_or(l.to_string());
            if !l.starts_with("iolab ") {
                continue;
            }
            if l.ends_with('\\') {
                pending = l.trim_end_matches('\\').trim().to_string();
            } else {
                out.push((f.display().to_string(), l));
            }
        }
    }
    out
}

/// `line` without its trailing `# comment`.
fn strip_comment(line: &str) -> &str {
    match line.find(" #") {
        Some(i) => line[..i].trim_end(),
        None => line,
    }
}

/// Sets `flag` to `value` in `words`: replaced where given, added otherwise.
fn set_flag(words: &mut Vec<String>, flag: &str, value: &str) {
    match words.iter().position(|w| w == flag) {
        Some(i) if i + 1 < words.len() => words[i + 1] = value.to_string(),
        _ => {
            words.push(flag.to_string());
            words.push(value.to_string());
        }
    }
}

/// A phase with its `runtime=` or `stonewall=` made 200 ms.
fn shorter_bounds(phase: &str) -> String {
    let short = |m: &str| match m.split_once('=') {
        Some((k @ ("runtime" | "stonewall"), _)) => format!("{k}=200ms"),
        _ => m.to_string(),
    };
    phase.split(':').map(short).collect::<Vec<_>>().join(":")
}

#[test]
fn every_documented_command_runs() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    for d in ["d1", "d2", "d3", "d4", "data", "pfs", "docs/img"] {
        std::fs::create_dir_all(s.path().join(d)).unwrap();
    }
    std::fs::create_dir_all(s.path().join("examples")).unwrap();
    // io500's config file the IO500 commands read.
    std::fs::write(
        s.path().join("io500.ini"),
        format!("[global]\ndatadir = {dir}\n[mdtest-easy]\nn = 100\n"),
    )
    .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for e in std::fs::read_dir(root.join("examples")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), s.path().join("examples").join(e.file_name())).unwrap();
    }
    // A store with a kept run, a traced one, another store and a run's JSON to import.
    let kept = s.run_json(&["--op", "write", "--size", "8MiB", "--reps", "1", "--keep", "--verify"]);
    let run_id = kept["points"][0]["phases"][0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let kept_file = work_dir(s.path(), &run_id).join("w0000.dat");
    let other = Scratch::new();
    let o = other.iolab(&[
        "run",
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--quiet",
        "--dir",
        other.path().to_str().unwrap(),
    ]);
    assert!(o.status.success());
    std::fs::copy(other.db(), s.path().join("other-host.db")).unwrap();
    let o = other.iolab(&[
        "run",
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--quiet",
        "--json",
        "--no-store",
        "--dir",
        other.path().to_str().unwrap(),
    ]);
    std::fs::write(s.path().join("run.json"), &o.stdout).unwrap();
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());

    let commands = doc_commands();
    assert!(commands.len() > 40, "found only {} documented commands", commands.len());
    let mut ran = 0;
    let mut failures = vec![];
    for (file, line) in &commands {
        let cmd = strip_comment(line);
        let words: Vec<&str> = cmd.split_whitespace().collect();
        // Sample output (`iolab  write  293 ...`) and usage synopses (`iolab plot ID|last [...]`).
        if words.len() < 2 || !SUBCOMMANDS.contains(&words[1]) || cmd.contains('|') || cmd.contains(" [") {
            continue;
        }
        if CANNOT.iter().any(|(c, _)| cmd.starts_with(c)) {
            continue;
        }
        let cmd = cmd
            .replace("RUNID", &run_id)
            .replace("FILE...", kept_file.to_str().unwrap())
            .replace("20261121-1157", "last")
            .replace("/data", &format!("{dir}/data"))
            .replace("/mnt/pfs", &format!("{dir}/pfs"))
            .replace("/d1", &format!("{dir}/d1"))
            .replace("/d2", &format!("{dir}/d2"))
            .replace("/d3", &format!("{dir}/d3"))
            .replace("/d4", &format!("{dir}/d4"));
        let (body, redirect) = match cmd.split_once(" > ") {
            Some((b, r)) => (b.to_string(), format!(" > {r}")),
            None => (cmd.clone(), String::new()),
        };
        let mut w: Vec<String> = body.split_whitespace().map(String::from).collect();
        let mut runs: Vec<Vec<String>> = vec![];
        if cmd.contains("trace last") || cmd.contains("--kind trace") {
            let traced = "iolab run --op write,read:reverse:cold,read:cold,read:asis --bs 4KiB --trace --size 1MiB --reps 1 --quiet";
            runs.push(traced.split_whitespace().map(String::from).collect());
            runs.last_mut().unwrap().extend(["--dir".to_string(), dir.clone()]);
        }
        match w[1].as_str() {
            "run" if w.iter().any(|x| x == "--sweep") => {
                w[1] = "plan".into();
                runs.push(w);
            }
            "run" => {
                let plan: Vec<String> =
                    w.iter().map(|x| if x == "run" { "plan".into() } else { x.clone() }).collect();
                runs.push(plan);
                if w.iter().any(|x| x == "--strategy") {
                    set_flag(&mut w, "--iters", "16");
                    set_flag(&mut w, "--comptime", "10ms");
                } else if (!w.iter().any(|x| x.ends_with(".toml")) || w.iter().any(|x| x == "--size"))
                    && !metadata_only(&w)
                {
                    // (Metadata phases alone take no size: iolab refuses one.)
                    set_flag(&mut w, "--size", "8MiB");
                }
                set_flag(&mut w, "--reps", "1");
                // Time bounds shortened, the run's and each phase's.
                for flag in ["--runtime", "--stonewall"] {
                    if w.iter().any(|x| x == flag) {
                        set_flag(&mut w, flag, "200ms");
                    }
                }
                for x in w.iter_mut().filter(|x| x.contains("runtime=") || x.contains("stonewall=")) {
                    *x = x.split(',').map(shorter_bounds).collect::<Vec<_>>().join(",");
                }
                if !w.iter().any(|x| x == "--dir" || x == "--targets") {
                    set_flag(&mut w, "--dir", &dir);
                }
                w.push("--quiet".into());
                runs.push(w);
            }
            "reproduce" if w.get(2).is_some_and(|id| id == "L1") && w.iter().any(|x| x == "quick") => {
                w.extend(["--dir".to_string(), dir.clone(), "--quiet".to_string()]);
                runs.push(w);
            }
            // A tuning moves little and races briefly (Benson's job with little compute).
            "tune" if w.get(2).is_some_and(|j| j != "list") => {
                let benson = w[2] == "benson";
                set_flag(&mut w, "--bytes", if benson { "4MiB" } else { "8MiB" });
                if !w.iter().any(|x| x == "--grid" || x == "--list") {
                    // Two runs of each candidate, whatever the time: a budget on a loaded
                    // machine could cut the race before its first round.
                    set_flag(&mut w, "--budget", "10m");
                    set_flag(&mut w, "--min-runs", "2");
                    set_flag(&mut w, "--max-runs", "2");
                    if benson {
                        set_flag(&mut w, "--comptime", "10ms");
                    }
                    w.push("--quiet".into());
                }
                if !w.iter().any(|x| x == "--dir") {
                    set_flag(&mut w, "--dir", &dir);
                }
                runs.push(w);
            }
            // fio's job files (small ones) run once, quietly.
            "fio" if !w.iter().any(|x| x == "--print") => {
                set_flag(&mut w, "--reps", "1");
                w.push("--quiet".into());
                runs.push(w);
            }
            // Other tools' command lines run as written (the docs keep them small), quietly.
            "ior" | "mdtest" => {
                if !w.iter().any(|x| x == "--print") {
                    w.push("--quiet".into());
                }
                runs.push(w);
            }
            "reproduce" if !w.iter().any(|x| x == "--list" || x == "--print") => {
                w.push("--print".into());
                runs.push(w);
            }
            _ => runs.push(w),
        }
        for words in runs {
            let text = format!("{}{redirect}", words.join(" "));
            let o = Command::new("sh")
                .arg("-c")
                .arg(&text)
                .current_dir(s.path())
                .env("PATH", &path)
                .env("IOLAB_DB", s.db())
                .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
                .output()
                .unwrap();
            ran += 1;
            if !o.status.success() {
                failures.push(format!(
                    "{file}: `{line}`\n  ran `{text}`: exit {:?}: {}",
                    o.status.code(),
                    stderr(&o).trim()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} documented commands failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Whether a command's `--op` names metadata phases only.
fn metadata_only(words: &[String]) -> bool {
    const MD: [&str; 9] =
        ["create", "stat", "open", "read-files", "rename", "unlink", "mkdir", "rmdir", "find"];
    let Some(i) = words.iter().position(|x| x == "--op") else { return false };
    words
        .get(i + 1)
        .is_some_and(|ops| ops.split(',').all(|p| MD.contains(&p.split(':').next().unwrap_or(""))))
}
