//! `iolab plot`: one figure of a stored experiment, SVG or PNG. It reads only the store;
//! nothing is rerun.

use std::io::Write;

use crate::cli::PlotArgs;
use crate::error::Result;
use crate::report::output::{self, Kind};
use crate::report::plot::{self, Bars, Options};

use super::read_store;

/// The figure options the flags ask for, each checked.
fn options(args: &PlotArgs) -> Result<Options> {
    Ok(Options {
        kind: args.kind.as_deref().map(plot::Kind::parse).transpose()?,
        x: args.x.clone(),
        series: args.series.clone(),
        panel: args.panel.clone(),
        y: args.y.clone(),
        phase: args.phase.clone(),
        bars: Bars::parse(&args.bars)?,
        point: args.point,
        rep: args.rep,
        worker: args.worker,
        ops: args.ops.as_deref().map(plot::parse_ops).transpose()?,
        size: args.size.as_deref().map(plot::parse_size).transpose()?,
        preset: None,
    })
}

/// `iolab plot`.
pub fn cmd_plot(args: PlotArgs, stdout: &mut dyn Write) -> Result<()> {
    let opts = options(&args)?;
    let db = super::db_path(&args.db)?;
    let kind = match &args.output {
        Some(p) => {
            let kind = match plot::Output::of(p)? {
                plot::Output::Svg => Kind::Svg,
                plot::Output::Png => Kind::Png,
            };
            output::check(p, "output", kind, args.force, &[&db])?;
            Some(kind)
        }
        None => None,
    };
    let store = read_store(&args.db)?;
    let mut exps = vec![];
    for id in &args.ids {
        exps.push(store.load(&store.resolve_id(id)?)?);
    }
    let exp = if exps.len() == 1 { exps.remove(0) } else { plot::merge::merge(&exps) };
    let preset = crate::experiment::preset::about(&exp).map(|p| p.plot);
    let fig = plot::build(&store, &exp, &Options { preset, ..opts })?;
    match (&args.output, kind) {
        (Some(p), Some(kind)) => {
            output::write_with(p, "output", kind, args.force, &[&db], |f| plot::write_file(&fig, f))?;
            eprintln!("wrote {}", crate::text::escape_path(p));
            Ok(())
        }
        _ => plot::write(&fig, None, stdout),
    }
}
