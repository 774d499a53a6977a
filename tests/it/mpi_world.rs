//! The MPI world as it starts and while its phases run, under Open MPI's `mpirun` on this host:
//! ranks of different builds refused before anything is planned; a rank in another time
//! namespace on rank 0's own host put on rank 0's clock; a stop through mpirun mid metadata
//! create that removes every item because every rank has stopped first; rank 0 printing the
//! whole run's progress, every rank's count, as plain lines when stderr is not a terminal.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::mpi::{mpirun_cmd, wait_for};
use crate::util::*;

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

/// `mpirun -np 1 BIN ARGS : -np 1 PREFIX... OTHER ARGS` (an MPMD launch: rank 1 started by
/// `prefix` with the binary `other`).
fn two_ranks(s: &Scratch, args: &[&str], prefix: &[&str], other: &std::path::Path) -> Command {
    let mut c = Command::new("timeout");
    c.args(["240", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "1"])
        .arg(bin())
        .args(args)
        .args([":", "-np", "1"])
        .args(prefix)
        .arg(other)
        .args(args)
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .env("IOLAB_DB", s.db())
        .current_dir(s.path());
    c
}

/// A copy of the test binary that differs only in the git revision it says it was built from
/// (the same length of other hex digits, everywhere the binary holds it); None when this build
/// knows no revision.
fn other_build(s: &Scratch) -> Option<(std::path::PathBuf, String)> {
    let v = Command::new(bin()).arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&v.stdout).trim().to_string();
    let rev = v.strip_prefix("iolab ")?.split("(git ").nth(1)?.trim_end_matches(')').to_string();
    if rev.len() < 7 || !rev.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let other: String = rev.chars().map(|c| if c == '0' { '1' } else { '0' }).collect();
    let path = s.path().join("iolab-other-build");
    std::fs::copy(bin(), &path).unwrap();
    // Every place the binary holds its revision, the same length of other digits.
    let sed = Command::new("sed").args(["-i", &format!("s/{rev}/{other}/g")]).arg(&path).status().unwrap();
    assert!(sed.success());
    let v = Command::new(&path).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&v.stdout).contains(&other), "{v:?}");
    Some((path, rev))
}

/// Rank 1 runs another build (the same version, another git revision): every rank stops before
/// anything is planned, exit 2, rank 0 alone says which rank on which host runs what and what
/// rank 0 runs; nothing is made or stored. (Before, the two ran together without a word.)
#[test]
fn ranks_of_different_builds_are_refused_before_the_plan() {
    let s = Scratch::new();
    let Some((other, rev)) = other_build(&s) else {
        eprintln!("skipped: this build knows no git revision to tell builds apart by");
        return;
    };
    let dir = s.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let args = ["run", "--size", "1MiB", "--reps", "1", "--dir", dir.to_str().unwrap()];
    let o = two_ranks(&s, &args, &[], &other).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    let version = env!("CARGO_PKG_VERSION");
    let theirs = format!("build = `rank 1 on {}: iolab {version} (git ", hostname());
    assert_eq!(err.matches("error: ").count(), 1, "said once: {err}");
    assert!(err.contains(&theirs), "{err}");
    assert!(!err.contains(&format!("rank 1 on {}: iolab {version} (git {rev}", hostname())), "{err}");
    assert!(err.contains(&format!("rank 0 runs iolab {version} (git {rev}")), "{err}");
    assert!(err.contains("every rank of a run must run the same build"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing made");
    assert!(!s.db().exists(), "nothing stored");
}

/// Rank 1 on rank 0's own host, in a time namespace whose CLOCK_MONOTONIC runs 100,000 s
/// ahead (`unshare --time --monotonic`): its clock is measured as another host's and its
/// readings moved onto rank 0's, so the phase's span is the real one and agg is no more than
/// min_SAR; rank 0 says why. (Before, ranks of rank 0's host were taken to share its clock:
/// agg 0.2 MB/s, flagged as workers that did not overlap.)
#[test]
fn a_rank_in_another_time_namespace_is_put_on_rank_0s_clock() {
    if !Command::new("unshare")
        .args(["--time", "--monotonic", "1", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: no time namespaces here (unshare --time)");
        return;
    }
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let args =
        ["run", "--op", "write", "--size", "16MiB", "--reps", "1", "--no-store", "--json", "--dir", &dir];
    let o = two_ranks(&s, &args, &["unshare", "--time", "--monotonic", "100000"], &bin()).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &phases(&doc)[0]["repetitions"][0];
    let span = r["span_ns"].as_f64().unwrap();
    assert!(span > 0.0 && span < 60e9, "the phase spans {span} ns: {r}");
    let agg = r["agg_bytes_per_s"].as_f64().unwrap();
    assert!(agg > 0.0 && agg <= r["min_sar_bytes_per_s"].as_f64().unwrap() * (1.0 + 1e-9), "{r}");
    let err = stderr(&o);
    let want = format!(
        "note: rank 1 on {} run in another time namespace than rank 0: their CLOCK_MONOTONIC is +",
        hostname()
    );
    let at = err.find(&want).unwrap_or_else(|| panic!("{err}"));
    let secs: f64 = err[at + want.len()..].split(' ').next().unwrap().parse().unwrap();
    assert!((secs - 100_000.0).abs() < 1.0, "{err}");
}

/// Entries under `dir`, at any depth.
fn entries(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| 1 + if e.path().is_dir() { entries(&e.path()) } else { 0 }).sum())
        .unwrap_or(0)
}

/// SIGUSR1 to mpirun while two ranks create 100,000 items each: rank 0 tells every rank to
/// stop and waits until all have stopped creating before it removes the tree, so not one item
/// is left; exit 128 + 10. (Before, rank 0 removed the tree while rank 1 went on creating:
/// 9k-148k of its items were left.)
#[test]
fn sigusr1_mid_metadata_create_leaves_no_item() {
    let s = Scratch::new();
    let dir = s.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let args = ["run", "--op", "create,stat", "--md-files", "100000", "--reps", "1", "--quiet", "--dir", d];
    let child = mpirun_cmd(&s, 2, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while entries(&dir) < 3000 {
        assert!(Instant::now() < deadline, "the create did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kids = children_of(child.id());
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(Command::new("kill").args(["-USR1", &kids[0].to_string()]).status().unwrap().success());
    let (o, _) = wait_for(child, 120);
    assert_eq!(o.status.code(), Some(138), "{}", stderr(&o));
    assert_eq!(entries(&dir), 0, "left: {:?}", std::fs::read_dir(&dir).unwrap().flatten().next());
}

/// Under mpirun with stderr a pipe, rank 0 prints a plain line every `--progress-every` with
/// every rank's bytes: three ranks write for 3 s, the lines count up past what rank 0 alone
/// wrote and name the slowest rank; `--progress-every 0` prints none.
#[test]
fn rank_0_prints_every_ranks_progress_as_plain_lines() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let run = |every: &str| {
        let args = [
            "run",
            "--op",
            "write",
            "--size",
            "1GiB",
            "--bs",
            "1MiB",
            "--runtime",
            "3s",
            "--reps",
            "1",
            "--no-store",
            "--json",
            "--progress-every",
            every,
            "--dir",
            &dir,
        ];
        crate::mpi::mpirun(&s, 3, &args)
    };
    let o = run("500ms");
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("progress: rep 1/1 write: ")).collect();
    assert!(lines.len() >= 3, "{err}");
    assert!(lines.iter().all(|l| l.contains(" · slowest rank ")), "{err}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &phases(&doc)[0]["repetitions"][0];
    let rank0: u64 = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["rank"] == 0)
        .map(|w| w["bytes"].as_u64().unwrap())
        .sum();
    // The last line's count: every rank's bytes, as rank 0 last heard them (more than its own).
    let last = lines.last().unwrap().strip_prefix("progress: rep 1/1 write: ").unwrap();
    let shown = size_of(last.split(" · ").next().unwrap());
    assert!(shown > rank0 as f64, "{last}: rank 0 alone wrote {rank0}");
    let o = run("0");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("progress:"), "{}", stderr(&o));
}
