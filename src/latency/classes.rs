//! Ops kept apart by class inside a timed loop: by direction (the reads and the writes of a
//! mixed phase), by block size (a block-size mix), and the response time of a rate-limited
//! phase (from each op's planned start, so a stall's backlog counts), each into a
//! preallocated histogram of [`FastHist`]'s layout; ops and bytes counted by direction and
//! size. Made before the start gate; recording allocates nothing and locks nothing.

use serde::{Deserialize, Serialize};

use super::{Buckets, FastHist};

/// Directions, as classes index them.
pub const READ: usize = 0;
pub const WRITE: usize = 1;

/// A timed loop's classes.
pub struct ClassRec {
    /// Service time by direction (a mixed phase).
    by_dir: Option<Box<[FastHist; 2]>>,
    /// Service time by size index (a block-size mix).
    by_size: Box<[FastHist]>,
    /// Response time of every op, and by direction when mixed (a rate-limited phase).
    response: Option<Box<FastHist>>,
    response_by_dir: Option<Box<[FastHist; 2]>>,
    ops: [u64; 2],
    bytes: [u64; 2],
    size_ops: [u64; 16],
    size_bytes: [u64; 16],
}

impl ClassRec {
    /// Classes for a phase that is mixed (`dirs`), has `sizes` block sizes (0: none) and is
    /// rate-limited (`response`); histograms only where the loop reads the clock (`clocked`).
    pub fn new(dirs: bool, sizes: usize, response: bool, clocked: bool) -> ClassRec {
        let two = || Box::new([FastHist::new(), FastHist::new()]);
        ClassRec {
            by_dir: (dirs && clocked).then(two),
            by_size: (0..if clocked { sizes } else { 0 }).map(|_| FastHist::new()).collect(),
            response: (response && clocked).then(|| Box::new(FastHist::new())),
            response_by_dir: (dirs && response && clocked).then(two),
            ops: [0; 2],
            bytes: [0; 2],
            size_ops: [0; 16],
            size_bytes: [0; 16],
        }
    }

    /// An op of `len` bytes and size index `size`, done in `service_ns` (issue to completion),
    /// `response_ns` after its planned start (0 when not rate-limited).
    #[inline(always)]
    pub fn record(&mut self, write: bool, size: u8, len: u64, service_ns: u64, response_ns: u64) {
        let d = write as usize;
        self.ops[d] += 1;
        self.bytes[d] += len;
        let s = size as usize & 15;
        self.size_ops[s] += 1;
        self.size_bytes[s] += len;
        if let Some(h) = self.by_dir.as_mut() {
            h[d].record(service_ns);
        }
        if let Some(h) = self.by_size.get_mut(s) {
            h.record(service_ns);
        }
        if let Some(h) = self.response.as_mut() {
            h.record(response_ns);
        }
        if let Some(h) = self.response_by_dir.as_mut() {
            h[d].record(response_ns);
        }
    }

    /// What it kept, its histograms as buckets; `sizes`: the mix's sizes in bytes.
    pub fn finish(self, sizes: &[u64]) -> ClassSample {
        let pair = |h: &[FastHist; 2]| [h[0].buckets(), h[1].buckets()];
        ClassSample {
            ops: self.ops,
            bytes: self.bytes,
            by_dir: self.by_dir.as_deref().map(pair),
            by_size: sizes
                .iter()
                .enumerate()
                .map(|(i, &bs_bytes)| SizeClass {
                    bs_bytes,
                    ops: self.size_ops[i],
                    bytes: self.size_bytes[i],
                    latency_histogram_ns: self.by_size.get(i).map(FastHist::buckets).unwrap_or_default(),
                })
                .collect(),
            response: self.response.as_deref().map(FastHist::buckets),
            response_by_dir: self.response_by_dir.as_deref().map(pair),
        }
    }

    /// Memory its histograms take, for a phase of this shape.
    pub fn memory_bytes(dirs: bool, sizes: usize, response: bool) -> u64 {
        let hists = 2 * dirs as usize + sizes + response as usize + 2 * (dirs && response) as usize;
        // Each histogram, and the HDR histogram its buckets are made through at the end.
        (hists * 2 * FastHist::BYTES) as u64
    }
}

/// One block size of a mix: its ops, bytes and service times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SizeClass {
    pub bs_bytes: u64,
    pub ops: u64,
    pub bytes: u64,
    pub latency_histogram_ns: Buckets,
}

/// What a worker's classes kept (every field always present: the MPI replies' encoding has no
/// field names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassSample {
    /// Ops and bytes by direction, [read, write].
    pub ops: [u64; 2],
    pub bytes: [u64; 2],
    /// Service times by direction (a mixed phase).
    pub by_dir: Option<[Buckets; 2]>,
    /// By block size (a mix), in the mix's order.
    pub by_size: Vec<SizeClass>,
    /// Response times (a rate-limited phase): every op's, and by direction when mixed.
    pub response: Option<Buckets>,
    pub response_by_dir: Option<[Buckets; 2]>,
}

impl ClassSample {
    /// Its histograms' counts added to `into` (the phase's), and let go from itself.
    pub fn merge_into(&mut self, into: &mut ClassMerge) {
        into.add(self);
        if let Some(d) = &mut self.by_dir {
            *d = Default::default();
        }
        for s in &mut self.by_size {
            s.latency_histogram_ns = Buckets::default();
        }
        if let Some(r) = &mut self.response {
            *r = Buckets::default();
        }
        if let Some(d) = &mut self.response_by_dir {
            *d = Default::default();
        }
    }
}

/// The classes of a phase's workers merged as their samples arrive (MPI ranks), so that a
/// worker's histograms are let go at once.
#[derive(Default)]
pub struct ClassMerge {
    by_dir: Option<Box<[FastHist; 2]>>,
    by_size: Vec<(u64, FastHist)>,
    response: Option<Box<FastHist>>,
    response_by_dir: Option<Box<[FastHist; 2]>>,
}

impl ClassMerge {
    fn add(&mut self, s: &ClassSample) {
        let two = || Box::new([FastHist::new(), FastHist::new()]);
        if let Some(d) = &s.by_dir {
            let h = self.by_dir.get_or_insert_with(two);
            h[0].add(&d[0]);
            h[1].add(&d[1]);
        }
        for c in &s.by_size {
            let i = match self.by_size.iter().position(|(b, _)| *b == c.bs_bytes) {
                Some(i) => i,
                None => {
                    self.by_size.push((c.bs_bytes, FastHist::new()));
                    self.by_size.len() - 1
                }
            };
            self.by_size[i].1.add(&c.latency_histogram_ns);
        }
        if let Some(r) = &s.response {
            self.response.get_or_insert_with(|| Box::new(FastHist::new())).add(r);
        }
        if let Some(d) = &s.response_by_dir {
            let h = self.response_by_dir.get_or_insert_with(two);
            h[0].add(&d[0]);
            h[1].add(&d[1]);
        }
    }

    /// The merged histograms, as one sample's (its counts zero: the workers keep theirs).
    pub fn finish(self) -> Option<ClassSample> {
        if self.by_dir.is_none() && self.by_size.is_empty() && self.response.is_none() {
            return None;
        }
        let pair = |h: &[FastHist; 2]| [h[0].buckets(), h[1].buckets()];
        Some(ClassSample {
            ops: [0; 2],
            bytes: [0; 2],
            by_dir: self.by_dir.as_deref().map(pair),
            by_size: self
                .by_size
                .iter()
                .map(|(b, h)| SizeClass { bs_bytes: *b, ops: 0, bytes: 0, latency_histogram_ns: h.buckets() })
                .collect(),
            response: self.response.as_deref().map(FastHist::buckets),
            response_by_dir: self.response_by_dir.as_deref().map(pair),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_keep_directions_sizes_and_response_apart() {
        let mut c = ClassRec::new(true, 2, true, true);
        c.record(false, 0, 4096, 100, 1_000);
        c.record(true, 1, 65536, 2_000, 50_000);
        c.record(true, 0, 4096, 300, 300);
        let s = c.finish(&[4096, 65536]);
        assert_eq!((s.ops, s.bytes), ([1, 2], [4096, 69632]));
        let d = s.by_dir.as_ref().unwrap();
        assert_eq!(d[0].0.iter().map(|b| b.1).sum::<u64>(), 1);
        assert_eq!(d[1].0.iter().map(|b| b.1).sum::<u64>(), 2);
        assert_eq!(
            s.by_size.iter().map(|c| (c.bs_bytes, c.ops, c.bytes)).collect::<Vec<_>>(),
            [(4096, 2, 8192), (65536, 1, 65536)]
        );
        let r = s.response.as_ref().unwrap().to_hist();
        assert_eq!(r.len(), 3);
        assert!(r.max() >= 49_000 && r.max() <= 50_100, "{}", r.max());
        // Merged: the counts add up; the sample keeps its counts and lets its buckets go.
        let mut m = ClassMerge::default();
        let mut a = s.clone();
        a.merge_into(&mut m);
        s.clone().merge_into(&mut m);
        assert!(a.response.as_ref().unwrap().is_empty() && a.ops == [1, 2]);
        let merged = m.finish().unwrap();
        assert_eq!(merged.response.unwrap().to_hist().len(), 6);
        assert_eq!(merged.by_size[1].latency_histogram_ns.to_hist().len(), 2);
        // Without the clock, counts only.
        let mut off = ClassRec::new(true, 2, true, false);
        off.record(true, 1, 8192, 0, 0);
        let s = off.finish(&[4096, 8192]);
        assert!(s.by_dir.is_none() && s.response.is_none() && s.by_size[1].latency_histogram_ns.is_empty());
        assert_eq!(s.by_size[1].ops, 1);
    }
}
