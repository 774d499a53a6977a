//! The memory a run's workers allocate (engine buffers, latency records, a strategy's shared
//! region), checked at resolution against what the machine can give now, so a run that cannot
//! have its buffers is refused by name (exit 2) before anything is created, rather than
//! aborted by a failed allocation.

use crate::env::memory::{Available, available};
use crate::error::{Error, Result};
use crate::spec::Spec;
use crate::units::{fmt_size, fmt_size_spec};

/// What a run's buffers need, and how it is made up (for the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// Bytes of all workers' buffers at once (the phase with the most workers), plus the
    /// coordinator's one block for laying files out.
    pub bytes: u64,
    /// The parameters the figure comes from, as `field` and `value` of a refusal.
    pub fields: String,
    pub values: String,
    /// How the figure is made up, in words.
    pub how: String,
}

/// The buffer memory of `spec`'s run; `None` if it overflows 64 bits.
pub fn need(spec: &Spec) -> Option<Need> {
    let latency = crate::latency::loop_memory_bytes(spec.latency);
    let bs = fmt_size_spec(spec.bs_bytes);
    if let Some(plan) = crate::strategy::Plan::of(spec) {
        // Each writer's engine moves parts_per_iter parts per op; every role keeps latencies;
        // the hand-off rings live in one shared region.
        let mut bytes = crate::strategy::shm::Layout::of(&plan, spec.mem()).len as u64;
        for r in &plan.roles {
            bytes = bytes.checked_add(latency)?;
            if let Some(w) = &r.write {
                let op = spec.bs_bytes.checked_mul(w.parts_per_iter as u64)?;
                bytes = bytes.checked_add(crate::engine::buffer_bytes(op, spec.mem(), 1)?)?;
            }
        }
        return Some(Need {
            bytes,
            fields: "bs x workers".into(),
            values: format!("{bs} x {}", spec.workers),
            how: format!(
                "strategy {}: {} roles, their writers' buffers and the shared hand-off region",
                spec.strategy.map_or("", |s| s.name()),
                plan.roles.len()
            ),
        });
    }
    let workers = spec.phases.iter().map(|p| spec.phase_workers(p)).max().unwrap_or(spec.workers) as u64;
    let engine = crate::engine::buffer_bytes(spec.max_op_bytes(), spec.mem(), spec.iodepth)?;
    // A phase's ops apart (directions, block sizes, response times) keep histograms of their own.
    let latency = latency.checked_add(classes_bytes(spec))?;
    let mut bytes = engine.checked_add(latency)?.checked_mul(workers)?.checked_add(spec.bs_bytes)?;
    // Each I/O-server rank keeps one block to receive into and send from.
    let servers = spec.servers.as_ref().map_or(0, |s| u64::from(s.count));
    bytes = bytes.checked_add(spec.bs_bytes.checked_next_multiple_of(4096)?.checked_mul(servers)?)?;
    let (mut fields, mut values) = ("bs".to_string(), bs);
    if let (Some(len), Some(stride)) = (spec.mem_len_bytes, spec.mem_stride_bytes) {
        fields += " / mem_len x mem_stride";
        values += &format!(" / {} x {}", fmt_size_spec(len), fmt_size_spec(stride));
    }
    if spec.iodepth > 1 {
        fields += " x iodepth";
        values += &format!(" x {}", spec.iodepth);
    }
    fields += " x workers";
    values += &format!(" x {workers}");
    let mut how = format!(
        "{} of buffers per worker (page-rounded) and {} of latency records, for {workers} worker(s)",
        fmt_size(engine),
        fmt_size(latency)
    );
    if servers > 0 {
        how += &format!(", and one block for each of {servers} server rank(s)");
    }
    Some(Need { bytes, fields, values, how })
}

/// The most memory a worker's ops apart take in any phase of `spec` (0 with `latency = off`).
fn classes_bytes(spec: &Spec) -> u64 {
    if spec.latency == crate::spec::LatencyMode::Off {
        return 0;
    }
    let sizes = spec.workload.bssplit.as_ref().map_or(0, |b| b.0.len());
    let of = |p: &crate::spec::Phase| {
        let (mixed, paced) = (p.op == crate::spec::OpKind::Rw, spec.phase_rate(p).is_some());
        crate::latency::classes::ClassRec::memory_bytes(mixed, sizes, paced)
    };
    spec.phases.iter().map(of).max().unwrap_or(0)
}

/// Refuses `spec` when its buffers need more memory than `avail` (what the machine can give
/// now; nothing is checked when that is unknown).
pub fn check_with(spec: &Spec, avail: Option<&Available>) -> Result<()> {
    let Some(n) = need(spec) else {
        return Err(Error::spec(
            "bs",
            fmt_size_spec(spec.bs_bytes),
            "the workers' buffers (bs x iodepth x workers) overflow 64 bits",
        ));
    };
    match avail {
        Some(a) if n.bytes > a.bytes => Err(Error::spec(
            n.fields,
            n.values,
            format!(
                "the run's buffers need {} of memory ({}), but {} is available ({}); use a smaller bs, iodepth or fewer workers",
                fmt_size(n.bytes),
                n.how,
                fmt_size(a.bytes),
                a.source
            ),
        )),
        _ => Ok(()),
    }
}

/// [`check_with`] against the memory this machine can give now.
pub fn check(spec: &Spec) -> Result<()> {
    check_with(spec, available().as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testing::{env, params};
    use crate::experiment::{Params, resolve};

    fn spec(pairs: &[(&str, &str)]) -> Spec {
        let mut p: Params = params(&[], ',');
        for (k, v) in pairs {
            p.set_one(k, v).unwrap();
        }
        resolve(&p, &env()).unwrap()
    }

    fn gib(n: u64) -> Available {
        Available { bytes: n << 30, source: "test figure".into() }
    }

    #[test]
    fn buffers_count_bs_iodepth_and_workers() {
        let s = spec(&[("bs", "1MiB"), ("size", "4MiB"), ("workers", "3"), ("latency", "off")]);
        assert_eq!(need(&s).unwrap().bytes, 3 * (1 << 20) + (1 << 20));
        // Strided memory: bs / mem_len x mem_stride, plus the packing buffer.
        let s = spec(&[
            ("bs", "64KiB"),
            ("size", "64KiB"),
            ("mem_len", "8"),
            ("mem_stride", "64"),
            ("latency", "off"),
        ]);
        assert_eq!(need(&s).unwrap().bytes, (512 << 10) + (64 << 10) + (64 << 10));
        // The phase with the most workers counts.
        let s = spec(&[
            ("files", "8"),
            ("ops", "write:workers=8,read"),
            ("bs", "4KiB"),
            ("size", "4KiB"),
            ("latency", "off"),
        ]);
        assert_eq!(need(&s).unwrap().bytes, 8 * 4096 + 4096);
        let s = spec(&[("bs", "4KiB"), ("size", "4KiB"), ("latency", "trace")]);
        assert!(need(&s).unwrap().bytes > 2 << 20, "histograms and trace batches count");
    }

    #[test]
    fn a_run_whose_buffers_do_not_fit_is_refused_by_its_fields() {
        // As resolved, then grown past what this machine may have (resolve would refuse it).
        let mut s = spec(&[("latency", "off")]);
        (s.bs_bytes, s.size_bytes, s.workers) = (1 << 30, 1 << 30, 64);
        match check_with(&s, Some(&gib(16))) {
            Err(Error::Spec { field, value, reason }) => {
                assert_eq!((field.as_str(), value.as_str()), ("bs x workers", "1GiB x 64"));
                assert!(reason.contains("need 65 GiB of memory"), "{reason}");
                assert!(reason.contains("but 16 GiB is available (test figure)"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(check_with(&s, Some(&gib(66))).is_ok());
        assert!(check_with(&s, None).is_ok(), "unknown memory: no refusal");
    }
}
