//! One bar per sweep point and phase, at the chosen statistic with its error bar: the plot of
//! an experiment without a sweep (write vs cold read vs warm read), and an overview of any.

use super::Options;
use super::axis::{Axis, Unit};
use super::figure::{Draw, Figure, Panel, Point, Series, Style};
use super::select::{self, PHASE};
use crate::error::Result;
use crate::results::ExperimentResult;

pub fn figure(exp: &ExperimentResult, o: &Options) -> Result<Figure> {
    let mut cells = select::cells(exp);
    if let Some(p) = &o.phase {
        cells = select::only_phase(cells, p)?;
    }
    let vary: Vec<String> =
        select::dims(exp).into_iter().filter(|d| select::distinct(&cells, d).len() > 1).collect();
    let names: Vec<String> = cells
        .iter()
        .map(|c| {
            let l = select::label(c, &vary);
            if l.is_empty() { c.ph.name.clone() } else { l }
        })
        .collect();
    let (stat, figs) = o.stat_and_figures(exp)?;
    let md = select::md_cells(&cells)?;
    let width = 0.8 / figs.len() as f64;
    let mut legend = vec![];
    let mut series = vec![];
    let mut all_y = vec![0.0];
    for (fi, f) in figs.iter().enumerate() {
        legend.push(Style::nth(fi + 1, f.name()));
        let mut points = vec![];
        for (i, c) in cells.iter().enumerate() {
            let xs: Vec<f64> = c.complete().map(|r| f.shown(r, md)).filter(|v| !v.is_nan()).collect();
            let Some((y, bar)) = select::point_stat(&xs, stat, o.bars) else { continue };
            let x = i as f64 - 0.4 + width * (fi as f64 + 0.5);
            let p = Point { x, y, bar, span: Some((x - width * 0.45, x + width * 0.45)) };
            all_y.extend(p.ys());
            points.push(p);
        }
        series.push(Series { style: fi, draw: Draw::Bars, points });
    }
    let x_title =
        if vary.is_empty() || vary == [PHASE] { "phase".to_string() } else { "point · phase".to_string() };
    let y_title = select::rate_title(&figs, md);
    let reps: Vec<usize> = cells.iter().map(|c| c.complete().count()).collect();
    let (rmin, rmax) = (reps.iter().min().copied().unwrap_or(0), reps.iter().max().copied().unwrap_or(0));
    let n = match (reps.iter().min(), reps.iter().max()) {
        (Some(a), Some(b)) if a != b => format!("n = {a}..{b}"),
        (Some(a), _) => format!("n = {a}"),
        _ => "no runs".into(),
    };
    let x = Axis::categories(x_title, &names);
    // Room for labels written downwards, and for many bars.
    let size = o.size.or_else(|| {
        let bars = cells.len() * figs.len();
        let tall = x.long_labels();
        (bars > 24 || tall).then(|| ((160 + 30 * bars).clamp(860, 8000) as u32, if tall { 680 } else { 560 }))
    });
    Ok(Figure {
        title: super::title(exp),
        subtitle: vec![
            format!(
                "{} of each bar's runs ({n}) of {}",
                super::rate::capitalise(select::stat_name(stat)),
                figs.iter().map(|f| f.about_in(md)).collect::<Vec<_>>().join(", "),
            ),
            o.bars.caption(rmin, rmax),
            super::provenance(exp),
        ],
        panels: vec![Panel {
            title: String::new(),
            x,
            y: Axis::numeric(y_title, &all_y, Unit::Number, Some(false), true),
            series,
        }],
        legend,
        notes: vec![],
        size,
    })
}
