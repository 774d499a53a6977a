//! Experiments: sweeps, run order, warm-ups, environment control, the studies' presets, and
//! the per-host table.

mod presets;
mod sweeps;
