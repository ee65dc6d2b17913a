//! `raidlab merge`: join the slices of a sharded sweep or plan.

use crate::common::{emit, read_data};
use crate::failure::Failure;

/// Join the slices of a sharded sweep (CSV or JSON), or the shard files of
/// a sharded plan, into the unsharded output.
#[derive(clap::Args)]
pub struct Args {
    /// Slice files (all CSV or all JSON) or plan shard files, in any order.
    #[arg(required = true)]
    slices: Vec<String>,
    /// Write to FILE instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<String>,
    /// Simulations in parallel for a plan's merge, which runs the few rows
    /// no shard could know were needed (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// Run `merge`.
pub fn run(args: Args) -> Result<(), Failure> {
    let mut texts = Vec::new();
    for s in &args.slices {
        texts.push((s.clone(), read_data(s, "slice")?));
    }
    let plans = texts
        .iter()
        .filter(|(_, t)| super::plan_shard::is_shard(t))
        .count();
    if plans == texts.len() {
        return super::plan::merge(&texts, &args.output, args.jobs);
    }
    if plans > 0 {
        return Err(Failure::input(
            "merge: the files mix plan shards and sweep slices",
        ));
    }
    let text = raidlab_report::sweep::merge(&texts)?;
    emit(&args.output, &text)
}
