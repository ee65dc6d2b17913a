//! `raidlab merge`: join the slices of a sharded sweep.

use crate::common::{emit, read_data};
use crate::failure::Failure;

/// Join the slices of a sharded sweep into the unsharded output.
#[derive(clap::Args)]
pub struct Args {
    /// Slice files (all CSV or all JSON), in any order.
    #[arg(required = true)]
    slices: Vec<String>,
    /// Write to FILE instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<String>,
}

/// Run `merge`.
pub fn run(args: Args) -> Result<(), Failure> {
    let mut texts = Vec::new();
    for s in &args.slices {
        texts.push((s.clone(), read_data(s, "slice")?));
    }
    let text = raidlab_report::sweep::merge(&texts)?;
    emit(&args.output, &text)
}
