//! The settings of an experiment's HTML page, folded below its results: what ran (the spec,
//! the sweep, the preset), where (host and targets), and how the page cache was handled before
//! every phase.

use super::experiment::flags_html;
use super::{esc, facts, table, utc};
use crate::report::{self, PresetAbout};
use crate::results::ExperimentResult;
use crate::units::fmt_size;

pub(super) fn spec_section(exp: &ExperimentResult, preset: Option<&PresetAbout>) -> String {
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

pub(super) fn host_section(exp: &ExperimentResult) -> String {
    let h = &exp.host;
    let mut s = String::from("<section id=\"host\">\n<h2>Host</h2>\n");
    let mut rows = vec![
        ("host", esc(&format!("{} ({})", h.hostname, h.host_id))),
        ("OS", esc(&format!("{} {}", h.os, h.kernel))),
        ("CPU", esc(&format!("{} × {} @ {:.0} MHz", h.cpus, h.cpu_model, h.cpu_mhz))),
        ("memory", esc(&fmt_size(h.mem_bytes))),
        ("iolab", esc(&format!("{} (git {})", h.iolab_version, h.git_rev))),
    ];
    if let Some(j) = &h.slurm {
        rows.push(("Slurm", esc(&j.describe())));
    }
    s += &facts(&rows);
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

pub(super) fn cache_section(exp: &ExperimentResult) -> String {
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
