//! The HTML page of one experiment: what ran (spec, sweep, preset), where (host and targets),
//! the cache state of every phase, the summary table, every plot that applies, the per-run
//! figures, and the raw CSV and JSON as gzip-compressed downloads.

use std::io::Write;

use super::{esc, facts, figure, gz_link, table, utc};
use crate::error::{Error, Result};
use crate::report::plot::{self, Figure, Kind, Options, PresetPlot};
use crate::report::{self, Exporter, Format, PresetAbout, write_err};
use crate::results::{ExperimentResult, Status};
use crate::store::Store;
use crate::units::{fmt_rate, fmt_size};

/// Traces larger than this (as gzip-compressed CSV) are not embedded; the page names the
/// command instead.
const MAX_EMBEDDED_TRACE_BYTES: usize = 2 << 20;
/// Per-run rows listed at most.
const MAX_RUN_ROWS: usize = 300;

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
    let n_points = exp.points.len().min(6);
    for pi in 0..n_points {
        wanted.push((
            Options { point: Some(pi), ..base(Kind::Cdf) },
            format!("Latency per op, cumulative, every phase of point {pi}."),
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
            .flat_map(|w| w.periods.iter().flatten())
            .map(|p| p.every_ops)
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

fn flags_html(flags: &[String]) -> String {
    flags.iter().map(|f| format!("<span class=\"flag\">{}</span>", esc(f))).collect::<Vec<_>>().join("<br>")
}

fn spec_section(exp: &ExperimentResult, preset: Option<&PresetAbout>) -> String {
    let mut s = String::from("<section id=\"spec\">\n<h2>Experiment</h2>\n");
    let mut rows = vec![
        ("experiment", esc(&exp.experiment_id)),
        ("name", esc(&exp.spec.name)),
        ("created", esc(&utc(exp.created_unix_s))),
        ("iolab", esc(&exp.iolab_version)),
    ];
    if let Some(p) = &exp.design.preset {
        rows.push(("preset", esc(&format!("{} ({}), scale {}: {}", p.id, p.study, p.scale, p.title))));
        if let Some(about) = preset.filter(|a| !a.notes.is_empty()) {
            rows.push(("preset notes", esc(&about.notes)));
        }
    }
    rows.push(("headline statistic", esc(exp.design.headline.about())));
    if !exp.design.axes.is_empty() {
        let axes: Vec<String> = exp.design.axes.iter().map(|a| format!("{} = {}", a.key, a.text)).collect();
        let zip: Vec<String> =
            exp.design.zip.iter().map(|g| format!(" (zipped: {})", g.join(" + "))).collect();
        rows.push((
            "sweep",
            esc(&format!("{}{} · {} points", axes.join(" × "), zip.concat(), exp.points.len())),
        ));
    }
    s += &facts(&rows);
    s += "<h3>Spec (the first point's; each point overlays its axis values)</h3>\n";
    let mut spec_rows = vec![];
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&exp.spec) {
        for (k, v) in m {
            let text = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            spec_rows.push(vec![format!("<code>{}</code>", esc(&k)), esc(&text)]);
        }
    }
    s += &table("spec", &["key", "value"], &spec_rows, &[]);
    s + "</section>\n"
}

fn host_section(exp: &ExperimentResult) -> String {
    let h = &exp.host;
    let mut s = String::from("<section id=\"host\">\n<h2>Host</h2>\n");
    s += &facts(&[
        ("host", esc(&format!("{} ({})", h.hostname, h.host_id))),
        ("OS", esc(&format!("{} {}", h.os, h.kernel))),
        ("CPU", esc(&format!("{} × {} @ {:.0} MHz", h.cpus, h.cpu_model, h.cpu_mhz))),
        ("memory", esc(&fmt_size(h.mem_bytes))),
        ("iolab", esc(&format!("{} (git {})", h.iolab_version, h.git_rev))),
    ]);
    let opt = |o: &Option<String>| esc(o.as_deref().unwrap_or("-"));
    let rows: Vec<Vec<String>> = h
        .targets
        .iter()
        .map(|t| {
            vec![
                esc(&t.dir.display().to_string()),
                esc(&t.fs_described()),
                esc(&format!("{} ({})", t.mount_point, t.mount_options)),
                opt(&t.device),
                opt(&t.device_model),
                t.rotational.map(|r| if r { "yes" } else { "no" }.to_string()).unwrap_or("-".into()),
                opt(&t.scheduler),
                t.read_ahead_kb.map(|r| format!("{r} KiB")).unwrap_or("-".into()),
                format!("{} B", t.direct_io_align_bytes),
            ]
        })
        .collect();
    s += &table(
        "targets",
        &[
            "target",
            "file system",
            "mount",
            "device",
            "model",
            "rotational",
            "scheduler",
            "read-ahead",
            "O_DIRECT align",
        ],
        &rows,
        &[],
    );
    s + "</section>\n"
}

fn cache_section(exp: &ExperimentResult) -> String {
    let mut s = String::from(
        "<section id=\"cache\">\n<h2>Cache state</h2>\n<p class=\"note\">Each phase states how the page cache was handled before it: <b>cold</b> (data committed, evicted with fadvise, optionally drop_caches, then checked with mincore; flagged when more than 5% stayed resident), <b>warm</b> (read first, checked), or <b>asis</b> (not controlled, always flagged); on a file system whose client keeps file data of its own that the eviction does not reach, <b>cold (kernel pages only; the file system client's cache not controlled)</b>. Flags are marked ⚑.</p>\n",
    );
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            rows.push(vec![
                esc(&report::point_params(p)),
                esc(&ph.name),
                esc(ph.cache.label()),
                esc(&ph.cache.method),
                format!("{:.1}%", ph.cache.resident_fraction * 100.0),
                if ph.flags.is_empty() {
                    "<span class=\"ok\">none</span>".into()
                } else {
                    flags_html(&ph.flags)
                },
            ]);
        }
    }
    s += &table("cache", &["point", "phase", "policy", "how", "max resident", "flags"], &rows, &[4]);
    s + "</section>\n"
}

fn summary_section(exp: &ExperimentResult) -> String {
    let cols = report::summary::Columns::of(exp);
    let mut s = String::from("<section id=\"summary\">\n<h2>Summary</h2>\n");
    let stats = cols.headers();
    let mut heads: Vec<&str> = vec!["point", "phase", "cache", "runs"];
    heads.extend(stats.iter().map(String::as_str));
    heads.push("flags");
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
    let details = report::details::render_details(exp);
    if !details.trim().is_empty() {
        s += "<h3>Costs, periods and file layout</h3>\n<pre>";
        s += &esc(details.trim());
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
                    fmt_rate(r.max_sar_bytes_per_s),
                    fmt_rate(r.min_sar_bytes_per_s),
                    r.workers.len().to_string(),
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
            "max_SAR",
            "min_SAR",
            "workers",
            "resident",
            "load 1 min",
            "device read",
            "device written",
            "flags",
        ],
        &rows,
        &[4, 5, 6, 7],
    );
    if n > MAX_RUN_ROWS {
        s += &format!(
            "<p class=\"note\">The first {MAX_RUN_ROWS} of {n} runs; every run is in the CSV below.</p>\n"
        );
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
        "<header>\n<h1>{}</h1>\n<p>{} · created {} · iolab {}</p>\n<p>Everything on this page comes from the results store; nothing was rerun to make it.</p>\n<nav><ul><li><a href=\"#spec\">Experiment</a></li><li><a href=\"#host\">Host</a></li><li><a href=\"#cache\">Cache state</a></li><li><a href=\"#summary\">Summary</a></li>{}{}<li><a href=\"#plots\">Plots</a></li><li><a href=\"#runs\">Runs</a></li><li><a href=\"#data\">Raw data</a></li></ul></nav>\n</header>\n<main>\n",
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
    let tuning = store.load_tuning(&exp.experiment_id).unwrap_or_else(|e| {
        store.warn_unreadable(&format!("the tuning of experiment {}", exp.experiment_id), e);
        None
    });
    if let Some(t) = &tuning {
        body = body.replacen(
            "<li><a href=\"#spec\">",
            "<li><a href=\"#tuning\">Tuning</a></li><li><a href=\"#spec\">",
            1,
        );
        body += &super::tune::section(t);
    }
    body += &spec_section(exp, preset);
    body += &host_section(exp);
    body += &cache_section(exp);
    body += &summary_section(exp);
    body += &crate::report::findings::html(exp);
    body += &super::strategies::section(exp);
    body += "<section id=\"plots\">\n<h2>Plots</h2>\n<p class=\"note\">Error bars are ± 2 standard deviations of the repetitions around the plotted statistic (Russell 1998), unless a caption says otherwise. Series differ by marker shape as well as colour.</p>\n";
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
    body += &format!(
        "</main>\n<footer>Made by <code>iolab report {}</code> from the store alone. MB/s = 10<sup>6</sup> B/s; KiB, MiB, GiB = 1024-based.</footer>\n",
        esc(&exp.experiment_id)
    );
    Ok(super::page(&format!("iolab report: {} ({})", exp.spec.name, exp.experiment_id), &body))
}
