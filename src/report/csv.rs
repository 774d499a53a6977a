//! CSV export: one row per worker per repetition per phase per point (a failed repetition
//! without workers gets one row), then one per I/O-server rank, run-level figures repeated on
//! each row; warm-up runs too, marked in the `warmup` column. Units in the names. Columns are
//! only ever added at the end, so a script reading them by position keeps working.

use std::io::Write;

use super::{Exporter, write_err};
use crate::error::Result;
use crate::results::{ExperimentResult, Status};

pub struct Csv;

const HEADER: &[&str] = &[
    "experiment_id",
    "point",
    "params",
    "phase",
    "rep",
    "run_id",
    "status",
    "cache_policy",
    "resident_fraction",
    "total_bytes",
    "ops",
    "time_ns",
    "max_sar_bytes_per_s",
    "min_sar_bytes_per_s",
    "avg_individual_bytes_per_s",
    "prealloc_ns",
    "worker",
    "worker_bytes",
    "worker_ops",
    "worker_time_ns",
    "worker_sync_ns",
    "worker_sync_calls",
    "worker_bytes_per_s",
    "latency_p50_ns",
    "latency_p90_ns",
    "latency_p99_ns",
    "latency_p999_ns",
    "latency_max_ns",
    "worker_max_inflight",
    "worker_calls",
    "flags",
    "error",
    "warmup",
    "settle_ns",
    "prime_memory_bytes",
    "load_avg_1m_start",
    "load_avg_1m_end",
    "device_read_bytes",
    "device_write_bytes",
    "worker_open_ns",
    "worker_close_ns",
    "syncs_in_flight_max",
    "worker_role",
    "worker_compute_ns",
    "worker_compute_target_ns",
    "worker_write_ns",
    "worker_handoff_ns",
    "worker_wait_ns",
    "worker_cpu_ns",
    "worker_runq_ns",
    "worker_rank",
    "worker_host",
    "host_ranks",
    "host_max_sar_bytes_per_s",
    "steady_bytes_per_s",
    "server",
    "server_store",
    "server_files",
    "server_requests",
    "server_write_bytes",
    "server_read_bytes",
    "server_time_ns",
    "server_busy_ns",
    "server_disk_ns",
    "server_net_ns",
    "server_resident_fraction",
    "server_device_read_bytes",
    "server_device_write_bytes",
    "ops_per_s",
    "time_bound",
    "worker_stonewall_ops",
    "agg_bytes_per_s",
    "span_ns",
    "overlap",
    "worker_start_offset_ns",
    "host_agg_bytes_per_s",
    "max_sar_ops_per_s",
    "min_sar_ops_per_s",
    "worker_ops_per_s",
    "host_max_sar_ops_per_s",
    "namespace_names",
    "namespace_cached_at_most",
    "namespace_found",
    "agg_ops_per_s",
    "steady_ops_per_s",
    "read_ops",
    "write_ops",
    "read_bytes_per_s",
    "write_bytes_per_s",
    "read_ops_per_s",
    "write_ops_per_s",
    "read_latency_p50_ns",
    "read_latency_p99_ns",
    "write_latency_p50_ns",
    "write_latency_p99_ns",
    "response_latency_p50_ns",
    "response_latency_p99_ns",
    "response_latency_max_ns",
    "behind_max_late_ns",
    "behind_ns",
    "late_ops",
    "block_sizes",
    "again_fraction",
    "hot10_share_ops",
    "worker_read_ops",
    "worker_read_bytes",
    "worker_write_ops",
    "worker_write_bytes",
    "worker_again_bytes",
    "worker_late_ops",
    "worker_behind_max_late_ns",
    "slurm_job_id",
    "slurm_step_id",
    "slurm_cluster",
    "slurm_partition",
    "slurm_node_list",
    "slurm_tasks_per_node",
];

/// The Slurm job's columns (the experiment's: the same on every row; empty outside a job).
fn slurm_cols(exp: &ExperimentResult) -> [String; 6] {
    let Some(j) = &exp.host.slurm else { return Default::default() };
    let o = |x: &Option<String>| x.clone().unwrap_or_default();
    [j.job_id.clone(), o(&j.step_id), o(&j.cluster), o(&j.partition), o(&j.node_list), o(&j.tasks_per_node)]
}

/// The steady rate of a repetition whose series counts `of` (bytes, or a metadata phase's ops).
fn steady_of(r: &crate::results::Repetition, of: crate::units::RateUnit) -> String {
    let rate = r.rate.as_ref().filter(|x| x.series.of == of);
    rate.and_then(|x| x.steady).map(|s| s.bytes_per_s.to_string()).unwrap_or_default()
}

/// The workload columns of a repetition and one of its workers (the last ones; empty where a
/// phase has no mix, docs/json.md "Workload apart").
fn mix_cols(r: &crate::results::Repetition, w: Option<&crate::results::WorkerResult>) -> Vec<String> {
    let s = |x: Option<String>| x.unwrap_or_default();
    let m = r.mix.as_deref();
    let (rd, wr) = (m.and_then(|m| m.read.as_ref()), m.and_then(|m| m.write.as_ref()));
    let class = |c: Option<&crate::results::mix::ClassFigures>,
                 f: fn(&crate::results::mix::ClassFigures) -> String| s(c.map(f));
    let resp = m.and_then(|m| m.response_latency_ns);
    let behind = m.and_then(|m| m.behind);
    let sizes = m.map(|m| {
        m.block_sizes
            .iter()
            .map(|b| format!("{}={}", b.bs_bytes, b.figures.ops))
            .collect::<Vec<_>>()
            .join(";")
    });
    let wm = w.and_then(|w| w.mix.as_deref());
    let mut v = vec![
        class(rd, |c| c.ops.to_string()),
        class(wr, |c| c.ops.to_string()),
        class(rd, |c| c.bytes_per_s.to_string()),
        class(wr, |c| c.bytes_per_s.to_string()),
        class(rd, |c| c.ops_per_s.to_string()),
        class(wr, |c| c.ops_per_s.to_string()),
        class(rd, |c| c.latency_ns.p50.to_string()),
        class(rd, |c| c.latency_ns.p99.to_string()),
        class(wr, |c| c.latency_ns.p50.to_string()),
        class(wr, |c| c.latency_ns.p99.to_string()),
        s(resp.map(|l| l.p50.to_string())),
        s(resp.map(|l| l.p99.to_string())),
        s(resp.map(|l| l.max.to_string())),
        s(behind.map(|b| b.max_late_ns.to_string())),
        s(behind.map(|b| b.behind_ns.to_string())),
        s(behind.map(|b| b.late_ops.to_string())),
        s(sizes),
        s(r.again_fraction.map(|a| a.to_string())),
        s(m.and_then(|m| m.hot10_share_ops).map(|h| h.to_string())),
    ];
    v.extend([
        s(wm.map(|m| m.read_ops.to_string())),
        s(wm.map(|m| m.read_bytes.to_string())),
        s(wm.map(|m| m.write_ops.to_string())),
        s(wm.map(|m| m.write_bytes.to_string())),
        s(wm.map(|m| m.again_bytes.to_string())),
        s(wm.and_then(|m| m.behind).map(|b| b.late_ops.to_string())),
        s(wm.and_then(|m| m.behind).map(|b| b.max_ns.to_string())),
    ]);
    v
}

/// The op-rate and namespace columns of a repetition and one of its workers (the last ones).
fn ops_cols(r: &crate::results::Repetition, w: Option<&crate::results::WorkerResult>) -> [String; 9] {
    let host = w.and_then(|w| {
        r.hosts.iter().find(|h| w.host.is_some() && Some(h.host.as_str()) == w.host.as_deref())
    });
    let ns = r.namespace.as_ref();
    [
        r.max_sar_ops_per_s.to_string(),
        r.min_sar_ops_per_s.to_string(),
        w.map(|w| w.ops_per_s.to_string()).unwrap_or_default(),
        host.map(|h| h.max_sar_ops_per_s.to_string()).unwrap_or_default(),
        ns.map(|n| n.names.to_string()).unwrap_or_default(),
        ns.and_then(|n| n.cached_at_most).map(|f| f.to_string()).unwrap_or_default(),
        ns.and_then(|n| n.found).map(|f| f.to_string()).unwrap_or_default(),
        r.agg_ops_per_s.map(|x| x.to_string()).unwrap_or_default(),
        steady_of(r, crate::units::RateUnit::Ops),
    ]
}

/// The server columns, empty on a worker's row.
const SERVER_COLS: usize = 13;

/// A server rank's row after the run-level columns: the worker columns empty but for its role
/// (`server`), rank and host; then its own figures.
fn server_row(x: &crate::results::ServerResult, in_flight: &str, steady: &str) -> Vec<String> {
    // worker_open_ns, worker_close_ns: empty; syncs_in_flight_max (the run's); worker_role:
    // server; its times: empty; worker_rank, worker_host; host_ranks, host_max_sar: empty.
    let mut v = vec![String::new(), String::new(), in_flight.to_string()];
    v.push("server".into());
    v.extend(vec![String::new(); 7]);
    v.extend([x.rank.to_string(), x.host.clone(), String::new(), String::new(), steady.to_string()]);
    v.extend([
        x.server.to_string(),
        x.store.clone(),
        x.files.to_string(),
        x.requests.to_string(),
        x.write_bytes.to_string(),
        x.read_bytes.to_string(),
        x.time_ns.to_string(),
        x.busy_ns.to_string(),
        x.disk_ns.to_string(),
        x.net_ns.to_string(),
        x.resident_fraction.map(|f| f.to_string()).unwrap_or_default(),
        x.device_read_bytes.to_string(),
        x.device_write_bytes.to_string(),
    ]);
    v
}

/// The MPI columns of a worker: its rank and host, the ranks on that host and the host's
/// aggregate rate (empty without MPI).
fn host_cols(r: &crate::results::Repetition, w: Option<&crate::results::WorkerResult>) -> [String; 4] {
    let Some(w) = w.filter(|w| w.host.is_some()) else { return Default::default() };
    let h = r.hosts.iter().find(|h| Some(h.host.as_str()) == w.host.as_deref());
    [
        w.rank.map(|n| n.to_string()).unwrap_or_default(),
        w.host.as_deref().unwrap_or_default().to_string(),
        h.map(|h| h.ranks.len().to_string()).unwrap_or_default(),
        h.map(|h| h.max_sar_bytes_per_s.to_string()).unwrap_or_default(),
    ]
}

/// The strategy columns of a worker (empty for plain workers).
fn role_cols(w: Option<&crate::results::WorkerResult>) -> Vec<String> {
    let mut v = vec![w.and_then(|w| w.role).map_or("", |r| r.name()).to_string()];
    let t = w.and_then(|w| w.times_ns.as_deref());
    let f =
        |g: fn(&crate::strategy::RoleTimes) -> u64| t.as_ref().map(|t| g(t).to_string()).unwrap_or_default();
    v.extend([
        f(|t| t.compute),
        f(|t| t.compute_target),
        f(|t| t.write),
        f(|t| t.handoff),
        f(|t| t.wait),
        f(|t| t.cpu),
        f(|t| t.runq),
    ]);
    v
}

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        let mut w = ::csv::Writer::from_writer(out);
        w.write_record(HEADER).map_err(write_err)?;
        let slurm = slurm_cols(exp);
        for (pi, point) in exp.points.iter().enumerate() {
            let params = point.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
            for ph in &point.phases {
                let all =
                    ph.repetitions.iter().map(|r| (false, r)).chain(ph.warmups.iter().map(|r| (true, r)));
                for (warmup, r) in all {
                    let status = match r.status {
                        Status::Complete => "complete",
                        Status::Failed => "failed",
                        Status::Interrupted => "interrupted",
                    };
                    let run: Vec<String> = vec![
                        exp.experiment_id.clone(),
                        pi.to_string(),
                        params.clone(),
                        ph.name.clone(),
                        r.rep.to_string(),
                        r.run_id.clone(),
                        status.into(),
                        ph.cache.label().into(),
                        r.resident_fraction.to_string(),
                        r.total_bytes.to_string(),
                        r.ops.to_string(),
                        r.time_ns.to_string(),
                        r.max_sar_bytes_per_s.to_string(),
                        r.min_sar_bytes_per_s.to_string(),
                        r.avg_individual_bytes_per_s.to_string(),
                        r.prealloc_ns.to_string(),
                    ];
                    let e = &r.env;
                    let tail = [
                        r.flags.join("; "),
                        r.error.clone().unwrap_or_default(),
                        warmup.to_string(),
                        e.settle_ns.to_string(),
                        e.prime_memory_bytes.to_string(),
                        e.load_avg_1m_start.to_string(),
                        e.load_avg_1m_end.to_string(),
                        e.devices.iter().map(|d| d.read_bytes).sum::<u64>().to_string(),
                        e.devices.iter().map(|d| d.write_bytes).sum::<u64>().to_string(),
                    ];
                    let in_flight = r.syncs_in_flight_max.map(|n| n.to_string()).unwrap_or_default();
                    let opt = |x: Option<String>| x.unwrap_or_default();
                    let span = [
                        opt(r.agg_bytes_per_s.map(|x| x.to_string())),
                        opt(r.span_ns.map(|x| x.to_string())),
                        opt(r.overlap.map(|x| x.to_string())),
                    ];
                    // A worker's start on the phase's clock, and its host's agg (MPI ranks).
                    let timing = |wk: Option<&crate::results::WorkerResult>| {
                        let host = wk.and_then(|wk| {
                            r.hosts.iter().find(|h| Some(h.host.as_str()) == wk.host.as_deref())
                        });
                        span.iter().cloned().chain([
                            opt(wk.and_then(|wk| wk.start_offset_ns.get()).map(|x| x.to_string())),
                            opt(host.and_then(|h| h.agg_bytes_per_s).map(|x| x.to_string())),
                        ])
                    };
                    let steady = steady_of(r, crate::units::RateUnit::Bytes);
                    // IOPS and the phase's time bound; then the worker's ops at the stonewall.
                    let bound = ph.time_bound.map(|b| b.label()).unwrap_or_default();
                    let last = |wk: Option<&crate::results::WorkerResult>| {
                        let wall = wk.and_then(|w| w.stonewall_ops).map(|n| n.to_string());
                        [r.ops_per_s.to_string(), bound.clone(), wall.unwrap_or_default()]
                    };
                    if r.workers.is_empty() {
                        let blanks = vec![String::new(); 14];
                        let mut after = vec![String::new(), String::new(), in_flight.clone()];
                        after.extend(role_cols(None));
                        after.extend(host_cols(r, None));
                        after.push(steady.clone());
                        after.extend(vec![String::new(); SERVER_COLS]);
                        after.extend(last(None));
                        after.extend(timing(None));
                        after.extend(ops_cols(r, None));
                        after.extend(mix_cols(r, None));
                        w.write_record(run.iter().chain(&blanks).chain(&tail).chain(&after).chain(&slurm))
                            .map_err(write_err)?;
                    }
                    for wk in r.workers.try_iter() {
                        let wk = wk.map_err(write_err)?;
                        let l = &wk.latency_ns;
                        let cols = [
                            wk.worker.to_string(),
                            wk.bytes.to_string(),
                            wk.ops.to_string(),
                            wk.time_ns.to_string(),
                            wk.sync_ns.to_string(),
                            wk.sync_calls.to_string(),
                            wk.bytes_per_s.to_string(),
                            l.p50.to_string(),
                            l.p90.to_string(),
                            l.p99.to_string(),
                            l.p999.to_string(),
                            l.max.to_string(),
                            wk.max_inflight.to_string(),
                            wk.calls.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";"),
                        ];
                        let mut after =
                            vec![wk.open_ns.to_string(), wk.close_ns.to_string(), in_flight.clone()];
                        after.extend(role_cols(Some(&wk)));
                        after.extend(host_cols(r, Some(&wk)));
                        after.push(steady.clone());
                        after.extend(vec![String::new(); SERVER_COLS]);
                        after.extend(last(Some(&wk)));
                        after.extend(timing(Some(&wk)));
                        after.extend(ops_cols(r, Some(&wk)));
                        after.extend(mix_cols(r, Some(&wk)));
                        w.write_record(run.iter().chain(&cols).chain(&tail).chain(&after).chain(&slurm))
                            .map_err(write_err)?;
                    }
                    let blanks = vec![String::new(); 14];
                    for x in &r.servers {
                        let mut after = server_row(x, &in_flight, &steady);
                        after.extend(last(None));
                        after.extend(timing(None));
                        after.extend(ops_cols(r, None));
                        after.extend(mix_cols(r, None));
                        w.write_record(run.iter().chain(&blanks).chain(&tail).chain(&after).chain(&slurm))
                            .map_err(write_err)?;
                    }
                }
            }
        }
        w.flush().map_err(write_err)
    }
}

#[cfg(test)]
mod tests {
    /// A rate reads back as the same number from the CSV (Rust's shortest form) and from the
    /// JSON: serde_json parses floats exactly (`float_roundtrip`), not to within an ulp.
    #[test]
    fn a_rate_reads_back_the_same_from_csv_and_json() {
        for x in [246_897_929.409_969_66_f64, 1.0 / 3.0, 9_876_543.210_987_6, 2.5e-7] {
            let json: f64 = serde_json::from_str(&serde_json::to_string(&x).unwrap()).unwrap();
            let csv: f64 = x.to_string().parse().unwrap();
            assert_eq!((json.to_bits(), csv.to_bits()), (x.to_bits(), x.to_bits()), "{x}");
        }
    }
}
