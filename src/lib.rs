//! iolab: storage I/O experiments with repeated runs, honest statistics and a verified cache
//! state. The pipeline is spec -> plan -> run (workers -> engine) -> samples -> stats -> store
//! -> report; each stage is one module.

pub mod app;
pub mod async_worker;
pub mod cache;
pub mod child;
pub mod clean;
pub mod cli;
pub mod cmd_experiments;
pub mod cmd_report;
pub mod device;
pub mod engine;
pub mod envctl;
pub mod error;
pub mod experiment;
pub mod fill;
pub mod forensics;
pub mod host;
pub mod import;
pub mod latency;
pub mod mem;
pub mod period;
pub mod plan;
pub mod preflight;
pub mod preset;
pub mod progress;
pub mod report;
pub mod results;
pub mod reuse;
pub mod run;
pub mod schedule;
pub mod signals;
pub mod spec;
pub mod stats;
pub mod store;
pub mod strategy;
pub mod sweep;
pub mod sys;
pub mod trace;
pub mod units;
pub mod verify;
pub mod workdir;
pub mod worker;

pub use error::{Error, Result};
