//! The commands that draw the store: `iolab plot` (one figure, SVG or PNG) and `iolab report`
//! (one self-contained HTML page of an experiment, or of every host). Both read only the
//! store; neither reruns anything.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::cmd::open_store;
use crate::error::{Error, Result};
use crate::experiment::preset;
use crate::report::plot::{self, Bars, Kind, Options};
use crate::report::{html, write_err};

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Experiment id, a unique prefix of one, or `last`
    pub id: String,
    /// rate | bars | workers | cdf | histogram | trace (default: the preset's plot, else rate
    /// when something is swept, else bars)
    #[arg(long)]
    pub kind: Option<String>,
    /// The x axis: a sweep axis (or `phase`); default: the preset's, else the first axis
    #[arg(long)]
    pub x: Option<String>,
    /// One line per value of these axes (comma-separated, or `none`)
    #[arg(long)]
    pub series: Option<String>,
    /// One panel per value of these axes (comma-separated, or `none`)
    #[arg(long)]
    pub panel: Option<String>,
    /// Statistic (mean, median, 2sigma, trimmed) and/or figures (max_sar, min_sar,
    /// individual), comma-separated; default: the experiment's headline of the preset's figures
    #[arg(long, value_name = "STAT|FIGURE")]
    pub y: Vec<String>,
    /// The phase to show (its name as tables show it, e.g. read:cold); default: the last
    #[arg(long)]
    pub phase: Option<String>,
    /// Error bars: 2sd (the point +/- 2 standard deviations of its runs), ci95 (the 95%
    /// confidence interval of the mean) or none
    #[arg(long, default_value = "2sd")]
    pub bars: String,
    /// Sweep point (index, as `iolab results show` lists them) for workers, cdf, histogram, trace
    #[arg(long)]
    pub point: Option<usize>,
    /// Repetition of a trace (default: the first traced)
    #[arg(long)]
    pub rep: Option<u32>,
    /// Worker of a trace (default 0)
    #[arg(long)]
    pub worker: Option<u32>,
    /// Op range of a trace, FROM..TO (TO excluded)
    #[arg(long, value_name = "FROM..TO")]
    pub ops: Option<String>,
    /// Pixel size, WIDTHxHEIGHT (default: from the number of panels)
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,
    /// Output file, .svg or .png (default: SVG on stdout)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Experiment id, a unique prefix of one, or `last`
    #[arg(required_unless_present_any = ["last", "compare"], conflicts_with_all = ["last", "compare"])]
    pub id: Option<String>,
    /// The newest experiment
    #[arg(long, conflicts_with = "compare")]
    pub last: bool,
    /// Instead, the per-host comparison of every L1/L4 experiment in the store (the SLAC
    /// table and its graph)
    #[arg(long)]
    pub compare: bool,
    /// Output file (default: stdout)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Results store (default: $IOLAB_DB or ~/.local/share/iolab/iolab.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl PlotArgs {
    fn options(&self) -> Result<Options> {
        Ok(Options {
            kind: self.kind.as_deref().map(Kind::parse).transpose()?,
            x: self.x.clone(),
            series: self.series.clone(),
            panel: self.panel.clone(),
            y: self.y.clone(),
            phase: self.phase.clone(),
            bars: Bars::parse(&self.bars)?,
            point: self.point,
            rep: self.rep,
            worker: self.worker,
            ops: self.ops.as_deref().map(plot::parse_ops).transpose()?,
            size: self.size.as_deref().map(plot::parse_size).transpose()?,
            preset: None,
        })
    }
}

/// `iolab plot`.
pub fn cmd_plot(args: PlotArgs, stdout: &mut dyn Write) -> Result<()> {
    let opts = args.options()?;
    if let Some(p) = &args.output {
        plot::Output::of(p)?;
    }
    let store = open_store(&args.db)?;
    let exp = store.load(&store.resolve_id(&args.id)?)?;
    let fig = plot::build(&store, &exp, &Options { preset: preset::about(&exp).map(|p| p.plot), ..opts })?;
    plot::write(&fig, args.output.as_deref(), stdout)?;
    if let Some(p) = &args.output {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

/// `iolab report`.
pub fn cmd_report(args: ReportArgs, stdout: &mut dyn Write) -> Result<()> {
    let store = open_store(&args.db)?;
    let page = if args.compare {
        html::compare::page(&store)?
    } else {
        let id = if args.last { "last".to_string() } else { args.id.clone().unwrap_or_default() };
        let exp = store.load(&store.resolve_id(&id)?)?;
        html::experiment::page(&store, &exp, preset::about(&exp).as_ref())?
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, page).map_err(|e| Error::io("write", p, None, e))?;
            eprintln!("wrote {}", p.display());
            Ok(())
        }
        None => stdout.write_all(page.as_bytes()).map_err(write_err),
    }
}
