//! What a CephFS mount's client says of itself, read rather than assumed: the ceph-fuse process
//! serving the mount (in this mount namespace), its admin socket (the listening unix socket it
//! holds), and through that socket its file system's name, its monitors and its object cacher
//! (`client_oc`, `client_oc_size`); its command line where no socket answers. And where CephFS
//! places a file: its layout (`ceph.file.layout`: pool, object size, stripe unit and count),
//! which names the RADOS objects holding its bytes.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What iolab learned of a ceph-fuse client, and from where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Client {
    pub pid: Option<u32>,
    /// Its admin socket, when one answered.
    pub asok: Option<PathBuf>,
    pub fs_name: Option<String>,
    pub mon_host: Option<String>,
    /// The object cacher on (true) or off; None: not learned.
    pub client_oc: Option<bool>,
    pub client_oc_size: Option<u64>,
    /// Where the facts came from, or why there are none (in words).
    pub source: String,
}

impl Client {
    /// How the mount was made, in words: `ceph-fuse, fs cephfs, mon 10.0.0.1`.
    pub fn via(&self) -> String {
        let mut s = "ceph-fuse".to_string();
        if let Some(f) = &self.fs_name {
            s += &format!(", fs {f}");
        }
        if let Some(m) = &self.mon_host {
            s += &format!(", mon {m}");
        }
        s
    }

    /// The object cacher's state and where it was read, in words.
    pub fn describe(&self) -> String {
        match self.client_oc {
            Some(on) => format!(
                "ceph-fuse's object cacher {} (client_oc {on}{}), from {}",
                if on { "on" } else { "off" },
                self.client_oc_size
                    .map(|b| format!(", client_oc_size {}", crate::units::fmt_size(b)))
                    .unwrap_or_default(),
                self.source
            ),
            None => format!(
                "ceph-fuse's configuration not learned ({}): its object cacher may be on",
                self.source
            ),
        }
    }
}

/// Sends `cmd` (a JSON command) to the admin socket at `path` and returns its JSON answer: the
/// command, a NUL, then a 4-byte big-endian length and that many bytes back.
pub fn asok_command(path: &Path, cmd: &serde_json::Value) -> std::io::Result<serde_json::Value> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut msg = cmd.to_string().into_bytes();
    msg.push(0);
    s.write_all(&msg)?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = u32::from_be_bytes(len) as usize;
    if n > 16 << 20 {
        return Err(std::io::Error::other(format!("an answer of {n} bytes")));
    }
    let mut body = vec![0u8; n];
    s.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}

/// A configuration value through the admin socket, as text.
fn config_get(asok: &Path, var: &str) -> Option<String> {
    let v = asok_command(asok, &serde_json::json!({"prefix": "config get", "var": var})).ok()?;
    v.get(var)?.as_str().map(str::to_string)
}

/// The paths of the listening unix sockets process `pid` holds that end in `.asok`.
fn asoks_of(pid: u32) -> Vec<PathBuf> {
    let mut inodes = vec![];
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            let Ok(l) = std::fs::read_link(fd.path()) else { continue };
            let l = l.to_string_lossy().into_owned();
            if let Some(ino) = l.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.push(ino.to_string());
            }
        }
    }
    // Num RefCount Protocol Flags Type St Inode Path
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/unix")).unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && inodes.iter().any(|i| i == f[6]) && f[7].ends_with(".asok"))
                .then(|| PathBuf::from(f[7]))
        })
        .collect()
}

/// The ceph-fuse processes in this process's mount namespace, with their command lines.
fn ceph_fuse_processes() -> Vec<(u32, Vec<String>)> {
    let own = std::fs::read_link("/proc/self/ns/mnt").ok();
    let mut out = vec![];
    let Ok(procs) = std::fs::read_dir("/proc") else { return out };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim() != "ceph-fuse")
            .unwrap_or(true)
        {
            continue;
        }
        if own.is_some() && std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok() != own {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args =
            cmd.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned());
        out.push((pid, args.collect()));
    }
    out
}

/// `--client_oc=false`, `--client-oc false` and the like on a command line; None when absent.
pub fn oc_from_args(args: &[String]) -> Option<bool> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        let a = a.replace('-', "_");
        let value = match a.strip_prefix("__client_oc") {
            Some(rest) if rest.starts_with('=') => Some(rest[1..].to_string()),
            Some("") => args.get(i + 1).cloned(),
            _ => None,
        };
        if let Some(v) = value {
            found = Some(matches!(v.as_str(), "true" | "1" | "yes" | "on"));
        }
    }
    found
}

/// What the ceph-fuse client serving `mount_point` says of itself.
pub fn client(mount_point: &Path) -> Client {
    let procs = ceph_fuse_processes();
    if procs.is_empty() {
        return Client {
            source: "no ceph-fuse process seen in this mount namespace".into(),
            ..Default::default()
        };
    }
    let mine = |args: &[String]| {
        args.iter().skip(1).any(|a| Path::new(a).canonicalize().ok().as_deref() == Some(mount_point))
    };
    // Each candidate's socket, asked where it is mounted.
    for (pid, args) in &procs {
        for asok in asoks_of(*pid) {
            let Ok(st) = asok_command(&asok, &serde_json::json!({"prefix": "status"})) else { continue };
            if st["metadata"]["mount_point"].as_str().map(Path::new) != Some(mount_point) && !mine(args) {
                continue;
            }
            let oc = config_get(&asok, "client_oc").map(|v| v == "true");
            return Client {
                pid: Some(*pid),
                fs_name: st["fs_name"].as_str().filter(|s| !s.is_empty()).map(str::to_string),
                mon_host: config_get(&asok, "mon_host"),
                client_oc: oc,
                client_oc_size: config_get(&asok, "client_oc_size").and_then(|v| v.parse().ok()),
                source: format!("its admin socket {}", asok.display()),
                asok: Some(asok),
            };
        }
    }
    // No socket answered: its command line, where it names the cacher.
    match procs.iter().find(|(_, a)| mine(a)) {
        Some((pid, args)) => {
            let client_oc = oc_from_args(args);
            let source = match client_oc {
                Some(_) => format!("its command line (process {pid}; no admin socket answered)"),
                None => format!(
                    "process {pid} has no admin socket that answered, and its command line does not set client_oc"
                ),
            };
            Client { pid: Some(*pid), client_oc, source, ..Default::default() }
        }
        None => Client {
            source: "no ceph-fuse process in this mount namespace names this mount point".into(),
            ..Default::default()
        },
    }
}

/// A file's (or a directory's) CephFS layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub pool: String,
    pub object_bytes: u64,
    pub stripe_unit_bytes: u64,
    pub stripe_count: u64,
}

/// Parses a `ceph.file.layout` value: `stripe_unit=4194304 stripe_count=1 object_size=4194304
/// pool=cephfs_data`.
pub fn parse_layout(text: &str) -> Option<Layout> {
    let field = |k: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k).and_then(|r| r.strip_prefix('=')).map(str::to_string))
    };
    Some(Layout {
        pool: field("pool")?,
        object_bytes: field("object_size")?.parse().ok()?,
        stripe_unit_bytes: field("stripe_unit")?.parse().ok()?,
        stripe_count: field("stripe_count")?.parse().ok()?,
    })
}

/// The layout of `path`: `ceph.file.layout` for a file, `ceph.dir.layout` for a directory
/// (which CephFS answers only where one was set on it or above it).
pub fn layout_of(path: &Path) -> Option<Layout> {
    let attr = if path.is_dir() { "ceph.dir.layout" } else { "ceph.file.layout" };
    let v = super::sys::getxattr(path, attr).ok()?;
    parse_layout(&String::from_utf8_lossy(&v))
}

impl Layout {
    /// In words, with the attribute it was read from: `pool cephfs_data, objects of 4 MiB,
    /// stripe unit 4 MiB x 1 (ceph.file.layout)`.
    pub fn describe(&self, attr: &str) -> String {
        format!(
            "pool {}, objects of {}, stripe unit {} x {} ({attr})",
            self.pool,
            crate::units::fmt_size(self.object_bytes),
            crate::units::fmt_size(self.stripe_unit_bytes),
            self.stripe_count
        )
    }

    /// The RADOS objects holding bytes [0, size) of the file whose inode is `ino`, each as
    /// (offset, length, object name `INO.N`, hex): with a stripe count of 1, object N holds
    /// [N x object size, (N + 1) x object size); wider stripes spread each range over several
    /// objects, given as one piece.
    pub fn objects(&self, ino: u64, size: u64) -> Vec<(u64, u64, String)> {
        if self.stripe_count != 1 || self.object_bytes == 0 {
            return vec![(0, size, format!("{ino:x}.* ({} objects a stripe)", self.stripe_count))];
        }
        (0..size.div_ceil(self.object_bytes))
            .map(|n| {
                let off = n * self.object_bytes;
                (off, (size - off).min(self.object_bytes), format!("{ino:x}.{n:08x}"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_and_their_objects() {
        let l =
            parse_layout("stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=cephfs_data").unwrap();
        assert_eq!(
            l,
            Layout {
                pool: "cephfs_data".into(),
                object_bytes: 4 << 20,
                stripe_unit_bytes: 4 << 20,
                stripe_count: 1
            }
        );
        assert_eq!(
            l.describe("ceph.file.layout"),
            "pool cephfs_data, objects of 4 MiB, stripe unit 4 MiB x 1 (ceph.file.layout)"
        );
        let o = l.objects(0x10000000000, 9 << 20);
        assert_eq!(
            o,
            [
                (0, 4 << 20, "10000000000.00000000".to_string()),
                (4 << 20, 4 << 20, "10000000000.00000001".to_string()),
                (8 << 20, 1 << 20, "10000000000.00000002".to_string())
            ]
        );
        assert!(l.objects(1, 0).is_empty());
        assert!(parse_layout("pool=x").is_none());
    }

    #[test]
    fn the_object_cacher_on_a_command_line() {
        let a = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(oc_from_args(&a("ceph-fuse -f --client_oc=false /mnt/c")), Some(false));
        assert_eq!(oc_from_args(&a("ceph-fuse --client-oc true /mnt/c")), Some(true));
        assert_eq!(oc_from_args(&a("ceph-fuse -n client.admin /mnt/c")), None);
        assert_eq!(oc_from_args(&a("ceph-fuse --client_oc_size=1 /mnt/c")), None);
        let none = Client { source: "x".into(), ..Default::default() };
        assert!(none.describe().contains("not learned (x): its object cacher may be on"));
        let off = Client {
            client_oc: Some(false),
            source: "its admin socket /r/a.asok".into(),
            ..Default::default()
        };
        assert_eq!(
            off.describe(),
            "ceph-fuse's object cacher off (client_oc false), from its admin socket /r/a.asok"
        );
    }
}
