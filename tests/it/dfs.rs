//! Real distributed file systems over the simulated hosts (`tests/hosts.sh up --fs NAME`):
//! iolab names them as their users know them, asks them where files lie (FIEMAP cannot), and
//! tells the truth about their client caches: a cold read that their client served from its own
//! cache is never reported as plainly cold, and a plain cold read moved every byte from the
//! servers. The servers' reads are counted in their processes' /proc/PID/io.

use std::path::Path;

use crate::hosts::{Hosts, on, on_bytes, servers_read_bytes};
use crate::util::*;

/// `iolab ARGS` run on `host` (in its namespaces) with the store `db`; stdout, asserted to
/// succeed.
pub(crate) fn iolab_on(host: &str, db: &Path, args: &str) -> String {
    on(
        host,
        &format!(
            "cd / && IOLAB_DB={} IOLAB_RAM_BYTES={TEST_RAM_BYTES} {} {args}",
            db.display(),
            bin().display()
        ),
    )
}

pub(crate) fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The run id of a one-phase, one-repetition run's JSON.
fn run_id(doc: &Value) -> String {
    phases(doc)[0]["repetitions"][0]["run_id"].as_str().unwrap().to_string()
}

fn pid_files(kind: &str) -> Vec<String> {
    ["h1", "h2", "h3"].iter().map(|h| format!("{kind}/{h}")).collect()
}

const MIB: u64 = 1 << 20;

/// MooseFS (master on h1, a chunkserver per host, goal 1), read on h2: `info` and the run's
/// header name it with its master; a written file's chunks are placed as `mfsfileinfo` says
/// (FIEMAP: not answered); a cold read after the file was read through the mount (so any
/// cache of the client would hold it) is plainly cold, and rightly: the chunkservers read every
/// byte again. The store keeps the names.
#[test]
fn moosefs_is_named_placed_and_read_cold_from_its_chunkservers() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["moosefs"]) else { return };
    let db = s.db();
    let info = iolab_on("h2", &db, "info /mnt/moosefs");
    for want in [
        "moosefs (fuse) via mfs#10.213.77.1:9421, a network file system",
        "placement    goal 1 (copies of each chunk), chunks of 64 MiB",
        "FIEMAP: not answered by FUSE file systems",
        "client cache none beside the kernel's pages that iolab knows of",
    ] {
        assert!(info.contains(want), "{want}: {info}");
    }
    let t = &json(&iolab_on("h2", &db, "info --json /mnt/moosefs"))["targets"][0];
    assert_eq!((t["fs"]["name"].as_str(), t["fs"]["network"].as_bool()), (Some("moosefs"), Some(true)));
    assert_eq!(t["mount_source"], "mfs#10.213.77.1:9421");
    assert!(t.get("client_cache").is_none(), "{t}");

    // A file of two chunks (72 MiB: 64 + 8), written on h2 and kept.
    let w = json(&iolab_on(
        "h2",
        &db,
        "run --dir /mnt/moosefs --op write --size 72MiB --reps 1 --seed 3 --keep --json --quiet",
    ));
    let rid = run_id(&w);
    let layout = &phases(&w)[0]["repetitions"][0]["file_layout"];
    assert!(
        layout["fiemap_error"].as_str().unwrap().starts_with("FIEMAP not answered by moosefs (fuse)"),
        "{layout}"
    );
    let placed = &layout["placement"][0];
    assert_eq!(placed["file"], "w0000.dat");
    assert_eq!(placed["source"], "mfsfileinfo");
    let pieces = placed["pieces"].as_array().unwrap();
    let spans: Vec<(u64, u64)> = pieces
        .iter()
        .map(|p| (p["offset_bytes"].as_u64().unwrap(), p["length_bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(spans, [(0, 64 * MIB), (64 * MIB, 8 * MIB)]);
    // The same chunkservers as mfsfileinfo names, one copy each (goal 1).
    let file = format!("/mnt/moosefs/.iolab-{rid}/w0000.dat");
    let said = on("h1", &format!("mfsfileinfo {file}"));
    let copies: Vec<String> = said
        .lines()
        .filter_map(|l| l.trim().strip_prefix("copy 1: "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    let servers: Vec<String> = pieces.iter().map(|p| p["servers"][0].as_str().unwrap().to_string()).collect();
    assert_eq!(servers, copies, "{said}");
    assert!(pieces.iter().all(|p| p["servers"].as_array().unwrap().len() == 1));
    // The bytes are the run's, as another host reads them.
    assert!(on_bytes("h3", &format!("cat {file}")) == expected_file(3, 0, 72 * MIB, MIB), "bytes differ");

    // Read once through h2's mount (whatever the client keeps, it now holds), then a cold read
    // of the kept file: plainly cold, 0% resident, and every byte came from the chunkservers.
    on("h2", &format!("cat {file} > /dev/null"));
    let chunkservers: Vec<String> = pid_files("moosefs").iter().map(|p| format!("{p}.cs.pid")).collect();
    let before = servers_read_bytes(&chunkservers);
    let r = json(&iolab_on(
        "h2",
        &db,
        &format!(
            "run --dir /mnt/moosefs --reuse {rid} --op read:cold --size 72MiB --reps 1 --seed 3 --json --quiet"
        ),
    ));
    let read = servers_read_bytes(&chunkservers) - before;
    let cache = &phases(&r)[0]["cache"];
    assert_eq!(cache["policy"], "cold");
    assert!(cache.get("client_cache_not_controlled").is_none(), "{cache}");
    assert_eq!(phases(&r)[0]["repetitions"][0]["resident_fraction"], 0.0);
    assert!(read >= 72 * MIB, "the chunkservers read {read} bytes for a cold read of 72 MiB");
    // The store keeps what the file system is.
    let shown = json(&iolab_on("h2", &db, "results show last --json"));
    assert_eq!(shown["host"]["targets"][0]["fs"]["name"], "moosefs");
    on("h2", &format!("rm -rf /mnt/moosefs/.iolab-{rid}"));
}

/// GlusterFS (a distribute volume of a brick per host), read on h2. Its client keeps file data
/// in translators a cold read's eviction cannot reach: quick-read (small files) by default,
/// io-cache when the volume asks for it. With io-cache on and the file read once through the
/// mount, a cold read passes the kernel's check (0% resident) yet the bricks read almost
/// nothing: iolab labels it `cold (kernel pages only; ...)` in the JSON, the table and the
/// store. With io-cache off the same read is plainly cold and the bricks read every byte.
#[test]
fn glusterfs_client_cache_is_never_reported_as_plainly_cold() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["glusterfs"]) else { return };
    let db = s.db();
    let info = iolab_on("h2", &db, "info /mnt/glusterfs");
    for want in [
        "glusterfs (fuse) volume pfs from h2, a network file system",
        "placement    3 bricks: ",
        "client cache glusterfs client translators quick-read (files up to 64 KiB); a cold read's eviction does not reach it",
    ] {
        assert!(info.contains(want), "{want}: {info}");
    }
    // A small file: quick-read may serve it, so its cold read is labelled.
    let small = json(&iolab_on(
        "h2",
        &db,
        "run --dir /mnt/glusterfs --op write,read:cold --size 32KiB --bs 32KiB --reps 1 --json --quiet",
    ));
    assert_eq!(
        phases(&small)[1]["cache"]["client_cache_not_controlled"],
        "glusterfs client translators quick-read (glusterfs)"
    );
    // A cold metadata phase that reads small files' data goes through the same labelling: so
    // is labelled as a data cold read is (it once got no label); a cold stat reads no data.
    let md = json(&iolab_on(
        "h2",
        &db,
        "run --dir /mnt/glusterfs --op create,stat:cold,read-files:cold,unlink --md-files 10 --md-size 1KiB --reps 1 --json --quiet",
    ));
    assert!(phases(&md)[1]["cache"].get("client_cache_not_controlled").is_none(), "{md}");
    assert_eq!(
        phases(&md)[2]["cache"]["client_cache_not_controlled"],
        "glusterfs client translators quick-read (glusterfs)"
    );

    // io-cache on, kept a minute before it asks the bricks again.
    let set = |opt: &str, v: &str| on("h1", &format!("gluster --mode=script volume set pfs {opt} {v}"));
    let graph_has = |x: &str| on("h2", "ls /mnt/glusterfs/.meta/graphs/active/").contains(x);
    set("performance.cache-size", "64MB");
    set("performance.cache-refresh-timeout", "60");
    set("performance.io-cache", "on");
    wait_until(|| graph_has("pfs-io-cache"));
    let w = json(&iolab_on(
        "h2",
        &db,
        "run --dir /mnt/glusterfs --op write --size 16MiB --reps 1 --keep --json --quiet",
    ));
    let rid = run_id(&w);
    let file = format!("/mnt/glusterfs/.iolab-{rid}/w0000.dat");
    let bricks: Vec<String> = pid_files("glusterfs").iter().map(|p| format!("{p}.brick.pid")).collect();
    let layout = &phases(&w)[0]["repetitions"][0]["file_layout"];
    assert_eq!(layout["placement"][0]["source"], "trusted.glusterfs.pathinfo");
    let brick = layout["placement"][0]["pieces"][0]["servers"][0].as_str().unwrap();
    assert!(brick.ends_with(":/mnt/srv/gluster/brick"), "{layout}");
    // Planted: read through h2's mount until a read after the kernel's pages are gone is served
    // by the client (the first reads after a write may still revalidate).
    let served_by_client = || {
        on("h2", &format!("cat {file} > /dev/null; dd if={file} iflag=nocache count=0 2>/dev/null"));
        let before = servers_read_bytes(&bricks);
        on("h2", &format!("cat {file} > /dev/null"));
        servers_read_bytes(&bricks) - before < MIB
    };
    assert!((0..10).any(|_| served_by_client()), "io-cache never served a read");
    let cold = |label: &str| {
        let before = servers_read_bytes(&bricks);
        let r = iolab_on(
            "h2",
            &db,
            &format!(
                "run --dir /mnt/glusterfs --reuse {rid} --op read:cold --size 16MiB --reps 1 --json --quiet"
            ),
        );
        let read = servers_read_bytes(&bricks) - before;
        let doc = json(&r);
        assert_eq!(phases(&doc)[0]["repetitions"][0]["resident_fraction"], 0.0, "{label}");
        (doc, read)
    };
    let (doc, read) = cold("io-cache on");
    assert!(read < MIB, "the bricks read {read} bytes: the client cache did not serve this read");
    let cache = &phases(&doc)[0]["cache"];
    assert_eq!(
        cache["client_cache_not_controlled"],
        "glusterfs client translators io-cache, quick-read (glusterfs)"
    );
    assert!(
        cache["method"]
            .as_str()
            .unwrap()
            .contains("not reached by the eviction: glusterfs client translators io-cache")
    );
    let table = iolab_on("h2", &db, "results show last");
    assert!(
        table.contains(
            "read:cold  cold (kernel pages only; the file system client's cache not controlled) 0.0%"
        ),
        "{table}"
    );
    assert!(!table.contains("read:cold  cold 0.0%"), "{table}");
    let csv = iolab_on("h2", &db, "results show last --csv");
    assert!(
        csv.contains(",cold (kernel pages only; the file system client's cache not controlled),"),
        "{csv}"
    );

    // io-cache off: a 16 MiB file is past quick-read's 64 KiB, so the read is plainly cold, and
    // the bricks read all of it.
    set("performance.io-cache", "off");
    wait_until(|| !graph_has("pfs-io-cache"));
    let (doc, read) = cold("io-cache off");
    assert!(read >= 16 * MIB, "the bricks read {read} bytes for a plain cold read of 16 MiB");
    assert_eq!(phases(&doc)[0]["cache"]["policy"], "cold");
    assert!(phases(&doc)[0]["cache"].get("client_cache_not_controlled").is_none());
    on("h2", &format!("rm -rf /mnt/glusterfs/.iolab-{rid}"));
}

/// Polls `ok` for up to 20 s.
fn wait_until(ok: impl Fn() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ok() {
        assert!(std::time::Instant::now() < end, "timed out");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Requests that reach each file system's servers while `iolab run ARGS` runs on h2 with 200
/// names (2 workers of 100): GlusterFS's bricks count LOOKUPs in the volume's profile (each
/// `info incremental` gives those since the one before); MooseFS's master is counted by the
/// packets h2 sends (one or more per request to it; the rest is heartbeats, a few a second).
/// Either count grows with the run's length as well: heartbeats, and GlusterFS's client looks up
/// each directory again (at every brick) once its entry is a second old.
fn served(fs: &str, db: &Path, ops: &str) -> (Value, u64) {
    let count = || match fs {
        "glusterfs" => on("h1", "gluster volume profile pfs info incremental")
            .lines()
            .filter(|l| l.trim_end().ends_with("LOOKUP"))
            .map(|l| l.split_whitespace().rev().nth(1).unwrap().parse::<u64>().unwrap())
            .sum::<u64>(),
        _ => on("h2", "cat /sys/class/net/eth0/statistics/tx_packets").trim().parse().unwrap(),
    };
    let before = count();
    let args = format!("run --dir /mnt/{fs} --op {ops} --md-files 100 --workers 2 --reps 1 --json --quiet");
    let doc = json(&iolab_on("h2", db, &args));
    let after = count();
    (doc, if fs == "glusterfs" { after } else { after - before })
}

/// Metadata phases on both file systems of the rig, counted at their servers. After a cold
/// phase's drop, a stat of each of 200 names reaches the servers: GlusterFS's bricks count a
/// LOOKUP or more per name, MooseFS's master a request or more. A warm phase's names were looked
/// up just before it, but MooseFS's client keeps none of them (mfsentrycacheto=0), so each is
/// asked of the master twice, before and in the phase, and GlusterFS's client keeps them for a
/// second: iolab labels such a warm phase in the JSON and the table, and a cold one plainly.
#[test]
fn metadata_phases_reach_the_servers_and_warm_ones_are_labelled_where_names_are_not_kept() {
    let s = Scratch::new();
    let Some(_hosts) = Hosts::up_with(s.path(), &["moosefs", "glusterfs"]) else { return };
    let db = s.db();
    let o =
        crate::hosts::hosts_sh(&["run", "h1", "gluster volume profile pfs start"], Path::new("/")).unwrap();
    assert!(o.status.success() || stderr(&o).contains("already started"), "{}", stderr(&o));
    on("h1", "gluster volume profile pfs info clear");
    for fs in ["moosefs", "glusterfs"] {
        // What the create alone sends, without what a slow run adds: the least of three runs.
        let create = (0..3).map(|_| served(fs, &db, "create").1).min().unwrap();
        let (cold, cold_n) = served(fs, &db, "create,stat:cold");
        let (warm, warm_n) = served(fs, &db, "create,stat:warm");
        println!("{fs}: create {create}, create and a cold stat {cold_n}, create and a warm stat {warm_n}");
        let stat = |doc: &Value| phases(doc)[1].clone();
        assert_eq!(stat(&cold)["repetitions"][0]["ops"], 200, "{fs}");
        assert_eq!(stat(&cold)["cache"]["policy"], "cold");
        assert!(stat(&cold)["cache"].get("names_not_kept").is_none(), "{fs}");
        // Every name of the cold stat reached the servers (10% for heartbeats falling in the
        // creating runs rather than in this one; a slow run only adds to its count).
        assert!(cold_n >= create + 180, "{fs}: a cold stat of 200 names sent {} requests", cold_n - create);
        let note = stat(&warm)["cache"]["names_not_kept"].as_str().unwrap().to_string();
        assert!(note.ends_with(&format!("({fs})")), "{note}");
        let m = stat(&warm)["cache"]["method"].as_str().unwrap().to_string();
        assert!(m.contains("the names are not kept"), "{m}");
        if fs == "moosefs" {
            assert!(note.contains("mfsentrycacheto=0"), "{note}");
            // The look-ups before the phase and the phase's own: at least 1.5 per name.
            assert!(warm_n >= create + 300, "warm: {} requests for 200 names", warm_n - create);
        } else {
            assert!(note.contains("entry-timeout"), "{note}");
        }
    }
    // The full table says it, with the legend line naming the client.
    let out = iolab_on(
        "h2",
        &db,
        "run --dir /mnt/moosefs --op create,stat:warm --md-files 10 --reps 1 --no-store --explain",
    );
    assert!(out.contains(iolab::results::WARM_NAMES_NOT_KEPT), "{out}");
    assert!(out.contains("its lookups reach the servers as a cold phase's do"), "{out}");
    // Neither has RENAME_NOREPLACE: a rename phase is refused before the run, naming the file
    // system, where it once failed mid-run with a bare EINVAL.
    for fs in ["moosefs", "glusterfs"] {
        let args =
            format!("run --dir /mnt/{fs} --op create,rename,unlink --md-files 10 --reps 1 2>&1; echo rc=$?");
        let out = iolab_on("h2", &db, &args);
        assert!(out.trim_end().ends_with("rc=2"), "{fs}: {out}");
        assert!(out.contains("rename calls renameat2 with RENAME_NOREPLACE"), "{fs}: {out}");
        let want = format!("the file system holding /mnt/{fs} ({fs} (fuse) ");
        assert!(out.contains(&want) && out.contains("refuses: Invalid argument"), "{fs}: {out}");
    }
    for fs in ["moosefs", "glusterfs"] {
        assert_eq!(on("h3", &format!("ls -A /mnt/{fs}")).trim(), "", "{fs}: left behind");
    }
}
