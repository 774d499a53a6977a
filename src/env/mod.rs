//! The machine under the run: host facts, the memory it can give, environment control around
//! runs, layout forensics, what a file system is and where it places files, signals, reading
//! the files a user names, the directory-relative calls of the metadata phases, and the
//! syscall wrappers std does not offer.

pub mod cephfs;
pub mod dirs;
pub mod envctl;
pub mod forensics;
pub mod host;
pub mod input;
pub mod memory;
pub mod monitor;
pub mod mountinfo;
pub mod netfs;
pub mod placement;
pub mod signals;
pub mod sys;
