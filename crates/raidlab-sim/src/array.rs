//! The RAID executor: one array, hardware (run by a controller's RoC) or
//! software (run on the host CPU). It maps a request onto member requests
//! with the layout crate, charges its engine for the request, each member
//! command and the parity bytes, and for parity writes runs the two phases
//! of md's stripe handling: pre-reads (read-modify-write or
//! reconstruct-write), then data and parity writes. A request finishes when
//! its slowest member does, which is where RAID's request synchronisation
//! costs latency.

use crate::engine::events;
use crate::engine::{ns, CompId, Ctx, Op, PoolId, Req, ReqId, HOST_CPU, NONE};
use crate::host::job_of;
use raidlab_core::units::Ns;
use raidlab_layout::{ArrayLayout, Extent, Geometry, Level, Piece, StripeOp, WriteKind};

mod bitmap;
use bitmap::{Bitmap, BITMAP_PAGE};

events! {
    /// An array's events: a planned request starts; its writes go out; the
    /// next rebuild step starts; a mapped request takes the barrier lock.
    Ev {
        Go,
        Writes,
        Rebuild,
        Lock,
    }
}

/// The plan a request to the array follows (its handler's word).
fn plan_of(r: &Req) -> usize {
    r.handler_word as usize
}

/// The member a member command went to (its creator's word).
fn member_of(r: &Req) -> usize {
    debug_assert_ne!(
        r.creator_word, BITMAP_FILE,
        "a bitmap file write has no member"
    );
    r.creator_word as usize
}

/// The `creator_word` of a write to an external bitmap's file, which goes
/// to no member.
const BITMAP_FILE: u32 = u32::MAX;

events! {
    /// Where an array's request is (`Req::phase`), in the order they come.
    Phase {
        /// Its member reads (a write's pre-reads).
        Reads,
        /// Its member writes.
        Writes,
        /// Writing the write-intent bitmap's page to every member, before
        /// the request's own member I/O.
        Bitmap,
        /// Then flushing it.
        BitmapFlush,
        /// Writing the Partial Parity Log's entry to each stripe's parity
        /// member (a FUA write: the write, then that member's flush)
        /// before the data and parity writes go out.
        Ppl,
        /// Then flushing it.
        PplFlush,
    }
}

/// md's PPL writes a one-page header per log unit and one page of partial
/// parity per stripe head (a 4 KiB row of the stripe) a write touches
/// without filling the stripe (drivers/md/raid5-ppl.c: `ppl_submit_iounit`
/// adds `io->header_page` and each `sh->ppl_page`, PAGE_SIZE each, and
/// `ppl_log_stripe` adds no partial parity for a full-stripe write).
const PPL_PAGE: u64 = 4096;

/// What running this array costs, and on which resources.
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    /// Pool that runs the RAID logic (host CPU or the controller's RoC).
    pub cpu: PoolId,
    /// Pool that runs it for writes: md RAID 4/5/6 handle every write in
    /// the stripe cache, on raid5d and its `group_thread_cnt` workers
    /// (reads within a chunk bypass it); `cpu` otherwise.
    pub write_cpu: PoolId,
    /// Per array request, ns.
    pub req_ns: Ns,
    /// Per member command, ns.
    pub member_ns: Ns,
    /// Pool that computes parity (host CPU or the controller's XOR engine).
    pub parity: PoolId,
    /// Parity cost per KiB (XOR for raid5, P+Q for raid6), ns.
    pub parity_ns_per_kb: f64,
    /// Host RAID 10: each request's hold of the array's barrier lock, ns
    /// (0: none), and the one-server pool that lock is.
    pub lock_ns: Ns,
    /// See `lock_ns` (`PoolId::NONE` without a lock).
    pub lock: PoolId,
}

#[derive(Default)]
struct Plan {
    reads: Vec<Extent>,
    writes: Vec<Extent>,
    parity_bytes: u64,
    /// The Partial Parity Log's writes (one per parity member touched).
    ppl: Vec<Extent>,
    /// A rebuild step, not a request from above.
    rebuild: bool,
}

/// md's recovery onto a spare that took a missing member's place: chunk
/// rows rebuilt in turn, paced as md paces resync (`md_do_sync`): while the
/// speed measured over its recent marks is above `speed_limit_min`, it
/// sleeps half a second before going on when above `speed_limit_max`;
/// when the array is not idle it sleeps likewise before Linux 4.1 and from
/// 4.1 waits until its own steps in flight are done ([`Pace`]). A
/// controller with a rebuild rate paces its own way ([`Pacing::Share`]).
/// Rates are in bytes per second here.
#[derive(Debug, Clone)]
pub struct Rebuild {
    /// The slot being rebuilt.
    pub slot: usize,
    /// Member offset below which the slot is rebuilt and serves reads.
    pub pos: u64,
    /// Bytes rebuilt so far.
    pub done: u64,
    /// Where the next step starts.
    next: u64,
    /// Starts of the steps in flight and when each was issued, in issue
    /// order.
    in_flight: std::collections::VecDeque<(u64, Ns)>,
    /// md's speed marks: (time, bytes done), one every `MARK_STEP`, the
    /// oldest of the last `MARKS` the base of the measured speed.
    marks: std::collections::VecDeque<(Ns, u64)>,
    /// Foreground bytes since the array was last found busy.
    busy: u64,
    /// Foreground bytes above which the array is busy: md's
    /// `is_mddev_idle` calls a member busy once it has seen more than 64
    /// sectors of other I/O since it was last found busy; this is that
    /// for every member.
    busy_above: u64,
    /// When the rebuild finished.
    pub finished: Option<Ns>,
    /// Who paces the rebuild, and how.
    pacing: Pacing,
    /// Step slots waiting for the steps in flight to finish.
    parked: Vec<ReqId>,
    /// Bytes issued since the pace was last checked (Linux 4.1 and later
    /// check it once a `RESYNC_WINDOW`).
    since_check: u64,
    /// When host I/O last reached the array, if it has.
    last_host_io: Option<Ns>,
}

/// How a rebuild yields to host I/O.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// As md's `md_do_sync` (see [`Rebuild`]), between two rates (bytes
    /// per second); `drain_when_busy`: as from Linux 4.1.
    Md {
        /// Guaranteed rate, even under foreground I/O (md's
        /// speed_limit_min).
        min_rate: f64,
        /// Rate when the array is otherwise idle (md's speed_limit_max).
        max_rate: f64,
        /// A busy array makes the next step wait for the steps in flight,
        /// not sleep.
        drain_when_busy: bool,
    },
    /// A controller's rebuild rate, percent: while the array is busy,
    /// each step slot works that share of the time, waiting after a step
    /// `100 / pct - 1` times as long as the step took ("the fraction of the
    /// compute cycles dedicated to rebuilding failed drives", LSI MegaRAID
    /// Enterprise 1600 hardware guide; "the percentage of the background
    /// task processing to all processes being processed by the RAID
    /// Controller", NEC's guides to LSI controllers). md's speed limits do
    /// not apply.
    Share(u32),
}

/// What the rebuild's next step does, as `md_do_sync` decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// Go on now.
    Go,
    /// Sleep `THROTTLE` first (`msleep(500)`).
    Sleep,
    /// Wait until no step is in flight (`wait_event(recovery_wait,
    /// !recovery_active)`, Linux 4.1 and later).
    Drain,
}

/// md takes a speed mark every 3 s (`SYNC_MARK_STEP`)...
const MARK_STEP: Ns = 3_000_000_000;
/// ...and keeps ten (`SYNC_MARKS`).
const MARKS: usize = 10;
/// md sleeps 500 ms when the resync is going too fast (`msleep(500)`).
const THROTTLE: Ns = 500_000_000;
/// md checks its pace once per window of resync I/O issued: 32 pages,
/// 128 KiB (`window = 32 * (PAGE_SIZE / 512)` sectors in `md_do_sync`).
const RESYNC_WINDOW: u64 = 128 * 1024;

impl Rebuild {
    /// A rebuild of `slot` of an array of `members`; `pacing`: how it
    /// yields to host I/O.
    pub fn new(slot: usize, members: usize, pacing: Pacing) -> Self {
        match pacing {
            Pacing::Md {
                min_rate, max_rate, ..
            } => assert!(min_rate > 0.0 && max_rate >= min_rate, "rebuild rates"),
            Pacing::Share(p) => assert!(
                raidlab_core::preset::REBUILD_RATE_PCT.contains(&p),
                "a rebuild rate is a share of 1 to 100 %"
            ),
        }
        Rebuild {
            slot,
            pos: 0,
            done: 0,
            next: 0,
            in_flight: std::collections::VecDeque::new(),
            marks: std::collections::VecDeque::from([(0, 0)]),
            busy: 0,
            busy_above: 64 * 512 * members as u64,
            finished: None,
            pacing,
            parked: Vec::new(),
            since_check: 0,
            last_host_io: None,
        }
    }

    /// Whether the pace is checked before the next step: before every
    /// step, or from Linux 4.1 once a window has been issued since the
    /// last check.
    fn check_due(&self) -> bool {
        match self.pacing {
            Pacing::Md {
                drain_when_busy, ..
            } => !drain_when_busy || self.since_check >= RESYNC_WINDOW,
            Pacing::Share(_) => false,
        }
    }

    /// Whether host I/O has reached the array since it was last found
    /// busy (then counting starts over).
    fn busy(&mut self) -> bool {
        let busy = self.busy > self.busy_above;
        if busy {
            self.busy = 0;
        }
        busy
    }

    /// How long a step slot waits before its next step, after a step
    /// issued at `issued` and done at `now`: with a rebuild rate and host
    /// I/O arriving meanwhile, the rest of its cycle; else nothing.
    fn rest_after(&self, issued: Ns, now: Ns) -> Ns {
        let Pacing::Share(pct) = self.pacing else {
            return 0;
        };
        let took = now - issued;
        if pct < 100 && self.last_host_io.is_some_and(|t| t >= issued) {
            took * Ns::from(100 - pct) / Ns::from(pct)
        } else {
            0
        }
    }

    /// A step of `len` bytes goes out: it opens a new window when the
    /// last one is full.
    fn issue(&mut self, len: u64) {
        if self.since_check >= RESYNC_WINDOW {
            self.since_check = 0;
        }
        self.since_check += len;
    }

    /// How the next step is paced (md's throttle), checked at `now`.
    fn pace(&mut self, now: Ns) -> Pace {
        if now >= self.marks.back().expect("a mark").0 + MARK_STEP {
            self.marks.push_back((now, self.done));
            if self.marks.len() > MARKS {
                self.marks.pop_front();
            }
        }
        let (t0, d0) = *self.marks.front().expect("a mark");
        let speed = (self.done - d0) as f64 / ((now - t0) as f64 / 1e9).max(1e-3);
        // As md's counters, foreground bytes accumulate until they pass the
        // mark, which makes the array busy once and starts them over.
        let busy = self.busy();
        let Pacing::Md {
            min_rate,
            max_rate,
            drain_when_busy,
        } = self.pacing
        else {
            unreachable!("only md's pacing checks its pace")
        };
        if speed <= min_rate || !(busy || speed > max_rate) {
            Pace::Go
        } else if speed > max_rate || !drain_when_busy {
            Pace::Sleep
        } else {
            Pace::Drain
        }
    }
}

/// One array.
pub struct ArrayComp {
    id: CompId,
    host: CompId,
    geo: Geometry,
    members: Vec<CompId>,
    costs: Costs,
    /// Every parity write is read-modify-write (see [`Geometry::rmw_plan`]).
    rmw_only: bool,
    outstanding: Vec<u32>,
    plans: Vec<Plan>,
    free_plans: Vec<u32>,
    pieces: Vec<Piece>,
    stripes: Vec<StripeOp>,
    copies: Vec<(usize, u64)>,
    /// Members written `missing`: they take no I/O.
    failed: Vec<bool>,
    /// A spare being rebuilt in a missing member's place.
    rebuild: Option<Rebuild>,
    /// md's write-intent bitmap, if the array has one.
    bitmap: Option<Bitmap>,
    /// The drive holding the bitmap's file, for an external bitmap.
    bitmap_file: Option<CompId>,
    /// md's Partial Parity Log (RAID 5 `consistency=ppl`).
    ppl: bool,
    /// Members that are disks, for md's read balancing (all `false` on a
    /// hardware array, whose controller balances by load alone).
    rotational: Vec<bool>,
    /// Reads go to the idlest non-rotational copy where there is one (md
    /// since Linux 3.6 for RAID 1, 5.3 for RAID 10; hardware arrays);
    /// `false`: every copy is chosen as a disk's is.
    idlest_flash: bool,
    /// Where each member's last command ended: md's `head_position`.
    head: Vec<u64>,
    /// md RAID 1/10's array thread (raid1d, raid10d), a one-server pool,
    /// where writes go through it (`PoolId::NONE`: they are issued by the
    /// submitting thread). See [`ArrayComp::with_write_thread`].
    write_thread: PoolId,
}

/// Time from a sleeping md array thread's wake-up to its first bio going
/// out. Jon Derrick's biosnoop of an md RAID 10 of four Solidigm P5520s
/// (linux-raid, "[PATCH v5 3/3] md: Use optimal I/O size for last bitmap
/// page", 2023-02-24, with the patch): the last of a bitmap page's four
/// writes completes at 5.747291 s and md0_raid10, woken from its wait for
/// them, has the write they guard out at about 5.747297-5.747304 s (its
/// completions at 5.747314 and .317 with 10-20 us latency); the pair
/// before it, 12-17 us apart the same way, includes the bio's own
/// submission. About 8 us, on that (unnamed) host.
const MD_THREAD_WAKE: Ns = 8_000;

fn push_merged(v: &mut Vec<Extent>, e: Extent) {
    if let Some(l) = v.iter_mut().rev().find(|x| x.member == e.member) {
        if l.offset + l.len == e.offset {
            l.len += e.len;
            return;
        }
    }
    v.push(e);
}

/// 4 KiB rows of stripe `s` its data writes cover (members other than
/// `parity`): the union of their member ranges, as md's stripe heads are
/// one row each across the members.
fn written_rows(s: &StripeOp, parity: usize) -> u64 {
    let mut spans: Vec<(u64, u64)> = s
        .writes
        .iter()
        .filter(|e| e.member as usize != parity)
        .map(|e| (e.offset / PPL_PAGE, (e.offset + e.len).div_ceil(PPL_PAGE)))
        .collect();
    spans.sort_unstable();
    let (mut rows, mut end) = (0, 0);
    for (a, b) in spans {
        let a = a.max(end);
        if b > a {
            rows += b - a;
            end = b;
        }
    }
    rows
}

impl ArrayComp {
    /// An array over `members` (component ids, in layout order); with
    /// `rmw_only`, parity writes always read first (an implementation
    /// without md's full-stripe and reconstruct-write paths).
    pub fn new(
        id: CompId,
        host: CompId,
        geo: Geometry,
        members: Vec<CompId>,
        costs: Costs,
        rmw_only: bool,
    ) -> Self {
        let n = members.len();
        ArrayComp {
            failed: vec![false; n],
            rebuild: None,
            bitmap: None,
            bitmap_file: None,
            ppl: false,
            rotational: vec![false; n],
            idlest_flash: true,
            head: vec![0; n],
            write_thread: PoolId::NONE,
            id,
            host,
            geo,
            members,
            costs,
            rmw_only,
            outstanding: vec![0; n],
            plans: Vec::new(),
            free_plans: Vec::new(),
            pieces: Vec::new(),
            stripes: Vec::new(),
            copies: Vec::new(),
        }
    }

    /// Give the RAID 5 array md's Partial Parity Log: before a write's data
    /// and parity go to the members, the partial parity of each stripe it
    /// does not fill (the XOR of the chunks it leaves alone) is written,
    /// with a header, to the metadata area of that stripe's parity member
    /// ("PPL writes partial parity before new data and parity are
    /// dispatched to disks ... on the parity drive of a particular
    /// stripe", Documentation/md/raid5-ppl.rst), as a FUA write.
    pub fn with_ppl(&mut self) {
        self.ppl = true;
    }

    /// Balance reads as md does over members of which `rotational` says
    /// which are disks (see [`pick_copy`](Self::pick_copy)); `idlest_flash`:
    /// the kernel's md sends reads to the idlest flash copy, else it
    /// chooses among flash copies as among disks.
    pub fn with_rotational(&mut self, rotational: Vec<bool>, idlest_flash: bool) {
        assert_eq!(rotational.len(), self.members.len());
        self.rotational = rotational;
        self.idlest_flash = idlest_flash;
    }

    /// Whether the block layer sees the array as a disk: md marks an
    /// array non-rotational only when every member is (`md_run`).
    pub fn is_rotational(&self) -> bool {
        self.rotational.iter().any(|&r| r)
    }

    /// Give the array md's write-intent bitmap of `chunk` bytes: internal
    /// (on every member; `io_opt`: the kernel writes its last page whole),
    /// or in a file on the drive `external`.
    pub fn with_bitmap(&mut self, chunk: u64, io_opt: bool, external: Option<CompId>) {
        self.bitmap = Some(Bitmap::new(chunk, self.geo.bitmap_bytes(), io_opt));
        self.bitmap_file = external;
    }

    /// Send writes through md's array thread, the one-server pool
    /// `thread`: the submitting thread maps a write and queues its member
    /// bios (md's `pending_bio_list`); the array thread, woken if it
    /// sleeps ([`MD_THREAD_WAKE`]), writes the bitmap's dirty pages and
    /// waits for them (woken again when they are done), then submits the
    /// member bios, paying their per-member cost. One thread per array, so
    /// its writes' submissions queue there.
    pub fn with_write_thread(&mut self, thread: PoolId) {
        self.write_thread = thread;
    }

    /// Whether write request `r` goes through the array thread: not when
    /// its submitter handed it over inside a block plug, whose flush writes
    /// it out on the submitter (`raid1_unplug`/`raid10_unplug` with
    /// `from_schedule` false).
    fn handed_off(&self, r: &Req) -> bool {
        self.write_thread != PoolId::NONE && r.op == Op::Write && !crate::host::plugged(r)
    }

    /// When the array thread has submitted the member bios of a write
    /// queued for it at `at`, `work` of its time: it starts at once if it
    /// is running, after its wake-up if it sleeps.
    fn on_write_thread(&self, ctx: &mut Ctx, at: Ns, work: Ns) -> Ns {
        let asleep = ctx.pool_free_at(self.write_thread) <= at;
        let start = if asleep { at + MD_THREAD_WAKE } else { at };
        ctx.reserve(self.write_thread, start, work)
    }

    /// The array's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Run degraded: the members marked in `failed` are gone (their
    /// component ids are never used), and `rebuild`, if any, is a spare
    /// rebuilding in one of their places (its id already in `members`).
    pub fn degrade(&mut self, failed: Vec<bool>, rebuild: Option<Rebuild>) {
        assert_eq!(failed.len(), self.members.len(), "one flag per member");
        assert!(
            rebuild.as_ref().is_none_or(|r| !failed[r.slot]),
            "a rebuilding slot holds its spare"
        );
        self.failed = failed;
        self.rebuild = rebuild;
    }

    /// No member is missing and none is being rebuilt.
    pub fn optimal(&self) -> bool {
        self.rebuild.is_none() && !self.failed.iter().any(|&f| f)
    }

    /// The rebuild in progress or done, if any.
    pub fn rebuild(&self) -> Option<&Rebuild> {
        self.rebuild.as_ref()
    }

    /// Start the rebuild, if there is one, at time 0: as many chunk rows
    /// in flight as md's stripe cache holds (256 stripes of 4 KiB, its
    /// default `stripe_cache_size`: 1 MiB per member), at least one.
    pub fn start(&mut self, ctx: &mut Ctx) {
        if self.rebuild.is_none() {
            return;
        }
        let depth = ((1u64 << 20) / self.geo.chunk()).max(1);
        for _ in 0..depth {
            let id = self.rebuild_req(ctx);
            ctx.schedule(0, self.id, id, Ev::Rebuild);
        }
    }

    /// Whether member `m` cannot serve a read at member offset `off`:
    /// missing, or a spare not rebuilt that far.
    fn unreadable(&self, m: usize, off: u64) -> bool {
        self.failed[m]
            || self
                .rebuild
                .as_ref()
                .is_some_and(|r| r.slot == m && off >= r.pos)
    }

    /// Whether the array runs without some member's data.
    fn degraded(&self) -> bool {
        self.failed.iter().any(|&f| f)
            || self.rebuild.as_ref().is_some_and(|r| r.finished.is_none())
    }

    fn new_plan(&mut self) -> u32 {
        if let Some(p) = self.free_plans.pop() {
            let pl = &mut self.plans[p as usize];
            pl.reads.clear();
            pl.writes.clear();
            pl.ppl.clear();
            pl.parity_bytes = 0;
            p
        } else {
            self.plans.push(Plan::default());
            (self.plans.len() - 1) as u32
        }
    }

    /// Whether a host request of direction `op` has this array's work done
    /// on the thread that submitted it ([`ArrayComp::submit`]'s pool
    /// choice for a request with no parent and no other payer).
    pub fn works_on_submitter(&self, op: Op) -> bool {
        self.own_pool(op) == HOST_CPU
    }

    /// The pool that pays for this array's work on a request of direction
    /// `op` that no one else pays for: md's stripe threads for RAID 4/5/6
    /// writes, the array's engine otherwise.
    fn own_pool(&self, op: Op) -> PoolId {
        if op == Op::Write {
            self.costs.write_cpu
        } else {
            self.costs.cpu
        }
    }

    /// A request arrives: plan its member commands, charge the array's
    /// engine for them, and start when that work is done.
    pub fn submit(&mut self, ctx: &mut Ctx, id: ReqId) {
        let r = ctx.reqs[id];
        if let Some(rb) = &mut self.rebuild {
            rb.busy += r.len as u64;
            rb.last_host_io = Some(ctx.now);
        }
        let p = self.new_plan();
        ctx.reqs[id].handler_word = p;
        ctx.reqs[id].phase = Phase::Reads.into();
        let mut plan = std::mem::take(&mut self.plans[p as usize]);
        self.plan_request(&r, &mut plan);
        // A parity write's pre-reads go out when the array's work on the
        // request is done: let their drives start loading their maps
        // meanwhile. (Plain reads are not advised: a drive that has only
        // been filled computes its map, and the hint would only cost.)
        if r.op == Op::Write {
            for e in &plan.reads {
                ctx.advise(self.members[e.member as usize], e.offset);
            }
        }
        self.plans[p as usize] = plan;
        // A write for the array thread leaves its member bios' submission
        // to that thread.
        let handed_off = self.handed_off(&r);
        let member_work = self.member_work(&ctx.reqs[id]);
        let cost = self.costs.req_ns + if handed_off { 0 } else { member_work };
        // `t0` may carry a not-before time from a controller front end, and
        // `cost_pool` another payer for the work (its flush task).
        let pool = if r.cost_pool != PoolId::NONE {
            r.cost_pool
        } else {
            self.own_pool(r.op)
        };
        // md's RAID 0/1/10 requests, and RAID 4/5/6 reads within a chunk,
        // are mapped in the context of the thread that submitted them
        // (md_submit_bio runs the personality's make_request in the
        // caller's context), so a job's own thread does that work.
        let t = if r.parent == NONE && pool == HOST_CPU {
            ctx.reserve_on_thread(job_of(&r), pool, ctx.now.max(r.t0), cost)
        } else {
            ctx.reserve(pool, ctx.now.max(r.t0), cost)
        };
        // A RAID 10 request from a host thread then takes the array's
        // barrier lock, in the order the threads reach it.
        let locks = self.costs.lock_ns > 0 && r.parent == NONE && r.op != Op::Flush;
        if locks {
            ctx.schedule(t, self.id, id, Ev::Lock);
        } else {
            let t = if handed_off {
                self.on_write_thread(ctx, t, member_work)
            } else {
                t
            };
            ctx.schedule(t, self.id, id, Ev::Go);
        }
    }

    /// The array engine's per-member work for request `r`, whose plan is
    /// made: a member command per read, write and log write (a
    /// controller's destage, `cost_pool` set, had its member writes mapped
    /// when the host wrote them and pays for its pre-reads only); host
    /// software RAID builds a bio per chunk piece at least (md's
    /// raid0/raid10 make_request `bio_split` loop; the block layer merges
    /// adjacent pieces on a member only after that work is paid).
    fn member_work(&self, r: &Req) -> Ns {
        let plan = &self.plans[plan_of(r)];
        let writes = if r.cost_pool != PoolId::NONE {
            0
        } else {
            plan.writes.len()
        };
        let mut cmds = (plan.reads.len() + writes + plan.ppl.len()) as Ns;
        if self.costs.cpu == HOST_CPU && r.op != Op::Flush {
            cmds = cmds.max(self.chunk_pieces(r));
        }
        self.costs.member_ns * cmds
    }

    /// Chunks request `r` touches (1 for a mirror or concatenation, whose
    /// requests are not split by chunk).
    fn chunk_pieces(&self, r: &Req) -> Ns {
        if matches!(self.geo.level(), Level::Raid1 | Level::Concat) || r.len == 0 {
            return 1;
        }
        let chunk = self.geo.chunk().max(1);
        let last = (r.offset + r.len as u64 - 1) / chunk;
        (last - r.offset / chunk + 1) as Ns
    }

    /// The member reads and writes request `r` needs.
    #[inline]
    fn plan_request(&mut self, r: &Req, plan: &mut Plan) {
        let parity = matches!(self.geo.level(), Level::Raid4 | Level::Raid5 | Level::Raid6);
        let chunk = self.geo.chunk();
        let single = r.offset % chunk + r.len as u64 <= chunk && self.geo.level() != Level::Concat;
        match (r.op, parity) {
            // Fast path: a request inside one chunk maps to one location.
            (Op::Read, _) | (Op::Write, false) if single => self.plan_in_chunk(r, plan),
            (Op::Read, _) => self.plan_read(r, plan),
            (Op::Write, false) => self.plan_mirrored_write(r, plan),
            (Op::Write, true) => self.plan_parity_write(r, plan),
            (Op::Flush, _) => self.plan_flush(plan),
        }
    }

    /// A flush goes to every member, as md forwards a preflush to each of
    /// its devices.
    fn plan_flush(&self, plan: &mut Plan) {
        // Every member there is: a missing one has nothing to flush (and no
        // component to send it to).
        let present = (0..self.members.len()).filter(|&m| !self.failed[m]);
        plan.writes.extend(present.map(|m| Extent {
            member: m as u32,
            offset: 0,
            len: 0,
        }));
    }

    /// A request inside one chunk: one location (a read from its least busy
    /// copy, a write to every copy).
    #[inline]
    fn plan_in_chunk(&mut self, r: &Req, plan: &mut Plan) {
        let (m, off) = self.geo.locate(r.offset);
        self.geo.copies(m, off, &mut self.copies);
        let e = |(m, off): (usize, u64)| Extent {
            member: m as u32,
            offset: off,
            len: r.len as u64,
        };
        if r.op == Op::Read {
            match self.pick_copy() {
                Some(b) => plan.reads.push(e(b)),
                None => self.reconstruct(m, off, r.len as u64, plan),
            }
        } else {
            let failed = &self.failed;
            plan.writes.extend(
                self.copies
                    .iter()
                    .filter(|(m, _)| !failed[*m])
                    .map(|&c| e(c)),
            );
        }
    }

    /// The copy in `self.copies` a read goes to, as md's `read_balance`
    /// chooses: a readable non-rotational copy with the fewest commands
    /// pending where there is one (Shaohua Li, "md/raid1: read balance
    /// chooses idlest disk for SSD", 2012; RAID 10 the same since Guoqing
    /// Jiang's patch of 2019, `idlest_flash` says whether the kernel has
    /// them); among disks (and every copy without them), the lowest address on RAID 10's far and offset layouts, so
    /// reads keep to the first band and run as a RAID 0 of every member
    /// (Keld Simonsen, "md: don't attempt read-balancing for raid10 'far'
    /// layouts", 2008), else the first idle copy, else the one whose head
    /// is nearest. `None`: no copy is readable.
    fn pick_copy(&self) -> Option<(usize, u64)> {
        let readable = || {
            self.copies
                .iter()
                .copied()
                .filter(|&(m, off)| !self.unreadable(m, off))
        };
        let flash = readable()
            .filter(|&(m, _)| self.idlest_flash && !self.rotational[m])
            .min_by_key(|&(m, _)| self.outstanding[m]);
        if flash.is_some() {
            return flash;
        }
        if matches!(self.geo.layout(), ArrayLayout::Far2 | ArrayLayout::Offset2) {
            return readable().min_by_key(|&(_, off)| off);
        }
        readable()
            .find(|&(m, _)| self.outstanding[m] == 0)
            .or_else(|| readable().min_by_key(|&(m, off)| off.abs_diff(self.head[m])))
    }

    /// Reads that rebuild `len` bytes at member offset `off` of the
    /// unreadable member `m` of a parity array: the same range on as many
    /// readable members of the stripe as it has data chunks (Q left out
    /// where P will do), XORed (or P+Q-solved) together.
    fn reconstruct(&self, m: usize, off: u64, len: u64, plan: &mut Plan) {
        debug_assert!(matches!(
            self.geo.level(),
            Level::Raid4 | Level::Raid5 | Level::Raid6
        ));
        let dd = self.geo.data_disks();
        let (_, q) = self.geo.parity_of(off / self.geo.chunk());
        let readable: Vec<usize> = (0..self.members.len())
            .filter(|&j| j != m && !self.unreadable(j, off))
            .collect();
        let mut take: Vec<usize> = readable
            .iter()
            .copied()
            .filter(|&j| Some(j) != q || readable.len() <= dd)
            .collect();
        take.truncate(dd);
        assert_eq!(take.len(), dd, "the topology was checked to survive");
        for j in take {
            push_merged(
                &mut plan.reads,
                Extent {
                    member: j as u32,
                    offset: off,
                    len,
                },
            );
        }
        plan.parity_bytes += len * dd as u64;
    }

    /// A read over several chunks: each piece from the copy with the fewest
    /// outstanding commands.
    #[inline]
    fn plan_read(&mut self, r: &Req, plan: &mut Plan) {
        self.geo.pieces(r.offset, r.len as u64, &mut self.pieces);
        for pc in &self.pieces {
            self.geo
                .copies(pc.member as usize, pc.member_off, &mut self.copies);
            match self.pick_copy() {
                Some((m, off)) => push_merged(
                    &mut plan.reads,
                    Extent {
                        member: m as u32,
                        offset: off,
                        len: pc.len,
                    },
                ),
                None => self.reconstruct(pc.member as usize, pc.member_off, pc.len, plan),
            }
        }
    }

    /// A write without parity over several chunks: every copy of each piece.
    #[inline]
    fn plan_mirrored_write(&mut self, r: &Req, plan: &mut Plan) {
        self.geo.pieces(r.offset, r.len as u64, &mut self.pieces);
        for pc in &self.pieces {
            self.geo
                .copies(pc.member as usize, pc.member_off, &mut self.copies);
            for &(m, off) in self.copies.iter().filter(|(m, _)| !self.failed[*m]) {
                push_merged(
                    &mut plan.writes,
                    Extent {
                        member: m as u32,
                        offset: off,
                        len: pc.len,
                    },
                );
            }
        }
    }

    /// A RAID 5/6 write: the layout's plan per stripe (pre-reads, writes,
    /// parity bytes), read-modify-write only for an `rmw_only` array.
    #[inline]
    fn plan_parity_write(&mut self, r: &Req, plan: &mut Plan) {
        if self.rmw_only {
            self.geo.rmw_plan(r.offset, r.len as u64, &mut self.stripes);
        } else {
            self.geo
                .write_plan(r.offset, r.len as u64, &mut self.stripes);
        }
        if self.degraded() {
            let mut ops = std::mem::take(&mut self.stripes);
            for op in &mut ops {
                self.degrade_stripe(op);
            }
            self.stripes = ops;
        }
        for s in &self.stripes {
            for e in &s.reads {
                push_merged(&mut plan.reads, *e);
            }
            for e in &s.writes {
                push_merged(&mut plan.writes, *e);
            }
            plan.parity_bytes += s.parity_bytes;
        }
        if self.ppl {
            self.plan_ppl(plan);
        }
    }

    /// The Partial Parity Log's writes for the stripes just planned: per
    /// parity member, a header page and a page per 4 KiB row of every
    /// stripe written but not filled; the partial parity's XOR is charged
    /// with the stripe's parity work, and each log write is one more member
    /// command (a FUA write; the simulated drive sees it as the write and
    /// a flush). (md gathers the stripes a request
    /// makes into log units per parity member; stripes of concurrent
    /// requests that md would also gather are logged separately here.)
    fn plan_ppl(&self, plan: &mut Plan) {
        for s in &self.stripes {
            let (pd, _) = self.geo.parity_of(s.stripe);
            if s.kind == WriteKind::FullStripe || self.failed[pd] {
                continue;
            }
            let rows = written_rows(s, pd);
            if rows == 0 {
                continue;
            }
            // md computes the partial parity from the blocks the stripe
            // pre-reads (old data and parity for a read-modify-write, the
            // untouched data for a reconstruct-write: ops_run_partial_parity
            // in drivers/md/raid5.c): one more XOR pass over them.
            plan.parity_bytes += s.reads.iter().map(|e| e.len).sum::<u64>();
            match plan.ppl.iter_mut().find(|e| e.member as usize == pd) {
                Some(e) => e.len += rows * PPL_PAGE,
                None => plan.ppl.push(Extent {
                    member: pd as u32,
                    offset: 0,
                    len: PPL_PAGE + rows * PPL_PAGE,
                }),
            }
        }
    }

    /// One stripe's write with members gone, as md writes a degraded
    /// stripe: no writes to missing members; when parity still has to be
    /// computed and a planned pre-read cannot be served (or the missing
    /// member's own new data has to go into parity), reconstruct-write
    /// from the readable data members, or read-modify-write when one of
    /// those is unreadable too. With every parity member missing nothing
    /// is read or computed.
    fn degrade_stripe(&self, op: &mut StripeOp) {
        let (pd, qd) = self.geo.parity_of(op.stripe);
        let parity = |m: usize| m == pd || Some(m) == qd;
        let data_writes: Vec<Extent> = op
            .writes
            .iter()
            .filter(|e| !parity(e.member as usize))
            .copied()
            .collect();
        let lost_data = data_writes.iter().any(|e| self.failed[e.member as usize]);
        op.writes.retain(|e| !self.failed[e.member as usize]);
        if !op.writes.iter().any(|e| parity(e.member as usize)) {
            op.reads.clear();
            op.parity_bytes = 0;
            return;
        }
        let unread = op
            .reads
            .iter()
            .any(|e| self.unreadable(e.member as usize, e.offset));
        if !unread && !lost_data {
            return;
        }
        let a = data_writes.iter().map(|e| e.offset).min().unwrap_or(0);
        let b = data_writes
            .iter()
            .map(|e| e.offset + e.len)
            .max()
            .unwrap_or(a);
        let written = |m: usize| data_writes.iter().any(|e| e.member as usize == m);
        let n = self.members.len();
        let others_readable = (0..n)
            .filter(|&m| !parity(m) && !written(m))
            .all(|m| !self.unreadable(m, a));
        op.reads.clear();
        let read = |m: usize| Extent {
            member: m as u32,
            offset: a,
            len: b - a,
        };
        if others_readable {
            op.reads
                .extend((0..n).filter(|&m| !parity(m) && !written(m)).map(read));
        } else {
            op.reads.extend(
                (0..n)
                    .filter(|&m| (written(m) || parity(m)) && !self.unreadable(m, a))
                    .map(read),
            );
        }
    }

    #[inline]
    fn issue(&mut self, ctx: &mut Ctx, id: ReqId, op: Op) {
        let p = plan_of(&ctx.reqs[id]);
        let list = match op {
            Op::Read => std::mem::take(&mut self.plans[p].reads),
            Op::Write | Op::Flush => std::mem::take(&mut self.plans[p].writes),
        };
        // A flush's member commands are flushes.
        let op = if ctx.reqs[id].op == Op::Flush {
            Op::Flush
        } else {
            op
        };
        ctx.reqs[id].pending = list.len() as u32;
        for e in &list {
            self.send(ctx, id, op, e);
        }
        // Keep the allocation for reuse.
        let mut list = list;
        list.clear();
        match op {
            Op::Read => self.plans[p].reads = list,
            Op::Write | Op::Flush => self.plans[p].writes = list,
        }
    }

    #[inline]
    fn after_reads(&mut self, ctx: &mut Ctx, id: ReqId) {
        let p = plan_of(&ctx.reqs[id]);
        ctx.reqs[id].phase = Phase::Writes.into();
        let bytes = self.plans[p].parity_bytes;
        if bytes > 0 {
            let cost = ns(bytes as f64 / 1024.0 * self.costs.parity_ns_per_kb);
            let t = ctx.reserve(self.costs.parity, ctx.now, cost);
            ctx.schedule(t, self.id, id, Ev::Writes);
        } else {
            self.writes(ctx, id);
        }
    }

    /// The request's data and parity writes, after its Partial Parity Log
    /// entries when it has any.
    fn writes(&mut self, ctx: &mut Ctx, id: ReqId) {
        if self.plans[plan_of(&ctx.reqs[id])].ppl.is_empty() {
            self.issue(ctx, id, Op::Write);
        } else {
            ctx.reqs[id].phase = Phase::Ppl.into();
            self.ppl_io(ctx, id, Op::Write);
        }
    }

    /// The request's log entries written (`Op::Write`) or made durable
    /// (`Op::Flush`) on their parity members.
    fn ppl_io(&mut self, ctx: &mut Ctx, id: ReqId, op: Op) {
        let p = plan_of(&ctx.reqs[id]);
        let list = std::mem::take(&mut self.plans[p].ppl);
        debug_assert!(!list.is_empty(), "a log phase waits on its log writes");
        ctx.reqs[id].pending = list.len() as u32;
        for e in &list {
            self.send(ctx, id, op, e);
        }
        self.plans[p].ppl = list;
    }

    /// One member command of request `id`: `op` over extent `e`.
    #[inline]
    fn send(&mut self, ctx: &mut Ctx, id: ReqId, op: Op, e: &Extent) {
        let child = ctx.reqs.alloc(Req {
            offset: e.offset,
            len: e.len as u32,
            op,
            parent: id,
            pending: 0,
            comp: CompId::nth(0),
            t0: ctx.now,
            creator_word: e.member,
            cost_pool: PoolId::NONE,
            handler_word: 0,
            phase: 0,
        });
        self.outstanding[e.member as usize] += 1;
        self.head[e.member as usize] = e.offset + e.len;
        ctx.submit(self.members[e.member as usize], child);
    }

    /// Issue the request's member I/O: its reads, else its writes.
    fn go(&mut self, ctx: &mut Ctx, id: ReqId) {
        if !self.plans[plan_of(&ctx.reqs[id])].reads.is_empty() {
            self.issue(ctx, id, Op::Read);
        } else {
            self.after_reads(ctx, id);
        }
    }

    /// The bitmap page host write `id` must write first, if it finds a
    /// clear bit in the array's bitmap (rebuild writes and flushes do not
    /// set bits): its member offset and length.
    fn bitmap_clear(&mut self, ctx: &Ctx, id: ReqId) -> Option<(u64, u64)> {
        let r = &ctx.reqs[id];
        let bm = self.bitmap.as_mut()?;
        if r.op != Op::Write || self.plans[plan_of(r)].rebuild {
            return None;
        }
        let (a, b) = self.geo.bitmap_span(r.offset, r.len as u64);
        let page = bm.touch(a, b, ctx.now)?;
        Some(bm.page_io(page))
    }

    /// The bitmap page at member bytes `(offset, len)` written
    /// (`Op::Write`) or flushed (`Op::Flush`) on every member still in the
    /// array.
    fn bitmap_io(&mut self, ctx: &mut Ctx, id: ReqId, op: Op, (offset, len): (u64, u64)) {
        if let Some(file) = self.bitmap_file {
            self.bitmap_file_write(ctx, id, file, offset);
            return;
        }
        let live: Vec<usize> = (0..self.members.len())
            .filter(|&m| !self.failed[m])
            .collect();
        ctx.reqs[id].pending = live.len() as u32;
        for m in live {
            let page = Extent {
                member: m as u32,
                offset,
                len,
            };
            self.send(ctx, id, op, &page);
        }
    }

    /// An external bitmap's page written to its file on drive `file`: a
    /// whole page (the file's blocks, `write_file_page` in md-bitmap.c,
    /// submitted REQ_SYNC and waited for, with no cache flush), and no
    /// member I/O.
    fn bitmap_file_write(&mut self, ctx: &mut Ctx, id: ReqId, file: CompId, offset: u64) {
        ctx.reqs[id].pending = 1;
        let child = ctx.reqs.alloc(Req {
            offset,
            len: BITMAP_PAGE,
            op: Op::Write,
            parent: id,
            pending: 0,
            comp: CompId::nth(0),
            t0: ctx.now,
            creator_word: BITMAP_FILE,
            cost_pool: PoolId::NONE,
            handler_word: 0,
            phase: 0,
        });
        ctx.submit(file, child);
    }

    /// The bitmap page write `id` waited for is done (on the members, or
    /// in its file): the write goes on, at once, or once the thread that
    /// slept waiting for the page is awake again (the array's, or, for a
    /// plugged write, its submitter, which writes the page itself when it
    /// flushes the plug).
    fn bitmap_written(&mut self, ctx: &mut Ctx, id: ReqId) {
        ctx.reqs[id].phase = Phase::Reads.into();
        if self.write_thread == PoolId::NONE {
            self.go(ctx, id);
        } else {
            ctx.schedule(ctx.now + MD_THREAD_WAKE, self.id, id, Ev::Go);
        }
    }

    /// A timed event of this array.
    pub fn event(&mut self, ctx: &mut Ctx, id: ReqId, kind: u8) {
        match Ev::from_code(kind) {
            Ev::Go => {
                if let Some(page) = self.bitmap_clear(ctx, id) {
                    ctx.reqs[id].phase = Phase::Bitmap.into();
                    self.bitmap_io(ctx, id, Op::Write, page);
                } else {
                    self.go(ctx, id);
                }
            }
            Ev::Writes => self.writes(ctx, id),
            Ev::Rebuild => self.rebuild_step(ctx, id),
            Ev::Lock => {
                // Every thread's requests queue on the one lock; the
                // request goes on once its hold ends (the spinning thread's
                // wait is not charged to its core).
                let released = ctx.reserve(self.costs.lock, ctx.now, self.costs.lock_ns);
                let r = ctx.reqs[id];
                let t = if self.handed_off(&r) {
                    self.on_write_thread(ctx, released, self.member_work(&r))
                } else {
                    released
                };
                ctx.schedule(t, self.id, id, Ev::Go);
            }
        }
    }

    /// A request slot for rebuild steps.
    fn rebuild_req(&mut self, ctx: &mut Ctx) -> ReqId {
        ctx.reqs.alloc(Req::new(0, 0, Op::Write, self.id, ctx.now))
    }

    /// Plan and start the next rebuild step (one chunk row), or finish.
    fn rebuild_step(&mut self, ctx: &mut Ctx, id: ReqId) {
        let end = self.geo.member_size();
        let rb = self.rebuild.as_mut().expect("a rebuild");
        if rb.next < end && rb.check_due() {
            match rb.pace(ctx.now) {
                Pace::Go => {}
                Pace::Sleep => {
                    ctx.schedule(ctx.now + THROTTLE, self.id, id, Ev::Rebuild);
                    return;
                }
                Pace::Drain if !rb.in_flight.is_empty() => {
                    rb.parked.push(id);
                    return;
                }
                Pace::Drain => {}
            }
        }
        let (slot, pos) = (rb.slot, rb.next);
        if pos >= end {
            if rb.in_flight.is_empty() && rb.finished.is_none() {
                rb.pos = end;
                rb.finished = Some(ctx.now);
            }
            ctx.reqs.release(id);
            return;
        }
        let len = self.geo.chunk().min(end - pos);
        rb.issue(len);
        rb.next += len;
        rb.in_flight.push_back((pos, ctx.now));
        let p = self.new_plan();
        let mut plan = std::mem::take(&mut self.plans[p as usize]);
        plan.rebuild = true;
        match self.geo.level() {
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                self.reconstruct(slot, pos, len, &mut plan)
            }
            _ => {
                // A mirror copy: the same bytes (RAID 1), or the other copy
                // of what the slot's chunk holds (RAID 10).
                if let Some((src, at)) = self.mirror_source(slot, pos) {
                    plan.reads.push(Extent {
                        member: src as u32,
                        offset: at,
                        len,
                    });
                }
            }
        }
        plan.writes.push(Extent {
            member: slot as u32,
            offset: pos,
            len,
        });
        self.plans[p as usize] = plan;
        let r = &mut ctx.reqs[id];
        r.handler_word = p;
        r.phase = Phase::Reads.into();
        r.offset = pos;
        r.len = len as u32;
        let cost = self.costs.req_ns + self.costs.member_ns * 2;
        let t = ctx.reserve(self.costs.cpu, ctx.now, cost);
        ctx.schedule(t, self.id, id, Ev::Go);
    }

    /// Where a mirror rebuild copies `slot`'s chunk at `pos` from: the
    /// same bytes on another member (RAID 1), or the other copy of what it
    /// holds (RAID 10, `None` where it holds no data).
    fn mirror_source(&self, slot: usize, pos: u64) -> Option<(usize, u64)> {
        let n = self.members.len();
        if self.geo.level() != Level::Raid10 {
            let m = (0..n)
                .find(|&m| m != slot && !self.failed[m])
                .expect("a mirror keeps a copy");
            return Some((m, pos));
        }
        self.geo.mirror_of(slot, pos)
    }

    /// A rebuild step's writes are done: advance, and pace the next.
    fn rebuild_done(&mut self, ctx: &mut Ctx, id: ReqId) {
        let (start, len) = (ctx.reqs[id].offset, ctx.reqs[id].len as u64);
        let rb = self.rebuild.as_mut().expect("a rebuild");
        rb.done += len;
        let i = rb
            .in_flight
            .iter()
            .position(|s| s.0 == start)
            .expect("a finished rebuild step was in flight");
        let (_, issued) = rb.in_flight.remove(i).expect("an index in range");
        rb.pos = rb.in_flight.front().map_or(rb.next, |s| s.0);
        if rb.in_flight.is_empty() && !rb.parked.is_empty() {
            // The wait is over: md goes on with a new window unchecked.
            rb.since_check = 0;
            for parked in rb.parked.drain(..) {
                ctx.schedule(ctx.now, self.id, parked, Ev::Rebuild);
            }
        }
        let rest = rb.rest_after(issued, ctx.now);
        ctx.schedule(ctx.now + rest, self.id, id, Ev::Rebuild);
    }

    /// A member request finished.
    pub fn child_done(&mut self, ctx: &mut Ctx, id: ReqId, child: ReqId) {
        if ctx.reqs[child].creator_word != BITMAP_FILE {
            self.outstanding[member_of(&ctx.reqs[child])] -= 1;
        }
        ctx.reqs.release(child);
        let r = &mut ctx.reqs[id];
        r.pending -= 1;
        if r.pending > 0 {
            return;
        }
        let p = plan_of(r);
        match Phase::from_code(r.phase) {
            Phase::Bitmap if self.bitmap_file.is_some() => {
                // A file's page write is waited for, not flushed.
                self.bitmap_written(ctx, id);
                return;
            }
            Phase::Bitmap => {
                r.phase = Phase::BitmapFlush.into();
                self.bitmap_io(ctx, id, Op::Flush, (0, u64::from(BITMAP_PAGE)));
                return;
            }
            Phase::BitmapFlush => {
                self.bitmap_written(ctx, id);
                return;
            }
            Phase::Ppl => {
                r.phase = Phase::PplFlush.into();
                self.ppl_io(ctx, id, Op::Flush);
                return;
            }
            Phase::PplFlush => {
                r.phase = Phase::Writes.into();
                self.plans[p].ppl.clear();
                self.issue(ctx, id, Op::Write);
                return;
            }
            Phase::Reads | Phase::Writes => {}
        }
        if r.op == Op::Write && r.phase == u8::from(Phase::Reads) {
            self.after_reads(ctx, id);
            return;
        }
        self.free_plans.push(p as u32);
        if std::mem::take(&mut self.plans[p].rebuild) {
            self.rebuild_done(ctx, id);
        } else {
            ctx.complete(id, self.host);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Call, Next, NONE};
    use raidlab_layout::ArrayLayout;

    /// The array is component 1, its host 0, its members 2, 3, ...; they
    /// are instant: every member command completes as it arrives.
    struct Bench {
        ctx: Ctx,
        array: ArrayComp,
        /// Member commands seen: (member index, op, member offset, length).
        seen: Vec<(usize, Op, u64, u32)>,
    }

    const CHUNK: u64 = 64 << 10;

    impl Bench {
        fn new(level: Level, members: usize) -> Self {
            let mut ctx = Ctx::new(2);
            let geo = Geometry::new(
                level,
                CHUNK,
                ArrayLayout::default_for(level),
                &vec![1 << 30; members],
            )
            .unwrap();
            let costs = Costs {
                cpu: crate::engine::HOST_CPU,
                write_cpu: crate::engine::HOST_CPU,
                req_ns: 0,
                member_ns: 0,
                parity: ctx.add_pool(1),
                parity_ns_per_kb: 0.0,
                lock_ns: 0,
                lock: PoolId::NONE,
            };
            let ids = (0..members).map(|m| CompId::nth(2 + m)).collect();
            let array = ArrayComp::new(CompId::nth(1), CompId::nth(0), geo, ids, costs, false);
            Bench {
                ctx,
                array,
                seen: Vec::new(),
            }
        }

        /// Submit a host request and run until it completes; returns
        /// whether it did.
        fn io(&mut self, op: Op, offset: u64, len: u32) -> bool {
            let id = self
                .ctx
                .reqs
                .alloc(Req::new(offset, len, op, CompId::nth(1), self.ctx.now));
            self.array.submit(&mut self.ctx, id);
            let mut done = false;
            while let Some(next) = self.ctx.next_step() {
                match next {
                    Next::Event(c, r, k) if c.index() == 1 => self.array.event(&mut self.ctx, r, k),
                    Next::Call(Call::Submit(c, r)) => {
                        let q = self.ctx.reqs[r];
                        self.seen.push((c.index() - 2, q.op, q.offset, q.len));
                        self.ctx.complete(r, CompId::nth(0));
                    }
                    Next::Call(Call::ChildDone(c, parent, child)) if c.index() == 1 => {
                        self.array.child_done(&mut self.ctx, parent, child)
                    }
                    Next::Call(Call::ChildDone(c, NONE, r)) if c.index() == 0 => {
                        assert_eq!(r, id);
                        self.ctx.reqs.release(r);
                        done = true;
                    }
                    Next::Call(Call::Advise(..)) => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
            done
        }
    }

    #[test]
    fn raid0_maps_a_request_onto_the_member_holding_it() {
        let mut b = Bench::new(Level::Raid0, 4);
        assert!(b.io(Op::Read, 5 * CHUNK + 4096, 4096));
        // Chunk 5 of a 4-member stripe: member 1, its second chunk.
        assert_eq!(b.seen, [(1, Op::Read, CHUNK + 4096, 4096)]);
        assert_eq!(b.ctx.reqs.live(), 0, "every request released");
    }

    #[test]
    fn raid5_small_write_reads_then_writes_data_and_parity() {
        let mut b = Bench::new(Level::Raid5, 5);
        assert!(b.io(Op::Write, 4096, 4096));
        let reads: Vec<_> = b.seen.iter().filter(|s| s.1 == Op::Read).collect();
        let writes: Vec<_> = b.seen.iter().filter(|s| s.1 == Op::Write).collect();
        // Read-modify-write: old data and old parity, then both written.
        assert_eq!(reads.len(), 2, "{:?}", b.seen);
        assert_eq!(writes.len(), 2, "{:?}", b.seen);
        let last_read = b.seen.iter().rposition(|s| s.1 == Op::Read).unwrap();
        let first_write = b.seen.iter().position(|s| s.1 == Op::Write).unwrap();
        assert!(
            last_read < first_write,
            "pre-reads come first: {:?}",
            b.seen
        );
        let mut members: Vec<usize> = writes.iter().map(|w| w.0).collect();
        members.sort();
        let mut read_members: Vec<usize> = reads.iter().map(|r| r.0).collect();
        read_members.sort();
        assert_eq!(members, read_members, "the same data and parity members");
        assert_eq!(b.ctx.reqs.live(), 0, "every request released");
    }

    /// With the Partial Parity Log, a small write's log entry (a header
    /// page and a page of partial parity) is written to the stripe's
    /// parity member and flushed there after the pre-reads and before the
    /// data and parity writes; a full-stripe write logs nothing.
    #[test]
    fn raid5_ppl_logs_partial_parity_on_the_parity_member_first() {
        let mut b = Bench::new(Level::Raid5, 5);
        b.array.with_ppl();
        assert!(b.io(Op::Write, 4096, 4096));
        let (pd, _) = b.array.geo.parity_of(0);
        let flush = b.seen.iter().position(|s| s.1 == Op::Flush).unwrap();
        assert_eq!(b.seen[flush - 1], (pd, Op::Write, 0, 8192), "{:?}", b.seen);
        assert_eq!(b.seen[flush].0, pd);
        assert!(b.seen[..flush - 1].iter().all(|s| s.1 == Op::Read));
        let after: Vec<_> = b.seen[flush + 1..].iter().collect();
        assert_eq!(after.len(), 2, "data and parity last: {:?}", b.seen);
        assert!(after.iter().all(|s| s.1 == Op::Write && s.2 == 4096));
        assert_eq!(b.ctx.reqs.live(), 0, "every request released");

        // Rows: a 12 KiB write over two chunks' ends logs one page per row.
        b.seen.clear();
        assert!(b.io(Op::Write, 2 * CHUNK - 8192, 12 << 10));
        let flush = b.seen.iter().position(|s| s.1 == Op::Flush).unwrap();
        assert_eq!(b.seen[flush - 1].3, 4096 + 3 * 4096, "{:?}", b.seen);
        assert_eq!(b.seen.iter().filter(|s| s.1 == Op::Flush).count(), 1);

        b.seen.clear();
        assert!(b.io(Op::Write, 0, 4 * CHUNK as u32));
        assert!(b.seen.iter().all(|s| s.1 == Op::Write), "{:?}", b.seen);
        assert_eq!(b.seen.len(), 5, "a full stripe logs nothing: {:?}", b.seen);
    }

    #[test]
    fn raid5_full_stripe_write_reads_nothing() {
        let mut b = Bench::new(Level::Raid5, 5);
        assert!(b.io(Op::Write, 0, (4 * CHUNK) as u32));
        assert!(b.seen.iter().all(|s| s.1 == Op::Write), "{:?}", b.seen);
        assert_eq!(b.seen.len(), 5, "four data chunks and the parity");
    }

    #[test]
    fn raid10_writes_both_copies_and_reads_one() {
        let mut b = Bench::new(Level::Raid10, 4);
        assert!(b.io(Op::Write, 0, 4096));
        assert_eq!(b.seen.len(), 2, "{:?}", b.seen);
        b.seen.clear();
        assert!(b.io(Op::Read, 0, 4096));
        assert_eq!(b.seen.len(), 1, "{:?}", b.seen);
    }

    /// RAID 5 over four, member 1 missing (left-symmetric: stripe 0 has
    /// data on 0, 1, 2 and parity on 3).
    fn degraded_raid5() -> Bench {
        let mut b = Bench::new(Level::Raid5, 4);
        b.array.degrade(vec![false, true, false, false], None);
        b
    }

    #[test]
    fn degraded_raid5_reads_rebuild_and_writes_skip_the_missing_member() {
        let mut b = degraded_raid5();
        // A read of the lost chunk: the same range on the three others.
        assert!(b.io(Op::Read, CHUNK, 4096));
        let mut m: Vec<usize> = b.seen.iter().map(|s| s.0).collect();
        m.sort_unstable();
        assert_eq!(m, [0, 2, 3], "{:?}", b.seen);
        // A write to the lost chunk: reconstruct-write from the other data
        // (0 and 2), then parity alone.
        b.seen.clear();
        assert!(b.io(Op::Write, CHUNK, 4096));
        let reads: Vec<usize> = b
            .seen
            .iter()
            .filter(|s| s.1 == Op::Read)
            .map(|s| s.0)
            .collect();
        let writes: Vec<usize> = b
            .seen
            .iter()
            .filter(|s| s.1 == Op::Write)
            .map(|s| s.0)
            .collect();
        assert_eq!(
            (reads.len(), writes.as_slice()),
            (2, &[3][..]),
            "{:?}",
            b.seen
        );
        assert!(!reads.contains(&1) && !reads.contains(&3));
        // A write elsewhere never touches member 1.
        b.seen.clear();
        assert!(b.io(Op::Write, 0, 4096));
        assert!(b.seen.iter().all(|s| s.0 != 1), "{:?}", b.seen);
    }

    #[test]
    fn with_parity_missing_a_raid5_write_is_the_data_alone() {
        let mut b = Bench::new(Level::Raid5, 4);
        b.array.degrade(vec![false, false, false, true], None);
        assert!(b.io(Op::Write, 0, 4096));
        assert_eq!(b.seen, [(0, Op::Write, 0, 4096)]);
    }
}
