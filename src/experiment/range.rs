//! Ranges of sweep values: `A..B` (every integer), `A..B:STEP` and `A..B:xFACTOR`, over plain
//! integers or sizes (printed back in the spec's size syntax); inclusive, stopping at the last
//! value not above the end.

use crate::error::Result;
use crate::units::{fmt_size_spec, parse_size};

use super::sweep::{MAX_VALUES, err};

/// Expands `A..B`, `A..B:STEP` or `A..B:xF`; `None` if `item` is not a range.
pub fn expand_range(key: &str, item: &str, ram_bytes: u64) -> Result<Option<Vec<String>>> {
    let Some((a, rest)) = item.split_once("..") else { return Ok(None) };
    let (b, step) = match rest.split_once(':') {
        Some((b, s)) => (b.trim(), Some(s.trim())),
        None => (rest.trim(), None),
    };
    let a = a.trim();
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let integers = plain(a) && plain(b) && step.is_none_or(|s| plain(s.trim_start_matches('x')));
    let num = |s: &str, what: &str| -> Result<u64> {
        let v = if integers { s.parse().ok() } else { parse_size(s, ram_bytes).ok() };
        v.ok_or_else(|| err(key, item, format!("the range {what} `{s}` is not a number or size")))
    };
    let (lo, hi) = (num(a, "start")?, num(b, "end")?);
    if lo > hi {
        return Err(err(key, item, "the range starts above its end"));
    }
    let next: Box<dyn Fn(u64) -> Option<u64>> = match step {
        None => Box::new(|v: u64| v.checked_add(1)),
        Some(s) if s.starts_with('x') => {
            let f: u64 = s[1..]
                .parse()
                .map_err(|_| err(key, item, format!("`{s}`: the factor must be a whole number")))?;
            if f < 2 {
                return Err(err(key, item, "a geometric step needs a factor of at least 2"));
            }
            if lo == 0 {
                return Err(err(key, item, "a geometric range cannot start at 0"));
            }
            Box::new(move |v: u64| v.checked_mul(f))
        }
        Some(s) => {
            let d = num(s, "step")?;
            if d == 0 {
                return Err(err(key, item, "the step must be positive"));
            }
            Box::new(move |v: u64| v.checked_add(d))
        }
    };
    if let Some(out) = ram_range(key, item, (a, hi, step), ram_bytes)? {
        return Ok(Some(out));
    }
    let mut out = vec![];
    let mut v = Some(lo);
    while let Some(x) = v.filter(|x| *x <= hi) {
        if out.len() == MAX_VALUES {
            return Err(err(key, item, format!("more than {MAX_VALUES} values")));
        }
        out.push(if integers { x.to_string() } else { fmt_size_spec(x) });
        v = next(x);
    }
    Ok(Some(out))
}

/// A size range that starts at a multiple of memory (`1xRAM..4xRAM:1xRAM`, `0.5xRAM..8xRAM:x2`)
/// keeps its values relative to memory (`1xRAM`, `2xRAM`, ...), so each is rounded to whole
/// blocks when its point is resolved, with any memory size. Such a range steps by a multiple
/// of memory or a factor; a range from an absolute size cannot step by a multiple of memory.
/// `None` when neither end of the step involves memory.
fn ram_range(
    key: &str,
    item: &str,
    (a, hi, step): (&str, u64, Option<&str>),
    ram_bytes: u64,
) -> Result<Option<Vec<String>>> {
    let start = crate::units::ram_multiple(a);
    let add = step.and_then(crate::units::ram_multiple);
    let factor = step.and_then(|s| s.strip_prefix('x')).and_then(|f| f.parse::<u128>().ok());
    let (num, den) = match (start, add, factor) {
        (None, None, _) => return Ok(None),
        (None, Some(_), _) => {
            return Err(err(
                key,
                item,
                "a range that steps by a multiple of RAM starts at one (1xRAM..4xRAM:1xRAM)",
            ));
        }
        (Some(_), None, None) => {
            return Err(err(
                key,
                item,
                "a range from a multiple of RAM steps by one (1xRAM..4xRAM:0.5xRAM) or by a factor (:x2)",
            ));
        }
        (Some(s), _, _) => s,
    };
    let bytes = |n: u128, d: u128| (n * ram_bytes as u128 / d).min(u64::MAX as u128) as u64;
    let mut out = vec![];
    // Both fractions have powers of ten below; bring them to the larger one to add exactly.
    let (mut n, mut d) = (num, den);
    while n.checked_mul(ram_bytes as u128).is_some() && bytes(n, d) <= hi {
        if out.len() == MAX_VALUES {
            return Err(err(key, item, format!("more than {MAX_VALUES} values")));
        }
        out.push(crate::units::fmt_ram_multiple(n, d));
        (n, d) = match (add, factor) {
            (Some((sn, sd)), _) => {
                let dd = d.max(sd);
                (n * (dd / d) + sn * (dd / sd), dd)
            }
            (None, Some(f)) => (n * f, d),
            (None, None) => unreachable!("refused above"),
        };
        if n == 0 {
            break;
        }
    }
    Ok(Some(out))
}
