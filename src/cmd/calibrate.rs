//! `iolab plan --calibrate`: a short write and cold read with each engine an experiment uses
//! whose phases this host's store has no similar runs of, so that the plan's time estimate rests
//! on a measurement of this machine instead of an assumed rate.

use crate::cli::OutputArgs;
use crate::error::{Error, Result};
use crate::experiment::estimate::{Calibrated, Rates};
use crate::experiment::run::Point;
use crate::experiment::{Experiment, Params, ResolveEnv};
use crate::units::{fmt_rate, fmt_size};

/// The smallest calibration: one block of the calibration's 1 MiB.
const MIN_BYTES: u64 = 1 << 20;

/// Measures each engine of `points` that `rates` has no stored class for: one worker writes a
/// file of `size` in 1 MiB blocks in the first target directory of the engine's first point
/// (with its O_DIRECT setting), commits at the end, and reads it back from a cold cache. The
/// run is an ordinary experiment named `calibration`, stored unless `--no-store`. Returns the
/// rates with the calibrations added; an engine that cannot run alone here (e.g. `mpiio`
/// outside mpirun) is skipped with a note.
pub fn calibrate(points: &[Point], rates: Rates, size: &str, out: &OutputArgs) -> Result<Rates> {
    let bytes = crate::units::parse_abs_size(size).map_err(|e| Error::spec("calibrate", size, e.0))?;
    if bytes < MIN_BYTES {
        return Err(Error::spec("calibrate", size, "must be at least 1 MiB (one block)"));
    }
    let mut rates = rates;
    for engine in rates.uncovered(points) {
        let Some(p) = points.iter().find(|p| p.spec.engine == engine) else { continue };
        let mut params = Params::default();
        let dir = p.spec.dirs[0].display().to_string();
        params.set("dirs", vec![dir.clone()])?;
        for (k, v) in [("name", "calibration"), ("engine", engine.as_str()), ("size", size), ("bs", "1MiB")] {
            params.set_one(k, v)?;
        }
        for (k, v) in [("ops", "write,read:cold"), ("sync", "end"), ("reps", "1"), ("workers", "1")] {
            params.set_one(k, v)?;
        }
        params.set_one("direct", if p.spec.direct { "true" } else { "false" })?;
        let exp = Experiment {
            params,
            sweep: Default::default(),
            headline: Default::default(),
            figure: Default::default(),
            preset: None,
        };
        let built = match exp.build(&ResolveEnv::current()?) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("note: engine {engine} cannot be calibrated here ({e}); its phases stay assumed");
                continue;
            }
        };
        let quiet = OutputArgs { json: false, csv: false, quiet: true, ..out.clone() };
        let result = super::run::run_points(built, &quiet, &mut std::io::sink())?;
        let mut said = vec![];
        for ph in result.points.iter().flat_map(|p| &p.phases) {
            let done = ph.repetitions.iter().filter(|r| r.time_ns > 0 && r.total_bytes > 0);
            let (b, ns) = done.fold((0u64, 0u64), |(b, ns), r| (b + r.total_bytes, ns + r.time_ns));
            if ns == 0 {
                continue;
            }
            let bytes_per_s = b as f64 * 1e9 / ns as f64;
            let write = ph.op.is_write();
            said.push(format!("{} {} MB/s", ph.name, fmt_rate(bytes_per_s)));
            rates = rates.calibrated(Calibrated { engine: engine.clone(), write, bytes, bytes_per_s });
        }
        let stored = if out.no_store {
            String::new()
        } else {
            format!(" (stored as experiment {})", result.experiment_id)
        };
        eprintln!(
            "calibrated {engine} in {}: {} file, {}{stored}",
            crate::text::escape_path(std::path::Path::new(&dir)),
            fmt_size(bytes),
            said.join(", ")
        );
    }
    Ok(rates)
}
