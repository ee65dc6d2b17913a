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
    /// Bad preset file or unknown preset.
    #[error("preset: {0}")]
    Preset(String),
    /// Bad published-measurement CSV.
    #[error("csv: {0}")]
    Csv(String),
    /// Bad argument of the analytic model or of a sweep.
    #[error("{0}")]
    Input(String),
}

/// Result alias for the core crate.
pub type Result<T> = std::result::Result<T, Error>;
