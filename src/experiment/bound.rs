//! The time bounds of a spec (`runtime`, `stonewall`, `wear_out`, and a phase's own
//! `runtime=D` or `stonewall=D`) parsed and checked: one kind of bound per phase, nothing they
//! cannot bound (strategies, I/O-server ranks, collective MPI-IO), and every phase that reads
//! or rewrites what a bounded phase wrote shaped as that phase, so that each of its workers
//! reads the blocks one worker wrote (docs/spec.md, "Time-bounded phases").

use super::Params;
use super::params::parse_bool;
use crate::error::{Error, Result};
use crate::spec::{OpKind, Phase, Spec};
use crate::units::parse_duration_ns;

/// The longest bound taken: a week.
const MAX_NS: u64 = 7 * 24 * 3600 * 1_000_000_000;

fn duration(field: &str, shown: &str, v: &str) -> Result<u64> {
    let ns = parse_duration_ns(v).map_err(|e| Error::spec(field, shown, e.0))?;
    if ns > MAX_NS {
        return Err(Error::spec(field, shown, "must be at most a week (168h)"));
    }
    Ok(ns)
}

/// A phase's own `runtime=D` or `stonewall=D` (`phase` is the phase as written): ns, 0 = none.
pub(super) fn phase_duration(phase: &str, key: &str, v: &str) -> Result<u64> {
    duration("ops", phase, v).map_err(|e| match e {
        Error::Spec { field, value, reason } => {
            Error::spec(field, value, format!("{key}: {reason} (a duration such as 30s or 500ms)"))
        }
        e => e,
    })
}

/// Sets the spec's time bounds from `params` and checks them with the rest of the spec.
pub(super) fn resolve_into(params: &Params, spec: &mut Spec) -> Result<()> {
    let given = |k: &str| -> Result<Option<u64>> {
        match params.one(k) {
            None => Ok(None),
            Some(v) => duration(k, v, v).map(|ns| (ns > 0).then_some(ns)),
        }
    };
    spec.runtime_ns = given("runtime")?;
    spec.stonewall_ns = given("stonewall")?;
    spec.wear_out = parse_bool("wear_out", params.one("wear_out").unwrap_or("false"))?;
    check(spec)
}

/// The rules a spec's time bounds follow.
fn check(spec: &Spec) -> Result<()> {
    if let (Some(_), Some(ns)) = (spec.runtime_ns, spec.stonewall_ns) {
        return Err(Error::spec(
            "stonewall",
            crate::units::fmt_duration_spec(ns),
            "not with runtime: runtime runs every worker for the time, stonewall stops workers at it; give one",
        ));
    }
    let run_wide =
        spec.runtime_ns.map(|ns| ("runtime", ns)).or(spec.stonewall_ns.map(|ns| ("stonewall", ns)));
    if let Some((field, ns)) = run_wide
        && spec.phases.iter().all(|p| p.op.is_metadata())
        && (field == "runtime" || !spec.phases.iter().any(|p| p.op.makes_items()))
    {
        let why = if field == "runtime" {
            "the run has only metadata phases, which are not run for a time (each goes through its items; a create or mkdir takes stonewall)"
        } else {
            "the run has only metadata phases and none makes items: stonewall bounds create and mkdir, the others go through the items made"
        };
        return Err(Error::spec(field, crate::units::fmt_duration_spec(ns), why));
    }
    for p in &spec.phases {
        if let (Some(r), Some(s)) = (p.runtime_ns, p.stonewall_ns)
            && r > 0
            && s > 0
        {
            return Err(Error::spec("ops", &p.name, "a phase takes runtime or stonewall, not both"));
        }
    }
    let bounded: Vec<&Phase> = spec.phases.iter().filter(|p| spec.phase_bound(p).is_some()).collect();
    let stonewalled = bounded.iter().any(|p| spec.phase_bound(p).is_some_and(|b| !b.wraps()));
    if spec.wear_out && !stonewalled {
        return Err(Error::spec("wear_out", "true", "goes with stonewall: no phase has a stonewall"));
    }
    let Some(first) = bounded.first() else { return Ok(()) };
    let what = first.name.as_str();
    if let Some(s) = spec.strategy {
        return Err(Error::spec(
            "strategy",
            s.name(),
            format!("a strategy runs its iterations; phase {what} has a time bound (runtime, stonewall)"),
        ));
    }
    if spec.servers.is_some() {
        return Err(Error::spec(
            "servers",
            spec.servers.as_ref().map_or(0, |s| s.count),
            "time-bounded phases (runtime, stonewall) are not built with I/O-server ranks",
        ));
    }
    if spec.mpiio.as_ref().is_some_and(|m| m.collective) {
        return Err(Error::spec(
            "mpiio",
            "collective",
            "a collective call needs every rank; a time bound stops ranks at different ops (use independent)",
        ));
    }
    shapes_agree(spec)
}

/// Whether phase `p` takes the run-wide bound `field` (`runtime` or `stonewall`): it has no
/// bound of its own, and (a metadata phase) it is a create or mkdir under a stonewall.
fn takes_run_wide(p: &Phase, field: &str) -> bool {
    let own = p.runtime_ns.is_some() || p.stonewall_ns.is_some();
    !own && (!p.op.is_metadata() || (field == "stonewall" && p.op.makes_items()))
}

/// Every point's spec checked together: a run-wide `runtime` or `stonewall` that no phase of
/// any point takes (each has a bound of its own, or is a metadata phase that takes none) would
/// do nothing, and is refused, naming the phases.
pub(super) fn check_used(points: &[&Spec]) -> Result<()> {
    for field in ["runtime", "stonewall"] {
        let given = |s: &Spec| if field == "runtime" { s.runtime_ns } else { s.stonewall_ns };
        let Some((spec, ns)) = points.iter().find_map(|s| given(s).map(|ns| (*s, ns))) else { continue };
        if points.iter().any(|s| given(s).is_some() && s.phases.iter().any(|p| takes_run_wide(p, field))) {
            continue;
        }
        let phases: Vec<&str> = spec.phases.iter().map(|p| p.name.as_str()).collect();
        return Err(Error::spec(
            field,
            crate::units::fmt_duration_spec(ns),
            format!(
                "no phase takes it: each of the phases ({}) has a time bound of its own or is a metadata phase that takes none (a stonewall bounds create and mkdir), so this value would never be used; drop it, or a phase's own",
                phases.join(",")
            ),
        ));
    }
    Ok(())
}

/// What decides which blocks each worker of a phase visits, in which order.
fn shape(spec: &Spec, p: &Phase) -> (u32, crate::spec::Layout, crate::spec::Order, u32, Option<u32>) {
    (spec.phase_workers(p), spec.phase_layout(p), p.order, spec.phase_round_robin(p), p.files)
}

/// A phase that reads or rewrites after a bounded phase that wrote (with no write phase, which
/// makes the files anew, between them) must visit the blocks as that phase did: it reads, per
/// worker, the blocks that phase's worker wrote.
fn shapes_agree(spec: &Spec) -> Result<()> {
    for (i, p) in spec.phases.iter().enumerate() {
        if !matches!(p.op, OpKind::Read | OpKind::Rewrite | OpKind::Rw) {
            continue;
        }
        let since_write = spec.phases[..i].iter().rposition(|q| q.op == OpKind::Write).unwrap_or(0);
        let writer = spec.phases[since_write..i]
            .iter()
            .filter(|q| q.op.is_write() && spec.phase_bound(q).is_some())
            .find(|q| shape(spec, q) != shape(spec, p));
        if let Some(w) = writer {
            return Err(Error::spec(
                "ops",
                &p.name,
                format!(
                    "reads what the time-bounded phase {} wrote, which may stop before its last block, but visits other blocks (workers, layout, order, round_robin and files must be the same); give both the same shape, or leave {} unbounded (its files are then whole)",
                    w.name, w.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::experiment::testing::{env, params};
    use crate::experiment::{Params, resolve};
    use crate::spec::TimeBound;

    fn spec(pairs: &[(&str, &str)]) -> crate::Result<crate::spec::Spec> {
        let p: Params = params(pairs, ';');
        resolve(&p, &env())
    }

    fn refused(pairs: &[(&str, &str)]) -> (String, String, String) {
        match spec(pairs) {
            Err(Error::Spec { field, value, reason }) => (field, value, reason),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn bounds_resolve_per_run_and_per_phase() {
        let s = spec(&[("runtime", "2s"), ("ops", "write,read:runtime=500ms,read:runtime=0")]).unwrap();
        let b: Vec<Option<TimeBound>> = s.phases.iter().map(|p| s.phase_bound(p)).collect();
        assert_eq!(
            b,
            [
                Some(TimeBound::Runtime { ns: 2_000_000_000 }),
                Some(TimeBound::Runtime { ns: 500_000_000 }),
                None
            ]
        );
        let s = spec(&[("stonewall", "1s"), ("wear_out", "true"), ("ops", "write,read")]).unwrap();
        assert_eq!(
            s.phase_bound(&s.phases[1]),
            Some(TimeBound::Stonewall { ns: 1_000_000_000, wear_out: true })
        );
        assert_eq!(s.phase_bound(&s.phases[1]).unwrap().label(), "stonewall 1s + wear-out");
        // A phase's own stonewall under a run-wide runtime.
        let s = spec(&[("runtime", "1s"), ("ops", "write:stonewall=3s,read")]).unwrap();
        assert_eq!(
            s.phase_bound(&s.phases[0]),
            Some(TimeBound::Stonewall { ns: 3_000_000_000, wear_out: false })
        );
        // 0 is no bound; the spec round-trips through its parameters.
        let s = spec(&[("runtime", "0"), ("ops", "write:stonewall=250ms,read:cold")]).unwrap();
        assert_eq!((s.runtime_ns, s.time_bounded()), (None, true));
        assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
        let s = spec(&[("stonewall", "90s"), ("wear_out", "true")]).unwrap();
        assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
    }

    /// Of the metadata phases, the run's stonewall bounds create and mkdir (not the phases
    /// after them) and never runtime; a run of metadata phases alone takes a stonewall only
    /// with a create or mkdir; a phase's own runtime, or stonewall on another op, is refused.
    #[test]
    fn metadata_phases_take_a_stonewall_on_create() {
        let s = spec(&[("stonewall", "5s"), ("ops", "write,create,stat,unlink")]).unwrap();
        let b: Vec<bool> = s.phases.iter().map(|p| s.phase_bound(p).is_some()).collect();
        assert_eq!(b, [true, true, false, false]);
        let s = spec(&[("wear_out", "true"), ("ops", "create:stonewall=300s,stat,find,unlink")]).unwrap();
        let b: Vec<_> = s.phases.iter().map(|p| s.phase_bound(p)).collect();
        let wall = TimeBound::Stonewall { ns: 300_000_000_000, wear_out: true };
        assert_eq!(b, [Some(wall), None, None, None]);
        assert_eq!(wall.label(), "stonewall 5min + wear-out");
        let s = spec(&[("stonewall", "2s"), ("ops", "mkdir,stat,rmdir")]).unwrap();
        assert!(s.phase_bound(&s.phases[0]).is_some() && s.phase_bound(&s.phases[2]).is_none());
        assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
        let s = spec(&[("runtime", "1s"), ("ops", "write,create,unlink")]).unwrap();
        assert_eq!(s.phases.iter().filter(|p| s.phase_bound(p).is_some()).count(), 1);
        let (f, v, why) = refused(&[("runtime", "5s"), ("ops", "create,unlink")]);
        assert_eq!((f.as_str(), v.as_str()), ("runtime", "5s"));
        assert!(why.contains("not run for a time"), "{why}");
        assert!(spec(&[("stonewall", "1s"), ("ops", "create,find,unlink")]).is_ok());
        let (f, v, why) = refused(&[("stonewall", "1s"), ("ops", "stat,unlink")]);
        assert_eq!((f.as_str(), v.as_str()), ("stonewall", "1s"));
        assert!(why.contains("none makes items"), "{why}");
        let (f, v, why) = refused(&[("ops", "create:runtime=1s,unlink")]);
        assert_eq!((f.as_str(), v.as_str()), ("ops", "create:runtime=1s"));
        assert!(why.starts_with("runtime: "), "{why}");
        let (f, v, why) = refused(&[("ops", "create,find:stonewall=1s,unlink")]);
        assert_eq!((f.as_str(), v.as_str()), ("ops", "find:stonewall=1s"));
        assert!(why.starts_with("stonewall: only create and mkdir"), "{why}");
    }

    #[test]
    fn bounds_that_cannot_work_are_refused_by_name() {
        let (f, v, why) = refused(&[("runtime", "1s"), ("stonewall", "2s")]);
        assert_eq!((f.as_str(), v.as_str()), ("stonewall", "2s"));
        assert!(why.contains("not with runtime"), "{why}");
        assert_eq!(refused(&[("runtime", "soon")]).0, "runtime");
        assert_eq!(refused(&[("stonewall", "-1s")]).0, "stonewall");
        assert_eq!(refused(&[("runtime", "200h")]).0, "runtime");
        assert_eq!(refused(&[("wear_out", "true")]).0, "wear_out");
        assert_eq!(refused(&[("wear_out", "true"), ("runtime", "1s")]).0, "wear_out");
        let (f, v, why) = refused(&[("ops", "write:runtime=1s:stonewall=1s")]);
        assert_eq!((f.as_str(), v.as_str()), ("ops", "write:runtime=1s:stonewall=1s"));
        assert!(why.contains("not both"), "{why}");
        let (_, v, why) = refused(&[("ops", "write:runtime=fast")]);
        assert_eq!(v, "write:runtime=fast");
        assert!(why.starts_with("runtime: "), "{why}");
        let (f, v, _) = refused(&[("strategy", "S1A"), ("runtime", "1s")]);
        assert_eq!((f.as_str(), v.as_str()), ("strategy", "S1A"));
    }

    /// A read after a bounded write must visit the blocks as the write did; a read bounded on
    /// its own, or after a write phase that made the files anew, may visit others.
    #[test]
    fn reads_after_a_bounded_write_keep_its_shape() {
        let (f, v, why) = refused(&[("stonewall", "1s"), ("ops", "write,read:random")]);
        assert_eq!((f.as_str(), v.as_str()), ("ops", "read:random"));
        assert!(why.contains("time-bounded phase write"), "{why}");
        assert!(why.ends_with("or leave write unbounded (its files are then whole)"), "{why}");
        assert_eq!(refused(&[("ops", "write:runtime=1s,read:workers=2")]).1, "read:workers=2");
        assert_eq!(refused(&[("ops", "write:runtime=1s,rewrite:reverse,read")]).1, "rewrite:reverse");
        assert!(spec(&[("ops", "write,read:random:runtime=1s")]).is_ok());
        assert!(spec(&[("ops", "write:stonewall=1s,read:cold,read:warm")]).is_ok());
        assert!(spec(&[("ops", "write:stonewall=1s,write,read:random")]).is_ok());
        assert!(spec(&[("runtime", "1s"), ("order", "random"), ("ops", "write,read")]).is_ok());
    }
}
