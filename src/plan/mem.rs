//! Strided memory: which bytes of a worker's buffer an op moves when data is not contiguous
//! in memory (`mem_len` of every `mem_stride` bytes, as in Benson et al. 2003).
//!
//! On disk an op always covers `bs` contiguous bytes. In memory, byte `p` of the op (0 <= p <
//! bs) lives at `p / len * stride + p % len` of the worker's buffer, so the buffer holds
//! `bs / len * stride` bytes and the op gathers (writes) or scatters (reads) `bs / len` pieces.

use serde::{Deserialize, Serialize};

use crate::plan::fill::{STAMP_EVERY, stamp_word};

/// LEN bytes taken from every STRIDE bytes of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Strided {
    pub len: usize,
    pub stride: usize,
}

impl Strided {
    /// Bytes of memory behind `disk_bytes` bytes on disk (a multiple of `len`).
    pub fn mem_bytes(&self, disk_bytes: usize) -> usize {
        disk_bytes / self.len * self.stride
    }

    /// Where byte `p` of an op lives in memory.
    #[inline(always)]
    pub fn src(&self, p: usize) -> usize {
        p / self.len * self.stride + p % self.len
    }

    /// Packs the pieces of `mem` into `out` (all of it), in order.
    #[inline]
    pub fn gather(&self, mem: &[u8], out: &mut [u8]) {
        let (len, stride) = (self.len, self.stride);
        if len == 8 {
            for (i, o) in out.chunks_exact_mut(8).enumerate() {
                o.copy_from_slice(&mem[i * stride..i * stride + 8]);
            }
        } else {
            for (i, o) in out.chunks_exact_mut(len).enumerate() {
                o.copy_from_slice(&mem[i * stride..i * stride + len]);
            }
        }
    }

    /// Unpacks `data` (all of it) into the pieces of `mem`, in order.
    #[inline]
    pub fn scatter(&self, data: &[u8], mem: &mut [u8]) {
        let (len, stride) = (self.len, self.stride);
        if len == 8 {
            for (i, d) in data.chunks_exact(8).enumerate() {
                mem[i * stride..i * stride + 8].copy_from_slice(d);
            }
        } else {
            for (i, d) in data.chunks_exact(len).enumerate() {
                mem[i * stride..i * stride + len].copy_from_slice(d);
            }
        }
    }

    /// Copies op bytes `[p0, p0 + out.len())` out of memory into `out` (part of a gather).
    #[inline]
    pub fn gather_range(&self, mem: &[u8], p0: usize, out: &mut [u8]) {
        let (mut p, mut o) = (p0, 0);
        while o < out.len() {
            let in_piece = p % self.len;
            let take = (self.len - in_piece).min(out.len() - o);
            let src = self.src(p);
            out[o..o + take].copy_from_slice(&mem[src..src + take]);
            p += take;
            o += take;
        }
    }

    /// Copies `data` into memory as op bytes `[p0, p0 + data.len())` (part of a scatter).
    #[inline]
    pub fn scatter_range(&self, data: &[u8], p0: usize, mem: &mut [u8]) {
        let (mut p, mut o) = (p0, 0);
        while o < data.len() {
            let in_piece = p % self.len;
            let take = (self.len - in_piece).min(data.len() - o);
            let dst = self.src(p);
            mem[dst..dst + take].copy_from_slice(&data[o..o + take]);
            p += take;
            o += take;
        }
    }

    /// Stamps an op of `disk_len` bytes about to be written at `offset`: the memory bytes that
    /// land on the on-disk stamp positions (8 bytes at every 4 KiB of the block) get the stamp,
    /// so the file carries exactly the stamps a contiguous write would have put there.
    #[inline]
    pub fn stamp(&self, mem: &mut [u8], salt: u64, offset: u64, disk_len: usize) {
        let mut i = 0usize;
        while i < disk_len {
            let word = stamp_word(salt, offset + i as u64).to_le_bytes();
            let n = (disk_len - i).min(8);
            if self.len >= 8 && i % self.len + n <= self.len {
                let at = self.src(i);
                mem[at..at + n].copy_from_slice(&word[..n]);
            } else {
                for (j, b) in word[..n].iter().enumerate() {
                    mem[self.src(i + j)] = *b;
                }
            }
            i += STAMP_EVERY as usize;
        }
    }
}

impl Strided {
    /// Checks the stamps of an op of `disk_len` bytes read from `offset` into `mem`; returns
    /// the first file offset whose stamp is wrong.
    pub fn check_stamps(&self, mem: &[u8], salt: u64, offset: u64, disk_len: usize) -> Option<u64> {
        let mut i = 0usize;
        while i < disk_len {
            let word = stamp_word(salt, offset + i as u64).to_le_bytes();
            let n = (disk_len - i).min(8);
            if (0..n).any(|j| mem[self.src(i + j)] != word[j]) {
                return Some(offset + i as u64);
            }
            i += STAMP_EVERY as usize;
        }
        None
    }
}

impl crate::spec::Spec {
    /// The strided memory layout, if memory is strided.
    pub fn mem(&self) -> Option<Strided> {
        match (self.mem_len_bytes, self.mem_stride_bytes) {
            (Some(len), Some(stride)) => Some(Strided { len: len as usize, stride: stride as usize }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_takes_len_of_every_stride_in_order() {
        let s = Strided { len: 2, stride: 5 };
        let mem: Vec<u8> = (0..20).collect();
        let mut out = vec![0u8; 8];
        s.gather(&mem, &mut out);
        assert_eq!(out, [0, 1, 5, 6, 10, 11, 15, 16]);
        let mut back = vec![0xFFu8; 20];
        s.scatter(&out, &mut back);
        for (i, b) in back.iter().enumerate() {
            assert_eq!(*b, if i % 5 < 2 { i as u8 } else { 0xFF }, "byte {i}");
        }
        assert_eq!(s.mem_bytes(8), 20);
    }

    #[test]
    fn ranges_compose_into_the_whole() {
        let s = Strided { len: 3, stride: 7 };
        let mem: Vec<u8> = (0..70).collect();
        let mut whole = vec![0u8; 30];
        s.gather(&mem, &mut whole);
        let mut parts = vec![0u8; 30];
        for (a, b) in [(0, 4), (4, 5), (5, 17), (17, 30)] {
            s.gather_range(&mem, a, &mut parts[a..b]);
        }
        assert_eq!(parts, whole);
        let mut back = vec![0u8; 70];
        for (a, b) in [(0, 2), (2, 11), (11, 30)] {
            s.scatter_range(&whole[a..b], a, &mut back);
        }
        let mut want = vec![0u8; 70];
        s.scatter(&whole, &mut want);
        assert_eq!(back, want);
    }

    #[test]
    fn eight_of_thirty_two_matches_the_general_path() {
        let s = Strided { len: 8, stride: 32 };
        let mem: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut fast = vec![0u8; 1024];
        s.gather(&mem, &mut fast);
        let slow: Vec<u8> = (0..1024).map(|p| mem[s.src(p)]).collect();
        assert_eq!(fast, slow);
    }

    #[test]
    fn stamps_land_on_the_disk_stamp_positions() {
        for s in [
            Strided { len: 8, stride: 32 },
            Strided { len: 3, stride: 4 },
            Strided { len: 4096, stride: 8192 },
        ] {
            let bs = 3 * 4096 * s.len;
            let mut mem = vec![0x11u8; s.mem_bytes(bs)];
            s.stamp(&mut mem, 99, 1 << 20, bs);
            let mut disk = vec![0u8; bs];
            s.gather(&mem, &mut disk);
            let mut want = disk.clone();
            crate::plan::fill::stamp(&mut want, 99, 1 << 20);
            assert_eq!(disk, want, "{s:?}");
            assert_eq!(s.check_stamps(&mem, 99, 1 << 20, bs), None, "{s:?}");
            assert_eq!(s.check_stamps(&mem, 99, 2 << 20, bs), Some(2 << 20), "{s:?}");
        }
    }
}
