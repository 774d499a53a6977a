//! Integration tests: the real `iolab` binary on real files in temporary directories.

mod util;

mod core;
mod faults;
mod fuzz;
mod rig;
mod safety;
mod verify;
