//! Tests of the findings' decision rule and side selection on synthetic repetitions.

use super::*;
use crate::results::{CacheCheck, PhaseResult, Repetition};
use crate::spec::{CachePolicy, OpKind};

/// A point with the given sweep values and, per phase, the max_SAR of each repetition (MB/s).
fn point(params: &[(&str, &str)], phases: &[(&str, &[f64])]) -> PointResult {
    PointResult {
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        spec: None,
        phases: phases
            .iter()
            .map(|(name, rates)| {
                let mut ph = PhaseResult::new(name, OpKind::Write, CachePolicy::Asis, String::new());
                for (i, r) in rates.iter().enumerate() {
                    let mut rep = Repetition::failed(
                        i as u32,
                        "r",
                        Status::Complete,
                        String::new(),
                        &CacheCheck::default(),
                    );
                    rep.max_sar_bytes_per_s = r * 1e6;
                    rep.min_sar_bytes_per_s = r * 0.5e6;
                    rep.time_ns = (1e9 / r) as u64;
                    ph.repetitions.push(rep);
                }
                ph
            })
            .collect(),
    }
}

fn spec(text: &str) -> FindingSpec {
    toml::from_str(text).unwrap()
}

/// The finding a / b <= `max_ratio` of sides `a` and `b` (the inline tables' contents).
fn at_most(a: &str, b: &str, max_ratio: f64) -> FindingSpec {
    spec(&format!("claim = 'c'\npaper = 'p'\na = {{ {a} }}\nb = {{ {b} }}\nmax_ratio = {max_ratio}"))
}

const DROP: &str = r#"
claim = "two readers are slower than one"
paper = "6.0 -> 3.5 MB/s"
a = { n = [2, 4] }
b = { n = 1 }
max_ratio = 1.0
"#;

#[test]
fn decision_rule_on_synthetic_samples() {
    // Tight samples around 50 and 100: the ratio's interval is near 0.5, within <= 1.
    let low = [49.0, 50.0, 51.0, 50.0];
    let high = [99.0, 100.0, 101.0, 100.0];
    let iv = unpaired_interval(stats::positive_ci95(&low), stats::positive_ci95(&high)).unwrap();
    assert!(iv[0] > 0.45 && iv[1] < 0.55, "{iv:?}");
    assert_eq!(decide(Some(iv), None, Some(1.0)).0, Verdict::Holds);
    // The reverse: wholly above 1.
    let iv = unpaired_interval(stats::positive_ci95(&high), stats::positive_ci95(&low)).unwrap();
    assert_eq!(decide(Some(iv), None, Some(1.0)).0, Verdict::DoesNotHold);
    // Wide, overlapping samples: the interval straddles 1.
    let wide_a = [10.0, 90.0, 50.0];
    let wide_b = [20.0, 80.0, 60.0];
    let iv = unpaired_interval(stats::positive_ci95(&wide_a), stats::positive_ci95(&wide_b)).unwrap();
    assert!(iv[0] < 1.0 && iv[1] > 1.0);
    assert_eq!(decide(Some(iv), None, Some(1.0)).0, Verdict::Inconclusive);
    // A two-sided range: inside, outside, straddling.
    assert_eq!(decide(Some([0.95, 1.05]), Some(0.9), Some(1.1)).0, Verdict::Holds);
    assert_eq!(decide(Some([0.5, 0.8]), Some(0.9), Some(1.1)).0, Verdict::DoesNotHold);
    assert_eq!(decide(Some([0.85, 1.0]), Some(0.9), Some(1.1)).0, Verdict::Inconclusive);
    assert_eq!(decide(None, Some(0.9), None).0, Verdict::Inconclusive);
    // An interval of b that reaches 0 leaves the ratio open above.
    assert_eq!(unpaired_interval(Some([1.0, 2.0]), Some([-1.0, 3.0])), Some([1.0 / 3.0, f64::INFINITY]));
}

#[test]
fn sides_pick_the_first_value_the_run_has() {
    let points = vec![
        point(&[("n", "1")], &[("w", &[1.0, 1.0]), ("read:n=1", &[100.0, 101.0, 99.0])]),
        point(&[("n", "4")], &[("w", &[1.0, 1.0]), ("read:n=4", &[50.0, 51.0, 49.0])]),
    ];
    // The phase names the point's own sweep value.
    let f = spec(&format!("phase = \"read:n={{n}}\"\n{DROP}")).evaluate(&points);
    assert_eq!(f.a.point, "n=4");
    assert_eq!(f.b.point, "n=1");
    assert_eq!((f.a.n, f.b.n), (3, 3));
    assert!(!f.paired);
    assert!((f.ratio.unwrap() - 0.5).abs() < 1e-9);
    // Unpaired, the interval comes from each side's own interval, in bytes per second.
    let ci = |mb: [f64; 3]| stats::positive_ci95(&mb.map(|x| x * 1e6));
    assert_eq!((f.a.ci95, f.b.ci95), (ci([50.0, 51.0, 49.0]), ci([100.0, 101.0, 99.0])));
    assert_eq!(f.interval, unpaired_interval(f.a.ci95, f.b.ci95));
    assert_eq!(f.verdict, Verdict::Holds, "{}", f.why);
    // The other way round the claim does not hold.
    let points = vec![
        point(&[("n", "1")], &[("read", &[50.0, 51.0, 49.0])]),
        point(&[("n", "2")], &[("read", &[100.0, 101.0, 99.0])]),
    ];
    let f = spec(DROP).evaluate(&points);
    assert_eq!(f.a.point, "n=2");
    assert_eq!(f.verdict, Verdict::DoesNotHold, "{}", f.why);
}

#[test]
fn one_repetition_is_never_enough() {
    let points =
        vec![point(&[("n", "1")], &[("read", &[100.0])]), point(&[("n", "2")], &[("read", &[10.0])])];
    let f = spec(DROP).evaluate(&points);
    assert_eq!(f.verdict, Verdict::Inconclusive);
    assert!(f.why.contains("at least 2"), "{}", f.why);
    // A side whose point was not run is not measured.
    let f = spec(DROP).evaluate(&points[..1]);
    assert_eq!(f.a.n, 0);
    assert!(f.a.point.contains("not run"), "{}", f.a.point);
    assert_eq!(f.verdict, Verdict::Inconclusive);
}

#[test]
fn phases_and_figures_of_one_point_pair_their_repetitions() {
    let points = vec![point(&[], &[("reverse", &[10.0, 20.0, 40.0]), ("forward", &[100.0, 200.0, 400.0])])];
    let exactly = |f: &Finding, want: f64| {
        let [lo, hi] = f.interval.unwrap();
        for x in [f.ratio.unwrap(), lo, hi] {
            assert!((x - want).abs() < 1e-9, "{:?} {:?}, not {want}", f.ratio, f.interval);
        }
    };
    let f = at_most("phase = 'reverse'", "phase = 'forward'", 0.5).evaluate(&points);
    // Each run's ratio is 0.1 however much the runs differ: paired, the interval is exact.
    assert!(f.paired);
    exactly(&f, 0.1);
    assert_eq!(f.verdict, Verdict::Holds);
    // min_SAR against max_SAR of the same phase: half of it in every run.
    let f = at_most("figure = 'min_sar'", "figure = 'max_sar'", 0.9).evaluate(&points);
    assert_eq!((f.a.phase.as_str(), f.a.figure.as_str()), ("reverse", "min_sar"));
    assert!(f.paired);
    exactly(&f, 0.5);
    assert_eq!(f.verdict, Verdict::Holds);
}

#[test]
fn bad_specs_are_refused_with_the_reason() {
    let mut s = spec(DROP);
    s.max_ratio = None;
    assert!(s.check().unwrap_err().contains("min_ratio"));
    s.min_ratio = Some(2.0);
    s.max_ratio = Some(1.0);
    assert!(s.check().unwrap_err().contains("above"));
    s.figure = Some("speed".into());
    assert!(s.check().unwrap_err().contains("unknown figure `speed`"));
    assert!(toml::from_str::<FindingSpec>("claim = 'x'\npaper = 'y'\na = {}\nb = {}\nratio = 1").is_err());
}
