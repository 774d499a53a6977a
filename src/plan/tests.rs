//! Tests of the block maps: every byte of every file planned exactly once, for every layout
//! and order.

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
fn segments_cover_the_shared_file_in_iors_order() {
    for order in ["seq", "reverse", "random"] {
        let s = spec(&[
            ("layout", "shared"),
            ("workers", "3"),
            ("segments", "4"),
            ("size", "32KiB"),
            ("bs", "4KiB"),
            ("order", order),
        ]);
        let p = plan(&s);
        assert_eq!(p.files[0].size_bytes, 96 << 10);
        assert_exact_cover(&p);
    }
    let s =
        spec(&[("layout", "shared"), ("workers", "2"), ("segments", "2"), ("size", "16KiB"), ("bs", "4KiB")]);
    let offs: Vec<Vec<u64>> =
        plan(&s).phases[0].workers.iter().map(|w| w.ops.iter().map(|o| o.offset >> 12).collect()).collect();
    assert_eq!(offs, [vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
}

#[test]
fn segments_in_a_file_per_worker_follow_each_other() {
    // IOR's -F -s S: each task's S blocks end to end in its own file (segment s at s B), the
    // same file as without segments; the sizes are checked as blocks of whole ops.
    let base = [("layout", "file-per-worker"), ("workers", "2"), ("size", "16KiB"), ("bs", "4KiB")];
    let mut with = base.to_vec();
    with.push(("segments", "2"));
    let offs = |s: &crate::spec::Spec| -> Vec<(Vec<u32>, Vec<u64>)> {
        plan(s).phases[0]
            .workers
            .iter()
            .map(|w| (w.files.clone(), w.ops.iter().map(|o| o.offset).collect()))
            .collect()
    };
    let s = spec(&with);
    assert_eq!(s.segments, 2);
    assert_eq!(offs(&s), offs(&spec(&base)));
    assert_eq!(offs(&s)[1], (vec![1], vec![0, 4096, 8192, 12288]));
    let e = |pairs: &[(&str, &str)]| match resolve(&crate::experiment::testing::params(pairs, ','), &env()) {
        Err(crate::error::Error::Spec { field, reason, .. }) => format!("{field}: {reason}"),
        other => panic!("{other:?}"),
    };
    let m = e(&[("segments", "3"), ("size", "16KiB"), ("bs", "4KiB")]);
    assert!(m.starts_with("size: with 3 segments"), "{m}");
    let m = e(&[("segments", "2"), ("size", "16KiB"), ("bs", "4KiB"), ("ops", "write,read:layout=shared")]);
    assert!(
        m.starts_with(
            "ops: with segments, every phase has the run's workers on the run's layout (file-per-worker"
        ),
        "{m}"
    );
}

#[test]
fn segments_are_refused_where_they_mean_nothing() {
    let e = |pairs: &[(&str, &str)]| match resolve(&crate::experiment::testing::params(pairs, ','), &env()) {
        Err(crate::error::Error::Spec { field, reason, .. }) => format!("{field}: {reason}"),
        other => panic!("{other:?}"),
    };
    let m = e(&[("layout", "shared-strided"), ("segments", "2")]);
    assert!(m.starts_with("segments: segments lay out one shared file"), "{m}");
    let m = e(&[("layout", "striped-per-worker"), ("segments", "2")]);
    assert!(m.contains("layout striped-per-worker has striped files"), "{m}");
    let m = e(&[("layout", "shared"), ("segments", "3"), ("size", "16KiB"), ("bs", "4KiB")]);
    assert!(m.starts_with("size: with 3 segments"), "{m}");
    let m = e(&[
        ("layout", "shared"),
        ("workers", "2"),
        ("segments", "2"),
        ("size", "16KiB"),
        ("bs", "4KiB"),
        ("ops", "write,read:workers=1"),
    ]);
    assert!(m.starts_with("ops: with segments"), "{m}");
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
    let serial = p.phases[0].workers[0].ops;
    assert_eq!((serial.parallel_pieces(), serial.timed_ops()), (0, 8));
    // Parallel pieces: the same pieces, timed as one op per block of 4.
    let s = spec(&[
        ("layout", "striped"),
        ("dirs", &dirs),
        ("stripe_unit", "4KiB"),
        ("size", "32KiB"),
        ("bs", "16KiB"),
        ("ops", "write"),
        ("pieces", "parallel"),
    ]);
    let par = plan(&s).phases[0].workers[0].ops;
    assert_eq!((par.parallel_pieces(), par.timed_ops(), par.n_ops), (4, 2, 8));
    assert!(par.iter().eq(serial.iter()));
    // A block inside one unit is one piece: nothing to issue together.
    let s = spec(&[
        ("layout", "striped"),
        ("dirs", &dirs),
        ("stripe_unit", "16KiB"),
        ("bs", "4KiB"),
        ("pieces", "parallel"),
    ]);
    let one = plan(&s).phases[0].workers[0].ops;
    assert_eq!((one.parallel_pieces(), one.timed_ops()), (0, one.n_ops));
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
