//! Command-line syntax (clap derive). Spec flags are plain strings here: they become spec
//! parameters and are parsed and checked in one place, [`crate::experiment::resolve`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::error::Result;
use crate::experiment::Params;

#[derive(Parser, Debug)]
#[command(
    name = "iolab",
    version,
    about = "Storage I/O experiments with repeated runs, honest statistics and a verified cache state",
    after_help = "Run `iolab run` with no arguments for a short characterisation of the current directory's file system."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run an experiment (with no arguments: the default experiment on the current directory)
    Run(RunArgs),
    /// Print what an experiment would do (files, bytes, ops, space, cache policy); touches nothing
    Plan(RunArgs),
    /// Read the results store
    Results(ResultsArgs),
    /// Print host and storage facts for a directory
    Info(InfoArgs),
    /// List the I/O engines and what they can do
    Engines,
    /// Reproduce an experiment of the studies from its preset (`--list` to see them)
    Reproduce(ReproduceArgs),
    /// Draw a stored experiment as SVG or PNG (rate vs a swept parameter, bars, workers,
    /// latency CDF or histogram, per-op trace)
    Plot(crate::cmd::plot::PlotArgs),
    /// Write a stored experiment as one self-contained HTML page (or, with --compare, every host)
    Report(crate::cmd::plot::ReportArgs),
    /// Internal: one worker process of `launcher = process` (reads its job on stdin)
    #[command(name = "__worker", hide = true)]
    Worker,
    /// Internal: one worker process of a strategy with `launcher = process`
    #[command(name = "__strategy-worker", hide = true)]
    StrategyWorker,
    /// Remove iolab work directories left behind (by a crash, kill -9 or --keep); nothing else
    Clean(CleanArgs),
}

/// Flags that set spec parameters; each maps to the parameter of the same name.
#[derive(Args, Debug, Default, Clone)]
pub struct SpecArgs {
    /// Experiment file (TOML); flags given here override its values
    pub spec: Option<PathBuf>,
    /// Target directory (repeatable); iolab works in its own subdirectory of each
    #[arg(long = "dir", value_name = "DIR")]
    pub dirs: Vec<String>,
    /// Phases in order, e.g. write,read:cold,read:warm (also rewrite; :seq|:reverse|:random)
    #[arg(long, value_name = "OPS")]
    pub op: Option<String>,
    /// Bytes per worker: 4096, 4KiB, 4k, 4kB (=4000), 1MiB, 2GiB, 2xRAM
    #[arg(long, allow_hyphen_values = true)]
    pub size: Option<String>,
    /// Bytes per operation
    #[arg(long, allow_hyphen_values = true)]
    pub bs: Option<String>,
    /// Number of workers
    #[arg(long, allow_hyphen_values = true)]
    pub workers: Option<String>,
    /// file-per-worker | shared
    #[arg(long)]
    pub layout: Option<String>,
    /// seq | reverse | random
    #[arg(long)]
    pub order: Option<String>,
    /// Seed for random order and data
    #[arg(long, allow_hyphen_values = true)]
    pub seed: Option<String>,
    /// I/O engine (`list` to list them)
    #[arg(long)]
    pub engine: Option<String>,
    /// Open with O_DIRECT
    #[arg(long)]
    pub direct: bool,
    /// none | end | each | every:SIZE
    #[arg(long)]
    pub sync: Option<String>,
    /// fsync | fdatasync | msync (msync: engine mmap only)
    #[arg(long)]
    pub sync_call: Option<String>,
    /// none | sync | dsync (O_SYNC / O_DSYNC)
    #[arg(long)]
    pub open_sync: Option<String>,
    /// Preallocate files with fallocate before write phases
    #[arg(long)]
    pub prealloc: bool,
    /// cold | warm | asis
    #[arg(long)]
    pub cache: Option<String>,
    /// With cold phases, also drop all caches (root only)
    #[arg(long)]
    pub drop_caches: bool,
    /// Repetitions
    #[arg(long, allow_hyphen_values = true)]
    pub reps: Option<String>,
    /// Keep the data files after the run
    #[arg(long)]
    pub keep: bool,
    /// Target directories, comma-separated (an alias of --dir; a dir may repeat)
    #[arg(long, value_name = "DIR,DIR,...")]
    pub targets: Option<String>,
    /// Files in the set (file-per-worker, striped-per-worker); default one per worker
    #[arg(long, allow_hyphen_values = true)]
    pub files: Option<String>,
    /// K files per worker, visited round-robin (block 1 of each, then block 2, ...)
    #[arg(long, allow_hyphen_values = true, value_name = "K")]
    pub files_per_worker: Option<String>,
    /// Files a worker visits at a time, block by block
    #[arg(long, allow_hyphen_values = true, value_name = "R")]
    pub round_robin: Option<String>,
    /// Stripe unit of the striped layouts
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE")]
    pub stripe_unit: Option<String>,
    /// Stripe over the first N target dirs (default all)
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub stripe_count: Option<String>,
    /// thread | process
    #[arg(long)]
    pub launcher: Option<String>,
    /// barrier | free
    #[arg(long)]
    pub start: Option<String>,
    /// off | histogram | trace
    #[arg(long)]
    pub latency: Option<String>,
    /// Keep every op's file, offset, start and duration in the store (latency = trace)
    #[arg(long)]
    pub trace: bool,
    /// A label for the experiment
    #[arg(long)]
    pub name: Option<String>,
    /// Write a verify header (run, file, offset, generation, checksum) into every block and
    /// check every block read
    #[arg(long)]
    pub verify: bool,
    /// Allow this exact path under /dev as a target (repeatable); devices in use are always
    /// refused
    #[arg(long = "allow-device", value_name = "PATH")]
    pub allow_device: Vec<String>,
    /// Read the files a kept run (--keep) left, instead of writing new ones (read phases only)
    #[arg(long, value_name = "RUNID")]
    pub reuse: Option<String>,
    /// Ops in flight per worker (asynchronous engines: uring)
    #[arg(long, allow_hyphen_values = true)]
    pub iodepth: Option<String>,
    /// mmap window size (engine mmap; default: the whole file)
    #[arg(long, allow_hyphen_values = true)]
    pub window: Option<String>,
    /// Strided memory: bytes taken from every --mem-stride bytes
    #[arg(long, allow_hyphen_values = true)]
    pub mem_len: Option<String>,
    /// Strided memory: distance between successive --mem-len pieces
    #[arg(long, allow_hyphen_values = true)]
    pub mem_stride: Option<String>,
    /// Compute/I-O overlap strategy: S1A | S1B | S2 | S3 | S5 (Benson et al. 2003)
    #[arg(long)]
    pub strategy: Option<String>,
    /// Strategies: iterations of the compute/write loop
    #[arg(long, allow_hyphen_values = true)]
    pub iters: Option<String>,
    /// Strategies: simulated compute time, e.g. 2s (see docs/strategies.md)
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub comptime: Option<String>,
    /// Set any spec parameter: --set key=value (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Sweep axis: KEY=V1,V2,... or KEY=A..B[:STEP|:xFACTOR] (repeatable; the product of all)
    #[arg(long, value_name = "KEY=VALUES")]
    pub sweep: Vec<String>,
    /// Axes that advance together instead of multiplying: --zip A,B (repeatable)
    #[arg(long, value_name = "AXES")]
    pub zip: Vec<String>,
    /// Warm-up runs of each point, stored but not in the statistics
    #[arg(long, allow_hyphen_values = true)]
    pub warmup: Option<String>,
    /// Sleep before each run, e.g. 2s
    #[arg(long, value_name = "DURATION")]
    pub settle: Option<String>,
    /// Touch and free this much memory just before each run, e.g. 4GiB
    #[arg(long, value_name = "SIZE")]
    pub prime_memory: Option<String>,
    /// Run order: round-robin | shuffle | shuffle:SEED
    #[arg(long)]
    pub interleave: Option<String>,
}

impl SpecArgs {
    /// The parameters these flags set (TOML file first, then flags over it).
    pub fn params(&self) -> Result<Params> {
        let mut p = match &self.spec {
            Some(path) => {
                let text = crate::env::input::read_spec_file(path)?;
                let mut p = Params::from_toml(&text)?;
                if !p.0.contains_key("name")
                    && let Some(stem) = path.file_stem()
                {
                    p.set_one("name", stem.to_string_lossy())?;
                }
                p
            }
            None => Params::default(),
        };
        let flags: [(&str, &Option<String>); 26] = [
            ("ops", &self.op),
            ("size", &self.size),
            ("bs", &self.bs),
            ("workers", &self.workers),
            ("layout", &self.layout),
            ("order", &self.order),
            ("seed", &self.seed),
            ("engine", &self.engine),
            ("sync", &self.sync),
            ("sync_call", &self.sync_call),
            ("open_sync", &self.open_sync),
            ("cache", &self.cache),
            ("reps", &self.reps),
            ("name", &self.name),
            ("warmup", &self.warmup),
            ("settle", &self.settle),
            ("prime_memory", &self.prime_memory),
            ("interleave", &self.interleave),
            ("reuse", &self.reuse),
            ("iodepth", &self.iodepth),
            ("window", &self.window),
            ("mem_len", &self.mem_len),
            ("mem_stride", &self.mem_stride),
            ("strategy", &self.strategy),
            ("iters", &self.iters),
            ("comptime", &self.comptime),
        ];
        for (k, v) in flags {
            if let Some(v) = v {
                p.set_one(k, v)?;
            }
        }
        for (k, on) in [
            ("direct", self.direct),
            ("prealloc", self.prealloc),
            ("drop_caches", self.drop_caches),
            ("keep", self.keep),
            ("verify", self.verify),
        ] {
            if on {
                p.set_one(k, "true")?;
            }
        }
        if !self.dirs.is_empty() {
            p.set("dirs", self.dirs.clone())?;
        }
        let access: [(&str, &Option<String>); 9] = [
            ("files", &self.files),
            ("files_per_worker", &self.files_per_worker),
            ("round_robin", &self.round_robin),
            ("stripe_unit", &self.stripe_unit),
            ("stripe_count", &self.stripe_count),
            ("launcher", &self.launcher),
            ("start", &self.start),
            ("latency", &self.latency),
            ("targets", &self.targets),
        ];
        for (k, v) in access {
            if let Some(v) = v {
                let values =
                    if k == "targets" { v.split(',').map(String::from).collect() } else { vec![v.clone()] };
                p.set(k, values)?;
            }
        }
        if self.trace {
            p.set_one("latency", "trace")?;
        }
        if !self.allow_device.is_empty() {
            p.set("allow_device", self.allow_device.clone())?;
        }
        for kv in &self.set {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| crate::error::Error::spec("set", kv, "expected KEY=VALUE"))?;
            let values = if matches!(k, "dirs" | "dir" | "ops" | "op" | "targets") {
                v.split(',').map(String::from).collect()
            } else {
                vec![v.to_string()]
            };
            p.set(k, values)?;
        }
        Ok(p)
    }
}

/// Where results go and how they are printed.
#[derive(Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// Print JSON (the versioned contract of docs/json.md) instead of the table
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (one row per worker per repetition)
    #[arg(long)]
    pub csv: bool,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not store the results
    #[arg(long)]
    pub no_store: bool,
    /// No progress display
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub command: ResultsCommand,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum ResultsCommand {
    /// List experiments, newest first
    List,
    /// Show one experiment (an id, a unique prefix of one, or `last`)
    Show {
        id: String,
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        #[arg(long)]
        csv: bool,
    },
    /// Export one experiment with every raw repetition
    Export {
        id: String,
        #[arg(long, conflicts_with = "csv", required_unless_present = "csv")]
        json: bool,
        #[arg(long)]
        csv: bool,
        /// Write to this file instead of stdout
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Compare per-host figures (the SLAC table, from L1/L4 experiments in the store)
    Compare {
        /// What each row is: host (one row per host and file system)
        #[arg(long, default_value = "host", value_parser = ["host"])]
        by: String,
        /// text | csv | markdown | html (one self-contained page with the table and its graph)
        #[arg(long, default_value = "text", value_parser = ["text", "csv", "markdown", "html"])]
        format: String,
    },
    /// Merge another store (SQLite file) or a run's JSON into this store; runs already
    /// present are skipped
    Import { path: PathBuf },
    /// The strategy tables of an experiment run with --strategy: Benson et al.'s Figure 1
    /// layout (best time per strategy, compute time and write mechanism, with the sync size and
    /// window that gave it) and where each role's time went. Several ids make one table of
    /// all their points (a grid run in parts)
    Strategies {
        #[arg(required = true, num_args = 1..)]
        ids: Vec<String>,
        /// text | markdown | csv (csv: the Figure 1 cells, one row each)
        #[arg(long, default_value = "text", value_parser = ["text", "markdown", "csv"])]
        format: String,
    },
    /// Export the per-op traces of an experiment run with --trace (CSV, one row per op)
    Trace {
        id: String,
        /// Only this phase (its name as the table shows it, e.g. read:cold)
        #[arg(long)]
        phase: Option<String>,
        /// Only this repetition (0-based)
        #[arg(long)]
        rep: Option<u32>,
        /// JSON lines (one object per op) instead of CSV
        #[arg(long)]
        json: bool,
        /// Write to this file instead of stdout
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Preset id (R1..R10, B.., C1..C7, L1..L4)
    #[arg(required_unless_present = "list")]
    pub id: Option<String>,
    /// List every preset: study, title, what it needs, and whether this build can run it
    #[arg(long, conflicts_with_all = ["print"])]
    pub list: bool,
    /// quick (under a minute), default, or paper (the study's full grid and repetitions)
    #[arg(long, default_value = "default")]
    pub scale: String,
    /// Print the preset's experiment file at this scale (to copy, edit and `iolab run`)
    #[arg(long)]
    pub print: bool,
    /// Target directory (repeatable); fewer than the preset's targets are reused in turn
    #[arg(long = "dir", value_name = "DIR")]
    pub dirs: Vec<String>,
    /// Set any spec parameter: --set key=value (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// Target directories to clean (their .iolab-* work directories), or work directories
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Show what would be removed; remove nothing
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Also remove work directories made on another host (only if no iolab runs there)
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Directory to describe (default: the current directory)
    pub dir: Option<PathBuf>,
    /// Instead, show where these files' extents lie on the device (FIEMAP) and how often
    /// they alternate between the files
    #[arg(long, num_args = 1.., value_name = "FILE", conflicts_with = "dir")]
    pub layout: Vec<PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}
