//! Before and after as CSV: one record per point and phase, shared or in one only (`in`),
//! figures in bytes/s (ops/s for metadata, said in `unit`), latencies in ns. The settings that
//! differ are in the text, Markdown and JSON forms.

use std::io::Write;

use super::{Comparison, Figure};
use crate::error::Result;
use crate::report::{Exporter, write_err};

pub struct Csv;

const HEAD: [&str; 19] = [
    "point_phase",
    "in",
    "unit",
    "a_runs",
    "b_runs",
    "a_value",
    "b_value",
    "ratio",
    "ci95_low",
    "ci95_high",
    "verdict",
    "why",
    "a_p50_ns",
    "b_p50_ns",
    "a_p99_ns",
    "b_p99_ns",
    "a_flags",
    "b_flags",
    "statistic",
];

impl Exporter<Comparison> for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, c: &Comparison, out: &mut dyn Write) -> Result<()> {
        let mut w = ::csv::Writer::from_writer(out);
        w.write_record(HEAD).map_err(write_err)?;
        let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        let stat = format!("{} of {}", c.statistic.name(), c.figure.name());
        for s in &c.shared {
            let flags = |f: &Figure| f.flags.join("; ");
            let [lo, hi] = s.ci95.map(|[l, h]| [Some(l), Some(h)]).unwrap_or([None, None]);
            w.write_record([
                s.label(),
                "both".into(),
                s.unit.into(),
                s.a.runs.to_string(),
                s.b.runs.to_string(),
                opt(s.a.value),
                opt(s.b.value),
                opt(s.ratio),
                opt(lo),
                opt(hi),
                s.verdict.text().into(),
                s.why.clone(),
                s.a.latency_ns.p50.to_string(),
                s.b.latency_ns.p50.to_string(),
                s.a.latency_ns.p99.to_string(),
                s.b.latency_ns.p99.to_string(),
                flags(&s.a),
                flags(&s.b),
                stat.clone(),
            ])
            .map_err(write_err)?;
        }
        for (side, only) in [("a", &c.only_a), ("b", &c.only_b)] {
            for name in only {
                let mut rec = vec![String::new(); HEAD.len()];
                rec[0] = name.clone();
                rec[1] = side.into();
                rec[18] = stat.clone();
                w.write_record(&rec).map_err(write_err)?;
            }
        }
        w.flush().map_err(write_err)
    }
}
