//! Thin, safe wrappers over the Linux calls iolab needs that std does not offer.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// CLOCK_MONOTONIC in nanoseconds (vDSO, no system call). Comparable across the processes of
/// one machine.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The text of a kernel file (`/proc`, `/sys`), read with a buffer large enough for most in
/// one read(2): such files report a size of 0, so `fs::read_to_string` starts with 32 bytes and
/// doubles, and the kernel formats the file again for each of those reads.
pub fn read_kernel_file(path: impl AsRef<Path>) -> io::Result<String> {
    use std::io::Read;
    let mut text = String::with_capacity(16 << 10);
    File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// Wall-clock time as Unix seconds (for timestamps in the store).
pub fn unix_time_s() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// access(W_OK|X_OK): may this process create files in `dir`?
pub fn is_writable(dir: &Path) -> bool {
    let Ok(c) = cpath(dir) else { return false };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// access(W_OK): may this process write the file at `path`?
pub fn can_write(path: impl AsRef<Path>) -> bool {
    let Ok(c) = cpath(path.as_ref()) else { return false };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// access(W_OK|X_OK) with the reason it fails (EACCES, EROFS, ...).
pub fn writable(dir: &Path) -> io::Result<()> {
    let c = cpath(dir)?;
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// getxattr(2): the value of extended attribute `name` of `path` (following links).
pub fn getxattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
    let c = cpath(path)?;
    let n = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `c` and `n` are NUL-terminated; `buf` is writable for its length.
        let rc = unsafe { libc::getxattr(c.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if rc >= 0 {
            buf.truncate(rc as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) || buf.len() >= 1 << 20 {
            return Err(e);
        }
        buf.resize(buf.len() * 4, 0);
    }
}

/// posix_fadvise(POSIX_FADV_DONTNEED) over the whole file: drop its clean cached pages.
pub fn fadvise_dontneed(f: &File) -> io::Result<()> {
    // SAFETY: plain system call on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// fallocate(mode 0): allocate `len` bytes of blocks from offset 0, extending the file size.
pub fn fallocate(f: &File, len: u64) -> io::Result<()> {
    // SAFETY: plain system call on an open descriptor.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

/// Counts the pages of `f` that are resident in the page cache (mincore over a read-only
/// mapping, in windows of 1 GiB so huge files need little memory). Returns (resident, total).
pub fn resident_pages(f: &File) -> io::Result<(u64, u64)> {
    let len = f.metadata()?.len();
    let page = page_size() as u64;
    let total = len.div_ceil(page);
    let mut resident = 0u64;
    const WINDOW: u64 = 1 << 30;
    let mut vec = Vec::new();
    let mut off = 0u64;
    while off < len {
        let wlen = WINDOW.min(len - off) as usize;
        // SAFETY: we map a read-only, shared view of an open file within its size; the pointer is
        // only passed to mincore and munmap, never dereferenced.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                wlen,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                off as libc::off_t,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let pages = wlen.div_ceil(page as usize);
        vec.resize(pages, 0u8);
        // SAFETY: `addr` is a live mapping of `wlen` bytes; `vec` has one byte per page of it.
        let rc = unsafe { libc::mincore(addr, wlen, vec.as_mut_ptr()) };
        let err = io::Error::last_os_error();
        // SAFETY: unmapping exactly the mapping created above.
        unsafe { libc::munmap(addr, wlen) };
        if rc != 0 {
            return Err(err);
        }
        resident += vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
        off += wlen as u64;
    }
    Ok((resident, total))
}

/// Random bytes from the kernel (for ids).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: `b` is valid for 8 bytes of writes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, 0) };
    if n != 8 {
        // Fall back on the clock and pid: ids only need to be unique, not secret.
        return now_ns() ^ ((std::process::id() as u64) << 32);
    }
    u64::from_le_bytes(b)
}

/// A heap buffer aligned for O_DIRECT, allocated once per worker and freed on drop.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    layout: std::alloc::Layout,
}

// SAFETY: AlignedBuf uniquely owns its allocation, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to `align` (a power of two). Every page is
    /// written now (not left to the allocator's lazily zeroed pages), so no page fault lands
    /// in a timed loop. An allocation the system refuses is an error (OutOfMemory), never an
    /// abort.
    pub fn new(len: usize, align: usize) -> io::Result<AlignedBuf> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), align).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("{len} bytes aligned to {align} is no valid allocation"),
            )
        })?;
        // SAFETY: the layout has non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr = std::ptr::NonNull::new(raw).ok_or_else(|| {
            io::Error::new(io::ErrorKind::OutOfMemory, format!("the system refused {len} bytes of memory"))
        })?;
        // SAFETY: `ptr` is valid for writes of `layout.size()` bytes, just allocated.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, layout.size()) };
        Ok(AlignedBuf { ptr, len, layout })
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised (zeroed at allocation) bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in Deref, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Private anonymous memory (mmap), unmapped on drop. Its pages take memory only once written,
/// so a caller can fill it step by step (and stop between steps).
pub struct AnonMap {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

impl AnonMap {
    /// Maps `len` bytes (at least one page); an error if the kernel refuses.
    pub fn new(len: usize) -> io::Result<AnonMap> {
        let len = len.max(1);
        // SAFETY: a fresh private anonymous mapping; no file, no fixed address.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            std::ptr::NonNull::new(addr.cast()).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        Ok(AnonMap { ptr, len })
    }

    /// Writes one byte in every page of bytes `[from, to)` (clamped to the mapping).
    pub fn touch(&mut self, from: usize, to: usize) {
        let page = page_size();
        let to = to.min(self.len);
        let mut at = from / page * page;
        while at < to {
            // SAFETY: `at < len`, inside the live, writable mapping; volatile so the store of a
            // zero into a zero page is not optimised away.
            unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(at), 1) };
            at += page;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`; no reference into it remains.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Free bytes (for unprivileged users) and free inodes of the file system holding `dir`.
pub fn fs_free(dir: &Path) -> io::Result<(u64, u64)> {
    fs_space(dir).map(|(free, inodes, _)| (free, inodes))
}

/// statvfs of the file system holding `dir`: free bytes (for unprivileged users), free inodes,
/// and total inodes (0 on file systems that make inodes as needed, such as btrfs).
pub fn fs_space(dir: &Path) -> io::Result<(u64, u64, u64)> {
    let c = cpath(dir)?;
    // SAFETY: statvfs is plain data, filled by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid path and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64 * st.f_frsize as u64, st.f_favail as u64, st.f_files as u64))
}

/// The type (statfs `f_type` magic number) of the file system holding `dir`.
pub fn fs_magic(dir: &Path) -> io::Result<u64> {
    let c = cpath(dir)?;
    // SAFETY: statfs is plain data, filled by the call.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid path and `st` a writable statfs.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_type as u64)
}

/// Writes back the dirty data and metadata of the file system holding `dir` (syncfs(2)).
pub fn syncfs(dir: &Path) -> io::Result<()> {
    let d = File::open(dir)?;
    // SAFETY: `d` is an open descriptor for the whole call.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes "3" to /proc/sys/vm/drop_caches after a global sync (root only).
pub fn drop_caches() -> io::Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    drop_clean_caches()
}

/// Drops the kernel's clean pages and unused directory entries and inodes (3 written to
/// /proc/sys/vm/drop_caches; root only), for a caller that has committed what it needs to.
pub fn drop_clean_caches() -> io::Result<()> {
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffer_is_aligned_and_zeroed() {
        let b = AlignedBuf::new(1 << 20, 4096).unwrap();
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert_eq!(b.len(), 1 << 20);
        assert!(b.iter().all(|&x| x == 0));
    }

    /// An allocation no machine can give is an error, not an abort.
    #[test]
    fn an_impossible_buffer_is_an_error() {
        // 4 EiB: more than any address space holds, whatever the overcommit policy.
        let e = AlignedBuf::new(1 << 62, 4096).err().expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("4611686018427387904 bytes"), "{e}");
        assert!(AlignedBuf::new(usize::MAX, 4096).is_err(), "no valid layout");
        assert!(AnonMap::new(1 << 62).is_err());
    }

    #[test]
    fn an_anonymous_map_is_touched_page_by_page() {
        let mut m = AnonMap::new(8 * page_size()).unwrap();
        assert_eq!(m.len(), 8 * page_size());
        m.touch(page_size(), 3 * page_size());
        // SAFETY: reading inside the live mapping.
        let at = |i: usize| unsafe { std::ptr::read_volatile(m.ptr.as_ptr().add(i)) };
        assert_eq!((at(0), at(page_size()), at(2 * page_size()), at(3 * page_size())), (0, 1, 1, 0));
    }

    #[test]
    fn syncfs_writes_back_a_directory_s_file_system() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), b"dirty").unwrap();
        syncfs(d.path()).unwrap();
        assert_eq!(syncfs(&d.path().join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }

    #[test]
    fn residency_of_a_fresh_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
        let f = File::open(&p).unwrap();
        let (res, total) = resident_pages(&f).unwrap();
        assert_eq!(total, (1 << 20) / page_size() as u64);
        assert_eq!(res, total, "just written, so fully cached");
        f.sync_all().unwrap();
        fadvise_dontneed(&f).unwrap();
        let (res, _) = resident_pages(&f).unwrap();
        assert!(res < total / 20, "evicted: {res} of {total} pages resident");
    }
}
