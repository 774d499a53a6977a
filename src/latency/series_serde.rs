//! How a rate series is written: in JSON (human-readable formats) its counts named by what
//! they count, `bytes` or `ops`; in the compact encodings (the MPI replies' postcard, the
//! spool's CBOR, which name no fields) what it counts as a field before the others.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::series::RateSeries;
use crate::units::RateUnit;

/// A series in JSON: its counts named by what they count (one of `bytes`, `ops`).
#[derive(Serialize, Deserialize)]
struct SeriesJson<C> {
    interval_ns: u64,
    end_ns: u64,
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    bytes: Option<C>,
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    ops: Option<C>,
}

fn none<C>() -> Option<C> {
    None
}

impl Serialize for RateSeries {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return (self.of, self.interval_ns, self.end_ns, &self.bytes).serialize(s);
        }
        let counts = Some(&self.bytes);
        let (bytes, ops) = if self.of == RateUnit::Ops { (None, counts) } else { (counts, None) };
        SeriesJson { interval_ns: self.interval_ns, end_ns: self.end_ns, bytes, ops }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RateSeries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RateSeries, D::Error> {
        if !d.is_human_readable() {
            let (of, interval_ns, end_ns, bytes) = <(RateUnit, u64, u64, Vec<u64>)>::deserialize(d)?;
            return Ok(RateSeries { of, interval_ns, end_ns, bytes });
        }
        let j = SeriesJson::<Vec<u64>>::deserialize(d)?;
        let (of, bytes) = match (j.bytes, j.ops) {
            (Some(b), None) => (RateUnit::Bytes, b),
            (None, Some(o)) => (RateUnit::Ops, o),
            _ => return Err(serde::de::Error::custom("a rate series has one of `bytes` and `ops`")),
        };
        Ok(RateSeries { of, interval_ns: j.interval_ns, end_ns: j.end_ns, bytes })
    }
}
