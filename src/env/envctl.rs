//! Control and record the machine's state around each run: an optional settle time and
//! memory-priming step before it, and, during each phase, the load average and the target
//! devices' I/O counters (/proc/diskstats), so a run during which other I/O hit the device
//! is flagged `noisy`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::env::host::TargetFacts;
use crate::env::monitor::Monitor;
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::units::fmt_size;

/// What the machine was doing around one repetition of one phase. Settle and priming happen
/// once per run and are repeated on each of its phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnv {
    /// Time actually slept before the run.
    pub settle_ns: u64,
    /// Bytes touched and freed just before the run, and the time that took.
    pub prime_memory_bytes: u64,
    pub prime_ns: u64,
    /// 1-minute load average (/proc/loadavg) when the phase started and ended.
    pub load_avg_1m_start: f64,
    pub load_avg_1m_end: f64,
    /// I/O each target device did while the phase ran (/proc/diskstats deltas).
    pub devices: Vec<DeviceIo>,
}

/// One block device's I/O during a phase.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceIo {
    pub device: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
}

/// Sleeps `ns` in short steps, stopping early (as interrupted) if the monitor reports a
/// signal. Returns the time slept.
pub fn settle(ns: u64, monitor: &dyn Monitor) -> Result<u64> {
    let start = now_ns();
    while now_ns() - start < ns {
        if let Some(sig) = monitor.tick(0) {
            return Err(Error::Interrupted(sig));
        }
        let left = ns - (now_ns() - start).min(ns);
        std::thread::sleep(std::time::Duration::from_nanos(left.min(50_000_000)));
    }
    Ok(now_ns() - start)
}

/// What priming did: its time and the resident memory of this process with the primed
/// buffer still held (so a reader can see the pages were really touched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Primed {
    pub ns: u64,
    pub resident_bytes: u64,
}

/// Bytes priming touches between two looks at the stop flag: a few milliseconds of page faults.
const PRIME_STEP: usize = 16 << 20;

/// Touches `bytes` of fresh memory (one write per page), then frees it. On virtual machines
/// memory the guest freed is slow to reuse; priming just before a run puts every run in the
/// same state. A SIGINT or SIGTERM stops it within one step of [`PRIME_STEP`] bytes
/// (`Interrupted`); memory the system refuses is an error, never an abort.
pub fn prime_memory(bytes: u64) -> Result<Primed> {
    if bytes == 0 {
        return Ok(Primed { ns: 0, resident_bytes: 0 });
    }
    if let Some(avail) = crate::env::memory::available()
        && bytes > avail.bytes / 10 * 9
    {
        return Err(Error::Run(format!(
            "prime_memory = {}: only {} of memory is available now ({})",
            fmt_size(bytes),
            fmt_size(avail.bytes),
            avail.source
        )));
    }
    let start = now_ns();
    let refused = |e: std::io::Error| Error::Run(format!("prime_memory = {}: {e}", fmt_size(bytes)));
    let len = usize::try_from(bytes).map_err(|_| refused(std::io::ErrorKind::OutOfMemory.into()))?;
    let mut mem = crate::env::sys::AnonMap::new(len).map_err(refused)?;
    let mut at = 0;
    while at < len {
        crate::env::signals::check()?;
        let end = len.min(at + PRIME_STEP);
        mem.touch(at, end);
        at = end;
    }
    std::hint::black_box(&mut mem);
    let resident_bytes = resident_bytes().unwrap_or(0);
    drop(mem);
    Ok(Primed { ns: now_ns() - start, resident_bytes })
}

/// This process's resident set size (/proc/self/statm).
pub fn resident_bytes() -> Option<u64> {
    let text = super::sys::read_kernel_file("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * crate::env::sys::page_size() as u64)
}

/// The 1-minute load average, or NaN if /proc/loadavg cannot be read.
pub fn load_avg_1m() -> f64 {
    super::sys::read_kernel_file("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// Cumulative counters of one device from /proc/diskstats (sectors are 512 bytes there,
/// whatever the device's own sector size).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_sectors: u64,
    pub writes: u64,
    pub write_sectors: u64,
}

/// Parses /proc/diskstats text into (device name, counters).
pub fn parse_diskstats(text: &str) -> Vec<(String, DiskCounters)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            Some((
                f.get(2)?.to_string(),
                DiskCounters { reads: n(3)?, read_sectors: n(5)?, writes: n(7)?, write_sectors: n(9)? },
            ))
        })
        .collect()
}

fn counters(devices: &[String]) -> Vec<DiskCounters> {
    let all =
        super::sys::read_kernel_file("/proc/diskstats").map(|t| parse_diskstats(&t)).unwrap_or_default();
    devices.iter().map(|d| all.iter().find(|(n, _)| n == d).map(|(_, c)| *c).unwrap_or_default()).collect()
}

/// The block devices (names as in /proc/diskstats) holding the target directories, once each.
pub fn devices_of(dirs: &[PathBuf]) -> Vec<String> {
    devices_in(&mut vec![], dirs)
}

/// [`devices_of`], with the facts of directories already read in `known` (an experiment's host
/// facts): only a directory `known` lacks is read, and added to it.
pub fn devices_in(known: &mut Vec<TargetFacts>, dirs: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for d in dirs {
        let i = known.iter().position(|t| t.dir == *d).unwrap_or_else(|| {
            known.push(crate::env::host::target_facts(d));
            known.len() - 1
        });
        if let Some(dev) = &known[i].device {
            let name = dev.trim_start_matches("/dev/").to_string();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Writes back what earlier phases (and the store, and the spool of results in the temporary
/// directory) left dirty on the file systems of `dirs` (data, and metadata such as allocation
/// bitmaps that ext4 writes back some 30 s later), each file system once, so
/// the device I/O seen during a phase is the phase's own or another process's, and the noise
/// judgement ([`judge_noise`]) does not blame a phase for its predecessors. Before the phase's
/// clock; a failure only weakens that judgement.
pub fn settle_writeback(dirs: impl IntoIterator<Item = PathBuf>) {
    let mut seen = vec![];
    for d in dirs {
        let dev = std::fs::metadata(&d).map(|m| std::os::unix::fs::MetadataExt::dev(&m)).ok();
        if !seen.contains(&dev) {
            seen.push(dev);
            let _ = crate::env::sys::syncfs(&d);
        }
    }
}

/// Taken when a phase starts; [`PhaseProbe::finish`] gives what happened meanwhile.
pub struct PhaseProbe {
    devices: Vec<String>,
    start: Vec<DiskCounters>,
    load_start: f64,
}

impl PhaseProbe {
    pub fn start(devices: &[String]) -> PhaseProbe {
        PhaseProbe { devices: devices.to_vec(), start: counters(devices), load_start: load_avg_1m() }
    }

    /// The load average and device I/O since [`PhaseProbe::start`].
    pub fn finish(self) -> RunEnv {
        let end = counters(&self.devices);
        let devices = self
            .devices
            .iter()
            .zip(self.start.iter().zip(&end))
            .map(|(name, (a, b))| DeviceIo {
                device: name.clone(),
                read_bytes: b.read_sectors.saturating_sub(a.read_sectors) * 512,
                write_bytes: b.write_sectors.saturating_sub(a.write_sectors) * 512,
                read_ios: b.reads.saturating_sub(a.reads),
                write_ios: b.writes.saturating_sub(a.writes),
            })
            .collect();
        RunEnv {
            load_avg_1m_start: self.load_start,
            load_avg_1m_end: load_avg_1m(),
            devices,
            ..Default::default()
        }
    }
}

/// Device I/O the file system may add to a phase's own: 10% plus 1 MiB, and for writes
/// 64 KiB per commit call (ext4 here writes a journal block or more per fdatasync).
pub fn allowance(own_bytes: u64, commit_calls: u64) -> u64 {
    own_bytes / 10 + (1 << 20) + commit_calls * (64 << 10)
}

/// The `noisy` flag of a phase that moved `own_bytes` (read or written) with `commit_calls`
/// commits, if its devices did more I/O than it accounts for (plus [`allowance`]).
pub fn judge_noise(write: bool, own_bytes: u64, commit_calls: u64, devices: &[DeviceIo]) -> Option<String> {
    if devices.is_empty() {
        return None;
    }
    let read: u64 = devices.iter().map(|d| d.read_bytes).sum();
    let written: u64 = devices.iter().map(|d| d.write_bytes).sum();
    let (own_read, own_write) = if write { (0, own_bytes) } else { (own_bytes, 0) };
    let too_much = |dev: u64, own: u64, calls: u64| dev > own + allowance(own, calls);
    if too_much(read, own_read, 0) || too_much(written, own_write, commit_calls) {
        let names: Vec<&str> = devices.iter().map(|d| d.device.as_str()).collect();
        return Some(format!(
            "noisy: {} read {}, wrote {} (this phase {} {})",
            names.join("+"),
            fmt_size(read),
            fmt_size(written),
            if write { "wrote" } else { "read" },
            fmt_size(own_bytes)
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISKSTATS: &str = "\
 254       0 vda 64810 7087 15132154 138283 13824 19422 14727720 81506 0 24912 221858 7202 40 10621440 1942 1858 126
   7       0 loop0 12 0 24 1 0 0 0 0 0 4 1 0 0 0 0 0 0
";

    #[test]
    fn parses_diskstats() {
        let d = parse_diskstats(DISKSTATS);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].0, "vda");
        assert_eq!(
            d[0].1,
            DiskCounters { reads: 64810, read_sectors: 15_132_154, writes: 13824, write_sectors: 14_727_720 }
        );
        assert_eq!(d[1].1.read_sectors, 24);
    }

    fn dev(read_mib: u64, write_mib: u64) -> Vec<DeviceIo> {
        vec![DeviceIo {
            device: "vda".into(),
            read_bytes: read_mib << 20,
            write_bytes: write_mib << 20,
            ..Default::default()
        }]
    }

    #[test]
    fn noise_is_device_io_beyond_the_phase_and_its_allowance() {
        // A 64 MiB write with one commit may add 10% + 1 MiB + 64 KiB: up to 71.46 MiB is quiet.
        assert_eq!(judge_noise(true, 64 << 20, 1, &dev(0, 71)), None);
        assert!(judge_noise(true, 64 << 20, 1, &dev(0, 72)).is_some());
        // 2048 commits (4 KiB each, 8 MiB): journal writes are allowed for (8 + 0.8 + 1 + 128 MiB).
        assert_eq!(judge_noise(true, 8 << 20, 2048, &dev(0, 16)), None);
        // Reads during a write phase are someone else's.
        assert_eq!(
            judge_noise(true, 64 << 20, 1, &dev(2, 64)).unwrap(),
            "noisy: vda read 2 MiB, wrote 64 MiB (this phase wrote 64 MiB)"
        );
        // A cold read of 64 MiB reads 64 MiB; another 16 MiB is noise.
        assert_eq!(judge_noise(false, 64 << 20, 0, &dev(64, 0)), None);
        assert!(judge_noise(false, 64 << 20, 0, &dev(80, 0)).is_some());
        // A write of 16 MiB during a warm read is noise; no device known, no judgement.
        assert!(judge_noise(false, 64 << 20, 0, &dev(0, 16)).is_some());
        assert_eq!(judge_noise(false, 0, 0, &[]), None);
    }

    #[test]
    fn priming_touches_the_memory() {
        let p = prime_memory(64 << 20).unwrap();
        assert!(p.resident_bytes >= 64 << 20, "resident {} while holding 64 MiB", p.resident_bytes);
        assert!(p.ns > 0);
        assert_eq!(prime_memory(0).unwrap(), Primed { ns: 0, resident_bytes: 0 });
    }

    #[test]
    fn load_average_is_read() {
        let l = load_avg_1m();
        assert!(l.is_finite() && l >= 0.0, "{l}");
    }

    #[test]
    fn probe_sees_this_machine() {
        let devices = devices_of(&[std::env::temp_dir()]);
        let env = PhaseProbe::start(&devices).finish();
        assert_eq!(env.devices.len(), devices.len());
        assert!(env.load_avg_1m_end.is_finite());
    }
}
