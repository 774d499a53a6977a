//! Per-host figures of a repetition run on MPI ranks over several hosts: ranks and workers on
//! each host, bytes and ops, and the host's aggregate rates.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::results::WorkerResult;
use crate::stats::span::{Moments, Span};

/// One host's share of a repetition (workers that ran on MPI ranks only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostShare {
    pub host: String,
    /// MPI ranks on the host (distinct ranks of its workers), in order.
    pub ranks: Vec<u32>,
    pub workers: u32,
    pub bytes: u64,
    /// Sum of the host's worker rates.
    pub max_sar_bytes_per_s: f64,
    /// The host's bytes over its slowest worker's time.
    pub min_sar_bytes_per_s: f64,
    /// The host's bytes over the time from its first worker's open to its last worker's close
    /// (IOR's figure for the host alone; None in results stored before iolab measured it).
    #[serde(default)]
    pub agg_bytes_per_s: Option<f64>,
    /// The same of ops: the host's ops and, over them, its op rates (metadata phases).
    #[serde(default)]
    pub ops: u64,
    #[serde(default)]
    pub max_sar_ops_per_s: f64,
    #[serde(default)]
    pub min_sar_ops_per_s: f64,
}

/// The hosts of `workers`, in host order (by their lowest rank: a read reordered across hosts
/// lists them as its write does), else in order of their first worker; empty when no worker
/// says where it ran (threads and processes of one host).
pub fn host_shares(workers: &[WorkerResult]) -> Vec<HostShare> {
    // Each host's share, its slowest worker's time and its workers' span (None once one lacks
    // a start), found by name in one pass over the workers.
    let mut out: Vec<(HostShare, u64, Option<Span>)> = vec![];
    let mut index: HashMap<&str, usize> = HashMap::new();
    for w in workers {
        let Some(host) = w.host.as_deref() else { continue };
        let i = *index.entry(host).or_insert_with(|| {
            let share = HostShare {
                host: host.to_string(),
                ranks: vec![],
                workers: 0,
                bytes: 0,
                max_sar_bytes_per_s: 0.0,
                min_sar_bytes_per_s: 0.0,
                agg_bytes_per_s: None,
                ops: 0,
                max_sar_ops_per_s: 0.0,
                min_sar_ops_per_s: 0.0,
            };
            out.push((share, 0, Some(Span::default())));
            out.len() - 1
        });
        let (h, slowest, span) = &mut out[i];
        // A rank's workers come one after another; any others are merged below.
        if let Some(r) = w.rank
            && h.ranks.last() != Some(&r)
        {
            h.ranks.push(r);
        }
        h.workers += 1;
        h.bytes += w.bytes;
        h.max_sar_bytes_per_s += w.bytes_per_s;
        h.ops += w.ops;
        h.max_sar_ops_per_s += crate::stats::individual_rate(w.ops, w.time_ns);
        *slowest = (*slowest).max(w.time_ns);
        *span = span.take().and_then(|mut s| {
            s.add(&Moments {
                bytes: w.bytes,
                ops: w.ops,
                start_ns: w.start_offset_ns.get()?,
                end_ns: w.start_offset_ns.get()? + w.time_ns,
                open_ns: w.open_ns,
                close_ns: w.close_ns,
            });
            Some(s)
        });
    }
    let mut shares: Vec<HostShare> = out
        .into_iter()
        .map(|(mut h, slowest, span)| {
            h.ranks.sort_unstable();
            h.ranks.dedup();
            h.min_sar_bytes_per_s = crate::stats::individual_rate(h.bytes, slowest);
            h.agg_bytes_per_s = span.and_then(|s| s.agg_bytes_per_s());
            h.min_sar_ops_per_s = crate::stats::individual_rate(h.ops, slowest);
            h
        })
        .collect();
    // Stable: hosts without ranks keep their order.
    shares.sort_by_key(|h| h.ranks.first().copied().unwrap_or(u32::MAX));
    // Collected in the place of the larger per-host tuples: no room kept beyond the shares.
    shares.shrink_to_fit();
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(rank: u32, host: &str, bytes: u64, time_ns: u64) -> WorkerResult {
        let mut r: WorkerResult = serde_json::from_value(serde_json::json!({
            "worker": rank, "bytes": bytes, "ops": 1, "time_ns": time_ns, "sync_ns": 0,
            "sync_calls": 0, "open_ns": 0, "close_ns": 0,
            "bytes_per_s": bytes as f64 / (time_ns as f64 / 1e9),
            "latency_ns": {"p50": 0, "p90": 0, "p99": 0, "p999": 0, "max": 0, "mean": 0.0},
            "latency_histogram_ns": []
        }))
        .unwrap();
        r.rank = Some(rank);
        r.host = Some(host.into());
        r
    }

    #[test]
    fn hosts_add_up_their_workers() {
        let ws = [
            w(0, "h1", 1_000_000, 1_000_000_000),
            w(2, "h2", 2_000_000, 500_000_000),
            w(1, "h1", 3_000_000, 2_000_000_000),
        ];
        let h = host_shares(&ws);
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0].host.as_str(), h[0].ranks.clone(), h[0].workers, h[0].bytes),
            ("h1", vec![0, 1], 2, 4_000_000)
        );
        assert!((h[0].max_sar_bytes_per_s - 2_500_000.0).abs() < 1e-6, "{}", h[0].max_sar_bytes_per_s);
        assert!((h[0].min_sar_bytes_per_s - 2_000_000.0).abs() < 1e-6, "{}", h[0].min_sar_bytes_per_s);
        assert_eq!((h[1].host.as_str(), h[1].workers, h[1].bytes), ("h2", 1, 2_000_000));
        assert!((h[1].max_sar_bytes_per_s - 4_000_000.0).abs() < 1e-6);
        assert_eq!(h[0].agg_bytes_per_s, None, "no start offsets: stored before iolab measured them");
        // With starts on the phase's clock: h1's workers ran from 0 to 1 s and from 0.5 s to
        // 2.5 s (opens of 0), so 4 MB in 2.5 s; h2's alone, 2 MB in 0.5 s.
        let mut ws = ws.to_vec();
        (ws[0].start_offset_ns, ws[1].start_offset_ns, ws[2].start_offset_ns) = (
            crate::results::timing::StartOffset::at(0),
            crate::results::timing::StartOffset::at(100),
            crate::results::timing::StartOffset::at(500_000_000),
        );
        let h = host_shares(&ws);
        assert!((h[0].agg_bytes_per_s.unwrap() - 1_600_000.0).abs() < 1e-6, "{:?}", h[0].agg_bytes_per_s);
        assert!((h[1].agg_bytes_per_s.unwrap() - 4_000_000.0).abs() < 1e-6, "{:?}", h[1].agg_bytes_per_s);
        // Workers listed from another host first (a reordered read): hosts still in rank order.
        let h = host_shares(&[ws[1].clone(), ws[0].clone(), ws[2].clone()]);
        let order: Vec<&str> = h.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(order, ["h1", "h2"]);
        let mut plain = ws[0].clone();
        plain.host = None;
        assert!(host_shares(&[plain]).is_empty());
    }

    #[test]
    fn a_rank_is_listed_once_however_its_workers_come() {
        // Two workers on rank 0, apart: the host lists rank 0 once.
        let ws = [w(0, "h1", 1, 10), w(1, "h1", 1, 10), w(0, "h1", 1, 10), w(1, "h1", 1, 10)];
        let h = host_shares(&ws);
        assert_eq!((h[0].ranks.clone(), h[0].workers), (vec![0, 1], 4));
    }
}
