//! Tests of the per-op draws: each distribution against its definition (frequencies of ranks,
//! cumulative shares), the size mix and the read share against their percentages, all from a
//! seeded generator, with tolerances stated from the sample size.

use super::*;
use crate::spec::BsSplit;

const N: u64 = 1000;
const DRAWS: u64 = 200_000;

/// Counts of each rank over `DRAWS` draws.
fn counts(d: Dist, n: u64) -> Vec<u64> {
    let mut c = vec![0u64; n as usize];
    for k in 0..DRAWS {
        c[d.rank(n, 7, k) as usize] += 1;
    }
    c
}

/// A share measured over `DRAWS` draws is within 5 standard errors of `p`.
fn near(measured: f64, p: f64, what: &str) {
    let se = (p * (1.0 - p) / DRAWS as f64).sqrt();
    assert!((measured - p).abs() <= 5.0 * se + 1e-12, "{what}: {measured} vs {p} (se {se})");
}

#[test]
fn the_harmonic_number_tail_matches_the_direct_sum() {
    for theta in [0.5, 1.2, 2.0] {
        let n = 300_000u64;
        let direct: f64 = (1..=n).rev().map(|i| (i as f64).powf(-theta)).sum();
        let h = harmonic(n, theta);
        assert!((h - direct).abs() / direct < 1e-12, "theta {theta}: {h} vs {direct}");
    }
}

#[test]
fn uniform_draws_every_rank_alike() {
    let c = counts(Dist::of(Order::Uniform, N).unwrap(), N);
    let expect = DRAWS as f64 / N as f64;
    // Each count is binomial(DRAWS, 1/N): sd = sqrt(200) ~ 14.
    let worst = c.iter().map(|&x| (x as f64 - expect).abs()).fold(0.0, f64::max);
    assert!(worst < 6.0 * expect.sqrt(), "worst deviation {worst} of {expect}");
}

#[test]
fn zipf_follows_grays_generator() {
    for theta in [0.8, 1.2, 2.0] {
        let d = Dist::of(Order::Zipf(Param(theta)), N).unwrap();
        let c = counts(d, N);
        let h = harmonic(N, theta);
        // Ranks 0 and 1 are exact in Gray's method: 1 / H and 2^-theta / H.
        near(c[0] as f64 / DRAWS as f64, 1.0 / h, "rank 0");
        near(c[1] as f64 / DRAWS as f64, 0.5f64.powf(theta) / h, "rank 1");
        // Beyond, its approximation of the tail: the share of the first tenth of the ranks
        // within 2 points of zipf's H(n/10) / H(n).
        let top: u64 = c[..(N / 10) as usize].iter().sum();
        let want = harmonic(N / 10, theta) / h;
        let got = top as f64 / DRAWS as f64;
        assert!((got - want).abs() < 0.02, "theta {theta}: first tenth {got} vs {want}");
        // And it decreases: every decile holds less than the one before, to within the noise of
        // its count (4 standard deviations of a Poisson count).
        let deciles: Vec<u64> = c.chunks((N / 10) as usize).map(|d| d.iter().sum()).collect();
        let noise = |x: u64| 4.0 * (x as f64).sqrt();
        assert!(deciles.windows(2).all(|w| w[0] as f64 + noise(w[1]) >= w[1] as f64), "{deciles:?}");
    }
}

#[test]
fn pareto_follows_its_power() {
    let h = 0.2;
    let d = Dist::of(Order::Pareto(Param(h)), N).unwrap();
    let Dist::Pareto { pow } = d else { panic!() };
    let c = counts(d, N);
    // rank <= r  <=>  u <= (r / (n - 1))^(1 / pow); rank < r + 1 likewise for the floor.
    for r in [0u64, 10, 100, 500] {
        let below: u64 = c[..=r as usize].iter().sum();
        let p = ((r + 1) as f64 / (N - 1) as f64).min(1.0).powf(1.0 / pow.0);
        near(below as f64 / DRAWS as f64, p, &format!("P(rank <= {r})"));
    }
}

#[test]
fn normal_is_fios_bell() {
    // Without a deviation: the mean of 12 uniform draws over 0..=n, so its sd is
    // (n + 1) / sqrt(12 x 12) around n / 2.
    let c = counts(Dist::of(Order::Normal(Param(0.0)), N).unwrap(), N);
    let mean = c.iter().enumerate().map(|(i, &x)| i as f64 * x as f64).sum::<f64>() / DRAWS as f64;
    let var =
        c.iter().enumerate().map(|(i, &x)| (i as f64 - mean).powi(2) * x as f64).sum::<f64>() / DRAWS as f64;
    let want_sd = (N + 1) as f64 / 12.0;
    assert!((mean - N as f64 / 2.0).abs() < 2.0, "mean {mean}");
    assert!((var.sqrt() - want_sd).abs() / want_sd < 0.03, "sd {} vs {want_sd}", var.sqrt());
    // A deviation of 50% widens it by a uniform term of width n / 2: variance + (n/2)^2 / 12.
    let c = counts(Dist::of(Order::Normal(Param(50.0)), N).unwrap(), N);
    let mean = c.iter().enumerate().map(|(i, &x)| i as f64 * x as f64).sum::<f64>() / DRAWS as f64;
    let var2 =
        c.iter().enumerate().map(|(i, &x)| (i as f64 - mean).powi(2) * x as f64).sum::<f64>() / DRAWS as f64;
    let want = (want_sd.powi(2) + (N as f64 / 2.0).powi(2) / 12.0).sqrt();
    assert!((var2.sqrt() - want).abs() / want < 0.03, "sd {} vs {want}", var2.sqrt());
}

#[test]
fn drawn_blocks_are_ranks_scattered_one_to_one() {
    let d = Drawn::new(Dist::of(Order::Zipf(Param(1.2)), N).unwrap(), N, 3);
    let mut hits = vec![0u64; N as usize];
    for k in 0..DRAWS {
        let b = d.apply(k);
        assert!(b < N);
        hits[b as usize] += 1;
    }
    // The hottest block is the block of rank 0.
    let hottest = (0..N).max_by_key(|&b| hits[b as usize]).unwrap();
    assert_eq!(d.rank_of(hottest), 0);
    // Another seed scatters elsewhere, the same seed the same way.
    let again = Drawn::new(Dist::of(Order::Zipf(Param(1.2)), N).unwrap(), N, 3);
    assert_eq!(
        (0..100).map(|k| d.apply(k)).collect::<Vec<_>>(),
        (0..100).map(|k| again.apply(k)).collect::<Vec<_>>()
    );
    let other = Drawn::new(Dist::of(Order::Zipf(Param(1.2)), N).unwrap(), N, 4);
    assert_ne!(
        (0..100).map(|k| d.apply(k)).collect::<Vec<_>>(),
        (0..100).map(|k| other.apply(k)).collect::<Vec<_>>()
    );
    // One block: every draw is it.
    let one = Drawn::new(Dist::of(Order::Zipf(Param(1.2)), 1).unwrap(), 1, 3);
    assert!((0..100).all(|k| one.apply(k) == 0));
}

#[test]
fn sizes_and_directions_follow_their_shares() {
    let s = Sizes::of(&BsSplit::parse("4KiB/50:64KiB/30:1MiB/20").unwrap());
    assert_eq!(&s.units[..3], [1, 16, 256]);
    let mut n = [0u64; 3];
    for k in 0..DRAWS {
        n[s.pick(11, k)] += 1;
    }
    for (i, p) in [0.5, 0.3, 0.2].into_iter().enumerate() {
        near(n[i] as f64 / DRAWS as f64, p, &format!("size {i}"));
    }
    assert_eq!(s.fit(2, 20), 1);
    assert_eq!(s.fit(2, 3), 0);
    assert_eq!(s.fit(1, 300), 1);
    let r = (0..DRAWS).filter(|&k| reads(70, 5, k)).count();
    near(r as f64 / DRAWS as f64, 0.7, "reads");
    assert_eq!((0..1000).filter(|&k| reads(0, 5, k)).count(), 0);
    assert_eq!((0..1000).filter(|&k| reads(100, 5, k)).count(), 1000);
}
