//! Pure: who does what in a strategy. From a resolved spec, each worker's role: what it
//! computes each iteration (how long, which parts of the iteration's output), whether it writes
//! them itself or hands them over (and through which hand-off), and what a writer writes, where.
//!
//! The output of one iteration is W parts of `bs` bytes (W = workers). In a file of its own
//! (S1A, S1B) worker w's part of iteration i lies at `i x bs`; in the one shared file (S2, S3,
//! S5) part p of iteration i lies at `(i x W + p) x bs`, so an iteration is one contiguous run
//! of `W x bs` bytes and the single writer writes it with one op.

use super::{Role, Strategy};
use crate::spec::Spec;

/// One message of a producer: `parts` consecutive parts of an iteration, starting at `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    pub first: u32,
    pub parts: u32,
}

/// What a computing worker does each iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compute {
    /// The compute time of one iteration (fill, then spin until this much has passed).
    pub per_iter_ns: u64,
    /// The parts of each iteration it produces.
    pub parts: Parts,
}

/// A hand-off from a producer to the writer (ring `ring` of the shared region).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receive {
    pub ring: u32,
    pub from: u32,
    pub parts: Parts,
}

/// What a writer writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// Global id of its file.
    pub file: u32,
    /// Parts per iteration in its file (1 in a file of its own, W in the shared file).
    pub parts_per_iter: u32,
    /// The messages it receives each iteration, in this order.
    pub receives: Vec<Receive>,
    /// Its engine commits (S5: its sync thread does).
    pub commits: bool,
    /// It writes only this part of each iteration, seeing the file through a view of its parts
    /// (MPI-IO); `None`: every part it holds, as one op.
    pub part: Option<u32>,
}

impl Write {
    /// Parts of each iteration one op writes.
    pub fn parts_per_op(&self) -> u32 {
        if self.part.is_some() { 1 } else { self.parts_per_iter }
    }
}

/// One worker's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolePlan {
    pub worker: u32,
    pub role: Role,
    pub compute: Option<Compute>,
    /// The ring it hands its output to (None: it writes its output itself).
    pub sends: Option<u32>,
    pub write: Option<Write>,
}

/// Every worker's role in one phase of a strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub strategy: Strategy,
    pub workers: u32,
    pub iters: u64,
    /// Bytes per part (the study's bufsize).
    pub bs: u64,
    pub comptime_ns: u64,
    pub roles: Vec<RolePlan>,
    /// The writer runs a sync thread (S5).
    pub sync_thread: bool,
}

impl Plan {
    /// The roles of a resolved spec with a strategy.
    pub fn of(spec: &Spec) -> Option<Plan> {
        let strategy = spec.strategy?;
        Some(Plan::new(
            strategy,
            spec.workers,
            spec.iters.unwrap_or(0),
            spec.bs_bytes,
            spec.comptime_ns.unwrap_or(0),
        ))
    }

    pub fn new(strategy: Strategy, workers: u32, iters: u64, bs: u64, comptime_ns: u64) -> Plan {
        let w = workers;
        // The program computes W x comptime / iters per iteration, split among its compute
        // workers.
        let share = |computers: u32| {
            (w as u128 * comptime_ns as u128 / (iters.max(1) as u128 * computers as u128)) as u64
        };
        let one = |p: u32| Parts { first: p, parts: 1 };
        let roles = match strategy {
            Strategy::S1A | Strategy::S1B => (0..w)
                .map(|p| RolePlan {
                    worker: p,
                    role: Role::ComputeWrite,
                    compute: Some(Compute { per_iter_ns: share(w), parts: one(p) }),
                    sends: None,
                    write: Some(Write {
                        file: p,
                        parts_per_iter: 1,
                        receives: vec![],
                        commits: true,
                        part: None,
                    }),
                })
                .collect(),
            Strategy::MpiIo => (0..w)
                .map(|p| RolePlan {
                    worker: p,
                    role: Role::ComputeWrite,
                    compute: Some(Compute { per_iter_ns: share(w), parts: one(p) }),
                    sends: None,
                    // Part p of every iteration of the one file, through a file view.
                    write: Some(Write {
                        file: 0,
                        parts_per_iter: w,
                        receives: vec![],
                        commits: true,
                        part: Some(p),
                    }),
                })
                .collect(),
            Strategy::S2 | Strategy::S2DT | Strategy::S5 => (0..w)
                .map(|p| {
                    let compute = Some(Compute { per_iter_ns: share(w), parts: one(p) });
                    if p == 0 {
                        let receives = (1..w).map(|q| Receive { ring: q, from: q, parts: one(q) }).collect();
                        RolePlan {
                            worker: 0,
                            role: Role::ComputeWrite,
                            compute,
                            sends: None,
                            write: Some(Write {
                                file: 0,
                                parts_per_iter: w,
                                receives,
                                commits: strategy != Strategy::S5,
                                part: None,
                            }),
                        }
                    } else {
                        RolePlan { worker: p, role: Role::Compute, compute, sends: Some(p), write: None }
                    }
                })
                .collect(),
            Strategy::S3 | Strategy::S3DT => {
                let all = Parts { first: 0, parts: w };
                vec![
                    RolePlan {
                        worker: 0,
                        role: Role::Write,
                        compute: None,
                        sends: None,
                        write: Some(Write {
                            file: 0,
                            parts_per_iter: w,
                            receives: vec![Receive { ring: 1, from: 1, parts: all }],
                            commits: true,
                            part: None,
                        }),
                    },
                    RolePlan {
                        worker: 1,
                        role: Role::Compute,
                        compute: Some(Compute { per_iter_ns: share(1), parts: all }),
                        sends: Some(1),
                        write: None,
                    },
                ]
            }
        };
        Plan { strategy, workers, iters, bs, comptime_ns, roles, sync_thread: strategy == Strategy::S5 }
    }

    /// The file offset of part `part` of iteration `iter` in a file with `parts_per_iter` parts
    /// per iteration.
    pub fn offset(&self, parts_per_iter: u32, iter: u64, part: u32) -> u64 {
        (iter * parts_per_iter as u64 + part as u64) * self.bs
    }

    /// Where a writer's op of iteration `iter` lies in its file.
    pub fn write_offset(&self, w: &Write, iter: u64) -> u64 {
        self.offset(w.parts_per_iter, iter, w.part.unwrap_or(0))
    }

    /// The file view a writer sees its file through (MPI-IO: its part of every iteration).
    pub fn view(&self, w: &Write) -> Option<crate::engine::FileView> {
        w.part.map(|p| crate::engine::FileView {
            disp: p as u64 * self.bs,
            block: self.bs,
            stride: w.parts_per_iter as u64 * self.bs,
        })
    }

    /// The most commits a writer writing `op_len` bytes per iteration can make with `sync`
    /// (one per iteration at most, one per sync size, and the final one), so that the spans of
    /// its commits are kept in memory allocated before the loop; capped at 65,536 (a longer
    /// list grows, at most once per doubling, beside a commit).
    pub fn commits_bound(&self, sync: crate::spec::SyncPolicy, op_len: u64) -> usize {
        use crate::spec::SyncPolicy;
        let n = match sync {
            SyncPolicy::None => 0,
            SyncPolicy::End => 1,
            SyncPolicy::Each => self.iters + 1,
            SyncPolicy::Every(n) => self.iters.min(self.iters.saturating_mul(op_len) / n.max(1) + 1) + 1,
        };
        n.min(1 << 16) as usize
    }

    /// The rings (producer worker ids) the run needs, each with its message size in parts.
    pub fn rings(&self) -> Vec<(u32, u32)> {
        self.roles.iter().filter_map(|r| Some((r.sends?, r.compute?.parts.parts))).collect()
    }

    /// Bytes the run writes in all: W x iters x bs.
    pub fn total_bytes(&self) -> u64 {
        self.workers as u64 * self.iters * self.bs
    }

    /// The compute one role does in all.
    pub fn compute_target_ns(&self, r: &RolePlan) -> u64 {
        r.compute.map_or(0, |c| c.per_iter_ns * self.iters)
    }

    /// One line per role, for plans and tables.
    pub fn describe(&self) -> Vec<String> {
        let ms = |ns: u64| crate::units::fmt_ns(ns);
        let mut out = vec![];
        for r in &self.roles {
            let mut what = vec![];
            if let Some(c) = r.compute {
                let parts = if c.parts.parts == 1 {
                    format!("part {}", c.parts.first)
                } else {
                    format!("parts {}..{}", c.parts.first, c.parts.first + c.parts.parts - 1)
                };
                what.push(format!("computes {parts} ({} per iteration)", ms(c.per_iter_ns)));
            }
            if let Some(ring) = r.sends {
                what.push(format!("hands it to worker 0 (hand-off {ring})"));
            }
            if let Some(w) = &r.write {
                let from: Vec<String> = w.receives.iter().map(|x| format!("worker {}", x.from)).collect();
                if !from.is_empty() {
                    what.push(format!("receives from {}", from.join(", ")));
                }
                what.push(format!(
                    "writes {} per iteration to file {}{}{}",
                    crate::units::fmt_size(w.parts_per_op() as u64 * self.bs),
                    w.file,
                    if w.part.is_some() { " (its part, through a file view, collectively)" } else { "" },
                    if w.commits { " and syncs" } else { "" }
                ));
            }
            out.push(format!("worker {} ({}): {}", r.worker, r.role.name(), what.join("; ")));
        }
        if self.sync_thread {
            out.push("sync thread of worker 0 (sync): commits whenever the sync size has been written, and at the end".into());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part of every iteration is produced once and lands in exactly one place; the
    /// program computes W x comptime in all.
    #[test]
    fn parts_are_produced_and_written_exactly_once() {
        use Strategy::*;
        for s in [S1A, S1B, S2, S3, S5, S2DT, S3DT, MpiIo] {
            for w in 2..=4u32 {
                if matches!(s, S3 | S3DT) && w != 2 {
                    continue;
                }
                let p = Plan::new(s, w, 10, 4096, 3_000_000_000);
                let mut produced = vec![0u32; w as usize];
                for r in &p.roles {
                    if let Some(c) = r.compute {
                        for q in c.parts.first..c.parts.first + c.parts.parts {
                            produced[q as usize] += 1;
                        }
                    }
                }
                assert!(produced.iter().all(|&n| n == 1), "{s:?} w={w}: {produced:?}");
                // Each part reaches exactly one writer: its own producer or through one ring.
                let mut written = vec![0u32; w as usize];
                for r in &p.roles {
                    let Some(wr) = &r.write else { continue };
                    if let (Some(c), None) = (r.compute, r.sends) {
                        written[c.parts.first as usize] += c.parts.parts;
                    }
                    for x in &wr.receives {
                        let sender = p.roles.iter().find(|q| q.sends == Some(x.ring)).unwrap();
                        assert_eq!(sender.compute.unwrap().parts, x.parts);
                        for q in x.parts.first..x.parts.first + x.parts.parts {
                            written[q as usize] += 1;
                        }
                    }
                }
                assert!(written.iter().all(|&n| n == 1), "{s:?} w={w}: {written:?}");
                let total: u64 = p.roles.iter().map(|r| p.compute_target_ns(r)).sum();
                let want = w as u64 * 3_000_000_000;
                assert!(want - total < w as u64 * 10, "{s:?} w={w}: {total} of {want}");
                assert_eq!(p.total_bytes(), w as u64 * 10 * 4096);
            }
        }
    }

    /// Benson et al.'s Fig. 1: with 32 s of compute, S1A's two workers spin 32 s each
    /// (about 33 s in all), S3's one compute worker 64 s.
    #[test]
    fn compute_shares_match_the_study() {
        let s = 32_000_000_000;
        let p = Plan::new(Strategy::S1A, 2, 1024, 65536, s);
        assert!(p.roles.iter().all(|r| p.compute_target_ns(r) == s));
        let p = Plan::new(Strategy::S3, 2, 1024, 65536, s);
        assert_eq!(p.compute_target_ns(&p.roles[1]), 2 * s);
        assert_eq!(p.compute_target_ns(&p.roles[0]), 0);
        let p = Plan::new(Strategy::S2, 2, 1024, 65536, s);
        assert!(p.roles.iter().all(|r| p.compute_target_ns(r) == s));
        assert_eq!(p.roles[0].compute.unwrap().per_iter_ns, s / 1024);
    }

    #[test]
    fn commits_are_bounded_by_the_sync_policy() {
        use crate::spec::SyncPolicy::*;
        let p = Plan::new(Strategy::S1A, 2, 64, 65536, 0);
        assert_eq!(p.commits_bound(Every(1 << 20), 65536), 6);
        assert_eq!(p.commits_bound(Every(4096), 65536), 65);
        assert_eq!((p.commits_bound(End, 65536), p.commits_bound(Each, 65536)), (1, 65));
        assert_eq!(p.commits_bound(None, 65536), 0);
        let huge = Plan::new(Strategy::S1A, 2, u32::MAX as u64, 1 << 30, 0);
        assert_eq!(huge.commits_bound(Every(1), 1 << 30), 1 << 16);
    }

    #[test]
    fn offsets_interleave_parts_in_the_shared_file() {
        let p = Plan::new(Strategy::S2, 3, 4, 100, 0);
        assert_eq!(p.offset(3, 0, 0), 0);
        assert_eq!(p.offset(3, 0, 2), 200);
        assert_eq!(p.offset(3, 1, 1), 400);
        assert_eq!(p.offset(1, 3, 0), 300);
        assert_eq!(p.rings(), [(1, 1), (2, 1)]);
        let p = Plan::new(Strategy::S3, 2, 4, 100, 0);
        assert_eq!(p.rings(), [(1, 2)]);
        assert!(!p.roles[0].write.as_ref().unwrap().receives.is_empty());
        let p = Plan::new(Strategy::S5, 2, 4, 100, 0);
        assert!(p.sync_thread && !p.roles[0].write.as_ref().unwrap().commits);
        // MPI-IO: worker 1 writes part 1 of each iteration of the one file, through a view.
        let p = Plan::new(Strategy::MpiIo, 3, 4, 100, 0);
        let w = p.roles[1].write.as_ref().unwrap();
        assert_eq!((w.file, w.parts_per_op()), (0, 1));
        assert_eq!(p.write_offset(w, 2), 700);
        let v = p.view(w).unwrap();
        assert_eq!((v.disp, v.block, v.stride), (100, 100, 300));
        assert_eq!(v.view_offset(700), Some(200));
        assert_eq!(v.view_offset(600), None);
        assert_eq!(p.view(p.roles[0].write.as_ref().unwrap()).unwrap().disp, 0);
    }
}
