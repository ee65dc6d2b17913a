//! One worker thread: a small single-threaded executor that keeps up to
//! `depth` host I/Os of one job in flight, polling each host I/O's future
//! when the member operations it waits for complete.

use crate::backend::{Backend, EngineKind, Members, Tries};
use crate::buf::ABuf;
use crate::exec::{Exec, LockFut, Locks, Vol};
use crate::verify::{self, Generations, Mismatch};
use raidlab_core::depth_search::{DepthSearch, Step};
use raidlab_core::metrics::Metrics;
use raidlab_core::pace::Pacer;
use raidlab_core::workload::{Io, JobStream, ThinkClock};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// What the workers of a job section share: the run's volume, locks,
/// verify state and clocks (the same for every section of the run), and
/// the section's own options.
pub struct Shared<'a> {
    /// The volume.
    pub vol: &'a Vol,
    /// Open members.
    pub members: &'a Members,
    /// Stripe and verify locks.
    pub locks: &'a Locks,
    /// Generations written (verify).
    pub gens: &'a Generations,
    /// `--verify`.
    pub verify: bool,
    /// Host I/Os must take locks (parity arrays, or verify).
    pub lock_needed: bool,
    /// High bits of every generation written by this run.
    pub nonce: u64,
    /// Write sequence (low bits of generations).
    pub seq: &'a AtomicU64,
    /// Start of the run: the jobs' rate clocks count from here.
    pub start: Instant,
    /// End of the ramp: I/Os completing later are measured.
    pub ramp_end: Instant,
    /// A timed trace replay: each I/O's lag behind its time is counted.
    pub replay_timed: bool,
    /// An empty timeline each worker fills, when the workload asks for one.
    pub timeline: Option<raidlab_core::metrics::Timeline>,
    /// End of the run (`runtime`), if timed.
    pub end: Option<Instant>,
    /// Set on the first error: every worker stops issuing.
    pub stop: &'a AtomicBool,
    /// Set when a job has finished and `exitall` holds: every worker
    /// stops issuing, its I/Os in flight completing and counting.
    pub halt: &'a AtomicBool,
    /// fio's `steadystate`: the watch every worker's completions feed, and
    /// the flag that stops them all once it is met (`None`: no such stop).
    pub steady: Option<(
        &'a Mutex<Option<raidlab_core::steadystate::SteadyWatch>>,
        &'a AtomicBool,
    )>,
    /// fio's `exitall`: a job that finishes sets `halt`.
    pub exitall: bool,
    /// Largest block size of any section.
    pub max_bs: usize,
    /// Seed of the buffer contents.
    pub seed: u64,
    /// The root array's write-intent bitmap, when it has one.
    pub intent: Option<&'a crate::intent::Intent>,
    /// The section's own options.
    pub job: JobOpts,
}

/// What a job section's options ask of its workers.
#[derive(Debug, Clone, Copy)]
pub struct JobOpts {
    /// I/Os each job keeps in flight (its `iodepth`, as the engine allows).
    pub depth: usize,
    /// fio's `io_submit_mode=offload`: a rate-limited job waits for its
    /// next I/O's time with I/Os in flight; otherwise (`inline`) it first
    /// lets them all complete, then sleeps the time it was ahead.
    /// A timed trace replay offloads too: it keeps its I/Os in flight
    /// while it waits for the next one's time (fio's `iolog_delay` reaps
    /// completions meanwhile).
    pub offload: bool,
    /// fio's `thinktime`, ns: how long a worker stalls once its I/Os in
    /// flight have completed (or its `thinktime_spin`, if longer), and the
    /// clock that says when it does (`thinktime_blocks`,
    /// `thinktime_iotime`; `None` without think time).
    pub think_ns: u64,
    /// fio's `thinktime_spin`, ns: the first part of the stall, spun
    /// through instead of slept.
    pub think_spin_ns: u64,
    /// See `think_ns`.
    pub think: Option<raidlab_core::workload::ThinkClock>,
    /// `sync=1`: a write returns once a flush of the volume behind it has.
    pub sync: bool,
    /// `fsync=N`: after every N writes the worker lets its I/Os drain,
    /// flushes the volume and carries on (0: never).
    pub fsync: u32,
    /// `end_fsync` in a one-pass run: a worker that wrote flushes the
    /// volume once its last I/O is back, and its run ends with the flush.
    pub end_fsync: bool,
    /// fio's queue batching (`iodepth_batch_submit`,
    /// `iodepth_batch_complete_min`, `iodepth_low`), resolved per worker
    /// against its queue depth.
    pub batch: raidlab_core::batch::Batch,
    /// fio's guards (`max_latency`, `rate_min`, `rate_iops_min`): a
    /// worker that trips one stops issuing.
    pub guards: raidlab_core::guard::Guards,
    /// fio's `latency_target` and its options: the worker searches for
    /// the deepest queue that keeps to it.
    pub latency_target: raidlab_core::depth_search::LatencyTarget,
    /// `runtime`, ns: a converged search counts it again from there.
    pub runtime_ns: Option<u64>,
}

impl JobOpts {
    /// What `w` asks of its workers (`replay_timed`: the run replays a
    /// trace on time, which offloads as fio's `iolog_delay` does).
    pub fn of(w: &raidlab_core::workload::Workload, replay_timed: bool) -> JobOpts {
        JobOpts {
            depth: w.effective_iodepth() as usize,
            offload: w.rate.offload || replay_timed,
            think_ns: w.think_stall(),
            think_spin_ns: w.thinktime_spin,
            think: raidlab_core::workload::ThinkClock::of(w),
            sync: w.sync,
            fsync: w.fsync,
            end_fsync: w.end_fsync && w.runtime.is_none(),
            batch: w.batch,
            guards: w.guards,
            latency_target: w.latency_target,
            runtime_ns: w.runtime,
        }
    }
}

/// A job's stream, its trace (when asked for) and its rate clock.
pub type JobSource = (JobStream, Option<IssueLog>, Option<Pacer>);

/// A job's I/Os in issue order, each with the time it was to go out (ns
/// from the run's start: when drawn, or later when its clock held it).
pub type IssueLog = Vec<(Io, u64)>;

/// Where a worker gets its I/Os.
pub enum Source<'s> {
    /// A job's own stream (io_uring: one worker per job), with its trace
    /// and rate clock.
    Own(Box<JobStream>, Option<IssueLog>, Option<Pacer>),
    /// A stream shared by the `iodepth` workers of one job (psync).
    Shared(&'s Mutex<JobSource>),
}

/// The job's next I/O from `s` at `now` (ns from the run's start) and when
/// its rate clock lets it go (0: at once), noted in the trace `t`.
fn next_paced(
    s: &mut JobStream,
    t: &mut Option<IssueLog>,
    pacer: &mut Option<Pacer>,
    now: u64,
) -> Option<(Io, u64)> {
    let io = s.next_choosing(|read| pacer.as_ref().map_or(read, |p| p.pick(read, now)))?;
    // Without a rate clock, a timed trace replay's I/O waits for its time.
    let due = match pacer.as_mut() {
        Some(p) => p.admit(&io),
        None => s.due().unwrap_or(0),
    };
    if let Some(t) = t {
        t.push((io, due.max(now)));
    }
    Some((io, due))
}

impl Source<'_> {
    /// Whether the job's replayed trace flushes before its next I/O.
    fn flush_first(&mut self) -> bool {
        match self {
            Source::Own(s, ..) => s.flush_first(),
            Source::Shared(m) => m.lock().unwrap_or_else(|e| e.into_inner()).0.flush_first(),
        }
    }

    fn next(&mut self, now: u64) -> Option<(Io, u64)> {
        match self {
            Source::Own(s, t, p) => next_paced(s, t, p, now),
            Source::Shared(m) => {
                let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
                let (s, t, p) = &mut *g;
                next_paced(s, t, p, now)
            }
        }
    }
}

/// What a worker measured.
#[derive(Default)]
pub struct WorkerOut {
    /// Latency and throughput inside the window.
    pub metrics: Metrics,
    /// Reads and writes completed in the whole run: (ios, bytes) each.
    pub totals: [(u64, u64); 2],
    /// Verify units checked.
    pub checked: u64,
    /// Verify units read that were never written under verify.
    pub unwritten: u64,
    /// Verify failures.
    pub mismatches: u64,
    /// First failures (and repairs), described.
    pub first_bad: Vec<String>,
    /// Verify failures repaired from redundancy.
    pub repaired: u64,
    /// First I/O error.
    pub error: Option<io::Error>,
    /// Last completion.
    pub last_done: Option<Instant>,
    /// The job's issue order (own streams only).
    pub trace: Option<IssueLog>,
    /// Host buffers were registered with the ring.
    pub registered: bool,
    /// A timed trace replay's issue lag.
    pub lag: raidlab_core::metrics::Lag,
    /// Per-interval figures from the window's start (`log_avg_msec`).
    pub timeline: Option<raidlab_core::metrics::Timeline>,
    /// A trace replay's tally and the error that cut it short (own
    /// streams; shared ones are read by their owner).
    pub replay: Option<(raidlab_core::trace::replay::Tally, Option<String>)>,
    /// The guard the job tripped, if it did (it then stopped issuing).
    pub tripped: Option<raidlab_core::guard::Tripped>,
    /// The job's `latency_target` search, where it has one: what it found.
    pub found: Option<raidlab_core::depth_search::Found>,
    /// Where a converged search restarted the window (its figures are
    /// from then on), and the runtime's end from there.
    pub window_from: Option<(Instant, Option<Instant>)>,
}

struct Done {
    buf: ABuf,
    res: io::Result<()>,
    checked: verify::Checked,
    bad: Vec<(u64, Mismatch)>,
    /// Units that failed verify and were repaired from redundancy.
    repaired: Vec<String>,
}

/// What a task slot knows of the I/O it runs: when it was issued, what it
/// is, and whether it is an `fsync=N` flush rather than a host I/O.
struct Task {
    t0: Instant,
    io: Io,
    flush: bool,
    /// Not yet polled: its first member operations are still to be queued.
    fresh: bool,
}

/// A task's work: a host I/O, or (`flush`) the job's `fsync=N` flush of
/// the whole volume. One future type for both, so that a slot's future
/// can be replaced in place when the next I/O is issued into it.
async fn host_task(ex: &Exec<'_, '_>, sh: &Shared<'_>, io: Io, buf: ABuf, flush: bool) -> Done {
    if flush {
        host_flush(ex, buf).await
    } else {
        host_io(ex, sh, io, buf).await
    }
}

/// An `fsync=N` flush of the whole volume, as a task of its own.
async fn host_flush(ex: &Exec<'_, '_>, buf: ABuf) -> Done {
    Done {
        res: ex.flush(0).await,
        buf,
        checked: verify::Checked::default(),
        bad: Vec::new(),
        repaired: Vec::new(),
    }
}

/// The locks a host I/O takes (none where the volume needs none): its
/// stripes', and with verify its 64 KiB blocks', so that a read does not
/// overlap a write in flight to the same blocks (verify checks what was
/// last written). Sorted, each once.
fn lock_keys(sh: &Shared<'_>, io: Io) -> Vec<(u32, u64)> {
    let mut keys = Vec::new();
    if sh.lock_needed {
        sh.vol.lock_keys(0, io.offset, io.len as u64, &mut keys);
        if sh.verify {
            let g = 1u64 << 16;
            keys.extend(
                (io.offset / g..(io.offset + io.len as u64).div_ceil(g)).map(|k| (u32::MAX, k)),
            );
        }
        keys.sort_unstable();
        keys.dedup();
    }
    keys
}

/// A host write of `buf`: stamped for verify, marked in the write-intent
/// bitmap, written (retried as member failures allow), flushed with
/// `sync`, and recorded for verify once done.
async fn host_write(ex: &Exec<'_, '_>, sh: &Shared<'_>, io: Io, buf: &mut [u8]) -> io::Result<()> {
    let len = buf.len();
    // A generation only where verify records it (the shared sequence
    // is a cache line every writing worker would take in turn).
    let gen = if sh.verify {
        sh.nonce | (sh.seq.fetch_add(1, Ordering::Relaxed) & 0xffff_ffff)
    } else {
        0
    };
    if sh.verify {
        verify::fill(buf, io.offset, gen);
    }
    let mut res = Ok(());
    if let Some(intent) = sh.intent {
        res = intent.mark(io.offset, len as u64, sh.members);
    }
    let mut tries = Tries::new(ex.be.health(), ex.vol.members());
    while res.is_ok() {
        res = ex.write_at(0, io.offset, buf).await;
        if !tries.again(&res) {
            break;
        }
        res = Ok(());
    }
    if res.is_ok() && sh.job.sync {
        res = ex.flush(0).await;
    }
    if res.is_ok() && sh.verify {
        sh.gens.wrote(io.offset, len, gen);
    }
    res
}

async fn host_io(ex: &Exec<'_, '_>, sh: &Shared<'_>, io: Io, mut buf: ABuf) -> Done {
    let len = io.len as usize;
    let keys = lock_keys(sh, io);
    if !keys.is_empty() {
        LockFut {
            locks: sh.locks,
            keys: &keys,
            sched: &ex.be.sched,
        }
        .await;
    }
    // The outcome, built up before the buffer is handed back (no
    // placeholder buffer: an allocation per I/O would cost more than the
    // I/O's own work).
    let res;
    let mut checked = verify::Checked::default();
    let mut bad = Vec::new();
    let mut repaired = Vec::new();
    if io.read {
        let mut tries = Tries::new(ex.be.health(), ex.vol.members());
        res = loop {
            let r = ex.read_at(0, io.offset, &mut buf[..len]).await;
            if !tries.again(&r) {
                break r;
            }
        };
        if res.is_ok() && sh.verify {
            checked = sh
                .gens
                .check(&buf[..len], io.offset, |a, m| bad.push((a, m)));
            if !bad.is_empty() {
                repaired = read_repair(ex, sh, io, &mut buf[..len], &mut bad).await;
            }
        }
    } else {
        res = host_write(ex, sh, io, &mut buf[..len]).await;
    }
    if !keys.is_empty() {
        sh.locks.unlock(&keys);
    }
    Done {
        buf,
        res,
        checked,
        bad,
        repaired,
    }
}

/// Read-repair, as md repairs a read error from redundancy: every unit of
/// a verified read that failed is read again through the volume with the
/// member holding it left out (rebuilt from parity, or from another copy);
/// when that reads back right, it is served and written back to the
/// member. Returns what was repaired; `bad` keeps the rest.
async fn read_repair(
    ex: &Exec<'_, '_>,
    sh: &Shared<'_>,
    io: Io,
    buf: &mut [u8],
    bad: &mut Vec<(u64, Mismatch)>,
) -> Vec<String> {
    let mut fixed = Vec::new();
    let mut keep = Vec::new();
    for (addr, m) in std::mem::take(bad) {
        match repair_unit(ex, sh, io, buf, addr).await {
            Some(msg) => fixed.push(msg),
            None => keep.push((addr, m)),
        }
    }
    *bad = keep;
    fixed
}

/// Repair the unit at volume address `addr` of a read of `io` into `buf`.
async fn repair_unit(
    ex: &Exec<'_, '_>,
    sh: &Shared<'_>,
    io: Io,
    buf: &mut [u8],
    addr: u64,
) -> Option<String> {
    let mut places = Vec::new();
    sh.vol.places(0, addr, &mut places);
    let at = (addr - io.offset) as usize;
    for &(m, file_off) in &places {
        let without = sh.vol.failing(&[m]);
        let dx = Exec {
            vol: &without,
            be: ex.be,
            mirror_turn: std::cell::Cell::new(0),
            spares: Default::default(),
        };
        let mut again = ABuf::zeroed(buf.len());
        if dx.read(0, io.offset, &mut again).await.is_err() {
            continue; // no redundancy left for it
        }
        let unit = &again[at..at + verify::UNIT];
        let mut good = true;
        sh.gens.check(unit, addr, |_, _| good = false);
        if !good {
            continue;
        }
        buf[at..at + verify::UNIT].copy_from_slice(unit);
        let path = &sh.members.paths[m];
        // Rewritten through the page cache: a 512-byte write needs no
        // direct-I/O alignment, and the repair is rare.
        let rewritten = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| {
                use std::os::unix::fs::FileExt;
                f.write_all_at(unit, file_off)?;
                f.sync_data()
            });
        let how = match rewritten {
            Ok(()) => "rewritten",
            Err(_) => "served, but it could not be rewritten",
        };
        return Some(format!(
            "volume offset {addr} on {path} offset {file_off}: repaired from redundancy ({how})"
        ));
    }
    None
}

/// Run one worker until its source is exhausted, the run's time is up, or
/// another worker failed.
///
/// Longer than 70 lines: it is the executor's one loop (issue up to the
/// depth, pace to the job's clock, poll, wait), whose state (slots,
/// buffers, flush pace, the waker) every step changes; split, each part
/// would take most of it as arguments.
pub fn run_worker(
    sh: &Shared<'_>,
    engine: EngineKind,
    depth: usize,
    mut src: Source<'_>,
) -> WorkerOut {
    let mut out = WorkerOut {
        timeline: sh.timeline.clone(),
        ..WorkerOut::default()
    };
    // The worker's waits (think time, rate clock, a timed replay) end on
    // time (`sleep_bounded`); nothing else it does waits on a timer.
    crate::serve::fine_timer_slack();
    let pool = buffers(sh, depth);
    let be = match backend(sh, engine, depth, &pool) {
        Ok(b) => b,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    out.registered = be.registered_buffers();
    let ex = Exec {
        vol: sh.vol,
        be: &be,
        mirror_turn: std::cell::Cell::new(0),
        spares: Default::default(),
    };
    let task = |io: Io, buf: ABuf, flush: bool| host_task(&ex, sh, io, buf, flush);
    let mut lane = Lane {
        be: &be,
        sh,
        slots: Slots::new(depth, sh.job.batch.submit_size(depth as u32)),
        cx: Context::from_waker(Waker::noop()),
        pace: JobPace::new(sh.job.fsync, sh.job.think, sh.start),
        out,
        pool,
        depth,
        guard: raidlab_core::guard::GuardClock::new(&sh.job.guards),
        search: DepthSearch::new(&sh.job.latency_target, depth as u32, 0).map(Box::new),
        reset_pending: false,
        window: (sh.ramp_end, sh.end),
    };
    lane.run(&mut src, &task);
    drop(lane.slots);
    let mut out = lane.out;
    out.found = lane.search.map(|s| s.found(0));
    if let Source::Own(s, t, _) = src {
        out.trace = t;
        out.replay = replay_of(&s);
    }
    out
}

/// A worker's job in flight: its back end, task table, pace, buffers and
/// what it has measured so far.
struct Lane<'w, 'm, F> {
    be: &'w Backend<'m>,
    sh: &'w Shared<'m>,
    slots: Slots<F>,
    cx: Context<'static>,
    pace: JobPace,
    out: WorkerOut,
    pool: Vec<ABuf>,
    /// I/Os the worker keeps in flight.
    depth: usize,
    /// The job's watch over its guards, while it has any to keep.
    guard: Option<raidlab_core::guard::GuardClock>,
    /// The job's `latency_target` search (its clock in ns from the ramp's
    /// end), where it has one.
    search: Option<Box<DepthSearch>>,
    /// The search has converged: restart the window once the job's I/Os
    /// in flight are back.
    reset_pending: bool,
    /// The measured window: from the ramp's end (or where a search
    /// converged) to the runtime's end from there.
    window: (Instant, Option<Instant>),
}

impl<F: Future<Output = Done>> Lane<'_, '_, F> {
    /// Issue the job's I/Os from `src` (each a task made by `task`), keep
    /// its queue full and reap its completions until its I/Os are done
    /// (or the run stops, or an I/O fails).
    fn run(&mut self, src: &mut Source<'_>, task: &impl Fn(Io, ABuf, bool) -> F) {
        // Completions a full queue waits for before it refills (fio's
        // `wait_for_completions`); 1 by default, as each completion refills.
        let reaps = self.sh.job.batch.reaps_when_full(self.depth as u32);
        let mut exhausted = false;
        let mut end_flushed = false;
        loop {
            if self.pace.holding && self.slots.active == 0 && !exhausted {
                self.issue_flush(task);
            }
            let before = self.slots.active;
            if !exhausted {
                exhausted = !self.fill(src, task);
            }
            if reaps > 1 && self.slots.active == self.depth && self.slots.active > before {
                // Just filled: the queue now waits for its batch of completions.
                self.pace.gate = reaps;
            }
            let freed = self.take_completions();
            if self.slots.active == 0 && exhausted {
                if self.sh.job.end_fsync
                    && !end_flushed
                    && self.out.totals[1].0 > 0
                    && !self.failed()
                {
                    // fio's end_fsync: the job's last I/Os are back; its run
                    // lasts until the volume's flush is.
                    end_flushed = true;
                    self.issue_flush(task);
                    continue;
                }
                if end_flushed {
                    self.out.last_done = Some(Instant::now());
                }
                if self.sh.exitall {
                    // fio's exitall: this job has finished, so the others
                    // stop.
                    self.sh.halt.store(true, Ordering::Relaxed);
                }
                return;
            }
            let room = self.slots.active < self.limit() && self.pace.gate == 0;
            if self.slots.active == 0 || (freed && !exhausted && room) {
                // Refill the freed slots before waiting: waiting first would
                // leave them empty until the next completion, and the job
                // short of its queue depth.
                continue;
            }
            if !self.wait() {
                // Operations still in flight are waited for by their Drop.
                return;
            }
        }
    }

    /// Issue I/Os from `src` until the queue is full or the job must wait
    /// (a flush, its batch of completions); `false` when it issues no more
    /// (its I/Os are done, its time is up, the run stopped or failed).
    fn fill(&mut self, src: &mut Source<'_>, task: &impl Fn(Io, ABuf, bool) -> F) -> bool {
        while !self.pace.holding && self.pace.gate == 0 && self.slots.active < self.limit() {
            // One clock reading serves the run's end, the job's rate clock
            // and the I/O's issue time.
            let mut at = Instant::now();
            if self.stop_before_next(at) || self.out.tripped.is_some() || self.ended() {
                return false;
            }
            if self.pace.think_due() {
                match self.think() {
                    Some(t) => at = t,
                    None => return false,
                }
            }
            if src.flush_first() {
                // A replayed trace's flush: it goes once the job's I/Os
                // before it are back, as fsync=N's does.
                self.pace.holding = true;
                return true;
            }
            let now = ns_between(self.sh.start, at);
            let Some((io, due)) = src.next(now) else {
                return false;
            };
            if due > now {
                match self.wait_for_rate(due, now) {
                    Some(t) => at = t,
                    None => return false,
                }
            }
            if self.sh.replay_timed {
                self.out
                    .lag
                    .record(ns_between(self.sh.start, at).saturating_sub(due));
            }
            let buf = self.pool.pop().expect("a free buffer");
            self.slots
                .spawn(self.be, task(io, buf, false), at, io, false);
            self.pace.issued();
        }
        true
    }

    /// fio's think time: the job's I/Os in flight first, then the stall.
    /// When it ends (`None`: the run is over or an I/O failed).
    fn think(&mut self) -> Option<Instant> {
        self.reap_all();
        think(self.sh);
        let at = Instant::now();
        self.pace.thought(ns_between(self.sh.start, at));
        (!self.stop_before_next(at) && !self.failed()).then_some(at)
    }

    /// Ahead of the job's rate clock, at `now`, with its next I/O due at
    /// `due` (ns from the run's start): fio's rate_ddir sleep, after the
    /// I/Os in flight (or reaping them as they come, with
    /// `io_submit_mode=offload`). When the I/O may go (`None`: the run is
    /// over or an I/O failed).
    fn wait_for_rate(&mut self, due: u64, now: u64) -> Option<Instant> {
        if !self.sh.job.offload {
            self.reap_all();
            sleep_bounded(self.sh, due - now);
        } else {
            while since(self.sh.start) < due && !self.failed() {
                if self.slots.active == 0 {
                    sleep_bounded(self.sh, due.saturating_sub(since(self.sh.start)));
                    break;
                }
                self.reap();
            }
        }
        let at = Instant::now();
        (!self.failed() && self.window.1.is_none_or(|e| at < e)).then_some(at)
    }

    /// Issue a flush of the whole volume (`fsync=N`, `end_fsync`).
    fn issue_flush(&mut self, task: &impl Fn(Io, ABuf, bool) -> F) {
        let buf = self.pool.pop().expect("a free buffer");
        self.slots.spawn(
            self.be,
            task(FLUSH_IO, buf, true),
            Instant::now(),
            FLUSH_IO,
            true,
        );
    }

    /// Complete the tasks that have finished; whether any had.
    fn take_completions(&mut self) -> bool {
        let mut freed = false;
        while let Some((t, done)) = self.slots.poll_ready(self.be, &mut self.cx) {
            self.complete(t, done);
            freed = true;
            // fio checks after the reap that frees its full queue; what is
            // reaped with it, it would reap while the job waits.
            self.pace.check_after_reap();
        }
        freed
    }

    /// Complete what the back end has finished, waiting for at least one
    /// completion when I/Os are in flight.
    fn reap(&mut self) {
        self.drain();
        if self.slots.active > 0 && self.wait() {
            self.drain();
        }
    }

    /// Reap until no I/O is in flight (or one fails).
    fn reap_all(&mut self) {
        while self.slots.active > 0 && !self.failed() {
            self.reap();
        }
    }

    /// Complete the tasks that have finished, with no think-time check.
    fn drain(&mut self) {
        while let Some((t, done)) = self.slots.poll_ready(self.be, &mut self.cx) {
            self.complete(t, done);
        }
    }

    /// Account a finished task: the pacer's count, then its I/O's figures,
    /// checks and buffer.
    fn complete(&mut self, t: Task, done: Done) {
        self.pace.completed(&t);
        let now = Instant::now();
        let counted = done.res.is_ok() && !t.flush;
        if counted {
            self.watch(&t, now);
            self.search(&t, now);
            self.steady_watch(&t, now);
        }
        finish(
            &mut self.out,
            self.sh,
            t,
            done,
            now,
            &mut self.pool,
            self.window,
        );
        if counted {
            self.search_quiesced(now);
        }
    }

    /// fio's `steadystate` watch counts task `t`, back at `now` after the
    /// ramp; once the jobs' rate is steady, every worker stops issuing.
    fn steady_watch(&mut self, t: &Task, now: Instant) {
        let Some((watch, stop)) = self.sh.steady else {
            return;
        };
        if now < self.sh.ramp_end {
            return;
        }
        let since = ns_between(self.sh.ramp_end, now);
        let mut w = watch.lock().unwrap_or_else(|e| e.into_inner());
        if w.as_mut()
            .is_some_and(|w| w.completed(t.io.len as u64, since))
        {
            stop.store(true, Ordering::Relaxed);
        }
    }

    /// The I/Os the job keeps in flight now: its depth, or its search's
    /// (none while the search waits for those in flight).
    fn limit(&self) -> usize {
        match self.search.as_deref() {
            Some(s) if s.quiescing() => 0,
            Some(s) => s.depth() as usize,
            None => self.depth,
        }
    }

    /// Whether the job stops before its next I/O: the run was stopped or
    /// its time is up.
    fn stop_before_next(&self, at: Instant) -> bool {
        stop_before_next(self.sh, at) || self.window.1.is_some_and(|e| at >= e)
    }

    /// Whether the job's search has ended it (measured, or in error).
    fn ended(&self) -> bool {
        self.search.as_deref().is_some_and(DepthSearch::over)
    }

    /// The job's `latency_target` search sees task `t`, back at `now`,
    /// once the ramp is over; it moves the job's depth, ends the job
    /// (measured, or in error), or has it wait for its I/Os in flight.
    fn search(&mut self, t: &Task, now: Instant) {
        let Some(s) = self.search.as_deref_mut() else {
            return;
        };
        if now < self.sh.ramp_end {
            // fio's search looks at nothing in the ramp (depth 1 there).
            return;
        }
        let lat = ns_between(t.t0, now);
        let at = ns_between(self.sh.ramp_end, now);
        match s.completed(t.io.read, t.io.offset, t.io.len as u64, lat, at) {
            Step::Go | Step::Quiesce => {}
            Step::Reset => self.reset_pending = true,
            // The window ends with the job's last completion.
            Step::Done => self.out.window_from = Some((self.window.0, None)),
            Step::Fatal(trip) => self.out.tripped = Some(trip),
        }
    }

    /// A completion at `now` has left the job's I/Os in flight: a search
    /// that waited for them all goes on, first restarting the window
    /// (the figures cleared, the runtime counted again from here) where it
    /// has converged, as fio's `reset_all_stats`.
    fn search_quiesced(&mut self, now: Instant) {
        let quiet = self.search.as_deref().is_some_and(DepthSearch::quiescing);
        if !quiet || self.slots.active > 0 {
            return;
        }
        if std::mem::take(&mut self.reset_pending) {
            let runtime = self.sh.job.runtime_ns.map(std::time::Duration::from_nanos);
            self.window = (now, runtime.map(|r| now + r));
            self.out.metrics = Metrics::default();
            if let Some(tl) = &mut self.out.timeline {
                *tl = self.sh.timeline.clone().unwrap_or_else(|| tl.clone());
            }
            self.out.window_from = Some(self.window);
        }
        let at = ns_between(self.sh.ramp_end, now);
        if let Some(s) = self.search.as_deref_mut() {
            s.resume(at);
        }
    }

    /// The job's guards see task `t`, back at `now`, once the ramp is over
    /// (its latency from its issue, the job's time from the ramp's end,
    /// where fio restarts its clocks); once one trips, the job issues
    /// nothing more, as fio ends a job in error.
    fn watch(&mut self, t: &Task, now: Instant) {
        let Some(g) = self.guard.as_mut() else {
            return;
        };
        if now < self.sh.ramp_end {
            // fio accounts no completion during its ramp (`should_account`).
            return;
        }
        let lat = ns_between(t.t0, now);
        let since = ns_between(self.sh.ramp_end, now);
        if let Some(trip) = g.completed(t.io.read, t.io.offset, t.io.len as u64, lat, since) {
            if g.exits_all() {
                // fio's exitall_on_error: the job in error stops the rest.
                self.sh.halt.store(true, Ordering::Relaxed);
            }
            self.out.tripped = Some(trip);
            self.guard = None;
        }
    }

    /// Wait for the back end to make progress; `false` (and the run
    /// stopped) if it failed.
    fn wait(&mut self) -> bool {
        match wait_for_progress(self.be, self.slots.active) {
            Ok(()) => true,
            Err(e) => {
                self.out.error.get_or_insert(e);
                self.sh.stop.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// Whether the worker has met an I/O error (it then issues nothing
    /// more).
    fn failed(&self) -> bool {
        self.out.error.is_some()
    }
}

/// The I/O an `fsync=N` flush task stands for: none (it is not counted).
const FLUSH_IO: Io = Io {
    offset: 0,
    len: 0,
    read: false,
};

/// Whether the job stops before its next I/O: the run was stopped or its
/// time is up at `at`, the time now.
fn stop_before_next(sh: &Shared<'_>, at: Instant) -> bool {
    sh.stop.load(Ordering::Relaxed)
        || sh.halt.load(Ordering::Relaxed)
        || sh
            .steady
            .is_some_and(|(_, stop)| stop.load(Ordering::Relaxed))
        || sh.end.is_some_and(|e| at >= e)
}

/// A stream's replay tally, its error as text.
pub fn replay_of(s: &JobStream) -> Option<(raidlab_core::trace::replay::Tally, Option<String>)> {
    s.replay_tally().map(|(t, e)| (t, e.map(|e| e.to_string())))
}

/// Nanoseconds since `t`.
fn since(t: Instant) -> u64 {
    ns_between(t, Instant::now())
}

/// A reading of the time since `start`, ns, taken only when called (a
/// think clock asks for it only with `thinktime_iotime`).
fn clock_since(start: Instant) -> impl FnOnce() -> u64 {
    move || ns_between(start, Instant::now())
}

/// Nanoseconds from `t` to `u` (0 if `u` is earlier).
fn ns_between(t: Instant, u: Instant) -> u64 {
    u.saturating_duration_since(t)
        .as_nanos()
        .min(u64::MAX as u128) as u64
}

/// A job's think time: spin through its `thinktime_spin` (fio's
/// `usec_spin`), then sleep the rest of the stall, ending no later than
/// the run.
fn think(sh: &Shared<'_>) {
    debug_assert!(
        sh.job.think_spin_ns <= sh.job.think_ns,
        "the stall is at least the spin"
    );
    let spin_end = Instant::now() + std::time::Duration::from_nanos(sh.job.think_spin_ns);
    let spin_end = sh.end.map_or(spin_end, |e| spin_end.min(e));
    while Instant::now() < spin_end {
        std::hint::spin_loop();
    }
    sleep_bounded(sh, sh.job.think_ns.saturating_sub(sh.job.think_spin_ns));
}

/// Wait `ns`, but not past the run's end, and end on time, as fio's
/// `usec_sleep` does (time.c): it sleeps all but the last stretch, the
/// timer's granularity it measured at start (about 50 µs: Linux's default
/// timer slack), and spins through the rest. A plain sleep ends that much
/// late every time: a job thinking 1 ms after each 4 KiB read ran 8 %
/// fewer I/Os a second than fio's (803 against 876, measured on a virtual
/// disk). Here the thread's timer slack is made fine before the first
/// wait ([`crate::serve::fine_timer_slack`]) and the last [`SPIN_TAIL`] is
/// spun.
fn sleep_bounded(sh: &Shared<'_>, ns: u64) {
    let now = Instant::now();
    let mut until = now + std::time::Duration::from_nanos(ns);
    if let Some(e) = sh.end {
        until = until.min(e.max(now));
    }
    let left = until.saturating_duration_since(now);
    if left > SPIN_TAIL {
        std::thread::sleep(left - SPIN_TAIL);
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The end of a worker's wait that it spins through instead of sleeping:
/// 20 µs, above a timed wait's wake-up latency once the thread's timer
/// slack is fine (a few µs, up to ~15 µs on a busy machine).
const SPIN_TAIL: std::time::Duration = std::time::Duration::from_micros(20);

/// A worker's task table: `depth` slots, the free ones, and how many run.
/// A slot keeps its future's allocation once the future has finished: the
/// next task issued into it is written over the finished one in place
/// (`Pin::set`), so issuing an I/O allocates nothing.
struct Slots<F> {
    tasks: Vec<Option<Task>>,
    futs: Vec<Option<Pin<Box<F>>>>,
    free: Vec<usize>,
    active: usize,
    /// Host I/Os handed to the kernel in one call (`iodepth_batch_submit`),
    /// and how many newly issued ones have queued their operations since
    /// the last call.
    per_call: u32,
    unsent: u32,
}

impl<F: Future<Output = Done>> Slots<F> {
    fn new(depth: usize, per_call: u32) -> Self {
        Slots {
            tasks: (0..depth).map(|_| None).collect(),
            futs: (0..depth).map(|_| None).collect(),
            free: (0..depth).rev().collect(),
            active: 0,
            per_call,
            unsent: 0,
        }
    }

    /// Whether to hand what is queued to the kernel after polling a task
    /// (`fresh`: its first poll). Each host I/O goes as soon as it has
    /// queued its member operations, fio's default; with
    /// `iodepth_batch_submit` newly issued ones go `per_call` at a time
    /// (the rest with the next call or the next wait), while the later
    /// operations of I/Os under way go at once, as md issues them itself.
    fn submit_now(&mut self, fresh: bool) -> bool {
        if !fresh || self.per_call <= 1 {
            self.unsent = 0;
            return true;
        }
        self.unsent += 1;
        if self.unsent >= self.per_call {
            self.unsent = 0;
            return true;
        }
        false
    }

    /// Start `fut` in a free slot, issued at `t0`, and schedule its first
    /// poll.
    fn spawn(&mut self, be: &Backend<'_>, fut: F, t0: Instant, io: Io, flush: bool) {
        let id = self.free.pop().expect("a free task slot");
        debug_assert!(self.tasks[id].is_none(), "a free slot runs no task");
        match &mut self.futs[id] {
            // The slot's last future has finished: nothing it borrowed is
            // still lent, so it is dropped where it lies.
            Some(old) => old.set(fut),
            empty => *empty = Some(Box::pin(fut)),
        }
        self.tasks[id] = Some(Task {
            t0,
            io,
            flush,
            fresh: true,
        });
        self.active += 1;
        be.sched.ready.borrow_mut().push(id);
    }

    /// Poll the scheduled tasks until one finishes; `None` once none of the
    /// scheduled ones can.
    fn poll_ready(&mut self, be: &Backend<'_>, cx: &mut Context<'_>) -> Option<(Task, Done)> {
        loop {
            let id = be.sched.ready.borrow_mut().pop()?;
            if self.tasks[id].is_none() {
                continue;
            }
            let fut = self.futs[id].as_mut().expect("a running task has a future");
            be.sched.current.set(id);
            let polled = fut.as_mut().poll(cx);
            let task = self.tasks[id].as_mut().expect("task present");
            let fresh = std::mem::take(&mut task.fresh);
            if self.submit_now(fresh) {
                be.submit();
            }
            if let Poll::Ready(done) = polled {
                let t = self.tasks[id].take().expect("task present");
                self.free.push(id);
                self.active -= 1;
                return Some((t, done));
            }
        }
    }
}

/// What a worker's issues and completions decide about its next I/O:
/// `fsync=N` counts its completed writes and holds its I/Os back for a
/// flush after every N; `thinktime` stalls it as its [`ThinkClock`] says.
struct JobPace {
    every: u32,
    since: u32,
    /// New I/Os wait until the flush has completed.
    holding: bool,
    /// The job's think-time clock, and whether fio's check is due: it
    /// checks after each I/O it issues, and a full queue's after each
    /// completion it reaps (nothing is reaped between an I/O and the next
    /// unless the queue was full, so the check before the next I/O stands
    /// for the one after the last).
    think: Option<ThinkClock>,
    check_due: bool,
    /// The check after a reap found the job stalls.
    stalled: bool,
    /// When the job started: `thinktime_iotime` counts from there.
    start: Instant,
    /// Completions the job still waits for before it refills its queue
    /// (`iodepth_batch_complete_min`, `iodepth_low`); 0: none.
    gate: u32,
}

impl JobPace {
    fn new(every: u32, think: Option<ThinkClock>, start: Instant) -> Self {
        JobPace {
            every,
            since: 0,
            holding: false,
            think,
            check_due: false,
            stalled: false,
            start,
            gate: 0,
        }
    }

    /// The job's think time ended at `now` (ns since it started).
    fn thought(&mut self, now: u64) {
        if let Some(c) = &mut self.think {
            c.thought(now);
        }
    }

    /// The job issued an I/O.
    fn issued(&mut self) {
        if let Some(c) = &mut self.think {
            c.issued();
            self.check_due = true;
        }
    }

    /// Whether the job stalls for its think time before its next I/O.
    fn think_due(&mut self) -> bool {
        let now = clock_since(self.start);
        std::mem::take(&mut self.stalled)
            || (std::mem::take(&mut self.check_due)
                && self.think.as_mut().is_some_and(|c| c.stall(now)))
    }

    /// fio reaps a full queue's completions as they come (usually one at a
    /// time) and checks after each reap: the check after the completion
    /// just reaped, when one is due; a stall it finds waits for the next
    /// I/O.
    fn check_after_reap(&mut self) {
        let now = clock_since(self.start);
        if self.check_due && self.think.as_mut().is_some_and(|c| c.stall(now)) {
            self.check_due = false;
            self.stalled = true;
        }
    }

    fn completed(&mut self, t: &Task) {
        self.gate = self.gate.saturating_sub(1);
        // fio counts reads and writes only, not the job's fsync flushes.
        if let Some(c) = self.think.as_mut().filter(|_| !t.flush) {
            c.completed();
        }
        if t.flush {
            self.holding = false;
        } else if !t.io.read && self.every > 0 {
            self.since += 1;
            if self.since >= self.every {
                self.since = 0;
                self.holding = true;
            }
        }
    }
}

/// Wait for the back end to complete something, or give way while every
/// active task waits for a lock another worker holds; then let the lock
/// waiters try again.
fn wait_for_progress(be: &Backend<'_>, active: usize) -> io::Result<()> {
    if be.inflight() > 0 {
        be.wait()?;
    } else if be.sched.lock_wait.borrow().len() >= active {
        std::thread::yield_now();
    }
    be.sched
        .ready
        .borrow_mut()
        .append(&mut be.sched.lock_wait.borrow_mut());
    Ok(())
}

/// `depth` host buffers of the largest block size, filled with
/// incompressible bytes, as fio's default buffers are.
fn buffers(sh: &Shared<'_>, depth: usize) -> Vec<ABuf> {
    let mut rng = raidlab_core::rng::Rng::new(sh.seed);
    (0..depth)
        .map(|_| {
            let mut b = ABuf::zeroed(sh.max_bs);
            for w in b.chunks_exact_mut(8) {
                w.copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            b
        })
        .collect()
}

/// The worker's back end: an io_uring with `pool` registered, or psync.
fn backend<'m>(
    sh: &Shared<'m>,
    engine: EngineKind,
    depth: usize,
    pool: &[ABuf],
) -> io::Result<Backend<'m>> {
    match engine {
        #[cfg(target_os = "linux")]
        EngineKind::IoUring => {
            let views: Vec<&[u8]> = pool.iter().map(|b| &b[..]).collect();
            Backend::io_uring(sh.members, (depth * 8) as u32, &views)
                .map_err(|e| io::Error::new(e.kind(), format!("io_uring setup: {e}")))
        }
        _ => Ok(Backend::psync(sh.members)),
    }
}

/// ` (member PATH offset N[, ...])`: where volume offset `addr` lives.
fn where_stored(sh: &Shared<'_>, addr: u64) -> String {
    let mut places = Vec::new();
    sh.vol.places(0, addr, &mut places);
    if places.is_empty() {
        return String::new();
    }
    let list: Vec<String> = places
        .iter()
        .map(|&(m, off)| format!("{} offset {off}", sh.members.paths[m]))
        .collect();
    format!(" ({})", list.join(", "))
}

fn finish(
    out: &mut WorkerOut,
    sh: &Shared<'_>,
    t: Task,
    done: Done,
    now: Instant,
    pool: &mut Vec<ABuf>,
    window: (Instant, Option<Instant>),
) {
    pool.push(done.buf);
    if let Err(e) = done.res {
        out.error.get_or_insert(e);
        sh.stop.store(true, Ordering::Relaxed);
        return;
    }
    if t.flush {
        // A flush is not a host I/O: it is neither counted nor timed.
        return;
    }
    let d = &mut out.totals[usize::from(!t.io.read)];
    d.0 += 1;
    d.1 += t.io.len as u64;
    out.checked += done.checked.units;
    out.unwritten += done.checked.unwritten;
    out.repaired += done.repaired.len() as u64;
    for r in done.repaired {
        if out.first_bad.len() < 10 {
            out.first_bad.push(r);
        }
    }
    for (addr, m) in done.bad {
        out.mismatches += 1;
        if out.first_bad.len() < 10 {
            out.first_bad.push(format!(
                "volume offset {addr}{}: {m}",
                where_stored(sh, addr)
            ));
        }
    }
    out.last_done = Some(now);
    let in_window = now >= window.0 && window.1.is_none_or(|e| now <= e);
    if in_window {
        let lat = now.duration_since(t.t0).as_nanos() as u64;
        out.metrics.record(t.io.read, t.io.len, lat);
        if let Some(tl) = &mut out.timeline {
            let at = now.duration_since(window.0).as_nanos() as u64;
            tl.record(at, t.io.len, lat);
        }
    }
}
