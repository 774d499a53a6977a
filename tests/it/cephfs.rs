//! CephFS over the simulated hosts (`tests/hosts.sh up --fs cephfs`: a mon, a mgr, an OSD per
//! host, an MDS, ceph-fuse on every host): iolab names it from what its client says of itself,
//! places files by their layout, and labels a cold read exactly when ceph-fuse's object cacher
//! may serve it, as the OSDs' own read counters (`perf dump`) prove. One bring-up serves every
//! check here (a cluster takes 20-35 s to come up on this machine); the last check takes it down
//! with its MDS dead.

use std::path::Path;
use std::process::Command;

use crate::dfs::{iolab_on, json};
use crate::hosts::{Hosts, hosts_sh, on, on_bytes};
use crate::util::*;

const MIB: u64 = 1 << 20;
const FS: &str = "/var/tmp/iolab-hosts/fs/cephfs";

/// Bytes the three OSDs have sent to clients' reads (`op_r_out_bytes`), from their admin sockets.
fn osd_read_bytes() -> u64 {
    (0..3)
        .map(|i| {
            let o = Command::new("ceph")
                .args(["--admin-daemon", &format!("{FS}/run/ceph-osd.{i}.asok"), "perf", "dump"])
                .output()
                .unwrap();
            assert!(o.status.success(), "osd.{i}: {}", stderr(&o));
            json(&String::from_utf8_lossy(&o.stdout))["osd"]["op_r_out_bytes"].as_u64().unwrap()
        })
        .sum()
}

/// A 16 MiB file written through `dir` on h3 and kept, read once through the mount (whatever
/// the client keeps, it now holds), then read cold by iolab: the run's JSON and the bytes the
/// OSDs sent for that read.
fn cold_read(db: &Path, dir: &str) -> (Value, u64) {
    let w = json(&iolab_on(
        "h3",
        db,
        &format!("run --dir {dir} --op write --size 16MiB --reps 1 --seed 5 --keep --json --quiet"),
    ));
    let rid = phases(&w)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    on("h3", &format!("cat {dir}/.iolab-{rid}/w0000.dat > /dev/null"));
    let before = osd_read_bytes();
    let r = json(&iolab_on(
        "h3",
        db,
        &format!(
            "run --dir {dir} --reuse {rid} --op read:cold --size 16MiB --reps 1 --seed 5 --json --quiet"
        ),
    ));
    let read = osd_read_bytes() - before;
    println!("{dir}: the OSDs sent {read} bytes for a cold read of 16 MiB");
    assert_eq!(phases(&r)[0]["repetitions"][0]["resident_fraction"], 0.0, "{dir}");
    on("h3", &format!("rm -rf {dir}/.iolab-{rid}"));
    (r, read)
}

/// h3 mounts CephFS twice: /mnt/cephfs with the object cacher on (ceph-fuse's default) and
/// /mnt/cephfs-nooc with `--client_oc=false`. `info` names the file system, its monitor and
/// each client's cacher as its admin socket gives it, and free inodes as unlimited (statfs: -1);
/// a written file's RADOS objects are those `rados ls` lists; a cold read through the cacher is
/// labelled and the OSDs sent almost nothing for it, one without is plainly cold and the OSDs
/// sent every byte. Then the MDS is killed and `down` still frees every mount.
#[test]
fn cephfs_is_named_placed_and_its_object_cacher_labelled_exactly_when_on() {
    let s = Scratch::new();
    let Some(hosts) = Hosts::up_with(s.path(), &["cephfs"]) else { return };
    let db = s.db();
    let info = iolab_on("h3", &db, "info /mnt/cephfs");
    for want in [
        "cephfs (fuse) via ceph-fuse, fs cephfs, mon 10.213.77.1, a network file system",
        "placement    pool cephfs_data, objects of 4 MiB, stripe unit 4 MiB x 1 (ceph.dir.layout)",
        "client cache ceph-fuse's object cacher (client_oc); a cold read's eviction does not reach it",
        "client conf  ceph-fuse's object cacher on (client_oc true, client_oc_size 200 MiB), from its admin socket /var/tmp/iolab-hosts/fs/cephfs/run/ceph-client.admin.",
        "and unlimited inodes",
    ] {
        assert!(info.contains(want), "{want}: {info}");
    }
    let off = iolab_on("h3", &db, "info /mnt/cephfs-nooc");
    assert!(off.contains("client conf  ceph-fuse's object cacher off (client_oc false"), "{off}");
    assert!(off.contains("client cache none beside the kernel's pages"), "{off}");
    let t = &json(&iolab_on("h3", &db, "info --json /mnt/cephfs"))["targets"][0];
    assert_eq!((t["fs"]["name"].as_str(), t["fs"]["network"].as_bool()), (Some("cephfs"), Some(true)));
    assert_eq!(t["fs"]["via"], "ceph-fuse, fs cephfs, mon 10.213.77.1");

    // A file of 9 MiB on h2: three objects of 4 MiB (4 + 4 + 1), named by its inode.
    let w = json(&iolab_on(
        "h2",
        &db,
        "run --dir /mnt/cephfs --op write --size 9MiB --reps 1 --seed 3 --keep --json --quiet",
    ));
    let rid = phases(&w)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let layout = &phases(&w)[0]["repetitions"][0]["file_layout"];
    let placed = &layout["placement"][0];
    assert_eq!(placed["source"], "ceph.file.layout", "{layout}");
    let pieces = placed["pieces"].as_array().unwrap();
    let spans: Vec<(u64, u64)> = pieces
        .iter()
        .map(|p| (p["offset_bytes"].as_u64().unwrap(), p["length_bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(spans, [(0, 4 * MIB), (4 * MIB, 4 * MIB), (8 * MIB, MIB)]);
    let file = format!("/mnt/cephfs/.iolab-{rid}/w0000.dat");
    let ino: u64 = on("h3", &format!("stat -c %i {file}")).trim().parse().unwrap();
    let objects = on("h1", &format!("CEPH_CONF={FS}/ceph.conf rados -p cephfs_data ls"));
    for (n, p) in pieces.iter().enumerate() {
        let obj = format!("{ino:x}.{n:08x}");
        assert_eq!(p["servers"][0].as_str().unwrap(), format!("cephfs_data/{obj}"));
        assert!(objects.lines().any(|l| l == obj), "{obj} not in the pool: {objects}");
    }
    assert!(
        on_bytes("h3", &format!("cat {file}")) == expected_file(3, 0, 9 * MIB, MIB),
        "bytes differ on h3"
    );
    on("h2", &format!("rm -rf /mnt/cephfs/.iolab-{rid}"));

    // The object cacher on: the cold read is labelled, and the cacher served it.
    let (doc, read) = cold_read(&db, "/mnt/cephfs");
    assert!(read < MIB, "the OSDs sent {read} bytes: the object cacher did not serve this read");
    let cache = &phases(&doc)[0]["cache"];
    assert_eq!(cache["client_cache_not_controlled"], "ceph-fuse's object cacher (client_oc) (cephfs)");
    let table = iolab_on("h3", &db, "results show last");
    assert!(
        table.contains(
            "read:cold  cold (kernel pages only; the file system client's cache not controlled) 0.0%"
        ),
        "{table}"
    );
    // Off: plainly cold, and the OSDs sent every byte again.
    let (doc, read) = cold_read(&db, "/mnt/cephfs-nooc");
    assert!(read >= 16 * MIB, "the OSDs sent {read} bytes for a plain cold read of 16 MiB");
    assert_eq!(phases(&doc)[0]["cache"]["policy"], "cold");
    assert!(phases(&doc)[0]["cache"].get("client_cache_not_controlled").is_none(), "{doc}");
    let shown = json(&iolab_on("h3", &db, "results show last --json"));
    assert_eq!(shown["host"]["targets"][0]["fs"]["name"], "cephfs");
    #[cfg(feature = "mpi")]
    shared_file_across_hosts(&db, s.path());

    // The MDS dies with a request waiting in a client: `down` aborts the stuck connections and
    // ends every process it started.
    let pids: Vec<String> = std::fs::read_dir(FS)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pid"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap().trim().to_string())
        .collect();
    assert_eq!(pids.len(), 10, "mon, mgr, 3 OSDs, the MDS, 4 mounts: {pids:?}");
    let mds = std::fs::read_to_string(format!("{FS}/mds.pid")).unwrap();
    assert!(Command::new("kill").args(["-9", mds.trim()]).status().unwrap().success());
    let mut stuck =
        crate::hosts::hosts_command().args(["run", "h2", "touch /mnt/cephfs/after-mds"]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let down = hosts_sh(&["down"], Path::new("/")).unwrap();
    assert!(down.status.success(), "{}", stderr(&down));
    assert!(stderr(&down).contains("its FUSE connection aborted"), "{}", stderr(&down));
    assert!(!stuck.wait().unwrap().success(), "a create with its MDS dead succeeded");
    for p in &pids {
        // Gone, or a zombie waiting for init to reap it.
        let state = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        assert!(state.is_empty() || state.contains("State:\tZ"), "process {p} outlived down");
    }
    drop(hosts);
}

/// Six ranks (two per host) write a shared file on CephFS, then read it cold, each rank what a
/// rank on the next host wrote: no host read those bytes before, so the OSDs send them all,
/// and with every host's object cacher on the read is labelled all the same.
#[cfg(feature = "mpi")]
fn shared_file_across_hosts(db: &Path, cwd: &Path) {
    use crate::mpi::{ok_json, on_hosts};
    let exe = bin().to_str().unwrap().to_string();
    let db = db.to_str().unwrap();
    let base = "run --dir /mnt/cephfs --layout shared --size 4MiB --bs 1MiB --reps 1 --seed 7 --json --quiet";
    let args = |extra: &str| format!("{base} --db {db} {extra}");
    let w = args("--op write --keep");
    let w = ok_json(&on_hosts("mpirun", &exe, &w.split(' ').collect::<Vec<_>>(), cwd));
    let rid = phases(&w)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let total = 24 * MIB;
    let file = format!("/mnt/cephfs/.iolab-{rid}/shared.dat");
    let before = osd_read_bytes();
    let r = args(&format!("--op read:cold --reuse {rid} --reorder-reads node"));
    let r = ok_json(&on_hosts("mpirun", &exe, &r.split(' ').collect::<Vec<_>>(), cwd));
    let sent = osd_read_bytes() - before;
    println!("six ranks on three hosts: the OSDs sent {sent} bytes for a cross-host cold read of {total}");
    let ph = &phases(&r)[0];
    let rep = &ph["repetitions"][0];
    assert_eq!(rep["status"], "complete", "{rep}");
    assert_eq!(rep["resident_fraction"], 0.0, "some host's view was not cold");
    assert_eq!(ph["cache"]["client_cache_not_controlled"], "ceph-fuse's object cacher (client_oc) (cephfs)");
    // Each host read 8 MiB the others wrote: its own cacher held none of it.
    assert!(sent >= total, "the OSDs sent {sent} bytes for a cross-host cold read of {total}");
    let pairs: Vec<(u64, u64)> = rep["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["worker"].as_u64().unwrap(), w["rank"].as_u64().unwrap()))
        .collect();
    assert_eq!(pairs, [(0, 4), (1, 5), (2, 0), (3, 1), (4, 2), (5, 3)]);
    assert!(on_bytes("h2", &format!("cat {file}")) == expected_file(7, 0, total, MIB), "bytes differ");
    on("h1", &format!("rm -rf /mnt/cephfs/.iolab-{rid}"));
}
