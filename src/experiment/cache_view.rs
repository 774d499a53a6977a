//! The cache state of a phase as a result states it: how it was set (on this host, or by the
//! I/O-server ranks on theirs) and the check of it over every host's view of the files.

use crate::results::CacheCheck;
use crate::spec::{CachePolicy, OpKind, Spec};
use crate::target::cache;
use crate::worker::WorkerSample;

/// The cache check over every host's view: MPI ranks on other hosts than the coordinator's
/// measured their own files before the phase; the worst view counts (the most resident for
/// cold, the least for warm).
pub fn with_remote_views(policy: CachePolicy, own: f64, samples: &[WorkerSample], real: bool) -> CacheCheck {
    let views = samples.iter().filter_map(|s| s.place.as_ref().and_then(|p| p.resident));
    let fraction = match policy {
        CachePolicy::Warm => views.fold(own, f64::min),
        _ => views.fold(own, f64::max),
    };
    CacheCheck::judge(policy, fraction, real)
}

/// The cache check of a phase on I/O-server ranks: each server measured its own files on its
/// host before the phase; the worst view counts. Without files (the memory store, a blast)
/// there is no cache to set, and nothing is flagged.
pub fn on_servers(policy: CachePolicy, servers: &[crate::worker::ServerSample]) -> CacheCheck {
    let views: Vec<f64> = servers.iter().filter_map(|s| s.resident_fraction).collect();
    if views.is_empty() {
        return CacheCheck::default();
    }
    let fraction = match policy {
        CachePolicy::Warm => views.iter().copied().fold(1.0, f64::min),
        _ => views.iter().copied().fold(0.0, f64::max),
    };
    CacheCheck::judge(policy, fraction, true)
}

/// The one labelling path of every cold phase, data or metadata: the client caches of the
/// targets' file systems (netfs::client_cache) that its eviction or drop does not reach and
/// that may serve it, in words; None for a phase that is not cold, or when none may. A data
/// cache serves a phase that reads files' data (a read; a metadata phase's read-files of
/// `file_bytes` each) unless it keeps only files smaller than all of them; the daemon of a
/// FUSE file system iolab does not know may keep anything (data, names, attributes), so it
/// may serve any cold phase. `file_bytes`: the smallest data file of the run, or the bytes of
/// each of a metadata phase's files.
pub fn client_cache_not_controlled(
    host: &crate::env::host::HostFacts,
    ph: &crate::spec::Phase,
    file_bytes: u64,
) -> Option<String> {
    let reads_data = ph.op.reads() || ph.op == OpKind::ReadFiles;
    if ph.cache != CachePolicy::Cold || !(reads_data || ph.op.is_metadata()) {
        return None;
    }
    let mut caches: Vec<String> = host
        .targets
        .iter()
        .filter_map(|t| t.client_cache.as_ref().map(|c| (t, c)))
        .filter(|(t, c)| {
            let unknown = t.fs.fuse && t.fs.network.is_none();
            unknown || (reads_data && c.max_file_bytes.is_none_or(|m| file_bytes <= m))
        })
        .map(|(t, c)| format!("{} ({})", c.what, t.fs_name()))
        .collect();
    caches.dedup();
    (!caches.is_empty()).then(|| caches.join("; "))
}

/// A warm metadata phase on a target whose file system client keeps names for less than a phase
/// (netfs::names_not_kept): what it keeps, with the file system's name; None otherwise.
pub fn names_not_kept(host: &crate::env::host::HostFacts, ph: &crate::spec::Phase) -> Option<String> {
    if ph.cache != CachePolicy::Warm || !ph.op.is_metadata() {
        return None;
    }
    let mut notes: Vec<String> = host
        .targets
        .iter()
        .filter_map(|t| crate::env::netfs::names_not_kept(&t.fs).map(|n| format!("{n} ({})", t.fs_name())))
        .collect();
    notes.dedup();
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// A point's phases before any run: each with how its cache is set and, for a cold phase
/// (data or metadata) on a file system whose client cache iolab does not reach, that cache;
/// for a warm metadata phase on one whose client does not keep names, what it keeps.
pub fn phase_results(
    host: &crate::env::host::HostFacts,
    spec: &Spec,
    plan: &crate::plan::RunPlan,
) -> Vec<crate::results::PhaseResult> {
    let smallest = plan.files.iter().map(|f| f.size_bytes).min().unwrap_or(0);
    let item_bytes = spec.md.as_ref().map_or(0, |ns| ns.file_bytes);
    spec.phases
        .iter()
        .map(|ph| {
            let mut method = cache_method(spec, ph);
            let bytes = if ph.op.is_metadata() { item_bytes } else { smallest };
            let not_controlled = client_cache_not_controlled(host, ph, bytes);
            if let Some(c) = &not_controlled {
                method += &format!("; not reached by the eviction: {c}");
            }
            let unkept = names_not_kept(host, ph);
            if let Some(n) = &unkept {
                method += &format!("; the names are not kept: {n}");
            }
            let mut r = crate::results::PhaseResult::new(&ph.name, ph.op, ph.cache, method);
            r.cache.client_cache_not_controlled = not_controlled;
            r.cache.names_not_kept = unkept;
            r.time_bound = spec.phase_bound(ph);
            r
        })
        .collect()
}

/// How a phase's cache state is set, in words: on this host, or with servers on theirs.
pub fn cache_method(spec: &Spec, ph: &crate::spec::Phase) -> String {
    if ph.op.is_metadata() {
        return format!("the namespace: {}", crate::target::ns_cache::method(ph.cache));
    }
    let here = cache::method(ph.cache, spec.direct, spec.drop_caches);
    match &spec.servers {
        None => here,
        Some(_) if ph.op == OpKind::Blast => "no files: bytes counted and dropped by the servers".into(),
        Some(s) if s.store == crate::spec::ServerStore::Memory => {
            "no files: the servers serve from memory (no disk I/O)".into()
        }
        Some(_) => format!("on each server's host: {here}"),
    }
}
