//! Turns TOML files and CLI flags into one validated experiment [`Spec`].
//!
//! Every parameter is declared once, in [`PARAMS`]. TOML keys, CLI flags and sweep axes all
//! become the same `key = value` strings in a [`Params`] map, and [`resolve`] parses and checks
//! them into a typed [`Spec`]. Every error names the parameter and the value at fault.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::schedule::Interleave;
use crate::units::{fmt_size_spec, parse_size};

mod layout;

/// One declared parameter: its key (TOML key, sweep axis name, `--flag` with `-` for `_`).
pub struct ParamDef {
    pub key: &'static str,
    pub help: &'static str,
    /// Takes several values (`dirs`, `ops`); others take exactly one.
    pub list: bool,
}

macro_rules! params {
    ($( $key:literal $(list=$list:literal)? : $help:literal ),* $(,)?) => {
        /// Every spec parameter, with the one-line help shown in `docs/spec.md`.
        pub const PARAMS: &[ParamDef] = &[ $( ParamDef { key: $key, help: $help, list: false $( || $list )? } ),* ];
    };
}

params! {
    "name": "a label for the experiment",
    "dirs" list=true: "target directories; iolab works inside its own work directory under each",
    "ops" list=true: "phases in order: write, rewrite, read; each may add :seq|:reverse|:random, :cold|:warm|:asis, :workers=N, :round_robin=R, :layout=L",
    "workers": "number of workers (threads or processes); a phase may set its own",
    "size": "bytes per file of per-worker layouts (= per worker by default); bytes per worker of shared layouts (KiB/MiB/GiB are 1024-based, kB/MB/GB 1000-based, NxRAM)",
    "bs": "bytes per I/O operation",
    "layout": "file-per-worker | shared | shared-strided | striped | striped-per-worker (see docs/layouts.md)",
    "files": "files in the set of file-per-worker and striped-per-worker (default: one per worker); worker w of W gets files w, w+W, ...",
    "files_per_worker": "K: files = K x workers, and each worker visits its K files round-robin (round_robin = K)",
    "round_robin": "R: a worker visits R of its files at a time, block by block (default 1)",
    "stripe_unit": "bytes per stripe unit of the striped layouts",
    "stripe_count": "striped layouts: stripe over the first N dirs (default: all)",
    "launcher": "thread | process (the binary re-executes itself once per worker)",
    "start": "barrier (workers start together) | free (each worker starts as soon as it is ready)",
    "latency": "off (no clock read per op) | histogram | trace (also every op's file, offset, start and duration, kept in the store)",
    "order": "seq | reverse | random (a seeded permutation covering every block once)",
    "seed": "seed for random orders and data",
    "engine": "I/O engine (see `iolab engines`)",
    "direct": "open with O_DIRECT (bypass the page cache)",
    "sync": "none | end | each | every:SIZE (commit after every SIZE bytes per worker)",
    "sync_call": "fsync | fdatasync | msync (msync: engine mmap only, and its default)",
    "open_sync": "none | sync | dsync (open with O_SYNC or O_DSYNC)",
    "prealloc": "preallocate files with fallocate before a write phase (timed separately)",
    "cache": "cold | warm | asis: cache state before each phase (cold = committed, evicted and checked)",
    "drop_caches": "with cache=cold, also write 3 to /proc/sys/vm/drop_caches (root only)",
    "reps": "repetitions of the whole run",
    "keep": "keep the data files after the run",
    "warmup": "warm-up runs of each point before its first measured one (stored, not in the statistics)",
    "settle": "sleep this long before each run (e.g. 2s, 500ms)",
    "prime_memory": "touch and free this many bytes just before each run (e.g. 4GiB, 0.5xRAM; 0 = off)",
    "interleave": "order of the runs of a sweep: round-robin over points, shuffle (seeded by seed) or shuffle:SEED",
    "verify": "blocks carry a header (run, file, offset, generation, checksum) written with the data and checked on every read",
    "allow_device" list=true: "command line only: a path under /dev that may be a target (exact path); devices in use are always refused",
    "reuse": "read the data files a kept run (--keep) left, instead of writing new ones: the run id; read phases only",
    "iodepth": "ops in flight per worker (asynchronous engines: uring)",
    "window": "mmap window size (engine mmap); default: the whole file",
    "mem_len": "strided memory: bytes taken from every mem_stride bytes of the buffer",
    "mem_stride": "strided memory: distance between the starts of successive mem_len pieces",
    "strategy": "compute/I-O overlap strategy (Benson et al. 2003): S1A | S1B | S2 | S3 | S5 (see docs/strategies.md)",
    "iters": "strategies: iterations of the compute/write loop (size = iters x bs)",
    "comptime": "strategies: simulated compute time, e.g. 2s (each of the workers' worth; see docs/strategies.md)",
}

/// Raw parameters: key -> values, before parsing. Later layers override earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Params(pub BTreeMap<String, Vec<String>>);

impl Params {
    /// Sets one key (normalising `-` to `_`), replacing earlier values. Unknown keys are refused.
    pub fn set(&mut self, key: &str, values: Vec<String>) -> Result<()> {
        let key = key.replace('-', "_");
        let key = if matches!(key.as_str(), "dir" | "targets" | "target") { "dirs".to_string() } else { key };
        let key = if key == "op" { "ops".to_string() } else { key };
        let def = PARAMS
            .iter()
            .find(|d| d.key == key)
            .ok_or_else(|| Error::spec(&key, values.join(","), "unknown parameter"))?;
        if !def.list && values.len() != 1 {
            return Err(Error::spec(&key, values.join(","), "takes exactly one value"));
        }
        self.0.insert(key, values);
        Ok(())
    }

    /// Sets a scalar key.
    pub fn set_one(&mut self, key: &str, value: impl ToString) -> Result<()> {
        self.set(key, vec![value.to_string()])
    }

    /// Overlays `other` on `self` (keys in `other` win).
    pub fn overlay(&mut self, other: &Params) {
        for (k, v) in &other.0 {
            self.0.insert(k.clone(), v.clone());
        }
    }

    fn one(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.first()).map(String::as_str)
    }

    /// Parses a TOML experiment file into parameters. Nested `[[phases]]` tables become `ops`.
    pub fn from_toml(text: &str) -> Result<Params> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| Error::spec("spec file", "TOML", e.message().to_string()))?;
        let mut p = Params::default();
        for (key, value) in &table {
            if key == "allow_device" {
                return Err(Error::spec(
                    key,
                    value,
                    "only on the command line (--allow-device), so a spec file can never point iolab at a device by itself",
                ));
            }
            if key == "phases" {
                p.set("ops", phases_from_toml(value)?)?;
                continue;
            }
            // Sweep axes and preset metadata are read by `crate::experiment`.
            if key == "sweep" || key == "preset" {
                continue;
            }
            p.set(key, toml_values(key, value)?)?;
        }
        Ok(p)
    }
}

fn toml_scalar(key: &str, v: &toml::Value) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(Error::spec(key, other, "expected a string, number or boolean")),
    }
}

fn toml_values(key: &str, v: &toml::Value) -> Result<Vec<String>> {
    match v {
        toml::Value::Array(items) => items.iter().map(|i| toml_scalar(key, i)).collect(),
        other => Ok(vec![toml_scalar(key, other)?]),
    }
}

/// `[[phases]]` tables: `op = "read"`, optional `order`, `cache`, `workers`, `round_robin`,
/// `layout`. Each becomes the phase string `op:workers=N:round_robin=R:layout=L:order:cache`.
fn phases_from_toml(v: &toml::Value) -> Result<Vec<String>> {
    let arr =
        v.as_array().ok_or_else(|| Error::spec("phases", v, "expected an array of tables ([[phases]])"))?;
    arr.iter()
        .map(|t| {
            let t = t.as_table().ok_or_else(|| Error::spec("phases", t, "expected a table"))?;
            let mut parts: BTreeMap<usize, String> = BTreeMap::new();
            for (k, v) in t {
                let val = toml_scalar(&format!("phases.{k}"), v)?;
                let (rank, text) = match k.as_str() {
                    "op" => (0, val),
                    "workers" | "round_robin" | "layout" => {
                        (PHASE_KEYS.iter().position(|p| p == k).unwrap_or(0) + 1, format!("{k}={val}"))
                    }
                    "order" => (4, val),
                    "cache" => (5, val),
                    _ => {
                        return Err(Error::spec(
                            format!("phases.{k}"),
                            val,
                            "unknown phase key (op, workers, round_robin, layout, order, cache)",
                        ));
                    }
                };
                parts.insert(rank, text);
            }
            if !parts.contains_key(&0) {
                return Err(Error::spec("phases.op", "", "each phase needs an `op`"));
            }
            Ok(parts.into_values().collect::<Vec<_>>().join(":"))
        })
        .collect()
}

/// The `key=value` modifiers a phase may carry, in the order phase names list them.
const PHASE_KEYS: &[&str] = &["workers", "round_robin", "layout"];

/// What a phase does to the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// Files are created empty (or truncated) before the phase, then written.
    Write,
    /// Existing data is overwritten in place.
    Rewrite,
    /// Existing data is read.
    Read,
}

impl OpKind {
    pub fn is_write(self) -> bool {
        !matches!(self, OpKind::Read)
    }
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Rewrite => "rewrite",
            OpKind::Read => "read",
        }
    }
}

/// Where each worker's bytes go (docs/layouts.md draws each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// A set of `files` files; worker w of W owns files w, w+W, ... (file w by default).
    FilePerWorker,
    /// One file; worker w owns a contiguous segment (w x size .. (w+1) x size by default).
    Shared,
    /// One file; worker w of W owns blocks w, w+W, w+2W, ... (IOR's strided pattern).
    SharedStrided,
    /// One logical file striped over the targets; worker w owns a contiguous segment.
    Striped,
    /// As file-per-worker, but each file is striped over the targets.
    StripedPerWorker,
}

impl Layout {
    pub const NAMES: &'static [&'static str] =
        &["file-per-worker", "shared", "shared-strided", "striped", "striped-per-worker"];
    pub fn parse(s: &str) -> Option<Layout> {
        Some(match s {
            "file-per-worker" | "fpp" => Layout::FilePerWorker,
            "shared" => Layout::Shared,
            "shared-strided" | "strided" => Layout::SharedStrided,
            "striped" => Layout::Striped,
            "striped-per-worker" => Layout::StripedPerWorker,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Layout::FilePerWorker => "file-per-worker",
            Layout::Shared => "shared",
            Layout::SharedStrided => "shared-strided",
            Layout::Striped => "striped",
            Layout::StripedPerWorker => "striped-per-worker",
        }
    }
    /// Workers own whole files (a file set of `files` files), rather than parts of one file.
    pub fn per_worker_files(self) -> bool {
        matches!(self, Layout::FilePerWorker | Layout::StripedPerWorker)
    }
    /// Each logical file is striped over several component files.
    pub fn striped(self) -> bool {
        matches!(self, Layout::Striped | Layout::StripedPerWorker)
    }
}

/// The order in which a worker visits its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Seq,
    Reverse,
    Random,
}

impl Order {
    pub fn parse(s: &str) -> Option<Order> {
        Some(match s {
            "seq" | "sequential" => Order::Seq,
            "reverse" | "rev" => Order::Reverse,
            "random" | "rand" => Order::Random,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Order::Seq => "seq",
            Order::Reverse => "reverse",
            Order::Random => "random",
        }
    }
}

/// When written data is committed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    None,
    /// Once per file, after the last op (included in the worker's time).
    End,
    /// After every op.
    Each,
    /// Whenever the worker has written this many bytes since its last commit, and at the end.
    Every(u64),
}

impl SyncPolicy {
    pub fn parse(s: &str) -> std::result::Result<SyncPolicy, String> {
        Ok(match s {
            "none" | "never" => SyncPolicy::None,
            "end" => SyncPolicy::End,
            "each" => SyncPolicy::Each,
            _ => {
                let size = s.strip_prefix("every:").ok_or("expected none, end, each or every:SIZE")?;
                let n = parse_size(size, 0).map_err(|e| e.0)?;
                if n == 0 {
                    return Err("the sync size must be positive".into());
                }
                SyncPolicy::Every(n)
            }
        })
    }
    pub fn label(self) -> String {
        match self {
            SyncPolicy::None => "none".into(),
            SyncPolicy::End => "end".into(),
            SyncPolicy::Each => "each".into(),
            SyncPolicy::Every(n) => format!("every:{}", fmt_size_spec(n)),
        }
    }
}

impl Serialize for SyncPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl<'de> Deserialize<'de> for SyncPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SyncPolicy::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The system call that commits data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncCall {
    Fsync,
    Fdatasync,
    /// msync(MS_SYNC) over mapped memory (engine mmap).
    Msync,
}

/// Synchronous-write open flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenSync {
    None,
    /// O_SYNC
    Sync,
    /// O_DSYNC
    Dsync,
}

/// The cache state a phase starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CachePolicy {
    /// Data committed, evicted, and residency checked with mincore.
    Cold,
    /// Data read once first, residency checked.
    Warm,
    /// Not controlled; results are labelled so.
    Asis,
}

impl CachePolicy {
    pub fn parse(s: &str) -> Option<CachePolicy> {
        Some(match s {
            "cold" => CachePolicy::Cold,
            "warm" => CachePolicy::Warm,
            "asis" | "as-is" => CachePolicy::Asis,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::Cold => "cold",
            CachePolicy::Warm => "warm",
            CachePolicy::Asis => "asis",
        }
    }
}

/// One phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Unique within the run: the text the user wrote, with a `#N` suffix if repeated.
    pub name: String,
    pub op: OpKind,
    pub order: Order,
    pub cache: CachePolicy,
    /// This phase's own worker count (else the run's `workers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// This phase's own round-robin width (else the run's `round_robin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_robin: Option<u32>,
    /// This phase's own access layout (only `shared` <-> `shared-strided`: same file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
}

impl Phase {
    /// The phase as the user wrote it (its name without a `#N` suffix).
    pub fn written(&self) -> &str {
        self.name.split('#').next().unwrap_or(&self.name)
    }
}

/// A fully resolved and validated experiment. Field names carry units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub name: String,
    pub dirs: Vec<PathBuf>,
    pub phases: Vec<Phase>,
    pub workers: u32,
    pub size_bytes: u64,
    pub bs_bytes: u64,
    pub layout: Layout,
    /// The order of phases that name none.
    pub order: Order,
    /// The cache policy of phases that name none.
    pub cache: CachePolicy,
    pub seed: u64,
    pub engine: String,
    pub direct: bool,
    pub sync: SyncPolicy,
    pub sync_call: SyncCall,
    pub open_sync: OpenSync,
    pub prealloc: bool,
    pub drop_caches: bool,
    pub reps: u32,
    pub keep: bool,
    /// Warm-up runs of each point before its first measured run.
    #[serde(default)]
    pub warmup: u32,
    /// Sleep before each run.
    #[serde(default)]
    pub settle_ns: u64,
    /// Bytes touched and freed just before each run (0: none).
    #[serde(default)]
    pub prime_memory_bytes: u64,
    /// Order of the runs of an experiment's points.
    #[serde(default)]
    pub interleave: Interleave,
    /// Files in the set of the per-worker layouts; 1 for the shared ones. (0 only in documents
    /// written before the field existed, meaning one per worker.)
    #[serde(default)]
    pub files: u32,
    /// Default round-robin width of phases.
    #[serde(default = "one")]
    pub round_robin: u32,
    /// Stripe unit of the striped layouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_unit_bytes: Option<u64>,
    /// Components per striped file: the first `stripe_count` dirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_count: Option<u32>,
    #[serde(default)]
    pub launcher: Launcher,
    #[serde(default)]
    pub start: StartMode,
    #[serde(default)]
    pub latency: LatencyMode,
    /// Blocks carry a verification header, checked on every read.
    #[serde(default)]
    pub verify: bool,
    /// Paths under /dev that may be targets (given on the command line only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_device: Vec<PathBuf>,
    /// Read the files kept by this run instead of writing new ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<String>,
    /// Ops in flight per worker (1 for synchronous engines).
    #[serde(default = "one")]
    pub iodepth: u32,
    /// mmap window; `None` maps whole files.
    #[serde(default)]
    pub window_bytes: Option<u64>,
    /// Strided memory: `mem_len_bytes` of every `mem_stride_bytes` (both or neither).
    #[serde(default)]
    pub mem_len_bytes: Option<u64>,
    #[serde(default)]
    pub mem_stride_bytes: Option<u64>,
    /// Compute/I-O overlap strategy (docs/strategies.md); None: plain I/O workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<crate::strategy::Strategy>,
    /// Iterations of a strategy's loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u64>,
    /// A strategy's compute time (the program spins `workers` x this in all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comptime_ns: Option<u64>,
}

fn one() -> u32 {
    1
}

/// How workers are started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Threads of the iolab process.
    #[default]
    Thread,
    /// Child processes: the binary re-executes itself once per worker.
    Process,
}

/// When a worker's clock starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartMode {
    /// All workers open their files, then start together.
    #[default]
    Barrier,
    /// Each worker starts as soon as its files are open (Russell's uncoordinated children).
    Free,
}

/// What is kept of each op's latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyMode {
    /// Nothing per op: the loop reads the clock only at the start, around commits and at the
    /// end (the least overhead).
    Off,
    /// An HDR histogram per worker.
    #[default]
    Histogram,
    /// The histogram plus every op's file, offset, start and duration.
    Trace,
}

/// Defaults, chosen so that `iolab run` with no arguments is the default experiment: a short,
/// honest characterisation of the current directory's file system (write with commit at end,
/// a read verified cold, a read verified warm, five repetitions).
pub const DEFAULT_OPS: &[&str] = &["write", "read:cold", "read:warm"];
/// Default bytes per worker.
pub const DEFAULT_SIZE: &str = "512MiB";

/// Facts about the machine that resolution needs (so tests can fix them).
#[derive(Debug, Clone)]
pub struct ResolveEnv {
    pub ram_bytes: u64,
    pub cwd: PathBuf,
}

impl ResolveEnv {
    pub fn current() -> ResolveEnv {
        ResolveEnv {
            ram_bytes: crate::host::mem_total_bytes().unwrap_or(0),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v {
        "true" | "yes" | "1" | "on" => Ok(true),
        "false" | "no" | "0" | "off" => Ok(false),
        _ => Err(Error::spec(key, v, "expected true or false")),
    }
}

fn parse_u64(key: &str, v: &str) -> Result<u64> {
    v.trim().parse().map_err(|_| Error::spec(key, v, "expected a non-negative whole number"))
}

fn parse_phases(values: &[String], default_cache: CachePolicy, default_order: Order) -> Result<Vec<Phase>> {
    let mut phases: Vec<Phase> = Vec::new();
    for item in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let mut parts = item.split(':');
        let op = match parts.next().unwrap_or("") {
            "write" => OpKind::Write,
            "rewrite" => OpKind::Rewrite,
            "read" => OpKind::Read,
            other => {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!("unknown operation `{other}` (write, rewrite, read)"),
                ));
            }
        };
        let (mut order, mut cache) = (default_order, default_cache);
        let (mut workers, mut round_robin, mut layout) = (None, None, None);
        for m in parts {
            if let Some((k, v)) = m.split_once('=') {
                let k = k.replace('-', "_");
                match k.as_str() {
                    "workers" => workers = Some(layout::phase_count(item, &k, v, 4096)?),
                    "round_robin" | "rr" => round_robin = Some(layout::phase_count(item, &k, v, 1 << 20)?),
                    "layout" => {
                        layout = Some(Layout::parse(v).ok_or_else(|| {
                            Error::spec(
                                "ops",
                                item,
                                format!("unknown layout `{v}` ({})", Layout::NAMES.join(", ")),
                            )
                        })?)
                    }
                    "order" => {
                        order = Order::parse(v)
                            .ok_or_else(|| Error::spec("ops", item, format!("unknown order `{v}`")))?
                    }
                    "cache" => {
                        cache = CachePolicy::parse(v)
                            .ok_or_else(|| Error::spec("ops", item, format!("unknown cache policy `{v}`")))?
                    }
                    _ => {
                        return Err(Error::spec(
                            "ops",
                            item,
                            format!("unknown phase key `{k}` (workers, round_robin, layout, order, cache)"),
                        ));
                    }
                }
            } else if let Some(o) = Order::parse(m) {
                order = o;
            } else if let Some(c) = CachePolicy::parse(m) {
                cache = c;
            } else {
                return Err(Error::spec(
                    "ops",
                    item,
                    format!(
                        "unknown modifier `{m}` (seq, reverse, random, cold, warm, asis, workers=N, round_robin=R, layout=L)"
                    ),
                ));
            }
        }
        let base = item.to_string();
        let repeats =
            phases.iter().filter(|p| p.name == base || p.name.starts_with(&format!("{base}#"))).count();
        let name = if repeats == 0 { base } else { format!("{base}#{}", repeats + 1) };
        phases.push(Phase { name, op, order, cache, workers, round_robin, layout });
    }
    if phases.is_empty() {
        return Err(Error::spec("ops", values.join(","), "at least one phase is needed"));
    }
    Ok(phases)
}

/// Resolves parameters into a validated spec. Touches the file system only to check that the
/// target directories exist and are writable.
pub fn resolve(params: &Params, env: &ResolveEnv) -> Result<Spec> {
    for key in params.0.keys() {
        if !PARAMS.iter().any(|d| d.key == key) {
            return Err(Error::spec(key, "", "unknown parameter"));
        }
    }
    // A strategy sets defaults of its own (workers, ops, layout, size from iters).
    let with_strategy = crate::strategy::spec::with_defaults(params, env.ram_bytes)?;
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

    let workers = parse_u64("workers", get("workers").unwrap_or("1"))?;
    if workers == 0 || workers > 4096 {
        return Err(Error::spec("workers", workers, "must be between 1 and 4096"));
    }
    let size_bytes = size_of("size", DEFAULT_SIZE)?;
    let bs_bytes = size_of("bs", "1MiB")?;
    if bs_bytes > size_bytes {
        return Err(Error::spec(
            "bs",
            get("bs").unwrap_or(""),
            format!("larger than size ({size_bytes} bytes)"),
        ));
    }
    if size_bytes % bs_bytes != 0 {
        return Err(Error::spec(
            "size",
            get("size").unwrap_or(""),
            format!("not a multiple of bs ({bs_bytes} bytes)"),
        ));
    }
    if bs_bytes > u32::MAX as u64 {
        return Err(Error::spec("bs", get("bs").unwrap_or(""), "must be below 4 GiB"));
    }

    let layout_s = get("layout").unwrap_or("file-per-worker");
    let layout = Layout::parse(layout_s).ok_or_else(|| {
        Error::spec("layout", layout_s, format!("unknown layout (one of: {})", Layout::NAMES.join(", ")))
    })?;
    let order_s = get("order").unwrap_or("seq");
    let order = Order::parse(order_s)
        .ok_or_else(|| Error::spec("order", order_s, "unknown order (seq, reverse, random)"))?;
    let cache_s = get("cache").unwrap_or("cold");
    let cache = CachePolicy::parse(cache_s)
        .ok_or_else(|| Error::spec("cache", cache_s, "unknown cache policy (cold, warm, asis)"))?;
    let default_ops: Vec<String> = DEFAULT_OPS.iter().map(|s| s.to_string()).collect();
    let phases = parse_phases(params.0.get("ops").unwrap_or(&default_ops), cache, order)?;

    let engine = get("engine").unwrap_or("psync").to_string();
    let engine_def = crate::engine::find(&engine).ok_or_else(|| {
        Error::spec(
            "engine",
            &engine,
            format!("unknown engine (one of: {})", crate::engine::names().join(", ")),
        )
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
    let allow_device =
        crate::device::resolve_allowed(params.0.get("allow_device").map_or(&[][..], |v| v), &env.cwd)?;
    let mut dirs = Vec::new();
    for d in &dir_values {
        dirs.push(check_dir(d, &env.cwd, &allow_device)?);
    }
    if verify {
        if !engine_def.caps.real_io {
            return Err(Error::spec("verify", "true", format!("engine {engine} moves no data to verify")));
        }
        if bs_bytes < crate::verify::MIN_BLOCK {
            return Err(Error::spec(
                "bs",
                get("bs").unwrap_or(""),
                format!(
                    "verify needs blocks of at least {} bytes (for the header)",
                    crate::verify::MIN_BLOCK
                ),
            ));
        }
    }
    let reuse = match get("reuse").map(str::trim).filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => {
            let id = v.strip_prefix(crate::workdir::PREFIX).unwrap_or(v);
            if !crate::workdir::valid_run_id(id) {
                return Err(Error::spec(
                    "reuse",
                    v,
                    "not a run id (the RUNID of a kept .iolab-RUNID directory)",
                ));
            }
            if let Some(p) = phases.iter().find(|p| p.op != OpKind::Read) {
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
        let align = dirs.iter().map(|d| crate::host::direct_io_alignment(d)).max().unwrap_or(4096);
        if bs_bytes % align != 0 {
            return Err(Error::spec(
                "bs",
                get("bs").unwrap_or(""),
                format!("O_DIRECT needs bs to be a multiple of {align} bytes on this file system"),
            ));
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
    if drop_caches && !phases.iter().any(|p| p.cache == CachePolicy::Cold) {
        return Err(Error::spec("drop_caches", "true", "only applies to cold phases"));
    }
    for p in &phases {
        if p.op == OpKind::Write && p.cache == CachePolicy::Warm {
            return Err(Error::spec(
                "ops",
                &p.name,
                "a write phase starts from new empty files, which cannot be warm (use rewrite)",
            ));
        }
    }

    let spec = Spec {
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
        engine,
        direct,
        sync,
        sync_call: eo.sync_call,
        open_sync,
        prealloc,
        drop_caches,
        reps: reps as u32,
        keep,
        warmup: warmup as u32,
        settle_ns,
        prime_memory_bytes,
        interleave,
        files: access.files,
        round_robin: access.round_robin,
        stripe_unit_bytes: access.stripe_unit_bytes,
        stripe_count: access.stripe_count,
        launcher: access.launcher,
        start: access.start,
        latency: access.latency,
        verify,
        allow_device,
        reuse,
        iodepth: eo.iodepth,
        window_bytes: eo.window_bytes,
        mem_len_bytes: eo.mem_len_bytes,
        mem_stride_bytes: eo.mem_stride_bytes,
        strategy: None,
        iters: None,
        comptime_ns: None,
    };
    if spec.verify && spec.mem_len_bytes.is_some() {
        return Err(Error::spec(
            "verify",
            "true",
            "verification headers are not built for strided memory (mem_len/mem_stride); use contiguous memory",
        ));
    }
    layout::check(&spec, env)?;
    let mut spec = spec;
    crate::strategy::spec::resolve_into(params, &mut spec)?;
    if let Some(len) = spec.mem_len_bytes {
        let piece = crate::plan::piece_len(&spec);
        if piece % len != 0 {
            return Err(Error::spec(
                "mem_len",
                len,
                format!(
                    "each op moves {piece} bytes (a block split at the stripe unit), not a multiple of mem_len"
                ),
            ));
        }
    }
    Ok(spec)
}

fn check_dir(d: &str, cwd: &Path, allow_device: &[PathBuf]) -> Result<PathBuf> {
    let p = if Path::new(d).is_absolute() { PathBuf::from(d) } else { cwd.join(d) };
    let meta = std::fs::metadata(&p).map_err(|e| Error::spec("dirs", d, format!("cannot use: {e}")))?;
    let canon = p.canonicalize().map_err(|e| Error::spec("dirs", d, format!("cannot resolve: {e}")))?;
    crate::device::check_target(d, &canon, &meta, allow_device)?;
    if !meta.is_dir() {
        return Err(Error::spec("dirs", d, "not a directory"));
    }
    if let Err(e) = crate::sys::writable(&p) {
        return Err(Error::spec("dirs", d, format!("not writable: {e}")));
    }
    Ok(canon)
}

impl Spec {
    /// The spec as parameters again, so it can be printed as TOML, stored and re-run.
    pub fn to_params(&self) -> Params {
        let mut p = Params::default();
        let mut set = |k: &str, v: Vec<String>| {
            p.0.insert(k.to_string(), v);
        };
        set("name", vec![self.name.clone()]);
        set("dirs", self.dirs.iter().map(|d| d.display().to_string()).collect());
        set("ops", self.phases.iter().map(|ph| ph.written().to_string()).collect());
        set("workers", vec![self.workers.to_string()]);
        set("size", vec![fmt_size_spec(self.size_bytes)]);
        set("bs", vec![fmt_size_spec(self.bs_bytes)]);
        set("layout", vec![self.layout.name().into()]);
        set("order", vec![self.order.name().into()]);
        set("cache", vec![self.cache.name().into()]);
        set("seed", vec![self.seed.to_string()]);
        set("engine", vec![self.engine.clone()]);
        set("direct", vec![self.direct.to_string()]);
        set("sync", vec![self.sync.label()]);
        set("sync_call", vec![serde_json::to_value(self.sync_call).unwrap().as_str().unwrap().into()]);
        set("open_sync", vec![serde_json::to_value(self.open_sync).unwrap().as_str().unwrap().into()]);
        set("prealloc", vec![self.prealloc.to_string()]);
        set("drop_caches", vec![self.drop_caches.to_string()]);
        set("reps", vec![self.reps.to_string()]);
        set("keep", vec![self.keep.to_string()]);
        set("warmup", vec![self.warmup.to_string()]);
        set("settle", vec![format!("{}ns", self.settle_ns)]);
        set("prime_memory", vec![fmt_size_spec(self.prime_memory_bytes)]);
        set("interleave", vec![self.interleave.label()]);
        if self.layout.per_worker_files() && self.files != 0 && self.files != self.workers {
            set("files", vec![self.files.to_string()]);
        }
        if self.round_robin != 1 {
            set("round_robin", vec![self.round_robin.to_string()]);
        }
        if let Some(u) = self.stripe_unit_bytes {
            set("stripe_unit", vec![fmt_size_spec(u)]);
        }
        if let Some(c) = self.stripe_count {
            set("stripe_count", vec![c.to_string()]);
        }
        set("launcher", vec![serde_json::to_value(self.launcher).unwrap().as_str().unwrap().into()]);
        set("start", vec![serde_json::to_value(self.start).unwrap().as_str().unwrap().into()]);
        set("latency", vec![serde_json::to_value(self.latency).unwrap().as_str().unwrap().into()]);
        set("verify", vec![self.verify.to_string()]);
        if !self.allow_device.is_empty() {
            set("allow_device", self.allow_device.iter().map(|d| d.display().to_string()).collect());
        }
        if let Some(r) = &self.reuse {
            set("reuse", vec![r.clone()]);
        }
        set("iodepth", vec![self.iodepth.to_string()]);
        if let Some(w) = self.window_bytes {
            set("window", vec![fmt_size_spec(w)]);
        }
        if let (Some(l), Some(st)) = (self.mem_len_bytes, self.mem_stride_bytes) {
            set("mem_len", vec![fmt_size_spec(l)]);
            set("mem_stride", vec![fmt_size_spec(st)]);
        }
        if let Some(s) = self.strategy {
            set("strategy", vec![s.name().into()]);
            set("iters", vec![self.iters.unwrap_or(0).to_string()]);
            set("comptime", vec![crate::strategy::spec::fmt_duration_spec(self.comptime_ns.unwrap_or(0))]);
        }
        p
    }

    /// The strided memory layout, if memory is strided.
    pub fn mem(&self) -> Option<crate::mem::Strided> {
        match (self.mem_len_bytes, self.mem_stride_bytes) {
            (Some(len), Some(stride)) => {
                Some(crate::mem::Strided { len: len as usize, stride: stride as usize })
            }
            _ => None,
        }
    }

    /// Bytes of data one repetition keeps on disk at most (what preflight checks).
    pub fn data_bytes(&self) -> u64 {
        if self.layout.per_worker_files() {
            self.size_bytes * self.file_count() as u64
        } else {
            self.size_bytes * self.workers as u64
        }
    }

    /// Files in the set of the per-worker layouts (one per worker unless `files` says).
    pub fn file_count(&self) -> u32 {
        if self.files == 0 { self.workers } else { self.files }
    }

    /// A phase's worker count.
    pub fn phase_workers(&self, ph: &Phase) -> u32 {
        ph.workers.unwrap_or(self.workers)
    }

    /// A phase's round-robin width.
    pub fn phase_round_robin(&self, ph: &Phase) -> u32 {
        ph.round_robin.unwrap_or(self.round_robin)
    }

    /// A phase's access layout.
    pub fn phase_layout(&self, ph: &Phase) -> Layout {
        ph.layout.unwrap_or(self.layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> ResolveEnv {
        ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }
    }

    fn params(pairs: &[(&str, &str)]) -> Params {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(k, v.split(',').map(String::from).collect()).unwrap();
        }
        p
    }

    fn err(pairs: &[(&str, &str)]) -> (String, String) {
        match resolve(&params(pairs), &env()) {
            Err(Error::Spec { field, value, .. }) => (field, value),
            other => panic!("expected a spec error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_resolve() {
        let s = resolve(&Params::default(), &env()).unwrap();
        assert_eq!(s.workers, 1);
        assert_eq!(s.bs_bytes, 1 << 20);
        assert_eq!(s.phases.len(), 3);
        assert_eq!(s.phases[0].op, OpKind::Write);
        assert_eq!(s.phases[1].cache, CachePolicy::Cold);
        assert_eq!(s.phases[2].cache, CachePolicy::Warm);
        assert_eq!(s.sync, SyncPolicy::End);
    }

    #[test]
    fn phases_with_modifiers_and_unique_names() {
        let s = resolve(&params(&[("ops", "write,read:reverse:cold,read,read")]), &env()).unwrap();
        let names: Vec<_> = s.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["write", "read:reverse:cold", "read", "read#2"]);
        assert_eq!(s.phases[1].order, Order::Reverse);
    }

    #[test]
    fn bad_values_name_their_field() {
        assert_eq!(err(&[("size", "0")]).0, "size");
        assert_eq!(err(&[("size", "-4k")]).0, "size");
        assert_eq!(err(&[("bs", "2MiB"), ("size", "1MiB")]).0, "bs");
        assert_eq!(err(&[("bs", "3KiB"), ("size", "10KiB")]).0, "size");
        assert_eq!(err(&[("engine", "warp")]), ("engine".into(), "warp".into()));
        assert_eq!(err(&[("layout", "zigzag")]).0, "layout");
        assert_eq!(err(&[("order", "sideways")]).0, "order");
        assert_eq!(err(&[("workers", "0")]).0, "workers");
        assert_eq!(err(&[("sync", "every:0")]).0, "sync");
        assert_eq!(err(&[("dirs", "/definitely/not/here")]).0, "dirs");
        assert_eq!(err(&[("direct", "true"), ("bs", "1000"), ("size", "1MB")]).0, "bs");
        assert_eq!(err(&[("ops", "write,scribble")]).0, "ops");
        assert_eq!(err(&[("ops", "write:warm")]).0, "ops");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let mut p = Params::default();
        assert!(p.set("blocksize", vec!["4k".into()]).is_err());
        assert!(Params::from_toml("blocksize = \"4k\"").is_err());
    }

    #[test]
    fn toml_with_phase_tables() {
        let p = Params::from_toml(
            r#"
            name = "t"
            workers = 2
            size = "1MiB"
            bs = "4KiB"
            direct = false
            [[phases]]
            op = "write"
            [[phases]]
            op = "read"
            order = "random"
            cache = "warm"
            "#,
        )
        .unwrap();
        let s = resolve(&p, &env()).unwrap();
        assert_eq!(s.workers, 2);
        assert_eq!(s.phases[1].order, Order::Random);
        assert_eq!(s.phases[1].cache, CachePolicy::Warm);
    }

    #[test]
    fn spec_round_trips_through_params() {
        let s =
            resolve(&params(&[("ops", "write,read:random:warm"), ("sync", "every:4MiB")]), &env()).unwrap();
        assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
        let s = resolve(
            &params(&[
                ("warmup", "2"),
                ("settle", "1.5s"),
                ("prime_memory", "0.25xRAM"),
                ("interleave", "shuffle"),
            ]),
            &env(),
        )
        .unwrap();
        assert_eq!((s.warmup, s.settle_ns, s.prime_memory_bytes), (2, 1_500_000_000, 1 << 28));
        assert_eq!(s.interleave, Interleave::Shuffle(1));
        assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
    }

    #[test]
    fn experiment_controls_are_checked() {
        assert_eq!(err(&[("settle", "soon")]).0, "settle");
        assert_eq!(err(&[("prime_memory", "2xRAM")]).0, "prime_memory");
        assert_eq!(err(&[("interleave", "zigzag")]).0, "interleave");
        assert_eq!(err(&[("interleave", "shuffle:x")]).0, "interleave");
        assert_eq!(err(&[("warmup", "-1")]).0, "warmup");
    }
}
