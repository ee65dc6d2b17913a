//! Deterministic discrete-event simulator of storage arrays.
//!
//! [`simulate`] builds one component per piece of hardware from a resolved
//! [`Topology`] — SSDs ([`ssd`]), hard disks ([`hdd`]), controller front ends
//! ([`controller`]), arrays ([`array`](mod@array), hardware or software) and the
//! [`host`] — wires them by id, and runs the workload's jobs through them on
//! the event engine ([`engine`]). Same inputs and seed give the same result.

#![warn(missing_docs)]

pub mod array;
pub mod controller;
pub mod engine;
pub mod hdd;
pub mod host;
pub mod live;
pub use raidlab_core::metrics;
mod build;
mod measure;
mod report;
pub mod ssd;
mod table;
mod window;

use build::*;
pub use build::{check_pace, pcie_fetch_mbps, volume_capacity};
use measure::*;
use report::*;

use array::{ArrayComp, Costs, Pacing, Rebuild};
use controller::{CtrlConfig, CtrlPools, CtrlVol, FastPath};
use engine::{us, Call, CompId, Ctx, Next, PoolId, ReqId, HOST_CPU};
use hdd::Hdd;
use host::{Host, JobConf};
use raidlab_core::metrics::Metrics;
use raidlab_core::preset::HostParams;
use raidlab_core::result::{
    Component, HostStats, IoCounts, Resolved, RunResult, SimStats, VERSION,
};
use raidlab_core::rng::mix;
use raidlab_core::steady::{level_allowance, Steady, LEVEL_EXCURSION};
use raidlab_core::topology::{
    Array, Controller, Device, DeviceModel, Mode, Node, ReadAhead, SsdState, Topology,
};
use raidlab_core::units::Ns;
use raidlab_core::workload::{JobPhase, Region, Workload};
use raidlab_layout::{Geometry, LayoutError, Level};
use ssd::Ssd;
use thiserror::Error;

/// Why a simulation could not run (all are input errors).
#[derive(Debug, Error)]
pub enum SimError {
    /// The workload does not fit the volume (`size=` beyond it, or a block
    /// larger than the span).
    #[error("{0}")]
    Span(#[from] raidlab_core::workload::SpanError),
    /// A job file's phases were asked for and there were none.
    #[error("no job to simulate")]
    NoPhases,
    /// More volumes side by side than a host I/O can name.
    #[error("the root exposes {0} volumes; at most {max} can be addressed side by side", max = host::MAX_VOLUMES)]
    TooManyVolumes(usize),
    /// The model of this topology and workload would need more memory than
    /// the simulator allows itself.
    #[error("the simulation needs more than its bound of {} MiB for its models of {what} ({} MiB counted so far); simulate fewer or smaller devices or caches", MAX_SIM_BYTES >> 20, need >> 20)]
    TooLarge {
        /// Bytes counted when the bound was passed.
        need: u64,
        /// What took them.
        what: &'static str,
    },
    /// The workload would keep more I/O in flight than the simulator's
    /// memory bound allows.
    #[error("iodepth x numjobs keeps {ios} I/Os in flight, each split into {pieces} chunk pieces, at least {} MiB, past the simulator's bound of {} MiB: lower iodepth, numjobs or bs, or widen the stripe", need >> 20, MAX_SIM_BYTES >> 20)]
    InFlightTooLarge {
        /// I/Os in flight.
        ios: u64,
        /// Pieces each.
        pieces: u64,
        /// Bytes they take at least.
        need: u64,
    },
    /// A rate-limited one-pass run whose pace would take it past the
    /// longest time a run may last.
    #[error("one pass over {span} bytes at the rate cap takes about {secs:.0e} s; at most 1e9 s (give runtime=, or a higher cap)")]
    PacedTooLong {
        /// Bytes each job passes over (all its volumes).
        span: u64,
        /// The pass's paced length, seconds.
        secs: f64,
    },
    /// `hipri` on a topology or host that cannot poll.
    #[error("hipri: {0}")]
    NoPolling(String),
    /// A live run (a served simulated array) answers for one volume.
    #[error("the root exposes {0} volumes side by side; serve one array (or device) at a time")]
    LiveVolumes(usize),
    /// A `latency_target` search beside other jobs: it sets one job's
    /// depth and clears the figures once it has converged.
    #[error("latency_target searches one job's queue depth and measures that job alone: run its section on its own (stonewall, or a job file of one section)")]
    LatencyTargetBeside,
    /// fio's `steadystate` in a section beside others: its watch and its
    /// stop cover one section's jobs.
    #[error("steadystate stops one section's jobs on their own rate: run its section on its own (stonewall, or a job file of one section)")]
    SteadyStopBeside,
    /// The array cannot be laid out.
    #[error("topology: column {col}: {err}")]
    Layout {
        /// Column of the array.
        col: usize,
        /// Layout error.
        err: LayoutError,
    },
}

enum Comp {
    Host(Box<Host>),
    Ssd(Box<Ssd>),
    Hdd(Box<Hdd>),
    Array(Box<ArrayComp>),
    Ctrl(Box<CtrlVol>),
    Empty,
}

enum Report {
    Ssd(CompId),
    Hdd(CompId),
    Controller {
        label: String,
        pools: CtrlPools,
        vols: Vec<CompId>,
    },
    /// A host software parity array's stripe-handling threads (md's
    /// raid5d and its `group_thread_cnt` workers).
    Stripes {
        label: String,
        pool: PoolId,
        /// What the pool stands for: `stripes` (raid5d and its workers)
        /// or `barrier lock` (RAID 10's).
        resource: &'static str,
    },
}

const HOST: CompId = CompId::HOST;
/// The component id of a missing member: never addressed (the array sends
/// it nothing).
const FAILED: CompId = CompId::NONE;

/// Most heap one simulation may hold in its component models (FTL tables,
/// warmed controller caches): 1.5 GiB, so that with its queues, histograms
/// and code the process stays under 2 GiB resident, and a few simulations
/// run side by side on a 24 GiB machine. About 350 folded SSDs in steady
/// state (≈4.4 MiB each) fit. A topology past it is refused while it is
/// built (at most one drive's tables past the bound), never aborted midway.
pub const MAX_SIM_BYTES: u64 = 1536 << 20;

/// Turn the simulator's memory-level hints (cache-line prefetches and the
/// components' advance notice of the data they will look up) on or off for
/// the whole process. They are on by default and change no result, only
/// speed; a test runs the same simulations both ways and compares them.
pub fn set_memory_hints(on: bool) {
    table::set_hints(on);
}

/// Simulate `w` on `topo` with `seed` (the workload's own `seed=` wins).
pub fn simulate(topo: &Topology, w: &Workload, seed: u64) -> Result<RunResult, SimError> {
    simulate_inner(topo, w, seed, Start::default(), None).map(|r| r.0)
}

/// [`simulate`], telling `progress` now and then (every 2^20 events) how
/// far the run has come, 0 to 1: simulated time against the end of the
/// window, or for one pass the share of its bytes moved.
pub fn simulate_with_progress(
    topo: &Topology,
    w: &Workload,
    seed: u64,
    progress: &dyn Fn(f64),
) -> Result<RunResult, SimError> {
    simulate_inner(topo, w, seed, Start::default(), Some(progress)).map(|r| r.0)
}

/// [`simulate`], also returning each job's I/Os in the order the host issued
/// them (the real engine's `trace` gives the same for a real run).
pub fn simulate_traced(
    topo: &Topology,
    w: &Workload,
    seed: u64,
) -> Result<(RunResult, Vec<Vec<raidlab_core::workload::Io>>), SimError> {
    let start = Start {
        trace: true,
        ..Start::default()
    };
    simulate_inner(topo, w, seed, start, None)
}

/// [`simulate`] from another physically reachable start: every write-back
/// cache full of dirty data (as a long burst of random writes leaves it)
/// instead of clean. The steady state reached must not depend on the
/// start; tests compare the two.
#[doc(hidden)]
pub fn simulate_from_full_caches(
    topo: &Topology,
    w: &Workload,
    seed: u64,
) -> Result<RunResult, SimError> {
    let start = Start {
        full_caches: true,
        ..Start::default()
    };
    simulate_inner(topo, w, seed, start, None).map(|r| r.0)
}

/// How a simulation starts.
#[derive(Debug, Clone, Copy, Default)]
struct Start {
    /// Record each job's I/Os.
    trace: bool,
    /// Write-back caches start full of dirty data rather than clean.
    full_caches: bool,
}

/// A built simulation: the engine, the components (the host at `HOST`),
/// what the report covers, and the volume the host sees.
struct Sim {
    ctx: Ctx,
    comps: Vec<Comp>,
    reports: Vec<Report>,
    parity_threads: Vec<PoolId>,
    /// Every array and its name in messages.
    arrays: Vec<(CompId, String)>,
    /// The volumes the host's jobs address.
    roots: Vec<CompId>,
    /// The smallest one's capacity, bytes: a job's span on every one.
    cap: u64,
}

fn simulate_inner(
    topo: &Topology,
    w: &Workload,
    seed: u64,
    how: Start,
    progress: Option<&dyn Fn(f64)>,
) -> Result<(RunResult, Vec<Vec<raidlab_core::workload::Io>>), SimError> {
    let wall = std::time::Instant::now();
    let seed = w.seed.unwrap_or(seed);
    let mut heap = 0;
    let mut sim = build(topo, w, seed, &mut heap)?;
    let jobs = [("", w)];
    let phase = Phase::check(&sim, topo, &jobs, heap)?;
    warm_controllers(&mut sim, w, phase.cover, seed, phase.heap, how.full_caches)?;
    let run = PhaseRun {
        seed,
        trace: how.trace,
        progress,
        first: true,
    };
    let mut result = phase.run(&mut sim, topo, &jobs, run);
    result.sim.wall_s = wall.elapsed().as_secs_f64();
    let trace = match &mut sim.comps[HOST.index()] {
        Comp::Host(h) => h.trace.take().unwrap_or_default(),
        _ => unreachable!("the host is at HOST"),
    };
    Ok((result, trace))
}

/// Simulate the phases of a job file in turn on one array, as fio runs
/// job sections separated by `stonewall`: each phase starts when the one
/// before it has ended (its jobs stopped, their I/Os back), on the drives
/// and caches as it left them. The first phase decides how the drives
/// start (`state=`); each phase is measured and reported on its own. A
/// phase's sections run side by side ([`JobPhase::beside`]), each also
/// reported on its own (`sections`). `progress` is told how far the phases
/// have come, 0 to 1.
pub fn simulate_phases(
    topo: &Topology,
    phases: &[JobPhase],
    seed: u64,
    progress: &dyn Fn(f64),
) -> Result<Vec<RunResult>, SimError> {
    // The drives start as the first phase's sections together need.
    let lead = phases.first().ok_or(SimError::NoPhases)?.lead_for_all();
    let mut jobs: Vec<Vec<(&str, &Workload)>> =
        phases.iter().map(|p| p.sections().collect()).collect();
    if let Some(w) = &lead {
        jobs[0][0].1 = w;
    }
    let first = jobs[0][0].1;
    let seed = first.seed.unwrap_or(seed);
    let mut heap = 0;
    let mut sim = build(topo, first, seed, &mut heap)?;
    // Every phase must fit before the first runs, its sections together.
    let checked = jobs
        .iter()
        .map(|j| Phase::check(&sim, topo, j, heap))
        .collect::<Result<Vec<_>, _>>()?;
    warm_controllers(
        &mut sim,
        first,
        checked[0].cover,
        seed,
        checked[0].heap,
        false,
    )?;
    let n = phases.len() as f64;
    let mut results = Vec::with_capacity(phases.len());
    for (i, (j, phase)) in jobs.iter().zip(checked).enumerate() {
        let wall = std::time::Instant::now();
        let events = sim.ctx.events;
        let tell = |f: f64| progress((i as f64 + f) / n);
        let run = PhaseRun {
            seed: j[0].1.seed.unwrap_or(seed),
            trace: false,
            progress: Some(&tell),
            first: i == 0,
        };
        let mut r = phase.run(&mut sim, topo, j, run);
        r.sim.events -= events;
        r.sim.wall_s = wall.elapsed().as_secs_f64();
        results.push(r);
        end_phase(&mut sim);
    }
    // The drives start as the first phase set them; the later phases' own
    // defaults never applied.
    let resolved = results[0].resolved.clone();
    for r in &mut results[1..] {
        r.resolved.clone_from(&resolved);
    }
    Ok(results)
}

/// One phase's job sections checked against the built array: each
/// section's jobs' regions, the bytes they all cover, and the heap with
/// their streams.
struct Phase {
    regions: Vec<Vec<Region>>,
    cover: Region,
    heap: u64,
}

/// How a checked phase runs: its seed, whether each job's I/Os are
/// recorded, who hears of its progress, and whether it is the run's first
/// (rebuilds start with it).
struct PhaseRun<'a> {
    seed: u64,
    trace: bool,
    progress: Option<&'a dyn Fn(f64)>,
    first: bool,
}

impl Phase {
    /// Check a phase's sections `jobs` (name, workload; the first leads)
    /// against `sim` (whose models hold `heap` bytes): their regions fit,
    /// their streams and I/Os in flight stay within bounds.
    fn check(
        sim: &Sim,
        topo: &Topology,
        jobs: &[(&str, &Workload)],
        mut heap: u64,
    ) -> Result<Phase, SimError> {
        if jobs.len() > 1 && jobs.iter().any(|(_, w)| w.latency_target.any()) {
            return Err(SimError::LatencyTargetBeside);
        }
        if jobs.len() > 1 && jobs.iter().any(|(_, w)| w.steadystate.any()) {
            return Err(SimError::SteadyStopBeside);
        }
        let mut regions = Vec::with_capacity(jobs.len());
        // The I/Os in flight of the sections before, side by side with
        // this one's.
        let mut flight = 0;
        for (_, w) in jobs {
            if w.hipri {
                polled(topo)?;
            }
            let r = w.regions(sim.cap)?;
            heap += stream_heap(w, sim.roots.len());
            within_bound(heap, "job streams")?;
            flight += check_in_flight(topo, w, sim.roots.len(), heap + flight)?;
            let span = r.iter().map(|r| r.span).max().unwrap_or(0);
            check_paced_pass(w, span * sim.roots.len() as u64)?;
            regions.push(r);
        }
        let all: Vec<Region> = regions.iter().flatten().copied().collect();
        Ok(Phase {
            cover: Region::cover(&all),
            regions,
            heap,
        })
    }

    /// Install the phase's jobs on the host and run them from the clock's
    /// present reading; rebuilds start with the first phase.
    fn run(
        self,
        sim: &mut Sim,
        topo: &Topology,
        jobs: &[(&str, &Workload)],
        how: PhaseRun,
    ) -> RunResult {
        let of: Vec<JobsOf> = jobs
            .iter()
            .zip(&self.regions)
            .map(|((_, w), regions)| JobsOf { w, regions })
            .collect();
        install_host(sim, topo, &of, how.seed, how.trace);
        if how.first {
            start_rebuilds(sim);
        }
        let w = jobs[0].1;
        let all: Vec<Region> = self.regions.iter().flatten().copied().collect();
        let mut measured = run_events(sim, w, &all, how.seed, how.progress);
        if cfg!(debug_assertions) {
            check_invariants(sim);
        }
        let sections = (jobs.len() > 1).then(|| std::mem::take(&mut measured.metrics.sections));
        let len = measured.len;
        let mut result = report(sim, topo, w, how.seed, measured);
        if let Some(figures) = sections {
            result.sections = section_results(jobs, &figures, how.seed, len);
        }
        result
    }
}

/// Heap bytes of `w`'s streams over `volumes` volumes: one a job and
/// volume, with its block-size split and, replaying, its trace reader.
fn stream_heap(w: &Workload, volumes: usize) -> u64 {
    let split_bytes = 16 * (w.bssplit.len() + w.bssplit_write.len()) as u64;
    // A replaying stream holds its own reader of the trace.
    let feed_bytes = if w.replay.is_some() {
        raidlab_core::trace::READER_BYTES
    } else {
        0
    };
    let stream_bytes =
        std::mem::size_of::<raidlab_core::workload::JobStream>() as u64 + split_bytes + feed_bytes;
    w.numjobs as u64 * volumes as u64 * stream_bytes
}

/// End a phase as fio ends a job: the host issues nothing more and the
/// events run until its I/Os are back and no clock of its jobs is still
/// due, so the next phase's host takes over a quiet slot. The drives go on
/// with their own work (garbage collection, destaging) meanwhile.
fn end_phase(sim: &mut Sim) {
    let Sim { ctx, comps, .. } = sim;
    let Comp::Host(h) = &mut comps[HOST.index()] else {
        unreachable!("the host is at HOST")
    };
    h.stop(ctx.now);
    let drained = |comps: &[Comp]| match &comps[HOST.index()] {
        Comp::Host(h) => h.drained(),
        _ => unreachable!("the host is at HOST"),
    };
    if !drained(comps) {
        event_loop(comps, ctx, 0, &mut |comps, ctx, (c, r, k)| {
            if drained(comps) {
                ctx.put_back(c, r, k);
                Watch::Stop
            } else {
                Watch::Until(0)
            }
        });
    }
    // No event was lost at a stop (`put_back`), so the host's own are all
    // queued until it is drained: the loop cannot run dry before.
    debug_assert!(drained(comps), "the phase's jobs are drained");
    // The next phase's jobs get their own threads.
    ctx.threads.clear();
    ctx.thread_busy.clear();
}

/// Start every array's rebuild onto a spare, at time 0.
fn start_rebuilds(sim: &mut Sim) {
    for (id, _) in &sim.arrays {
        if let Comp::Array(a) = &mut sim.comps[id.index()] {
            a.start(&mut sim.ctx);
        }
    }
}

/// Assert every component's invariants at the end of a run (debug builds,
/// so every test checks them), and that the host's I/Os still in flight are
/// all held in the request slab.
fn check_invariants(sim: &Sim) {
    for c in &sim.comps {
        match c {
            Comp::Ssd(s) => s.check(),
            Comp::Ctrl(v) => v.check(),
            Comp::Host(h) => assert!(
                sim.ctx.reqs.live() >= h.in_flight(),
                "{} live requests, {} host I/Os in flight",
                sim.ctx.reqs.live(),
                h.in_flight()
            ),
            Comp::Hdd(h) => h.check(),
            Comp::Array(_) | Comp::Empty => {}
        }
    }
}

use raidlab_core::result::round3;
pub use raidlab_core::result::BOTTLENECK_UTIL;
