//! Progress on stderr: one line per phase run (which repetition of how many, the phase, a
//! bar, bytes done, the rate so far and the time left at that rate), shown only on a terminal
//! and never with `--quiet`; and the stop check for signals.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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
    let time = if elapsed_s >= bound_s {
        "finishing (commit, close)".to_string()
    } else {
        format!("{} of {}", fmt_eta(elapsed_s), fmt_eta(bound_s))
    };
    format!("{} · {rate} MB/s · {time}", fmt_size(done))
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

/// The monitor the command line uses.
pub struct CliMonitor {
    enabled: bool,
    /// The bar, when the phase began, and whether it counts ops (a metadata phase).
    state: Mutex<Option<(ProgressBar, Instant, bool)>>,
    /// The time bound of the phase shown, in s (None: bounded by its bytes).
    bound_s: Mutex<Option<f64>>,
}

impl CliMonitor {
    /// Shows bars only when both stdout and stderr are terminals and not `quiet`.
    pub fn new(quiet: bool) -> CliMonitor {
        CliMonitor {
            enabled: !quiet && std::io::stderr().is_terminal() && std::io::stdout().is_terminal(),
            state: Mutex::new(None),
            bound_s: Mutex::new(None),
        }
    }
}

impl CliMonitor {
    fn start(&self, label: &str, total: u64, ops: bool) {
        *self.bound_s.lock().expect("progress lock") = None;
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:24}] {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar.set_message(text(0, total, 0.0, ops));
        *self.state.lock().expect("progress lock") = Some((bar, Instant::now(), ops));
    }
}

fn text(done: u64, total: u64, elapsed_s: f64, ops: bool) -> String {
    if ops { progress_ops_text(done, total, elapsed_s) } else { progress_text(done, total, elapsed_s) }
}

impl Monitor for CliMonitor {
    fn begin_bounded(&self, label: &str, _total_bytes: u64, bound_ns: u64) {
        // The bar fills with the time: a thousandth of the bound per step.
        self.start(label, 1000, false);
        *self.bound_s.lock().expect("progress lock") = Some(bound_ns as f64 / 1e9);
        if let Some((bar, ..)) = self.state.lock().expect("progress lock").as_ref() {
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
        let bound = *self.bound_s.lock().expect("progress lock");
        if let Some((bar, start, ops)) = self.state.lock().expect("progress lock").as_ref() {
            let elapsed = start.elapsed().as_secs_f64();
            match bound {
                Some(b) => {
                    bar.set_position((elapsed / b * 1000.0).min(1000.0) as u64);
                    bar.set_message(bounded_text(done, elapsed, b));
                }
                None => {
                    bar.set_position(done);
                    let total = bar.length().unwrap_or(done);
                    bar.set_message(text(done, total, elapsed, *ops));
                }
            }
        }
        crate::env::signals::pending()
    }

    fn wants_ticks(&self) -> bool {
        self.enabled
    }

    fn end(&self) {
        if let Some((bar, ..)) = self.state.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }

    fn note(&self, msg: &str) {
        // Warnings show even with --quiet: they are about the user's disks, not progress.
        match self.state.lock().expect("progress lock").as_ref() {
            Some((bar, ..)) => bar.suspend(|| eprintln!("warning: {msg}")),
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
}
