//! The machine under the run: host facts, environment control around runs, layout forensics,
//! signals, and the syscall wrappers std does not offer.

pub mod envctl;
pub mod forensics;
pub mod host;
pub mod monitor;
pub mod signals;
pub mod sys;
