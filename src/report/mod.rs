//! Reports: results rendered for people (tables, pages, plots) or programs (JSON, CSV). Reports
//! read only results (from a run or from the store) and what their callers hand them; they
//! never measure anything.
//!
//! Every output format is an [`Exporter`] of its input, one file per format, and each input
//! has one registry of its formats (a `FORMATS` list, one line per format):
//! - one experiment ([`ExperimentResult`]): [`FORMATS`] (`table.rs`, `json.rs`, `csv.rs`,
//!   and shaped like a peer's output `ior.rs`, `mdtest.rs`),
//!   picked by [`Format`]; its HTML page is `html::experiment::Html`, made with the store and
//!   the preset it shows;
//! - the strategy tables of an experiment (also an [`ExperimentResult`]):
//!   [`strategies::FORMATS`] (`strategies/{text,markdown,csv}.rs`);
//! - the per-host comparison (`[compare::Row]`): [`compare::FORMATS`]
//!   (`compare/{text,csv,markdown}.rs`); its HTML page is `html::compare::Html`, made with
//!   where the rows come from;
//! - a plan ([`plan::Planned`]): [`plan::FORMATS`] (`plan/{text,json}.rs`);
//! - an experiment's per-op traces ([`trace::Traces`]): [`trace::FORMATS`]
//!   (`trace/{csv,json}.rs`).
//!
//! Exporters in a registry are unit structs; the HTML pages carry what they need besides
//! their input, so their callers make them. A new format is a new file with a unit struct that
//! implements `Exporter<Input>`, its `mod` line, and one line in its input's `FORMATS`.

use std::io::Write;

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, PointResult};

mod bounds;
pub mod brief;
pub mod compare;
mod csv;
pub(crate) mod details;
pub mod findings;
pub mod glance;
pub mod hosts;
pub mod html;
pub mod io500;
pub mod iops;
mod ior;
mod json;
mod mdtest;
mod mix;
pub mod output;
pub mod plan;
pub mod plot;
pub mod servers;
pub(crate) mod steady;
pub mod strategies;
pub mod summary;
mod table;
pub mod trace;
pub mod tune;

pub use crate::text::text_table;

/// A table for both the terminal and the HTML page: headers, rows, right-aligned columns.
pub type TableParts = (Vec<String>, Vec<Vec<String>>, Vec<usize>);
pub use table::render_table;

/// What a report shows of the preset an experiment reproduces beyond the reference stored with
/// it (`design.preset`): the preset's suggested plot and its notes. Presets are compiled into
/// the experiment layer, above the report, so the caller looks this up
/// (`experiment::preset::about`) and passes it in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PresetAbout {
    pub plot: plot::PresetPlot,
    pub notes: String,
}

/// One output format of one kind of input: `In` is what the format reads (one experiment
/// unless said otherwise).
pub trait Exporter<In: ?Sized = ExperimentResult> {
    /// The format's name, as `--format` (or the flag that picks it) knows it.
    fn name(&self) -> &'static str;
    /// Writes `input` in this format.
    fn export(&self, input: &In, out: &mut dyn Write) -> Result<()>;
}

/// The exporter named `name` in a registry; an error lists the names there are.
pub fn find<'r, In: ?Sized>(
    registry: &'r [&'r (dyn Exporter<In> + Sync)],
    name: &str,
) -> Result<&'r dyn Exporter<In>> {
    match registry.iter().find(|e| e.name() == name) {
        Some(&e) => Ok(e),
        None => {
            let names: Vec<&str> = registry.iter().map(|e| e.name()).collect();
            Err(Error::spec("format", name, format!("expected one of: {}", names.join(", "))))
        }
    }
}

/// What an exporter writes for `input`, as text.
pub fn render<In: ?Sized>(exporter: &dyn Exporter<In>, input: &In) -> Result<String> {
    let mut out = vec![];
    exporter.export(input, &mut out)?;
    String::from_utf8(out).map_err(write_err)
}

/// The formats of one experiment: `run`, `results show` and `results export`.
pub static FORMATS: &[&(dyn Exporter + Sync)] =
    &[&table::Table, &table::Explained, &json::Json, &csv::Csv, &ior::Ior, &mdtest::Mdtest];

/// The format of one experiment the command line asks for (`--json`, `--csv`, `--explain`, else
/// the brief table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The brief table, fitted to the terminal.
    Table,
    /// The full table: every section and the whole legend (`--explain`).
    Explain,
    Json,
    Csv,
    /// Shaped like IOR's output (`iolab ior --format ior`).
    Ior,
    /// Shaped like mdtest's summary (`iolab mdtest --format mdtest`).
    Mdtest,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Explain => "explain",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Ior => "ior",
            Format::Mdtest => "mdtest",
        }
    }
}

/// The exporter of a format (from [`FORMATS`]).
pub fn exporter(format: Format) -> &'static dyn Exporter {
    find(FORMATS, format.name()).expect("every Format is in FORMATS")
}

/// A Markdown table: a header row, its rule, then the rows, every header and cell text
/// escaped ([`crate::text::markdown_escape`]): a `|`, a newline or markup in a name from a user
/// or a store stays in its cell, as text.
pub fn markdown_table<S: AsRef<str>>(headers: &[S], rows: &[Vec<String>]) -> String {
    let md = |c: &str| crate::text::markdown_escape(c);
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| md(c)).collect()).collect();
    markdown_table_of(headers, &rows)
}

/// A Markdown table of cells that are Markdown already (iolab's own emphasis around text its
/// caller escaped with [`crate::text::markdown_escape`]); the headers are escaped.
pub fn markdown_table_of<S: AsRef<str>>(headers: &[S], rows: &[Vec<String>]) -> String {
    let heads: Vec<String> = headers.iter().map(|h| crate::text::markdown_escape(h.as_ref())).collect();
    let mut s = format!("| {} |\n|{}\n", heads.join(" | "), "---|".repeat(heads.len()));
    for r in rows {
        s += &format!("| {} |\n", r.join(" | "));
    }
    s
}

/// A point's axis values, `workers=4 bs=16KiB` (in key order).
pub fn point_params(p: &PointResult) -> String {
    p.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The per-rank sections (hosts, servers): for each point and phase, each item of its first
/// complete repetition that has any (`items`), with the item that is `same` in every complete
/// repetition; named by the phase, and the point's axis values when there are several points.
pub fn across_complete_reps<T>(
    exp: &ExperimentResult,
    items: fn(&crate::results::Repetition) -> &[T],
    same: fn(&T, &T) -> bool,
) -> Vec<(String, &crate::results::PhaseResult, Vec<&T>)> {
    let mut out = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let reps: Vec<&[T]> = ph
                .repetitions
                .iter()
                .filter(|r| r.status == crate::results::Status::Complete)
                .map(items)
                .filter(|xs| !xs.is_empty())
                .collect();
            let Some(first) = reps.first() else { continue };
            for x in first.iter() {
                let group = reps.iter().filter_map(|xs| xs.iter().find(|y| same(y, x))).collect();
                let name = if exp.points.len() > 1 {
                    format!("{} {}", point_params(p), ph.name)
                } else {
                    ph.name.clone()
                };
                out.push((name, ph, group));
            }
        }
    }
    out
}

pub fn write_err(e: impl std::fmt::Display + 'static) -> Error {
    Error::output(e)
}
