//! RAID controller: the front end of one volume it exposes. Several volumes
//! of one controller share its resources (pools): PCIe link in each
//! direction, RAID-on-chip cores, the cache's data path (DMA) and the parity
//! engine. Behind the front end sits a hardware array or, in `volume`/`jbod`
//! mode, a single device.
//!
//! * Every host command costs the RoC its per-command cost and waits the
//!   fixed firmware latency (which adds latency, not load).
//! * Reads may be extended by read-ahead (`on`: always; `adaptive`: for
//!   detected sequential streams); later reads inside fetched data are hits.
//! * Writes with a write-back cache complete once in cache. Dirty lines
//!   (one per stripe unit) are destaged in the background, oldest first,
//!   after a short hold that lets sequential writes fill whole stripes, with
//!   at most `destage_per_member` destages outstanding per member (a RAID 5
//!   destage holds its slot through its read-modify-write pre-reads); one
//!   per member is the HDD-era design that keeps SSD arrays from using
//!   their parallelism.
//!   Each destage is first prepared by the firmware's one flush task (a
//!   fixed cost and the bytes it maps, then the member commands it builds,
//!   which the array behind charges to the task), so
//!   destages cannot start faster than that task turns them over.
//!   A full cache makes new writes wait for destage.

mod destage;

use crate::engine::events;
use crate::engine::{ns, xfer_ns, CompId, Ctx, Op, PoolId, Req, ReqId, NONE};
use crate::table::{LineTable, Lookahead, LOOKAHEAD};
use raidlab_core::preset::StripeGather;
use raidlab_core::rng::GOLDEN_GAMMA;
use raidlab_core::topology::ReadAhead;
use raidlab_core::units::Ns;
use raidlab_core::workload::Region;
use raidlab_layout::{Geometry, Level};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

events! {
    /// A controller volume's events.
    Ev {
        Issue,
        Done,
        Kick,
        Accept,
        Destaged,
    }
}

/// What a controller's own root request is (`Req::phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    /// A destage of dirty cache lines. Code 9: clear of the 0 every
    /// request starts with and of the array phases (0-5) a request
    /// passing through may carry.
    Destage = 9,
}

/// Whether `a..b` continues one of the streams that `ends` tracks (where
/// their last I/Os ended, the least recently continued first): it becomes
/// that stream's end, or a new stream's in place of the oldest.
fn continues_stream(ends: &mut VecDeque<u64>, a: u64, b: u64) -> bool {
    let hit = ends.iter().position(|&e| e == a);
    if let Some(i) = hit {
        ends.remove(i);
    } else if ends.len() >= STREAMS {
        ends.pop_front();
    }
    ends.push_back(b);
    hit.is_some()
}

/// Read-ahead buffers a controller volume keeps at once. No vendor
/// publishes the figure: it is a modelling bound on the table, twice
/// [`STREAMS`] so every tracked stream can have a buffer ready and one
/// being filled.
const RA_ENTRIES: usize = 32;
/// Sequential streams the adaptive read-ahead detector tracks per volume.
/// Not published either: a modelling bound, above the 10 jobs of
/// petrov2010's heavy preset; jdev2009's 40-thread sequential reads
/// exceed it, and their later streams are then read without read-ahead.
/// petrov2010's Table 6 contradicts the bound for its ten heavy streams,
/// which read sequentially at the random-read rate (docs/model.md, the
/// audit's read-ahead row).
const STREAMS: usize = 16;

/// Shared resources of one physical controller.
#[derive(Debug, Clone, Copy)]
pub struct CtrlPools {
    /// Host-to-controller PCIe direction.
    pub pcie_in: PoolId,
    /// Controller-to-host PCIe direction.
    pub pcie_out: PoolId,
    /// RAID-on-chip cores.
    pub roc: PoolId,
    /// Cache memory / DMA data path.
    pub dma: PoolId,
    /// Parity engine.
    pub xor: PoolId,
    /// The firmware's cache-flush task (one at a time).
    pub flush: PoolId,
}

/// Configuration of one volume's front end.
pub struct CtrlConfig {
    /// Controller label.
    pub label: String,
    /// Pools.
    pub pools: CtrlPools,
    /// RoC cost per host command.
    pub cmd_ns: Ns,
    /// RoC cost per KiB of host data.
    pub ns_per_kb: f64,
    /// Extra RoC cost when the volume is a single device: its one member
    /// command, paid only when a command reaches the device (not for cache
    /// hits or write-back writes).
    pub passthrough_member_ns: Ns,
    /// Flush-task time to map a write-back write onto one member's cache
    /// buffers, paid before the write is acknowledged (one per member
    /// write it becomes, [`Geometry::member_writes`]); a destage then
    /// pays only its pre-reads' member commands. 0 without a flush task
    /// (`destage_task_ns` 0): destages pay their member writes on the RoC.
    pub map_member_ns: Ns,
    /// PCIe rate of data the adapter sends the host (reads), 10^6 B/s.
    pub pcie_mbps: f64,
    /// PCIe rate of data the adapter fetches from the host (writes), 10^6
    /// B/s: its own DMA reads, answered in completions of the root
    /// complex's read completion boundary ([`crate::pcie_fetch_mbps`]).
    pub pcie_in_mbps: f64,
    /// Data path rate, 10^6 B/s.
    pub dma_mbps: f64,
    /// Fixed firmware latency.
    pub fw_latency: Ns,
    /// Write-back cache capacity for this volume, bytes (0 = write-through).
    pub wb_bytes: u64,
    /// Cache memory for this volume, bytes.
    pub cache_bytes: u64,
    /// Reads are cached (cached I/O); off for pass-through and `readahead=off`
    /// (MegaRAID's direct I/O, which intel2013 and admin2015 used with it).
    pub read_cache: bool,
    /// Read-ahead policy.
    pub readahead: ReadAhead,
    /// Read-ahead bytes.
    pub readahead_bytes: u64,
    /// Destage writes per member.
    pub destage_per_member: u32,
    /// Flush-task time per destage operation.
    pub destage_task_ns: Ns,
    /// Write-back writes pay their command and per-KiB work on the one
    /// cache task (the `flush` pool) instead of the RoC's shared cores.
    pub task_writes: bool,
    /// Rate at which the cache task moves a write-back write's data into
    /// cache, 10^6 B/s (0: no such cost).
    pub task_mbps: f64,
    /// Hold time of dirty data before destage.
    pub destage_delay: Ns,
    /// Which of a parity array's wholly dirty stripes are destaged as one
    /// full-stripe write (every one, those a sequential write stream
    /// filled, or none); the rest go chunk by chunk, by read-modify-write.
    pub full_stripe_destage: StripeGather,
    /// Volume capacity.
    pub capacity: u64,
    /// Geometry of the array behind (None for a single device).
    pub geo: Option<Geometry>,
    /// Which host commands skip the firmware's command processing.
    pub fastpath: FastPath,
}

/// LSI's FastPath (cut-through I/O) on a volume: which host commands skip
/// the firmware's command processing (`cmd_ns`) and go from host memory
/// straight to their member's command. Only a write-through volume without
/// read-ahead, not degraded, has it; a command larger than the stripe unit
/// never takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FastPath {
    /// Every command takes the firmware path.
    #[default]
    Off,
    /// Reads on RAID 0, 1, 4/5 and 6 and single drives; writes on RAID 0
    /// and single drives (the SAS2208 generation's rule).
    Unspanned,
    /// As `Unspanned`, and reads on RAID 10 too (later firmware).
    Spans,
}

impl FastPath {
    /// Does a command of `op` and `len` bytes on a volume of geometry
    /// `geo` (None: a single drive) cut through?
    pub fn takes(self, op: Op, len: u64, geo: Option<&Geometry>) -> bool {
        let Some(g) = geo else {
            return self != FastPath::Off && op != Op::Flush;
        };
        let level_ok = match (g.level(), op) {
            (Level::Raid0, Op::Read | Op::Write) => true,
            (Level::Raid1 | Level::Raid4 | Level::Raid5 | Level::Raid6, Op::Read) => true,
            (Level::Raid10, Op::Read) => self == FastPath::Spans,
            _ => false,
        };
        self != FastPath::Off && len <= g.chunk() && level_ok
    }
}

/// Hasher for read-cache block numbers: one multiply (Fibonacci hashing).
/// Keys are small integers chosen by the simulation, not by an adversary, so
/// SipHash's protection buys nothing here and costs most of the cache's time.
#[derive(Default, Clone, Copy)]
struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(GOLDEN_GAMMA);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ self.0).wrapping_mul(GOLDEN_GAMMA);
    }
}

/// Bytes per read-cache block.
const BLOCK: u64 = 4096;
/// A block a cache fill did not write (see `CtrlVol::fill`).
const NOT_WRITTEN: u32 = u32::MAX;
/// A child command that fills no read-ahead window.
const NO_WINDOW: u32 = u32::MAX;

/// The read-ahead window a child read fills, if any (its creator's word).
fn window_of(r: &Req) -> Option<u32> {
    (r.creator_word != NO_WINDOW).then_some(r.creator_word)
}

/// The destage a destage's root request stands for (its handler's word).
fn destage_slot(r: &Req) -> usize {
    r.handler_word as usize
}

/// Spans more than this many times the cache are modelled without read hits.
const CACHE_SPAN_RATIO: u64 = 64;

/// Clean data held in the controller cache, in 4 KiB blocks, least recently
/// used out first.
struct ReadCache {
    cap: usize,
    map: HashMap<u64, u32, BuildHasherDefault<BlockHasher>>,
    order: VecDeque<(u64, u32)>,
    stamp: u32,
    /// Blocks `0..prefix` are all held (a warm-up of a span that fits
    /// leaves the whole span so): a read inside them is a hit without a
    /// look at each block. Any eviction resets it.
    prefix: u64,
}

impl ReadCache {
    fn new(bytes: u64) -> Self {
        ReadCache {
            cap: (bytes / BLOCK) as usize,
            map: HashMap::default(),
            order: VecDeque::new(),
            stamp: 0,
            prefix: 0,
        }
    }

    fn holds(&self, a: u64, b: u64) -> bool {
        self.cap > 0
            && (b.div_ceil(BLOCK) <= self.prefix
                || (a / BLOCK..b.div_ceil(BLOCK)).all(|k| self.map.contains_key(&k)))
    }

    /// Blocks `a / BLOCK..b.div_ceil(BLOCK)` used now: held, most recently
    /// used; the least recently used leave if the room is exceeded.
    fn insert(&mut self, a: u64, b: u64) {
        if self.cap == 0 {
            return;
        }
        let (ka, kb) = (a / BLOCK, b.div_ceil(BLOCK));
        if kb - ka > 1 {
            // A large entry (the cache's warm-up): room at once, not grown
            // step by step under it.
            let held = self.map.len();
            let room = (held + (kb - ka) as usize).min(self.cap);
            self.map.reserve(room.saturating_sub(held));
        }
        for k in ka..kb {
            self.stamp = self.stamp.wrapping_add(1);
            self.map.insert(k, self.stamp);
            self.order.push_back((k, self.stamp));
        }
        if self.evict_over_room() {
            self.prefix = 0;
        } else if ka <= self.prefix {
            self.prefix = self.prefix.max(kb);
        }
        self.sweep_superseded();
    }

    /// Drop the least recently used blocks while more are held than the
    /// cache has room for; whether any went.
    fn evict_over_room(&mut self) -> bool {
        let mut evicted = false;
        while self.map.len() > self.cap {
            let (k, st) = self
                .order
                .pop_front()
                .expect("every block held has its latest use in order");
            if self.map.get(&k) == Some(&st) {
                self.map.remove(&k);
                evicted = true;
            }
        }
        evicted
    }

    /// Uses a later use of their block superseded pile up in `order`; past
    /// twice the blocks held, they go in one pass, the latest uses keeping
    /// their order. (Dropping the oldest entries instead, as before, could
    /// evict blocks a cache with room keeps: under random writes over a
    /// span the cache holds whole, up to e^-2 of it.)
    fn sweep_superseded(&mut self) {
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order.retain(|(k, st)| map.get(k) == Some(st));
        }
        debug_assert!(
            self.order.len() >= self.map.len(),
            "each block held has a use in order"
        );
    }

    /// Enter the blocks `base + k x BLOCK` (`k` in `0..last.len()`) that
    /// were used (`last[k]` is not [`NOT_WRITTEN`]) once each, in the order
    /// of their last use.
    fn insert_by_last_use(&mut self, last: &[u32], base: u64) {
        let mut used: Vec<(u32, u64)> = (0..last.len() as u64)
            .filter(|&k| last[k as usize] != NOT_WRITTEN)
            .map(|k| (last[k as usize], k))
            .collect();
        used.sort_unstable();
        // Room for them at once, not grown under the insertions.
        let room = used.len().min(self.cap);
        self.map.reserve(room.saturating_sub(self.map.len()));
        self.order.reserve(room);
        for (_, k) in used {
            self.insert(base + k * BLOCK, base + (k + 1) * BLOCK);
        }
    }

    /// Whether every block of a span of `bytes` from offset 0 fits.
    fn holds_whole(&self, bytes: u64) -> bool {
        self.cap > 0 && bytes.div_ceil(BLOCK) <= self.cap as u64
    }
}

struct RaEntry {
    start: u64,
    end: u64,
    ready: bool,
    id: u32,
    waiters: Vec<ReqId>,
}

#[derive(Clone, Copy, Default)]
struct Line {
    bits: u64,
    first: Ns,
    member: u32,
    queued: bool,
    in_destage: bool,
    /// The last write that dirtied the line continued a sequential write
    /// stream.
    streamed: bool,
}

/// A write taken into the write-back cache.
#[derive(Debug, Clone, Copy)]
struct Admit {
    /// Member writes the flush task maps for the lines it dirtied afresh.
    to_map: u64,
    /// It continued a sequential write stream.
    streamed: bool,
}

struct Destage {
    lines: Vec<u64>,
    bytes: u64,
    member: usize,
}

/// Busy figures of the destage machinery.
#[derive(Debug, Clone, Copy, Default)]
pub struct DestageStats {
    /// Sum over members of the time the member's destage queue was full, ns.
    pub at_limit_ns: Ns,
    /// Members.
    pub members: usize,
}

/// The front end of one controller volume.
pub struct CtrlVol {
    /// Configuration.
    pub cfg: CtrlConfig,
    id: CompId,
    host: CompId,
    child: CompId,
    // read-ahead
    ra: VecDeque<RaEntry>,
    ra_seq: u32,
    stream_ends: VecDeque<u64>,
    /// Where recent writes ended: a write starting at one continues a
    /// sequential write stream (tracked for `StripeGather::Sequential` and
    /// for a flush task's mapping ahead of a stream).
    write_ends: VecDeque<u64>,
    // write-back cache
    line_bytes: u64,
    gran: u64,
    /// log2 of `line_bytes` and of `gran` (both powers of two: a stripe unit
    /// or 64 KiB, and a 64th of it but at least a sector), so the cache maps
    /// bytes to lines and granules by shifts instead of divisions.
    line_shift: u32,
    gran_shift: u32,
    dirty: u64,
    /// Bytes of writes taken into the write-back cache from above.
    taken_in: u64,
    lines: LineTable<Line>,
    /// Dirty lines waiting for destage, oldest first, one queue per member.
    fifos: Vec<VecDeque<u64>>,
    destages: Vec<Option<Destage>>,
    destage_out: Vec<u32>,
    limit_since: Vec<Ns>,
    at_limit_ns: Ns,
    wait_space: VecDeque<ReqId>,
    kick_at: Option<Ns>,
    spare_lines: Vec<Vec<u64>>,
    runs: Vec<(u64, u64)>,
    read_cache: ReadCache,
}

impl CtrlVol {
    /// A front end for `child`.
    pub fn new(cfg: CtrlConfig, id: CompId, host: CompId, child: CompId) -> Self {
        let line_bytes = cfg
            .geo
            .as_ref()
            .map(|g| g.chunk())
            .unwrap_or(64 * 1024)
            .max(4096);
        let gran = (line_bytes / 64).max(512);
        debug_assert!(line_bytes.is_power_of_two() && gran.is_power_of_two());
        let members = cfg.geo.as_ref().map(|g| g.members()).unwrap_or(1);
        let (cfg_read_cache, cfg_cache_bytes) = (cfg.read_cache, cfg.cache_bytes);
        CtrlVol {
            cfg,
            id,
            host,
            child,
            ra: VecDeque::new(),
            ra_seq: 0,
            stream_ends: VecDeque::new(),
            write_ends: VecDeque::new(),
            line_bytes,
            gran,
            line_shift: line_bytes.trailing_zeros(),
            gran_shift: gran.trailing_zeros(),
            dirty: 0,
            taken_in: 0,
            lines: LineTable::default(),
            fifos: vec![VecDeque::new(); members],
            destages: Vec::new(),
            destage_out: vec![0; members],
            limit_since: vec![0; members],
            at_limit_ns: 0,
            wait_space: VecDeque::new(),
            kick_at: None,
            spare_lines: Vec::new(),
            runs: Vec::new(),
            read_cache: ReadCache::new(if cfg_read_cache { cfg_cache_bytes } else { 0 }),
        }
    }

    /// Assert the cache's invariants: the dirty byte count is the dirty
    /// granules of its lines plus the data of destages in flight, and
    /// within the write-back cache; no member has more destages outstanding
    /// than its limit.
    pub fn check(&self) {
        let counted: u64 = self
            .lines
            .values()
            .map(|l| l.bits.count_ones() as u64 * self.gran)
            .sum::<u64>()
            + self.destages.iter().flatten().map(|d| d.bytes).sum::<u64>();
        assert_eq!(self.dirty, counted, "{}: dirty bytes", self.cfg.label);
        assert!(
            self.dirty <= self.cfg.wb_bytes.max(self.line_bytes),
            "{}: {} dirty bytes in a {}-byte write-back cache",
            self.cfg.label,
            self.dirty,
            self.cfg.wb_bytes
        );
        for (m, &out) in self.destage_out.iter().enumerate() {
            assert!(
                out <= self.cfg.destage_per_member,
                "{}: member {m} has {out} destages outstanding, limit {}",
                self.cfg.label,
                self.cfg.destage_per_member
            );
        }
    }

    /// Heap bytes [`CtrlVol::warm`] with the same arguments will fill: the
    /// read cache's LRU entries and the write-back cache's line table, for
    /// the simulator's memory bound. An upper estimate: a hash map entry and
    /// its LRU record take under 64 bytes; the line table holds up to 16/3
    /// slots of 32 bytes per line (see `LineTable`).
    pub fn warm_bytes(&self, span: u64, random_reads: bool, random_writes: bool, bs: u64) -> u64 {
        let blocks = span.min(self.cfg.capacity) / BLOCK;
        let cap = self.read_cache.cap as u64;
        let fills = random_writes && self.cfg.wb_bytes > 0;
        // The read cache holds what reads fetch and what a fill's writes
        // leave; a fill over a span it holds whole also notes each block's
        // last write (4 bytes a block).
        let read = if (random_reads || fills) && cap * CACHE_SPAN_RATIO >= blocks {
            cap.min(blocks) * 64
                + if fills && blocks <= cap {
                    blocks * 4
                } else {
                    0
                }
        } else {
            0
        };
        let write = if fills {
            self.fill_lines(self.cfg.wb_bytes, span, bs.clamp(512, span.max(512))) * 32 * 16 / 3
        } else {
            0
        };
        read + write
    }

    /// Bring the cache to the steady state of a workload over `region`,
    /// as a long run would leave it (functional, no timing): read data
    /// cached as LRU would hold it under uniform random access (all of a span
    /// that fits, else a random sample of it), and for random writes the
    /// write-back cache full of dirty data, the state in which sustained
    /// random writes run at the destage rate.
    pub fn warm(
        &mut self,
        region: Region,
        random_reads: bool,
        random_writes: bool,
        bs: u64,
        seed: u64,
    ) {
        let region = self.whole_blocks(region);
        let (base, span) = (region.start, region.span);
        if span == 0 {
            return;
        }
        let mut rng = raidlab_core::rng::Rng::new(seed);
        // A cache that holds under 1/64 of the span serves under 2 % of
        // random reads: model it as holding none and save the bookkeeping.
        if (self.read_cache.cap as u64) * CACHE_SPAN_RATIO < span / BLOCK {
            self.read_cache.cap = 0;
        }
        if random_reads && self.read_cache.cap > 0 {
            let blocks = span / BLOCK;
            if blocks <= self.read_cache.cap as u64 {
                self.read_cache.insert(base, base + span);
            } else {
                for _ in 0..self.read_cache.cap {
                    let k = rng.below(blocks);
                    self.read_cache
                        .insert(base + k * BLOCK, base + (k + 1) * BLOCK);
                }
            }
        }
        if random_writes {
            self.fill(region, bs, &mut rng, 0);
        }
    }

    /// `region` in whole cache blocks and within the volume.
    fn whole_blocks(&self, region: Region) -> Region {
        let start = (region.start / BLOCK * BLOCK).min(self.cfg.capacity);
        let span = region.span.min(self.cfg.capacity - start) / BLOCK * BLOCK;
        Region { start, span }
    }

    /// Bytes of writes the write-back cache has taken in from above (a
    /// fill ahead not counted).
    pub fn taken_in(&self) -> u64 {
        self.taken_in
    }

    /// Dirty bytes, and the write-back cache's size.
    pub fn dirty_level(&self) -> (u64, u64) {
        (self.dirty, self.cfg.wb_bytes)
    }

    /// How far the dirty level moves with the destages in flight alone
    /// (every member's destage slots full of whole lines): changes of this
    /// order are the level's noise, not a trend.
    pub fn level_noise(&self) -> u64 {
        self.destage_out.len() as u64 * self.cfg.destage_per_member as u64 * self.line_bytes
    }

    /// Skip the rest of a write-back cache's filling under random writes of
    /// `bs` over `span` (docs/workloads.md, "Steady state"): mark random
    /// blocks dirty as of now until the cache is full, as the writes would
    /// have left it, and let destaging start.
    pub fn fill_to_full(&mut self, ctx: &mut Ctx, region: Region, bs: u64, seed: u64) {
        let region = self.whole_blocks(region);
        if region.span == 0 {
            return;
        }
        let mut rng = raidlab_core::rng::Rng::new(seed);
        self.fill(region, bs, &mut rng, ctx.now);
        self.kick(ctx);
    }

    /// Lines that random `bs` writes over `span` dirty while they fill
    /// `room` bytes of the write-back cache: one per write, nearly all of
    /// them, but never more than the span holds (512-byte writes over a
    /// span a 4 GB cache holds whole would otherwise count 8 million).
    fn fill_lines(&self, room: u64, span: u64, bs: u64) -> u64 {
        (room / bs).min(span.div_ceil(self.line_bytes) + 1)
    }

    /// Mark random `bs` blocks of `region` dirty as of `now` until the
    /// write-back cache is full.
    fn fill(&mut self, region: Region, bs: u64, rng: &mut raidlab_core::rng::Rng, now: Ns) {
        if self.cfg.wb_bytes == 0 {
            return;
        }
        let (base, span) = (region.start, region.span);
        let bs = bs.clamp(512, span);
        let n = span / bs;
        let room = self.cfg.wb_bytes.saturating_sub(self.dirty);
        self.lines.reserve(self.fill_lines(room, span, bs) as usize);
        // The offsets are drawn a few writes ahead (in the same order)
        // and their lines' slots loaded meanwhile, so the insertions do
        // not wait for their cache misses one after the other.
        // Four times the writes it takes to fill the cache, or the span if
        // that is smaller (past that the span is nearly all dirty: 98 %).
        let draws = 4 * self.cfg.wb_bytes.min(span) / bs;
        let mut offsets = Lookahead::new(draws, LOOKAHEAD);
        let shift = self.line_shift;
        // When the read cache holds the whole span, no block of it is
        // evicted, and a least-recently-used cache ends holding every
        // block written, in the order of its last write: note that order
        // here and enter each block once at the end, instead of once per
        // write (32 million writes of 512 bytes fill a 4 GB cache).
        let batch = self.read_cache.holds_whole(span) && draws < u64::from(NOT_WRITTEN);
        let mut last_write = batch.then(|| vec![NOT_WRITTEN; span.div_ceil(BLOCK) as usize]);
        let mut i = 0;
        while let Some(a) = offsets.next(
            || base + rng.below(n) * bs,
            |a| self.lines.prefetch(a >> shift),
        ) {
            if self.dirty + bs > self.cfg.wb_bytes {
                break;
            }
            match &mut last_write {
                Some(last) => {
                    self.mark_lines_dirty(a, a + bs, now, false);
                    for k in (a - base) / BLOCK..(a - base + bs).div_ceil(BLOCK) {
                        last[k as usize] = i;
                    }
                }
                None => self.mark_dirty(a, a + bs, now, false),
            }
            i += 1;
        }
        if let Some(last) = last_write {
            self.read_cache.insert_by_last_use(&last, base);
        }
    }

    /// Destage statistics.
    pub fn destage_stats(&self) -> DestageStats {
        DestageStats {
            at_limit_ns: self.at_limit_ns,
            members: self.destage_out.len(),
        }
    }

    /// A host command arrives.
    pub fn submit(&mut self, ctx: &mut Ctx, id: ReqId) {
        let r = ctx.reqs[id];
        if r.op == Op::Flush {
            return self.flush(ctx, id);
        }
        let p = self.cfg.pools;
        if r.op == Op::Write && self.cfg.wb_bytes > 0 && self.cfg.task_writes {
            return self.submit_to_task(ctx, id);
        }
        let mut t = ctx.now;
        if r.op == Op::Write {
            t = ctx.reserve(p.pcie_in, t, xfer_ns(r.len as u64, self.cfg.pcie_in_mbps));
            if self.cfg.wb_bytes > 0 {
                t = ctx.reserve(p.dma, t, xfer_ns(r.len as u64, self.cfg.dma_mbps));
                // The write reaches the cache map when its transfer is done.
                self.prefetch_lines(ctx, id);
            }
        }
        // Per-KiB work (descriptors, cache buffers) occupies a core while the
        // DMA engine moves the data: it limits throughput, not latency.
        ctx.reserve(p.roc, t, ns(self.cfg.ns_per_kb * r.len as f64 / 1024.0));
        // A single device's member command is RoC work only when one is
        // sent: not for a write into the write-back cache, nor for a read
        // the cache already holds.
        let member = self.cfg.passthrough_member_ns;
        let sends = member > 0
            && match r.op {
                Op::Write => self.cfg.wb_bytes == 0,
                Op::Read => !self.holds(r.offset, r.offset + r.len as u64),
                Op::Flush => unreachable!("flushes take their own path"),
            };
        let command = if self.cuts_through(&r) {
            0
        } else {
            self.cfg.cmd_ns
        };
        let cost = command + if sends { member } else { 0 };
        t = ctx.reserve(p.roc, t, cost);
        if self.cfg.geo.is_some() && (r.op == Op::Read || self.cfg.wb_bytes == 0) {
            // A hardware array runs on the same RoC: decide now and hand the
            // request on with a not-before time, so the array continues the
            // RoC's work where the command's cost ends (one event fewer).
            self.issue(ctx, id, t);
        } else {
            ctx.schedule(t, self.id, id, Ev::Issue);
        }
    }

    /// A write-back write on a controller whose one cache task accepts
    /// writes (`task_writes`): the task processes the command and moves
    /// the data into cache while the adapter fetches it over PCIe (the
    /// slower sets the time), one write after another whatever the depth.
    fn submit_to_task(&mut self, ctx: &mut Ctx, id: ReqId) {
        let len = ctx.reqs[id].len as u64;
        let p = self.cfg.pools;
        let now = ctx.now;
        let fetched = ctx.reserve(p.pcie_in, now, xfer_ns(len, self.cfg.pcie_in_mbps));
        let stored = ctx.reserve(p.dma, now, xfer_ns(len, self.cfg.dma_mbps));
        let copy = if self.cfg.task_mbps > 0.0 {
            xfer_ns(len, self.cfg.task_mbps)
        } else {
            0
        };
        let work = self.cfg.cmd_ns + ns(self.cfg.ns_per_kb * len as f64 / 1024.0) + copy;
        let done = ctx.reserve(p.flush, now, work);
        self.prefetch_lines(ctx, id);
        ctx.schedule(done.max(fetched).max(stored), self.id, id, Ev::Issue);
    }

    /// A cache flush: a write-back cache is battery- or flash-backed (RAID
    /// controllers enable write-back only with one), so it answers after
    /// its command; without one the flush goes on to the drives.
    fn flush(&mut self, ctx: &mut Ctx, id: ReqId) {
        let t = ctx.reserve(self.cfg.pools.roc, ctx.now, self.cfg.cmd_ns);
        if self.cfg.wb_bytes > 0 {
            ctx.schedule(t + self.cfg.fw_latency, self.id, id, Ev::Done);
        } else {
            self.send_child(ctx, id, 0..0, Op::Flush, NO_WINDOW, t);
        }
    }

    /// Take the host command onward once the RoC has accepted it at `at`.
    #[inline]
    fn issue(&mut self, ctx: &mut Ctx, id: ReqId, at: Ns) {
        let r = ctx.reqs[id];
        if r.op == Op::Read {
            self.issue_read(ctx, id, at);
        } else if self.cfg.wb_bytes > 0 {
            self.event(ctx, id, Ev::Accept.into());
        } else {
            let (a, b) = (r.offset, r.offset + r.len as u64);
            self.ra.retain(|e| !e.ready || e.end <= a || e.start >= b);
            self.send_child(
                ctx,
                id,
                r.offset..r.offset + r.len as u64,
                Op::Write,
                NO_WINDOW,
                at,
            );
        }
    }

    fn send_child(
        &mut self,
        ctx: &mut Ctx,
        id: ReqId,
        span: std::ops::Range<u64>,
        op: Op,
        window: u32,
        at: Ns,
    ) -> ReqId {
        let child = ctx.reqs.alloc(Req {
            offset: span.start,
            len: (span.end - span.start) as u32,
            op,
            parent: id,
            pending: 0,
            comp: CompId::nth(0),
            t0: at,
            creator_word: window,
            cost_pool: PoolId::NONE,
            handler_word: 0,
            phase: 0,
        });
        ctx.reqs[id].pending += 1;
        ctx.submit(self.child, child);
        child
    }

    /// Send read data up to the host from `at`. `arrived`: the data has
    /// just come in from a member, its pass through cache memory made as
    /// it arrived (the port's DMA writes it while the member sends it), so
    /// that pass ends by `at` when the memory was free for it.
    fn data_return(&mut self, ctx: &mut Ctx, id: ReqId, at: Ns, arrived: bool) {
        let len = ctx.reqs[id].len as u64;
        let p = self.cfg.pools;
        // Cache memory and PCIe stream the data together (cut-through): the
        // slower of the two sets the time.
        let mut t = ctx.reserve(p.pcie_out, at, xfer_ns(len, self.cfg.pcie_mbps));
        if self.cfg.wb_bytes > 0 || self.cfg.readahead != ReadAhead::Off {
            let pass = xfer_ns(len, self.cfg.dma_mbps);
            let from = if arrived { at.saturating_sub(pass) } else { at };
            t = t.max(ctx.reserve(p.dma, from, pass));
        }
        let latency = self.completion_latency(&ctx.reqs[id]);
        ctx.schedule(t + latency, self.id, id, Ev::Done);
    }

    /// Does the host command take FastPath (the cut-through path)?
    #[inline]
    fn cuts_through(&self, r: &Req) -> bool {
        self.cfg
            .fastpath
            .takes(r.op, r.len as u64, self.cfg.geo.as_ref())
    }

    /// The firmware's fixed latency a host command's completion pays: none
    /// for one that took FastPath, which hands the command to its drives and
    /// their completion back without the firmware's processing (LSI's
    /// cut-through I/O: the same processing whose per-command cost it
    /// skips).
    #[inline]
    fn completion_latency(&self, r: &Req) -> Ns {
        if self.cuts_through(r) {
            0
        } else {
            self.cfg.fw_latency
        }
    }

    fn sequential(&mut self, offset: u64, end: u64) -> bool {
        continues_stream(&mut self.stream_ends, offset, end)
    }

    fn issue_read(&mut self, ctx: &mut Ctx, id: ReqId, at: Ns) {
        let r = ctx.reqs[id];
        let (a, b) = (r.offset, r.offset + r.len as u64);
        if self.cached(a, b) {
            self.data_return(ctx, id, at, false);
            return;
        }
        let seq = self.sequential(a, b);
        if let Some(e) = self.ra.iter_mut().find(|e| a >= e.start && b <= e.end) {
            if e.ready {
                self.data_return(ctx, id, at, false);
            } else {
                e.waiters.push(id);
            }
            return;
        }
        let extend = match self.cfg.readahead {
            ReadAhead::On => true,
            ReadAhead::Adaptive => seq,
            ReadAhead::Off => false,
        };
        let end = if extend {
            (b + self.cfg.readahead_bytes).min(self.cfg.capacity)
        } else {
            b
        };
        let mut window = NO_WINDOW;
        if end > b {
            self.ra_seq = self.ra_seq.wrapping_add(1);
            window = self.ra_seq;
            if self.ra.len() >= RA_ENTRIES {
                // Evict the oldest finished entry (waiters keep unfinished ones alive).
                if let Some(i) = self.ra.iter().position(|e| e.ready) {
                    self.ra.remove(i);
                }
            }
            self.ra.push_back(RaEntry {
                start: b,
                end,
                ready: false,
                id: window,
                waiters: Vec::new(),
            });
        }
        // A read-ahead window already fetching or holding the read's head
        // leaves only the rest to fetch: its member reads went out first,
        // so they come back before these (the read is answered when these
        // are). Fetching the head again cost a large sequential read, at
        // each request, the window's bytes twice.
        let from = self
            .ra
            .iter()
            .filter(|e| e.start <= a && a < e.end)
            .map(|e| e.end)
            .max()
            .map_or(a, |e| e.min(b));
        self.send_child(ctx, id, from..end, Op::Read, window, at);
    }

    /// The cache has `a..b` now: dirty data covering it, or cached reads.
    #[inline]
    fn cached(&self, a: u64, b: u64) -> bool {
        let dirty = self.cfg.wb_bytes > 0
            && a >> self.line_shift == (b - 1) >> self.line_shift
            && self.lines.get(a >> self.line_shift).is_some_and(|l| {
                let mask = self.bits_for(a, b);
                l.bits & mask == mask
            });
        dirty || self.read_cache.holds(a, b)
    }

    /// A read of `a..b` needs no device command: the cache has it, or a
    /// read-ahead in flight or done covers it.
    fn holds(&self, a: u64, b: u64) -> bool {
        self.cached(a, b) || self.ra.iter().any(|e| a >= e.start && b <= e.end)
    }

    fn bits_for(&self, a: u64, b: u64) -> u64 {
        let base = a >> self.line_shift << self.line_shift;
        let g0 = (a - base) >> self.gran_shift;
        let g1 = ((b - base + self.gran - 1) >> self.gran_shift).min(64);
        if g1 - g0 >= 64 {
            u64::MAX
        } else {
            ((1u64 << (g1 - g0)) - 1) << g0
        }
    }

    fn member_of(&self, line: u64) -> usize {
        match &self.cfg.geo {
            Some(g) => {
                g.locate((line * self.line_bytes).min(g.capacity().saturating_sub(1)))
                    .0
            }
            None => 0,
        }
    }

    /// Put a write into the cache if it fits, and say how many member
    /// writes the flush task must map for it: those of the lines it finds
    /// clean. A line already dirty has its member buffers mapped until it
    /// is destaged, so a write into it (the rest of a sequential run) maps
    /// nothing new. Say too whether it continued a sequential stream.
    fn cache_insert(&mut self, ctx: &mut Ctx, id: ReqId) -> Option<Admit> {
        let r = ctx.reqs[id];
        let (a, b) = (r.offset, r.offset + r.len as u64);
        // Only a controller with a flush task maps lines before the ack.
        let maps = self.cfg.map_member_ns > 0;
        let mut add = 0;
        let mut fresh_writes = 0;
        let mut l = a >> self.line_shift;
        while l * self.line_bytes < b {
            let la = a.max(l * self.line_bytes);
            let lb = b.min((l + 1) * self.line_bytes);
            let bits = self.bits_for(la, lb);
            let old = self.lines.get(l).map(|x| x.bits).unwrap_or(0);
            add += (bits & !old).count_ones() as u64 * self.gran;
            if maps && old == 0 {
                fresh_writes += self.member_writes(la, lb);
            }
            l += 1;
        }
        if self.dirty + add > self.cfg.wb_bytes && self.dirty > 0 {
            return None;
        }
        let streamed = self.write_stream(a, b);
        self.taken_in += b - a;
        // Reads look at dirty data before read-ahead copies, so a window
        // stays good for the rest of its bytes.
        self.mark_dirty(a, b, ctx.now, streamed);
        // Lines counted apart count a stripe's parity (or a mirror) once
        // each; the write as a whole maps it once: never more than that.
        let to_map = if maps {
            fresh_writes.min(self.member_writes(a, b))
        } else {
            0
        };
        Some(Admit { to_map, streamed })
    }

    /// Member writes that host bytes `a..b` become.
    fn member_writes(&self, a: u64, b: u64) -> u64 {
        match &self.cfg.geo {
            Some(g) => g.member_writes(a, b - a),
            None => 1,
        }
    }

    /// Start loading the cache lines write `id` will mark dirty.
    #[inline]
    fn prefetch_lines(&self, ctx: &Ctx, id: ReqId) {
        let r = &ctx.reqs[id];
        let (a, b) = (r.offset, r.offset + r.len as u64);
        for l in a >> self.line_shift..b.div_ceil(self.line_bytes) {
            self.lines.prefetch(l);
        }
    }

    /// Whether a write of `a..b` into the cache continues a recent write
    /// (tracked where stripes are gathered for streams or lines are mapped
    /// before the ack).
    fn write_stream(&mut self, a: u64, b: u64) -> bool {
        if self.cfg.full_stripe_destage != StripeGather::Sequential && self.cfg.map_member_ns == 0 {
            return false;
        }
        continues_stream(&mut self.write_ends, a, b)
    }

    /// Mark `a..b` dirty (queueing its lines for destage); `streamed`: the
    /// write continued a sequential stream.
    #[inline]
    fn mark_dirty(&mut self, a: u64, b: u64, now: Ns, streamed: bool) {
        self.mark_lines_dirty(a, b, now, streamed);
        self.read_cache.insert(a, b);
    }

    /// The write-back side of [`Self::mark_dirty`]: the lines, the dirty
    /// count and the destage queues.
    fn mark_lines_dirty(&mut self, a: u64, b: u64, now: Ns, streamed: bool) {
        let mut l = a >> self.line_shift;
        while l * self.line_bytes < b {
            let la = a.max(l * self.line_bytes);
            let lb = b.min((l + 1) * self.line_bytes);
            let bits = self.bits_for(la, lb);
            let member = self.member_of(l) as u32;
            let e = self.lines.get_or_default(l);
            e.streamed = streamed;
            self.dirty += (bits & !e.bits).count_ones() as u64 * self.gran;
            e.bits |= bits;
            e.member = member;
            if !e.queued && !e.in_destage {
                e.queued = true;
                e.first = now;
                self.fifos[member as usize].push_back(l);
            }
            l += 1;
        }
    }

    /// Acknowledge write `id`, now in the cache, once the flush task has
    /// mapped the member writes of the lines it dirtied afresh onto their
    /// members' cache buffers; a write continuing a sequential stream finds
    /// them mapped ahead of it, the firmware having followed the stream as
    /// read-ahead follows a read stream, and is acknowledged at once (the
    /// task still does the work).
    fn acknowledge(&mut self, ctx: &mut Ctx, id: ReqId, now: Ns, admit: Admit) {
        let t = if self.cfg.map_member_ns == 0 || admit.to_map == 0 {
            // No flush task, or nothing new to map, before the ack.
            now
        } else {
            let mapped = ctx.reserve(
                self.cfg.pools.flush,
                now,
                self.cfg.map_member_ns * admit.to_map,
            );
            // A stream's lines were mapped ahead of it (the task's work is
            // the same, done before the write came): its ack does not wait.
            if admit.streamed {
                now
            } else {
                mapped
            }
        };
        ctx.schedule(t + self.cfg.fw_latency, self.id, id, Ev::Done);
    }

    /// A timed event.
    pub fn event(&mut self, ctx: &mut Ctx, id: ReqId, kind: u8) {
        match Ev::from_code(kind) {
            Ev::Issue => self.issue(ctx, id, ctx.now),
            Ev::Accept => {
                match self
                    .wait_space
                    .is_empty()
                    .then(|| self.cache_insert(ctx, id))
                {
                    Some(Some(admit)) => self.acknowledge(ctx, id, ctx.now, admit),
                    _ => self.wait_space.push_back(id),
                }
                self.kick(ctx);
            }
            Ev::Destaged => self.destage_done(ctx, id),
            Ev::Kick => {
                if self.kick_at == Some(ctx.now) {
                    self.kick_at = None;
                }
                self.kick(ctx);
            }
            Ev::Done => ctx.complete(id, self.host),
        }
    }

    /// A child (array or device) request finished.
    pub fn child_done(&mut self, ctx: &mut Ctx, id: ReqId, child: ReqId) {
        let c = ctx.reqs[child];
        ctx.reqs.release(child);
        ctx.reqs[id].pending -= 1;
        if ctx.reqs[id].pending > 0 {
            return;
        }
        if ctx.reqs[id].phase == Phase::Destage as u8 {
            // A destage is a command like any other: its slot frees after the
            // firmware's fixed latency. Then it updates its lines' entries
            // and admits the write waiting first for the space it frees:
            // start loading their entries now.
            if let Some(d) = &self.destages[destage_slot(&ctx.reqs[id])] {
                for &l in &d.lines {
                    self.lines.prefetch(l);
                }
            }
            if let Some(&w) = self.wait_space.front() {
                self.prefetch_lines(ctx, w);
            }
            ctx.schedule(ctx.now + self.cfg.fw_latency, self.id, id, Ev::Destaged);
            return;
        }
        match c.op {
            Op::Read => {
                self.read_cache.insert(c.offset, c.offset + c.len as u64);
                if let Some(w) = window_of(&c) {
                    if let Some(e) = self.ra.iter_mut().find(|e| e.id == w) {
                        e.ready = true;
                        let waiters = std::mem::take(&mut e.waiters);
                        for w in waiters {
                            self.data_return(ctx, w, ctx.now, false);
                        }
                    }
                }
                self.data_return(ctx, id, ctx.now, true);
            }
            Op::Write => {
                self.read_cache.insert(c.offset, c.offset + c.len as u64);
                let latency = self.completion_latency(&ctx.reqs[id]);
                ctx.schedule(ctx.now + latency, self.id, id, Ev::Done)
            }
            Op::Flush => ctx.schedule(ctx.now + self.cfg.fw_latency, self.id, id, Ev::Done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Call, Next, NONE};
    use raidlab_layout::ArrayLayout;

    /// The read cache is a least-recently-used cache: it keeps every block
    /// while they fit, however often they are rewritten, and past its room
    /// it drops the block whose last use is oldest, as a reference list
    /// kept in use order does.
    #[test]
    fn read_cache_keeps_what_fits_and_drops_the_least_recently_used() {
        let cap = 64u64;
        let mut c = ReadCache::new(cap * BLOCK);
        let mut rng = raidlab_core::rng::Rng::new(7);
        // Many rewrites of blocks that all fit: none is dropped.
        for _ in 0..10_000 {
            let k = rng.below(cap);
            c.insert(k * BLOCK, (k + 1) * BLOCK);
        }
        assert!((0..cap).all(|k| c.holds(k * BLOCK, (k + 1) * BLOCK)));
        assert!(
            c.order.len() <= 2 * c.map.len() + 64,
            "superseded uses are dropped"
        );
        // Against a reference list, least recently used first, over a span
        // twice the room.
        let mut c = ReadCache::new(cap * BLOCK);
        let mut reference: Vec<u64> = Vec::new();
        for _ in 0..20_000 {
            let (k, blocks) = (rng.below(2 * cap), 1 + rng.below(3));
            c.insert(k * BLOCK, (k + blocks) * BLOCK);
            for b in k..k + blocks {
                reference.retain(|&x| x != b);
                reference.push(b);
            }
            let keep = reference.len().saturating_sub(cap as usize);
            reference.drain(..keep);
            assert_eq!(c.map.len(), reference.len());
            for b in 0..2 * cap + 2 {
                let held = reference.contains(&b);
                assert_eq!(c.holds(b * BLOCK, (b + 1) * BLOCK), held, "block {b}");
            }
        }
        // A warm-up of a span that fits, then reads of it and entries past it.
        let mut c = ReadCache::new(cap * BLOCK);
        c.insert(0, (cap - 4) * BLOCK);
        assert!(c.holds(0, (cap - 4) * BLOCK));
        assert!(!c.holds(0, (cap - 3) * BLOCK));
        c.insert((cap - 4) * BLOCK, (cap + 2) * BLOCK);
        // Six more blocks than the 60 held: the two least recently used go.
        assert!(!c.holds(0, BLOCK) && !c.holds(BLOCK, 2 * BLOCK));
        assert!(c.holds(2 * BLOCK, (cap + 2) * BLOCK));
    }

    fn geometry(level: Level, n: usize) -> Geometry {
        Geometry::new(
            level,
            64 << 10,
            ArrayLayout::default_for(level),
            &vec![1 << 30; n],
        )
        .unwrap()
    }

    #[test]
    fn fastpath_takes_small_reads_of_unspanned_levels_and_small_raid0_writes() {
        let fp = FastPath::Unspanned;
        let (r0, r1, r5, r6, r10) = (
            geometry(Level::Raid0, 4),
            geometry(Level::Raid1, 2),
            geometry(Level::Raid5, 5),
            geometry(Level::Raid6, 6),
            geometry(Level::Raid10, 4),
        );
        for g in [&r0, &r1, &r5, &r6] {
            assert!(fp.takes(Op::Read, 4096, Some(g)), "{:?} read", g.level());
            assert!(
                !fp.takes(Op::Read, 128 << 10, Some(g)),
                "{:?} past a strip",
                g.level()
            );
        }
        assert!(fp.takes(Op::Write, 4096, Some(&r0)));
        for g in [&r1, &r5, &r6, &r10] {
            assert!(!fp.takes(Op::Write, 4096, Some(g)), "{:?} write", g.level());
        }
        assert!(
            !fp.takes(Op::Read, 4096, Some(&r10)),
            "a span needs later firmware"
        );
        assert!(FastPath::Spans.takes(Op::Read, 4096, Some(&r10)));
        assert!(
            fp.takes(Op::Write, 1 << 20, None),
            "a single drive takes all"
        );
        assert!(!fp.takes(Op::Flush, 0, None));
        assert!(!FastPath::Off.takes(Op::Read, 4096, Some(&r0)));
    }

    /// A controller volume (component 1, host 0) over one instant device
    /// (component 2) of 1 GiB: every device command completes as it
    /// arrives, 100 µs later.
    struct Bench {
        ctx: Ctx,
        vol: CtrlVol,
        /// Device commands seen: (op, offset, length).
        seen: Vec<(Op, u64, u32)>,
    }

    /// Device service time: long against the controller's own costs.
    const DEVICE_NS: Ns = 100_000;

    impl Bench {
        fn new(wb_bytes: u64, read_cache: bool) -> Self {
            let mut ctx = Ctx::new(1);
            let pools = CtrlPools {
                pcie_in: ctx.add_pool(1),
                pcie_out: ctx.add_pool(1),
                roc: ctx.add_pool(2),
                dma: ctx.add_pool(1),
                xor: ctx.add_pool(1),
                flush: ctx.add_pool(1),
            };
            let cfg = CtrlConfig {
                label: "c#0".into(),
                pools,
                cmd_ns: 5_000,
                ns_per_kb: 0.0,
                passthrough_member_ns: 0,
                map_member_ns: 0,
                full_stripe_destage: StripeGather::Always,
                pcie_mbps: 2000.0,
                pcie_in_mbps: 2000.0,
                dma_mbps: 2000.0,
                fw_latency: 10_000,
                wb_bytes,
                cache_bytes: 64 << 20,
                read_cache,
                readahead: ReadAhead::Off,
                readahead_bytes: 0,
                destage_per_member: 1,
                destage_task_ns: 0,
                task_writes: false,
                task_mbps: 0.0,
                destage_delay: 0,
                capacity: 1 << 30,
                geo: None,
                fastpath: FastPath::Off,
            };
            let vol = CtrlVol::new(cfg, CompId::nth(1), CompId::nth(0), CompId::nth(2));
            Bench {
                ctx,
                vol,
                seen: Vec::new(),
            }
        }

        /// Submit a host request and run until nothing is left; returns its
        /// latency.
        fn io(&mut self, op: Op, offset: u64, len: u32) -> Ns {
            let t0 = self.ctx.now;
            let id = self
                .ctx
                .reqs
                .alloc(Req::new(offset, len, op, CompId::nth(1), t0));
            self.vol.submit(&mut self.ctx, id);
            let mut latency = None;
            while let Some(next) = self.ctx.next_step() {
                match next {
                    Next::Event(c, r, k) if c.index() == 1 => self.vol.event(&mut self.ctx, r, k),
                    Next::Event(c, r, _) if c.index() == 2 => self.ctx.complete(r, CompId::nth(0)),
                    Next::Call(Call::Submit(c, r)) if c.index() == 2 => {
                        let q = self.ctx.reqs[r];
                        self.seen.push((q.op, q.offset, q.len));
                        let at = self.ctx.now + DEVICE_NS;
                        self.ctx.schedule(at, CompId::nth(2), r, 0);
                    }
                    Next::Call(Call::ChildDone(c, parent, child)) if c.index() == 1 => {
                        self.vol.child_done(&mut self.ctx, parent, child)
                    }
                    Next::Call(Call::ChildDone(c, NONE, r)) if c.index() == 0 => {
                        assert_eq!(r, id);
                        self.ctx.reqs.release(r);
                        latency = Some(self.ctx.now - t0);
                    }
                    Next::Call(Call::Advise(..)) => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
            self.vol.check();
            latency.expect("the request completed")
        }
    }

    #[test]
    fn write_back_acknowledges_from_cache_and_destages_later() {
        let mut b = Bench::new(8 << 20, true);
        let lat = b.io(Op::Write, 1 << 20, 4096);
        assert!(lat < DEVICE_NS, "acknowledged from cache in {lat} ns");
        // The data still reached the device, once, as a background destage.
        assert_eq!(b.seen, [(Op::Write, 1 << 20, 4096)]);
        assert_eq!(b.ctx.reqs.live(), 0, "every request released");
    }

    #[test]
    fn write_through_waits_for_the_device() {
        let mut b = Bench::new(0, true);
        let lat = b.io(Op::Write, 1 << 20, 4096);
        assert!(lat >= DEVICE_NS, "{lat} ns");
        assert_eq!(b.seen, [(Op::Write, 1 << 20, 4096)]);
    }

    #[test]
    fn a_cached_read_does_not_reach_the_device_again() {
        let mut b = Bench::new(0, true);
        let first = b.io(Op::Read, 8 << 20, 4096);
        let again = b.io(Op::Read, 8 << 20, 4096);
        assert_eq!(b.seen.len(), 1, "{:?}", b.seen);
        assert!(
            first >= DEVICE_NS && again < DEVICE_NS,
            "{first} then {again}"
        );
        // Without a read cache both go to the device.
        let mut b = Bench::new(0, false);
        b.io(Op::Read, 8 << 20, 4096);
        b.io(Op::Read, 8 << 20, 4096);
        assert_eq!(b.seen.len(), 2);
    }
}
