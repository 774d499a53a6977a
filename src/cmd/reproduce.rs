//! `iolab reproduce`: the studies' presets: list them, print one as an experiment file, or run
//! one.

use std::io::Write;

use crate::cli::ReproduceArgs;
use crate::error::{Error, Result};
use crate::experiment::ResolveEnv;
use crate::experiment::estimate::{self, Rates};
use crate::experiment::preset::{self, Scale};
use crate::experiment::run::Point;
use crate::report;
use crate::target::preflight;
use crate::text::wrap;
use crate::units::{fmt_rate, fmt_size};
use crate::worker::registry::real_io;

use super::{open_store, put, results, run};

/// `iolab reproduce`: list the presets, print one, or run one.
pub fn cmd_reproduce(args: ReproduceArgs, stdout: &mut dyn Write) -> Result<()> {
    let env = ResolveEnv::with_ram(args.ram.as_deref())?;
    let scale = Scale::parse(&args.scale)?;
    if args.list {
        return put(stdout, &list(&args.dirs, &env, scale, &super::rates(&args.out))?);
    }
    let id = args.id.clone().unwrap_or_default();
    let p = preset::find(&id)?;
    if let Some(ini) = &args.ini {
        return with_ini(&args, &p, scale, ini, stdout);
    }
    if args.print {
        let text = match p.print(scale, &args.dirs, env.ram_bytes) {
            Ok(t) => t,
            Err(e) => format!(
                "# {} cannot be resolved by this build ({e});\n# here is the preset file as written, with every scale.\n\n{}",
                p.meta.id, p.text
            ),
        };
        return put(stdout, &text);
    }
    if let Some(reason) = p.unmet_needs(scale).into_iter().next() {
        return Err(Error::spec("preset", &p.meta.id, reason));
    }
    // A resolution error is the preset's own (it cannot be built here) only if the preset as
    // shipped fails too, on this machine's memory and without the user's values; otherwise
    // the user's --set or --ram is the cause, and the error says so.
    let given: Vec<String> = args
        .set
        .iter()
        .map(|kv| format!("--set {kv}"))
        .chain(args.ram.iter().map(|r| format!("--ram {r}")))
        .collect();
    let blame = |e: Error| {
        let plain = ResolveEnv::current()
            .and_then(|env| p.experiment(scale, &args.dirs, env.ram_bytes).and_then(|x| x.build(&env)));
        let why = if !given.is_empty() && plain.is_ok() {
            format!("from the values given: {}", given.join(", "))
        } else {
            format!("so preset {} is not available in this build", p.meta.id)
        };
        match e {
            Error::Spec { field, value, reason } => {
                Error::Spec { field, value, reason: format!("{reason} ({why})") }
            }
            other => other,
        }
    };
    let mut exp = p.experiment(scale, &args.dirs, env.ram_bytes).map_err(blame)?;
    for kv in &args.set {
        exp.set_kv(
            kv,
            &format!(
                "iolab reproduce {} --print > FILE.toml, edit its [sweep], iolab run FILE.toml",
                p.meta.id
            ),
        )?;
    }
    let built = exp.build(&env).map_err(blame)?;
    if !args.out.quiet {
        let e = estimate::estimate(&built.points, &super::rates(&args.out));
        eprintln!(
            "{} at scale {}: {} point{}, disk space {} at most, time {}",
            p.meta.id,
            scale.name(),
            built.points.len(),
            if built.points.len() == 1 { "" } else { "s" },
            e.disk_text(),
            e.time_text()
        );
    }
    run::run_points(built, &args.out, stdout)?;
    if p.meta.id == "L4" && !args.out.no_store && !args.out.json && !args.out.csv {
        let store = open_store(&args.out.db)?;
        put(stdout, "\n")?;
        results::compare(&store, "text", false, stdout)?;
    }
    Ok(())
}

/// A preset with io500's config file over it (`reproduce IO500 --ini FILE`): printed, or run.
fn with_ini(
    args: &ReproduceArgs,
    p: &preset::Preset,
    scale: Scale,
    ini: &std::path::Path,
    stdout: &mut dyn Write,
) -> Result<()> {
    if p.meta.id != "IO500" {
        let why = format!("an io500 config file is for preset IO500, not {}", p.meta.id);
        return Err(Error::spec("ini", ini.display(), why));
    }
    let env = ResolveEnv::with_ram(args.ram.as_deref())?;
    let text = crate::env::input::read_spec_file(ini)?;
    let exp = p.experiment(scale, &args.dirs, env.ram_bytes)?;
    let t = crate::frontend::io500_ini::apply(&text, exp)?;
    let own = crate::frontend::Own {
        json: args.out.json,
        csv: args.out.csv,
        db: args.out.db.clone(),
        no_store: args.out.no_store,
        quiet: args.out.quiet,
        print: args.print,
        set: args.set.clone(),
        ..Default::default()
    };
    super::translated::run_translation(t, &own, stdout)
}

/// The `--list` table at `scale`: every preset with its status (available, unavailable, or
/// no space: its largest point does not fit on the disk of its targets), the sizes of its
/// points, the disk space its largest point needs, the estimated time of all its runs, its
/// needs, study and title; below it why each one cannot run and the notes of resolution.
pub fn list(dirs: &[String], env: &ResolveEnv, scale: Scale, rates: &Rates) -> Result<String> {
    let mut rows = vec![];
    let mut unders = vec![];
    let mut why = vec![];
    let mut notes = vec![];
    let mut assumed = false;
    for p in preset::all()? {
        let (status, size, disk, time) = match p.check(scale, dirs, env) {
            Ok(built) => {
                notes.extend(built.notes.iter().map(|n| entry(&p.meta.id, n)));
                let e = estimate::estimate(&built.points, rates);
                assumed |= e.assumed > 0;
                let status = match space(&built.points) {
                    Ok(()) => "available",
                    Err(reason) => {
                        why.push(entry(&p.meta.id, &reason));
                        "no space"
                    }
                };
                (status, sizes(&built.points), e.disk_text(), e.time_cell())
            }
            Err(reason) => {
                why.push(entry(&p.meta.id, &reason));
                ("unavailable", "-".into(), "-".into(), "-".into())
            }
        };
        let uses = p.uses();
        rows.push(vec![p.meta.id.clone(), status.to_string(), size, disk, time]);
        let mut under = wrap(&format!("{}: {}", p.meta.study, p.meta.title), WIDTH, "    ", 4);
        if !uses.is_empty() {
            under += &wrap(&format!("needs: {}", uses.join(", ")), WIDTH, "    ", 6);
        }
        unders.push(under);
    }
    let head = ["id", "status", "size", "disk", "time"];
    let mut out = format!("scale {}, memory {}\n", scale.name(), fmt_size(env.ram_bytes));
    // Each row, then under it its study and title and what it needs.
    let table = report::text_table(&head, &rows, &[]);
    let mut lines = table.lines();
    out += lines.next().unwrap_or_default();
    out.push('\n');
    for (line, under) in lines.zip(&unders) {
        out += line;
        out.push('\n');
        out += under;
    }
    let mut legend = "size: bytes per worker of its points that move data, items per worker of those with \
                      metadata phases; disk: the space its largest point needs (without \
                      the margin of 5% + 64 MiB); time: all its runs, a rough floor, from the rates of similar \
                      phases measured on this host (same engine and op, size within 16x)"
        .to_string();
    if assumed {
        legend += &format!(", else `assumed` at {} MB/s", fmt_rate(estimate::ASSUMED_BYTES_PER_S));
    }
    out += "\n";
    out += &wrap(&legend, WIDTH, "", 0);
    if !why.is_empty() {
        out += "\nwhy unavailable:\n";
        out += &why.concat();
    }
    if !notes.is_empty() {
        out += "\nnotes:\n";
        out += &notes.concat();
    }
    out += "\nrun one: iolab reproduce ID [--scale quick|default|paper] [--dir DIR]...\n\
            see its file: iolab reproduce ID --print\n";
    Ok(out)
}

/// The width `--list` fits in.
const WIDTH: usize = 100;

/// One entry under `why unavailable:` or `notes:`: the preset's id, then the text wrapped
/// under it.
fn entry(id: &str, text: &str) -> String {
    wrap(text, WIDTH, &format!("  {id:<18} "), 21)
}

/// Whether every point fits on the disks of its targets: the preflight's refusal, if not.
fn space(points: &[Point]) -> std::result::Result<(), String> {
    for p in points {
        let plan = crate::plan::plan(&p.spec);
        if let Err(e) = preflight::check(&p.spec, &plan, real_io(&p.spec.engine)) {
            return Err(match run::at_point(e, p) {
                Error::Spec { field, reason, .. } => format!("{field}: {reason}"),
                other => other.to_string(),
            });
        }
    }
    Ok(())
}

/// The sizes of the points: one, a few, or the range, of the points that move data (their
/// bytes per worker) and of those with metadata phases (their items per worker: a metadata
/// phase uses no `size`).
fn sizes(points: &[Point]) -> String {
    let list = |mut v: Vec<u64>, fmt: &dyn Fn(u64) -> String, what: &str| {
        v.sort_unstable();
        v.dedup();
        match v.as_slice() {
            [] => None,
            [a, .., b] if v.len() > 3 => Some(format!("{}..{} ({} {what})", fmt(*a), fmt(*b), v.len())),
            _ => Some(v.iter().map(|b| fmt(*b)).collect::<Vec<_>>().join(", ")),
        }
    };
    let data = points.iter().filter(|p| report::brief::moves_data(&p.spec)).map(|p| p.spec.size_bytes);
    let items = points.iter().filter_map(|p| p.spec.md.as_ref()).map(|ns| ns.items);
    let parts: Vec<String> = [
        list(data.collect(), &fmt_size, "sizes"),
        list(items.collect(), &|n| n.to_string(), "counts").map(|t| format!("{t} items")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() { "-".into() } else { parts.join("; ") }
}
