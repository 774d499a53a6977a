//! The terminal table's IOPS section: each phase's operations per second (the sum over its
//! workers of ops / t_i, as max_SAR sums their rates) with the same statistics over the same
//! runs as the rates above it. Shown when some point moves blocks of 64 KiB or less (where
//! fio and IOR users read IOPS first); JSON and CSV always carry it.

use crate::results::{ExperimentResult, Headline, Status};
use crate::stats::Summary;

use super::text_table;

/// Blocks of this size or less show the section.
pub const SHOW_AT_MOST_BYTES: u64 = 64 << 10;

/// Whether the table shows IOPS: some point moves blocks of 64 KiB or less.
pub fn shown(exp: &ExperimentResult) -> bool {
    let bs = |p: &crate::results::PointResult| p.spec.as_ref().map_or(exp.spec.bs_bytes, |s| s.bs_bytes);
    exp.points.iter().any(|p| bs(p) <= SHOW_AT_MOST_BYTES)
}

/// An ops-per-second figure as a short cell: `812`, `8210`, `12.3k`, `123k`, `1.23M`.
pub fn fmt_iops(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The statistic columns: the rates' robust headline first when it is one, then mean, sd,
/// min, median, max; the headline starred.
fn headers(h: Headline) -> Vec<String> {
    let mut out = vec![];
    if matches!(h, Headline::TwoSigmaMean | Headline::TrimmedMean10) {
        out.push(h.column());
    }
    out.extend(["mean", "±sd", "min", "median", "max"]);
    out.iter().map(|c| if *c == h.column() { format!("{c}*") } else { c.to_string() }).collect()
}

fn cells(s: &Summary, h: Headline) -> Vec<String> {
    let mut out = vec![];
    if matches!(h, Headline::TwoSigmaMean | Headline::TrimmedMean10) {
        out.push(fmt_iops(h.value(s)));
    }
    out.extend([fmt_iops(s.mean), s.sd.map_or("-".into(), fmt_iops), fmt_iops(s.min), fmt_iops(s.median)]);
    out.push(fmt_iops(s.max));
    out
}

/// What the section says of itself.
pub const ABOUT: &str =
    "ops per second (IOPS: sum over the workers of ops / t_i, as max_SAR sums their rates; the same runs)";

/// The section, or nothing when it is not shown.
pub fn render_iops(exp: &ExperimentResult) -> String {
    match parts(exp) {
        Some((headers, rows, right)) => {
            let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
            format!("\n{ABOUT}:\n{}", text_table(&headers, &rows, &right))
        }
        None => String::new(),
    }
}

/// The section's headers, rows and right-aligned columns; None when it is not shown.
pub fn parts(exp: &ExperimentResult) -> Option<super::TableParts> {
    if !shown(exp) {
        return None;
    }
    let h = exp.design.headline;
    let stat = headers(h);
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let done = ph.repetitions.iter().filter(|r| r.status == Status::Complete).count();
            let mut row =
                vec![super::point_params(p), ph.name.clone(), format!("{done}/{}", ph.repetitions.len())];
            match &ph.ops_summary {
                Some(s) => row.extend(cells(s, h)),
                None => row.extend(std::iter::repeat_n("-".to_string(), stat.len())),
            }
            rows.push(row);
        }
    }
    let mut headers: Vec<String> = ["point", "phase", "runs"].map(String::from).to_vec();
    headers.extend(stat);
    let mut right: Vec<usize> = (3..headers.len()).collect();
    if exp.points.len() < 2 {
        headers.remove(0);
        rows.iter_mut().for_each(|r| drop(r.remove(0)));
        right = (2..headers.len()).collect();
    }
    Some((headers, rows, right))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iops_cells_are_short() {
        let got: Vec<String> = [12.34, 812.0, 8210.4, 12_345.0, 123_456.0, 1_234_567.0, f64::NAN]
            .iter()
            .map(|&v| fmt_iops(v))
            .collect();
        assert_eq!(got, ["12.3", "812", "8210", "12.3k", "123k", "1.23M", "-"]);
    }
}
