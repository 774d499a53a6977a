//! Pure planning: a spec becomes, for every phase and worker, the exact (file, offset, length)
//! of each operation. No I/O happens here, so all offset arithmetic can be tested exhaustively.
//!
//! Op `k` of a worker is found in two steps: the order maps `k` to a block index `j`
//! ([`OrderMap`]), and the layout maps `j` to a file and offset ([`BlockMap`]). Both are O(1)
//! per op and need no memory per op, so a plan for 100 M ops is as small as one for 10.

use serde::Serialize;

use crate::spec::{CachePolicy, Layout, OpKind, Order, Spec};

/// One operation: `len` bytes at `offset` of the worker's `file`-th open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// Index into the worker's own file list ([`WorkerPlan::files`]).
    pub file: u32,
    pub offset: u64,
    pub len: u64,
}

/// A file the run creates: which target directory holds it, its name, and its final size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedFile {
    pub target: usize,
    pub name: String,
    pub size_bytes: u64,
}

/// Maps a block index to (local file, offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMap {
    /// Blocks laid end to end in local file 0 from `base`.
    Contiguous { base: u64 },
}

impl BlockMap {
    #[inline(always)]
    fn locate(&self, j: u64, bs: u64) -> (u32, u64) {
        match *self {
            BlockMap::Contiguous { base } => (0, base + j * bs),
        }
    }
}

/// Maps an op index to a block index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderMap {
    Seq,
    Reverse,
    Random(Permutation),
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

/// The ops of one worker in one phase, generated on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSeq {
    pub n_ops: u64,
    pub bs: u64,
    pub order: OrderMap,
    pub map: BlockMap,
}

impl OpSeq {
    /// The `k`-th op (k < n_ops).
    #[inline(always)]
    pub fn op(&self, k: u64) -> Op {
        let j = match self.order {
            OrderMap::Seq => k,
            OrderMap::Reverse => self.n_ops - 1 - k,
            OrderMap::Random(p) => p.apply(k),
        };
        let (file, offset) = self.map.locate(j, self.bs);
        Op { file, offset, len: self.bs }
    }

    pub fn iter(&self) -> impl Iterator<Item = Op> + '_ {
        (0..self.n_ops).map(move |k| self.op(k))
    }

    pub fn bytes(&self) -> u64 {
        self.n_ops * self.bs
    }
}

/// One worker's part of a phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPlan {
    pub worker: u32,
    /// Global file ids ([`RunPlan::files`]) this worker opens, in local index order.
    pub files: Vec<u32>,
    pub ops: OpSeq,
}

/// One phase: what every worker does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhasePlan {
    pub index: usize,
    pub name: String,
    pub op: OpKind,
    pub order: Order,
    pub cache: CachePolicy,
    pub workers: Vec<WorkerPlan>,
}

impl PhasePlan {
    pub fn bytes(&self) -> u64 {
        self.workers.iter().map(|w| w.ops.bytes()).sum()
    }
}

/// Everything one repetition does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    pub files: Vec<PlannedFile>,
    pub phases: Vec<PhasePlan>,
    /// The first phase reads or rewrites, so the files must be laid out (untimed) first.
    pub layout_first: bool,
}

impl RunPlan {
    /// Bytes on disk at the end of a repetition (what preflight checks against free space).
    pub fn disk_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size_bytes).sum()
    }
}

/// The seed of worker `w`'s random order: distinct per worker, fixed by the spec's seed.
pub fn worker_seed(seed: u64, worker: u32) -> u64 {
    let mut s = seed ^ (worker as u64).wrapping_mul(0xA24B_AED4_963E_E407);
    splitmix64(&mut s)
}

/// Plans one repetition of `spec`.
pub fn plan(spec: &Spec) -> RunPlan {
    let w_count = spec.workers;
    let n_ops = spec.size_bytes / spec.bs_bytes;
    let targets = spec.dirs.len().max(1);
    let files: Vec<PlannedFile> = match spec.layout {
        Layout::FilePerWorker => (0..w_count)
            .map(|w| PlannedFile {
                target: w as usize % targets,
                name: format!("w{w:04}.dat"),
                size_bytes: spec.size_bytes,
            })
            .collect(),
        Layout::Shared => vec![PlannedFile {
            target: 0,
            name: "shared.dat".into(),
            size_bytes: spec.size_bytes * w_count as u64,
        }],
    };
    let phases = spec
        .phases
        .iter()
        .enumerate()
        .map(|(index, ph)| {
            let workers = (0..w_count)
                .map(|w| {
                    let (file, base) = match spec.layout {
                        Layout::FilePerWorker => (w, 0),
                        Layout::Shared => (0, w as u64 * spec.size_bytes),
                    };
                    let order = match ph.order {
                        Order::Seq => OrderMap::Seq,
                        Order::Reverse => OrderMap::Reverse,
                        Order::Random => OrderMap::Random(Permutation::new(n_ops, worker_seed(spec.seed, w))),
                    };
                    WorkerPlan {
                        worker: w,
                        files: vec![file],
                        ops: OpSeq { n_ops, bs: spec.bs_bytes, order, map: BlockMap::Contiguous { base } },
                    }
                })
                .collect();
            PhasePlan { index, name: ph.name.clone(), op: ph.op, order: ph.order, cache: ph.cache, workers }
        })
        .collect();
    RunPlan { files, layout_first: spec.phases.first().is_some_and(|p| p.op != OpKind::Write), phases }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Params, ResolveEnv, resolve};
    use proptest::prelude::*;

    fn spec(pairs: &[(&str, &str)]) -> Spec {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(k, v.split(',').map(String::from).collect()).unwrap();
        }
        let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
        resolve(&p, &env).unwrap()
    }

    /// Every byte of every file is covered exactly once per phase.
    fn assert_exact_cover(plan: &RunPlan) {
        for ph in &plan.phases {
            let mut seen: Vec<Vec<u64>> = plan.files.iter().map(|_| Vec::new()).collect();
            for w in &ph.workers {
                for op in w.ops.iter() {
                    let gid = w.files[op.file as usize] as usize;
                    assert!(op.offset + op.len <= plan.files[gid].size_bytes);
                    seen[gid].push(op.offset);
                }
            }
            for (gid, offs) in seen.iter_mut().enumerate() {
                offs.sort_unstable();
                let bs = ph.workers[0].ops.bs;
                let want: Vec<u64> = (0..plan.files[gid].size_bytes / bs).map(|i| i * bs).collect();
                assert_eq!(*offs, want, "file {gid} in phase {}", ph.name);
            }
        }
    }

    #[test]
    fn file_per_worker_and_shared_cover_exactly() {
        for layout in ["file-per-worker", "shared"] {
            for workers in ["1", "3", "4"] {
                for order in ["seq", "reverse", "random"] {
                    let s = spec(&[
                        ("layout", layout),
                        ("workers", workers),
                        ("size", "64KiB"),
                        ("bs", "4KiB"),
                        ("order", order),
                    ]);
                    assert_exact_cover(&plan(&s));
                }
            }
        }
    }

    #[test]
    fn shared_segments_are_contiguous_and_disjoint() {
        let s = spec(&[("layout", "shared"), ("workers", "3"), ("size", "16KiB"), ("bs", "4KiB")]);
        let p = plan(&s);
        assert_eq!(p.files.len(), 1);
        assert_eq!(p.files[0].size_bytes, 48 << 10);
        let offs: Vec<Vec<u64>> =
            p.phases[0].workers.iter().map(|w| w.ops.iter().map(|o| o.offset).collect()).collect();
        assert_eq!(offs[0], [0, 4096, 8192, 12288]);
        assert_eq!(offs[1], [16384, 20480, 24576, 28672]);
        assert_eq!(offs[2][0], 32768);
    }

    #[test]
    fn reverse_is_reverse() {
        let s = spec(&[("size", "16KiB"), ("bs", "4KiB"), ("order", "reverse")]);
        let offs: Vec<u64> = plan(&s).phases[0].workers[0].ops.iter().map(|o| o.offset).collect();
        assert_eq!(offs, [12288, 8192, 4096, 0]);
    }

    #[test]
    fn random_differs_per_worker_and_is_reproducible() {
        let s = spec(&[("workers", "2"), ("size", "1MiB"), ("bs", "4KiB"), ("order", "random")]);
        let a: Vec<u64> = plan(&s).phases[0].workers[0].ops.iter().map(|o| o.offset).collect();
        let b: Vec<u64> = plan(&s).phases[0].workers[1].ops.iter().map(|o| o.offset).collect();
        let a2: Vec<u64> = plan(&s).phases[0].workers[0].ops.iter().map(|o| o.offset).collect();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        let seq: Vec<u64> = (0..256).map(|i| i * 4096).collect();
        assert_ne!(a, seq, "random order must not be sequential");
    }

    #[test]
    fn layout_first_when_reading_first() {
        assert!(!plan(&spec(&[("ops", "write,read")])).layout_first);
        assert!(plan(&spec(&[("ops", "read")])).layout_first);
        assert!(plan(&spec(&[("ops", "rewrite")])).layout_first);
    }

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

        #[test]
        fn plans_cover_every_byte_once(workers in 1u32..6, blocks in 1u64..40, bs_kib in 1u64..9, shared in any::<bool>(), order in 0usize..3, seed in any::<u64>()) {
            let bs = bs_kib * 1024;
            let s = spec(&[
                ("workers", &workers.to_string()),
                ("size", &(blocks * bs).to_string()),
                ("bs", &bs.to_string()),
                ("layout", if shared { "shared" } else { "file-per-worker" }),
                ("order", ["seq", "reverse", "random"][order]),
                ("seed", &seed.to_string()),
            ]);
            assert_exact_cover(&plan(&s));
        }
    }
}
