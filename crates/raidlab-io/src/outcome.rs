//! A run's workers and what they measured: the engine chosen, the job
//! streams, verify-state checkpoints, and the result's engine, member and
//! time blocks.

use crate::backend::{EngineKind, Members};
use crate::error::{Error, ErrorKind};
use crate::lifecycle::run_nonce;
use crate::options::RunOptions;
use crate::topo::RealTopology;
use crate::{parity, safety, verify, worker};
use raidlab_core::metrics::Metrics;
use raidlab_core::pace::Pacer;
use raidlab_core::result::{
    round3, Component, IoCounts, IoTotals, MemberStats, RealStats, SimStats, VerifyStats,
    BOTTLENECK_UTIL,
};
use raidlab_core::workload::{volume_streams_from, Io, Region, Workload};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Instant;

/// The verify state file a run keeps: one that writes under `--verify`
/// with `--verify-state FILE`.
pub(crate) fn state_file(writes: bool, opts: &RunOptions) -> Option<&std::path::Path> {
    (writes && opts.verify)
        .then_some(opts.verify_state.as_deref())
        .flatten()
}

/// Ready the generations a run checks reads against, and return the nonce
/// its own writes carry: a read-only run that knows of no written block
/// expects every block to carry a header (fio's read-only verify).
pub(crate) fn start_generations(gens: &mut verify::Generations, writes: bool) -> u64 {
    if !writes && gens.is_empty() {
        gens.require_every_unit();
    }
    let nonce = run_nonce(gens);
    gens.set_run(nonce);
    nonce
}

/// Shortest time between two checkpoints of a verify state.
pub(crate) const CHECKPOINT_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// A checkpoint waits at least this many times as long as the last one
/// took, so saving the state costs at most 1 % of the run.
pub(crate) const CHECKPOINT_COST: u32 = 100;

/// Run `work` while a thread saves the verify state `gens` to
/// `checkpoint`'s file every [`CHECKPOINT_PERIOD`] (longer when a save is
/// slow): a run killed part-way leaves the generations of the writes it had
/// acknowledged by the last checkpoint. A failed checkpoint is let go: the
/// run's final save reports the error.
pub(crate) fn with_checkpoints<T>(
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
pub(crate) fn replay_timed(w: &Workload) -> bool {
    w.replay.as_ref().is_some_and(|r| r.timed())
}

/// A real run's times in the simulator's block: the measured window, the
/// wall time since `wall`, and the host I/Os of `totals` (no events).
pub(crate) fn run_times(secs: f64, wall: Instant, totals: [(u64, u64); 2]) -> SimStats {
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
pub(crate) fn engine_stats(
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

/// The process's CPU use over a run of `run_ns`, as a share of every core.
pub(crate) fn cpu_pct(run_ns: f64) -> f64 {
    cpu_seconds().map_or(0.0, |c| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        (c / (run_ns / 1e9) / cores * 100.0).min(100.0)
    })
}

pub(crate) fn io_totals((ios, bytes): (u64, u64)) -> IoTotals {
    IoTotals { ios, bytes }
}

/// Each job's region of a volume of `cap` bytes, checked.
pub(crate) fn check_regions(w: &Workload, cap: u64) -> Result<Vec<Region>, Error> {
    w.regions(cap)
        .map_err(|e| Error::new(ErrorKind::Size, e.to_string()))
}

/// The back end asked for, or io_uring where the kernel has it.
pub(crate) fn choose_engine(asked: Option<EngineKind>) -> Result<EngineKind, Error> {
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
pub(crate) fn paced_streams(
    w: &Workload,
    regions: &[Region],
    seed: u64,
    first_job: u32,
) -> Vec<(raidlab_core::workload::JobStream, Option<Pacer>)> {
    volume_streams_from(w, regions, seed, 1, first_job)
        .into_iter()
        .zip(first_job..)
        .map(|(st, j)| (st, Pacer::new(&w.rate, seed, j)))
        .collect()
}

/// One job to run.
pub(crate) struct WorkerJob<'s, 'a> {
    /// What the workers of the job's section share.
    pub(crate) shared: &'s worker::Shared<'a>,
    /// The job's offsets and sizes.
    pub(crate) stream: raidlab_core::workload::JobStream,
    /// The job's rate clock (fio's `rate`/`rate_iops`), if it has one.
    pub(crate) pacer: Option<Pacer>,
}

/// Run the jobs: on io_uring one thread per job keeps its section's depth
/// of I/Os in flight; on psync that many threads per job share its stream.
/// Returns each worker's output with its job's place in `jobs`.
pub(crate) fn run_workers(
    jobs: Vec<WorkerJob<'_, '_>>,
    engine: EngineKind,
    trace: bool,
) -> Vec<(usize, worker::WorkerOut)> {
    match engine {
        EngineKind::IoUring => std::thread::scope(|s| {
            let hs: Vec<_> = jobs
                .into_iter()
                .enumerate()
                .map(|(j, job)| {
                    let WorkerJob {
                        shared,
                        stream,
                        pacer,
                    } = job;
                    let src = worker::Source::Own(Box::new(stream), trace.then(Vec::new), pacer);
                    let depth = shared.job.depth;
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
            let shares: Vec<&worker::Shared<'_>> = jobs.iter().map(|j| j.shared).collect();
            let shared_streams: Vec<Mutex<_>> = jobs
                .into_iter()
                .map(|j| Mutex::new((j.stream, trace.then(Vec::new), j.pacer)))
                .collect();
            let mut outs = std::thread::scope(|s| {
                let mut hs = Vec::new();
                for (j, m) in shared_streams.iter().enumerate() {
                    let shared = shares[j];
                    for _ in 0..shared.job.depth {
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
pub(crate) struct Merged {
    pub(crate) metrics: Metrics,
    /// (I/Os, bytes) of reads and of writes, whole run.
    pub(crate) totals: [(u64, u64); 2],
    pub(crate) verify: VerifyStats,
    /// The last completion of any worker.
    pub(crate) last: Option<Instant>,
    pub(crate) trace: Vec<Vec<Io>>,
    /// When each traced I/O was to go out, ns from the run's start.
    pub(crate) trace_ns: Vec<Vec<u64>>,
    pub(crate) registered: bool,
    pub(crate) lag: raidlab_core::metrics::Lag,
    pub(crate) replay: (raidlab_core::trace::replay::Tally, Option<String>),
    pub(crate) timeline: Option<raidlab_core::metrics::Timeline>,
    /// The guards the jobs tripped, one a job, in job order.
    pub(crate) errors: Vec<raidlab_core::guard::JobError>,
    /// What the jobs' `latency_target` searches found, in job order.
    pub(crate) found: Vec<raidlab_core::depth_search::Found>,
    /// Where a converged search restarted the window, and its end from
    /// there (one job searches at a time).
    pub(crate) window_from: Option<(Instant, Option<Instant>)>,
}

impl Merged {
    /// A trace replay's account, when the workload replays one.
    pub(crate) fn replay_stats(&self, w: &Workload) -> Option<raidlab_core::result::ReplayStats> {
        w.replay.as_ref().map(|r| {
            let (tally, err) = self.replay.clone();
            raidlab_core::trace::replay::stats(r, tally, &self.lag, err)
        })
    }

    /// The timeline over a window of `secs`, when the workload asks for one.
    pub(crate) fn intervals(&self, secs: f64) -> Vec<raidlab_core::result::Interval> {
        self.timeline
            .as_ref()
            .map_or_else(Vec::new, |t| t.intervals(0, (secs * 1e9) as u64))
    }
}

/// Save the verify state to the file `state` names, for its array.
pub(crate) fn save_state(
    gens: &verify::Generations,
    state: Option<(&std::path::Path, [u8; 16])>,
) -> Result<(), Error> {
    if let Some((p, uuid)) = state {
        gens.save(p, &uuid)
            .map_err(|e| Error::io(format!("saving {}", p.display()), e))?;
    }
    Ok(())
}

/// The measured window, seconds: from the ramp's end to the runtime's end,
/// or else to the last completion (`wall_end` bounding both).
pub(crate) fn window_secs(
    end: Option<Instant>,
    last: Option<Instant>,
    wall_end: Instant,
    ramp_end: Instant,
) -> f64 {
    let window_end = end.map_or(last.unwrap_or(wall_end), |e| e.min(wall_end));
    window_end.saturating_duration_since(ramp_end).as_secs_f64()
}

/// Join the workers' outputs; the first worker error fails the run.
pub(crate) fn merge(
    outs: Vec<(usize, worker::WorkerOut)>,
    jobs: usize,
    uring: bool,
) -> Result<Merged, Error> {
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
        errors: Vec::new(),
        found: Vec::new(),
        window_from: None,
    };
    for (j, o) in outs {
        if let Some(t) = o
            .tripped
            .filter(|_| !m.errors.iter().any(|e| e.job == j as u32))
        {
            m.errors
                .push(raidlab_core::guard::JobError::new(j as u32, t));
        }
        if let Some(e) = o.error {
            return Err(Error::from_io(e));
        }
        if let Some(f) = o.found {
            m.found
                .push(raidlab_core::depth_search::Found { job: j as u32, ..f });
        }
        m.window_from = m.window_from.or(o.window_from);
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
    m.errors.sort_by_key(|e| e.job);
    m.found.sort_by_key(|f| f.job);
    Ok(m)
}

/// Each member's counts and utilisation over a run of `run_ns`, as the
/// real block and as a component of the result.
pub(crate) fn member_reports(
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
pub(crate) fn cpu_seconds() -> Option<f64> {
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
