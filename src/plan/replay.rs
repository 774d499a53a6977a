//! What a worker's ops did to its blocks, worked out again from its plan after the phase
//! (outside the timed loop; the plan is pure, so the ops are the ones it did): the bytes that
//! fell on blocks the phase had already moved (a pass after the first under `runtime`, a
//! repeat of an order that draws, the overlap of a block-size mix), which the page cache may
//! have served whatever the phase's cache state; and, for an order that draws, the share of
//! its ops on the hottest tenth of its blocks (the distribution's measured skew).

use super::{Cursor, OpSeq};

/// The most blocks a worker's skew is counted over (a u32 per block: 64 MiB).
pub const HOT_MAX_UNITS: u64 = 1 << 24;

/// The replay of one worker's ops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replay {
    /// Bytes of ops on units the phase had already moved.
    pub again_bytes: u64,
    /// With an order that draws (and at most [`HOT_MAX_UNITS`] units): the ops that fell on the
    /// hottest tenth of the worker's units.
    pub hot_ops: Option<u64>,
}

/// The index in the plan of the `n`-th op a loop did (as [`crate::worker::bound`]'s limits
/// give it): under a time bound that wraps, op `n mod extent`, unless each op draws afresh.
#[inline(always)]
pub fn index(ops: &OpSeq, n: u64, extent: u64, wraps: bool) -> u64 {
    if wraps && !ops.endless() && extent > 0 { n % extent } else { n }
}

/// The replay of the first `done` ops of `ops` (`extent`: the ops with data; `wraps`: the
/// phase's time bound wraps round its blocks).
pub fn replay(ops: &OpSeq, extent: u64, done: u64, wraps: bool) -> Replay {
    let drawn = ops.endless();
    let op_len = ops.op_len();
    // Plain orders cover their blocks once a pass: whatever comes after the first pass is again.
    if !drawn && ops.draws.sizes.is_none() {
        let first = done.min(extent.max(1));
        return Replay { again_bytes: (done - first) * op_len, hot_ops: None };
    }
    let n = ops.n_units().max(1);
    let mut seen = vec![0u64; n.div_ceil(64) as usize];
    let count_hot = drawn && n <= HOT_MAX_UNITS;
    let mut hits: Vec<u32> = if count_hot { vec![0; n as usize] } else { vec![] };
    let mut cur = Cursor::default();
    let mut again_bytes = 0u64;
    for i in 0..done {
        let k = index(ops, i, extent, wraps);
        let (first, units) = ops.units_of(k, &mut cur);
        if count_hot {
            hits[first as usize] = hits[first as usize].saturating_add(1);
        }
        for u in first..(first + units).min(n) {
            let (w, b) = ((u / 64) as usize, 1u64 << (u % 64));
            if seen[w] & b != 0 {
                again_bytes += ops.bs.min(op_len);
            }
            seen[w] |= b;
        }
    }
    let hot_ops = count_hot.then(|| {
        let top = n.div_ceil(10) as usize;
        hits.select_nth_unstable_by(top - 1, |a, b| b.cmp(a));
        hits[..top].iter().map(|&h| h as u64).sum()
    });
    Replay { again_bytes, hot_ops }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Params, ResolveEnv, resolve};

    fn ops(pairs: &[(&str, &str)]) -> OpSeq {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(k, vec![v.to_string()]).unwrap();
        }
        let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
        crate::plan::plan(&resolve(&p, &env).unwrap()).phases[0].workers[0].ops
    }

    #[test]
    fn a_second_pass_is_again_and_a_drawn_order_repeats() {
        let seq = ops(&[("ops", "read"), ("size", "64KiB"), ("bs", "4KiB")]);
        assert_eq!(replay(&seq, 16, 16, true).again_bytes, 0);
        assert_eq!(replay(&seq, 16, 40, true).again_bytes, 24 * 4096);
        let perm = ops(&[("ops", "read"), ("size", "64KiB"), ("bs", "4KiB"), ("order", "random")]);
        assert_eq!(replay(&perm, 16, 16, false), Replay { again_bytes: 0, hot_ops: None });
        // Uniform draws with repeats: of 16 draws over 16 blocks, some repeat; the count is
        // that of the blocks drawn before.
        let uni = ops(&[("ops", "read"), ("size", "64KiB"), ("bs", "4KiB"), ("order", "uniform")]);
        let blocks: Vec<u64> = (0..16).map(|k| uni.op(k).offset / 4096).collect();
        let mut distinct = blocks.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let r = replay(&uni, 16, 16, false);
        assert_eq!(r.again_bytes, (16 - distinct.len() as u64) * 4096);
        assert!(r.again_bytes > 0);
        // The hottest tenth of 16 blocks is 2 blocks.
        let mut hits = [0u64; 16];
        for b in &blocks {
            hits[*b as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(r.hot_ops, Some(hits[0] + hits[1]));
        // An endless order goes on drawing under runtime instead of replaying op 0.
        assert_eq!(index(&uni, 20, 16, true), 20);
        assert_eq!(index(&seq, 20, 16, true), 4);
    }

    #[test]
    fn a_mix_counts_the_units_it_covers_again() {
        let mix = ops(&[
            ("ops", "read"),
            ("size", "256KiB"),
            ("bssplit", "4KiB/50:16KiB/50"),
            ("order", "uniform"),
        ]);
        let r = replay(&mix, mix.n_ops, mix.n_ops, false);
        // Every unit covered again is counted once per time: recount by brute force.
        let mut cover = vec![0u32; 64];
        let mut again = 0;
        for st in mix.steps(false) {
            for u in st.op.offset / 4096..(st.op.offset + st.op.len) / 4096 {
                if cover[u as usize] > 0 {
                    again += 4096;
                }
                cover[u as usize] += 1;
            }
        }
        assert_eq!(r.again_bytes, again);
        // A sequential mix covers each unit once a pass.
        let seq = ops(&[("ops", "read"), ("size", "256KiB"), ("bssplit", "4KiB/50:16KiB/50")]);
        assert_eq!(replay(&seq, seq.n_ops, seq.n_ops, false).again_bytes, 0);
    }
}
