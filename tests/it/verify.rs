//! Verification: headers written by every layout and order, checked on every read; corruption
//! on disk (a flipped byte, blocks swapped, a stale block) caught when the kept data is read
//! again with `--reuse`.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::rig::*;
use crate::util::*;
use iolab::plan::verify::{BlockTag, run_tag};

/// Decodes the header of the block at `off` of `data`: (file, offset, run, sequence, length).
fn header(data: &[u8], off: usize) -> (u32, u64, u64, u32, u32) {
    let b = &data[off..];
    assert_eq!(&b[16..20], b"iolv", "no header at offset {off}");
    (
        u32::from_le_bytes(b[20..24].try_into().unwrap()),
        u64::from_le_bytes(b[24..32].try_into().unwrap()),
        u64::from_le_bytes(b[32..40].try_into().unwrap()),
        u32::from_le_bytes(b[40..44].try_into().unwrap()),
        u32::from_le_bytes(b[44..48].try_into().unwrap()),
    )
}

#[test]
fn every_layout_and_order_writes_headers_and_reads_them_back() {
    for layout in ["file-per-worker", "shared"] {
        for (workers, order) in [(1, "seq"), (3, "reverse"), (2, "random")] {
            let s = Scratch::new();
            let doc = s.run_json(&[
                "--verify",
                "--op",
                &format!("write:{order},read:cold:{order},rewrite:random,read:warm,read:cold:reverse"),
                "--layout",
                layout,
                "--workers",
                &workers.to_string(),
                "--size",
                "256KiB",
                "--bs",
                "16KiB",
                "--reps",
                "1",
                "--keep",
                "--no-store",
            ]);
            for ph in phases(&doc) {
                assert_eq!(ph["repetitions"][0]["status"], "complete", "{layout} {order} {}", ph["name"]);
            }
            let run_id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap();
            let wd = work_dir(s.path(), run_id);
            let files: Vec<(String, u32)> = if layout == "shared" {
                vec![("shared.dat".into(), 0)]
            } else {
                (0..workers).map(|w| (format!("w{w:04}.dat"), w)).collect()
            };
            for (name, gid) in files {
                let data = std::fs::read(wd.join(&name)).unwrap();
                for off in (0..data.len()).step_by(16384) {
                    // Written by the rewrite: generation 2.
                    assert_eq!(
                        header(&data, off),
                        (gid, off as u64, run_tag(run_id), 2, 16384),
                        "{layout} {name} @{off}"
                    );
                }
            }
        }
    }
}

#[test]
fn verify_works_with_o_direct() {
    let s = Scratch::new();
    let doc = s.run_json(&[
        "--verify",
        "--direct",
        "--op",
        "write,read:random",
        "--size",
        "1MiB",
        "--bs",
        "64KiB",
        "--reps",
        "2",
        "--no-store",
    ]);
    assert_eq!(phases(&doc)[1]["summary"]["n"], 2);
}

/// Writes one kept, verified file of 16 blocks of 64 KiB; returns (run id, path).
fn kept(s: &Scratch, ops: &str) -> (String, PathBuf) {
    let doc =
        s.run_json(&["--verify", "--op", ops, "--size", "1MiB", "--bs", "64KiB", "--reps", "1", "--keep"]);
    let id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let p = work_dir(s.path(), &id).join("w0000.dat");
    (id, p)
}

/// Reads the kept data again, verifying; returns (exit code, stderr).
fn reread(s: &Scratch, id: &str, extra: &[&str]) -> (Option<i32>, String) {
    let d = s.path().to_str().unwrap();
    let mut args =
        vec!["run", "-q", "--dir", d, "--op", "read:cold", "--size", "1MiB", "--reps", "1", "--reuse", id];
    if !extra.contains(&"--bs") {
        args.extend(["--bs", "64KiB"]);
    }
    args.extend_from_slice(extra);
    let out = s.iolab(&args);
    (out.status.code(), stderr(&out))
}

fn patch(p: &Path, off: u64, bytes: &[u8]) {
    std::fs::OpenOptions::new().write(true).open(p).unwrap().write_all_at(bytes, off).unwrap();
}

#[test]
fn a_flipped_byte_on_disk_is_caught() {
    let s = Scratch::new();
    let (id, p) = kept(&s, "write");
    assert_eq!(reread(&s, &id, &["--verify"]).0, Some(0), "intact data verifies");
    let at = 5 * 65536 + 1234;
    let mut b = [0u8];
    std::fs::File::open(&p).unwrap().read_exact_at(&mut b, at).unwrap();
    patch(&p, at, &[b[0] ^ 0x10]);
    let (code, err) = reread(&s, &id, &["--verify"]);
    eprintln!("flipped byte: exit {code:?}: {}", err.trim());
    assert_eq!(code, Some(1));
    let want = format!("{}: verify failed at offset {}: checksum: expected", p.display(), 5 * 65536);
    assert!(err.contains(&want), "{err}");
    assert!(
        err.contains(&format!(
            "first differing byte at offset {at}: expected 0x{:02x}, found 0x{:02x}",
            b[0],
            b[0] ^ 0x10
        )),
        "{err}"
    );
    let r = runs(&s.db());
    assert_eq!(r.last().unwrap().0, "failed");
    assert!(r.last().unwrap().1.as_deref().unwrap().contains(&want));
    // Without verify the same read succeeds: the check is what caught it.
    assert_eq!(reread(&s, &id, &[]).0, Some(0));
    // Reading kept data changes and removes nothing.
    let mut c = [0u8];
    std::fs::File::open(&p).unwrap().read_exact_at(&mut c, at).unwrap();
    assert_eq!(c[0], b[0] ^ 0x10);
    assert_eq!(work_dirs(s.path()).len(), 1);
}

#[test]
fn blocks_at_the_wrong_offset_are_caught() {
    let s = Scratch::new();
    let (id, p) = kept(&s, "write");
    let f = std::fs::File::open(&p).unwrap();
    let (mut one, mut three) = (vec![0u8; 65536], vec![0u8; 65536]);
    f.read_exact_at(&mut one, 65536).unwrap();
    f.read_exact_at(&mut three, 3 * 65536).unwrap();
    patch(&p, 65536, &three);
    patch(&p, 3 * 65536, &one);
    let (code, err) = reread(&s, &id, &["--verify"]);
    eprintln!("swapped blocks: exit {code:?}: {}", err.trim());
    assert_eq!(code, Some(1));
    assert!(
        err.contains("verify failed at offset 65536: place: expected file 0 offset 65536, found a block written for file 0 offset 196608"),
        "{err}"
    );
}

#[test]
fn a_stale_block_from_an_earlier_write_is_caught() {
    let s = Scratch::new();
    let (id, p) = kept(&s, "write,rewrite");
    // Block 7 as the first write left it (generation 1), as if the rewrite of it were lost.
    let tag = BlockTag { verify: true, run: run_tag(&id), generation: 1, written_bs: 65536 };
    let mut block = vec![0u8; 65536];
    let mut data = iolab::worker::data::DataPath::with(&seed_1_spec(), &[0], tag);
    data.init_write_buf(&mut block);
    data.before_write(&mut block, iolab::plan::Op { file: 0, offset: 7 * 65536, len: 65536 });
    patch(&p, 7 * 65536, &block);
    let (code, err) = reread(&s, &id, &["--verify"]);
    eprintln!("stale block: exit {code:?}: {}", err.trim());
    assert_eq!(code, Some(1));
    assert!(err.contains("verify failed at offset 458752: sequence: expected 2, found 1"), "{err}");
}

#[test]
fn reuse_refuses_what_does_not_match_and_reads_whole_blocks() {
    let s = Scratch::new();
    let (id, p) = kept(&s, "write");
    let before = content_hash(&p);
    // A larger read block spans several written blocks: each is checked.
    assert_eq!(reread(&s, &id, &["--verify", "--bs", "256KiB"]).0, Some(0));
    let d = s.path().to_str().unwrap().to_string();
    let cases: &[(&[&str], &str)] = &[
        (&["--reuse", "0123abcd"], "reuse = `0123abcd`"),
        (&["--reuse", "../x"], "reuse = `../x`: not a run id"),
        (&["--reuse", &id, "--set", "ops=write"], "ops = `write`: reuse reads the files of a kept run"),
        (&["--reuse", &id, "--set", "size=2MiB"], "holds 1048576 bytes but the plan reads 2097152"),
        (&["--reuse", &id, "--set", "seed=9"], "seed = `9`: run"),
        (&["--reuse", &id, "--verify", "--set", "bs=16KiB"], "bs must be a multiple of run"),
        (&["--reuse", &id, "--set", "workers=2"], "did not create"),
    ];
    for (args, want) in cases {
        let mut all = vec![
            "run",
            "-q",
            "--dir",
            &d,
            "--op",
            "read",
            "--size",
            "1MiB",
            "--bs",
            "64KiB",
            "--reps",
            "1",
            "--no-store",
        ];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
    // A kept file with a second name (a hard link outside) is no longer iolab's alone.
    let second = s.path().join("second-name");
    std::fs::hard_link(&p, &second).unwrap();
    let (code, err) = reread(&s, &id, &["--verify"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("w0000.dat has 2 links: a hard link elsewhere points at the data run"), "{err}");
    std::fs::remove_file(&second).unwrap();
    assert_eq!(reread(&s, &id, &["--verify"]).0, Some(0));
    // Data written without verify cannot be verified.
    let doc = s.run_json(&[
        "--op",
        "write",
        "--size",
        "1MiB",
        "--bs",
        "64KiB",
        "--reps",
        "1",
        "--keep",
        "--no-store",
    ]);
    let plain = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let (code, err) = reread(&s, &plain, &["--verify"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("wrote no verify headers"), "{err}");
    assert_eq!(content_hash(&p), before, "reuse never writes");
    assert_eq!(work_dirs(s.path()).len(), 2, "reuse creates nothing");
}

#[test]
fn verify_refuses_what_it_cannot_check() {
    let s = Scratch::new();
    let d = s.path().to_str().unwrap();
    for (args, want) in [
        (&["--bs", "256", "--size", "4KiB"][..], "bs = `256`: verify needs blocks of at least 512 bytes"),
        (&["--engine", "null"][..], "verify = `true`: engine null moves no data to verify"),
    ] {
        let mut all = vec!["run", "-q", "--dir", d, "--verify"];
        all.extend_from_slice(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
    }
}

/// `bench/verify.sh`: XXH64 and verify-check throughput on this machine, printed (speeds are
/// measured by bench scripts, never asserted by tests).
#[test]
#[ignore = "measurement: run by bench/verify.sh"]
fn checksum_throughput() {
    let mut block = vec![0u8; 1 << 20];
    let tag = BlockTag { verify: true, run: 1, generation: 1, written_bs: 1 << 20 };
    let mut data = iolab::worker::data::DataPath::with(&seed_1_spec(), &[0], tag);
    data.init_write_buf(&mut block);
    let n = 4096u64;
    let t = std::time::Instant::now();
    let mut x = 0;
    for i in 0..n {
        x ^= iolab::plan::verify::xxh64(&block, i);
    }
    let hash = n as f64 * block.len() as f64 / t.elapsed().as_secs_f64() / 1e9;
    let t = std::time::Instant::now();
    for i in 0..n {
        let op = iolab::plan::Op { file: 0, offset: (i % 64) << 20, len: 1 << 20 };
        data.before_write(&mut block, op);
        data.after_read(&block, op).unwrap();
    }
    let both = n as f64 * block.len() as f64 / t.elapsed().as_secs_f64() / 1e9;
    println!("xxh64: {hash:.2} GB/s; seal + check of 1 MiB blocks: {both:.2} GB/s ({x:x})");
}

/// A plain spec with seed 1 (file-per-worker, no stripes): what the data path needs to build
/// the blocks a default run writes.
fn seed_1_spec() -> iolab::spec::Spec {
    let env = iolab::experiment::ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    iolab::experiment::resolve(&iolab::experiment::Params::default(), &env).unwrap()
}

/// Stripe components carry the logical file's stamps but are verified at their own (file,
/// offset): a flipped byte in a component is found, and named at the component's offset.
#[test]
fn a_flipped_byte_in_a_stripe_component_is_caught() {
    let s = Scratch::new();
    let d = s.path().to_str().unwrap();
    // Two targets: the scratch dir comes from `run_json` and `reread`, the second from here.
    let stripe = ["--dir", d, "--layout", "striped", "--stripe-unit", "16KiB", "--workers", "2"];
    let mut args =
        vec!["--verify", "--op", "write", "--size", "1MiB", "--bs", "64KiB", "--reps", "1", "--keep"];
    args.extend_from_slice(&stripe);
    let doc = s.run_json(&args);
    let id = phases(&doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let comp = work_dir(s.path(), &id).join("striped.s01.dat");
    assert_eq!(std::fs::metadata(&comp).unwrap().len(), 1 << 20, "half of the 2 MiB file");
    let again = [&["--verify"][..], &stripe].concat();
    assert_eq!(reread(&s, &id, &again).0, Some(0), "intact data verifies");
    let at = 3 * 16384 + 999;
    let mut b = [0u8];
    std::fs::File::open(&comp).unwrap().read_exact_at(&mut b, at).unwrap();
    patch(&comp, at, &[b[0] ^ 0x01]);
    let (code, err) = reread(&s, &id, &again);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("striped.s01.dat: verify failed at offset {}: checksum", 3 * 16384)),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "first differing byte at offset {at}: expected 0x{:02x}, found 0x{:02x}",
            b[0],
            b[0] ^ 1
        )),
        "{err}"
    );
}
