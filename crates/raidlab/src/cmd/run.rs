//! `raidlab run`: run a workload for real on files or block devices.

use crate::args::{EngineArg, JobArgs, RealArgs};
use crate::common::verify_failure;
use crate::failure::Failure;

/// Run a workload for real on files or block devices.
///
/// Leaves of the expression are paths (`./m0.img`, `/dev/sdb`) or
/// `missing` (a failed member); arrays over them (raid0/1/10/5/6, concat,
/// nested) are executed by raidlab's own software RAID with md's layouts.
/// Member files that do not exist are created at the size the workload's
/// `size=` needs. Block devices that are mounted, in use, or carry a
/// partition table or file-system signature are refused unless --force.
/// `runtime` and `ramp_time` are wall-clock seconds here.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    job: JobArgs,
    /// I/O engine (default: io_uring where the kernel has it, else psync).
    #[arg(long, value_enum)]
    engine: Option<EngineArg>,
    #[command(flatten)]
    real: RealArgs,
}

/// Run `run`.
pub fn run(args: Args) -> Result<(), Failure> {
    let expr = args.job.expr()?;
    let w = args.job.workload()?;
    if w.state.is_some() {
        return Err(Failure::input(
            "state= preconditions simulated SSDs; a real run uses the devices as they are",
        ));
    }
    if w.hipri {
        return Err(Failure::input(
            "hipri=1 is simulator-only: raidlab run's engines wait for interrupts (fio's own hipri needs io_uring or pvsync2 on an NVMe device with poll queues)",
        ));
    }
    let opts = args.real.options(args.engine, &w);
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let out = with_progress(w.runtime.map(|r| r + w.ramp_time.unwrap_or(0)), || {
        raidlab_io::run(&expr, &w, args.job.seed, &opts)
    })?;
    args.job.emit_result(&out.result, started, "")?;
    match verify_failure(&out.result) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// Run `f` with a progress bar of wall-clock time against `total_ns` (the
/// run's ramp and runtime) on stderr, when it is a terminal and the run has
/// a runtime.
fn with_progress<T>(total_ns: Option<u64>, f: impl FnOnce() -> T) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some(total) = total_ns else {
        return f();
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let bar = crate::common::RunProgress::new("run");
            let start = std::time::Instant::now();
            while !done.load(Ordering::Relaxed) {
                bar.set(start.elapsed().as_nanos() as f64 / total.max(1) as f64);
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        // Stops the bar however `f` ends (a panic included), so the scope
        // can join its thread.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = Stop(&done);
        f()
    })
}
