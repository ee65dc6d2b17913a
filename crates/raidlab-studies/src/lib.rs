//! Studies built on the simulator (`raidlab-sim`), which holds the engine
//! and the hardware components alone: `validate` (published measurements
//! against the model), `analytic` (the closed-form expectation a run is
//! checked against), `plan` (the search over arrays for a question) and
//! `fit` (calibrate's parameter search from probes or published figures).

pub mod analytic;
pub mod fit;
pub mod plan;
pub mod validate;
