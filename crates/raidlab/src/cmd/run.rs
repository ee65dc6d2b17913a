//! `raidlab run`: run a workload for real on files or block devices.

use crate::args::{EngineArg, JobArgs, RealArgs};
use crate::common::{job_failure, verify_failure};
use crate::failure::Failure;
use raidlab_core::workload::{JobPhase, Workload};

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
    /// Write the I/Os issued, with the times they went out, as a fio
    /// version 3 iolog (fio and `read_iolog=` replay it). Holds 24 bytes
    /// per I/O until the run ends.
    #[arg(long, value_name = "FILE")]
    write_iolog: Option<String>,
}

/// Run `run`.
pub fn run(args: Args) -> Result<(), Failure> {
    let expr = args.job.expr()?;
    let phases = args.job.phases(&crate::common::this_machine())?;
    let named = phases.len() > 1 || !phases[0].beside.is_empty();
    for p in &phases {
        for (name, w) in p.sections() {
            real_only(w, &p.workload).map_err(|f| match named {
                false => f,
                true => f.context(format!("[{name}]")),
            })?;
        }
    }
    if phases.len() > 1 {
        return run_phases(&args, &expr, &phases);
    }
    let phase = &phases[0];
    let w = &phase.workload;
    let mut opts = args.real.options(args.engine, w);
    opts.verify |= phase.check.verifies();
    opts.trace |= args.write_iolog.is_some();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let sections: Vec<(&str, &Workload)> = phase.sections().collect();
    let out = with_progress(w.runtime.map(|r| r + w.ramp_time.unwrap_or(0)), || {
        raidlab_io::run_sections(&expr, &sections, args.job.seed, &opts)
    })?;
    if let Some(path) = &args.write_iolog {
        write_iolog(path, &expr, &out)?;
    }
    args.job.emit_result(&out.result, started, "")?;
    match verify_failure(&out.result).or_else(|| job_failure(&out.result)) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// What a real run cannot do: precondition simulated drives, or poll; nor
/// open its members both with and without the page cache (`lead`: the
/// first section of `w`'s phase, whose `direct` the members are opened
/// with).
fn real_only(w: &Workload, lead: &Workload) -> Result<(), Failure> {
    if w.buffered != lead.buffered {
        return Err(Failure::input(
            "a section side by side asks for direct= apart from the first's; `raidlab run` opens the members one way for all of them",
        ));
    }
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
    Ok(())
}

/// Run a job file's phases in turn on the same target, as fio runs
/// stonewalled sections: each starts once the one before it has ended,
/// and each is reported on its own. A phase whose verify fails ends the
/// command after its report, as fio stops at a verify error.
fn run_phases(args: &Args, expr: &str, phases: &[JobPhase]) -> Result<(), Failure> {
    if args.write_iolog.is_some() {
        return Err(Failure::input(
            "--write-iolog records one phase: give a job file of one job section",
        ));
    }
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut runs = Vec::with_capacity(phases.len());
    let mut failed = None;
    for (i, p) in phases.iter().enumerate() {
        let w = &p.workload;
        let mut opts = args.real.options(args.engine, w);
        opts.verify |= p.check.verifies();
        // --create makes the array once: the later phases run on it, and
        // must find what the earlier ones wrote.
        opts.create &= i == 0;
        let sections: Vec<(&str, &Workload)> = p.sections().collect();
        let out = with_progress(w.runtime.map(|r| r + w.ramp_time.unwrap_or(0)), || {
            raidlab_io::run_sections(expr, &sections, args.job.seed, &opts)
        })
        .map_err(|e| Failure::from(e).context(format!("[{}]", p.name)))?;
        let bad = verify_failure(&out.result).map(|f| f.context(format!("[{}]", p.name)));
        // A job in error ends its phase only, as in fio; the command then
        // fails once the phases have run.
        let erred = job_failure(&out.result).map(|f| f.context(format!("[{}]", p.name)));
        failed = failed.or(erred);
        runs.push((p.name.clone(), out.result));
        if bad.is_some() {
            failed = bad;
            break;
        }
    }
    args.job.emit_phases(&runs, started)?;
    failed.map_or(Ok(()), Err)
}

/// Write the run's I/Os as a fio version 3 iolog of the volume `expr`:
/// every job's, merged in the order of the times they went out (µs from
/// the run's start, as fio's `write_iolog` stamps them).
fn write_iolog(path: &str, expr: &str, out: &raidlab_io::RunOutput) -> Result<(), Failure> {
    use std::io::Write;
    let fail = |e: std::io::Error| Failure::input(format!("--write-iolog {path}: {e}"));
    let f = std::fs::File::create(path).map_err(fail)?;
    let mut w = std::io::BufWriter::new(f);
    // fio's iolog names a file per line; the volume's expression without
    // blanks stands for it.
    let name: String = expr.split_whitespace().collect();
    let mut all: Vec<(u64, usize, usize)> = Vec::new();
    for (j, ns) in out.trace_ns.iter().enumerate() {
        all.extend(ns.iter().enumerate().map(|(i, &t)| (t, j, i)));
    }
    all.sort_unstable();
    writeln!(w, "fio version 3 iolog\n0 {name} add\n0 {name} open").map_err(fail)?;
    let mut last = 0;
    for (t, j, i) in all {
        let io = out.trace[j][i];
        let dir = if io.read { "read" } else { "write" };
        last = t / 1000;
        writeln!(w, "{last} {name} {dir} {} {}", io.offset, io.len).map_err(fail)?;
    }
    writeln!(w, "{last} {name} close").map_err(fail)?;
    w.flush().map_err(fail)
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
