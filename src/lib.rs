//! iolab: storage I/O experiments with repeated runs, honest statistics and a verified cache
//! state. The layers, top to bottom (imports point only downward; docs/architecture.md):
//! `cmd` -> `frontend` -> `experiment` -> `report` -> `store` -> `results` -> `launch` -> `strategy` ->
//! `worker` -> `engine` -> `target` -> `env` -> `latency` -> `plan` -> `spec` -> `error`,
//! `units`, `stats`, `text`, `json`.

pub mod cli;
pub mod cmd;
pub(crate) mod engine;
pub mod env;
pub mod error;
pub mod experiment;
pub mod frontend;
pub mod json;
pub mod latency;
pub mod launch;
pub mod plan;
pub mod report;
pub mod results;
pub mod spec;
pub(crate) mod stats;
pub mod store;
pub mod strategy;
pub mod target;
#[cfg(test)]
pub(crate) mod test_alloc;
pub(crate) mod text;
pub mod units;
pub mod worker;

pub use error::{Error, Result};
