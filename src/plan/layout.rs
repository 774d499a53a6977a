//! Block maps: where a worker's j-th block lives, as (the worker's local logical file, byte
//! offset in it). One variant per way of dividing data among workers.

/// Maps a worker's block index `j` to (local logical file, byte offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMap {
    /// One shared file; the worker's blocks lie end to end from `base` (a contiguous segment).
    Contiguous { base: u64 },
    /// One shared file; the worker owns file blocks `first`, `first + stride`, ... (IOR's
    /// strided pattern: worker w of W owns every W-th block).
    Strided { first: u64, stride: u64 },
    /// One shared file in IOR's segments: the worker's blocks come `per_seg` at a time, end to
    /// end from `base` in the first segment, and each segment `seg_stride` bytes after the one
    /// before (IOR's `-s`: worker w of W writes its `-b` bytes at w x b of every segment of W x b
    /// bytes).
    Segmented { base: u64, per_seg: u64, seg_stride: u64 },
    /// The worker's own `files` files of `blocks` blocks each, visited `rr` at a time: files
    /// 0..rr block by block (block 0 of each, then block 1 of each, ...), then the next `rr`
    /// files, and so on; the last group may be smaller. `rr = 1` is one file after another.
    RoundRobin { files: u32, rr: u32, blocks: u64 },
}

impl BlockMap {
    /// The (local logical file, offset) of block `j` for blocks of `bs` bytes.
    #[inline(always)]
    pub fn locate(&self, j: u64, bs: u64) -> (u32, u64) {
        match *self {
            BlockMap::Contiguous { base } => (0, base + j * bs),
            BlockMap::Strided { first, stride } => (0, (first + j * stride) * bs),
            BlockMap::Segmented { base, per_seg, seg_stride } => {
                (0, base + (j / per_seg) * seg_stride + (j % per_seg) * bs)
            }
            // One file (file-per-worker's usual case): no division on the hot path.
            BlockMap::RoundRobin { files: 1, .. } => (0, j * bs),
            BlockMap::RoundRobin { files, rr, blocks } => {
                let (files, rr) = (files as u64, rr as u64);
                let group = j / (rr * blocks);
                let first = group * rr;
                let in_group = rr.min(files - first);
                let r = j - group * rr * blocks;
                ((first + r % in_group) as u32, (r / in_group) * bs)
            }
        }
    }
}

impl BlockMap {
    /// A worker's part of one shared file as a tiling, when it is one: (the first byte, the
    /// bytes of each tile, the distance between tiles), for blocks of `bs` bytes (what an MPI-IO
    /// file view shows the worker). None for a contiguous segment or a worker's own files.
    pub fn tiling(&self, bs: u64) -> Option<(u64, u64, u64)> {
        match *self {
            BlockMap::Strided { first, stride } => Some((first * bs, bs, stride * bs)),
            BlockMap::Segmented { base, per_seg, seg_stride } => Some((base, per_seg * bs, seg_stride)),
            _ => None,
        }
    }

    /// Blocks from block `j` to the end of its file or segment, of the worker's `n` (a
    /// block-size mix keeps its ops inside one file; one file after another only).
    #[inline(always)]
    pub fn room_after(&self, j: u64, n: u64) -> u64 {
        match *self {
            BlockMap::Contiguous { .. } => n - j,
            BlockMap::RoundRobin { blocks, .. } => blocks - j % blocks,
            BlockMap::Strided { .. } => 1,
            BlockMap::Segmented { per_seg, .. } => per_seg - j % per_seg,
        }
    }

    /// Blocks from the start of the file or segment of block `end - 1` up to `end`.
    #[inline(always)]
    pub fn room_before(&self, end: u64) -> u64 {
        match *self {
            BlockMap::Contiguous { .. } => end,
            BlockMap::RoundRobin { blocks, .. } => (end - 1) % blocks + 1,
            BlockMap::Strided { .. } => 1,
            BlockMap::Segmented { per_seg, .. } => (end - 1) % per_seg + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn visits(map: BlockMap, n: u64) -> Vec<(u32, u64)> {
        (0..n).map(|j| map.locate(j, 1)).collect()
    }

    #[test]
    fn round_robin_visits_block_1_of_every_file_then_block_2() {
        let m = BlockMap::RoundRobin { files: 3, rr: 3, blocks: 2 };
        assert_eq!(visits(m, 6), [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]);
        let m = BlockMap::RoundRobin { files: 3, rr: 1, blocks: 2 };
        assert_eq!(visits(m, 6), [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        // Groups of two; the last group holds one file.
        let m = BlockMap::RoundRobin { files: 3, rr: 2, blocks: 2 };
        assert_eq!(visits(m, 6), [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]);
    }

    #[test]
    fn strided_takes_every_stride_th_block() {
        let m = BlockMap::Strided { first: 1, stride: 3 };
        assert_eq!(visits(m, 3), [(0, 1), (0, 4), (0, 7)]);
    }

    #[test]
    fn segmented_lays_each_segment_after_the_last() {
        // Worker 1 of 3, blocks of 2 ops of 1 byte: its part of segment s is at 6 s + 2.
        let m = BlockMap::Segmented { base: 2, per_seg: 2, seg_stride: 6 };
        assert_eq!(visits(m, 6), [(0, 2), (0, 3), (0, 8), (0, 9), (0, 14), (0, 15)]);
    }

    proptest! {
        #[test]
        fn round_robin_covers_each_block_of_each_file_once(files in 1u32..9, rr in 1u32..9, blocks in 1u64..9) {
            let rr = rr.min(files);
            let m = BlockMap::RoundRobin { files, rr, blocks };
            let mut seen = vec![false; (files as u64 * blocks) as usize];
            for j in 0..files as u64 * blocks {
                let (f, off) = m.locate(j, 1);
                prop_assert!(f < files && off < blocks);
                let i = (f as u64 * blocks + off) as usize;
                prop_assert!(!seen[i]);
                seen[i] = true;
                // Within a group, file index cycles fastest.
                if j > 0 && (j % (rr as u64 * blocks)) != 0 {
                    let (pf, poff) = m.locate(j - 1, 1);
                    prop_assert!((f == pf + 1 && off == poff) || (f <= pf && off == poff + 1));
                }
            }
        }
    }
}
