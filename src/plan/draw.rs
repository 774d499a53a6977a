//! What is drawn per op from the seeded generator, in O(1) from the op's index and without a
//! table: the block of an order with repeats (fio's `random_distribution`s: uniform, zipf,
//! pareto, normal, by fio's own formulas in lib/zipf.c and lib/gauss.c), the direction of an
//! op of a mixed phase (reads among 100 ops, `rwmixread`), and the size of an op of a
//! block-size mix (`bssplit`).
//!
//! A draw for op `k` is a hash of (seed, k): the same seed gives the same ops on every engine
//! and launcher, in any run. Where fio scatters a distribution's ranks over the blocks with a
//! hash modulo the block count (so two ranks may share a block), iolab scatters them with a
//! seeded bijection ([`Permutation`]): the block of rank r is the r-th most likely.

use super::order::{Permutation, splitmix64};
use crate::spec::Order;
use crate::spec::order::Param;

/// A 64-bit draw for op `k` of the stream `seed`.
#[inline(always)]
pub fn word(seed: u64, k: u64) -> u64 {
    let mut s = seed ^ k.wrapping_mul(0xD1B5_4A32_D192_ED03);
    splitmix64(&mut s)
}

/// A draw in [0, 1) for op `k` of the stream `seed`.
#[inline(always)]
pub fn unit(seed: u64, k: u64) -> f64 {
    (word(seed, k) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The seed of one stream of draws (block, direction, size, schedule) of a worker.
pub fn stream(seed: u64, salt: u64) -> u64 {
    let mut s = seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    splitmix64(&mut s)
}

/// The streams' salts.
pub const BLOCKS: u64 = 1;
pub const DIRECTION: u64 = 2;
pub const SIZE: u64 = 3;
pub const SCHEDULE: u64 = 4;
pub const SCATTER: u64 = 5;

/// A distribution over ranks 0..n, by fio's definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Uniform,
    /// Gray et al.'s zipf generator as fio's `zipf_next`: `zetan` is the generalized harmonic
    /// number H(n, theta), `eta` and `alpha` its constants.
    Zipf {
        theta: Param,
        zetan: Param,
        eta: Param,
        alpha: Param,
    },
    /// fio's `pareto_next`: rank = (n - 1) u^pow, pow = ln h / ln(1 - h).
    Pareto {
        pow: Param,
    },
    /// fio's `gauss_next`: the mean of 12 uniform draws over 0..=n, moved by a uniform
    /// deviation of width `stddev` blocks (DEV percent of n, at most n / 2).
    Normal {
        stddev: u64,
    },
}

/// Terms of H(n, theta) summed one by one; beyond, the Euler-Maclaurin formula gives the tail
/// (to within 1e-15 of the sum's value). fio sums at most 10 million terms.
const DIRECT_TERMS: u64 = 100_000;

/// H(n, theta) = sum of i^-theta for i in 1..=n.
pub fn harmonic(n: u64, theta: f64) -> f64 {
    let m = n.min(DIRECT_TERMS);
    let mut sum = 0.0;
    // Smallest terms first, for precision.
    for i in (1..=m).rev() {
        sum += (i as f64).powf(-theta);
    }
    if n > m {
        // sum_{i=m+1}^{n} f(i) = integral_m^n f + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12 - ...
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let (a, b) = (m as f64, n as f64);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

impl Dist {
    /// The distribution of `order` over `n` ranks (None: the order draws nothing).
    pub fn of(order: Order, n: u64) -> Option<Dist> {
        let n = n.max(1);
        Some(match order {
            Order::Seq | Order::Reverse | Order::Random => return None,
            Order::Uniform => Dist::Uniform,
            Order::Zipf(Param(theta)) => {
                let zetan = harmonic(n, theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let eta = if n > 2 {
                    (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
                } else {
                    0.0
                };
                Dist::Zipf {
                    theta: Param(theta),
                    zetan: Param(zetan),
                    eta: Param(eta),
                    alpha: Param(1.0 / (1.0 - theta)),
                }
            }
            Order::Pareto(Param(h)) => Dist::Pareto { pow: Param(h.ln() / (1.0 - h).ln()) },
            Order::Normal(Param(dev)) => {
                let sd = if dev == 0.0 { 0 } else { ((n as f64 * dev) / 100.0).ceil() as u64 };
                Dist::Normal { stddev: sd.min(n / 2) }
            }
        })
    }

    /// The rank of draw `k` (< n) of the stream `seed`.
    #[inline(always)]
    pub fn rank(&self, n: u64, seed: u64, k: u64) -> u64 {
        let r = match *self {
            Dist::Uniform => (unit(seed, k) * n as f64) as u64,
            Dist::Zipf { theta, zetan, eta, alpha } => {
                let u = unit(seed, k);
                let z = u * zetan.0;
                if z < 1.0 {
                    0
                } else if z < 1.0 + 0.5f64.powf(theta.0) {
                    1
                } else {
                    (n as f64 * (eta.0 * u - eta.0 + 1.0).powf(alpha.0)) as u64
                }
            }
            Dist::Pareto { pow } => ((n - 1) as f64 * unit(seed, k).powf(pow.0)) as u64,
            Dist::Normal { stddev } => {
                // Twelve draws of a 32-bit word modulo n + 1, their mean rounded up.
                let base = k.wrapping_mul(13);
                let mut sum = 0u64;
                for i in 0..12 {
                    sum += (word(seed, base + i) >> 32) % (n + 1);
                }
                let mut at = sum.div_ceil(12) as i64;
                if stddev > 0 {
                    let u = (word(seed, base + 12) >> 32) as f64 / 4_294_967_296.0;
                    let mut dev = (stddev as f64 * u) as i64 - (stddev / 2) as i64;
                    while at + dev < 0 || at + dev >= n as i64 {
                        if dev == 0 {
                            break;
                        }
                        dev /= 2;
                    }
                    at += dev;
                }
                at.max(0) as u64
            }
        };
        r.min(n - 1)
    }
}

/// An order with repeats over a worker's `n` blocks: each op's rank drawn from the
/// distribution, scattered over the blocks by a seeded bijection (uniform needs none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drawn {
    pub n: u64,
    pub seed: u64,
    pub dist: Dist,
    scatter: Permutation,
}

impl Drawn {
    pub fn new(dist: Dist, n: u64, seed: u64) -> Drawn {
        let n = n.max(1);
        Drawn { n, seed: stream(seed, BLOCKS), dist, scatter: Permutation::new(n, stream(seed, SCATTER)) }
    }

    /// The block of op `k`.
    #[inline(always)]
    pub fn apply(&self, k: u64) -> u64 {
        let r = self.dist.rank(self.n, self.seed, k);
        if self.dist == Dist::Uniform { r } else { self.scatter.apply(r) }
    }

    /// The rank that block `b` stands for (its place among the most likely), the inverse of
    /// the scatter: for tests and reports.
    pub fn rank_of(&self, b: u64) -> u64 {
        if self.dist == Dist::Uniform {
            return b;
        }
        (0..self.n).find(|&r| self.scatter.apply(r) == b).unwrap_or(b)
    }
}

/// A block-size mix as draws see it: each size in units (the mix's smallest size) and the
/// cumulative shares, percent; at most [`crate::spec::workload::MAX_BSSPLIT`] sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub len: u8,
    pub units: [u32; 16],
    pub cum: [u8; 16],
}

impl Sizes {
    /// The mix of `split` in units of its smallest size.
    pub fn of(split: &crate::spec::BsSplit) -> Sizes {
        let unit = split.unit();
        let mut s = Sizes { len: split.0.len() as u8, units: [0; 16], cum: [0; 16] };
        let mut cum = 0u32;
        for (i, b) in split.0.iter().enumerate() {
            s.units[i] = (b.bytes / unit) as u32;
            cum += b.pct;
            s.cum[i] = cum as u8;
        }
        s
    }

    /// The index of the size of draw `k` of the stream `seed`.
    #[inline(always)]
    pub fn pick(&self, seed: u64, k: u64) -> usize {
        let v = (word(seed, k) % 100) as u8;
        let mut i = 0;
        while i + 1 < self.len as usize && v >= self.cum[i] {
            i += 1;
        }
        i
    }

    /// The largest size at index `i` or below that fits in `room` units (the smallest always
    /// fits: it is one unit).
    #[inline(always)]
    pub fn fit(&self, mut i: usize, room: u64) -> usize {
        while i > 0 && self.units[i] as u64 > room {
            i -= 1;
        }
        i
    }
}

/// Whether op `k` of a mixed phase reads (`read_pct` reads in 100), from the stream `seed`.
#[inline(always)]
pub fn reads(read_pct: u8, seed: u64, k: u64) -> bool {
    word(seed, k) % 100 < read_pct as u64
}

#[cfg(test)]
#[path = "draw_tests.rs"]
mod tests;
