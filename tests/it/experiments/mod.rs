//! Experiments: sweeps, run order, warm-ups, environment control, the studies' presets, and
//! results merged and compared across hosts.

mod findings;
mod hosts;
mod presets;
mod scale;
mod sweeps;
