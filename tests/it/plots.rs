//! `iolab plot`: every kind drawn from a store filled by real runs, checked structurally in the
//! SVG (series groups, points, error bars, axis titles with units), against the numbers in the
//! store, and as PNG (decodes, has the asked size, is not blank).

use iolab::report::plot::{self, Kind, Options};
use iolab::store::Store;

use crate::util::*;

/// One `<g>` group of an SVG made by iolab.
pub struct Group {
    pub class: String,
    pub label: String,
    pub body: String,
}

impl Group {
    pub fn count(&self, tag: &str) -> usize {
        self.body.matches(&format!("<{tag} ")).count()
    }
    /// Point counts of each polyline.
    pub fn polylines(&self) -> Vec<usize> {
        self.body
            .split("<polyline ")
            .skip(1)
            .map(|p| {
                let pts = p.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
                pts.split_whitespace().count()
            })
            .collect()
    }
    /// Markers: circles, rects and polygons.
    pub fn markers(&self) -> usize {
        self.count("circle") + self.count("rect") + self.count("polygon")
    }
}

/// The groups of an SVG, in order.
pub fn groups(svg: &str) -> Vec<Group> {
    let mut out = vec![];
    for part in svg.split("<g class=\"").skip(1) {
        let class = part.split('"').next().unwrap().to_string();
        let label = part.split("data-label=\"").nth(1).map(|l| l.split('"').next().unwrap().to_string());
        let body = part.split("</g>").next().unwrap().to_string();
        out.push(Group { class, label: label.unwrap_or_default(), body });
    }
    out
}

pub fn of_class<'a>(gs: &'a [Group], class: &str) -> Vec<&'a Group> {
    gs.iter().filter(|g| g.class == class).collect()
}

/// The texts drawn in an SVG.
pub fn texts(svg: &str) -> Vec<String> {
    svg.split("<text ")
        .skip(1)
        .map(|t| t.split_once('>').unwrap().1.split("</text>").next().unwrap().trim())
        .map(|t| {
            t.replace("&apos;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .collect()
}

fn plot_svg(s: &Scratch, args: &[&str]) -> String {
    let mut all = vec!["plot", "last"];
    all.extend_from_slice(args);
    let out = s.iolab(&all);
    assert!(out.status.success(), "iolab {all:?}: {}", stderr(&out));
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"), "{svg:.200}");
    svg
}

fn run(s: &Scratch, args: &[&str]) -> Value {
    s.run_json(args)
}

fn load_last(s: &Scratch) -> (Store, iolab::results::ExperimentResult) {
    let store = Store::open(&s.db()).unwrap();
    let exp = store.load(&store.resolve_id("last").unwrap()).unwrap();
    (store, exp)
}

/// Rate vs workers, one line per block size: two series of three points, each point with an
/// error bar; the values are the statistic of the stored runs.
#[test]
fn rate_plot_of_a_sweep() {
    let s = Scratch::new();
    let doc = run(
        &s,
        &[
            "--size",
            "1MiB",
            "--op",
            "write,read:cold",
            "--sweep",
            "workers=1,2,3",
            "--sweep",
            "bs=16KiB,64KiB",
            "--reps",
            "3",
        ],
    );
    let svg = plot_svg(&s, &[]);
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    assert_eq!(series.iter().map(|g| g.label.as_str()).collect::<Vec<_>>(), ["bs=16KiB", "bs=64KiB"]);
    for g in &series {
        assert_eq!(g.polylines(), [3], "one line of three points");
        assert_eq!(g.markers(), 3);
    }
    let bars = of_class(&gs, "errorbars");
    assert_eq!(bars.len(), 2);
    for g in &bars {
        assert_eq!(g.polylines(), [6, 6, 6], "an I-shaped bar per point");
    }
    let t = texts(&svg);
    assert!(t.iter().any(|x| x == "workers"), "{t:?}");
    // A plain run's headline rate, agg, unless --y asks for another.
    assert!(t.iter().any(|x| x == "agg (MB/s = 10^6 B/s)"), "{t:?}");
    assert!(t.iter().any(|x| x.contains("phase read:cold")), "{t:?}");
    for tick in ["1", "2", "3"] {
        assert!(t.iter().any(|x| x == tick), "tick {tick}: {t:?}");
    }
    // The bars are Russell's, and the subtitle says so.
    assert!(
        t.iter().any(|x| x == "error bars: the runs' arithmetic mean ± 2 sd (Russell 1998), cut at zero"),
        "{t:?}"
    );
    // The model's points are the mean of the stored read:cold agg of each point (a plain run's
    // headline), its bar the runs' arithmetic mean +/- 2 sd, cut at zero; with --bars log2sd,
    // the spread on the log scale: x/÷ e^(2 sd of the logarithms).
    let (_, exp) = load_last(&s);
    let fig = plot::rate::figure(&exp, &Options::default()).unwrap();
    let log = Options { bars: plot::select::Bars::LogTwoSd, ..Options::default() };
    let log_fig = plot::rate::figure(&exp, &log).unwrap();
    let points = doc["points"].as_array().unwrap();
    for (si, bs) in ["16KiB", "64KiB"].iter().enumerate() {
        let line = &fig.panels[0].series[si];
        for (k, workers) in ["1", "2", "3"].iter().enumerate() {
            let p = points
                .iter()
                .find(|p| p["params"]["bs"] == *bs && p["params"]["workers"] == *workers)
                .unwrap();
            let reps = p["phases"][1]["repetitions"].as_array().unwrap();
            let xs: Vec<f64> = reps.iter().map(|r| r["agg_bytes_per_s"].as_f64().unwrap() / 1e6).collect();
            let mean = xs.iter().sum::<f64>() / 3.0;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
            let pt = line.points[k];
            assert_eq!(pt.x, k as f64 + 1.0);
            assert!((pt.y - mean).abs() < 1e-9 * mean, "{} vs {mean}", pt.y);
            let (lo, hi) = pt.bar.unwrap();
            let want = ((mean - 2.0 * sd).max(0.0), mean + 2.0 * sd);
            assert!(
                (lo - want.0).abs() < 1e-6 * hi && (hi - want.1).abs() < 1e-6 * hi,
                "{lo}..{hi} vs {want:?}"
            );
            let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
            let lm = logs.iter().sum::<f64>() / 3.0;
            let lsd = (logs.iter().map(|l| (l - lm).powi(2)).sum::<f64>() / 2.0).sqrt();
            let f = (2.0 * lsd).exp();
            let (lo, hi) = log_fig.panels[0].series[si].points[k].bar.unwrap();
            assert!(lo > 0.0 && (hi - mean * f).abs() < 1e-6 * hi && (lo - mean / f).abs() < 1e-6 * hi);
        }
    }
}

/// Block sizes spanning 64x get a log axis with binary tick labels; --y picks the figures,
/// --bars none drops the error bars, and --phase picks the write phase.
#[test]
fn log_axis_figures_and_phase() {
    let s = Scratch::new();
    run(
        &s,
        &[
            "--size",
            "1MiB",
            "--op",
            "write,read:cold",
            "--sweep",
            "bs=4KiB,16KiB,64KiB,256KiB",
            "--reps",
            "2",
        ],
    );
    let svg = plot_svg(&s, &["--y", "max_sar,min_sar,median", "--bars", "none", "--phase", "write"]);
    let t = texts(&svg);
    for tick in ["4 KiB", "16 KiB", "64 KiB", "256 KiB"] {
        assert!(t.iter().any(|x| x == tick), "{tick}: {t:?}");
    }
    assert!(t.iter().any(|x| x == "block size (bs), KiB = 1024 B"), "{t:?}");
    assert!(t.iter().any(|x| x == "rate (MB/s = 10^6 B/s)"), "{t:?}");
    assert!(t.iter().any(|x| x.starts_with("Median of each point's runs")), "{t:?}");
    let gs = groups(&svg);
    let labels: Vec<&str> = of_class(&gs, "series").iter().map(|g| g.label.as_str()).collect();
    assert_eq!(labels, ["max_SAR", "min_SAR"]);
    assert!(of_class(&gs, "errorbars").is_empty());
    let (_, exp) = load_last(&s);
    let o = Options { phase: Some("write".into()), ..Options::default() };
    let fig = plot::rate::figure(&exp, &o).unwrap();
    assert_eq!(fig.panels[0].x.scale, plot::axis::Scale::Log);
    // Pixel x of the four points rises by equal steps on a log axis (4x apart each).
    let line = &of_class(&gs, "series")[0].body;
    let pts = line.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
    let xs: Vec<i64> =
        pts.split_whitespace().map(|p| p.split(',').next().unwrap().parse().unwrap()).collect();
    let steps: Vec<i64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(steps.iter().all(|d| (d - steps[0]).abs() <= 1), "{steps:?}");
}

/// A PNG decodes and has the size asked for, and is not blank.
#[test]
fn png_output() {
    let s = Scratch::new();
    run(&s, &["--size", "1MiB", "--bs", "64KiB", "--op", "write,read:cold", "--reps", "2"]);
    let path = s.path().join("bars.png");
    let out = s.iolab(&["plot", "last", "--size", "640x420", "-o", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let img = image::open(&path).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (640, 420));
    let dark = img.pixels().filter(|p| p.0.iter().all(|&c| c < 128)).count();
    assert!(dark > 2000, "only {dark} dark pixels");
    let colored = img.pixels().filter(|p| p.0[2] > 150 && p.0[0] < 60).count();
    assert!(colored > 500, "the bars are drawn in blue: {colored} pixels");
}

/// Without a sweep the default is one bar per phase, each with its error bar from 3 runs;
/// with 2 runs the bars stand without error bars and the caption says why.
#[test]
fn bars_without_a_sweep() {
    let s = Scratch::new();
    for reps in ["3", "2"] {
        run(&s, &["--size", "1MiB", "--bs", "64KiB", "--op", "write,read:cold,read:warm", "--reps", reps]);
        let svg = plot_svg(&s, &[]);
        let gs = groups(&svg);
        let series = of_class(&gs, "series");
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].count("rect"), 3);
        let bars: Vec<usize> = of_class(&gs, "errorbars").iter().flat_map(|g| g.polylines()).collect();
        let t = texts(&svg);
        for name in ["write", "read:cold", "read:warm", "phase"] {
            assert!(t.iter().any(|x| x == name), "{name}: {t:?}");
        }
        let why = t.iter().any(|x| x.contains("no error bars: fewer than 3 runs per point"));
        if reps == "3" {
            assert_eq!(bars, [6, 6, 6]);
            assert!(!why && t.iter().any(|x| x.contains("arithmetic mean ± 2 sd")), "{t:?}");
        } else {
            assert!(bars.is_empty(), "{bars:?}");
            assert!(why, "{t:?}");
        }
    }
}

/// 24 series (workers = 1..24, one line each) are drawn as three panels of 8, each titled by
/// the series it holds and with a legend of its own under it, and no two series share both
/// colour and marker.
#[test]
fn many_series_become_small_multiples() {
    let s = Scratch::new();
    run(
        &s,
        &[
            "--engine",
            "null",
            "--op",
            "write",
            "--bs",
            "4KiB",
            "--sweep",
            "size=64KiB,128KiB",
            "--sweep",
            "workers=1..24",
            "--reps",
            "1",
        ],
    );
    let svg = plot_svg(&s, &[]);
    let t = texts(&svg);
    for title in ["workers=1 .. workers=8", "workers=9 .. workers=16", "workers=17 .. workers=24"] {
        assert!(t.iter().any(|x| x == title), "panel {title}: {t:?}");
    }
    let (_, exp) = load_last(&s);
    let fig = plot::rate::figure(&exp, &Options::default()).unwrap();
    assert_eq!(fig.panels.len(), 3);
    assert!(fig.panels.iter().all(|p| p.series.len() == 8));
    // Each panel names its own eight lines right under it: a label's legend entry lies in
    // its panel's column, below the panel's title.
    let per: Vec<Vec<usize>> = (0..3).map(|p| (8 * p..8 * p + 8).collect()).collect();
    assert_eq!(fig.panel_legends(), Some(per));
    let width: f64 = svg.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    let at = |label: &str| -> (f64, f64) {
        let el = svg
            .split("<text ")
            .find(|t| t.split_once('>').unwrap().1.split("</text>").next().unwrap().trim() == label)
            .unwrap_or_else(|| panic!("no text {label}"));
        let attr = |a: &str| {
            format!(" {el}")
                .split(&format!(" {a}=\""))
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        (attr("x"), attr("y"))
    };
    for (col, (title, label)) in [
        ("workers=1 .. workers=8", "workers=8"),
        ("workers=9 .. workers=16", "workers=9"),
        ("workers=17 .. workers=24", "workers=24"),
    ]
    .iter()
    .enumerate()
    {
        let (x, y) = at(label);
        let column = (col as f64 * width / 3.0)..((col + 1) as f64 * width / 3.0);
        assert!(column.contains(&x), "{label} at x = {x}, not in panel {col}'s column {column:?}");
        assert!(y > at(title).1, "{label} at y = {y}, above its panel's title");
    }
    let styles: Vec<_> = fig.legend.iter().map(|st| (st.color, st.marker)).collect();
    assert_eq!(styles.len(), 24);
    for (i, a) in styles.iter().enumerate() {
        assert!(!styles[..i].contains(a), "series {i} looks like an earlier one: {a:?}");
    }
}

/// Three workers: three bars with their runs as markers, and max_SAR beside min_SAR.
#[test]
fn workers_plot() {
    let s = Scratch::new();
    let doc = run(&s, &["--size", "1MiB", "--bs", "64KiB", "--workers", "3", "--op", "write", "--reps", "2"]);
    let svg = plot_svg(&s, &["--kind", "workers"]);
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    let by = |l: &str| series.iter().find(|g| g.label.starts_with(l)).unwrap_or_else(|| panic!("{l}"));
    assert_eq!(by("r_i").count("rect"), 3);
    assert_eq!(by("each run").count("circle"), 3 * 2 + 2 * 2);
    assert_eq!(by("max_SAR").count("rect"), 1);
    assert_eq!(by("min_SAR").count("rect"), 1);
    let t = texts(&svg);
    for w in ["w0", "w1", "w2"] {
        assert!(t.iter().any(|x| x == w), "{w}: {t:?}");
    }
    // The straggler note names the worker with the longest mean t_i.
    let reps = doc["points"][0]["phases"][0]["repetitions"].as_array().unwrap();
    let mean_t = |w: usize| reps.iter().map(|r| r["workers"][w]["time_ns"].as_f64().unwrap()).sum::<f64>();
    let slowest = (0..3).max_by(|a, b| mean_t(*a).total_cmp(&mean_t(*b))).unwrap();
    assert!(t.iter().any(|x| x.starts_with(&format!("Slowest worker: w{slowest} "))), "{t:?}");
}

/// The latency CDF has a line per phase ending at 1, and the histogram's bars hold every op.
#[test]
fn latency_cdf_and_histogram() {
    let s = Scratch::new();
    run(&s, &["--size", "1MiB", "--bs", "16KiB", "--op", "write,read:cold", "--reps", "2"]);
    let svg = plot_svg(&s, &["--kind", "cdf"]);
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    assert_eq!(series.iter().map(|g| g.label.as_str()).collect::<Vec<_>>(), ["write", "read:cold"]);
    assert!(series.iter().all(|g| g.polylines().len() == 1));
    assert!(texts(&svg).iter().any(|x| x == "latency per op (µs)"));
    let (store, exp) = load_last(&s);
    let o = Options { kind: Some(Kind::Cdf), ..Options::default() };
    let fig = plot::build(&store, &exp, &o).unwrap();
    for line in &fig.panels[0].series {
        assert_eq!(line.points.last().unwrap().y, 1.0);
        assert!(line.points.windows(2).all(|w| w[0].x < w[1].x && w[0].y <= w[1].y));
    }
    let h = Options { kind: Some(Kind::Histogram), ..Options::default() };
    let fig = plot::build(&store, &exp, &h).unwrap();
    let bars = &fig.panels[0].series[0].points;
    let total: f64 = bars.iter().map(|p| p.y).sum();
    assert!((total - 100.0).abs() < 1e-9, "{total}");
    let svg = plot_svg(&s, &["--kind", "histogram"]);
    assert_eq!(of_class(&groups(&svg), "series")[0].count("rect"), bars.len());
    assert!(texts(&svg).iter().any(|x| x == "share of ops (%)"));
}

/// A traced run: one panel per phase with every op drawn, and each stored period's peak ops
/// marked (the detector runs on real timings, so whether any period is found varies).
#[test]
fn trace_plot() {
    let s = Scratch::new();
    run(&s, &["--size", "1MiB", "--bs", "4KiB", "--op", "write,read:cold", "--reps", "1", "--trace"]);
    let svg = plot_svg(&s, &["--kind", "trace"]);
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    assert_eq!(series[0].label, "latency per op");
    assert_eq!(series[0].polylines(), [256, 256], "every op of both phases");
    let t = texts(&svg);
    assert!(t.iter().any(|x| x == "op index"));
    assert!(t.iter().any(|x| x.starts_with("latency (µs")));
    let (_, exp) = load_last(&s);
    let mut expected_marks = vec![];
    for ph in &exp.points[0].phases {
        for p in ph.repetitions[0].workers.load()[0].periods.as_deref().cloned().unwrap_or_default() {
            expected_marks.push((0..256u64).filter(|k| k % p.every_ops == p.at_op).count());
        }
    }
    let marks: Vec<usize> = series[1..].iter().map(|g| g.markers()).collect();
    assert_eq!(marks, expected_marks);
    // A zoom keeps the ops asked for.
    let svg = plot_svg(&s, &["--kind", "trace", "--ops", "16..80", "--phase", "read:cold"]);
    assert_eq!(of_class(&groups(&svg), "series")[0].polylines(), [64]);
}

/// R4 at quick scale: the preset's plot is max_SAR vs readers n, one line per write
/// interleave k, for the read phase (whose name carries the swept worker count).
#[test]
fn preset_defaults_for_r4() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let out = s.iolab(&["reproduce", "R4", "--scale", "quick", "--dir", &dir, "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = plot_svg(&s, &[]);
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    assert_eq!(series.iter().map(|g| g.label.as_str()).collect::<Vec<_>>(), ["k=1", "k=4"]);
    assert!(series.iter().all(|g| g.markers() == 2));
    let t = texts(&svg);
    assert!(t.iter().any(|x| x == "n"));
    assert!(t.iter().any(|x| x.starts_with("2-sigma mean (Russell 1998)")), "{t:?}");
    assert!(t.iter().any(|x| x.contains("phase read:cold")), "{t:?}");
}

/// Bad options: exit 2, a message naming the option, and no file.
#[test]
fn bad_options_write_nothing() {
    let s = Scratch::new();
    run(&s, &["--size", "256KiB", "--bs", "64KiB", "--op", "write", "--reps", "1"]);
    let out_file = s.path().join("p.svg");
    let o = out_file.to_str().unwrap();
    for (args, field) in [
        (vec!["--kind", "pie", "-o", o], "kind = `pie`"),
        (vec!["--x", "nosuch", "--kind", "rate", "-o", o], "x = `nosuch`"),
        (vec!["--y", "fastest", "-o", o], "y = `fastest`"),
        (vec!["--bars", "3sd", "-o", o], "bars = `3sd`"),
        (vec!["--phase", "read", "-o", o], "phase = `read`"),
        (vec!["--size", "10x10", "-o", o], "size = `10x10`"),
        (vec!["-o", "plot.jpg"], "output = `plot.jpg`"),
        (vec!["--kind", "rate", "-o", o], "the experiment sweeps nothing"),
    ] {
        let mut all = vec!["plot", "last"];
        all.extend(args);
        let out = s.iolab(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(field), "{all:?}: {}", stderr(&out));
        assert!(!out_file.exists() && !s.path().join("plot.jpg").exists());
    }
}

/// The B presets plot the run time in seconds, as `results strategies` tabulates it: each
/// point is its runs' time (the 10% trimmed mean, which drops none of two runs: the mean); a
/// rate and the time cannot share an axis.
#[test]
fn a_strategy_preset_plots_its_run_time() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["reproduce", "B", "--scale", "quick", "--dir", dir, "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (store, exp) = load_last(&s);
    let preset = iolab::experiment::preset::about(&exp).map(|p| p.plot);
    let fig = plot::build(&store, &exp, &Options { preset, ..Default::default() }).unwrap();
    assert_eq!(fig.panels.len(), 1);
    let panel = &fig.panels[0];
    assert_eq!(panel.y.title, "time (s, lower is better)");
    let strategies = ["S1A", "S3"];
    assert_eq!(panel.series.len(), strategies.len());
    for (series, strategy) in panel.series.iter().zip(strategies) {
        assert_eq!(series.points.len(), 2, "comptime 0s and 100ms");
        for (point, comptime) in series.points.iter().zip(["0s", "100ms"]) {
            let p = exp
                .points
                .iter()
                .find(|p| p.params["strategy"] == strategy && p.params["comptime"] == comptime)
                .unwrap();
            let times: Vec<f64> = p.phases[0].repetitions.iter().map(|r| r.time_ns as f64 / 1e9).collect();
            assert_eq!(times.len(), 2);
            let mean = (times[0] + times[1]) / 2.0;
            assert!((point.y - mean).abs() < 1e-9, "{strategy} {comptime}: {} vs {mean}", point.y);
        }
    }
    // With 100 ms of compute in each S3 run, its time is at least that.
    assert!(panel.series[1].points[1].y >= 0.1, "{:?}", panel.series[1].points);
    let svg = plot_svg(&s, &[]);
    assert!(texts(&svg).iter().any(|t| t == "time (s, lower is better)"));
    let out = s.iolab(&["plot", "last", "--y", "time,max_sar"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot share an axis"), "{}", stderr(&out));
}

/// A preset run at quick scale is titled with the sizes it ran, not the default scale's.
#[test]
fn plot_titles_name_the_sizes_run() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["reproduce", "L2", "--scale", "quick", "--dir", dir, "--quiet", "--set", "reps=1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (store, exp) = load_last(&s);
    let mut bs: Vec<u64> = exp.points.iter().map(|p| p.spec.as_ref().unwrap().bs_bytes).collect();
    bs.sort_unstable();
    bs.dedup();
    let bs: Vec<String> = bs.into_iter().map(iolab::units::fmt_size).collect();
    let size = iolab::units::fmt_size(exp.points[0].spec.as_ref().unwrap().size_bytes);
    let want = format!("size {size}, bs {}", bs.join(", "));
    assert_eq!(want, "size 8 MiB, bs 64 KiB, 1 MiB, 4 MiB", "L2's quick scale");
    let fig = plot::build(&store, &exp, &Options::default()).unwrap();
    assert!(fig.title.starts_with("L2 · Tirumala et al. 2003: "), "{}", fig.title);
    assert!(fig.title.ends_with(&format!(" · {want}")), "{}", fig.title);
    assert!(!fig.title.contains("128 MiB"), "the default scale's file size: {}", fig.title);
    let svg = plot_svg(&s, &[]);
    assert!(svg.contains(&format!("{want}</title>")), "{svg:.300}");
}

/// Two experiments of different axes in one figure: one zips `workers` with `size`, the other
/// sweeps `size` alone (Russell's R7 over server ranks beside a file system, on the file's
/// size). The default lines are the experiments, not the zipped axis.
#[test]
fn two_experiments_with_a_zipped_axis_make_a_line_each() {
    let s = Scratch::new();
    let base = ["--op", "write,read:cold", "--bs", "64KiB", "--reps", "1"];
    let mut ids = vec![];
    for (name, sweep) in
        [("zipped", &["--sweep", "workers=1,2", "--zip", "workers,size"][..]), ("alone", &[])]
    {
        let mut a = base.to_vec();
        a.extend(["--name", name, "--sweep", "size=1MiB,2MiB"]);
        a.extend(sweep);
        ids.push(run(&s, &a)["experiment_id"].as_str().unwrap().to_string());
    }
    let out = s.iolab(&["plot", &ids[0], &ids[1], "--x", "size"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = String::from_utf8(out.stdout).unwrap();
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    let lines: Vec<(&str, Vec<usize>)> = series.iter().map(|g| (g.label.as_str(), g.polylines())).collect();
    assert_eq!(lines, [("experiment=zipped", vec![2]), ("experiment=alone", vec![2])]);
}

/// Two experiments in one figure (`iolab plot ID ID`): the same sweep measured two ways, a
/// line per experiment, each point that experiment's own runs.
#[test]
fn two_experiments_in_one_figure() {
    let s = Scratch::new();
    let args = ["--size", "1MiB", "--op", "write,read:cold", "--sweep", "bs=16KiB,64KiB", "--reps", "2"];
    let mut ids = vec![];
    for (name, engine) in [("plain", "psync"), ("vectored", "vsync")] {
        let mut a = args.to_vec();
        a.extend(["--name", name, "--engine", engine]);
        ids.push(run(&s, &a)["experiment_id"].as_str().unwrap().to_string());
    }
    let out = s.iolab(&["plot", &ids[0], &ids[1], "--x", "bs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = String::from_utf8(out.stdout).unwrap();
    let gs = groups(&svg);
    let series = of_class(&gs, "series");
    let labels: Vec<&str> = series.iter().map(|g| g.label.as_str()).collect();
    assert_eq!(labels, ["experiment=plain", "experiment=vectored"]);
    for g in &series {
        assert_eq!(g.polylines(), [2], "one line of two points");
    }
    let t = texts(&svg);
    assert!(t.iter().any(|x| x.contains("plain vs vectored")), "{t:?}");
    // Each line's points are its own experiment's read:cold means of agg (a plain run's headline).
    let store = Store::open(&s.db()).unwrap();
    let exps: Vec<_> = ids.iter().map(|id| store.load(id).unwrap()).collect();
    let merged = plot::merge::merge(&exps);
    let fig = plot::rate::figure(&merged, &Options { x: Some("bs".into()), ..Options::default() }).unwrap();
    for (si, e) in exps.iter().enumerate() {
        for (k, p) in e.points.iter().enumerate() {
            let xs: Vec<f64> =
                p.phases[1].repetitions.iter().map(|r| r.agg_bytes_per_s.unwrap() / 1e6).collect();
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let y = fig.panels[0].series[si].points[k].y;
            assert!((y - mean).abs() < 1e-9 * mean, "{y} vs {mean}");
        }
    }
}
