//! One fio job (its section, the `[global]` options in force) translated into iolab's
//! parameters, each with the fio option it came from, and its phase: the option tables (read,
//! noted, refused with the nearest iolab option) and every option's mapping.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::units::fmt_size_spec;

use super::fio_ini::{self, Job};

/// Options read without changing what iolab does (and why).
const NOTED: &[(&str, &str)] = &[
    ("description", "a label"),
    ("group_reporting", "iolab reports each phase's workers together, and each worker apart"),
    ("refill_buffers", "iolab writes its own seeded, non-zero data"),
    ("scramble_buffers", "iolab writes its own seeded, non-zero data"),
    ("kb_base", "read for the sizes"),
    ("stonewall", "a new phase"),
    ("wait_for_previous", "a new phase"),
];

/// Options fio has that iolab cannot honour, with the nearest iolab option.
const REFUSED: &[(&str, &str)] = &[
    ("bsrange", "iolab draws sizes from a mix, not a range: bssplit=SIZE/PCT:..."),
    ("ramp_time", "iolab's --warmup N runs whole unmeasured repetitions first"),
    ("io_size", "give runtime (with time_based) or loops"),
    ("io_limit", "give runtime (with time_based) or loops"),
    ("write_iolog", "iolab's --trace keeps every op (iolab results trace last)"),
    ("read_iolog", "iolab replays no logs; its orders are seeded (randseed)"),
    ("startdelay", "iolab starts every worker of a phase together"),
    ("iodepth_batch", "iolab's uring engine batches its submissions itself"),
    ("iodepth_batch_complete", "iolab's uring engine reaps what is done"),
    ("unlink_each_loop", "iolab removes its files after the run"),
    ("zero_buffers", "iolab writes non-zero data (devices here detect zeros)"),
    ("buffer_pattern", "iolab writes its own seeded data (--verify checks it)"),
    ("do_verify", "iolab's --verify checks every block read"),
    ("verify_pattern", "iolab's --verify writes its own header"),
    ("openfiles", "iolab keeps a worker's files open through its phase"),
    ("fadvise_hint", "iolab's cache states are cold, warm and asis"),
    ("filesize", "give size= (the bytes of a job, over its nrfiles)"),
];

/// Every option this translation reads (beside NOTED and REFUSED).
const READ: &[&str] = &[
    "name",
    "filename",
    "directory",
    "nrfiles",
    "file_service_type",
    "size",
    "offset",
    "offset_increment",
    "bs",
    "blocksize",
    "bssplit",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "ioengine",
    "iodepth",
    "direct",
    "buffered",
    "numjobs",
    "thread",
    "runtime",
    "time_based",
    "loops",
    "fsync",
    "fdatasync",
    "end_fsync",
    "fsync_on_close",
    "sync",
    "invalidate",
    "random_distribution",
    "norandommap",
    "randrepeat",
    "randseed",
    "rate",
    "rate_iops",
    "rate_process",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "fallocate",
    "create_on_open",
    "unlink",
    "verify",
];

/// One job translated: iolab's parameters with their fio options, and its phase.
pub(super) struct Tr {
    pub(super) name: String,
    pub(super) params: BTreeMap<&'static str, (String, String)>,
    pub(super) op: String,
    pub(super) order: (String, String),
    pub(super) op_from: String,
    pub(super) new_group: bool,
    pub(super) notes: Vec<String>,
}

pub(super) fn job(j: &Job, first: bool) -> Result<Tr> {
    let field = |key: &str, at: &str| format!("fio option {key} ({at}, job [{}])", j.name);
    for o in &j.opts {
        if let Some((_, near)) = REFUSED.iter().find(|(k, _)| *k == o.key) {
            return Err(Error::spec(
                field(&o.key, &o.at),
                o.written(),
                format!("not built in iolab; {near}"),
            ));
        }
        if !READ.contains(&o.key.as_str()) && !NOTED.iter().any(|(k, _)| *k == o.key) {
            return Err(Error::spec(
                field(&o.key, &o.at),
                o.written(),
                "not an option iolab reads in a fio job file (docs/fio.md lists those it does)",
            ));
        }
    }
    let name = j.get("name").and_then(|o| o.value.clone()).unwrap_or_else(|| j.name.clone());
    let new_group = j.get("stonewall").is_some() || j.get("wait_for_previous").is_some() || first;
    let mut params: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
    let mut notes: Vec<String> = vec![];
    let get = |k: &str| j.get(k).map(|o| (o.value.clone().unwrap_or_default(), o.written(), o.at.clone()));
    let bad = |k: &str, why: &str| -> Error {
        let o = j.get(k).unwrap();
        Error::spec(field(k, &o.at), o.written(), why)
    };
    let flag = |k: &str| -> Result<bool> {
        match j.get(k) {
            None => Ok(false),
            Some(o) => match o.value.as_deref() {
                None | Some("1") | Some("true") => Ok(true),
                Some("0") | Some("false") => Ok(false),
                _ => Err(bad(k, "expected 0 or 1")),
            },
        }
    };
    let kb_base = match get("kb_base") {
        None => 1024,
        Some((v, ..)) if v == "1024" || v == "1000" => v.parse().unwrap(),
        Some(_) => return Err(bad("kb_base", "expected 1024 or 1000")),
    };
    let num = |k: &str| -> Result<Option<u64>> {
        match j.get(k) {
            None => Ok(None),
            Some(o) => fio_ini::size(&field(k, &o.at), o.value.as_deref().unwrap_or(""), kb_base).map(Some),
        }
    };
    let mut set = |key: &'static str, v: String, from: String| {
        params.insert(key, (v, from));
    };
    // The operation and its order.
    let rw_key = if j.get("readwrite").is_some() && j.get("rw").is_none() { "readwrite" } else { "rw" };
    let (rw, rw_from) =
        get(rw_key).map_or(("read".to_string(), "rw=read (fio's default)".to_string()), |g| (g.0, g.1));
    let (op, random) = match rw.as_str() {
        "read" => ("read", false),
        "write" => ("write", false),
        "randread" => ("read", true),
        "randwrite" => ("write", true),
        "rw" | "readwrite" => ("rw", false),
        "randrw" => ("rw", true),
        _ => {
            return Err(bad(
                rw_key,
                "iolab does read, write, randread, randwrite, rw (readwrite) and randrw, without an offset modifier (:N)",
            ));
        }
    };
    let mut order =
        if random { ("random".to_string(), String::new()) } else { ("seq".to_string(), String::new()) };
    if let Some((d, w, _)) = get("random_distribution") {
        let (kind, arg) = d.split_once(':').unwrap_or((d.as_str(), ""));
        let o = match kind {
            "random" => None,
            "zipf" | "pareto" if !arg.is_empty() && !arg.contains(':') => Some(format!("{kind}:{arg}")),
            "normal" | "gauss" if !arg.is_empty() && !arg.contains(':') => Some(format!("normal:{arg}")),
            _ => {
                return Err(bad(
                    "random_distribution",
                    "iolab draws random, zipf:THETA, pareto:H and normal:DEV (gauss), without a center",
                ));
            }
        };
        if let Some(o) = o.filter(|_| random) {
            order = (o, w);
        }
    }
    if flag("norandommap")? && random && order.0 == "random" {
        order = ("uniform".to_string(), "norandommap".to_string());
    }
    // Mixes.
    if op == "rw" {
        match (get("rwmixread"), get("rwmixwrite")) {
            (Some((v, w, _)), _) => set("rwmixread", v, w),
            (None, Some((v, w, _))) => {
                let n: u64 = v
                    .parse()
                    .ok()
                    .filter(|n| *n <= 100)
                    .ok_or_else(|| bad("rwmixwrite", "expected a percentage"))?;
                set("rwmixread", (100 - n).to_string(), w);
            }
            (None, None) => {}
        }
    }
    // Sizes and blocks.
    let bs_key = if j.get("bs").is_none() && j.get("blocksize").is_some() { "blocksize" } else { "bs" };
    if get(bs_key).is_some_and(|(v, ..)| v.contains(',')) {
        return Err(bad(bs_key, "iolab takes one block size for reads and writes"));
    }
    let bs = num(bs_key)?.unwrap_or(4096);
    set("bs", fmt_size_spec(bs), get(bs_key).map_or("bs=4k (fio's default)".into(), |g| g.1));
    if let Some((v, w, at)) = get("bssplit") {
        if v.contains(',') {
            return Err(bad("bssplit", "iolab takes one mix for reads and writes"));
        }
        let mut parts = vec![];
        for p in v.split(':') {
            let (s, pct) = p.split_once('/').ok_or_else(|| bad("bssplit", "expected SIZE/PERCENT:..."))?;
            parts
                .push(format!("{}/{pct}", fmt_size_spec(fio_ini::size(&field("bssplit", &at), s, kb_base)?)));
        }
        set("bssplit", parts.join(":"), w);
    }
    let nrfiles = num("nrfiles")?.unwrap_or(1).max(1);
    let Some(size) = num("size")? else {
        return Err(Error::spec(
            field("size", &j.at),
            "",
            "fio needs size= (the bytes of a job, over its nrfiles)",
        ));
    };
    if size % nrfiles != 0 {
        return Err(bad(
            "size",
            &format!("is not a whole number of bytes for each of nrfiles={nrfiles} files"),
        ));
    }
    let size_from = get("size").unwrap().1;
    let numjobs = num("numjobs")?.unwrap_or(1).max(1);
    set("workers", numjobs.to_string(), get("numjobs").map_or("numjobs=1 (fio's default)".into(), |g| g.1));
    for k in ["offset", "offset_increment"] {
        if num(k)?.unwrap_or(0) != 0 && !(k == "offset_increment" && j.get("filename").is_some()) {
            return Err(bad(
                k,
                "iolab starts every file at 0 (with filename= and numjobs, offset_increment=size is iolab's --layout shared)",
            ));
        }
    }
    if let Some((name, w, _)) = get("filename") {
        if name.contains(':') {
            return Err(bad("filename", "iolab takes one file name (its dir); give directory= for many"));
        }
        let dir = Path::new(&name).parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        set("dirs", dir.display().to_string(), w.clone());
        notes.push(format!("{w}: iolab works in its own directory (.iolab-RUNID) there and names its files"));
        if numjobs > 1 {
            if num("offset_increment")? != Some(size) {
                return Err(bad(
                    "filename",
                    "numjobs jobs on one named file each do all of it in fio; with offset_increment=size each has its own part, as iolab's --layout shared does",
                ));
            }
            set("layout", "shared".into(), format!("{w} offset_increment={}", size));
        }
        if nrfiles > 1 {
            return Err(bad("nrfiles", "one named file (filename=) has no other files"));
        }
    } else if let Some((d, w, _)) = get("directory") {
        if d.contains(':') {
            return Err(bad("directory", "iolab spreads no job's files over directories: give one"));
        }
        set("dirs", d, w);
    }
    set(
        "size",
        fmt_size_spec(size / nrfiles),
        if nrfiles > 1 { format!("{size_from} over nrfiles={nrfiles}") } else { size_from },
    );
    if nrfiles > 1 {
        let nr_from = get("nrfiles").unwrap().1;
        set("files_per_worker", nrfiles.to_string(), nr_from.clone());
        match get("file_service_type").map(|g| g.0).as_deref() {
            None | Some("roundrobin") | Some("roundrobin:1") => set(
                "round_robin",
                nrfiles.to_string(),
                format!("{nr_from}, file_service_type=roundrobin (one op a file in turn)"),
            ),
            Some("sequential") => set("round_robin", "1".into(), "file_service_type=sequential".into()),
            _ => {
                return Err(bad(
                    "file_service_type",
                    "iolab visits a worker's files round-robin, one op each (roundrobin), or one after another (sequential)",
                ));
            }
        }
    }
    // Engine.
    let (engine, iodepth_ok) = match get("ioengine").map(|g| g.0).as_deref() {
        None | Some("psync") => ("psync", false),
        Some("sync") => {
            notes.push("ioengine=sync: iolab's psync does the same ops with pread/pwrite at each offset instead of lseek and read/write".into());
            ("psync", false)
        }
        Some("pvsync") | Some("vsync") => ("vsync", false),
        Some("pvsync2") => {
            notes.push("ioengine=pvsync2: iolab's vsync (preadv/pwritev, without pvsync2's flags)".into());
            ("vsync", false)
        }
        Some("libaio") => {
            notes.push(
                "ioengine=libaio: iolab has no libaio; its asynchronous engine is io_uring (uring)".into(),
            );
            ("uring", true)
        }
        Some("io_uring") => ("uring", true),
        Some("mmap") => ("mmap", false),
        Some(_) => {
            return Err(bad(
                "ioengine",
                "iolab's engines are psync (sync, psync), vsync (pvsync, pvsync2), uring (io_uring, libaio) and mmap: `iolab engines`",
            ));
        }
    };
    set("engine", engine.into(), get("ioengine").map_or("ioengine=psync (fio's default)".into(), |g| g.1));
    if let Some(d) = num("iodepth")? {
        if iodepth_ok {
            set("iodepth", d.to_string(), get("iodepth").unwrap().1);
        } else if d > 1 {
            notes.push(format!(
                "iodepth={d} with a synchronous engine: fio runs it at depth 1, and so does iolab"
            ));
        }
    }
    let direct = flag("direct")? || get("buffered").is_some_and(|g| g.0 == "0");
    if direct {
        set("direct", "true".into(), get("direct").or(get("buffered")).unwrap().1);
    }
    if flag("thread")? {
        set("launcher", "thread".into(), "thread".into());
    } else {
        set("launcher", "process".into(), "fio's default: a process per job (no thread)".into());
    }
    // Time and repetitions.
    if let Some((v, w, at)) = get("runtime") {
        let ns = fio_ini::time_ns(&field("runtime", &at), &v, 1_000_000_000)?;
        let d = format!("{}ms", ns / 1_000_000);
        if flag("time_based")? {
            set("runtime", d, format!("{w} time_based"));
        } else {
            set("stonewall", d, format!("{w} (without time_based: stop at it or when done)"));
        }
    } else if flag("time_based")? {
        return Err(bad("time_based", "needs runtime="));
    }
    if let Some((v, w, _)) = get("loops") {
        set("reps", v, format!("{w} (iolab: repetitions, each reported, with their statistics)"));
    }
    // Syncs.
    let (fs, fds) = (num("fsync")?.unwrap_or(0), num("fdatasync")?.unwrap_or(0));
    if fs > 0 && fds > 0 {
        return Err(bad("fdatasync", "give fsync or fdatasync, not both"));
    }
    let (n, call, key) = if fs > 0 { (fs, "fsync", "fsync") } else { (fds, "fdatasync", "fdatasync") };
    if n > 0 {
        let w = get(key).unwrap().1;
        if n == 1 {
            set("sync", "each".into(), w.clone());
        } else if j.get("bssplit").is_some() {
            return Err(bad(
                key,
                "a sync every N writes of mixed sizes: iolab syncs every SIZE bytes (--sync every:SIZE) with one bs",
            ));
        } else {
            set("sync", format!("every:{}", fmt_size_spec(n * bs)), format!("{w} (every {n} writes of bs)"));
            if !flag("end_fsync")? {
                notes.push(format!("{w}: fio syncs after every {n}th write but not after its last; iolab's sync every {} also syncs after the last write", fmt_size_spec(n * bs)));
            }
        }
        set("sync_call", call.into(), w);
    } else if flag("end_fsync")? || flag("fsync_on_close")? {
        let w = get("end_fsync").or(get("fsync_on_close")).unwrap().1;
        set("sync", "end".into(), w.clone());
        set("sync_call", "fsync".into(), w);
    } else {
        set("sync", "none".into(), "fio's default: no fsync".into());
    }
    match get("sync").map(|g| g.0).as_deref() {
        None | Some("0") | Some("none") => {}
        Some("1") | Some("sync") => set("open_sync", "sync".into(), get("sync").unwrap().1),
        Some("dsync") => set("open_sync", "dsync".into(), get("sync").unwrap().1),
        Some(_) => return Err(bad("sync", "expected 0, 1, none, sync or dsync")),
    }
    // Cache, seeds, rates, think time.
    if get("invalidate").is_some_and(|g| g.0 == "0") {
        set("cache", "asis".into(), get("invalidate").unwrap().1);
    } else {
        let from = get("invalidate").map_or("invalidate=1 (fio's default)".into(), |g| g.1);
        set("cache", "cold".into(), format!("{from}; iolab also commits and checks with mincore"));
    }
    if get("randrepeat").is_some_and(|g| g.0 == "0") {
        return Err(bad("randrepeat", "iolab's orders are always seeded: give randseed=N"));
    }
    if let Some(s) = num("randseed")? {
        set("seed", s.to_string(), get("randseed").unwrap().1);
    }
    if let Some((v, w, at)) = get("rate") {
        if v.contains(',') {
            return Err(bad("rate", "iolab takes one rate for reads and writes"));
        }
        set("rate", format!("{}B/s", fio_ini::size(&field("rate", &at), &v, kb_base)?), w);
    }
    if let Some((v, w, _)) = get("rate_iops") {
        if v.contains(',') || v.parse::<u64>().is_err() {
            return Err(bad("rate_iops", "iolab takes one whole rate for reads and writes"));
        }
        set("rate_iops", v, w);
    }
    if let Some((v, w, _)) = get("rate_process") {
        set("rate_process", v, w);
    }
    for k in ["thinktime", "thinktime_spin"] {
        if let Some((v, w, at)) = get(k) {
            set(k, format!("{}ns", fio_ini::time_ns(&field(k, &at), &v, 1_000)?), w);
        }
    }
    if let Some((v, w, _)) = get("thinktime_blocks") {
        set("thinktime_blocks", v, w);
    }
    // Files.
    match get("fallocate").map(|g| g.0).as_deref() {
        Some("none") | Some("0") => set("prealloc", "false".into(), get("fallocate").unwrap().1),
        None => set("prealloc", "true".into(), "fio's default fallocate=native".into()),
        Some("native") | Some("posix") | Some("1") => {
            set("prealloc", "true".into(), get("fallocate").unwrap().1)
        }
        Some(_) => {
            return Err(bad("fallocate", "iolab preallocates with fallocate (native, posix) or not (none)"));
        }
    }
    if flag("create_on_open")? {
        return Err(bad(
            "create_on_open",
            "iolab lays out or creates every file before a phase's clock starts",
        ));
    }
    match get("unlink").map(|g| g.0).as_deref() {
        Some("0") => set("keep", "true".into(), get("unlink").unwrap().1),
        None => notes
            .push("fio keeps its files (unlink=0); iolab removes them after the run unless --keep".into()),
        _ => {}
    }
    if let Some((v, w, _)) = get("verify") {
        if !matches!(v.as_str(), "0" | "none" | "null") {
            set("verify", "true".into(), w.clone());
            notes.push(format!("{w}: iolab's --verify writes its own header with a checksum into every block and checks every block read"));
        }
    }
    if let Some((_, w, _)) = get("group_reporting").filter(|_| numjobs > 1) {
        let why = NOTED.iter().find(|(k, _)| *k == "group_reporting").unwrap().1;
        notes.push(format!("{w}: {why}"));
    }
    Ok(Tr { name, params, op: op.to_string(), order, op_from: rw_from, new_group, notes })
}
