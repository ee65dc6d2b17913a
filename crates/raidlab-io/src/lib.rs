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
mod exec;
mod intent;
mod lifecycle;
pub mod md;
pub mod meta;
pub mod nbd;
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
use lifecycle::*;
use outcome::*;

use backend::{EngineKind, MemberCounters, Members};
use raidlab_core::metrics::Metrics;
use raidlab_core::pace::Pacer;
use raidlab_core::result::{
    round3, ArrayMeta, Component, HostStats, IoCounts, IoTotals, MemberStats, RealStats, RunResult,
    SimStats, VerifyStats, BOTTLENECK_UTIL, VERSION,
};
use raidlab_core::workload::{job_streams, Io, Rw, Workload};
use raidlab_layout::{ArrayLayout, Level};
use safety::{Access, Guard};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::Instant;
use topo::{RealNode, RealTopology};

/// What kind of thing went wrong in a real run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The expression cannot be run for real: its syntax, an impossible
    /// array, or a construct only the simulator has.
    Expression,
    /// A member the safety rules refuse (a signature, a mount, a holder,
    /// neither a file nor a block device).
    Refused,
    /// The workload does not fit: a span or block beyond the volume, or a
    /// member that cannot be created at a size or would be too small.
    Size,
    /// The I/O engine asked for is not available here.
    Engine,

    /// An operation on a member failed (create, open, read, write).
    Io,
}

/// An error of a real run: its kind, a message naming what and where,
/// and the operating system's error beneath it, when there is one.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{msg}")]
pub struct Error {
    kind: ErrorKind,
    msg: String,
    /// The I/O error the message reports (kept for callers that act on
    /// it: its `kind()`, its errno).
    #[source]
    source: Option<std::sync::Arc<std::io::Error>>,
}

impl PartialEq for Error {
    /// Errors are equal when they say the same thing: the source's text is
    /// already in the message.
    fn eq(&self, o: &Error) -> bool {
        self.kind == o.kind && self.msg == o.msg
    }
}

impl Eq for Error {}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            msg: msg.into(),
            source: None,
        }
    }

    /// An I/O error `e` while doing `what` ("writing metadata"): the
    /// message says both, and `e` stays the error's source.
    pub fn io(what: impl std::fmt::Display, e: std::io::Error) -> Self {
        Error {
            kind: ErrorKind::Io,
            msg: format!("{what}: {e}"),
            source: Some(std::sync::Arc::new(e)),
        }
    }

    /// An I/O error as it is, its text the message.
    fn from_io(e: std::io::Error) -> Self {
        Error {
            kind: ErrorKind::Io,
            msg: e.to_string(),
            source: Some(std::sync::Arc::new(e)),
        }
    }

    /// The operating system's error beneath this one, if any.
    pub fn io_source(&self) -> Option<&std::io::Error> {
        self.source.as_deref()
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the input was at fault (expression, member, workload) rather
    /// than the run itself.
    pub fn is_input(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Expression | ErrorKind::Refused | ErrorKind::Size
        )
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Back end; `None`: io_uring where the kernel has it, else psync.
    pub engine: Option<EngineKind>,
    /// Open members with O_DIRECT where the file system allows it.
    pub direct: bool,
    /// Write self-describing blocks and check every read.
    pub verify: bool,
    /// Write to devices that are in use or carry signatures.
    pub force: bool,
    /// Record each job's I/Os in issue order.
    pub trace: bool,
    /// Create new arrays over the members whatever metadata they carry
    /// (`mdadm --create`); without it, members that carry metadata are
    /// assembled and checked.
    pub create: bool,
    /// With `verify`: a file holding the generation of every block written
    /// under verify (fio's verify state). Loaded when it exists, so blocks
    /// older than recorded are stale; saved after a run that writes.
    pub verify_state: Option<std::path::PathBuf>,
}

impl RunOptions {
    /// The safety rules this run keeps (`force` lifts them).
    pub fn guard(&self) -> safety::Guard {
        safety::Guard::from_force(self.force)
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engine: None,
            direct: true,
            verify: false,
            force: false,
            trace: false,
            create: false,
            verify_state: None,
        }
    }
}

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
    let span = check_span(w, vol.capacity)?;
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
            paced_streams(w, span, seed),
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
        think_ns: w.thinktime,
        end: w
            .runtime
            .map(|r| ramp_end + std::time::Duration::from_nanos(r)),
        stop: AtomicBool::new(false),
        max_bs: w.max_bs() as usize,
        seed,
        sync: w.sync,
        fsync: w.fsync,
        intent,
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_its_source() {
        let e = Error::io(
            "writing metadata",
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(e.to_string().starts_with("writing metadata: "));
        assert_eq!(
            e.io_source().and_then(|s| s.raw_os_error()),
            Some(libc::ENOSPC)
        );
        assert!(std::error::Error::source(&e).is_some());
        assert!(!e.is_input());
        let plain = Error::new(ErrorKind::Size, "too small");
        assert!(plain.io_source().is_none());
    }
}
