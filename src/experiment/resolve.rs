//! Parses and checks raw [`Params`] into a typed, validated [`Spec`]; every error names the
//! parameter and the value at fault.

use std::path::PathBuf;

use super::params::{parse_bool, parse_u64};
use super::phases::parse_phases;
use super::{PARAMS, Params, layout};
use crate::error::{Error, Result};
use crate::experiment::schedule::Interleave;
use crate::spec::*;
use crate::units::{fmt_size, is_ram_relative, parse_size};

/// Facts about the machine that resolution needs (so tests can fix them).
#[derive(Debug, Clone)]
pub struct ResolveEnv {
    pub ram_bytes: u64,
    pub cwd: PathBuf,
}

impl ResolveEnv {
    /// This machine: the memory this process can use ([`crate::env::host::ram_bytes`], 0 if
    /// unknown) and the current directory. An error names a bad $IOLAB_RAM_BYTES.
    pub fn current() -> Result<ResolveEnv> {
        Ok(ResolveEnv {
            ram_bytes: crate::env::host::ram_bytes()?.unwrap_or(0),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        })
    }

    /// This machine, with the memory to defeat stated by the user (`--ram SIZE`) when given.
    pub fn with_ram(ram: Option<&str>) -> Result<ResolveEnv> {
        let mut env = ResolveEnv::current()?;
        if let Some(v) = ram {
            env.ram_bytes = match crate::units::parse_abs_size(v) {
                Ok(0) => return Err(Error::spec("ram", v, "must be positive")),
                Ok(n) => n,
                Err(_) if crate::units::is_ram_relative(v) => {
                    let why = "--ram takes an absolute size (it sets the memory that xRAM sizes are relative to), e.g. --ram 24GiB";
                    return Err(Error::spec("ram", v, why));
                }
                Err(e) => return Err(Error::spec("ram", v, e.0)),
            };
        }
        Ok(env)
    }
}

/// A `size` written relative to memory (`2xRAM`) becomes bytes rounded down to a whole
/// number of blocks, and of stripe units under a striped layout, so that it resolves with any
/// memory size. Returns the parameters with that size in bytes and a note saying what was
/// rounded, or `None` when `size` is not relative to memory. A `bs` or stripe unit that does
/// not parse is left for [`resolve`] to name.
fn round_ram_size(params: &Params, env: &ResolveEnv) -> Result<Option<(Params, Option<String>)>> {
    let Some(v) = params.one("size").filter(|v| is_ram_relative(v)) else { return Ok(None) };
    let bytes = parse_size(v, env.ram_bytes).map_err(|e| Error::spec("size", v, e.0))?;
    let Ok(bs) = parse_size(params.one("bs").unwrap_or("1MiB"), env.ram_bytes) else { return Ok(None) };
    let striped = params.one("layout").and_then(Layout::parse).is_some_and(Layout::striped);
    let stripe_unit = match params.one("stripe_unit") {
        Some(u) => crate::units::parse_abs_size(u).ok(),
        None => Some(layout::DEFAULT_STRIPE_UNIT),
    };
    // bs and the stripe unit divide one another (resolve checks); the larger is a multiple of both.
    let unit = match stripe_unit.filter(|&u| striped && u > 0 && (u % bs.max(1) == 0 || bs % u == 0)) {
        Some(u) => u.max(bs),
        None => bs,
    };
    if unit == 0 {
        return Ok(None);
    }
    let what = if unit == bs { "blocks (bs)" } else { "stripe units" };
    let rounded = bytes / unit * unit;
    if rounded == 0 {
        return Err(Error::spec(
            "size",
            v,
            format!("{} of memory is less than one {} of {what}", fmt_size(bytes), fmt_size(unit)),
        ));
    }
    let note = (rounded != bytes).then(|| {
        format!(
            "size {} = {bytes} bytes (with {} of memory), rounded down to {rounded} bytes ({}), whole {} {what}",
            v.trim(),
            fmt_size(env.ram_bytes),
            fmt_size(rounded),
            fmt_size(unit)
        )
    });
    let mut p = params.clone();
    p.set_one("size", rounded)?;
    Ok(Some((p, note)))
}

/// Resolves parameters into a validated spec; touches only the target dirs (exist, writable).
pub fn resolve(params: &Params, env: &ResolveEnv) -> Result<Spec> {
    resolve_noted(params, env).map(|(spec, _)| spec)
}

/// [`resolve`], with notes on what resolution changed in the values given (a size relative
/// to memory rounded down to whole blocks), for the plan and the preset list to show.
pub fn resolve_noted(params: &Params, env: &ResolveEnv) -> Result<(Spec, Vec<String>)> {
    for key in params.0.keys() {
        if !PARAMS.iter().any(|d| d.key == key) {
            return Err(Error::spec(key, "", "unknown parameter"));
        }
    }
    let rounded = round_ram_size(params, env)?;
    let notes: Vec<String> = rounded.iter().filter_map(|(_, n)| n.clone()).collect();
    let params = rounded.as_ref().map_or(params, |(p, _)| p);
    // A strategy sets defaults of its own (workers, ops, layout, size from iters).
    let with_strategy = crate::experiment::strategy::with_defaults(params, env.ram_bytes)?;
    let params = with_strategy.as_ref().unwrap_or(params);
    let get = |k: &str| params.one(k);
    let size_of = |k: &str, default: &str| -> Result<u64> {
        let v = get(k).unwrap_or(default);
        let n = parse_size(v, env.ram_bytes).map_err(|e| Error::spec(k, v, e.0))?;
        if n == 0 {
            return Err(Error::spec(k, v, "must be positive"));
        }
        Ok(n)
    };

    // Under mpirun, one worker per rank unless told otherwise (with servers: per client rank).
    let serving = super::servers::count(params)?;
    let ranks = (crate::launch::world().map_or(1, |w| w.size) - serving.unwrap_or(0)).to_string();
    let workers = parse_u64("workers", get("workers").unwrap_or(&ranks))?;
    if workers == 0 || workers > 4096 {
        return Err(Error::spec("workers", workers, "must be between 1 and 4096"));
    }
    let size_bytes = size_of("size", DEFAULT_SIZE)?;
    let default_bs = super::workload::default_bs(params);
    let bs_bytes = size_of("bs", &default_bs)?;
    // The values as given, or the defaults taken, for messages.
    let (size_text, bs_text) = (get("size").unwrap_or(DEFAULT_SIZE), get("bs").unwrap_or(&default_bs));
    if bs_bytes > size_bytes {
        return Err(Error::spec("bs", bs_text, super::sizes::bs_above_size(size_bytes, bs_bytes)));
    }
    if size_bytes % bs_bytes != 0 {
        return Err(Error::spec("size", size_text, super::sizes::not_whole_blocks(size_bytes, bs_bytes)));
    }
    if bs_bytes > u32::MAX as u64 {
        return Err(Error::spec("bs", bs_text, "must be below 4 GiB"));
    }

    let layout_s = get("layout").unwrap_or("file-per-worker");
    let layout = Layout::parse(layout_s).ok_or_else(|| {
        Error::spec("layout", layout_s, format!("unknown layout (one of: {})", Layout::NAMES.join(", ")))
    })?;
    let order_s = get("order").unwrap_or("seq");
    let order = Order::parse_checked(order_s).map_err(|e| Error::spec("order", order_s, e))?;
    let cache_s = get("cache").unwrap_or("cold");
    let cache = CachePolicy::parse(cache_s)
        .ok_or_else(|| Error::spec("cache", cache_s, "unknown cache policy (cold, warm, asis)"))?;
    // O_DIRECT bypasses the page cache: no warm read by default.
    let direct_asked = get("direct").is_some_and(|v| matches!(v, "true" | "yes" | "1" | "on"));
    let default_ops: Vec<String> = DEFAULT_OPS
        .iter()
        .filter(|op| !(direct_asked && op.ends_with(":warm")))
        .map(|s| s.to_string())
        .collect();
    let phases = parse_phases(params.0.get("ops").unwrap_or(&default_ops), cache, order)?;

    let engine = get("engine").unwrap_or(super::servers::default_engine(serving)).to_string();
    let engine_def = crate::worker::registry::find(&engine).map(|r| r.def).ok_or_else(|| {
        let names = crate::worker::registry::names().join(", ");
        let why = match engine.as_str() {
            "mpiio" => format!("this iolab was built without MPI (`--features mpi`); engines here: {names}"),
            _ => format!("unknown engine (one of: {names})"),
        };
        Error::spec("engine", &engine, why)
    })?;

    let sync_s = get("sync").unwrap_or("end");
    let sync = SyncPolicy::parse(sync_s).map_err(|e| Error::spec("sync", sync_s, e))?;
    let open_sync = match get("open_sync").unwrap_or("none") {
        "none" => OpenSync::None,
        "sync" | "o_sync" => OpenSync::Sync,
        "dsync" | "o_dsync" => OpenSync::Dsync,
        other => return Err(Error::spec("open_sync", other, "expected none, sync or dsync")),
    };
    let direct = parse_bool("direct", get("direct").unwrap_or("false"))?;
    let prealloc = parse_bool("prealloc", get("prealloc").unwrap_or("false"))?;
    let drop_caches = parse_bool("drop_caches", get("drop_caches").unwrap_or("false"))?;
    let keep = parse_bool("keep", get("keep").unwrap_or("false"))?;
    let verify = parse_bool("verify", get("verify").unwrap_or("false"))?;
    let reps = parse_u64("reps", get("reps").unwrap_or("5"))?;
    if reps == 0 || reps > 100_000 {
        return Err(Error::spec("reps", reps, "must be between 1 and 100000"));
    }
    let seed = parse_u64("seed", get("seed").unwrap_or("1"))?;
    let warmup = parse_u64("warmup", get("warmup").unwrap_or("0"))?;
    if warmup > 1000 {
        return Err(Error::spec("warmup", warmup, "must be between 0 and 1000"));
    }
    let settle_s = get("settle").unwrap_or("0");
    let settle_ns =
        crate::units::parse_duration_ns(settle_s).map_err(|e| Error::spec("settle", settle_s, e.0))?;
    let prime_s = get("prime_memory").unwrap_or("0");
    let prime_memory_bytes =
        parse_size(prime_s, env.ram_bytes).map_err(|e| Error::spec("prime_memory", prime_s, e.0))?;
    if env.ram_bytes > 0 && prime_memory_bytes > env.ram_bytes / 10 * 9 {
        return Err(Error::spec("prime_memory", prime_s, "must stay below 90% of the machine's memory"));
    }
    let interleave_s = get("interleave").unwrap_or("round-robin");
    let interleave =
        Interleave::parse(interleave_s, seed).map_err(|e| Error::spec("interleave", interleave_s, e))?;

    // Directories: exist, are directories, are writable. Relative paths are taken from cwd.
    let dir_values = params.0.get("dirs").cloned().unwrap_or_else(|| vec![".".to_string()]);
    if dir_values.is_empty() {
        return Err(Error::spec("dirs", "", "at least one directory is needed"));
    }
    let allow_device = crate::target::device::resolve_allowed(
        params.0.get("allow_device").map_or(&[][..], |v| v),
        &env.cwd,
    )?;
    let mut dirs = Vec::new();
    for d in &dir_values {
        dirs.push(crate::target::device::check_dir(d, &env.cwd, &allow_device)?);
    }
    if verify {
        if !engine_def.caps.real_io {
            return Err(Error::spec("verify", "true", format!("engine {engine} moves no data to verify")));
        }
        if bs_bytes < crate::plan::verify::MIN_BLOCK {
            return Err(Error::spec(
                "bs",
                bs_text,
                format!(
                    "verify needs blocks of at least {} bytes (for the header)",
                    crate::plan::verify::MIN_BLOCK
                ),
            ));
        }
    }
    let reuse = match get("reuse").map(str::trim).filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => {
            let id = v.strip_prefix(crate::target::workdir::PREFIX).unwrap_or(v);
            if !crate::target::workdir::valid_run_id(id) {
                return Err(Error::spec(
                    "reuse",
                    v,
                    "not a run id (the RUNID of a kept .iolab-RUNID directory)",
                ));
            }
            // (Metadata phases are refused with their own reason, by `metadata`.)
            if let Some(p) = phases.iter().find(|p| p.op != OpKind::Read && !p.op.is_metadata()) {
                return Err(Error::spec(
                    "ops",
                    &p.name,
                    "reuse reads the files of a kept run; write and rewrite phases would change them",
                ));
            }
            if !engine_def.caps.real_io {
                return Err(Error::spec("reuse", v, format!("engine {engine} reads no files")));
            }
            Some(id.to_string())
        }
    };

    let get_owned = |k: &str| get(k).map(str::to_string);
    let cx = crate::engine::opts::Context {
        bs: bs_bytes,
        direct,
        sync,
        open_sync,
        dirs: &dirs,
        ram_bytes: env.ram_bytes,
    };
    let eo = crate::engine::opts::resolve(&get_owned, engine_def, &cx)?;
    if direct {
        let align = dirs.iter().map(|d| crate::env::host::direct_io_alignment(d)).max().unwrap_or(4096);
        if bs_bytes % align != 0 {
            return Err(Error::spec("bs", bs_text, super::sizes::unaligned_bs(bs_bytes, align)));
        }
        if phases.iter().any(|p| p.cache == CachePolicy::Warm) {
            return Err(Error::spec(
                "cache",
                "warm",
                "O_DIRECT bypasses the page cache; warm makes no sense",
            ));
        }
    }
    let access = layout::resolve_access(params, layout, workers as u32, dirs.len())?;
    let reorder_reads = super::ranks::check(params, access.launcher, workers, &phases)?;
    crate::target::cache::check_drop_caches(
        drop_caches,
        phases.iter().any(|p| p.cache == CachePolicy::Cold),
    )?;
    for p in &phases {
        if p.op == OpKind::Write && p.cache == CachePolicy::Warm {
            return Err(Error::spec(
                "ops",
                &p.name,
                "a write phase starts from new empty files, which cannot be warm (use rewrite)",
            ));
        }
    }

    let mut spec = Spec {
        name: get("name").unwrap_or("experiment").to_string(),
        dirs,
        phases,
        workers: workers as u32,
        size_bytes,
        bs_bytes,
        layout,
        order,
        cache,
        seed,
        mpiio: super::ranks::mpiio(params, &engine, access.launcher, workers, layout, direct, bs_bytes)?,
        engine,
        direct,
        sync,
        sync_call: eo.sync_call,
        open_sync,
        prealloc,
        alloc_block: super::params::alloc(get("alloc"), prealloc)?,
        drop_caches,
        reps: reps as u32,
        keep,
        warmup: warmup as u32,
        settle_ns,
        prime_memory_bytes,
        interleave,
        files: access.files,
        round_robin: access.round_robin,
        segments: access.segments,
        stripe_unit_bytes: access.stripe_unit_bytes,
        stripe_count: access.stripe_count,
        pieces: access.pieces,
        launcher: access.launcher,
        start: access.start,
        reorder_reads,
        latency: access.latency,
        verify,
        allow_device,
        reuse,
        iodepth: eo.iodepth,
        window_bytes: eo.window_bytes,
        mem_len_bytes: eo.mem_len_bytes,
        mem_stride_bytes: eo.mem_stride_bytes,
        servers: None,
        strategy: None,
        iters: None,
        comptime_ns: None,
        runtime_ns: None,
        stonewall_ns: None,
        wear_out: false,
        md: None,
        workload: Default::default(),
    };
    spec.servers = super::servers::resolve(params, &spec, &env.cwd)?;
    if spec.verify && spec.mem_len_bytes.is_some() {
        return Err(Error::spec(
            "verify",
            "true",
            "verification headers are not built for strided memory (mem_len/mem_stride); use contiguous memory",
        ));
    }
    layout::check(&spec, env)?;
    crate::experiment::strategy::resolve_into(params, &mut spec)?;
    super::bound::resolve_into(params, &mut spec)?;
    super::workload::resolve_into(params, &mut spec)?;
    spec.md = super::metadata::resolve(params, &spec)?;
    if let Some(len) = spec.mem_len_bytes {
        let piece = crate::plan::piece_len(&spec);
        if piece % len != 0 {
            return Err(Error::spec(
                "mem_len",
                len,
                format!(
                    "each op moves {piece} bytes (a block split at the stripe unit), not a multiple of mem_len: {} would do",
                    crate::units::nearest_divisors(piece, len)
                ),
            ));
        }
    }
    // Last: the buffers of a spec that is otherwise sound must fit in memory.
    super::memory::check(&spec)?;
    Ok((spec, notes))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
