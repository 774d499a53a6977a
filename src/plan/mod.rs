//! Pure planning: a spec becomes, for every phase and worker, the exact (file, offset, length)
//! of each operation. No I/O happens here, so all offset arithmetic can be tested exhaustively.
//!
//! Op `k` of a worker is found in three steps: the order maps the block step to a block index
//! ([`OrderMap`]), the layout maps the block to a logical file and offset ([`BlockMap`]), and
//! for striped files the stripe maps each piece of the block to a component file and offset
//! ([`Stripe`]). All are O(1) per op and need no memory per op, so a plan for 100 M ops is as
//! small as one for 10.

use serde::Serialize;

use crate::spec::{CachePolicy, Layout, OpKind, Order, Phase, Spec};

pub mod fill;
mod layout;
pub mod mem;
mod order;
mod stripe;
pub mod verify;

pub use layout::BlockMap;
pub use order::{OrderMap, Permutation, splitmix64};
pub use stripe::Stripe;

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
    /// The logical file this file holds: all of it, or one stripe component of it.
    pub logical: u32,
    /// For a stripe component, its index among the logical file's components.
    pub component: Option<u32>,
}

/// How blocks of a striped file split into pieces, one op each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pieces {
    pub stripe: Stripe,
    /// Pieces per block: bs / unit when bs spans several units, else 1.
    pub per_block: u64,
    /// Bytes per piece: min(bs, unit).
    pub len: u64,
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

    pub fn iter(&self) -> impl Iterator<Item = Op> + '_ {
        (0..self.n_ops).map(move |k| self.op(k))
    }

    pub fn bytes(&self) -> u64 {
        self.n_blocks * self.bs
    }

    /// Bytes per op: bs, or the piece length of a striped file.
    pub fn op_len(&self) -> u64 {
        self.pieces.map_or(self.bs, |p| p.len)
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
    pub layout: Layout,
    /// Files a worker visits at a time, block by block.
    pub round_robin: u32,
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

/// The stripe of a spec's files, if its layout is striped.
pub fn stripe_of(spec: &Spec) -> Option<Stripe> {
    match (spec.stripe_unit_bytes, spec.stripe_count) {
        (Some(unit), Some(count)) if spec.layout.striped() => Some(Stripe { unit, count }),
        _ => None,
    }
}

/// What a file's bytes encode: the logical file they belong to and, for a stripe component,
/// how its offsets map back to logical offsets. Written data is stamped with logical offsets,
/// so a striped file reads back as one logical file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileRole {
    pub logical: u32,
    pub component: Option<(Stripe, u32)>,
}

impl FileRole {
    /// The role of global file `gid` of `spec`'s plan (without building the plan).
    pub fn of(spec: &Spec, gid: u32) -> FileRole {
        match stripe_of(spec) {
            Some(s) => FileRole { logical: gid / s.count, component: Some((s, gid % s.count)) },
            None => FileRole { logical: gid, component: None },
        }
    }

    /// The logical offset of byte `offset` of this file.
    #[inline(always)]
    pub fn logical_offset(&self, offset: u64) -> u64 {
        match self.component {
            None => offset,
            Some((s, t)) => s.to_logical(t, offset),
        }
    }
}

/// Bytes per op when laying a file out or writing it: bs, or the piece length when striped.
pub fn piece_len(spec: &Spec) -> u64 {
    stripe_of(spec).map_or(spec.bs_bytes, |s| spec.bs_bytes.min(s.unit))
}

fn files_of(spec: &Spec) -> Vec<PlannedFile> {
    let targets = spec.dirs.len().max(1);
    let stripe = stripe_of(spec);
    let logical: Vec<(String, u64)> = if spec.layout.per_worker_files() {
        (0..spec.file_count()).map(|f| (format!("w{f:04}"), spec.size_bytes)).collect()
    } else {
        let name = if spec.layout == Layout::Striped { "striped" } else { "shared" };
        vec![(name.to_string(), spec.size_bytes * spec.workers as u64)]
    };
    let mut files = vec![];
    for (f, (stem, size)) in logical.into_iter().enumerate() {
        match stripe {
            None => files.push(PlannedFile {
                target: f % targets,
                name: format!("{stem}.dat"),
                size_bytes: size,
                logical: f as u32,
                component: None,
            }),
            // Component t lives on target t; names stay distinct when a dir is repeated.
            Some(s) => files.extend((0..s.count).map(|t| PlannedFile {
                target: t as usize,
                name: format!("{stem}.s{t:02}.dat"),
                size_bytes: s.component_size(size, t),
                logical: f as u32,
                component: Some(t),
            })),
        }
    }
    files
}

fn phase_plan(spec: &Spec, index: usize, ph: &Phase) -> PhasePlan {
    let w_count = spec.phase_workers(ph);
    let rr = spec.phase_round_robin(ph);
    let layout = spec.phase_layout(ph);
    let bs = spec.bs_bytes;
    let stripe = stripe_of(spec);
    let comps = stripe.map_or(1, |s| s.count);
    let pieces = stripe.map(|s| {
        let len = bs.min(s.unit);
        Pieces { stripe: s, per_block: bs / len, len }
    });
    let physical = |logical: u32| (logical * comps..(logical + 1) * comps).collect::<Vec<u32>>();
    let shared_blocks = spec.size_bytes * spec.workers as u64 / bs;
    let workers = (0..w_count)
        .map(|w| {
            let (files, n_blocks, map) = if layout.per_worker_files() {
                let mine: Vec<u32> = (w..spec.file_count()).step_by(w_count as usize).collect();
                let blocks = spec.size_bytes / bs;
                let m = mine.len() as u32;
                let files = mine.iter().flat_map(|&f| physical(f)).collect();
                (files, m as u64 * blocks, BlockMap::RoundRobin { files: m, rr: rr.min(m), blocks })
            } else if layout == Layout::SharedStrided {
                let (w64, n) = (w as u64, w_count as u64);
                let count = (shared_blocks - w64).div_ceil(n);
                (physical(0), count, BlockMap::Strided { first: w64, stride: n })
            } else {
                // Contiguous segments: worker w owns blocks [B w / W, B (w+1) / W).
                let first = shared_blocks * w as u64 / w_count as u64;
                let end = shared_blocks * (w as u64 + 1) / w_count as u64;
                (physical(0), end - first, BlockMap::Contiguous { base: first * bs })
            };
            let order = match ph.order {
                Order::Seq => OrderMap::Seq,
                Order::Reverse => OrderMap::Reverse,
                Order::Random => OrderMap::Random(Permutation::new(n_blocks, worker_seed(spec.seed, w))),
            };
            let n_ops = n_blocks * pieces.map_or(1, |p| p.per_block);
            WorkerPlan { worker: w, files, ops: OpSeq { n_ops, n_blocks, bs, order, map, pieces } }
        })
        .collect();
    PhasePlan {
        index,
        name: ph.name.clone(),
        op: ph.op,
        order: ph.order,
        cache: ph.cache,
        layout,
        round_robin: rr,
        workers,
    }
}

/// Plans one repetition of `spec`.
pub fn plan(spec: &Spec) -> RunPlan {
    RunPlan {
        files: files_of(spec),
        phases: spec.phases.iter().enumerate().map(|(i, ph)| phase_plan(spec, i, ph)).collect(),
        layout_first: spec.phases.first().is_some_and(|p| p.op != OpKind::Write),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Params, ResolveEnv, resolve};
    use proptest::prelude::*;

    fn env() -> ResolveEnv {
        ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }
    }

    fn spec(pairs: &[(&str, &str)]) -> Spec {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(k, v.split(',').map(String::from).collect()).unwrap();
        }
        resolve(&p, &env()).unwrap()
    }

    /// Every byte of every file is covered exactly once per phase, ops stay inside their
    /// file, and each worker moves what its plan says.
    fn assert_exact_cover(plan: &RunPlan) {
        for ph in &plan.phases {
            let mut seen: Vec<Vec<(u64, u64)>> = plan.files.iter().map(|_| Vec::new()).collect();
            for w in &ph.workers {
                let mut n = 0;
                for op in w.ops.iter() {
                    let gid = w.files[op.file as usize] as usize;
                    assert!(op.offset + op.len <= plan.files[gid].size_bytes, "{op:?} beyond file {gid}");
                    assert_eq!(op.len, w.ops.op_len());
                    seen[gid].push((op.offset, op.len));
                    n += op.len;
                }
                assert_eq!(n, w.ops.bytes());
            }
            for (gid, ops) in seen.iter_mut().enumerate() {
                ops.sort_unstable();
                let mut next = 0;
                for &(off, len) in ops.iter() {
                    assert_eq!(off, next, "file {gid} in phase {}: gap or overlap at {off}", ph.name);
                    next = off + len;
                }
                assert_eq!(next, plan.files[gid].size_bytes, "file {gid} in phase {}", ph.name);
            }
        }
    }

    #[test]
    fn every_layout_covers_exactly() {
        let dirs = std::env::temp_dir().display().to_string();
        let dirs3 = format!("{dirs},{dirs},{dirs}");
        for layout in Layout::NAMES {
            for workers in ["1", "3", "4"] {
                for order in ["seq", "reverse", "random"] {
                    let mut pairs = vec![
                        ("layout", *layout),
                        ("workers", workers),
                        ("size", "64KiB"),
                        ("bs", "4KiB"),
                        ("order", order),
                        ("dirs", &dirs3),
                        ("ops", "write,read:workers=2,read:workers=1"),
                    ];
                    if layout.ends_with("per-worker") {
                        pairs.push(("files", "5"));
                    }
                    let s = spec(&pairs);
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
    fn shared_strided_gives_worker_w_every_wth_block() {
        let s = spec(&[("layout", "shared-strided"), ("workers", "3"), ("size", "8KiB"), ("bs", "2KiB")]);
        let p = plan(&s);
        let blocks: Vec<Vec<u64>> =
            p.phases[0].workers.iter().map(|w| w.ops.iter().map(|o| o.offset / 2048).collect()).collect();
        assert_eq!(blocks, [vec![0, 3, 6, 9], vec![1, 4, 7, 10], vec![2, 5, 8, 11]]);
    }

    #[test]
    fn phases_with_their_own_workers_split_the_same_files() {
        // R4: 4 files written by 2 workers (2-way interleave), read by 1 worker, then by 4.
        let s = spec(&[
            ("files", "4"),
            ("size", "8KiB"),
            ("bs", "4KiB"),
            ("ops", "write:workers=2,read:workers=1,read:workers=4"),
        ]);
        let p = plan(&s);
        assert_eq!(p.files.len(), 4);
        let files: Vec<Vec<Vec<u32>>> =
            p.phases.iter().map(|ph| ph.workers.iter().map(|w| w.files.clone()).collect()).collect();
        assert_eq!(files[0], [vec![0, 2], vec![1, 3]]);
        assert_eq!(files[1], [vec![0, 1, 2, 3]]);
        assert_eq!(files[2], [vec![0], vec![1], vec![2], vec![3]]);
        // One reader visits its files one after another (round_robin 1).
        let seq: Vec<(u32, u64)> = p.phases[1].workers[0].ops.iter().map(|o| (o.file, o.offset)).collect();
        assert_eq!(seq, [(0, 0), (0, 4096), (1, 0), (1, 4096), (2, 0), (2, 4096), (3, 0), (3, 4096)]);
    }

    #[test]
    fn files_per_worker_visits_block_1_of_each_then_block_2() {
        // R5: one worker writes 3 files round-robin.
        let s = spec(&[("files_per_worker", "3"), ("size", "8KiB"), ("bs", "4KiB"), ("ops", "write")]);
        assert_eq!(s.files, 3);
        assert_eq!(s.round_robin, 3);
        let p = plan(&s);
        let seq: Vec<(u32, u64)> = p.phases[0].workers[0].ops.iter().map(|o| (o.file, o.offset)).collect();
        assert_eq!(seq, [(0, 0), (1, 0), (2, 0), (0, 4096), (1, 4096), (2, 4096)]);
    }

    #[test]
    fn striped_blocks_split_into_pieces_on_the_right_components() {
        let d = std::env::temp_dir().display().to_string();
        let dirs = format!("{d},{d},{d},{d}");
        // One worker, 16 KiB blocks over a 4 KiB unit on 4 targets: each block is 4 pieces,
        // one per component, all at the same component offset.
        let s = spec(&[
            ("layout", "striped"),
            ("dirs", &dirs),
            ("stripe_unit", "4KiB"),
            ("size", "32KiB"),
            ("bs", "16KiB"),
            ("ops", "write"),
        ]);
        let p = plan(&s);
        let names: Vec<&str> = p.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["striped.s00.dat", "striped.s01.dat", "striped.s02.dat", "striped.s03.dat"]);
        assert!(p.files.iter().all(|f| f.size_bytes == 8192));
        let ops: Vec<(u32, u64, u64)> =
            p.phases[0].workers[0].ops.iter().map(|o| (o.file, o.offset, o.len)).collect();
        assert_eq!(ops.len(), 8);
        assert_eq!(&ops[..4], &[(0, 0, 4096), (1, 0, 4096), (2, 0, 4096), (3, 0, 4096)]);
        assert_eq!(ops[4], (0, 4096, 4096));
        // Stripe count 2: only the first two dirs.
        let s = spec(&[
            ("layout", "striped-per-worker"),
            ("workers", "2"),
            ("dirs", &dirs),
            ("stripe_unit", "8KiB"),
            ("stripe_count", "2"),
            ("size", "16KiB"),
            ("bs", "4KiB"),
        ]);
        let p = plan(&s);
        assert_eq!(p.files.len(), 4);
        assert_eq!(p.phases[0].workers[1].files, [2, 3]);
        assert_eq!(p.files[3].name, "w0001.s01.dat");
        assert_eq!(p.files[3].target, 1);
        // 4 KiB blocks inside 8 KiB units: blocks 0,1 on component 0, blocks 2,3 on 1.
        let ops: Vec<(u32, u64)> = p.phases[0].workers[0].ops.iter().map(|o| (o.file, o.offset)).collect();
        assert_eq!(ops, [(0, 0), (0, 4096), (1, 0), (1, 4096)]);
        assert_eq!(
            FileRole::of(&s, 3),
            FileRole { logical: 1, component: Some((Stripe { unit: 8192, count: 2 }, 1)) }
        );
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
        fn plans_cover_every_byte_once(
            workers in 1u32..6,
            blocks in 1u64..24,
            bs_kib in 1u64..9,
            layout in 0usize..5,
            order in 0usize..3,
            seed in any::<u64>(),
            phase_workers in 1u32..6,
            files_extra in 0u32..4,
            rr in 1u32..4,
            unit_shift in 0u32..3,
            targets in 1usize..5,
        ) {
            let bs = bs_kib * 1024;
            let layout = Layout::NAMES[layout];
            let per_worker = matches!(layout, "file-per-worker" | "striped-per-worker");
            let striped = layout.starts_with("striped");
            let d = std::env::temp_dir().display().to_string();
            let dirs = vec![d; targets].join(",");
            let files = workers + files_extra;
            let pw = if per_worker { phase_workers.min(files) } else { phase_workers.min(workers * blocks as u32) };
            let rr = if per_worker { rr.min(files.div_ceil(pw)).min(files.div_ceil(workers)) } else { 1 };
            // A unit that bs is a multiple of (bs / 2^k when that stays a multiple of 512) or
            // a divisor of (bs x 2^k).
            let unit = if unit_shift == 0 { bs } else if bs % (512 << unit_shift) == 0 { bs >> unit_shift } else { bs << unit_shift };
            let ops = format!("write,read:workers={pw}");
            let mut pairs = vec![
                ("workers", workers.to_string()),
                ("size", (blocks * bs).to_string()),
                ("bs", bs.to_string()),
                ("layout", layout.to_string()),
                ("order", ["seq", "reverse", "random"][order].to_string()),
                ("seed", seed.to_string()),
                ("dirs", dirs),
                ("ops", ops),
                ("round_robin", rr.to_string()),
            ];
            if per_worker {
                pairs.push(("files", files.to_string()));
            }
            if striped {
                pairs.push(("stripe_unit", unit.to_string()));
            }
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            assert_exact_cover(&plan(&spec(&pairs)));
        }
    }
}
