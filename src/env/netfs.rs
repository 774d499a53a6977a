//! What file system a target is as its users know it (MooseFS, GlusterFS, CephFS, Lustre rather
//! than `fuse`), whether its data lives on other machines, and what its client may keep of a
//! file's data beside the kernel's pages, which a cold read's eviction (fadvise DONTNEED,
//! checked with mincore) does not reach. Where the file system says a file's bytes lie is in
//! [`crate::env::placement`].

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file system of a target, as its users know it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsIdentity {
    /// `moosefs`, `glusterfs`, `ceph`, `lustre`, `nfs4`, `ext4`...; a FUSE file system iolab
    /// does not know goes by its subtype (`fuse.NAME`: NAME), or `fuse` without one.
    pub name: String,
    /// Served by a FUSE daemon on the client.
    pub fuse: bool,
    /// Its data lives on other machines (servers over a network); None: iolab cannot tell.
    pub network: Option<bool>,
    /// What the client mounted: `mfs#10.0.0.1:9421`, `volume pfs from h1`, an NFS export.
    pub via: Option<String>,
}

/// Kernel file systems whose data lives on servers reached over a network (or, for the
/// shared-disk cluster file systems, on storage other nodes write too).
const KERNEL_NETWORK: &[&str] = &[
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "lustre", "gpfs", "beegfs", "orangefs", "pvfs2", "9p",
    "afs", "coda", "ocfs2", "gfs2", "panfs", "wekafs",
];

/// FUSE subtypes of network file systems, and the name their users know them by.
const FUSE_NETWORK: &[(&str, &str)] = &[
    ("glusterfs", "glusterfs"),
    ("ceph-fuse", "cephfs"),
    ("ceph", "cephfs"),
    ("mfs", "moosefs"),
    ("moosefs", "moosefs"),
    ("lizardfs", "lizardfs"),
    ("sshfs", "sshfs"),
    ("s3fs", "s3fs"),
    ("juicefs", "juicefs"),
    ("gcsfuse", "gcsfuse"),
    ("beegfs", "beegfs"),
];

/// Identifies a mount from its mountinfo type and source.
pub fn identify(fs_type: &str, source: &str) -> FsIdentity {
    let sub = fs_type.strip_prefix("fuse.").or_else(|| fs_type.strip_prefix("fuseblk."));
    let fuse = sub.is_some() || fs_type == "fuse" || fs_type == "fuseblk";
    if !fuse {
        let network = KERNEL_NETWORK.contains(&fs_type);
        return FsIdentity {
            // The kernel's CephFS client mounts type `ceph`.
            name: if fs_type == "ceph" { "cephfs".into() } else { fs_type.to_string() },
            fuse: false,
            network: Some(network),
            via: (network && !source.is_empty() && source != "none").then(|| source.to_string()),
        };
    }
    // mfsmount names its mount `mfs#MASTER:PORT` (type fuse, or fuse.mfs in later versions).
    if source.starts_with("mfs#") {
        return FsIdentity {
            name: "moosefs".into(),
            fuse: true,
            network: Some(true),
            via: Some(source.into()),
        };
    }
    match sub {
        Some(s) => {
            let known = FUSE_NETWORK.iter().find(|(k, _)| *k == s);
            let name = known.map_or(s, |(_, n)| *n).to_string();
            let via = match name.as_str() {
                // The source is SERVER:VOLUME (or SERVER:/VOLUME).
                "glusterfs" => source
                    .split_once(':')
                    .map(|(server, vol)| format!("volume {} from {server}", vol.trim_start_matches('/')))
                    .or_else(|| Some(source.to_string())),
                _ if known.is_some() && !source.is_empty() && source != s => Some(source.to_string()),
                _ => None,
            };
            FsIdentity { name, fuse: true, network: known.map(|_| true), via }
        }
        None => FsIdentity { name: fs_type.to_string(), fuse: true, network: None, via: None },
    }
}

impl FsIdentity {
    /// In words: `moosefs (fuse) via mfs#10.0.0.1:9421, a network file system`, `ext4`.
    pub fn describe(&self) -> String {
        let mut s = self.name.clone();
        if self.fuse && self.name != "fuse" {
            s += " (fuse)";
        }
        if let Some(v) = &self.via {
            if v.starts_with("volume ") {
                s += &format!(" {v}");
            } else {
                s += &format!(" via {v}");
            }
        }
        match self.network {
            Some(true) => s + ", a network file system",
            None if self.fuse => s + ", a FUSE file system iolab does not know (local or network: unknown)",
            _ => s,
        }
    }
}

/// What the client of a file system may keep of a file's data beside the kernel's pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCache {
    /// What keeps data, in words (`glusterfs client translators io-cache, quick-read`).
    pub what: String,
    /// It only keeps files of at most this many bytes (GlusterFS's quick-read alone); None:
    /// files of any size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_bytes: Option<u64>,
}

impl ClientCache {
    /// In words, with what a cold read can do about it.
    pub fn describe(&self) -> String {
        let only = self
            .max_file_bytes
            .map(|m| format!(" (files up to {})", crate::units::fmt_size(m)))
            .unwrap_or_default();
        format!("{}{only}; a cold read's eviction does not reach it", self.what)
    }
}

/// What the client of a file system does with the names a lookup found, where it keeps them for
/// less than a metadata phase or not at all, so that a warm phase's lookups reach the servers
/// (measured on the test rig, docs/pfs.md); None where the kernel's directory entries keep them
/// until they are dropped, or iolab does not know.
pub fn names_not_kept(id: &FsIdentity) -> Option<&'static str> {
    match id.name.as_str() {
        // 200 names looked up, then stated: 2 requests to the master for each (mfsmount 3.0.117).
        "moosefs" => Some(
            "mfsmount keeps no directory entries by default (mfsentrycacheto=0): every lookup reaches the master",
        ),
        // The kernel keeps a glusterfs client's entries and attributes for 1 s by default.
        "glusterfs" => Some(
            "the glusterfs client lets the kernel keep names for 1 s by default (entry-timeout): later lookups reach the bricks",
        ),
        _ => None,
    }
}

/// What a metadata phase's commit (syncfs) cannot do on this file system, in words; None where
/// it commits the file system. On FUSE (but virtiofs, a kernel file system here) the kernel
/// asks the daemon nothing for a syncfs (it sends FUSE_SYNCFS to virtiofs only, so the call
/// returns in microseconds): it writes back the kernel's own dirty pages, and the namespace's
/// changes, each already a request to the daemon, are committed when and as the daemon commits.
pub fn syncfs_reach(id: &FsIdentity) -> Option<String> {
    id.fuse.then(|| {
        format!(
            "on {}, syncfs reaches no daemon, FUSE having no commit of a whole file system: it writes back the kernel's dirty pages, and the daemon commits the namespace's changes on its own terms",
            id.name
        )
    })
}

/// GlusterFS client translators that keep file data across opens, and whether their
/// `max-file-size` option bounds what they keep.
const GLUSTER_DATA_CACHES: &[&str] = &["io-cache", "quick-read"];

/// What may serve a read of a file on this file system after the kernel's pages of it are gone
/// (None: nothing iolab knows of: a local file system, or a client measured to keep no data of
/// its own once they are). `mount_point` is read for what the client says of itself
/// (GlusterFS's `.meta` directory); `ceph` is what a ceph-fuse client said of itself
/// (env::cephfs::client), asked once by the caller, who keeps the rest of its answer.
pub fn client_cache(
    id: &FsIdentity,
    mount_point: &Path,
    mount_options: &str,
    ceph: Option<&super::cephfs::Client>,
) -> Option<ClientCache> {
    let opts = |o: &str| mount_options.split(',').any(|x| x == o);
    let what = |s: &str| Some(ClientCache { what: s.to_string(), max_file_bytes: None });
    match id.name.as_str() {
        // mfsmount 3.0.117 read every byte again from the chunkservers after the kernel's
        // pages were evicted: after a full read, a partial one, on the same descriptor, and
        // with another descriptor still open (docs/pfs.md). Its read-ahead buffers belong to
        // an open file.
        "moosefs" => None,
        "glusterfs" => gluster_caches(mount_point),
        // ceph-fuse's object cacher (client_oc) keeps data in the daemon: on unless the
        // client's configuration says not (`client_oc false`: every read the kernel's pages do
        // not serve goes to the OSDs, as counted on the test rig, docs/pfs.md); not learned, it
        // may be on, its default.
        "cephfs" if id.fuse => match ceph.and_then(|c| c.client_oc) {
            Some(false) => None,
            Some(true) => what("ceph-fuse's object cacher (client_oc)"),
            None => what("ceph-fuse's object cacher (client_oc, its configuration not learned)"),
        },
        // GPFS keeps file data in its pagepool, outside the kernel's page cache.
        "gpfs" => what("GPFS's pagepool"),
        // BeeGFS's buffered mode keeps file data in the client module's own buffers.
        "beegfs" => what("the BeeGFS client's buffers (tuneFileCacheType buffered or paged)"),
        // FS-Cache on a local disk, asked for with the `fsc` option.
        "nfs" | "nfs4" | "cephfs" | "cifs" | "smb3" if opts("fsc") => what("FS-Cache (mount option fsc)"),
        _ if id.fuse => what(&format!("the {} FUSE daemon, which iolab does not know", id.name)),
        _ => None,
    }
}

/// The data-keeping translators in a GlusterFS client's active graph, from its `.meta`
/// directory (`VOLUME-io-cache`, `VOLUME-quick-read`); quick-read alone keeps only files up
/// to its `max-file-size` (as its `private` file says). Unreadable `.meta`: the graph is unknown, so the cache is too.
fn gluster_caches(mount_point: &Path) -> Option<ClientCache> {
    let graph = mount_point.join(".meta/graphs/active");
    let Ok(entries) = std::fs::read_dir(&graph) else {
        return Some(ClientCache {
            what: format!("the glusterfs client's translators (its graph in {} unreadable)", graph.display()),
            max_file_bytes: None,
        });
    };
    let mut found: Vec<(String, String)> = vec![];
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(x) = GLUSTER_DATA_CACHES.iter().find(|x| name.ends_with(&format!("-{x}"))) {
            found.push((x.to_string(), name));
        }
    }
    found.sort();
    if found.is_empty() {
        return None;
    }
    let max_file_bytes = match found.as_slice() {
        // Its state in `private`: `max_file_size = 65536` (64 KiB by default).
        [(x, dir)] if x == "quick-read" => std::fs::read_to_string(graph.join(dir).join("private"))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("max_file_size")?.trim().strip_prefix('=')?.trim().parse().ok()
                })
            })
            .or(Some(64 << 10)),
        _ => None,
    };
    let names: Vec<&str> = found.iter().map(|(x, _)| x.as_str()).collect();
    Some(ClientCache { what: format!("glusterfs client translators {}", names.join(", ")), max_file_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_are_named_as_their_users_know_them() {
        let m = identify("fuse", "mfs#10.213.77.1:9421");
        assert_eq!(m.describe(), "moosefs (fuse) via mfs#10.213.77.1:9421, a network file system");
        let g = identify("fuse.glusterfs", "h2:pfs");
        assert_eq!(g.describe(), "glusterfs (fuse) volume pfs from h2, a network file system");
        assert_eq!(identify("fuse.glusterfs", "h1:/vol").via.as_deref(), Some("volume vol from h1"));
        assert_eq!(
            identify("fuse.ceph-fuse", "ceph-fuse").describe(),
            "cephfs (fuse), a network file system"
        );
        assert_eq!(identify("ceph", "10.0.0.1:6789:/").name, "cephfs");
        assert_eq!(
            identify("fuse.sshfs", "me@far:/data").describe(),
            "sshfs (fuse) via me@far:/data, a network file system"
        );
        let u = identify("fuse.mystery", "x");
        assert_eq!((u.name.as_str(), u.network), ("mystery", None));
        assert!(u.describe().contains("does not know"), "{}", u.describe());
        assert_eq!(identify("fuse", "whatever").name, "fuse");
        assert_eq!(identify("ext4", "/dev/vda").describe(), "ext4");
        assert_eq!(identify("ext4", "/dev/vda").network, Some(false));
        let n = identify("nfs4", "srv:/export");
        assert_eq!(n.describe(), "nfs4 via srv:/export, a network file system");
        assert_eq!(identify("lustre", "10.0.0.1@tcp:/lfs").network, Some(true));
    }

    #[test]
    fn client_caches_iolab_cannot_reach_are_named() {
        let none = Path::new("/nonexistent");
        assert_eq!(client_cache(&identify("ext4", "/dev/vda"), none, "rw", None), None);
        assert_eq!(client_cache(&identify("fuse", "mfs#10.0.0.1:9421"), none, "rw", None), None);
        assert_eq!(client_cache(&identify("nfs4", "s:/e"), none, "rw,vers=4.2", None), None);
        assert!(
            client_cache(&identify("nfs4", "s:/e"), none, "rw,fsc", None).unwrap().what.contains("FS-Cache")
        );
        assert!(
            client_cache(&identify("gpfs", "gpfs0"), none, "rw", None).unwrap().what.contains("pagepool")
        );
        let ceph = identify("fuse.ceph-fuse", "ceph-fuse");
        let oc = |c: &crate::env::cephfs::Client| client_cache(&ceph, none, "rw", Some(c)).map(|c| c.what);
        let not_learned = "ceph-fuse's object cacher (client_oc, its configuration not learned)";
        assert_eq!(client_cache(&ceph, none, "rw", None).unwrap().what, not_learned);
        let mut c = crate::env::cephfs::Client::default();
        assert_eq!(oc(&c).as_deref(), Some(not_learned));
        c.client_oc = Some(true);
        assert_eq!(oc(&c).as_deref(), Some("ceph-fuse's object cacher (client_oc)"));
        c.client_oc = Some(false);
        assert_eq!(oc(&c), None);
        assert!(
            client_cache(&identify("fuse.mystery", "x"), none, "rw", None).unwrap().what.contains("mystery")
        );
        // A GlusterFS graph as its .meta directory shows it.
        let d = tempfile::tempdir().unwrap();
        let graph = d.path().join(".meta/graphs/active");
        for x in ["pfs-dht", "pfs-md-cache", "pfs-write-behind"] {
            std::fs::create_dir_all(graph.join(x)).unwrap();
        }
        let g = identify("fuse.glusterfs", "h1:pfs");
        assert_eq!(client_cache(&g, d.path(), "rw", None), None);
        std::fs::create_dir_all(graph.join("pfs-quick-read/options")).unwrap();
        let c = client_cache(&g, d.path(), "rw", None).unwrap();
        assert_eq!(
            (c.what.as_str(), c.max_file_bytes),
            ("glusterfs client translators quick-read", Some(65536))
        );
        std::fs::write(
            graph.join("pfs-quick-read/private"),
            "[xlator.performance.quick-read.priv]\nmax_file_size = 1048576\ncache_timeout = 1\n",
        )
        .unwrap();
        assert_eq!(client_cache(&g, d.path(), "rw", None).unwrap().max_file_bytes, Some(1 << 20));
        std::fs::create_dir_all(graph.join("pfs-io-cache")).unwrap();
        let c = client_cache(&g, d.path(), "rw", None).unwrap();
        assert_eq!(
            (c.what.as_str(), c.max_file_bytes),
            ("glusterfs client translators io-cache, quick-read", None)
        );
        assert!(client_cache(&g, none, "rw", None).unwrap().what.contains("unreadable"));
    }
}
