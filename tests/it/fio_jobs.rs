//! `iolab fio JOBFILE` against fio itself: for a set of job files (sequential, a random
//! permutation, numjobs, nrfiles round-robin, fsync every N, end_fsync, O_DIRECT, iodepth on
//! io_uring) fio with `write_iolog` and iolab with `--trace` make the same files of the same
//! sizes and the same ops (in fio's order where it is deterministic, the same set of blocks
//! for a permutation and for ops in flight on io_uring), and the same number of fsyncs
//! (strace); bad job files are refused by name with nothing written; `--print` runs nothing
//! and shows the options over it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::util::*;
use crate::workloads::{fio_log, trace};

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The data files under `dir` (recursively) and their sizes, by name.
fn files(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if m.is_dir() {
            out.extend(files(&e.path()));
        } else if !name.starts_with('.') {
            out.insert(name, m.len());
        }
    }
    out
}

/// `fsync` calls on files whose path contains `under`, in an strace log.
fn fsyncs(log: &Path, under: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines().filter(|l| l.contains(" fsync(") && l.contains(under)).count()
}

/// How a case's ops must agree.
#[derive(Clone, Copy, PartialEq)]
enum Agree {
    /// Each job's ops in fio's order.
    InOrder,
    /// Each job's ops as a set (a permutation: fio's and iolab's orders differ).
    AsSet,
}

/// Runs `body` (a job file with `DIR` for its directory) with fio and with iolab, checks the
/// files and the ops, and returns (fio's fsyncs, iolab's fsyncs).
fn compare(s: &Scratch, name: &str, body: &str, agree: Agree) -> (usize, usize) {
    let (fdir, idir) = (s.path().join(format!("fio-{name}")), s.path().join(format!("iolab-{name}")));
    std::fs::create_dir_all(&fdir).unwrap();
    std::fs::create_dir_all(&idir).unwrap();
    let job = |d: &Path| {
        let p = s.path().join(format!("{name}-{}.fio", d.file_name().unwrap().to_string_lossy()));
        std::fs::write(&p, body.replace("DIR", d.to_str().unwrap())).unwrap();
        p
    };
    let (fjob, ijob) = (job(&fdir), job(&idir));
    let log = s.path().join(format!("{name}.iolog"));
    let (fst, ist) =
        (s.path().join(format!("{name}-fio.strace")), s.path().join(format!("{name}-iolab.strace")));
    let strace = |out: &Path| -> Command {
        let mut c = Command::new("strace");
        c.args(["-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o", out.to_str().unwrap()]);
        c
    };
    let o =
        strace(&fst).arg("fio").arg(format!("--write_iolog={}", log.display())).arg(&fjob).output().unwrap();
    assert!(o.status.success(), "fio {name}: {}", stderr(&o));
    let o = strace(&ist)
        .arg(bin())
        .args(["fio", ijob.to_str().unwrap(), "--reps", "1", "--trace", "--keep", "--quiet"])
        .env("IOLAB_RAM_BYTES", TEST_RAM_BYTES.to_string())
        .env("IOLAB_DB", s.db())
        .current_dir(s.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "iolab fio {name}: {}", stderr(&o));
    // Files: fio's JOB.J.F are iolab's worker J's file F, the set's file J + F x jobs.
    let theirs = files(&fdir);
    let jobs = theirs.keys().map(|n| n.split('.').nth(1).unwrap().parse::<u64>().unwrap()).max().unwrap() + 1;
    let key = |n: &str| -> (u64, u64) {
        let p: Vec<&str> = n.split('.').collect();
        (p[1].parse().unwrap(), p[2].parse().unwrap())
    };
    let fio_files: BTreeMap<(u64, u64), u64> = theirs.iter().map(|(n, l)| (key(n), *l)).collect();
    let ours: BTreeMap<(u64, u64), u64> = files(&idir)
        .iter()
        .map(|(n, l)| {
            let g: u64 = n.trim_start_matches('w').trim_end_matches(".dat").parse().unwrap();
            ((g % jobs, g / jobs), *l)
        })
        .collect();
    assert_eq!(ours, fio_files, "{name}: the same files of the same sizes");
    // Ops: each job's reads and writes, as (file, write, offset, length).
    let mut want: BTreeMap<u64, Vec<(u64, bool, u64, u64)>> = BTreeMap::new();
    for op in fio_log(&std::fs::read_to_string(&log).unwrap()) {
        if op.1 == "read" || op.1 == "write" {
            let (j, f) = key(Path::new(&op.0).file_name().unwrap().to_str().unwrap());
            want.entry(j).or_default().push((f, op.1 == "write", op.2, op.3));
        }
    }
    let phase = std::fs::read_to_string(&ijob).unwrap().contains("rw=randwrite");
    let mut got: BTreeMap<u64, Vec<(u64, bool, u64, u64)>> = BTreeMap::new();
    let mut rows = trace(s, if phase { "write:random" } else { "write" });
    rows.sort_by_key(|r| (r.worker, r.start_ns));
    for r in rows {
        got.entry(u64::from(r.worker)).or_default().push((
            u64::from(r.file) / jobs,
            r.write,
            r.offset,
            r.len,
        ));
    }
    if agree == Agree::AsSet {
        for v in want.values_mut().chain(got.values_mut()) {
            v.sort_unstable();
        }
    }
    assert!(want.values().map(Vec::len).sum::<usize>() > 0, "{name}: fio's log lists its ops");
    assert_eq!(got, want, "{name}: the same ops");
    (fsyncs(&fst, fdir.to_str().unwrap()), fsyncs(&ist, idir.to_str().unwrap()))
}

const HEAD: &str = "[global]\ndirectory=DIR\nthread\nrandseed=3\n";

#[test]
fn fio_job_files_make_fios_files_ops_and_syncs() {
    if !have("fio") || !have("strace") {
        eprintln!("fio or strace is not installed: the comparison with fio is skipped");
        return;
    }
    let s = Scratch::new();
    let cases: &[(&str, &str, Agree)] = &[
        ("seq", "[seq]\nrw=write\nbs=64k\nsize=1m\n", Agree::InOrder),
        ("perm", "[perm]\nrw=randwrite\nbs=4k\nsize=256k\n", Agree::AsSet),
        ("jobs", "[jobs]\nrw=write\nbs=16k\nsize=128k\nnumjobs=3\n", Agree::InOrder),
        (
            "rr",
            "[rr]\nrw=write\nbs=16k\nsize=192k\nnrfiles=3\nfile_service_type=roundrobin\n",
            Agree::InOrder,
        ),
        // fio's default kb_base reads KiB as 1000: a 64000-byte file of 16 writes of 4000.
        ("kib", "[kib]\nrw=write\nbs=4000\nsize=64KiB\n", Agree::InOrder),
        ("direct", "[direct]\nrw=write\nbs=4k\nsize=128k\ndirect=1\n", Agree::InOrder),
        // At iodepth 8 the start times of the ops in flight do not give their order of
        // submission: their set is compared.
        (
            "uring",
            "[uring]\nrw=write\nbs=4k\nsize=256k\nioengine=io_uring\niodepth=8\ndirect=1\n",
            Agree::AsSet,
        ),
    ];
    for (name, body, agree) in cases {
        let (f, i) = compare(&s, name, &format!("{HEAD}{body}"), *agree);
        assert_eq!((f, i), (0, 0), "{name}: fio syncs nothing unless told, nor does iolab");
    }
    // end_fsync: one fsync of the file at the end.
    let synced =
        compare(&s, "end", &format!("{HEAD}[end]\nrw=write\nbs=4k\nsize=64k\nend_fsync=1\n"), Agree::InOrder);
    assert_eq!(synced, (1, 1), "end_fsync");
    // fsync=5 with end_fsync: after every 5 writes and at the end, in both.
    let body = format!("{HEAD}[every]\nrw=write\nbs=4k\nsize=64k\nfsync=5\nend_fsync=1\n");
    let (f, i) = compare(&s, "every", &body, Agree::InOrder);
    assert_eq!((f, i), (4, 4), "16 writes, fsync=5 and end_fsync: after 5, 10, 15 and at the end");
    // fsync=4 alone: fio syncs after every 4th write but its last; iolab's sync every 16 KiB
    // also after the last (the translation says so).
    let (f, i) =
        compare(&s, "four", &format!("{HEAD}[four]\nrw=write\nbs=4k\nsize=64k\nfsync=4\n"), Agree::InOrder);
    assert_eq!((f, i), (3, 4), "16 writes at fsync=4");
}

#[test]
fn bad_job_files_are_refused_by_name_with_nothing_written() {
    let s = Scratch::new();
    for (body, field) in [
        ("[a]\nsize=1m\nramp_time=2\n", "fio option ramp_time"),
        ("[a]\nsize=1m\nbs=4k,8k\n", "fio option bs"),
        ("[a]\nsize=${IOLAB_NO_SUCH_VAR}\n", "${IOLAB_NO_SUCH_VAR}"),
        ("[a]\nsize=1m\n[b]\nsize=1m\n", "fio job [b]"),
        ("[a]\nsize=1m\nnosuch\n", "fio option nosuch"),
    ] {
        std::fs::write(s.path().join("bad.fio"), format!("[global]\ndirectory=.\n{body}")).unwrap();
        let o = s.iolab(&["fio", "bad.fio", "--reps", "1", "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", stderr(&o));
        assert!(stderr(&o).contains(field), "{body}: {}", stderr(&o));
        assert_eq!(s.leftovers(), ["bad.fio"], "{body}: nothing written");
    }
    // iolab run's own options hold over a job file: a bad --ram is refused before anything runs.
    std::fs::write(s.path().join("good.fio"), "[global]\ndirectory=.\n[a]\nsize=64k\n").unwrap();
    let o = s.iolab(&["fio", "good.fio", "--ram", "0", "--reps", "1", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("must be positive"), "{}", stderr(&o));
    assert_eq!(s.leftovers(), ["bad.fio", "good.fio"], "nothing written");
    let o = s.iolab(&["fio", "nope.fio"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("JOBFILE"), "{}", stderr(&o));
}

#[test]
fn print_shows_the_translation_with_iolabs_options_over_it_and_runs_nothing() {
    let s = Scratch::new();
    let job =
        "[global]\ndirectory=.\nsize=1m\n[mix]\nrw=randrw\nrwmixread=70\nbs=4k\nruntime=1\ntime_based\n";
    std::fs::write(s.path().join("mix.fio"), job).unwrap();
    let o = s.iolab(&["fio", "mix.fio", "--print", "--reps", "2", "--set", "cache=warm"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for (line, from) in [
        ("ops = [\"rw:random\"]", "rw=randrw"),
        ("rwmixread = 70", "rwmixread=70"),
        ("runtime = \"1000ms\"", "runtime=1 time_based"),
        ("reps = 2", "--reps 2"),
        ("cache = \"warm\"", "--set cache=warm"),
    ] {
        assert!(text.lines().any(|l| l.starts_with(line) && l.ends_with(from)), "{line} # {from}:\n{text}");
    }
    assert_eq!(s.leftovers(), ["mix.fio"], "nothing run");
    // What it prints runs as an experiment file.
    std::fs::write(s.path().join("mix.toml"), &text).unwrap();
    let o = s.iolab(&["plan", "mix.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
