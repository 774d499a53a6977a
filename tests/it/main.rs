//! Integration tests: the real `iolab` binary on real files in temporary directories.

mod util;

mod core;
mod experiments;
mod forensics;
mod layouts;
mod plots;
mod processes;
mod reports;
mod traces;
