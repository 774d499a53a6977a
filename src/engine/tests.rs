//! Engine-level checks on real files: every engine reads the right bytes into the right places
//! of its memory (contiguous and strided, across mmap windows, with a full io_uring ring), and
//! writes exactly the bytes its memory holds.

use std::path::PathBuf;

use super::mmap::Mmap;
use super::psync::Psync;
use super::uring::{self, Uring};
use super::vsync::Vsync;
use super::*;
use crate::plan::Permutation;
use crate::plan::mem::Strided;
use crate::target::owned::ids_of;

/// A file of `size` pseudo-random bytes.
fn known_file(dir: &std::path::Path, size: usize) -> (PathBuf, Vec<u8>) {
    let mut data = vec![0u8; size];
    crate::plan::fill::fill(&mut data, 4242);
    let p = dir.join("known.dat");
    std::fs::write(&p, &data).unwrap();
    (p, data)
}

/// `n` ops of `bs` bytes over a file of `n` blocks, in a seeded random order.
fn random_ops(n: u64, bs: u64) -> Vec<Op> {
    let perm = Permutation::new(n, 7);
    (0..n).map(|k| Op { file: 0, offset: perm.apply(k) * bs, len: bs }).collect()
}

/// Checks that `mem` holds `want` where the op's memory layout puts it, and `sentinel`
/// everywhere else.
fn assert_mem_holds(mem: &[u8], want: &[u8], layout: Option<Strided>, sentinel: u8, what: &str) {
    match layout {
        None => assert!(&mem[..want.len()] == want, "{what}: contiguous memory differs from the file"),
        Some(s) => {
            let mut got = vec![0u8; want.len()];
            s.gather(mem, &mut got);
            assert!(got == want, "{what}: gathered pieces differ from the file");
            for (i, b) in mem.iter().enumerate() {
                if i % s.stride >= s.len {
                    assert_eq!(*b, sentinel, "{what}: byte {i} between pieces was written");
                }
            }
        }
    }
}

/// Reads `ops` with a synchronous engine; checks each op's memory against the file.
fn read_check<E: Engine>(setup: &Setup<'_>, ops: &[Op], data: &[u8], what: &str) -> CallCounts {
    let mut e = E::open(setup).unwrap();
    for op in ops {
        e.buf().fill(0xEE);
        assert_eq!(e.io(*op, false).unwrap(), op.len, "{what}");
        let want = &data[op.offset as usize..(op.offset + op.len) as usize];
        assert_mem_holds(e.buf(), want, setup.mem, 0xEE, &format!("{what} at {}", op.offset));
    }
    e.close().unwrap()
}

/// Writes `ops` with a synchronous engine from memory filled with a per-op pattern; checks the
/// file holds exactly the bytes each op's memory gathered.
fn write_check<E: Engine>(setup: &Setup<'_>, ops: &[Op], path: &std::path::Path, what: &str) -> CallCounts {
    let mut e = E::open(setup).unwrap();
    let mut want = vec![0u8; setup.sizes[0] as usize];
    for (k, op) in ops.iter().enumerate() {
        let mem = e.buf();
        for (i, b) in mem.iter_mut().enumerate() {
            *b = (i * 31 + k * 7 + 1) as u8;
        }
        let span = &mut want[op.offset as usize..(op.offset + op.len) as usize];
        match setup.mem {
            None => span.copy_from_slice(&mem[..op.len as usize]),
            Some(s) => s.gather(mem, span),
        }
        assert_eq!(e.io(*op, true).unwrap(), op.len, "{what}");
    }
    e.sync(0, setup.sync_call).unwrap();
    let calls = e.close().unwrap();
    let got = std::fs::read(path).unwrap();
    assert!(got == want, "{what}: the file differs from the memory the ops gathered");
    calls
}

#[test]
fn sync_engines_read_the_right_bytes_into_the_right_places() {
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = known_file(dir.path(), 1 << 20);
    let paths = [path];
    let ids = ids_of(&paths).unwrap();
    let sizes = [data.len() as u64];
    for (mem, bs) in [
        (None, 16384u64),
        (Some(Strided { len: 8, stride: 32 }), 16384),
        (Some(Strided { len: 3000, stride: 4096 }), 15000),
    ] {
        let ops = random_ops((1 << 20) / bs, bs);
        let mut setup = Setup::simple(&paths, &ids, &sizes, false, bs as usize);
        setup.mem = mem;
        let c = read_check::<Psync>(&setup, &ops, &data, &format!("psync {mem:?}"));
        assert_eq!(c.get(Call::Pread), ops.len() as u64);
        let c = read_check::<Vsync>(&setup, &ops, &data, &format!("vsync {mem:?}"));
        let pieces = setup.bs / mem.map_or(setup.bs, |m| m.len);
        assert_eq!(c.get(Call::Preadv), ops.len() as u64 * pieces.div_ceil(vsync::IOV_MAX) as u64);
        for window in [None, Some(4096u64), Some(3 * 4096)] {
            setup.window = window;
            let c = read_check::<Mmap>(&setup, &ops, &data, &format!("mmap {mem:?} window {window:?}"));
            assert_eq!(c.get(Call::Mmap), c.get(Call::Munmap), "every window is unmapped");
            if window.is_none() {
                assert_eq!(c.get(Call::Mmap), 1, "the whole file in one mapping");
            }
            setup.window = None;
        }
    }
}

#[test]
fn sync_engines_write_exactly_what_memory_gathers() {
    let dir = tempfile::tempdir().unwrap();
    let bs = 8192u64;
    let path = dir.path().join("w.dat");
    std::fs::write(&path, b"").unwrap();
    let paths = [path.clone()];
    let ids = ids_of(&paths).unwrap();
    let sizes = [32 * bs];
    let ops = random_ops(32, bs);
    for mem in [None, Some(Strided { len: 8, stride: 32 }), Some(Strided { len: 16, stride: 16 })] {
        let mut setup = Setup::simple(&paths, &ids, &sizes, true, bs as usize);
        setup.mem = mem;
        std::fs::write(&path, vec![0u8; sizes[0] as usize]).unwrap();
        write_check::<Psync>(&setup, &ops, &path, &format!("psync {mem:?}"));
        std::fs::write(&path, vec![0u8; sizes[0] as usize]).unwrap();
        let c = write_check::<Vsync>(&setup, &ops, &path, &format!("vsync {mem:?}"));
        assert_eq!(c.get(Call::Fdatasync), 1);
        for window in [None, Some(3 * 4096u64)] {
            // mmap sizes the file itself.
            std::fs::write(&path, b"").unwrap();
            setup.window = window;
            setup.sync_call = SyncCall::Msync;
            setup.sync = SyncPolicy::End;
            let c = write_check::<Mmap>(&setup, &ops, &path, &format!("mmap {mem:?} window {window:?}"));
            assert_eq!(c.get(Call::Ftruncate), 1);
            assert!(c.get(Call::Msync) >= 1);
            setup.window = None;
            setup.sync_call = SyncCall::Fdatasync;
            setup.sync = SyncPolicy::None;
        }
    }
}

#[test]
fn mmap_refuses_to_read_past_the_end_of_a_short_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = known_file(dir.path(), 8192);
    let paths = [path];
    let ids = ids_of(&paths).unwrap();
    let setup = Setup::simple(&paths, &ids, &[16384], false, 4096);
    let err = Mmap::open(&setup).err().expect("a short file is refused").to_string();
    assert!(err.contains("8192") && err.contains("16384"), "{err}");
}

/// Runs ops through an asynchronous engine, `depth` at a time, always refilling every free
/// slot; checks reads by content and returns the most ops seen in flight.
fn async_reads<E: AsyncEngine>(setup: &Setup<'_>, ops: &[Op], data: &[u8]) -> (usize, CallCounts) {
    let depth = setup.iodepth;
    let mut e = E::open(setup).unwrap();
    let mut free: Vec<usize> = (0..depth).collect();
    let mut held = vec![None; depth];
    let mut done = vec![Done::default(); depth];
    let (mut next, mut inflight, mut max_inflight, mut finished) = (0, 0, 0, 0);
    while finished < ops.len() {
        while next < ops.len()
            && let Some(slot) = free.pop()
        {
            e.slot_buf(slot).fill(0xEE);
            e.queue(slot, ops[next], false).unwrap();
            held[slot] = Some(ops[next]);
            next += 1;
            inflight += 1;
        }
        max_inflight = max_inflight.max(inflight);
        // Wait for the whole ring: every slot's completion is in the completion ring at once.
        let n = e.wait(inflight, &mut done).unwrap();
        assert_eq!(n, inflight, "all {inflight} completions reaped in one go");
        for d in &done[..n] {
            let op = held[d.slot as usize].take().expect("a completion for a slot in flight");
            assert_eq!(d.res, op.len as i64);
            let want = &data[op.offset as usize..(op.offset + op.len) as usize];
            assert_mem_holds(e.slot_buf(d.slot as usize), want, None, 0xEE, "uring");
            free.push(d.slot as usize);
            inflight -= 1;
            finished += 1;
        }
    }
    (max_inflight, e.close().unwrap())
}

#[test]
fn uring_reads_every_slot_right_with_a_full_ring() {
    if let Err(reason) = uring::probe() {
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bs = 4096u64;
    let (path, data) = known_file(dir.path(), 256 * bs as usize);
    let paths = [path];
    let ids = ids_of(&paths).unwrap();
    let sizes = [data.len() as u64];
    let ops = random_ops(256, bs);
    for (depth, direct) in [(1, false), (4, false), (8, true), (3, false)] {
        let mut setup = Setup::simple(&paths, &ids, &sizes, false, bs as usize);
        setup.iodepth = depth;
        setup.direct = direct;
        let (max_inflight, calls) = async_reads::<Uring>(&setup, &ops, &data);
        assert_eq!(max_inflight, depth, "depth {depth}");
        assert_eq!(calls.get(Call::IoUringRegister), 2, "files and buffers registered once");
        assert!(
            calls.get(Call::IoUringEnter) <= (256 / depth as u64 + 1) * 2,
            "batched: {} enters for 256 ops at depth {depth}",
            calls.get(Call::IoUringEnter)
        );
    }
}

#[test]
fn debug_builds_check_every_block_read() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: release builds do not check reads");
        return;
    }
    let env = crate::experiment::ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    for strided in [false, true] {
        let mut p = crate::experiment::Params::default();
        p.set_one("bs", "8KiB").unwrap();
        if strided {
            p.set_one("mem_len", "8").unwrap();
            p.set_one("mem_stride", "32").unwrap();
        }
        let spec = crate::experiment::resolve(&p, &env).unwrap();
        let mut data = crate::worker::data::DataPath::with(&spec, &[3], Default::default());
        let op = Op { file: 0, offset: 16384, len: 8192 };
        let mut mem = vec![0x11u8; spec.mem().map_or(8192, |m| m.mem_bytes(8192))];
        data.before_write(&mut mem, op);
        assert_eq!(data.after_read(&mem, op), Ok(()), "strided {strided}");
        let elsewhere = Op { offset: 24576, ..op };
        let err = data.after_read(&mem, elsewhere).unwrap_err();
        assert!(err.contains("offset 24576"), "strided {strided}: {err}");
        let at = spec.mem().map_or(4096, |m| m.src(4096));
        mem[at] ^= 1;
        let err = data.after_read(&mem, op).unwrap_err();
        assert!(err.contains("stamp of offset 20480"), "strided {strided}: {err}");
    }
}

/// Every engine opens a worker's file only if it is still the one iolab created: a symbolic
/// link or a hard link to a file elsewhere in its place, or a second name for it, is refused
/// by name, and the file elsewhere is not touched (not even truncated by mmap's sizing).
#[test]
fn engines_open_only_the_file_iolab_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w0000.dat");
    let victim = dir.path().join("victim");
    std::fs::write(&path, vec![0u8; 8192]).unwrap();
    std::fs::write(&victim, b"the user's data").unwrap();
    let paths = [path.clone()];
    let ids = ids_of(&paths).unwrap();
    let sizes = [1u64 << 20];
    let setup = Setup::simple(&paths, &ids, &sizes, true, 4096);
    let uring_ok = uring::probe().is_ok();
    let open_all = |what: &str| {
        let mut errs = vec![
            Psync::open(&setup).err().map(|e| e.to_string()),
            Vsync::open(&setup).err().map(|e| e.to_string()),
            Mmap::open(&setup).err().map(|e| e.to_string()),
        ];
        if uring_ok {
            errs.push(Uring::open(&setup).err().map(|e| e.to_string()));
        }
        for (i, e) in errs.into_iter().enumerate() {
            let e = e.unwrap_or_else(|| panic!("engine {i} opened {what}"));
            assert!(e.starts_with(&format!("open on {}: refused: ", path.display())), "{what}: {e}");
        }
    };
    let ours = dir.path().join("ours");
    std::fs::rename(&path, &ours).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    open_all("a symbolic link");
    std::fs::remove_file(&path).unwrap();
    std::fs::hard_link(&victim, &path).unwrap();
    open_all("a hard link to another file");
    std::fs::remove_file(&path).unwrap();
    std::fs::rename(&ours, &path).unwrap();
    std::fs::hard_link(&path, dir.path().join("second-name")).unwrap();
    open_all("its own file with a second name");
    assert_eq!(std::fs::read(&victim).unwrap(), b"the user's data");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 8192, "mmap sized nothing");
}

/// Every engine takes the buffers its `buffers` names, made (every page written) before its
/// open is timed, and allocates none in its open: once it is open nothing is left over, and
/// the memory it moves ops through is the memory made before (so the open time holds no
/// allocation). Contiguous and strided memory, and a ring of 4 slots.
#[test]
fn engines_take_the_buffers_made_before_their_open() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = known_file(dir.path(), 64 << 10);
    let paths = [path];
    let ids = ids_of(&paths).unwrap();
    let sizes = [64u64 << 10];
    fn made(pool: &Buffers) -> Vec<usize> {
        pool.0.borrow().iter().map(|b| b.as_ptr() as usize).collect()
    }
    fn check<E: Engine>(setup: &Setup<'_>, what: &str) {
        let lens = E::buffers(setup);
        assert!(!lens.is_empty(), "{what}");
        let pool = Buffers::allocate(setup, &lens).unwrap();
        let ptrs = made(&pool);
        let mut e = E::open(&Setup { buffers: Some(&pool), ..setup.clone() }).unwrap();
        assert_eq!(pool.left(), 0, "{what}: buffers left over");
        assert!(ptrs.contains(&(e.buf().as_ptr() as usize)), "{what}: moves ops through other memory");
        e.close().unwrap();
    }
    let plain = Setup::simple(&paths, &ids, &sizes, false, 4096);
    let strided = Setup { mem: Some(Strided { len: 512, stride: 1024 }), ..plain.clone() };
    check::<Psync>(&plain, "psync");
    check::<Psync>(&strided, "psync, strided memory");
    check::<Vsync>(&plain, "vsync");
    check::<Vsync>(&strided, "vsync, strided memory");
    check::<Mmap>(&plain, "mmap");
    check::<super::null::Null>(&plain, "null");
    if uring::probe().is_ok() {
        let deep = Setup { iodepth: 4, ..plain.clone() };
        let lens = Uring::buffers(&deep);
        assert_eq!(lens, [4 * 4096]);
        let pool = Buffers::allocate(&deep, &lens).unwrap();
        let ptrs = made(&pool);
        let mut e = Uring::open(&Setup { buffers: Some(&pool), ..deep.clone() }).unwrap();
        assert_eq!(pool.left(), 0, "io_uring: buffers left over");
        assert_eq!(e.slot_buf(0).as_ptr() as usize, ptrs[0], "io_uring: slots in other memory");
        drop(e);
    }
}
