//! A worker's schedule inside its timed loop: a rate-limited phase's planned start of every op
//! (evenly spaced, or a seeded Poisson process, from the worker's start), the wait until it
//! (asleep while far, spinning the last stretch), how far and how long the worker fell behind
//! it; and think time between ops. An op whose planned start has passed is issued at once:
//! after a stall the late ops go back to back until the worker is on schedule again, and each
//! one's response time (from its planned start) says how late it was. No allocation, no lock.

use serde::{Deserialize, Serialize};

use crate::env::sys::now_ns;
use crate::plan::draw;
use crate::spec::{RateLimit, RateProcess, ThinkTime};

/// Sleeps end this far before the time waited for; the rest is spun (a sleep overshoots by the
/// kernel's timer slack, 50 us by default).
const SPIN_NS: u64 = 200_000;
/// The longest single sleep, so that a stop is noticed while waiting for a slow schedule.
const SLEEP_MAX_NS: u64 = 20_000_000;

/// How far a worker fell behind its schedule: an op is late when it is issued more than
/// `threshold_ns` after its planned start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behind {
    /// The most an op was late, ns.
    pub max_ns: u64,
    /// The time spent behind: from the planned start of the first late op of each stretch to
    /// the issue of the first op on time after it (or the last op), summed, ns.
    pub ns: u64,
    /// Ops issued late.
    pub late_ops: u64,
    /// The lateness that makes an op late: the larger of 1 ms and two planned gaps.
    pub threshold_ns: u64,
}

/// A worker's schedule and think time.
pub struct Pace {
    rate: Option<RateLimit>,
    poisson: bool,
    seed: u64,
    /// Planned start of the next op, ns after the worker's start (fractional, so that gaps of
    /// a fraction of a ns add up).
    next: f64,
    start_ns: u64,
    think: Option<ThinkTime>,
    behind: Behind,
    /// The planned start of the first late op of the stretch the worker is in, if it is behind.
    since: Option<u64>,
    last_issue: u64,
}

impl Pace {
    /// The schedule of a worker whose clock started at `start_ns`; None when its phase has
    /// neither a rate limit nor think time.
    pub fn new(
        rate: Option<RateLimit>,
        process: RateProcess,
        think: Option<ThinkTime>,
        seed: u64,
        op_len: u64,
        start_ns: u64,
    ) -> Option<Pace> {
        if rate.is_none() && think.is_none() {
            return None;
        }
        let gap = rate.map_or(0.0, |r| r.gap_ns(op_len));
        Some(Pace {
            rate,
            poisson: process == RateProcess::Poisson,
            seed: draw::stream(seed, draw::SCHEDULE),
            next: 0.0,
            start_ns,
            think,
            behind: Behind { threshold_ns: (2.0 * gap).max(1e6) as u64, ..Behind::default() },
            since: None,
            last_issue: start_ns,
        })
    }

    /// Whether ops have planned starts.
    #[inline(always)]
    pub fn paced(&self) -> bool {
        self.rate.is_some()
    }

    /// The planned start of the next op, CLOCK_MONOTONIC ns.
    #[inline(always)]
    pub fn planned(&self) -> u64 {
        self.start_ns + self.next as u64
    }

    /// Waits for the next op's planned start (returning at once when it has passed, or when
    /// `stop` says so) and notes how late it is issued; returns (issue time, planned start).
    #[inline]
    pub fn before(&mut self, stop: &dyn Fn() -> bool) -> (u64, u64) {
        if self.rate.is_none() {
            let t = now_ns();
            return (t, t);
        }
        let planned = self.planned();
        let now = wait_until(planned, stop);
        self.issued(now, planned);
        (now, planned)
    }

    /// Op `n` (counted from 0) of `len` bytes was issued: the next op's planned start.
    #[inline]
    pub fn advance(&mut self, n: u64, len: u64) {
        if let Some(r) = self.rate {
            let gap = r.gap_ns(len);
            self.next += if self.poisson { gap * -(1.0 - draw::unit(self.seed, n)).ln() } else { gap };
        }
    }

    /// Notes an op issued at `now`, planned for `planned`.
    #[inline(always)]
    pub fn issued(&mut self, now: u64, planned: u64) {
        let late = now.saturating_sub(planned);
        self.last_issue = now;
        if late > self.behind.threshold_ns {
            self.behind.late_ops += 1;
            self.behind.max_ns = self.behind.max_ns.max(late);
            self.since.get_or_insert(planned);
        } else if let Some(s) = self.since.take() {
            self.behind.ns += now.saturating_sub(s);
        }
    }

    /// After op `n` (counted from 0): the think time, if one is due; returns whether it thought
    /// (the loop's clock must then be read again).
    #[inline]
    pub fn think(&mut self, n: u64, stop: &dyn Fn() -> bool) -> bool {
        let Some(t) = self.think else { return false };
        if (n + 1) % t.blocks != 0 {
            return false;
        }
        let from = now_ns();
        let spun = from + t.spin_ns;
        while t.spin_ns > 0 && now_ns() < spun {
            std::hint::spin_loop();
        }
        let end = from + t.ns;
        while !stop() {
            let now = now_ns();
            if now >= end {
                break;
            }
            std::thread::sleep(std::time::Duration::from_nanos((end - now).min(SLEEP_MAX_NS)));
        }
        true
    }

    /// How far the worker fell behind (None when not rate-limited).
    pub fn finish(mut self) -> Option<Behind> {
        self.rate?;
        if let Some(s) = self.since.take() {
            self.behind.ns += self.last_issue.saturating_sub(s);
        }
        Some(self.behind)
    }
}

/// Waits until CLOCK_MONOTONIC reaches `t` (asleep while more than [`SPIN_NS`] is left, then
/// spinning), or until `stop` says so; returns the clock then.
#[inline]
pub fn wait_until(t: u64, stop: &dyn Fn() -> bool) -> u64 {
    let mut now = now_ns();
    while now < t {
        let left = t - now;
        if left > SPIN_NS {
            if stop() {
                return now;
            }
            std::thread::sleep(std::time::Duration::from_nanos((left - SPIN_NS).min(SLEEP_MAX_NS)));
        } else {
            std::hint::spin_loop();
        }
        now = now_ns();
    }
    now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_even_or_poisson_and_lateness_is_counted() {
        let mut p = Pace::new(Some(RateLimit::Iops(1000)), RateProcess::Linear, None, 1, 4096, 0).unwrap();
        for n in 0..5 {
            assert_eq!(p.planned(), n * 1_000_000);
            p.advance(n, 4096);
        }
        let mut b =
            Pace::new(Some(RateLimit::Bytes(4096 * 100)), RateProcess::Linear, None, 1, 4096, 0).unwrap();
        b.advance(0, 8192);
        assert_eq!(b.planned(), 20_000_000, "two blocks at 100 blocks/s: 20 ms");
        // Poisson: exponential gaps of the same mean, seeded.
        let mut q = Pace::new(Some(RateLimit::Iops(1000)), RateProcess::Poisson, None, 9, 4096, 0).unwrap();
        let n = 20_000u64;
        for k in 0..n {
            q.advance(k, 4096);
        }
        let mean = q.planned() as f64 / n as f64;
        assert!((mean - 1e6).abs() < 4.0 * 1e6 / (n as f64).sqrt(), "mean gap {mean}");
        // A stall: ops planned at 0, 1, ..., 9 ms all issued at 10 ms (the threshold: two gaps,
        // 2 ms), then one on time at 11 ms.
        let mut s = Pace::new(Some(RateLimit::Iops(1000)), RateProcess::Linear, None, 1, 4096, 0).unwrap();
        for k in 0..10u64 {
            s.issued(10_000_000, k * 1_000_000);
        }
        s.issued(11_000_000, 11_000_000);
        let b = s.finish().unwrap();
        assert_eq!((b.late_ops, b.threshold_ns), (8, 2_000_000), "ops 0..7 were more than 2 ms late");
        assert_eq!(b.max_ns, 10_000_000);
        assert_eq!(b.ns, 10_000_000, "behind from op 0's planned start to op 8, the first on time");
    }

    #[test]
    fn think_time_waits_every_n_ops() {
        let think = ThinkTime { ns: 2_000_000, spin_ns: 500_000, blocks: 2 };
        let mut p = Pace::new(None, RateProcess::Linear, Some(think), 1, 4096, 0).unwrap();
        assert!(!p.paced());
        let t = now_ns();
        assert!(!p.think(0, &|| false));
        assert!(p.think(1, &|| false));
        assert!(now_ns() - t >= 2_000_000);
        assert!(p.finish().is_none());
    }
}
