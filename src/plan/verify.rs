//! Block verification (`verify = true`): every written block carries a header saying what it
//! is, and every read block is checked against what it must be.
//!
//! Header, little-endian, at the start of each block (`bs` bytes written by one op):
//!
//! | bytes  | field    | value |
//! |--------|----------|-------|
//! | 0..8   | stamp    | offset XOR file salt: the data stamp every 4 KiB carries anyway |
//! | 8..16  | checksum | XXH64 of bytes 16..len, seeded with the stamp word (bytes 0..8) |
//! | 16..20 | magic    | `iolv` |
//! | 20..24 | file     | global file id |
//! | 24..32 | offset   | file offset of the block |
//! | 32..40 | run      | the first 64 bits of the run id |
//! | 40..44 | sequence | write generation: 1 for the first write of the run, +1 per later write phase |
//! | 44..48 | length   | block length in bytes |
//!
//! So the checksum covers every byte of the block but its own eight. A read checks, in order,
//! the magic (not an iolab block at all: a hole, zeros, foreign data), the checksum (any byte
//! changed), then, in a block that is intact, its file and offset (a block at the wrong place),
//! run (stale data of another run), sequence (a lost rewrite), length and stamp; the first
//! mismatch fails the run with what was expected and what was found. XXH64 (Y. Collet)
//! costs about one cycle per 4-8 bytes, the price of one more memory pass per op.

use crate::plan::fill;

/// Bytes of the header.
pub const HEADER: usize = 48;
/// The smallest block that can be verified.
pub const MIN_BLOCK: u64 = 512;
const MAGIC: [u8; 4] = *b"iolv";

#[inline(always)]
fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

/// XXH64 of `data` with `seed` (the xxhash-rust crate's one-shot function).
#[inline]
pub fn xxh64(data: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh64::xxh64(data, seed)
}

/// The 64-bit run tag of a run id (its first 16 hex digits; other ids are hashed).
pub fn run_tag(run_id: &str) -> u64 {
    run_id
        .get(..16)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| xxh64(run_id.as_bytes(), 0))
}

/// What the blocks of one phase carry (writes) or must carry (reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct BlockTag {
    /// Headers are written and checked at all.
    pub verify: bool,
    /// [`run_tag`] of the run that wrote the data.
    pub run: u64,
    /// Write generation the data has (reads) or gets (writes).
    pub generation: u32,
    /// Length of the written blocks (a read op may span several).
    pub written_bs: u64,
}

/// Writes the header of a block about to be written at (`file`, `offset`); the stamp word at
/// bytes 0..8 must already be in place.
#[inline(always)]
pub fn seal(block: &mut [u8], tag: &BlockTag, file: u32, offset: u64) {
    let len = block.len();
    if len < HEADER {
        // Too short to carry a header (resolution refuses such blocks; a read of one fails).
        return;
    }
    block[16..20].copy_from_slice(&MAGIC);
    block[20..24].copy_from_slice(&file.to_le_bytes());
    block[24..32].copy_from_slice(&offset.to_le_bytes());
    block[32..40].copy_from_slice(&tag.run.to_le_bytes());
    block[40..44].copy_from_slice(&tag.generation.to_le_bytes());
    block[44..48].copy_from_slice(&(len as u32).to_le_bytes());
    let sum = xxh64(&block[16..], u64_at(block, 0));
    block[8..16].copy_from_slice(&sum.to_le_bytes());
}

/// A mismatch: the file offset where it was found, the field, and both values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub offset: u64,
    pub field: &'static str,
    pub expected: String,
    pub found: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "verify failed at offset {}: {}: expected {}, found {}",
            self.offset, self.field, self.expected, self.found
        )
    }
}

/// Checks one block read from (`file`, `offset`) against the header it must carry. Its data
/// stamp encodes `stamp_at` with `salt`: the offset in the logical file (the same as `offset`
/// except in stripe components, whose bytes carry the striped file's offsets).
#[inline(always)]
pub fn check(
    block: &[u8],
    tag: &BlockTag,
    file: u32,
    offset: u64,
    salt: u64,
    stamp_at: u64,
) -> Result<(), Mismatch> {
    let bad = |field, expected: String, found: String| Err(Mismatch { offset, field, expected, found });
    if block.len() < HEADER {
        return bad("length", format!("at least {HEADER} bytes"), block.len().to_string());
    }
    if block[16..20] != MAGIC {
        return bad(
            "header",
            "magic `iolv`".into(),
            format!("{:02x?} (not an iolab verify block)", &block[16..20]),
        );
    }
    // The checksum first: a block damaged anywhere fails here, so the fields below are only
    // read from blocks that are intact (moved or stale blocks, not corrupted ones).
    let stored = u64_at(block, 8);
    let sum = xxh64(&block[16..], u64_at(block, 0));
    if sum != stored {
        return bad(
            "checksum",
            format!("{stored:016x} (stored in the header)"),
            format!("{sum:016x} (over the block read)"),
        );
    }
    let (f, o) = (u32_at(block, 20), u64_at(block, 24));
    if (f, o) != (file, offset) {
        return bad(
            "place",
            format!("file {file} offset {offset}"),
            format!("a block written for file {f} offset {o}"),
        );
    }
    let run = u64_at(block, 32);
    if run != tag.run {
        return bad("run", format!("{:016x}", tag.run), format!("{run:016x} (data of another run)"));
    }
    let seq = u32_at(block, 40);
    if seq != tag.generation {
        return bad(
            "sequence",
            tag.generation.to_string(),
            format!("{seq} (an older or newer write of this block)"),
        );
    }
    let len = u32_at(block, 44);
    if len as usize != block.len() {
        return bad("length", block.len().to_string(), len.to_string());
    }
    let stamp = fill::stamp_word(salt, stamp_at);
    if u64_at(block, 0) != stamp {
        return bad("stamp", format!("{stamp:016x}"), format!("{:016x}", u64_at(block, 0)));
    }
    Ok(())
}

/// After a checksum mismatch: rebuilds the block the writer produced (same fill, stamps and
/// header) and names the first byte that differs. Slow; only on the failure path.
pub fn first_difference(
    block: &[u8],
    tag: &BlockTag,
    seed: u64,
    file: u32,
    offset: u64,
    (salt, stamp_at): (u64, u64),
) -> Option<(u64, u8, u8)> {
    let mut want = vec![0u8; block.len()];
    fill::fill(&mut want, seed);
    fill::stamp(&mut want, salt, stamp_at);
    seal(&mut want, tag, file, offset);
    let i = want.iter().zip(block).position(|(a, b)| a != b)?;
    Some((offset + i as u64, want[i], block[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh64_matches_the_reference() {
        assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"a", 0), 0xD24E_C4F1_A98C_6E5B);
        assert_eq!(xxh64(b"abc", 0), 0x44BC_2CF5_AD77_0999);
        assert_eq!(xxh64(b"Nobody inspects the spammish repetition", 0), 0xFBCE_A83C_8A37_8BF1);
    }

    fn block(tag: &BlockTag, file: u32, offset: u64, salt: u64) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        fill::fill(&mut b, 9);
        fill::stamp(&mut b, salt, offset);
        seal(&mut b, tag, file, offset);
        b
    }

    #[test]
    fn every_byte_is_covered() {
        let tag = BlockTag { verify: true, run: 0xABCD, generation: 1, written_bs: 4096 };
        let salt = fill::file_salt(9, 2);
        let b = block(&tag, 2, 8192, salt);
        assert_eq!(check(&b, &tag, 2, 8192, salt, 8192), Ok(()));
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x01;
            assert!(check(&c, &tag, 2, 8192, salt, 8192).is_err(), "a flip at byte {i} went unseen");
        }
    }

    #[test]
    fn mismatches_name_what_was_expected_and_found() {
        let tag = BlockTag { verify: true, run: 7, generation: 2, written_bs: 4096 };
        let salt = fill::file_salt(9, 0);
        let b = block(&tag, 0, 0, salt);
        let m = check(&b, &tag, 0, 4096, salt, 4096).unwrap_err();
        assert_eq!((m.field, m.offset), ("place", 4096));
        assert!(m.found.contains("offset 0"), "{m}");
        let m = check(&b, &BlockTag { run: 8, ..tag }, 0, 0, salt, 0).unwrap_err();
        assert_eq!(m.field, "run");
        let m = check(&b, &BlockTag { generation: 3, ..tag }, 0, 0, salt, 0).unwrap_err();
        assert_eq!((m.field, m.found.split(' ').next().unwrap()), ("sequence", "2"));
        let mut c = b.clone();
        c[1000] ^= 0x40;
        let m = check(&c, &tag, 0, 0, salt, 0).unwrap_err();
        assert_eq!(m.field, "checksum");
        assert_eq!(first_difference(&c, &tag, 9, 0, 0, (salt, 0)), Some((1000, b[1000], b[1000] ^ 0x40)));
        assert_eq!(check(&vec![0u8; 4096], &tag, 0, 0, salt, 0).unwrap_err().field, "header");
        let mut tiny = [0u8; 40];
        seal(&mut tiny, &tag, 0, 0);
        assert_eq!(check(&tiny, &tag, 0, 0, salt, 0).unwrap_err().field, "length");
    }

    #[test]
    fn run_tags() {
        assert_eq!(run_tag("00ea2058726927ec5f996c985d9502c2"), 0x00ea_2058_7269_27ec);
        assert_ne!(run_tag("abc"), run_tag("abd"));
    }
}
