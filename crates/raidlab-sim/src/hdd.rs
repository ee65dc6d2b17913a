//! Hard disk: seek curve, rotation, media rate, on-drive write cache,
//! sequential streaming, and reordering of the tagged queue (the drive
//! serves the queued request with the shortest positioning time next).
//!
//! The platter's angle at time `t` is `t / revolution`; the sector at byte
//! `o` sits at angle `o / bytes_per_track` on its track, so rotational
//! latency follows from the clock instead of a random draw.

use crate::engine::events;
use crate::engine::{us, xfer_ns, CmdQueue, CompId, Ctx, Op, Req, ReqId, NONE};
use raidlab_core::preset::HddParams;
use raidlab_core::result::IoCounts;
use raidlab_core::units::Ns;

events! {
    /// A disk's events: a media operation done, a cached write acknowledged, a late arrival.
    Ev {
        Done,
        Ack,
        Arrive,
    }
}

/// What a disk's own request is (`Req::phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    /// A background destage of the drive's write cache (1: clear of the 0
    /// a host command starts with; a disk has no children to pass phases
    /// on to).
    Background = 1,
}

/// One hard disk.
pub struct Hdd {
    /// Label.
    pub label: String,
    /// Commands completed.
    io: IoCounts,
    id: CompId,
    host: CompId,
    capacity: u64,
    rev: f64,
    track_bytes: f64,
    seek_track: f64,
    seek_k: f64,
    seek_full: f64,
    media_mbps: f64,
    link_mbps: f64,
    link_cmd: Ns,
    cmd: Ns,
    wc: bool,
    cache_bytes: u64,
    dirty: u64,
    /// Flushes waiting for the cached writes to reach the platter.
    flushes: Vec<ReqId>,
    /// Writes waiting, in arrival order, for cache space to be freed.
    space_wait: std::collections::VecDeque<ReqId>,
    queue: Vec<ReqId>,
    /// Tagged command queue: admission up to its depth.
    cmdq: CmdQueue,
    busy: bool,
    head: f64,
    last_end: u64,
    /// When the last media transfer ended.
    last_done: Ns,
    /// Busy ns of the actuator.
    pub busy_ns: Ns,
}

impl Hdd {
    /// A disk from its preset.
    pub fn new(
        label: String,
        id: CompId,
        host: CompId,
        p: &HddParams,
        wc: bool,
        link_mbps: f64,
    ) -> Hdd {
        let rev = 60e9 / p.rpm;
        // E[sqrt(d)] = 8/15 for the distance d between two uniform points.
        let seek_k = ((p.seek_avg_ms - p.seek_track_ms) * 1e6 / (8.0 / 15.0)).max(0.0);
        Hdd {
            io: IoCounts::default(),
            label,
            id,
            host,
            capacity: ((p.capacity_gb * 1e9) as u64) & !4095,
            rev,
            track_bytes: p.media_mbps * 1e6 * rev / 1e9,
            seek_track: p.seek_track_ms * 1e6,
            seek_k,
            seek_full: p.seek_full_ms * 1e6,
            media_mbps: p.media_mbps,
            link_mbps,
            link_cmd: us(p.link_cmd_us),
            cmd: us(p.cmd_us),
            wc,
            cache_bytes: (p.cache_mb as u64) << 20,
            dirty: 0,
            flushes: Vec::new(),
            space_wait: std::collections::VecDeque::new(),
            queue: Vec::new(),
            cmdq: CmdQueue::new(p.queue_depth),
            busy: false,
            head: 0.0,
            last_end: u64::MAX,
            last_done: 0,
            busy_ns: 0,
        }
    }

    /// Bytes addressable.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Commands completed so far.
    pub fn io(&self) -> IoCounts {
        self.io
    }

    /// Assert the disk's invariants: its command queue holds no more than
    /// its depth.
    pub fn check(&self) {
        self.cmdq.check(&self.label);
    }

    fn positioning(&self, now: Ns, r: &Req) -> f64 {
        // Streaming: the head is already there for a write the drive takes
        // up the moment its last transfer ends (it was queued), and for a
        // read (the drive reads ahead into its segment cache). A write that
        // arrives after the platter moved on waits for its sector to come
        // round again (the same track: no seek, the rotational wait below).
        if r.offset == self.last_end && (r.op == Op::Read || now <= self.last_done) {
            return 0.0;
        }
        let x = r.offset as f64 / self.capacity as f64;
        let d = (x - self.head).abs();
        let seek = if d < 1e-9 {
            0.0
        } else {
            (self.seek_track + self.seek_k * d.sqrt()).min(self.seek_full)
        };
        let t_arrive = now as f64 + self.cmd as f64 + seek;
        let target = (r.offset as f64 / self.track_bytes).fract();
        let angle = (t_arrive / self.rev).fract();
        let mut wait = target - angle;
        if wait < 0.0 {
            wait += 1.0;
        }
        seek + wait * self.rev
    }

    /// A request arrives.
    pub fn submit(&mut self, ctx: &mut Ctx, id: ReqId) {
        if ctx.arrives_later(self.id, id, Ev::Arrive) {
            return;
        }
        if self.cmdq.admit(id) {
            self.accept(ctx, id);
        }
    }

    fn accept(&mut self, ctx: &mut Ctx, id: ReqId) {
        let r = ctx.reqs[id];
        if r.op == Op::Flush {
            // FLUSH CACHE returns once the cached writes are on the platter.
            if self.dirty == 0 {
                ctx.schedule(ctx.now + self.link_cmd, self.id, id, Ev::Ack);
            } else {
                self.flushes.push(id);
            }
            return;
        }
        if r.op == Op::Write && self.wc && r.len as u64 <= self.cache_bytes {
            if self.dirty + r.len as u64 <= self.cache_bytes && self.space_wait.is_empty() {
                self.cache_write(ctx, id);
            } else {
                // A full cache takes the write once destages free room for
                // it, in arrival order: the drive does not put it on the
                // media queue behind (or before) its own cached writes.
                self.space_wait.push_back(id);
            }
        } else {
            self.queue.push(id);
        }
        self.dispatch(ctx);
    }

    /// Acknowledge write `id` from cache; destage it in the background.
    fn cache_write(&mut self, ctx: &mut Ctx, id: ReqId) {
        let r = ctx.reqs[id];
        self.dirty += r.len as u64;
        let bg = ctx.reqs.alloc(Req {
            parent: NONE,
            phase: Phase::Background as u8,
            comp: self.id,
            t0: ctx.now,
            ..r
        });
        self.queue.push(bg);
        let t = ctx.now + self.link_cmd + xfer_ns(r.len as u64, self.link_mbps);
        ctx.schedule(t, self.id, id, Ev::Ack);
    }

    /// Writes waiting for cache space that now fits, oldest first.
    fn admit_waiting(&mut self, ctx: &mut Ctx) {
        while let Some(&w) = self.space_wait.front() {
            if self.dirty + ctx.reqs[w].len as u64 > self.cache_bytes {
                break;
            }
            self.space_wait.pop_front();
            self.cache_write(ctx, w);
        }
    }

    fn dispatch(&mut self, ctx: &mut Ctx) {
        if self.busy || self.queue.is_empty() {
            return;
        }
        let now = ctx.now;
        let mut best = 0;
        let mut bt = f64::MAX;
        for (i, &q) in self.queue.iter().enumerate() {
            let t = self.positioning(now, &ctx.reqs[q]);
            if t < bt {
                bt = t;
                best = i;
            }
        }
        let id = self.queue.swap_remove(best);
        let r = ctx.reqs[id];
        let service = self.cmd + bt as Ns + xfer_ns(r.len as u64, self.media_mbps);
        self.busy = true;
        self.busy_ns += service;
        let end = r.offset + r.len as u64;
        self.head = end as f64 / self.capacity as f64;
        self.last_end = end;
        self.last_done = now + service;
        ctx.schedule(now + service, self.id, id, Ev::Done);
    }

    fn finish_host(&mut self, ctx: &mut Ctx, id: ReqId) {
        let r = &ctx.reqs[id];
        if r.op != Op::Flush {
            self.io.add(r.op == Op::Write, r.len as u64);
        }
        ctx.complete(id, self.host);
        if let Some(n) = self.cmdq.complete() {
            self.accept(ctx, n);
        }
    }

    /// A timed event of this disk.
    pub fn event(&mut self, ctx: &mut Ctx, id: ReqId, kind: u8) {
        match Ev::from_code(kind) {
            Ev::Arrive => return self.submit(ctx, id),
            Ev::Ack => return self.finish_host(ctx, id),
            Ev::Done => {}
        }
        self.busy = false;
        if ctx.reqs[id].phase == Phase::Background as u8 {
            self.dirty -= ctx.reqs[id].len as u64;
            ctx.reqs.release(id);
            self.admit_waiting(ctx);
            if self.dirty == 0 {
                for f in std::mem::take(&mut self.flushes) {
                    ctx.schedule(ctx.now + self.link_cmd, self.id, f, Ev::Ack);
                }
            }
        } else {
            self.finish_host(ctx, id);
        }
        self.dispatch(ctx);
    }
}
