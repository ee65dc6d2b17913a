//! Running a simulation and measuring it: the event loop, the steady-state
//! rounds, and the counters snapshotted at the window's ends.

use super::*;
use crate::window::Figures;

/// Busy time of every reported resource: (report index, resource, busy ns, servers).
pub(crate) fn busy(
    comps: &[Comp],
    reports: &[Report],
    ctx: &Ctx,
) -> Vec<(usize, &'static str, Ns, u64)> {
    let mut v = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        match r {
            Report::Ssd(id) => {
                if let Comp::Ssd(s) = &comps[id.index()] {
                    let c = s.counters();
                    v.push((i, "link", c.link_busy, 1));
                    v.push((i, "firmware", c.fw_busy, 1));
                    v.push((i, "nand", c.die_busy, 1));
                    v.push((i, "write path", c.write_path_busy, 1));
                }
            }
            Report::Hdd(id) => {
                if let Comp::Hdd(h) = &comps[id.index()] {
                    v.push((i, "actuator", h.busy_ns, 1));
                }
            }
            Report::Controller { pools, vols, .. } => {
                let pool = |p: PoolId| &ctx.pools[p.index()];
                v.push((
                    i,
                    "pcie",
                    pool(pools.pcie_in).busy.max(pool(pools.pcie_out).busy),
                    1,
                ));
                v.push((
                    i,
                    "roc",
                    pool(pools.roc).busy,
                    pool(pools.roc).servers() as u64,
                ));
                v.push((i, "dma", pool(pools.dma).busy, 1));
                v.push((i, "xor", pool(pools.xor).busy, 1));
                v.push((i, "flush", pool(pools.flush).busy, 1));
                let (mut at, mut m) = (0, 0);
                for vid in vols {
                    if let Comp::Ctrl(c) = &comps[vid.index()] {
                        let d = c.destage_stats();
                        at += d.at_limit_ns;
                        m += d.members as u64;
                    }
                }
                v.push((i, "destage", at, m.max(1)));
            }
            Report::Stripes { pool, resource, .. } => {
                let p = &ctx.pools[pool.index()];
                v.push((i, resource, p.busy, p.servers() as u64));
            }
        }
    }
    v
}

pub(crate) fn wa_counters(comps: &[Comp], reports: &[Report]) -> Vec<(u64, u64)> {
    reports
        .iter()
        .map(|r| match r {
            Report::Ssd(id) => match &comps[id.index()] {
                Comp::Ssd(s) => {
                    let c = s.counters();
                    (c.host_units, c.gc_units)
                }
                _ => (0, 0),
            },
            _ => (0, 0),
        })
        .collect()
}

/// Counters of every reported component at one moment: the start of the
/// measurement window, or the end of the run.
pub(crate) struct Snapshot {
    pub(crate) busy: Vec<(usize, &'static str, Ns, u64)>,
    /// (host units, GC units) written per SSD.
    pub(crate) wa: Vec<(u64, u64)>,
    /// Commands completed per device (`None`: a controller).
    pub(crate) io: Vec<Option<IoCounts>>,
    /// Busy time of the host CPU and its parity threads.
    pub(crate) cpu: Ns,
    /// Busy time of each job's submitting thread.
    pub(crate) threads: Vec<Ns>,
    /// Time each job has had I/O outstanding.
    pub(crate) waited: Vec<Ns>,
}

impl Snapshot {
    pub(crate) fn take(s: &Sim) -> Self {
        Self::of(&s.comps, &s.reports, &s.ctx, &s.parity_threads)
    }

    pub(crate) fn of(comps: &[Comp], reports: &[Report], ctx: &Ctx, parity: &[PoolId]) -> Self {
        Snapshot {
            busy: busy(comps, reports, ctx),
            wa: wa_counters(comps, reports),
            io: io_counters(comps, reports),
            cpu: ctx.pools[HOST_CPU.index()].busy
                + parity.iter().map(|p| ctx.pools[p.index()].busy).sum::<Ns>(),
            threads: ctx.thread_busy.clone(),
            waited: match &comps[HOST.index()] {
                Comp::Host(h) => h.waited(ctx.now),
                _ => unreachable!("the host is at HOST"),
            },
        }
    }
}

/// Commands each reported device has completed (`None` for controllers).
pub(crate) fn io_counters(comps: &[Comp], reports: &[Report]) -> Vec<Option<IoCounts>> {
    reports
        .iter()
        .map(|r| match r {
            Report::Ssd(id) | Report::Hdd(id) => match &comps[id.index()] {
                Comp::Ssd(s) => Some(s.io()),
                Comp::Hdd(h) => Some(h.io()),
                _ => unreachable!("a device report names a device"),
            },
            Report::Controller { .. } | Report::Stripes { .. } => None,
        })
        .collect()
}

/// What was measured: the host's figures over the window, the counters at
/// its start, its start and length, and whether it was steady.
pub(crate) struct Measured {
    pub(crate) metrics: Figures,
    pub(crate) start: Snapshot,
    /// When the jobs started (0, or a later phase's start).
    pub(crate) origin: Ns,
    pub(crate) t0: Ns,
    pub(crate) len: Ns,
    pub(crate) steady: Steady,
}

/// Run events until the window is measured (time-based runs, see
/// [`window`]) or the host's jobs finish (one pass). The jobs start now,
/// at the clock's reading (0, or where an earlier phase left it).
pub(crate) fn run_events(
    sim: &mut Sim,
    w: &Workload,
    regions: &[Region],
    seed: u64,
    progress: Option<&dyn Fn(f64)>,
) -> Measured {
    let origin = sim.ctx.now;
    // A latency_target search sets its own window (where it converged),
    // and fio's steadystate stop its own end.
    let own_window = w.sets_own_window();
    let mut rounds = window::Rounds::of(w, origin).filter(|_| !own_window);
    // The end of the ramp, on the clock.
    let ramp = origin + w.ramp_time.unwrap_or(0);
    let pass_bytes = (regions.iter().map(|r| w.pass_bytes(r.span)).sum::<u64>() as f64).max(1.0);
    let mut start = Snapshot::take(sim);
    let mut snapped = ramp == origin;
    if let Some(r) = rounds.as_mut() {
        r.set_noise(cache_noise(&sim.comps));
        if r.first_start() == origin {
            r.begin(
                Snapshot::take(sim),
                cache_levels(&sim.comps),
                cache_taken(&sim.comps),
            );
        }
    }
    let fill = Fill::of(sim, w, Region::cover(regions), seed);
    let Sim {
        ctx,
        comps,
        reports,
        parity_threads,
        ..
    } = sim;
    let snap = |comps: &[Comp], ctx: &Ctx| Snapshot::of(comps, reports, ctx, parity_threads);
    if let Comp::Host(h) = &mut comps[HOST.index()] {
        h.start(ctx);
    }
    let wake = due(&rounds, snapped, ramp);
    event_loop(comps, ctx, wake, &mut |comps, ctx, (c, r, k)| {
        if let Some(rs) = rounds.as_mut() {
            if look_at_rounds(rs, comps, ctx, &snap, fill.as_ref()) {
                // The event at hand is for whatever runs next.
                ctx.put_back(c, r, k);
                return Watch::Stop;
            }
        } else if !snapped && ctx.now >= ramp {
            start = snap(comps, ctx);
            snapped = true;
        }
        if own_window {
            if let Comp::Host(h) = &mut comps[HOST.index()] {
                if h.window_end.is_some_and(|e| ctx.now >= e) && h.drained() {
                    // The runtime is over and the jobs' I/Os are back.
                    ctx.put_back(c, r, k);
                    return Watch::Stop;
                }
                if h.take_reset().is_some() {
                    // The search converged and cleared the host's figures:
                    // the devices' count from here too.
                    start = snap(comps, ctx);
                    snapped = true;
                }
            }
        }
        if let Some(report) = progress.filter(|_| ctx.events % PROGRESS_EVERY == 0) {
            report(match (&rounds, &comps[HOST.index()]) {
                (Some(rs), _) => (ctx.now - origin) as f64 / (rs.horizon() - origin).max(1) as f64,
                (None, Comp::Host(h)) => h.completed as f64 * w.mean_bs() / pass_bytes,
                (None, _) => 0.0,
            });
        }
        // A search may clear the figures at any completion: look at
        // every event.
        Watch::Until(if own_window {
            0
        } else {
            due(&rounds, snapped, ramp)
        })
    });
    if let Some((metrics, start, t0, len, steady)) = rounds.and_then(|r| r.window()) {
        return Measured {
            metrics,
            start,
            origin,
            t0,
            len,
            steady,
        };
    }
    let start = if snapped { start } else { snap(comps, ctx) };
    let Comp::Host(host) = &mut comps[HOST.index()] else {
        unreachable!("the host is at HOST")
    };
    pass_measured(host, origin, ramp, snapped, start)
}

/// When the rounds (or, without them, the ramp's snapshot) next need a
/// look at the clock.
fn due(rounds: &Option<window::Rounds<Snapshot>>, snapped: bool, ramp: Ns) -> Ns {
    match rounds {
        Some(rs) if !rs.begun() => rs.first_start(),
        Some(rs) => rs.next,
        None if !snapped => ramp,
        None => Ns::MAX,
    }
}

/// The rounds' look at the clock: the first round begins once its start
/// is reached; rounds that have ended are closed, and caches seen filling
/// are filled ahead. Whether the window is measured (the run is over).
fn look_at_rounds(
    rs: &mut window::Rounds<Snapshot>,
    comps: &mut [Comp],
    ctx: &mut Ctx,
    snap: &dyn Fn(&[Comp], &Ctx) -> Snapshot,
    fill: Option<&Fill>,
) -> bool {
    if !rs.begun() && ctx.now >= rs.first_start() {
        rs.begin(snap(comps, ctx), cache_levels(comps), cache_taken(comps));
    }
    if rs.begun() && ctx.now >= rs.next {
        if close_rounds(rs, comps, ctx, snap) {
            return true;
        }
        if let Some(f) = fill {
            f.fast_forward(rs, comps, ctx);
        }
    }
    false
}

/// A one-pass run's measurement: from the ramp's end (`start`, its
/// snapshot, or the end's when the run ended before the ramp did) to the
/// host's last completion.
fn pass_measured(
    host: &mut Host,
    origin: Ns,
    ramp: Ns,
    ramp_ended: bool,
    start: Snapshot,
) -> Measured {
    // The window starts at the ramp's end, or later where a
    // latency_target search cleared the figures.
    let t0 = host.window_start.max(ramp);
    let end = host.last_completion.max(t0);
    let steady = if let Some(why) = host.own_window() {
        raidlab_core::steady::Steady {
            reached: false,
            after_s: (t0 - origin) as f64 / 1e9,
            criterion: why.into(),
            judged: false,
        }
    } else {
        window::one_pass(origin, ramp, &host.marks, host.fifth)
    };
    Measured {
        metrics: host.take_figures(),
        start,
        origin,
        t0,
        len: if ramp_ended { end - t0 } else { 0 },
        steady,
    }
}

/// Events between two progress reports (and two looks of the event
/// loop's watcher whatever its time).
pub(crate) const PROGRESS_EVERY: u64 = 1 << 20;

/// What an event loop's watcher says: look again once the clock reaches
/// this time, or stop now (the event at hand is not handed on).
pub(crate) enum Watch {
    Until(Ns),
    Stop,
}

/// An event: component, request, kind.
pub(crate) type EventOf = (CompId, ReqId, u8);

/// Run events until the host's jobs finish, nothing is left, or `watch`
/// says stop. `watch` is asked, before an event is handed on, once the
/// clock has reached the time it last named (`wake` at first), and every
/// [`PROGRESS_EVERY`] events.
///
/// This is the simulator's only event loop: every component's handlers
/// are called from here alone, so the compiler inlines them into it (a
/// second loop calling them cost simulations 5-15 %).
#[inline(never)]
pub(crate) fn event_loop(
    comps: &mut [Comp],
    ctx: &mut Ctx,
    mut wake: Ns,
    watch: &mut dyn FnMut(&mut [Comp], &mut Ctx, EventOf) -> Watch,
) {
    while let Some(next) = ctx.next_step() {
        match next {
            Next::Call(call) => {
                if call_component(comps, ctx, call) {
                    return;
                }
            }
            Next::Event(c, r, k) => {
                if ctx.now >= wake || ctx.events.is_multiple_of(PROGRESS_EVERY) {
                    match watch(comps, ctx, (c, r, k)) {
                        Watch::Until(t) => wake = t,
                        Watch::Stop => return,
                    }
                }
                dispatch_event(comps, ctx, c, r, k);
            }
        }
    }
}

/// Hand the timed event `kind` about `req` to component `c`.
#[inline]
pub(crate) fn dispatch_event(comps: &mut [Comp], ctx: &mut Ctx, c: CompId, req: ReqId, kind: u8) {
    match &mut comps[c.index()] {
        Comp::Ssd(s) => s.event(ctx, req, kind),
        Comp::Hdd(h) => h.event(ctx, req, kind),
        Comp::Array(a) => a.event(ctx, req, kind),
        Comp::Ctrl(v) => v.event(ctx, req, kind),
        Comp::Host(h) => h.event(ctx, req, kind),
        Comp::Empty => {}
    }
}

/// Hand a component call to its component; whether the host's jobs have
/// all finished.
#[inline]
pub(crate) fn call_component(comps: &mut [Comp], ctx: &mut Ctx, call: Call) -> bool {
    match call {
        Call::Submit(c, r) => match &mut comps[c.index()] {
            Comp::Ssd(s) => s.submit(ctx, r),
            Comp::Hdd(h) => h.submit(ctx, r),
            Comp::Array(a) => a.submit(ctx, r),
            Comp::Ctrl(v) => v.submit(ctx, r),
            Comp::Host(_) | Comp::Empty => unreachable!("nothing submits to the host"),
        },
        Call::ChildDone(c, parent, child) => match &mut comps[c.index()] {
            Comp::Host(h) => {
                h.done(ctx, child);
                return h.finished();
            }
            Comp::Array(a) => a.child_done(ctx, parent, child),
            Comp::Ctrl(v) => v.child_done(ctx, parent, child),
            Comp::Ssd(_) | Comp::Hdd(_) | Comp::Empty => {
                unreachable!("devices have no children")
            }
        },
        Call::Advise(c, offset) => {
            if let Comp::Ssd(s) = &comps[c.index()] {
                s.advise(offset);
            }
        }
    }
    false
}

/// Every controller volume with a write-back cache, with its component
/// index: the caches the steady-state test watches, in one order.
pub(crate) fn write_back_caches(comps: &[Comp]) -> impl Iterator<Item = (usize, &CtrlVol)> {
    comps.iter().enumerate().filter_map(|(i, c)| match c {
        Comp::Ctrl(v) if v.dirty_level().1 > 0 => Some((i, &**v)),
        _ => None,
    })
}

/// Every write-back cache's dirty level, a fraction of its size.
pub(crate) fn cache_levels(comps: &[Comp]) -> Vec<f64> {
    write_back_caches(comps)
        .map(|(_, v)| {
            let (d, wb) = v.dirty_level();
            d as f64 / wb as f64
        })
        .collect()
}

/// The bytes every write-back cache has taken in from above so far, a
/// fraction of its size.
pub(crate) fn cache_taken(comps: &[Comp]) -> Vec<f64> {
    write_back_caches(comps)
        .map(|(_, v)| v.taken_in() as f64 / v.dirty_level().1 as f64)
        .collect()
}

/// Every write-back cache's level noise (`CtrlVol::level_noise`), a
/// fraction of its size.
pub(crate) fn cache_noise(comps: &[Comp]) -> Vec<f64> {
    write_back_caches(comps)
        .map(|(_, v)| v.level_noise() as f64 / v.dirty_level().1 as f64)
        .collect()
}

/// How a random-write workload's write-back caches are filled ahead when
/// they are seen filling (docs/workloads.md, "Steady state").
pub(crate) struct Fill {
    /// Each write-back cache's component and the region of it the
    /// workload addresses, in [`write_back_caches`]' order.
    pub(crate) caches: Vec<(CompId, Region)>,
    pub(crate) bs: u64,
    pub(crate) seed: u64,
}

impl Fill {
    /// For a run that looks for steady state under random writes.
    pub(crate) fn of(sim: &Sim, w: &Workload, cover: Region, seed: u64) -> Option<Fill> {
        let writes = w.writes();
        if w.ramp_time.is_some() || w.runtime.is_none() || !writes || w.percentage_random == 0 {
            return None;
        }
        let caches = write_back_caches(&sim.comps)
            .map(|(i, v)| (CompId::nth(i), ctrl_region(sim, i, v, cover)))
            .collect();
        Some(Fill {
            caches,
            bs: w.max_bs(),
            seed,
        })
    }

    /// Fill every cache that is not yet full and rose over each of the
    /// last two rounds by more than a round's [`level_allowance`] (its
    /// noise's share, or a tenth of what it took in), the later rise not
    /// slowing (at least [`KEEPS_PACE`] of the earlier): it is filling at a
    /// steady pace toward full, the state a destage path that cannot keep
    /// up ends in. A level settling toward a plateau slows down and is left
    /// to settle.
    pub(crate) fn fast_forward(
        &self,
        rs: &mut window::Rounds<Snapshot>,
        comps: &mut [Comp],
        ctx: &mut Ctx,
    ) {
        /// Share of the earlier round's rise the later must keep (a fill at
        /// a constant pace keeps all of it, up to counting noise).
        const KEEPS_PACE: f64 = 0.8;
        let rises = rs.last_rises();
        let level = rs.level().to_vec();
        let mut filled = false;
        let noise = rs.noise().to_vec();
        let taken = rs.last_taken();
        for (k, &(id, region)) in self.caches.iter().enumerate() {
            // What the cache took in over the lesser of the two rounds.
            let intake = taken.get(k).map_or(0.0, |&(a, b)| a.min(b));
            let pace = level_allowance(noise[k], intake, 1);
            let rising = rises
                .get(k)
                .is_some_and(|&(a, b)| a >= pace && b >= pace && b >= KEEPS_PACE * a);
            if rising && level[k] < 1.0 - LEVEL_EXCURSION {
                if let Comp::Ctrl(v) = &mut comps[id.index()] {
                    v.fill_to_full(ctx, region, self.bs, mix(self.seed, 0xF111 + k as u64));
                    filled = true;
                }
            }
        }
        if filled {
            rs.relevel(cache_levels(comps));
        }
    }
}

/// Close every round that ended by `ctx.now`; whether the run is over.
pub(crate) fn close_rounds(
    rs: &mut window::Rounds<Snapshot>,
    comps: &mut [Comp],
    ctx: &Ctx,
    snap: &dyn Fn(&[Comp], &Ctx) -> Snapshot,
) -> bool {
    while ctx.now >= rs.next {
        let Comp::Host(h) = &mut comps[HOST.index()] else {
            unreachable!("the host is at HOST")
        };
        let m = h.take_figures();
        if rs.close(m, snap(comps, ctx), cache_levels(comps), cache_taken(comps)) {
            return true;
        }
    }
    false
}
