//! The fio translation's unit tests: each option to its parameter (resolved as `iolab run`
//! would), the phases of stonewall groups, and the refusals naming the option.

use std::path::Path;

use super::*;
use crate::experiment::ResolveEnv;

fn tr(text: &str) -> Result<Translation> {
    translate(text, Path::new("job.fio"), &|k| (k == "BS").then(|| "16k".to_string()))
}

fn p(t: &Translation, key: &str) -> String {
    t.experiment.params.0.get(key).map(|v| v.join(",")).unwrap_or_default()
}

fn refused(text: &str) -> String {
    tr(text).map(|t| t.toml()).unwrap_err().to_string()
}

#[test]
fn a_random_job_with_its_options_resolves_to_the_same_workload() {
    let t = tr("[global]\nbs=${BS}\nsize=4m\nioengine=libaio\niodepth=8\ndirect=1\nthread\n\
        [j]\nrw=randrw\nrwmixwrite=30\nnumjobs=2\nrandseed=9\nruntime=2\ntime_based\nrate_iops=500\n\
        thinktime=100\nfsync=4\nrandom_distribution=zipf:1.2\n")
    .unwrap();
    assert_eq!(p(&t, "ops"), "rw:zipf:1.2");
    assert_eq!(p(&t, "rwmixread"), "70");
    assert_eq!(p(&t, "bs"), "16KiB");
    assert_eq!(p(&t, "engine"), "uring");
    assert_eq!(p(&t, "iodepth"), "8");
    assert_eq!(p(&t, "sync"), "every:64KiB");
    assert_eq!(p(&t, "sync_call"), "fsync");
    assert_eq!(p(&t, "thinktime"), "100000ns");
    assert!(t.notes.iter().any(|n| n.contains("no libaio")), "{:?}", t.notes);
    let env = ResolveEnv { ram_bytes: 1 << 34, cwd: std::env::temp_dir() };
    let spec = crate::experiment::resolve(&t.experiment.params, &env).unwrap();
    assert_eq!(spec.workers, 2);
    assert_eq!(spec.size_bytes, 4 << 20);
    assert_eq!(spec.bs_bytes, 16384);
    assert_eq!(spec.seed, 9);
    assert!(spec.direct);
    // Every printed line names its fio option.
    let text = t.toml();
    assert!(
        text.lines().any(|l| l.starts_with("rwmixread = 70") && l.ends_with("# rwmixwrite=30")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("runtime = ") && l.contains("runtime=2 time_based")),
        "{text}"
    );
}

#[test]
fn stonewall_groups_become_phases_in_order() {
    let t = tr("[global]\nsize=1m\nbs=4k\nnrfiles=4\n[w]\nrw=write\nend_fsync=1\n\
        [r]\nstonewall\nrw=randread\nnorandommap\nruntime=1\n")
    .unwrap();
    assert_eq!(p(&t, "ops"), "write:stonewall=0,read:uniform:stonewall=1000ms");
    assert_eq!(p(&t, "size"), "256KiB", "size is a job's, over its files");
    assert_eq!(p(&t, "files_per_worker"), "4");
    assert_eq!(p(&t, "round_robin"), "4");
    assert_eq!(p(&t, "sync"), "end", "the read phase's default does not count");
    assert_eq!(p(&t, "launcher"), "process");
    // A kb_base of 1000 reads k as 1000.
    let t = tr("[global]\nkb_base=1000\n[a]\nsize=8k\nbs=4k\n").unwrap();
    assert_eq!(p(&t, "bs"), "4000");
}

#[test]
fn what_iolab_cannot_honour_is_refused_by_name() {
    for (job, want) in [
        (
            "[a]\nsize=1m\nramp_time=5\n",
            "fio option ramp_time (job.fio:3, job [a]) = `ramp_time=5`: not built in iolab; iolab's --warmup",
        ),
        ("[a]\nsize=1m\nbsrange=4k-64k\n", "bssplit"),
        ("[a]\nsize=1m\nnosuch=1\n", "fio option nosuch"),
        ("[a]\nsize=1m\nrw=trim\n", "fio option rw"),
        ("[a]\nsize=1m\nioengine=posixaio\n", "fio option ioengine"),
        ("[a]\nsize=1m\nrandrepeat=0\n", "randseed"),
        ("[a]\nrw=read\n", "fio option size"),
        ("[a]\nsize=1m\n[b]\nsize=1m\n", "put stonewall"),
        ("[a]\nsize=1m\n[b]\nstonewall\nsize=1m\nbs=8k\n", "fio job [b] (bs) = `bs=8k`"),
        ("[a]\nsize=1m\nfilename=/tmp/x\nnumjobs=2\n", "offset_increment"),
        ("[a]\nsize=1m\nwrite_iolog=x\n", "--trace"),
        ("[a]\nsize=1.5m\n", "fio option size"),
    ] {
        let e = refused(job);
        assert!(e.contains(want), "{job:?}: {e}");
    }
}
