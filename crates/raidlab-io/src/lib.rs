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
use raidlab_core::result::{round3, HostStats, RealStats, RunResult, SimStats, VERSION};
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
///
/// Longer than 70 lines: the run's lifecycle in order (open and assemble,
/// mark active, run the workers with checkpoints, mark clean, save the
/// verify state) and the result document it fills, field by field.
pub fn run(expr: &str, w: &Workload, seed: u64, opts: &RunOptions) -> Result<RunOutput, Error> {
    let wall = Instant::now();
    let seed = w.seed.unwrap_or(seed);
    let mut topo: RealTopology = topo::parse_real(expr)?;
    // Hot spares take missing members' places at once, as md's do.
    topo.take_spares();
    let writes = w.writes() || !topo.took_over.is_empty();
    let access = Access::from_writes(writes);
    let (arrays, kinds, mut gens) = open_run(&topo, w, access, opts)?;
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
    let regions = check_regions(w, vol.capacity)?;
    let engine = choose_engine(opts.engine)?;
    let shared = shared_for(
        w,
        &vol,
        &members,
        gens,
        nonce,
        opts.verify,
        intent.as_ref(),
        seed,
    );
    let (t_start, ramp_end) = (shared.start, shared.ramp_end);
    let state = state_file(writes, opts).map(|p| (p, asm.root_uuid));
    let outs = with_checkpoints(&shared.gens, state, || {
        run_workers(
            &shared,
            paced_streams(w, &regions, seed),
            engine,
            w.effective_iodepth() as usize,
            opts.trace,
        )
    });
    let wall_end = Instant::now();
    let merged = merge(outs, w.numjobs as usize, engine == EngineKind::IoUring)?;
    if writes && asm.has_metadata() {
        mark_clean(&mut topo, &members, &asm, &sizes, &mut life)?;
    }
    save_state(&shared.gens, state)?;
    let secs = window_secs(shared.end, merged.last, wall_end, ramp_end);
    let run_ns = wall_end.duration_since(t_start).as_nanos().max(1) as f64;
    let (mstats, components) = member_reports(&topo, &members, &kinds, &asm.offsets, run_ns);
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
        latency: Some(merged.metrics.detail((secs * 1e9) as u64)),
        sections: Vec::new(),
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

/// What the run's workers share: the volume, its members, the verify
/// state and the job's clocks, from now.
#[allow(clippy::too_many_arguments)] // the run's parts, each its own value
fn shared_for<'a>(
    w: &Workload,
    vol: &'a exec::Vol,
    members: &'a backend::Members,
    gens: verify::Generations,
    nonce: u64,
    verify: bool,
    intent: Option<&'a intent::Intent>,
    seed: u64,
) -> worker::Shared<'a> {
    let start = Instant::now();
    let ramp_end = start + std::time::Duration::from_nanos(w.ramp_time.unwrap_or(0));
    worker::Shared {
        vol,
        members,
        locks: exec::Locks::default(),
        nonce,
        gens,
        verify,
        lock_needed: vol.has_parity || verify,
        seq: AtomicU64::new(0),
        start,
        ramp_end,
        offload: w.rate.offload || replay_timed(w),
        replay_timed: replay_timed(w),
        timeline: w.timeline(),
        think_ns: w.think_stall(),
        think_spin_ns: w.thinktime_spin,
        think: raidlab_core::workload::ThinkClock::of(w),
        end: w
            .runtime
            .map(|r| ramp_end + std::time::Duration::from_nanos(r)),
        stop: AtomicBool::new(false),
        max_bs: w.max_bs() as usize,
        seed,
        sync: w.sync,
        fsync: w.fsync,
        end_fsync: w.end_fsync && w.runtime.is_none(),
        intent,
        batch: w.batch,
    }
}
