//! The host: jobs that keep `iodepth` I/Os outstanding each (fio's model),
//! the block layer's CPU cost per I/O, think time, and the measurement window.

use crate::engine::events;
use crate::engine::{CompId, Ctx, Op, PoolId, Req, ReqId, HOST_CPU, NONE};
use crate::live::Tag;
use crate::metrics::Metrics;
use raidlab_core::batch::Batch;
use raidlab_core::depth_search::{DepthSearch, Found, LatencyTarget, Step};
use raidlab_core::guard::{GuardClock, Guards, JobError};
use raidlab_core::pace::{Pacer, Rate};
use raidlab_core::steadystate::{SteadyReport, SteadyStop, SteadyWatch};
use raidlab_core::units::Ns;
use raidlab_core::workload::{FileChooser, FileService};
use raidlab_core::workload::{Io, JobStream, ThinkClock, ThinkCount};

events! {
    /// The host's events: an I/O leaves the block layer; a job's think time
    /// ends; a rate-limited job's next I/O falls due; a request handed in
    /// from outside arrives; a live run's clock reaches where it was asked
    /// to stop.
    Ev {
        Submit,
        Think,
        Paced,
        Arrive,
        Tick,
    }
}

/// The host component.
pub struct Host {
    id: CompId,
    /// The volumes the jobs address (fio: a job's filenames).
    roots: Vec<CompId>,
    /// Per volume, whether its first component does its own work on the
    /// submitting thread, for [reads and flushes, writes]: md's RAID 0/1/10
    /// (and RAID 4/5/6 reads) map a request inside the submitter's system
    /// call (`md_submit_bio`), so the block layer's work and md's are one
    /// stretch of the thread, which issues nothing else meanwhile.
    on_submitter: Vec<[bool; 2]>,
    /// Per job, what its options ask of the host.
    conf: Vec<JobConf>,
    /// Per job, when it stalls for its think time (with `think`), and
    /// whether it is stalled: waiting for its I/Os in flight, then
    /// thinking.
    think_clocks: Vec<Option<ThinkClock>>,
    thinking: Vec<bool>,
    /// One stream per job and volume, job-major: each file of a fio job
    /// keeps its own offsets.
    streams: Vec<JobStream>,
    /// Per job, how it picks the volume of its next I/O (fio's
    /// `file_service_type`; by default the next file after every I/O);
    /// per stream, whether it has run out.
    choosers: Vec<FileChooser>,
    out: Vec<bool>,
    /// Per job, the volume its `fsync=N` flush goes to: that of the write
    /// that called for it (fio syncs the file it wrote).
    flush_vol: Vec<u32>,
    inflight: Vec<u32>,
    /// Per job: since when it has had I/O outstanding (while it has), and
    /// the time it spent so before (its thread's wait, which a polled job
    /// spends spinning on its core).
    waiting_since: Vec<Ns>,
    waited: Vec<Ns>,
    done_jobs: Vec<bool>,
    exhausted: usize,
    /// fio's `exitall`: once one job has finished, the others stop
    /// issuing (their I/Os in flight complete and count).
    pub exitall: bool,
    /// A job has finished under `exitall`: no job issues any more.
    halted: bool,
    /// Start of the measurement window.
    pub window_start: Ns,
    /// End of the window (time-based runs).
    pub window_end: Option<Ns>,
    /// Last completion inside the window.
    pub last_completion: Ns,
    /// Measurements.
    pub metrics: Metrics,
    /// Host I/Os completed (all).
    pub completed: u64,
    total_inflight: u64,
    /// Per job, its watch over fio's guards (`max_latency`, `rate_min`,
    /// `rate_iops_min`), where it has any; empty when no job has.
    guards: Vec<Option<Box<GuardClock>>>,
    /// The guards the jobs tripped, in the order they did.
    pub errors: Vec<JobError>,
    /// Per job, its `latency_target` search, where it has one; empty when
    /// no job has.
    searches: Vec<Option<Box<DepthSearch>>>,
    /// A search has converged and cleared the figures: when (taken by
    /// [`Host::take_reset`]).
    reset_at: Option<Ns>,
    /// A search has converged: clear the figures once its job's I/Os in
    /// flight are back.
    reset_pending: bool,
    /// The jobs' runtime, which a converged search restarts.
    runtime: Option<Ns>,
    /// fio's `steadystate` watch over all the jobs, where they have one.
    steady_stop: Option<Box<SteadyWatch>>,
    /// Each job's I/Os in issue order, when asked for.
    pub trace: Option<Vec<Vec<raidlab_core::workload::Io>>>,
    /// One-pass runs: a fifth of the pass's bytes (0: not tracked), and the
    /// time and I/O count at which each fifth had completed in the window.
    pub fifth: u64,
    /// See `fifth`.
    pub marks: Vec<(Ns, u64)>,
    /// Per job, the writes since its last `fsync=N` flush and whether it
    /// is holding back for one.
    since_flush: Vec<u32>,
    holding: Vec<bool>,
    /// Per job, whether it has flushed its volumes at its end
    /// ([`JobConf::end_fsync`]).
    end_flushed: Vec<bool>,
    /// Per job, its rate clock (fio's `rate`/`rate_iops`), when it has one,
    /// and whether it is waiting for its next I/O to fall due (that I/O is
    /// drawn and scheduled; the job issues nothing else meanwhile).
    pacers: Vec<Option<Pacer>>,
    sleeping: Vec<bool>,
    /// Per job not in `io_submit_mode=offload`, the I/O it sleeps for and
    /// the time it was ahead, held until its I/Os in flight have all
    /// completed.
    quiescing: Vec<Option<(ReqId, Ns)>>,
    /// When the jobs started: their rate clocks count from here.
    started: Ns,
    /// When the run's phase began (0 but for a job file's later phases):
    /// the timeline counts from here.
    origin: Ns,
    /// A timed trace replay: each I/O waits for its time, with the job's
    /// others in flight (fio's `iolog_delay` reaps while it waits).
    replay_timed: bool,
    /// Some job replays a trace, whose flushes the jobs replay.
    pub replays: bool,
    /// How far a timed replay's I/Os went behind their times.
    pub lag: raidlab_core::metrics::Lag,
    /// Per-interval figures of the window (`log_avg_msec`).
    pub timeline: Option<raidlab_core::metrics::Timeline>,
    /// Requests handed in from outside instead of drawn from streams (a
    /// served simulated array, [`crate::live`]).
    external: Option<Box<External>>,
    /// Per job, the completions it still waits for before it refills (0:
    /// it refills as each comes).
    gate: Vec<u32>,
    /// While a job fills its queue under batching: that job, and the I/Os
    /// it has issued but not yet handed over.
    staging: Option<usize>,
    staged: Vec<ReqId>,
    /// Job sections run side by side (a job file's sections without
    /// `stonewall`): per job its section, and each section's own
    /// measurements over the same window. Empty with one section.
    section_of: Vec<u16>,
    /// See `section_of`.
    pub sections: Vec<Metrics>,
}

/// What one job's options ask of the host beside its I/O stream: the
/// queue it keeps, the block layer's cost of its I/Os, its think time,
/// durability and batching. Jobs of one workload share one; job sections
/// run side by side each bring their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobConf {
    /// I/Os kept outstanding (fio's `iodepth`, as the engine allows).
    pub iodepth: u32,
    /// Block-layer CPU time per I/O on the job's thread.
    pub block_ns: Ns,
    /// Think time (0: none): how long the job stalls when its clock says.
    pub think: Ns,
    /// The first part of the think time the job's thread spins through
    /// (fio's `thinktime_spin`), its core busy; no longer than `think`.
    pub think_spin: Ns,
    /// `sync=1`: every write is followed by a flush before it completes.
    pub sync: bool,
    /// `fsync=N` (0: none): a flush after every N writes.
    pub fsync: u32,
    /// `end_fsync` in a one-pass run: the job flushes its volumes once its
    /// last I/O is back.
    pub end_fsync: bool,
    /// fio's `io_submit_mode=offload`: a paced job sleeps with I/Os in
    /// flight.
    pub offload: bool,
    /// fio's queue batching, when not its default (with the default every
    /// I/O goes out alone and each completion refills one slot).
    batch: Option<BatchRule>,
}

impl JobConf {
    /// A job keeping `iodepth` I/Os outstanding at `block_ns` each, with
    /// no think time, durability or batching.
    pub fn new(iodepth: u32, block_ns: Ns) -> JobConf {
        JobConf {
            iodepth,
            block_ns,
            think: 0,
            think_spin: 0,
            sync: false,
            fsync: 0,
            end_fsync: false,
            offload: false,
            batch: None,
        }
    }

    /// Batch the job's submissions and reaping as `b` says (fio's
    /// `iodepth_batch_submit`, `iodepth_batch_complete_min`, `iodepth_low`).
    pub fn with_batch(mut self, b: &Batch) -> JobConf {
        self.batch = (!b.is_default()).then(|| BatchRule {
            submit: b.submit_size(self.iodepth),
            reaps: b.reaps_when_full(self.iodepth),
        });
        self
    }
}

/// Requests handed to the host from outside (a live run): what each
/// request slot's request is called by its sender, whether it must be
/// made durable before it completes (a write with FUA), and the
/// completions not yet taken.
#[derive(Default)]
struct External {
    tags: Vec<Tag>,
    fua: Vec<bool>,
    done: Vec<(Tag, Ns)>,
}

/// The creator's word of a write's flush under `sync=1` (over the job).
const SYNC_FLUSH: u32 = 1 << 31;
/// The creator's word of a job's `fsync=N` flush (over the job).
const FSYNC_FLUSH: u32 = 1 << 30;
/// The creator's word of a host I/O handed over in a submission call of
/// more than two, inside a block plug ([`Batch::plugged`]).
const PLUGGED: u32 = 1 << 29;
/// The creator's word holds the volume above this bit, the job below it.
const VOL_SHIFT: u32 = 16;
/// Most volumes the word has room for, beside the job and the flags.
pub const MAX_VOLUMES: usize = 1 << 13;

/// The job a host I/O belongs to (its creator's word's low bits).
pub fn job_of(r: &Req) -> usize {
    (r.creator_word & ((1 << VOL_SHIFT) - 1)) as usize
}

/// The volume a host I/O addresses (the creator's word's middle bits).
fn vol_of(r: &Req) -> usize {
    ((r.creator_word & !(SYNC_FLUSH | FSYNC_FLUSH | PLUGGED)) >> VOL_SHIFT) as usize
}

/// Whether host I/O `r` (a request with no parent) was submitted inside a
/// block plug: its job handed it over with more than two others in one
/// call (`iodepth_batch_submit`). md's RAID 1 and 10 then queue its writes
/// on the plug, and the submitter writes them out itself when the plug is
/// flushed (`raid1_unplug`/`raid10_unplug` not called from the scheduler),
/// instead of waking the array's thread.
pub fn plugged(r: &Req) -> bool {
    r.parent == NONE && r.creator_word & PLUGGED != 0
}

/// A job's batching resolved against its queue depth: the most I/Os one
/// submission call hands over, and the completions a full job reaps before
/// it refills ([`Batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchRule {
    submit: u32,
    reaps: u32,
}

impl Host {
    /// A host issuing `streams` to `roots`: one stream per job and volume,
    /// job-major.
    pub fn new(
        id: CompId,
        roots: Vec<CompId>,
        conf: Vec<JobConf>,
        streams: Vec<JobStream>,
    ) -> Host {
        let v = roots.len();
        assert!(
            v > 0 && streams.len().is_multiple_of(v),
            "{} streams over {v} volumes",
            streams.len()
        );
        let n = streams.len() / v;
        assert_eq!(conf.len(), n, "one setting a job");
        assert!(
            conf.iter().all(|c| c.think_spin <= c.think),
            "the stall is at least the spin"
        );
        // Job and volume numbers share the creator's word with the flush flags.
        assert!(n < 1 << VOL_SHIFT, "{n} jobs do not fit in the word");
        assert!(v <= MAX_VOLUMES, "{v} volumes do not fit in the word");
        Host {
            id,
            on_submitter: vec![[false; 2]; roots.len()],
            roots,
            // fio's default: a think after every I/O.
            think_clocks: conf
                .iter()
                .map(|c| (c.think > 0).then(|| ThinkClock::new(Some(1), ThinkCount::Complete)))
                .collect(),
            conf,
            thinking: vec![false; n],
            streams,
            choosers: (0..n)
                .map(|j| FileChooser::new(FileService::default(), 0, j as u32))
                .collect(),
            out: vec![false; n * v],
            flush_vol: vec![0; n],
            inflight: vec![0; n],
            waiting_since: vec![0; n],
            waited: vec![0; n],
            done_jobs: vec![false; n],
            exhausted: 0,
            exitall: false,
            halted: false,
            window_start: 0,
            window_end: None,
            last_completion: 0,
            metrics: Metrics::default(),
            completed: 0,
            total_inflight: 0,
            guards: Vec::new(),
            errors: Vec::new(),
            searches: Vec::new(),
            reset_at: None,
            reset_pending: false,
            runtime: None,
            steady_stop: None,
            trace: None,
            fifth: 0,
            marks: Vec::new(),
            since_flush: vec![0; n],
            holding: vec![false; n],
            end_flushed: vec![false; n],
            pacers: vec![None; n],
            sleeping: vec![false; n],
            quiescing: vec![None; n],
            started: 0,
            origin: 0,
            replay_timed: false,
            replays: false,
            lag: Default::default(),
            timeline: None,
            external: None,
            gate: vec![0; n],
            staging: None,
            staged: Vec::new(),
            section_of: Vec::new(),
            sections: Vec::new(),
        }
    }

    /// The figures measured since the last call, all jobs' and each
    /// section's, and a fresh start for the next.
    pub(crate) fn take_figures(&mut self) -> crate::window::Figures {
        crate::window::Figures {
            all: std::mem::take(&mut self.metrics),
            sections: self.sections.iter_mut().map(std::mem::take).collect(),
        }
    }

    /// Measure job sections run side by side each on its own as well:
    /// job `j` belongs to section `section_of[j]`.
    pub fn set_sections(&mut self, section_of: Vec<u16>) {
        assert_eq!(section_of.len(), self.jobs(), "one section a job");
        let n = section_of
            .iter()
            .map(|&s| s as usize + 1)
            .max()
            .unwrap_or(0);
        self.sections = (0..n).map(|_| Metrics::default()).collect();
        self.section_of = section_of;
    }

    /// A host whose one submitting thread sends requests handed in from
    /// outside ([`Host::hand_in`]) to `root`, each paying `block_ns` of
    /// block-layer CPU as a job's I/O does.
    pub fn external(id: CompId, root: CompId, block_ns: Ns, ctx: &mut Ctx) -> Host {
        let mut h = Host::new(id, vec![root], Vec::new(), Vec::new());
        // One thread, the one every request is sent on; it never runs out
        // of work (a live run ends when its caller stops it).
        h.conf = vec![JobConf::new(u32::MAX, block_ns)];
        h.inflight = vec![0];
        h.waiting_since = vec![0];
        h.waited = vec![0];
        h.done_jobs = vec![false];
        h.think_clocks = vec![None];
        h.thinking = vec![false];
        h.external = Some(Box::default());
        ctx.threads = vec![0];
        ctx.thread_busy = vec![0];
        h
    }

    /// Hand in a request called `tag`, arriving at `at` (not before now):
    /// `op` over `len` bytes at `offset` (a flush: none); a write with
    /// `fua` completes once a flush behind it has.
    #[allow(clippy::too_many_arguments)]
    pub fn hand_in(
        &mut self,
        ctx: &mut Ctx,
        at: Ns,
        tag: Tag,
        op: Op,
        offset: u64,
        len: u32,
        fua: bool,
    ) {
        let x = self
            .external
            .as_mut()
            .expect("requests are handed in to an external host only");
        let at = at.max(ctx.now);
        let id = ctx.reqs.alloc(Req::new(offset, len, op, self.id, at));
        let slot = id.index();
        if x.tags.len() <= slot {
            x.tags.resize(slot + 1, Tag(0));
            x.fua.resize(slot + 1, false);
        }
        x.tags[slot] = tag;
        x.fua[slot] = fua && op == Op::Write;
        ctx.schedule(at, self.id, id, Ev::Arrive);
    }

    /// Take the handed-in requests completed since the last call: each
    /// one's tag and completion time.
    pub fn take_done(&mut self, out: &mut Vec<(Tag, Ns)>) {
        if let Some(x) = &mut self.external {
            out.append(&mut x.done);
        }
    }

    /// Schedule the stop of a live run at `at`.
    pub fn tick_at(&self, ctx: &mut Ctx, at: Ns) {
        ctx.schedule(at, self.id, NONE, Ev::Tick);
    }

    /// Whether the event `(comp, req, kind)` is a live run's stop.
    pub fn is_tick(&self, comp: CompId, req: ReqId, kind: u8) -> bool {
        comp == self.id && req == NONE && kind == u8::from(Ev::Tick)
    }

    /// A handed-in request is back: a FUA write first sends its flush, as
    /// `sync=1` does; otherwise it is measured and handed back. Kept out
    /// of [`Host::done`], which simulations run millions of times a second.
    #[cold]
    #[inline(never)]
    fn external_done(&mut self, ctx: &mut Ctx, id: ReqId) {
        let now = ctx.now;
        let r = ctx.reqs[id];
        let x = self.external.as_mut().expect("an external host");
        let slot = id.index();
        if std::mem::take(&mut x.fua[slot]) {
            ctx.reqs[id].op = Op::Flush;
            let t = ctx.reserve_on_thread(0, HOST_CPU, now, self.conf[0].block_ns);
            ctx.schedule(t, self.id, id, Ev::Submit);
            return;
        }
        x.done.push((x.tags[slot], now));
        let read = r.op == Op::Read;
        // A FUA write's flush stands for the write (its length is kept).
        if r.len > 0 {
            self.metrics.record(read, r.len, now - r.t0);
        }
        self.completed += 1;
        self.outstanding_one_less(0, now);
        ctx.reqs.release(id);
    }

    /// Pace jobs `jobs` by `rate` (fio's `rate`, `rate_iops`,
    /// `rate_process`); `seed` and each job's number fix the Poisson draws.
    pub fn set_rate(&mut self, jobs: std::ops::Range<usize>, rate: &Rate, seed: u64) {
        for j in jobs {
            self.pacers[j] = Pacer::new(rate, seed, j as u32);
            self.conf[j].offload = rate.offload;
        }
    }

    /// Jobs `jobs` pick their volumes as `svc` says (fio's
    /// `file_service_type`), random picks drawn from `seed`.
    pub fn set_file_service(&mut self, jobs: std::ops::Range<usize>, svc: FileService, seed: u64) {
        for j in jobs {
            self.choosers[j] = FileChooser::new(svc, seed, j as u32);
        }
    }

    /// Watch jobs `jobs` for fio's guards `g` (`max_latency`, `rate_min`,
    /// `rate_iops_min`): a job that trips one stops issuing.
    pub fn set_guards(&mut self, jobs: std::ops::Range<usize>, g: &Guards) {
        let Some(clock) = GuardClock::new(g) else {
            return;
        };
        self.guards.resize_with(self.jobs(), || None);
        for job in jobs {
            self.guards[job] = Some(Box::new(clock.clone()));
        }
    }

    /// Jobs `jobs`, of queue depth `iodepth`, search for the deepest
    /// queue that keeps to `t` (fio's `latency_target`) from the
    /// window's start, and run `runtime` (if given) from there, or from
    /// where the search converges.
    pub fn set_latency_target(
        &mut self,
        jobs: std::ops::Range<usize>,
        t: &LatencyTarget,
        iodepth: u32,
        runtime: Option<Ns>,
    ) {
        let Some(search) = DepthSearch::new(t, iodepth, self.window_start) else {
            return;
        };
        self.searches.resize_with(self.jobs(), || None);
        for job in jobs {
            self.searches[job] = Some(Box::new(search.clone()));
        }
        self.runtime = runtime;
    }

    /// Stop every job once their rate is steady by fio's `steadystate`
    /// criterion `s`, sampled from the window's start.
    pub fn set_steadystate(&mut self, s: &SteadyStop) {
        self.steady_stop = SteadyWatch::new(s).map(Box::new);
    }

    /// What the `steadystate` watch saw, where there is one.
    pub fn steadystate(&self) -> Option<SteadyReport> {
        self.steady_stop.as_ref().map(|w| w.report())
    }

    /// Why the window is the jobs' own rather than one the steady-state
    /// rounds chose, where it is: a `latency_target` search or fio's
    /// `steadystate` stop.
    pub fn own_window(&self) -> Option<&'static str> {
        if !self.searches.is_empty() {
            Some("fio's latency_target: the window is the depth the search found, from where it converged (or the ramp's end)")
        } else if self.steady_stop.is_some() {
            Some("fio's steadystate: the window runs from the ramp's end until the jobs stopped, steady by its criterion, or their runtime ended")
        } else {
            None
        }
    }

    /// When a search converged and cleared the figures, once.
    pub fn take_reset(&mut self) -> Option<Ns> {
        self.reset_at.take()
    }

    /// What each job's search found, by job.
    pub fn found(&self) -> Vec<Found> {
        self.searches
            .iter()
            .enumerate()
            .filter_map(|(j, s)| s.as_ref().map(|s| s.found(j as u32)))
            .collect()
    }

    /// The depth job `job` keeps now: its `iodepth`, or its search's (0
    /// while the search waits for its I/Os in flight).
    #[inline]
    fn depth(&self, job: usize) -> u32 {
        match self.searches.get(job).and_then(Option::as_deref) {
            Some(s) if s.quiescing() => 0,
            Some(s) => s.depth(),
            None => self.conf[job].iodepth,
        }
    }

    /// Issue a replayed trace's I/Os at their recorded times.
    pub fn set_replay_timed(&mut self, timed: bool) {
        self.replay_timed = timed;
    }

    /// The trace replay's tallies summed over the streams, and the first
    /// error that cut one short.
    pub fn replay_tally(&self) -> (raidlab_core::trace::replay::Tally, Option<String>) {
        let mut t = raidlab_core::trace::replay::Tally::default();
        let mut err = None;
        for s in &self.streams {
            if let Some((x, e)) = s.replay_tally() {
                t.add(&x);
                if err.is_none() {
                    err = e.map(|e| e.to_string());
                }
            }
        }
        (t, err)
    }

    /// Host I/Os issued and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.total_inflight as usize
    }

    /// Every job has issued its last I/O and all have completed.
    pub fn finished(&self) -> bool {
        self.exhausted == self.jobs() && self.total_inflight == 0
    }

    /// Start the run's clocks at `origin` (a job file's later phase begins
    /// where the one before it ended).
    pub fn set_origin(&mut self, origin: Ns) {
        self.origin = origin;
    }

    /// End the jobs at `now`, as fio ends a job at its runtime: nothing new
    /// is issued, and what is in flight completes.
    pub fn stop(&mut self, now: Ns) {
        self.window_end = Some(self.window_end.map_or(now, |e| e.min(now)));
    }

    /// Nothing of the jobs is left: no I/O in flight, none waiting for its
    /// rate clock, no job thinking (so no event of theirs is still due).
    pub fn drained(&self) -> bool {
        self.total_inflight == 0
            && !self.sleeping.iter().any(|&s| s)
            && !self.thinking.iter().any(|&t| t)
    }

    fn jobs(&self) -> usize {
        self.inflight.len()
    }

    /// Issue the first `iodepth` I/Os of every job.
    pub fn start(&mut self, ctx: &mut Ctx) {
        ctx.threads = vec![0; self.jobs()];
        ctx.thread_busy = vec![0; self.jobs()];
        self.started = ctx.now;
        for j in 0..self.jobs() {
            self.fill(ctx, j);
        }
    }

    /// Stall job `job` for its think time as `clock` says (fio's
    /// `thinktime_blocks`); by default a job with think time thinks after
    /// every I/O.
    pub fn set_think_clock(&mut self, job: usize, clock: ThinkClock) {
        self.think_clocks[job] = Some(clock);
    }

    /// Issue job `job`'s I/Os until its `iodepth` are outstanding, or it
    /// waits (for a flush, its rate clock, its think time) or has no more.
    fn fill(&mut self, ctx: &mut Ctx, job: usize) {
        let JobConf {
            batch,
            iodepth,
            think,
            ..
        } = self.conf[job];
        if batch.is_some() {
            self.staging = Some(job);
        }
        while self.inflight[job] < self.depth(job) && self.issue(ctx, job) {
            // fio checks its think time after an I/O that left room in the
            // queue; a full queue first waits for a completion (`done`).
            if think > 0 && self.inflight[job] < self.depth(job) {
                self.check_think(job, ctx.now);
            }
        }
        if let Some(b) = batch {
            self.staging = None;
            self.hand_over_staged(ctx, job, b.submit);
            if self.inflight[job] == iodepth {
                self.gate[job] = b.reaps;
            }
        }
    }

    /// Hand job `job`'s staged I/Os to the block layer, `per_call` to a
    /// submission call: a call of more than two runs inside a plug.
    fn hand_over_staged(&mut self, ctx: &mut Ctx, job: usize, per_call: u32) {
        let staged = std::mem::take(&mut self.staged);
        for call in staged.chunks(per_call as usize) {
            let plug = Batch::plugged(call.len() as u32);
            for &id in call {
                if plug {
                    ctx.reqs[id].creator_word |= PLUGGED;
                }
                self.submit_on_thread(ctx, job, id);
            }
        }
        self.staged = staged;
        self.staged.clear();
    }

    /// Job `job`, batching, has reaped a completion: it refills once it has
    /// reaped what its full queue waits for.
    fn reaped(&mut self, ctx: &mut Ctx, job: usize) {
        if self.gate[job] > 1 {
            self.gate[job] -= 1;
            return;
        }
        self.gate[job] = 0;
        self.fill(ctx, job);
    }

    /// fio's think-time check for job `job` at `now`: it stalls once its
    /// clock says.
    fn check_think(&mut self, job: usize, now: Ns) {
        let started = self.started;
        if let Some(c) = &mut self.think_clocks[job] {
            if !self.thinking[job] && c.stall(|| now - started) {
                self.thinking[job] = true;
            }
        }
    }

    /// The job's next I/O and the volume it goes to, as its
    /// `file_service_type` picks; `None` once every one of its streams has
    /// run out.
    fn next_io(&mut self, job: usize, now: Ns) -> Option<(raidlab_core::workload::Io, usize)> {
        let v = self.roots.len();
        let since = now - self.started;
        loop {
            let out = &self.out[job * v..(job + 1) * v];
            let vol = self.choosers[job].next(v, |x| out[x])?;
            let k = job * v + vol;
            let pacer = &self.pacers[job];
            let io = self.streams[k].next_choosing(|read| match pacer {
                Some(p) => p.pick(read, since),
                None => read,
            });
            match io {
                Some(io) => return Some((io, vol)),
                None => self.out[k] = true,
            }
        }
    }

    /// The volume whose replayed trace flushes before job `job`'s next
    /// I/O, if the stream it draws from next does.
    fn trace_flush(&mut self, job: usize) -> Option<u32> {
        let vol = self.choosers[job].upcoming(self.roots.len());
        let k = job * self.roots.len() + vol;
        (!self.out[k] && self.streams[k].flush_first()).then_some(vol as u32)
    }

    /// fio's `exitall`: a job has finished, so none issues any more; each
    /// is done once its I/Os in flight are back.
    fn halt(&mut self) {
        self.halted = true;
        for d in self.done_jobs.iter_mut().filter(|d| !**d) {
            *d = true;
            self.exhausted += 1;
        }
    }

    /// Job `job` has one more I/O outstanding from `now`.
    #[inline]
    fn outstanding_one_more(&mut self, job: usize, now: Ns) {
        if self.inflight[job] == 0 {
            self.waiting_since[job] = now;
        }
        self.inflight[job] += 1;
        self.total_inflight += 1;
    }

    /// One of job `job`'s I/Os is back at `now`.
    #[inline]
    fn outstanding_one_less(&mut self, job: usize, now: Ns) {
        debug_assert!(self.inflight[job] > 0, "job {job} has nothing outstanding");
        self.inflight[job] -= 1;
        self.total_inflight -= 1;
        if self.inflight[job] == 0 {
            self.waited[job] += now - self.waiting_since[job];
        }
    }

    /// Per job, the time it has had I/O outstanding up to `now`.
    pub fn waited(&self, now: Ns) -> Vec<Ns> {
        self.waited
            .iter()
            .zip(&self.waiting_since)
            .zip(&self.inflight)
            .map(|((&w, &since), &n)| if n > 0 { w + (now - since) } else { w })
            .collect()
    }

    /// Issue job `job`'s next I/O, or schedule it for when its rate clock
    /// lets it go; whether it took a slot (false: the job is waiting for a
    /// flush or its clock, or has nothing more to issue).
    fn issue(&mut self, ctx: &mut Ctx, job: usize) -> bool {
        if self.halted
            || self.window_end.is_some_and(|e| ctx.now >= e)
            || self.sleeping[job]
            || (self.conf[job].think > 0 && self.thinking[job])
        {
            return false;
        }
        if self.holding[job] {
            // fsync=N: the job's flush goes once its writes are all back.
            if self.inflight[job] == 0 {
                self.flush(ctx, job);
            }
            return false;
        }
        if let Some(vol) = self.replays.then(|| self.trace_flush(job)).flatten() {
            // A replayed trace's flush: it goes once the job's I/Os before
            // it are back, as fsync=N's does.
            self.holding[job] = true;
            self.flush_vol[job] = vol;
            if self.inflight[job] == 0 {
                self.flush(ctx, job);
            }
            return false;
        }
        let Some((io, vol)) = self.next_io(job, ctx.now) else {
            if self.conf[job].end_fsync && !self.end_flushed[job] {
                if self.inflight[job] > 0 {
                    // fio syncs once the job's last I/Os are back.
                    return false;
                }
                self.end_flushed[job] = true;
                for v in 0..self.roots.len() as u32 {
                    self.flush_vol[job] = v;
                    self.flush(ctx, job);
                }
            }
            if !self.done_jobs[job] {
                self.done_jobs[job] = true;
                self.exhausted += 1;
            }
            if self.exitall && self.inflight[job] == 0 {
                self.halt();
            }
            return false;
        };
        if let Some(t) = &mut self.trace {
            t[job].push(io);
        }
        let due = match &mut self.pacers[job] {
            Some(p) => self.started + p.admit(&io),
            None => self.replay_due(ctx.now, job, vol),
        };
        let id = self.host_req(ctx, job, vol, io);
        if due > ctx.now {
            // The job sleeps until its clock reaches this I/O (fio's
            // rate_ddir), which then goes out as if just issued; inline,
            // fio first waits for its I/Os in flight, then sleeps the time
            // it was ahead when it decided.
            self.sleeping[job] = true;
            if self.conf[job].offload || self.replay_timed || self.inflight[job] == 0 {
                self.wake_at(ctx, id, due);
            } else {
                self.quiescing[job] = Some((id, due - ctx.now));
            }
            return false;
        }
        self.send(ctx, job, id);
        true
    }

    /// A timed replay's I/O just drawn from job `job`'s stream of volume
    /// `vol`: when it is due (0: now, or not a timed replay), its lag
    /// counted when it goes late.
    fn replay_due(&mut self, now: Ns, job: usize, vol: usize) -> Ns {
        if !self.replay_timed {
            return 0;
        }
        let Some(at) = self.streams[job * self.roots.len() + vol].due() else {
            return 0;
        };
        let due = self.started + at;
        // Sent at its time when that is ahead, else now, this late.
        self.lag.record(now.saturating_sub(due));
        due
    }

    /// Send the waiting request `id` at `t`.
    fn wake_at(&mut self, ctx: &mut Ctx, id: ReqId, t: Ns) {
        ctx.reqs[id].t0 = t;
        ctx.schedule(t, self.id, id, Ev::Paced);
    }

    /// One of job `job`'s I/Os is back: a job quiescing for its rate sleep
    /// starts the sleep once none is in flight.
    fn settle(&mut self, ctx: &mut Ctx, job: usize) {
        if self.inflight[job] == 0 {
            if let Some((id, ahead)) = self.quiescing[job].take() {
                self.wake_at(ctx, id, ctx.now + ahead);
            }
        }
    }

    /// The request of job `job`'s `io` to volume `vol`, issued now.
    fn host_req(&mut self, ctx: &mut Ctx, job: usize, vol: usize, io: Io) -> ReqId {
        let id = ctx.reqs.alloc(Req {
            offset: io.offset,
            len: io.len,
            op: if io.read { Op::Read } else { Op::Write },
            parent: NONE,
            pending: 0,
            comp: self.id,
            t0: ctx.now,
            creator_word: job as u32,
            cost_pool: PoolId::NONE,
            handler_word: 0,
            phase: 0,
        });
        ctx.reqs[id].creator_word |= (vol as u32) << VOL_SHIFT;
        id
    }

    /// Send job `job`'s request `id` into the block layer now.
    fn send(&mut self, ctx: &mut Ctx, job: usize, id: ReqId) {
        self.outstanding_one_more(job, ctx.now);
        if self.conf[job].think > 0 {
            if let Some(c) = &mut self.think_clocks[job] {
                c.issued();
            }
        }
        if self.staging == Some(job) {
            // Batching: it goes out with its call's others.
            self.staged.push(id);
            return;
        }
        // The job's thread submits its I/Os one after another (fio: one
        // thread per job; the NVMe/blk-mq completion runs on the submitting
        // core too), on one of the host's cores.
        self.submit_on_thread(ctx, job, id);
    }

    /// Charge the block layer's work on `job`'s thread, then hand `id` to
    /// its volume: at once when the volume's own work runs on that thread
    /// too (it is booked there straight after, before anything the thread
    /// does next), else when the block layer's work ends.
    fn submit_on_thread(&mut self, ctx: &mut Ctx, job: usize, id: ReqId) {
        let t = ctx.reserve_on_thread(job, HOST_CPU, ctx.now, self.conf[job].block_ns);
        let r = &ctx.reqs[id];
        let vol = vol_of(r);
        if self.on_submitter[vol][usize::from(r.op == Op::Write)] {
            ctx.submit(self.roots[vol], id);
        } else {
            ctx.schedule(t, self.id, id, Ev::Submit);
        }
    }

    /// Say, per volume, whether its first component does its own work on
    /// the submitting thread, for [reads and flushes, writes].
    pub fn set_on_submitter(&mut self, on: Vec<[bool; 2]>) {
        assert_eq!(on.len(), self.roots.len(), "one entry per volume");
        self.on_submitter = on;
    }

    /// A job's `fsync=N` flush of the whole volume.
    fn flush(&mut self, ctx: &mut Ctx, job: usize) {
        let mut r = Req::new(0, 0, Op::Flush, self.id, ctx.now);
        r.creator_word = job as u32 | FSYNC_FLUSH | self.flush_vol[job] << VOL_SHIFT;
        let id = ctx.reqs.alloc(r);
        self.outstanding_one_more(job, ctx.now);
        // The job's thread submits its I/Os one after another (fio: one
        // thread per job; the NVMe/blk-mq completion runs on the submitting
        // core too), on one of the host's cores.
        self.submit_on_thread(ctx, job, id);
    }

    /// Note the fifths of a one-pass run's bytes completed by `now`.
    fn mark(&mut self, now: Ns) {
        let m = &self.metrics;
        let bytes = m.read.bytes + m.write.bytes;
        while self.marks.len() < 5 && bytes >= (self.marks.len() as u64 + 1) * self.fifth {
            self.marks.push((now, m.read.count + m.write.count));
        }
    }

    /// A timed event.
    pub fn event(&mut self, ctx: &mut Ctx, id: ReqId, kind: u8) {
        match Ev::from_code(kind) {
            Ev::Submit => {
                let root = self.roots[vol_of(&ctx.reqs[id])];
                ctx.submit(root, id)
            }
            Ev::Think => {
                // The finished I/O waited out its job's think time.
                let job = job_of(&ctx.reqs[id]);
                ctx.reqs.release(id);
                self.thinking[job] = false;
                if let Some(c) = &mut self.think_clocks[job] {
                    c.thought(ctx.now - self.started);
                }
                self.fill(ctx, job);
            }
            Ev::Arrive => self.send(ctx, 0, id),
            Ev::Tick => {}
            Ev::Paced => {
                // The job's clock has reached its waiting I/O: it goes out,
                // and the job refills the slots freed meanwhile.
                let job = job_of(&ctx.reqs[id]);
                debug_assert!(self.sleeping[job], "job {job} was not waiting");
                self.sleeping[job] = false;
                if self.window_end.is_some_and(|e| ctx.now >= e) {
                    ctx.reqs.release(id);
                    return;
                }
                self.send(ctx, job, id);
                self.fill(ctx, job);
            }
        }
    }

    /// A host I/O finished.
    pub fn done(&mut self, ctx: &mut Ctx, id: ReqId) {
        if self.external.is_some() {
            return self.external_done(ctx, id);
        }
        let r = ctx.reqs[id];
        let now = ctx.now;
        let job = job_of(&r);
        let conf = self.conf[job];
        if conf.sync && r.op == Op::Write {
            // O_DSYNC: the write returns once a flush behind it has.
            let q = &mut ctx.reqs[id];
            q.op = Op::Flush;
            q.creator_word |= SYNC_FLUSH;
            let t = ctx.reserve(HOST_CPU, now, conf.block_ns);
            ctx.schedule(t, self.id, id, Ev::Submit);
            return;
        }
        if r.creator_word & FSYNC_FLUSH != 0 {
            // The job's fsync is back: it refills its queue. Its end
            // flush ends its run (fio counts it in the job's runtime).
            if self.end_flushed[job] {
                self.last_completion = self.last_completion.max(now);
            }
            ctx.reqs.release(id);
            self.outstanding_one_less(job, now);
            self.settle(ctx, job);
            self.holding[job] = false;
            self.fill(ctx, job);
            return;
        }
        // A sync write's flush stands for the write it followed.
        let (read, len) = if r.creator_word & SYNC_FLUSH != 0 {
            (false, r.len)
        } else {
            (r.op == Op::Read, r.len)
        };
        if !read && conf.fsync > 0 {
            self.since_flush[job] += 1;
            if self.since_flush[job] >= conf.fsync {
                self.since_flush[job] = 0;
                self.holding[job] = true;
                self.flush_vol[job] = vol_of(&r) as u32;
            }
        }
        if now >= self.window_start && self.window_end.is_none_or(|e| now <= e) {
            self.metrics.record(read, len, now - r.t0);
            if let Some(&s) = self.section_of.get(job) {
                self.sections[s as usize].record(read, len, now - r.t0);
            }
            if let Some(t) = &mut self.timeline {
                t.record(now - self.origin, len, now - r.t0);
            }
            self.last_completion = now;
            if self.fifth > 0 {
                self.mark(now);
            }
        }
        self.completed += 1;
        if !self.guards.is_empty() {
            self.watch(&r, job, now);
        }
        if !self.searches.is_empty() {
            self.search(&r, job, now);
        }
        if self.steady_stop.is_some() {
            self.steady_watch(&r, now);
        }
        self.outstanding_one_less(job, now);
        if !self.searches.is_empty() {
            self.search_quiesced(job, now);
        }
        self.settle(ctx, job);
        if conf.think > 0 {
            return self.done_thinking(ctx, id, job);
        }
        ctx.reqs.release(id);
        if conf.batch.is_some() {
            self.reaped(ctx, job);
        } else {
            self.refill(ctx, job);
        }
    }

    /// Job `job` has room for another I/O: one more in its slot, or, while
    /// its search moves its depth, as many as the depth now allows.
    #[inline]
    fn refill(&mut self, ctx: &mut Ctx, job: usize) {
        if self.searches.is_empty() {
            self.issue(ctx, job);
        } else {
            self.fill(ctx, job);
        }
    }

    /// Host I/O `r` of job `job` is back at `now`: once the ramp is over,
    /// the job's `latency_target` search sees it and moves the job's
    /// depth, ends the job (measured, or in error), or has it wait for
    /// its I/Os in flight.
    #[inline(never)]
    fn search(&mut self, r: &Req, job: usize, now: Ns) {
        let Some(s) = self.searches[job].as_deref_mut() else {
            return;
        };
        if now < self.window_start {
            // fio's search looks at nothing in the ramp (depth 1 there).
            return;
        }
        let read = r.op == Op::Read;
        match s.completed(read, r.offset, r.len.into(), now - r.t0, now) {
            Step::Go | Step::Quiesce => {}
            Step::Reset => self.reset_pending = true,
            Step::Done => self.end_job(job),
            Step::Fatal(t) => {
                self.errors.push(JobError::new(job as u32, t));
                self.end_job(job);
            }
        }
    }

    /// Host I/O `r` is back at `now`: once the ramp is over, fio's
    /// `steadystate` watch counts it, and stops every job once their rate
    /// is steady.
    #[inline(never)]
    fn steady_watch(&mut self, r: &Req, now: Ns) {
        if now < self.window_start {
            return;
        }
        let since = now - self.window_start;
        let steady = self
            .steady_stop
            .as_mut()
            .is_some_and(|w| w.completed(r.len.into(), since));
        if steady {
            (0..self.jobs()).for_each(|j| self.end_job(j));
        }
    }

    /// Job `job` has an I/O fewer in flight at `now`: a search that waited
    /// for them all goes on, first clearing the figures and restarting the
    /// runtime where it has converged (fio's `reset_all_stats`).
    fn search_quiesced(&mut self, job: usize, now: Ns) {
        let quiet = self.searches[job]
            .as_deref()
            .is_some_and(DepthSearch::quiescing);
        if !quiet || self.inflight[job] > 0 {
            return;
        }
        if std::mem::take(&mut self.reset_pending) {
            self.clear_figures(now);
        }
        if let Some(s) = self.searches[job].as_deref_mut() {
            s.resume(now);
        }
    }

    /// Start the measurement over at `now`: the figures cleared, the
    /// window (and the runtime, where one is given) from here.
    fn clear_figures(&mut self, now: Ns) {
        self.metrics = Metrics::default();
        self.sections
            .iter_mut()
            .for_each(|m| *m = Metrics::default());
        self.window_start = now;
        self.window_end = self.runtime.map(|r| now + r);
        self.last_completion = now;
        self.reset_at = Some(now);
    }

    /// Job `job` issues nothing more; what it has in flight completes.
    fn end_job(&mut self, job: usize) {
        let v = self.roots.len();
        self.out[job * v..(job + 1) * v].fill(true);
    }

    /// Host I/O `r` of job `job` is back at `now`: once the ramp is over,
    /// the job's guards see it (its latency from its issue, the job's time
    /// from the ramp's end, where fio restarts its clocks), and a job that
    /// trips one stops issuing, as fio ends a job in error; what it has in
    /// flight completes.
    #[inline(never)]
    fn watch(&mut self, r: &Req, job: usize, now: Ns) {
        let Some(g) = self.guards[job].as_deref_mut() else {
            return;
        };
        if now < self.window_start {
            // fio accounts no completion during its ramp (`should_account`).
            return;
        }
        let read = r.op == Op::Read;
        let since = now - self.window_start;
        let Some(t) = g.completed(read, r.offset, r.len.into(), now - r.t0, since) else {
            return;
        };
        let all = g.exits_all();
        self.guards[job] = None;
        self.errors.push(JobError::new(job as u32, t));
        self.end_job(job);
        if all {
            // fio's exitall_on_error: the job in error stops the rest.
            self.halt();
        }
    }

    /// A host I/O of job `job`, which has think time, is back and counted:
    /// the job checks its think-time clock, and once stalled thinks when
    /// its I/Os in flight are all back.
    #[inline(never)]
    fn done_thinking(&mut self, ctx: &mut Ctx, id: ReqId, job: usize) {
        let c = self.think_clocks[job]
            .as_mut()
            .expect("a job with think time has a clock");
        c.completed();
        // The job reaped what its queue waited for, and checks.
        self.check_think(job, ctx.now);
        if !self.thinking[job] {
            ctx.reqs.release(id);
            self.refill(ctx, job);
        } else if self.inflight[job] == 0 {
            // Quiesced: the job thinks. The request stays allocated through
            // the think time, and the event names it (and so its job).
            let JobConf {
                think, think_spin, ..
            } = self.conf[job];
            if think_spin > 0 {
                ctx.reserve_on_thread(job, HOST_CPU, ctx.now, think_spin);
            }
            ctx.schedule(ctx.now + think, self.id, id, Ev::Think);
        } else {
            ctx.reqs.release(id);
        }
    }
}
