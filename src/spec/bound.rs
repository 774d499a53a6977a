//! Time-bounded phases, as a spec says them: `runtime` (fio's time_based: every worker runs
//! for the time, wrapping around its blocks) and `stonewall` (IOR's stonewalling: every worker
//! stops at the time or when its blocks are done, with `wear_out` going on to the most ops any
//! worker reached, as IOR's stoneWallingWearOut and IO500 do). Of the metadata phases only
//! the ones that make items (`create`, `mkdir`) take a bound, a stonewall (mdtest's `-W`); the
//! phases after them work on the items each worker made.

use serde::{Deserialize, Serialize};

use super::{Phase, Spec};

/// How a phase is bounded in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum TimeBound {
    /// Every worker runs `ns` from its start, wrapping around its blocks.
    Runtime { ns: u64 },
    /// Every worker stops at `ns` from its start or when its blocks are done; with
    /// `wear_out`, each then goes on to the most ops any worker had done by then.
    Stonewall { ns: u64, wear_out: bool },
}

impl TimeBound {
    /// The time, ns.
    pub fn ns(self) -> u64 {
        match self {
            TimeBound::Runtime { ns } | TimeBound::Stonewall { ns, .. } => ns,
        }
    }

    /// A few words for tables: `runtime 10s`, `stonewall 5s`, `stonewall 5s + wear-out`.
    pub fn label(self) -> String {
        let t = crate::units::fmt_duration_spec(self.ns());
        match self {
            TimeBound::Runtime { .. } => format!("runtime {t}"),
            TimeBound::Stonewall { wear_out: false, .. } => format!("stonewall {t}"),
            TimeBound::Stonewall { wear_out: true, .. } => format!("stonewall {t} + wear-out"),
        }
    }

    /// Whether a worker may go past its blocks, wrapping around them (`runtime`).
    pub fn wraps(self) -> bool {
        matches!(self, TimeBound::Runtime { .. })
    }
}

impl Spec {
    /// The time bound of a phase: its own (`read:runtime=5s`; 0 = none), else the run's. A
    /// metadata phase that makes items takes a stonewall only (the run's `runtime` leaves it
    /// unbounded); the other metadata phases go through every item made.
    pub fn phase_bound(&self, ph: &Phase) -> Option<TimeBound> {
        if ph.op.is_metadata() {
            if !ph.op.makes_items() {
                return None;
            }
            let ns = match ph.stonewall_ns {
                Some(ns) => ns,
                None if ph.runtime_ns.is_some() => return None,
                None => self.stonewall_ns?,
            };
            return (ns > 0).then_some(TimeBound::Stonewall { ns, wear_out: self.wear_out });
        }
        let wear_out = self.wear_out;
        match (ph.runtime_ns, ph.stonewall_ns) {
            (Some(ns), _) if ns > 0 => Some(TimeBound::Runtime { ns }),
            (_, Some(ns)) if ns > 0 => Some(TimeBound::Stonewall { ns, wear_out }),
            (Some(_), _) | (_, Some(_)) => None,
            (None, None) => match (self.runtime_ns, self.stonewall_ns) {
                (Some(ns), _) => Some(TimeBound::Runtime { ns }),
                (None, Some(ns)) => Some(TimeBound::Stonewall { ns, wear_out }),
                (None, None) => None,
            },
        }
    }

    /// Whether any phase is bounded in time.
    pub fn time_bounded(&self) -> bool {
        self.phases.iter().any(|p| self.phase_bound(p).is_some())
    }
}
