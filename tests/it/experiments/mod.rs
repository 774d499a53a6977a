//! Experiments: sweeps, run order, warm-ups and environment control.

mod sweeps;
