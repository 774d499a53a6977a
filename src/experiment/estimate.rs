//! Estimates of an experiment before it runs (`iolab plan`, `reproduce --list`): the disk
//! space its largest point needs, and the time all its runs take, from the rates this host
//! measured in earlier runs of similar phases (the store), else from a short calibration run
//! just before (`iolab plan --calibrate`), else from a stated assumed rate.
//!
//! Similar means the same engine, the same direction (read, or write and rewrite) and the same
//! size class (the phase's bytes within one power of 16: 1-16 MiB, 16-256 MiB, ...). A phase's
//! time is its bytes over the class's rate (all its samples' bytes over all their time); a
//! strategy point adds its compute (the busiest compute role's, the roles in parallel), and
//! reads of data written first add that write. Warm-ups and settle times count; file creation,
//! cache eviction and process start do not, so an estimate is a rough floor, shown as such.
//!
//! A calibration measures one engine's write (commit at end) and cold read of one file; its
//! rates stand in for every size class of that engine and direction the store lacks, and the
//! output says they did (a calibration at another size than the phase's is a rougher guide
//! than a stored run of the same size, and better than a guess).

use super::run::Point;
use crate::plan;
use crate::report::plan::disk_bytes_total;
use crate::spec::OpKind;
use crate::store::{PhaseSample, Store};
use crate::units::{fmt_rate, fmt_size};
use crate::worker::registry::real_io;

/// The rate assumed where the store has no similar phase: a plain disk's sequential rate.
pub const ASSUMED_BYTES_PER_S: f64 = 200e6;

/// The rate assumed for metadata phases (ops/s): a plain disk's file creates, the slowest of
/// them (no history of them is kept yet).
pub const ASSUMED_MD_OPS_PER_S: f64 = 2000.0;

/// What makes two phases similar.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    engine: String,
    write: bool,
    size_class: u32,
}

/// The size class of a phase of `bytes`: its power of 16.
fn size_class(bytes: u64) -> u32 {
    (63 - bytes.max(1).leading_zeros()) / 4
}

/// Measured rates by class: (class, bytes, ns, samples); and calibrated rates by engine and
/// direction.
#[derive(Debug, Clone, Default)]
pub struct Rates(Vec<(Class, u64, u64, usize)>, Vec<Calibrated>);

/// The rate a calibration measured for one engine and direction.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    pub engine: String,
    pub write: bool,
    /// The calibration file's size.
    pub bytes: u64,
    pub bytes_per_s: f64,
}

/// Where the rate of a phase came from.
enum Source {
    /// Stored phases of the same class, and how many.
    Measured(usize),
    Calibrated,
}

impl Rates {
    /// No measurements: every phase at the assumed rate.
    pub fn none() -> Rates {
        Rates::default()
    }

    /// The rates of stored phases. Strategy runs are left out: their time holds compute.
    pub fn from_samples(samples: &[PhaseSample]) -> Rates {
        let mut r = Rates::default();
        for s in samples.iter().filter(|s| !s.strategy && s.bytes > 0 && s.time_ns > 0) {
            let c =
                Class { engine: s.engine.clone(), write: s.op != "read", size_class: size_class(s.bytes) };
            match r.0.iter_mut().find(|e| e.0 == c) {
                Some(e) => {
                    e.1 = e.1.saturating_add(s.bytes);
                    e.2 = e.2.saturating_add(s.time_ns);
                    e.3 += 1;
                }
                None => r.0.push((c, s.bytes, s.time_ns, 1)),
            }
        }
        r
    }

    /// The rates this host measured, from the store at `db` if there is one (a store that
    /// cannot be read gives none: an estimate never fails a command).
    pub fn of_store(db: &std::path::Path) -> Rates {
        if !db.is_file() {
            return Rates::none();
        }
        Store::open_read_only(db)
            .and_then(|s| s.phase_samples(&crate::env::host::host_id()))
            .map(|v| Rates::from_samples(&v))
            .unwrap_or_default()
    }

    /// These rates with a calibration's for its engine and direction (replacing an earlier
    /// one of the same).
    pub fn calibrated(mut self, c: Calibrated) -> Rates {
        self.1.retain(|e| (e.engine.as_str(), e.write) != (c.engine.as_str(), c.write));
        self.1.push(c);
        self
    }

    /// The rate of a class (bytes/s) and where it came from: stored phases of the class, else
    /// a calibration of its engine and direction.
    fn rate(&self, c: &Class) -> Option<(f64, Source)> {
        let stored = self.0.iter().find(|e| e.0 == *c);
        stored.map(|e| (e.1 as f64 * 1e9 / e.2 as f64, Source::Measured(e.3))).or_else(|| {
            let cal = self.1.iter().find(|e| e.engine == c.engine && e.write == c.write);
            cal.map(|e| (e.bytes_per_s, Source::Calibrated))
        })
    }

    /// The engines of these points whose real-I/O phases have no stored rate of their class:
    /// what a calibration would measure.
    pub fn uncovered(&self, points: &[Point]) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        for p in points.iter().filter(|p| real_io(&p.spec.engine)) {
            let plan = plan::plan(&p.spec);
            let mut classes: Vec<(u64, bool)> =
                plan.phases.iter().map(|ph| (ph.bytes(), ph.op.is_write())).collect();
            if plan.layout_first {
                classes.push((plan.disk_bytes(), true));
            }
            let missing = classes.iter().filter(|(b, _)| *b > 0).any(|&(bytes, write)| {
                let c = Class { engine: p.spec.engine.clone(), write, size_class: size_class(bytes) };
                !self.0.iter().any(|e| e.0 == c)
            });
            if missing && !out.contains(&p.spec.engine) {
                out.push(p.spec.engine.clone());
            }
        }
        out
    }

    /// The calibrations these rates hold.
    pub fn calibrations(&self) -> &[Calibrated] {
        &self.1
    }
}

/// What an experiment will take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// Disk space of the point that needs the most (its files, all repetitions' if kept).
    pub disk_bytes: u64,
    pub seconds: f64,
    /// Phase runs timed at measured rates, and how many stored phases those rates came from.
    pub measured: u64,
    pub samples: usize,
    /// Phase runs timed at a calibration's rate, and the calibration file's size.
    pub calibrated: u64,
    pub calibration_bytes: u64,
    /// Phase runs timed at [`ASSUMED_BYTES_PER_S`].
    pub assumed: u64,
    /// Metadata phase runs timed at [`ASSUMED_MD_OPS_PER_S`].
    pub assumed_md: u64,
}

/// Estimates the runs of these points.
pub fn estimate(points: &[Point], rates: &Rates) -> Estimate {
    let mut e = Estimate::default();
    let mut used: Vec<Class> = vec![];
    for p in points {
        let spec = &p.spec;
        let plan = plan::plan(spec);
        e.disk_bytes = e.disk_bytes.max(disk_bytes_total(spec, &plan));
        let runs = (spec.reps + spec.warmup) as u64;
        let mut one = spec.settle_ns as f64 / 1e9;
        let io = real_io(&spec.engine);
        let mut time = |bytes: u64, op: OpKind, e: &mut Estimate| {
            if !io || bytes == 0 {
                return 0.0;
            }
            let c =
                Class { engine: spec.engine.clone(), write: op.is_write(), size_class: size_class(bytes) };
            match rates.rate(&c) {
                Some((r, Source::Measured(n))) => {
                    e.measured += runs;
                    if !used.contains(&c) {
                        e.samples += n;
                        used.push(c);
                    }
                    bytes as f64 / r
                }
                Some((r, Source::Calibrated)) => {
                    e.calibrated += runs;
                    let cal = rates.1.iter().filter(|k| k.engine == c.engine).map(|k| k.bytes).max();
                    e.calibration_bytes = e.calibration_bytes.max(cal.unwrap_or(0));
                    bytes as f64 / r
                }
                None => {
                    e.assumed += runs;
                    bytes as f64 / ASSUMED_BYTES_PER_S
                }
            }
        };
        if plan.layout_first {
            one += time(plan.disk_bytes(), OpKind::Write, &mut e);
        }
        for ph in &plan.phases {
            if ph.op.is_metadata() {
                // A find visits every item and directory; the others each worker's items.
                let ops: u64 = match (&plan.namespace, ph.op) {
                    (Some(ns), OpKind::Find) => ns.items() + ns.dirs(),
                    _ => ph.workers.iter().filter_map(|w| w.md).map(|m| m.items).sum(),
                };
                let t = ops as f64 / ASSUMED_MD_OPS_PER_S;
                // A stonewalled create at most its time (a wear-out's catching up aside).
                one += spec.phase_bound(&spec.phases[ph.index]).map_or(t, |b| t.min(b.ns() as f64 / 1e9));
                e.assumed_md += runs;
                continue;
            }
            let mut t = time(ph.bytes(), ph.op, &mut e);
            // A rate-limited phase takes at least its schedule: its ops (or bytes) at the rate,
            // each worker at once; think time adds its pauses.
            let slowest =
                ph.workers.iter().map(|w| (w.ops.timed_ops(), w.ops.bytes())).max().unwrap_or((0, 0));
            let ph_spec = &spec.phases[ph.index];
            if let Some(r) = spec.phase_rate(ph_spec) {
                t = t.max(match r {
                    crate::spec::RateLimit::Iops(n) => slowest.0 as f64 / n as f64,
                    crate::spec::RateLimit::Bytes(b) => slowest.1 as f64 / b as f64,
                });
            }
            if let Some(th) = spec.workload.thinktime {
                t += (slowest.0 / th.blocks) as f64 * th.ns as f64 / 1e9;
            }
            // A runtime takes its time; a stonewall at most its time (commits aside).
            one += match spec.phase_bound(&spec.phases[ph.index]) {
                Some(b) if io && b.wraps() => b.ns() as f64 / 1e9,
                Some(b) if io => t.min(b.ns() as f64 / 1e9),
                _ => t,
            };
        }
        if let Some(ns) = &plan.namespace {
            // Made (and, for a first phase that needs them, filled) before the phases, untimed.
            let made = ns.dirs() + if ns.make_first { ns.items() } else { 0 };
            one += made as f64 / ASSUMED_MD_OPS_PER_S;
        }
        if let Some(sp) = crate::strategy::Plan::of(spec) {
            let per_iter = sp.roles.iter().filter_map(|r| r.compute).map(|c| c.per_iter_ns).max();
            one += per_iter.unwrap_or(0) as f64 * sp.iters as f64 / 1e9;
        }
        e.seconds += one * runs as f64;
    }
    e
}

pub use crate::units::fmt_about;

impl Estimate {
    /// The time with where its rates came from: `~3 min (rates measured here in 12 earlier
    /// phase runs)`, `~3 min (rates of a 128 MiB calibration here)`, `~3 min at 200 MB/s
    /// assumed`, or a mix (`(..., the rest at 200 MB/s assumed)`).
    pub fn time_text(&self) -> String {
        let assumed = format!("at {} MB/s assumed", fmt_rate(ASSUMED_BYTES_PER_S));
        let mut known = vec![];
        if self.measured > 0 {
            let s = if self.samples == 1 { "" } else { "s" };
            known.push(format!("rates measured here in {} earlier phase run{s}", self.samples));
        }
        if self.calibrated > 0 {
            known.push(format!("rates of a {} calibration here", fmt_size(self.calibration_bytes)));
        }
        let t = fmt_about(self.seconds);
        if self.assumed_md > 0 {
            known.push(format!("metadata phases at {ASSUMED_MD_OPS_PER_S:.0} ops/s assumed"));
        }
        match (known.is_empty(), self.assumed) {
            (true, 0) => format!("{t} (no data moved)"),
            (false, 0) => format!("{t} ({})", known.join("; ")),
            (true, _) => format!("{t} {assumed}"),
            (false, _) => format!("{t} ({}; the rest {assumed})", known.join("; ")),
        }
    }

    /// The time with one word for where its rates came from, for a table cell.
    pub fn time_cell(&self) -> String {
        let t = fmt_about(self.seconds);
        match (self.measured + self.calibrated, self.assumed + self.assumed_md) {
            (_, 0) => t,
            (0, _) => format!("{t} assumed"),
            _ => format!("{t} partly assumed"),
        }
    }

    pub fn disk_text(&self) -> String {
        if self.disk_bytes == 0 { "none".into() } else { fmt_size(self.disk_bytes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Params, ResolveEnv, resolve};

    fn point(kv: &[(&str, &str)]) -> Point {
        let mut p = Params::default();
        p.set("dirs", vec![std::env::temp_dir().display().to_string()]).unwrap();
        for (k, v) in kv {
            p.set_one(k, v).unwrap();
        }
        let spec = resolve(&p, &ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() }).unwrap();
        Point { params: Default::default(), spec }
    }

    fn sample(engine: &str, op: &str, bytes: u64, time_ns: u64) -> PhaseSample {
        PhaseSample { engine: engine.into(), op: op.into(), strategy: false, bytes, time_ns }
    }

    #[test]
    fn without_measurements_every_phase_runs_at_the_assumed_rate() {
        // 64 MiB written and read back, 3 repetitions plus 1 warm-up.
        let p = point(&[("size", "64MiB"), ("ops", "write,read"), ("reps", "3"), ("warmup", "1")]);
        let e = estimate(&[p], &Rates::none());
        assert_eq!(e.disk_bytes, 64 << 20);
        assert_eq!((e.measured, e.assumed, e.samples), (0, 8, 0));
        let want = 4.0 * 2.0 * (64u64 << 20) as f64 / ASSUMED_BYTES_PER_S;
        assert!((e.seconds - want).abs() < 1e-9, "{} vs {want}", e.seconds);
        assert_eq!(e.time_text(), "~2.7 s at 200 MB/s assumed");
    }

    #[test]
    fn measured_rates_of_the_same_engine_op_and_size_class_are_used() {
        // Writes of 32 MiB at 100 MB/s (two samples), reads at 400 MB/s; a 16 KiB write and
        // another engine's write are other classes.
        let samples = [
            sample("psync", "write", 32 << 20, (32u64 << 20) * 10),
            sample("psync", "rewrite", 48 << 20, (48u64 << 20) * 10),
            sample("psync", "read", 32 << 20, (32u64 << 20) * 10 / 4),
            sample("psync", "write", 16 << 10, 1),
            sample("uring", "write", 32 << 20, 1),
            PhaseSample { strategy: true, ..sample("psync", "read", 32 << 20, 1) },
        ];
        let rates = Rates::from_samples(&samples);
        let p = point(&[("size", "64MiB"), ("ops", "write,read"), ("reps", "2")]);
        let e = estimate(&[p], &rates);
        assert_eq!((e.measured, e.assumed, e.samples), (4, 0, 3));
        let want = 2.0 * ((64u64 << 20) as f64 / 100e6 + (64u64 << 20) as f64 / 400e6);
        assert!((e.seconds - want).abs() < 1e-6, "{} vs {want}", e.seconds);
        assert_eq!(e.time_text(), "~1.7 s (rates measured here in 3 earlier phase runs)");
        // A 1 GiB write is in another class: assumed, and said so.
        let big = point(&[("size", "1GiB"), ("ops", "write,read"), ("reps", "1")]);
        let e = estimate(&[big], &rates);
        assert_eq!((e.measured, e.assumed), (0, 2));
    }

    #[test]
    fn a_calibration_stands_in_for_the_classes_the_store_lacks() {
        // Stored: 64 MiB-class writes at 100 MB/s. Calibrated at 128 MiB: writes at 50 MB/s,
        // reads at 400 MB/s. A 64 MiB write uses the stored class; a 1 GiB write and both reads
        // the calibration; a vsync phase is neither, so it is assumed.
        let samples = [sample("psync", "write", 32 << 20, (32u64 << 20) * 10)];
        let cal = |write, r| Calibrated { engine: "psync".into(), write, bytes: 128 << 20, bytes_per_s: r };
        let rates = Rates::from_samples(&samples).calibrated(cal(true, 50e6)).calibrated(cal(false, 400e6));
        let small = point(&[("size", "64MiB"), ("ops", "write,read"), ("reps", "1")]);
        let big = point(&[("size", "1GiB"), ("ops", "write"), ("reps", "1")]);
        let e = estimate(&[small.clone(), big], &rates);
        assert_eq!((e.measured, e.calibrated, e.assumed, e.calibration_bytes), (1, 2, 0, 128 << 20));
        let want = (64u64 << 20) as f64 / 100e6 + (64u64 << 20) as f64 / 400e6 + (1u64 << 30) as f64 / 50e6;
        assert!((e.seconds - want).abs() < 1e-6, "{} vs {want}", e.seconds);
        assert_eq!(
            e.time_text(),
            "~22 s (rates measured here in 1 earlier phase run; rates of a 128 MiB calibration here)"
        );
        assert_eq!(e.time_cell(), "~22 s");
        // What a calibration would measure: the engines with a phase of a class not stored.
        assert_eq!(
            Rates::from_samples(&samples).uncovered(std::slice::from_ref(&small)),
            vec!["psync".to_string()]
        );
        let write_only = point(&[("size", "64MiB"), ("ops", "write"), ("reps", "1")]);
        assert!(Rates::from_samples(&samples).uncovered(&[write_only]).is_empty());
        let v = point(&[("size", "64MiB"), ("ops", "write"), ("engine", "vsync"), ("reps", "1")]);
        let e = estimate(std::slice::from_ref(&v), &rates);
        assert_eq!((e.measured, e.calibrated, e.assumed), (0, 0, 1));
        assert_eq!(rates.uncovered(&[v]), vec!["vsync".to_string()]);
        // A later calibration of the same engine and direction replaces the earlier one.
        let again = rates.calibrated(cal(true, 25e6));
        assert_eq!(again.calibrations().len(), 2);
        assert!(again.calibrations().iter().any(|c| c.write && c.bytes_per_s == 25e6));
    }

    #[test]
    fn the_largest_point_sets_the_disk_space_and_kept_files_multiply_it() {
        let a = point(&[("size", "8MiB"), ("workers", "2")]);
        let b = point(&[("size", "4MiB"), ("keep", "true"), ("reps", "5")]);
        let e = estimate(&[a, b], &Rates::none());
        assert_eq!(e.disk_bytes, 20 << 20);
        let n = point(&[("size", "8MiB"), ("engine", "null")]);
        let e = estimate(&[n], &Rates::none());
        assert_eq!((e.disk_bytes, e.measured, e.assumed, e.seconds), (0, 0, 0, 0.0));
        assert_eq!(e.time_text(), "< 1 s (no data moved)");
    }

    #[test]
    fn a_strategy_point_adds_its_compute() {
        let p = point(&[
            ("strategy", "S1A"),
            ("workers", "2"),
            ("iters", "4"),
            ("bs", "1MiB"),
            ("size", "4MiB"),
            ("comptime", "10s"),
            ("ops", "write"),
            ("reps", "1"),
        ]);
        let e = estimate(&[p], &Rates::none());
        // Each of the two compute workers spins its 10 s share; 8 MiB written.
        let want = 10.0 + (8u64 << 20) as f64 / ASSUMED_BYTES_PER_S;
        assert!((e.seconds - want).abs() < 1e-6, "{} vs {want}", e.seconds);
    }

    #[test]
    fn a_time_bound_sets_or_caps_a_phases_time() {
        let t = |kv: &[(&str, &str)]| estimate(&[point(kv)], &Rates::none()).seconds;
        let plain = t(&[("size", "1GiB"), ("ops", "write"), ("reps", "1")]);
        assert!(plain > 2.0, "{plain}");
        assert_eq!(t(&[("size", "1GiB"), ("ops", "write:stonewall=2s"), ("reps", "1")]), 2.0);
        assert_eq!(t(&[("size", "1GiB"), ("ops", "write:stonewall=10h"), ("reps", "1")]), plain);
        assert_eq!(t(&[("size", "1MiB"), ("ops", "write"), ("runtime", "3s"), ("reps", "2")]), 6.0);
        // A stonewalled create of a million items: its time is the stonewall's.
        let md = |ops: &str| t(&[("md_files", "1000000"), ("ops", ops), ("reps", "1")]);
        let (all, walled) = (md("create"), md("create:stonewall=2s"));
        assert!(all > 10.0 && walled < all, "{all} {walled}");
        assert!((walled - md("create:stonewall=1s") - 1.0).abs() < 1e-6, "{walled}");
    }

    #[test]
    fn durations_are_shown_to_two_figures() {
        assert_eq!(fmt_about(0.2), "< 1 s");
        assert_eq!(fmt_about(2.71), "~2.7 s");
        assert_eq!(fmt_about(44.6), "~45 s");
        assert_eq!(fmt_about(210.0), "~3.5 min");
        assert_eq!(fmt_about(3.0 * 3600.0), "~3 h");
        assert_eq!(fmt_about(5.0 * 86400.0), "~5 days");
    }
}
