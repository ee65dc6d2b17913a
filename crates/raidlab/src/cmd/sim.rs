//! `raidlab sim`: simulate a topology under a workload.

use crate::args::{JobArgs, PresetFiles, RunFormat};
use crate::common::RunProgress;
use crate::failure::Failure;
use raidlab_core::topology::{self, Topology};
use raidlab_core::workload::{JobPhase, Workload};

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
    let mut phases = args.job.phases(&simulated_host(&topo))?;
    if phases.len() > 1 || !phases[0].beside.is_empty() {
        return run_phases(&args, &topo, &phases);
    }
    let w = phases.remove(0).workload;
    raidlab_sim::check_pace(&topo, &w)?;
    note_long_pass(&topo, &w);
    note_long_runtime(&topo, &w, args.job.seed);
    let result = {
        let bar = RunProgress::new("sim");
        raidlab_sim::simulate_with_progress(&topo, &w, args.job.seed, &|f| bar.set(f))?
    };
    let mut extra = String::new();
    if args.job.format == RunFormat::Table {
        if let Some(Ok(e)) = raidlab_studies::analytic::expect(&topo, &w, args.job.seed) {
            extra = raidlab_report::text::analytic_line(&result, &e);
        }
    }
    args.job.emit_result(&result, 0, &extra)?;
    crate::common::job_failure(&result).map_or(Ok(()), Err)
}

/// fio's reserved keywords on the simulated host: its cores (`$ncpus`)
/// and a 4 KiB page (x86-64 Linux's, the hosts' presets being x86
/// servers); it models no memory size, so `$mb_memory` is refused.
fn simulated_host(topo: &Topology) -> raidlab_core::workload::Keywords {
    raidlab_core::workload::Keywords {
        ncpus: Some(u64::from(topo.host.cores)),
        mb_memory: None,
        pagesize: Some(4096),
        whose: "the simulated host, which models no memory size (give the size in bytes)".into(),
    }
}

/// Simulate a job file's phases in turn on one array, each reported on
/// its own (its section's name over it), and each section of a phase run
/// side by side with the others also on its own; one phase of several
/// sections is reported as one run.
fn run_phases(args: &Args, topo: &Topology, phases: &[JobPhase]) -> Result<(), Failure> {
    for p in phases {
        for (name, w) in p.sections() {
            raidlab_sim::check_pace(topo, w)
                .map_err(|e| Failure::from(e).context(format!("[{name}]")))?;
        }
        note_long_pass(topo, &p.workload);
        note_long_runtime(topo, &p.workload, args.job.seed);
    }
    let mut results = {
        let bar = RunProgress::new("sim");
        raidlab_sim::simulate_phases(topo, phases, args.job.seed, &|f| bar.set(f))?
    };
    if phases.len() == 1 {
        let r = results.remove(0);
        args.job.emit_result(&r, 0, "")?;
        return crate::common::job_failure(&r).map_or(Ok(()), Err);
    }
    let runs: Vec<(String, raidlab_core::result::RunResult)> =
        phases.iter().map(|p| p.name.clone()).zip(results).collect();
    args.job.emit_phases(&runs, 0)?;
    let failed = runs.iter().find_map(|(name, r)| {
        crate::common::job_failure(r).map(|f| f.context(format!("[{name}]")))
    });
    failed.map_or(Ok(()), Err)
}

/// Host I/Os past which a run is announced on stderr: tens of seconds of
/// simulation even on the fastest arrays (a few million host I/Os a second).
const LONG_RUN_IOS: f64 = 20e6;
/// Simulated seconds past which a timed run is announced when no estimate
/// of its I/O count is at hand: ten minutes of the array.
const LONG_RUN_SECS: f64 = 600.0;

/// Timed runs shorter than this are never long: under [`LONG_RUN_IOS`] at
/// the few million host I/Os a second the fastest arrays reach.
const QUICK_SECS: f64 = 3.0;
/// Simulated time of the one-drive run behind the estimate: 50 ms.
const ESTIMATE_NS: u64 = 50_000_000;

/// A long timed run: say on stderr how long, and how many I/Os the
/// analytic model expects of it where it has an estimate.
fn note_long_runtime(topo: &Topology, w: &Workload, seed: u64) {
    let Some(ns) = w.runtime else {
        return;
    };
    let secs = ns as f64 / 1e9;
    if secs < QUICK_SECS {
        return;
    }
    // The estimate simulates one drive: briefly, at the workload's rate.
    let brief = Workload {
        runtime: Some(ns.min(ESTIMATE_NS)),
        ramp_time: None,
        ..w.clone()
    };
    let estimate = match raidlab_studies::analytic::expect(topo, &brief, seed) {
        Some(Ok(e)) => e.metric("iops").map(|iops| iops * secs),
        _ => None,
    };
    let long = match estimate {
        Some(ios) => ios > LONG_RUN_IOS,
        None => secs > LONG_RUN_SECS,
    };
    if long {
        let about = estimate.map_or(String::new(), |ios| {
            format!(
                " (about {:.0} million host I/Os, by the analytic model)",
                ios / 1e6
            )
        });
        eprintln!(
            "raidlab: note: runtime={secs} s simulates {secs} s of the array{about}, which can take long; state=steady with a shorter runtime measures the same steady state"
        );
    }
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
    // A replayed trace's pass is its own reads and writes.
    let (bytes, ios) = match &w.replay {
        Some(r) => (
            r.extent.bytes,
            (r.extent.reads + r.extent.writes) * w.numjobs as u64,
        ),
        None => {
            // A workload that does not fit is refused when it runs.
            let Ok(regions) = w.regions(cap) else {
                return;
            };
            let bytes = regions.iter().map(|r| r.span).max().unwrap_or(cap);
            let all: u64 = regions.iter().map(|r| w.pass_bytes(r.span)).sum();
            (bytes, (all as f64 / w.mean_bs().max(1.0)) as u64)
        }
    };
    if ios as f64 > LONG_RUN_IOS {
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
