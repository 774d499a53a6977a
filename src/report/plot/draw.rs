//! Draws a [`Figure`] with plotters: as SVG, where the frame, each series and each series'
//! error bars are their own `<g>` group (so the file says what is what, and a test can count
//! series, points and error bars), or as PNG, rasterised with the embedded DejaVu Sans font.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, FontTransform, RGBColor};

use super::axis::Axis;
use super::figure::{Draw, Figure, Marker, Panel, Series, Style};
use crate::error::{Error, Result};

/// DejaVu Sans (Bitstream Vera license, `assets/fonts/LICENSE-DejaVu.txt`): measures text for
/// both outputs and draws it in PNGs. SVGs name the `sans-serif` family and leave drawing to
/// the viewer.
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
pub const FAMILY: &str = "sans-serif";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in; a unit test checks that it parses.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// What one drawing pass draws: everything (PNG), or one SVG group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    All,
    Frame,
    Series(usize),
    ErrorBars(usize),
}

impl Layer {
    fn frame(self) -> bool {
        matches!(self, Layer::All | Layer::Frame)
    }
    fn series(self, style: usize) -> bool {
        matches!(self, Layer::All) || self == Layer::Series(style)
    }
    fn error_bars(self, style: usize) -> bool {
        matches!(self, Layer::All) || self == Layer::ErrorBars(style)
    }
}

fn fail(e: impl std::fmt::Debug) -> Error {
    Error::Run(format!("drawing the plot: {e:?}"))
}

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn font(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

/// The figure as one SVG document.
pub fn svg(fig: &Figure) -> Result<String> {
    register_font();
    let fig = &fig.printable();
    let size = fig.pixel_size();
    let mut layers = vec![(String::from("<g class=\"frame\">\n"), Layer::Frame)];
    for i in fig.used_styles() {
        let label = xml_escape(&fig.legend[i].label);
        layers.push((
            format!(
                "<g class=\"series\" data-series=\"{i}\" data-label=\"{label}\">\n<title>{label}</title>\n"
            ),
            Layer::Series(i),
        ));
        let has_bars = fig
            .panels
            .iter()
            .flat_map(|p| &p.series)
            .any(|s| s.style == i && s.points.iter().any(|p| p.bar.is_some()));
        if has_bars {
            layers.push((
                format!("<g class=\"errorbars\" data-series=\"{i}\" data-label=\"{label}\">\n"),
                Layer::ErrorBars(i),
            ));
        }
    }
    let mut out = String::new();
    for (k, (open, layer)) in layers.iter().enumerate() {
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, size).into_drawing_area();
            draw(&root, fig, *layer)?;
            root.present().map_err(fail)?;
        }
        let (head, rest) = s.split_once('\n').unwrap_or((&s, ""));
        if k == 0 {
            out += head.trim_end_matches('>');
            out += " role=\"img\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n";
            out += &format!("<title>{}</title>\n", xml_escape(&fig.title));
        }
        let inner = rest.rsplit_once("</svg>").map(|(a, _)| a).unwrap_or(rest);
        out += open;
        out += &lean(inner);
        out += "</g>\n";
    }
    out += "</svg>\n";
    Ok(out)
}

/// Drops what plotters writes on every element that only restates SVG's defaults (opacity 1,
/// black fill, no stroke, stroke width 1) or the family the `<svg>` element names, and rounds
/// font sizes to a tenth of a pixel: the same drawing in about half the bytes.
fn lean(svg: &str) -> String {
    let mut s = svg.to_string();
    for default in [
        " opacity=\"1\"",
        " fill=\"#000000\"",
        " stroke=\"none\"",
        " stroke-width=\"1\"",
        &format!(" font-family=\"{FAMILY}\""),
    ] {
        s = s.replace(default, "");
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(at) = rest.find("font-size=\"") {
        let (head, tail) = rest.split_at(at + "font-size=\"".len());
        out += head;
        let end = tail.find('"').unwrap_or(tail.len());
        match tail[..end].parse::<f64>() {
            Ok(v) => out += &format!("{}", (v * 10.0).round() / 10.0),
            Err(_) => out += &tail[..end],
        }
        rest = &tail[end..];
    }
    out + rest
}

/// Writes the figure as PNG.
pub fn png(fig: &Figure, path: &Path) -> Result<()> {
    register_font();
    let fig = &fig.printable();
    let root = BitMapBackend::new(path, fig.pixel_size()).into_drawing_area();
    draw(&root, fig, Layer::All)?;
    root.present().map_err(fail)
}

/// Text for XML (SVG, HTML): its markup characters as entities, and control characters but
/// the newline shown as `\x1b`, `\t` ([`crate::text::terminal_safe`]), as XML 1.0 allows
/// none of them (not even as a character reference) and HTML shows them as nothing.
pub fn xml_escape(s: &str) -> String {
    crate::text::terminal_safe(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure, layer: Layer) -> Result<()> {
    let (w, h) = fig.pixel_size();
    if layer.frame() {
        root.fill(&WHITE).map_err(fail)?;
    }
    let header = fig.header_px();
    let legend_h = fig.legend_px(w);
    let notes_h = fig.notes_px();
    let plots_h = h.saturating_sub(header + legend_h + notes_h).max(100);
    let (head, rest) = root.split_vertically(header);
    let (plots, bottom) = rest.split_vertically(plots_h);
    let (legend, notes) = bottom.split_vertically(legend_h);
    if layer.frame() {
        let title = fig.title_lines(w);
        for (i, line) in title.iter().enumerate() {
            head.draw(&Text::new(line.clone(), (16, 8 + 24 * i as i32), font(20))).map_err(fail)?;
        }
        let top = 10 + 24 * title.len() as i32;
        for (i, line) in fig.subtitle_lines(w).iter().enumerate() {
            let st = font(14).color(&RGBColor(60, 60, 60));
            head.draw(&Text::new(line.clone(), (16, top + 18 * i as i32), st)).map_err(fail)?;
        }
        draw_legend(&legend, fig, w)?;
        for (i, line) in fig.notes.iter().enumerate() {
            let st = font(13).color(&RGBColor(60, 60, 60));
            notes.draw(&Text::new(line.clone(), (16, 2 + 18 * i as i32), st)).map_err(fail)?;
        }
    }
    let areas = plots.split_evenly((fig.rows(), fig.columns()));
    let own = fig.panel_legends();
    let (per_row, own_h) = fig.panel_legend_layout(w);
    for (k, (panel, area)) in fig.panels.iter().zip(areas.iter()).enumerate() {
        match &own {
            Some(per) => {
                let (_, ah) = area.dim_in_pixel();
                let (chart, legend) = area.split_vertically(ah.saturating_sub(own_h));
                draw_panel(root, &chart, panel, fig, layer)?;
                if layer.frame() {
                    draw_entries(&legend, fig, &per[k], per_row)?;
                }
            }
            None => draw_panel(root, area, panel, fig, layer)?,
        }
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, fig: &Figure, width: u32) -> Result<()> {
    if fig.panel_legends().is_some() {
        return Ok(());
    }
    let (per_row, _) = fig.legend_layout(width);
    draw_entries(area, fig, &(0..fig.legend.len()).collect::<Vec<_>>(), per_row)
}

/// Draws legend entries `which` in rows of `per_row`.
fn draw_entries<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure,
    which: &[usize],
    per_row: usize,
) -> Result<()> {
    let longest = which.iter().map(|&i| fig.legend[i].label.chars().count()).max().unwrap_or(1) as i32;
    let entry = 44 + 8 * longest;
    for (k, st) in which.iter().map(|&i| &fig.legend[i]).enumerate() {
        let (row, col) = ((k / per_row) as i32, (k % per_row) as i32);
        let (x, y) = (20 + col * entry, 16 + row * 22);
        let color = rgb(st.color);
        area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2))).map_err(fail)?;
        marker(area, (x + 12, y), st)?;
        let text = font(14).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(st.label.clone(), (x + 32, y), text)).map_err(fail)?;
    }
    Ok(())
}

/// Draws one marker centred on pixel `c` of `area`.
fn marker<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: (i32, i32), st: &Style) -> Result<()> {
    let color = rgb(st.color);
    let (x, y) = c;
    let r = 4;
    let filled = color.filled();
    let ring = color.stroke_width(2);
    match st.marker {
        Marker::Circle => area.draw(&Circle::new(c, r, filled)),
        Marker::RingCircle => area.draw(&Circle::new(c, r, ring)),
        Marker::Square => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], filled)),
        Marker::RingSquare => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], ring)),
        Marker::Triangle => {
            area.draw(&Polygon::new(vec![(x, y - r - 1), (x + r + 1, y + r), (x - r - 1, y + r)], filled))
        }
        Marker::TriangleDown => {
            area.draw(&Polygon::new(vec![(x, y + r + 1), (x + r + 1, y - r), (x - r - 1, y - r)], filled))
        }
        Marker::Diamond => area.draw(&Polygon::new(
            vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)],
            filled,
        )),
    }
    .map_err(fail)
}

/// A linear coordinate with grid lines and labels exactly at the axis' ticks (log axes are
/// drawn on log10 of their values).
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        if self.hi == self.lo {
            return (limit.0 + limit.1) / 2;
        }
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { vec![] } else { self.ticks.clone() }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// The label of the tick nearest to coordinate `v`.
fn tick_label(axis: &Axis, v: f64) -> String {
    axis.ticks
        .iter()
        .min_by(|a, b| (axis.to_coord(a.0) - v).abs().total_cmp(&(axis.to_coord(b.0) - v).abs()))
        .map(|t| t.1.clone())
        .unwrap_or_default()
}

fn draw_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    fig: &Figure,
    layer: Layer,
) -> Result<()> {
    let chart_area = if panel.title.is_empty() {
        area.clone()
    } else {
        let (t, c) = area.split_vertically(24);
        if layer.frame() {
            let (tw, _) = t.dim_in_pixel();
            let st = font(15).pos(Pos::new(HPos::Center, VPos::Top));
            t.draw(&Text::new(panel.title.clone(), (tw as i32 / 2, 4), st)).map_err(fail)?;
        }
        c
    };
    let rotate = panel.x.long_labels();
    let longest_x = panel.x.ticks.iter().map(|t| t.1.chars().count()).max().unwrap_or(1) as u32;
    let x_area = if rotate { 34 + 7 * longest_x.min(30) } else { 48 };
    let longest_y = panel.y.ticks.iter().map(|t| t.1.chars().count()).max().unwrap_or(1) as u32;
    let y_area = 40 + 8 * longest_y.min(12);
    let (x0, x1) = panel.x.coord_range();
    let (y0, y1) = panel.y.coord_range();
    let xt: Vec<f64> = panel.x.ticks.iter().map(|t| panel.x.to_coord(t.0)).collect();
    let yt: Vec<f64> = panel.y.ticks.iter().map(|t| panel.y.to_coord(t.0)).collect();
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(6)
        .margin_right(20)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d(Ticked { lo: x0, hi: x1, ticks: xt }, Ticked { lo: y0, hi: y1, ticks: yt })
        .map_err(fail)?;
    if layer.frame() {
        let xf = |v: &f64| tick_label(&panel.x, *v);
        let yf = |v: &f64| tick_label(&panel.y, *v);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(panel.x.title.clone())
            .y_desc(panel.y.title.clone())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT)
            .axis_desc_style(font(15))
            .label_style(font(13));
        let blank = |_: &f64| String::new();
        if rotate {
            mesh.x_label_formatter(&blank);
        }
        mesh.draw().map_err(fail)?;
        if rotate {
            // Written downwards from just under each tick.
            for (v, text) in &panel.x.ticks {
                let (x, y) = chart.backend_coord(&(panel.x.to_coord(*v), y0));
                let st = font(13).transform(FontTransform::Rotate90).pos(Pos::new(HPos::Left, VPos::Center));
                root.draw(&Text::new(text.clone(), (x, y + 8), st)).map_err(fail)?;
            }
        }
    }
    let px = |x: f64, y: f64| chart.backend_coord(&(panel.x.to_coord(x), panel.y.to_coord(y)));
    let drawable = |p: &super::figure::Point| {
        p.x.is_finite()
            && p.y.is_finite()
            && (panel.y.scale == super::axis::Scale::Linear || p.y > 0.0)
            && (panel.x.scale == super::axis::Scale::Linear || p.x > 0.0)
    };
    for s in &panel.series {
        let st = &fig.legend[s.style];
        let color = rgb(st.color);
        let pts: Vec<&super::figure::Point> = s.points.iter().filter(|p| drawable(p)).collect();
        if layer.series(s.style) {
            draw_series(root, s, st, &pts, &px, panel, layer)?;
        }
        let color = if s.draw == Draw::Bars { RGBColor(0, 0, 0) } else { color };
        if layer.error_bars(s.style) {
            for p in pts.iter().filter(|p| p.bar.is_some()) {
                let (lo, hi) = p.bar.unwrap_or((p.y, p.y));
                let lo = if panel.y.scale == super::axis::Scale::Log { lo.max(panel.y.min) } else { lo };
                let (cx, top) = px(p.x, hi);
                let (_, bottom) = px(p.x, lo);
                let c = 5;
                let path = vec![
                    (cx - c, top),
                    (cx + c, top),
                    (cx, top),
                    (cx, bottom),
                    (cx - c, bottom),
                    (cx + c, bottom),
                ];
                root.draw(&PathElement::new(path, color.stroke_width(1))).map_err(fail)?;
            }
        }
    }
    Ok(())
}

fn draw_series<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    s: &Series,
    st: &Style,
    pts: &[&super::figure::Point],
    px: &dyn Fn(f64, f64) -> (i32, i32),
    panel: &Panel,
    layer: Layer,
) -> Result<()> {
    let color = rgb(st.color);
    match s.draw {
        Draw::LineMarkers | Draw::Line { .. } => {
            let line: Vec<(i32, i32)> = pts.iter().map(|p| px(p.x, p.y)).collect();
            let width = if matches!(s.draw, Draw::Line { .. }) { 1 } else { 2 };
            if line.len() > 1 && layer == Layer::All {
                // Raster polylines join wide segments with unbounded miters (spikes at sharp
                // turns); separate segments have no joins.
                for seg in line.windows(2) {
                    root.draw(&PathElement::new(seg.to_vec(), color.stroke_width(width))).map_err(fail)?;
                }
            } else if line.len() > 1 {
                root.draw(&PathElement::new(line, color.stroke_width(width))).map_err(fail)?;
            }
        }
        _ => {}
    }
    match s.draw {
        Draw::LineMarkers | Draw::Markers => {
            for p in pts {
                marker(root, px(p.x, p.y), st)?;
            }
        }
        Draw::Line { marker_every: Some(k) } => {
            for p in pts.iter().step_by(k.max(1)) {
                marker(root, px(p.x, p.y), st)?;
            }
        }
        Draw::Bars => {
            let base =
                if panel.y.scale == super::axis::Scale::Log { panel.y.min } else { panel.y.min.max(0.0) };
            for p in pts {
                let (a, b) = p.span.unwrap_or((p.x - 0.4, p.x + 0.4));
                let (xa, ya) = px(a, p.y);
                let (xb, yb) = px(b, base);
                root.draw(&Rectangle::new([(xa, ya), (xb.max(xa + 1), yb)], color.mix(0.85).filled()))
                    .map_err(fail)?;
            }
        }
        Draw::Line { marker_every: None } => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lean_svg_keeps_every_attribute_that_is_not_a_default() {
        let plotters = concat!(
            "<circle cx=\"870\" cy=\"146\" r=\"4\" opacity=\"1\" fill=\"#000000\" stroke=\"none\" stroke-width=\"1\"/>\n",
            "<text x=\"16\" y=\"8\" dy=\"0.76em\" text-anchor=\"start\" font-family=\"sans-serif\" font-size=\"16.129032258064516\" opacity=\"1\" fill=\"#3C3C3C\">\nx\n</text>\n",
            "<polyline fill=\"none\" opacity=\"0.5\" stroke=\"#0072B2\" stroke-width=\"2\" points=\"20,446 44,446 \"/>\n",
        );
        assert_eq!(
            lean(plotters),
            concat!(
                "<circle cx=\"870\" cy=\"146\" r=\"4\"/>\n",
                "<text x=\"16\" y=\"8\" dy=\"0.76em\" text-anchor=\"start\" font-size=\"16.1\" fill=\"#3C3C3C\">\nx\n</text>\n",
                "<polyline fill=\"none\" opacity=\"0.5\" stroke=\"#0072B2\" stroke-width=\"2\" points=\"20,446 44,446 \"/>\n",
            )
        );
    }

    #[test]
    fn the_embedded_font_parses() {
        assert!(plotters::style::register_font("iolab-test", FontStyle::Normal, FONT).is_ok());
    }
}
