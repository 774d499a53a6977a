//! Where data goes: owned work directories, the page-cache state of their files, kept data for
//! reuse, cleaning up, the free-space preflight and the device guard.

pub mod cache;
pub mod clean;
pub mod device;
pub mod preflight;
pub mod reuse;
pub mod workdir;
