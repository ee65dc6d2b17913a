//! Typed errors of the core crate.

use thiserror::Error;

/// What can go wrong while reading user input (expressions, workloads, presets).
///
/// Every variant is a *user* error: the binary maps all of them to exit status 2.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// Malformed topology expression; `col` is 1-based.
    #[error("topology: column {col}: {msg}")]
    Syntax {
        /// 1-based column of the offending character.
        col: usize,
        /// What is wrong.
        msg: String,
    },
    /// A well-formed expression that describes an impossible configuration.
    #[error("topology: column {col}: {msg}")]
    Invalid {
        /// 1-based column of the node at fault.
        col: usize,
        /// What is wrong.
        msg: String,
    },
    /// Bad workload key or value.
    #[error("workload: {0}")]
    Workload(String),
    /// A job file's line at fault: `line` is 1-based in the text the
    /// parser read (an included file's lines told apart by
    /// [`crate::workload::locate_error`]).
    #[error("workload: job file line {line}: {msg}")]
    JobLine {
        /// 1-based line of the job file's text.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Bad preset file or unknown preset.
    #[error("preset: {0}")]
    Preset(String),
    /// Bad published-measurement CSV.
    #[error("csv: {0}")]
    Csv(String),
    /// Bad argument of the analytic model or of a sweep.
    #[error("{0}")]
    Input(String),
    /// A malformed or unreadable trace (`FILE:LINE: FIELD: what`).
    #[error("trace: {0}")]
    Trace(String),
}

/// What part of the input an [`Error`] is about, for callers that act on
/// it rather than print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The expression does not parse.
    Syntax,
    /// The expression parses but describes an impossible configuration.
    Invalid,
    /// A workload key or value.
    Workload,
    /// A preset file, or an unknown preset.
    Preset,
    /// A published-measurement CSV.
    Csv,
    /// An argument of the analytic model or of a sweep.
    Input,
    /// A trace file.
    Trace,
}

impl Error {
    /// What part of the input this error is about.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Syntax { .. } => ErrorKind::Syntax,
            Error::Invalid { .. } => ErrorKind::Invalid,
            Error::Workload(_) | Error::JobLine { .. } => ErrorKind::Workload,
            Error::Preset(_) => ErrorKind::Preset,
            Error::Csv(_) => ErrorKind::Csv,
            Error::Input(_) => ErrorKind::Input,
            Error::Trace(_) => ErrorKind::Trace,
        }
    }

    /// The 1-based column of the expression at fault, for expression errors.
    pub fn column(&self) -> Option<usize> {
        match self {
            Error::Syntax { col, .. } | Error::Invalid { col, .. } => Some(*col),
            _ => None,
        }
    }
}

/// Result alias for the core crate.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::PresetDb;
    use crate::topology::resolve;
    use crate::workload::Workload;

    #[test]
    fn errors_say_their_kind_and_column() {
        let db = PresetDb::builtin();
        let e = resolve("raid0(x25e,", &db).unwrap_err();
        assert_eq!((e.kind(), e.column()), (ErrorKind::Syntax, Some(12)));
        let e = resolve("raid5(2*x25e)", &db).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert!(e.column().is_some());
        let e = resolve("raid0(nosuch, x25e)", &db).unwrap_err();
        assert_eq!((e.kind(), e.column()), (ErrorKind::Invalid, Some(7)));
        let e = Workload::parse("rw=sideways").unwrap_err();
        assert_eq!((e.kind(), e.column()), (ErrorKind::Workload, None));
    }
}
