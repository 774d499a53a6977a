//! The flags that describe an experiment, made from the parameter table ([`PARAMS`]): they stay
//! plain strings here and become spec parameters, parsed and checked in one place,
//! [`crate::experiment::resolve`].

use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, value_parser};

use crate::error::Result;
use crate::experiment::{Experiment, Flag, FlagKind, PARAMS, ParamDef, Params};

/// The flags that describe an experiment: the experiment file, a flag for each spec parameter
/// (made from [`PARAMS`]: its flags, their value names and its help line), `--set`, `--sweep`
/// and `--zip`.
#[derive(Debug, Default, Clone)]
pub struct SpecArgs {
    /// Experiment file (TOML); flags given here override its values.
    pub spec: Option<PathBuf>,
    /// The parameters their own flags set (before `--set`).
    pub flags: Params,
    /// `--set KEY=VALUE`, in the order given.
    pub set: Vec<String>,
    /// `--sweep KEY=VALUES`: sweep axes.
    pub sweep: Vec<String>,
    /// `--zip A,B`: axes that advance together.
    pub zip: Vec<String>,
}

/// The headings of `iolab run --help` and the parameters under each, in order; every
/// parameter of [`PARAMS`] is under exactly one (a test checks).
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "Workload",
        &[
            "name",
            "workers",
            "size",
            "bs",
            "order",
            "seed",
            "rwmixread",
            "bssplit",
            "rate",
            "rate_iops",
            "rate_process",
            "thinktime",
            "thinktime_spin",
            "thinktime_blocks",
            "launcher",
            "start",
            "strategy",
            "iters",
            "comptime",
        ],
    ),
    ("Phases and cache", &["ops", "cache", "drop_caches", "runtime", "stonewall", "wear_out"]),
    (
        "Engine",
        &[
            "engine",
            "iodepth",
            "direct",
            "sync",
            "sync_call",
            "open_sync",
            "prealloc",
            "alloc",
            "window",
            "mem_len",
            "mem_stride",
            "latency",
        ],
    ),
    (
        "Layout",
        &[
            "dirs",
            "layout",
            "files",
            "files_per_worker",
            "round_robin",
            "segments",
            "stripe_unit",
            "stripe_count",
            "pieces",
        ],
    ),
    (
        "Metadata phases",
        &["md_files", "md_dirs", "md_depth", "md_fanout", "md_size", "md_shift", "md_find", "md_calls"],
    ),
    ("Repetitions and sweeps", &["reps", "warmup", "settle", "prime_memory", "interleave"]),
    (
        "MPI and servers",
        &[
            "reorder_reads",
            "mpiio",
            "mpiio_hint",
            "servers",
            "server_dir",
            "server_depth",
            "server_store",
            "blast_transport",
        ],
    ),
    ("Safety", &["verify", "keep", "allow_device", "reuse"]),
];

/// The heading of the MPI and I/O-server flags (hidden in a build without MPI).
pub const MPI_HEADING: &str = "MPI and servers";

/// The default a flag's help shows, from the parameter's `docs/spec.md` default: its words
/// without Markdown; none for a switch's `false` or where there is none.
pub fn shown_default(def: &ParamDef) -> Option<String> {
    let d = def.default.replace('`', "");
    (!matches!(d.as_str(), "none" | "-" | "false" | "")).then_some(d)
}

/// The flags not made from [`PARAMS`]: (id, value name, help). All are repeatable.
const EXPERIMENT_FLAGS: [(&str, &str, &str); 3] = [
    ("set", "KEY=VALUE", "Set any spec parameter: --set key=value (repeatable)"),
    (
        "sweep",
        "KEY=VALUES",
        "Sweep axis: KEY=V1,V2,... or KEY=A..B[:STEP|:xFACTOR] (repeatable; the product of all)",
    ),
    ("zip", "AXES", "Axes that advance together instead of multiplying: --zip A,B (repeatable)"),
];

/// The clap argument of one parameter flag, under `heading`: its help line, `(repeatable)`
/// where it is, and the parameter's default (an alias's own help names what it stands for).
fn param_arg(def: &ParamDef, flag: &Flag, heading: &'static str) -> Arg {
    let mut help = flag.help.unwrap_or(def.help).to_string();
    if flag.kind == FlagKind::Repeated && !help.contains("(repeatable)") {
        help += " (repeatable)";
    }
    if let (None, Some(d)) = (flag.help, shown_default(def)) {
        help += &format!(" [default: {d}]");
    }
    let arg = Arg::new(flag.name)
        .long(flag.name)
        .help_heading(heading)
        .hide(heading == MPI_HEADING && !crate::launch::HAS_MPI);
    match flag.kind {
        FlagKind::Switch(_) => arg.action(ArgAction::SetTrue).help(help),
        FlagKind::Value | FlagKind::Commas => arg
            .action(ArgAction::Set)
            .value_name(flag.value_name)
            .value_parser(value_parser!(String))
            .allow_hyphen_values(flag.hyphen_values)
            .help(help),
        FlagKind::Repeated => arg
            .action(ArgAction::Append)
            .value_name(flag.value_name)
            .value_parser(value_parser!(String))
            .allow_hyphen_values(flag.hyphen_values)
            .help(help),
    }
}

impl Args for SpecArgs {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        cmd = cmd.arg(
            Arg::new("spec")
                .value_name("SPEC")
                .value_parser(value_parser!(PathBuf))
                .help("Experiment file (TOML); flags given here override its values"),
        );
        for &(heading, keys) in GROUPS {
            for def in keys.iter().filter_map(|k| PARAMS.iter().find(|d| d.key == *k)) {
                for flag in def.flags {
                    cmd = cmd.arg(param_arg(def, flag, heading));
                }
            }
            if heading == "Repetitions and sweeps" {
                for (id, value_name, help) in EXPERIMENT_FLAGS {
                    cmd = cmd.arg(
                        Arg::new(id)
                            .long(id)
                            .value_name(value_name)
                            .action(ArgAction::Append)
                            .value_parser(value_parser!(String))
                            .help_heading(heading)
                            .help(help),
                    );
                }
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SpecArgs {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let many =
            |id: &str| -> Vec<String> { m.get_many::<String>(id).into_iter().flatten().cloned().collect() };
        let mut flags = Params::default();
        // Two flags of one parameter that disagree (`--trace --latency off`, `--dir A
        // --targets B`) are an error, not a silent choice.
        for def in PARAMS {
            let mut first: Option<(String, Vec<String>)> = None;
            for flag in def.flags {
                let values = match flag.kind {
                    FlagKind::Switch(v) => m.get_flag(flag.name).then(|| vec![v.to_string()]),
                    FlagKind::Value => m.get_one::<String>(flag.name).map(|v| vec![v.clone()]),
                    FlagKind::Commas => {
                        m.get_one::<String>(flag.name).map(|v| v.split(',').map(String::from).collect())
                    }
                    FlagKind::Repeated => Some(many(flag.name)).filter(|v| !v.is_empty()),
                };
                if let Some(values) = values {
                    let given = match flag.kind {
                        FlagKind::Switch(_) => format!("--{}", flag.name),
                        _ => format!("--{} {}", flag.name, values.join(",")),
                    };
                    if let Some((other, earlier)) = &first
                        && *earlier != values
                    {
                        return Err(clap::Error::raw(
                            clap::error::ErrorKind::ArgumentConflict,
                            format!("{other} and {given} both set `{}`: give one of them\n", def.key),
                        ));
                    }
                    first.get_or_insert((given, values.clone()));
                    flags.set(def.key, values).map_err(|e| {
                        clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{e}\n"))
                    })?;
                }
            }
        }
        Ok(SpecArgs {
            spec: m.get_one::<PathBuf>("spec").cloned(),
            flags,
            set: many("set"),
            sweep: many("sweep"),
            zip: many("zip"),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl SpecArgs {
    /// The parameters the flags set: each parameter's flags, then `--set` over them (the
    /// experiment file is not read here; see [`SpecArgs::experiment`]).
    pub fn params(&self) -> Result<Params> {
        let mut p = self.flags.clone();
        for kv in &self.set {
            p.set_kv(kv)?;
        }
        Ok(p)
    }

    /// The experiment the flags describe: the file, the parameters over it, the sweep.
    pub fn experiment(&self, ram_bytes: u64) -> Result<Experiment> {
        Experiment::from_command_line(
            self.spec.as_deref(),
            &self.params()?,
            &self.sweep,
            &self.zip,
            ram_bytes,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parameter is under exactly one heading of `run --help`, and every key named there
    /// is a parameter.
    #[test]
    fn every_parameter_has_one_heading() {
        for def in PARAMS {
            let n = GROUPS.iter().filter(|(_, keys)| keys.contains(&def.key)).count();
            assert_eq!(n, 1, "{} is under {n} headings", def.key);
        }
        for (heading, keys) in GROUPS {
            for k in *keys {
                assert!(PARAMS.iter().any(|d| d.key == *k), "{heading}: {k} is no parameter");
            }
        }
    }
}
