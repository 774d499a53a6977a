//! Tests of IOR's translation: iolab's plan of a translated command line against IOR's
//! documented rules (doc/sphinx/userDoc: each task writes `-b` contiguous bytes per segment in
//! `-t` transfers, the segments one after another; in one shared file segment s holds every
//! task's block in task order, so transfer k of segment s of task r lies at s N b + r b + k t;
//! with -F a task's file holds its segments end to end, at s b + k t), for a grid of -b, -t,
//! -s, -F and tasks; IOR's task reordering; the options refused.

use super::*;
use crate::experiment::{ResolveEnv, resolve};
use crate::plan::plan;

const ONE: Ranks = Ranks { size: 1, on_first_host: 1, block_mapping: true };

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn spec(cmd: &str) -> crate::spec::Spec {
    let t = translate(&words(cmd), ONE).unwrap();
    let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    resolve(&t.experiment.params, &env).unwrap()
}

fn refusal(cmd: &str) -> String {
    match translate(&words(cmd), ONE) {
        Err(e) => e.to_string(),
        Ok(t) => panic!("{cmd}: translated to {:?}", t.experiment.params),
    }
}

/// IOR's offsets of task `r` of `n`, in the order it makes its transfers.
fn ior_offsets(b: u64, t: u64, s: u64, n: u64, r: u64, fpp: bool) -> Vec<u64> {
    let mut out = vec![];
    for seg in 0..s {
        for k in 0..b / t {
            out.push(if fpp { seg * b + k * t } else { seg * n * b + r * b + k * t });
        }
    }
    out
}

#[test]
fn offsets_per_task_segment_and_transfer_are_iors() {
    for (b, t) in [(4096u64, 4096u64), (16384, 4096), (12288, 4096), (65536, 16384)] {
        for s in [1u64, 2, 3] {
            for n in [1u64, 2, 3, 4] {
                for fpp in [false, true] {
                    let f = if fpp { " -F" } else { "" };
                    let cmd = format!("-w -b {b} -t {t} -s {s} -N {n}{f}");
                    let sp = spec(&cmd);
                    let p = plan(&sp);
                    let file_size = if fpp { b * s } else { n * b * s };
                    assert!(p.files.iter().all(|f| f.size_bytes == file_size), "{cmd}: {:?}", p.files);
                    assert_eq!(p.files.len() as u64, if fpp { n } else { 1 }, "{cmd}");
                    for w in &p.phases[0].workers {
                        let r = w.worker as u64;
                        let got: Vec<u64> = w.ops.iter().map(|o| o.offset).collect();
                        assert!(w.ops.iter().all(|o| o.len == t), "{cmd}");
                        assert_eq!(got, ior_offsets(b, t, s, n, r, fpp), "{cmd}: task {r}");
                        if fpp {
                            assert_eq!(w.files, [r as u32], "{cmd}: task {r}'s own file");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn random_offsets_visit_a_tasks_transfers_once() {
    let sp = spec("-w -r -F -z -b 16384 -t 4096 -s 2 -N 2 --random-offset-seed 9");
    assert_eq!(sp.seed, 9);
    let p = plan(&sp);
    for w in &p.phases[0].workers {
        let mut got: Vec<u64> = w.ops.iter().map(|o| o.offset).collect();
        assert_ne!(got, ior_offsets(16384, 4096, 2, 2, w.worker as u64, true), "not in order");
        got.sort_unstable();
        assert_eq!(got, ior_offsets(16384, 4096, 2, 2, w.worker as u64, true));
    }
}

#[test]
fn iors_read_shift_follows_the_node_mapping() {
    // IOR: shift = tasks on node 0 when rank 1 shares rank 0's node, else 1; x -Q; mod N.
    for size in 1..=12u32 {
        for on_first in 1..=size {
            for block in [true, false] {
                for q in 0..4u64 {
                    let r = Ranks { size, on_first_host: on_first, block_mapping: block };
                    let shift = if block { on_first as u64 } else { 1 };
                    assert_eq!(rank_offset(q, r), q * shift % size as u64);
                }
            }
        }
    }
    // 8 ranks, 4 per node, in blocks: -C reads what the next node's task wrote.
    let hosts = Ranks { size: 8, on_first_host: 4, block_mapping: true };
    let t = translate(&words("-w -r -C"), hosts).unwrap();
    assert_eq!(t.experiment.params.one("reorder_reads"), Some("4"));
    let t = translate(&words("-w -r -C -Q 2"), Ranks { block_mapping: false, ..hosts }).unwrap();
    assert_eq!(t.experiment.params.one("reorder_reads"), Some("2"));
    // On one node IOR's shift is 0: no reordering, and the translation says so.
    let t = translate(&words("-w -r -C"), Ranks { size: 4, on_first_host: 4, block_mapping: true }).unwrap();
    assert_eq!(t.experiment.params.one("reorder_reads"), None);
    assert!(t.notes.iter().any(|n| n.contains("reads are not reordered")), "{:?}", t.notes);
}

#[test]
fn apis_phases_and_commits_map_to_iolabs() {
    let p = |cmd: &str, key: &str| {
        translate(&words(cmd), ONE).unwrap().experiment.params.one(key).map(String::from)
    };
    assert_eq!(p("-a POSIX", "engine").as_deref(), Some("psync"));
    assert_eq!(p("-a mmap", "engine").as_deref(), Some("mmap"));
    assert_eq!(p("-a MPIIO -c", "mpiio").as_deref(), Some("collective"));
    assert_eq!(p("-a MPIIO --collective", "mpiio").as_deref(), Some("collective"));
    let ops = |cmd: &str| translate(&words(cmd), ONE).unwrap().experiment.params.0["ops"].clone();
    assert_eq!(ops(""), ["write", "read"]);
    assert_eq!(ops("-w"), ["write"]);
    assert_eq!(ops("-r"), ["read"]);
    assert_eq!(ops("-w -W -r"), ["write", "read:asis", "read"]);
    assert_eq!(p("-w", "sync").as_deref(), Some("none"));
    assert_eq!(p("-w -e", "sync").as_deref(), Some("end"));
    assert_eq!(p("-w -e", "sync_call").as_deref(), Some("fsync"));
    assert_eq!(p("-w -Y", "sync").as_deref(), Some("each"));
    assert_eq!(p("-w -D 30 -O stoneWallingWearOut=1", "stonewall").as_deref(), Some("30s"));
    assert_eq!(p("-w -D 30 -O stoneWallingWearOut=1", "wear_out").as_deref(), Some("true"));
    assert_eq!(p("-w -O blockSize=4m,transferSize=1m", "size").as_deref(), Some("4194304"));
    assert_eq!(p("-w -O filePerProc=1", "layout").as_deref(), Some("file-per-worker"));
    assert_eq!(p("-w -i 3", "reps").as_deref(), Some("3"));
    assert_eq!(p("-w --posix.odirect", "direct").as_deref(), Some("true"));
    assert_eq!(p("-w -o /tmp/x/testFile", "dirs").as_deref(), Some("/tmp/x"));
    assert_eq!(p("-w", "cache").as_deref(), Some("asis"));
    assert_eq!(p("-w -s 4", "segments").as_deref(), Some("4"));
    assert_eq!(p("-w -s 4 -F", "segments").as_deref(), Some("4"), "IOR's segments in each task's file");
    // The file the translation prints resolves to the same spec.
    let t = translate(&words("-w -r -b 64k -t 16k -s 3 -e -i 2"), ONE).unwrap();
    let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    let printed = crate::experiment::Params::from_toml(&t.toml()).unwrap();
    assert_eq!(resolve(&printed, &env).unwrap(), resolve(&t.experiment.params, &env).unwrap());
}

#[test]
fn a_value_written_onto_its_letter_reads_as_iors_parser_reads_it() {
    // IOR keeps the files of `ior -w -t1k -b4k` (the k of 1k is -k): so does iolab, and says so.
    let t = translate(&words("-w -t1k -b4k"), ONE).unwrap();
    let p = &t.experiment.params;
    assert_eq!((p.one("bs"), p.one("size"), p.one("keep")), (Some("1024"), Some("4096"), Some("true")));
    assert!(t.notes.iter().any(|n| n.contains("the k of -t1k")), "{:?}", t.notes);
    // -b4m: the m is -m (a file per repetition, as iolab always does): nothing else changes.
    let t = translate(&words("-w -t 1m -b4m"), ONE).unwrap();
    assert_eq!((t.experiment.params.one("size"), t.experiment.params.one("keep")), (Some("4194304"), None));
}

#[test]
fn what_iolab_cannot_do_as_ior_does_is_refused_by_name() {
    for (cmd, names) in [
        ("-w -Z", "`-Z`"),
        ("-w -X 3", "`-X 3`"),
        ("-w -u -F", "`-u`"),
        ("-w -z", "`-z`"),
        ("-w -z -z -F", "`-z -z`"),
        ("-w -q", "`-q`"),
        ("-a HDF5", "`-a HDF5`"),
        ("-b 3k -t 2k", "`-b 3k`"),
        ("-t 0", "`-t 0`"),
        ("-w -D 0 -O stoneWallingWearOut=1", "stoneWallingWearOut"),
        ("-w -O summaryFormat=JSON", "summaryFormat=JSON"),
        ("-w -O bogus=1", "bogus=1"),
        ("-w -c", "`-c`"),
        ("-w -W -C -r", "`-W`"),
        ("-b 1.5m", "1.5m"),
        ("-w --dryRun", "`--dryRun`"),
        ("-w --dataPacketType=o", "`--dataPacketType=o`"),
        // A letter inside a value is an option too, as IOR reads it: the K of 4K is -K.
        ("-w -b4K", "-K (the K of -b4K"),
        // IOR's own checks of -z: random within a block needs blocks of several transfers, and
        // checking random reads a given seed.
        ("-w -F -z -b 64k -t 64k", "choose blocksize > transferSize"),
        ("-w -r -R -F -z -b 64k -t 16k", "requires to set the random seed"),
        ("-w -b 1004 -t 4", "`-b 1004`: block size must be a multiple of access size"),
        ("-w -b 1000 -t 100", "`-t 100`: transfer size must be a multiple of access size"),
        ("-r -R", "`-R`: using readCheck only requires to write a timeStampSignature"),
    ] {
        let e = refusal(cmd);
        assert!(e.starts_with("ior option") && e.contains(names), "{cmd}: {e}");
    }
    let e =
        translate(&words("-w -N 3"), Ranks { size: 4, on_first_host: 4, block_mapping: true }).unwrap_err();
    assert!(e.to_string().contains("start as many ranks as tasks"), "{e}");
}
