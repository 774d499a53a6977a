//! Command-line syntax: every clap type (the spec flags, made from the parameter table, in
//! `spec_args.rs`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod spec_args;
pub use spec_args::{GROUPS, MPI_HEADING, SpecArgs, shown_default};

/// `iolab --version`: the version and the git revision built from (what every rank of a run
/// must share).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("IOLAB_GIT_REV"), ")");

#[derive(Parser, Debug)]
#[command(
    name = "iolab",
    version = VERSION,
    max_term_width = 100,
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
    #[command(after_help = run_after_help())]
    Run(RunArgs),
    /// Print what an experiment would do (files, bytes, ops, space, cache policy, an estimate of
    /// its time); touches nothing unless --calibrate
    #[command(after_help = PLAN_EXAMPLES)]
    Plan(PlanArgs),
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
    Plot(PlotArgs),
    /// Write a stored experiment as one self-contained HTML page (or, with --compare, every host)
    Report(ReportArgs),
    /// Find the fastest way to do a job on this machine, with confidence, within a time budget
    Tune(TuneArgs),
    /// Internal: one worker process of `launcher = process` (reads its job on stdin)
    #[command(name = "__worker", hide = true)]
    Worker,
    /// Internal: one worker process of a strategy with `launcher = process`
    #[command(name = "__strategy-worker", hide = true)]
    StrategyWorker,
    /// Remove iolab work directories left behind (by a crash, kill -9 or --keep); nothing else
    Clean(CleanArgs),
    /// Run an IOR command line as an iolab experiment (`iolab ior -b 16m -t 1m -F`; --help: its options)
    #[command(disable_help_flag = true)]
    Ior(ToolArgs),
    /// Run an mdtest command line as an iolab experiment (`iolab mdtest -n 1000 -u -F`; --help: its options)
    #[command(disable_help_flag = true)]
    Mdtest(ToolArgs),
    /// Run a fio job file as an iolab experiment (`iolab fio JOBFILE [--print]`, then any
    /// `iolab run` option over the translation)
    Fio(FioArgs),
}

/// `iolab fio JOBFILE`: the job file in the place of `iolab run`'s experiment file, and every
/// `iolab run` option over its translation.
#[derive(Args, Debug)]
pub struct FioArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Print the translated experiment file (each line commented by the fio option it came
    /// from) and run nothing
    #[arg(long, help_heading = "Output")]
    pub print: bool,
}

/// Another tool's command line, read by iolab's front end for it (with iolab's own output
/// options among its words).
#[derive(Args, Debug)]
pub struct ToolArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// Examples under `iolab run --help`: (command, what it does), one line each in 100 columns.
pub const RUN_EXAMPLES: &[(&str, &str)] = &[
    ("iolab run", "write, cold read, warm read; 5 runs"),
    ("iolab run --bs 4KiB --order random --runtime 30s", "random 4 KiB I/O, 30 s a phase (fio)"),
    ("iolab run --workers 4 --layout shared --op write,read:cold", "4 workers, one shared file"),
    ("iolab run --workers 4 --stonewall 60s --wear-out", "IOR's stonewall with wear-out"),
    ("iolab run --sweep bs=4KiB..1MiB:x4 --reps 3", "4 block sizes, 3 runs each"),
    ("iolab run examples/baseline.toml --json", "a TOML spec, JSON on stdout"),
];

/// Examples under `iolab plan --help`.
const PLAN_EXAMPLES: &str = "Examples:
  iolab plan --workers 3 --layout shared        what would run, its space and time
  iolab plan --size 8GiB --calibrate=64MiB      the time from a 64 MiB write and read measured first";

/// What `iolab run --help` ends with: its examples, where every parameter is documented, and
/// in a build without MPI that the MPI flags are left out.
fn run_after_help() -> String {
    let mut out = String::from("Examples:\n");
    for (cmd, what) in RUN_EXAMPLES {
        out += &format!("  {cmd:<58} {what}\n");
    }
    out += "\nEvery parameter, its default and the phase syntax: docs/spec.md; `--set KEY=VALUE` sets any.";
    if !crate::launch::HAS_MPI {
        out += "\nMPI and I/O-server flags are not shown: this iolab was built without the mpi feature \
                (cargo build --features mpi; docs/mpi.md).";
    }
    out
}

/// Where results go and how they are printed.
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Print JSON (the versioned contract of docs/json.md) instead of the table
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (one row per worker per repetition)
    #[arg(long)]
    pub csv: bool,
    /// The full table: every section (IOPS, rate over time, costs, file layout) and the whole
    /// legend, with each flag's advice
    #[arg(long, short = 'v', visible_alias = "verbose", conflicts_with_all = ["json", "csv"])]
    pub explain: bool,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not store the results
    #[arg(long, conflicts_with = "db")]
    pub no_store: bool,
    /// No progress display
    #[arg(long, short)]
    pub quiet: bool,
    /// When stderr is not a terminal (a batch job's output, a pipe): a plain progress line
    /// every TIME (10s unless told; 0: none). Under MPI, rank 0 shows every rank's count
    #[arg(long, value_name = "TIME")]
    pub progress_every: Option<String>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The memory to defeat: sizes given as a multiple of RAM (`0.25xRAM`) use SIZE instead of
    /// this machine's memory (its total, or its cgroup limit)
    #[arg(long, value_name = "SIZE", help_heading = "Workload")]
    pub ram: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// After the run, print its comparison against the stored experiment ID (an id, a unique
    /// prefix or `last`), as `iolab results compare ID NEW` does (`iolab run` only)
    #[arg(long, value_name = "ID", help_heading = "Output", conflicts_with_all = ["json", "csv", "no_store"])]
    pub compare_to: Option<String>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Before estimating the time, measure each engine the store has no similar runs of: one
    /// worker writes a file of SIZE (default 128 MiB) in the first target directory, commits,
    /// and reads it back cold; stored as experiment `calibration` (unless --no-store)
    #[arg(long, value_name = "SIZE", num_args = 0..=1, default_missing_value = "128MiB", require_equals = true)]
    pub calibrate: Option<String>,
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
        /// The full table: every section (IOPS, rate over time, costs, file layout) and the
        /// whole legend, with each flag's advice
        #[arg(long, short = 'v', visible_alias = "verbose", conflicts_with_all = ["json", "csv"])]
        explain: bool,
    },
    /// Export one experiment with every raw repetition: JSON (docs/json.md), or CSV with --csv
    Export {
        id: String,
        /// JSON, the versioned contract of docs/json.md (the default)
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// CSV: one row per worker per repetition
        #[arg(long)]
        csv: bool,
        /// Write to this file instead of stdout
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Replace an existing file that is not an earlier export of this kind
        #[arg(long, requires = "output")]
        force: bool,
    },
    /// Compare two experiments, before (A) and after (B): per shared phase B/A with its 95%
    /// interval and a verdict; or, without ids, per-host figures (the SLAC table, from L1/L4
    /// experiments in the store)
    Compare {
        /// A and B: ids, unique prefixes or `last` (with --baseline, only B; default `last`)
        #[arg(value_name = "ID", num_args = 0..=2)]
        ids: Vec<String>,
        /// A is the newest experiment of this name (`iolab run --name NAME`)
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
        /// Exit 1 when a shared phase is slower by more than PCT per cent with 95% confidence
        #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
        fail_if_slower: Option<String>,
        /// What each row is, without ids: host (one row per host and file system)
        #[arg(long, default_value = "host", value_parser = ["host"])]
        by: String,
        /// text | csv | markdown | json (two experiments) | html (the per-host page: the table
        /// and its graph)
        #[arg(long, default_value = "text", value_parser = ["text", "csv", "markdown", "json", "html"])]
        format: String,
        #[arg(long, help = "Only the winners of `iolab tune` per job and host (CSV holds one table)")]
        tuned: bool,
    },
    /// Merge another store (SQLite file) or a run's JSON into this store; runs already
    /// present are skipped
    Import {
        path: PathBuf,
        #[arg(
            long,
            help = "Leave out another store's per-op traces (said in the summary) instead of carrying them"
        )]
        no_traces: bool,
    },
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
        /// Replace an existing file that is not an earlier trace of this kind
        #[arg(long, requires = "output")]
        force: bool,
    },
}

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Preset id (R1..R10, B.., C1..C7, L1..L4)
    #[arg(required_unless_present = "list")]
    pub id: Option<String>,
    /// List every preset at --scale: whether this build can run it and the disk holds it, its
    /// sizes, disk space and estimated time, what it needs, study and title
    #[arg(long, conflicts_with_all = ["print"])]
    pub list: bool,
    /// quick (under a minute), default, or paper (the study's full grid and repetitions)
    #[arg(long, default_value = "default")]
    pub scale: String,
    /// Print the preset's experiment file at this scale (to copy, edit and `iolab run`)
    #[arg(long)]
    pub print: bool,
    /// IO500: io500's config file (its [global] datadir, [debug] stonewall-time, workload sizes)
    /// over the preset; keys iolab cannot honour are refused
    #[arg(long, value_name = "FILE", conflicts_with = "list")]
    pub ini: Option<PathBuf>,
    /// Target directory (repeatable); fewer than the preset's targets are reused in turn
    #[arg(long = "dir", value_name = "DIR")]
    pub dirs: Vec<String>,
    /// Set any spec parameter: --set key=value (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The memory to defeat: the preset's sizes given as a multiple of RAM use SIZE instead of
    /// this machine's memory (its total, or its cgroup limit)
    #[arg(long, value_name = "SIZE", help_heading = "Workload")]
    pub ram: Option<String>,
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

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Experiment id, a unique prefix of one, or `last`; several: drawn in one figure, their
    /// points told apart by the axis `experiment` (a line per experiment)
    #[arg(required = true, num_args = 1..)]
    pub ids: Vec<String>,
    /// rate | bars | workers | cdf | histogram | trace | timeline | race (a tuning's; default: the
    /// preset's plot, else rate when something is swept, else bars)
    #[arg(long)]
    pub kind: Option<String>,
    /// The x axis: a sweep axis (or `phase`); default: the preset's, else the first axis
    #[arg(long)]
    pub x: Option<String>,
    /// One line per value of these axes (comma-separated, or `none`)
    #[arg(long)]
    pub series: Option<String>,
    /// One panel per value of these axes (comma-separated, or `none`)
    #[arg(long)]
    pub panel: Option<String>,
    /// Statistic (mean, median, 2sigma, trimmed) and/or figures (max_sar, min_sar,
    /// individual), comma-separated; default: the experiment's headline of the preset's figures
    #[arg(long, value_name = "STAT|FIGURE")]
    pub y: Vec<String>,
    /// The phase to show (its name as tables show it, e.g. read:cold); default: the last
    #[arg(long)]
    pub phase: Option<String>,
    /// Error bars: 2sd (Russell's: the runs' arithmetic mean +/- 2 standard deviations, cut
    /// at zero), log2sd (the point x/÷ e^(2 sd of the runs' logs)), ci95 (the 95% confidence
    /// interval of the mean, on the log scale) or none
    #[arg(long, default_value = "2sd")]
    pub bars: String,
    /// Sweep point (index, as `iolab results show` lists them) for workers, cdf, histogram, trace,
    /// timeline
    #[arg(long)]
    pub point: Option<usize>,
    /// Repetition of a trace (default: the first traced)
    #[arg(long)]
    pub rep: Option<u32>,
    /// Worker of a trace (default 0)
    #[arg(long)]
    pub worker: Option<u32>,
    /// Op range of a trace, FROM..TO (TO excluded)
    #[arg(long, value_name = "FROM..TO")]
    pub ops: Option<String>,
    /// Pixel size, WIDTHxHEIGHT (default: from the number of panels)
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,
    /// Output file, .svg or .png (default: SVG on stdout)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace an existing file that is not an earlier plot of this kind
    #[arg(long, requires = "output")]
    pub force: bool,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Experiment id, a unique prefix of one, or `last`
    #[arg(required_unless_present_any = ["last", "compare"], conflicts_with_all = ["last", "compare"])]
    pub id: Option<String>,
    /// The newest experiment
    #[arg(long, conflicts_with = "compare")]
    pub last: bool,
    /// Instead, the per-host comparison of every L1/L4 experiment in the store (the SLAC
    /// table and its graph)
    #[arg(long)]
    pub compare: bool,
    /// Output file (default: stdout)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace an existing file that is not an earlier iolab report
    #[arg(long, requires = "output")]
    pub force: bool,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// The job: checkpoint | log | bulk-read | random-read | benson, custom (from the flags), list
    pub job: String,
    /// Bytes the job moves in all, e.g. 1GiB (each way, for read-after-write)
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub bytes: Option<String>,
    #[arg(long, help = "write | read | read-after-write")]
    pub direction: Option<String>,
    #[arg(long, help = "seq | random")]
    pub access: Option<String>,
    /// The op size the program issues; given, no candidate changes it
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub op_size: Option<String>,
    /// What must be on disk when: end | every:SIZE (by each writer) | each | none
    #[arg(long, value_name = "WHEN")]
    pub durable: Option<String>,
    /// Compute per worker to overlap with the writes (the candidates are then strategies), e.g. 2s
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub comptime: Option<String>,
    /// Workers the program may use
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub workers: Option<String>,
    /// Buffer memory the program may use for its I/O, e.g. 64MiB
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub memory: Option<String>,
    /// Target directory (repeatable; default: the current directory)
    #[arg(long = "dir", value_name = "DIR")]
    pub dirs: Vec<String>,
    /// Time budget of the whole tuning, e.g. 5m, 90s
    #[arg(long, value_name = "DURATION", default_value = "10m", allow_hyphen_values = true)]
    pub budget: String,
    /// Search KEY (values drawn from what engines, layouts, strategies can do) or KEY=V1,V2 (repeatable)
    #[arg(long, value_name = "KEY[=V1,V2]")]
    pub search: Vec<String>,
    /// Runs a candidate needs before it can be dropped or drop another (at least 2)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub min_runs: u32,
    /// The race ends when every candidate still racing has this many runs
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_runs: u32,
    /// A parameter every candidate takes: settle, prime_memory, warmup, interleave, seed (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// List the candidates, and the combinations that are none and why; run nothing
    #[arg(long, conflicts_with = "grid")]
    pub list: bool,
    /// Print every candidate as an experiment file (REPS runs each): the exhaustive grid; run nothing
    #[arg(long, value_name = "REPS", num_args = 0..=1, default_missing_value = "5")]
    pub grid: Option<u32>,
    /// Write the recommended spec (an experiment file) to FILE
    #[arg(long, value_name = "FILE")]
    pub save_spec: Option<PathBuf>,
    /// Replace an existing FILE that is not an earlier experiment file of iolab's
    #[arg(long, requires = "save_spec")]
    pub force: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}
