//! The honesty flags a phase can carry: their kinds, and what each means, for the legends
//! under tables.

use super::{COLD_MAX_RESIDENT, WARM_MIN_RESIDENT};

/// Every kind of flag a phase can carry (what its text starts with), for legends.
pub const FLAG_KINDS: [&str; 13] = [
    "not cold",
    "cold unverified",
    "not warm",
    "cache not controlled",
    "noisy",
    "trace writer behind",
    "no I/O (null engine)",
    "layout not as written",
    "workers did not overlap",
    "stalled",
    "oversubscribed",
    "re-read",
    "behind schedule",
];

/// The kind of a flag (one of [`FLAG_KINDS`]); None for a flag of no known kind.
pub fn flag_kind(flag: &str) -> Option<&'static str> {
    FLAG_KINDS.iter().copied().find(|k| flag.starts_with(k))
}

/// What a flag means, from its kind; None for a flag of no known kind.
pub fn flag_meaning(flag: &str) -> Option<String> {
    let pct = |f: f64| format!("{:.0}%", f * 100.0);
    Some(match flag_kind(flag)? {
        "not cold" => {
            format!("over {} of the files' pages were in memory before a cold phase", pct(COLD_MAX_RESIDENT))
        }
        "not warm" => {
            format!("under {} of the files' pages were in memory before a warm phase", pct(WARM_MIN_RESIDENT))
        }
        "cold unverified" => format!(
            "a cold metadata phase: after its directory entries and inodes were dropped, the kernel still held more than {} of its names' worth, so its counts cannot show the names were dropped (drop_caches frees every unused one)",
            pct(crate::target::ns_cache::COLD_MAX_CACHED)
        ),
        "cache not controlled" => "an asis phase: the cache was left as the phase before left it".into(),
        "noisy" => "the devices did more I/O during the phase than the phase accounts for".into(),
        "trace writer behind" => "workers waited for trace buffers, which slowed their ops".into(),
        "layout not as written" => {
            "with alloc = block, FIEMAP shows the files' blocks not placed in the order they were written"
                .into()
        }
        "workers did not overlap" => format!(
            "all the workers were running together for less than {} of the phase (overlap, from their own clocks): the sum of their rates (max_SAR) is no rate the storage delivered at once; read agg",
            pct(super::timing::MIN_OVERLAP)
        ),
        "stalled" => format!(
            "a worker made no progress for over {} s, and over {} times its typical op (its rate over time): the process was stopped or descheduled, or the device froze; the phase's rates include the gap",
            super::timing::STALL_MIN_NS / 1_000_000_000,
            super::timing::STALL_FACTOR
        ),
        "no I/O (null engine)" => "the null engine moves no data: rates measure iolab's own loop".into(),
        "oversubscribed" => "a host ran more MPI ranks than it has CPUs: ranks waiting in MPI calls poll for messages and take CPU from those doing I/O, so the rates measure the CPU scheduler as much as the storage".into(),
        "re-read" => format!(
            "over {} of a cold phase's bytes were of blocks it had already read or written (a pass after the first under runtime, a repeat of an order that draws), which the page cache may serve: those bytes are not cold",
            pct(COLD_MAX_RESIDENT)
        ),
        "behind schedule" => "a rate-limited worker issued ops late (a stall, or a device or CPU too slow for the rate): they went back to back once it could, and their response times count the wait".into(),
        _ => return None,
    })
}

/// What to do about a flag, in one line, from its kind; None for a flag of no known kind.
pub fn flag_advice(flag: &str) -> Option<&'static str> {
    Some(match flag_kind(flag)? {
        "not cold" => {
            "make the files larger than memory (--size 2xRAM), add --drop-caches (root), or use --direct"
        }
        "not warm" => {
            "the files did not stay in memory: use a smaller --size, or find what else used the memory"
        }
        "cache not controlled" => {
            "give the phase a cache state (read:cold, read:warm) to measure a known one"
        }
        "noisy" => {
            "other I/O hit the device: rerun on a quiet machine, or wait before each run (--settle 5s)"
        }
        "trace writer behind" => "trace fewer ops (--latency histogram), or keep the store on a faster disk",
        "layout not as written" => {
            "the file system placed blocks itself: see docs/layouts.md (alloc = block)"
        }
        "workers did not overlap" => {
            "read agg, not max_SAR; or give each worker more to do (--size) and start them together"
        }
        "stalled" => {
            "rerun: something stopped the run for seconds (a paused process, a busy host, a frozen disk)"
        }
        "cold unverified" => {
            "other work held directory entries: rerun on a quieter machine, or with more items (--md-files)"
        }
        "no I/O (null engine)" => {
            "choose an engine that moves data (--engine psync; iolab engines lists them)"
        }
        "oversubscribed" => "run at most a rank per CPU on each host, or mpirun --mca mpi_yield_when_idle 1",
        "re-read" => "one cold pass: --stonewall, or a --size above what the runtime reads; or --direct",
        "behind schedule" => {
            "read the response times: they count the wait; a lower rate may keep the schedule"
        }
        _ => return None,
    })
}

/// The flag of a phase whose workers waited for their trace writer, if any did.
pub(super) fn trace_wait_flag(samples: &[crate::worker::WorkerSample]) -> Option<String> {
    let waited = samples.iter().filter_map(|s| s.trace.as_ref()).map(|t| t.waited_ns).max()?;
    (waited > 0).then(|| {
        format!("trace writer behind: a worker waited {:.1} ms for trace buffers", waited as f64 / 1e6)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CacheCheck;
    use crate::spec::CachePolicy;

    #[test]
    fn every_flag_has_a_meaning() {
        let dev =
            crate::env::envctl::DeviceIo { device: "vda".into(), read_bytes: 1 << 30, ..Default::default() };
        let mut flags = vec![
            crate::env::envctl::judge_noise(false, 0, 0, &[dev]).unwrap(),
            format!("{} (2 of 5 runs)", CacheCheck::judge(CachePolicy::Cold, 0.2, true).flags[0]),
        ];
        flags.extend(CacheCheck::judge(CachePolicy::Warm, 0.5, true).flags);
        flags.extend(CacheCheck::judge(CachePolicy::Asis, 0.5, true).flags);
        flags.extend(CacheCheck::judge(CachePolicy::Cold, 0.0, false).flags);
        flags.push("workers did not overlap: all 4 ran together for 12% of the phase".into());
        flags.push("stalled: no progress for 3.00 s from 1.00 s into the phase (worker 0)".into());
        flags.push("oversubscribed: 5 MPI ranks on the 2 CPUs of h1".into());
        flags.push("re-read: 96.9% of its bytes were of blocks it had already moved".into());
        flags.push("behind schedule: ops up to 203 ms late".into());
        let dropped = crate::results::NsState { names: 10, cached_at_most: Some(1.0), ..Default::default() };
        flags.extend(dropped.flags(CachePolicy::Cold));
        let meanings: Vec<String> =
            flags.iter().map(|f| flag_meaning(f).unwrap_or_else(|| panic!("{f}"))).collect();
        for f in &flags {
            let advice = flag_advice(f).unwrap_or_else(|| panic!("{f}"));
            assert!(advice.len() <= 100, "one short line: {advice}");
        }
        assert_eq!(flag_advice("unheard of: 3"), None);
        assert!(meanings[0].starts_with("the devices did more I/O"), "{meanings:?}");
        assert!(meanings[1].starts_with("over 5% of the files' pages"), "{meanings:?}");
        assert!(meanings[2].starts_with("under 95%"), "{meanings:?}");
        assert!(meanings[4].starts_with("the null engine"), "{meanings:?}");
        assert!(meanings[5].starts_with("all the workers were running together for less than 50%"));
        assert!(meanings[6].starts_with("a worker made no progress for over 1 s"), "{meanings:?}");
        assert!(meanings[7].starts_with("a host ran more MPI ranks than it has CPUs"), "{meanings:?}");
        assert!(flag_advice(&flags[7]).unwrap().contains("a rank per CPU"));
        assert!(flag_advice(&flags[5]).unwrap().starts_with("read agg"));
        assert!(flag_advice(&flags[6]).unwrap().starts_with("rerun"));
        assert_eq!(flag_meaning("unheard of: 3"), None);
        // Each kind says its own meaning and advice, never another kind's.
        let advice: std::collections::BTreeSet<_> =
            FLAG_KINDS.iter().map(|k| flag_advice(k).unwrap()).collect();
        let meaning: std::collections::BTreeSet<_> =
            FLAG_KINDS.iter().map(|k| flag_meaning(k).unwrap()).collect();
        assert_eq!((advice.len(), meaning.len()), (FLAG_KINDS.len(), FLAG_KINDS.len()));
        assert!(flag_advice("cold unverified: 9 directory entries").unwrap().contains("--md-files"));
        let layout = "layout not as written: 4-way interleaved write, 7 of 511 block boundaries alternate";
        assert!(flag_meaning(layout).unwrap().contains("FIEMAP"));
    }
}
