//! `iolab engines` (and `iolab run --engine list`): every engine with what it can do.

use std::io::Write;

use crate::error::Result;
use crate::worker::registry::ENGINES;

use super::put;

/// `iolab engines`.
pub fn cmd_engines(stdout: &mut dyn Write) -> Result<()> {
    put(stdout, &table())
}

/// The engines as a text table, then a line for each engine this machine cannot run.
pub fn table() -> String {
    let rows: Vec<Vec<String>> = ENGINES
        .iter()
        .map(|r| {
            let e = r.def;
            let c = &e.caps;
            let calls: Vec<&str> = c.sync_calls.iter().map(|s| s.name()).collect();
            vec![
                e.name.to_string(),
                if c.direct { "yes" } else { "no" }.into(),
                if c.max_iodepth > 1 { format!("async, 1-{}", c.max_iodepth) } else { "sync, 1".into() },
                c.strided.unwrap_or("no").to_string(),
                if c.window { "yes" } else { "no" }.into(),
                calls.join(","),
                e.about.to_string(),
            ]
        })
        .collect();
    let mut out = crate::text::text_table(
        &["engine", "O_DIRECT", "iodepth", "strided memory", "window", "commit calls", "what it does"],
        &rows,
        &[],
    );
    out.push_str("commit calls: the first is the default\n");
    for e in ENGINES.iter().map(|r| r.def) {
        if let Err(reason) = (e.caps.probe)() {
            out.push_str(&format!("{} is unavailable here: {reason}\n", e.name));
        }
    }
    out
}
