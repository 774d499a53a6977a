//! The ops of one worker in one phase ([`OpSeq`]), generated on demand: op `k` from the
//! order, the block map and the stripe, and what it draws besides (its direction in a mixed
//! phase, its size in a block-size mix); and the units of the worker's blocks each op covers,
//! for what is worked out again after a phase.

use super::draw;
use super::{BlockMap, OrderMap, Stripe};

/// One operation: `len` bytes at `offset` of the worker's `file`-th open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// Index into the worker's own file list ([`WorkerPlan::files`]).
    pub file: u32,
    pub offset: u64,
    pub len: u64,
}

/// How blocks of a striped file split into pieces, one op each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pieces {
    pub stripe: Stripe,
    /// Pieces per block: bs / unit when bs spans several units, else 1.
    pub per_block: u64,
    /// Bytes per piece: min(bs, unit).
    pub len: u64,
    /// `pieces = parallel`: a block's pieces are issued together, as one timed op.
    pub parallel: bool,
}

/// What each op draws besides its block: its direction in a mixed phase (`read_pct` reads in
/// 100), its size in a block-size mix (`sizes`, in units of `bs`), each from its own stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Draws {
    pub read_pct: Option<u8>,
    pub dir_seed: u64,
    pub sizes: Option<draw::Sizes>,
    pub size_seed: u64,
}

/// One op as the timed loop issues it: where, which way, and (in a block-size mix) the index
/// of its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub op: Op,
    pub write: bool,
    pub size: u8,
}

/// Where a sequential (or reverse) pass of a block-size mix has got to: its next block, in
/// units of `bs`. Each op starts where the last one ended, so the loop keeps this one number
/// from op to op; it starts again at op 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub unit: u64,
}

/// The ops of one worker in one phase, generated on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSeq {
    /// Ops the worker performs (blocks x pieces per block).
    pub n_ops: u64,
    /// Blocks of `bs` bytes the worker moves.
    pub n_blocks: u64,
    pub bs: u64,
    pub order: OrderMap,
    pub map: BlockMap,
    /// Set for striped layouts: each block becomes `per_block` ops on component files.
    pub pieces: Option<Pieces>,
    /// What each op draws besides its block (nothing: every op of `bs` the phase's way).
    pub draws: Draws,
}

impl OpSeq {
    /// The `k`-th op (k < n_ops).
    #[inline(always)]
    pub fn op(&self, k: u64) -> Op {
        match self.pieces {
            None => {
                let (file, offset) = self.map.locate(self.order.apply(k, self.n_blocks), self.bs);
                Op { file, offset, len: self.bs }
            }
            Some(p) => {
                let (block, piece) = (k / p.per_block, k % p.per_block);
                let (lfile, loff) = self.map.locate(self.order.apply(block, self.n_blocks), self.bs);
                let (t, offset) = p.stripe.locate(loff + piece * p.len);
                Op { file: lfile * p.stripe.count + t, offset, len: p.len }
            }
        }
    }

    /// The `k`-th op with its direction (`write`: the phase's, unless it is mixed) and size;
    /// `cur` carries a sequential pass of a block-size mix from op to op (ops are asked for in
    /// order: 0, 1, 2, ..., and from 0 again).
    #[inline(always)]
    pub fn step(&self, k: u64, cur: &mut Cursor, write: bool) -> Step {
        let write = self.writes_at(k, write);
        match self.draws.sizes {
            None => Step { op: self.op(k), write, size: 0 },
            Some(s) => {
                let (op, size) = self.sized(k, cur, &s);
                Step { op, write, size: size as u8 }
            }
        }
    }

    /// Whether op `k` (a block, when its pieces go together) writes: the phase's way
    /// (`write`), or in a mixed phase as drawn.
    #[inline(always)]
    pub fn writes_at(&self, k: u64, write: bool) -> bool {
        match self.draws.read_pct {
            None => write,
            Some(p) => !draw::reads(p, self.draws.dir_seed, k),
        }
    }

    /// Op `k` of a block-size mix and the index of its size.
    #[inline(always)]
    fn sized(&self, k: u64, cur: &mut Cursor, s: &draw::Sizes) -> (Op, usize) {
        let (j, i) = self.sized_at(k, cur, s);
        let (file, offset) = self.map.locate(j, self.bs);
        (Op { file, offset, len: s.units[i] as u64 * self.bs }, i)
    }

    /// The first block of op `k` of a block-size mix and the index of its size: drawn, then
    /// shrunk to the largest size that still fits before the end of its file or segment (as
    /// fio does).
    #[inline(always)]
    fn sized_at(&self, k: u64, cur: &mut Cursor, s: &draw::Sizes) -> (u64, usize) {
        let want = s.pick(self.draws.size_seed, k);
        let n = self.n_blocks;
        match self.order {
            OrderMap::Seq => {
                if k == 0 || cur.unit >= n {
                    cur.unit = 0;
                }
                let j = cur.unit;
                let i = s.fit(want, self.map.room_after(j, n));
                cur.unit += s.units[i] as u64;
                (j, i)
            }
            OrderMap::Reverse => {
                if k == 0 || cur.unit == 0 {
                    cur.unit = n;
                }
                let i = s.fit(want, self.map.room_before(cur.unit));
                cur.unit -= s.units[i] as u64;
                (cur.unit, i)
            }
            order => {
                let j = order.apply(k, n);
                (j, s.fit(want, self.map.room_after(j, n)))
            }
        }
    }

    /// The smallest pieces the ops of this sequence cover, counted over the worker's blocks:
    /// blocks of a mix's smallest size, else ops (a striped block's pieces apart).
    pub fn n_units(&self) -> u64 {
        match self.draws.sizes {
            Some(_) => self.n_blocks,
            None => self.n_blocks * self.pieces.map_or(1, |p| p.per_block),
        }
    }

    /// The units ([`OpSeq::n_units`]) op `k` covers: the first and how many.
    #[inline]
    pub fn units_of(&self, k: u64, cur: &mut Cursor) -> (u64, u64) {
        match (self.draws.sizes, self.pieces) {
            (Some(s), _) => {
                let (j, i) = self.sized_at(k, cur, &s);
                (j, s.units[i] as u64)
            }
            (None, Some(p)) => {
                (self.order.apply(k / p.per_block, self.n_blocks) * p.per_block + k % p.per_block, 1)
            }
            (None, None) => (self.order.apply(k, self.n_blocks), 1),
        }
    }

    /// The ops of one pass, with their directions and sizes (tests and replays).
    pub fn steps(&self, write: bool) -> impl Iterator<Item = Step> + '_ {
        let mut cur = Cursor::default();
        (0..self.n_ops).map(move |k| self.step(k, &mut cur, write))
    }

    /// Whether each op's block is drawn afresh from its index, so a time-bounded phase goes on
    /// past its planned ops with new draws instead of wrapping round to op 0 again.
    pub fn endless(&self) -> bool {
        matches!(self.order, OrderMap::Drawn(_))
    }

    /// Ops of one pass of a block-size mix: a sequential pass ends where the blocks do; a
    /// drawn one once it has moved as many bytes as the blocks hold (as fio's `size`).
    pub(super) fn sized_ops(&self) -> u64 {
        let mut cur = Cursor::default();
        let (mut k, mut units) = (0u64, 0u64);
        while units < self.n_blocks {
            units += self.step(k, &mut cur, false).op.len / self.bs;
            k += 1;
        }
        k
    }

    pub fn iter(&self) -> impl Iterator<Item = Op> + '_ {
        self.steps(false).map(|s| s.op)
    }

    pub fn bytes(&self) -> u64 {
        self.n_blocks * self.bs
    }

    /// Bytes per op: bs, or the piece length of a striped file.
    pub fn op_len(&self) -> u64 {
        self.pieces.map_or(self.bs, |p| p.len)
    }

    /// With `pieces = parallel` and blocks of several pieces: the pieces per block, issued
    /// together; else 0 (every op on its own).
    pub fn parallel_pieces(&self) -> u64 {
        match self.pieces {
            Some(p) if p.parallel && p.per_block > 1 => p.per_block,
            _ => 0,
        }
    }

    /// The ops the timed loop times: one per block when its pieces go together, else one per
    /// op.
    pub fn timed_ops(&self) -> u64 {
        if self.parallel_pieces() > 0 { self.n_blocks } else { self.n_ops }
    }
}
