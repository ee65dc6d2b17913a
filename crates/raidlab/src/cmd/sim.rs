//! `raidlab sim`: simulate a topology under a workload.

use crate::args::{JobArgs, PresetFiles, RunFormat};
use crate::common::RunProgress;
use crate::failure::Failure;
use raidlab_core::topology::{self, Topology};
use raidlab_core::workload::Workload;

/// Simulate a topology under a workload.
///
/// Without `runtime=` each job makes one pass over `size` (default: the
/// whole volume), as fio does; with `runtime=` it runs that long after
/// `ramp_time=`. How SSDs start (`state=`) is decided as docs/workloads.md
/// says, and echoed in the result.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    presets: PresetFiles,
}

/// Run `sim`.
pub fn run(args: Args) -> Result<(), Failure> {
    let db = args.presets.load()?;
    let topo = topology::resolve(&args.job.expr()?, &db)?;
    let w = args.job.workload()?;
    raidlab_sim::check_pace(&topo, &w)?;
    note_long_pass(&topo, &w);
    let result = {
        let bar = RunProgress::new("sim");
        raidlab_sim::simulate_with_progress(&topo, &w, args.job.seed, &|f| bar.set(f))?
    };
    let mut extra = String::new();
    if args.job.format == RunFormat::Table {
        if let Some(Ok(e)) = raidlab_sim::analytic::expect(&topo, &w, args.job.seed) {
            extra = raidlab_report::text::analytic_line(&result, &e);
        }
    }
    args.job.emit_result(&result, 0, &extra)
}

/// Without `runtime`, fio's rule is one pass over `size` per job: say so on
/// stderr when that pass is long.
fn note_long_pass(topo: &Topology, w: &Workload) {
    if w.runtime.is_some() {
        return;
    }
    let Ok(cap) = raidlab_sim::volume_capacity(topo) else {
        return;
    };
    let bytes = w.size.unwrap_or(cap);
    let ios = bytes / w.bs.max(1) * w.numjobs as u64;
    if ios > 20_000_000 {
        let span = if bytes as f64 >= 1e12 {
            format!("{:.1} TB", bytes as f64 / 1e12)
        } else {
            format!("{:.1} GB", bytes as f64 / 1e9)
        };
        eprintln!(
            "raidlab: note: no runtime given, so each job makes one pass over {span} ({ios} I/Os in all); add runtime= to bound the run"
        );
    }
}
