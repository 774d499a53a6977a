//! Resolves the parameters of layouts and launching (files, round-robin, striping, launcher,
//! start, latency) and checks every phase's workers and round-robin width against the file
//! set, so that a plan can always be built from a resolved spec.

use crate::error::{Error, Result};
use crate::experiment::{Params, ResolveEnv};
use crate::spec::{LatencyMode, Launcher, Layout, PiecesMode, Spec, StartMode};
use crate::units::{fmt_size, fmt_size_spec};

/// The resolved layout and launch parameters.
pub(super) struct Access {
    pub files: u32,
    pub round_robin: u32,
    pub segments: u32,
    pub stripe_unit_bytes: Option<u64>,
    pub stripe_count: Option<u32>,
    pub pieces: PiecesMode,
    pub launcher: Launcher,
    pub start: StartMode,
    pub latency: LatencyMode,
}

/// Default stripe unit of the striped layouts (Lustre's default stripe size).
pub const DEFAULT_STRIPE_UNIT: u64 = 1 << 20;
/// Stripe units are multiples of this, so every piece can be stamped and sent with O_DIRECT.
pub const STRIPE_UNIT_ALIGN: u64 = 512;

fn count(key: &str, v: &str, max: u64) -> Result<u32> {
    let n: u64 = v.trim().parse().map_err(|_| Error::spec(key, v, "expected a whole number"))?;
    if n == 0 || n > max {
        return Err(Error::spec(key, v, format!("must be between 1 and {max}")));
    }
    Ok(n as u32)
}

/// A `key=N` phase modifier (`workers=4`), between 1 and `max`.
pub(super) fn phase_count(item: &str, key: &str, v: &str, max: u64) -> Result<u32> {
    match v.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n as u32),
        _ => Err(Error::spec("ops", item, format!("{key} must be a whole number between 1 and {max}"))),
    }
}

pub(super) fn resolve_access(params: &Params, layout: Layout, workers: u32, ndirs: usize) -> Result<Access> {
    let get = |k: &str| params.one(k);
    // With servers, the targets are the server ranks.
    let serving = get("servers").is_some_and(|v| !matches!(v.trim(), "0" | "none"));
    let ndirs =
        get("servers").and_then(|v| v.trim().parse::<usize>().ok()).filter(|&n| n > 0).unwrap_or(ndirs);
    let files_given = get("files").map(|v| count("files", v, 1_000_000)).transpose()?;
    let per_worker = get("files_per_worker").map(|v| count("files_per_worker", v, 1_000_000)).transpose()?;
    if !layout.per_worker_files() {
        for (key, given) in [("files", files_given), ("files_per_worker", per_worker)] {
            if let Some(n) = given {
                return Err(Error::spec(
                    key,
                    n,
                    format!(
                        "layout {} has one shared file; a file set is for file-per-worker and striped-per-worker",
                        layout.name()
                    ),
                ));
            }
        }
    }
    let (files, rr_default) = match (files_given, per_worker) {
        (Some(_), Some(k)) => {
            return Err(Error::spec("files_per_worker", k, "give files or files_per_worker, not both"));
        }
        (Some(n), None) => (n, 1),
        (None, Some(k)) => {
            let n = k as u64 * workers as u64;
            if n > 1_000_000 {
                return Err(Error::spec("files_per_worker", k, "more than 1000000 files in all"));
            }
            (n as u32, k)
        }
        (None, None) => (if layout.per_worker_files() { workers } else { 1 }, 1),
    };
    let round_robin = match get("round_robin") {
        Some(v) => count("round_robin", v, 1_000_000)?,
        None => rr_default,
    };

    let segments = match get("segments") {
        None => 1,
        Some(v) => {
            let s = count("segments", v, u32::MAX as u64)?;
            if s > 1 && !matches!(layout, Layout::Shared | Layout::FilePerWorker) {
                let why = format!(
                    "segments lay out one shared file as IOR does (layout shared), or a file per worker (layout file-per-worker, IOR's -F); layout {} has {}",
                    layout.name(),
                    if layout.per_worker_files() { "striped files" } else { "a layout of its own" }
                );
                return Err(Error::spec("segments", v, why));
            }
            s
        }
    };
    let (stripe_unit_bytes, stripe_count) = if layout.striped() {
        let unit = match get("stripe_unit") {
            Some(v) => {
                let u = crate::units::parse_abs_size(v).map_err(|e| Error::spec("stripe_unit", v, e.0))?;
                if u == 0 || u % STRIPE_UNIT_ALIGN != 0 {
                    return Err(Error::spec(
                        "stripe_unit",
                        v,
                        format!(
                            "must be a positive multiple of {STRIPE_UNIT_ALIGN} bytes: {} would do",
                            crate::units::nearest_multiples(u, STRIPE_UNIT_ALIGN)
                        ),
                    ));
                }
                u
            }
            None => DEFAULT_STRIPE_UNIT,
        };
        let n = match get("stripe_count") {
            Some(v) => {
                let n = count("stripe_count", v, 4096)?;
                if n as usize > ndirs {
                    let what = if serving {
                        "server(s)"
                    } else {
                        "target dir(s) given (dirs / targets; a dir may repeat)"
                    };
                    return Err(Error::spec("stripe_count", v, format!("only {ndirs} {what}")));
                }
                n
            }
            None => ndirs as u32,
        };
        (Some(unit), Some(n))
    } else {
        // Ignored by the other layouts, so that a sweep over `layout` can keep them.
        (None, None)
    };

    let world = crate::launch::world();
    let launcher_s =
        get("launcher").unwrap_or(if world.is_some_and(|w| w.size > 1) { "mpi" } else { "thread" });
    let launcher = Launcher::parse(launcher_s).ok_or_else(|| {
        let names: Vec<&str> = Launcher::ALL.iter().map(|l| l.name()).collect();
        let (last, rest) = names.split_last().expect("launchers");
        Error::spec("launcher", launcher_s, format!("expected {} or {last}", rest.join(", ")))
    })?;
    super::ranks::check_world(launcher, workers, world.map(|w| w.size), serving)?;
    let start = match get("start").unwrap_or("barrier") {
        "barrier" => StartMode::Barrier,
        "free" => StartMode::Free,
        other => return Err(Error::spec("start", other, "expected barrier or free")),
    };
    let pieces = match get("pieces").unwrap_or("serial") {
        "serial" => PiecesMode::Serial,
        "parallel" => PiecesMode::Parallel,
        other => return Err(Error::spec("pieces", other, "expected serial or parallel")),
    };
    let latency = match get("latency").unwrap_or("histogram") {
        "histogram" => LatencyMode::Histogram,
        "trace" => LatencyMode::Trace,
        "off" => LatencyMode::Off,
        other => return Err(Error::spec("latency", other, "expected off, histogram or trace")),
    };
    Ok(Access {
        files,
        round_robin,
        segments,
        stripe_unit_bytes,
        stripe_count,
        pieces,
        launcher,
        start,
        latency,
    })
}

/// The most pieces of one block issued together (the io_uring batch of one block).
pub const MAX_PIECES: u64 = 4096;

/// `pieces = parallel` on a striped layout needs an engine that issues a block's pieces
/// together (and contiguous memory, whose pieces lie end to end).
fn check_pieces(spec: &Spec) -> Result<()> {
    if spec.pieces != PiecesMode::Parallel || !spec.layout.striped() {
        return Ok(());
    }
    let why = if !crate::worker::registry::find(&spec.engine).is_some_and(|e| e.def.caps.parallel_pieces) {
        format!(
            "engine {} issues a block's pieces one at a time; parallel pieces are built for engine psync",
            spec.engine
        )
    } else if spec.mem_len_bytes.is_some() {
        "parallel pieces need contiguous memory (no mem_len/mem_stride)".to_string()
    } else if let Some(n) = spec.stripe_unit_bytes.map(|u| spec.bs_bytes / u).filter(|&n| n > MAX_PIECES) {
        format!(
            "a block of {n} stripe units is {n} pieces at once; at most {MAX_PIECES} (a larger stripe_unit or a smaller bs)"
        )
    } else if let (None, Err(reason)) = (&spec.servers, crate::engine::uring::probe()) {
        format!("parallel pieces go through io_uring: {reason}")
    } else {
        return Ok(());
    };
    Err(Error::spec("pieces", "parallel", why))
}

/// IOR's segments: each worker's `size` splits into whole blocks of whole ops, and every phase
/// has the run's workers on the run's layout (in a shared file a worker's blocks are its place
/// in every segment; in its own file they follow each other, as IOR's -F lays them).
fn check_segments(spec: &Spec) -> Result<()> {
    let s = spec.segments as u64;
    if s == 1 {
        return Ok(());
    }
    let unit = s.saturating_mul(spec.bs_bytes);
    if spec.size_bytes % unit != 0 {
        return Err(Error::spec(
            "size",
            fmt_size_spec(spec.size_bytes),
            format!(
                "with {s} segments each worker's size must be {s} whole blocks of whole ops (a multiple of segments x bs = {}): {} would do",
                fmt_size(unit),
                crate::units::nearest_multiples(spec.size_bytes, unit)
            ),
        ));
    }
    if let Some(ph) = spec
        .phases
        .iter()
        .find(|p| p.workers.is_some_and(|w| w != spec.workers) || p.layout.is_some_and(|l| l != spec.layout))
    {
        return Err(Error::spec(
            "ops",
            &ph.name,
            format!(
                "with segments, every phase has the run's workers on the run's layout ({}: each worker's blocks are its place in every segment)",
                spec.layout.name()
            ),
        ));
    }
    Ok(())
}

/// The most bytes a file, a repetition's data or a run's kept data may hold: file offsets
/// (off_t) are signed 64-bit numbers, and keeping every figure below 2^63 leaves room for the
/// sums and margins computed from them.
pub const MAX_BYTES: u64 = i64::MAX as u64;

/// `a x b` for the figure `what`, or a refusal naming `field`: never a wrapped small number.
fn times(field: &str, value: &str, what: &str, a: u64, b: u64) -> Result<u64> {
    match a.checked_mul(b) {
        Some(n) if n <= MAX_BYTES => Ok(n),
        Some(n) if b == 1 => Err(Error::spec(
            field,
            value,
            format!("{what} = {}, more than a 64-bit file offset reaches (8 EiB)", fmt_size(n)),
        )),
        Some(n) => Err(Error::spec(
            field,
            value,
            format!(
                "{what} = {} x {b} = {}, more than a 64-bit file offset reaches (8 EiB)",
                fmt_size(a),
                fmt_size(n)
            ),
        )),
        None => Err(Error::spec(field, value, format!("{what} = {} x {b} overflows 64 bits", fmt_size(a)))),
    }
}

/// Refuses sizes that, multiplied out, leave 64 bits: a file (size, or size x workers for the
/// shared file), a repetition's data (size x files), the data kept over all repetitions
/// (`keep`: x reps), and a stripe's width (stripe_unit x stripe_count). Every later figure
/// (offsets, block counts, free-space needs and their margin) then fits.
fn check_totals(spec: &Spec) -> Result<()> {
    let size = fmt_size_spec(spec.size_bytes);
    let data = if spec.layout.per_worker_files() {
        times("size", &size, "a file (size)", spec.size_bytes, 1)?;
        times("size", &size, "the run's total (size x files)", spec.size_bytes, spec.file_count() as u64)?
    } else {
        times("size", &size, "the shared file (size x workers)", spec.size_bytes, spec.workers as u64)?
    };
    if spec.keep {
        times(
            "reps",
            &spec.reps.to_string(),
            "with keep, the kept data (run's total x reps)",
            data,
            spec.reps as u64,
        )?;
    }
    if let (Some(unit), Some(count)) = (spec.stripe_unit_bytes, spec.stripe_count) {
        times(
            "stripe_unit",
            &fmt_size_spec(unit),
            "a stripe (stripe_unit x stripe_count)",
            unit,
            count as u64,
        )?;
    }
    Ok(())
}

/// Checks what needs the whole spec: sizes multiplied out ([`check_totals`]), stripe geometry
/// against bs, and each phase's workers, round-robin width and layout against the file set.
pub(super) fn check(spec: &Spec, _env: &ResolveEnv) -> Result<()> {
    check_totals(spec)?;
    let bs = spec.bs_bytes;
    if let Some(unit) = spec.stripe_unit_bytes {
        if bs % unit != 0 && unit % bs != 0 {
            return Err(Error::spec(
                "stripe_unit",
                fmt_size(unit),
                format!(
                    "bs ({}) must be a multiple or a divisor of the stripe unit, so each op is whole stripe units or lies in one",
                    fmt_size(bs)
                ),
            ));
        }
        if spec.direct {
            let piece = bs.min(unit);
            let align =
                spec.dirs.iter().map(|d| crate::env::host::direct_io_alignment(d)).max().unwrap_or(4096);
            if piece % align != 0 {
                return Err(Error::spec(
                    "stripe_unit",
                    fmt_size(unit),
                    format!(
                        "O_DIRECT needs every piece ({piece} bytes) to be a multiple of {align} bytes: a stripe unit of {} would do",
                        crate::units::nearest_multiples(unit, align)
                    ),
                ));
            }
        }
    }
    check_pieces(spec)?;
    check_segments(spec)?;
    let files = spec.file_count() as u64;
    // Fits: check_totals bounded size x workers.
    let shared_blocks = spec.size_bytes.saturating_mul(spec.workers as u64) / bs;
    for ph in &spec.phases {
        let w = spec.phase_workers(ph) as u64;
        let rr = spec.phase_round_robin(ph) as u64;
        let layout = spec.phase_layout(ph);
        // The field to blame: the phase if it set the value itself, else the run's key.
        let field =
            |own: bool, key: &'static str| if own { ("ops", ph.name.clone()) } else { (key, String::new()) };
        if layout != spec.layout {
            let same_file = |l: Layout| matches!(l, Layout::Shared | Layout::SharedStrided);
            if !(same_file(layout) && same_file(spec.layout)) {
                return Err(Error::spec(
                    "ops",
                    &ph.name,
                    format!(
                        "a phase may only switch between shared and shared-strided (the same file); this run's files are {}",
                        spec.layout.name()
                    ),
                ));
            }
        }
        if let Some(n) = ph.files {
            if !layout.per_worker_files() || n as u64 > files {
                let why = format!(
                    "files={n}: the phase's files are the first N of the set ({files} of layout {})",
                    layout.name()
                );
                return Err(Error::spec("ops", &ph.name, why));
            }
        }
        let files = ph.files.map_or(files, u64::from);
        if layout.per_worker_files() {
            if w > files {
                let (f, v) = field(ph.workers.is_some(), "files");
                let v = if v.is_empty() { files.to_string() } else { v };
                return Err(Error::spec(
                    f,
                    v,
                    format!(
                        "phase `{}` has {w} workers but the file set has {files} file(s); under {} every worker needs its own file (raise files or files_per_worker)",
                        ph.name,
                        layout.name()
                    ),
                ));
            }
            let most = files.div_ceil(w);
            if rr > most {
                let (f, v) = field(ph.round_robin.is_some(), "round_robin");
                let v = if v.is_empty() { rr.to_string() } else { v };
                return Err(Error::spec(
                    f,
                    v,
                    format!(
                        "round_robin {rr} in phase `{}`: its {w} worker(s) have at most {most} file(s) each ({files} files)",
                        ph.name
                    ),
                ));
            }
        } else {
            if rr > 1 {
                let (f, v) = field(ph.round_robin.is_some(), "round_robin");
                let v = if v.is_empty() { rr.to_string() } else { v };
                return Err(Error::spec(
                    f,
                    v,
                    format!("round-robin visits several files; layout {} has one file", layout.name()),
                ));
            }
            if w > shared_blocks {
                let (f, v) = field(ph.workers.is_some(), "workers");
                let v = if v.is_empty() { w.to_string() } else { v };
                return Err(Error::spec(
                    f,
                    v,
                    format!(
                        "phase `{}`: {w} workers but the shared file has only {shared_blocks} blocks",
                        ph.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::resolve;
    use super::*;
    use crate::spec::OpKind;

    use crate::experiment::testing::env;

    fn params(pairs: &[(&str, &str)]) -> Params {
        crate::experiment::testing::params(pairs, ',')
    }

    fn err(pairs: &[(&str, &str)]) -> (String, String, String) {
        match resolve(&params(pairs), &env()) {
            Err(Error::Spec { field, value, reason }) => (field, value, reason),
            other => panic!("expected a spec error, got {other:?}"),
        }
    }

    #[test]
    fn phase_modifiers_set_workers_round_robin_and_layout() {
        let s = resolve(
            &params(&[
                ("files", "8"),
                ("ops", "write:workers=4:round_robin=2:cold,read:workers=2:reverse,read:rr=4:order=random"),
            ]),
            &env(),
        )
        .unwrap();
        assert_eq!(s.files, 8);
        assert_eq!((s.phases[0].workers, s.phases[0].round_robin), (Some(4), Some(2)));
        assert_eq!(s.phase_workers(&s.phases[2]), 1);
        assert_eq!(s.phase_round_robin(&s.phases[2]), 4);
        assert_eq!(s.phases[2].order, crate::spec::Order::Random);
        assert_eq!(s.phases[1].op, OpKind::Read);
        let s =
            resolve(&params(&[("layout", "shared"), ("ops", "write,read:layout=shared-strided")]), &env())
                .unwrap();
        assert_eq!(s.phase_layout(&s.phases[1]), Layout::SharedStrided);
    }

    #[test]
    fn toml_phase_tables_take_the_same_keys() {
        let p = Params::from_toml(
            r#"
            files = 8
            [[phases]]
            op = "write"
            workers = 4
            [[phases]]
            cache = "cold"
            round_robin = 2
            op = "read"
            workers = 2
            "#,
        )
        .unwrap();
        let s = resolve(&p, &env()).unwrap();
        assert_eq!(s.phases[0].name, "write:workers=4");
        assert_eq!(s.phases[1].name, "read:workers=2:round_robin=2:cold");
        assert_eq!(s.phases[1].round_robin, Some(2));
        assert!(Params::from_toml("[[phases]]\nop = \"read\"\nthreads = 2\n").is_err());
    }

    #[test]
    fn files_per_worker_is_files_and_round_robin() {
        let s = resolve(&params(&[("workers", "3"), ("files_per_worker", "2")]), &env()).unwrap();
        assert_eq!((s.files, s.round_robin), (6, 2));
        let s =
            resolve(&params(&[("workers", "3"), ("files_per_worker", "2"), ("round_robin", "1")]), &env())
                .unwrap();
        assert_eq!(s.round_robin, 1);
    }

    #[test]
    fn impossible_combinations_are_refused_by_name() {
        let e = err(&[("files", "2"), ("ops", "write:workers=3")]);
        assert_eq!((e.0.as_str(), e.1.as_str()), ("ops", "write:workers=3"));
        assert!(e.2.contains("3 workers but the file set has 2 file(s)"), "{}", e.2);
        assert_eq!(err(&[("files", "2"), ("workers", "3")]).0, "files");
        assert_eq!(err(&[("layout", "shared"), ("files", "3")]).0, "files");
        assert_eq!(err(&[("files", "3"), ("files_per_worker", "1")]).0, "files_per_worker");
        assert_eq!(err(&[("files", "4"), ("round_robin", "5")]).0, "round_robin");
        assert_eq!(err(&[("files", "4"), ("ops", "read:workers=2:round_robin=3")]).0, "ops");
        assert_eq!(err(&[("layout", "shared"), ("round_robin", "2")]).0, "round_robin");
        assert_eq!(err(&[("layout", "file-per-worker"), ("ops", "write,read:layout=shared")]).0, "ops");
        assert_eq!(err(&[("ops", "read:workers=0")]).0, "ops");
        assert_eq!(err(&[("ops", "read:threads=2")]).0, "ops");
        // Stripe keys are ignored by layouts that do not stripe (a sweep over layouts keeps them).
        let s = resolve(&params(&[("stripe_unit", "4KiB"), ("stripe_count", "9")]), &env()).unwrap();
        assert_eq!((s.stripe_unit_bytes, s.stripe_count), (None, None));
        let e = err(&[("layout", "striped"), ("stripe_unit", "12KiB"), ("bs", "16KiB"), ("size", "64KiB")]);
        assert_eq!(e.0, "stripe_unit");
        assert!(e.2.contains("multiple or a divisor"), "{}", e.2);
        assert_eq!(err(&[("layout", "striped"), ("stripe_unit", "1000")]).0, "stripe_unit");
        assert_eq!(err(&[("layout", "striped"), ("stripe_count", "2")]).0, "stripe_count");
        assert_eq!(err(&[("launcher", "fork")]).0, "launcher");
        assert_eq!(err(&[("start", "later")]).0, "start");
        assert_eq!(
            err(&[("pieces", "both")]),
            ("pieces".into(), "both".into(), "expected serial or parallel".into())
        );
        // Parallel pieces: psync only, contiguous memory; a layout without stripes ignores it.
        let striped = [("layout", "striped"), ("dirs", ".,."), ("stripe_unit", "4KiB"), ("bs", "8KiB")];
        let with =
            |more: &[(&'static str, &'static str)]| [&striped[..], &[("pieces", "parallel")], more].concat();
        let e = err(&with(&[("engine", "vsync")]));
        assert_eq!((e.0.as_str(), e.1.as_str()), ("pieces", "parallel"));
        assert!(e.2.contains("engine vsync issues a block's pieces one at a time"), "{}", e.2);
        let e = err(&with(&[("mem_len", "1KiB"), ("mem_stride", "2KiB")]));
        assert_eq!(
            (e.0.as_str(), e.2.as_str()),
            ("pieces", "parallel pieces need contiguous memory (no mem_len/mem_stride)")
        );
        assert_eq!(resolve(&params(&with(&[])), &env()).unwrap().pieces, PiecesMode::Parallel);
        let e = err(&[&striped[..3], &[("pieces", "parallel"), ("bs", "32MiB"), ("size", "32MiB")]].concat());
        assert_eq!(e.0, "pieces");
        assert!(e.2.contains("a block of 8192 stripe units is 8192 pieces at once; at most 4096"), "{}", e.2);
        let s = resolve(&params(&[("pieces", "parallel"), ("engine", "vsync")]), &env()).unwrap();
        assert_eq!((s.layout, s.pieces), (Layout::FilePerWorker, PiecesMode::Parallel));
        assert_eq!(err(&[("latency", "all")]).0, "latency");
        // Traces stream to the store, so no trace is too long for memory.
        let s = resolve(
            &params(&[("latency", "trace"), ("size", "4GiB"), ("bs", "512"), ("workers", "4")]),
            &env(),
        );
        assert_eq!(s.unwrap().latency, LatencyMode::Trace);
        assert_eq!(resolve(&params(&[("latency", "off")]), &env()).unwrap().latency, LatencyMode::Off);
        assert_eq!(
            err(&[("layout", "shared"), ("size", "8KiB"), ("bs", "4KiB"), ("ops", "read:workers=3")]).0,
            "ops"
        );
    }

    /// Sizes whose products pass 2^63 are refused by the field at fault, never wrapped to a
    /// small number (2^62 x 4 workers once became "the shared file has only 0 blocks").
    #[test]
    fn sizes_that_overflow_64_bits_are_refused_by_name() {
        let d = std::env::temp_dir().display().to_string();
        let four = format!("{d},{d},{d},{d}");
        for (pairs, field, says) in [
            (
                vec![("size", "18446744073709551615"), ("bs", "1")],
                "size",
                "a file (size) = 16777216.00 TiB, more than a 64-bit file offset reaches (8 EiB)",
            ),
            (
                vec![("size", "9223372036854775808"), ("workers", "2")],
                "size",
                "a file (size) = 8388608 TiB, more than a 64-bit file offset reaches",
            ),
            (
                vec![("size", "4611686018427387904"), ("workers", "2")],
                "size",
                "the run's total (size x files) = 4194304 TiB x 2 = 8388608 TiB, more than a 64-bit",
            ),
            (
                vec![("size", "4611686018427387904"), ("workers", "4"), ("layout", "shared")],
                "size",
                "the shared file (size x workers) = 4194304 TiB x 4 overflows 64 bits",
            ),
            (
                vec![("size", "1TiB"), ("files", "1000000"), ("keep", "true"), ("reps", "100000")],
                "reps",
                "with keep, the kept data (run's total x reps) = 1000000 TiB x 100000 overflows 64 bits",
            ),
            (
                vec![("layout", "striped"), ("dirs", &four), ("stripe_unit", "4611686018427387904")],
                "stripe_unit",
                "a stripe (stripe_unit x stripe_count) = 4194304 TiB x 4 overflows 64 bits",
            ),
            (
                vec![("layout", "striped"), ("stripe_count", "18446744073709551615")],
                "stripe_count",
                "between 1 and 4096",
            ),
            (
                vec![("mem_len", "4096"), ("mem_stride", "18446744073709551615")],
                "mem_stride",
                "each worker would need more than 16 EiB of memory",
            ),
        ] {
            let e = err(&pairs);
            assert_eq!(e.0, field, "{pairs:?}: {e:?}");
            assert!(e.2.contains(says), "{pairs:?}: {}", e.2);
        }
        // Just below the limits: the plan's figures are exact.
        let s = resolve(&params(&[("size", "2097152TiB"), ("workers", "2"), ("layout", "shared")]), &env())
            .unwrap();
        assert_eq!(crate::plan::plan(&s).disk_bytes(), 1 << 62);
        // 2^62 one-byte blocks over 4 workers: each worker's segment is found without overflow.
        let s = resolve(
            &params(&[("size", "1048576TiB"), ("bs", "1"), ("workers", "4"), ("layout", "shared")]),
            &env(),
        )
        .unwrap();
        let p = crate::plan::plan(&s);
        let w = &p.phases[0].workers;
        assert_eq!(w.iter().map(|w| w.ops.bytes()).sum::<u64>(), 1 << 62);
        assert_eq!(w[3].ops.op(w[3].ops.n_ops - 1).offset, (1 << 62) - 1);
    }

    #[test]
    fn targets_is_an_alias_of_dirs_and_may_repeat() {
        let d = std::env::temp_dir().display().to_string();
        let s = resolve(&params(&[("targets", &format!("{d},{d}")), ("layout", "striped")]), &env()).unwrap();
        assert_eq!(s.dirs.len(), 2);
        assert_eq!(s.stripe_count, Some(2));
        assert_eq!(s.stripe_unit_bytes, Some(DEFAULT_STRIPE_UNIT));
    }

    #[test]
    fn new_keys_round_trip_through_params() {
        let d = std::env::temp_dir().display().to_string();
        let s = resolve(
            &params(&[
                ("dirs", &format!("{d},{d},{d}")),
                ("layout", "striped-per-worker"),
                ("workers", "2"),
                ("files", "4"),
                ("round_robin", "2"),
                ("stripe_unit", "64KiB"),
                ("stripe_count", "2"),
                ("launcher", "process"),
                ("start", "free"),
                ("latency", "trace"),
                ("ops", "write:workers=4:round_robin=1,read"),
            ]),
            &env(),
        )
        .unwrap();
        assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
    }
}
