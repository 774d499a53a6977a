//! Where data goes: owned work directories, opening only the files iolab created there, the
//! page-cache state of those files, kept data for reuse, cleaning up, the free-space preflight
//! and the device guard.

pub mod cache;
pub mod clean;
pub mod device;
pub mod marker;
pub mod namespace;
pub mod ns_cache;
pub mod owned;
pub mod owner;
pub mod preflight;
pub mod reuse;
pub mod workdir;
