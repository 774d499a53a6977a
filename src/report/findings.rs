//! The "Findings" section of a preset's results: each claim, the study's words for it (where
//! they are), the paper's figure, this machine's figure by the study's statistic with its 95%
//! interval, and the verdict; as text and as HTML.

use crate::results::ExperimentResult;
use crate::results::findings::{Finding, num, side_value};

/// The rows of the section: claim, the study's words (with where), paper, this machine,
/// verdict (with why).
pub fn rows(exp: &ExperimentResult) -> Vec<[String; 5]> {
    exp.findings.iter().map(|f| row(exp, f)).collect()
}

/// A phase's cache word where it is not the plain policy ([`crate::results::COLD_KERNEL_ONLY`],
/// [`crate::results::WARM_NAMES_NOT_KEPT`]).
fn cache_note(exp: &ExperimentResult, phase: &str) -> String {
    let labelled = exp.points.iter().flat_map(|p| &p.phases).find(|ph| {
        ph.name == phase
            && (ph.cache.client_cache_not_controlled.is_some() || ph.cache.names_not_kept.is_some())
    });
    labelled.map(|ph| format!(" [{}]", ph.cache.label())).unwrap_or_default()
}

fn row(exp: &ExperimentResult, f: &Finding) -> [String; 5] {
    let x = if f.b.is_some() { "a / b" } else { "a" };
    let ratio = match (f.ratio, f.interval) {
        (Some(r), Some([lo, hi])) => format!("{x} = {} [{}, {}]", num(r), num(lo), num(hi)),
        (Some(r), None) => format!("{x} = {} (no interval)", num(r)),
        _ => format!("{x} not measured"),
    };
    let side = |s: &crate::results::findings::SideResult| {
        let flags =
            if s.flags.is_empty() { String::new() } else { format!(" (flagged: {})", s.flags.join(", ")) };
        let note = if s.note.is_empty() { String::new() } else { format!(" ({})", s.note) };
        format!(
            "{} {}{} {}: {}{flags}{note}",
            s.point,
            s.phase,
            cache_note(exp, &s.phase),
            s.figure,
            side_value(s)
        )
    };
    let mut here = format!(
        "{ratio}{} by the {}; a = {}",
        if f.paired { " (paired runs)" } else { "" },
        stat_words(&f.statistic),
        side(&f.a)
    );
    if let Some(b) = &f.b {
        here += &format!("; b = {}", side(b));
    }
    let words = format!("\"{}\" ({})", f.quote, f.source);
    [
        f.claim.clone(),
        words,
        f.paper.clone(),
        here,
        format!("{} (rule {}: {})", f.verdict.text(), f.rule, f.why),
    ]
}

/// A statistic's name in words.
fn stat_words(name: &str) -> &'static str {
    match name {
        "two_sigma_mean" => "2-sigma mean",
        "trimmed_mean_10" => "10% trimmed mean",
        "median" => "median",
        _ => "mean",
    }
}

/// The section as text, empty when there are no findings.
pub fn text(exp: &ExperimentResult) -> String {
    if exp.findings.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nFindings (each verdict from the 95% confidence intervals over the repetitions of the study's statistic, never one run)\n",
    );
    for (i, [claim, words, paper, here, verdict]) in rows(exp).into_iter().enumerate() {
        out += &format!(
            "{:>3}. {claim}\n     study: {words}\n     paper: {paper}\n     here:  {here}\n     verdict: {verdict}\n",
            i + 1
        );
    }
    let count = |v: crate::results::findings::Verdict| exp.findings.iter().filter(|f| f.verdict == v).count();
    use crate::results::findings::Verdict::*;
    out += &format!(
        "     {} hold, {} do not hold, {} inconclusive (rules: docs/experiments.md, \"Findings\")\n",
        count(Holds),
        count(DoesNotHold),
        count(Inconclusive)
    );
    out
}

/// The section as HTML, empty when there are no findings.
pub fn html(exp: &ExperimentResult) -> String {
    use super::html::esc;
    if exp.findings.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<section id=\"findings\">\n<h2>Findings</h2>\n<p class=\"note\">Each verdict comes from the 95% confidence intervals over the repetitions, never from one run: holds when the interval of a / b lies within the expected range, does not hold when it lies wholly outside it, inconclusive otherwise.</p>\n<table class=\"findings\">\n<thead><tr><th>claim</th><th>the study's words</th><th>paper</th><th>this machine</th><th>verdict</th></tr></thead>\n<tbody>\n",
    );
    for (f, r) in exp.findings.iter().zip(rows(exp)) {
        s += &format!(
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            f.verdict.text().replace(' ', "-"),
            esc(&r[0]),
            esc(&r[1]),
            esc(&r[2]),
            esc(&r[3]),
            esc(&r[4])
        );
    }
    s + "</tbody>\n</table>\n</section>\n"
}
