//! The terminal table's section on the workload apart: each phase's reads and writes, block
//! sizes and response times (from `mix_summary`, over the complete runs): share of the ops,
//! MB/s and IOPS (means of the runs, summed over the workers as max_SAR), service-time and
//! response-time percentiles; and the measured skew of an order that draws.

use crate::latency::LatencyNs;
use crate::results::ExperimentResult;
use crate::results::mix::{ClassSummary, MixSummary};
use crate::units::{fmt_ns, fmt_ops, fmt_rate, fmt_size};

use super::text_table;

const LEGEND: &str = "share: of the ops (hot tenth: of the ops on the hottest tenth of each worker's blocks, the order's measured skew); MB/s, IOPS: means of the runs, each summed over the workers as max_SAR; lat: service time, issue to completion; resp: response time, from the op's planned start under a rate limit to its completion, a stall's backlog included (over every op of the complete runs)";

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn lat(l: Option<&LatencyNs>, f: fn(&LatencyNs) -> u64) -> String {
    l.map_or("-".into(), |l| fmt_ns(f(l)))
}

/// A class's row after its phase and name.
fn class_row(share: Option<f64>, c: Option<&ClassSummary>, resp: Option<&LatencyNs>) -> Vec<String> {
    let resp = resp.or(c.and_then(|c| c.response_latency_ns.as_ref()));
    vec![
        share.map_or("-".into(), pct),
        c.map_or("-".into(), |c| fmt_rate(c.bytes_per_s.mean)),
        c.map_or("-".into(), |c| fmt_ops(c.ops_per_s.mean)),
        lat(c.map(|c| &c.latency_ns), |l| l.p50),
        lat(c.map(|c| &c.latency_ns), |l| l.p99),
        lat(resp, |l| l.p50),
        lat(resp, |l| l.p99),
        lat(resp, |l| l.max),
    ]
}

/// The rows of one phase's summary.
fn rows_of(m: &MixSummary) -> Vec<(String, Vec<String>)> {
    let mut rows = vec![];
    if m.read.is_some() || m.write.is_some() {
        let share = m.read_share_ops;
        rows.push(("read".to_string(), class_row(share, m.read.as_ref(), None)));
        rows.push(("write".to_string(), class_row(share.map(|s| 1.0 - s), m.write.as_ref(), None)));
    }
    for (bs, share, c) in &m.block_sizes {
        rows.push((fmt_size(*bs), class_row(Some(*share), Some(c), None)));
    }
    if let Some(r) = m.response_latency_ns.as_ref() {
        rows.push(("all ops".to_string(), class_row(None, None, Some(r))));
    }
    if let Some(h) = m.hot10_share_ops {
        let mut r = class_row(Some(h), None, None);
        r.truncate(1);
        r.resize(8, "-".into());
        rows.push(("hot tenth".to_string(), r));
    }
    rows
}

/// The section; empty when no phase has a workload apart.
pub fn render_mix(exp: &ExperimentResult) -> String {
    let many = exp.points.len() > 1;
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let Some(m) = ph.mix_summary.as_ref() else { continue };
            for (class, cells) in rows_of(m) {
                let mut row = if many { vec![super::point_params(p)] } else { vec![] };
                row.extend([ph.name.clone(), class]);
                row.extend(cells);
                rows.push(row);
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut headers = vec![
        "phase", "class", "share", "MB/s", "IOPS", "lat p50", "lat p99", "resp p50", "resp p99", "resp max",
    ];
    if many {
        headers.insert(0, "point");
    }
    let first = headers.len() - 8;
    let right: Vec<usize> = (first..headers.len()).collect();
    let mut out = String::from("\nworkload apart (over the complete runs):\n");
    out += &text_table(&headers, &rows, &right);
    out + &crate::text::wrap(LEGEND, 100, "", 0)
}
