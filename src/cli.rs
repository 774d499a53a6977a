//! Command-line syntax (clap derive). Spec flags are plain strings here: they become spec
//! parameters and are parsed and checked in one place, [`crate::spec::resolve`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::error::Result;
use crate::spec::Params;

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
    /// A label for the experiment
    #[arg(long)]
    pub name: Option<String>,
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
    /// Set any spec parameter: --set key=value (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SpecArgs {
    /// The parameters these flags set (TOML file first, then flags over it).
    pub fn params(&self) -> Result<Params> {
        let mut p = match &self.spec {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| crate::error::Error::spec("spec file", path.display(), e.to_string()))?;
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
        let flags: [(&str, &Option<String>); 18] = [
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
            ("iodepth", &self.iodepth),
            ("window", &self.window),
            ("mem_len", &self.mem_len),
            ("mem_stride", &self.mem_stride),
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
        ] {
            if on {
                p.set_one(k, "true")?;
            }
        }
        if !self.dirs.is_empty() {
            p.set("dirs", self.dirs.clone())?;
        }
        for kv in &self.set {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| crate::error::Error::spec("set", kv, "expected KEY=VALUE"))?;
            let values = if matches!(k, "dirs" | "dir" | "ops" | "op") {
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
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Directory to describe (default: the current directory)
    pub dir: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}
