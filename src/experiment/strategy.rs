//! The strategy parameters of a spec (`strategy`, `iters`, `comptime`): the defaults a strategy
//! gives the other parameters (two workers, one write phase, `size` = iters x bs, the layout its
//! files need), and every combination that makes no sense refused by name before any I/O.

use crate::error::{Error, Result};
use crate::experiment::Params;
use crate::spec::Strategy;
use crate::spec::{Layout, OpKind, Order, Spec, StartMode, SyncCall, SyncPolicy};
use crate::units::{fmt_size, parse_size};

use crate::strategy::mechanism::MECHANISMS;
/// Workers a strategy may have.
pub const MAX_WORKERS: u64 = 256;
/// The smallest part: room for the tag every part carries (docs/strategies.md).
pub const MIN_BS: u64 = 16;

fn get<'a>(p: &'a Params, k: &str) -> Option<&'a str> {
    p.0.get(k).and_then(|v| v.first()).map(String::as_str)
}

fn strategy_of(p: &Params) -> Result<Option<Strategy>> {
    match get(p, "strategy").map(str::trim) {
        None | Some("") | Some("none") => Ok(None),
        Some(s) => Strategy::parse(s).map(Some).ok_or_else(|| {
            Error::spec("strategy", s, format!("expected one of {}", Strategy::NAMES.join(", ")))
        }),
    }
}

/// The layout a strategy's files need: a file per worker (S1A, S1B) or one file holding the
/// iterations' parts interleaved (S2, S3, S5).
pub fn layout_of(s: Strategy) -> Layout {
    if s.own_files() { Layout::FilePerWorker } else { Layout::SharedStrided }
}

/// With a strategy, the parameters with its defaults filled in (`workers` 2, `ops` write,
/// `layout` as it needs, `size` = iters x bs or `iters` = size / bs); None without one.
pub fn with_defaults(params: &Params, ram_bytes: u64) -> Result<Option<Params>> {
    let Some(strategy) = strategy_of(params)? else {
        for key in ["iters", "comptime"] {
            if let Some(v) = get(params, key) {
                return Err(Error::spec(
                    key,
                    v,
                    "only means something with a strategy (--strategy S1A|S1B|S2|S3|S5, on MPI ranks also S2DT|S3DT|MPI-IO)",
                ));
            }
        }
        return Ok(None);
    };
    let mut p = params.clone();
    if get(&p, "workers").is_none() {
        p.set_one("workers", 2)?;
    }
    if !p.0.contains_key("ops") {
        p.set("ops", vec!["write".into()])?;
    }
    // The MPI-IO strategy writes through MPI-IO, collectively as the study did.
    if strategy == Strategy::MpiIo {
        if get(&p, "engine").is_none() {
            p.set_one("engine", "mpiio")?;
        }
        if get(&p, "engine") == Some("mpiio") && get(&p, "mpiio").is_none() {
            p.set_one("mpiio", "collective")?;
        }
    }
    let layout = layout_of(strategy);
    match get(&p, "layout") {
        None => p.set_one("layout", layout.name())?,
        Some(l) if Layout::parse(l) == Some(layout) => {}
        Some(l) => {
            return Err(Error::spec(
                "layout",
                l,
                format!(
                    "strategy {} writes {}; its layout is {}",
                    strategy.name(),
                    if strategy.own_files() {
                        "a file per worker"
                    } else {
                        "one file, the iterations' parts interleaved"
                    },
                    layout.name()
                ),
            ));
        }
    }
    let bs_s = get(&p, "bs").unwrap_or("1MiB").to_string();
    let Ok(bs) = parse_size(&bs_s, ram_bytes) else { return Ok(Some(p)) }; // resolve names bs
    if bs == 0 {
        return Ok(Some(p));
    }
    let iters = match get(&p, "iters") {
        Some(v) => Some(parse_iters(v)?),
        None => None,
    };
    match (iters, get(&p, "size").map(str::to_string)) {
        (Some(n), None) => {
            let size = n.checked_mul(bs).ok_or_else(|| Error::spec("iters", n, "iters x bs is too large"))?;
            p.set_one("size", size)?;
        }
        (None, Some(size_s)) => {
            if let Ok(size) = parse_size(&size_s, ram_bytes)
                && size > 0
                && size % bs == 0
            {
                p.set_one("iters", size / bs)?;
            }
        }
        (Some(n), Some(size_s)) => {
            let size = parse_size(&size_s, ram_bytes).map_err(|e| Error::spec("size", &size_s, e.0))?;
            if n.checked_mul(bs) != Some(size) {
                return Err(Error::spec(
                    "size",
                    &size_s,
                    format!(
                        "with a strategy, size is what one compute worker produces: iters x bs = {n} x {} = {}; give iters or size, not both",
                        fmt_size(bs),
                        n.checked_mul(bs).map(fmt_size).unwrap_or_else(|| "too large".into())
                    ),
                ));
            }
        }
        (None, None) => {
            let size = parse_size(crate::spec::DEFAULT_SIZE, ram_bytes).unwrap_or(512 << 20);
            if size % bs == 0 {
                p.set_one("iters", size / bs)?;
            }
        }
    }
    Ok(Some(p))
}

fn parse_iters(v: &str) -> Result<u64> {
    let n: u64 = v.trim().parse().map_err(|_| Error::spec("iters", v, "expected a whole number"))?;
    if n == 0 || n > u32::MAX as u64 {
        return Err(Error::spec("iters", v, format!("must be between 1 and {}", u32::MAX)));
    }
    Ok(n)
}

/// Checks a resolved spec against its strategy and records the strategy in it. `params` are
/// those [`with_defaults`] returned.
pub fn resolve_into(params: &Params, spec: &mut Spec) -> Result<()> {
    let Some(strategy) = strategy_of(params)? else { return Ok(()) };
    let name = strategy.name();
    let iters = parse_iters(get(params, "iters").unwrap_or("0"))?;
    let comptime_s = get(params, "comptime").unwrap_or("0");
    let comptime_ns =
        crate::units::parse_duration_ns(comptime_s).map_err(|e| Error::spec("comptime", comptime_s, e.0))?;
    if comptime_ns > 365 * 86_400 * 1_000_000_000 {
        return Err(Error::spec("comptime", comptime_s, "longer than a year"));
    }
    if spec.phases.len() != 1 || spec.phases[0].op != OpKind::Write {
        let names: Vec<&str> = spec.phases.iter().map(|p| p.name.as_str()).collect();
        return Err(Error::spec(
            "ops",
            names.join(","),
            "a strategy is one write phase (the study's loop writes; it never reads back)",
        ));
    }
    let ph = &spec.phases[0];
    if ph.workers.is_some() || ph.round_robin.is_some() || ph.layout.is_some() {
        return Err(Error::spec(
            "ops",
            &ph.name,
            "a strategy's phase takes no workers, round_robin or layout modifier",
        ));
    }
    if ph.order != Order::Seq || spec.order != Order::Seq {
        return Err(Error::spec("order", ph.order.name(), "a strategy writes its iterations in order (seq)"));
    }
    for key in ["files", "files_per_worker", "round_robin"] {
        if let Some(v) = get(params, key) {
            return Err(Error::spec(
                key,
                v,
                format!(
                    "strategy {name} decides its files: {}",
                    if strategy.own_files() { "one per worker" } else { "one" }
                ),
            ));
        }
    }
    if spec.start != StartMode::Barrier {
        return Err(Error::spec(
            "start",
            "free",
            "a strategy's workers start together at a barrier (the study's template)",
        ));
    }
    if strategy.mpi_only() && spec.launcher != crate::spec::Launcher::Mpi {
        return Err(Error::spec(
            "strategy",
            name,
            format!(
                "{} needs MPI ranks: run it as `mpirun -np {} iolab ...` with a build that has the mpi feature (docs/mpi.md)",
                if strategy.datatypes() { "sending an MPI derived datatype" } else { "MPI-IO" },
                spec.workers
            ),
        ));
    }
    if strategy == Strategy::MpiIo && spec.engine != "mpiio" {
        return Err(Error::spec("engine", &spec.engine, "strategy MPI-IO writes with engine = mpiio"));
    }
    if strategy != Strategy::MpiIo && !MECHANISMS.contains(&spec.engine.as_str()) {
        return Err(Error::spec(
            "engine",
            &spec.engine,
            format!("a strategy's writers use a synchronous engine that writes: {}", MECHANISMS.join(", ")),
        ));
    }
    if spec.verify {
        return Err(Error::spec(
            "verify",
            "true",
            "strategy data carries its own tags (iteration, producer); verification headers are not built for it",
        ));
    }
    if let Some(r) = &spec.reuse {
        return Err(Error::spec("reuse", r, "a strategy writes new files"));
    }
    let w = spec.workers as u64;
    let workers_err = |why: &str| Err(Error::spec("workers", w, format!("strategy {name} {why}")));
    match strategy {
        Strategy::S3 | Strategy::S3DT if w != 2 => {
            return workers_err("has exactly 2 workers: one computes, one writes");
        }
        Strategy::S2 | Strategy::S2DT | Strategy::S5 if w < 2 => {
            return workers_err("needs at least 2 workers: the writer and a worker that hands it its buffer");
        }
        _ if w > MAX_WORKERS => return workers_err(&format!("takes at most {MAX_WORKERS} workers")),
        _ => {}
    }
    if spec.bs_bytes < MIN_BS {
        return Err(Error::spec(
            "bs",
            spec.bs_bytes,
            format!("a strategy's parts carry a {MIN_BS}-byte tag; bs must be at least that"),
        ));
    }
    if strategy == Strategy::S5 && spec.sync == SyncPolicy::None {
        return Err(Error::spec(
            "sync",
            "none",
            "S5 is S2 with a sync thread; with sync = none it has nothing to do (use every:SIZE, each or end)",
        ));
    }
    let op_bytes = if strategy.own_files() { spec.bs_bytes } else { w * spec.bs_bytes };
    // Bounded by resolution (size x workers stays below 2^63); saturate rather than wrap.
    let file_bytes = iters.saturating_mul(op_bytes);
    // The mmap engine msyncs a window with uncommitted writes as it unmaps it; those commits
    // happen inside the engine's data call, unseen by the strategy (and outside S1B's token).
    // Windows aligned on the strategy's own syncs are always clean when unmapped.
    if spec.engine == "mmap"
        && spec.sync_call == SyncCall::Msync
        && strategy != Strategy::S5
        && let Some(win) = spec.window_bytes.filter(|&win| win < file_bytes)
    {
        let why = |key: &str, v: String, reason: String| Err(Error::spec(key, v, reason));
        match spec.sync {
            SyncPolicy::Every(n) if n % op_bytes != 0 => {
                return why(
                    "sync",
                    spec.sync.label(),
                    format!(
                        "with mmap windows and msync, the sync size must be a multiple of the bytes a writer writes per iteration ({}), so every window is committed by the strategy's own syncs: every:{} would do",
                        fmt_size(op_bytes),
                        crate::units::nearest_multiples(n, op_bytes).replace(" or ", " or every:")
                    ),
                );
            }
            SyncPolicy::Every(n) if win % n != 0 => {
                return why(
                    "window",
                    fmt_size(win),
                    format!(
                        "with msync, a window must be a multiple of the sync size ({}), so every window is committed by the strategy's own syncs before it is unmapped: {} would do",
                        fmt_size(n),
                        crate::units::nearest_multiples(win, n)
                    ),
                );
            }
            SyncPolicy::Each if win % op_bytes != 0 => {
                return why(
                    "window",
                    fmt_size(win),
                    format!(
                        "a window must be a multiple of the bytes a writer writes per iteration ({}): {} would do",
                        fmt_size(op_bytes),
                        crate::units::nearest_multiples(win, op_bytes)
                    ),
                );
            }
            SyncPolicy::End => {
                return why(
                    "sync",
                    "end".into(),
                    format!(
                        "with windows smaller than the file ({}), msync and sync = end, the mmap engine would commit each window as it unmaps it, unseen by the strategy; use sync = every:SIZE",
                        fmt_size(file_bytes)
                    ),
                );
            }
            _ => {}
        }
    }
    spec.strategy = Some(strategy);
    spec.iters = Some(iters);
    spec.comptime_ns = Some(comptime_ns);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::experiment::{Params, resolve};
    use crate::spec::{Layout, Spec};
    use crate::strategy::Strategy;

    use crate::experiment::testing::env;

    fn params(pairs: &[(&str, &str)]) -> Params {
        crate::experiment::testing::params(pairs, ';')
    }

    fn ok(pairs: &[(&str, &str)]) -> Spec {
        resolve(&params(pairs), &env()).unwrap()
    }

    fn err(pairs: &[(&str, &str)]) -> (String, String) {
        match resolve(&params(pairs), &env()) {
            Err(Error::Spec { field, reason, .. }) => (field, reason),
            other => panic!("expected a spec error for {pairs:?}, got {other:?}"),
        }
    }

    #[test]
    fn a_strategy_sets_its_defaults() {
        let s = ok(&[("strategy", "S1A"), ("iters", "64"), ("bs", "64KiB"), ("comptime", "2s")]);
        assert_eq!(s.strategy, Some(Strategy::S1A));
        assert_eq!((s.workers, s.iters, s.comptime_ns), (2, Some(64), Some(2_000_000_000)));
        assert_eq!(s.size_bytes, 64 * 65536);
        assert_eq!(s.layout, Layout::FilePerWorker);
        assert_eq!(s.phases.len(), 1);
        let s = ok(&[("strategy", "S3"), ("size", "4MiB"), ("bs", "64KiB")]);
        assert_eq!((s.iters, s.comptime_ns, s.layout), (Some(64), Some(0), Layout::SharedStrided));
        let s = ok(&[("strategy", "s2"), ("workers", "4"), ("bs", "4KiB"), ("iters", "3")]);
        assert_eq!((s.workers, s.size_bytes), (4, 12288));
        // The spec round-trips.
        for s in [
            ok(&[
                ("strategy", "S5"),
                ("iters", "8"),
                ("bs", "4KiB"),
                ("comptime", "250ms"),
                ("sync", "every:8KiB"),
            ]),
            ok(&[
                ("strategy", "S1B"),
                ("iters", "8"),
                ("bs", "4KiB"),
                ("engine", "mmap"),
                ("window", "64KiB"),
                ("sync", "every:16KiB"),
            ]),
        ] {
            assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
        }
        // Without a strategy nothing changes.
        assert_eq!(ok(&[]).strategy, None);
    }

    #[test]
    fn nonsense_is_refused_by_name() {
        let base = [("strategy", "S2"), ("iters", "8"), ("bs", "4KiB")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v: Vec<(&str, &str)> = base.to_vec();
            v.extend_from_slice(extra);
            err(&v).0
        };
        assert_eq!(err(&[("iters", "8")]).0, "iters");
        assert_eq!(err(&[("comptime", "1s")]).0, "comptime");
        assert_eq!(err(&[("strategy", "S4")]).0, "strategy");
        assert_eq!(with(&[("comptime", "soon")]), "comptime");
        assert_eq!(with(&[("ops", "write;read")]), "ops");
        assert_eq!(with(&[("ops", "rewrite")]), "ops");
        assert_eq!(with(&[("order", "random")]), "order");
        assert_eq!(with(&[("layout", "file-per-worker")]), "layout");
        assert_eq!(with(&[("engine", "uring")]), "engine");
        assert_eq!(with(&[("engine", "null")]), "engine");
        assert_eq!(with(&[("verify", "true")]), "verify");
        assert_eq!(with(&[("start", "free")]), "start");
        assert_eq!(with(&[("workers", "1")]), "workers");
        assert_eq!(with(&[("size", "1MiB")]), "size");
        assert_eq!(with(&[("files", "2")]), "files");
        assert_eq!(err(&[("strategy", "S3"), ("workers", "3"), ("iters", "8"), ("bs", "4KiB")]).0, "workers");
        assert_eq!(err(&[("strategy", "S5"), ("iters", "8"), ("bs", "4KiB"), ("sync", "none")]).0, "sync");
        assert_eq!(err(&[("strategy", "S1A"), ("iters", "8"), ("bs", "8")]).0, "bs");
        assert_eq!(err(&[("strategy", "S1A"), ("iters", "0"), ("bs", "4KiB")]).0, "iters");
        // mmap windows must be committed by the strategy's own syncs.
        let mm = |sync: &'static str, window: &'static str| {
            let p = [
                ("strategy", "S2"),
                ("iters", "64"),
                ("bs", "4KiB"),
                ("engine", "mmap"),
                ("sync", sync),
                ("window", window),
            ];
            err(&p).0
        };
        // S2's writer writes 8 KiB per iteration.
        assert_eq!(mm("every:12KiB", "48KiB"), "sync");
        assert_eq!(mm("every:16KiB", "40KiB"), "window");
        assert_eq!(mm("end", "64KiB"), "sync");
        ok(&[
            ("strategy", "S2"),
            ("iters", "64"),
            ("bs", "4KiB"),
            ("engine", "mmap"),
            ("sync", "every:16KiB"),
            ("window", "48KiB"),
        ]);
        assert_eq!(mm("every:64KiB", "32KiB"), "window", "the engine's own rule: window >= sync size");
    }
}
