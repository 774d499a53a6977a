//! The shape of a declared spec parameter and of its command-line flags, and the builders
//! [`PARAMS`](super::params::PARAMS) is written with.

/// One declared parameter.
#[derive(Debug)]
pub struct ParamDef {
    /// The TOML key, sweep axis and `--set` key.
    pub key: &'static str,
    /// The command-line flags that set it; the first is its own.
    pub flags: &'static [Flag],
    /// The default, as `docs/spec.md` states it (Markdown).
    pub default: &'static str,
    /// One line: the `--help` of its flags and the start of its `docs/spec.md` row.
    pub help: &'static str,
    /// What `docs/spec.md` says after the help line (Markdown); empty when nothing.
    pub more: &'static str,
    /// Takes several values (`dirs`, `ops`, `allow_device`); others take exactly one.
    pub list: bool,
}

/// One command-line flag of a parameter.
#[derive(Debug)]
pub struct Flag {
    /// The long name, without the dashes.
    pub name: &'static str,
    /// The value's placeholder in `--help` (switches take none).
    pub value_name: &'static str,
    pub kind: FlagKind,
    /// A value may start with `-` (numbers, sizes, durations), so `--workers -1` is refused
    /// by the parameter's own check, naming it, instead of being taken for a flag.
    pub hyphen_values: bool,
    /// Its own help line (an alias saying what it stands for); else the parameter's.
    pub help: Option<&'static str>,
}

/// How a flag gives the parameter its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// `--flag VALUE`: the one value.
    Value,
    /// `--flag VALUE`, repeatable: each occurrence adds a value.
    Repeated,
    /// `--flag A,B,...`: the values, comma-separated.
    Commas,
    /// `--flag` alone: sets the parameter to this value.
    Switch(&'static str),
}

pub(super) const fn value(name: &'static str, value_name: &'static str) -> Flag {
    Flag { name, value_name, kind: FlagKind::Value, hyphen_values: false, help: None }
}

/// A value that may start with `-` (a number, size or duration).
pub(super) const fn number(name: &'static str, value_name: &'static str) -> Flag {
    Flag { hyphen_values: true, ..value(name, value_name) }
}

pub(super) const fn switch(name: &'static str) -> Flag {
    Flag { kind: FlagKind::Switch("true"), ..value(name, "") }
}

pub(super) const fn param(
    key: &'static str,
    flags: &'static [Flag],
    default: &'static str,
    help: &'static str,
    more: &'static str,
) -> ParamDef {
    ParamDef { key, flags, default, help, more, list: false }
}

pub(super) const fn list(def: ParamDef) -> ParamDef {
    ParamDef { list: true, ..def }
}
