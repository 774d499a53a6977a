//! Progress on stderr: one bar per phase with live MB/s, shown only on a terminal and never
//! with `--quiet`; and the stop check for signals.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::units::fmt_rate;
use crate::worker::Monitor;

/// The monitor the command line uses.
pub struct CliMonitor {
    enabled: bool,
    state: Mutex<Option<(ProgressBar, Instant)>>,
}

impl CliMonitor {
    /// Shows bars only when both stdout and stderr are terminals and not `quiet`.
    pub fn new(quiet: bool) -> CliMonitor {
        CliMonitor {
            enabled: !quiet && std::io::stderr().is_terminal() && std::io::stdout().is_terminal(),
            state: Mutex::new(None),
        }
    }
}

impl Monitor for CliMonitor {
    fn begin(&self, label: &str, total_bytes: u64) {
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>24} [{bar:30}] {percent:>3}% {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        *self.state.lock().expect("progress lock") = Some((bar, Instant::now()));
    }

    fn tick(&self, bytes_done: u64) -> Option<i32> {
        if let Some((bar, start)) = self.state.lock().expect("progress lock").as_ref() {
            bar.set_position(bytes_done);
            let secs = start.elapsed().as_secs_f64();
            if secs > 0.0 {
                bar.set_message(format!("{} MB/s", fmt_rate(bytes_done as f64 / secs)));
            }
        }
        crate::env::signals::pending()
    }

    fn wants_ticks(&self) -> bool {
        self.enabled
    }

    fn end(&self) {
        if let Some((bar, _)) = self.state.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }

    fn note(&self, msg: &str) {
        // Warnings show even with --quiet: they are about the user's disks, not progress.
        match self.state.lock().expect("progress lock").as_ref() {
            Some((bar, _)) => bar.suspend(|| eprintln!("warning: {msg}")),
            None => eprintln!("warning: {msg}"),
        }
    }
}
