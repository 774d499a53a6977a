//! Pure planning: a spec becomes, for every phase and worker, the exact (file, offset, length)
//! of each operation. No I/O happens here, so all offset arithmetic can be tested exhaustively.
//!
//! Op `k` of a worker is found in three steps: the order maps the block step to a block index
//! ([`OrderMap`]), the layout maps the block to a logical file and offset ([`BlockMap`]), and
//! for striped files the stripe maps each piece of the block to a component file and offset
//! ([`Stripe`]). All are O(1) per op and need no memory per op, so a plan for 100 M ops is as
//! small as one for 10.

use serde::Serialize;

use crate::spec::{CachePolicy, Layout, OpKind, Order, Phase, PiecesMode, Spec};

mod check;
pub mod draw;
pub mod fill;
mod layout;
pub mod mem;
pub mod namespace;
mod order;
pub mod replay;
mod stripe;
pub mod verify;

pub use check::check;
pub use layout::BlockMap;
mod ops;
pub use ops::{Cursor, Draws, Op, OpSeq, Pieces, Step};
pub use order::{OrderMap, Permutation, splitmix64};
pub use stripe::Stripe;

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

/// One worker's part of a phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPlan {
    pub worker: u32,
    /// Global file ids ([`RunPlan::files`]) this worker opens, in local index order.
    pub files: Vec<u32>,
    pub ops: OpSeq,
    /// A metadata phase: the items this worker visits (its data ops are then none).
    pub md: Option<namespace::MdWork>,
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

    /// The items a metadata phase visits (0 for a find, which counts what it finds).
    pub fn md_ops(&self) -> u64 {
        self.workers.iter().filter_map(|w| w.md).map(|m| m.items).sum()
    }
}

/// Everything one repetition does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    pub files: Vec<PlannedFile>,
    pub phases: Vec<PhasePlan>,
    /// The first phase reads or rewrites, so the files must be laid out (untimed) first.
    pub layout_first: bool,
    /// The namespace of the metadata phases, if the run has any.
    pub namespace: Option<namespace::NsPlan>,
}

impl RunPlan {
    /// Bytes on disk at the end of a repetition (what preflight checks against free space),
    /// the namespace's at its fullest included.
    pub fn disk_bytes(&self) -> u64 {
        let ns: u64 = self.namespace.as_ref().map_or(0, |n| {
            let targets = n.roots.iter().map(|r| r.target).max().map_or(0, |t| t + 1);
            (0..targets).map(|t| n.on_target(t).0).sum()
        });
        self.files.iter().map(|f| f.size_bytes).sum::<u64>().saturating_add(ns)
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

/// The targets files are spread over: the target directories, or with servers the servers.
fn targets(spec: &Spec) -> usize {
    spec.servers.as_ref().map_or(spec.dirs.len(), |s| s.count as usize).max(1)
}

/// The target (directory, or server) that holds global file `gid` of `spec`'s plan: a stripe
/// component's own, else the file's (without building the plan).
pub fn target_of(spec: &Spec, gid: u32) -> u32 {
    match stripe_of(spec) {
        Some(s) => gid % s.count,
        None => gid % targets(spec) as u32,
    }
}

fn files_of(spec: &Spec) -> Vec<PlannedFile> {
    let targets = targets(spec);
    let stripe = stripe_of(spec);
    // A run of metadata phases alone has no data files.
    if spec.phases.iter().all(|p| p.op.is_metadata()) {
        return vec![];
    }
    // A blast's streams are files nowhere: they hold nothing.
    let blast = spec.phases.iter().all(|p| p.op == OpKind::Blast);
    let logical: Vec<(String, u64)> = if spec.layout.per_worker_files() {
        let size = if blast { 0 } else { spec.size_bytes };
        (0..spec.file_count()).map(|f| (format!("w{f:04}"), size)).collect()
    } else {
        let name = if spec.layout == Layout::Striped { "striped" } else { "shared" };
        // Resolution refuses a spec whose shared file passes 2^63 bytes: nothing saturates here.
        vec![(name.to_string(), spec.size_bytes.saturating_mul(spec.workers as u64))]
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
        Pieces { stripe: s, per_block: bs / len, len, parallel: spec.pieces == PiecesMode::Parallel }
    });
    let physical = |logical: u32| (logical * comps..(logical + 1) * comps).collect::<Vec<u32>>();
    let shared_blocks = spec.size_bytes.saturating_mul(spec.workers as u64) / bs;
    // A distribution's constants, made once for the workers' usual equal block counts.
    let mut dist: Option<(u64, draw::Dist)> = None;
    let workers = (0..w_count)
        .map(|w| {
            let (files, n_blocks, map) = if layout.per_worker_files() {
                let set = ph.files.map_or(spec.file_count(), |n| n.min(spec.file_count()));
                let mine: Vec<u32> = (w..set).step_by(w_count as usize).collect();
                let blocks = spec.size_bytes / bs;
                let m = mine.len() as u32;
                let files = mine.iter().flat_map(|&f| physical(f)).collect();
                (files, m as u64 * blocks, BlockMap::RoundRobin { files: m, rr: rr.min(m), blocks })
            } else if layout == Layout::SharedStrided {
                let (w64, n) = (w as u64, w_count as u64);
                let count = (shared_blocks - w64).div_ceil(n);
                (physical(0), count, BlockMap::Strided { first: w64, stride: n })
            } else if spec.segments > 1 {
                // IOR's segments: worker w's place in every segment of W x B bytes.
                let block = spec.size_bytes / spec.segments as u64;
                let (w64, n) = (w as u64, w_count as u64);
                let map =
                    BlockMap::Segmented { base: w64 * block, per_seg: block / bs, seg_stride: n * block };
                (physical(0), spec.size_bytes / bs, map)
            } else {
                // Contiguous segments: worker w owns blocks [B w / W, B (w+1) / W) (in 128 bits:
                // B may be close to 2^63).
                let at = |w: u64| (shared_blocks as u128 * w as u128 / w_count as u128) as u64;
                let (first, end) = (at(w as u64), at(w as u64 + 1));
                (physical(0), end - first, BlockMap::Contiguous { base: first * bs })
            };
            let seed = worker_seed(spec.seed, w);
            let order = match ph.order {
                Order::Seq => OrderMap::Seq,
                Order::Reverse => OrderMap::Reverse,
                Order::Random => OrderMap::Random(Permutation::new(n_blocks, seed)),
                drawn => {
                    let d = match dist {
                        Some((n, d)) if n == n_blocks => d,
                        _ => draw::Dist::of(drawn, n_blocks).expect("an order with repeats draws"),
                    };
                    dist = Some((n_blocks, d));
                    OrderMap::Drawn(draw::Drawn::new(d, n_blocks, seed))
                }
            };
            let draws = Draws {
                read_pct: spec.phase_rwmixread(ph),
                dir_seed: draw::stream(seed, draw::DIRECTION),
                sizes: spec.workload.bssplit.as_ref().map(draw::Sizes::of),
                size_seed: draw::stream(seed, draw::SIZE),
            };
            let mut ops = OpSeq { n_ops: 0, n_blocks, bs, order, map, pieces, draws };
            ops.n_ops = match draws.sizes {
                Some(_) => ops.sized_ops(),
                None => n_blocks * pieces.map_or(1, |p| p.per_block),
            };
            WorkerPlan { worker: w, files, ops, md: None }
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

/// A metadata phase: no data ops; each worker's items.
fn md_phase_plan(spec: &Spec, index: usize, ph: &Phase, work: Vec<namespace::MdWork>) -> PhasePlan {
    let none = OpSeq {
        n_ops: 0,
        n_blocks: 0,
        bs: spec.bs_bytes,
        order: OrderMap::Seq,
        map: BlockMap::Contiguous { base: 0 },
        pieces: None,
        draws: Draws::default(),
    };
    PhasePlan {
        index,
        name: ph.name.clone(),
        op: ph.op,
        order: ph.order,
        cache: ph.cache,
        layout: spec.layout,
        round_robin: 1,
        workers: work
            .into_iter()
            .enumerate()
            .map(|(w, m)| WorkerPlan { worker: w as u32, files: vec![], ops: none, md: Some(m) })
            .collect(),
    }
}

/// Plans one repetition of `spec`.
pub fn plan(spec: &Spec) -> RunPlan {
    let (ns, mut works) = match namespace::plan(spec) {
        Some((ns, works)) => (Some(ns), works),
        None => (None, vec![]),
    };
    let data: Vec<&Phase> = spec.phases.iter().filter(|p| !p.op.is_metadata()).collect();
    RunPlan {
        files: files_of(spec),
        phases: spec
            .phases
            .iter()
            .enumerate()
            .map(|(i, ph)| match works.get_mut(i).and_then(Option::take) {
                Some(work) => md_phase_plan(spec, i, ph, work),
                None => phase_plan(spec, i, ph),
            })
            .collect(),
        layout_first: data
            .first()
            .is_some_and(|p| matches!(p.op, OpKind::Read | OpKind::Rewrite | OpKind::Rw)),
        namespace: ns,
    }
}

#[cfg(test)]
mod tests;
