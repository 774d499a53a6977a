//! What a phase's launch brings back (every worker's sample, the servers' figures, the merged
//! histogram and series), and gathering the results of worker threads.

use crate::error::{Error, Result};
use crate::latency::Buckets;
use crate::worker::{ServerSample, WorkerSample};

/// What a phase's launch brings back: every worker's sample and, with I/O-server ranks, every
/// server's figures.
pub struct Launched {
    pub samples: Vec<WorkerSample>,
    pub servers: Vec<ServerSample>,
    /// Every worker's latency histogram merged, when the samples carry only their figures
    /// (MPI ranks: merged as each reply arrived); empty when each sample has its own.
    pub latency: Buckets,
    /// Every worker's rate series summed, when the samples do not carry theirs (MPI ranks up
    /// the tree: summed by each rank and its subtree); None when each sample has its own.
    pub series: Option<crate::latency::series::RateSeries>,
    /// Every worker's class histograms (directions, sizes, response times) merged, when the
    /// samples carry only their counts (MPI ranks); None when each sample has its own.
    pub classes: Option<crate::latency::classes::ClassSample>,
}

impl Launched {
    /// Samples that carry their own histograms.
    pub fn of(samples: Vec<WorkerSample>) -> Launched {
        Launched { samples, servers: vec![], latency: Buckets::default(), series: None, classes: None }
    }
}

/// Every worker's result, or the most telling error: a real failure before the "aborted"
/// echoes of it.
pub fn collect<T>(results: Vec<Result<T>>) -> Result<Vec<T>> {
    let mut err = None;
    let mut all = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(s) => all.push(s),
            Err(e) => Error::keep_telling(&mut err, e),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(all),
    }
}

/// Joins scoped worker threads in order; a thread that panicked is an error naming `what`.
pub fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>, what: &str) -> Vec<Result<T>> {
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| Err(Error::Run(format!("{what} panicked")))))
        .collect()
}
