//! `iolab report`: one self-contained HTML page of a stored experiment, or of every host
//! (`--compare`). It reads only the store; nothing is rerun.

use std::io::Write;

use crate::cli::ReportArgs;
use crate::error::{Error, Result};
use crate::report::html;
use crate::report::output::{self, Kind};

use super::{put, read_store};

/// `iolab report`.
pub fn cmd_report(args: ReportArgs, stdout: &mut dyn Write) -> Result<()> {
    let db = super::db_path(&args.db)?;
    if let Some(p) = &args.output {
        output::check(p, "output", Kind::Html, args.force, &[&db])?;
    }
    let store = read_store(&args.db)?;
    let page = if args.compare {
        html::compare::page(&store)?
    } else {
        let id = if args.last { "last".to_string() } else { args.id.clone().unwrap_or_default() };
        let exp = super::results::with_findings(store.load(&store.resolve_id(&id)?)?);
        html::experiment::page(&store, &exp, crate::experiment::preset::about(&exp).as_ref())?
    };
    match &args.output {
        Some(p) => {
            output::write_with(p, "output", Kind::Html, args.force, &[&db], |f| {
                f.write_all(page.as_bytes()).map_err(|e| Error::io("write", f.tmp_path(), None, e))
            })?;
            eprintln!("wrote {}", crate::text::escape_path(p));
            Ok(())
        }
        None => put(stdout, &page),
    }
}
