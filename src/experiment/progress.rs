//! Progress on stderr: per phase run, which repetition of how many, the phase, bytes (or ops)
//! done, the rate so far and the time left at that rate, and under MPI the whole run's count
//! over every rank and the rank furthest behind. A live line with a bar on a terminal; a plain
//! line every `--progress-every` (10 s unless told) when stderr is a file or a pipe (a batch
//! job's output); never with `--quiet`. And the stop check for signals.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::env::monitor::RanksProgress;
use crate::units::{fmt_rate, fmt_size};
use crate::worker::Monitor;

/// Which run a phase belongs to, as the progress line names it: "rep 3/5", "point 2/4 rep 3/5"
/// when the experiment has several points, "warm-up 1/2" for a warm-up run (`rep` counts from 0).
pub fn run_label(point: usize, points: usize, rep: u32, reps: u32, warmup: bool) -> String {
    let which = if warmup { "warm-up" } else { "rep" };
    let run = format!("{which} {}/{reps}", rep + 1);
    if points > 1 { format!("point {}/{points} {run}", point + 1) } else { run }
}

/// The progress line after its bar: bytes done of the phase's total, the rate so far (MB/s =
/// 10^6 B/s) and the time left at that rate; "-" for the rate and ETA until bytes have moved,
/// and "finishing" once all have (a write phase's final commit is still inside its time).
pub fn progress_text(done: u64, total: u64, elapsed_s: f64) -> String {
    let moved = format!("{} / {}", fmt_size(done), fmt_size(total));
    if done == 0 || elapsed_s <= 0.0 {
        return format!("{moved} · - MB/s · ETA -");
    }
    let rate = done as f64 / elapsed_s;
    if done >= total {
        // Every op is done; the workers commit and close (a final commit can take long).
        return format!("{moved} · {} MB/s · finishing (commit, close)", fmt_rate(rate));
    }
    let left = (total - done) as f64 / rate;
    format!("{moved} · {} MB/s · ETA {}", fmt_rate(rate), fmt_eta(left))
}

/// The progress line of a time-bounded phase: bytes done, the rate so far, and the time
/// against its bound ("3.2 s of 10 s").
pub fn bounded_text(done: u64, elapsed_s: f64, bound_s: f64) -> String {
    let rate =
        if done == 0 || elapsed_s <= 0.0 { "-".to_string() } else { fmt_rate(done as f64 / elapsed_s) };
    format!("{} · {rate} MB/s · {}", fmt_size(done), bound_left(elapsed_s, bound_s))
}

/// The progress line of a metadata phase: ops done (of the total, when known), the rate so
/// far in ops/s and the time left at that rate.
pub fn progress_ops_text(done: u64, total: u64, elapsed_s: f64) -> String {
    let moved = if total > 0 { format!("{done} / {total} ops") } else { format!("{done} ops") };
    if done == 0 || elapsed_s <= 0.0 {
        return format!("{moved} · - ops/s");
    }
    let rate = done as f64 / elapsed_s;
    let eta = match total {
        0 => String::new(),
        t if done >= t => " · finishing (commit)".to_string(),
        t => format!(" · ETA {}", fmt_eta((t - done) as f64 / rate)),
    };
    format!("{moved} · {} ops/s{eta}", crate::units::fmt_ops(rate))
}

/// Seconds left, to the precision a person waiting wants: "4.2 s", "42 s", "3 min 05 s",
/// "2 h 07 min".
pub fn fmt_eta(secs: f64) -> String {
    if !secs.is_finite() {
        return "-".into();
    }
    let whole = secs.round() as u64;
    if secs < 10.0 {
        format!("{secs:.1} s")
    } else if whole < 60 {
        format!("{whole} s")
    } else if whole < 3600 {
        format!("{} min {:02} s", whole / 60, whole % 60)
    } else {
        format!("{} h {:02} min", whole / 3600, whole % 3600 / 60)
    }
}

/// How often a plain progress line is printed when stderr is not a terminal (a batch job's
/// output file, a pipe), unless `--progress-every` says otherwise.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(10);

/// How the command line shows progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// A live line (a bar) on a terminal.
    Live,
    /// A plain line every so often, for stderr that is a file or a pipe.
    Lines(Duration),
}

/// What is shown of the phase that runs.
struct Shown {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    start: Instant,
    /// It counts ops (a metadata phase).
    ops: bool,
    /// Plain lines: when the last one was printed (the phase's start before the first).
    last_line: Instant,
}

/// The monitor the command line uses.
pub struct CliMonitor {
    mode: Mode,
    state: Mutex<Option<Shown>>,
    /// The time bound of the phase shown, in s (None: bounded by its bytes).
    bound_s: Mutex<Option<f64>>,
}

impl CliMonitor {
    /// Nothing with `quiet`; a live line when stderr is a terminal; else a plain line every
    /// [`DEFAULT_EVERY`].
    pub fn new(quiet: bool) -> CliMonitor {
        CliMonitor::every(quiet, Some(DEFAULT_EVERY))
    }

    /// As [`CliMonitor::new`], plain lines every `lines` (None or zero: none).
    pub fn every(quiet: bool, lines: Option<Duration>) -> CliMonitor {
        let mode = match lines.filter(|d| !d.is_zero()) {
            _ if quiet => Mode::Off,
            _ if std::io::stderr().is_terminal() => Mode::Live,
            Some(d) => Mode::Lines(d),
            None => Mode::Off,
        };
        CliMonitor { mode, state: Mutex::new(None), bound_s: Mutex::new(None) }
    }

    /// `--progress-every TIME` (`10s`, `500ms`, `0` for none): how often a plain line is
    /// printed when stderr is not a terminal; bad values are refused naming the option.
    pub fn parse_every(value: Option<&str>) -> crate::error::Result<Option<Duration>> {
        let Some(v) = value else { return Ok(Some(DEFAULT_EVERY)) };
        let ns = crate::units::parse_duration_ns(v).map_err(|e| {
            crate::error::Error::spec(
                "progress-every",
                v,
                format!("{e} (a time such as 10s, 500ms, or 0 for none)"),
            )
        })?;
        Ok((ns > 0).then(|| Duration::from_nanos(ns)))
    }

    fn start(&self, label: &str, total: u64, ops: bool) {
        *self.bound_s.lock().expect("progress lock") = None;
        let bar = match self.mode {
            Mode::Off => return,
            Mode::Lines(_) => None,
            Mode::Live => {
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
                bar.set_style(
                    ProgressStyle::with_template("{prefix} [{bar:24}] {msg}")
                        .expect("valid template")
                        .progress_chars("=> "),
                );
                bar.set_prefix(label.to_string());
                bar.enable_steady_tick(Duration::from_millis(200));
                bar.set_message(text(0, total, 0.0, ops));
                Some(bar)
            }
        };
        let now = Instant::now();
        let shown = Shown { bar, label: label.to_string(), total, start: now, ops, last_line: now };
        *self.state.lock().expect("progress lock") = Some(shown);
    }

    /// The line's text after its label, for `done` (and the ranks' progress, if any).
    fn line(&self, sh: &Shown, done: u64, ranks: Option<&RanksProgress>) -> String {
        let elapsed = sh.start.elapsed().as_secs_f64();
        let mut t = match *self.bound_s.lock().expect("progress lock") {
            Some(b) if sh.ops => {
                format!("{} · {}", progress_ops_text(done, 0, elapsed), bound_left(elapsed, b))
            }
            Some(b) => bounded_text(done, elapsed, b),
            None => text(done, sh.total, elapsed, sh.ops),
        };
        if let Some(r) = ranks {
            t += &ranks_text(r, sh.ops);
        }
        t
    }

    fn show(&self, done: u64, ranks: Option<&RanksProgress>) {
        let mut state = self.state.lock().expect("progress lock");
        let Some(sh) = state.as_mut() else { return };
        let msg = self.line(sh, done, ranks);
        match (&sh.bar, self.mode) {
            (Some(bar), _) => {
                match *self.bound_s.lock().expect("progress lock") {
                    Some(b) => {
                        bar.set_position((sh.start.elapsed().as_secs_f64() / b * 1000.0).min(1000.0) as u64)
                    }
                    None => bar.set_position(done),
                }
                bar.set_message(msg);
            }
            (None, Mode::Lines(every)) if sh.last_line.elapsed() >= every => {
                sh.last_line = Instant::now();
                eprintln!("progress: {}: {msg}", sh.label);
            }
            _ => {}
        }
    }
}

/// The time against a bound: "3.2 s of 10 s", or "finishing" past it.
fn bound_left(elapsed_s: f64, bound_s: f64) -> String {
    if elapsed_s >= bound_s {
        "finishing (commit, close)".to_string()
    } else {
        format!("{} of {}", fmt_eta(elapsed_s), fmt_eta(bound_s))
    }
}

/// The ranks' part of a progress line: the rank furthest behind (its share of its part, or
/// what it did where parts have no size), and how many ranks were heard from when not all.
pub fn ranks_text(r: &RanksProgress, ops: bool) -> String {
    let mut t = String::new();
    if let Some((rank, host, done, part)) = &r.slowest {
        let how = match (*part, ops) {
            (0, true) => format!("{done} ops"),
            (0, false) => fmt_size(*done),
            (p, _) => format!("{:.0}%", (*done as f64 / p as f64 * 100.0).min(100.0)),
        };
        t += &format!(" · slowest rank {rank} ({host}) {how}");
    }
    if r.heard < r.ranks {
        t += &format!(" · {} of {} ranks heard from", r.heard, r.ranks);
    }
    t
}

fn text(done: u64, total: u64, elapsed_s: f64, ops: bool) -> String {
    if ops { progress_ops_text(done, total, elapsed_s) } else { progress_text(done, total, elapsed_s) }
}

impl Monitor for CliMonitor {
    fn begin_bounded(&self, label: &str, _total_bytes: u64, bound_ns: u64) {
        // The bar fills with the time: a thousandth of the bound per step.
        self.start(label, 1000, false);
        *self.bound_s.lock().expect("progress lock") = Some(bound_ns as f64 / 1e9);
        if let Some(bar) = self.state.lock().expect("progress lock").as_ref().and_then(|s| s.bar.as_ref()) {
            bar.set_message(bounded_text(0, 0.0, bound_ns as f64 / 1e9));
        }
    }

    fn begin(&self, label: &str, total_bytes: u64) {
        self.start(label, total_bytes, false)
    }

    fn begin_ops(&self, label: &str, total_ops: u64) {
        self.start(label, total_ops, true)
    }

    fn tick(&self, done: u64) -> Option<i32> {
        self.show(done, None);
        crate::env::signals::pending()
    }

    fn tick_ranks(&self, done: u64, ranks: &RanksProgress) -> Option<i32> {
        self.show(done, Some(ranks));
        crate::env::signals::pending()
    }

    fn wants_ticks(&self) -> bool {
        self.mode != Mode::Off
    }

    fn wants_ranks(&self) -> bool {
        self.mode != Mode::Off
    }

    fn end(&self) {
        if let Some(bar) = self.state.lock().expect("progress lock").take().and_then(|s| s.bar) {
            bar.finish_and_clear();
        }
    }

    fn note(&self, msg: &str) {
        // Warnings show even with --quiet: they are about the user's disks, not progress.
        match self.state.lock().expect("progress lock").as_ref().and_then(|s| s.bar.as_ref()) {
            Some(bar) => bar.suspend(|| eprintln!("warning: {msg}")),
            None => eprintln!("warning: {msg}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_run_and_says_what_is_left() {
        assert_eq!(run_label(0, 1, 2, 5, false), "rep 3/5");
        assert_eq!(run_label(1, 4, 0, 5, false), "point 2/4 rep 1/5");
        assert_eq!(run_label(0, 1, 0, 2, true), "warm-up 1/2");
        // 384 MiB of 512 MiB in 0.5 s: 805 MB/s, the other 128 MiB in 0.17 s.
        assert_eq!(progress_text(384 << 20, 512 << 20, 0.5), "384 MiB / 512 MiB · 805 MB/s · ETA 0.2 s");
        assert_eq!(progress_text(0, 512 << 20, 0.0), "0 B / 512 MiB · - MB/s · ETA -");
        assert_eq!(
            progress_text(1 << 30, 1 << 30, 2.0),
            "1 GiB / 1 GiB · 537 MB/s · finishing (commit, close)"
        );
        // 1.5 GB of 100 GB at 50 MB/s: 1970 s left.
        assert_eq!(
            progress_text(1_500_000_000, 100_000_000_000, 30.0),
            "1.40 GiB / 93.13 GiB · 50.0 MB/s · ETA 32 min 50 s"
        );
        assert_eq!([fmt_eta(42.4), fmt_eta(7630.0), fmt_eta(f64::INFINITY)], ["42 s", "2 h 07 min", "-"]);
        assert_eq!(bounded_text(384 << 20, 0.5, 10.0), "384 MiB · 805 MB/s · 0.5 s of 10 s");
        assert_eq!(bounded_text(0, 0.0, 30.0), "0 B · - MB/s · 0.0 s of 30 s");
        assert_eq!(bounded_text(1 << 20, 30.2, 30.0), "1 MiB · 0.03 MB/s · finishing (commit, close)");
    }

    /// The ranks' part of a line names the rank furthest behind, by its share or (parts of no
    /// known size) by what it did, and says when not every rank was heard from.
    #[test]
    fn the_line_names_the_slowest_rank() {
        let r = RanksProgress { heard: 6, ranks: 6, slowest: Some((3, "h2".into(), 1 << 20, 4 << 20)) };
        assert_eq!(ranks_text(&r, false), " · slowest rank 3 (h2) 25%");
        let r = RanksProgress { heard: 4, ranks: 6, slowest: Some((5, "h3".into(), 1 << 30, 0)) };
        assert_eq!(ranks_text(&r, false), " · slowest rank 5 (h3) 1 GiB · 4 of 6 ranks heard from");
        let r = RanksProgress { heard: 2, ranks: 2, slowest: Some((1, "a".into(), 1500, 0)) };
        assert_eq!(ranks_text(&r, true), " · slowest rank 1 (a) 1500 ops");
        assert_eq!(CliMonitor::parse_every(None).unwrap(), Some(DEFAULT_EVERY));
        assert_eq!(CliMonitor::parse_every(Some("0")).unwrap(), None);
        assert_eq!(CliMonitor::parse_every(Some("500ms")).unwrap(), Some(Duration::from_millis(500)));
        let e = CliMonitor::parse_every(Some("often")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().starts_with("progress-every = `often`"), "{e}");
    }
}
