//! Turns TOML files and CLI flags into one validated experiment [`Spec`].
//!
//! Every parameter is declared once, in [`PARAMS`]. TOML keys, CLI flags and sweep axes all
//! become the same `key = value` strings in a [`Params`] map, and [`resolve`] parses and checks
//! them into a typed [`Spec`]. Every error names the parameter and the value at fault.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::schedule::Interleave;
use crate::units::{fmt_size_spec, parse_size};

mod layout;
mod params;
mod resolve;

pub use params::{PARAMS, ParamDef, Params};
pub use resolve::{ResolveEnv, resolve};

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

/// Helpers for tests that resolve specs.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Params, ResolveEnv};

    /// A machine with 1 GiB of RAM whose current directory is the temporary directory.
    pub fn env() -> ResolveEnv {
        ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }
    }

    /// Parameters from `(key, values)` pairs, the values split at `sep`.
    pub fn params(pairs: &[(&str, &str)], sep: char) -> Params {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(k, v.split(sep).map(String::from).collect()).unwrap();
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    use crate::spec::testing::env;

    fn params(pairs: &[(&str, &str)]) -> Params {
        crate::spec::testing::params(pairs, ',')
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
