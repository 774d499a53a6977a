//! iolab: storage I/O experiments with repeated runs, honest statistics and a verified cache
//! state. The pipeline is spec -> plan -> run (workers -> engine) -> samples -> stats -> store
//! -> report; each stage is one module.

pub mod app;
pub mod async_worker;
pub mod cache;
pub mod cli;
pub mod engine;
pub mod error;
pub mod fill;
pub mod host;
pub mod mem;
pub mod plan;
pub mod progress;
pub mod report;
pub mod results;
pub mod run;
pub mod signals;
pub mod spec;
pub mod stats;
pub mod store;
pub mod sys;
pub mod units;
pub mod workdir;
pub mod worker;

pub use error::{Error, Result};
