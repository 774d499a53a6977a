//! Ranks' clocks made comparable: each rank's CLOCK_MONOTONIC against rank 0's, estimated once
//! when the MPI world starts by Cristian's method (rank 0 sends its time, the rank answers with
//! its own; over several exchanges, the one with the shortest round trip gives the offset, to
//! within half that round trip). Ranks of one host and one time namespace read one clock: rank
//! 0 exchanges with the first rank of each other clock only and gives its offset to the clock's
//! other ranks; ranks on rank 0's host in its time namespace share its clock: their offset is 0.
//! A rank on rank 0's host in another time namespace (`unshare --time`, a container's) reads
//! CLOCK_MONOTONIC moved by that namespace's offset: measured as another host's is.
//! Rank 0 moves every sample it gathers onto its own clock with these offsets, so a phase's
//! span and overlap compare readings of one clock (docs/mpi.md, "One clock").

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::env::sys::now_ns;

/// The tag of the clock exchanges (before any phase: no other message is in flight).
const CLOCK: i32 = 9;
/// Exchanges per rank: the shortest round trip of these bounds the error.
const ROUNDS: usize = 8;

/// Each rank's clock minus rank 0's, in ns (what rank 0 learns; every other rank gets its own
/// and zeros), with the bound of each estimate (half the shortest round trip). Collective:
/// every rank calls it with the world's clocks (each rank's host and time namespace, as one
/// key).
pub fn offsets(comm: &SimpleCommunicator, clocks: &[u64]) -> (Vec<i64>, Vec<u64>) {
    let (rank, size) = (comm.rank() as usize, clocks.len());
    let (mut offset, mut bound) = (vec![0i64; size], vec![0u64; size]);
    let source = clock_sources(clocks);
    for r in 1..size {
        match source[r] {
            None => continue,
            Some(f) if f != r => {
                // Its host's first rank, measured before it (f < r), stands for it.
                (offset[r], bound[r]) = (offset[f], bound[f]);
                continue;
            }
            Some(_) => {}
        }
        if rank == 0 {
            let other = comm.process_at_rank(r as i32);
            let mut best = u64::MAX;
            for _ in 0..ROUNDS {
                let t0 = now_ns();
                other.send_with_tag(&t0, CLOCK);
                let (theirs, _) = other.receive_with_tag::<u64>(CLOCK);
                let t1 = now_ns();
                if t1 - t0 < best {
                    best = t1 - t0;
                    offset[r] = (i128::from(theirs) - (i128::from(t0) + i128::from(t1)) / 2) as i64;
                }
            }
            bound[r] = best / 2;
        } else if rank == r {
            let root = comm.process_at_rank(0);
            for _ in 0..ROUNDS {
                let _ = root.receive_with_tag::<u64>(CLOCK);
                root.send_with_tag(&now_ns(), CLOCK);
            }
        }
    }
    // Each rank learns its own offset: it moves its workers' readings onto rank 0's clock when
    // it sums their rate series up the tree (mpi_tree).
    let root = comm.process_at_rank(0);
    let mut mine = 0i64;
    if rank == 0 {
        root.scatter_into_root(&offset[..], &mut mine);
    } else {
        root.scatter_into(&mut mine);
        offset[rank] = mine;
    }
    (offset, bound)
}

/// For each rank, the rank whose clock rank 0 measures for it: the first rank of its clock;
/// None for the ranks of rank 0's clock.
fn clock_sources<K: Eq + std::hash::Hash>(clocks: &[K]) -> Vec<Option<usize>> {
    let mut first: std::collections::HashMap<&K, usize> = std::collections::HashMap::new();
    clocks
        .iter()
        .enumerate()
        .map(|(r, c)| {
            let f = *first.entry(c).or_insert(r);
            (*c != clocks[0]).then_some(f)
        })
        .collect()
}

/// Rank 0's note of the ranks on its own host that read another clock (another time
/// namespace), with the offset measured: their readings are moved onto rank 0's clock as
/// another host's are (else a phase's span would reach from one clock to the other).
pub fn other_clocks(hosts: &[std::sync::Arc<str>], clocks: &[u64], offsets: &[i64]) -> Vec<String> {
    let apart: Vec<usize> =
        (1..hosts.len()).filter(|&r| hosts[r] == hosts[0] && clocks[r] != clocks[0]).collect();
    let Some(&first) = apart.first() else { return vec![] };
    let ranks: Vec<String> = apart.iter().take(8).map(|r| r.to_string()).collect();
    let more = if apart.len() > 8 { format!(" and {} more", apart.len() - 8) } else { String::new() };
    let s = if apart.len() > 1 { "s" } else { "" };
    vec![format!(
        "rank{s} {}{more} on {} run in another time namespace than rank 0: their CLOCK_MONOTONIC is {:+.3} s from rank 0's{}, measured and taken out of every reading as another host's clock is",
        ranks.join(", "),
        hosts[0],
        offsets[first] as f64 / 1e9,
        if apart.len() > 1 { format!(" (rank {first}'s)") } else { String::new() }
    )]
}

/// A reading of a rank's clock on rank 0's, given that rank's offset.
pub fn to_root(t_ns: u64, offset_ns: i64) -> u64 {
    (i128::from(t_ns) - i128::from(offset_ns)).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_0_measures_one_clock_per_other_host() {
        let hosts: Vec<std::sync::Arc<str>> =
            ["a", "b", "a", "c", "b", "c", "b"].iter().map(|&h| h.into()).collect();
        assert_eq!(clock_sources(&hosts), [None, Some(1), None, Some(3), Some(1), Some(3), Some(1)]);
        // Rank 2 on rank 0's host in another time namespace: a clock of its own, said.
        let clocks = [10u64, 20, 11, 30, 20, 30, 20];
        assert_eq!(clock_sources(&clocks), [None, Some(1), Some(2), Some(3), Some(1), Some(3), Some(1)]);
        let notes = other_clocks(&hosts, &clocks, &[0, 5, -100_000_000_000_000, 7, 5, 7, 5]);
        assert_eq!(
            notes,
            [
                "rank 2 on a run in another time namespace than rank 0: their CLOCK_MONOTONIC is -100000.000 s from rank 0's, measured and taken out of every reading as another host's clock is"
            ]
        );
        assert!(other_clocks(&hosts, &[1, 2, 1, 3, 2, 3, 2], &[0; 7]).is_empty());
        // 100,000 ranks on 2,500 hosts: 2,499 exchanges, not 97,500.
        let many = crate::launch::shared_host_names((0..100_000).map(|r| format!("node{:04}", r / 40)));
        let s = clock_sources(&many);
        let measured = s.iter().enumerate().filter(|&(r, f)| *f == Some(r)).count();
        assert_eq!(measured, 2_499);
        assert!(s.iter().enumerate().all(|(r, f)| f.is_none_or(|f| f <= r && many[f] == many[r])));
    }
}
