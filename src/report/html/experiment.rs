//! The HTML page of one experiment, results first: the tuning's verdict and the findings (when
//! there are), the summary table with its IOPS, time bounds and costs, every plot that applies
//! (every point's latency distribution, or the ones left out named), the per-run figures, the
//! raw CSV and JSON as gzip-compressed downloads; and folded at the end, what ran (spec, sweep,
//! preset), where (host and targets) and the cache state of every phase.

use std::io::Write;

use super::{esc, figure, gz_link, table, utc};
use crate::error::{Error, Result};
use crate::report::plot::{self, Figure, Kind, Options, PresetPlot};
use crate::report::{self, Exporter, Format, PresetAbout, write_err};
use crate::results::{ExperimentResult, Status};
use crate::store::Store;
use crate::units::fmt_size;

/// Traces larger than this (as gzip-compressed CSV) are not embedded; the page names the
/// command instead.
const MAX_EMBEDDED_TRACE_BYTES: usize = 2 << 20;
/// Per-run rows listed at most.
const MAX_RUN_ROWS: usize = 300;
/// Points whose latency distribution (a CDF per point) the page draws at most; the others
/// are named with the command that draws each.
const MAX_CDF_POINTS: usize = 12;

/// The plots of an experiment: (figure, caption, the `iolab plot` command that draws it).
pub fn plots(
    store: &Store,
    exp: &ExperimentResult,
    preset: Option<&PresetPlot>,
) -> (Vec<(Figure, String, String)>, Vec<String>) {
    let id = &exp.experiment_id;
    let mut wanted: Vec<(Options, String, String)> = vec![];
    let defaults = Options { preset: preset.cloned(), ..Options::default() };
    let base = |kind: Kind| Options { kind: Some(kind), ..defaults.clone() };
    if store.load_tuning(id).ok().flatten().is_some() {
        let cap = "The tuning's race: every candidate's mean time and 95% interval after each round.";
        wanted.push((base(Kind::Race), cap.into(), format!("iolab plot {id} --kind race")));
    }
    let kind = plot::default_kind(exp, preset);
    let phases: Vec<String> = {
        let mut v: Vec<String> = vec![];
        for ph in exp.points.iter().flat_map(|p| &p.phases) {
            let key = plot::select::phase_key(&ph.name);
            if !v.contains(&key) {
                v.push(key);
            }
        }
        v
    };
    if kind == Kind::Rate {
        let shown = plot::rate::grouping(exp, &defaults).ok();
        let by_phase = shown.as_ref().is_some_and(|(g, _)| {
            g.x != plot::select::PHASE && !g.series.iter().chain(&g.panels).any(|d| d == plot::select::PHASE)
        });
        let default_phase = plot::select::default_phase(exp);
        let mut order: Vec<Option<String>> = vec![None];
        if by_phase {
            order.extend(
                phases.iter().filter(|p| Some(*p) != default_phase.as_ref()).map(|p| Some(p.clone())),
            );
        }
        for ph in order {
            let o = Options { phase: ph.clone(), ..base(Kind::Rate) };
            let (cap, cmd) = match &ph {
                None => (
                    "Rate against the swept parameter (the preset's plot).".into(),
                    format!("iolab plot {id}"),
                ),
                Some(p) => (format!("Rate of phase {p}."), format!("iolab plot {id} --phase {p}")),
            };
            wanted.push((o, cap, cmd));
        }
    }
    let cells = exp.points.iter().map(|p| p.phases.len()).sum::<usize>();
    if cells <= 60 {
        wanted.push((
            base(Kind::Bars),
            "Every point and phase: the headline statistic with its error bar.".into(),
            format!("iolab plot {id} --kind bars"),
        ));
    }
    let many_workers =
        exp.points.iter().flat_map(|p| &p.phases).flat_map(|ph| &ph.repetitions).any(|r| r.workers.len() > 1);
    if many_workers {
        let wo = base(Kind::Workers);
        let pi = plot::workers::figure(exp, &wo).ok().map(|_| ());
        if pi.is_some() {
            let most = plot::workers::busiest_point(exp);
            for p in exp.points[most].phases.iter().take(4) {
                wanted.push((
                    Options { phase: Some(p.name.clone()), point: Some(most), ..base(Kind::Workers) },
                    format!("Stragglers in phase {} of point {most}: each worker's rate, and max_SAR against min_SAR.", p.name),
                    format!("iolab plot {id} --kind workers --point {most} --phase {}", p.name),
                ));
            }
        }
    }
    // Every point's latency distribution, up to MAX_CDF_POINTS; the others are named below.
    for pi in 0..exp.points.len().min(MAX_CDF_POINTS) {
        let what = if exp.points.len() > 1 {
            format!("point {pi} ({})", report::point_params(&exp.points[pi]))
        } else {
            format!("point {pi}")
        };
        wanted.push((
            Options { point: Some(pi), ..base(Kind::Cdf) },
            format!("Latency per op, cumulative, every phase of {what}."),
            format!("iolab plot {id} --kind cdf --point {pi}"),
        ));
    }
    wanted.push((
        base(Kind::Histogram),
        "Latency histogram of the last phase of point 0.".into(),
        format!("iolab plot {id} --kind histogram"),
    ));
    wanted.push((
        base(Kind::Timeline),
        "Rate over time of every phase of point 0 (its first complete run), the steady window marked.".into(),
        format!("iolab plot {id} --kind timeline"),
    ));
    let mut out = vec![];
    let mut skipped = vec![];
    if exp.points.len() > MAX_CDF_POINTS {
        skipped.push(format!(
            "the latency distributions of points {MAX_CDF_POINTS}..{} (one figure each: iolab plot {id} --kind cdf --point N)",
            exp.points.len() - 1
        ));
    }
    for (o, cap, cmd) in wanted {
        match plot::build(store, exp, &o) {
            Ok(f) => out.push((f, cap, cmd)),
            Err(e) => skipped.push(format!("{cmd}: {e}")),
        }
    }
    // Traces: the whole of each traced phase of point 0, and a zoom on the first cycles when a
    // period was found.
    let t = base(Kind::Trace);
    if let Ok(f) = plot::build(store, exp, &t) {
        out.push((
            f,
            "The time of every op (French et al. 1991, Fig. 5), periods marked.".into(),
            format!("iolab plot {id} --kind trace"),
        ));
        let shortest = exp.points[0]
            .phases
            .iter()
            .flat_map(|ph| &ph.repetitions)
            .flat_map(|r| &r.workers)
            .filter_map(|w| w.periods.as_ref()?.iter().map(|p| p.every_ops).min())
            .min();
        if let Some(p) = shortest {
            let to = (8 * p).max(64);
            let z = Options { ops: Some((0, to)), ..t.clone() };
            if let Ok(f) = plot::build(store, exp, &z) {
                out.push((
                    f,
                    format!("The first {to} ops, where the period of {p} ops shows op by op."),
                    format!("iolab plot {id} --kind trace --ops 0..{to}"),
                ));
            }
        }
    }
    (out, skipped)
}

pub(super) fn flags_html(flags: &[String]) -> String {
    flags.iter().map(|f| format!("<span class=\"flag\">{}</span>", esc(f))).collect::<Vec<_>>().join("<br>")
}

fn summary_section(exp: &ExperimentResult) -> String {
    let cols = report::summary::Columns::of(exp);
    let mut s = String::from("<section id=\"summary\">\n<h2>Summary</h2>\n");
    let stats = cols.headers();
    let mut heads: Vec<&str> = vec!["point", "phase", "cache", "runs"];
    heads.extend(stats.iter().map(String::as_str));
    heads.extend(["unit", "flags"]);
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let done: Vec<_> = ph.repetitions.iter().filter(|r| r.status == Status::Complete).collect();
            let mut row = vec![
                esc(&report::point_params(p)),
                esc(&ph.name),
                esc(&format!("{} {:.1}%", ph.cache.label(), ph.cache.resident_fraction * 100.0)),
                format!("{}/{}", done.len(), ph.repetitions.len()),
            ];
            row.extend(cols.cells(ph).iter().map(|c| esc(c)));
            // The unit of this row's rates (its latencies say their own).
            row.push(ph.unit().short().to_string());
            row.push(flags_html(&ph.flags));
            rows.push(row);
        }
    }
    s += &table("summary", &heads, &rows, &(3..4 + stats.len()).collect::<Vec<_>>());
    s += "<ul class=\"legend note\">\n";
    for line in cols.legend(exp) {
        s += &format!("<li>{}</li>\n", esc(line.trim()));
    }
    s += "</ul>\n";
    let escaped = |rows: Vec<Vec<String>>| -> Vec<Vec<String>> {
        rows.into_iter().map(|r| r.iter().map(|c| esc(c)).collect()).collect()
    };
    if let Some((heads, rows, right)) = report::iops::parts(exp) {
        s +=
            &format!("<h3>Operations per second</h3>\n<p class=\"note\">{}.</p>\n", esc(report::iops::ABOUT));
        let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
        s += &table("iops", &heads, &escaped(rows), &right);
    }
    if let Some((heads, rows, right)) = report::bounds::parts(exp) {
        s += &format!(
            "<h3>Time-bounded phases</h3>\n<p class=\"note\">{}.</p>\n",
            esc(report::bounds::LEGEND)
        );
        let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
        s += &table("bounds", &heads, &escaped(rows), &right);
    }
    let costs = report::details::cost_rows(exp);
    if !costs.is_empty() {
        s += &format!("<h3>Costs</h3>\n<p class=\"note\">{}.</p>\n", esc(report::details::COST_LEGEND));
        s += &table("costs", &report::details::COST_HEADERS, &escaped(costs), &[1, 2, 3, 4]);
    }
    let others = report::details::render_others(exp);
    if !others.trim().is_empty() {
        s += "<h3>Per host and server, periods and file layout</h3>\n<pre>";
        s += &esc(others.trim());
        s += "</pre>\n";
    }
    s + "</section>\n"
}

fn runs_section(exp: &ExperimentResult) -> String {
    let mut s = String::from("<section id=\"runs\">\n<h2>Runs</h2>\n");
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            for (warm, r) in
                ph.repetitions.iter().map(|r| (false, r)).chain(ph.warmups.iter().map(|r| (true, r)))
            {
                let e = &r.env;
                let status = match r.status {
                    Status::Complete => "complete".to_string(),
                    Status::Failed => format!("failed: {}", r.error.as_deref().unwrap_or("")),
                    Status::Interrupted => "interrupted".to_string(),
                };
                rows.push(vec![
                    esc(&report::point_params(p)),
                    esc(&ph.name),
                    format!("{}{}", r.rep, if warm { " (warm-up)" } else { "" }),
                    esc(&status),
                    crate::results::Rate::Agg
                        .of_in(ph.op.is_metadata(), r)
                        .map(report::summary::rate_fmt(ph))
                        .unwrap_or_else(|| "-".into()),
                    report::summary::rate_fmt(ph)(r.sar(ph.op.is_metadata()).0),
                    report::summary::rate_fmt(ph)(r.sar(ph.op.is_metadata()).1),
                    ph.unit().short().to_string(),
                    format!("{:.1}%", r.resident_fraction * 100.0),
                    format!("{:.2} → {:.2}", e.load_avg_1m_start, e.load_avg_1m_end),
                    esc(&fmt_size(e.devices.iter().map(|d| d.read_bytes).sum())),
                    esc(&fmt_size(e.devices.iter().map(|d| d.write_bytes).sum())),
                    flags_html(&r.flags),
                ]);
            }
        }
    }
    let n = rows.len();
    rows.truncate(MAX_RUN_ROWS);
    s += &table(
        "runs",
        &[
            "point",
            "phase",
            "rep",
            "status",
            "agg",
            "max_SAR",
            "min_SAR",
            "unit",
            "resident",
            "load 1 min",
            "device read",
            "device written",
            "flags",
        ],
        &rows,
        &[4, 5, 6, 8, 9],
    );
    if n > MAX_RUN_ROWS {
        s += &format!(
            "<p class=\"note\">The first {MAX_RUN_ROWS} of {n} runs; every run is in the CSV below.</p>\n"
        );
    }
    let not_run = report::table::not_run(exp);
    if !not_run.is_empty() {
        s += &format!("<p class=\"note\">{}</p>\n", esc(not_run.trim_end()));
    }
    s + "</section>\n"
}

fn data_section(store: &Store, exp: &ExperimentResult) -> Result<String> {
    let id = &exp.experiment_id;
    let mut s = String::from(
        "<section id=\"data\">\n<h2>Raw data</h2>\n<p class=\"note\">Gzip-compressed (<code>gunzip FILE.gz</code>); each is byte for byte what the command beside it prints.</p>\n<ul class=\"downloads\">\n",
    );
    let mut csv = vec![];
    report::exporter(Format::Csv).export(exp, &mut csv)?;
    s += &gz_link(
        &format!("{id}.csv"),
        &csv,
        &format!("every repetition of every phase, one row per worker: iolab results export {id} --csv"),
    )?;
    let mut json = vec![];
    report::exporter(Format::Json).export(exp, &mut json)?;
    s += &gz_link(
        &format!("{id}.json"),
        &json,
        &format!("the whole result, docs/json.md: iolab results export {id} --json"),
    )?;
    let mut traces = vec![];
    match report::trace::export(store, id, &Default::default(), false, &mut traces) {
        Ok(()) => {
            let gz = super::gzip(&traces)?;
            if gz.len() <= MAX_EMBEDDED_TRACE_BYTES {
                s += &gz_link(
                    &format!("{id}-traces.csv"),
                    &traces,
                    &format!("every traced op: iolab results trace {id}"),
                )?;
            } else {
                s += &format!(
                    "<li>Traces ({}, {} compressed) are too large to embed: <code>iolab results trace {id} -o traces.csv</code></li>\n",
                    fmt_size(traces.len() as u64),
                    fmt_size(gz.len() as u64)
                )
            }
        }
        Err(Error::NotFound(_)) => {}
        Err(e) => return Err(e),
    }
    Ok(s + "</ul>\n</section>\n")
}

/// The page as an exporter of one experiment: it reads the experiment's traces from `store`
/// and shows what `preset` says of the preset the experiment reproduces.
pub struct Html<'a> {
    pub store: &'a Store,
    pub preset: Option<&'a PresetAbout>,
}

impl Exporter for Html<'_> {
    fn name(&self) -> &'static str {
        "html"
    }

    fn export(&self, exp: &ExperimentResult, out: &mut dyn Write) -> Result<()> {
        out.write_all(page(self.store, exp, self.preset)?.as_bytes()).map_err(write_err)
    }
}

/// The whole page; `preset` is what the caller knows of the preset the experiment reproduces.
pub fn page(store: &Store, exp: &ExperimentResult, preset: Option<&PresetAbout>) -> Result<String> {
    let title = plot::title(exp);
    let mut body = format!(
        "<header>\n<h1>{}</h1>\n<p>{} · created {} · iolab {}</p>\n<p>Everything on this page comes from the results store; nothing was rerun to make it.</p>\n<nav><ul><li><a href=\"#summary\">Summary</a></li>{}{}<li><a href=\"#plots\">Plots</a></li><li><a href=\"#runs\">Runs</a></li><li><a href=\"#data\">Raw data</a></li><li><a href=\"#settings\">Settings</a></li></ul></nav>\n</header>\n<main>\n",
        esc(&title),
        esc(&plot::provenance(exp)),
        esc(&utc(exp.created_unix_s)),
        esc(&exp.iolab_version),
        if crate::report::strategies::any(exp) {
            "<li><a href=\"#strategies\">Strategies</a></li>"
        } else {
            ""
        },
        if exp.findings.is_empty() { "" } else { "<li><a href=\"#findings\">Findings</a></li>" },
    );
    // Results first: the tuning's verdict, the findings, the summary; then the plots, the
    // runs and the data; the settings folded at the end.
    let tuning = store.load_tuning(&exp.experiment_id).unwrap_or_else(|e| {
        store.warn_unreadable(&format!("the tuning of experiment {}", exp.experiment_id), e);
        None
    });
    if let Some(t) = &tuning {
        body = body.replacen(
            "<li><a href=\"#summary\">",
            "<li><a href=\"#tuning\">Tuning</a></li><li><a href=\"#summary\">",
            1,
        );
        body += &super::tune::section(t);
    }
    body += &crate::report::findings::html(exp);
    body += &summary_section(exp);
    body += &crate::report::io500::html(exp);
    body += &super::strategies::section(exp);
    body += "<section id=\"plots\">\n<h2>Plots</h2>\n<p class=\"note\">Error bars, unless a caption says otherwise: the spread of the repetitions around the plotted statistic (Russell 1998's 2 sd) taken on the log scale, so that it never reaches below zero; none at a point with fewer than 3 runs. Series differ by marker shape as well as colour; more than 8 are split into panels of their own.</p>\n";
    let (figs, skipped) = plots(store, exp, preset.map(|p| &p.plot));
    for (i, (f, cap, cmd)) in figs.iter().enumerate() {
        body += &figure(f, i + 1, cap, cmd)?;
    }
    if !skipped.is_empty() {
        body += "<p class=\"note\">Not drawn:</p><ul class=\"note\">";
        for s in &skipped {
            body += &format!("<li>{}</li>", esc(s));
        }
        body += "</ul>\n";
    }
    body += "</section>\n";
    body += &runs_section(exp);
    body += &data_section(store, exp)?;
    body += "<section id=\"settings\">\n<h2>Settings</h2>\n<details>\n<summary>What ran, where, and how the cache was handled (experiment, spec, host, targets, cache state)</summary>\n";
    body += &super::settings::spec_section(exp, preset);
    body += &super::settings::host_section(exp);
    body += &super::settings::cache_section(exp);
    body += "</details>\n</section>\n";
    body += &format!(
        "</main>\n<footer>Made by <code>iolab report {}</code> from the store alone. MB/s = 10<sup>6</sup> B/s (metadata phases: ops/s); KiB, MiB, GiB = 1024-based.</footer>\n",
        esc(&exp.experiment_id)
    );
    Ok(super::page(&format!("iolab report: {} ({})", exp.spec.name, exp.experiment_id), &body))
}
