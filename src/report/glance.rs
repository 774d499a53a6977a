//! The default terminal table, fitted to the terminal's width: what ran, then one row per point
//! and phase with its cache, runs, the headline figure with its 95% interval, IOPS for small
//! blocks, p99 latency and flags; one legend line and where the rest is (`--explain`, `results
//! show`, the HTML report). The full table with every section is `table.rs`'s.

use super::summary::rate_fmt;
use super::table::{cache_cell, failures, head, runs_cell};
use crate::results::{ExperimentResult, Headline, PhaseResult, Status};
use crate::stats;
use crate::text::{fit_table, wrap_lines};
use crate::units::fmt_ns;

/// The 95% interval of `headline` over the runs' figures `xs` (None below two runs): for the
/// mean, Student's t on the log scale (a rate is positive: never a negative lower end), the
/// robust means' own intervals for the others.
pub fn headline_ci95(headline: Headline, xs: &[f64]) -> Option<[f64; 2]> {
    match headline {
        Headline::Mean => stats::positive_ci95(xs),
        Headline::Median => stats::robust::median_ci95(xs),
        Headline::TwoSigmaMean => stats::robust::two_sigma_ci95(xs),
        Headline::TrimmedMean10 => stats::robust::trimmed_ci95(xs, 0.10),
    }
}

/// A phase's headline cell and its interval cell: `547`, `[432, 662]`; dashes without a
/// complete run.
fn headline_cells(exp: &ExperimentResult, ph: &PhaseResult) -> [String; 2] {
    let (headline, figure) = (exp.design.headline, exp.design.figure);
    let fmt = rate_fmt(ph);
    match figure.summary(ph) {
        Some(sm) => {
            let ci = headline_ci95(headline, &figure.values(ph))
                .map_or("-".to_string(), |[lo, hi]| format!("[{}, {}]", fmt(lo), fmt(hi)));
            [fmt(headline.value(&sm)), ci]
        }
        None => ["-".into(), "-".into()],
    }
}

/// A flag as the brief table shows it: its kind, and how many runs had it when not all did
/// (`noisy (1 of 5 runs)`); the whole flag with `--explain`.
fn flag_cell(flag: &str) -> String {
    let Some(kind) = crate::results::flag_kind(flag) else { return flag.to_string() };
    let runs = flag.rfind(" (").map(|i| &flag[i..]).filter(|t| t.ends_with(" runs)") && t.contains(" of "));
    format!("{kind}{}", runs.unwrap_or(""))
}

/// The brief table of one experiment, laid out for `width` columns.
pub fn render_glance(exp: &ExperimentResult, width: usize) -> String {
    let mut out = head(exp);
    if super::strategies::any(exp) {
        out += &super::strategies::render_body(exp);
    } else {
        out += &phases(exp, width);
    }
    out += &failures(exp);
    out += &super::io500::text(exp);
    out += &super::findings::text(exp);
    out += &more(exp);
    crate::text::terminal_safe(&wrap_lines(&out, width))
}

/// The rows, and the legend line under them.
fn phases(exp: &ExperimentResult, width: usize) -> String {
    let d = &exp.design;
    let iops = super::iops::shown(exp);
    // A zipped group's values go together: its first key names the point.
    let implied = |k: &str| d.zip.iter().any(|g| g.iter().skip(1).any(|z| z == k));
    let keys: Vec<&str> = d.axes.iter().map(|a| a.key.as_str()).filter(|k| !implied(k)).collect();
    let mut headers: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let first_num = headers.len() + 3;
    headers.extend(["phase", "cache", "runs"].map(String::from));
    headers.push(format!("{}*", d.figure.column()));
    headers.push("95% interval".into());
    if iops {
        headers.push("IOPS".into());
    }
    headers.extend(["p99", "flags"].map(String::from));
    let mut rows = vec![];
    for p in &exp.points {
        for ph in &p.phases {
            let mut row: Vec<String> =
                keys.iter().map(|k| p.params.get(*k).cloned().unwrap_or_default()).collect();
            row.extend([ph.name.clone(), cache_cell(ph), runs_cell(exp, p, ph)]);
            let complete = ph.repetitions.iter().any(|r| r.status == Status::Complete);
            if complete {
                row.extend(headline_cells(exp, ph));
            } else {
                row.extend(["-".to_string(), "-".to_string()]);
            }
            if iops {
                let v = ph.ops_summary.as_ref().filter(|_| complete).map(|s| d.headline.value(s));
                row.push(v.map_or("-".into(), super::iops::fmt_iops));
            }
            let lat = complete && ph.latency_ns.max > 0;
            row.push(if lat { fmt_ns(ph.latency_ns.p99) } else { "-".into() });
            row.push(ph.flags.iter().map(|f| flag_cell(f)).collect::<Vec<_>>().join("; "));
            rows.push(row);
        }
    }
    let heads: Vec<&str> = headers.iter().map(String::as_str).collect();
    let right: Vec<usize> = (first_num..headers.len() - 1).filter(|&i| i != first_num + 1).collect();
    let mut out = fit_table(&heads, &rows, &right, width);
    out.push('\n');
    out += &legend(exp);
    out
}

/// The one legend line: the headline, its unit, the interval, IOPS and p99.
fn legend(exp: &ExperimentResult) -> String {
    let d = &exp.design;
    let phases = || exp.points.iter().flat_map(|p| &p.phases);
    let unit = match (phases().any(|ph| !ph.op.is_metadata()), phases().any(|ph| ph.op.is_metadata())) {
        (true, true) => "MB/s (ops/s for metadata)",
        (false, true) => "ops/s",
        _ => "MB/s",
    };
    format!(
        "* {} of {} over the runs, in {unit}; interval: its 95% confidence interval; p99: of one op\n",
        d.headline.name().replace('_', " "),
        d.figure.column(),
    )
}

/// Where the rest is.
fn more(exp: &ExperimentResult) -> String {
    let id = &exp.experiment_id;
    format!(
        "more (full legend, flags' advice, rate over time, costs, layout): iolab results show {id} --explain\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::tests::with_rates;

    #[test]
    fn a_three_phase_run_fits_100_columns_and_15_lines_and_explain_keeps_the_rest() {
        let mut exp = with_rates(
            &[("ops", "write,read:cold,read:warm"), ("size", "4MiB"), ("bs", "1MiB")],
            &[
                &[500.0, 520.0, 540.0, 560.0, 580.0],
                &[2000.0; 5],
                &[10_000.0, 11_000.0, 9000.0, 10_500.0, 9500.0],
            ],
        );
        exp.points[0].phases[0].repetitions[1]
            .flags
            .push("noisy: vda read 11.34 MiB, wrote 64.00 MiB (this phase wrote 64 MiB)".into());
        exp.points[0].phases[0].refresh();
        // The null engine's latencies are the machine's: a p99 of a fixed width, so the rows'
        // width is the test's (99 columns, a flags cell of 41).
        for ph in &mut exp.points[0].phases {
            ph.latency_ns.p99 = 1_500_000;
        }
        let text = render_glance(&exp, 100);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() <= 15, "{} lines:\n{text}", lines.len());
        assert!(lines.iter().all(|l| l.chars().count() <= 100), "{text}");
        let head = lines.iter().find(|l| l.starts_with("phase ")).unwrap();
        let cols: Vec<&str> = head.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(cols, ["phase", "cache", "runs", "agg*", "95% interval", "p99", "flags"], "{text}");
        // The headline is the mean of agg, its interval Student's t on the logs.
        let write: Vec<&str> =
            lines.iter().find(|l| l.starts_with("write ")).unwrap().split_whitespace().collect();
        let ci = stats::positive_ci95(&[500.0, 520.0, 540.0, 560.0, 580.0]).unwrap();
        assert_eq!(write[4], "540");
        assert_eq!(format!("{} {}", write[5], write[6]), format!("[{:.0}, {:.0}]", ci[0], ci[1]));
        assert!(text.contains("noisy (1 of 5 runs)"), "{text}");
        assert!(!text.contains("noisy: vda read 11.34 MiB"), "{text}");
        assert_eq!(lines.iter().filter(|l| l.starts_with("* ")).count(), 1, "{text}");
        assert!(
            text.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(&format!("costs, layout): iolab results show {} --explain", exp.experiment_id)),
            "{text}"
        );
        for gone in ["rate over time (", "open, close, commit:", "what to do:", "max_SAR ="] {
            assert!(!text.contains(gone), "{gone:?} in\n{text}");
        }
        let full = crate::report::render_table(&exp);
        for kept in [
            "* headline: the mean of agg",
            "noisy: vda read 11.34 MiB",
            "rate over time (",
            "open, close, commit",
            "what to do:",
            "max_SAR",
        ] {
            assert!(full.contains(kept), "{kept:?} not in\n{full}");
        }
        // A narrower terminal folds the row's last columns under it.
        let narrow = render_glance(&exp, 60);
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        assert!(narrow.contains("\n    flags: no I/O"), "{narrow}");
    }
}
