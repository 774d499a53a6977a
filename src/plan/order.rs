//! Access orders: which block a worker visits at its k-th step (sequential, reverse, a
//! seeded permutation computed without a table, or drawn per op with repeats).

/// Maps an op (block step) index to a block index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderMap {
    Seq,
    Reverse,
    Random(Permutation),
    /// Drawn per op from a distribution ([`super::draw`]): blocks may repeat.
    Drawn(super::draw::Drawn),
}

impl OrderMap {
    /// The block visited at step `k` of `n`.
    #[inline(always)]
    pub fn apply(&self, k: u64, n: u64) -> u64 {
        match self {
            OrderMap::Seq => k,
            OrderMap::Reverse => n - 1 - k,
            OrderMap::Random(p) => p.apply(k),
            OrderMap::Drawn(d) => d.apply(k),
        }
    }
}

/// A seeded bijection on `[0, n)` without a table: a mixing bijection on the next power of two
/// (multiply by odd, add, xorshift: each invertible modulo 2^bits), with cycle walking to stay
/// below `n`. Expected steps per index are under 2 because 2^bits < 2n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [u64; 3],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = if n <= 1 { 1 } else { 64 - (n - 1).leading_zeros() };
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let mut s = seed;
        let keys = [splitmix64(&mut s), splitmix64(&mut s), splitmix64(&mut s)];
        Permutation { n, mask, shift: (bits / 2).max(1), keys }
    }

    #[inline(always)]
    fn mix(&self, mut x: u64) -> u64 {
        for (i, k) in self.keys.iter().enumerate() {
            let mult = [0x9E37_79B9_7F4A_7C15u64, 0xBF58_476D_1CE4_E5B9, 0x94D0_49BB_1331_11EB][i];
            x = x.wrapping_mul(mult).wrapping_add(*k) & self.mask;
            x ^= x >> self.shift;
        }
        x
    }

    /// The image of `k` (< n).
    #[inline(always)]
    pub fn apply(&self, k: u64) -> u64 {
        let mut x = self.mix(k);
        while x >= self.n {
            x = self.mix(x);
        }
        x
    }
}

/// SplitMix64: seeds and fills. Public because data filling uses the same generator.
#[inline(always)]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn permutation_is_a_bijection(n in 1u64..5000, seed in any::<u64>()) {
            let p = Permutation::new(n, seed);
            let mut hit = vec![false; n as usize];
            for k in 0..n {
                let j = p.apply(k);
                prop_assert!(j < n);
                prop_assert!(!hit[j as usize], "index {} hit twice", j);
                hit[j as usize] = true;
            }
        }
    }

    #[test]
    fn reverse_runs_backwards() {
        let got: Vec<u64> = (0..4).map(|k| OrderMap::Reverse.apply(k, 4)).collect();
        assert_eq!(got, [3, 2, 1, 0]);
    }
}
