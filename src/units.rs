//! Parses and formats sizes, durations and rates with explicit units.
//!
//! Sizes: a bare number is bytes; `k`, `KiB`, `m`, `MiB`, `g`, `GiB`, `t`, `TiB` are powers of
//! 1024; `kB`, `KB`, `MB`, `GB`, `TB` are powers of 1000 (as written, SI); `NxRAM` is N times the
//! machine's memory, rounded down to a whole byte (and, where a size must be whole blocks, by
//! the caller to whole blocks). Rates are printed in MB/s (10^6 B/s).

use std::fmt;

/// Why a size or duration string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn suffix_multiplier(suffix: &str) -> Option<u64> {
    const K: u64 = 1024;
    Some(match suffix {
        "" | "b" | "B" => 1,
        "k" | "K" | "KiB" | "kiB" | "Ki" => K,
        "m" | "M" | "MiB" | "Mi" => K * K,
        "g" | "G" | "GiB" | "Gi" => K * K * K,
        "t" | "T" | "TiB" | "Ti" => K * K * K * K,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return None,
    })
}

/// Splits "12.5MiB" into ("12.5", "MiB").
fn split_number(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

/// Parses a decimal number, exactly, as a rational num/den (den a power of ten), so that
/// "1.5GiB" is computed without floating-point rounding.
fn parse_decimal(num: &str) -> Option<(u128, u128)> {
    let num: String = num.chars().filter(|&c| c != '_').collect();
    if num.is_empty() || num == "." {
        return None;
    }
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if frac.contains('.') || frac.len() > 18 {
        return None;
    }
    let int_v: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac_v: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let den = 10u128.pow(frac.len() as u32);
    Some((int_v.checked_mul(den)?.checked_add(frac_v)?, den))
}

/// The `N` of a size written `NxRAM`, if it is written so.
fn ram_factor(s: &str) -> Option<&str> {
    let t = s.trim();
    t.strip_suffix("xRAM").or_else(|| t.strip_suffix("xram")).map(str::trim)
}

/// Whether a size is written relative to the machine's memory (`2xRAM`, `0.5xram`).
pub fn is_ram_relative(s: &str) -> bool {
    ram_factor(s).is_some()
}

/// The factor of an `NxRAM` size as an exact fraction (numerator, a power of ten), so that
/// ranges over multiples of memory can step without rounding: `1.5xRAM` is (15, 10).
pub fn ram_multiple(s: &str) -> Option<(u128, u128)> {
    ram_factor(s).and_then(parse_decimal)
}

/// Writes a factor from [`ram_multiple`] back as a size: (15, 10) is `1.5xRAM`.
pub fn fmt_ram_multiple(num: u128, den: u128) -> String {
    let (int, frac) = (num / den, num % den);
    if frac == 0 {
        return format!("{int}xRAM");
    }
    let digits = den.ilog10() as usize;
    let frac = format!("{frac:0digits$}");
    format!("{int}.{}xRAM", frac.trim_end_matches('0'))
}

/// Parses a size in bytes. `ram_bytes` resolves `NxRAM`, rounded down to a whole byte.
///
/// ```
/// use iolab::units::parse_size;
/// assert_eq!(parse_size("4k", 0).unwrap(), 4096);
/// assert_eq!(parse_size("4kB", 0).unwrap(), 4000);
/// assert_eq!(parse_size("1.5GiB", 0).unwrap(), 3 << 29);
/// assert_eq!(parse_size("2xRAM", 1 << 30).unwrap(), 2 << 30);
/// assert_eq!(parse_size("0.5xRAM", 1001).unwrap(), 500);
/// ```
pub fn parse_size(s: &str, ram_bytes: u64) -> Result<u64, UnitError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(UnitError(format!("`{s}` is negative; sizes are positive")));
    }
    if let Some(n) = ram_factor(t) {
        if ram_bytes == 0 {
            return Err(UnitError(format!(
                "`{s}`: the machine's memory size is unknown (state it with --ram SIZE or IOLAB_RAM_BYTES)"
            )));
        }
        let (n, den) = parse_decimal(n).ok_or_else(|| UnitError(format!("`{s}` is not a size")))?;
        let bytes =
            n.checked_mul(ram_bytes as u128).ok_or_else(|| UnitError(format!("`{s}` is too large")))?;
        return u64::try_from(bytes / den).map_err(|_| UnitError(format!("`{s}` is too large")));
    }
    let (num, suffix) = split_number(t);
    let mult = suffix_multiplier(suffix).ok_or_else(|| {
        UnitError(format!(
            "`{s}` has an unknown unit `{suffix}` (use B, KiB/k, MiB/m, GiB/g, TiB/t, kB, MB, GB, TB or xRAM)"
        ))
    })? as u128;
    let (n, den) = parse_decimal(num).ok_or_else(|| UnitError(format!("`{s}` is not a size")))?;
    let bytes = n.checked_mul(mult).ok_or_else(|| UnitError(format!("`{s}` is too large")))?;
    if bytes % den != 0 {
        return Err(UnitError(format!("`{s}` is not a whole number of bytes")));
    }
    u64::try_from(bytes / den).map_err(|_| UnitError(format!("`{s}` is too large")))
}

/// Parses a size that must be absolute (a field that takes no multiple of memory, or the
/// memory size itself): `NxRAM` is refused as what it is, never as an unknown memory size.
pub fn parse_abs_size(s: &str) -> Result<u64, UnitError> {
    if is_ram_relative(s) {
        return Err(UnitError(format!(
            "`{s}` is a multiple of the machine's memory; this takes an absolute size, e.g. 24GiB"
        )));
    }
    parse_size(s, 0)
}

/// Parses a duration into nanoseconds: `2s`, `500ms`, `100us`, `1.5s`, `2m`, `1h`; a bare
/// number is seconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(UnitError(format!("`{s}` is negative; durations are positive")));
    }
    let (num, suffix) = split_number(t);
    let mult: u128 = match suffix {
        "" | "s" | "sec" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" | "µs" => 1_000,
        "ns" => 1,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => {
            return Err(UnitError(format!(
                "`{s}` has an unknown time unit `{suffix}` (use ns, us, ms, s, min, h)"
            )));
        }
    };
    let (n, den) = parse_decimal(num).ok_or_else(|| UnitError(format!("`{s}` is not a duration")))?;
    let ns = n.checked_mul(mult).ok_or_else(|| UnitError(format!("`{s}` is too long")))? / den;
    u64::try_from(ns).map_err(|_| UnitError(format!("`{s}` is too long")))
}

/// Formats a byte count with the largest binary unit that divides it exactly, or with two
/// decimals in the largest unit not above it: `4 KiB`, `1 GiB`, `1.50 MiB`, `100 B`.
pub fn fmt_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 5] =
        [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)];
    for (name, unit) in UNITS {
        if bytes >= unit {
            if bytes % unit == 0 {
                return format!("{} {name}", bytes / unit);
            }
            return format!("{:.2} {name}", bytes as f64 / unit as f64);
        }
    }
    "0 B".to_string()
}

/// Formats a size as the spec syntax accepts it (`4KiB`, `1GiB`, `1000`), for printing specs.
pub fn fmt_size_spec(bytes: u64) -> String {
    for (name, unit) in [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{name}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// The multiples of `unit` nearest to `n` (below it, when not 0, and above it), as the spec
/// writes sizes: `953MiB or 954MiB`.
pub fn nearest_multiples(n: u64, unit: u64) -> String {
    let below = n / unit.max(1) * unit;
    let mut v = vec![];
    if below > 0 {
        v.push(fmt_size_spec(below));
    }
    if let Some(above) = below.checked_add(unit).filter(|&a| a != n) {
        v.push(fmt_size_spec(above));
    }
    v.join(" or ")
}

/// The divisors of `n` nearest to `near` (the largest not above it and the smallest above
/// it), as the spec writes sizes: `64KiB or 128KiB`; empty when `n` is 0.
pub fn nearest_divisors(n: u64, near: u64) -> String {
    let (mut below, mut above) = (None::<u64>, None::<u64>);
    let mut i = 1u64;
    while i.saturating_mul(i) <= n {
        if n % i == 0 {
            for d in [i, n / i] {
                if d <= near {
                    below = below.max(Some(d));
                } else {
                    above = Some(above.map_or(d, |a| a.min(d)));
                }
            }
        }
        i += 1;
    }
    [below, above].into_iter().flatten().map(fmt_size_spec).collect::<Vec<_>>().join(" or ")
}

/// The largest round block size (a power of two from 512 bytes, or 1, 2 or 5 times a power of
/// ten from 1 kB) that divides `n` and is at most `most`.
pub fn round_divisor(n: u64, most: u64) -> Option<u64> {
    let binary = (9..63).map(|k| 1u64 << k);
    let decimal = (3..19).flat_map(|e| [1u64, 2, 5].map(|m| m * 10u64.pow(e)));
    binary.chain(decimal).filter(|&d| d <= most && n % d == 0).max()
}

/// A duration in seconds, to two significant figures, with `~`: `~40 s`, `~3.5 min`, `~12 h`.
pub fn fmt_about(seconds: f64) -> String {
    if seconds < 1.0 {
        return "< 1 s".into();
    }
    let (v, unit) = if seconds < 90.0 {
        (seconds, "s")
    } else if seconds < 90.0 * 60.0 {
        (seconds / 60.0, "min")
    } else if seconds < 72.0 * 3600.0 {
        (seconds / 3600.0, "h")
    } else {
        (seconds / 86400.0, "days")
    };
    let v = if v < 10.0 { (v * 10.0).round() / 10.0 } else { v.round() };
    let v = if v >= 10.0 { format!("{v:.0}") } else { format!("{v}") };
    format!("~{v} {unit}")
}

/// MB/s (10^6 B/s) from bytes per second.
pub fn mb_per_s(bytes_per_s: f64) -> f64 {
    bytes_per_s / 1e6
}

/// Formats a rate in MB/s with precision that suits its magnitude.
pub fn fmt_rate(bytes_per_s: f64) -> String {
    let v = mb_per_s(bytes_per_s);
    if !v.is_finite() {
        return "-".into();
    }
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Formats a rate of operations per second: whole numbers from 100 up, else 3 digits.
pub fn fmt_ops(ops_per_s: f64) -> String {
    if !ops_per_s.is_finite() {
        "-".into()
    } else if ops_per_s >= 100.0 {
        format!("{ops_per_s:.0}")
    } else if ops_per_s >= 10.0 {
        format!("{ops_per_s:.1}")
    } else {
        format!("{ops_per_s:.2}")
    }
}

/// What a rate counts, and so the unit every output states beside it: bytes (data phases,
/// shown in MB/s = 10^6 B/s) or ops (metadata phases: one op is one item, or one entry a find
/// stats; shown in ops/s). A figure's unit comes with the figure, never from its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateUnit {
    #[default]
    Bytes,
    Ops,
}

impl RateUnit {
    /// The unit of a phase's rates: ops for a metadata phase (`md`), else bytes.
    pub fn of(md: bool) -> RateUnit {
        if md { RateUnit::Ops } else { RateUnit::Bytes }
    }

    /// The unit as a column or an axis shows it: `MB/s`, `ops/s`.
    pub fn short(self) -> &'static str {
        match self {
            RateUnit::Bytes => "MB/s",
            RateUnit::Ops => "ops/s",
        }
    }

    /// The unit with what it means: `MB/s (10^6 B/s)`, `ops/s`.
    pub fn long(self) -> &'static str {
        match self {
            RateUnit::Bytes => "MB/s (10^6 B/s)",
            RateUnit::Ops => "ops/s",
        }
    }

    /// What is counted, as JSON field names end (`bytes`, `ops`).
    pub fn counted(self) -> &'static str {
        match self {
            RateUnit::Bytes => "bytes",
            RateUnit::Ops => "ops",
        }
    }

    /// A rate per second in this unit as shown: MB/s from bytes per second, ops/s as it is.
    pub fn shown(self, per_s: f64) -> f64 {
        match self {
            RateUnit::Bytes => mb_per_s(per_s),
            RateUnit::Ops => per_s,
        }
    }

    /// A rate per second formatted in this unit ([`fmt_rate`], [`fmt_ops`]), without the unit.
    pub fn fmt(self, per_s: f64) -> String {
        match self {
            RateUnit::Bytes => fmt_rate(per_s),
            RateUnit::Ops => fmt_ops(per_s),
        }
    }
}

/// Formats nanoseconds as a short human duration: `812 ns`, `4.1 us`, `12.3 ms`, `2.05 s`.
pub fn fmt_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", v / 1e6)
    } else {
        format!("{:.2} s", v / 1e9)
    }
}

/// A duration in the shortest exact form `parse_duration_ns` reads back (`2s`, `500ms`).
pub fn fmt_duration_spec(ns: u64) -> String {
    for (unit, per) in [
        ("h", 3_600_000_000_000u64),
        ("min", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1000),
    ] {
        if ns >= per && ns % per == 0 {
            return format!("{}{unit}", ns / per);
        }
    }
    if ns == 0 { "0s".into() } else { format!("{ns}ns") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_nearest_divisors_divide() {
        assert_eq!(nearest_divisors(1 << 20, 100_000), "64KiB or 128KiB");
        assert_eq!(nearest_divisors(1 << 20, 4096), "4KiB or 8KiB");
        assert_eq!(nearest_divisors(3 << 20, 3 << 20), "3MiB");
        assert_eq!(nearest_divisors(12, 100), "12");
        assert_eq!(nearest_divisors(0, 5), "");
    }

    #[test]
    fn the_nearest_sizes_are_whole_units() {
        assert_eq!(nearest_multiples(1_000_000_000, 1 << 20), "953MiB or 954MiB");
        assert_eq!(nearest_multiples(1000, 4096), "4KiB");
        assert_eq!(nearest_multiples(10 << 10, 3 << 10), "9KiB or 12KiB");
        assert_eq!(round_divisor(1_000_000_000, 1 << 20), Some(1_000_000));
        assert_eq!(round_divisor(10 << 10, 3 << 10), Some(2048));
        assert_eq!(round_divisor(1000, 1 << 20), Some(1000));
        assert_eq!(round_divisor(777, 1 << 20), None);
    }

    #[test]
    fn sizes_as_written() {
        let cases = [
            ("4096", 4096),
            ("4KiB", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4kB", 4000),
            ("4KB", 4000),
            ("1MiB", 1 << 20),
            ("1m", 1 << 20),
            ("1MB", 1_000_000),
            ("2GiB", 2 << 30),
            ("2g", 2 << 30),
            ("1GB", 1_000_000_000),
            ("1TiB", 1 << 40),
            ("0.5KiB", 512),
            ("1.5GiB", 3 << 29),
            (" 64 MiB ", 64 << 20),
            ("1_000", 1000),
        ];
        for (s, want) in cases {
            assert_eq!(parse_size(s, 0).unwrap(), want, "{s}");
        }
    }

    #[test]
    fn ram_relative() {
        assert_eq!(parse_size("2xRAM", 24 << 30).unwrap(), 48 << 30);
        assert_eq!(parse_size("0.5xRAM", 1000).unwrap(), 500);
        assert!(parse_size("2xRAM", 0).is_err());
        // Any memory size: a fraction of a byte is dropped, never an error.
        assert_eq!(parse_size("0.5xRAM", 1_000_000_007).unwrap(), 500_000_003);
        assert_eq!(parse_size("0.125xRAM", 25_276_510_208).unwrap(), 3_159_563_776);
        assert_eq!(parse_size("0.3xram", 7).unwrap(), 2);
        assert!(is_ram_relative(" 2xRAM") && !is_ram_relative("2GiB"));
        assert_eq!(ram_multiple("1.50xRAM"), Some((150, 100)));
        assert_eq!(fmt_ram_multiple(150, 100), "1.5xRAM");
        assert_eq!(fmt_ram_multiple(2, 1), "2xRAM");
        assert_eq!(fmt_ram_multiple(125, 1000), "0.125xRAM");
    }

    #[test]
    fn bad_sizes_are_named() {
        for s in ["", "-4k", "4q", "1.5", "0.3B", "k", "1..2", "99999999999TiB"] {
            let e = parse_size(s, 0).unwrap_err();
            assert!(e.0.contains('`'), "{s}: {}", e.0);
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns("2").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("100us").unwrap(), 100_000);
        assert_eq!(parse_duration_ns("2min").unwrap(), 120_000_000_000);
        assert!(parse_duration_ns("3 fortnights").is_err());
        assert!(parse_duration_ns("-1s").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_size(4096), "4 KiB");
        assert_eq!(fmt_size(3 << 29), "1.50 GiB");
        assert_eq!(fmt_size(100), "100 B");
        assert_eq!(fmt_size(0), "0 B");
        assert_eq!(fmt_size_spec(1 << 30), "1GiB");
        assert_eq!(fmt_size_spec(1000), "1000");
        assert_eq!(fmt_rate(312_400_000.0), "312");
        assert_eq!(fmt_rate(12_340_000.0), "12.3");
        assert_eq!(fmt_ns(4_100), "4.1 us");
    }

    proptest! {
        #[test]
        fn spec_format_round_trips(b in 1u64..(1u64 << 50)) {
            prop_assert_eq!(parse_size(&fmt_size_spec(b), 0).unwrap(), b);
        }

        #[test]
        fn never_panics(s in "\\PC{0,16}") {
            let _ = parse_size(&s, 1 << 30);
            let _ = parse_duration_ns(&s);
        }
    }

    #[test]
    fn durations_print_in_a_form_that_parses_back() {
        for ns in [0, 1, 1500, 2_000_000, 250_000_000, 2_000_000_000, 90_000_000_000, 3_600_000_000_000] {
            let s = fmt_duration_spec(ns);
            assert_eq!(parse_duration_ns(&s).unwrap(), ns, "{s}");
        }
        assert_eq!(fmt_duration_spec(2_000_000_000), "2s");
        assert_eq!(fmt_duration_spec(100_000_000), "100ms");
    }
}
