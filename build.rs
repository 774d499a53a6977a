//! Records the git revision iolab was built from (stored with every result).
use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=IOLAB_GIT_REV={rev}");
    println!("cargo:rerun-if-changed=build.rs");
    // What moves with HEAD, where the repository keeps it: in a worktree `.git` is a file and
    // HEAD lies in the main repository's worktrees/ folder. A path that does not exist would
    // make cargo run this script, and build iolab again, every time.
    let dir = git(&["rev-parse", "--git-dir"]);
    let common = git(&["rev-parse", "--git-common-dir"]);
    let watched = [dir.map(|d| format!("{d}/HEAD")), common.map(|d| format!("{d}/refs/heads"))];
    for path in watched.into_iter().flatten().filter(|p| Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
}
