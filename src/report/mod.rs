//! Reports: an experiment result rendered for people (table) or programs (JSON, CSV). Reports
//! read only a result (from a run or from the store); they never measure anything.

use std::io::Write;

use crate::error::{Error, Result};
use crate::results::{ExperimentResult, PointResult};

pub mod base64;
pub mod compare;
mod csv;
pub(crate) mod details;
pub mod html;
mod json;
pub mod plan;
pub mod plot;
pub mod strategies;
mod table;
pub mod trace;

pub use table::{render_table, text_table};

/// What a report shows of the preset an experiment reproduces beyond the reference stored with
/// it (`design.preset`): the preset's suggested plot and its notes. Presets are compiled into
/// the experiment layer, above the report, so the caller looks this up
/// (`experiment::preset::about`) and passes it in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PresetAbout {
    pub plot: plot::PresetPlot,
    pub notes: String,
}

/// One output format.
pub trait Exporter {
    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()>;
}

/// The output formats of `run` and `results show/export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// The exporter for a format.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Table => Box::new(table::Table),
        Format::Json => Box::new(json::Json),
        Format::Csv => Box::new(csv::Csv),
    }
}

/// A point's axis values, `workers=4 bs=16KiB` (in key order).
pub fn point_params(p: &PointResult) -> String {
    p.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

pub fn write_err(e: impl std::fmt::Display) -> Error {
    Error::Run(format!("writing output: {e}"))
}
