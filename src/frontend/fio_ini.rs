//! fio's job-file dialect: `[global]` and job sections, `key=value` and bare options
//! (`time_based`), `;` and `#` comment lines, `include FILE`, `${VAR}` from the environment,
//! a later `[global]` changing the defaults of the jobs after it; and fio's numbers (sizes
//! with k/m/g/t/p, `KiB`, `kB` read by `kb_base`, times with their default unit). The INI
//! crates refuse bare options and repeated sections, so the dialect is read here.

use std::path::Path;

use crate::error::{Error, Result};

/// One option as written: its name, its value (none for a bare option) and where it was
/// (`FILE:LINE`).
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub at: String,
}

impl Opt {
    /// As written, for messages and the `--print` comments: `bs=4k`, `time_based`.
    pub fn written(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.key),
            None => self.key.clone(),
        }
    }
}

/// A job: its section name and its options, the `[global]` ones in force before its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub name: String,
    pub opts: Vec<Opt>,
    /// Where its section starts.
    pub at: String,
}

impl Job {
    /// The last option named `key` (its own over the global ones).
    pub fn get(&self, key: &str) -> Option<&Opt> {
        self.opts.iter().rev().find(|o| o.key == key)
    }
}

const FIELD: &str = "fio job file";

/// Reads a job file's text (`file` names it in messages; includes are found beside it), with
/// `env` for `${VAR}`. Returns its jobs in order.
pub fn parse(text: &str, file: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Job>> {
    let mut st = State { global: vec![], jobs: vec![], in_global: false };
    read(text, file, env, &mut st, 0)?;
    if st.jobs.is_empty() {
        return Err(Error::spec(FIELD, file.display(), "has no job section ([name] after [global])"));
    }
    Ok(st.jobs)
}

struct State {
    global: Vec<Opt>,
    jobs: Vec<Job>,
    in_global: bool,
}

fn read(
    text: &str,
    file: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    st: &mut State,
    depth: u32,
) -> Result<()> {
    for (n, raw) in text.lines().enumerate() {
        let at = format!("{}:{}", file.display(), n + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        let line =
            expand(line, env).map_err(|(var, why)| Error::spec(format!("{FIELD} ({at})"), var, why))?;
        if let Some(inc) = line.strip_prefix("include ") {
            if depth >= 8 {
                return Err(Error::spec(format!("{FIELD} ({at})"), inc, "includes nested more than 8 deep"));
            }
            let path = file.parent().unwrap_or(Path::new(".")).join(inc.trim());
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::spec(format!("{FIELD} ({at}) include"), path.display(), format!("cannot be read: {e}"))
            })?;
            read(&text, &path, env, st, depth + 1)?;
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| Error::spec(format!("{FIELD} ({at})"), &line, "a section is [NAME]"))?;
            st.in_global = name == "global";
            if !st.in_global {
                st.jobs.push(Job { name: name.to_string(), opts: st.global.clone(), at: at.clone() });
            }
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (line.clone(), None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(Error::spec(format!("{FIELD} ({at})"), &line, "expected OPTION=VALUE or OPTION"));
        }
        let opt = Opt { key, value, at };
        match st.jobs.last_mut() {
            Some(job) if !st.in_global => job.opts.push(opt),
            _ if st.in_global => st.global.push(opt),
            _ => {
                return Err(Error::spec(
                    format!("{FIELD} ({})", opt.at),
                    opt.written(),
                    "an option before any section ([global] or [JOB])",
                ));
            }
        }
    }
    Ok(())
}

/// `${VAR}` replaced by the environment's value; an unset one is refused.
fn expand(line: &str, env: &dyn Fn(&str) -> Option<String>) -> std::result::Result<String, (String, String)> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("${") {
        out += &rest[..i];
        let Some(j) = rest[i..].find('}') else {
            return Err((rest[i..].to_string(), "an unclosed ${".into()));
        };
        let var = &rest[i + 2..i + j];
        match env(var) {
            Some(v) => out += &v,
            None => return Err((format!("${{{var}}}"), "is not set in the environment".into())),
        }
        rest = &rest[i + j + 1..];
    }
    out += rest;
    Ok(out)
}

/// A size as fio reads one: digits (or 0x hex), then an optional unit k, m, g, t, p with an
/// optional `b` or `ib` (any case). With `kb_base` 1000 `k` and `kB` are 1000 and `KiB` 1024; with
/// fio's default 1024 (its compatibility mode) `k` and `kB` are 1024 and `KiB` is 1000 (fio
/// makes a 4000-byte file of `size=4KiB`). Fractions and percentages are refused.
pub fn size(field: &str, v: &str, kb_base: u64) -> Result<u64> {
    let t = v.trim();
    let bad = || {
        Error::spec(field, v, "expected a whole number of bytes with k, m, g, t or p (fio's suffixes) if any")
    };
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| bad());
    }
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = t[digits.len()..].to_ascii_lowercase();
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let (letter, tail) = unit.split_at(unit.len().min(1));
    let power = match letter {
        "" | "b" if tail.is_empty() => return Ok(n),
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return Err(bad()),
    };
    let base: u64 = match tail {
        // fio's compatibility mode (kb_base=1024) reads the IEC units as powers of 1000.
        "ib" if kb_base == 1024 => 1000,
        "ib" => 1024,
        "" | "b" => kb_base,
        _ => return Err(bad()),
    };
    n.checked_mul(base.pow(power)).ok_or_else(|| Error::spec(field, v, "too large"))
}

/// A time as fio reads one, in nanoseconds: digits, then a unit (us/usec, ms/msec, s/sec,
/// m/min, h, d) or none, when `default_ns` (the option's own unit) applies.
pub fn time_ns(field: &str, v: &str, default_ns: u64) -> Result<u64> {
    let t = v.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: u64 = digits
        .parse()
        .map_err(|_| Error::spec(field, v, "expected a whole number with us, ms, s, m, h or d if any"))?;
    let unit: u64 = match t[digits.len()..].to_ascii_lowercase().as_str() {
        "" => default_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(Error::spec(field, v, "expected a unit of us, ms, s, m, h or d")),
    };
    n.checked_mul(unit).ok_or_else(|| Error::spec(field, v, "too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(text: &str) -> Result<Vec<Job>> {
        let env = |k: &str| (k == "SIZE").then(|| "8m".to_string());
        parse(text, Path::new("t.fio"), &env)
    }

    #[test]
    fn sections_bare_options_comments_and_globals_in_force() {
        let j = jobs(
            "; a comment\n[global]\nbs=4k\n# another\ntime_based\n[a]\nrw = read\n\n[global]\nbs=8k\n[b]\nsize=${SIZE}\n",
        )
        .unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j[0].name, "a");
        assert_eq!(j[0].get("bs").unwrap().value.as_deref(), Some("4k"));
        assert_eq!(j[0].get("time_based").unwrap().value, None);
        assert_eq!(j[0].get("rw").unwrap().written(), "rw=read");
        assert_eq!(j[0].get("rw").unwrap().at, "t.fio:7");
        // The later [global] is in force for b only.
        assert_eq!(j[1].get("bs").unwrap().value.as_deref(), Some("8k"));
        assert_eq!(j[1].get("size").unwrap().value.as_deref(), Some("8m"));
    }

    #[test]
    fn bad_files_are_refused_by_line() {
        let e = jobs("[a]\nsize=${NOPE}\n").unwrap_err().to_string();
        assert!(e.contains("t.fio:2") && e.contains("${NOPE}") && e.contains("not set"), "{e}");
        let e = jobs("bs=4k\n[a]\n").unwrap_err().to_string();
        assert!(e.contains("before any section"), "{e}");
        let e = jobs("[global]\nbs=4k\n").unwrap_err().to_string();
        assert!(e.contains("no job section"), "{e}");
        let e = jobs("[a\n").unwrap_err().to_string();
        assert!(e.contains("[NAME]"), "{e}");
        let e = jobs("[a]\ninclude nope.fio\n").unwrap_err().to_string();
        assert!(e.contains("nope.fio") && e.contains("cannot be read"), "{e}");
    }

    #[test]
    fn fio_numbers_take_its_suffixes_and_kb_base() {
        assert_eq!(size("bs", "4k", 1024).unwrap(), 4096);
        assert_eq!(size("bs", "4K", 1000).unwrap(), 4000);
        assert_eq!(size("bs", "4KiB", 1000).unwrap(), 4096);
        assert_eq!(size("size", "4KiB", 1024).unwrap(), 4000, "fio's default kb_base: KiB is 1000");
        assert_eq!(size("size", "2MiB", 1024).unwrap(), 2_000_000);
        assert_eq!(size("bs", "4kb", 1024).unwrap(), 4096);
        assert_eq!(size("bs", "1m", 1024).unwrap(), 1 << 20);
        assert_eq!(size("bs", "2g", 1024).unwrap(), 2 << 30);
        assert_eq!(size("bs", "512", 1024).unwrap(), 512);
        assert_eq!(size("bs", "0x1000", 1024).unwrap(), 4096);
        for bad in ["1.5m", "50%", "4x", "", "4kx"] {
            assert!(size("bs", bad, 1024).is_err(), "{bad}");
        }
        assert_eq!(time_ns("runtime", "30", 1_000_000_000).unwrap(), 30_000_000_000);
        assert_eq!(time_ns("runtime", "2m", 1_000_000_000).unwrap(), 120_000_000_000);
        assert_eq!(time_ns("thinktime", "100", 1_000).unwrap(), 100_000);
        assert_eq!(time_ns("thinktime", "5ms", 1_000).unwrap(), 5_000_000);
        assert!(time_ns("runtime", "3x", 1).is_err());
    }
}
