//! Commit bookkeeping of one worker: which files have uncommitted writes, when to commit them,
//! and the time and number of commits.

use std::path::PathBuf;

use crate::engine::CallError;
use crate::env::sys::now_ns;
use crate::error::{Error, Result};
use crate::spec::{SyncCall, SyncPolicy};

/// Commit bookkeeping of one worker: which files have uncommitted writes, and the time and
/// number of commits. Every engine loop commits through this, with nothing in flight.
pub(crate) struct Commits {
    call: SyncCall,
    pub dirty: Vec<bool>,
    pub sync_ns: u64,
    pub calls: u64,
}

/// An engine's commit of one file.
pub(crate) type SyncFn<'a> = dyn FnMut(u32, SyncCall) -> std::result::Result<(), CallError> + 'a;

impl Commits {
    pub fn new(call: SyncCall, files: usize) -> Commits {
        Commits { call, dirty: vec![false; files], sync_ns: 0, calls: 0 }
    }

    /// Commits one file; the time from the end of the last op to now counts as commit time.
    pub fn one(&mut self, sync: &mut SyncFn<'_>, file: u32, prev: &mut u64, paths: &[PathBuf]) -> Result<()> {
        sync(file, self.call).map_err(|e| Error::io(e.call.name(), &paths[file as usize], None, e.err))?;
        let t = now_ns();
        self.sync_ns += t - *prev;
        *prev = t;
        self.calls += 1;
        self.dirty[file as usize] = false;
        Ok(())
    }

    /// The end of a timed loop: the clock read a loop without per-op clocks did not take, then
    /// the final commit of what `end` and `every` left. Returns the loop's end time.
    pub fn at_end(
        &mut self,
        clocked: bool,
        policy: SyncPolicy,
        sync: &mut SyncFn<'_>,
        mut prev: u64,
        paths: &[PathBuf],
    ) -> Result<u64> {
        if !clocked {
            prev = now_ns();
        }
        if matches!(policy, SyncPolicy::End | SyncPolicy::Every(_)) {
            self.all_dirty(sync, &mut prev, paths)?;
        }
        Ok(prev)
    }

    /// Commits every file written since its last commit.
    pub fn all_dirty(&mut self, sync: &mut SyncFn<'_>, prev: &mut u64, paths: &[PathBuf]) -> Result<()> {
        for f in 0..self.dirty.len() as u32 {
            if self.dirty[f as usize] {
                self.one(sync, f, prev, paths)?;
            }
        }
        Ok(())
    }
}
