//! The per-host section under the terminal table of an MPI run: for each phase and host, its
//! ranks and workers and the host's aggregate rates, mean over complete repetitions, hosts in
//! the order of their first rank.

use crate::results::{ExperimentResult, HostShare};
use crate::units::{fmt_ops, fmt_rate};

use super::text_table;

/// Ranks as short ranges: `0-3,6`.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = vec![];
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(if i == j { ranks[i].to_string() } else { format!("{}-{}", ranks[i], ranks[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// The section (empty when no repetition ran on MPI ranks).
pub fn render_hosts(exp: &ExperimentResult) -> String {
    let mut rows = vec![];
    let mut md_rows = false;
    for (name, ph, same) in super::across_complete_reps(exp, |r| &r.hosts, |a, b| a.host == b.host) {
        let h = same[0];
        let mean = |f: fn(&HostShare) -> f64| same.iter().map(|x| f(x)).sum::<f64>() / same.len() as f64;
        let agg: Vec<f64> = same.iter().filter_map(|x| x.agg_bytes_per_s).collect();
        // A host whose ranks moved no byte (they only computed) has no rate.
        let moved = same.iter().any(|x| x.bytes > 0);
        let rate = |v: f64, any: bool| if moved && any { fmt_rate(v) } else { "-".to_string() };
        // A metadata phase's rates are ops/s (and it has no agg).
        let md = ph.op.is_metadata();
        md_rows |= md;
        let (agg, max, min) = if md {
            ("-".to_string(), fmt_ops(mean(|x| x.max_sar_ops_per_s)), fmt_ops(mean(|x| x.min_sar_ops_per_s)))
        } else {
            (
                rate(crate::stats::mean(&agg), !agg.is_empty()),
                rate(mean(|x| x.max_sar_bytes_per_s), true),
                rate(mean(|x| x.min_sar_bytes_per_s), true),
            )
        };
        rows.push(vec![name, h.host.clone(), rank_ranges(&h.ranks), h.workers.to_string(), agg, max, min]);
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut s = "\n".to_string();
    s += &text_table(
        &["phase", "host", "ranks", "workers", "agg", "max_SAR", "min_SAR"],
        &rows,
        &[3, 4, 5, 6],
    );
    s += "per host (MPI ranks, in rank order): agg = the host's bytes / its first open to its last close; max_SAR = sum of the host's worker rates, min_SAR = its bytes / its slowest worker's time; MB/s, mean over complete repetitions; - where the host's ranks moved no data\n";
    if md_rows {
        s += "metadata phases: max_SAR and min_SAR of ops, in ops/s\n";
    }
    s
}

/// Where an MPI run's workers go (`iolab plan` under mpirun): the world's ranks by host
/// (`WorldInfo::placement`), `threads` workers per rank (worker i on rank i / threads).
pub fn placement_text(by_host: &[(String, Vec<u32>)], threads: u32) -> String {
    let n = by_host.len();
    let ranks: usize = by_host.iter().map(|(_, r)| r.len()).sum();
    let mut s = format!(
        "placement: {ranks} MPI ranks on {n} host{}, {threads} worker{} per rank (worker i on rank i / {threads})\n",
        if n == 1 { "" } else { "s" },
        if threads == 1 { "" } else { "s" },
    );
    for (h, ranks) in by_host {
        let workers: Vec<u32> = ranks.iter().flat_map(|&r| r * threads..(r + 1) * threads).collect();
        s += &format!("  {h}: ranks {}, workers {}\n", rank_ranges(ranks), rank_ranges(&workers));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_as_ranges() {
        assert_eq!(rank_ranges(&[0, 1, 2, 3]), "0-3");
        assert_eq!(rank_ranges(&[0, 2, 3, 5]), "0,2-3,5");
        assert_eq!(rank_ranges(&[7]), "7");
        assert_eq!(rank_ranges(&[]), "");
    }

    #[test]
    fn placement_by_host() {
        let by_host: Vec<(String, Vec<u32>)> =
            [("h1", vec![0, 1]), ("h2", vec![2, 3]), ("h3", vec![4, 5])].map(|(h, r)| (h.into(), r)).into();
        let t = placement_text(&by_host, 2);
        assert_eq!(
            t,
            "placement: 6 MPI ranks on 3 hosts, 2 workers per rank (worker i on rank i / 2)\n  h1: ranks 0-1, workers 0-3\n  h2: ranks 2-3, workers 4-7\n  h3: ranks 4-5, workers 8-11\n"
        );
    }
}
