//! The engines on real files: every engine writes byte-identical files to psync's for the same
//! workload; strided memory puts exactly the gathered pieces on disk; mmap maps and commits at
//! the cadence its windows and sync size imply; uring keeps iodepth ops in flight; and every
//! combination an engine cannot run is refused before any I/O.

use crate::util::*;

/// The engines (and their parameters) checked for parity with psync.
fn engine_variants() -> Vec<&'static str> {
    let mut v = vec!["--engine psync", "--engine vsync", "--engine mmap", "--engine mmap --window 16KiB"];
    if uring_available() {
        v.extend(["--engine uring --iodepth 1", "--engine uring --iodepth 5", "--engine uring --iodepth 32"]);
    }
    v
}

/// Whether this kernel lets us use io_uring; says why not when it does not.
fn uring_available() -> bool {
    match iolab::worker::registry::find("uring").map(|e| (e.def.caps.probe)()) {
        Some(Ok(())) => true,
        Some(Err(reason)) => {
            eprintln!("skipping uring cases: {reason}");
            false
        }
        None => false,
    }
}

/// Runs `iolab run ARGS` (whitespace-separated) with `--keep` and returns the document and the
/// kept work directory of repetition 0.
fn run_kept(s: &Scratch, args: &str) -> (Value, std::path::PathBuf) {
    let all: Vec<&str> = args.split_whitespace().chain(["--reps", "1", "--keep", "--no-store"]).collect();
    let doc = s.run_json(&all);
    let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    (doc, work_dir(s.path(), &run_id))
}

/// The worker figures of phase `p`, repetition 0.
fn workers(doc: &Value, p: usize) -> Vec<Value> {
    phases(doc)[p]["repetitions"][0]["workers"].as_array().unwrap().clone()
}

fn calls(w: &Value, name: &str) -> u64 {
    w["calls"][name].as_u64().unwrap_or(0)
}

#[test]
fn every_engine_writes_the_same_bytes_as_psync() {
    for engine in engine_variants() {
        for layout in ["file-per-worker", "shared"] {
            for workers_n in [1u32, 3] {
                for order in ["seq", "reverse", "random"] {
                    let s = Scratch::new();
                    let (_, wd) = run_kept(
                        &s,
                        &format!(
                            "--op write,read,rewrite {engine} --layout {layout} --workers {workers_n} \
                             --size 96KiB --bs 8KiB --order {order} --seed 77"
                        ),
                    );
                    let what = format!("{engine} {layout} x{workers_n} {order}");
                    let files: Vec<(String, u32, u64)> = if layout == "shared" {
                        vec![("shared.dat".into(), 0, workers_n as u64 * 96 * 1024)]
                    } else {
                        (0..workers_n).map(|w| (format!("w{w:04}.dat"), w, 96 * 1024)).collect()
                    };
                    for (name, gid, size) in files {
                        let data = std::fs::read(wd.join(&name)).unwrap();
                        assert_eq!(data.len() as u64, size, "{what} {name}");
                        assert!(
                            data == expected_file(77, gid, size, 8192),
                            "{what} {name}: differs from psync's bytes"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn direct_io_engines_write_the_same_bytes_as_psync() {
    let mut variants = vec!["--engine vsync"];
    if uring_available() {
        variants.push("--engine uring --iodepth 16");
    }
    for engine in variants {
        let s = Scratch::new();
        let (doc, wd) = run_kept(
            &s,
            &format!(
                "--op write,read,rewrite --direct --size 1MiB --bs 4KiB --order random --workers 2 {engine}"
            ),
        );
        assert!(phases(&doc)[1]["cache"]["method"].as_str().unwrap().contains("O_DIRECT"));
        for w in 0..2u32 {
            let data = std::fs::read(wd.join(format!("w{w:04}.dat"))).unwrap();
            assert!(data == expected_file(1, w, 1 << 20, 4096), "{engine} worker {w}");
        }
    }
}

/// What a strided write must leave in file `gid`, computed here independently of iolab's
/// gather code: the worker's buffer is the seeded fill of `bs / len * stride` bytes; for each
/// block, the buffer bytes that land on the block's stamp positions get the stamp; the block
/// is then `len` bytes from every `stride` bytes of the buffer, in order.
fn expected_strided(seed: u64, gid: u32, size: u64, bs: u64, len: u64, stride: u64) -> Vec<u8> {
    let mut mem = vec![0u8; (bs / len * stride) as usize];
    iolab::plan::fill::fill(&mut mem, seed);
    let salt = iolab::plan::fill::file_salt(seed, gid);
    let src = |p: u64| (p / len * stride + p % len) as usize;
    let mut out = Vec::with_capacity(size as usize);
    for off in (0..size).step_by(bs as usize) {
        for i in (0..bs).step_by(4096) {
            let word = iolab::plan::fill::stamp_word(salt, off + i).to_le_bytes();
            for j in 0..8.min(bs - i) {
                mem[src(i + j)] = word[j as usize];
            }
        }
        for piece in 0..bs / len {
            let at = (piece * stride) as usize;
            out.extend_from_slice(&mem[at..at + len as usize]);
        }
    }
    out
}

#[test]
fn strided_writes_put_exactly_the_gathered_pieces_on_disk() {
    for (len, stride, bs, size) in
        [(8u64, 32u64, 65536u64, 256u64 << 10), (3, 7, 12288, 240 << 10), (4096, 8192, 16384, 256 << 10)]
    {
        let want = expected_strided(5, 0, size, bs, len, stride);
        assert!(want != expected_file(5, 0, size, bs), "strided data differs from contiguous data");
        for engine in ["psync", "vsync", "mmap"] {
            let s = Scratch::new();
            let (doc, wd) = run_kept(
                &s,
                &format!(
                    "--op write,read --engine {engine} --mem-len {len} --mem-stride {stride} --bs {bs} \
                     --size {size} --order random --seed 5"
                ),
            );
            let data = std::fs::read(wd.join("w0000.dat")).unwrap();
            assert!(data == want, "{engine} len {len} stride {stride}: not the gathered pieces in order");
            let ops = size / bs;
            let (w, r) = (&workers(&doc, 0)[0], &workers(&doc, 1)[0]);
            match engine {
                "psync" => assert_eq!((calls(w, "pwrite"), calls(r, "pread")), (ops, ops)),
                "vsync" => {
                    // One iovec per piece, at most 1024 per call.
                    let per_op = (bs / len).div_ceil(1024);
                    assert_eq!((calls(w, "pwritev"), calls(r, "preadv")), (ops * per_op, ops * per_op));
                }
                _ => assert_eq!(calls(w, "mmap"), 1),
            }
        }
    }
}

#[test]
fn strided_direct_io_works_with_aligned_pieces() {
    let s = Scratch::new();
    for engine in ["psync", "vsync"] {
        let (_, wd) = run_kept(
            &s,
            &format!(
                "--op write --engine {engine} --direct --mem-len 4096 --mem-stride 12288 --bs 16KiB --size 128KiB"
            ),
        );
        let data = std::fs::read(wd.join("w0000.dat")).unwrap();
        assert!(data == expected_strided(1, 0, 128 << 10, 16384, 4096, 12288), "{engine}");
    }
    // psync packs, so pieces need no alignment even with O_DIRECT.
    let (_, wd) =
        run_kept(&s, "--op write --engine psync --direct --mem-len 8 --mem-stride 32 --bs 4KiB --size 64KiB");
    let data = std::fs::read(wd.join("w0000.dat")).unwrap();
    assert!(data == expected_strided(1, 0, 64 << 10, 4096, 8, 32));
}

/// mmap calls = ceil(bytes / window) per worker for a sequential pass; msync cadence follows
/// the sync policy, plus one msync for a window unmapped with uncommitted writes.
#[test]
fn mmap_windows_and_msync_cadence() {
    // 1 MiB per worker in 16 ops of 64 KiB, sequential.
    // (window, sync, sync_call, mmaps, msyncs, commits, fdatasyncs)
    let cases: &[(&str, &str, &str, u64, u64, u64, u64)] = &[
        ("file", "end", "msync", 1, 1, 1, 0),
        ("256KiB", "end", "msync", 4, 4, 1, 0),
        ("256KiB", "every:128KiB", "msync", 4, 8, 8, 0),
        ("256KiB", "every:256KiB", "msync", 4, 4, 4, 0),
        // Commits at 256K, 512K, 768K, 1M; window 0 still holds 256K..384K when unmapped.
        ("384KiB", "every:256KiB", "msync", 3, 5, 4, 0),
        ("192KiB", "none", "msync", 6, 0, 0, 0),
        ("256KiB", "each", "msync", 4, 16, 16, 0),
        ("512KiB", "every:256KiB", "fdatasync", 2, 0, 4, 4),
        ("1MiB", "end", "fsync", 1, 0, 1, 0),
    ];
    for &(window, sync, call, mmaps, msyncs, commits, fdatasyncs) in cases {
        let s = Scratch::new();
        let (doc, wd) = run_kept(
            &s,
            &format!(
                "--op write,read --engine mmap --window {window} --sync {sync} --sync-call {call} \
                 --workers 2 --size 1MiB --bs 64KiB"
            ),
        );
        let what = format!("window {window} sync {sync} by {call}");
        for w in workers(&doc, 0) {
            assert_eq!(calls(&w, "mmap"), mmaps, "{what}: mmap calls");
            assert_eq!(calls(&w, "munmap"), mmaps, "{what}: munmap calls");
            assert_eq!(calls(&w, "msync"), msyncs, "{what}: msync calls");
            assert_eq!(w["sync_calls"], commits, "{what}: commits");
            assert_eq!(calls(&w, "fdatasync"), fdatasyncs, "{what}: fdatasync calls");
            assert_eq!(calls(&w, "ftruncate"), 1, "{what}: the file is sized first");
        }
        for w in workers(&doc, 1) {
            assert_eq!(calls(&w, "mmap"), mmaps, "{what}: read mmap calls");
            assert_eq!(calls(&w, "msync"), 0, "{what}: reads commit nothing");
        }
        for w in 0..2u32 {
            let data = std::fs::read(wd.join(format!("w{w:04}.dat"))).unwrap();
            assert!(data == expected_file(1, w, 1 << 20, 65536), "{what}: worker {w}'s bytes");
        }
    }
    // A shared file: windows start at multiples of the window in the file, so worker 1's
    // segment [1 MiB, 2 MiB) takes windows 4..7.
    let s = Scratch::new();
    let args = "--op write --engine mmap --layout shared --workers 2 --window 256KiB --size 1MiB --bs 64KiB";
    let (doc, _) = run_kept(&s, args);
    for w in workers(&doc, 0) {
        assert_eq!(calls(&w, "mmap"), 4);
        assert_eq!(
            calls(&w, "msync"),
            4,
            "sync end: each dirty window msync'd when unmapped, the last at the end"
        );
    }
}

/// Each file keeps its own window: a worker visiting 4 files round-robin (block 1 of each,
/// then block 2...) maps each 64 KiB window of each file once, not once per op.
#[test]
fn mmap_keeps_one_window_per_file() {
    let s = Scratch::new();
    let args = "--op write,read --engine mmap --files-per-worker 4 --window 64KiB --sync every:64KiB \
                --sync-call msync --size 256KiB --bs 16KiB";
    let (doc, wd) = run_kept(&s, args);
    let w = &workers(&doc, 0)[0];
    // 4 files x 4 windows; a commit every 4 ops (64 KiB) msyncs the 4 files just written.
    assert_eq!(calls(w, "mmap"), 16);
    assert_eq!(calls(w, "munmap"), 16);
    assert_eq!(calls(w, "msync"), 64);
    assert_eq!(calls(&workers(&doc, 1)[0], "mmap"), 16, "reads map the same windows");
    for f in 0..4u32 {
        let data = std::fs::read(wd.join(format!("w{f:04}.dat"))).unwrap();
        assert!(data == expected_file(1, f, 256 << 10, 16 << 10), "file {f}'s bytes");
    }
    // The components of a striped file, visited in turn, keep their windows too.
    let s = Scratch::new();
    let d = s.path().to_str().unwrap().to_string();
    let args = format!(
        "--op write --engine mmap --layout striped --dir {d} --stripe-unit 16KiB --size 1MiB --bs 64KiB"
    );
    let (doc, _) = run_kept(&s, &args);
    assert_eq!(calls(&workers(&doc, 0)[0], "mmap"), 2, "one whole-file window per component");
}

#[test]
fn uring_keeps_iodepth_ops_in_flight() {
    if !uring_available() {
        return;
    }
    // 1 MiB per worker in 256 ops of 4 KiB.
    // (iodepth, sync, order, max in flight, commits)
    let cases: &[(&str, &str, &str, u64, u64)] = &[
        ("1", "end", "seq", 1, 1),
        ("4", "end", "random", 4, 1),
        ("32", "end", "random", 32, 1),
        ("256", "none", "seq", 256, 0),
        ("512", "none", "seq", 256, 0),
        // A commit drains the ring first: at most 16 ops of 4 KiB are queued before it.
        ("32", "every:64KiB", "seq", 16, 16),
        ("32", "each", "random", 1, 256),
    ];
    for &(depth, sync, order, max_inflight, commits) in cases {
        let s = Scratch::new();
        let (doc, wd) = run_kept(
            &s,
            &format!(
                "--op write,read:warm --engine uring --iodepth {depth} --sync {sync} --order {order} \
                 --workers 2 --size 1MiB --bs 4KiB"
            ),
        );
        let what = format!("iodepth {depth} sync {sync} {order}");
        for (p, ph) in phases(&doc).iter().enumerate() {
            for w in workers(&doc, p) {
                // Reads commit nothing, so they keep min(iodepth, ops) in flight.
                let want = if p == 1 { depth.parse::<u64>().unwrap().min(256) } else { max_inflight };
                assert_eq!(w["max_inflight"], want, "{what} {}: max in flight", ph["name"]);
                assert_eq!(w["ops"], 256, "{what}");
                assert_eq!(w["bytes"], 1 << 20, "{what}");
                // Every op's latency was recorded exactly once.
                let hist: u64 = w["latency_histogram_ns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b[1].as_u64().unwrap())
                    .sum();
                assert_eq!(hist, 256, "{what}: latencies recorded");
                assert_eq!(w["sync_calls"], if p == 0 { commits } else { 0 }, "{what}");
                assert!(calls(&w, "io_uring_enter") >= 256 / w["max_inflight"].as_u64().unwrap());
            }
        }
        for w in 0..2u32 {
            let data = std::fs::read(wd.join(format!("w{w:04}.dat"))).unwrap();
            assert!(data == expected_file(1, w, 1 << 20, 4096), "{what}: worker {w}'s bytes");
        }
    }
}

#[test]
fn engines_are_listed_with_their_capabilities() {
    let s = Scratch::new();
    for args in [&["engines"][..], &["run", "--engine", "list"][..]] {
        let out = s.iolab(args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        let header = text.lines().next().unwrap();
        for col in ["engine", "O_DIRECT", "iodepth", "strided memory", "window", "commit calls"] {
            assert!(header.contains(col), "{header}");
        }
        let row = |name: &str| text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap().to_string();
        assert!(row("uring").contains("async, 1-4096"), "{text}");
        assert!(row("psync").contains("sync, 1"));
        assert!(row("mmap").contains("msync,fdatasync,fsync"));
        assert!(row("mmap").split_whitespace().nth(1) == Some("no"), "mmap cannot do O_DIRECT");
        assert!(row("vsync").contains("iovec"));
    }
    assert!(!s.db().exists());
}

/// Every combination an engine cannot run exits 2, names the field, and writes nothing.
#[test]
fn impossible_engine_combinations_exit_2_naming_the_field() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let mut cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--engine", "mmap", "--direct", "--bs", "4KiB"], "direct", "O_DIRECT"),
        (vec!["--engine", "mmap", "--open-sync", "dsync"], "open_sync", "mapping"),
        (vec!["--engine", "psync", "--sync-call", "msync"], "sync_call", "mmap"),
        (vec!["--engine", "uring", "--sync-call", "msync"], "sync_call", "mmap"),
        (vec!["--engine", "psync", "--iodepth", "4"], "iodepth", "synchronous"),
        (vec!["--engine", "vsync", "--iodepth", "2"], "iodepth", "synchronous"),
        (vec!["--engine", "psync", "--window", "1MiB"], "window", "mmap"),
        (vec!["--engine", "mmap", "--window", "1000"], "window", "page size"),
        (vec!["--engine", "mmap", "--window", "1MiB", "--sync", "every:4MiB"], "window", "sync size"),
        (vec!["--mem-len", "8"], "mem_len", "mem_stride"),
        (vec!["--mem-stride", "32"], "mem_stride", "mem_len"),
        (vec!["--mem-len", "8", "--mem-stride", "4"], "mem_stride", "smaller"),
        (vec!["--mem-len", "3", "--mem-stride", "8", "--bs", "4KiB"], "mem_len", "divide"),
        (
            vec!["--engine", "vsync", "--direct", "--mem-len", "8", "--mem-stride", "32", "--bs", "4KiB"],
            "mem_len",
            "O_DIRECT",
        ),
        (vec!["--mem-len", "1", "--mem-stride", "1MiB", "--bs", "1MiB"], "mem_stride", "memory"),
    ];
    if uring_available() {
        cases.push((vec!["--engine", "uring", "--iodepth", "0"], "iodepth", "at least 1"));
        cases.push((vec!["--engine", "uring", "--iodepth", "5000"], "iodepth", "at most 4096"));
        cases.push((vec!["--engine", "uring", "--mem-len", "8", "--mem-stride", "32"], "mem_len", "strided"));
    }
    for (args, field, words) in cases {
        let mut all = vec!["run", "--dir", dir];
        all.extend_from_slice(&args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("{field} = `")), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(s.leftovers().is_empty(), "{args:?} left {:?}", s.leftovers());
        assert!(!s.db().exists(), "{args:?} created the store");
    }
}

#[test]
fn call_counts_and_depth_round_trip_through_the_store() {
    let s = Scratch::new();
    let engine: &[&str] = if uring_available() {
        &["--engine", "uring", "--iodepth", "8"]
    } else {
        &["--engine", "mmap", "--window", "64KiB"]
    };
    let mut args = vec!["--op", "write,read", "--size", "1MiB", "--bs", "16KiB", "--reps", "2"];
    args.extend_from_slice(engine);
    let doc = s.run_json(&args);
    let w = &workers(&doc, 0)[0];
    assert!(!w["calls"].as_object().unwrap().is_empty());
    let out = s.iolab(&["results", "show", "last", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let back: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(back, doc, "the store gives back the calls and max_inflight the run printed");
    let csv = String::from_utf8(s.iolab(&["results", "export", "last", "--csv"]).stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!(row[at("worker_max_inflight")], w["max_inflight"].to_string());
    assert!(row[at("worker_calls")].contains(if uring_available() { "io_uring_enter=" } else { "mmap=16" }));
}

/// A block split at the stripe unit gives ops shorter than bs; every engine writes them in
/// full, and the components are the same bytes psync writes (contiguous and strided memory).
#[test]
fn engines_write_stripe_pieces_shorter_than_the_block() {
    for mem in ["", "--mem-len 8 --mem-stride 32"] {
        let mut want: Option<Vec<Vec<u8>>> = None;
        for engine in ["psync", "vsync", "mmap"] {
            let s = Scratch::new();
            let d = s.path().to_str().unwrap().to_string();
            let args = format!(
                "--op write,read --engine {engine} {mem} --layout striped --dir {d} --stripe-unit 16KiB \
                 --workers 2 --size 1MiB --bs 64KiB"
            );
            let (doc, wd) = run_kept(&s, &args);
            for p in 0..2 {
                assert_eq!(phases(&doc)[p]["repetitions"][0]["status"], "complete", "{engine} {mem}");
            }
            let got: Vec<Vec<u8>> =
                (0..2).map(|c| std::fs::read(wd.join(format!("striped.s{c:02}.dat"))).unwrap()).collect();
            assert_eq!(got[0].len(), 1 << 20);
            match &want {
                None => want = Some(got),
                Some(w) => assert!(*w == got, "{engine} {mem}: components differ from psync's"),
            }
        }
    }
}

/// Every worker's buffers are allocated, every page written, before its open is timed, and
/// that time is reported apart as `alloc_ns` (the open no longer holds it): for each engine,
/// with threads and with worker processes, and for a strategy's writer (its compute role
/// allocates through no engine, its sync thread nothing); the store keeps it.
#[test]
fn buffer_allocation_is_timed_apart_from_the_open() {
    let s = Scratch::new();
    let mut cases = vec![
        "--engine psync",
        "--engine vsync",
        "--engine mmap",
        "--engine psync --launcher process",
        "--engine psync --mem-len 512 --mem-stride 1KiB",
    ];
    if uring_available() {
        cases.push("--engine uring --iodepth 4");
    }
    for case in cases {
        let args: Vec<&str> = case
            .split_whitespace()
            .chain([
                "--bs",
                "1MiB",
                "--size",
                "4MiB",
                "--workers",
                "2",
                "--op",
                "write,read:cold",
                "--reps",
                "1",
            ])
            .collect();
        let doc = s.run_json(&args);
        for p in 0..2 {
            for w in workers(&doc, p) {
                assert!(w["alloc_ns"].as_u64().is_some_and(|n| n > 0), "{case}: {w}");
            }
        }
        let o = s.iolab(&["results", "show", "last", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(workers(&stored, 0)[0]["alloc_ns"], workers(&doc, 0)[0]["alloc_ns"], "{case}: stored");
    }
    let doc = s.run_json(&[
        "--strategy",
        "S5",
        "--iters",
        "4",
        "--bs",
        "64KiB",
        "--sync",
        "every:64KiB",
        "--comptime",
        "1ms",
        "--reps",
        "1",
    ]);
    let ws = workers(&doc, 0);
    for w in &ws {
        match w["role"].as_str() {
            Some("compute-write") => assert!(w["alloc_ns"].as_u64().is_some_and(|n| n > 0), "{w}"),
            _ => assert!(w.get("alloc_ns").is_none(), "{w}"),
        }
    }
}
