//! raidlab's shared vocabulary.
//!
//! Everything both engines and the reports agree on lives here: units, topology
//! expressions (parser, validation, resolution against presets), workloads (the
//! `k=v` language, fio job files and the deterministic I/O stream generator),
//! presets (TOML data), the result schema and the published-measurement CSV.
//! This crate knows nothing about events or files on disk.

#![warn(missing_docs)]

pub mod analytic;
pub mod batch;
mod canonical;
pub mod depth_search;
pub mod error;
pub mod guard;
pub mod ioreq;
pub mod kernel;
pub mod metrics;
pub mod pace;
pub mod par;
pub mod preset;
pub mod published;
pub mod result;
pub mod rng;
pub mod steady;
pub mod steadystate;
pub mod topology;
pub mod trace;
pub mod units;
pub mod workload;

pub use error::{Error, ErrorKind, Result};
