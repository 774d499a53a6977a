//! Write data: non-zero, non-repeating, and the same bytes whichever engine writes them.
//!
//! A worker's buffer is filled once, before timing, from a seeded generator. Then, per op, the
//! first 8 bytes of every 4 KiB of the block are overwritten with a stamp that encodes the file
//! and the file offset of that spot. So no 4 KiB page repeats anywhere in a run (devices that
//! detect zeros or duplicates gain nothing), the cost per op is one store per 4 KiB, and a test
//! can read a file back and check that every block landed at the right offset.

use crate::plan::splitmix64;

/// Distance between stamps within a block.
pub const STAMP_EVERY: u64 = 4096;

/// Fills `buf` with pseudo-random bytes from `seed` (never eight zero bytes in a row).
pub fn fill(buf: &mut [u8], seed: u64) {
    let mut s = seed ^ 0x1D0_1AB0;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        let v = splitmix64(&mut s) | 1;
        c.copy_from_slice(&v.to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let v = (splitmix64(&mut s) | 0x0101_0101_0101_0101).to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&v[..n]);
}

/// The salt that makes one file's stamps differ from another's in the same run.
pub fn file_salt(seed: u64, file_id: u32) -> u64 {
    let mut s = seed ^ ((file_id as u64) << 32) ^ 0x5EED;
    splitmix64(&mut s)
}

/// The stamp written at file offset `offset` (a multiple of [`STAMP_EVERY`] within a block).
#[inline(always)]
pub fn stamp_word(salt: u64, offset: u64) -> u64 {
    offset ^ salt
}

/// Stamps a block about to be written at `offset`: 8 bytes (fewer if the block is shorter) at
/// every 4 KiB of the block.
#[inline(always)]
pub fn stamp(block: &mut [u8], salt: u64, offset: u64) {
    let len = block.len();
    let mut i = 0usize;
    while i < len {
        let word = stamp_word(salt, offset + i as u64).to_le_bytes();
        let n = (len - i).min(8);
        block[i..i + n].copy_from_slice(&word[..n]);
        i += STAMP_EVERY as usize;
    }
}

/// Checks the stamps of `data`, read from file offset `offset`; returns the first file offset
/// whose stamp is wrong. Only valid where blocks start at multiples of [`STAMP_EVERY`] or at the
/// block boundaries used when writing (`bs`).
pub fn check_stamps(data: &[u8], salt: u64, offset: u64, bs: u64) -> Option<u64> {
    let mut block_start = 0u64;
    while block_start < data.len() as u64 {
        let block_len = bs.min(data.len() as u64 - block_start);
        let mut i = 0u64;
        while i < block_len {
            let at = (block_start + i) as usize;
            let n = ((block_len - i) as usize).min(8);
            let want = stamp_word(salt, offset + block_start + i).to_le_bytes();
            if data[at..at + n] != want[..n] {
                return Some(offset + block_start + i);
            }
            i += STAMP_EVERY;
        }
        block_start += bs;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_has_no_zero_words_and_differs_by_seed() {
        let mut a = vec![0u8; 1 << 16];
        let mut b = vec![0u8; 1 << 16];
        fill(&mut a, 1);
        fill(&mut b, 2);
        assert_ne!(a, b);
        assert!(a.chunks(8).all(|c| c.iter().any(|&x| x != 0)));
        let mut odd = vec![0u8; 13];
        fill(&mut odd, 3);
        assert!(odd.iter().all(|&x| x != 0));
    }

    #[test]
    fn stamps_encode_offsets() {
        let salt = file_salt(7, 3);
        let mut block = vec![0xAAu8; 16384];
        stamp(&mut block, salt, 1 << 20);
        assert_eq!(check_stamps(&block, salt, 1 << 20, 16384), None);
        assert_eq!(check_stamps(&block, salt, 2 << 20, 16384), Some(2 << 20));
        for (k, page) in block.chunks(4096).enumerate() {
            let w = u64::from_le_bytes(page[..8].try_into().unwrap());
            assert_eq!(w ^ salt, (1 << 20) + k as u64 * 4096);
        }
    }

    #[test]
    fn short_blocks_get_short_stamps() {
        let salt = file_salt(1, 0);
        let mut block = vec![0u8; 4];
        stamp(&mut block, salt, 8);
        assert_eq!(block, stamp_word(salt, 8).to_le_bytes()[..4]);
        assert_eq!(check_stamps(&block, salt, 8, 4), None);
    }
}
