//! The command lines of IOR and mdtest as their own option parser reads them: short options
//! grouped (`-wrk`), a value after the letter (`-b4m`), after `=` (`-b=4m`) or as the next
//! word (`-b 4m`), long options (`--posix.odirect`, `--random-offset-seed=7`), a flag given
//! twice counted; numbers with their suffixes (`4k`, `2m`, `1g`: 1024-based). Every word is
//! either an option of the tool's table or refused by name.

use crate::error::{Error, Result};

/// One option of a tool: its letter and/or long name, whether it takes a value, its meaning.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    pub short: Option<char>,
    pub long: Option<&'static str>,
    pub value: bool,
    pub help: &'static str,
}

/// An option with a value.
pub const fn val(short: char, help: &'static str) -> Opt {
    Opt { short: Some(short), long: None, value: true, help }
}

/// A flag.
pub const fn flag(short: char, help: &'static str) -> Opt {
    Opt { short: Some(short), long: None, value: false, help }
}

/// A long option (`--name`), with a value or not.
pub const fn long(name: &'static str, value: bool, help: &'static str) -> Opt {
    Opt { short: None, long: Some(name), value, help }
}

impl Opt {
    /// How the option is written: `-b` or `--posix.odirect`.
    pub fn written(&self) -> String {
        match (self.short, self.long) {
            (Some(c), _) => format!("-{c}"),
            (None, Some(l)) => format!("--{l}"),
            (None, None) => String::new(),
        }
    }
}

/// One option as given: its table entry, its value (flags: none), and the words it was given
/// as (for messages and the `--print` comments).
#[derive(Debug, Clone)]
pub struct Given {
    pub opt: Opt,
    pub value: Option<String>,
    pub words: String,
}

impl Given {
    pub fn name(&self) -> String {
        self.opt.written()
    }
}

/// The words of a `tool` command line (`IOR`, `mdtest`) as options of `table`, in order. A
/// word that is no option of the table, or an option without its value, is refused naming it.
pub fn parse(tool: &str, table: &[Opt], words: &[String]) -> Result<Vec<Given>> {
    let field = format!("{} option", tool.to_lowercase());
    let mut out = vec![];
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if let Some(rest) = w.strip_prefix("--") {
            let (name, inline) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (rest, None),
            };
            let Some(o) = table.iter().find(|o| o.long == Some(name)) else {
                return Err(Error::spec(
                    &field,
                    w,
                    format!("not an option {tool} has that iolab knows ({})", hint(tool)),
                ));
            };
            let value = if o.value && inline.is_none() {
                let v = words.get(i).cloned().ok_or_else(|| Error::spec(&field, w, "needs a value"))?;
                i += 1;
                Some(v)
            } else {
                inline
            };
            let words = match (&value, w.contains('=')) {
                (Some(v), false) => format!("{w} {v}"),
                _ => w.clone(),
            };
            out.push(Given { opt: *o, value, words });
            continue;
        }
        let Some(letters) = w.strip_prefix('-').filter(|l| !l.is_empty()) else {
            return Err(Error::spec(
                &field,
                w,
                format!("not an option (options start with -; {})", hint(tool)),
            ));
        };
        let chars: Vec<char> = letters.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let Some(o) = table.iter().find(|o| o.short == Some(c)) else {
                return Err(Error::spec(
                    &field,
                    format!("-{c}"),
                    format!("not an option {tool} has that iolab knows ({})", hint(tool)),
                ));
            };
            if !o.value {
                // `-F=1` sets a flag to a number, as IOR's parser does.
                if chars.get(k + 1) == Some(&'=') {
                    let v: String = chars[k + 2..].iter().collect();
                    out.push(Given { opt: *o, value: Some(v), words: w.clone() });
                    break;
                }
                out.push(Given { opt: *o, value: None, words: format!("-{c}") });
                k += 1;
                continue;
            }
            let rest: String = chars[k + 1..].iter().collect();
            let (value, words_used) = if let Some(v) = rest.strip_prefix('=') {
                (v.to_string(), w.clone())
            } else if k == 0 && !rest.is_empty() {
                (rest, w.clone())
            } else {
                let v = words
                    .get(i)
                    .cloned()
                    .ok_or_else(|| Error::spec(&field, format!("-{c}"), "needs a value"))?;
                i += 1;
                (v.clone(), format!("-{c} {v}"))
            };
            out.push(Given { opt: *o, value: Some(value), words: words_used });
            break;
        }
    }
    Ok(out)
}

fn hint(tool: &str) -> String {
    format!("`iolab {} --help` lists them", tool.to_lowercase())
}

/// A number as IOR and mdtest read one: digits, then at most one of k, m, g, t, p (either
/// case, powers of 1024). Anything else is refused (their parser would read `1.5m` as 1).
pub fn number(field: &str, v: &str) -> Result<u64> {
    let t = v.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &t[digits.len()..];
    let n: u64 = digits.parse().map_err(|_| {
        Error::spec(field, v, "expected a whole number, with k, m, g, t or p (1024-based) if any")
    })?;
    let shift = match unit {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        "p" | "P" => 50,
        _ => {
            return Err(Error::spec(
                field,
                v,
                "expected a whole number, with k, m, g, t or p (1024-based) if any",
            ));
        }
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| Error::spec(field, v, "too large"))
}

/// The options' help as a table for `--help`: each option as written, then its meaning.
pub fn help_table(table: &[Opt]) -> String {
    table
        .iter()
        .map(|o| {
            let name = if o.value { format!("{} V", o.written()) } else { o.written() };
            format!("  {name:<24} {}\n", o.help)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[Opt] = &[
        val('b', "block"),
        val('t', "transfer"),
        flag('w', "write"),
        flag('r', "read"),
        flag('C', "reorder"),
        long("posix.odirect", false, "O_DIRECT"),
        long("random-offset-seed", true, "seed"),
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn shown(s: &str) -> Vec<(String, Option<String>)> {
        parse("IOR", T, &words(s)).unwrap().into_iter().map(|g| (g.name(), g.value)).collect()
    }

    #[test]
    fn values_come_after_the_letter_an_equals_sign_or_as_the_next_word() {
        let want = vec![("-b".to_string(), Some("4m".to_string()))];
        assert_eq!(shown("-b 4m"), want);
        assert_eq!(shown("-b4m"), want);
        assert_eq!(shown("-b=4m"), want);
        // A group of flags, then one with a value taking the next word.
        let g = shown("-wrCb 1m --posix.odirect --random-offset-seed=3 -C");
        let names: Vec<&str> = g.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["-w", "-r", "-C", "-b", "--posix.odirect", "--random-offset-seed", "-C"]);
        assert_eq!(g[3].1.as_deref(), Some("1m"));
        assert_eq!(g[5].1.as_deref(), Some("3"));
    }

    #[test]
    fn unknown_words_and_missing_values_are_refused_by_name() {
        let e = parse("IOR", T, &words("-w -q")).unwrap_err().to_string();
        assert!(e.starts_with("ior option = `-q`: not an option IOR has"), "{e}");
        let e = parse("IOR", T, &words("-w -t")).unwrap_err().to_string();
        assert!(e.contains("`-t`: needs a value"), "{e}");
        let e = parse("IOR", T, &words("stray")).unwrap_err().to_string();
        assert!(e.contains("`stray`: not an option"), "{e}");
        let e = parse("IOR", T, &words("--nope")).unwrap_err().to_string();
        assert!(e.contains("`--nope`"), "{e}");
    }

    #[test]
    fn numbers_take_iors_suffixes_and_nothing_else() {
        assert_eq!(number("b", "4k").unwrap(), 4096);
        assert_eq!(number("b", "2M").unwrap(), 2 << 20);
        assert_eq!(number("b", "47008").unwrap(), 47008);
        assert_eq!(number("b", "1g").unwrap(), 1 << 30);
        for bad in ["1.5m", "4KiB", "", "-1", "4x"] {
            assert!(number("b", bad).is_err(), "{bad}");
        }
    }
}
