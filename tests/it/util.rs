//! Helpers shared by the integration tests: run the binary, parse its JSON, rebuild the bytes
//! a write phase must have produced.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use serde_json::Value;

/// The iolab binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_iolab"))
}

/// The memory size every test's iolab assumes ($IOLAB_RAM_BYTES), so that no result depends
/// on this machine's: a size that is no whole number of MiB (as MemTotal rarely is), so sizes
/// relative to memory are always rounded to whole blocks. 24,684,092 KiB.
pub const TEST_RAM_BYTES: u64 = 25_276_510_208;

/// `iolab` as a command, with the test memory size.
pub fn command() -> Command {
    let mut c = Command::new(bin());
    c.env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string());
    c
}

/// A scratch directory for one test; removed when dropped.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        // Under the target directory: a real disk file system, not a tmpfs.
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        Scratch { dir: tempfile::tempdir_in(base).unwrap() }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn db(&self) -> PathBuf {
        self.path().join("store.db")
    }
    /// Runs `iolab ARGS` with the store inside the scratch directory.
    pub fn iolab(&self, args: &[&str]) -> Output {
        command().args(args).env("IOLAB_DB", self.db()).current_dir(self.path()).output().unwrap()
    }
    /// As [`Scratch::iolab`], with more environment variables.
    pub fn iolab_env(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let mut c = command();
        c.args(args).env("IOLAB_DB", self.db()).current_dir(self.path());
        c.envs(vars.iter().copied()).output().unwrap()
    }
    /// Runs `iolab run ARGS --json --dir SCRATCH` and returns the parsed document; panics
    /// with stderr if it fails.
    pub fn run_json(&self, args: &[&str]) -> Value {
        let dir = self.path().to_str().unwrap().to_string();
        let mut all = vec!["run", "--json", "--quiet"];
        if !args.contains(&"--targets") {
            all.extend(["--dir", dir.as_str()]);
        }
        all.extend_from_slice(args);
        let out = self.iolab(&all);
        assert!(out.status.success(), "iolab {all:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
    /// Entries of the scratch directory other than the store files.
    pub fn leftovers(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("store.db"))
            .collect();
        v.sort();
        v
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The phases of point 0.
pub fn phases(doc: &Value) -> &Vec<Value> {
    doc["points"][0]["phases"].as_array().unwrap()
}

/// The bytes a write phase must leave in file `gid`: each block is the seeded fill with the
/// offset stamps of iolab::plan::fill.
pub fn expected_file(seed: u64, gid: u32, size: u64, bs: u64) -> Vec<u8> {
    let mut block = vec![0u8; bs as usize];
    iolab::plan::fill::fill(&mut block, seed);
    let salt = iolab::plan::fill::file_salt(seed, gid);
    let mut out = Vec::with_capacity(size as usize);
    let mut off = 0;
    while off < size {
        iolab::plan::fill::stamp(&mut block, salt, off);
        out.extend_from_slice(&block);
        off += bs;
    }
    out
}

/// The kept work directory of a run (`--keep`) under `target`.
pub fn work_dir(target: &Path, run_id: &str) -> PathBuf {
    target.join(format!(".iolab-{run_id}"))
}

/// Pids of the live children of `parent` (from /proc/*/stat), in pid order.
pub fn children_of(parent: u32) -> Vec<u32> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let mut f = rest.split(' ');
        let state = f.next().unwrap();
        let ppid: u32 = f.next().unwrap().parse().unwrap();
        if ppid == parent && state != "Z" {
            out.push(pid);
        }
    }
    out.sort();
    out
}

/// `reproduce --list` with its wrapped entries (`why unavailable:`, `notes:`: an id, then lines
/// indented 21 spaces) joined back into one line each.
pub fn unwrap_entries(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        match line.strip_prefix(&" ".repeat(21)) {
            Some(rest) if out.ends_with('\n') && !rest.starts_with(' ') => {
                out.pop();
                out.push(' ');
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A size as progress lines print it (`1.40 GiB`), in bytes.
pub fn size_of(shown: &str) -> f64 {
    let (n, unit) = shown.trim().split_once(' ').unwrap_or((shown, "B"));
    let mult = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        u => panic!("unit {u} in {shown}"),
    };
    n.parse::<f64>().unwrap() * mult
}
