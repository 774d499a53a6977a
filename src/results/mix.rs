//! A phase's workload apart (`mix` in the JSON, docs/json.md): the reads and the writes of a
//! mixed phase, each block size of a mix, and the response times of a rate-limited phase,
//! each with its ops, bytes, rates (summed over the workers as max_SAR is) and latency; how
//! far the workers fell behind their schedule; the measured read share and skew. Per worker
//! ([`WorkerMix`]), per repetition ([`Mix`]) and across repetitions ([`MixSummary`]).

use serde::{Deserialize, Serialize};

use crate::latency::classes::{ClassSample, READ, WRITE};
use crate::latency::{Buckets, LatencyNs};
use crate::stats::{self, Summary};
use crate::worker::mix::MixSample;
use crate::worker::pace::Behind;

/// One worker's workload figures (`workers[].mix`): its ops and bytes each way and per block
/// size, how far it fell behind, what it moved again, its skew.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerMix {
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
    /// A block-size mix: (size, ops, bytes) of each size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_sizes: Vec<(u64, u64, u64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<Behind>,
    /// Bytes of ops on blocks the phase had already moved.
    #[serde(default)]
    pub again_bytes: u64,
    /// An order that draws: ops on the hottest tenth of its blocks, of how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_ops: Option<(u64, u64)>,
}

impl WorkerMix {
    /// Its figures from its sample; the sample's histograms are handed back for the repetition.
    pub fn of(s: MixSample) -> (WorkerMix, ClassSample) {
        let c = s.classes;
        let w = WorkerMix {
            read_ops: c.ops[READ],
            read_bytes: c.bytes[READ],
            write_ops: c.ops[WRITE],
            write_bytes: c.bytes[WRITE],
            block_sizes: c.by_size.iter().map(|b| (b.bs_bytes, b.ops, b.bytes)).collect(),
            behind: s.behind,
            again_bytes: s.again_bytes,
            hot_ops: s.hot,
        };
        (w, c)
    }
}

/// One class of ops (a direction, or a block size) in one repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    pub ops: u64,
    pub bytes: u64,
    /// Summed over the workers as max_SAR: the sum of each worker's bytes (ops) of the class
    /// over its time t_i.
    pub bytes_per_s: f64,
    pub ops_per_s: f64,
    /// Service time: from the op's issue to its completion.
    pub latency_ns: LatencyNs,
    #[serde(default, skip_serializing_if = "Buckets::is_empty")]
    pub latency_histogram_ns: Buckets,
    /// A rate-limited phase: from the op's planned start to its completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_latency_ns: Option<LatencyNs>,
    #[serde(default, skip_serializing_if = "Buckets::is_empty")]
    pub response_histogram_ns: Buckets,
}

/// One block size of a mix in one repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SizeFigures {
    pub bs_bytes: u64,
    /// Its share of the ops.
    pub share_ops: f64,
    pub figures: ClassFigures,
}

/// How far a repetition's workers fell behind their schedule: the worst of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BehindFigures {
    /// The most any op was late, ns.
    pub max_late_ns: u64,
    /// The longest any worker spent behind, ns.
    pub behind_ns: u64,
    /// Late ops, all workers.
    pub late_ops: u64,
    /// Workers that had a late op.
    pub workers_behind: u32,
    /// What made an op late, ns after its planned start.
    pub threshold_ns: u64,
}

/// A repetition's workload apart (`mix`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    /// A mixed phase: its reads and its writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ClassFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<ClassFigures>,
    /// A mixed phase: the share of its ops that were reads (what the draws gave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_share_ops: Option<f64>,
    /// A block-size mix: each size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_sizes: Vec<SizeFigures>,
    /// A rate-limited phase: every op's response time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_latency_ns: Option<LatencyNs>,
    #[serde(default, skip_serializing_if = "Buckets::is_empty")]
    pub response_histogram_ns: Buckets,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<BehindFigures>,
    /// An order that draws: the share of the ops on the hottest tenth of each worker's blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot10_share_ops: Option<f64>,
}

/// Figures of a histogram's buckets (none when empty).
fn figures(b: &Buckets) -> LatencyNs {
    if b.is_empty() { LatencyNs::default() } else { LatencyNs::from_buckets(&b.to_hist(), b) }
}

impl Mix {
    /// The mix of a repetition from its workers' figures (`workers`: (its mix, its time t_i))
    /// and their class histograms merged (`classes`); None when no worker kept any.
    pub fn of(workers: &[(&WorkerMix, u64)], classes: Option<&ClassSample>) -> Option<Mix> {
        if workers.is_empty() {
            return None;
        }
        let rate = |f: &dyn Fn(&WorkerMix) -> u64| -> f64 {
            workers.iter().map(|(w, t)| stats::individual_rate(f(w), *t)).filter(|r| r.is_finite()).sum()
        };
        let class =
            |ops: u64, bytes: u64, rates: (f64, f64), hist: Option<&Buckets>, resp: Option<&Buckets>| {
                let hist = hist.cloned().unwrap_or_default();
                let response = resp.cloned().unwrap_or_default();
                ClassFigures {
                    ops,
                    bytes,
                    bytes_per_s: rates.0,
                    ops_per_s: rates.1,
                    latency_ns: figures(&hist),
                    latency_histogram_ns: hist,
                    response_latency_ns: (!response.is_empty()).then(|| figures(&response)),
                    response_histogram_ns: response,
                }
            };
        let sum = |f: &dyn Fn(&WorkerMix) -> u64| workers.iter().map(|(w, _)| f(w)).sum::<u64>();
        let (r_ops, w_ops) = (sum(&|w| w.read_ops), sum(&|w| w.write_ops));
        let mixed = classes.is_some_and(|c| c.by_dir.is_some()) || (r_ops > 0 && w_ops > 0);
        let dir = |d: usize| classes.and_then(|c| c.by_dir.as_ref()).map(|b| &b[d]);
        let resp_dir = |d: usize| classes.and_then(|c| c.response_by_dir.as_ref()).map(|b| &b[d]);
        let mut m = Mix::default();
        if mixed {
            let rr = (rate(&|w| w.read_bytes), rate(&|w| w.read_ops));
            let wr = (rate(&|w| w.write_bytes), rate(&|w| w.write_ops));
            m.read = Some(class(r_ops, sum(&|w| w.read_bytes), rr, dir(READ), resp_dir(READ)));
            m.write = Some(class(w_ops, sum(&|w| w.write_bytes), wr, dir(WRITE), resp_dir(WRITE)));
            m.read_share_ops = (r_ops + w_ops > 0).then(|| r_ops as f64 / (r_ops + w_ops) as f64);
        }
        let sizes: Vec<u64> = workers[0].0.block_sizes.iter().map(|b| b.0).collect();
        let all_ops: u64 = workers.iter().flat_map(|(w, _)| w.block_sizes.iter().map(|b| b.1)).sum();
        for (i, &bs) in sizes.iter().enumerate() {
            let of = |f: fn(&(u64, u64, u64)) -> u64| move |w: &WorkerMix| w.block_sizes.get(i).map_or(0, f);
            let (ops, bytes) = (sum(&of(|b| b.1)), sum(&of(|b| b.2)));
            let hist = classes
                .and_then(|c| c.by_size.iter().find(|s| s.bs_bytes == bs))
                .map(|s| &s.latency_histogram_ns);
            let rates = (rate(&of(|b| b.2)), rate(&of(|b| b.1)));
            m.block_sizes.push(SizeFigures {
                bs_bytes: bs,
                share_ops: if all_ops > 0 { ops as f64 / all_ops as f64 } else { 0.0 },
                figures: class(ops, bytes, rates, hist, None),
            });
        }
        if let Some(r) = classes.and_then(|c| c.response.as_ref()) {
            m.response_latency_ns = Some(figures(r));
            m.response_histogram_ns = r.clone();
        }
        let behind: Vec<&Behind> = workers.iter().filter_map(|(w, _)| w.behind.as_ref()).collect();
        if !behind.is_empty() {
            m.behind = Some(BehindFigures {
                max_late_ns: behind.iter().map(|b| b.max_ns).max().unwrap_or(0),
                behind_ns: behind.iter().map(|b| b.ns).max().unwrap_or(0),
                late_ops: behind.iter().map(|b| b.late_ops).sum(),
                workers_behind: behind.iter().filter(|b| b.late_ops > 0).count() as u32,
                threshold_ns: behind.iter().map(|b| b.threshold_ns).max().unwrap_or(0),
            });
        }
        let hot: Vec<(u64, u64)> = workers.iter().filter_map(|(w, _)| w.hot_ops).collect();
        if !hot.is_empty() {
            let (h, n) = hot.iter().fold((0, 0), |(a, b), (h, n)| (a + h, b + n));
            m.hot10_share_ops = (n > 0).then(|| h as f64 / n as f64);
        }
        (m != Mix::default()).then_some(m)
    }

    /// The flag of a repetition whose workers fell behind their schedule.
    pub fn behind_flag(&self) -> Option<String> {
        let b = self.behind.filter(|b| b.late_ops > 0)?;
        let d = crate::units::fmt_ns;
        Some(format!(
            "behind schedule: ops up to {} late, {} behind, {} ops late (more than {} after their planned start)",
            d(b.max_late_ns),
            d(b.behind_ns),
            b.late_ops,
            d(b.threshold_ns)
        ))
    }
}

/// One class across the complete repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub bytes_per_s: Summary,
    pub ops_per_s: Summary,
    /// Over every op of the complete repetitions.
    pub latency_ns: LatencyNs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_latency_ns: Option<LatencyNs>,
}

/// A phase's workload apart across its complete repetitions (`mix_summary`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MixSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ClassSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<ClassSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_share_ops: Option<f64>,
    /// Each block size: its size, mean share of the ops, and figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_sizes: Vec<(u64, f64, ClassSummary)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_latency_ns: Option<LatencyNs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot10_share_ops: Option<f64>,
}

/// Figures of several repetitions' histograms merged.
fn merged(hists: impl Iterator<Item = Buckets>) -> Option<LatencyNs> {
    let mut h = crate::latency::new_hist();
    let mut any = false;
    for b in hists {
        for (v, c) in b.0 {
            crate::latency::record_n(&mut h, v, c);
            any = true;
        }
    }
    any.then(|| LatencyNs::from_hist(&h))
}

fn class_summary(name: &str, cs: &[&ClassFigures]) -> Option<ClassSummary> {
    if cs.is_empty() {
        return None;
    }
    let of = |f: fn(&ClassFigures) -> f64| cs.iter().map(|c| f(c)).collect::<Vec<f64>>();
    Some(ClassSummary {
        bytes_per_s: Summary::of(&format!("{name}_bytes_per_s"), &of(|c| c.bytes_per_s)),
        ops_per_s: Summary::of(&format!("{name}_ops_per_s"), &of(|c| c.ops_per_s)),
        latency_ns: merged(cs.iter().map(|c| c.latency_histogram_ns.clone())).unwrap_or_default(),
        response_latency_ns: merged(cs.iter().map(|c| c.response_histogram_ns.clone())),
    })
}

impl MixSummary {
    /// The summary of the complete repetitions' mixes; None when none has one.
    pub fn of(mixes: &[&Mix]) -> Option<MixSummary> {
        if mixes.is_empty() {
            return None;
        }
        let mean = |xs: Vec<f64>| (!xs.is_empty()).then(|| stats::mean(&xs));
        let dir = |f: fn(&Mix) -> Option<&ClassFigures>, name| {
            class_summary(name, &mixes.iter().filter_map(|m| f(m)).collect::<Vec<_>>())
        };
        let sizes: Vec<u64> = mixes[0].block_sizes.iter().map(|b| b.bs_bytes).collect();
        let block_sizes = sizes
            .iter()
            .filter_map(|&bs| {
                let of: Vec<&SizeFigures> =
                    mixes.iter().filter_map(|m| m.block_sizes.iter().find(|b| b.bs_bytes == bs)).collect();
                let share = stats::mean(&of.iter().map(|b| b.share_ops).collect::<Vec<_>>());
                let figs: Vec<&ClassFigures> = of.iter().map(|b| &b.figures).collect();
                class_summary(&format!("bs_{bs}"), &figs).map(|s| (bs, share, s))
            })
            .collect();
        Some(MixSummary {
            read: dir(|m| m.read.as_ref(), "read"),
            write: dir(|m| m.write.as_ref(), "write"),
            read_share_ops: mean(mixes.iter().filter_map(|m| m.read_share_ops).collect()),
            block_sizes,
            response_latency_ns: merged(mixes.iter().map(|m| m.response_histogram_ns.clone())),
            hot10_share_ops: mean(mixes.iter().filter_map(|m| m.hot10_share_ops).collect()),
        })
    }
}
