//! The namespace of the metadata phases, pure: where every tree, directory and item lives and
//! what it is called, computed from the spec in O(depth) per name, so a phase over a million
//! items needs no list of them. Also the name filter of `find` and how the entries of a shared
//! tree are shared out among the workers walking it.
//!
//! Under each target's work directory, `md/` holds the trees: `md/w<W>/` for worker W's own
//! tree (`md_dirs = unique`, on target W mod T) or `md/shared/` (one tree, on the first
//! target). In a tree of depth D and fan-out B, directory 0 is the root and directory d > 0 is
//! `t<d>/` inside directory (d - 1) / B, so the children of d are d B + 1 ... d B + B (mdtest
//! numbers its tree the same way). A worker's n items go P = ceil(n / dirs) to a directory in
//! order: item k lies in directory k / P and is called `f<owner>.<k>` (a file) or
//! `d<owner>.<k>` (a directory), with `.r` appended while renamed.

use crate::spec::{ItemKind, MdDirs, Namespace, OpKind, Spec};

/// The directory under each work directory that holds the trees.
pub const BASE: &str = "md";
/// The suffix of a renamed item.
pub const RENAMED: &str = ".r";

/// The shape of every tree: O(1) arithmetic from an item to its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tree {
    pub depth: u32,
    pub fanout: u32,
    /// Directories in one tree (the root included).
    pub dirs: u64,
    /// Items of one worker per directory: ceil(items / dirs).
    pub per_dir: u64,
    pub kind: ItemKind,
}

impl Tree {
    pub fn of(ns: &Namespace) -> Tree {
        let dirs = ns.tree_dirs();
        Tree {
            depth: ns.depth,
            fanout: ns.fanout,
            dirs,
            per_dir: ns.items.div_ceil(dirs).max(1),
            kind: ns.kind,
        }
    }

    /// The directory holding item `k`.
    #[inline(always)]
    pub fn dir_of(&self, k: u64) -> u64 {
        k / self.per_dir
    }

    /// Directory `d`'s parent (d > 0).
    #[inline(always)]
    pub fn parent(&self, d: u64) -> u64 {
        (d - 1) / self.fanout as u64
    }

    /// Writes directory `d`'s path inside its tree (`t1/t4/`; nothing for the root).
    pub fn write_dir(&self, d: u64, out: &mut NameBuf) {
        // The chain of ancestors, root-most last; at most depth + 1 of them.
        let mut chain = [0u64; crate::spec::metadata::MAX_DEPTH as usize + 1];
        let (mut n, mut x) = (0usize, d);
        while x > 0 {
            chain[n] = x;
            n += 1;
            x = self.parent(x);
        }
        for &c in chain[..n].iter().rev() {
            out.push(b"t");
            out.push_u64(c);
            out.push(b"/");
        }
    }

    /// Writes item `k`'s name (not its directory).
    #[inline(always)]
    pub fn write_item(&self, owner: u32, k: u64, renamed: bool, out: &mut NameBuf) {
        out.push(if self.kind == ItemKind::Dirs { b"d" } else { b"f" });
        out.push_u64(owner as u64);
        out.push(b".");
        out.push_u64(k);
        if renamed {
            out.push(RENAMED.as_bytes());
        }
    }
}

/// A tree's root, as a path under a work directory, and the target it lies on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub target: usize,
    /// `md/w3` or `md/shared`.
    pub path: String,
}

/// The root holding `owner`'s items: its own tree, or the shared one.
pub fn root_of(dirs: MdDirs, targets: usize, owner: u32) -> Root {
    match dirs {
        MdDirs::Unique => Root { target: owner as usize % targets.max(1), path: format!("{BASE}/w{owner}") },
        MdDirs::Shared => Root { target: 0, path: format!("{BASE}/shared") },
    }
}

/// One worker's part of a metadata phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MdWork {
    pub op: OpKind,
    /// The worker whose items it visits (itself, or with a shift another).
    pub owner: u32,
    /// Items it visits (0 for find, which visits what it finds).
    pub items: u64,
    /// The items carry the renamed suffix as the phase begins.
    pub renamed: bool,
    /// find in a shared tree: worker w of W stats the entries whose name hashes to w.
    pub share: Option<(u32, u32)>,
}

/// The namespace of a run: its shape, roots and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsPlan {
    pub ns: Namespace,
    pub tree: Tree,
    /// Every root, once (by owner for unique trees).
    pub roots: Vec<Root>,
    /// Workers whose items exist (every worker of the run).
    pub owners: u32,
    /// The first metadata phase needs the items: they are made, untimed, before it.
    pub make_first: bool,
}

impl NsPlan {
    /// Items in all (every owner's).
    pub fn items(&self) -> u64 {
        self.ns.items * self.owners as u64
    }
    /// Directories of all trees (roots included, `md/` not).
    pub fn dirs(&self) -> u64 {
        self.tree.dirs * self.roots.len() as u64
    }

    /// What the namespace puts on target `t` at most: (bytes, inodes). Each file takes its
    /// bytes rounded up to 4 KiB blocks, each directory a block and each entry 64 bytes of it
    /// (ext4 and xfs need less); `md/` counts where a root is.
    pub fn on_target(&self, t: usize) -> (u64, u64) {
        let roots = self.roots.iter().filter(|r| r.target == t).count() as u64;
        if roots == 0 {
            return (0, 0);
        }
        // Items of the owners whose trees are here (every owner's in the shared tree).
        let owners = if self.ns.dirs == MdDirs::Shared { self.owners as u64 } else { roots };
        let items = self.ns.items.saturating_mul(owners);
        let dirs = self.tree.dirs.saturating_mul(roots) + 1;
        let file =
            if self.ns.kind == ItemKind::Files { self.ns.file_bytes.div_ceil(4096) * 4096 } else { 4096 };
        let bytes = items.saturating_mul(file + 64).saturating_add(dirs.saturating_mul(4096));
        (bytes, items.saturating_add(dirs))
    }
}

/// The namespace of `spec`'s metadata phases, and each phase's per-worker part (None for data
/// phases), or None without metadata phases.
pub fn plan(spec: &Spec) -> Option<(NsPlan, Vec<Option<Vec<MdWork>>>)> {
    let ns = spec.md.as_ref()?;
    let tree = Tree::of(ns);
    let owners = spec.workers;
    let targets = spec.dirs.len().max(1);
    let roots = match ns.dirs {
        MdDirs::Unique => (0..owners).map(|w| root_of(ns.dirs, targets, w)).collect(),
        MdDirs::Shared => vec![root_of(ns.dirs, targets, 0)],
    };
    let make_first = spec
        .phases
        .iter()
        .find(|p| p.op.is_metadata())
        .is_some_and(|p| !matches!(p.op, OpKind::Create | OpKind::Mkdir));
    let mut renamed = false;
    let works = spec
        .phases
        .iter()
        .map(|p| {
            if !p.op.is_metadata() {
                return None;
            }
            let shifted = matches!(p.op, OpKind::Stat | OpKind::Open | OpKind::ReadFiles);
            let work = (0..owners)
                .map(|w| MdWork {
                    op: p.op,
                    owner: if shifted { (w + ns.shift % owners) % owners } else { w },
                    items: if p.op == OpKind::Find { 0 } else { ns.items },
                    renamed,
                    share: (p.op == OpKind::Find && ns.dirs == MdDirs::Shared).then_some((w, owners)),
                })
                .collect();
            match p.op {
                OpKind::Rename => renamed = !renamed,
                OpKind::Create | OpKind::Mkdir | OpKind::Unlink | OpKind::Rmdir => renamed = false,
                _ => {}
            }
            Some(work)
        })
        .collect();
    Some((NsPlan { ns: ns.clone(), tree, roots, owners, make_first }, works))
}

/// A name built in place: no allocation per op. Long enough for any path inside a tree of
/// the deepest allowed depth (each level `t<u64>/`, at most 22 bytes).
pub struct NameBuf {
    buf: [u8; 2048],
    len: usize,
}

impl Default for NameBuf {
    fn default() -> Self {
        NameBuf { buf: [0; 2048], len: 0 }
    }
}

impl NameBuf {
    pub fn clear(&mut self) {
        self.len = 0;
        self.buf[0] = 0;
    }
    pub fn truncate(&mut self, len: usize) {
        self.len = len.min(self.len);
        self.buf[self.len] = 0;
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Appends `s` (the name stays NUL-terminated).
    #[inline(always)]
    pub fn push(&mut self, s: &[u8]) {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
        self.buf[self.len] = 0;
    }
    /// Appends `v` in decimal.
    #[inline(always)]
    pub fn push_u64(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// The name, NUL-terminated, for a system call.
    #[inline(always)]
    pub fn c_str(&self) -> &std::ffi::CStr {
        // Names are made of digits, letters, `.` and `/` (or a directory entry's name, which
        // holds no NUL): the first NUL is the one after them.
        std::ffi::CStr::from_bytes_until_nul(&self.buf[..=self.len]).expect("a name is NUL-terminated")
    }
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }
}

/// The salt of item `k` of `owner`: what the bytes of its file are stamped with (over a fill
/// seeded by `seed ^ owner`, the same in the timed create and in an untimed lay-out).
pub fn item_salt(seed: u64, owner: u32, k: u64) -> u64 {
    crate::plan::fill::file_salt(seed, owner) ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Whether `name` matches `pattern`: `*` matches any run of bytes (none too), `?` any one
/// byte, anything else itself (the shell's rule without brackets).
pub fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    // Where the last `*` was and the name position it was tried at, to retry one further.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The worker (of `workers`) that stats the entry `name` of a shared tree: FNV-1a of the name,
/// so every worker walking the tree agrees without talking.
#[inline(always)]
pub fn share_of(name: &[u8], workers: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % workers.max(1) as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(items: u64, depth: u32, fanout: u32) -> Namespace {
        Namespace {
            items,
            dirs: MdDirs::Unique,
            depth,
            fanout,
            file_bytes: 0,
            shift: 0,
            find: "*".into(),
            kind: ItemKind::Files,
            calls: Default::default(),
        }
    }

    fn dir_path(t: &Tree, d: u64) -> String {
        let mut b = NameBuf::default();
        t.write_dir(d, &mut b);
        b.to_string_lossy()
    }

    /// A tree of depth 2 and fan-out 3: 13 directories, each the child of the one its number
    /// says, every item in exactly one of them, P per directory.
    #[test]
    fn trees_number_and_fill_their_directories() {
        let t = Tree::of(&ns(100, 2, 3));
        assert_eq!((t.dirs, t.per_dir), (13, 8));
        assert_eq!(dir_path(&t, 0), "");
        assert_eq!(dir_path(&t, 1), "t1/");
        assert_eq!(dir_path(&t, 3), "t3/");
        assert_eq!(dir_path(&t, 4), "t1/t4/");
        assert_eq!(dir_path(&t, 12), "t3/t12/");
        let mut per = vec![0u64; t.dirs as usize];
        for k in 0..100 {
            per[t.dir_of(k) as usize] += 1;
        }
        assert_eq!(per.iter().sum::<u64>(), 100);
        assert!(per[..12].iter().all(|&n| n == 8), "{per:?}");
        assert_eq!(per[12], 4);
        // Every directory's path is its parent's plus itself, and paths are distinct.
        let paths: Vec<String> = (0..t.dirs).map(|d| dir_path(&t, d)).collect();
        for d in 1..t.dirs {
            assert_eq!(paths[d as usize], format!("{}t{d}/", paths[t.parent(d) as usize]));
        }
        let mut sorted = paths.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), paths.len());
        // docs/metadata.md's example: 1000 items, depth 2, fan-out 3: item 500 in t1/t6/.
        let doc = Tree::of(&ns(1000, 2, 3));
        assert_eq!((doc.per_dir, doc.dir_of(500)), (77, 6));
        assert_eq!(dir_path(&doc, 6), "t1/t6/");
        // Depth 0: the root alone holds every item.
        let flat = Tree::of(&ns(7, 0, 1));
        assert_eq!((flat.dirs, flat.per_dir, flat.dir_of(6)), (1, 7, 0));
    }

    #[test]
    fn item_names() {
        let t = Tree::of(&ns(10, 0, 1));
        let mut b = NameBuf::default();
        t.write_item(3, 1234567, false, &mut b);
        assert_eq!(b.as_bytes(), b"f3.1234567");
        b.clear();
        t.write_item(0, 0, true, &mut b);
        assert_eq!(b.c_str().to_bytes(), b"f0.0.r");
        let d = Tree { kind: ItemKind::Dirs, ..t };
        b.clear();
        d.write_item(12, u64::MAX, false, &mut b);
        assert_eq!(b.to_string_lossy(), format!("d12.{}", u64::MAX));
    }

    #[test]
    fn globs_match_as_the_shell_does() {
        for (p, n, want) in [
            ("*", "f1.2", true),
            ("*01*", "f0.101", true),
            ("*01*", "f0.110", false),
            ("f?.*", "f3.17", true),
            ("f?.*", "f13.17", false),
            ("*.r", "f1.2.r", true),
            ("*.r", "f1.2", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("", "", true),
            ("**", "", true),
            ("?", "", false),
        ] {
            assert_eq!(glob(p.as_bytes(), n.as_bytes()), want, "{p} vs {n}");
        }
    }

    fn spec(pairs: &[(&str, &str)]) -> Spec {
        let p = crate::experiment::testing::params(pairs, ',');
        crate::experiment::resolve(&p, &crate::experiment::testing::env()).unwrap()
    }

    /// Stat, open and read-files look at worker w + shift's items; the others at their own;
    /// renames flip the names the later phases use; a first phase that needs items has them
    /// made; a run of metadata phases alone has no data files.
    #[test]
    fn phases_visit_the_right_owners_under_the_right_names() {
        let s = spec(&[
            ("ops", "stat,rename,open,unlink,create,rename,find"),
            ("workers", "3"),
            ("md_files", "10"),
            ("md_shift", "4"),
        ]);
        let p = crate::plan::plan(&s);
        assert!(p.files.is_empty());
        let ns = p.namespace.as_ref().unwrap();
        assert!(ns.make_first);
        assert_eq!((ns.items(), ns.dirs(), ns.roots.len()), (30, 3, 3));
        let work = |i: usize| -> Vec<(u32, bool)> {
            p.phases[i].workers.iter().map(|w| w.md.map(|m| (m.owner, m.renamed)).unwrap()).collect()
        };
        assert_eq!(work(0), [(1, false), (2, false), (0, false)], "stat: shifted by 4 mod 3");
        assert_eq!(work(1), [(0, false), (1, false), (2, false)], "rename: its own");
        assert_eq!(work(2), [(1, true), (2, true), (0, true)], "open: renamed, shifted");
        assert_eq!(work(3), [(0, true), (1, true), (2, true)], "unlink: the renamed names");
        assert_eq!(work(4), [(0, false), (1, false), (2, false)], "create: new names");
        assert_eq!(work(6), [(0, true), (1, true), (2, true)]);
        assert!(
            p.phases[6].workers.iter().all(|w| w.md.unwrap().items == 0 && w.md.unwrap().share.is_none())
        );
        // A shared tree: one root; find shares it out.
        let s = spec(&[("ops", "create,find"), ("workers", "2"), ("md_dirs", "shared"), ("md_size", "5000")]);
        let p = crate::plan::plan(&s);
        let ns = p.namespace.as_ref().unwrap();
        assert!(!ns.make_first);
        assert_eq!(ns.roots, [Root { target: 0, path: "md/shared".into() }]);
        let shares: Vec<_> = p.phases[1].workers.iter().map(|w| w.md.unwrap().share).collect();
        assert_eq!(shares, [Some((0, 2)), Some((1, 2))]);
        // 2000 files of 8 KiB of blocks and 64 B of entry each, 2 directories of 4 KiB.
        assert_eq!(ns.on_target(0), (2000 * (8192 + 64) + 2 * 4096, 2002));
        assert_eq!(p.disk_bytes(), 2000 * (8192 + 64) + 2 * 4096);
        // Data phases beside metadata ones keep their files.
        let s = spec(&[("ops", "write,create"), ("size", "1MiB")]);
        assert_eq!(crate::plan::plan(&s).files.len(), 1);
    }

    #[test]
    fn shares_cover_every_worker_and_agree() {
        let mut seen = [0u32; 4];
        for k in 0..1000u64 {
            let name = format!("f0.{k}");
            let s = share_of(name.as_bytes(), 4);
            assert_eq!(s, share_of(name.as_bytes(), 4));
            seen[s as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 150), "{seen:?}");
    }
}
