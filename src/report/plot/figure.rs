//! The figure model that every plot kind builds and one renderer draws: panels with two axes,
//! series of points (lines, markers, bars, error bars) and a legend (one for the figure, or one
//! under each panel when the panels share no series). Pure data, in display units (MB/s, µs,
//! bytes), so plot kinds are tested without drawing anything.

use super::axis::Axis;

/// Marker shapes, distinct in black and white (series never differ by colour alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    RingCircle,
    RingSquare,
    TriangleDown,
}

pub const MARKERS: [Marker; 7] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::RingCircle,
    Marker::RingSquare,
    Marker::TriangleDown,
];

/// Colours (Okabe and Ito's palette for colour-blind readers, darkest first so the first
/// series print darkest in grey).
pub const PALETTE: [(u8, u8, u8); 7] =
    [(0, 0, 0), (0, 114, 178), (213, 94, 0), (0, 158, 115), (204, 121, 167), (86, 180, 233), (230, 159, 0)];

/// The most series one panel shows; more are split into panels of their own (small
/// multiples), as a reader follows about this many lines at once.
pub const MAX_SERIES: usize = 8;

/// How one legend entry looks.
#[derive(Debug, Clone, PartialEq)]
pub struct Style {
    pub label: String,
    pub color: (u8, u8, u8),
    pub marker: Marker,
}

impl Style {
    /// The i-th style of a figure: colour and marker both cycle, so neighbours differ in both;
    /// past the palette the marker shifts by one each lap, so the first 49 styles are all
    /// distinct pairs (a figure shows at most [`MAX_SERIES`] series a panel).
    pub fn nth(i: usize, label: impl Into<String>) -> Style {
        let (n, lap) = (PALETTE.len(), i / PALETTE.len());
        Style { label: label.into(), color: PALETTE[i % n], marker: MARKERS[(i + lap) % MARKERS.len()] }
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Draw {
    /// A line through the points, a marker at each.
    LineMarkers,
    /// A line only (long series: traces, CDFs); markers at every `every`-th point, if any.
    Line { marker_every: Option<usize> },
    /// Markers only.
    Markers,
    /// Filled bars over each point's `span` (x from, x to), from zero up to y.
    Bars,
}

/// One point in display units. `bar` is the error bar (low, high); `span` the x extent of a bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub bar: Option<(f64, f64)>,
    pub span: Option<(f64, f64)>,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Point {
        Point { x, y, bar: None, span: None }
    }

    /// The heights the point reaches, for the y axis: its value and its error bar's ends.
    pub fn ys(&self) -> impl Iterator<Item = f64> {
        std::iter::once(self.y).chain(self.bar.into_iter().flat_map(|(lo, hi)| [lo, hi]))
    }
}

/// One series of a panel; `style` indexes the figure's legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub style: usize,
    pub draw: Draw,
    pub points: Vec<Point>,
}

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// A whole figure: a title, lines under it, panels in a grid, a legend, notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    pub subtitle: Vec<String>,
    pub panels: Vec<Panel>,
    pub legend: Vec<Style>,
    pub notes: Vec<String>,
    /// Pixel size of the whole figure; None: from the number of panels.
    pub size: Option<(u32, u32)>,
}

impl Figure {
    /// The figure with every text in it on one line, control characters shown as `\x1b`,
    /// `\n` ([`crate::text::one_line`]): a name from a user or a store (an experiment's, an
    /// imported host's) never puts a control character into an SVG, where XML allows none, nor
    /// a newline or an escape sequence into a label.
    pub fn printable(&self) -> Figure {
        let t = |s: &String| crate::text::one_line(s);
        let axis = |a: &Axis| Axis {
            title: t(&a.title),
            ticks: a.ticks.iter().map(|(v, l)| (*v, t(l))).collect(),
            ..a.clone()
        };
        Figure {
            title: t(&self.title),
            subtitle: self.subtitle.iter().map(t).collect(),
            panels: self
                .panels
                .iter()
                .map(|p| Panel { title: t(&p.title), x: axis(&p.x), y: axis(&p.y), series: p.series.clone() })
                .collect(),
            legend: self.legend.iter().map(|st| Style { label: t(&st.label), ..st.clone() }).collect(),
            notes: self.notes.iter().map(t).collect(),
            size: self.size,
        }
    }

    /// Panels per row.
    pub fn columns(&self) -> usize {
        match self.panels.len() {
            0 | 1 => 1,
            2 | 4 => 2,
            _ => 3,
        }
    }

    /// Rows of panels.
    pub fn rows(&self) -> usize {
        self.panels.len().max(1).div_ceil(self.columns())
    }

    /// The figure's pixel size.
    pub fn pixel_size(&self) -> (u32, u32) {
        if let Some(s) = self.size {
            return s;
        }
        let (cols, rows) = (self.columns() as u32, self.rows() as u32);
        let w = self.base_width();
        let panel_h = if cols == 1 { 440 } else { 360 } + self.panel_legend_px(w);
        (w, self.header_px() + panel_h * rows + self.legend_px(w) + self.notes_px())
    }

    /// The legend entries of each panel, when every panel has one of its own: small multiples
    /// that split one set of series between panels (no series drawn in two panels), so each
    /// panel's lines are named right under it. None: one legend for the whole figure.
    pub fn panel_legends(&self) -> Option<Vec<Vec<usize>>> {
        if self.panels.len() < 2 {
            return None;
        }
        let per: Vec<Vec<usize>> = self
            .panels
            .iter()
            .map(|p| {
                let mut v: Vec<usize> = p.series.iter().map(|s| s.style).collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let all: usize = per.iter().map(Vec::len).sum();
        let shared = all != self.used_styles().len();
        (!shared && per.iter().all(|v| !v.is_empty())).then_some(per)
    }

    /// Legend entries per row under one panel of a figure `width` pixels wide, and the height
    /// of the tallest panel's legend (0 when the figure has one legend).
    pub fn panel_legend_layout(&self, width: u32) -> (usize, u32) {
        let Some(per) = self.panel_legends() else { return (1, 0) };
        let panel_w = width / self.columns().max(1) as u32;
        let longest = per.iter().flatten().map(|&i| self.legend[i].label.chars().count()).max().unwrap_or(1);
        let per_row = (panel_w.saturating_sub(40) / (44 + 8 * longest as u32)).max(1) as usize;
        let rows = per.iter().map(|v| v.len().div_ceil(per_row)).max().unwrap_or(0) as u32;
        (per_row, 10 + 22 * rows)
    }

    pub fn panel_legend_px(&self, width: u32) -> u32 {
        self.panel_legend_layout(width).1
    }

    pub fn header_px(&self) -> u32 {
        let (w, _) = self.size.unwrap_or((self.base_width(), 0));
        10 + 24 * self.title_lines(w).len() as u32 + 18 * self.subtitle_lines(w).len() as u32
    }

    fn base_width(&self) -> u32 {
        let cols = self.columns() as u32;
        if cols == 1 { 860 } else { 500 * cols }
    }

    /// The title broken into lines that fit `width` pixels (about 10 px per character).
    pub fn title_lines(&self, width: u32) -> Vec<String> {
        wrap(&self.title, (width.saturating_sub(32) / 10).max(20) as usize)
    }

    /// The subtitle lines, each broken to fit `width` pixels (about 7.5 px per character).
    pub fn subtitle_lines(&self, width: u32) -> Vec<String> {
        let per_line = (width.saturating_sub(32) * 2 / 15).max(20) as usize;
        self.subtitle.iter().flat_map(|l| wrap(l, per_line)).collect()
    }

    /// Legend entries per row at a width, and the legend's height.
    pub fn legend_layout(&self, width: u32) -> (usize, u32) {
        if self.legend.is_empty() || self.panel_legends().is_some() {
            return (1, 0);
        }
        let longest = self.legend.iter().map(|s| s.label.chars().count()).max().unwrap_or(1);
        let entry_px = 44 + 8 * longest as u32;
        let per_row = ((width.saturating_sub(40)) / entry_px).max(1) as usize;
        let rows = self.legend.len().div_ceil(per_row) as u32;
        (per_row, 10 + 22 * rows)
    }

    pub fn legend_px(&self, width: u32) -> u32 {
        self.legend_layout(width).1
    }

    pub fn notes_px(&self) -> u32 {
        18 * self.notes.len() as u32 + if self.notes.is_empty() { 0 } else { 6 }
    }

    /// Indexes of legend entries that some series uses.
    pub fn used_styles(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.panels.iter().flat_map(|p| p.series.iter().map(|s| s.style)).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Breaks text at spaces into lines of at most `per_line` characters (longer words stay whole).
pub fn wrap(text: &str, per_line: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > per_line {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    lines.push(cur);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first 49 styles are distinct (colour, marker) pairs; neighbours differ in both.
    #[test]
    fn styles_stay_distinct_past_the_palette() {
        let all: Vec<_> = (0..49).map(|i| Style::nth(i, "")).map(|s| (s.color, s.marker)).collect();
        for (i, a) in all.iter().enumerate() {
            assert!(!all[..i].contains(a), "style {i} repeats");
            if i > 0 {
                assert!(a.0 != all[i - 1].0 && a.1 != all[i - 1].1, "styles {i} and {} share", i - 1);
            }
        }
    }

    fn figure(panels: &[&[usize]], labels: usize) -> Figure {
        let axis = Axis::categories("x", &["a".to_string()]);
        let panel = |styles: &[usize]| Panel {
            title: String::new(),
            x: axis.clone(),
            y: axis.clone(),
            series: styles
                .iter()
                .map(|&style| Series { style, draw: Draw::Markers, points: vec![Point::new(0.0, 1.0)] })
                .collect(),
        };
        Figure {
            title: "t".into(),
            subtitle: vec![],
            panels: panels.iter().map(|p| panel(p)).collect(),
            legend: (0..labels).map(|i| Style::nth(i, format!("series {i}"))).collect(),
            notes: vec![],
            size: None,
        }
    }

    /// Panels that split the series between them each get a legend of their own, sized for
    /// the tallest, and the figure none; panels that share a series keep one legend.
    #[test]
    fn a_legend_per_panel_only_when_the_panels_split_the_series() {
        let split = figure(&[&[0, 1, 2], &[3, 4], &[5]], 6);
        assert_eq!(split.panel_legends(), Some(vec![vec![0, 1, 2], vec![3, 4], vec![5]]));
        assert_eq!(split.legend_px(1500), 0);
        // 500 px a panel, 108 px an entry ("series 0"): 4 a row, so one row each.
        assert_eq!(split.panel_legend_layout(1500), (4, 32));
        let (_, h) = split.pixel_size();
        assert_eq!(h, split.header_px() + 360 + 32 + split.notes_px());
        let shared = figure(&[&[0, 1], &[1, 2]], 3);
        assert_eq!(shared.panel_legends(), None);
        assert_eq!(shared.panel_legend_px(1000), 0);
        assert!(shared.legend_px(1000) > 0);
        assert_eq!(figure(&[&[0, 1]], 2).panel_legends(), None, "one panel");
        assert_eq!(figure(&[&[0], &[]], 1).panel_legends(), None, "an empty panel");
    }

    /// A name from a user or a store (an experiment's, an imported host's) with control
    /// characters and markup leaves no control character (XML allows none) and no markup in
    /// the SVG: each is shown as text, on one line.
    #[test]
    fn hostile_text_stays_text_in_the_svg() {
        let evil = "t\x1b[31m<b>&\x07\nx";
        let axis = Axis::categories(evil, &[evil.to_string()]);
        let fig = Figure {
            title: evil.into(),
            subtitle: vec![evil.into()],
            panels: vec![Panel {
                title: evil.into(),
                x: axis.clone(),
                y: axis,
                series: vec![Series { style: 0, draw: Draw::Markers, points: vec![Point::new(0.0, 1.0)] }],
            }],
            legend: vec![Style::nth(0, evil)],
            notes: vec![evil.into()],
            size: None,
        };
        let svg = super::super::draw::svg(&fig).unwrap();
        assert!(!svg.chars().any(|c| c.is_control() && c != '\n'), "{svg}");
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("t\\x1b[31m&lt;b&gt;&amp;\\x07\\nx"), "{svg}");
    }

    #[test]
    fn wraps_at_spaces() {
        assert_eq!(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap("a verylongword b", 4), ["a", "verylongword", "b"]);
        assert_eq!(wrap("short", 40), ["short"]);
    }
}
