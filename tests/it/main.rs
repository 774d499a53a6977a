//! Integration tests: the real `iolab` binary on real files in temporary directories.

mod util;

mod core;
mod engines;
mod experiments;
mod faults;
mod forensics;
mod fuzz;
mod latency;
mod layouts;
mod limits;
mod plots;
mod processes;
mod reports;
mod rig;
mod safety;
mod strategies;
mod trace_stream;
mod traces;
mod verify;
