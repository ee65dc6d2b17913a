//! The command line: subcommands and how clap's own errors are reported.

use crate::cmd;
use clap::error::ErrorKind;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// raidlab — a laboratory for storage built from flash SSDs in RAID arrays.
///
/// It simulates arrays you do not have, runs the same workloads for real
/// on files and block devices, and reports tables, plots and HTML.
/// The contract of every command is in docs/ (docs/README.md).
#[derive(Parser)]
#[command(name = "raidlab", version, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    Sim(cmd::sim::Args),
    Validate(cmd::validate::Args),
    Reproduce(cmd::reproduce::Args),
    Run(cmd::run::Args),
    Check(cmd::scrub::CheckArgs),
    Repair(cmd::scrub::RepairArgs),
    Rebuild(cmd::scrub::RebuildArgs),
    Create(cmd::scrub::CreateArgs),
    Examine(cmd::scrub::ExamineArgs),
    ExportFio(cmd::export_fio::Args),
    Model(cmd::model::Args),
    Sweep(cmd::sweep::Args),
    Merge(cmd::merge::Args),
    Plot(cmd::plot::Args),
    Presets(cmd::presets::Args),
    Calibrate(cmd::calibrate::Args),
    Plan(cmd::plan::Args),
    TraceStats(cmd::trace_stats::Args),
    Serve(cmd::serve::Args),
}

/// Report an argument error of clap's: help and version go to stdout with
/// status 0; a bare `raidlab` (or a subcommand missing its arguments) prints
/// the help on stderr with status 2; any other error is one line on stderr,
/// clap's hint kept ("a similar subcommand exists"), pointing at the help of
/// the subcommand in question, with status 2.
pub fn usage_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => e.exit(),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            eprintln!(
                "raidlab: error: {} (see '{}')",
                one_line(&e),
                help_command()
            );
            ExitCode::from(2)
        }
    }
}

/// clap's message without its usage block, on one line.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut msg = String::new();
    for line in text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
    {
        if !msg.is_empty() {
            msg += if line.starts_with("tip:") { "; " } else { " " };
        }
        msg += line;
    }
    msg.strip_prefix("error: ").unwrap_or(&msg).to_string()
}

/// `raidlab SUBCOMMAND --help` for the subcommand on the command line, or
/// `raidlab --help` when none is recognisable.
fn help_command() -> String {
    use clap::CommandFactory;
    let cli = Cli::command();
    let sub = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .filter(|a| cli.find_subcommand(a).is_some());
    match sub {
        Some(s) => format!("raidlab {s} --help"),
        None => "raidlab --help".to_string(),
    }
}
