//! The studies' experiments as presets: one TOML file each under `presets/`, compiled in.
//!
//! A preset file is an experiment file (parameters, `[sweep]`) at the default scale, plus a
//! `[preset]` table: `id`, `study`, `section`, `title`, `needs`, `headline`, `plot`, `notes`,
//! and `[preset.quick]` / `[preset.paper]` overlays (parameters, and a `sweep` table whose axes
//! replace the default's axes of the same key; `key = []` removes an axis).
//!
//! Whether a preset is available is computed, never declared: its needs must be met and every
//! point of its experiment must resolve with this build. So a preset that uses a layout or
//! engine this build lacks is listed with the resolve error as the reason, and becomes
//! available as soon as the capability exists.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::experiment::sweep::{self, Sweep};
use crate::experiment::{Built, Experiment, Headline, PresetRef, Rate, file_tables};
use crate::experiment::{PARAMS, Params, ResolveEnv};
use crate::report::PresetAbout;
/// The suggested plot of a preset (`plot` in its `[preset]` table) is the report's to read.
pub use crate::report::plot::PresetPlot as Plot;
use crate::results::ExperimentResult;
use crate::results::findings::{Finding, FindingSpec};

/// Every preset file, in listing order.
pub const FILES: &[&str] = &[
    include_str!("../../presets/R1.toml"),
    include_str!("../../presets/R2.toml"),
    include_str!("../../presets/R3.toml"),
    include_str!("../../presets/R4.toml"),
    include_str!("../../presets/R5.toml"),
    include_str!("../../presets/R6.toml"),
    include_str!("../../presets/R7.toml"),
    include_str!("../../presets/R8.toml"),
    include_str!("../../presets/R9.toml"),
    include_str!("../../presets/R10.toml"),
    include_str!("../../presets/B.toml"),
    include_str!("../../presets/B-strided.toml"),
    include_str!("../../presets/B-mmap.toml"),
    include_str!("../../presets/B-strided-mmap.toml"),
    include_str!("../../presets/B-proc.toml"),
    include_str!("../../presets/B-mpi.toml"),
    include_str!("../../presets/B-mpi-strided.toml"),
    include_str!("../../presets/B-mpi-mmap.toml"),
    include_str!("../../presets/B-mpi-strided-mmap.toml"),
    include_str!("../../presets/C1.toml"),
    include_str!("../../presets/C2.toml"),
    include_str!("../../presets/C3.toml"),
    include_str!("../../presets/C4.toml"),
    include_str!("../../presets/C5.toml"),
    include_str!("../../presets/C6.toml"),
    include_str!("../../presets/C7.toml"),
    include_str!("../../presets/C-fig3.toml"),
    include_str!("../../presets/L1.toml"),
    include_str!("../../presets/L2.toml"),
    include_str!("../../presets/L3.toml"),
    include_str!("../../presets/L4.toml"),
    include_str!("../../presets/IO500.toml"),
];

/// Needs a preset may declare beyond what resolving its spec checks.
pub const NEEDS: &[&str] = &["io-servers", "mpi"];

/// A preset's `[preset]` table.
#[derive(Debug, Clone, Deserialize)]
pub struct Meta {
    pub id: String,
    pub study: String,
    #[serde(default)]
    pub section: String,
    pub title: String,
    #[serde(default)]
    pub needs: Vec<String>,
    pub headline: String,
    /// The per-run rate the headline statistic summarises: the study's own (`max_sar` for
    /// Russell's total rate, ...; `agg` when the study reports no other).
    pub figure: String,
    pub plot: Plot,
    #[serde(default)]
    pub notes: String,
    /// The study's findings to check against the results (`[[preset.finding]]`).
    #[serde(default)]
    pub finding: Vec<FindingSpec>,
}

/// The sizes and repetitions to run a preset at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Small files and two repetitions: seconds; what the tests run.
    Quick,
    /// The study's design at sizes and repetitions that take minutes here.
    Default,
    /// The study's full grid and repetitions, sizes in its ratio to memory where it defeats
    /// the cache by size.
    Paper,
}

impl Scale {
    pub fn parse(s: &str) -> Result<Scale> {
        match s {
            "quick" => Ok(Scale::Quick),
            "default" => Ok(Scale::Default),
            "paper" => Ok(Scale::Paper),
            _ => Err(Error::spec("scale", s, "expected quick, default or paper")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Default => "default",
            Scale::Paper => "paper",
        }
    }
}

/// One compiled-in preset.
#[derive(Debug, Clone)]
pub struct Preset {
    pub meta: Meta,
    pub headline: Headline,
    pub figure: Rate,
    pub text: &'static str,
}

fn bad(id: &str, reason: impl Into<String>) -> Error {
    Error::spec("preset", id, reason)
}

impl Preset {
    /// Parses a preset file (its `[preset]` table; the experiment is read when asked for).
    pub fn parse(text: &'static str) -> Result<Preset> {
        let doc: toml::Table =
            text.parse().map_err(|e: toml::de::Error| bad("?", e.message().to_string()))?;
        let meta: Meta = doc
            .get("preset")
            .ok_or_else(|| bad("?", "no [preset] table"))?
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| bad("?", e.message().to_string()))?;
        let headline = Headline::parse(&meta.headline)
            .ok_or_else(|| bad(&meta.id, format!("headline `{}` is not a statistic", meta.headline)))?;
        let figure = Rate::parse(&meta.figure).ok_or_else(|| {
            bad(&meta.id, format!("figure `{}` is not one of {}", meta.figure, Rate::NAMES.join(", ")))
        })?;
        for n in &meta.needs {
            if !NEEDS.contains(&n.as_str()) {
                return Err(bad(&meta.id, format!("unknown need `{n}` (known: {})", NEEDS.join(", "))));
            }
        }
        for (i, f) in meta.finding.iter().enumerate() {
            f.check().map_err(|e| bad(&meta.id, format!("finding {}: {e}", i + 1)))?;
        }
        Ok(Preset { meta, headline, figure, text })
    }

    /// The needs this build does not meet here at `scale`, as reasons.
    pub fn unmet_needs(&self, scale: Scale) -> Vec<String> {
        let id = &self.meta.id;
        let run = |n: u32| match scale {
            Scale::Default => format!("`mpirun -np {n} iolab reproduce {id}`"),
            other => format!("`mpirun -np {n} iolab reproduce {id} --scale {}`", other.name()),
        };
        self.meta
            .needs
            .iter()
            .filter_map(|n| {
                Some(match n.as_str() {
                    "io-servers" if !crate::launch::HAS_MPI => format!(
                        "needs I/O-server ranks, which are MPI ranks, and this iolab was built without the `mpi` feature (build it with `cargo build --release --features mpi`, then run {})",
                        run(self.ranks(scale))
                    ),
                    "io-servers" if crate::launch::world().is_none() => format!(
                        "needs I/O-server ranks: {} MPI ranks at this scale (the clients and servers of its largest point); run it as {}",
                        self.ranks(scale),
                        run(self.ranks(scale))
                    ),
                    "mpi" if !crate::launch::HAS_MPI => format!(
                        "needs MPI ranks, and this iolab was built without the `mpi` feature (build it with `cargo build --release --features mpi`, then run {})",
                        run(2)
                    ),
                    "mpi" if crate::launch::world().is_none() => format!("needs MPI ranks: run it as {}", run(2)),
                    "mpi" | "io-servers" => return None,
                    other => format!("needs `{other}`"),
                })
            })
            .collect()
    }

    /// The MPI ranks the preset's largest point at `scale` takes: its clients (`workers`) plus
    /// its servers (1 for a preset without servers, or when its points cannot be listed).
    pub fn ranks(&self, scale: Scale) -> u32 {
        let points = self.experiment(scale, &[], 0).and_then(|e| e.point_params()).unwrap_or_default();
        let num = |p: &Params, k: &str| p.one(k).and_then(|v| v.trim().parse::<u32>().ok());
        points
            .iter()
            .map(|p| num(p, "workers").unwrap_or(1) + num(p, "servers").unwrap_or(0))
            .max()
            .unwrap_or(1)
    }

    /// The scale's overlay table (`[preset.quick]`, `[preset.paper]`), if any.
    fn overlay(&self, scale: Scale) -> Result<Option<toml::Table>> {
        if scale == Scale::Default {
            return Ok(None);
        }
        let doc: toml::Table =
            self.text.parse().map_err(|e: toml::de::Error| bad(&self.meta.id, e.message().to_string()))?;
        Ok(doc["preset"].get(scale.name()).and_then(|v| v.as_table()).cloned())
    }

    /// The sweep at a scale: the file's axes, with the scale's axes replacing those of the same
    /// key (an empty array removes one) and its `zip`, if given, replacing the file's.
    pub fn sweep(&self, scale: Scale, ram_bytes: u64) -> Result<Sweep> {
        let mut sweep = file_tables(self.text, ram_bytes)?.sweep;
        let Some(toml::Value::Table(mut axes)) = self.overlay(scale)?.and_then(|mut o| o.remove("sweep"))
        else {
            return Ok(sweep);
        };
        let order = sweep::toml_key_order(self.text, &["preset", scale.name(), "sweep"]);
        let removed: Vec<String> = axes
            .iter()
            .filter(|(_, v)| v.as_array().is_some_and(|a| a.is_empty()))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &removed {
            axes.remove(k);
            sweep.axes.retain(|a| a.key != sweep::normal_key(k));
        }
        let over = sweep::from_toml(&axes, &order, ram_bytes)?;
        for a in over.axes {
            sweep.push(a);
        }
        if axes.contains_key("zip") {
            sweep.zip = over.zip;
        }
        Ok(sweep)
    }

    /// The experiment at a scale, with `dirs` (if any) as its targets: fewer directories than
    /// the preset's targets are reused in turn, so one disk can serve as several targets.
    pub fn experiment(&self, scale: Scale, dirs: &[String], ram_bytes: u64) -> Result<Experiment> {
        let mut params = Params::from_toml(self.text)?;
        if let Some(mut over) = self.overlay(scale)? {
            over.remove("sweep");
            let text = toml::to_string(&over).map_err(|e| bad(&self.meta.id, e.to_string()))?;
            params.overlay(&Params::from_toml(&text)?);
        }
        let sweep = self.sweep(scale, ram_bytes)?;
        if !dirs.is_empty() {
            let want = params.0.get("dirs").map(|d| d.len()).unwrap_or(1).max(dirs.len());
            params.set("dirs", dirs.iter().cycle().take(want).cloned().collect())?;
        }
        if !params.0.contains_key("name") {
            params.set_one("name", &self.meta.id)?;
        }
        let preset = PresetRef {
            id: self.meta.id.clone(),
            study: self.meta.study.clone(),
            title: self.meta.title.clone(),
            scale: scale.name().into(),
        };
        Ok(Experiment { params, sweep, headline: self.headline, figure: self.figure, preset: Some(preset) })
    }

    /// The experiment at `scale`, every point resolved, if this build can run it here.
    pub fn build(&self, scale: Scale, dirs: &[String], env: &ResolveEnv) -> Result<Built> {
        if let Some(reason) = self.unmet_needs(scale).into_iter().next() {
            return Err(Error::spec("preset", &self.meta.id, reason));
        }
        self.experiment(scale, dirs, env.ram_bytes)?.build(env)
    }

    /// Whether this build can run the preset at `scale` here: the built experiment, or why not.
    pub fn check(
        &self,
        scale: Scale,
        dirs: &[String],
        env: &ResolveEnv,
    ) -> std::result::Result<Built, String> {
        self.build(scale, dirs, env).map_err(|e| match e {
            Error::Spec { field, reason, .. } if field == "preset" => reason,
            other => other.to_string(),
        })
    }

    /// The parameters that set a capability beyond the core (layout, engine, launcher, ...),
    /// for the "needs" column.
    pub fn uses(&self) -> Vec<String> {
        const KEYS: &[&str] = &[
            "layout",
            "engine",
            "launcher",
            "start",
            "pieces",
            "servers",
            "server_store",
            "blast_transport",
            "strategy",
            "latency",
            "files",
            "files_per_worker",
            "sync_call",
            "alloc",
        ];
        let mut out = vec![];
        let Ok(doc) = self.text.parse::<toml::Table>() else { return out };
        let sweep = doc.get("sweep").and_then(|v| v.as_table());
        for k in KEYS {
            let mut vals: Vec<String> = vec![];
            for v in [doc.get(*k), sweep.and_then(|s| s.get(*k))].into_iter().flatten() {
                match v {
                    toml::Value::Array(a) => {
                        vals.extend(a.iter().map(|x| x.as_str().map(String::from).unwrap_or(x.to_string())))
                    }
                    toml::Value::String(s) => vals.push(s.clone()),
                    other => vals.push(other.to_string()),
                }
            }
            let core = ["file-per-worker", "shared", "psync", "fsync", "fdatasync", "fs"];
            vals.retain(|v| !core.contains(&v.as_str()));
            if !vals.is_empty() {
                out.push(format!("{k}={}", vals.join("|")));
            }
        }
        let ops: String = doc.get("ops").map(|v| v.to_string()).unwrap_or_default();
        for m in ["workers=", "round_robin=", "files="] {
            if ops.contains(&format!(":{m}")) {
                out.push(format!("per-phase {}", m.trim_end_matches('=')));
            }
        }
        out.extend(self.meta.needs.iter().cloned());
        out
    }

    /// The experiment file at `scale`, ready to edit and `iolab run`: every parameter, the
    /// sweep axes with their values spelled out, and the `[preset]` id, study and headline.
    pub fn print(&self, scale: Scale, dirs: &[String], ram_bytes: u64) -> Result<String> {
        let exp = self.experiment(scale, dirs, ram_bytes)?;
        // Whole numbers and booleans bare, everything else as a TOML string.
        let q = |s: &str| {
            let bare = (!s.is_empty() && s.len() < 19 && s.chars().all(|c| c.is_ascii_digit()))
                || s == "true"
                || s == "false";
            if bare { s.to_string() } else { toml::Value::String(s.to_string()).to_string() }
        };
        let m = &self.meta;
        let mut out =
            format!("# {} · {} {} · scale {}\n# {}\n", m.id, m.study, m.section, scale.name(), m.title);
        for line in m.notes.lines() {
            out += &format!("# {line}\n");
        }
        out += "# Edit freely and run with: iolab run THIS_FILE.toml\n\n";
        for def in PARAMS {
            if let Some(values) = exp.params.0.get(def.key) {
                if def.list {
                    let items: Vec<String> = values.iter().map(|v| q(v)).collect();
                    out += &format!("{} = [{}]\n", def.key, items.join(", "));
                } else {
                    out += &format!("{} = {}\n", def.key, q(&values[0]));
                }
            }
        }
        print_sweep(&mut out, &exp.sweep, &q);
        out += &format!(
            "\n[preset]\nid = {}\nstudy = {}\ntitle = {}\nheadline = {}\nfigure = {}\nscale = {}\n",
            q(&m.id),
            q(&m.study),
            q(&m.title),
            q(&m.headline),
            q(&m.figure),
            q(scale.name())
        );
        Ok(out)
    }
}

fn print_sweep(out: &mut String, sweep: &Sweep, q: &dyn Fn(&str) -> String) {
    if sweep.axes.is_empty() {
        return;
    }
    *out += "\n[sweep]\n";
    for a in &sweep.axes {
        let items: Vec<String> = a.values.iter().map(|v| q(v)).collect();
        if a.text == a.values.join(", ") || a.text == a.values.join(",") {
            *out += &format!("{} = [{}]\n", a.key, items.join(", "));
        } else {
            *out += &format!("{} = [{}]  # {}\n", a.key, items.join(", "), a.text);
        }
    }
    if !sweep.zip.is_empty() {
        let groups: Vec<String> = sweep
            .zip
            .iter()
            .map(|g| format!("[{}]", g.iter().map(|k| q(k)).collect::<Vec<_>>().join(", ")))
            .collect();
        *out += &format!("zip = [{}]\n", groups.join(", "));
    }
}

/// Every preset, parsed.
pub fn all() -> Result<Vec<Preset>> {
    FILES.iter().map(|t| Preset::parse(t)).collect()
}

/// The preset with this id (case does not matter).
pub fn find(id: &str) -> Result<Preset> {
    all()?.into_iter().find(|p| p.meta.id.eq_ignore_ascii_case(id)).ok_or_else(|| {
        let ids: Vec<String> = all().map(|v| v.into_iter().map(|p| p.meta.id).collect()).unwrap_or_default();
        Error::NotFound(format!("no preset `{id}` (there are: {})", ids.join(", ")))
    })
}

/// What the report shows of the preset an experiment reproduces (its suggested plot and notes),
/// when this build knows the preset.
pub fn about(exp: &ExperimentResult) -> Option<PresetAbout> {
    let p = find(&exp.design.preset.as_ref()?.id).ok()?;
    Some(PresetAbout { plot: p.meta.plot, notes: p.meta.notes })
}

/// The findings of the preset an experiment reproduces, checked against its results (none when
/// it reproduces no preset this build knows).
pub fn findings(exp: &ExperimentResult) -> Vec<Finding> {
    let Some(p) = exp.design.preset.as_ref().and_then(|r| find(&r.id).ok()) else { return vec![] };
    let facts = crate::results::findings::Facts::of(&exp.host);
    p.meta.finding.iter().map(|f| f.evaluate_with(&exp.points, exp.design.headline, &facts)).collect()
}
