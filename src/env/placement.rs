//! Where a distributed file system says a file's bytes lie, for the file systems FIEMAP cannot
//! answer (FUSE): MooseFS's chunks and the chunkservers holding each copy (`mfsfileinfo`, with
//! the goal from `mfsgetgoal`), GlusterFS's bricks (its `trusted.glusterfs.pathinfo`
//! attribute), CephFS's RADOS objects and their pool (the file's layout, env::cephfs). Other
//! file systems have no facts here.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::netfs::FsIdentity;

/// MooseFS cuts every file into chunks of this size, each placed on its own chunkservers.
pub const MOOSEFS_CHUNK_BYTES: u64 = 64 << 20;

/// A piece of a file the file system places as one, and the servers holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    pub offset_bytes: u64,
    pub length_bytes: u64,
    /// Each copy's server (`10.0.0.2:9422`, `h3:/bricks/b1`), as the file system names it.
    pub servers: Vec<String>,
}

/// Where one file's bytes lie, as its file system says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePlacement {
    pub file: String,
    /// Who said it: `mfsfileinfo`, `trusted.glusterfs.pathinfo`.
    pub source: String,
    pub pieces: Vec<Piece>,
}

impl FilePlacement {
    /// The distinct servers holding any piece, in the order first seen.
    pub fn servers(&self) -> Vec<&str> {
        let mut out: Vec<&str> = vec![];
        for s in self.pieces.iter().flat_map(|p| p.servers.iter()) {
            if !out.contains(&s.as_str()) {
                out.push(s);
            }
        }
        out
    }
}

/// Runs `prog args` and returns its stdout; None when it is missing, fails, or takes over 10 s
/// (a master that does not answer).
fn output_of(prog: &str, args: &[&std::ffi::OsStr]) -> Option<String> {
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Parses `mfsfileinfo FILE`: `chunk N: ...` lines, each followed by `copy K: ADDR:PORT
/// (status:...)` lines; chunk N covers bytes [N x 64 MiB, (N + 1) x 64 MiB) of a file of
/// `size` bytes.
pub fn parse_mfsfileinfo(text: &str, size: u64) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = vec![];
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("chunk ") {
            let Some(n) = rest.split(':').next().and_then(|n| n.trim().parse::<u64>().ok()) else { continue };
            let offset = n * MOOSEFS_CHUNK_BYTES;
            let length = size.saturating_sub(offset).min(MOOSEFS_CHUNK_BYTES);
            pieces.push(Piece { offset_bytes: offset, length_bytes: length, servers: vec![] });
        } else if let (Some(rest), Some(p)) = (line.strip_prefix("copy "), pieces.last_mut()) {
            if let Some(addr) = rest.split_once(':').map(|(_, a)| a.split_whitespace().next().unwrap_or("")) {
                p.servers.push(addr.to_string());
            }
        }
    }
    pieces
}

/// The bricks in a GlusterFS pathinfo value: every `<POSIX(ROOT):HOST:PATH>` as `HOST:ROOT`.
pub fn parse_pathinfo(text: &str) -> Vec<String> {
    let mut out = vec![];
    for part in text.split("<POSIX(").skip(1) {
        let Some((root, rest)) = part.split_once("):") else { continue };
        let host = rest.split(':').next().unwrap_or("");
        let brick = format!("{host}:{root}");
        if !out.contains(&brick) {
            out.push(brick);
        }
    }
    out
}

/// Where `path` (a file of `size` bytes, named `name` in results) lies, as its file system
/// says; None for file systems without such facts, or when it cannot be asked.
pub fn of_file(fs: &FsIdentity, path: &Path, name: &str, size: u64) -> Option<FilePlacement> {
    match fs.name.as_str() {
        "moosefs" => {
            let text = output_of("mfsfileinfo", &[path.as_os_str()])?;
            Some(FilePlacement {
                file: name.into(),
                source: "mfsfileinfo".into(),
                pieces: parse_mfsfileinfo(&text, size),
            })
        }
        "glusterfs" => {
            let value = super::sys::getxattr(path, "trusted.glusterfs.pathinfo").ok()?;
            let servers = parse_pathinfo(&String::from_utf8_lossy(&value));
            Some(FilePlacement {
                file: name.into(),
                source: "trusted.glusterfs.pathinfo".into(),
                pieces: vec![Piece { offset_bytes: 0, length_bytes: size, servers }],
            })
        }
        "cephfs" => {
            use std::os::unix::fs::MetadataExt;
            let l = super::cephfs::layout_of(path)?;
            let ino = std::fs::metadata(path).ok()?.ino();
            let pieces = l
                .objects(ino, size)
                .into_iter()
                .map(|(offset_bytes, length_bytes, obj)| Piece {
                    offset_bytes,
                    length_bytes,
                    servers: vec![format!("{}/{obj}", l.pool)],
                })
                .collect();
            Some(FilePlacement { file: name.into(), source: "ceph.file.layout".into(), pieces })
        }
        _ => None,
    }
}

/// What the file system says of placement in directory `dir`, in words: MooseFS's goal and
/// chunk size, GlusterFS's bricks. None without such facts.
pub fn of_dir(fs: &FsIdentity, dir: &Path) -> Option<String> {
    match fs.name.as_str() {
        "moosefs" => {
            // `DIR: GOAL`
            let text = output_of("mfsgetgoal", &[dir.as_os_str()])?;
            let goal = text.trim().rsplit(':').next()?.trim().to_string();
            Some(format!(
                "goal {goal} (copies of each chunk), chunks of {} MiB, each on chunkservers the master picks (mfsfileinfo FILE names them)",
                MOOSEFS_CHUNK_BYTES >> 20
            ))
        }
        "glusterfs" => {
            let value = super::sys::getxattr(dir, "trusted.glusterfs.pathinfo").ok()?;
            let bricks = parse_pathinfo(&String::from_utf8_lossy(&value));
            Some(format!(
                "{} brick{}: {}",
                bricks.len(),
                if bricks.len() == 1 { "" } else { "s" },
                bricks.join(", ")
            ))
        }
        // A directory answers ceph.dir.layout only where a layout was set on it (or above it);
        // its files then take their pool's default.
        "cephfs" => Some(match super::cephfs::layout_of(dir) {
            Some(l) => format!("{}; each file's objects named in its ceph.file.layout", l.describe("ceph.dir.layout")),
            None => "no layout set on the directory (ceph.dir.layout): each file takes its pool's default (its ceph.file.layout)".into(),
        }),
        _ => None,
    }
}

/// One line per file: its pieces and their servers (`2 chunks of 64 MiB: 0 on 10.0.0.2:9422,
/// 1 on 10.0.0.3:9422`).
pub fn render(files: &[FilePlacement]) -> String {
    let mut out = String::new();
    for f in files {
        let pieces: Vec<String> = f
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let on = if p.servers.is_empty() { "no copy".to_string() } else { p.servers.join(" + ") };
                // A RADOS object's name says which piece of the file it holds.
                if f.pieces.len() == 1 || f.source == "ceph.file.layout" {
                    on
                } else {
                    format!("{i} on {on}")
                }
            })
            .collect();
        let what = match f.source.as_str() {
            "mfsfileinfo" => format!(
                "{} chunk{} of {} MiB: ",
                f.pieces.len(),
                if f.pieces.len() == 1 { "" } else { "s" },
                MOOSEFS_CHUNK_BYTES >> 20
            ),
            "ceph.file.layout" => format!(
                "{} RADOS object{} (pool/name): ",
                f.pieces.len(),
                if f.pieces.len() == 1 { "" } else { "s" },
            ),
            _ => "on ".to_string(),
        };
        out += &format!("{}: {what}{} ({})\n", f.file, pieces.join(", "), f.source);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mfsfileinfo_chunks_and_their_copies() {
        let text = "/mnt/moosefs/f1:\n\tchunk 0: 0000000000000001_00000001 / (id:1 ver:1)\n\t\tcopy 1: 10.213.77.2:9422 (status:VALID)\n\tchunk 1: 0000000000000002_00000001 / (id:2 ver:1)\n\t\tcopy 1: 10.213.77.3:9422 (status:VALID)\n\t\tcopy 2: 10.213.77.1:9422 (status:VALID)\n";
        let p = parse_mfsfileinfo(text, 100 << 20);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].offset_bytes, p[0].length_bytes), (0, 64 << 20));
        assert_eq!((p[1].offset_bytes, p[1].length_bytes), (64 << 20, 36 << 20));
        assert_eq!(p[0].servers, ["10.213.77.2:9422"]);
        assert_eq!(p[1].servers, ["10.213.77.3:9422", "10.213.77.1:9422"]);
        let f = FilePlacement { file: "f1".into(), source: "mfsfileinfo".into(), pieces: p };
        assert_eq!(f.servers(), ["10.213.77.2:9422", "10.213.77.3:9422", "10.213.77.1:9422"]);
        assert_eq!(
            render(&[f]),
            "f1: 2 chunks of 64 MiB: 0 on 10.213.77.2:9422, 1 on 10.213.77.3:9422 + 10.213.77.1:9422 (mfsfileinfo)\n"
        );
        let c = FilePlacement {
            file: "w".into(),
            source: "ceph.file.layout".into(),
            pieces: vec![
                Piece { offset_bytes: 0, length_bytes: 4, servers: vec!["d/1.00000000".into()] },
                Piece { offset_bytes: 4, length_bytes: 1, servers: vec!["d/1.00000001".into()] },
            ],
        };
        assert_eq!(
            render(&[c]),
            "w: 2 RADOS objects (pool/name): d/1.00000000, d/1.00000001 (ceph.file.layout)\n"
        );
        assert!(parse_mfsfileinfo("/mnt/moosefs/empty:\n\tno chunks - empty file\n", 0).is_empty());
    }

    #[test]
    fn gluster_pathinfo_bricks() {
        let one = "(<DISTRIBUTE:pfs-dht> <POSIX(/mnt/srv/gluster/brick):h3:/mnt/srv/gluster/brick/g1>)";
        assert_eq!(parse_pathinfo(one), ["h3:/mnt/srv/gluster/brick"]);
        let ec = "(<DISTRIBUTE:v-dht> (<EC:v-disperse-0> <POSIX(/b1):h1:/b1/f> <POSIX(/b2):h2:/b2/f> <POSIX(/b3):h3:/b3/f>))";
        assert_eq!(parse_pathinfo(ec), ["h1:/b1", "h2:/b2", "h3:/b3"]);
        assert!(parse_pathinfo("").is_empty());
    }
}
