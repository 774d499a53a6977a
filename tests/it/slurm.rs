//! iolab under Slurm: a real cluster over the simulated hosts (`tests/hosts.sh up --slurm --fs
//! moosefs`: slurmctld on h1, slurmd and munged on every host, MooseFS mounted on each), brought
//! up once for all of it. srun starts the Open MPI build with `--mpi=pmix` and the MPICH build
//! with `--mpi=pmi2` as one world of six ranks on three hosts, one experiment each with the
//! job in its results; a mismatched plugin is refused; `salloc ... mpirun` runs; then every
//! command of docs/slurm.md, batch jobs included (their output files and stores read).

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::hosts::{Hosts, hosts_command, on};
use crate::mpi::ok_json;
use crate::util::*;

/// The rig's shared directory, seen at the same path on every host and here.
const SHARED: &str = "/var/tmp/iolab-hosts/shared";
/// docs/slurm.md's shared file system, and where it runs here (MooseFS, on every host).
const DOC_SHARED: (&str, &str) = ("/lustre/scratch/me", "/mnt/moosefs/me");

/// A shell line on h1 as a Slurm client (`tests/hosts.sh slurm`), in `cwd`, with HOME `home`.
fn slurm(line: &str, cwd: &Path, home: &Path) -> Output {
    hosts_command()
        .args(["slurm", "sh", "-c", line])
        .current_dir(cwd)
        .env("HOME", home)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .output()
        .unwrap()
}

/// Waits for batch job `id` to end; its state and exit code (`COMPLETED`, `0:0`).
fn job_end(id: &str, cwd: &Path, home: &Path) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(400);
    loop {
        let o = slurm(&format!("scontrol show job {id}"), cwd, home);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let field =
            |k: &str| text.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap_or_default().to_string();
        let state = field("JobState=");
        if !["PENDING", "RUNNING", "CONFIGURING", "COMPLETING", ""].contains(&state.as_str()) {
            return (state, field("ExitCode="));
        }
        assert!(Instant::now() < deadline, "job {id} did not end: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The Slurm job in a run's host facts.
fn job_of(doc: &Value) -> &Value {
    &doc["host"]["slurm"]
}

/// Every phase of a run on 6 ranks, 2 per host: complete, each worker on the rank and host
/// Slurm put it (a read phase's worker read what rank + 2 wrote: `--reorder-reads node`).
fn placed_by_slurm(doc: &Value, reordered: bool) {
    for ph in phases(doc) {
        let r = &ph["repetitions"][0];
        assert_eq!(r["status"], "complete", "{r}");
        let read = ph["name"].as_str().unwrap().starts_with("read");
        for w in r["workers"].as_array().unwrap() {
            let rank = w["rank"].as_u64().unwrap();
            assert_eq!(w["host"], format!("h{}", rank / 2 + 1), "{w}");
            let whose = if read && reordered { (rank + 2) % 6 } else { rank };
            assert_eq!(w["worker"].as_u64().unwrap(), whose, "{}: {w}", ph["name"]);
        }
        let hosts: Vec<(String, Value)> = r["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["host"].as_str().unwrap().to_string(), h["ranks"].clone()))
            .collect();
        let want = [("h1", [0, 1]), ("h2", [2, 3]), ("h3", [4, 5])]
            .map(|(h, r)| (h.to_string(), serde_json::json!(r)));
        assert_eq!(hosts, want);
    }
}

#[test]
fn slurm_on_the_simulated_hosts_runs_iolab_as_one_world() {
    let s = Scratch::new();
    let t = Instant::now();
    let Some(_hosts) = Hosts::up_with_slurm(s.path(), &["moosefs"]) else { return };
    eprintln!("the hosts, MooseFS and Slurm up in {:.1} s", t.elapsed().as_secs_f64());
    let (cwd, home) = (s.path(), s.path());
    let db = s.db().to_str().unwrap().to_string();
    let dir = Path::new(SHARED).join(format!("slurm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap().to_string();
    let exe = bin().to_str().unwrap().to_string();
    let mpich = std::env::var("IOLAB_TEST_MPICH_BIN").ok();
    if mpich.is_none() {
        eprintln!("skip the MPICH half: IOLAB_TEST_MPICH_BIN names no build against MPICH");
    }
    let run = format!(
        "run --layout shared --op write,read:cold --reorder-reads node --size 1MiB --bs 64KiB --reps 1 --seed 7 --keep --json --quiet --dir {d} --db {db}"
    );

    // srun with each MPI's plugin: one world of six ranks over the three hosts, one experiment.
    let mut launches = vec![("pmix", exe.clone())];
    launches.extend(mpich.iter().map(|m| ("pmi2", m.clone())));
    for (n, (plugin, exe)) in launches.iter().enumerate() {
        let t = Instant::now();
        let o = slurm(&format!("srun -N3 -n6 --mpi={plugin} {exe} {run}"), cwd, home);
        eprintln!("srun --mpi={plugin}: {:.1} s", t.elapsed().as_secs_f64());
        let doc = ok_json(&o);
        placed_by_slurm(&doc, true);
        let job = job_of(&doc);
        assert!(job["job_id"].as_str().is_some_and(|j| j.parse::<u64>().is_ok()), "{job}");
        assert_eq!(
            (&job["step_id"], &job["cluster"], &job["partition"]),
            (&Value::from("0"), &Value::from("iolab"), &Value::from("main")),
            "{job}"
        );
        assert_eq!(
            (&job["node_list"], &job["tasks_per_node"]),
            (&Value::from("h[1-3]"), &Value::from("2(x3)"))
        );
        assert_eq!(job["mpi_plugin"], *plugin);
        let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap();
        let data = std::fs::read(work_dir(&dir, run_id).join("shared.dat")).unwrap();
        assert!(data == expected_file(7, 0, 6 << 20, 64 << 10), "{plugin}: the shared file's bytes differ");
        std::fs::remove_dir_all(work_dir(&dir, run_id)).unwrap();
        assert_eq!(crate::mpi::experiments(&s).len(), n + 1, "{plugin}: one experiment per run");
    }

    // Another plugin than the build's MPI takes: refused before MPI starts, said once, exit 2.
    let mut wrong = vec![("pmi2", exe.clone()), ("none", exe.clone())];
    wrong.extend(mpich.iter().map(|m| ("pmix", m.clone())));
    let stored = crate::mpi::experiments(&s).len();
    for (plugin, exe) in &wrong {
        let o = slurm(&format!("srun -N3 -n6 --mpi={plugin} {exe} {run}"), cwd, home);
        assert_eq!(o.status.code(), Some(2), "{plugin}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(
            err.matches(&format!("error: srun = `--mpi={plugin}`: this iolab was built with ")).count(),
            1,
            "{err}"
        );
        let want = if Some(exe) == mpich.as_ref() { "--mpi=pmi2" } else { "--mpi=pmix" };
        assert!(err.contains(&format!("which srun starts as one world only with {want}")), "{err}");
        assert_eq!(crate::mpi::experiments(&s).len(), stored, "{plugin}: nothing stored");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{plugin}: nothing made");
    }

    // salloc, then mpirun inside the allocation: the job without a step of its own.
    let t = Instant::now();
    let o = slurm(
        &format!(
            "salloc -N3 -n6 mpirun {exe} run --op write,read:cold --size 1MiB --reps 1 --json --quiet --dir {d} --db {db}"
        ),
        cwd,
        home,
    );
    eprintln!("salloc + mpirun: {:.1} s", t.elapsed().as_secs_f64());
    let doc = ok_json(&o);
    placed_by_slurm(&doc, false);
    let job = job_of(&doc);
    assert!(job["job_id"].is_string() && job["step_id"].is_null() && job["mpi_plugin"].is_null(), "{job}");
    assert_eq!(job["node_list"], "h[1-3]");

    // The job beside the host in the list, a line of the table, columns of the CSV.
    let list = s.iolab(&["results", "list", "--db", &db]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert_eq!(text.matches("h1 (Slurm job ").count(), launches.len() + 1, "{text}");
    let shown = s.iolab(&["results", "show", "last", "--db", &db]);
    let table = String::from_utf8_lossy(&shown.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("slurm   job ")
                && l.contains("cluster iolab, partition main, nodes h[1-3]")),
        "{table}"
    );
    let csv = s.iolab(&["results", "export", "last", "--csv", "--db", &db]);
    let mut rows = csv::Reader::from_reader(&csv.stdout[..]);
    let header = rows.headers().unwrap().clone();
    let col = header.iter().position(|h| h == "slurm_job_id").unwrap();
    let first = rows.records().next().unwrap().unwrap();
    assert_eq!(first.get(col), job["job_id"].as_str());
    std::fs::remove_dir_all(&dir).unwrap();

    documented_commands(&s, mpich.as_deref());
}

/// A fenced line of docs/slurm.md made to run here: the doc's directories the rig's, the
/// binaries the ones under test, sizes and times small.
fn for_the_rig(line: &str, mpich: Option<&str>) -> String {
    let mut words: Vec<String> = line
        .replace(DOC_SHARED.0, DOC_SHARED.1)
        .replace("/local/scratch", "/mnt/node")
        .split_whitespace()
        .map(String::from)
        .collect();
    for w in words.iter_mut() {
        match w.as_str() {
            "iolab" => *w = bin().to_str().unwrap().to_string(),
            "iolab-mpich" => *w = mpich.unwrap_or("iolab-mpich").to_string(),
            _ => {}
        }
    }
    let bounded = words.iter().any(|w| w == "--runtime");
    let set = |words: &mut Vec<String>, flag: &str, value: &str| {
        if let Some(i) = words.iter().position(|w| w == flag) {
            words[i + 1] = value.to_string();
        }
    };
    set(&mut words, "--size", if bounded { "256MiB" } else { "1MiB" });
    set(&mut words, "--runtime", "2s");
    set(&mut words, "--progress-every", "500ms");
    set(&mut words, "--md-files", "200");
    if let Some(i) = words.iter().position(|w| w == "run") {
        words.insert(i + 1, "--reps".into());
        words.insert(i + 2, "1".into());
    }
    if let Some(i) = words.iter().position(|w| w == "reproduce") {
        words.insert(i + 2, "--scale".into());
        words.insert(i + 3, "quick".into());
    }
    if words.first().is_some_and(|w| w == "sbatch") {
        words.insert(1, "--parsable".into());
    }
    words.join(" ")
}

/// The commands of docs/slurm.md, in order: each batch script written where the doc names it,
/// each `srun`, `salloc`, `sbatch` and `for` line run; a batch job waited for, its output file
/// and its store read.
fn documented_commands(s: &Scratch, mpich: Option<&str>) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/slurm.md")).unwrap();
    on("h1", &format!("mkdir -p {}", DOC_SHARED.1));
    let (cwd, home) = (s.path(), s.path());
    let mut fenced = false;
    let mut script: Option<(String, Vec<String>)> = None;
    let mut last_name = String::new();
    let (mut ran, mut jobs) = (0, vec![]);
    for line in text.lines() {
        if line.starts_with("```") {
            if let Some((name, lines)) = script.take() {
                std::fs::write(s.path().join(&name), lines.join("\n") + "\n").unwrap();
            }
            fenced = !fenced && line == "```sh";
            continue;
        }
        if !fenced {
            if let Some(n) = line.split('`').find(|w| w.ends_with("-job.sh")) {
                last_name = n.to_string();
            }
            continue;
        }
        if let Some((_, lines)) = script.as_mut() {
            lines.push(if line.starts_with('#') { line.to_string() } else { for_the_rig(line, mpich) });
            continue;
        }
        if line == "#!/bin/bash" {
            script = Some((last_name.clone(), vec![line.to_string()]));
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or("");
        if !["srun", "salloc", "sbatch", "for"].contains(&first) {
            continue;
        }
        if line.contains("iolab-mpich") && mpich.is_none() {
            eprintln!("skipped (no MPICH build): {line}");
            continue;
        }
        let cmd = for_the_rig(line, mpich);
        let t = Instant::now();
        let o = slurm(&cmd, cwd, home);
        eprintln!("{:.1} s: {line}", t.elapsed().as_secs_f64());
        assert!(o.status.success(), "{line}\n{cmd}\n{}", stderr(&o));
        ran += 1;
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if line == "srun --mpi=list" {
            assert!(out.contains("pmix") && out.contains("pmi2"), "{out}");
        }
        if line.contains("--version") {
            let want = String::from_utf8_lossy(&s.iolab(&["--version"]).stdout).trim().to_string();
            assert_eq!(out.lines().filter(|l| *l == want).count(), 3, "{out}");
        }
        if first == "sbatch" {
            let id = out.trim().to_string();
            let (state, code) = job_end(&id, cwd, home);
            eprintln!("{:.1} s: job {id} of {line}: {state}", t.elapsed().as_secs_f64());
            let prefix = line.split_whitespace().last().unwrap().trim_end_matches("-job.sh");
            let output =
                std::fs::read_to_string(s.path().join(format!("{prefix}-{id}.out"))).unwrap_or_default();
            assert_eq!((state.as_str(), code.as_str()), ("COMPLETED", "0:0"), "{line}: {output}");
            jobs.push((prefix.to_string(), id, output));
        }
        if first == "for" {
            // Five experiments listed (the batch job's three, IO500, L1), and the L1 row of the
            // per-host table, each beside its job.
            assert_eq!(out.matches("(Slurm job ").count(), 6, "{out}");
        }
    }
    assert!(ran >= 9, "only {ran} lines ran");
    // The job's output file tells how far its runs were, every rank's count in each line.
    let (_, id, output) = jobs.iter().find(|j| j.0 == "iolab").expect("the batch job ran");
    let lines: Vec<&str> = output.lines().filter(|l| l.starts_with("progress: rep 1/1 ")).collect();
    assert!(lines.iter().filter(|l| l.contains(" write: ")).count() >= 2, "{output}");
    assert!(lines.iter().filter(|l| l.contains(" read:cold: ")).count() >= 2, "{output}");
    assert!(lines.iter().all(|l| l.contains(" · slowest rank ")), "{output}");
    assert_eq!(output.matches("stored as experiment ").count(), 3, "{output}");
    assert!(output.contains(&format!("slurm   job {id} step ")), "{output}");
    let db = s.path().join(format!("iolab/iolab-{id}.db"));
    let list = s.iolab(&["results", "list", "--db", db.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&list.stdout).matches(&format!("(Slurm job {id})")).count(), 3);
    let (_, _, io500) = jobs.iter().find(|j| j.0 == "io500").expect("the IO500 job ran");
    assert!(io500.contains("stored as experiment "), "{io500}");
}
