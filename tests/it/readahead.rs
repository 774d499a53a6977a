//! Periods on a real device: with the block device's read-ahead set to 128 KiB, a cold
//! sequential read of 4 KiB blocks stalls once per read-ahead window, and the period detector
//! must find that window (32 ops).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::util::*;

/// The read-ahead setting of the block device holding `dir` (its parent disk's, for a
/// partition), or why there is none.
fn read_ahead_file(dir: &Path) -> Result<PathBuf, String> {
    let dev = std::fs::metadata(dir).map_err(|e| format!("stat {}: {e}", dir.display()))?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let sys = sys
        .canonicalize()
        .map_err(|e| format!("{} ({major}:{minor} is no block device?): {e}", sys.display()))?;
    let disk = if sys.join("partition").exists() { sys.parent().unwrap().to_path_buf() } else { sys };
    let f = disk.join("queue/read_ahead_kb");
    if f.exists() { Ok(f) } else { Err(format!("{} does not exist", f.display())) }
}

/// Sets a device's read-ahead and puts the old value back when dropped (also on a panic).
struct ReadAhead {
    file: PathBuf,
    old: String,
}

impl ReadAhead {
    fn set(file: PathBuf, kib: u64) -> Result<ReadAhead, String> {
        let old = std::fs::read_to_string(&file).map_err(|e| format!("read {}: {e}", file.display()))?;
        std::fs::write(&file, kib.to_string()).map_err(|e| format!("write {}: {e}", file.display()))?;
        let now = std::fs::read_to_string(&file).unwrap_or_default();
        let guard = ReadAhead { file, old: old.trim().to_string() };
        if now.trim() != kib.to_string() {
            return Err(format!("{} reads {} after writing {kib}", guard.file.display(), now.trim()));
        }
        Ok(guard)
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.file, &self.old) {
            eprintln!("could not restore {} to {}: {e}", self.file.display(), self.old);
        }
    }
}

/// Linux read-ahead (mm/readahead.c) on a sequential read of 1-page requests from offset 0:
/// the first window is 4 pages, each next one 4 or 2 times the last (4, 8, 16, 32 pages at a
/// 32-page maximum), then every window is the maximum, 128 KiB = 32 pages. Each window is
/// asked for when the reader reaches its marker, the first page of the window before, so
/// from op 32 on the read that reaches a window's first page (op 32 m) pays for issuing the
/// next one, and waits if the device has not delivered it yet: one spike every 32 ops, at
/// op 0 of the cycle. A 64 MiB file is 16384 reads, 512 windows. Some windows cost more
/// than others (on the development machine's virtio disk every 8th window, 1 MiB, stalled
/// about twice as long), so a multiple of 32 may be reported too, always at a window's
/// first read.
#[test]
#[ignore = "measurement on the real device, sensitive to other I/O: run alone with `cargo test --test it -- --ignored readahead::`"]
fn a_128_kib_read_ahead_shows_as_a_period_of_32_reads() {
    let s = Scratch::new();
    let file = match read_ahead_file(s.path()) {
        Ok(f) => f,
        Err(why) => {
            eprintln!("skipping a_128_kib_read_ahead_shows_as_a_period_of_32_reads: no block device: {why}");
            return;
        }
    };
    let _guard = match ReadAhead::set(file, 128) {
        Ok(g) => g,
        Err(why) => {
            eprintln!(
                "skipping a_128_kib_read_ahead_shows_as_a_period_of_32_reads: cannot set read-ahead: {why}"
            );
            return;
        }
    };
    let doc = s.run_json(&["--op", "read:cold", "--bs", "4KiB", "--size", "64MiB", "--trace", "--reps", "2"]);
    let reps = phases(&doc)[0]["repetitions"].as_array().unwrap().clone();
    assert_eq!(reps.len(), 2);
    for r in &reps {
        assert_eq!(r["status"], "complete", "{r}");
        assert_eq!(r["ops"], 16384);
        let periods = r["workers"][0]["periods"].as_array().unwrap();
        eprintln!("read-ahead 128 KiB, 4 KiB reads: periods {periods:?}");
        let window = periods.iter().find(|p| p["every_ops"] == 32);
        let window = window.unwrap_or_else(|| panic!("no period of 32 reads: {periods:?}"));
        assert_eq!(window["at_op"], 0, "{periods:?}");
        assert!(window["excess_ns"].as_f64().unwrap() > 0.0, "a spike, not a dip: {periods:?}");
        // Any other period is a longer pattern of the same windows: a multiple of 32 reads,
        // peaking at a window's first read.
        for p in periods {
            let (every, at) = (p["every_ops"].as_u64().unwrap(), p["at_op"].as_u64().unwrap());
            assert!(every % 32 == 0 && at % 32 == 0, "{p} is not on the windows: {periods:?}");
        }
    }
}
