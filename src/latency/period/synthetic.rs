//! The period detector's synthetic test set: latency series with planted periods (several
//! periods, amplitudes, noises, jitter, missing cycles, random stalls) and series with none,
//! from a seeded generator; the test states the detection and false-alarm rates and holds
//! them to >= 95% and <= 5%.

use super::detect;

/// A deterministic noise source (splitmix64).
struct Rng(u64);
impl Rng {
    /// Uniform in [0, 1).
    fn next(&mut self) -> f64 {
        (crate::plan::splitmix64(&mut self.0) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Approximately normal (sum of 12 uniforms), mean 0, sd 1.
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.next()).sum::<f64>() - 6.0
    }
    /// Exponential, mean 1.
    fn exp(&mut self) -> f64 {
        -(1.0 - self.next()).ln()
    }
}

/// The base latency's noise around 50 us.
#[derive(Debug, Clone, Copy)]
pub enum Noise {
    /// base x exp(sd x N(0, 1)).
    LogNormal(f64),
    /// base x (0.8 + Exp(mean 0.2)): a floor and a tail.
    Exponential,
}

/// One synthetic series.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub ops: usize,
    pub noise: Noise,
    /// Every `period` ops (at a seeded phase) the op costs `amplitude` times its base.
    pub period: Option<usize>,
    pub amplitude: f64,
    /// The chance that a cycle's spike comes one op early or late.
    pub jitter: f64,
    /// The chance that a cycle has no spike.
    pub missing: f64,
    /// The chance that an op is a random stall, 100 to 2000 times its base.
    pub stalls: f64,
    /// The chance that an op starts a burst of 1 to 64 ops three times slower.
    pub bursts: f64,
    pub seed: u64,
}

const BASE_NS: f64 = 50_000.0;

/// The series of `case`, in ns, and the phase of its spikes.
pub fn series(case: &Case) -> (Vec<u64>, usize) {
    let mut r = Rng(case.seed);
    let mut x: Vec<f64> = (0..case.ops)
        .map(|_| match case.noise {
            Noise::LogNormal(sd) => BASE_NS * (sd * r.normal()).exp(),
            Noise::Exponential => BASE_NS * (0.8 + 0.2 * r.exp()),
        })
        .collect();
    let mut phase = 0;
    if let Some(p) = case.period {
        phase = (r.next() * p as f64) as usize;
        for start in (phase..case.ops).step_by(p) {
            if r.next() < case.missing {
                continue;
            }
            let at = if r.next() < case.jitter {
                if r.next() < 0.5 { start.saturating_sub(1) } else { (start + 1).min(case.ops - 1) }
            } else {
                start
            };
            x[at] *= case.amplitude;
        }
    }
    let mut i = 0;
    while i < case.ops {
        if r.next() < case.bursts {
            let len = 1 + (r.next() * 64.0) as usize;
            for v in x.iter_mut().skip(i).take(len) {
                *v *= 3.0;
            }
            i += len;
            continue;
        }
        if r.next() < case.stalls {
            x[i] *= 100.0 + 1900.0 * r.next();
        }
        i += 1;
    }
    (x.into_iter().map(|v| v as u64).collect(), phase)
}

pub const PERIODS: [usize; 7] = [4, 8, 16, 32, 64, 128, 512];
pub const AMPLITUDES: [f64; 5] = [1.5, 2.0, 4.0, 16.0, 100.0];
pub const NOISES: [Noise; 3] = [Noise::LogNormal(0.1), Noise::LogNormal(0.3), Noise::Exponential];

/// The periodic set: every period, amplitude and noise, clean and with 10% jitter and 20%
/// missing cycles; every other one with random stalls (1 op in 4096); 64 cycles or 4096 ops,
/// whichever is longer.
pub fn periodic_cases() -> Vec<Case> {
    let mut v = vec![];
    let mut seed = 1;
    for period in PERIODS {
        for amplitude in AMPLITUDES {
            for noise in NOISES {
                for (jitter, missing) in [(0.0, 0.0), (0.1, 0.2)] {
                    seed += 1;
                    let ops = (64 * period).max(4096);
                    let stalls = if seed % 2 == 0 { 0.0 } else { 1.0 / 4096.0 };
                    let period = Some(period);
                    v.push(Case {
                        ops,
                        noise,
                        period,
                        amplitude,
                        jitter,
                        missing,
                        stalls,
                        bursts: 0.0,
                        seed,
                    });
                }
            }
        }
    }
    v
}

/// The null set: every noise, with no stalls, random stalls (1 op in 4096 or in 256) or
/// bursts of slow ops, 4096 and 16384 ops, 4 seeds each.
pub fn null_cases() -> Vec<Case> {
    let mut v = vec![];
    let mut seed = 100_000;
    for noise in NOISES {
        for (stalls, bursts) in [(0.0, 0.0), (1.0 / 4096.0, 0.0), (1.0 / 256.0, 0.0), (0.0, 1.0 / 512.0)] {
            for ops in [4096, 16384] {
                for _ in 0..4 {
                    seed += 1;
                    v.push(Case {
                        ops,
                        noise,
                        period: None,
                        amplitude: 1.0,
                        jitter: 0.0,
                        missing: 0.0,
                        stalls,
                        bursts,
                        seed,
                    });
                }
            }
        }
    }
    v
}

/// `detect` on every case, on two threads (the set takes a while in a debug build).
fn detect_all(cases: &[Case]) -> Vec<(Vec<super::Period>, usize)> {
    let half = cases.len() / 2;
    let run = |cs: &[Case]| -> Vec<(Vec<super::Period>, usize)> {
        cs.iter()
            .map(|c| {
                let (x, phase) = series(c);
                (detect(&x), phase)
            })
            .collect()
    };
    std::thread::scope(|s| {
        let first = s.spawn(|| run(&cases[..half]));
        let mut second = run(&cases[half..]);
        let mut all = first.join().unwrap();
        all.append(&mut second);
        all
    })
}

#[test]
fn detection_and_false_alarm_rates_on_the_synthetic_set() {
    let cases = periodic_cases();
    let (mut found, mut strongest, mut misses) = (0, 0, vec![]);
    for (c, (p, phase)) in cases.iter().zip(detect_all(&cases)) {
        let want = c.period.unwrap() as u64;
        if p.iter().any(|p| p.every_ops == want) {
            found += 1;
        } else {
            misses.push(format!("{c:?} phase {phase}: {p:?}"));
        }
        if p.first().is_some_and(|p| p.every_ops == want) {
            strongest += 1;
        }
    }
    let nulls = null_cases();
    let mut alarms = vec![];
    for (c, (p, _)) in nulls.iter().zip(detect_all(&nulls)) {
        if !p.is_empty() {
            alarms.push(format!("{c:?}: {p:?}"));
        }
    }
    let detection = found as f64 / cases.len() as f64;
    let false_alarms = alarms.len() as f64 / nulls.len() as f64;
    println!(
        "synthetic set: detection {found}/{} = {:.1}% (strongest {strongest}), false alarms {}/{} = {:.1}%",
        cases.len(),
        100.0 * detection,
        alarms.len(),
        nulls.len(),
        100.0 * false_alarms
    );
    for m in &misses {
        println!("missed: {m}");
    }
    for a in &alarms {
        println!("false alarm: {a}");
    }
    assert!(detection >= 0.95, "detection {:.1}% < 95%", 100.0 * detection);
    assert!(false_alarms <= 0.05, "false alarms {:.1}% > 5%", 100.0 * false_alarms);
}
