//! The library's error type: each variant names what was at fault, and maps to one exit code.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong, as values. Exit codes are decided by [`Error::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a spec field, CLI flag or file has a value iolab refuses. Exit code 2.
    #[error("{field} = `{}`: {reason}", crate::text::one_line(value))]
    Spec { field: String, value: String, reason: String },

    /// A system call failed during a run. Names the call, the file and (if any) the offset.
    #[error("{call} on {}{}: {source}", crate::text::escape_path(path), offset.map(|o| format!(" at offset {o}")).unwrap_or_default())]
    Io {
        call: &'static str,
        path: PathBuf,
        offset: Option<u64>,
        #[source]
        source: io::Error,
    },

    /// The results store could not be opened, read or written.
    #[error("store {}: {msg}", crate::text::escape_path(path))]
    Store { path: PathBuf, msg: String },

    /// The run was stopped by a signal; results measured before it are kept.
    #[error("interrupted by signal {0}")]
    Interrupted(i32),

    /// A run failed for a reason that is not one system call (a worker died, a check failed).
    #[error("{0}")]
    Run(String),

    /// Something the user asked for that does not exist (an experiment id, a preset).
    #[error("{0}")]
    NotFound(String),

    /// Writing the command's output failed; `kind` is the I/O error's kind when there was
    /// one, so that a reader closing the pipe (`iolab ... | head`) ends the command quietly.
    #[error("writing output: {msg}")]
    Output { msg: String, kind: Option<io::ErrorKind> },
}

impl Error {
    /// An error that only says the work was stopped by someone else (another worker failed,
    /// or a signal arrived): an echo of the real cause.
    pub fn is_echo(&self) -> bool {
        matches!(self, Error::Run(m) if m.starts_with("aborted"))
    }

    /// Keeps in `kept` the most telling of two errors: the first real failure, before any
    /// echo of it.
    pub fn keep_telling(kept: &mut Option<Error>, e: Error) {
        if kept.as_ref().is_none_or(Error::is_echo) && !(kept.is_some() && e.is_echo()) {
            *kept = Some(e);
        }
    }
    /// Shorthand for a spec error.
    pub fn spec(field: impl Into<String>, value: impl ToString, reason: impl Into<String>) -> Self {
        Error::Spec { field: field.into(), value: value.to_string(), reason: reason.into() }
    }

    /// Shorthand for a failed system call on a path.
    pub fn io(call: &'static str, path: impl Into<PathBuf>, offset: Option<u64>, source: io::Error) -> Self {
        Error::Io { call, path: path.into(), offset, source }
    }

    /// An output error, keeping the kind of the I/O error under `e` (an `io::Error`, or one
    /// that a JSON or CSV writer wraps).
    pub fn output(e: impl std::fmt::Display + 'static) -> Self {
        let any = &e as &dyn std::any::Any;
        let kind = any
            .downcast_ref::<io::Error>()
            .map(io::Error::kind)
            .or_else(|| any.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind))
            .or_else(|| match any.downcast_ref::<csv::Error>().map(csv::Error::kind) {
                Some(csv::ErrorKind::Io(io)) => Some(io.kind()),
                _ => None,
            });
        Error::Output { msg: e.to_string(), kind }
    }

    /// Whether this is the output's reader having gone away (EPIPE on stdout): not a failure
    /// of the command, which ends quietly as other Unix tools do.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output { kind: Some(io::ErrorKind::BrokenPipe), .. })
    }

    /// 0 ok, 1 run failed, 2 bad input, 128+signal when interrupted.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Spec { .. } | Error::NotFound(_) => 2,
            Error::Interrupted(sig) => 128 + sig,
            Error::Io { .. } | Error::Store { .. } | Error::Run(_) | Error::Output { .. } => 1,
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
