//! An experiment: base parameters, sweep axes and preset metadata become the list of points to
//! run. Each point is the base parameters overlaid with its axis values (variables substituted)
//! and resolved by [`crate::experiment::resolve`], so every point is validated before any I/O and an
//! error names the point's axis values.

use std::path::Path;

use serde::Deserialize;

mod bound;
mod cache_view;
pub mod estimate;
mod file;
mod ids;
mod layout;
mod md_run;
mod memory;
pub mod metadata;
mod params;
mod phases;
pub mod preset;
pub mod progress;
mod range;
mod ranks;
mod repetition;
mod resolve;
pub mod run;
#[cfg(test)]
mod run_tests;
pub mod schedule;
mod servers;
mod sizes;
pub mod strategy;
pub mod sweep;
pub mod tune;
mod workload;

pub use crate::results::{Design, Headline, PresetRef, Rate};
pub use params::{Flag, FlagKind, PARAMS, ParamDef, Params, markdown_table};
pub use resolve::{ResolveEnv, resolve, resolve_noted};

use crate::error::{Error, Result};
use crate::experiment::run::Point;
use crate::spec::Spec;
use sweep::{Assignment, Sweep};

/// An experiment before resolution.
#[derive(Debug, Clone, Default)]
pub struct Experiment {
    pub params: Params,
    pub sweep: Sweep,
    pub headline: Headline,
    /// The rate the headline summarises (agg unless a preset says otherwise).
    pub figure: Rate,
    pub preset: Option<PresetRef>,
}

/// An experiment ready to run: every point resolved.
#[derive(Debug, Clone)]
pub struct Built {
    /// The first point's spec (the experiment's `spec` in the JSON).
    pub base: Spec,
    pub points: Vec<Point>,
    pub design: Design,
    /// What resolution changed in the values given, once each (a size relative to memory
    /// rounded down to whole blocks), for the plan and the preset list.
    pub notes: Vec<String>,
}

/// `[preset]` keys an experiment file may carry (the rest is preset-only metadata).
#[derive(Debug, Default, Deserialize)]
struct FileMeta {
    id: Option<String>,
    study: Option<String>,
    title: Option<String>,
    headline: Option<String>,
    figure: Option<String>,
    scale: Option<String>,
}

/// What an experiment file's `[sweep]` and `[preset]` tables say.
#[derive(Debug, Default)]
pub struct FileTables {
    pub sweep: Sweep,
    pub headline: Headline,
    pub figure: Rate,
    pub preset: Option<PresetRef>,
}

/// Reads the `[sweep]` and `[preset]` tables of an experiment file.
pub fn file_tables(text: &str, ram_bytes: u64) -> Result<FileTables> {
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| Error::spec("spec file", "TOML", e.message().to_string()))?;
    let sweep = match doc.get("sweep") {
        Some(toml::Value::Table(t)) => {
            sweep::from_toml(t, &sweep::toml_key_order(text, &["sweep"]), ram_bytes)?
        }
        Some(other) => return Err(Error::spec("sweep", other, "expected a table ([sweep])")),
        None => Sweep::default(),
    };
    let (headline, figure, preset) = match doc.get("preset") {
        Some(v) => {
            let meta: FileMeta = v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| Error::spec("preset", "", e.message().to_string()))?;
            let headline = match meta.headline.as_deref() {
                None => Headline::Mean,
                Some(h) => Headline::parse(h).ok_or_else(|| {
                    Error::spec("preset.headline", h, format!("one of: {}", Headline::NAMES.join(", ")))
                })?,
            };
            let figure = match meta.figure.as_deref() {
                None => Rate::Agg,
                Some(f) => Rate::parse(f).ok_or_else(|| {
                    Error::spec("preset.figure", f, format!("one of: {}", Rate::NAMES.join(", ")))
                })?,
            };
            let preset = meta.id.map(|id| PresetRef {
                id,
                study: meta.study.unwrap_or_default(),
                title: meta.title.unwrap_or_default(),
                scale: meta.scale.unwrap_or_default(),
            });
            (headline, figure, preset)
        }
        None => (Headline::Mean, Rate::Agg, None),
    };
    Ok(FileTables { sweep, headline, figure, preset })
}

impl Experiment {
    /// The experiment a command line describes: the experiment file (its parameters,
    /// `[sweep]` and `[preset]`; its stem names it unless it has a `name`), then the
    /// parameters the flags set over it (in a file with a `[preset]` id, fewer `--dir`s than
    /// its `dirs` are reused in turn), the `--sweep` axes (replacing the file's axes of the
    /// same key) and the `--zip` groups.
    pub fn from_command_line(
        file: Option<&Path>,
        flags: &Params,
        sweeps: &[String],
        zips: &[String],
        ram_bytes: u64,
    ) -> Result<Experiment> {
        let (mut params, FileTables { mut sweep, headline, figure, preset }) = match file {
            Some(path) => {
                let text = crate::env::input::read_spec_file(path)?;
                let at = |e| file::located(path, &text, e);
                let mut params = Params::from_toml(&text).map_err(at)?;
                if !params.0.contains_key("name")
                    && let Some(stem) = path.file_stem()
                {
                    params.set_one("name", stem.to_string_lossy())?;
                }
                (params, file_tables(&text, ram_bytes).map_err(at)?)
            }
            None => Default::default(),
        };
        let file_dirs = params.0.get("dirs").map_or(0, |d| d.len());
        params.overlay(flags);
        // A printed preset takes `--dir` as `reproduce` does: fewer directories than its
        // targets are reused in turn.
        if preset.is_some()
            && let Some(given) = flags.0.get("dirs").filter(|g| !g.is_empty() && g.len() < file_dirs)
        {
            params.set("dirs", given.iter().cycle().take(file_dirs).cloned().collect())?;
        }
        let mut given = Sweep::default();
        for arg in sweeps {
            given.add(sweep::parse_arg(arg, ram_bytes)?)?;
        }
        for axis in given.axes {
            sweep.push(axis);
        }
        for z in zips {
            sweep.zip.push(sweep::parse_zip(z));
        }
        let exp = Experiment { params, sweep, headline, figure, preset };
        exp.not_swept(flags, "`--sweep KEY=...` or the file's [sweep]")?;
        Ok(exp)
    }

    /// Values given for the experiment as a whole (flags, `--set`) that a sweep axis sets at
    /// every point would never be used: refused, naming the value and the axis. `change` says
    /// where the axis can be changed instead.
    pub fn not_swept(&self, given: &Params, change: &str) -> Result<()> {
        for (k, v) in &given.0 {
            if let Some(a) = self.sweep.axes.iter().find(|a| a.key == *k) {
                return Err(Error::spec(
                    k,
                    v.join(","),
                    format!(
                        "the sweep sets {k} at every point ({k} = {}), so this value would never be used; change the axis instead ({})",
                        a.text,
                        change.replace("KEY", k)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Sets `KEY=VALUE` over the experiment's parameters (`--set`), refused when a sweep axis
    /// sets that key at every point.
    pub fn set_kv(&mut self, kv: &str, change: &str) -> Result<()> {
        let mut one = Params::default();
        one.set_kv(kv)?;
        self.not_swept(&one, change)?;
        self.params.overlay(&one);
        Ok(())
    }

    /// Expands the sweep and resolves every point.
    pub fn build(&self, env: &ResolveEnv) -> Result<Built> {
        let assignments = self.sweep.points()?;
        for axis in self.sweep.axes.iter().filter(|a| !sweep::is_param(&a.key)) {
            let mark = format!("{{{}}}", axis.key);
            let in_params = self.params.0.values().flatten().any(|v| v.contains(&mark));
            let in_axes = self.sweep.axes.iter().flat_map(|a| &a.values).any(|v| v.contains(&mark));
            if !in_params && !in_axes {
                return Err(Error::spec(
                    format!("sweep {}", axis.key),
                    &axis.text,
                    format!(
                        "`{}` is not a parameter of this build, and no value uses it as {mark}",
                        axis.key
                    ),
                ));
            }
        }
        let mut points = Vec::with_capacity(assignments.len());
        let mut notes: Vec<String> = vec![];
        for a in &assignments {
            // Up to 100,000 points: a stop asked for now ends the experiment before it starts.
            crate::env::signals::check()?;
            let (spec, n) = self.resolve_point(a, env).map_err(|e| at_point(e, a))?;
            notes.extend(n.into_iter().filter(|n| !notes.contains(n)).collect::<Vec<_>>());
            points.push(Point { params: a.iter().cloned().collect(), spec });
        }
        schedule::check_size(points.iter().map(|p| (p.spec.reps, p.spec.warmup, p.spec.phases.len())))?;
        let used: Vec<(Params, &Spec)> = assignments
            .iter()
            .zip(&points)
            .map(|(a, p)| Ok((self.params_of(a)?, &p.spec)))
            .collect::<Result<_>>()?;
        metadata::check_used(&used, env)?;
        bound::check_used(&points.iter().map(|p| &p.spec).collect::<Vec<_>>())?;
        let mut base = points[0].spec.clone();
        // The experiment's name speaks of every point: a name made from an axis (`IO500
        // {workload}`) names all of the axis's values, not the first point's.
        if let Some(name) = self.params.one("name").filter(|n| sweep::placeholder(n).is_some()) {
            let vars: Vec<(String, String)> = self
                .sweep
                .axes
                .iter()
                .map(|a| {
                    let mut vs: Vec<&str> = vec![];
                    for v in &a.values {
                        if !vs.contains(&v.as_str()) {
                            vs.push(v);
                        }
                    }
                    let text = match vs.as_slice() {
                        [a, .., b] if vs.len() > 4 => format!("{a}..{b}"),
                        _ => vs.join(", "),
                    };
                    (a.key.clone(), text)
                })
                .collect();
            base.name = sweep::substitute(name, &vars);
        }
        let design = Design {
            axes: self.sweep.axes.clone(),
            zip: self.sweep.zip.clone(),
            headline: self.headline,
            figure: self.figure,
            preset: self.preset.clone(),
        };
        Ok(Built { base, points, design, notes })
    }

    /// Every point's parameters before resolution (variables substituted), in sweep order.
    pub fn point_params(&self) -> Result<Vec<Params>> {
        self.sweep.points()?.iter().map(|a| self.params_of(a)).collect()
    }

    fn resolve_point(&self, a: &Assignment, env: &ResolveEnv) -> Result<(Spec, Vec<String>)> {
        resolve_noted(&self.params_of(a)?, env)
    }

    /// The parameters of the point `a` assigns.
    fn params_of(&self, a: &Assignment) -> Result<Params> {
        let vars: Vec<(String, String)> = a.iter().filter(|(k, _)| !sweep::is_param(k)).cloned().collect();
        let mut p = self.params.clone();
        for values in p.0.values_mut() {
            for v in values.iter_mut() {
                *v = sweep::substitute(v, &vars);
            }
        }
        for (k, v) in a.iter().filter(|(k, _)| sweep::is_param(k)) {
            let v = sweep::substitute(v, &vars);
            let list = PARAMS.iter().any(|d| d.key == k && d.list);
            p.set(k, if list { v.split(',').map(|s| s.trim().to_string()).collect() } else { vec![v] })?;
        }
        for (k, values) in &p.0 {
            for v in values {
                if let Some(name) = sweep::placeholder(v) {
                    return Err(Error::spec(k, v, format!("`{{{name}}}` names no sweep axis")));
                }
            }
        }
        Ok(p)
    }
}

/// Adds the point's axis values to a spec error, so it names the axis.
fn at_point(e: Error, a: &Assignment) -> Error {
    if a.is_empty() {
        return e;
    }
    let desc: Vec<String> = a.iter().map(|(k, v)| format!("{k}={v}")).collect();
    match e {
        Error::Spec { field, value, reason } => {
            Error::Spec { field: format!("{field} (at sweep point {})", desc.join(" ")), value, reason }
        }
        other => other,
    }
}

/// Helpers for tests that resolve specs.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Params, ResolveEnv};

    /// A machine with 1 GiB of RAM whose current directory is the temporary directory.
    pub fn env() -> ResolveEnv {
        ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }
    }

    /// Parameters from `(key, values)` pairs, the values split at `sep`.
    pub fn params(pairs: &[(&str, &str)], sep: char) -> Params {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.set(k, v.split(sep).map(String::from).collect()).unwrap();
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> ResolveEnv {
        ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }
    }

    fn exp(params: &[(&str, &str)], axes: &[&str], zip: &[&str]) -> Experiment {
        let mut e = Experiment::default();
        for (k, v) in params {
            e.params.set(k, v.split(';').map(String::from).collect()).unwrap();
        }
        for a in axes {
            e.sweep.push(sweep::parse_arg(a, 1 << 30).unwrap());
        }
        e.sweep.zip = zip.iter().map(|z| sweep::parse_zip(z)).collect();
        e
    }

    #[test]
    fn points_overlay_the_base_and_resolve() {
        let b = exp(&[("size", "64KiB"), ("reps", "2")], &["bs=4KiB,16KiB", "workers=1..2"], &[])
            .build(&env())
            .unwrap();
        assert_eq!(b.points.len(), 4);
        let got: Vec<(u64, u32, u64)> =
            b.points.iter().map(|p| (p.spec.bs_bytes, p.spec.workers, p.spec.size_bytes)).collect();
        assert_eq!(got, [(4096, 1, 65536), (4096, 2, 65536), (16384, 1, 65536), (16384, 2, 65536)]);
        assert_eq!(b.points[3].params["bs"], "16KiB");
        assert_eq!(b.base, b.points[0].spec);
        assert_eq!(b.design.axes.len(), 2);
    }

    #[test]
    fn variables_fill_placeholders() {
        let b =
            exp(&[("ops", "write,read:{mode}"), ("size", "64KiB"), ("bs", "4KiB")], &["mode=cold,warm"], &[])
                .build(&env())
                .unwrap();
        assert_eq!(b.points[0].spec.phases[1].name, "read:cold");
        assert_eq!(b.points[1].spec.phases[1].name, "read:warm");
        assert_eq!(b.points[1].params["mode"], "warm");
    }

    #[test]
    fn errors_name_the_point() {
        let e = exp(&[("size", "16KiB")], &["bs=4KiB,3KiB"], &[]).build(&env()).unwrap_err();
        match e {
            Error::Spec { field, .. } => assert_eq!(field, "size (at sweep point bs=3KiB)"),
            other => panic!("{other:?}"),
        }
        let e = exp(&[], &["k=1,2"], &[]).build(&env()).unwrap_err();
        assert!(matches!(e, Error::Spec { ref field, .. } if field == "sweep k"), "{e:?}");
        let e = exp(&[("ops", "write:{k}")], &[], &[]).build(&env()).unwrap_err();
        assert!(
            matches!(e, Error::Spec { ref field, ref reason, .. } if field == "ops" && reason.contains("{k}")),
            "{e:?}"
        );
    }

    #[test]
    fn list_axes_take_whole_lists() {
        let b = exp(&[("size", "64KiB"), ("bs", "4KiB")], &["ops=write;write,read:cold"], &[])
            .build(&env())
            .unwrap();
        assert_eq!(b.points[0].spec.phases.len(), 1);
        assert_eq!(b.points[1].spec.phases.len(), 2);
    }

    #[test]
    fn a_command_line_is_the_file_then_the_flags_then_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        let text = "size = \"64KiB\"\nbs = \"4KiB\"\n[sweep]\nbs = [\"4KiB\", \"8KiB\"]\nworkers = [1, 2]\n";
        std::fs::write(&path, text).unwrap();
        let mut flags = Params::default();
        flags.set_one("size", "128KiB").unwrap();
        let e = Experiment::from_command_line(
            Some(&path),
            &flags,
            &["bs=16KiB".into()],
            &["bs,workers".into()],
            0,
        )
        .unwrap();
        assert_eq!(e.params.one("name"), Some("mine"), "the file's stem names it");
        assert_eq!(e.params.one("size"), Some("128KiB"), "flags win over the file");
        assert_eq!(e.params.one("bs"), Some("4KiB"));
        let axes: Vec<(&str, &[String])> =
            e.sweep.axes.iter().map(|a| (a.key.as_str(), &a.values[..])).collect();
        assert_eq!(axes, [("bs", &["16KiB".to_string()][..]), ("workers", &["1".into(), "2".into()][..])]);
        assert_eq!(e.sweep.zip, [["bs", "workers"]]);
        flags.set_one("name", "other").unwrap();
        let e = Experiment::from_command_line(Some(&path), &flags, &[], &[], 0).unwrap();
        assert_eq!(e.params.one("name"), Some("other"));
        assert_eq!(e.sweep.axes[0].values, ["4KiB", "8KiB"]);
        let e = Experiment::from_command_line(None, &flags, &[], &[], 0).unwrap();
        assert_eq!(e.params, flags);
        let missing = dir.path().join("none.toml");
        let err = Experiment::from_command_line(Some(&missing), &flags, &[], &[], 0).unwrap_err();
        assert!(matches!(err, Error::Spec { ref field, .. } if field == "spec file"), "{err:?}");
    }

    #[test]
    fn experiment_files_carry_sweep_and_preset_tables() {
        let text = "size = \"64KiB\"\n[sweep]\nbs = [\"4KiB\", \"8KiB\"]\n[preset]\nid = \"X1\"\nheadline = \"two_sigma_mean\"\nfigure = \"max_sar\"\n[preset.quick]\nreps = 1\n";
        let t = file_tables(text, 0).unwrap();
        assert_eq!(t.sweep.axes[0].values, ["4KiB", "8KiB"]);
        assert_eq!((t.headline, t.figure), (Headline::TwoSigmaMean, Rate::MaxSar));
        assert_eq!(t.preset.unwrap().id, "X1");
        assert!(file_tables("[preset]\nheadline = \"mode\"\n", 0).is_err());
        let err = file_tables("[preset]\nfigure = \"sum\"\n", 0).unwrap_err().to_string();
        assert!(err.contains("preset.figure") && err.contains("agg, max_sar"), "{err}");
        // Without a figure, a file's headline summarises agg, as a plain run's does.
        assert_eq!(file_tables("[preset]\nid = \"X\"\n", 0).unwrap().figure, Rate::Agg);
    }
}
