//! The command lines of IOR and mdtest as their own option parser reads them: short options
//! grouped (`-wrk`), a value after the letter (`-b4m`), after `=` (`-b=4m`) or as the next
//! word (`-b 4m`), every later letter of the word an option given that value too (`-t1k` is
//! also `-k`, as IOR's option.c reads it), long options (`--posix.odirect`,
//! `--random-offset-seed=7`), a flag given twice counted; numbers with their suffixes (`4k`,
//! `2m`, `1g`: 1024-based). Every word is either an option of the tool's table or refused by
//! name.

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

/// An option with both a letter and a long name (`-c`, `--collective`), with a value or not.
pub const fn both(short: char, name: &'static str, value: bool, help: &'static str) -> Opt {
    Opt { short: Some(short), long: Some(name), value, help }
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
    /// A letter inside another option's value (`k` of `-t1k`), read as an option too.
    pub in_value: bool,
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
            out.push(Given { opt: *o, value, words, in_value: false });
            continue;
        }
        let Some(letters) = w.strip_prefix('-').filter(|l| !l.is_empty()) else {
            return Err(Error::spec(
                &field,
                w,
                format!("not an option (options start with -; {})", hint(tool)),
            ));
        };
        // As their parser reads a word: `=` ends the letters and gives them all its value;
        // every letter is an option, and once one has taken a value (the rest of the word
        // after a first letter, or the next word), every later letter is an option given the
        // same value: `-t1k` is -t 1k and -k 1k (keepFile on), the digits no option.
        let (letters, mut arg, eq) = match letters.split_once('=') {
            Some((l, v)) => (l, Some(v.to_string()).filter(|v| !v.is_empty()), true),
            None => (letters, None, false),
        };
        let chars: Vec<char> = letters.chars().collect();
        let mut value_from: Option<usize> = None;
        for (k, &c) in chars.iter().enumerate() {
            let in_value = value_from.is_some_and(|v| k >= v);
            let Some(o) = table.iter().find(|o| o.short == Some(c)) else {
                if in_value {
                    continue;
                }
                return Err(Error::spec(
                    &field,
                    format!("-{c}"),
                    format!("not an option {tool} has that iolab knows ({})", hint(tool)),
                ));
            };
            if o.value && arg.is_none() {
                if eq {
                    return Err(Error::spec(&field, w, "needs a value"));
                }
                if k == 0 && chars.len() > 1 {
                    arg = Some(chars[1..].iter().collect());
                    value_from = Some(1);
                } else {
                    let v = words
                        .get(i)
                        .cloned()
                        .ok_or_else(|| Error::spec(&field, format!("-{c}"), "needs a value"))?;
                    i += 1;
                    arg = Some(v);
                }
            }
            let words = if in_value {
                format!("-{c} (the {c} of {w}: {tool} reads every letter of a word as an option)")
            } else if o.value && value_from.is_none() && !eq {
                format!("-{c} {}", arg.as_deref().unwrap_or_default())
            } else if arg.is_some() {
                w.clone()
            } else {
                format!("-{c}")
            };
            out.push(Given { opt: *o, value: arg.clone(), words, in_value });
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
        both('c', "collective", false, "collective"),
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
        // An option with a letter and a long name, either way: named by its letter.
        assert_eq!(shown("--collective -c"), [("-c".to_string(), None), ("-c".to_string(), None)]);
    }

    #[test]
    fn letters_after_a_value_are_options_given_that_value_as_iors_parser_reads_them() {
        // IOR's option.c: -t1k is -t 1k and -k (its variable set to atoi("1k") = 1); digits,
        // and letters that are no option, are skipped; an option after a value takes it too.
        let t: &[Opt] = &[val('t', "transfer"), val('b', "block"), flag('k', "keep"), flag('w', "write")];
        let g = parse("IOR", t, &words("-t1k")).unwrap();
        let got: Vec<(String, Option<&str>, bool)> =
            g.iter().map(|g| (g.name(), g.value.as_deref(), g.in_value)).collect();
        assert_eq!(got, [("-t".into(), Some("1k"), false), ("-k".into(), Some("1k"), true)]);
        assert!(g[1].words.contains("the k of -t1k"), "{}", g[1].words);
        let g = parse("IOR", t, &words("-b4p")).unwrap();
        assert_eq!(g.len(), 1, "p is no option: skipped inside the value");
        // -b1t: the t of the value is -t, given the same value.
        let g = parse("IOR", t, &words("-b1t")).unwrap();
        assert_eq!((g[1].name(), g[1].value.as_deref()), ("-t".into(), Some("1t")));
        // A value taken from the next word goes to every later letter too.
        let g = parse("IOR", t, &words("-wbk 4m -w")).unwrap();
        let got: Vec<(String, Option<&str>)> = g.iter().map(|g| (g.name(), g.value.as_deref())).collect();
        let want: Vec<(String, Option<&str>)> = vec![
            ("-w".into(), None),
            ("-b".into(), Some("4m")),
            ("-k".into(), Some("4m")),
            ("-w".into(), None),
        ];
        assert_eq!(got, want);
        // `=` gives its value to every letter before it; an empty one is no value.
        let g = parse("IOR", t, &words("-wk=0")).unwrap();
        assert!(g.iter().all(|g| g.value.as_deref() == Some("0")));
        assert!(parse("IOR", t, &words("-b=")).unwrap_err().to_string().contains("needs a value"));
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
