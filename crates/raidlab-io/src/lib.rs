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
//! * `verify`: self-describing blocks for `--verify`.
//!
//! The member I/O futures (`backend::Leaf`) borrow the caller's buffer
//! while the kernel may write into it, which is sound only if no future is
//! forgotten while in flight (`mem::forget` is safe). So they are private to
//! this crate, whose executor always awaits or drops them; the public API
//! is [`run`] and what it needs.

#![warn(missing_docs)]

pub mod backend;
mod buf;
mod exec;
mod intent;
pub mod md;
pub mod meta;
pub mod nbd;
pub mod parity;
mod rebuild;
mod resync;
pub mod safety;
pub mod scrub;
pub mod serve;
pub mod topo;
pub(crate) mod verify;
mod worker;

use backend::{EngineKind, MemberCounters, Members};
use raidlab_core::metrics::Metrics;
use raidlab_core::pace::Pacer;
use raidlab_core::result::{
    round3, ArrayMeta, Component, HostStats, IoCounts, IoTotals, MemberStats, RealStats, RunResult,
    SimStats, VerifyStats, BOTTLENECK_UTIL, VERSION,
};
use raidlab_core::workload::{job_streams, Io, Rw, Workload};
use raidlab_layout::Level;
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

/// An error of a real run: its kind and a message naming what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg}")]
pub struct Error {
    kind: ErrorKind,
    msg: String,
}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            msg: msg.into(),
        }
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

/// Member size each leaf needs for the volume to hold `span` bytes: its
/// share of the data, plus md's data offset for a member of an array.
fn needed_leaf_size(n: &RealNode, span: u64, out: &mut Vec<(usize, u64)>) {
    match n {
        RealNode::Array {
            level,
            chunk,
            children,
            spares,
            ..
        } => {
            let k = children.len() as u64;
            let per = match level {
                Level::Raid0 => span.div_ceil(k * chunk) * chunk,
                Level::Raid4 | Level::Raid5 => span.div_ceil((k - 1) * chunk) * chunk,
                Level::Raid6 => span.div_ceil((k - 2) * chunk) * chunk,
                Level::Raid10 => (span * 2).div_ceil(k * chunk) * chunk + chunk,
                Level::Raid1 => span.next_multiple_of(512),
                Level::Concat => span.div_ceil(k).next_multiple_of(512),
            };
            let md_chunk = meta::md_chunk(*level, *chunk);
            for c in children.iter().chain(spares) {
                match c {
                    RealNode::Member(i) => out.push((*i, md::device_for_data(per, md_chunk))),
                    _ => needed_leaf_size(c, per, out),
                }
            }
        }
        RealNode::Member(i) => out.push((*i, span)),
        RealNode::Missing => {}
    }
}

/// Check that real runs made one after another on the same paths can all
/// run: a member file that does not exist is created by the first run that
/// names it, at the size that run needs, so a later run that needs more (or
/// an existing file smaller than a run needs) would fail midway; and a
/// later run that puts a path in another array (another level, chunk,
/// layout, member count or slot) would find metadata it must refuse, unless
/// `create` makes every run's arrays anew. Returns the index of the first
/// run that would fail, and why.
pub fn check_sequence(runs: &[(&str, &Workload)], create: bool) -> Result<(), (usize, Error)> {
    use std::collections::HashMap;
    // Path -> (bytes it will hold, run that decided it or None if it exists).
    let mut held: HashMap<std::path::PathBuf, (u64, Option<usize>)> = HashMap::new();
    // Path -> (array shape, slot path, first run that put it there).
    let mut placed: HashMap<std::path::PathBuf, (u64, Vec<u16>, usize)> = HashMap::new();
    for (i, (expr, w)) in runs.iter().enumerate() {
        let topo = topo::parse_real(expr).map_err(|e| (i, e))?;
        for leaf in meta::leaves(&topo.root) {
            let path = &topo.members[leaf.member].path;
            let (shape, slot, first) =
                placed
                    .entry(path.clone())
                    .or_insert((topo.shape, leaf.path.clone(), i));
            if !create && (*shape != topo.shape || *slot != leaf.path) {
                return Err((
                    i,
                    Error::new(
                        ErrorKind::Refused,
                        format!(
                            "{} is a member of another array in run {first} than in this run: a real sweep whose arrays change needs --create, which creates each run's arrays anew",
                            path.display()
                        ),
                    ),
                ));
            }
        }
        let mut needed = Vec::new();
        if let Some(span) = w.size {
            needed_leaf_size(&topo.root, span, &mut needed);
        }
        for (j, m) in topo.members.iter().enumerate() {
            let need = m
                .size
                .or_else(|| needed.iter().find(|(k, _)| *k == j).map(|(_, s)| *s));
            let existing = std::fs::metadata(&m.path).ok();
            if existing.as_ref().is_some_and(|md| !md.is_file()) {
                continue; // a block device: its size is checked when it runs
            }
            let Some(need) = need else { continue };
            let (bytes, by) = *held
                .entry(m.path.clone())
                .or_insert_with(|| match existing {
                    Some(md) => (md.len(), None),
                    None => (need, Some(i)),
                });
            if need > bytes {
                let origin = match by {
                    Some(r) => format!("is created by run {r} at {bytes} bytes"),
                    None => format!("holds {bytes} bytes"),
                };
                return Err((
                    i,
                    Error::new(ErrorKind::Size, format!(
                        "{} {origin} but this run needs {need}: order the runs largest size= first, or create the files at the largest size",
                        m.path.display()
                    )),
                ));
            }
        }
    }
    Ok(())
}

/// The size of a file or block device, or `None` when nothing is at `path`.
pub fn member_size(path: &str) -> std::io::Result<Option<u64>> {
    match File::open(path) {
        Ok(f) => device_size(&f).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn device_size(f: &File) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::End(0))
}

fn open_member(
    path: &std::path::Path,
    writes: bool,
    direct: bool,
    exclusive: bool,
) -> std::io::Result<(File, bool)> {
    let mut o = OpenOptions::new();
    o.read(true).write(writes);
    // A block device written to is opened exclusively (O_EXCL) unless
    // `--force`: the open fails while it is mounted, held by md or device
    // mapper, or open exclusively elsewhere, and nothing else can claim it
    // during the run.
    let excl = if exclusive && writes && is_block_device(path) {
        libc::O_EXCL
    } else {
        0
    };
    o.custom_flags(excl);
    if direct {
        let mut od = o.clone();
        od.custom_flags(libc::O_DIRECT | excl);
        match od.open(path) {
            Ok(f) => return Ok((f, true)),
            // The file system does not do direct I/O (tmpfs): buffered it is.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((o.open(path)?, false))
}

fn is_block_device(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// Run `w` on the real topology `expr`.
pub fn run(expr: &str, w: &Workload, seed: u64, opts: &RunOptions) -> Result<RunOutput, Error> {
    let wall = Instant::now();
    let seed = w.seed.unwrap_or(seed);
    let mut topo: RealTopology = topo::parse_real(expr)?;
    // Hot spares take missing members' places at once, as md's do.
    topo.take_spares();
    let writes = !matches!(w.rw, Rw::Read | Rw::RandRead) || !topo.took_over.is_empty();
    let (arrays, kinds, mut gens) = open_run(&topo, w, writes, opts)?;
    let nonce = start_generations(&mut gens, writes);
    let Arrays {
        mut members,
        sizes,
        all_direct,
        asm,
        vol,
    } = arrays;
    let mut life = mark_active(&topo, &mut members, &vol, &asm, &sizes, writes, opts)?;
    let intent = writes
        .then(|| intent_for(&asm, &vol, life.events))
        .flatten();
    let span = check_span(w, vol.capacity)?;
    let engine = choose_engine(opts.engine)?;
    let t_start = Instant::now();
    let ramp_end = t_start + std::time::Duration::from_nanos(w.ramp_time.unwrap_or(0));
    let shared = worker::Shared {
        vol: &vol,
        members: &members,
        locks: exec::Locks::default(),
        nonce,
        gens,
        verify: opts.verify,
        lock_needed: vol.has_parity || opts.verify,
        seq: AtomicU64::new(0),
        start: t_start,
        ramp_end,
        // A timed replay keeps its I/Os in flight while it waits for the
        // next one's time (fio's iolog_delay reaps completions meanwhile).
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
        intent: intent.as_ref(),
    };
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
    if let Some((p, uuid)) = state {
        shared
            .gens
            .save(p, &uuid)
            .map_err(|e| Error::new(ErrorKind::Io, format!("saving {}: {e}", p.display())))?;
    }
    // The window ends with the runtime, or else with the last completion.
    let window_end = shared
        .end
        .map_or(merged.last.unwrap_or(wall_end), |e| e.min(wall_end));
    let secs = window_end.saturating_duration_since(ramp_end).as_secs_f64();
    let run_ns = wall_end.duration_since(t_start).as_nanos().max(1) as f64;
    let (mstats, components) = member_reports(&topo, &members, &kinds, &asm.offsets, run_ns);
    let totals = merged.totals;
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
            replay: w.replay.as_ref().map(|r| {
                let (tally, err) = merged.replay.clone();
                raidlab_core::trace::replay::stats(r, tally, &merged.lag, err)
            }),
            ..run_times(secs, wall, totals)
        },
        intervals: merged
            .timeline
            .as_ref()
            .map_or_else(Vec::new, |t| t.intervals(0, (secs * 1e9) as u64)),
        latency: Some(merged.metrics.detail((secs * 1e9) as u64)),
        real: Some(RealStats {
            members: mstats,
            verify: opts.verify.then_some(merged.verify),
            array: array_meta(&topo, &asm, &life),
            ..engine_stats(engine, all_direct, merged.registered, totals)
        }),
    };
    Ok(RunOutput {
        result,
        trace: merged.trace,
        trace_ns: merged.trace_ns,
    })
}

/// The verify state file a run keeps: one that writes under `--verify`
/// with `--verify-state FILE`.
fn state_file(writes: bool, opts: &RunOptions) -> Option<&std::path::Path> {
    (writes && opts.verify)
        .then_some(opts.verify_state.as_deref())
        .flatten()
}

/// Ready the generations a run checks reads against, and return the nonce
/// its own writes carry: a read-only run that knows of no written block
/// expects every block to carry a header (fio's read-only verify).
fn start_generations(gens: &mut verify::Generations, writes: bool) -> u64 {
    if !writes && gens.is_empty() {
        gens.require_every_unit();
    }
    let nonce = run_nonce(gens);
    gens.set_run(nonce);
    nonce
}

/// Shortest time between two checkpoints of a verify state.
const CHECKPOINT_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);
/// A checkpoint waits at least this many times as long as the last one
/// took, so saving the state costs at most 1 % of the run.
const CHECKPOINT_COST: u32 = 100;

/// Run `work` while a thread saves the verify state `gens` to
/// `checkpoint`'s file every [`CHECKPOINT_PERIOD`] (longer when a save is
/// slow): a run killed part-way leaves the generations of the writes it had
/// acknowledged by the last checkpoint. A failed checkpoint is let go: the
/// run's final save reports the error.
fn with_checkpoints<T>(
    gens: &verify::Generations,
    checkpoint: Option<(&std::path::Path, [u8; 16])>,
    work: impl FnOnce() -> T,
) -> T {
    let Some((path, uuid)) = checkpoint else {
        return work();
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let saver = s.spawn(|| {
            let mut wait = CHECKPOINT_PERIOD;
            let mut last = Instant::now();
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                match wait.checked_sub(last.elapsed()) {
                    Some(left) if !left.is_zero() => std::thread::park_timeout(left),
                    _ => {
                        let t0 = Instant::now();
                        let _ = gens.save(path, &uuid);
                        wait = CHECKPOINT_PERIOD.max(t0.elapsed() * CHECKPOINT_COST);
                        last = Instant::now();
                    }
                }
            }
        });
        let out = work();
        done.store(true, std::sync::atomic::Ordering::Release);
        saver.thread().unpark();
        out
    })
}

/// Whether `w` replays a trace at its recorded times.
fn replay_timed(w: &Workload) -> bool {
    w.replay.as_ref().is_some_and(|r| r.timed())
}

/// A real run's times in the simulator's block: the measured window, the
/// wall time since `wall`, and the host I/Os of `totals` (no events).
fn run_times(secs: f64, wall: Instant, totals: [(u64, u64); 2]) -> SimStats {
    SimStats {
        simulated_s: secs,
        wall_s: wall.elapsed().as_secs_f64(),
        events: 0,
        host_ios: totals[0].0 + totals[1].0,
        steady: None,
        rebuilds: Vec::new(),
        replay: None,
    }
}

/// What the engine itself did: its kind, direct I/O, registered buffers,
/// the parity kernel and the read and write totals.
fn engine_stats(
    engine: EngineKind,
    direct: bool,
    registered: bool,
    totals: [(u64, u64); 2],
) -> RealStats {
    RealStats {
        engine: engine.word().into(),
        direct,
        registered_buffers: registered,
        parity_kernel: parity::kernel().into(),
        read: io_totals(totals[0]),
        write: io_totals(totals[1]),
        ..RealStats::default()
    }
}

/// The root array's live write-intent bitmap, when it has one.
fn intent_for(asm: &meta::Assembly, vol: &exec::Vol, events: u64) -> Option<intent::Intent> {
    match (&asm.bitmap, &vol.nodes[0]) {
        (Some(bm), exec::VNode::Array { geo, .. }) => Some(intent::Intent::new(
            geo.clone(),
            bm.chunk,
            asm.root_uuid,
            events,
            asm.leaves.iter().map(|l| l.member).collect(),
        )),
        _ => None,
    }
}

/// The process's CPU use over a run of `run_ns`, as a share of every core.
fn cpu_pct(run_ns: f64) -> f64 {
    cpu_seconds().map_or(0.0, |c| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        (c / (run_ns / 1e9) / cores * 100.0).min(100.0)
    })
}

fn io_totals((ios, bytes): (u64, u64)) -> IoTotals {
    IoTotals { ios, bytes }
}

/// What a run did to its arrays' metadata.
struct Life {
    /// md's event count on the members now.
    events: u64,
    /// Bytes resynchronised before the workload.
    resynced: u64,
    /// Bytes rebuilt onto spares.
    spare_bytes: u64,
    /// Bytes of each member its array uses.
    used: Vec<u64>,
}

/// Check and create the members, assemble their arrays and load the
/// verify state; a refused run leaves no member files it created.
fn open_run(
    topo: &RealTopology,
    w: &Workload,
    writes: bool,
    opts: &RunOptions,
) -> Result<(Arrays, Vec<Option<safety::Kind>>, verify::Generations), Error> {
    // Creating arrays writes their metadata, even in a read run.
    let (kinds, made) = prepare_members(topo, w, writes || opts.create, opts.force)?;
    let opened = check_aliases(topo)
        .and_then(|()| assemble_arrays(topo, writes, opts))
        .and_then(|a| Ok((load_verify_state(opts, &a.asm)?, a)));
    match opened {
        Ok((gens, arrays)) => Ok((arrays, kinds, gens)),
        Err(e) => {
            // Nothing was written yet.
            for &i in &made {
                let _ = std::fs::remove_file(&topo.members[i].path);
            }
            Err(e)
        }
    }
}

/// Before the workload: resynchronise an array not stopped cleanly,
/// rebuild spares that took missing members' places, and mark the arrays
/// active (md does before its first write: a crash from then on leaves
/// them to be resynced). A read run that creates its arrays writes them
/// clean.
fn mark_active(
    topo: &RealTopology,
    members: &mut Members,
    vol: &exec::Vol,
    asm: &meta::Assembly,
    sizes: &[u64],
    writes: bool,
    opts: &RunOptions,
) -> Result<Life, Error> {
    let (resynced, mut events) = resync_if_dirty(topo, members, vol, asm, opts)?;
    let spare_bytes = rebuild_spares(topo, members, vol, asm)?;
    let used = vol.member_use(sizes.len());
    if asm.has_metadata() && (writes || asm.created) {
        events += 1;
        asm.write(&members.files, sizes, &used, events, !writes, &[])
            .map_err(|e| Error::new(ErrorKind::Io, format!("writing metadata: {e}")))?;
    }
    Ok(Life {
        events,
        resynced,
        spare_bytes,
        used,
    })
}

/// After the workload: every write completed, so once the data is durable
/// the arrays are clean again (members that failed keep their old
/// superblocks); spares then take failed members' places.
fn mark_clean(
    topo: &mut RealTopology,
    members: &Members,
    asm: &meta::Assembly,
    sizes: &[u64],
    life: &mut Life,
) -> Result<(), Error> {
    life.events += 1;
    let failed = failed_members(members);
    for (f, _) in members.files.iter().zip(&failed).filter(|(_, &d)| !d) {
        f.sync_data()
            .map_err(|e| Error::new(ErrorKind::Io, format!("flushing members: {e}")))?;
    }
    asm.write(
        &members.files,
        sizes,
        &life.used,
        life.events,
        true,
        &failed,
    )
    .map_err(|e| Error::new(ErrorKind::Io, format!("writing metadata: {e}")))?;
    if let Some((after, bytes, ev)) = spares_for_failed(topo, members, sizes, &failed, life.events)?
    {
        *topo = after;
        life.spare_bytes += bytes;
        life.events = ev;
    }
    Ok(())
}

/// A run's generation nonce: its epoch in the high half (seconds since
/// 1970, past every epoch a loaded verify state holds, so later runs write
/// larger generations); writes number themselves in the low half.
fn run_nonce(gens: &verify::Generations) -> u64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    secs.max(gens.max_epoch() + 1).clamp(1, u32::MAX as u64) << 32
}

/// The result's account of the arrays' metadata, when there is an array.
fn array_meta(topo: &RealTopology, asm: &meta::Assembly, life: &Life) -> Option<ArrayMeta> {
    asm.has_metadata().then(|| ArrayMeta {
        uuid: md::uuid_text(&asm.root_uuid),
        created: asm.created,
        events: life.events,
        resynced_bytes: life.resynced,
        took_over: topo
            .took_over
            .iter()
            .map(|t| {
                format!(
                    "{} took slot {} of the array at column {} ({} bytes rebuilt)",
                    topo.members[t.member].path.display(),
                    t.slot + 1,
                    t.col,
                    life.spare_bytes
                )
            })
            .collect(),
        topology: (!topo.took_over.is_empty()).then(|| topo.expression()),
    })
}

/// Check every member against the safety rules and create the member files
/// that do not exist, at the size the workload needs. Returns each member's
/// kind and the members it created.
fn prepare_members(
    topo: &RealTopology,
    w: &Workload,
    writes: bool,
    force: bool,
) -> Result<(Vec<Option<safety::Kind>>, Vec<usize>), Error> {
    let mut made = Vec::new();
    let mut kinds = Vec::new();
    for m in &topo.members {
        kinds.push(safety::check(&m.path, writes, force)?);
    }
    let mut needed = Vec::new();
    if let Some(span) = w.size {
        needed_leaf_size(&topo.root, span, &mut needed);
    }
    for (i, m) in topo.members.iter().enumerate() {
        if kinds[i].is_some() {
            continue;
        }
        if m.path.exists() {
            // Another name for it (an alias) created it a moment ago;
            // `check_aliases` refuses the pair.
            kinds[i] = Some(safety::Kind::File);
            continue;
        }
        if !writes {
            // A read run has nothing to read from a file it would create
            // blank: a path that does not exist is a mistake (a misspelt
            // member), not a member to make.
            return Err(Error::new(
                ErrorKind::Refused,
                format!(
                    "{} does not exist: a read-only run does not create members (check the path, or write first)",
                    m.path.display()
                ),
            ));
        }
        let size = m
            .size
            .or_else(|| needed.iter().find(|(j, _)| *j == i).map(|(_, s)| *s))
            .ok_or_else(|| {
                Error::new(ErrorKind::Size, format!(
                    "{} does not exist: give the workload a size= (or the member [size=...]) so raidlab can create it",
                    m.path.display()
                ))
            })?;
        create_file(&m.path, size)?;
        kinds[i] = Some(safety::Kind::File);
        made.push(i);
    }
    Ok((kinds, made))
}

/// Scrub the arrays of `expr` as md's `check` (`repair` false: read and
/// compare only) or `repair` sync action (rewrite what is wrong); see
/// `scrub.rs`. An array not stopped cleanly is resynchronised by repair and
/// refused by check.
pub fn scrub(expr: &str, repair: bool, force: bool) -> Result<scrub::ScrubReport, Error> {
    let topo: RealTopology = topo::parse_real(expr)?;
    for m in &topo.members {
        if safety::check(&m.path, repair, force)?.is_none() {
            return Err(Error::new(
                ErrorKind::Refused,
                format!("{} does not exist", m.path.display()),
            ));
        }
    }
    check_aliases(&topo)?;
    let opts = RunOptions {
        force,
        direct: false,
        ..RunOptions::default()
    };
    let Arrays {
        mut members,
        asm,
        vol,
        ..
    } = assemble_arrays(&topo, repair, &opts)?;
    needs_array(&asm, "check")?;
    if asm.dirty && !repair {
        return Err(Error::new(
            ErrorKind::Refused,
            "the array was not stopped cleanly: 'raidlab repair' (or any run with every member) resynchronises it first".to_string(),
        ));
    }
    resync_if_dirty(&topo, &mut members, &vol, &asm, &opts)?;
    let paths: Vec<String> = topo
        .members
        .iter()
        .map(|m| m.path.display().to_string())
        .collect();
    let report = scrub::scrub(&vol, &members, &vol.names(&paths), repair)
        .map_err(|e| Error::new(ErrorKind::Io, format!("scrubbing: {e}")))?;
    if repair {
        for f in &members.files {
            f.sync_data()
                .map_err(|e| Error::new(ErrorKind::Io, format!("flushing members: {e}")))?;
        }
    }
    Ok(report)
}

/// What `create` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CreateReport {
    /// UUID of the root array.
    pub uuid: String,
    /// The members, in expression order.
    pub members: Vec<String>,
    /// Bytes of the volume.
    pub capacity: u64,
    /// Bytes rewritten by the initial resync (0 with `assume_clean`).
    pub resynced_bytes: u64,
}

/// Create the arrays of `expr` over its members, as `mdadm --create` does:
/// md superblocks (and bitmaps) on every member, then an initial resync
/// that makes parity and copies agree with whatever the members hold, unless
/// `assume_clean` (members known to be zeroed, or data that will be
/// rewritten). Member files that do not exist are created at their
/// `[size=...]`.
pub fn create(expr: &str, assume_clean: bool, force: bool) -> Result<CreateReport, Error> {
    let topo: RealTopology = topo::parse_real(expr)?;
    let mut made = Vec::new();
    let out = create_made(&topo, assume_clean, force, &mut made);
    if out.is_err() {
        // A create that failed leaves no member file it made.
        for p in made {
            let _ = std::fs::remove_file(p);
        }
    }
    out
}

/// `create`'s work; `made` collects the member files it creates.
fn create_made<'t>(
    topo: &'t RealTopology,
    assume_clean: bool,
    force: bool,
    made: &mut Vec<&'t std::path::Path>,
) -> Result<CreateReport, Error> {
    for m in &topo.members {
        if safety::check(&m.path, true, force)?.is_none() {
            let size = m.size.ok_or_else(|| {
                Error::new(
                    ErrorKind::Size,
                    format!(
                        "{} does not exist: give it a [size=...] to create it",
                        m.path.display()
                    ),
                )
            })?;
            create_file(&m.path, size)?;
            made.push(&m.path);
        }
    }
    check_aliases(topo)?;
    let (members, sizes, _) = open_members(topo, true, false, !force)?;
    let asm = meta::assemble(topo, &members.files, &sizes, meta::Intent::Create)?;
    needs_array(&asm, "create")?;
    let vol = exec::Vol::build(&topo.root, &data_areas(&sizes, &asm), &asm.offsets)?;
    let used = vol.member_use(sizes.len());
    let write = |a: &meta::Assembly, events, clean| {
        a.write(
            &members.files,
            &sizes,
            &used,
            events,
            clean,
            &failed_members(&members),
        )
        .map_err(|e| Error::new(ErrorKind::Io, format!("writing metadata: {e}")))
    };
    let mut resynced = 0;
    if assume_clean {
        write(&asm, 1, true)?;
    } else {
        // Active, and without a bitmap, until the resync is done: a crash
        // midway resyncs the whole array again.
        let mut pending = asm.clone();
        pending.bitmap = None;
        write(&pending, 1, false)?;
        resynced = resync::resync(&vol, &members, None)
            .map_err(|e| Error::new(ErrorKind::Io, format!("initial resync: {e}")))?;
        write(&asm, 2, true)?;
    }
    Ok(CreateReport {
        uuid: md::uuid_text(&asm.root_uuid),
        members: topo
            .members
            .iter()
            .map(|m| m.path.display().to_string())
            .collect(),
        capacity: vol.capacity,
        resynced_bytes: resynced,
    })
}

/// What `rebuild` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RebuildReport {
    /// UUID of the root array.
    pub uuid: String,
    /// The members rebuilt.
    pub rebuilt: Vec<String>,
    /// Bytes written to them.
    pub bytes: u64,
    /// Bytes a stopped rebuild had already recovered (recorded in the
    /// replacements' superblocks), which this one did not rebuild again.
    pub resumed_bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Event count on the members afterwards.
    pub events: u64,
}

/// Rebuild the blank or stale members of the arrays of `expr` (replacement
/// files or devices) from the rest of their arrays, at most `max_rate`
/// bytes per second; `progress` is told (bytes done, bytes in all). A
/// replacement file that does not exist is created at the size of the
/// largest member. See `rebuild.rs`.
pub fn rebuild(
    expr: &str,
    max_rate: Option<f64>,
    force: bool,
    progress: &dyn Fn(u64, u64),
) -> Result<RebuildReport, Error> {
    let started = Instant::now();
    let topo: RealTopology = topo::parse_real(expr)?;
    create_replacements(&topo, force)?;
    check_aliases(&topo)?;
    let (members, sizes, _) = open_members(&topo, true, false, !force)?;
    let asm = meta::assemble(
        &topo,
        &members.files,
        &sizes,
        meta::Intent::Rebuild { force },
    )?;
    needs_array(&asm, "rebuild")?;
    if asm.dirty && !force {
        return Err(Error::new(
            ErrorKind::Refused,
            "the array was not stopped cleanly: run it once with its current members to resynchronise it before rebuilding (or --force)".to_string(),
        ));
    }
    let vol = exec::Vol::build(&topo.root, &data_areas(&sizes, &asm), &asm.offsets)?;
    let pace = rebuild::Pace { max_rate, progress };
    let used = vol.member_use(sizes.len());
    let record = |m: usize, bytes: u64| asm.write_recovery(&members.files, &sizes, &used, m, bytes);
    let resume = rebuild::Resume {
        from: &asm.resume,
        record: &record,
    };
    let bytes = rebuild::rebuild(&vol, &members, &asm.rebuild, &pace, &resume)
        .map_err(|e| Error::new(ErrorKind::Io, format!("rebuilding: {e}")))?;
    let events = asm.events + 1;
    asm.write(&members.files, &sizes, &used, events, true, &[])
        .map_err(|e| Error::new(ErrorKind::Io, format!("writing metadata: {e}")))?;
    Ok(RebuildReport {
        uuid: md::uuid_text(&asm.root_uuid),
        rebuilt: asm
            .rebuild
            .iter()
            .map(|&m| topo.members[m].path.display().to_string())
            .collect(),
        bytes,
        resumed_bytes: asm.resume.iter().map(|r| r.1).sum(),
        seconds: started.elapsed().as_secs_f64(),
        events,
    })
}

/// Check every member of a rebuild against the safety rules (it writes),
/// and create the replacement files that do not exist, at the size of the
/// largest member.
fn create_replacements(topo: &RealTopology, force: bool) -> Result<(), Error> {
    let mut absent = Vec::new();
    for m in &topo.members {
        if safety::check(&m.path, true, force)?.is_none() {
            absent.push(&m.path);
        }
    }
    let size = topo
        .members
        .iter()
        .filter_map(|m| std::fs::metadata(&m.path).ok().map(|md| md.len()))
        .max()
        .unwrap_or(0);
    for p in absent {
        create_file(p, size)?;
    }
    Ok(())
}

/// Rebuild the hot spares that took missing members' places, before the
/// workload (md starts the recovery at once; here the run waits for it).
/// Returns the bytes written.
fn rebuild_spares(
    topo: &RealTopology,
    members: &Members,
    vol: &exec::Vol,
    asm: &meta::Assembly,
) -> Result<u64, Error> {
    if asm.rebuild.is_empty() {
        return Ok(0);
    }
    debug_assert!(
        !topo.took_over.is_empty(),
        "only spares are rebuilt by a run"
    );
    let pace = rebuild::Pace {
        max_rate: None,
        progress: &|_, _| {},
    };
    rebuild::rebuild(vol, members, &asm.rebuild, &pace, &rebuild::Resume::none())
        .map_err(|e| Error::new(ErrorKind::Io, format!("rebuilding onto a spare: {e}")))
}

/// After a run in which members failed: hot spares of their arrays take
/// their places and are rebuilt there (md starts this recovery when the
/// member fails; here it follows the workload). Returns the topology as it
/// now stands, the bytes rebuilt and the members' event count, or `None`
/// when no spare could take a failed member's place.
fn spares_for_failed(
    topo: &RealTopology,
    members: &Members,
    sizes: &[u64],
    failed: &[bool],
    events: u64,
) -> Result<Option<(RealTopology, u64, u64)>, Error> {
    let dead: Vec<usize> = (0..failed.len()).filter(|&m| failed[m]).collect();
    if dead.is_empty() {
        return Ok(None);
    }
    let mut after = topo.clone();
    after.fail_members(&dead);
    let before = after.took_over.len();
    let moved = after.root.take_spares();
    if moved.is_empty() {
        return Ok(None);
    }
    after.took_over.truncate(before);
    after.took_over.extend(moved);
    let asm = meta::assemble(&after, &members.files, sizes, meta::Intent::Assemble)?;
    let vol = exec::Vol::build(&after.root, &data_areas(sizes, &asm), &asm.offsets)?;
    let bytes = rebuild_spares(&after, members, &vol, &asm)?;
    asm.write(
        &members.files,
        sizes,
        &vol.member_use(sizes.len()),
        events + 1,
        true,
        failed,
    )
    .map_err(|e| Error::new(ErrorKind::Io, format!("writing metadata: {e}")))?;
    Ok(Some((after, bytes, events + 1)))
}

/// The generations a verified run starts from: what `--verify-state`
/// recorded for this volume (its root array's UUID; zeros for a lone
/// path), or none.
fn load_verify_state(
    opts: &RunOptions,
    asm: &meta::Assembly,
) -> Result<verify::Generations, Error> {
    let gens = verify::Generations::default();
    if let (true, Some(p)) = (opts.verify, &opts.verify_state) {
        if p.exists() {
            gens.load(p, &asm.root_uuid).map_err(|e| {
                Error::new(
                    ErrorKind::Refused,
                    format!("verify state {}: {e}", p.display()),
                )
            })?;
        }
    }
    Ok(gens)
}

/// Create a member file of `size` bytes (sparse), refusing to touch one
/// that appeared meanwhile.
fn create_file(path: &std::path::Path, size: u64) -> Result<(), Error> {
    let f = File::create_new(path)
        .map_err(|e| Error::new(ErrorKind::Io, format!("creating {}: {e}", path.display())))?;
    f.set_len(size).map_err(|e| {
        // It was made here: a file that cannot have its size goes again.
        let _ = std::fs::remove_file(path);
        let kind = match e.raw_os_error() {
            Some(libc::EFBIG | libc::ENOSPC | libc::EINVAL) => ErrorKind::Size,
            _ => ErrorKind::Io,
        };
        Error::new(
            kind,
            format!("creating {} at {size} bytes: {e}", path.display()),
        )
    })
}

/// Refuse a command that needs an array (`what` it would do) on a lone
/// path.
fn needs_array(asm: &meta::Assembly, what: &str) -> Result<(), Error> {
    if asm.has_metadata() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Expression,
        format!("a lone path is no array: there is nothing to {what}"),
    ))
}

/// Open members, their arrays assembled (or created) and compiled.
struct Arrays {
    members: Members,
    /// Device sizes.
    sizes: Vec<u64>,
    all_direct: bool,
    asm: meta::Assembly,
    vol: exec::Vol,
}

/// Open the members, read their superblocks and compile the volume over
/// their data areas. A read run whose arrays need a resync opens its
/// members for writing.
fn assemble_arrays(topo: &RealTopology, writes: bool, opts: &RunOptions) -> Result<Arrays, Error> {
    let (members, sizes, all_direct) = open_members(topo, writes, opts.direct, !opts.force)?;
    let intent = if opts.create {
        meta::Intent::Create
    } else {
        meta::Intent::Assemble
    };
    let asm = meta::assemble(topo, &members.files, &sizes, intent)?;
    // A read-only run over bare members (no metadata anywhere) reads them
    // as they are, from their first byte, writing nothing: it creates no
    // array unless asked (--create).
    let asm = if asm.created && !writes && !opts.create {
        asm.bare()
    } else {
        asm
    };
    if (asm.dirty || asm.created) && !writes {
        // Resyncing and creating write: reopen for it.
        return assemble_arrays(topo, true, opts);
    }
    let vol = exec::Vol::build(&topo.root, &data_areas(&sizes, &asm), &asm.offsets)?;
    Ok(Arrays {
        members,
        sizes,
        all_direct,
        asm,
        vol,
    })
}

/// Which members have failed so far (an I/O error during the run or a
/// resync).
fn failed_members(members: &Members) -> Vec<bool> {
    (0..members.files.len())
        .map(|m| members.health.is_dead(m))
        .collect()
}

/// The bytes of data each member holds for the volume: from its data
/// offset to its end, or to what its superblock records its array using of
/// it (md keeps an array's recorded size when members grow).
fn data_areas(sizes: &[u64], asm: &meta::Assembly) -> Vec<u64> {
    sizes
        .iter()
        .zip(&asm.offsets)
        .enumerate()
        .map(|(m, (s, o))| match asm.recorded.get(m) {
            Some(&r) if r > 0 => r.min(s - o),
            _ => s - o,
        })
        .collect()
}

/// Resynchronise arrays whose superblocks say they were not stopped
/// cleanly, then mark them clean (returns the bytes rewritten and the event
/// count now on the members); a dirty array with a member missing is
/// refused (its parity may not match its data) unless `--force`.
fn resync_if_dirty(
    topo: &RealTopology,
    members: &mut Members,
    vol: &exec::Vol,
    asm: &meta::Assembly,
    opts: &RunOptions,
) -> Result<(u64, u64), Error> {
    if !asm.dirty {
        return Ok((0, asm.events));
    }
    if topo.root.has_missing() || !asm.rebuild.is_empty() {
        if opts.force {
            return Ok((0, asm.events));
        }
        return Err(Error::new(
            ErrorKind::Refused,
            "the array was not stopped cleanly and a member is missing: its parity or copies may not match its data (the write hole), so a lost member could be rebuilt wrong. Run it once with every member to resynchronise it, or --force to use it as it is".to_string(),
        ));
    }
    let bytes = resync::resync(vol, members, asm.bitmap.as_ref())
        .map_err(|e| Error::new(ErrorKind::Io, format!("resynchronising: {e}")))?;
    let sizes: Vec<u64> = members
        .files
        .iter()
        .map(device_size)
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::new(ErrorKind::Io, format!("member size: {e}")))?;
    // A member that failed during the resync keeps its old superblock and
    // its slot is marked faulty, as after a run.
    asm.write(
        &members.files,
        &sizes,
        &vol.member_use(sizes.len()),
        asm.events + 1,
        true,
        &failed_members(members),
    )
    .map_err(|e| Error::new(ErrorKind::Io, format!("writing metadata: {e}")))?;
    // The run's own figures start after the resync.
    members.counters = members
        .counters
        .iter()
        .map(|_| MemberCounters::default())
        .collect();
    Ok((bytes, asm.events + 1))
}

/// Refuse two members that are one file or device under different names
/// (`a.img` and `$PWD/a.img`, a hard link, a symlink, a loop device and its
/// backing file): the array would write one member's data over another's.
fn check_aliases(topo: &RealTopology) -> Result<(), Error> {
    let mut seen: Vec<((u64, u64), usize)> = Vec::new();
    for (i, m) in topo.members.iter().enumerate() {
        let ids = safety::identity(&m.path)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", m.path.display())))?;
        for id in ids {
            if let Some(&(_, j)) = seen.iter().find(|(s, _)| *s == id) {
                return Err(Error::new(
                    ErrorKind::Expression,
                    format!(
                        "'{}' (column {}) and '{}' (column {}) are the same file or device: a member can appear once",
                        topo.members[j].path.display(),
                        topo.members[j].col,
                        m.path.display(),
                        m.col
                    ),
                ));
            }
            seen.push((id, i));
        }
    }
    Ok(())
}

/// Open every member (O_DIRECT when asked and the file system allows it;
/// block devices written to exclusively when `exclusive`): the members,
/// their sizes, and whether all of them are direct.
fn open_members(
    topo: &RealTopology,
    writes: bool,
    direct: bool,
    exclusive: bool,
) -> Result<(Members, Vec<u64>, bool), Error> {
    let mut files = Vec::new();
    let mut sizes = Vec::new();
    let mut all_direct = true;
    for m in &topo.members {
        let (f, d) = open_member(&m.path, writes, direct, exclusive)
            .map_err(|e| Error::new(ErrorKind::Io, format!("opening {}: {e}", m.path.display())))?;
        all_direct &= d;
        sizes.push(device_size(&f).map_err(|e| {
            Error::new(ErrorKind::Io, format!("size of {}: {e}", m.path.display()))
        })?);
        files.push(f);
    }
    let members = Members {
        files,
        paths: topo
            .members
            .iter()
            .map(|m| m.path.display().to_string())
            .collect(),
        counters: topo
            .members
            .iter()
            .map(|_| MemberCounters::default())
            .collect(),
        health: backend::Health::new(topo.members.iter().map(|m| m.fault.clone()).collect()),
    };
    Ok((members, sizes, all_direct))
}

/// The span the workload addresses on a volume of `cap` bytes, checked.
fn check_span(w: &Workload, cap: u64) -> Result<u64, Error> {
    let span = w.size.unwrap_or(cap);
    if span > cap {
        return Err(Error::new(
            ErrorKind::Size,
            format!("size={span} is larger than the volume ({cap} bytes)"),
        ));
    }
    if w.max_bs() > span || span == 0 {
        return Err(Error::new(
            ErrorKind::Size,
            format!(
                "block size {} is larger than the span ({span} bytes)",
                w.max_bs()
            ),
        ));
    }
    Ok(span)
}

/// The back end asked for, or io_uring where the kernel has it.
fn choose_engine(asked: Option<EngineKind>) -> Result<EngineKind, Error> {
    match asked {
        Some(EngineKind::IoUring) if !EngineKind::io_uring_available() => Err(Error::new(
            ErrorKind::Engine,
            "io_uring is not available here (kernel or seccomp); use --engine psync",
        )),
        Some(e) => Ok(e),
        None if EngineKind::io_uring_available() => Ok(EngineKind::IoUring),
        None => Ok(EngineKind::Psync),
    }
}

/// Every job's stream with its rate clock (fio's `rate`/`rate_iops`), if
/// it has one.
fn paced_streams(
    w: &Workload,
    span: u64,
    seed: u64,
) -> Vec<(raidlab_core::workload::JobStream, Option<Pacer>)> {
    job_streams(w, span, seed)
        .into_iter()
        .enumerate()
        .map(|(j, st)| (st, Pacer::new(&w.rate, seed, j as u32)))
        .collect()
}

/// Run the jobs: on io_uring one thread per job keeps `depth` I/Os in
/// flight; on psync `depth` threads per job share its stream. Returns each
/// worker's output with its job.
fn run_workers(
    shared: &worker::Shared<'_>,
    streams: Vec<(raidlab_core::workload::JobStream, Option<Pacer>)>,
    engine: EngineKind,
    depth: usize,
    trace: bool,
) -> Vec<(usize, worker::WorkerOut)> {
    match engine {
        EngineKind::IoUring => std::thread::scope(|s| {
            let hs: Vec<_> = streams
                .into_iter()
                .enumerate()
                .map(|(j, (st, pacer))| {
                    let src = worker::Source::Own(Box::new(st), trace.then(Vec::new), pacer);
                    (
                        j,
                        s.spawn(move || worker::run_worker(shared, engine, depth, src)),
                    )
                })
                .collect();
            hs.into_iter()
                .map(|(j, h)| (j, h.join().expect("worker thread")))
                .collect()
        }),
        EngineKind::Psync => {
            let shared_streams: Vec<Mutex<_>> = streams
                .into_iter()
                .map(|(st, pacer)| Mutex::new((st, trace.then(Vec::new), pacer)))
                .collect();
            let mut outs = std::thread::scope(|s| {
                let mut hs = Vec::new();
                for (j, m) in shared_streams.iter().enumerate() {
                    for _ in 0..depth {
                        hs.push((
                            j,
                            s.spawn(move || {
                                worker::run_worker(shared, engine, 1, worker::Source::Shared(m))
                            }),
                        ));
                    }
                }
                hs.into_iter()
                    .map(|(j, h)| (j, h.join().expect("worker thread")))
                    .collect::<Vec<_>>()
            });
            for (j, m) in shared_streams.into_iter().enumerate() {
                let (st, t, _) = m.into_inner().unwrap_or_else(|e| e.into_inner());
                if let Some(o) = outs.iter_mut().find(|(k, _)| *k == j) {
                    o.1.trace = t;
                    o.1.replay = worker::replay_of(&st);
                }
            }
            outs
        }
    }
}

/// The workers' outputs joined.
struct Merged {
    metrics: Metrics,
    /// (I/Os, bytes) of reads and of writes, whole run.
    totals: [(u64, u64); 2],
    verify: VerifyStats,
    /// The last completion of any worker.
    last: Option<Instant>,
    trace: Vec<Vec<Io>>,
    /// When each traced I/O was to go out, ns from the run's start.
    trace_ns: Vec<Vec<u64>>,
    registered: bool,
    lag: raidlab_core::metrics::Lag,
    replay: (raidlab_core::trace::replay::Tally, Option<String>),
    timeline: Option<raidlab_core::metrics::Timeline>,
}

/// Join the workers' outputs; the first worker error fails the run.
fn merge(outs: Vec<(usize, worker::WorkerOut)>, jobs: usize, uring: bool) -> Result<Merged, Error> {
    let mut m = Merged {
        metrics: Metrics::default(),
        totals: [(0, 0); 2],
        verify: VerifyStats::default(),
        last: None,
        trace: vec![Vec::new(); jobs],
        trace_ns: vec![Vec::new(); jobs],
        registered: uring,
        lag: Default::default(),
        replay: Default::default(),
        timeline: None,
    };
    for (j, o) in outs {
        if let Some(e) = o.error {
            return Err(Error::new(ErrorKind::Io, e.to_string()));
        }
        m.metrics.merge(&o.metrics);
        for (t, o) in m.totals.iter_mut().zip(o.totals) {
            t.0 += o.0;
            t.1 += o.1;
        }
        m.verify.checked_units += o.checked;
        m.verify.unwritten_units += o.unwritten;
        m.verify.mismatches += o.mismatches;
        m.verify.repaired += o.repaired;
        for b in o.first_bad {
            if m.verify.first.len() < 10 {
                m.verify.first.push(b);
            }
        }
        m.last = m.last.max(o.last_done);
        m.lag.merge(&o.lag);
        if let Some(t) = &o.timeline {
            match &mut m.timeline {
                Some(mt) => mt.merge(t),
                None => m.timeline = Some(t.clone()),
            }
        }
        if let Some((t, e)) = o.replay {
            m.replay.0.add(&t);
            if m.replay.1.is_none() {
                m.replay.1 = e;
            }
        }
        if let Some(t) = o.trace {
            m.trace_ns[j] = t.iter().map(|x| x.1).collect();
            m.trace[j] = t.into_iter().map(|x| x.0).collect();
        }
        m.registered &= o.registered;
    }
    Ok(m)
}

/// Each member's counts and utilisation over a run of `run_ns`, as the
/// real block and as a component of the result.
fn member_reports(
    topo: &RealTopology,
    members: &Members,
    kinds: &[Option<safety::Kind>],
    offsets: &[u64],
    run_ns: f64,
) -> (Vec<MemberStats>, Vec<Component>) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut mstats = Vec::new();
    let mut components = Vec::new();
    let failed = members.health.reasons();
    for (i, m) in topo.members.iter().enumerate() {
        let c = &members.counters[i];
        let util = (c.busy_ns() as f64 / run_ns).min(1.0);
        let kind = match kinds[i] {
            Some(safety::Kind::BlockDevice) => "block",
            _ => "file",
        };
        let io = IoCounts {
            reads: c.reads.load(Relaxed),
            writes: c.writes.load(Relaxed),
            read_bytes: c.read_bytes.load(Relaxed),
            write_bytes: c.write_bytes.load(Relaxed),
        };
        mstats.push(MemberStats {
            path: m.path.display().to_string(),
            kind: kind.into(),
            reads: io.reads,
            writes: io.writes,
            read_bytes: io.read_bytes,
            write_bytes: io.write_bytes,
            utilization: round3(util),
            data_offset: offsets[i],
            failed: failed[i].clone(),
        });
        components.push(Component {
            name: m.path.display().to_string(),
            kind: kind.into(),
            utilization: round3(util),
            resource: Some("device".into()),
            bottleneck: util >= BOTTLENECK_UTIL,
            write_amplification: None,
            io: Some(io),
            wear: None,
        });
    }
    (mstats, components)
}

/// CPU time (user + system) this process has used, seconds.
fn cpu_seconds() -> Option<f64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the pointer it is given,
    // which points at a properly sized, writable MaybeUninit.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: getrusage succeeded, so the struct is initialised.
    let ru = unsafe { ru.assume_init() };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    Some(t(ru.ru_utime) + t(ru.ru_stime))
}

/// An fio job file equivalent to `w` on `filename` (`raidlab export-fio`).
pub fn fio_job(
    w: &Workload,
    seed: u64,
    filename: Option<&str>,
    engine: EngineKind,
    direct: bool,
) -> String {
    let mut s = String::from("; written by raidlab export-fio\n[global]\n");
    s += &format!("ioengine={}\n", engine.word());
    s += &format!("direct={}\n", u8::from(direct));
    // Where raidlab picks random offsets with replacement, fio must too
    // (no random map); where it keeps one, so does fio by default.
    if !w.uses_random_map() {
        s += "norandommap=1\n";
    }
    s += "randrepeat=0\n";
    s += &format!("randseed={}\n", w.seed.unwrap_or(seed));
    s += "group_reporting=1\n";
    if let Some(f) = filename {
        s += &format!("filename={f}\n");
    }
    // fio applies percentage_random to the rand* patterns only.
    let rw = match (w.rw, w.percentage_random) {
        (Rw::Read, 1..) => "randread",
        (Rw::Write, 1..) => "randwrite",
        (Rw::Rw, 1..) => "randrw",
        (Rw::RandRead, 0) => "read",
        (Rw::RandWrite, 0) => "write",
        (Rw::RandRw, 0) => "rw",
        (r, _) => r.word(),
    };
    for (k, v) in w.to_pairs() {
        match k.as_str() {
            "rw" => s += &format!("rw={rw}\n"),
            "percentage_random" if w.percentage_random == 0 || w.percentage_random == 100 => {}
            "norandommap" => {}
            // fio polls with io_uring and pvsync2 only.
            "hipri" if engine != EngineKind::IoUring => {
                s += "; hipri=1 left out: fio polls only with io_uring or pvsync2\n"
            }
            _ => s += &format!("{k}={v}\n"),
        }
    }
    if w.runtime.is_some() {
        s += "time_based=1\n";
    }
    s += "\n[raidlab]\n";
    s
}
