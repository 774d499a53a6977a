//! The per-server section under the terminal table of a run with I/O-server ranks: for each
//! phase and server, where it ran, what it held, the requests it answered and the bytes each
//! way, and where its time went (busy answering, within it disk calls and moving bytes to
//! clients), mean over complete repetitions.

use crate::results::{ExperimentResult, ServerResult};
use crate::spec::Spec;
use crate::units::{fmt_ns, fmt_size};

use super::text_table;

/// The section (empty when no repetition had servers).
pub fn render_servers(exp: &ExperimentResult) -> String {
    let mut rows = vec![];
    for (name, _, same) in super::across_complete_reps(exp, |r| &r.servers, |a, b| a.server == b.server) {
        let s = same[0];
        let n = same.len() as f64;
        let mean = |f: fn(&ServerResult) -> u64| (same.iter().map(|x| f(x) as f64).sum::<f64>() / n) as u64;
        let time = mean(|x| x.time_ns).max(1);
        let busy = mean(|x| x.busy_ns);
        let cache = same
            .iter()
            .filter_map(|x| x.resident_fraction)
            .reduce(f64::max)
            .map_or("-".to_string(), |f| format!("{:.1}%", f * 100.0));
        rows.push(vec![
            name,
            s.server.to_string(),
            s.host.clone(),
            s.rank.to_string(),
            s.store.clone(),
            mean(|x| x.requests).to_string(),
            fmt_size(mean(|x| x.write_bytes)),
            fmt_size(mean(|x| x.read_bytes)),
            format!("{:.0}%", busy as f64 / time as f64 * 100.0),
            fmt_ns(mean(|x| x.disk_ns)),
            fmt_ns(mean(|x| x.net_ns)),
            fmt_size(mean(|x| x.device_read_bytes) + mean(|x| x.device_write_bytes)),
            cache,
        ]);
    }
    if rows.is_empty() {
        return String::new();
    }
    let head = [
        "phase", "server", "host", "rank", "store", "requests", "written", "read", "busy", "disk", "net",
        "device", "cache",
    ];
    let mut s = "\n".to_string();
    s += &text_table(&head, &rows, &[5, 6, 7, 8, 9, 10, 11]);
    s += "per server (I/O-server ranks): requests answered; bytes clients wrote to it and read from it; busy: share of \
          the phase spent answering (the rest waiting for requests), of which disk: in pread/pwrite/fsync and net: moving \
          the bytes to and from clients; device: what its directory's device read and wrote meanwhile (/proc/diskstats on \
          its host); cache: its files' pages in memory as the phase began (mincore, on its host); mean over complete \
          repetitions\n";
    s
}

/// Where file target `t` of a plan lives: its target directory, or with servers the server's
/// directory on its host.
pub fn target_text(spec: &Spec, t: usize) -> String {
    match &spec.servers {
        Some(s) => format!("server {t}'s {}", crate::text::escape_path(&s.dir)),
        None => crate::text::escape_path(&spec.dirs[t]),
    }
}

/// Where an MPI run with servers puts its roles (`iolab plan` under mpirun): the world's ranks
/// by host (`WorldInfo::placement`), `clients` client ranks first, the last `servers` ranks
/// serving.
pub fn placement_text(by_host: &[(String, Vec<u32>)], clients: u32, servers: u32) -> String {
    let n: u32 = by_host.iter().map(|(_, r)| r.len() as u32).sum();
    let ranks = |rs: Vec<u32>| {
        format!("rank{} {}", if rs.len() == 1 { "" } else { "s" }, super::hosts::rank_ranges(&rs))
    };
    let mut s = format!(
        "placement: {n} MPI ranks: clients on {} (one worker each), I/O servers on {} (server j on rank {} + j)\n",
        ranks((0..clients).collect()),
        ranks((n - servers..n).collect()),
        n - servers
    );
    for (h, rs) in by_host {
        let part = |what: &str, keep: &dyn Fn(u32) -> bool| {
            let rs: Vec<u32> = rs.iter().copied().filter(|&r| keep(r)).collect();
            if rs.is_empty() { None } else { Some(format!("{what} {}", super::hosts::rank_ranges(&rs))) }
        };
        let parts: Vec<String> = [part("clients", &|r| r < clients), part("servers", &|r| r >= n - servers)]
            .into_iter()
            .flatten()
            .collect();
        let parts = if parts.is_empty() { "idle".to_string() } else { parts.join(", ") };
        s += &format!("  {h}: {parts}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn clients_first_servers_last() {
        let by_host: Vec<(String, Vec<u32>)> =
            [("h1", vec![0, 1]), ("h2", vec![2, 3]), ("h3", vec![4, 5])].map(|(h, r)| (h.into(), r)).into();
        assert_eq!(
            super::placement_text(&by_host, 1, 4),
            "placement: 6 MPI ranks: clients on rank 0 (one worker each), I/O servers on ranks 2-5 (server j on rank 2 + j)\n  h1: clients 0\n  h2: servers 2-3\n  h3: servers 4-5\n"
        );
    }
}
