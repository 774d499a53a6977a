//! The words of an experiment: a validated [`Spec`] (what to run) and the enums it is made of
//! (ops, layouts, orders, sync and cache policies, launchers, strategies), and of a tuning job
//! ([`job`]). Plain data that every layer reads; nothing here parses user input or touches the
//! machine. Every parameter is declared once, in [`crate::experiment::PARAMS`]. TOML keys, CLI
//! flags and sweep axes all become the same `key = value` strings in a
//! [`crate::experiment::Params`] map, and [`crate::experiment::resolve`] parses and checks them
//! into a typed [`Spec`]. Every error names the parameter and the value at fault.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub mod bound;
pub use bound::TimeBound;
mod interleave;
pub use interleave::Interleave;
mod launcher;
pub use launcher::{Launcher, MpiIo, Reorder};
mod op;
pub use op::OpKind;
pub mod order;
pub use order::Order;
pub mod workload;
pub use workload::{BsSplit, RateLimit, RateProcess, ThinkTime, Workload};
pub mod job;
pub mod metadata;
pub use metadata::{ItemKind, MdCalls, MdDirs, Namespace};
pub mod servers;
pub use servers::{BlastTransport, ServerStore, Servers};
mod param_def;
pub mod params;
pub mod strategy;
pub use strategy::Strategy;

use crate::units::fmt_size_spec;

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

/// The layouts' words, once: `NAMES` and the `--layout` help line `CHOICES` ("a | b") both.
macro_rules! layout_words {
    ($first:literal $(, $rest:literal)* $(,)?) => {
        pub const NAMES: &'static [&'static str] = &[$first $(, $rest)*];
        pub const CHOICES: &'static str = concat!($first $(, " | ", $rest)*);
    };
}

impl Layout {
    layout_words!("file-per-worker", "shared", "shared-strided", "striped", "striped-per-worker");
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
                let n = crate::units::parse_abs_size(size).map_err(|e| e.0)?;
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

impl SyncCall {
    pub const ALL: [SyncCall; 3] = [SyncCall::Fsync, SyncCall::Fdatasync, SyncCall::Msync];

    /// The call's name, as in the spec, the JSON and error messages.
    pub fn name(self) -> &'static str {
        match self {
            SyncCall::Fsync => "fsync",
            SyncCall::Fdatasync => "fdatasync",
            SyncCall::Msync => "msync",
        }
    }

    /// The call named `s`.
    pub fn parse(s: &str) -> Option<SyncCall> {
        SyncCall::ALL.into_iter().find(|c| c.name() == s)
    }
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
    /// The phase works on the first N files of the set only (per-worker layouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<u32>,
    /// This phase's own time bound (`runtime=D`, `stonewall=D`; 0: none), else the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_ns: Option<u64>,
    /// A mixed phase's own read share, percent (`rw:rwmixread=70`), else the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwmixread: Option<u8>,
    /// This phase's own rate limit (`rate=SIZE`, `rate_iops=N`; 0: none), else the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bytes_per_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<u64>,
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
    /// `engine = mpiio`: its mode and hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpiio: Option<MpiIo>,
    pub direct: bool,
    pub sync: SyncPolicy,
    pub sync_call: SyncCall,
    pub open_sync: OpenSync,
    pub prealloc: bool,
    #[serde(default)] // alloc = block: each block fallocated just before it is written
    pub alloc_block: bool,
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
    /// Files in the set of the per-worker layouts; 1 for the shared ones (0: one per worker).
    #[serde(default)]
    pub files: u32,
    /// Default round-robin width of phases.
    #[serde(default = "one")]
    pub round_robin: u32,
    /// The shared layout in IOR's segments (`-s`): each worker's `size` is this many blocks of
    /// `size / segments` bytes, one in each segment of the file (1: one contiguous segment).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub segments: u32,
    /// Stripe unit of the striped layouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_unit_bytes: Option<u64>,
    /// Components per striped file: the first `stripe_count` dirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_count: Option<u32>,
    /// How the pieces of a block that spans several stripe units are issued.
    #[serde(default)]
    pub pieces: PiecesMode,
    #[serde(default)]
    pub launcher: Launcher,
    #[serde(default)]
    pub start: StartMode,
    /// MPI: which rank reads what another wrote (None: each rank its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_reads: Option<Reorder>,
    #[serde(default)]
    pub latency: LatencyMode,
    #[serde(default)] // a verification header in every block, checked on every read
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
    /// MPI: the ranks that serve the files (I/O-server ranks); None: every rank is a worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Servers>,
    /// Compute/I-O overlap strategy (docs/strategies.md); None: plain I/O workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// Iterations of a strategy's loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u64>,
    /// A strategy's compute time (the program spins `workers` x this in all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comptime_ns: Option<u64>,
    /// Every phase's time bound (docs/spec.md, "Time-bounded phases"): `runtime` or `stonewall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall_ns: Option<u64>,
    /// Stonewalled phases: every worker goes on to the most ops any worker had done.
    #[serde(default)]
    pub wear_out: bool,
    /// The namespace of the metadata phases (None: the run has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md: Option<Namespace>,
    /// The workload of the data phases: read share, block-size mix, rate limit, think time.
    #[serde(flatten)]
    pub workload: Workload,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
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

/// How the pieces of a striped block (one per stripe unit it spans) are issued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PiecesMode {
    /// One after another, each its own op.
    #[default]
    Serial,
    /// All together, as one op that ends when the last piece is done (as Intel CFS did).
    Parallel,
}

impl PiecesMode {
    pub fn name(self) -> &'static str {
        match self {
            PiecesMode::Serial => "serial",
            PiecesMode::Parallel => "parallel",
        }
    }
}

/// What is kept of each op's latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatencyMode {
    /// Nothing per op: the clock is read at the start, around commits and at the end.
    Off,
    /// An HDR histogram per worker.
    #[default]
    Histogram,
    /// The histogram plus every op's file, offset, start and duration.
    Trace,
}

/// Defaults: `iolab run` alone characterises this file system (write, commit at end, cold and
/// warm reads verified, five repetitions).
pub const DEFAULT_OPS: &[&str] = &["write", "read:cold", "read:warm"];
/// Default bytes per worker.
pub const DEFAULT_SIZE: &str = "512MiB";

impl Spec {
    /// Bytes of data one repetition keeps on disk at most (what preflight checks); `None` if
    /// that overflows 64 bits (resolution refuses such a spec).
    pub fn data_bytes(&self) -> Option<u64> {
        if self.layout.per_worker_files() {
            self.size_bytes.checked_mul(self.file_count() as u64)
        } else {
            self.size_bytes.checked_mul(self.workers as u64)
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
