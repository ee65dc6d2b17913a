//! raidlab's real engine: the workloads of the simulator run for real on
//! files and block devices, through raidlab's own software RAID (the same
//! layout code as the simulator), on io_uring or a portable thread engine.
//!
//! * [`topo`]: expressions whose leaves are paths;
//! * [`safety`]: what is refused without `--force`;
//! * `exec`: the RAID executor (reads, writes, degraded operation);
//! * [`parity`]: XOR and P+Q kernels (AVX2 with a portable fallback);
//! * [`backend`]: io_uring and psync member I/O;
//! * `worker`: the per-thread executor;
//! * `verify`: self-describing blocks for `--verify`;
//! * [`meta`] and [`md`]: md's v1.2 superblocks and write-intent bitmap;
//! * `intent`: the bitmap marked before writes; `resync`, `rebuild`,
//!   `scrub`: resynchronisation, rebuilds onto spares, check and repair;
//! * `lifecycle`, `outcome`, `commands`: a run's members and arrays
//!   around it, its workers and result, and the other commands;
//! * [`nbd`] and [`serve`]: the NBD server side and the served volume;
//! * `error` and `options`: [`Error`] and [`RunOptions`];
//! * `buf`: aligned buffers.
//!
//! The member I/O futures (`backend::Leaf`) borrow the caller's buffer
//! while the kernel may write into it, which is sound only if no future is
//! forgotten while in flight (`mem::forget` is safe). So they are private to
//! this crate, whose executor always awaits or drops them; the public API
//! is [`run`] and what it needs.

#![warn(missing_docs)]

pub mod backend;
mod buf;
mod commands;
mod error;
mod exec;
mod intent;
mod lifecycle;
pub mod md;
pub mod meta;
pub mod nbd;
mod options;
mod outcome;
pub mod parity;
mod rebuild;
mod resync;
pub mod safety;
pub mod scrub;
pub mod serve;
pub mod sparse;
pub mod topo;
pub(crate) mod verify;
mod worker;

pub use commands::{
    check_sequence, create, fio_job, member_size, rebuild, scrub, CreateReport, RebuildReport,
};
pub use error::{Error, ErrorKind};
use lifecycle::*;
pub use options::RunOptions;
use outcome::*;

use backend::EngineKind;
use raidlab_core::result::{
    round3, HostStats, RealStats, RunResult, SectionResult, SimStats, VERSION,
};
use raidlab_core::workload::{Io, Workload};
use safety::Access;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;
use topo::RealTopology;

/// A finished run.
pub struct RunOutput {
    /// The result document (docs/results.md), `"engine": "real"`.
    pub result: RunResult,
    /// Each job's I/Os in issue order (with [`RunOptions::trace`]).
    pub trace: Vec<Vec<Io>>,
    /// When each of them was to go out, ns from the run's start.
    pub trace_ns: Vec<Vec<u64>>,
}

/// Run `w` on the real topology `expr`.
pub fn run(expr: &str, w: &Workload, seed: u64, opts: &RunOptions) -> Result<RunOutput, Error> {
    run_sections(expr, &[("", w)], seed, opts)
}

/// Run job sections side by side on the real topology `expr`, as fio runs
/// a job file's sections without `stonewall`: each section's jobs keep its
/// own options, the first's runtime, ramp and trace replay apply to all,
/// and with several sections each is also measured on its own (the
/// result's `sections`).
///
/// Longer than 70 lines: the run's lifecycle in order (open and assemble,
/// mark active, run the workers with checkpoints, mark clean, save the
/// verify state) and the result document it fills, field by field.
pub fn run_sections(
    expr: &str,
    sections: &[(&str, &Workload)],
    seed: u64,
    opts: &RunOptions,
) -> Result<RunOutput, Error> {
    let wall = Instant::now();
    let Some(&(_, w)) = sections.first() else {
        return Err(Error::new(ErrorKind::Size, "no job section to run"));
    };
    let seed = w.seed.unwrap_or(seed);
    let mut topo: RealTopology = topo::parse_real(expr)?;
    // Hot spares take missing members' places at once, as md's do.
    topo.take_spares();
    let writes = sections.iter().any(|(_, w)| w.writes()) || !topo.took_over.is_empty();
    let access = Access::from_writes(writes);
    let needed = sections.iter().filter_map(|(_, w)| w.bytes_needed()).max();
    let (arrays, kinds, mut gens) = open_run(&topo, needed, access, opts)?;
    let nonce = start_generations(&mut gens, writes);
    let Arrays {
        mut members,
        sizes,
        all_direct,
        asm,
        vol,
    } = arrays;
    let mut life = mark_active(&topo, &mut members, &vol, &asm, &sizes, access, opts)?;
    let intent = writes
        .then(|| intent_for(&asm, &vol, life.events))
        .flatten();
    let regions = sections
        .iter()
        .map(|(_, w)| check_regions(w, vol.capacity))
        .collect::<Result<Vec<_>, _>>()?;
    let engine = choose_engine(opts.engine)?;
    check_guards(sections, engine)?;
    let common = Common {
        steady: std::sync::Mutex::new(raidlab_core::steadystate::SteadyWatch::new(&w.steadystate)),
        ..Common::default()
    };
    let run = RunShare {
        vol: &vol,
        members: &members,
        gens: &gens,
        common: &common,
        nonce,
        verify: opts.verify,
        intent: intent.as_ref(),
        seed,
        max_bs: sections.iter().map(|(_, w)| w.max_bs()).max().unwrap_or(0) as usize,
        start: Instant::now(),
        exitall: sections.iter().any(|(_, w)| w.exitall),
    };
    let shares: Vec<worker::Shared<'_>> = sections.iter().map(|(_, s)| run.shared(w, s)).collect();
    let (t_start, ramp_end, end) = (shares[0].start, shares[0].ramp_end, shares[0].end);
    let state = state_file(writes, opts).map(|p| (p, asm.root_uuid));
    let (jobs, first) = worker_jobs(&shares, sections, &regions, seed);
    let outs = with_checkpoints(&gens, state, || run_workers(jobs, engine, opts.trace));
    let wall_end = Instant::now();
    let section_of = section_of(sections);
    let per_section = (sections.len() > 1).then(|| section_metrics(&outs, &section_of));
    let merged = merge(outs, first as usize, engine == EngineKind::IoUring)?;
    if writes && asm.has_metadata() {
        mark_clean(&mut topo, &members, &asm, &sizes, &mut life)?;
    }
    save_state(&gens, state)?;
    // A converged latency_target search measured from where it converged;
    // jobs stopped at fio's steady state, to their last completion.
    let (ramp_end, end) = merged.window_from.unwrap_or((ramp_end, end));
    let stopped_steady = common
        .steady_stop
        .load(std::sync::atomic::Ordering::Relaxed);
    let end = end.filter(|_| !stopped_steady);
    let steadystate = common
        .steady
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|w| w.report());
    let secs = window_secs(end, merged.last, wall_end, ramp_end);
    let run_ns = wall_end.duration_since(t_start).as_nanos().max(1) as f64;
    let (mstats, components) = member_reports(&topo, &members, &kinds, &asm.offsets, run_ns);
    let window_ns = (secs * 1e9) as u64;
    let result = RunResult {
        resolved: None,
        raidlab: VERSION.into(),
        engine: "real".into(),
        topology: raidlab_core::topology::without_comments(expr),
        workload: w.to_json(seed),
        seed,
        summary: merged.metrics.summary(secs),
        components,
        host: HostStats {
            cpu_util_pct: round3(cpu_pct(run_ns)),
        },
        sim: SimStats {
            replay: merged.replay_stats(w),
            ..run_times(secs, wall, merged.totals)
        },
        intervals: merged.intervals(secs),
        latency: Some(merged.metrics.detail(window_ns)),
        sections: per_section
            .map_or_else(Vec::new, |m| section_results(sections, &m, seed, window_ns)),
        errors: merged.errors,
        latency_target: merged.found,
        steadystate,
        real: Some(RealStats {
            members: mstats,
            verify: opts.verify.then_some(merged.verify),
            array: array_meta(&topo, &asm, &life),
            ..engine_stats(engine, all_direct, merged.registered, merged.totals)
        }),
    };
    Ok(RunOutput {
        result,
        trace: merged.trace,
        trace_ns: merged.trace_ns,
    })
}

/// Refuse what the engine cannot watch: psync runs a job of `iodepth` > 1
/// as that many workers, each seeing its share of the job's I/Os, so a
/// minimum rate over the whole job is not one any of them can check, nor
/// can one that trips `max_latency` stop the others, nor can one set the
/// job's depth (`latency_target`); and a `latency_target` search measures
/// its job alone, so no other section may run beside it.
fn check_guards(sections: &[(&str, &Workload)], engine: EngineKind) -> Result<(), Error> {
    let split = |w: &Workload| w.effective_iodepth() > 1 && w.guards.any();
    if engine == EngineKind::Psync && sections.iter().any(|(_, w)| split(w)) {
        return Err(Error::new(
            ErrorKind::Expression,
            "max_latency, rate_min and rate_iops_min watch a whole job, which the psync engine runs at iodepth > 1 as several workers: use --engine io_uring, or iodepth=1 (as fio's psync does)",
        ));
    }
    let searches = |w: &Workload| w.latency_target.any();
    if sections.len() > 1 && sections.iter().any(|(_, w)| searches(w)) {
        return Err(Error::new(
            ErrorKind::Expression,
            "latency_target searches one job's queue depth and measures that job alone: run its section on its own (stonewall, or a job file of one section)",
        ));
    }
    if sections.len() > 1 && sections.iter().any(|(_, w)| w.steadystate.any()) {
        return Err(Error::new(
            ErrorKind::Expression,
            "steadystate stops one section's jobs on their own rate: run its section on its own (stonewall, or a job file of one section)",
        ));
    }
    let split_search = |w: &Workload| w.effective_iodepth() > 1 && searches(w);
    if engine == EngineKind::Psync && sections.iter().any(|(_, w)| split_search(w)) {
        return Err(Error::new(
            ErrorKind::Expression,
            "latency_target sets a job's queue depth, which the psync engine runs at iodepth > 1 as several workers: use --engine io_uring",
        ));
    }
    Ok(())
}

/// One worker job per fio job of every section, numbered on across the
/// sections as fio numbers them; also the number of jobs in all.
fn worker_jobs<'s, 'a>(
    shares: &'s [worker::Shared<'a>],
    sections: &[(&str, &Workload)],
    regions: &[Vec<raidlab_core::workload::Region>],
    seed: u64,
) -> (Vec<WorkerJob<'s, 'a>>, u32) {
    let mut jobs = Vec::new();
    let mut first = 0;
    for ((sh, (_, s)), r) in shares.iter().zip(sections).zip(regions) {
        let streams = paced_streams(s, r, s.seed.unwrap_or(seed), first);
        jobs.extend(streams.into_iter().map(|(stream, pacer)| WorkerJob {
            shared: sh,
            stream,
            pacer,
        }));
        first += s.numjobs;
    }
    (jobs, first)
}

/// Each section's own figures, for a run of sections side by side.
fn section_results(
    sections: &[(&str, &Workload)],
    metrics: &[raidlab_core::metrics::Metrics],
    seed: u64,
    window_ns: u64,
) -> Vec<SectionResult> {
    sections
        .iter()
        .zip(metrics)
        .map(|((name, w), m)| SectionResult::measured(name, w, m, seed, window_ns))
        .collect()
}

/// What every worker of a run shares whatever its section: the locks, the
/// write sequence and the stop flag.
#[derive(Default)]
struct Common {
    locks: exec::Locks,
    seq: AtomicU64,
    stop: AtomicBool,
    /// Set when a job has finished under fio's `exitall`.
    halt: AtomicBool,
    /// fio's `steadystate` watch over the run's jobs, where they have one.
    steady: std::sync::Mutex<Option<raidlab_core::steadystate::SteadyWatch>>,
    /// Set when the jobs have reached fio's steady state: they stop.
    steady_stop: AtomicBool,
}

/// The run's parts every section's [`worker::Shared`] is made of.
struct RunShare<'a> {
    vol: &'a exec::Vol,
    members: &'a backend::Members,
    gens: &'a verify::Generations,
    common: &'a Common,
    nonce: u64,
    verify: bool,
    intent: Option<&'a intent::Intent>,
    seed: u64,
    max_bs: usize,
    /// When the jobs start: every section's clocks count from here.
    start: Instant,
    /// fio's `exitall`, set by any section.
    exitall: bool,
}

impl<'a> RunShare<'a> {
    /// What section `s`'s workers share, the run led by section `lead`
    /// (its runtime, ramp, timeline and replay).
    fn shared(&self, lead: &Workload, s: &Workload) -> worker::Shared<'a> {
        let start = self.start;
        let ramp_end = start + std::time::Duration::from_nanos(lead.ramp_time.unwrap_or(0));
        worker::Shared {
            vol: self.vol,
            members: self.members,
            locks: &self.common.locks,
            nonce: self.nonce,
            gens: self.gens,
            verify: self.verify,
            lock_needed: self.vol.has_parity || self.verify,
            seq: &self.common.seq,
            start,
            ramp_end,
            replay_timed: replay_timed(lead),
            timeline: lead.timeline(),
            end: lead
                .runtime
                .map(|r| ramp_end + std::time::Duration::from_nanos(r)),
            stop: &self.common.stop,
            halt: &self.common.halt,
            steady: lead
                .steadystate
                .any()
                .then_some((&self.common.steady, &self.common.steady_stop)),
            exitall: self.exitall,
            max_bs: self.max_bs,
            seed: self.seed,
            intent: self.intent,
            job: worker::JobOpts::of(s, replay_timed(lead)),
        }
    }
}

/// Per job of `sections` (in order), its section's place.
fn section_of(sections: &[(&str, &Workload)]) -> Vec<usize> {
    sections
        .iter()
        .enumerate()
        .flat_map(|(k, (_, w))| std::iter::repeat_n(k, w.numjobs as usize))
        .collect()
}

/// Each section's figures, from its jobs' workers' (`section_of`: per job
/// its section).
fn section_metrics(
    outs: &[(usize, worker::WorkerOut)],
    section_of: &[usize],
) -> Vec<raidlab_core::metrics::Metrics> {
    let n = section_of.iter().max().map_or(0, |&k| k + 1);
    let mut m: Vec<raidlab_core::metrics::Metrics> = (0..n).map(|_| Default::default()).collect();
    for (j, o) in outs {
        m[section_of[*j]].merge(&o.metrics);
    }
    m
}
