//! The namespace of the metadata phases on disk: its record in the marker, its trees made
//! before the first phase, its items made untimed when the first phase needs them, and its
//! removal by the namespace's rule.
//!
//! Names are computed, not stored: a million items would need a million marker lines and a
//! commit each. The marker holds one line, `namespace = items=N owners=W dirs=D depth=Z
//! fanout=B kind=K`, written and committed before anything of the namespace exists, from which
//! every name follows (`crate::plan::namespace`). Removal (after every repetition and by `iolab
//! clean`) walks what is under `md/` without following any link, and removes an entry only if
//! it is a name the record generates at that place: an item as a regular file with one link
//! (or, for directory items, an empty directory), a tree directory once it is empty. Anything
//! else stays, and so do the directories holding it. A stop signal ends a removal (after a
//! short grace), leaving the rest for `iolab clean`.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use crate::env::dirs::{Dir, entries};
use crate::error::{Error, Result};
use crate::plan::namespace::{BASE, NameBuf, NsPlan, RENAMED, Tree, item_salt, root_of};
use crate::spec::{ItemKind, MdDirs};

/// What the marker says of a namespace: enough to tell every name it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NsRecord {
    pub items: u64,
    pub owners: u32,
    pub dirs: MdDirs,
    pub depth: u32,
    pub fanout: u32,
    pub kind: ItemKind,
}

impl NsRecord {
    pub fn of(p: &NsPlan) -> NsRecord {
        NsRecord {
            items: p.ns.items,
            owners: p.owners,
            dirs: p.ns.dirs,
            depth: p.ns.depth,
            fanout: p.ns.fanout,
            kind: p.ns.kind,
        }
    }

    /// The marker line.
    pub fn line(&self) -> String {
        format!(
            "namespace = items={} owners={} dirs={} depth={} fanout={} kind={}\n",
            self.items,
            self.owners,
            self.dirs.name(),
            self.depth,
            self.fanout,
            self.kind.name()
        )
    }

    /// The value of a marker line (after `namespace = `); any doubt makes it invalid.
    pub fn parse(v: &str) -> std::result::Result<NsRecord, String> {
        let mut r = NsRecord {
            items: 0,
            owners: 0,
            dirs: MdDirs::Unique,
            depth: 0,
            fanout: 0,
            kind: ItemKind::Files,
        };
        let bad = || format!("bad namespace line `{v}`");
        let mut seen = 0;
        for kv in v.split_whitespace() {
            let (k, x) = kv.split_once('=').ok_or_else(bad)?;
            let num = || x.parse::<u64>().map_err(|_| bad());
            match k {
                "items" => r.items = num()?,
                "owners" => r.owners = u32::try_from(num()?).map_err(|_| bad())?,
                "dirs" => r.dirs = MdDirs::parse(x).ok_or_else(bad)?,
                "depth" => r.depth = u32::try_from(num()?).map_err(|_| bad())?,
                "fanout" => r.fanout = u32::try_from(num()?).map_err(|_| bad())?,
                "kind" => {
                    r.kind = match x {
                        "files" => ItemKind::Files,
                        "dirs" => ItemKind::Dirs,
                        _ => return Err(bad()),
                    }
                }
                _ => return Err(bad()),
            }
            seen += 1;
        }
        let fits =
            r.depth <= crate::spec::metadata::MAX_DEPTH && r.fanout >= 1 && r.items >= 1 && r.owners >= 1;
        if seen != 6 || !fits {
            return Err(bad());
        }
        Ok(r)
    }

    fn tree(&self) -> Tree {
        let ns = crate::spec::Namespace {
            items: self.items,
            dirs: self.dirs,
            depth: self.depth,
            fanout: self.fanout,
            file_bytes: 0,
            shift: 0,
            find: String::new(),
            kind: self.kind,
            calls: Default::default(),
        };
        Tree::of(&ns)
    }
}

fn c(s: &str) -> CString {
    CString::new(s).expect("a namespace name holds no NUL")
}

/// Makes `md/`, every tree's root and every directory of every tree under the work
/// directories (`workdirs` by logical target), each with mkdir, so nothing that exists is
/// taken for iolab's.
pub fn make(workdirs: &[PathBuf], p: &NsPlan) -> Result<()> {
    let mut based: Vec<&Path> = vec![];
    let mut rel = NameBuf::default();
    for root in &p.roots {
        let wd = &workdirs[root.target];
        if !based.contains(&wd.as_path()) {
            let b = wd.join(BASE);
            std::fs::create_dir(&b).map_err(|e| Error::io("mkdir", &b, None, e))?;
            based.push(wd);
        }
        let r = wd.join(&root.path);
        std::fs::create_dir(&r).map_err(|e| Error::io("mkdir", &r, None, e))?;
        let dir = Dir::open(&r).map_err(|e| Error::io("open", &r, None, e))?;
        // Parents before children: directory d's parent is (d - 1) / B < d.
        for d in 1..p.tree.dirs {
            crate::env::signals::check()?;
            rel.clear();
            p.tree.write_dir(d, &mut rel);
            rel.truncate(rel.len() - 1);
            dir.mkdir(rel.c_str()).map_err(|e| Error::io("mkdir", r.join(rel.to_string_lossy()), None, e))?;
        }
    }
    Ok(())
}

/// Makes every owner's items, untimed, for a first phase that needs them: the files a create
/// makes (with the same bytes) or the directories a mkdir makes.
pub fn lay_out(workdirs: &[PathBuf], p: &NsPlan, seed: u64) -> Result<()> {
    let mut buf = vec![0u8; p.ns.file_bytes as usize];
    let (mut rel, mut name) = (NameBuf::default(), NameBuf::default());
    for owner in 0..p.owners {
        let root = root_of(p.ns.dirs, workdirs.len(), owner);
        let rp = workdirs[root.target].join(&root.path);
        let top = Dir::open(&rp).map_err(|e| Error::io("open", &rp, None, e))?;
        crate::plan::fill::fill(&mut buf, seed ^ owner as u64);
        let mut at: Option<(u64, Dir)> = None;
        for k in 0..p.ns.items {
            if k % 4096 == 0 {
                crate::env::signals::check()?;
            }
            let d = p.tree.dir_of(k);
            if at.as_ref().is_none_or(|(i, _)| *i != d) {
                rel.clear();
                p.tree.write_dir(d, &mut rel);
                rel.push(b".");
                let dir = top.open_beneath(rel.c_str()).map_err(|e| Error::io("openat2", &rp, None, e))?;
                rel.truncate(rel.len() - 1);
                at = Some((d, dir));
            }
            let dir = &at.as_ref().expect("opened above").1;
            name.clear();
            p.tree.write_item(owner, k, false, &mut name);
            let path = || rp.join(rel.to_string_lossy()).join(name.to_string_lossy());
            if p.ns.kind == ItemKind::Dirs {
                dir.mkdir(name.c_str()).map_err(|e| Error::io("mkdirat", path(), None, e))?;
                continue;
            }
            let fd =
                dir.create(name.c_str()).map_err(|e| Error::io("openat(O_CREAT|O_EXCL)", path(), None, e))?;
            crate::plan::fill::stamp(&mut buf, item_salt(seed, owner, k), 0);
            let w = crate::env::dirs::write_all(fd, &buf).map_err(|e| Error::io("write", path(), None, e));
            let cl = crate::env::dirs::close(fd).map_err(|e| Error::io("close", path(), None, e));
            w.and(cl)?;
        }
    }
    Ok(())
}

/// What removing a namespace did (or, in a dry run, would do): counts, not names, so a
/// million items take no memory.
#[derive(Debug, Default)]
pub struct NsRemoval {
    /// Items removed (files and directories).
    pub items: u64,
    pub bytes: u64,
    /// Tree directories (roots and `md/` included) removed.
    pub dirs: u64,
    /// Entries left, with the reason (the first few).
    pub left: Vec<(String, String)>,
    /// Entries left in all.
    pub left_count: u64,
    pub errors: Vec<Error>,
    /// A stop signal ends the removal (after its grace), leaving what is left.
    stop: crate::env::signals::Deadline,
    /// It did.
    pub stopped: bool,
}

/// The most left entries a removal names.
pub const LEFT_NAMED: usize = 10;
/// The namespace's directory in a work directory.
pub const BASE_DIR: &str = BASE;

impl NsRemoval {
    /// Whether a stop signal ends the removal here (said once, as an error of it).
    fn stopping(&mut self) -> bool {
        if !self.stopped && self.stop.passed() {
            self.stopped = true;
            self.errors.push(Error::Interrupted(crate::env::signals::pending().unwrap_or(libc::SIGINT)));
        }
        self.stopped
    }

    fn leave(&mut self, path: String, why: &str) {
        self.left_count += 1;
        if self.left.len() < LEFT_NAMED {
            self.left.push((path, why.to_string()));
        }
    }
}

/// What a name in tree directory `d` of a tree of `owner` (None: the shared tree) is, by the
/// record: an item (Some(true)), a subdirectory of the tree (Some(false)), or neither.
fn classify(rec: &NsRecord, tree: &Tree, owner: Option<u32>, d: u64, name: &[u8]) -> Option<bool> {
    let s = std::str::from_utf8(name).ok()?;
    let canonical = |x: &str| x.parse::<u64>().ok().filter(|v| v.to_string() == x);
    if let Some(rest) = s.strip_prefix('t') {
        let c = canonical(rest)?;
        return (c >= 1 && c < tree.dirs && tree.parent(c) == d).then_some(false);
    }
    let prefix = if rec.kind == ItemKind::Dirs { 'd' } else { 'f' };
    let body = s.strip_prefix(prefix)?;
    let body = body.strip_suffix(RENAMED).unwrap_or(body);
    let (o, k) = body.split_once('.')?;
    let (o, k) = (canonical(o)?, canonical(k)?);
    let owner_ok = match owner {
        Some(w) => o == w as u64,
        None => o < rec.owners as u64,
    };
    (owner_ok && k < rec.items && tree.dir_of(k) == d).then_some(true)
}

/// Removes the namespace under work directory `wd` by the record's rule (nothing in a dry
/// run, where it only counts).
pub fn remove(wd: &Path, rec: &NsRecord, dry_run: bool) -> NsRemoval {
    let mut r = NsRemoval::default();
    let base = wd.join(BASE);
    let top = match Dir::open(wd) {
        Ok(d) => d,
        Err(e) => {
            r.errors.push(Error::io("open", wd, None, e));
            return r;
        }
    };
    let md = match top.open_beneath(&c(BASE)) {
        Ok(d) => d,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return r,
        Err(e) => {
            r.errors.push(Error::io("openat2", &base, None, e));
            return r;
        }
    };
    let tree = rec.tree();
    let mut buf = vec![0u8; 32 << 10];
    for name in list(&md, &mut buf, &base, &mut r) {
        if r.stopping() {
            return r;
        }
        let owner = match (rec.dirs, name.strip_prefix('w').and_then(|o| o.parse::<u32>().ok())) {
            (MdDirs::Unique, Some(o)) if o < rec.owners && format!("w{o}") == name => Some(o),
            (MdDirs::Shared, _) if name == "shared" => None,
            _ => {
                r.leave(format!("{BASE}/{name}"), "not created by iolab");
                continue;
            }
        };
        remove_dir(&md, &name, &base, rec, &tree, owner, 0, dry_run, &mut r);
    }
    if r.left_count == 0 && r.errors.is_empty() {
        if !dry_run && let Err(e) = top.rmdir(&c(BASE)) {
            r.errors.push(Error::io("rmdir", &base, None, e));
            return r;
        }
        r.dirs += 1;
    }
    r
}

/// The names in directory `dir` (at `path`), read once before anything is removed.
fn list(dir: &Dir, buf: &mut [u8], path: &Path, r: &mut NsRemoval) -> Vec<String> {
    let mut out = vec![];
    loop {
        match dir.read_entries(buf) {
            Ok(0) => return out,
            Ok(n) => out.extend(entries(buf, n).map(|e| String::from_utf8_lossy(e.name).into_owned())),
            Err(e) => {
                r.errors.push(Error::io("getdents64", path, None, e));
                return out;
            }
        }
    }
}

/// Removes what the record names inside tree directory `d` (the entry `name` of `parent`),
/// then the directory itself if nothing else is left in it.
#[allow(clippy::too_many_arguments)]
fn remove_dir(
    parent: &Dir,
    name: &str,
    parent_path: &Path,
    rec: &NsRecord,
    tree: &Tree,
    owner: Option<u32>,
    d: u64,
    dry_run: bool,
    r: &mut NsRemoval,
) {
    let path = parent_path.join(name);
    let dir = match parent.open_beneath(&c(name)) {
        Ok(x) => x,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR) | Some(libc::EXDEV)) => {
            r.leave(path.display().to_string(), "not the directory iolab made there");
            return;
        }
        Err(e) => {
            r.errors.push(Error::io("openat2", &path, None, e));
            return;
        }
    };
    let left_before = r.left_count;
    let mut buf = vec![0u8; 32 << 10];
    // SAFETY: zeroed is a valid stat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // One name at a time from a listing of this directory's entries: a million items are
    // read in batches, never held.
    loop {
        let n = match dir.read_entries(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                r.errors.push(Error::io("getdents64", &path, None, e));
                return;
            }
        };
        let names: Vec<(Vec<u8>, u8)> = entries(&buf, n).map(|e| (e.name.to_vec(), e.kind)).collect();
        for (entry, _) in names {
            if r.stopping() {
                return;
            }
            let shown = || path.join(String::from_utf8_lossy(&entry).as_ref()).display().to_string();
            let cname = CString::new(entry.clone()).expect("a directory entry holds no NUL");
            if let Err(e) = dir.stat(&cname, &mut st) {
                r.errors.push(Error::io("fstatat", shown(), None, e));
                continue;
            }
            let kind = st.st_mode & libc::S_IFMT;
            match classify(rec, tree, owner, d, &entry) {
                Some(false) if kind == libc::S_IFDIR => {
                    let sub = String::from_utf8_lossy(&entry).into_owned();
                    let child: u64 = sub[1..].parse().expect("classified as t<number>");
                    remove_dir(&dir, &sub, &path, rec, tree, owner, child, dry_run, r);
                }
                Some(true) if rec.kind == ItemKind::Files && kind == libc::S_IFREG && st.st_nlink == 1 => {
                    match if dry_run { Ok(()) } else { dir.unlink(&cname) } {
                        Ok(()) => (r.items, r.bytes) = (r.items + 1, r.bytes + st.st_size as u64),
                        Err(e) => r.errors.push(Error::io("unlinkat", shown(), None, e)),
                    }
                }
                Some(true) if rec.kind == ItemKind::Dirs && kind == libc::S_IFDIR => {
                    match if dry_run { Ok(()) } else { dir.rmdir(&cname) } {
                        Ok(()) => r.items += 1,
                        Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => {
                            r.leave(shown(), "holds something iolab did not create")
                        }
                        Err(e) => r.errors.push(Error::io("rmdir", shown(), None, e)),
                    }
                }
                Some(_) => r.leave(shown(), "not what iolab made there"),
                None => r.leave(shown(), "not created by iolab"),
            }
        }
    }
    if r.left_count == left_before && r.errors.is_empty() {
        if !dry_run && let Err(e) = parent.rmdir(&c(name)) {
            r.errors.push(Error::io("rmdir", &path, None, e));
            return;
        }
        r.dirs += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: ItemKind) -> NsRecord {
        NsRecord { items: 12, owners: 2, dirs: MdDirs::Unique, depth: 1, fanout: 2, kind }
    }

    #[test]
    fn records_round_trip_and_refuse_doubt() {
        for r in [rec(ItemKind::Files), NsRecord { dirs: MdDirs::Shared, ..rec(ItemKind::Dirs) }] {
            let line = r.line();
            let v = line.strip_prefix("namespace = ").unwrap().trim_end();
            assert_eq!(NsRecord::parse(v), Ok(r));
        }
        for bad in [
            "items=1 owners=1 dirs=unique depth=0 fanout=1",
            "items=1 owners=1 dirs=unique depth=0 fanout=0 kind=files",
            "items=1 owners=1 dirs=many depth=0 fanout=1 kind=files",
            "items=1 owners=1 dirs=unique depth=99 fanout=1 kind=files",
            "items=x owners=1 dirs=unique depth=0 fanout=1 kind=files",
        ] {
            assert!(NsRecord::parse(bad).is_err(), "{bad}");
        }
    }

    /// Removal takes only the names the record generates, where it generates them, as what
    /// iolab made: not a name of the wrong directory, owner or spelling, not a second link,
    /// not a link in place of a tree directory (never followed), and keeps the directories
    /// holding anything left. A dry run counts and removes nothing.
    #[test]
    fn removal_takes_only_the_records_names() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let wd = t.path();
        let r = rec(ItemKind::Files);
        // 12 items over 3 directories: 4 each; worker 0's tree in full, worker 1's root only.
        for d in ["md", "md/w0", "md/w0/t1", "md/w0/t2", "md/w1"] {
            std::fs::create_dir(wd.join(d)).unwrap();
        }
        for (dir, ks) in [("md/w0", 0..4), ("md/w0/t1", 4..8), ("md/w0/t2", 8..12)] {
            for k in ks {
                std::fs::write(wd.join(format!("{dir}/f0.{k}")), b"x").unwrap();
            }
        }
        std::fs::rename(wd.join("md/w0/f0.3"), wd.join("md/w0/f0.3.r")).unwrap();
        std::fs::write(outside.path().join("precious"), b"keep").unwrap();
        std::os::unix::fs::symlink(outside.path(), wd.join("md/w1/t1")).unwrap();
        for odd in ["md/w0/f0.01", "md/w0/t1/f0.0", "md/w0/f1.2", "md/w0/f0.12"] {
            std::fs::write(wd.join(odd), b"odd").unwrap();
        }
        std::fs::hard_link(wd.join("md/w0/t2/f0.8"), outside.path().join("second-name")).unwrap();

        let dry = remove(wd, &r, true);
        assert_eq!((dry.items, dry.left_count), (11, 6), "{:?}", dry.left);
        assert!(wd.join("md/w0/f0.0").exists());

        let done = remove(wd, &r, false);
        assert!(done.errors.is_empty(), "{:?}", done.errors);
        assert_eq!((done.items, done.bytes), (11, 11));
        let mut left: Vec<&str> = done.left.iter().map(|(p, _)| p.as_str()).collect();
        left.sort();
        let want = ["md/w0/f0.01", "md/w0/f0.12", "md/w0/f1.2", "md/w0/t1/f0.0", "md/w0/t2/f0.8", "md/w1/t1"];
        assert_eq!(left.len(), want.len(), "{left:?}");
        for (l, w) in left.iter().zip(want) {
            assert!(l.ends_with(w), "{l} vs {w}");
        }
        assert_eq!(std::fs::read(outside.path().join("precious")).unwrap(), b"keep");
        assert_eq!(std::fs::read(outside.path().join("second-name")).unwrap(), b"x");
        assert!(wd.join("md/w0/t1").is_dir() && !wd.join("md/w0/f0.3.r").exists());
        // Once the strangers are gone, the rest goes, `md/` too.
        for odd in want {
            let _ = std::fs::remove_file(wd.join(odd));
        }
        std::fs::remove_file(outside.path().join("second-name")).unwrap();
        std::fs::write(wd.join("md/w0/t2/f0.8"), b"x").unwrap();
        let last = remove(wd, &r, false);
        assert!(last.errors.is_empty() && last.left.is_empty(), "{:?} {:?}", last.errors, last.left);
        assert_eq!(last.items, 1);
        assert!(!wd.join("md").exists());
    }
}
