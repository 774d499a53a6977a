//! Front ends: the jobs users already have in other tools' languages (fio job files, IOR and
//! mdtest command lines, io500's ini files), each read by a parser of its own and translated into the one
//! experiment `iolab run` resolves (its parameters, and a sweep where the job has several
//! parts), with the options each parameter came from; what iolab cannot honour is refused by
//! name (exit 2), with the nearest iolab option where there is one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::experiment::{Experiment, PARAMS};

pub mod args;
pub mod fio;
pub mod fio_ini;
mod fio_job;
pub mod io500_ini;

pub mod ior;
mod ior_opts;
pub mod mdtest;

/// A job translated: the experiment, where each parameter came from, and what the translation
/// says about the differences.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The tool whose job this was (`IOR`, `mdtest`, `io500`).
    pub tool: &'static str,
    pub experiment: Experiment,
    /// Per parameter key, the tool's options it came from (`-b 4m -s 2`), or `default` for a
    /// value the tool takes when its option is left out.
    pub origins: BTreeMap<String, String>,
    /// What differs from the tool, or what was not obvious, one sentence each.
    pub notes: Vec<String>,
}

impl Translation {
    pub fn new(tool: &'static str) -> Translation {
        Translation { tool, experiment: Experiment::default(), origins: BTreeMap::new(), notes: vec![] }
    }

    /// Sets parameter `key` to `value`, from the tool's `from`.
    pub fn set(&mut self, key: &str, value: impl ToString, from: &str) -> Result<()> {
        self.set_list(key, vec![value.to_string()], from)
    }

    /// Sets a list parameter (`ops`, `dirs`).
    pub fn set_list(&mut self, key: &str, values: Vec<String>, from: &str) -> Result<()> {
        self.experiment.params.set(key, values)?;
        self.origins.insert(key.to_string(), from.to_string());
        Ok(())
    }

    pub fn note(&mut self, s: impl Into<String>) {
        self.notes.push(s.into());
    }

    /// The experiment file, each line commented with the options it came from, so that a user
    /// can keep and edit it (`iolab run FILE.toml`).
    pub fn toml(&self) -> String {
        let q = |s: &str| {
            let bare = (!s.is_empty() && s.len() < 19 && s.chars().all(|c| c.is_ascii_digit()))
                || s == "true"
                || s == "false";
            if bare { s.to_string() } else { toml::Value::String(s.to_string()).to_string() }
        };
        let mut out =
            format!("# {}'s job, translated by iolab; run it with: iolab run THIS_FILE.toml\n", self.tool);
        for n in &self.notes {
            for line in crate::text::wrap(&format!("note: {n}"), 94, "", 2).lines() {
                out += &format!("# {line}\n");
            }
        }
        out.push('\n');
        let params = &self.experiment.params.0;
        let lines: Vec<(String, &str)> = PARAMS
            .iter()
            .filter_map(|def| {
                let values = params.get(def.key)?;
                let v = if def.list {
                    format!("[{}]", values.iter().map(|v| q(v)).collect::<Vec<_>>().join(", "))
                } else {
                    q(&values[0])
                };
                Some((format!("{} = {v}", def.key), self.origins.get(def.key).map_or("", String::as_str)))
            })
            .collect();
        let width = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0).min(48);
        for (line, from) in lines {
            if from.is_empty() {
                out += &format!("{line}\n");
            } else {
                out += &format!("{line:<width$}  # {from}\n");
            }
        }
        let sweep = &self.experiment.sweep;
        if !sweep.axes.is_empty() {
            out += "\n[sweep]\n";
            for a in &sweep.axes {
                let items: Vec<String> = a.values.iter().map(|v| q(v)).collect();
                let from = self.origins.get(&format!("sweep {}", a.key));
                let line = format!("{} = [{}]", a.key, items.join(", "));
                out += &match from {
                    Some(f) => format!("{line}  # {f}\n"),
                    None => format!("{line}\n"),
                };
            }
            if !sweep.zip.is_empty() {
                let groups: Vec<String> = sweep
                    .zip
                    .iter()
                    .map(|g| format!("[{}]", g.iter().map(|k| q(k)).collect::<Vec<_>>().join(", ")))
                    .collect();
                out += &format!("zip = [{}]\n", groups.join(", "));
            }
        }
        if let Some(p) = &self.experiment.preset {
            let e = &self.experiment;
            out += &format!(
                "\n[preset]\nid = {}\nstudy = {}\ntitle = {}\nheadline = {}\nfigure = {}\nscale = {}\n",
                q(&p.id),
                q(&p.study),
                q(&p.title),
                q(e.headline.name()),
                q(e.figure.name()),
                q(&p.scale)
            );
        }
        out
    }
}

/// The options iolab takes beside the tool's own, on the same command line: where results
/// go and how they are printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Own {
    pub json: bool,
    pub csv: bool,
    pub db: Option<PathBuf>,
    pub no_store: bool,
    pub quiet: bool,
    /// `--format NAME`: table (iolab's), json, csv, or the tool's own (`ior`, `mdtest`).
    pub format: Option<String>,
    /// Print the translation (the experiment file) instead of running it.
    pub print: bool,
    /// `--set KEY=VALUE`: any iolab parameter over the translation.
    pub set: Vec<String>,
    pub help: bool,
}

/// iolab's own options, long ones only (`--json`, `--db PATH`, ...), taken out of a tool's
/// command line; the rest is the tool's. `-h` is help, as for IOR and mdtest.
pub fn split_own(words: &[String]) -> Result<(Vec<String>, Own)> {
    let mut own = Own::default();
    let mut rest = vec![];
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (w, None),
        };
        let value = |i: &mut usize| -> Result<String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            let v = words.get(*i).cloned().ok_or_else(|| Error::spec(name, "", "needs a value"))?;
            *i += 1;
            Ok(v)
        };
        match name {
            "--json" => own.json = true,
            "--csv" => own.csv = true,
            "--no-store" => own.no_store = true,
            "--quiet" => own.quiet = true,
            "--print" => own.print = true,
            "-h" | "--help" => own.help = true,
            "--db" => own.db = Some(PathBuf::from(value(&mut i)?)),
            "--format" => own.format = Some(value(&mut i)?),
            "--set" => own.set.push(value(&mut i)?),
            _ => rest.push(words[i - 1].clone()),
        }
    }
    if own.json && own.csv {
        return Err(Error::spec("--json", "", "give --json or --csv, not both"));
    }
    if own.db.is_some() && own.no_store {
        return Err(Error::spec("--db", "", "give --db or --no-store, not both"));
    }
    Ok((rest, own))
}

/// The help of iolab's own options on a tool's command line.
pub const OWN_HELP: &str = "iolab's own options (beside the tool's):
  --format F           table (iolab's, the default) | json | csv | ior | mdtest (shaped like the tool's)
  --json, --csv        iolab's JSON or CSV
  --print              print the translated experiment file (each line commented by the option
                       it came from) and run nothing
  --set KEY=VALUE      any iolab parameter over the translation (repeatable), e.g. cache=cold
  --db PATH            results store; --no-store: do not store; --quiet: no progress
";

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn own_options_are_taken_out_and_the_rest_kept_in_order() {
        let (rest, own) =
            split_own(&w("-b 4m --json --db /tmp/x.db -F --set cache=cold --format=ior")).unwrap();
        assert_eq!(rest, w("-b 4m -F"));
        assert!(own.json);
        assert_eq!(own.db, Some(PathBuf::from("/tmp/x.db")));
        assert_eq!(own.set, ["cache=cold"]);
        assert_eq!(own.format.as_deref(), Some("ior"));
        assert!(split_own(&w("--json --csv")).is_err());
        assert!(split_own(&w("--db")).is_err());
    }

    #[test]
    fn the_printed_file_comments_each_line_with_its_origin() {
        let mut t = Translation::new("IOR");
        t.set("bs", "256KiB", "-t 256k").unwrap();
        t.set_list("ops", vec!["write".into(), "read".into()], "-w -r").unwrap();
        t.note("something differs");
        let text = t.toml();
        assert!(text.contains("bs = \"256KiB\""), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("ops = [\"write\", \"read\"]") && l.ends_with("# -w -r")),
            "{text}"
        );
        assert!(text.contains("# note: something differs"), "{text}");
        // What it prints reads back as the same parameters.
        let p = crate::experiment::Params::from_toml(&text).unwrap();
        assert_eq!(p, t.experiment.params);
    }
}
