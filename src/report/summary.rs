//! A phase's summary columns as the terminal table and the HTML page show them, and the legend
//! under them that says what every column is: the robust means appear only where they can
//! differ from the mean, and the legend says why one is missing.

use crate::results::{
    ExperimentResult, Headline, PhaseResult, Rate, Status, flag_advice, flag_kind, flag_meaning,
};
use crate::spec::OpKind;
use crate::stats;
use crate::units::{RateUnit, fmt_ns, fmt_ops, fmt_rate};

/// The summary columns of a table, and what decides them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns {
    pub headline: Headline,
    /// The rate the statistics summarise.
    pub figure: Rate,
    /// The 2σ-mean column: it heads the table, or some phase had a run beyond 2 sd.
    pub two_sigma: bool,
    /// The trim-mean column: it heads the table, or some phase had 10 runs or more (below
    /// that a 10% trim drops none).
    pub trimmed: bool,
}

/// The other rates a table shows beside the headline's, as the mean of the runs.
const OTHER_RATES: [Rate; 3] = [Rate::Agg, Rate::MaxSar, Rate::MinSar];

/// How a phase's rates are written: MB/s, or ops/s for a metadata phase.
pub fn rate_fmt(ph: &PhaseResult) -> fn(f64) -> String {
    match ph.unit() {
        RateUnit::Ops => fmt_ops,
        RateUnit::Bytes => fmt_rate,
    }
}

fn two_sigma_drops(ph: &PhaseResult, figure: Rate) -> bool {
    stats::two_sigma_dropped(&figure.values(ph)) > 0
}

fn trim_drops(ph: &PhaseResult, figure: Rate) -> bool {
    stats::trimmed_per_end(figure.values(ph).len(), 0.10) > 0
}

impl Columns {
    pub fn of(exp: &ExperimentResult) -> Columns {
        let (headline, figure) = (exp.design.headline, exp.design.figure);
        let phases = || exp.points.iter().flat_map(|p| &p.phases);
        Columns {
            headline,
            figure,
            two_sigma: headline == Headline::TwoSigmaMean || phases().any(|ph| two_sigma_drops(ph, figure)),
            trimmed: headline == Headline::TrimmedMean10 || phases().any(|ph| trim_drops(ph, figure)),
        }
    }

    /// The rates shown beside the headline's, each as the mean of the runs.
    fn others(&self) -> impl Iterator<Item = Rate> + '_ {
        OTHER_RATES.into_iter().filter(move |r| *r != self.figure)
    }

    /// The headers of the summary cells, the headline's starred.
    pub fn headers(&self) -> Vec<String> {
        let mut h = vec!["mean", "±sd"];
        if self.two_sigma {
            h.push("2σ-mean");
        }
        if self.trimmed {
            h.push("trim-mean");
        }
        h.extend(["min", "median", "max"]);
        h.extend(self.others().map(Rate::column));
        h.extend(["lat p50", "lat p99"]);
        h.iter().map(|c| if *c == self.headline.column() { format!("{c}*") } else { c.to_string() }).collect()
    }

    /// A phase's cells under [`Columns::headers`]: mean, sd, the robust means shown (`=` where
    /// they dropped no run and so equal the mean, unless they are the headline), min, median,
    /// max (MB/s of the headline's rate), the mean of each other rate, latency p50 and p99;
    /// dashes without a complete repetition (or, for a rate, without a run that measured it),
    /// and for latency when none was recorded (`latency = off`).
    pub fn cells(&self, ph: &PhaseResult) -> Vec<String> {
        let n = self.headers().len();
        if !ph.repetitions.iter().any(|r| r.status == Status::Complete) {
            return vec!["-".to_string(); n];
        }
        let lat = |v: u64| if ph.latency_ns.max == 0 { "-".to_string() } else { fmt_ns(v) };
        let fmt_rate = rate_fmt(ph);
        let mean_of = |r: Rate| {
            let xs = r.values(ph);
            if xs.is_empty() { "-".to_string() } else { fmt_rate(stats::mean(&xs)) }
        };
        let mut c = match self.figure.summary(ph) {
            None => vec!["-".to_string(); n - 2 - self.others().count()],
            Some(sm) => {
                let robust = |v: f64, drops: bool, head: Headline| {
                    if drops || self.headline == head { fmt_rate(v) } else { "=".to_string() }
                };
                let mut c = vec![fmt_rate(sm.mean), sm.sd.map(fmt_rate).unwrap_or_else(|| "-".into())];
                if self.two_sigma {
                    c.push(robust(
                        sm.two_sigma_mean,
                        two_sigma_drops(ph, self.figure),
                        Headline::TwoSigmaMean,
                    ));
                }
                if self.trimmed {
                    c.push(robust(sm.trimmed_mean_10, trim_drops(ph, self.figure), Headline::TrimmedMean10));
                }
                c.extend([fmt_rate(sm.min), fmt_rate(sm.median), fmt_rate(sm.max)]);
                c
            }
        };
        c.extend(self.others().map(mean_of));
        c.extend([lat(ph.latency_ns.p50), lat(ph.latency_ns.p99)]);
        c
    }

    /// The legend under a table of `exp`: one line per column that needs words (the headline,
    /// the rates, the robust means shown or why not, the cache column, latency, and every flag
    /// the table carries).
    pub fn legend(&self, exp: &ExperimentResult) -> Vec<String> {
        let phases: Vec<&PhaseResult> = exp.points.iter().flat_map(|p| &p.phases).collect();
        let mut out = vec![
            format!("* headline: {} of {}", self.headline.about(), self.figure.column()),
            "runs: complete / measured; ±sd: standard deviation of the runs; min, median, max: over the runs"
                .to_string(),
        ];
        // Each unit the table's rates are in, with what its figures are (the unit is the
        // figure's: bytes for data phases, ops for metadata phases).
        let md = phases.iter().any(|ph| ph.op.is_metadata());
        let data = phases.iter().any(|ph| !ph.op.is_metadata()) || !md;
        const SAR: &str = "SAR: system aggregate rate (French, Pratt and Das 1991)";
        for unit in [RateUnit::Bytes, RateUnit::Ops]
            .into_iter()
            .filter(|u| if *u == RateUnit::Ops { md } else { data })
        {
            let others: Vec<&str> = self.others().map(|r| r.about_in(unit)).collect();
            let (what, per) = match unit {
                RateUnit::Bytes => ("", ""),
                RateUnit::Ops if data => (
                    "metadata phases (create, stat, ...): ",
                    " (one op: one item, or one entry a find stats)",
                ),
                RateUnit::Ops => ("", " (one op: one item, or one entry a find stats)"),
            };
            out.push(format!("{what}rates in {}{per} of {}", unit.long(), self.figure.about_in(unit)));
            out.push(format!("{what}{} (means of the runs); {SAR}", others.join("; ")));
        }
        let mut unkept: Vec<&str> =
            phases.iter().filter_map(|ph| ph.cache.names_not_kept.as_deref()).collect();
        unkept.dedup();
        if !unkept.is_empty() {
            out.push(format!(
                "{}: every name was looked up just before the phase, but the file system's client does not keep them for the phase: {}; its lookups reach the servers as a cold phase's do",
                crate::results::WARM_NAMES_NOT_KEPT,
                unkept.join("; ")
            ));
        }
        let ns: Vec<usize> =
            phases.iter().map(|ph| self.figure.values(ph).len()).filter(|&n| n > 0).collect();
        let most = ns.iter().copied().max().unwrap_or(0);
        let with = if ns.iter().all(|&n| n == most) {
            format!("with {most} runs")
        } else {
            format!("with at most {most} runs")
        };
        if most > 0 {
            out.extend(self.robust_lines(most, &with));
        }
        let mut cache = "cache: policy before the phase (cold: committed, evicted; warm: read first; asis: left alone) and the most of its files' pages in memory as it began (mincore)".to_string();
        if phases.iter().any(|ph| ph.op == OpKind::Write) {
            cache += "; a write phase begins on emptied files: 0.0%";
        }
        if phases.iter().any(|ph| ph.repetitions.iter().any(|r| r.again_fraction.is_some())) {
            cache += "; again: the most of its bytes, over the runs, that were of blocks the phase had already read or written (a pass after the first, a repeat), which the page cache may have served";
        }
        out.push(cache);
        let mut untouched: Vec<&str> =
            phases.iter().filter_map(|ph| ph.cache.client_cache_not_controlled.as_deref()).collect();
        untouched.dedup();
        if !untouched.is_empty() {
            out.push(format!(
                "{}: the files' pages were evicted from every reading host's kernel (for a metadata phase: its directory entries, inodes and pages dropped), but the file system's client keeps what the eviction does not reach: {}; such a phase may be served from it",
                crate::results::COLD_KERNEL_ONLY,
                untouched.join("; ")
            ));
        }
        if phases.iter().any(|ph| ph.op.is_metadata()) {
            out.push("cache of a metadata phase: its namespace's (cold: directory entries and inodes dropped, and the most of its names the kernel's counts leave cached, \"?\" where they cannot tell; warm: every name looked up first)".to_string());
        }
        let mut lat =
            "lat p50, lat p99: median and 99th percentile of the time of one op, over every op of the complete runs"
                .to_string();
        if phases.iter().any(|ph| ph.summary.is_some() && ph.latency_ns.max == 0) {
            lat += "; - where none was recorded (latency = off)";
        }
        out.push(lat);
        let mut kinds: Vec<(&str, String)> = vec![];
        for f in phases.iter().flat_map(|ph| &ph.flags) {
            if let (Some(kind), Some(m)) = (flag_kind(f), flag_meaning(f))
                && !kinds.iter().any(|(k, _)| *k == kind)
            {
                kinds.push((kind, m));
            }
        }
        if kinds.is_empty() {
            out.push("flags: none raised (a flag names what makes a row doubtful)".to_string());
        } else {
            out.push("flags (\"k of n runs\" when not every run had it):".to_string());
            for (k, m) in kinds {
                out.push(format!("  {k}: {m}"));
                if let Some(a) = flag_advice(k) {
                    out.push(format!("    what to do: {a}"));
                }
            }
        }
        out
    }

    /// What the 2σ-mean and trim-mean columns are, or why either is not shown, over phases of
    /// at most `most` runs (`with`: "with 5 runs" or "with at most 5 runs").
    fn robust_lines(&self, most: usize, with: &str) -> [String; 2] {
        let two_sigma = if self.two_sigma {
            "2σ-mean: mean of the runs within mean ± 2 sd (Russell 1998); \"=\" where no run lay beyond, so it equals the mean".to_string()
        } else {
            let none_can = if most <= 5 { format!(" ({with} none can)") } else { String::new() };
            format!("2σ-mean not shown: it equals the mean, as no run lay beyond mean ± 2 sd{none_can}")
        };
        let trimmed = if self.trimmed {
            "trim-mean: mean without the floor(n/10) lowest and highest runs (Benson et al. 2003); \"=\" below 10 runs, where it drops none and equals the mean".to_string()
        } else {
            format!(
                "trim-mean not shown: a 10% trim drops floor(n/10) runs from each end, none {with}, so it equals the mean"
            )
        };
        [two_sigma, trimmed]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::run::{NoSink, Silent, run_experiment};
    use crate::experiment::{Experiment, ResolveEnv};

    /// An experiment run with the null engine (`params` over `size = 64KiB`, `bs = 4KiB`), its
    /// phases' agg and max_SAR then set to `rates[phase]` (MB/s, one per repetition).
    pub(crate) fn with_rates(params: &[(&str, &str)], rates: &[&[f64]]) -> ExperimentResult {
        let mut e = Experiment::default();
        let reps = rates[0].len().to_string();
        let all = [("engine", "null"), ("size", "64KiB"), ("bs", "4KiB"), ("reps", reps.as_str())];
        for (k, v) in all.iter().chain(params) {
            e.params.set(k, v.split(',').map(String::from).collect()).unwrap();
        }
        let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
        let b = e.build(&env).unwrap();
        let host = crate::env::host::HostFacts::default();
        let mut exp =
            run_experiment(&b.base, &b.points, b.design, host, &mut NoSink, &Silent).unwrap().result;
        for (ph, rs) in exp.points[0].phases.iter_mut().zip(rates) {
            for (r, v) in ph.repetitions.iter_mut().zip(rs.iter()) {
                (r.max_sar_bytes_per_s, r.agg_bytes_per_s) = (v * 1e6, Some(v * 1e6));
            }
            ph.refresh();
        }
        exp
    }

    fn table_lines(exp: &ExperimentResult) -> Vec<String> {
        crate::report::render_table(exp).lines().map(String::from).collect()
    }

    #[test]
    fn five_runs_leave_out_the_means_that_equal_the_mean_and_say_why() {
        let exp =
            with_rates(&[("ops", "write,read:warm")], &[&[100.0, 100.0, 100.0, 100.0, 1000.0], &[50.0; 5]]);
        let lines = table_lines(&exp);
        let head = lines.iter().find(|l| l.starts_with("phase ")).unwrap();
        let cols: Vec<&str> = head.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(
            cols,
            [
                "phase", "cache", "runs", "mean*", "±sd", "min", "median", "max", "max_SAR", "min_SAR",
                "lat p50", "lat p99", "flags"
            ]
        );
        let write = lines.iter().find(|l| l.starts_with("write ")).unwrap();
        let cells: Vec<&str> = write.split_whitespace().collect();
        assert_eq!(&cells[..10], ["write", "cold", "0.0%", "5/5", "280", "402", "100", "100", "1000", "280"]);
        for want in [
            "* headline: the mean of agg",
            "rates in MB/s (10^6 B/s) of agg = all bytes / (first open to last close), commits included (IOR's bandwidth)",
            "max_SAR = sum of the workers' rates (Russell's total rate); min_SAR = all bytes / the slowest worker's time (means of the runs); SAR: system aggregate rate (French, Pratt and Das 1991)",
            "2σ-mean not shown: it equals the mean, as no run lay beyond mean ± 2 sd (with 5 runs none can)",
            "trim-mean not shown: a 10% trim drops floor(n/10) runs from each end, none with 5 runs, so it equals the mean",
            "lat p50, lat p99: median and 99th percentile of the time of one op, over every op of the complete runs",
            "flags (\"k of n runs\" when not every run had it):",
            "  no I/O (null engine): the null engine moves no data: rates measure iolab's own loop",
        ] {
            assert!(lines.iter().any(|l| l == want), "missing {want:?} in\n{}", lines.join("\n"));
        }
        let cache = lines.iter().find(|l| l.starts_with("cache: ")).unwrap();
        assert!(cache.ends_with("; a write phase begins on emptied files: 0.0%"), "{cache}");
    }

    #[test]
    fn ten_runs_show_each_robust_mean_where_it_drops_a_run() {
        // Write: one run of ten far off (2.85 sd): the 2-sigma mean drops it, the trim drops it
        // and the lowest. Read: no run beyond 2 sd, so "=" under 2σ-mean; the trim still drops two.
        let mut write = [100.0; 10];
        write[3] = 1000.0;
        let read: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let mut exp = with_rates(&[("ops", "write,read:cold")], &[&write, &read]);
        exp.points[0].phases[1].repetitions[2].flags.push("noisy: vda read 9 MiB, wrote 0 B".into());
        exp.points[0].phases[1].refresh();
        let lines = table_lines(&exp);
        let head = lines.iter().find(|l| l.starts_with("phase ")).unwrap();
        assert!(head.contains("  ±sd  2σ-mean  trim-mean  min "), "{head}");
        let cells = |name: &str| -> Vec<String> {
            let l = lines.iter().find(|l| l.starts_with(&format!("{name} "))).unwrap();
            l.split_whitespace().map(String::from).collect()
        };
        // phase, policy, resident, runs, mean, sd, 2σ-mean, trim-mean, min, median, max
        assert_eq!(&cells("write")[4..11], ["190", "285", "100", "100", "100", "100", "1000"]);
        assert_eq!(&cells("read:cold")[4..11], ["104", "3.03", "=", "104", "100", "104", "109"]);
        assert!(cells("read:cold").join(" ").ends_with("noisy: vda read 9 MiB, wrote 0 B (1 of 10 runs)"));
        for want in [
            "2σ-mean: mean of the runs within mean ± 2 sd (Russell 1998); \"=\" where no run lay beyond, so it equals the mean",
            "trim-mean: mean without the floor(n/10) lowest and highest runs (Benson et al. 2003); \"=\" below 10 runs, where it drops none and equals the mean",
            "  noisy: the devices did more I/O during the phase than the phase accounts for",
            "    what to do: other I/O hit the device: rerun on a quiet machine, or wait before each run (--settle 5s)",
        ] {
            assert!(lines.iter().any(|l| l == want), "missing {want:?} in\n{}", lines.join("\n"));
        }
    }

    #[test]
    fn a_robust_headline_keeps_its_column_and_its_numbers() {
        let mut exp = with_rates(&[("ops", "write")], &[&[100.0, 110.0, 120.0]]);
        exp.design.headline = Headline::TwoSigmaMean;
        exp.design.figure = Rate::MaxSar;
        let cols = Columns::of(&exp);
        assert_eq!(
            cols.headers(),
            ["mean", "±sd", "2σ-mean*", "min", "median", "max", "agg", "min_SAR", "lat p50", "lat p99"]
        );
        assert_eq!(cols.cells(&exp.points[0].phases[0])[2], "110");
        let legend = cols.legend(&exp);
        assert!(
            legend[0].starts_with("* headline: the 2-sigma mean") && legend[0].ends_with(" of max_SAR"),
            "{legend:?}"
        );
        // Runs stored before iolab measured agg show a dash there, never a 0.
        for r in &mut exp.points[0].phases[0].repetitions {
            r.agg_bytes_per_s = None;
        }
        assert_eq!(cols.cells(&exp.points[0].phases[0])[6], "-");
        exp.design.figure = Rate::Agg;
        let cells = Columns::of(&exp).cells(&exp.points[0].phases[0]);
        assert_eq!(cells[..6], ["-", "-", "-", "-", "-", "-"], "{cells:?}");
        assert_eq!(cells[6], "110", "max_SAR's mean");
    }
}
