//! The order in which the runs of an experiment's points are taken: round-robin over the
//! points, or shuffled with a seed.

use serde::{Deserialize, Serialize};

/// The order in which the runs of an experiment's points are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interleave {
    /// Repetition 1 of every point, then repetition 2 of every point, ...
    #[default]
    RoundRobin,
    /// All runs in a random order drawn from this seed.
    Shuffle(u64),
}

impl Interleave {
    /// `round-robin`, `shuffle` (seeded by `seed`) or `shuffle:SEED`.
    pub fn parse(s: &str, seed: u64) -> std::result::Result<Interleave, String> {
        match s {
            "round-robin" | "roundrobin" | "rr" => Ok(Interleave::RoundRobin),
            "shuffle" => Ok(Interleave::Shuffle(seed)),
            _ => {
                let n = s.strip_prefix("shuffle:").ok_or("expected round-robin, shuffle or shuffle:SEED")?;
                n.parse().map(Interleave::Shuffle).map_err(|_| format!("`{n}` is not a whole number"))
            }
        }
    }
    pub fn label(self) -> String {
        match self {
            Interleave::RoundRobin => "round-robin".into(),
            Interleave::Shuffle(seed) => format!("shuffle:{seed}"),
        }
    }
}

impl Serialize for Interleave {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl<'de> Deserialize<'de> for Interleave {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Interleave::parse(&s, 1).map_err(serde::de::Error::custom)
    }
}
