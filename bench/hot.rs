//! Micro-benchmarks of the pieces on iolab's hot path, in ns per op: offset generation for
//! every order and layout, the clock, latency recording (histogram and trace), and stamping.
//! It prints figures and asserts nothing about time (`cargo bench --bench hot`; a name
//! filter as the first argument runs only the matching benchmarks).
//!
//! Each figure is the best of 7 rounds of a loop long enough to take about 20 ms, so one
//! interruption by the scheduler does not show; the loops consume every result
//! (`black_box`), so nothing is optimised away.

use std::hint::black_box;
use std::time::Instant;

use iolab::env::sys::now_ns;
use iolab::experiment::{Params, ResolveEnv, resolve};
use iolab::latency::new_hist;
use iolab::latency::trace::{TraceOp, TraceRecorder};
use iolab::latency::{Hist, Off, Recorder};
use iolab::plan::Op;
use iolab::plan::fill;
use iolab::plan::{self, OpSeq};

/// Runs `f(iters)` for growing `iters` until a round takes ~20 ms, then best of 7: ns per
/// iteration. A quick run (under `cargo test`) does one short round.
fn measure(quick: bool, mut f: impl FnMut(u64)) -> f64 {
    if quick {
        let t = Instant::now();
        f(1000);
        return t.elapsed().as_nanos() as f64 / 1000.0;
    }
    let mut iters = 1000u64;
    loop {
        let t = Instant::now();
        f(iters);
        let ns = t.elapsed().as_nanos() as f64;
        if ns > 20e6 || iters > 1 << 32 {
            break;
        }
        iters *= if ns < 1e6 { 10 } else { 2 };
    }
    (0..7)
        .map(|_| {
            let t = Instant::now();
            f(iters);
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .fold(f64::INFINITY, f64::min)
}

struct Bench {
    filter: Option<String>,
    quick: bool,
}

impl Bench {
    fn run(&self, name: &str, f: impl FnMut(u64)) {
        if self.filter.as_deref().is_some_and(|p| !name.contains(p)) {
            return;
        }
        println!("{name:48} {:9.2} ns/op", measure(self.quick, f));
    }
}

/// Worker 0's op sequence of the first phase of a spec given as key = value pairs.
fn op_seq(pairs: &[(&str, &str)]) -> OpSeq {
    let mut p = Params::default();
    for (k, v) in pairs {
        p.set(k, v.split(',').map(String::from).collect()).expect("valid parameter");
    }
    let env = ResolveEnv { ram_bytes: 1 << 34, cwd: std::env::temp_dir() };
    let spec = resolve(&p, &env).expect("valid spec");
    plan::plan(&spec).phases[0].workers[0].ops
}

/// Generates `iters` ops of `seq` (wrapping around its `n` ops, without a division).
fn walk(seq: &OpSeq, n: u64, iters: u64) -> u64 {
    let (mut acc, mut k) = (0u64, 0u64);
    for _ in 0..iters {
        let op = seq.op(black_box(k));
        acc = acc.wrapping_add(op.offset ^ op.file as u64);
        k += 1;
        if k == n {
            k = 0;
        }
    }
    acc
}

fn main() {
    // `cargo bench` passes --bench; `cargo test` runs this too, as a quick check that every
    // benchmark still runs (its figures then mean nothing).
    let quick = !std::env::args().any(|a| a == "--bench");
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let b = Bench { filter, quick };
    if quick {
        println!("quick run (figures mean nothing): cargo bench --bench hot");
    }
    let tmp = std::env::temp_dir().display().to_string();
    let dirs4 = [tmp.as_str(); 4].join(",");

    // Offset generation: op k -> (file, offset, len), as the loops call it, for every order and
    // layout; 1 GiB of 4 KiB blocks per worker.
    for order in ["seq", "random"] {
        let seq = op_seq(&[("order", order), ("size", "1GiB"), ("bs", "4KiB")]);
        let n = seq.n_ops;
        b.run(&format!("op: file-per-worker, 1 file {order}"), |iters| {
            black_box(walk(&seq, n, iters));
        });
    }
    for layout in ["file-per-worker", "shared", "shared-strided", "striped", "striped-per-worker"] {
        for order in ["seq", "reverse", "random"] {
            let mut pairs = vec![
                ("layout", layout),
                ("order", order),
                ("size", "1GiB"),
                ("bs", "4KiB"),
                ("workers", "4"),
                ("dirs", dirs4.as_str()),
            ];
            if layout.starts_with("striped") {
                pairs.push(("stripe_unit", "4KiB"));
            }
            if layout.ends_with("per-worker") {
                pairs.push(("files", "8"));
                pairs.push(("round_robin", "2"));
            }
            let seq = op_seq(&pairs);
            let n = seq.n_ops;
            let what = if layout.ends_with("per-worker") { ", 2 of 8 files" } else { "" };
            b.run(&format!("op: {layout}{what} {order}"), |iters| {
                black_box(walk(&seq, n, iters));
            });
        }
    }

    // The clock: one vDSO clock_gettime(CLOCK_MONOTONIC).
    b.run("clock: now_ns", |iters| {
        let mut acc = 0u64;
        for _ in 0..iters {
            acc = acc.wrapping_add(now_ns());
        }
        black_box(acc);
    });

    // For comparison: the bare time-stamp counter, which the vDSO reads (and then scales)
    // when the kernel's clock source is the TSC.
    #[cfg(target_arch = "x86_64")]
    b.run("clock: rdtsc (raw, for comparison)", |iters| {
        let mut acc = 0u64;
        for _ in 0..iters {
            // SAFETY: RDTSC has no preconditions on x86_64.
            acc = acc.wrapping_add(unsafe { core::arch::x86_64::_rdtsc() });
        }
        black_box(acc);
    });

    // Latency recording, fed a realistic spread of cached-read latencies (0.9 to 40 us).
    let lat: Vec<u64> = (0..4096u64)
        .map(|i| {
            let mut s = i;
            let r = plan::splitmix64(&mut s);
            900 + r % 700 + if r % 97 == 0 { 40_000 } else { 0 }
        })
        .collect();
    b.run("latency: hdrhistogram saturating_record", |iters| {
        let mut h = new_hist();
        for i in 0..iters {
            h.saturating_record(lat[(i & 4095) as usize]);
        }
        black_box(h.len());
    });
    let op = Op { file: 0, offset: 0, len: 4096 };
    b.run("latency: Hist::record (latency = histogram)", |iters| {
        let mut r = Hist::new();
        for i in 0..iters {
            r.record(op, i, lat[(i & 4095) as usize]);
        }
        black_box(r.0.is_empty());
    });
    b.run("latency: Off::record (latency = off)", |iters| {
        let mut r = Off;
        for i in 0..iters {
            r.record(op, i, lat[(i & 4095) as usize]);
        }
        black_box(r.finish().map(|(h, _)| h.len()).ok());
    });
    b.run("trace: TraceRecorder::record (batches dropped)", |iters| {
        let mut t = TraceRecorder::discarding();
        for i in 0..iters {
            t.record(TraceOp {
                file: 0,
                offset: i << 12,
                start_ns: i,
                duration_ns: lat[(i & 4095) as usize],
                len: 4096,
                write: false,
                response_ns: 0,
            });
        }
        black_box(t.recorded());
    });

    // Stamping: one 8-byte stamp per 4 KiB of a written block.
    for (name, len) in [("4 KiB", 4096usize), ("1 MiB", 1 << 20)] {
        let mut block = vec![0u8; len];
        fill::fill(&mut block, 1);
        b.run(&format!("stamp: {name} block"), |iters| {
            for i in 0..iters {
                fill::stamp(&mut block, 0x5EED, i * len as u64);
            }
            black_box(&block);
        });
    }
}
