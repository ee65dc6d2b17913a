//! One module per subcommand: its arguments (`Args`) and its `run`.

pub mod calibrate;
pub mod export_fio;
pub mod merge;
pub mod model;
pub mod plan;
pub mod plan_args;
pub mod plan_shard;
pub mod plot;
pub mod presets;
pub mod reproduce;
pub mod run;
pub mod scrub;
pub mod serve;
pub mod sim;
pub mod sweep;
pub mod trace_stats;
pub mod validate;
