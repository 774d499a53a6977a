//! `iolab results compare A B` (or `--baseline NAME [B]`): two experiments before and after,
//! in the chosen format; with `--fail-if-slower PCT`, exit 1 when a shared phase is slower by
//! more than PCT per cent with confidence; and `iolab run --compare-to ID`'s comparison after
//! its run.

use std::io::Write;

use crate::error::{Error, Result};
use crate::report::compare::verdict;
use crate::store::Store;

use super::put;

/// What the command line asked of the two-experiment comparison.
pub struct Two {
    pub ids: Vec<String>,
    pub baseline: Option<String>,
    pub fail_if_slower: Option<String>,
    pub format: String,
    pub tuned: bool,
}

/// `--fail-if-slower PCT`: a percentage, at least 0 and under 100.
pub fn parse_pct(v: &str) -> Result<f64> {
    let why = "a percentage from 0 up to (not including) 100, as 10 or 2.5";
    let pct: f64 =
        v.trim().trim_end_matches('%').parse().map_err(|_| Error::spec("--fail-if-slower", v, why))?;
    if !pct.is_finite() || !(0.0..100.0).contains(&pct) {
        return Err(Error::spec("--fail-if-slower", v, why));
    }
    Ok(pct)
}

/// An experiment id as the store resolves it, an error naming the argument otherwise.
fn resolve(store: &Store, field: &str, id: &str) -> Result<String> {
    store.resolve_id(id).map_err(|e| match e {
        Error::NotFound(why) => Error::spec(field, id, why),
        other => other,
    })
}

/// The newest experiment named `name`.
fn named(store: &Store, name: &str) -> Result<String> {
    let all = store.list()?;
    if let Some(r) = all.iter().find(|r| r.name == name) {
        return Ok(r.id.clone());
    }
    let mut names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    names.sort();
    names.dedup();
    let have = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    Err(Error::spec("--baseline", name, format!("no experiment of that name in the store (names: {have})")))
}

/// Prints the comparison; an error (exit 1) after it when a phase is slower than allowed.
pub fn before_after(store: &Store, two: Two, stdout: &mut dyn Write) -> Result<()> {
    let pct = two.fail_if_slower.as_deref().map(parse_pct).transpose()?;
    if two.tuned {
        return Err(Error::spec("--tuned", "true", "is for the per-host table: give no experiment ids"));
    }
    if two.format == "html" {
        return Err(Error::spec(
            "--format",
            &two.format,
            "two experiments compare as text, markdown, csv or json",
        ));
    }
    let (a, b) = match (&two.baseline, two.ids.as_slice()) {
        (Some(name), []) => (named(store, name)?, resolve(store, "B", "last")?),
        (Some(name), [b]) => (named(store, name)?, resolve(store, "B", b)?),
        (None, [a, b]) => (resolve(store, "A", a)?, resolve(store, "B", b)?),
        (None, [one]) => {
            return Err(Error::spec("B", one, "give two experiments (A B), or --baseline NAME for A"));
        }
        (Some(name), _) => {
            return Err(Error::spec("--baseline", name, "names A: give at most one experiment id (B)"));
        }
        (None, _) => unreachable!("the per-host table takes no ids"),
    };
    let c = verdict::compare(&store.load(&a)?, &store.load(&b)?);
    put(stdout, &verdict::render(&c, &two.format)?)?;
    let Some(pct) = pct else { return Ok(()) };
    let slower: Vec<String> = c
        .slower_by_more_than(pct)
        .iter()
        .map(|s| {
            let [lo, hi] = s.ci95.unwrap_or([f64::NAN; 2]);
            format!("{} at {:.3} of A ({lo:.3}..{hi:.3})", s.label(), s.ratio.unwrap_or(f64::NAN))
        })
        .collect();
    if slower.is_empty() {
        return Ok(());
    }
    Err(Error::Run(format!("slower than A by more than {pct}% with 95% confidence: {}", slower.join("; "))))
}

/// `iolab run --compare-to ID`: the stored experiment, read before the run.
pub fn before(store: &Store, id: &str) -> Result<crate::results::ExperimentResult> {
    store.load(&resolve(store, "--compare-to", id)?)
}

/// The comparison of the run just made (B) against `a`, after its table.
pub fn after_run(
    a: &crate::results::ExperimentResult,
    b: &crate::results::ExperimentResult,
    stdout: &mut dyn Write,
) -> Result<()> {
    let c = verdict::compare(a, b);
    put(stdout, &format!("\ncompared with {}\n{}", a.experiment_id, verdict::render(&c, "text")?))
}
