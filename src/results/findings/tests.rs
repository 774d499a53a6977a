//! Tests of the findings' decision rule and side selection on synthetic repetitions.

use super::*;
use crate::results::{CacheCheck, PhaseResult, Repetition, Status};
use crate::spec::{CachePolicy, OpKind};
use crate::stats;

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
    spec(&format!(
        "claim = 'c'\nquote = 'q'\nsource = 's'\npaper = 'p'\na = {{ {a} }}\nb = {{ {b} }}\nmax_ratio = {max_ratio}"
    ))
}

const DROP: &str = r#"
claim = "two readers are slower than one"
quote = "a very significant drop in the rate"
source = "§2.2.1, Fig. 6"
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
    let f = spec(&format!("phase = \"read:n={{n}}\"\n{DROP}")).evaluate(&points, Headline::Mean);
    assert_eq!(f.a.point, "n=4");
    assert_eq!(f.b.as_ref().unwrap().point, "n=1");
    assert_eq!((f.a.n, f.b.as_ref().unwrap().n), (3, 3));
    assert!(!f.paired);
    assert!((f.ratio.unwrap() - 0.5).abs() < 1e-9);
    // Unpaired, the interval comes from each side's own interval, in bytes per second.
    let ci = |mb: [f64; 3]| stats::positive_ci95(&mb.map(|x| x * 1e6));
    let b = f.b.as_ref().unwrap();
    assert_eq!((f.a.ci95, b.ci95), (ci([50.0, 51.0, 49.0]), ci([100.0, 101.0, 99.0])));
    assert_eq!(f.interval, unpaired_interval(f.a.ci95, b.ci95));
    assert_eq!(f.verdict, Verdict::Holds, "{}", f.why);
    // The other way round the claim does not hold.
    let points = vec![
        point(&[("n", "1")], &[("read", &[50.0, 51.0, 49.0])]),
        point(&[("n", "2")], &[("read", &[100.0, 101.0, 99.0])]),
    ];
    let f = spec(DROP).evaluate(&points, Headline::Mean);
    assert_eq!(f.a.point, "n=2");
    assert_eq!(f.verdict, Verdict::DoesNotHold, "{}", f.why);
}

#[test]
fn one_repetition_is_never_enough() {
    let points =
        vec![point(&[("n", "1")], &[("read", &[100.0])]), point(&[("n", "2")], &[("read", &[10.0])])];
    let f = spec(DROP).evaluate(&points, Headline::Mean);
    assert_eq!(f.verdict, Verdict::Inconclusive);
    assert!(f.why.contains("at least 2"), "{}", f.why);
    // A side whose point was not run is not measured.
    let f = spec(DROP).evaluate(&points[..1], Headline::Mean);
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
    let f = at_most("phase = 'reverse'", "phase = 'forward'", 0.5).evaluate(&points, Headline::Mean);
    // Each run's ratio is 0.1 however much the runs differ: paired, the interval is exact.
    assert!(f.paired);
    exactly(&f, 0.1);
    assert_eq!(f.verdict, Verdict::Holds);
    // min_SAR against max_SAR of the same phase: half of it in every run.
    let f = at_most("figure = 'min_sar'", "figure = 'max_sar'", 0.9).evaluate(&points, Headline::Mean);
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
    // A finding without the study's words, or without where they are, is refused.
    assert!(
        toml::from_str::<FindingSpec>("claim = 'x'\nsource = 's'\npaper = 'y'\na = {}\nmax_ratio = 1")
            .is_err()
    );
    let mut s = spec(DROP);
    s.source = " ".into();
    assert!(s.check().unwrap_err().contains("`source`"));
    let mut s = spec(DROP);
    s.statistic = Some("mode".into());
    assert!(s.check().unwrap_err().contains("unknown statistic `mode`"));
}

#[test]
fn each_side_uses_the_study_statistic() {
    // Six runs at 100 and one at 1000: the 2-sigma mean drops the 1000 (2.27 sd out), the mean
    // does not; a / b against 50 in every run of b.
    let runs = [100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 1000.0];
    let points =
        vec![point(&[("n", "1")], &[("read", &[50.0; 7])]), point(&[("n", "2")], &[("read", &runs)])];
    let f = spec(DROP).evaluate(&points, Headline::TwoSigmaMean);
    assert_eq!(f.statistic, "two_sigma_mean");
    assert!((f.a.mean - 100e6).abs() < 1e-3, "{}", f.a.mean);
    assert!((f.ratio.unwrap() - 2.0).abs() < 1e-9);
    assert_eq!(f.a.ci95, Some([100e6, 100e6]), "the kept runs do not spread");
    let f = spec(DROP).evaluate(&points, Headline::Mean);
    assert!((f.a.mean - 1600e6 / 7.0).abs() < 1.0);
    // A finding may name its own statistic.
    let mut s = spec(DROP);
    s.statistic = Some("mean".into());
    assert_eq!(s.evaluate(&points, Headline::TwoSigmaMean).statistic, "mean");
}

#[test]
fn best_takes_each_side_at_its_best_point() {
    // Benson et al.'s tables: each strategy at the sync size that gave it the shortest time.
    // S3 is best at f=2 (time 1/400 s), S1A at f=1 (1/300 s): S3 / S1A = 0.75.
    let points = vec![
        point(&[("s", "S1A"), ("f", "1")], &[("w", &[300.0, 300.0])]),
        point(&[("s", "S1A"), ("f", "2")], &[("w", &[100.0, 100.0])]),
        point(&[("s", "S3"), ("f", "1")], &[("w", &[200.0, 200.0])]),
        point(&[("s", "S3"), ("f", "2")], &[("w", &[400.0, 400.0])]),
    ];
    let f = spec(
        "claim = 'c'\nquote = 'q'\nsource = 's'\npaper = 'p'\nfigure = 'time'\n\
         a = { s = 'S3', best = 'f' }\nb = { s = 'S1A', best = 'f' }\nmax_ratio = 1.0",
    )
    .evaluate(&points, Headline::TrimmedMean10);
    assert!(f.a.point.contains("best=f=2 of 2"), "{}", f.a.point);
    assert!(f.b.as_ref().unwrap().point.contains("best=f=1 of 2"), "{:?}", f.b);
    assert!((f.ratio.unwrap() - 0.75).abs() < 1e-6, "{:?}", f.ratio);
    assert!(!f.paired);
    assert_eq!(f.verdict, Verdict::Holds, "{}", f.why);
    // The keys of `best` count as the finding's sweep keys.
    let s = spec(
        "claim = 'c'\nquote = 'q'\nsource = 's'\npaper = 'p'\na = { s = 'S3', best = ['f', 'w'] }\nmax_ratio = 1",
    );
    assert_eq!(s.keys(), ["f", "s", "w"]);
}

#[test]
fn a_side_alone_is_compared_with_the_range() {
    let points = vec![point(&[], &[("read", &[0.8, 0.9, 0.85])])];
    let f = spec("claim = 'c'\nquote = 'q'\nsource = 's'\npaper = 'p'\na = {}\nmin_ratio = 500000.0")
        .evaluate(&points, Headline::Mean);
    assert_eq!(f.rule, "a >= 500000");
    assert!(f.b.is_none());
    assert!((f.ratio.unwrap() - 0.85e6).abs() < 1e-3);
    assert_eq!(f.verdict, Verdict::Holds, "{}", f.why);
}

#[test]
fn runs_whose_workers_did_not_overlap_decide_nothing() {
    let mut points = vec![
        point(&[("n", "1")], &[("read", &[100.0, 101.0])]),
        point(&[("n", "2")], &[("read", &[10.0, 11.0])]),
    ];
    points[1].phases[0].repetitions[1]
        .flags
        .push("workers did not overlap: all 2 ran together for 0% of the phase".into());
    let f = spec(DROP).evaluate(&points, Headline::Mean);
    assert_eq!(f.a.flags, ["workers did not overlap"]);
    assert_eq!(f.verdict, Verdict::Inconclusive);
    assert!(f.why.contains("flagged `workers did not overlap`"), "{}", f.why);
}

#[test]
fn period_figures_give_the_time_share_and_the_window_in_read_aheads() {
    use crate::latency::period::Period;
    // C4: three runs of 4 KiB reads on a device with an 8 MiB read-ahead; two find the window
    // (2048 reads) first, one the harmonic 4096.
    let mut points = vec![point(&[], &[("read:cold", &[1.0, 1.0, 1.0])])];
    let mut params = crate::experiment::Params::default();
    params.set_one("bs", "4KiB").unwrap();
    let env = crate::experiment::ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    points[0].spec = Some(crate::experiment::resolve(&params, &env).unwrap());
    for (rep, (every, share)) in
        points[0].phases[0].repetitions.iter_mut().zip([(2048, 0.8), (2048, 0.6), (4096, 0.5)])
    {
        let s = crate::worker::WorkerSample::with_series(0, 0, vec![4096]);
        let mut w = crate::results::WorkerResult::from_sample(s);
        let p = Period {
            every_ops: every,
            strength: 0.5,
            at_op: 0,
            excess_ns: 1e5,
            explains: 0.9,
            time_share: share,
        };
        w.periods = Some(Box::new(vec![p]));
        rep.workers = vec![w].into();
    }
    let c4 = |figure: &str| {
        spec(&format!(
            "claim = 'c'\nquote = 'q'\nsource = 's'\npaper = 'p'\na = {{ figure = '{figure}' }}\nmin_ratio = 0.9\nmax_ratio = 1.1"
        ))
    };
    let facts = Facts { read_ahead_kb: Some(8192), device: Some("/dev/vda".into()) };
    let f = c4("period_readahead").evaluate_with(&points, Headline::Mean, &facts);
    // 2048 x 4 KiB / 8 MiB = 1, twice; 4096 x 4 KiB / 8 MiB = 2.
    assert!((f.a.mean - 4.0 / 3.0).abs() < 1e-9, "{:?}", f.a);
    assert_eq!(
        f.a.note,
        "2048 ops in 2 of 3 runs (70% of the time); 4096 ops in 1 of 3 runs (50% of the time); read-ahead of /dev/vda 8192 KiB = 2048 ops of 4 KiB"
    );
    assert_eq!(f.verdict, Verdict::Inconclusive, "{}", f.why);
    // Without a read-ahead in the host facts there is nothing to compare.
    let f = c4("period_readahead").evaluate(&points, Headline::Mean);
    assert_eq!(f.a.n, 0);
    assert!(f.a.note.ends_with("no read-ahead recorded for the target"), "{}", f.a.note);
    // The time share is each run's first period's, not a time in seconds.
    let f = c4("period_time_share").evaluate_with(&points, Headline::Mean, &facts);
    assert!((f.a.mean - (0.8 + 0.6 + 0.5) / 3.0).abs() < 1e-9, "{:?}", f.a);
    assert!(!side_value(&f.a).contains(" s"), "{}", side_value(&f.a));
}
