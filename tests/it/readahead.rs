//! Periods on a real device: with a block device's read-ahead set to R KiB, a cold sequential
//! read of 4 KiB blocks pays once per read-ahead window, and the period detector must find
//! that window (R / 4 ops) first, for several R, through C4's preset and its findings.

use std::path::PathBuf;

use crate::rig::*;
use crate::skip;
use crate::util::*;

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
/// the first window is 4 pages, each next one 4 or 2 times the last, up to the device's
/// `read_ahead_kb`; from then on every window is that size. Each window is asked for when the
/// reader reaches its marker, the window's first page, so the read that reaches it pays for
/// issuing the next one (allocating its pages and submitting them): one spike every
/// read_ahead_kb / 4 reads. The kernel sets the answer: for 128, 384 (not a power of two),
/// 2048 and 8192 KiB, the period must be 32, 96, 512 and 2048 reads.
///
/// The file system is ext4 on a loop device whose image lives in a tmpfs, so the device costs
/// the same for every window (a virtio disk adds waits of its own, on some windows and not
/// others; a throttle dispatches in bursts). Each file holds at least 12 windows. C4's
/// findings are checked too: the note of its period finding names the read-ahead the host
/// facts recorded for the loop device, and where all three repetitions find the window the
/// finding (period x 4 KiB / read-ahead within 0.9..1.1) holds.
///
/// The spike of a small window is some 30 us over reads of a few us, so other tests' load on
/// the CPUs can bury it in one repetition: the test runs alone, after the suite, and wants the
/// window first in at least 2 of 3 repetitions at every setting.
#[test]
#[ignore = "times reads to the microsecond: scripts/test.sh runs it alone, after the suite"]
fn the_read_ahead_window_is_the_period_at_every_setting() {
    if !is_root() {
        skip!("mounting a tmpfs and a loop device needs root");
    }
    let s = Scratch::new();
    let _tmpfs = match tmpfs(&s.path().join("ram"), "300m") {
        Ok(m) => m,
        Err(e) => skip!("cannot mount a tmpfs: {e}"),
    };
    let fs = match image_fs(&s.path().join("ram"), 256, &["mkfs.ext4", "-q", "-b", "4096"], "") {
        Ok(fs) => fs,
        Err(e) => skip!("cannot make a loop-mounted ext4: {e}"),
    };
    let dev = fs.dev.dev.trim_start_matches("/dev/").to_string();
    let ra_file = PathBuf::from(format!("/sys/block/{dev}/queue/read_ahead_kb"));
    let dir = fs.mount.path.to_str().unwrap();
    let mut missed = vec![];
    for (ra_kib, size) in [(128u64, "16MiB"), (384, "24MiB"), (2048, "32MiB"), (8192, "96MiB")] {
        let window = ra_kib / 4;
        let _guard = match ReadAhead::set(ra_file.clone(), ra_kib) {
            Ok(g) => g,
            Err(why) => skip!("cannot set read-ahead: {why}"),
        };
        let size_arg = format!("size={size}");
        let args = ["reproduce", "C4", "--dir", dir, "--set", &size_arg, "--json", "--quiet", "--no-store"];
        let out = s.iolab(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let reps = phases(&doc)[0]["repetitions"].as_array().unwrap().clone();
        assert_eq!(reps.len(), 3);
        let mut found = 0;
        for r in &reps {
            assert_eq!(r["status"], "complete", "{r}");
            let periods = r["workers"][0]["periods"].as_array().unwrap();
            let first: Vec<(u64, u64, f64)> = periods
                .iter()
                .map(|p| {
                    (
                        p["every_ops"].as_u64().unwrap(),
                        p["at_op"].as_u64().unwrap(),
                        p["time_share"].as_f64().unwrap(),
                    )
                })
                .collect();
            println!("read-ahead {ra_kib} KiB, 4 KiB reads: periods (every, at, time share) {first:?}");
            if first.first().is_some_and(|p| p.0 == window) {
                assert!(periods[0]["excess_ns"].as_f64().unwrap() > 0.0, "a spike, not a dip: {periods:?}");
                found += 1;
            }
        }
        if found < 2 {
            missed.push(format!("read-ahead {ra_kib} KiB: a period of {window} reads first in {found} of 3"));
        }
        // The finding names the read-ahead the host facts recorded, in reads.
        let finding = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["a"]["figure"] == "period_readahead")
            .expect("C4's read-ahead finding");
        let note = finding["a"]["note"].as_str().unwrap();
        let want = format!("read-ahead of /dev/{dev} {ra_kib} KiB = {window} ops of 4 KiB");
        assert!(note.contains(&want), "{note}");
        if found == 3 {
            assert_eq!(finding["verdict"], "holds", "{finding}");
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("; "));
}
