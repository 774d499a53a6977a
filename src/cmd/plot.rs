//! `iolab plot`: one figure of a stored experiment, SVG or PNG. It reads only the store;
//! nothing is rerun.

use std::io::Write;

use crate::cli::PlotArgs;
use crate::error::Result;
use crate::report::plot::{self, Bars, Kind, Options};

use super::read_store;

/// The figure options the flags ask for, each checked.
fn options(args: &PlotArgs) -> Result<Options> {
    Ok(Options {
        kind: args.kind.as_deref().map(Kind::parse).transpose()?,
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
    if let Some(p) = &args.output {
        plot::Output::of(p)?;
    }
    let store = read_store(&args.db)?;
    let exp = store.load(&store.resolve_id(&args.id)?)?;
    let preset = crate::experiment::preset::about(&exp).map(|p| p.plot);
    let fig = plot::build(&store, &exp, &Options { preset, ..opts })?;
    plot::write(&fig, args.output.as_deref(), stdout)?;
    if let Some(p) = &args.output {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}
