//! Tests of the result structures: flags of the cache and phase states.

use super::*;

#[test]
fn cache_flags() {
    assert!(CacheCheck::judge(CachePolicy::Cold, 0.01, true).flags.is_empty());
    assert_eq!(CacheCheck::judge(CachePolicy::Cold, 0.2, true).flags, ["not cold: 20.0% resident"]);
    assert_eq!(CacheCheck::judge(CachePolicy::Warm, 0.5, true).flags, ["not warm: 50.0% resident"]);
    assert!(CacheCheck::judge(CachePolicy::Warm, 1.0, true).flags.is_empty());
    assert_eq!(CacheCheck::judge(CachePolicy::Asis, 0.5, true).flags, ["cache not controlled"]);
}

#[test]
fn phase_flags_count_the_runs_that_had_them() {
    let check = |flags: &[&str]| CacheCheck {
        resident_fraction: 0.0,
        flags: flags.iter().map(|s| s.to_string()).collect(),
    };
    let mut ph = PhaseResult::new("read", crate::spec::OpKind::Read, CachePolicy::Cold, String::new());
    for (i, f) in
        [&["noisy: a"][..], &[], &["noisy: b", "not cold: 9.0% resident"], &["cache not controlled"]]
            .iter()
            .enumerate()
    {
        ph.repetitions.push(Repetition::failed(i as u32, "r", Status::Complete, String::new(), &check(f)));
    }
    ph.refresh();
    assert_eq!(
        ph.flags,
        [
            "noisy: a (2 of 4 runs)",
            "not cold: 9.0% resident (1 of 4 runs)",
            "cache not controlled (1 of 4 runs)"
        ]
    );
    // Warm-ups never count.
    ph.warmups.push(Repetition::failed(9, "w", Status::Complete, String::new(), &check(&["noisy: w"])));
    ph.refresh();
    assert_eq!(ph.flags.len(), 3);
}
