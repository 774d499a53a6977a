//! The data a strategy's computation produces: each message (the parts of one iteration a
//! producer computes) is filled from a generator seeded by (seed, producer, iteration), then
//! tagged at every 4 KiB of its bytes on disk with 16 bytes: the file-offset stamp of
//! [`crate::plan::fill`] (8 bytes), the iteration (u32 LE) and the producer's worker id (u32 LE).
//! So no page repeats, a reader can tell which iteration of which producer every 4 KiB holds,
//! and a test can rebuild every byte of every file.

use crate::plan::fill::{STAMP_EVERY, stamp_word};
use crate::plan::mem::Strided;
use crate::plan::splitmix64;

/// Bytes of the tag at every 4 KiB of a message on disk.
pub const TAG_BYTES: usize = 16;

/// Who made a message, and where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    pub producer: u32,
    pub iter: u64,
    /// The stamp salt of the file it lands in ([`crate::plan::fill::file_salt`]).
    pub salt: u64,
    /// Its first byte's offset in that file.
    pub offset: u64,
    /// Its bytes on disk.
    pub disk_len: usize,
}

/// What a tag read back says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    /// The file offset its stamp encodes.
    pub offset: u64,
    pub iter: u32,
    pub producer: u32,
}

fn seed_of(seed: u64, producer: u32, iter: u64) -> u64 {
    let mut s = seed ^ 0x57A7_E6E5 ^ ((producer as u64) << 40) ^ iter.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    splitmix64(&mut s)
}

/// The computation's output: fills `mem` (the message's memory: `disk_len` bytes, or with
/// strided memory the `disk_len / len x stride` bytes whose pieces are written) and tags it.
pub fn produce(mem: &mut [u8], layout: Option<Strided>, seed: u64, msg: &Message) {
    let mut s = seed_of(seed, msg.producer, msg.iter);
    let mut chunks = mem.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&(splitmix64(&mut s) | 1).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&(splitmix64(&mut s) | 0x0101_0101_0101_0101).to_le_bytes()[..n]);
    tag(mem, layout, msg);
}

/// The tag bytes at byte `pos` of a message (a multiple of 4 KiB).
fn tag_bytes(msg: &Message, pos: usize) -> [u8; TAG_BYTES] {
    let mut t = [0u8; TAG_BYTES];
    t[..8].copy_from_slice(&stamp_word(msg.salt, msg.offset + pos as u64).to_le_bytes());
    t[8..12].copy_from_slice(&(msg.iter as u32).to_le_bytes());
    t[12..].copy_from_slice(&msg.producer.to_le_bytes());
    t
}

/// Writes the tags into the memory places that land on the message's tag positions on disk.
fn tag(mem: &mut [u8], layout: Option<Strided>, msg: &Message) {
    let mut pos = 0usize;
    while pos < msg.disk_len {
        let t = tag_bytes(msg, pos);
        let n = (msg.disk_len - pos).min(TAG_BYTES);
        match layout {
            None => mem[pos..pos + n].copy_from_slice(&t[..n]),
            Some(m) => {
                for (j, b) in t[..n].iter().enumerate() {
                    mem[m.src(pos + j)] = *b;
                }
            }
        }
        pos += STAMP_EVERY as usize;
    }
}

/// The bytes a message puts on disk (what tests compare files against).
pub fn expected_disk(layout: Option<Strided>, seed: u64, msg: &Message) -> Vec<u8> {
    let mem_len = layout.map_or(msg.disk_len, |m| m.mem_bytes(msg.disk_len));
    let mut mem = vec![0u8; mem_len];
    produce(&mut mem, layout, seed, msg);
    match layout {
        None => mem,
        Some(m) => {
            let mut disk = vec![0u8; msg.disk_len];
            m.gather(&mem, &mut disk);
            disk
        }
    }
}

/// Reads the tag at the start of `bytes` (at least 16 bytes), whose stamp was made with `salt`.
pub fn read_tag(bytes: &[u8], salt: u64) -> Tag {
    let w = |r: std::ops::Range<usize>| bytes[r].to_vec();
    let stamp = u64::from_le_bytes(w(0..8).try_into().unwrap());
    Tag {
        offset: stamp ^ salt,
        iter: u32::from_le_bytes(w(8..12).try_into().unwrap()),
        producer: u32::from_le_bytes(w(12..16).try_into().unwrap()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(producer: u32, iter: u64, offset: u64, disk_len: usize) -> Message {
        Message { producer, iter, salt: crate::plan::fill::file_salt(1, 0), offset, disk_len }
    }

    #[test]
    fn tags_name_the_iteration_producer_and_offset() {
        let m = msg(3, 7, 1 << 20, 3 * 4096 + 100);
        let disk = expected_disk(None, 1, &m);
        for k in 0..4 {
            let t = read_tag(&disk[k * 4096..], m.salt);
            assert_eq!(t, Tag { offset: (1 << 20) + k as u64 * 4096, iter: 7, producer: 3 });
        }
        // Different iterations and producers differ everywhere but by chance.
        let other = expected_disk(None, 1, &msg(3, 8, 1 << 20, 3 * 4096 + 100));
        let same = disk.iter().zip(&other).filter(|(a, b)| a == b).count();
        assert!(same < disk.len() / 100, "{same} equal bytes");
        assert!(disk.chunks(8).all(|c| c.iter().any(|&b| b != 0)));
    }

    #[test]
    fn strided_memory_puts_the_same_tags_on_disk() {
        let s = Strided { len: 8, stride: 32 };
        let m = msg(1, 2, 65536, 8192);
        let disk = expected_disk(Some(s), 1, &m);
        assert_eq!(disk.len(), 8192);
        for k in 0..2 {
            let t = read_tag(&disk[k * 4096..], m.salt);
            assert_eq!(t, Tag { offset: 65536 + k as u64 * 4096, iter: 2, producer: 1 });
        }
        let mut mem = vec![0u8; s.mem_bytes(8192)];
        produce(&mut mem, Some(s), 1, &m);
        let mut gathered = vec![0u8; 8192];
        s.gather(&mem, &mut gathered);
        assert_eq!(gathered, disk);
    }
}
