//! `raidlab`: simulate, run and report SSD RAID arrays.
//!
//! A thin front end: clap parses the arguments, one module per subcommand
//! (`cmd/`) calls the library crates, and their typed errors become one
//! line on stderr and an exit status (2 = bad input, 1 = runtime failure).

mod args;
mod cli;
mod cmd;
mod common;
mod failure;

use clap::Parser;
use cli::{Cli, Cmd};
use failure::Failure;
use std::process::ExitCode;

/// Hand the parsed command line to its subcommand.
fn dispatch(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Sim(a) => cmd::sim::run(a),
        Cmd::Validate(a) => cmd::validate::run(a),
        Cmd::Reproduce(a) => cmd::reproduce::run(a),
        Cmd::Run(a) => cmd::run::run(a),
        Cmd::Check(a) => cmd::scrub::check(a),
        Cmd::Repair(a) => cmd::scrub::repair(a),
        Cmd::Rebuild(a) => cmd::scrub::rebuild(a),
        Cmd::Create(a) => cmd::scrub::create(a),
        Cmd::Examine(a) => cmd::scrub::examine(a),
        Cmd::ExportFio(a) => cmd::export_fio::run(a),
        Cmd::Model(a) => cmd::model::run(a),
        Cmd::Sweep(a) => cmd::sweep::run(a),
        Cmd::Merge(a) => cmd::merge::run(a),
        Cmd::Plot(a) => cmd::plot::run(a),
        Cmd::Presets(a) => cmd::presets::run(a),
        Cmd::Calibrate(a) => cmd::calibrate::run(a),
        Cmd::Plan(a) => cmd::plan::run(a),
        Cmd::TraceStats(a) => cmd::trace_stats::run(a),
        Cmd::Serve(a) => cmd::serve::run(a),
    }
}

fn main() -> ExitCode {
    match Cli::try_parse() {
        Ok(cli) => match dispatch(cli) {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => f.report(),
        },
        Err(e) => cli::usage_error(e),
    }
}
