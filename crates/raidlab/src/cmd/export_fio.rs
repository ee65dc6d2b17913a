//! `raidlab export-fio`: the fio job file of a workload.

use crate::args::EngineArg;
use crate::common::{emit, workload_of};
use crate::failure::Failure;

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
    let w = workload_of(&args.workload, &args.job)?;
    let text = raidlab_io::fio_job(
        &w,
        args.seed,
        args.filename.as_deref(),
        args.engine.into(),
        !args.buffered && !w.buffered,
    );
    emit(&None, &text)
}
