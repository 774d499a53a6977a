//! Striping (declustering): one logical file spread over T component files, one per target,
//! in units of `unit` bytes. Byte o of the logical file lives in component (o / unit) mod T at
//! offset (o / (unit x T)) x unit + o mod unit, as in Intel CFS and every parallel file system
//! since (French, Pratt and Das 1991).

/// A stripe geometry: `count` components, `unit` bytes per stripe unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    pub unit: u64,
    pub count: u32,
}

impl Stripe {
    /// Logical byte `o` -> (component, offset in that component).
    #[inline(always)]
    pub fn locate(&self, o: u64) -> (u32, u64) {
        let u = o / self.unit;
        let t = self.count as u64;
        ((u % t) as u32, (u / t) * self.unit + o % self.unit)
    }

    /// Component `t`, offset `c` -> logical byte (the inverse of [`Stripe::locate`]).
    #[inline(always)]
    pub fn to_logical(&self, t: u32, c: u64) -> u64 {
        (c / self.unit) * self.unit * self.count as u64 + t as u64 * self.unit + c % self.unit
    }

    /// The size of component `t` of a logical file of `len` bytes.
    pub fn component_size(&self, len: u64, t: u32) -> u64 {
        // Resolution keeps unit x count below 2^63; saturate rather than wrap all the same.
        let width = self.unit.saturating_mul(self.count as u64);
        let rem = len % width;
        len / width * self.unit + rem.saturating_sub(t as u64 * self.unit).min(self.unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_formula_on_a_small_example() {
        // unit 4, 3 components: bytes 0..4 -> c0@0, 4..8 -> c1@0, 8..12 -> c2@0, 12..16 -> c0@4.
        let s = Stripe { unit: 4, count: 3 };
        assert_eq!(s.locate(0), (0, 0));
        assert_eq!(s.locate(5), (1, 1));
        assert_eq!(s.locate(11), (2, 3));
        assert_eq!(s.locate(13), (0, 5));
        assert_eq!([0, 1, 2].map(|t| s.component_size(14, t)), [6, 4, 4]);
    }

    proptest! {
        /// Every logical byte lands in exactly one (component, offset), inside that
        /// component's size, and the inverse gives it back; the components add up exactly.
        #[test]
        fn mapping_covers_every_byte_exactly_once(unit in 1u64..40, count in 1u32..6, len in 0u64..700) {
            let s = Stripe { unit, count };
            let sizes: Vec<u64> = (0..count).map(|t| s.component_size(len, t)).collect();
            prop_assert_eq!(sizes.iter().sum::<u64>(), len);
            let mut seen: Vec<Vec<bool>> = sizes.iter().map(|&n| vec![false; n as usize]).collect();
            for o in 0..len {
                let (t, c) = s.locate(o);
                prop_assert!(t < count);
                prop_assert!(c < sizes[t as usize], "byte {} -> {}@{} beyond {}", o, t, c, sizes[t as usize]);
                prop_assert!(!seen[t as usize][c as usize], "{}@{} hit twice", t, c);
                seen[t as usize][c as usize] = true;
                prop_assert_eq!(s.to_logical(t, c), o);
            }
            prop_assert!(seen.iter().all(|v| v.iter().all(|&b| b)));
        }
    }
}
