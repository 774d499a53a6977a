//! The everyday fio workload words of a spec: the read share of a mixed phase (`rwmixread`),
//! block-size mixes (`bssplit`), rate-limited load (`rate`, `rate_iops`, `rate_process`) and
//! think time between ops (`thinktime`, `thinktime_spin`, `thinktime_blocks`); and which of
//! them a phase has.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{OpKind, Phase, Spec};
use crate::units::fmt_size_spec;

/// fio's default read share of a mixed phase, percent.
pub const DEFAULT_RWMIXREAD: u8 = 50;
/// The most block sizes a bssplit may list.
pub const MAX_BSSPLIT: usize = 16;

/// One block size of a mix and its share of the ops, percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsShare {
    pub bytes: u64,
    pub pct: u32,
}

/// A block-size mix, fio's `bssplit` (`4KiB/50:64KiB/30:1MiB/20`): sizes ascending, shares
/// summing to 100.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsSplit(pub Vec<BsShare>);

impl BsSplit {
    /// Parses fio's syntax: SIZE/PERCENT entries joined by `:`; a size without a percent takes
    /// an equal part of what the others leave (as fio).
    pub fn parse(s: &str) -> std::result::Result<BsSplit, String> {
        if s.contains(',') {
            return Err(
                "a bssplit per direction (fio's READS,WRITES form) is not built: one mix serves both".into(),
            );
        }
        let mut given: Vec<(u64, Option<u32>)> = vec![];
        for part in s.split(':').map(str::trim).filter(|p| !p.is_empty()) {
            let (size, pct) = match part.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (part, None),
            };
            let bytes = crate::units::parse_abs_size(size).map_err(|e| format!("`{size}`: {}", e.0))?;
            if bytes == 0 {
                return Err(format!("`{part}`: a block size must be positive"));
            }
            let pct =
                match pct {
                    None | Some("") => None,
                    Some(p) => {
                        Some(p.trim().parse::<u32>().ok().filter(|&p| p <= 100).ok_or_else(|| {
                            format!("`{part}`: the share must be a whole percent, 0 to 100")
                        })?)
                    }
                };
            if given.iter().any(|(b, _)| *b == bytes) {
                return Err(format!("`{part}`: {} is listed twice", fmt_size_spec(bytes)));
            }
            given.push((bytes, pct));
        }
        if given.is_empty() {
            return Err("no block size given (SIZE/PERCENT:SIZE/PERCENT...)".into());
        }
        if given.len() > MAX_BSSPLIT {
            return Err(format!("at most {MAX_BSSPLIT} block sizes"));
        }
        let set: u32 = given.iter().filter_map(|(_, p)| *p).sum();
        let unset = given.iter().filter(|(_, p)| p.is_none()).count() as u32;
        if set > 100 || (unset == 0 && set != 100) {
            return Err(format!("the shares add up to {set}%, not 100%"));
        }
        let (each, mut extra) =
            ((100 - set).checked_div(unset).unwrap_or(0), (100 - set).checked_rem(unset).unwrap_or(0));
        let mut out: Vec<BsShare> = given
            .into_iter()
            .map(|(bytes, p)| {
                let pct = p.unwrap_or_else(|| {
                    let e = each + u32::from(extra > 0);
                    extra = extra.saturating_sub(1);
                    e
                });
                BsShare { bytes, pct }
            })
            .filter(|b| b.pct > 0)
            .collect();
        if out.is_empty() {
            return Err("every share is 0%".into());
        }
        out.sort_by_key(|b| b.bytes);
        Ok(BsSplit(out))
    }

    /// As fio writes it, sizes in the spec's syntax.
    pub fn label(&self) -> String {
        self.0.iter().map(|b| format!("{}/{}", fmt_size_spec(b.bytes), b.pct)).collect::<Vec<_>>().join(":")
    }

    /// The smallest size: the unit every op is a whole number of and starts at a multiple of.
    pub fn unit(&self) -> u64 {
        self.0[0].bytes
    }

    /// The largest size (what a buffer must hold).
    pub fn largest(&self) -> u64 {
        self.0[self.0.len() - 1].bytes
    }

    /// The mean op size the shares give, bytes.
    pub fn mean_bytes(&self) -> f64 {
        self.0.iter().map(|b| b.bytes as f64 * b.pct as f64 / 100.0).sum()
    }
}

impl Serialize for BsSplit {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl<'de> Deserialize<'de> for BsSplit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        BsSplit::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A worker's planned load: bytes or ops per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "per_s")]
pub enum RateLimit {
    /// fio's `rate`: bytes per second per worker.
    Bytes(u64),
    /// fio's `rate_iops`: ops per second per worker.
    Iops(u64),
}

impl RateLimit {
    /// A few words: `200 MB/s`, `5000 IOPS` (per worker).
    pub fn label(self) -> String {
        match self {
            RateLimit::Bytes(b) => format!("{} MB/s per worker", crate::units::fmt_rate(b as f64)),
            RateLimit::Iops(n) => format!("{n} IOPS per worker"),
        }
    }

    /// The planned gap after an op of `len` bytes, ns (fractional).
    #[inline(always)]
    pub fn gap_ns(self, len: u64) -> f64 {
        match self {
            RateLimit::Bytes(b) => len as f64 * 1e9 / b as f64,
            RateLimit::Iops(n) => 1e9 / n as f64,
        }
    }
}

/// How the planned start times of a rate-limited phase are spaced (fio's `rate_process`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly.
    #[default]
    Linear,
    /// Exponential gaps of the same mean, seeded (a Poisson process of arrivals).
    Poisson,
}

impl RateProcess {
    pub fn name(self) -> &'static str {
        match self {
            RateProcess::Linear => "linear",
            RateProcess::Poisson => "poisson",
        }
    }
}

/// Think time between ops (fio's `thinktime`, `thinktime_spin`, `thinktime_blocks`): after
/// every `blocks` ops the worker pauses `ns`, the first `spin_ns` of it spinning on the clock,
/// the rest asleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkTime {
    pub ns: u64,
    pub spin_ns: u64,
    pub blocks: u64,
}

impl ThinkTime {
    /// A few words: `think 100us every op`, `think 1ms (spin 200us) every 8 ops`.
    pub fn label(self) -> String {
        let d = crate::units::fmt_duration_spec;
        let spin = match self.spin_ns {
            0 => String::new(),
            s if s == self.ns => " spinning".into(),
            s => format!(" (spin {})", d(s)),
        };
        let every = if self.blocks == 1 { "every op".into() } else { format!("every {} ops", self.blocks) };
        format!("think {}{spin} {every}", d(self.ns))
    }
}

/// The workload words of a spec (its JSON keeps them beside the other parameters).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The read share of mixed phases that name none, percent (None: fio's 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwmixread: Option<u8>,
    /// A block-size mix (fio's bssplit): each op's size drawn from it; the spec's `bs_bytes`
    /// is then its smallest size, the unit every op is a whole number of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bssplit: Option<BsSplit>,
    /// Every data phase's planned load per worker, unless the phase sets its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateLimit>,
    #[serde(default, skip_serializing_if = "is_linear")]
    pub rate_process: RateProcess,
    /// Think time between ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime: Option<ThinkTime>,
}

fn is_linear(p: &RateProcess) -> bool {
    *p == RateProcess::Linear
}

impl Spec {
    /// The read share of a mixed phase, percent (its own `rwmixread=N`, else the run's, else
    /// fio's 50); None for a phase that is not mixed.
    pub fn phase_rwmixread(&self, ph: &Phase) -> Option<u8> {
        (ph.op == OpKind::Rw).then(|| ph.rwmixread.or(self.workload.rwmixread).unwrap_or(DEFAULT_RWMIXREAD))
    }

    /// A phase's rate limit: its own (`rate_iops=N`, `rate=SIZE`; 0 = none), else the run's.
    pub fn phase_rate(&self, ph: &Phase) -> Option<RateLimit> {
        if ph.op.is_metadata() {
            return None;
        }
        match (ph.rate_bytes_per_s, ph.rate_iops) {
            (Some(b), _) if b > 0 => Some(RateLimit::Bytes(b)),
            (_, Some(n)) if n > 0 => Some(RateLimit::Iops(n)),
            (Some(_), _) | (_, Some(_)) => None,
            (None, None) => self.workload.rate,
        }
    }

    /// The largest op a phase of this spec moves: the largest of its bssplit, else `bs`.
    pub fn max_op_bytes(&self) -> u64 {
        self.workload.bssplit.as_ref().map_or(self.bs_bytes, |b| b.largest().max(self.bs_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssplit_parses_fio_syntax() {
        let b = BsSplit::parse("64KiB/30:4KiB/50:1MiB/20").unwrap();
        assert_eq!(
            b.0.iter().map(|s| (s.bytes, s.pct)).collect::<Vec<_>>(),
            [(4096, 50), (65536, 30), (1 << 20, 20)]
        );
        assert_eq!(b.label(), "4KiB/50:64KiB/30:1MiB/20");
        assert_eq!((b.unit(), b.largest()), (4096, 1 << 20));
        // Sizes without a share split what is left, the remainder to the first.
        let b = BsSplit::parse("4k/40:8k:16k:32k").unwrap();
        assert_eq!(b.0.iter().map(|s| s.pct).collect::<Vec<_>>(), [40, 20, 20, 20]);
        let b = BsSplit::parse("4k/10:8k:16k").unwrap();
        assert_eq!(b.0.iter().map(|s| s.pct).collect::<Vec<_>>(), [10, 45, 45]);
        for bad in ["", "4k/50:8k/40", "4k/101", "4k/50:4k/50", "0/100", "4k/50,8k/100", "x/100", "4k/-1"] {
            assert!(BsSplit::parse(bad).is_err(), "{bad:?}");
        }
    }
}
