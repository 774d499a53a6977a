//! Integration tests: the real `iolab` binary on real files in temporary directories.

mod util;

mod core;
mod engines;
