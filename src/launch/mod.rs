//! Launchers: how workers come to exist (threads, child processes) and how their samples come
//! back; the child-process protocol; the strategies' launchers.

pub mod child;
pub mod process;
pub mod strategy_process;
pub mod strategy_threads;
