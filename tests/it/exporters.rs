//! The report's exporters as a library, on real runs' stored results: each registry names its
//! formats and hands back the exporter the command line writes with (the same bytes); the HTML
//! pages show what their callers pass in (a preset's notes, where the rows come from, when);
//! the plan text shows the free space it is given; strategy tables split by swept parameters,
//! not by variables.

use iolab::experiment::{Params, ResolveEnv, preset, resolve};
use iolab::report::trace::{TraceFilter, Traces};
use iolab::report::{self, Exporter, Format, PresetAbout, compare, html, plot, strategies, trace};
use iolab::results::ExperimentResult;
use iolab::spec::params::is_param;
use iolab::store::Store;

use crate::util::*;

fn load_last(s: &Scratch) -> (Store, ExperimentResult) {
    let store = Store::open(&s.db()).unwrap();
    let exp = store.load(&store.resolve_id("last").unwrap()).unwrap();
    (store, exp)
}

/// Stdout of a command that must succeed.
fn stdout_of(s: &Scratch, args: &[&str]) -> Vec<u8> {
    let out = s.iolab(args);
    assert!(out.status.success(), "iolab {args:?}: {}", stderr(&out));
    out.stdout
}

fn bytes<In: ?Sized>(e: &dyn Exporter<In>, input: &In) -> Vec<u8> {
    let mut out = vec![];
    e.export(input, &mut out).unwrap();
    out
}

fn names<In: ?Sized>(registry: &[&(dyn Exporter<In> + Sync)]) -> Vec<&'static str> {
    registry.iter().map(|e| e.name()).collect()
}

/// `Format` picks from the experiment's registry the exporter `results show` writes with; an
/// unknown name is an error that lists the formats.
#[test]
fn each_format_of_an_experiment_is_what_results_show_writes() {
    let s = Scratch::new();
    s.run_json(&[
        "--size",
        "256KiB",
        "--bs",
        "16KiB",
        "--op",
        "write,read:cold",
        "--sweep",
        "workers=1,3,2",
        "--reps",
        "2",
    ]);
    let (_, exp) = load_last(&s);
    // The formats of iolab's own and the two shaped like IOR's and mdtest's output
    // (tests/it/frontends.rs checks those).
    assert_eq!(names(report::FORMATS), ["table", "explain", "json", "csv", "ior", "mdtest"]);
    let id = exp.experiment_id.as_str();
    for (format, flags) in [
        (Format::Table, &[][..]),
        (Format::Explain, &["--explain"][..]),
        (Format::Json, &["--json"][..]),
        (Format::Csv, &["--csv"][..]),
    ] {
        let e = report::exporter(format);
        assert_eq!(e.name(), format.name());
        let mut args = vec!["results", "show", id];
        args.extend(flags);
        assert_eq!(bytes(e, &exp), stdout_of(&s, &args), "{format:?}");
    }
    // One CSV row per worker, repetition and phase: (1 + 3 + 2) workers x 2 reps x 2 phases.
    let csv = report::render(report::exporter(Format::Csv), &exp).unwrap();
    assert_eq!(csv.lines().count(), 1 + 6 * 2 * 2);
    let err = report::find(report::FORMATS, "xml").err().unwrap().to_string();
    assert!(err.contains("expected one of: table, explain, json, csv"), "{err}");
    // The straggler plot's default point: the one with the most workers.
    assert_eq!(exp.points[plot::workers::busiest_point(&exp)].params["workers"], "3");
}

/// A strategy sweep over a variable (`f`, the sync size) and a parameter (`iters`): one
/// Figure 1 table per value of the parameter, each the best over the variable; every format is
/// what `results strategies` writes.
#[test]
fn strategy_tables_split_by_swept_parameters_not_by_variables() {
    assert!(is_param("iters") && is_param("sync-call") && is_param("dir") && !is_param("f"));
    let s = Scratch::new();
    s.run_json(&[
        "--bs",
        "64KiB",
        "--strategy",
        "S2",
        "--comptime",
        "0s",
        "--sync",
        "every:{f}",
        "--sweep",
        "f=1MiB,2MiB",
        "--sweep",
        "iters=16,32",
        "--reps",
        "2",
    ]);
    let (_, exp) = load_last(&s);
    assert_eq!(names(strategies::FORMATS), ["text", "markdown", "csv"]);
    for name in ["text", "markdown", "csv"] {
        let e = report::find(strategies::FORMATS, name).unwrap();
        let cli = stdout_of(&s, &["results", "strategies", "last", "--format", name]);
        assert_eq!(bytes(e, &exp), cli, "{name}");
        assert_eq!(strategies::render(&exp, name).into_bytes(), cli, "{name}");
    }
    let text = strategies::render(&exp, "text");
    let titles: Vec<&str> = text.lines().filter(|l| l.starts_with("threads, ")).collect();
    assert_eq!(titles, ["threads, contiguous data, iters=16", "threads, contiguous data, iters=32"]);
    let markdown = strategies::render(&exp, "markdown");
    assert!(
        markdown
            .contains("\n### threads, contiguous data, iters=32\n\n| comptime | write() S2 |\n|---|---|\n")
    );
    let csv = strategies::render(&exp, "csv");
    let cells: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(cells.len(), 2, "{csv}");
    assert!(cells.iter().all(|c| c.contains(",psync,write(),S2,")), "{csv}");
}

/// The per-host table's formats are what `results compare` writes; its HTML page says where
/// the rows come from and when it was made as its caller tells it, and is otherwise the
/// command's page.
#[test]
fn the_host_table_and_its_page_take_their_source_and_time() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    stdout_of(&s, &["reproduce", "L1", "--scale", "quick", "--dir", &dir, "--quiet"]);
    let (store, exp) = load_last(&s);
    let rows = compare::rows(std::slice::from_ref(&exp));
    assert_eq!(names(compare::FORMATS), ["text", "csv", "markdown"]);
    for name in ["text", "csv", "markdown"] {
        let cli = stdout_of(&s, &["results", "compare", "--format", name]);
        assert_eq!(compare::render(&rows, name).unwrap().into_bytes(), cli, "{name}");
    }
    assert!(
        compare::render(&rows, "markdown").unwrap().starts_with("| host | OS | CPUs\\*MHz | file system |")
    );
    // A host name from an imported store, with an escape sequence, a newline and markup,
    // stays one cell of text in every format: escaped for its syntax, never raw.
    let mut evil = rows.clone();
    evil[0].hostname = "h|x\x1b[31m\n*b* <i>&".into();
    let md = compare::render(&evil, "markdown").unwrap();
    assert!(md.contains("\n| h\\|x\\x1b\\[31m\\n\\*b\\* \\<i\\>\\& | "), "{md}");
    assert_eq!(md.lines().count(), compare::render(&rows, "markdown").unwrap().lines().count(), "{md}");
    let text = compare::render(&evil, "text").unwrap();
    assert!(text.contains("h|x\\x1b[31m\\n*b* <i>&") && !text.contains('\x1b'), "{text}");
    let csv = compare::render(&evil, "csv").unwrap();
    let rec = ::csv::Reader::from_reader(csv.as_bytes()).records().next().unwrap().unwrap();
    assert_eq!(&rec[0], evil[0].hostname, "{csv}");
    let html = report::render(
        &html::compare::Html { source: "s".into(), made_unix_s: 0.0, tuned: vec![] },
        &evil[..],
    )
    .unwrap();
    assert!(html.contains("h|x\\x1b[31m") && html.contains("*b* &lt;i&gt;&amp;") && !html.contains('\x1b'));
    assert!(compare::render(&rows, "html").is_err(), "the page is made by its caller, not looked up");
    let page = |source: &str, made_unix_s: f64| {
        report::render(&html::compare::Html { source: source.into(), made_unix_s, tuned: vec![] }, &rows[..])
            .unwrap()
    };
    assert!(page("a store <here>", 86_400.0).contains(
        "<p>1 host(s) and file system(s) from a store &lt;here&gt;; made 1970-01-02 00:00:00 UTC</p>"
    ));
    let cli = String::from_utf8(stdout_of(&s, &["results", "compare", "--format", "html"])).unwrap();
    let made = |h: &str| h.split("; made ").nth(1).unwrap().split("</p>").next().unwrap().to_string();
    let ours = page(&store.path().display().to_string(), 0.0);
    assert_eq!(cli.replace(&made(&cli), "T"), ours.replace(&made(&ours), "T"));
}

/// The experiment page shows the preset notes its caller passes in (escaped), none without
/// them, and with the preset's own (`experiment::preset::about`) and its findings it is the
/// page `iolab report` writes.
#[test]
fn the_experiment_page_shows_the_preset_notes_it_is_given() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    stdout_of(&s, &["reproduce", "L1", "--scale", "quick", "--dir", &dir, "--quiet"]);
    let (store, exp) = load_last(&s);
    let l1 = preset::find("L1").unwrap();
    let about = preset::about(&exp).unwrap();
    assert_eq!(about, PresetAbout { plot: l1.meta.plot.clone(), notes: l1.meta.notes.clone() });
    let page = |preset: Option<&PresetAbout>| {
        report::render(&html::experiment::Html { store: &store, preset }, &exp).unwrap()
    };
    let given = PresetAbout { notes: "notes <from> the caller".into(), ..about.clone() };
    assert!(
        page(Some(&given))
            .contains("<th scope=\"row\">preset notes</th><td>notes &lt;from&gt; the caller</td>")
    );
    assert!(!page(None).contains("preset notes"));
    // `iolab report` also checks the preset's findings against the results.
    let cli = stdout_of(&s, &["report", &exp.experiment_id]);
    let mut checked = exp.clone();
    checked.findings = preset::findings(&exp);
    assert_eq!(checked.findings.len(), l1.meta.finding.len());
    let want =
        report::render(&html::experiment::Html { store: &store, preset: Some(&about) }, &checked).unwrap();
    assert_eq!(want.into_bytes(), cli);
}

/// The plan text shows the free space it is handed, once per target directory, and nothing
/// where it is unknown; `iolab plan` measures it.
#[test]
fn the_plan_shows_the_free_space_it_is_given() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let mut params = Params::default();
    params.set("dirs", vec![dir.clone(), dir.clone()]).unwrap();
    params.set_one("size", "1MiB").unwrap();
    params.set_one("ops", "write").unwrap();
    let spec = resolve(&params, &ResolveEnv::current().unwrap()).unwrap();
    let plan = iolab::plan::plan(&spec);
    assert_eq!(names(report::plan::FORMATS), ["text", "json"]);
    let text = report::plan::plan_text(&spec, &plan, &[Some((3 << 30, 42)), Some((1 << 30, 7))]);
    assert!(
        text.contains(&format!("\ndisk space needed: 1 MiB (free in {dir}: 3 GiB, 42 inodes)\n")),
        "{text}"
    );
    let unknown = report::plan::plan_text(&spec, &plan, &[None, None]);
    assert!(unknown.contains("\ndisk space needed: 1 MiB\n"), "{unknown}");
    let json: Value = serde_json::from_str(&report::plan::plan_json(&spec, &plan)).unwrap();
    assert_eq!(json["disk_bytes_total"], 1 << 20);
    assert_eq!(json["phases"][0]["op"], "write");
    let cli = String::from_utf8(stdout_of(&s, &["plan", "--dir", &dir, "--size", "1MiB", "--op", "write"]))
        .unwrap();
    assert!(cli.contains(&format!("\ndisk space needed: 1 MiB (free in {dir}: ")), "{cli}");
}

/// Both trace formats write the ops the filter keeps, as `results trace` does; a phase that
/// does not exist is an error naming the phases.
#[test]
fn trace_formats_write_the_filtered_ops() {
    let s = Scratch::new();
    s.run_json(&["--size", "256KiB", "--bs", "16KiB", "--op", "write,read:cold", "--reps", "2", "--trace"]);
    let (store, exp) = load_last(&s);
    let id = exp.experiment_id.as_str();
    assert_eq!(names(trace::FORMATS), ["csv", "json"]);
    let filter = TraceFilter { phase: Some("read:cold".into()), rep: Some(1) };
    let traces = Traces { store: &store, id, filter: &filter };
    let csv = bytes(report::find(trace::FORMATS, "csv").unwrap(), &traces);
    assert_eq!(csv, stdout_of(&s, &["results", "trace", id, "--phase", "read:cold", "--rep", "1"]));
    let json = bytes(report::find(trace::FORMATS, "json").unwrap(), &traces);
    assert_eq!(
        json,
        stdout_of(&s, &["results", "trace", id, "--phase", "read:cold", "--rep", "1", "--json"])
    );
    // 256 KiB in 16 KiB ops: 16 ops, a CSV header above them.
    let lines: Vec<Value> =
        String::from_utf8(json).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 16);
    assert!(lines.iter().all(|l| l["phase"] == "read:cold" && l["rep"] == 1));
    assert_eq!(String::from_utf8(csv).unwrap().lines().count(), 1 + 16);
    let none = TraceFilter { phase: Some("nope".into()), rep: None };
    let err = report::render(
        report::find(trace::FORMATS, "csv").unwrap(),
        &Traces { store: &store, id, filter: &none },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("no such phase (phases: write, read:cold)"), "{err}");
}
