//! `raidlab export-fio`: the fio job file of a workload.

use crate::args::EngineArg;
use crate::common::{emit, phases_of, workload_of};
use crate::failure::Failure;
use raidlab_core::workload::{Check, JobPhase, Workload};

/// Print an fio job file equivalent to a workload.
#[derive(clap::Args)]
pub struct Args {
    /// Workload as fio-style `key=value` pairs.
    #[arg(long, short = 'w', conflicts_with = "job")]
    workload: Option<String>,
    /// raidlab-readable fio job file to normalise.
    #[arg(long)]
    job: Option<String>,
    /// The file or device fio should use.
    #[arg(long)]
    filename: Option<String>,
    /// fio ioengine.
    #[arg(long, value_enum, default_value_t = EngineArg::IoUring)]
    engine: EngineArg,
    /// direct=0 (page cache).
    #[arg(long)]
    buffered: bool,
    /// Random seed (fio's randseed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Run `export-fio`.
pub fn run(args: Args) -> Result<(), Failure> {
    if let Some(path) = &args.job {
        // fio runs a verify phase itself, after the job that asks for it.
        let phases: Vec<JobPhase> = phases_of(path, &crate::common::this_machine())?
            .into_iter()
            .filter(|p| p.check != Check::ReadBack)
            .collect();
        if phases.len() > 1
            || phases
                .iter()
                .any(|p| p.check.verifies() || !p.beside.is_empty())
        {
            return emit(&None, &phased(&args, &phases));
        }
        // One job: read once (its notes said once).
        let w = &phases[0].workload;
        return emit(&None, &job_text(&args, w));
    }
    let w = workload_of(&args.workload, &args.job)?;
    emit(&None, &job_text(&args, &w))
}

/// The fio job file of one workload: its options in `[global]`, one job.
fn job_text(args: &Args, w: &Workload) -> String {
    let mut text = raidlab_io::fio_job(
        w,
        args.seed,
        args.filename.as_deref(),
        args.engine.into(),
        !args.buffered && !w.buffered,
    );
    if w.backlog.is_some() {
        // fio logs writes to read back only for a job that verifies.
        text += "verify=crc32c\n";
    }
    if w.exitall {
        // fio's exitall stops the jobs of one reporting group; raidlab's
        // stops every job of the phase, which the sections' own groups
        // (new_group) would split.
        text += "exit_what=stonewall\n";
    }
    text
}

/// The fio job file of a job file's phases: a section each job section,
/// holding all of its options (a `[global]` would carry one section's
/// options into the next); the first of each phase after the first behind
/// a `stonewall`, as they run, and those beside it with `new_group`, so
/// that fio reports each section on its own as raidlab does (its
/// `group_reporting` would otherwise merge a phase's sections); a
/// verifying phase says `verify`, and fio reads its writes back itself.
fn phased(args: &Args, phases: &[JobPhase]) -> String {
    let mut s = String::from(
        "; written by raidlab export-fio: one section a job section; a stonewall starts each phase after the first\n",
    );
    for (i, p) in phases.iter().enumerate() {
        for (k, (name, w)) in p.sections().enumerate() {
            s += &format!("\n[{name}]\n");
            if i > 0 && k == 0 {
                s += "stonewall\n";
            }
            if k > 0 {
                s += "new_group\n";
            }
            if p.check.verifies() && w.backlog.is_none() {
                // raidlab's header stands for every fio method; fio checks
                // its own kind.
                s += "verify=crc32c\n";
            }
            s += &section_body(args, w);
        }
    }
    s
}

/// One job section's options, a line each, without the header and the
/// section line [`job_text`] puts around them.
fn section_body(args: &Args, w: &Workload) -> String {
    let mut s = String::new();
    for line in job_text(args, w).lines() {
        let header = line.starts_with("; written by") || line.starts_with('[');
        if !header && !line.is_empty() {
            s += line;
            s.push('\n');
        }
    }
    s
}
