//! The event engine: clock, event queue, request slab and shared resources.
//!
//! Events are ordered by (time, sequence number), so equal-time events run in
//! the order they were scheduled and every run is exactly repeatable.
//! Zero-delay hand-offs between components (a controller submitting to a
//! drive, a drive completing to its parent) go through a FIFO of calls
//! instead of the event queue.

use raidlab_core::units::Ns;
use std::hint::select_unpredictable;

/// Declare an id: a `u32` index that only indexes what it names. Its field
/// is this module's own: requests' and pools' ids come only from their
/// allocators here, components' from the arena's slots (`CompId::nth`);
/// nothing else can make one up from a bare integer.
macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(transparent)]
        pub struct $name(u32);

        impl $name {
            /// The id as an index into its table.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// Index of a request in the slab.
    ReqId
);
id!(
    /// Index of a component in the arena.
    CompId
);
id!(
    /// Index of a shared resource pool.
    PoolId
);

impl CompId {
    /// The host: the arena's first component.
    pub(crate) const HOST: CompId = CompId(0);
    /// No component (a failed member's place, a queue's sentinel).
    pub(crate) const NONE: CompId = CompId(u32::MAX);

    /// The id of the arena's `i`-th component; only the builder, which
    /// owns the arena, and unit tests' hand-built arenas name slots.
    pub(crate) fn nth(i: usize) -> CompId {
        assert!(
            i < u32::MAX as usize,
            "component arena slot {i} out of range"
        );
        CompId(i as u32)
    }
}

impl PoolId {
    /// No pool: a request's command work is paid by the component handling
    /// it.
    pub const NONE: PoolId = PoolId(u32::MAX);
}

/// No request (a host I/O has no parent).
pub const NONE: ReqId = ReqId(u32::MAX);

/// Direction of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Make the data written so far durable (ATA FLUSH CACHE, SCSI
    /// SYNCHRONIZE CACHE, a block-layer preflush); offset and length are
    /// not used.
    Flush,
}

/// A request travelling through the component tree.
#[derive(Debug, Clone, Copy)]
pub struct Req {
    /// Byte offset in the address space of the component handling it.
    pub offset: u64,
    /// Bytes.
    pub len: u32,
    /// Direction.
    pub op: Op,
    /// Parent request (`NONE` for host I/Os).
    pub parent: ReqId,
    /// Children still outstanding.
    pub pending: u32,
    /// Component handling the request.
    pub comp: CompId,
    /// Time the request was issued, or the earliest time the component
    /// handling it may start on it: a controller's RoC hands on requests with
    /// the time its command processing ends, its flush task destages with the
    /// time it has prepared them.
    pub t0: Ns,
    /// The creator's word: set by the component that creates the request,
    /// read back by it when the request completes. Its meaning is that
    /// component's, behind a named accessor there: the host's job
    /// (`host::job_of`), an array's member (`array::member_of`), a
    /// controller's read-ahead window (`controller::window_of`).
    pub creator_word: u32,
    /// Pool that pays for the command work the request causes in the
    /// component handling it (an array's member commands); `NONE`: that
    /// component's own (the RoC or the host CPU).
    pub cost_pool: PoolId,
    /// The handler's word: state the component handling the request keeps
    /// with it, behind a named accessor there: an array's plan
    /// (`array::plan_of`), a controller's destage slot
    /// (`controller::destage_slot`), an SSD's data transfer span
    /// (`ssd::xfer_span`).
    pub handler_word: u32,
    /// Private to the component handling the request: the code of its own
    /// `Phase` enum (`array.rs`, `controller.rs`, `hdd.rs`), 0 when new.
    pub phase: u8,
}

impl Req {
    /// A request with no parent, handled by `comp` from `t0`, its command
    /// work paid by `comp` itself, every private word zero.
    pub fn new(offset: u64, len: u32, op: Op, comp: CompId, t0: Ns) -> Req {
        Req {
            offset,
            len,
            op,
            parent: NONE,
            pending: 0,
            comp,
            t0,
            creator_word: 0,
            cost_pool: PoolId::NONE,
            handler_word: 0,
            phase: 0,
        }
    }
}

/// Declare a component's timed events: an enum whose variants travel
/// through the event queue as one byte, and `from_code` to get the variant
/// back. An unknown code is a bug of the simulator and panics (index out of
/// bounds) instead of falling into some other arm.
macro_rules! events {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum $name {
            $($(#[$vm])* $v),+
        }

        impl $name {
            const ALL: &'static [$name] = &[$($name::$v),+];

            /// The event a queue entry's code stands for.
            #[inline]
            pub(crate) fn from_code(code: u8) -> Self {
                Self::ALL[code as usize]
            }
        }

        impl From<$name> for u8 {
            #[inline]
            fn from(e: $name) -> u8 {
                e as u8
            }
        }
    };
}
pub(crate) use events;

/// Request slab with a free list; ids are reused, so runs stay compact.
#[derive(Default)]
pub struct Slab {
    reqs: Vec<Req>,
    free: Vec<ReqId>,
}

impl Slab {
    /// Store a request, returning its id.
    #[inline]
    pub fn alloc(&mut self, r: Req) -> ReqId {
        if let Some(id) = self.free.pop() {
            self.reqs[id.index()] = r;
            id
        } else {
            self.reqs.push(r);
            ReqId((self.reqs.len() - 1) as u32)
        }
    }
    /// Release a request id.
    #[inline]
    pub fn release(&mut self, id: ReqId) {
        self.free.push(id);
    }
    /// Live requests.
    pub fn live(&self) -> usize {
        self.reqs.len() - self.free.len()
    }
}

/// A device's command queue (SATA NCQ, SAS TCQ): at most `depth` commands
/// in the device; more wait in arrival order until one completes.
#[derive(Debug, Clone)]
pub struct CmdQueue {
    depth: u32,
    outstanding: u32,
    waiting: std::collections::VecDeque<ReqId>,
}

impl CmdQueue {
    /// An empty queue admitting `depth` commands (at least one).
    pub fn new(depth: u32) -> Self {
        CmdQueue {
            depth: depth.max(1),
            outstanding: 0,
            waiting: std::collections::VecDeque::new(),
        }
    }

    /// Command `id` arrives: `true` if the device takes it now, `false` if
    /// it waits for a slot.
    #[inline]
    pub fn admit(&mut self, id: ReqId) -> bool {
        if self.outstanding >= self.depth {
            self.waiting.push_back(id);
            return false;
        }
        self.outstanding += 1;
        true
    }

    /// A command completed: the waiting command that takes its slot, if any.
    #[inline]
    pub fn complete(&mut self) -> Option<ReqId> {
        debug_assert!(self.outstanding > 0, "a completion without a command");
        self.outstanding -= 1;
        let next = self.waiting.pop_front()?;
        self.outstanding += 1;
        Some(next)
    }

    /// Commands in the device.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// Assert the queue's invariant: never more commands than its depth,
    /// and none waiting while a slot is free.
    pub fn check(&self, who: &str) {
        assert!(
            self.outstanding <= self.depth,
            "{who}: {} commands in a queue of {}",
            self.outstanding,
            self.depth
        );
        assert!(
            self.waiting.is_empty() || self.outstanding == self.depth,
            "{who}: commands wait while a slot is free"
        );
    }
}

impl std::ops::Index<ReqId> for Slab {
    type Output = Req;
    #[inline]
    fn index(&self, i: ReqId) -> &Req {
        &self.reqs[i.index()]
    }
}
impl std::ops::IndexMut<ReqId> for Slab {
    #[inline]
    fn index_mut(&mut self, i: ReqId) -> &mut Req {
        &mut self.reqs[i.index()]
    }
}

/// `k` identical FIFO servers (CPU cores, a link, a DMA engine). A job
/// reserved at time `now` starts on the server that frees first; jobs are
/// served in the order they are reserved, which is arrival order because
/// the engine processes events in time order.
#[derive(Debug, Clone)]
pub struct Pool {
    /// When each server is free again, in ascending order. The servers are
    /// identical, so only the multiset of these times matters: keeping it
    /// sorted finds a server by binary search instead of a scan (a host
    /// profile has up to 192 cores, reserved on every I/O).
    free_at: Vec<Ns>,
    /// Total busy time reserved so far, summed over servers.
    pub busy: Ns,
}

impl Pool {
    /// A pool of `k` servers.
    pub fn new(k: u32) -> Self {
        Pool {
            free_at: vec![0; k.max(1) as usize],
            busy: 0,
        }
    }
    /// Servers.
    pub fn servers(&self) -> usize {
        self.free_at.len()
    }
    /// Reserve `dur` starting no earlier than `now`; returns the finish time.
    ///
    /// Best fit: the server that frees latest while still by `now` (so a
    /// reservation for a later start does not hold a server that is free
    /// earlier), else the one that frees first.
    #[inline]
    pub fn reserve(&mut self, now: Ns, dur: Ns) -> Ns {
        self.busy += dur;
        let v = &mut self.free_at;
        if v.len() == 1 {
            let s = v[0].max(now);
            v[0] = s + dur;
            return s + dur;
        }
        let best = if v[0] > now {
            // Every server busy (a saturated drive's firmware cores): the
            // first to free takes the job.
            0
        } else {
            // Busy servers sit at the end, and there are usually few of them
            // (a big host's cores mostly idle): look back from the end a
            // little before searching the whole.
            let mut idle = v.len();
            let floor = idle.saturating_sub(SCAN_BACK);
            while idle > floor && v[idle - 1] > now {
                idle -= 1;
            }
            if idle == floor && v[idle - 1] > now {
                idle = v[..idle].partition_point(|&f| f <= now);
            }
            idle - 1
        };
        let end = v[best].max(now) + dur;
        // The new time is no earlier than the old: move it right past the
        // times below it, keeping the order (usually few: a shift loop, not
        // a call to memmove).
        let mut i = best;
        while i + 1 < v.len() && v[i + 1] < end {
            v[i] = v[i + 1];
            i += 1;
        }
        v[i] = end;
        debug_assert!(v.windows(2).all(|w| w[0] <= w[1]), "free times stay sorted");
        end
    }
    /// Earliest time a server is free.
    pub fn next_free(&self) -> Ns {
        self.free_at[0]
    }
}

/// Servers [`Pool::reserve`] looks at from the end of its sorted free
/// times before it searches them all (a measured choice, not a model
/// parameter: it changes speed only, never which server is chosen).
const SCAN_BACK: usize = 8;

/// A single FIFO server (a NAND die, a channel, a drive link).
#[derive(Debug, Clone, Copy, Default)]
pub struct Server {
    /// Time the server is free again.
    pub free_at: Ns,
    /// Total busy time reserved.
    pub busy: Ns,
}

impl Server {
    /// Reserve `dur` starting no earlier than `now`; returns the finish time.
    #[inline]
    pub fn reserve(&mut self, now: Ns, dur: Ns) -> Ns {
        let s = self.free_at.max(now);
        self.free_at = s + dur;
        self.busy += dur;
        s + dur
    }
}

/// A scheduled event: ordered by time, then by the order of scheduling.
/// `key` packs the time (high 64 bits) over the sequence number and kind.
#[derive(Debug, Clone, Copy)]
struct Ev {
    key: u128,
    comp: CompId,
    req: ReqId,
}

/// Binary min-heap of events. Keys are unique (the sequence number), so
/// events leave in key order whatever the heap's shape.
struct Heap {
    v: Vec<Ev>,
}

impl Heap {
    fn new() -> Self {
        Heap { v: Vec::new() }
    }

    #[inline]
    fn push(&mut self, e: Ev) {
        let i = self.v.len();
        self.v.push(e);
        self.sift_up(i, e);
    }

    /// Put `e` in the hole at `i`, moving it up past larger parents.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Ev) {
        let v = &mut self.v[..];
        while i > 0 {
            let p = (i - 1) / 2;
            if v[p].key <= e.key {
                break;
            }
            v[i] = v[p];
            i = p;
        }
        v[i] = e;
    }

    /// Pop the least event. The hole at the root goes down to a leaf along
    /// the lesser children (one comparison a level, made with a conditional
    /// move: which child wins is data, not a pattern a branch can learn),
    /// then the last event fills it from there, usually without moving up.
    #[inline]
    fn pop(&mut self) -> Option<Ev> {
        let last = self.v.pop()?;
        let Some(&top) = self.v.first() else {
            return Some(last);
        };
        let v = &mut self.v[..];
        let n = v.len();
        let mut i = 0;
        loop {
            let c = 2 * i + 1;
            if c + 1 < n {
                let m = select_unpredictable(v[c + 1].key < v[c].key, c + 1, c);
                v[i] = v[m];
                i = m;
            } else {
                if c < n {
                    v[i] = v[c];
                    i = c;
                }
                break;
            }
        }
        self.sift_up(i, last);
        Some(top)
    }

    fn first_key(&self) -> Option<u128> {
        self.v.first().map(|e| e.key)
    }
}

/// log2 of a calendar bucket's width in ns to start with (16.4 us), and
/// the narrowest and widest the queue adapts to (1 us to 65.5 us). The
/// width only changes how fast the queue runs, never the order events
/// leave it (by key, whatever the ring's shape): an NVMe array at a
/// million IOPS has an event every quarter microsecond and fills wide
/// buckets past their [`SLOTS`] places, while an X25-E's queued reads lie
/// hundreds of microseconds ahead and fall past a narrow ring's horizon;
/// either way they go to the far heap, which is slower. The queue counts
/// both over [`ADAPT_EVERY`] pushes and, by one step when one kind of
/// overflow passes a quarter of them, takes more and narrower buckets or
/// widens them (see [`Shape`]).
const START_SHIFT: u32 = 14;
const MIN_SHIFT: u32 = 10;
const MAX_SHIFT: u32 = 16;
/// Pushes between two looks at the overflow counts.
const ADAPT_EVERY: u32 = 1 << 16;
/// Looks a width is kept after a step that did not lower the overflow
/// was taken back (so two widths that overflow alike do not alternate).
const HOLD_WINDOWS: u32 = 16;
/// Calendar buckets at the most, one bit each of the occupancy words.
/// Longer delays (queues behind GC, erases, disk seeks, think times) wait
/// in the far heap. The ring holds as many events as a deep NVMe array
/// keeps in flight (1,024 host requests, each with its completion ahead of
/// the clock): at 64 buckets, a quarter of its pushes overflowed full
/// buckets into the far heap, and popping that heap took a fifth of the
/// run. A ring of 1,024 buckets missed the cache on most pushes and gained
/// nothing; rings of 16 KiB (64 buckets) run a SATA drive's few queued
/// events fastest, so the ring starts at that and grows only where events
/// crowd it ([`Shape`]).
const BUCKETS: usize = 256;
/// Words of the occupancy bitmap.
const WORDS: usize = BUCKETS / u64::BITS as usize;
const _: () = assert!(BUCKETS.is_power_of_two() && WORDS >= 1);

/// Events a calendar bucket holds in place; more go to the far heap.
const SLOTS: usize = 8;
const _: () = assert!(SLOTS < 256);

/// The calendar ring's shape: log2 of a bucket's width in ns, and how many
/// of the [`BUCKETS`] are in use (a power of two from [`MIN_SPAN`]). The
/// shape only changes how fast the queue runs, never the order events
/// leave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    shift: u32,
    span: usize,
}

/// Buckets in use at the least: one occupancy word.
const MIN_SPAN: usize = u64::BITS as usize;
const _: () = assert!(MIN_SPAN <= BUCKETS);

impl Shape {
    const START: Shape = Shape {
        shift: START_SHIFT,
        span: MIN_SPAN,
    };

    /// Twice the buckets at half the width (the same horizon), or, all in
    /// use, narrower ones.
    fn denser(self) -> Shape {
        if self.span < BUCKETS && self.shift > MIN_SHIFT {
            Shape {
                shift: self.shift - 1,
                span: self.span * 2,
            }
        } else {
            Shape {
                shift: self.shift.saturating_sub(1).max(MIN_SHIFT),
                ..self
            }
        }
    }

    /// Wider buckets, as many.
    fn wider(self) -> Shape {
        Shape {
            shift: (self.shift + 1).min(MAX_SHIFT),
            ..self
        }
    }
}

/// Which of the ring's buckets hold events: one bit each.
#[derive(Debug, Clone, Copy, Default)]
struct Occupancy([u64; WORDS]);

impl Occupancy {
    #[inline]
    fn set(&mut self, i: usize) {
        self.0[(i / 64) % WORDS] |= 1 << (i % 64);
    }

    #[inline]
    fn clear(&mut self, i: usize) {
        self.0[(i / 64) % WORDS] &= !(1 << (i % 64));
    }

    /// The first set bit at or after `start` among the first `span` bits
    /// (a power of two, a whole number of words), going round from the last
    /// of them to the first; `None` when none is set.
    #[inline]
    fn first_from(&self, start: usize, span: usize) -> Option<usize> {
        if span == 64 {
            // One word (the ring's usual shape): rotated to start at
            // `start`, its lowest set bit is the one.
            let w = self.0[0];
            let ahead = w.rotate_right(start as u32).trailing_zeros() as usize;
            return (w != 0).then_some((start + ahead) % 64);
        }
        let w0 = (start / 64) % WORDS;
        let rest = self.0[w0] >> (start % 64);
        if rest != 0 {
            return Some(start + rest.trailing_zeros() as usize);
        }
        // The words after `w0`, going round (back to `w0` itself, whose low
        // bits are then the last ahead).
        let words = span / 64;
        (1..=words)
            .map(|k| (w0 + k) & (words - 1))
            .find(|&w| self.0[w] != 0)
            .map(|w| w * 64 + self.0[w].trailing_zeros() as usize)
    }
}

/// One calendar bucket's events: their keys apart from what they are about,
/// so that finding the least reads two cache lines, not four.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    keys: [u128; SLOTS],
    /// Each event's component and request, beside its key.
    about: [(CompId, ReqId); SLOTS],
}

/// Calendar queue of events (Brown 1988): a ring of time buckets over the
/// next [`BUCKETS`] bucket widths, each a small unsorted array kept in place,
/// with a bitmap whose bits mark the non-empty ones; events further ahead
/// (or beyond a full bucket) wait in a binary heap. The simulated clock only
/// moves forward, so every event in the ring lies in the window that starts
/// at the clock's bucket, and the first non-empty bucket from there holds the
/// earliest ring event. Pushing costs a few instructions, and popping a
/// bit count of a bitmap word or two and a look through one bucket, usually
/// of one or two events, instead of a heap's log n levels.
struct EventQueue {
    buckets: [Bucket; BUCKETS],
    lens: [u8; BUCKETS],
    /// Bit `i`: bucket `i` holds an event.
    bits: Occupancy,
    /// Absolute bucket number of the clock (the last event popped).
    base: u64,
    /// The clock: the time of the last event popped, ns.
    clock: u64,
    /// The buckets' width and how many of them are in use.
    shape: Shape,
    /// Since the last look: pushes, and those that went to the far heap
    /// for a full bucket or for lying past the ring's horizon.
    pushes: u32,
    full: u32,
    beyond: u32,
    /// Whether the last look changed the shape, from `before_shape`, when
    /// `before` pushes overflowed; windows to keep the shape unchanged.
    moved: bool,
    before: u32,
    before_shape: Shape,
    hold: u32,
    far: Heap,
}

impl EventQueue {
    fn new() -> Self {
        EventQueue {
            buckets: [Bucket {
                keys: [0; SLOTS],
                about: [(CompId(0), ReqId(0)); SLOTS],
            }; BUCKETS],
            lens: [0; BUCKETS],
            bits: Occupancy::default(),
            base: 0,
            clock: 0,
            shape: Shape::START,
            pushes: 0,
            full: 0,
            beyond: 0,
            moved: false,
            before: 0,
            before_shape: Shape::START,
            hold: 0,
            far: Heap::new(),
        }
    }

    /// Every [`ADAPT_EVERY`] pushes: when full buckets sent more than a
    /// quarter of the pushes to the far heap, use twice the buckets at half
    /// the width (or narrow them, all in use); widen them when the horizon
    /// did. The ring starts with one occupancy word of buckets, which keeps
    /// the few events of a SATA drive's queue in few cache lines, and grows
    /// only where events crowd it. The ring's events move to the far heap
    /// (they leave it in key order all the same) and the ring restarts at
    /// the clock in its new shape.
    #[cold]
    fn adapt(&mut self) {
        let quarter = self.pushes / 4;
        let overflow = self.full + self.beyond;
        let now = self.shape;
        let shape = if self.hold > 0 {
            self.hold -= 1;
            now
        } else if self.moved && overflow >= self.before {
            // The last step did not help: step back and stay a while.
            self.hold = HOLD_WINDOWS;
            self.before_shape
        } else if self.full > quarter && self.beyond <= quarter {
            now.denser()
        } else if self.beyond > quarter && self.full <= quarter {
            now.wider()
        } else {
            now
        };
        self.moved = shape != now && self.hold == 0;
        (self.before, self.before_shape) = (overflow, now);
        (self.pushes, self.full, self.beyond) = (0, 0, 0);
        if shape == now {
            return;
        }
        for i in 0..BUCKETS {
            for k in 0..self.lens[i] as usize {
                let (comp, req) = self.buckets[i].about[k];
                self.far.push(Ev {
                    key: self.buckets[i].keys[k],
                    comp,
                    req,
                });
            }
            self.lens[i] = 0;
        }
        self.bits = Occupancy::default();
        debug_assert!(
            shape.span.is_power_of_two() && (MIN_SPAN..=BUCKETS).contains(&shape.span),
            "the buckets in use are a power of two from one word to all: {shape:?}"
        );
        self.shape = shape;
        self.base = self.clock >> shape.shift;
    }

    /// Queue event `(key, comp, req)`. The fields come as scalars, in
    /// registers. A 32-byte `Ev` argument is passed in memory instead: the
    /// caller writes it to its stack as 8- and 4-byte stores and this reads
    /// it back as 16-byte loads, which the CPU cannot forward from the store
    /// buffer, so each push waited for every store before it (the FTL's
    /// scattered map updates among them) to reach the cache.
    #[inline]
    fn push(&mut self, key: u128, comp: CompId, req: ReqId) {
        let e = Ev { key, comp, req };
        let b = ((e.key >> 64) as u64) >> self.shape.shift;
        debug_assert!(b >= self.base, "events are never scheduled in the past");
        // The span is at most BUCKETS: the constant mask costs nothing and
        // spares the bounds checks.
        let i = (b as usize & (self.shape.span - 1)) % BUCKETS;
        let n = self.lens[i] as usize;
        let near = b - self.base < self.shape.span as u64;
        if near && n < SLOTS {
            self.buckets[i].keys[n] = key;
            self.buckets[i].about[n] = (comp, req);
            self.lens[i] = n as u8 + 1;
            self.bits.set(i);
        } else {
            self.far.push(e);
            if near {
                self.full += 1;
            } else {
                self.beyond += 1;
            }
        }
        self.pushes += 1;
        if self.pushes == ADAPT_EVERY {
            self.adapt();
        }
    }

    /// The first non-empty ring bucket at or after the clock's, in ring
    /// order; `None` when the ring is empty.
    #[inline]
    fn first_bucket(&self) -> Option<usize> {
        let span = self.shape.span;
        let b = self
            .bits
            .first_from(self.base as usize & (span - 1), span)?;
        Some(b % BUCKETS)
    }

    /// The least key queued, without taking it: the first bucket's least,
    /// unless the far heap holds a lesser one (as [`EventQueue::pop`]
    /// chooses).
    fn first_key(&self) -> Option<u128> {
        let far = self.far.first_key();
        let Some(b) = self.first_bucket() else {
            return far;
        };
        let near = self.buckets[b].keys[..self.lens[b] as usize]
            .iter()
            .copied()
            .min();
        match (near, far) {
            (Some(n), Some(f)) => Some(n.min(f)),
            (n, f) => n.or(f),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Ev> {
        let e = if let Some(b) = self.first_bucket() {
            let n = self.lens[b] as usize;
            let Bucket { keys, about } = &mut self.buckets[b];
            let mut j = 0;
            for k in 1..n {
                j = select_unpredictable(keys[k] < keys[j], k, j);
            }
            if self.far.first_key().is_some_and(|f| f < keys[j]) {
                self.far.pop()?
            } else {
                let (comp, req) = about[j];
                let e = Ev {
                    key: keys[j],
                    comp,
                    req,
                };
                keys[j] = keys[n - 1];
                about[j] = about[n - 1];
                self.lens[b] = n as u8 - 1;
                if n == 1 {
                    self.bits.clear(b);
                }
                e
            }
        } else {
            self.far.pop()?
        };
        self.clock = (e.key >> 64) as u64;
        self.base = self.clock >> self.shape.shift;
        Some(e)
    }
}

/// A deferred zero-delay call between components.
#[derive(Debug, Clone, Copy)]
pub enum Call {
    /// `comp` receives request `req`.
    Submit(CompId, ReqId),
    /// Child `child` of `parent` (handled by `comp`) finished.
    ChildDone(CompId, ReqId, ReqId),
    /// A hint: `comp` will soon be asked for the data at byte `offset`, so
    /// it may start loading what it looks up for that into the CPU cache.
    /// It changes no state of the simulation.
    Advise(CompId, u64),
}

/// A [`Call`] as the call FIFO stores it: two 8-byte words, written with
/// two 8-byte stores and read back with two 8-byte loads, so the CPU forwards
/// each load from its store. Stored as the enum, a call came back as an
/// 8-byte load over fields written by 4-byte stores (or not written at all,
/// for a `Submit`), which cannot be forwarded: the load then waited for every
/// older store (the FTL's scattered map updates among them) to reach the
/// cache.
#[derive(Clone, Copy)]
struct PackedCall {
    /// Kind (low 32 bits) and component (high 32 bits).
    head: u64,
    /// The request; parent (low) and child (high); or the byte offset.
    body: u64,
}

const CALL_SUBMIT: u64 = 0;
const CALL_CHILD_DONE: u64 = 1;
const CALL_ADVISE: u64 = 2;

impl PackedCall {
    #[inline]
    fn new(kind: u64, comp: CompId, body: u64) -> Self {
        PackedCall {
            head: kind | (comp.0 as u64) << 32,
            body,
        }
    }

    #[inline]
    fn unpack(self) -> Call {
        let comp = CompId((self.head >> 32) as u32);
        match self.head as u32 as u64 {
            CALL_SUBMIT => Call::Submit(comp, ReqId(self.body as u32)),
            CALL_CHILD_DONE => Call::ChildDone(
                comp,
                ReqId(self.body as u32),
                ReqId((self.body >> 32) as u32),
            ),
            _ => Call::Advise(comp, self.body),
        }
    }
}

/// Everything components share: clock, queue, requests, pools.
pub struct Ctx {
    /// Current simulated time.
    pub now: Ns,
    seq: u64,
    queue: EventQueue,
    /// Pending calls, taken in order from `call_head`; reset when all are taken.
    calls: Vec<PackedCall>,
    call_head: usize,
    /// Requests.
    pub reqs: Slab,
    /// Shared resource pools (host CPU is pool 0).
    pub pools: Vec<Pool>,
    /// Each submitting thread's next free time: a fio job is one thread,
    /// so its own CPU work runs one piece at a time on one core.
    pub threads: Vec<Ns>,
    /// Each submitting thread's busy time so far.
    pub thread_busy: Vec<Ns>,
    /// Events processed.
    pub events: u64,
}

/// Pool id of the host CPU.
pub const HOST_CPU: PoolId = PoolId(0);

impl Ctx {
    /// A fresh context with the host CPU pool.
    pub fn new(host_cores: u32) -> Self {
        Ctx {
            now: 0,
            seq: 0,
            queue: EventQueue::new(),
            calls: Vec::with_capacity(64),
            call_head: 0,
            reqs: Slab::default(),
            pools: vec![Pool::new(host_cores)],
            threads: Vec::new(),
            thread_busy: Vec::new(),
            events: 0,
        }
    }

    /// Add a pool, returning its id.
    pub fn add_pool(&mut self, k: u32) -> PoolId {
        self.pools.push(Pool::new(k));
        PoolId((self.pools.len() - 1) as u32)
    }

    /// When a server of pool `p` is next free.
    pub fn pool_free_at(&self, p: PoolId) -> Ns {
        self.pools[p.index()].next_free()
    }

    /// Reserve `dur` on pool `p` from `at`.
    #[inline]
    pub fn reserve(&mut self, p: PoolId, at: Ns, dur: Ns) -> Ns {
        self.pools[p.index()].reserve(at, dur)
    }

    /// Reserve `dur` of submitting thread `thread`'s work on pool `p` from
    /// `at`: it starts once both the thread and a server of the pool are
    /// free, and the thread is busy until it ends. Work of a thread no host
    /// job started (a request a test hands a component directly) needs
    /// only the pool.
    #[inline]
    pub fn reserve_on_thread(&mut self, thread: usize, p: PoolId, at: Ns, dur: Ns) -> Ns {
        let Some(free) = self.threads.get(thread).copied() else {
            return self.reserve(p, at, dur);
        };
        let end = self.reserve(p, at.max(free), dur);
        self.threads[thread] = end;
        self.thread_busy[thread] += dur;
        end
    }

    /// Schedule event `kind` for `comp` about `req` at time `at` (≥ now).
    #[inline]
    pub fn schedule(&mut self, at: Ns, comp: CompId, req: ReqId, kind: impl Into<u8>) {
        let kind = kind.into();
        debug_assert!(at >= self.now);
        self.seq += 1;
        // Low 8 bits of the key carry the kind; the sequence number above them
        // keeps equal-time events in scheduling order.
        let key = (at as u128) << 64 | (self.seq as u128) << 8 | kind as u128;
        self.queue.push(key, comp, req);
    }

    /// A request issued for later (a controller's flush task hands on a
    /// destage with the time it has prepared it) reaches a device then: if
    /// `req`'s not-before time is still ahead, schedule event `kind` for
    /// `comp` at that time and return true.
    #[inline]
    pub fn arrives_later(&mut self, comp: CompId, req: ReqId, kind: impl Into<u8>) -> bool {
        let t0 = self.reqs[req].t0;
        if t0 > self.now {
            self.schedule(t0, comp, req, kind);
            true
        } else {
            false
        }
    }

    /// Hand `req` to `comp` now.
    #[inline]
    pub fn submit(&mut self, comp: CompId, req: ReqId) {
        self.reqs[req].comp = comp;
        self.calls
            .push(PackedCall::new(CALL_SUBMIT, comp, req.0 as u64));
    }

    /// Tell `comp` it will soon be asked for the data at byte `offset` (see
    /// [`Call::Advise`]).
    #[inline]
    pub fn advise(&mut self, comp: CompId, offset: u64) {
        if crate::table::hints() {
            self.calls.push(PackedCall::new(CALL_ADVISE, comp, offset));
        }
    }

    /// `req` is finished: tell whoever handles its parent (or the host).
    #[inline]
    pub fn complete(&mut self, req: ReqId, host: CompId) {
        let parent = self.reqs[req].parent;
        let comp = if parent == NONE {
            host
        } else {
            self.reqs[parent].comp
        };
        self.calls.push(PackedCall::new(
            CALL_CHILD_DONE,
            comp,
            parent.0 as u64 | (req.0 as u64) << 32,
        ));
    }

    /// When the next thing happens: now while calls are pending, else the
    /// earliest event's time (`None`: nothing is left).
    pub fn next_time(&self) -> Option<Ns> {
        if self.call_head < self.calls.len() {
            return Some(self.now);
        }
        self.queue.first_key().map(|k| (k >> 64) as Ns)
    }

    /// Next thing to do: a pending call first, else the earliest event
    /// (advancing the clock). `None` when nothing is left.
    #[inline]
    pub fn next_step(&mut self) -> Option<Next> {
        if let Some(&c) = self.calls.get(self.call_head) {
            self.call_head += 1;
            return Some(Next::Call(c.unpack()));
        }
        self.calls.clear();
        self.call_head = 0;
        let Ev { key, comp, req } = self.queue.pop()?;
        self.now = (key >> 64) as Ns;
        self.events += 1;
        Some(Next::Event(comp, req, key as u8))
    }
}

impl Ctx {
    /// Put back event `kind` for `comp` about `req`, which the event loop
    /// has just taken and its watcher stopped at (so it was not handed
    /// on): at the head of the queue, ahead of every other event of this
    /// time as it was (sequence number 0, which no scheduled event has),
    /// and not counted twice. A run that goes on after a stop (a job
    /// file's next phase) then misses nothing.
    pub fn put_back(&mut self, comp: CompId, req: ReqId, kind: u8) {
        debug_assert!(
            self.calls.len() == self.call_head,
            "no call is pending at a stop"
        );
        let key = (self.now as u128) << 64 | kind as u128;
        self.queue.push(key, comp, req);
        self.events -= 1;
    }
}

/// What [`Ctx::next_step`] returns.
#[derive(Debug)]
pub enum Next {
    /// A zero-delay call.
    Call(Call),
    /// A timed event: component, request, kind.
    Event(CompId, ReqId, u8),
}

/// Nanoseconds to move `bytes` at `mbps` (10^6 B/s).
#[inline]
pub fn xfer_ns(bytes: u64, mbps: f64) -> Ns {
    ns(bytes as f64 * 1000.0 / mbps)
}

/// A non-negative duration in ns (f64) to [`Ns`], truncated. Same result as
/// `x as Ns` for every value below 2^63 ns (292 years), but converted
/// through `i64`, which x86-64 does in one instruction (it has no unsigned
/// conversion before AVX-512).
#[inline]
pub fn ns(x: f64) -> Ns {
    debug_assert!(x >= 0.0, "durations are not negative");
    x as i64 as Ns
}

/// Microseconds (f64) to ns.
#[inline]
pub fn us(x: f64) -> Ns {
    (x * 1000.0).round() as Ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_queue_admits_its_depth_and_then_serves_in_arrival_order() {
        let mut q = CmdQueue::new(2);
        let r = ReqId;
        assert!(q.admit(r(10)) && q.admit(r(11)));
        assert!(!q.admit(r(12)) && !q.admit(r(13)), "full: they wait");
        q.check("q");
        assert_eq!(
            q.complete(),
            Some(r(12)),
            "the first to wait takes the slot"
        );
        assert_eq!(q.complete(), Some(r(13)));
        assert_eq!(q.outstanding(), 2);
        assert_eq!(q.complete(), None);
        assert_eq!(q.complete(), None);
        assert_eq!(q.outstanding(), 0);
        q.check("q");
        assert!(CmdQueue::new(0).admit(r(1)), "a queue admits at least one");
    }

    #[test]
    fn pool_is_fifo_per_server_and_picks_earliest() {
        let mut q = Pool::new(2);
        assert_eq!(q.reserve(0, 55), 55);
        assert_eq!(
            q.reserve(55, 20),
            75,
            "future work goes to the server free by then"
        );
        assert_eq!(
            q.reserve(10, 55),
            65,
            "the other server stayed free for earlier work"
        );
        let mut p = Pool::new(2);
        assert_eq!(p.reserve(0, 10), 10);
        assert_eq!(p.reserve(0, 10), 10);
        assert_eq!(p.reserve(0, 10), 20);
        assert_eq!(p.reserve(100, 5), 105);
        assert_eq!(p.busy, 35);
    }

    fn ev(key: u128) -> Ev {
        Ev {
            key,
            comp: CompId(0),
            req: ReqId(0),
        }
    }

    /// Pop one event and check it is the reference's least; returns its key.
    fn pop_checked(
        pop: &mut impl FnMut() -> Option<Ev>,
        reference: &mut std::collections::BTreeSet<u128>,
    ) -> Option<u128> {
        let want = reference.pop_first();
        let got = pop().map(|e| e.key);
        assert_eq!(got, want, "pop returns the minimum");
        got
    }

    /// Pop until both are empty, checking the order.
    fn drain_checked(
        mut pop: impl FnMut() -> Option<Ev>,
        mut reference: std::collections::BTreeSet<u128>,
    ) {
        while pop_checked(&mut pop, &mut reference).is_some() {}
    }

    #[test]
    fn heap_pops_in_key_order() {
        // Keys in any order (the heap does not rely on a clock).
        let mut q = Heap::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut rng = raidlab_core::rng::Rng::new(11);
        for round in 0..3000u64 {
            for _ in 0..rng.below(5) {
                let key =
                    ((round + rng.below(1000)) as u128) << 64 | (round * 8 + rng.below(8)) as u128;
                if reference.insert(key) {
                    q.push(ev(key));
                }
            }
            if rng.below(3) > 0 {
                pop_checked(&mut || q.pop(), &mut reference);
            }
        }
        drain_checked(|| q.pop(), reference);
    }

    #[test]
    fn calendar_pops_in_key_order() {
        // Delays from zero (same bucket, same time) through the ring's
        // horizon and past it (far heap), with the clock wrapping the ring
        // many times; checked against an ordered set.
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut rng = raidlab_core::rng::Rng::new(12);
        let horizon = (MIN_SPAN as u64) << START_SHIFT;
        let mut now = 0u64;
        let mut seq = 0u64;
        for _ in 0..20_000 {
            for _ in 0..rng.below(4) {
                let delay = match rng.below(6) {
                    0 => 0,
                    1 => rng.below(1 << START_SHIFT),
                    2 => rng.below(20_000),
                    3 => rng.below(horizon),
                    4 => horizon - 1 + rng.below(3 << START_SHIFT),
                    _ => rng.below(5 * horizon),
                };
                seq += 1;
                let key = ((now + delay) as u128) << 64 | (seq as u128) << 8;
                reference.insert(key);
                q.push(key, CompId(0), ReqId(0));
            }
            if rng.below(2) > 0 {
                if let Some(k) = pop_checked(&mut || q.pop(), &mut reference) {
                    now = (k >> 64) as u64;
                }
            }
        }
        drain_checked(|| q.pop(), reference);
    }

    #[test]
    fn the_calendar_adapts_its_buckets_and_keeps_key_order() {
        // A thousand events in flight: first 20 us deep (they fill 16 us
        // buckets: the ring takes more, narrower ones), then 50 ms deep (they
        // lie past a narrow ring's horizon and widen it). Order is checked
        // against an ordered set throughout.
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut rng = raidlab_core::rng::Rng::new(5);
        let (mut now, mut seq) = (0u64, 0u64);
        let mut phase = |q: &mut EventQueue, spread: u64| {
            for i in 0..4 * ADAPT_EVERY + 1000 {
                seq += 1;
                let key = ((now + rng.below(spread)) as u128) << 64 | (seq as u128) << 8;
                q.push(key, CompId(0), ReqId(0));
                reference.insert(key);
                if i >= 1000 {
                    now = (pop_checked(&mut || q.pop(), &mut reference).expect("an event") >> 64)
                        as u64;
                }
            }
            q.shape
        };
        let dense = phase(&mut q, 20_000);
        let sparse = phase(&mut q, 50_000_000);
        assert!(
            dense.shift < START_SHIFT && dense.span > MIN_SPAN,
            "dense events: {dense:?}"
        );
        assert!(
            sparse.shift > dense.shift,
            "sparse events widen: {dense:?} -> {sparse:?}"
        );
        drain_checked(|| q.pop(), reference);
    }

    #[test]
    fn calls_come_back_from_the_fifo_as_queued() {
        let mut c = Ctx::new(1);
        let req = Req {
            offset: 0,
            len: 0,
            op: Op::Read,
            parent: NONE,
            pending: 0,
            comp: CompId(0),
            t0: 0,
            creator_word: 0,
            cost_pool: PoolId::NONE,
            handler_word: 0,
            phase: 0,
        };
        let parent = c.reqs.alloc(req);
        let child = c.reqs.alloc(Req { parent, ..req });
        // The largest component id, offset and request id (`NONE`).
        let top = CompId(u32::MAX);
        c.submit(top, parent);
        c.advise(CompId(7), u64::MAX);
        c.complete(child, CompId(3));
        c.submit(CompId(0), child);
        c.complete(parent, CompId(5));
        let mut got = vec![];
        while let Some(Next::Call(call)) = c.next_step() {
            got.push(format!("{call:?}"));
        }
        assert_eq!(
            got,
            [
                format!("Submit({top:?}, {parent:?})"),
                format!("Advise(CompId(7), {})", u64::MAX),
                // The parent was handed to component u32::MAX.
                format!("ChildDone({top:?}, {parent:?}, {child:?})"),
                format!("Submit(CompId(0), {child:?})"),
                format!("ChildDone(CompId(5), {NONE:?}, {parent:?})"),
            ]
        );
    }

    #[test]
    fn events_in_time_then_sequence_order() {
        let mut c = Ctx::new(1);
        c.schedule(5, CompId(0), ReqId(1), 0);
        c.schedule(3, CompId(0), ReqId(2), 0);
        c.schedule(5, CompId(0), ReqId(3), 0);
        let mut order = vec![];
        while let Some(Next::Event(_, r, _)) = c.next_step() {
            order.push((c.now, r.0));
        }
        assert_eq!(order, vec![(3, 2), (5, 1), (5, 3)]);
    }
}
