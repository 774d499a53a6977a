//! The period detector's tests: planted periods (one, two components, dips, any period and
//! phase, a window's stall under the device's waits), real read-ahead traces, and series with
//! none (noise, trends, constants, a few stalls).

use super::*;
use proptest::prelude::*;

/// A deterministic noise source: uniform in [0, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        (crate::plan::splitmix64(&mut self.0) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Approximately normal (sum of 12 uniforms), mean 0, sd 1.
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.next()).sum::<f64>() - 6.0
    }
}

fn noise(n: usize, seed: u64, base: f64, sd: f64) -> Vec<f64> {
    let mut r = Rng(seed);
    (0..n).map(|_| (base + sd * r.normal()).max(1.0)).collect()
}

fn to_ns(v: &[f64]) -> Vec<u64> {
    v.iter().map(|&x| x as u64).collect()
}

#[test]
fn finds_a_spike_every_8_reads() {
    // C4: 4 KiB reads at 3.5 ms +- 0.3 ms, a prefetch costing 15 ms on every 8th read.
    let mut x = noise(1280, 1, 3.5e6, 0.3e6);
    for i in (3..x.len()).step_by(8) {
        x[i] += 11.5e6;
    }
    let p = detect(&to_ns(&x));
    assert!(!p.is_empty(), "no period found");
    assert_eq!(p[0].every_ops, 8, "{p:?}");
    assert_eq!(p[0].at_op, 3);
    assert!(p[0].strength > 0.8, "{p:?}");
    assert!((p[0].excess_ns - 11.5e6).abs() < 1.0e6, "{p:?}");
    assert_eq!(p.len(), 1, "harmonics of 8 are not periods of their own: {p:?}");
}

#[test]
fn reports_the_fundamental_period_and_what_it_explains() {
    // C4 on a 64 MiB file with an 8 MiB read-ahead: 16384 reads of 4 KiB, a stall every 2048
    // (a new window). Every 1024th op sits at phase 0 of a 1024 lag too, but the odd multiples
    // of 1024 are at baseline: the period is 2048, and it explains every stall.
    let mut x = noise(16384, 9, 40e3, 4e3);
    for i in (100..x.len()).step_by(2048) {
        x[i] += 4e6;
    }
    let p = detect(&to_ns(&x));
    assert!(!p.is_empty(), "no period found");
    assert_eq!((p[0].every_ops, p[0].at_op), (2048, 100), "{p:?}");
    assert!(p[0].explains > 0.99, "{p:?}");
    // The planted every-8 spikes, 1 in 4 of them missing at random: still every 8 (no single
    // phase of 16 or 32 holds them all), and it explains all of them.
    let mut x = noise(4096, 3, 3.5e6, 0.3e6);
    let mut r = Rng(5);
    for i in (3..x.len()).step_by(8) {
        if r.next() > 0.25 {
            x[i] += 11.5e6;
        }
    }
    let p = detect(&to_ns(&x));
    assert_eq!(p[0].every_ops, 8, "{p:?}");
    assert!(p[0].explains > 0.99, "{p:?}");
}

/// A 256 MiB file read in 4 KiB reads with an 8 MiB read-ahead, as a virtio disk shows it:
/// windows of 4, 16, 64, 256, 1024 pages at the start, then a stall of about 100 us every 2048
/// reads (issuing the next window), the device's wait of about 12 ms on every other one, a
/// page-cache boundary of 13 us every 512 reads, and 0.4 us of jitter every 128. The period is
/// the window's, 2048, not its harmonic 4096 (which carries the most time) nor 512 or 128
/// (whose autocorrelations are as high), and it carries nearly all the excess time.
#[test]
fn the_period_is_the_fundamental_of_the_spikes_that_carry_the_time() {
    let mut r = Rng(11);
    let mut x: Vec<f64> = (0..65536).map(|_| 1500.0 + 150.0 * r.normal().abs()).collect();
    for i in (0..x.len()).step_by(128) {
        x[i] += 400.0;
    }
    for i in (512..x.len()).step_by(512) {
        x[i] += 13e3 * (1.0 + 0.2 * r.normal());
    }
    for (c, i) in (2048..x.len()).step_by(2048).enumerate() {
        x[i] += if c % 2 == 0 { 12e6 } else { 100e3 } * (1.0 + 0.2 * r.normal());
    }
    for (i, stall) in [(0, 300e3), (1, 40e3), (4, 400e3), (20, 40e3), (80, 3e6), (320, 40e3), (1344, 5e6)] {
        x[i] += stall;
    }
    let p = detect(&to_ns(&x));
    assert!(!p.is_empty(), "no period found");
    assert_eq!((p[0].every_ops, p[0].at_op), (2048, 0), "{p:?}");
    assert!(p[0].time_share > 0.9, "{p:?}");
    assert!(p.iter().all(|q| q.every_ops != 4096), "4096 is a harmonic of 2048: {p:?}");
    // The shares of the time are each op's once.
    assert!(p.iter().map(|q| q.time_share).sum::<f64>() <= 1.0 + 1e-9, "{p:?}");
}

#[test]
fn finds_two_components() {
    // Spikes every 8 (+12 ms) and a much larger one every 512 (+90 ms).
    let mut x = noise(8192, 2, 3.5e6, 0.3e6);
    for i in (0..x.len()).step_by(8) {
        x[i] += 12e6;
    }
    for i in (100..x.len()).step_by(512) {
        x[i] += 90e6;
    }
    let p = detect(&to_ns(&x));
    let periods: Vec<u64> = p.iter().map(|p| p.every_ops).collect();
    assert!(periods.contains(&8) && periods.contains(&512), "{p:?}");
    let big = p.iter().find(|p| p.every_ops == 512).unwrap();
    assert_eq!(big.at_op, 100);
}

#[test]
fn finds_a_periodic_dip() {
    // Every 16th op is a cache hit: much faster than the rest.
    let mut x = noise(2048, 3, 5e6, 0.2e6);
    for i in (5..x.len()).step_by(16) {
        x[i] = 0.4e6;
    }
    let p = detect(&to_ns(&x));
    assert_eq!(p[0].every_ops, 16, "{p:?}");
    assert!(p[0].excess_ns < 0.0);
}

#[test]
fn finds_nothing_in_white_noise() {
    // Four seeds per length: the synthetic set's 96 null series hold the false-alarm rate.
    for seed in 0..4 {
        for n in [64, 1000, 4096, 20_000] {
            let x = noise(n, seed, 100e3, 20e3);
            assert!(detect(&to_ns(&x)).is_empty(), "seed {seed} n {n}: {:?}", detect(&to_ns(&x)));
        }
    }
    // Heavy-tailed (exponential) noise.
    for seed in 0..10 {
        let mut r = Rng(seed + 100);
        let x: Vec<u64> = (0..4096).map(|_| (-(1.0 - r.next()).ln() * 1e5) as u64 + 1).collect();
        assert!(detect(&x).is_empty(), "seed {seed}: {:?}", detect(&x));
    }
}

#[test]
fn finds_nothing_in_trends_constants_or_a_few_spikes() {
    let trend: Vec<u64> = (0..4096).map(|i| 100_000 + i * 37).collect();
    assert!(detect(&trend).is_empty(), "{:?}", detect(&trend));
    assert!(detect(&[5000; 4096]).is_empty());
    assert!(detect(&[1, 2, 3]).is_empty());
    // Two slow start-up ops 5 apart (C1's first reads): not a period.
    let mut x = to_ns(&noise(2000, 7, 3.5e6, 0.3e6));
    x[0] = 100_000_000;
    x[5] = 100_000_000;
    assert!(detect(&x).is_empty(), "{:?}", detect(&x));
}

/// Regression: a buffered write's latencies are a tight, skewed base with a few random
/// writeback stalls 1000x longer. The stalls dominate the variance, so pairs of them make
/// autocorrelation peaks at their distances; none of those is a period.
#[test]
fn finds_nothing_in_a_few_random_stalls_on_a_tight_base() {
    for seed in 0..6 {
        let mut r = Rng(seed + 1000);
        let mut x: Vec<u64> = (0..16384).map(|_| 3900 + (-(1.0 - r.next()).ln() * 120.0) as u64).collect();
        for _ in 0..8 {
            let at = (r.next() * x.len() as f64) as usize;
            x[at] = 2_000_000 + (r.next() * 60e6) as u64;
        }
        assert!(detect(&x).is_empty(), "seed {seed}: {:?}", detect(&x));
    }
}

proptest! {
    // 64 random trains: the synthetic set's 210 planted series hold the detection rate.
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn a_planted_spike_train_is_found(period in 4u64..40, at in 0u64..40, seed in any::<u64>()) {
        let at = at % period;
        let mut x = noise(2048, seed, 1e6, 0.1e6);
        for i in (at as usize..x.len()).step_by(period as usize) {
            x[i] += 5e6;
        }
        let p = detect(&to_ns(&x));
        prop_assert!(!p.is_empty());
        prop_assert_eq!(p[0].every_ops, period);
        prop_assert_eq!(p[0].at_op, at);
    }
}

/// Real traces, cold 4 KiB reads on ext4 (Linux 6.18), their latencies in units of 100 ns:
/// two of a virtio disk with an 8 MiB read-ahead (64 MiB files: a window stall every 2048
/// reads, the device's waits of 3-13 ms on some of them, page-cache spikes every 512), and a
/// loop device over a tmpfs with the read-ahead set to 2 MiB and 8 MiB (windows of 512 and
/// 2048 reads). The detector must report each window first, carrying most of the time.
#[test]
fn finds_the_read_ahead_window_in_real_traces() {
    use std::io::Read;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/latency/period/traces");
    for (name, window) in
        [("vda8192_0", 2048), ("vda8192_4", 2048), ("loop2048_0", 512), ("loop8192_2", 2048)]
    {
        let mut text = String::new();
        let file = std::fs::File::open(dir.join(format!("{name}.txt.gz"))).unwrap();
        flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap();
        let x: Vec<u64> = text.lines().map(|l| l.parse::<u64>().unwrap() * 100).collect();
        let p = detect(&x);
        assert!(!p.is_empty(), "{name}: no period");
        assert_eq!((p[0].every_ops, p[0].at_op), (window, 0), "{name}: {p:?}");
        assert!(p[0].time_share > 0.4, "{name}: {p:?}");
    }
}
