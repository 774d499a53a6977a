//! The cache facts of a phase: the state measured before each repetition, judged against the
//! phase's policy (its honesty flags), and across repetitions.

use serde::{Deserialize, Serialize};

use crate::spec::CachePolicy;

use super::{COLD_MAX_RESIDENT, WARM_MIN_RESIDENT};

/// The cache state measured before a phase, with any honesty flags.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheCheck {
    pub resident_fraction: f64,
    pub flags: Vec<String>,
}

impl CacheCheck {
    /// Judges a measured fraction against the policy.
    pub fn judge(policy: CachePolicy, resident_fraction: f64, real_io: bool) -> CacheCheck {
        let mut flags = vec![];
        if !real_io {
            flags.push("no I/O (null engine)".to_string());
        } else {
            match policy {
                CachePolicy::Cold if resident_fraction > COLD_MAX_RESIDENT => {
                    flags.push(format!("not cold: {:.1}% resident", resident_fraction * 100.0))
                }
                CachePolicy::Warm if resident_fraction < WARM_MIN_RESIDENT => {
                    flags.push(format!("not warm: {:.1}% resident", resident_fraction * 100.0))
                }
                CachePolicy::Asis => flags.push("cache not controlled".to_string()),
                _ => {}
            }
        }
        CacheCheck { resident_fraction, flags }
    }
}

/// The cache facts of a phase across its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheInfo {
    pub policy: CachePolicy,
    /// The largest resident fraction seen before any repetition of the phase.
    pub resident_fraction: f64,
    /// How the cache was handled, in words.
    pub method: String,
    /// A cold read on a file system whose client keeps file data the eviction does not reach:
    /// that cache, in words. The phase is then cold for the kernel's pages only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cache_not_controlled: Option<String>,
    /// A warm metadata phase on a file system whose client keeps looked-up names for less than
    /// a phase, or not at all: what it keeps, in words. Its lookups then reach the servers as
    /// a cold phase's do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names_not_kept: Option<String>,
}

/// The cache column's word for a cold phase whose file system client's cache iolab does not
/// control.
pub const COLD_KERNEL_ONLY: &str = "cold (kernel pages only; the file system client's cache not controlled)";

/// The cache column's word for a warm metadata phase whose file system client does not keep
/// the names looked up before it.
pub const WARM_NAMES_NOT_KEPT: &str =
    "warm (names looked up first; the file system client does not keep them)";

impl CacheInfo {
    /// The policy as tables show it: `cold`, `warm`, `asis`, [`COLD_KERNEL_ONLY`] or
    /// [`WARM_NAMES_NOT_KEPT`].
    pub fn label(&self) -> &str {
        match (&self.client_cache_not_controlled, &self.names_not_kept, self.policy) {
            (Some(_), _, CachePolicy::Cold) => COLD_KERNEL_ONLY,
            (_, Some(_), CachePolicy::Warm) => WARM_NAMES_NOT_KEPT,
            _ => self.policy.name(),
        }
    }
}
