//! The engine parameters of a spec (`iodepth`, `window`, `mem_len`/`mem_stride`, `sync_call`)
//! parsed and checked against what the chosen engine can do, so a combination an engine cannot
//! run is refused before any I/O, naming the parameter and the value.

use std::path::PathBuf;

use super::EngineDef;
use crate::error::{Error, Result};
use crate::spec::{OpenSync, SyncCall, SyncPolicy};
use crate::units::parse_size;

/// The most memory one worker's strided buffer may take.
pub const MAX_MEM_BYTES: u64 = 4 << 30;

/// The engine parameters, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOpts {
    pub iodepth: u32,
    pub window_bytes: Option<u64>,
    pub mem_len_bytes: Option<u64>,
    pub mem_stride_bytes: Option<u64>,
    pub sync_call: SyncCall,
}

/// What the check needs from the rest of the spec.
pub struct Context<'a> {
    pub bs: u64,
    pub direct: bool,
    pub sync: SyncPolicy,
    pub open_sync: OpenSync,
    pub dirs: &'a [PathBuf],
    pub ram_bytes: u64,
}

fn size(key: &str, v: &str, ram: u64) -> Result<u64> {
    let n = parse_size(v, ram).map_err(|e| Error::spec(key, v, e.0))?;
    if n == 0 {
        return Err(Error::spec(key, v, "must be positive"));
    }
    Ok(n)
}

/// Parses and checks the engine parameters (`get` looks a raw parameter up).
pub fn resolve(
    get: &dyn Fn(&str) -> Option<String>,
    def: &EngineDef,
    cx: &Context<'_>,
) -> Result<EngineOpts> {
    let name = def.name;
    let caps = &def.caps;
    (caps.probe)().map_err(|reason| Error::spec("engine", name, reason))?;

    if cx.direct && !caps.direct {
        return Err(Error::spec(
            "direct",
            "true",
            format!("engine {name} cannot do O_DIRECT (a mapping always goes through the page cache)"),
        ));
    }
    if cx.open_sync != OpenSync::None && !caps.open_sync {
        let v = get("open_sync").unwrap_or_default();
        return Err(Error::spec(
            "open_sync",
            v,
            format!(
                "engine {name} stores into a mapping, where O_SYNC/O_DSYNC mean nothing; use sync instead"
            ),
        ));
    }

    let sync_call = match get("sync_call").as_deref() {
        None => caps.sync_calls[0],
        Some(v) => SyncCall::parse(v)
            .ok_or_else(|| Error::spec("sync_call", v, "expected fsync, fdatasync or msync"))?,
    };
    if !caps.sync_calls.contains(&sync_call) {
        let v = sync_call.name();
        let reason = if sync_call == SyncCall::Msync {
            "msync commits mapped memory: only with engine mmap".to_string()
        } else {
            let ok: Vec<&str> = caps.sync_calls.iter().map(|c| c.name()).collect();
            format!("engine {name} commits with {}", ok.join(" or "))
        };
        return Err(Error::spec("sync_call", v, reason));
    }

    let iodepth = match get("iodepth") {
        None => 1,
        Some(v) => {
            let n: u64 =
                v.trim().parse().map_err(|_| Error::spec("iodepth", &v, "expected a whole number >= 1"))?;
            if n == 0 {
                return Err(Error::spec("iodepth", &v, "must be at least 1"));
            }
            if n > caps.max_iodepth as u64 {
                let reason = if caps.max_iodepth == 1 {
                    format!("engine {name} is synchronous (one op in flight per worker); use engine uring")
                } else {
                    format!("engine {name} takes at most {}", caps.max_iodepth)
                };
                return Err(Error::spec("iodepth", &v, reason));
            }
            n as u32
        }
    };

    let window_bytes = match get("window") {
        None => None,
        Some(v) if v == "file" => None,
        Some(v) => {
            if !caps.window {
                return Err(Error::spec("window", &v, format!("only engine mmap maps windows, not {name}")));
            }
            let w = size("window", &v, cx.ram_bytes)?;
            let page = crate::env::sys::page_size() as u64;
            if w % page != 0 {
                return Err(Error::spec(
                    "window",
                    &v,
                    format!(
                        "must be a multiple of the page size ({page} bytes): {} would do",
                        crate::units::nearest_multiples(w, page)
                    ),
                ));
            }
            if let SyncPolicy::Every(n) = cx.sync
                && w < n
            {
                return Err(Error::spec(
                    "window",
                    &v,
                    format!(
                        "smaller than the sync size ({n} bytes): a window must hold a whole sync interval"
                    ),
                ));
            }
            Some(w)
        }
    };

    let (mem_len_bytes, mem_stride_bytes) = match (get("mem_len"), get("mem_stride")) {
        (None, None) => (None, None),
        (Some(v), None) => return Err(Error::spec("mem_len", v, "needs mem_stride too")),
        (None, Some(v)) => return Err(Error::spec("mem_stride", v, "needs mem_len too")),
        (Some(lv), Some(sv)) => {
            let len = size("mem_len", &lv, cx.ram_bytes)?;
            let stride = size("mem_stride", &sv, cx.ram_bytes)?;
            if caps.strided.is_none() {
                return Err(Error::spec(
                    "mem_len",
                    &lv,
                    format!(
                        "engine {name} cannot move strided memory (its registered buffers are contiguous); \
                         use psync, vsync or mmap"
                    ),
                ));
            }
            if stride < len {
                return Err(Error::spec("mem_stride", &sv, format!("smaller than mem_len ({len} bytes)")));
            }
            if cx.bs % len != 0 {
                return Err(Error::spec(
                    "mem_len",
                    &lv,
                    format!(
                        "must divide bs ({} bytes): {} would do",
                        cx.bs,
                        crate::units::nearest_divisors(cx.bs, len)
                    ),
                ));
            }
            let mem = (cx.bs / len).checked_mul(stride);
            if mem.is_none_or(|m| m > MAX_MEM_BYTES) {
                let need = mem.map_or("more than 16 EiB".to_string(), |m| format!("{m} bytes"));
                return Err(Error::spec(
                    "mem_stride",
                    &sv,
                    format!(
                        "each worker would need {need} of memory (bs / mem_len x mem_stride); at most 4 GiB"
                    ),
                ));
            }
            if cx.direct && caps.strided_to_kernel {
                let align =
                    cx.dirs.iter().map(|d| crate::env::host::direct_io_alignment(d)).max().unwrap_or(4096);
                if len % align != 0 || stride % align != 0 {
                    return Err(Error::spec(
                        "mem_len",
                        &lv,
                        format!(
                            "with O_DIRECT, engine {name} hands each piece to the kernel, so mem_len and \
                             mem_stride must be multiples of {align} bytes"
                        ),
                    ));
                }
            }
            (Some(len), Some(stride))
        }
    };

    Ok(EngineOpts { iodepth, window_bytes, mem_len_bytes, mem_stride_bytes, sync_call })
}

#[cfg(test)]
mod tests {
    use crate::experiment::{Params, ResolveEnv, resolve};
    use crate::plan::mem::Strided;
    use crate::spec::{Spec, SyncCall};

    fn spec(pairs: &[(&str, &str)]) -> Spec {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set_one(k, v).unwrap();
        }
        resolve(&p, &ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }).unwrap()
    }

    #[test]
    fn engine_parameters_resolve_and_round_trip() {
        let s = spec(&[
            ("engine", "mmap"),
            ("window", "1MiB"),
            ("sync", "every:512KiB"),
            ("mem_len", "8"),
            ("mem_stride", "32"),
        ]);
        assert_eq!(s.sync_call, SyncCall::Msync, "mmap commits with msync unless told otherwise");
        assert_eq!(s.window_bytes, Some(1 << 20));
        assert_eq!(s.mem(), Some(Strided { len: 8, stride: 32 }));
        assert_eq!(s.iodepth, 1);
        let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
        assert_eq!(resolve(&s.to_params(), &env).unwrap(), s);
        assert_eq!(spec(&[("engine", "psync")]).sync_call, SyncCall::Fdatasync);
        assert_eq!(spec(&[("engine", "mmap"), ("window", "file")]).window_bytes, None);
    }

    #[test]
    fn specs_stored_before_engine_parameters_still_load() {
        let s = spec(&[]);
        let mut v = serde_json::to_value(&s).unwrap();
        for k in ["iodepth", "window_bytes", "mem_len_bytes", "mem_stride_bytes"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let back: Spec = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
