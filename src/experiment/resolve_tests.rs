//! Tests of resolving a spec from parameters: the fields refused by name with their values, and what resolves.

use super::*;
use crate::error::Error;
use crate::spec::*;

use crate::experiment::testing::env;

fn params(pairs: &[(&str, &str)]) -> Params {
    crate::experiment::testing::params(pairs, ',')
}

fn err(pairs: &[(&str, &str)]) -> (String, String) {
    match resolve(&params(pairs), &env()) {
        Err(Error::Spec { field, value, .. }) => (field, value),
        other => panic!("expected a spec error, got {other:?}"),
    }
}

#[test]
fn defaults_resolve() {
    let s = resolve(&Params::default(), &env()).unwrap();
    assert_eq!(s.workers, 1);
    assert_eq!(s.bs_bytes, 1 << 20);
    assert_eq!(s.phases.len(), 3);
    assert_eq!(s.phases[0].op, OpKind::Write);
    assert_eq!(s.phases[1].cache, CachePolicy::Cold);
    assert_eq!(s.phases[2].cache, CachePolicy::Warm);
    assert_eq!(s.sync, SyncPolicy::End);
}

#[test]
fn phases_with_modifiers_and_unique_names() {
    let s = resolve(&params(&[("ops", "write,read:reverse:cold,read,read")]), &env()).unwrap();
    let names: Vec<_> = s.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["write", "read:reverse:cold", "read", "read#2"]);
    assert_eq!(s.phases[1].order, Order::Reverse);
}

#[test]
fn bad_values_name_their_field() {
    assert_eq!(err(&[("size", "0")]).0, "size");
    assert_eq!(err(&[("size", "-4k")]).0, "size");
    assert_eq!(err(&[("bs", "2MiB"), ("size", "1MiB")]).0, "bs");
    assert_eq!(err(&[("bs", "3KiB"), ("size", "10KiB")]).0, "size");
    assert_eq!(err(&[("engine", "warp")]), ("engine".into(), "warp".into()));
    assert_eq!(err(&[("layout", "zigzag")]).0, "layout");
    assert_eq!(err(&[("order", "sideways")]).0, "order");
    assert_eq!(err(&[("workers", "0")]).0, "workers");
    assert_eq!(err(&[("sync", "every:0")]).0, "sync");
    assert_eq!(err(&[("dirs", "/definitely/not/here")]).0, "dirs");
    assert_eq!(err(&[("direct", "true"), ("bs", "1000"), ("size", "1MB")]).0, "bs");
    assert_eq!(err(&[("ops", "write,scribble")]).0, "ops");
    assert_eq!(err(&[("ops", "write:warm")]).0, "ops");
    // A default that is at fault is named with its value.
    assert_eq!(err(&[("size", "64KiB")]), ("bs".into(), "1MiB".into()));
    assert_eq!(err(&[("bs", "3KiB")]), ("size".into(), "512MiB".into()));
}

#[test]
fn unknown_keys_are_refused() {
    let mut p = Params::default();
    assert!(p.set("blocksize", vec!["4k".into()]).is_err());
    assert!(Params::from_toml("blocksize = \"4k\"").is_err());
}

#[test]
fn toml_with_phase_tables() {
    let p = Params::from_toml(
        r#"
        name = "t"
        workers = 2
        size = "1MiB"
        bs = "4KiB"
        direct = false
        [[phases]]
        op = "write"
        [[phases]]
        op = "read"
        order = "random"
        cache = "warm"
        "#,
    )
    .unwrap();
    let s = resolve(&p, &env()).unwrap();
    assert_eq!(s.workers, 2);
    assert_eq!(s.phases[1].order, Order::Random);
    assert_eq!(s.phases[1].cache, CachePolicy::Warm);
}

#[test]
fn spec_round_trips_through_params() {
    let s = resolve(&params(&[("ops", "write,read:random:warm"), ("sync", "every:4MiB")]), &env()).unwrap();
    assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
    let s = resolve(
        &params(&[
            ("warmup", "2"),
            ("settle", "1.5s"),
            ("prime_memory", "0.25xRAM"),
            ("interleave", "shuffle"),
        ]),
        &env(),
    )
    .unwrap();
    assert_eq!((s.warmup, s.settle_ns, s.prime_memory_bytes), (2, 1_500_000_000, 1 << 28));
    assert_eq!(s.interleave, Interleave::Shuffle(1));
    assert_eq!(resolve(&s.to_params(), &env()).unwrap(), s);
}

#[test]
fn experiment_controls_are_checked() {
    assert_eq!(err(&[("settle", "soon")]).0, "settle");
    assert_eq!(err(&[("prime_memory", "2xRAM")]).0, "prime_memory");
    assert_eq!(err(&[("interleave", "zigzag")]).0, "interleave");
    assert_eq!(err(&[("interleave", "shuffle:x")]).0, "interleave");
    assert_eq!(err(&[("warmup", "-1")]).0, "warmup");
}
