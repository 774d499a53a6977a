//! The orders a spec's phases draw with, checked with the rest of the spec: an order with
//! repeats (uniform, zipf, pareto, normal) cannot write files from empty, refused by name
//! before any I/O.

use crate::error::{Error, Result};
use crate::spec::{OpKind, Spec};

/// Refuses a `write` phase whose order draws with repeats.
pub(super) fn check_orders(spec: &Spec) -> Result<()> {
    for p in &spec.phases {
        if p.op == OpKind::Write && p.order.repeats() {
            return Err(Error::spec(
                "ops",
                &p.name,
                format!(
                    "order {} draws blocks with repeats, so a write from emptied files would leave the blocks it never draws as holes; use rewrite (the files laid out first, as fio lays a file out before it overwrites it)",
                    p.order.label()
                ),
            ));
        }
    }
    Ok(())
}
