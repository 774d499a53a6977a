//! The studies' main figure: rate against a swept parameter, one line per series, each point
//! at the chosen statistic of its repetitions with an error bar (Russell 1998: the 2-sigma mean
//! with +/- 2 sd bars; French et al. 1991 Fig. 4: individual, max_SAR and min_SAR together).

use std::collections::{BTreeMap, BTreeSet};

use super::Options;
use super::axis::{self, Axis, Unit, Values};
use super::figure::{Draw, Figure, MAX_SERIES, Panel, Point, Series, Style};
use super::merge::EXPERIMENT;
use super::select::{self, Cell, Grouping, PHASE};
use crate::error::{Error, Result};
use crate::results::ExperimentResult;

/// Dimensions with more than one value over the cells.
fn varying(cells: &[Cell<'_>], dims: &[String]) -> Vec<String> {
    dims.iter().filter(|d| select::distinct(cells, d).len() > 1).cloned().collect()
}

fn list(s: &str) -> Vec<String> {
    if s == "none" {
        vec![]
    } else {
        s.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect()
    }
}

/// Chooses x, series and panels, and keeps the cells of the phase shown.
pub fn grouping<'a>(exp: &'a ExperimentResult, o: &Options) -> Result<(Grouping, Vec<Cell<'a>>)> {
    let mut cells = select::cells(exp);
    let dims = select::dims(exp);
    let multi = varying(&cells, &dims);
    let plot = o.preset.as_ref();
    let axes_multi: Vec<&String> = multi.iter().filter(|d| *d != PHASE).collect();
    let x = match &o.x {
        Some(x) => {
            select::check_dim(exp, "x", x)?;
            x.clone()
        }
        None => plot
            .map(|p| p.x.clone())
            .filter(|x| multi.contains(x))
            .or_else(|| axes_multi.first().map(|s| s.to_string()))
            .ok_or_else(|| {
                Error::spec("kind", "rate", "the experiment sweeps nothing; plot it with --kind bars")
            })?,
    };
    let chosen = |given: &Option<String>, field: &str, preset: Vec<String>, fallback: Vec<String>| match given
    {
        Some(s) => {
            let v = list(s);
            for d in &v {
                select::check_dim(exp, field, d)?;
            }
            Ok(v)
        }
        None if plot.is_some() => Ok(preset.into_iter().filter(|d| multi.contains(d) && *d != x).collect()),
        None => Ok(fallback),
    };
    // Several experiments in one figure: a line per experiment unless told otherwise (an axis
    // that one of them zips with x, such as R7's servers with size, then stays off the lines).
    let next_axis: Vec<String> = if x != EXPERIMENT && axes_multi.iter().any(|d| *d == EXPERIMENT) {
        vec![EXPERIMENT.to_string()]
    } else {
        axes_multi.iter().find(|d| ***d != x).map(|d| vec![d.to_string()]).unwrap_or_default()
    };
    let series = chosen(&o.series, "series", plot.map(|p| p.series.clone()).unwrap_or_default(), next_axis)?;
    let panels = chosen(&o.panel, "panel", plot.map(|p| p.panels.clone()).unwrap_or_default(), vec![])?;
    let panels: Vec<String> = panels.into_iter().filter(|d| !series.contains(d)).collect();
    let mut g = Grouping { x, series, panels };
    let phase_shown = g.x == PHASE || g.series.iter().chain(&g.panels).any(|d| d == PHASE);
    if let Some(p) = &o.phase {
        cells = select::only_phase(cells, p)?;
    } else if !phase_shown && let Some(p) = select::default_phase(exp) {
        cells = select::only_phase(cells, &p)?;
    }
    g.series.retain(|d| select::distinct(&cells, d).len() > 1);
    g.panels.retain(|d| select::distinct(&cells, d).len() > 1);
    select::fold_leftovers(&cells, &dims, &mut g);
    // Small multiples: while a panel would hold more lines than a reader follows, the first
    // series dimension becomes a panel dimension (one panel per value); a single dimension
    // with too many values is split in `figure`.
    let lines =
        |g: &Grouping| cells.iter().map(|c| select::label(c, &g.series)).collect::<BTreeSet<_>>().len();
    let figures = o.stat_and_figures(exp).map_or(1, |(_, f)| f.len().max(1));
    while g.series.len() > 1 && lines(&g) * figures > MAX_SERIES && o.panel.is_none() {
        let d = g.series.remove(0);
        g.panels.push(d);
    }
    Ok((g, cells))
}

/// A readable axis title for a dimension.
pub fn dim_title(dim: &str, values: &Values) -> String {
    let name = match dim {
        "bs" => "block size (bs)".to_string(),
        "size" => "bytes per worker (size)".to_string(),
        "workers" => "workers".to_string(),
        "md_files" => "items per worker (md_files)".to_string(),
        "md_depth" => "tree depth (md_depth)".to_string(),
        "md_fanout" => "subdirectories per directory (md_fanout)".to_string(),
        "md_size" => "bytes per file (md_size)".to_string(),
        "stripe_count" => "targets striped over (stripe_count)".to_string(),
        "stripe_unit" => "stripe unit".to_string(),
        other => other.to_string(),
    };
    match values {
        Values::Sizes(_) => format!("{name}, KiB = 1024 B"),
        _ => name,
    }
}

/// The rate figure.
pub fn figure(exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let (g, cells) = grouping(exp, o)?;
    let (stat, figs) = o.stat_and_figures(exp)?;
    let md = select::md_cells(&cells)?;
    let xs = select::distinct(&cells, &g.x);
    let values = axis::classify(&xs, exp.host.mem_bytes);
    let x_of: BTreeMap<String, f64> = match &values {
        Values::Numbers(v) | Values::Sizes(v) => xs.iter().cloned().zip(v.iter().copied()).collect(),
        Values::Categories => xs.iter().enumerate().map(|(i, s)| (s.clone(), i as f64)).collect(),
    };
    let x_axis = match &values {
        Values::Numbers(v) => Axis::numeric(dim_title(&g.x, &values), v, Unit::Number, None, false),
        Values::Sizes(v) => Axis::numeric(dim_title(&g.x, &values), v, Unit::Bytes, None, false),
        Values::Categories => Axis::categories(dim_title(&g.x, &values), &xs),
    };
    let panel_keys: Vec<String> =
        cells.iter().map(|c| select::label(c, &g.panels)).fold(vec![], |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    let series_keys: Vec<String> =
        cells.iter().map(|c| select::label(c, &g.series)).fold(vec![], |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    let mut legend = vec![];
    for sk in &series_keys {
        for f in &figs {
            let label = match (sk.is_empty(), figs.len() > 1) {
                (true, _) => f.name().to_string(),
                (false, true) => format!("{sk} · {}", f.name()),
                (false, false) => sk.clone(),
            };
            legend.push(Style::nth(legend.len(), label));
        }
    }
    // A panel shows at most MAX_SERIES lines: more series than that go to panels of their
    // own, in order, each titled with the series it holds.
    let per_panel = (MAX_SERIES / figs.len()).max(1);
    let chunks: Vec<&[String]> = series_keys.chunks(per_panel).collect();
    let mut panels = vec![];
    let mut all_y = vec![0.0];
    for (pk, chunk) in panel_keys.iter().flat_map(|pk| chunks.iter().map(move |c| (pk, *c))) {
        let mut series = vec![];
        let title = match (chunks.len() > 1, chunk.first(), chunk.last()) {
            (true, Some(a), Some(b)) => {
                let range = if a == b { a.clone() } else { format!("{a} .. {b}") };
                if pk.is_empty() { range } else { format!("{pk} · {range}") }
            }
            _ => pk.clone(),
        };
        for sk in chunk.iter() {
            let si = series_keys.iter().position(|k| k == sk).unwrap_or(0);
            for (fi, f) in figs.iter().enumerate() {
                // x -> samples (MB/s), merged over cells that share x.
                let mut by_x: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                for c in cells
                    .iter()
                    .filter(|c| select::label(c, &g.panels) == *pk && select::label(c, &g.series) == *sk)
                {
                    by_x.entry(c.value(&g.x))
                        .or_default()
                        .extend(c.complete().map(|r| f.shown(r, md)).filter(|v| !v.is_nan()));
                }
                let mut points: Vec<Point> = by_x
                    .iter()
                    .filter_map(|(xv, samples)| {
                        let (y, bar) = select::point_stat(samples, stat, o.bars)?;
                        Some(Point { x: x_of[xv], y, bar, span: None })
                    })
                    .collect();
                points.sort_by(|a, b| a.x.total_cmp(&b.x));
                all_y.extend(points.iter().flat_map(Point::ys));
                if !points.is_empty() {
                    series.push(Series { style: si * figs.len() + fi, draw: Draw::LineMarkers, points });
                }
            }
        }
        panels.push((title, series));
    }
    let y_title = select::rate_title(&figs, md);
    let y_axis = Axis::numeric(y_title, &all_y, Unit::Number, Some(false), true);
    let reps: Vec<usize> = cells.iter().map(|c| c.complete().count()).collect();
    let (rmin, rmax) = (reps.iter().min().copied().unwrap_or(0), reps.iter().max().copied().unwrap_or(0));
    let n = if rmin == rmax { format!("n = {rmin}") } else { format!("n = {rmin}..{rmax}") };
    let mut subtitle = vec![
        format!(
            "{} of each point's runs ({n}) of {}",
            capitalise(select::stat_name(stat)),
            figs.iter().map(|f| f.about_in(md)).collect::<Vec<_>>().join(", "),
        ),
        o.bars.caption(rmin, rmax),
    ];
    let phases = select::distinct(&cells, PHASE);
    if phases.len() == 1 && g.x != PHASE {
        subtitle.push(format!("phase {} · {}", phases[0], super::provenance(exp)));
    } else {
        subtitle.push(super::provenance(exp));
    }
    Ok(Figure {
        title: super::title(exp),
        subtitle,
        panels: panels
            .into_iter()
            .map(|(title, series)| Panel { title, x: x_axis.clone(), y: y_axis.clone(), series })
            .collect(),
        legend,
        notes: vec![],
        size: o.size,
    })
}

pub fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
