//! Integration tests: the real `iolab` binary on real files in temporary directories.

mod util;

mod architecture;
mod bounds;
mod cephfs;
mod cli;
mod compare_verdict;
mod core;
mod dfs;
mod doc_examples;
mod engines;
mod escapes;
mod experiments;
mod exporters;
mod faults;
mod figures;
mod fio_jobs;
mod forensics;
mod frontends;
mod fuzz;
mod guidance;
mod hosts;
mod imports;
mod inputs;
mod io500;
mod labels;
mod latency;
mod layouts;
mod limits;
mod md_bounds;
mod md_calls;
mod md_figures;
mod metadata;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod mpi_bounds;
#[cfg(feature = "mpi")]
mod mpi_dfs;
#[cfg(feature = "mpi")]
mod mpi_frontends;
#[cfg(feature = "mpi")]
mod mpi_hints;
#[cfg(feature = "mpi")]
mod mpi_metadata;
#[cfg(feature = "mpi")]
mod mpi_servers;
#[cfg(feature = "mpi")]
mod mpi_servers_hosts;
#[cfg(feature = "mpi")]
mod mpi_strategies;
#[cfg(feature = "mpi")]
mod mpi_traces;
#[cfg(feature = "mpi")]
mod mpi_workloads;
#[cfg(feature = "mpi")]
mod mpi_world;
mod outputs;
mod owners;
mod plots;
mod processes;
mod progress;
mod readahead;
mod refusals;
mod reports;
mod rig;
mod safety;
mod signals;
#[cfg(feature = "mpi")]
mod slurm;
mod stores;
mod strategies;
mod throttle;
mod timing;
mod trace_stream;
mod traces;
mod tune;
mod verify;
mod workloads;
