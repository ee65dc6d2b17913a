//! Flash SSD: host link, native command queue, firmware CPU, DRAM write
//! buffer, NAND channels × dies, page-mapped FTL with greedy GC, internal
//! sequential read-ahead.
//!
//! A read costs the link a command frame, the firmware its per-command and
//! per-KiB cost, the dies their array reads and the channels their transfers,
//! then the link the data. A write moves its data over the link, costs the
//! firmware, and completes in the buffer (`wc=on`) or after its pages are
//! programmed (`wc=off`). Garbage collection runs on the die that needs a
//! free block, holding that die for the relocations and the erase: this is
//! where the rare long latencies come from.

pub mod blockmap;
pub mod cache;
pub mod ftl;
pub mod nand;

use crate::engine::events;
use crate::engine::{ns, us, xfer_ns, CmdQueue, CompId, Ctx, Op, Pool, Req, ReqId, Server};
use cache::WriteBuffer;
use ftl::{Ftl, GcWork, Geometry, INVALID};
use nand::Nand;
use raidlab_core::preset::{FtlKind, SsdParams};
use raidlab_core::result::IoCounts;
use raidlab_core::topology::SsdState;
use raidlab_core::units::Ns;

events! {
    /// An SSD's events: data off the link, a command done, a late arrival.
    Ev {
        Xfer,
        Done,
        Arrive,
    }
}

const UNIT: u64 = 4096;

/// The later-ending of two prefetch windows.
trait MaxByEnd {
    fn max_by_end(self, other: Self) -> Self;
}

impl MaxByEnd for (u64, u64, Ns) {
    fn max_by_end(self, other: Self) -> Self {
        if self.1 >= other.1 {
            self
        } else {
            other
        }
    }
}
/// Time from a read's first page of data to its last (its handler's word,
/// clamped to `u32::MAX` ns): the link streams between them.
pub fn xfer_span(r: &crate::engine::Req) -> Ns {
    r.handler_word as Ns
}

/// Largest SATA data frame (FIS) payload: 8 KiB.
const FRAME: u64 = 8192;

/// Counters of one drive.
#[derive(Debug, Clone, Copy, Default)]
pub struct SsdCounters {
    /// Busy ns of the link.
    pub link_busy: Ns,
    /// Busy ns of the firmware (summed over cores).
    pub fw_busy: Ns,
    /// Busy ns of the dies (summed).
    pub die_busy: Ns,
    /// Busy ns of the program data path.
    pub write_path_busy: Ns,
    /// Host units written to the FTL.
    pub host_units: u64,
    /// Units relocated by GC.
    pub gc_units: u64,
}

/// Steady-state FTLs already warmed up in this build, by geometry.
///
/// The random-write warm-up costs tens of milliseconds per drive and does
/// not depend on anything but the FTL's geometry and the random draws. The
/// first drive of a geometry is warmed up with its own seed; the others get a
/// copy relabelled by a random offset of their own (see [`Ftl::relabel`]),
/// another sample of the same steady state.
#[derive(Default)]
pub struct WarmCache {
    /// Warmed-up FTLs by the geometry, all a warm-up depends on.
    ftls: Vec<(Geometry, Ftl)>,
}

impl WarmCache {
    fn steady(&mut self, key: Geometry, seed: u64) -> Ftl {
        if let Some((_, f)) = self.ftls.iter().find(|(k, _)| *k == key) {
            let mut f = f.clone();
            let k = raidlab_core::rng::Rng::new(seed).below(f.logical_units() as u64) as u32;
            f.relabel(k / f.upp() * f.upp());
            return f;
        }
        let mut f = Ftl::new(key);
        f.precondition_steady(seed);
        self.ftls.push((key, f.clone()));
        f
    }
}

/// One SSD.
pub struct Ssd {
    /// Label, `x25e#0`.
    pub label: String,
    /// The preset's rated endurance, TB written (`endurance_tbw`).
    pub rated_tbw: Option<f64>,
    /// Commands completed.
    io: IoCounts,
    id: CompId,
    host: CompId,
    /// The host link; on a full-duplex link, the direction read data
    /// leaves by (and commands).
    link: Server,
    /// A full-duplex link's other direction, which write data arrives by
    /// (`None`: one direction at a time, as SATA).
    link_in: Option<Server>,
    link_cmd: Ns,
    link_mbps: f64,
    /// The program data path (`write_path_mbps`, 0: none) every page to the
    /// flash takes, and the rate host data reaches the buffer at: the
    /// slower of it and the link.
    write_path: Server,
    write_path_mbps: f64,
    fill_mbps: f64,
    fw: Pool,
    fw_read: Ns,
    /// Firmware time per further flash read of a host read.
    fw_read_op: Ns,
    fw_write: Ns,
    fw_per_kb: f64,
    fw_gc: Ns,
    /// Background firmware work (GC bookkeeping) runs until here; host
    /// commands pre-empt it.
    fw_bg_until: Ns,
    /// End of the background work queued before the latest collection.
    /// Page programs wait for this: the reserve blocks stand in for the
    /// latest collection's while it runs, not for an older one's.
    fw_bg_prev: Ns,
    /// Paced GC: the firmware time of relocation each host page pays, the
    /// last collection's over the pages it freed.
    fw_bg_share: Ns,
    nand: Nand,
    ftl: Ftl,
    buf: WriteBuffer,
    wc: bool,
    /// Power-loss protection: a flush returns without draining the buffer.
    plp: bool,
    /// A read first waits for the write buffer to be programmed.
    reads_drain_buffer: bool,
    /// How long a write covering a unit only in part is held after the
    /// unit's old data is in (`SsdParams::partial_unit_commit_us`).
    partial_commit: Ns,
    /// A block-mapped FTL's log blocks (`None`: page-mapped), the time each
    /// way's merges run until, channels, and the host units written
    /// through it.
    blocks: Option<blockmap::LogBlocks>,
    merge_until: Vec<Ns>,
    channels: u32,
    block_host_units: u64,
    /// Native command queue (NCQ).
    queue: CmdQueue,
    ra_units: u64,
    /// Time the last write-through (wc=off) write was committed.
    write_committed: Ns,
    /// Prefetched windows (start unit, end unit, ready time): the current and the next.
    ra: [(u64, u64, Ns); 2],
    last_read_end: u64,
    die_rr: u32,
    page: Vec<u32>,
    capacity: u64,
    /// SLC cache: host pages it can still take, and their program time.
    slc_pages: u64,
    slc_prog: Ns,
    /// Paced GC's ingress: when the host units taken so far have used up
    /// the flash's sustained rate ([`Ssd::paced_ingress`]).
    ingress: Ns,
}

/// Host pages a drive's SLC cache takes from the start of a run. The drive
/// folds its SLC pages into the native mode while idle, which the
/// simulation does not model: a run starts after such idle time with the
/// cache empty, except in random-write steady state, where sustained
/// writes have used it up.
fn slc_pages_at_start(p: &SsdParams, state: SsdState) -> u64 {
    if state == SsdState::Steady || p.slc_cache_gb <= 0.0 {
        return 0;
    }
    (p.slc_cache_gb * 1e9 / (p.page_kb as f64 * 1024.0)) as u64
}

/// The drive's flash translation layer in `state`, from `warm`'s cache of
/// steady states where one is asked for, and the logical units it maps
/// (its capacity less `op`).
fn warm_ftl(
    p: &SsdParams,
    op: f64,
    state: SsdState,
    seed: u64,
    warm: &mut WarmCache,
) -> (Ftl, u64) {
    let full_units = (p.capacity_gb * 1e9 / UNIT as f64) as u64;
    let logical = ((full_units as f64) * (1.0 - op)) as u64;
    let ratio = full_units as f64 * (1.0 + p.spare_pct / 100.0) / logical as f64;
    let geometry = Geometry {
        logical_units: logical,
        physical_ratio: ratio,
        upp: p.page_kb / 4,
        ppb: p.pages_per_block,
        dies: p.channels * p.dies_per_channel,
        threshold: p.gc_free_blocks,
    };
    let mut ftl = match state {
        SsdState::Steady => warm.steady(geometry, seed),
        _ => Ftl::new(geometry),
    };
    if state == SsdState::Fill {
        ftl.fill_lazily();
    }
    ftl.reset_counters();
    (ftl, logical)
}

/// Whether a request's first and last 4 KiB units are covered only in part.
#[inline]
fn partial_ends(r: &Req) -> (bool, bool) {
    (
        !r.offset.is_multiple_of(UNIT),
        !(r.offset + r.len as u64).is_multiple_of(UNIT),
    )
}

impl Ssd {
    /// Build a drive and bring it to `state` by functional warm-up.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        label: String,
        id: CompId,
        host: CompId,
        p: &SsdParams,
        wc: bool,
        op: f64,
        link_mbps: f64,
        state: SsdState,
        seed: u64,
        warm: &mut WarmCache,
    ) -> Ssd {
        let (ftl, logical) = warm_ftl(p, op, state, seed, warm);
        // A block-mapped drive erases its real blocks.
        let block_scale = match p.ftl {
            FtlKind::Block => 1.0,
            FtlKind::Page => ftl.block_scale(),
        };
        Ssd {
            io: IoCounts::default(),
            label,
            rated_tbw: p.endurance_tbw,
            id,
            host,
            link: Server::default(),
            link_in: p.full_duplex.then(Server::default),
            link_cmd: us(p.link_cmd_us),
            link_mbps,
            write_path: Server::default(),
            write_path_mbps: p.write_path_mbps,
            fill_mbps: if p.write_path_mbps > 0.0 {
                link_mbps.min(p.write_path_mbps)
            } else {
                link_mbps
            },
            fw: Pool::new(p.fw_cores),
            fw_read: us(p.fw_read_us),
            fw_read_op: us(p.fw_read_op_us),
            fw_write: us(p.fw_write_us),
            fw_per_kb: p.fw_us_per_kb * 1000.0,
            fw_gc: us(p.fw_gc_us),
            fw_bg_until: 0,
            fw_bg_prev: 0,
            fw_bg_share: 0,
            nand: Nand::new(p, block_scale),
            ftl,
            buf: WriteBuffer::new(p.write_buffer_kb / 4),
            wc,
            plp: p.power_loss_protection,
            reads_drain_buffer: p.reads_drain_buffer,
            partial_commit: us(p.partial_unit_commit_us),
            // A logical block spans one erase block per channel.
            blocks: (p.ftl == FtlKind::Block)
                .then(|| blockmap::LogBlocks::new(p.pages_per_block * p.channels, p.log_blocks)),
            merge_until: vec![0; p.dies_per_channel as usize],
            channels: p.channels,
            block_host_units: 0,
            queue: CmdQueue::new(p.queue_depth),
            ra_units: p.readahead_kb as u64 / 4,
            ra: [(0, 0, 0); 2],
            write_committed: 0,
            last_read_end: u64::MAX,
            die_rr: 0,
            page: Vec::with_capacity((p.page_kb / 4) as usize),
            capacity: logical * UNIT,
            slc_pages: slc_pages_at_start(p, state),
            slc_prog: us(p.slc_program_us),
            ingress: 0,
        }
    }

    /// Bytes the host may address.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Heap bytes the drive's model holds (its FTL tables dominate).
    pub fn heap_bytes(&self) -> u64 {
        self.ftl.heap_bytes()
    }

    /// A request arrives.
    #[inline]
    pub fn submit(&mut self, ctx: &mut Ctx, id: ReqId) {
        if ctx.arrives_later(self.id, id, Ev::Arrive) {
            return;
        }
        if self.queue.admit(id) {
            self.start(ctx, id);
        }
    }

    /// A read of byte `offset` is coming: start loading its map entry.
    #[inline]
    pub fn advise(&self, offset: u64) {
        self.ftl.prefetch_lpn(self.ftl.fold(offset / UNIT));
    }

    /// Per-command firmware time (latency), after which the per-KiB work
    /// (ECC, buffers) runs alongside the data transfer: it occupies the
    /// firmware without delaying this command.
    #[inline]
    fn fw_occupy_per_kb(&mut self, t: Ns, len: u32) {
        let dur = ns(self.fw_per_kb * len as f64 / 1024.0);
        self.fw.reserve(t, dur);
    }

    /// NAND reads of units `first..=last`, starting at `t`; returns when the
    /// first and the last of the data are out of the flash. Each flash read
    /// after the first waits for the firmware to issue it (`op`, one after
    /// another; 0 for the read-ahead's stream).
    fn nand_read(&mut self, t: Ns, first: u64, last: u64, op: Ns) -> (Ns, Ns) {
        let (mut lo, mut hi) = (Ns::MAX, t);
        let mut t = t;
        let mut cur: Option<(u32, u32, u64)> = None; // (die, page, bytes)
        for u in first..=last {
            let lpn = self.ftl.fold(u);
            let Some((die, page)) = self.ftl.lookup(lpn) else {
                continue;
            };
            match &mut cur {
                Some((d, p, b)) if *d == die && *p == page => *b += UNIT,
                _ => {
                    if let Some((d, p, b)) = cur {
                        let done = self.nand.read(t, d, p, b);
                        lo = lo.min(done);
                        hi = hi.max(done);
                        if op > 0 {
                            t = self.fw_command(t, op);
                        }
                    }
                    cur = Some((die, page, UNIT));
                }
            }
        }
        if let Some((d, p, b)) = cur {
            let done = self.nand.read(t, d, p, b);
            lo = lo.min(done);
            hi = hi.max(done);
        }
        (lo.min(hi), hi)
    }

    /// Queue the firmware's share of relocating `moved` units (spread over
    /// its cores) behind any background work already queued.
    fn fw_background(&mut self, t: Ns, w: GcWork) {
        if self.nand.paced() {
            // Paced: no backlog; each host page pays its share as it goes.
            let freed = Nand::freed_pages(&w);
            if let Some(share) = (self.fw_gc * w.moved as Ns).checked_div(freed) {
                self.fw_bg_share = share;
            }
            return;
        }
        let dur = self.fw_gc * w.moved as Ns / self.fw.servers() as Ns;
        self.fw_bg_prev = self.fw_bg_until;
        self.fw_bg_until = self.fw_bg_until.max(t) + dur;
        self.fw.busy += dur * self.fw.servers() as Ns;
    }

    /// Firmware time for a host command at `t`: it goes ahead of background
    /// work, which it pushes back.
    #[inline]
    fn fw_command(&mut self, t: Ns, dur: Ns) -> Ns {
        let done = self.fw.reserve(t, dur);
        let pushed = dur / self.fw.servers() as Ns;
        if self.fw_bg_until > t {
            self.fw_bg_until += pushed;
        }
        if self.fw_bg_prev > t {
            self.fw_bg_prev += pushed;
        }
        done
    }

    /// Queue a collection's work on the dies of `die`'s pool, each its
    /// share (see pools in the FTL's notes).
    fn pool_gc(&mut self, t: Ns, die: u32, w: GcWork) {
        let span = self.ftl.span();
        let first = die - die % span;
        for i in 0..span {
            self.nand.gc(t, first + i, w.share(i, span));
        }
    }

    /// Program the page in `self.page` on the least busy die, after any GC it triggers.
    #[inline]
    fn program(&mut self, t: Ns) -> Ns {
        if self.blocks.is_some() {
            return self.program_block_mapped(t);
        }
        // A die that is down to its reserve collects in the background first;
        // the page then goes to whichever die is free soonest.
        let mut die = self.nand.least_busy(self.die_rr);
        for _ in 0..self.ftl.dies() {
            let w = self.ftl.gc_ahead(die);
            if w.is_empty() {
                break;
            }
            self.pool_gc(t, die, w);
            self.fw_background(t, w);
            self.gc_through_write_path(t, w);
            die = self.nand.least_busy(self.die_rr);
        }
        // Space balancing: a die with no free block to spare and nothing to
        // reclaim takes no page; the next die that has room does.
        die = self.ftl.with_room(die);
        // The round-robin start for ties, kept below the die count.
        self.die_rr += 1;
        if self.die_rr == self.ftl.dies() {
            self.die_rr = 0;
        }
        let work = self.ftl.write_page(die, &self.page);
        // The page needs the blocks the firmware's earlier GC work frees; a
        // collection started for the reserve runs behind it, but one the page
        // itself forced (its die had no free block) must finish first.
        let ready = if work.is_empty() {
            self.fw_bg_prev
        } else {
            self.pool_gc(t, die, work);
            self.fw_background(t, work);
            self.gc_through_write_path(t, work);
            self.fw_bg_until
        };
        // Paced GC: the page's share of relocation work, on the firmware.
        let ready = if self.nand.paced() {
            self.fw.reserve(t, self.fw_bg_share)
        } else {
            ready
        };
        if self.slc_pages > 0 {
            self.slc_pages -= 1;
            return self.nand.program_for(t.max(ready), die, self.slc_prog);
        }
        self.nand.program(t.max(ready), die)
    }

    /// Program the page in `self.page` (drive unit numbers) through the
    /// block-mapped FTL. A logical block is one erase block on each of the
    /// channels' dies of one way (the channels interleave its pages); ways
    /// hold different blocks and merge independently, each one merge at a
    /// time. A merge copies on every die of its way and erases there; the
    /// page waits for the merge it forces, then programs on its die.
    fn program_block_mapped(&mut self, t: Ns) -> Ns {
        let upp = self.ftl.upp() as u64;
        let unit = self
            .page
            .iter()
            .copied()
            .find(|&u| u != INVALID)
            .unwrap_or(0) as u64;
        let page = unit / upp;
        let blocks = self.blocks.as_mut().expect("block-mapped");
        let merge = blocks.write(page);
        let block = page / blocks.ppb() as u64;
        self.block_host_units += upp;
        let ch = self.channels as u64;
        let ways = self.merge_until.len() as u64;
        let way = (block % ways) as usize;
        let first = way as u32 * self.channels;
        let mut start = t;
        if !merge.is_empty() {
            let at = t.max(self.merge_until[way]);
            // Every die of the way copies its own block's share of pages.
            let dies = first..first + self.channels;
            let per_die = merge.copied / self.channels;
            self.merge_until[way] = self.nand.merge(at, dies, per_die, merge.erases);
            start = self.merge_until[way];
        }
        self.nand.program(start, first + (page % ch) as u32)
    }

    /// A command the drive has admitted: its read or write path.
    #[inline]
    fn start(&mut self, ctx: &mut Ctx, id: ReqId) {
        self.nand.set_now(ctx.now);
        let r = ctx.reqs[id];
        if r.op == Op::Flush {
            return self.start_flush(ctx, id);
        }
        let first = r.offset / UNIT;
        let last = (r.offset + r.len as u64 - 1) / UNIT;
        match r.op {
            Op::Read => self.start_read(ctx, id, &r, first, last),
            Op::Write => self.start_write(ctx, id, &r, first, last),
            Op::Flush => unreachable!("flushes take their own path"),
        }
    }

    /// A cache flush: a command on the link and the firmware; with the
    /// write cache on and no power-loss protection, it also waits until
    /// every buffered unit is programmed, a partly filled page included
    /// (padded, as a drive does when it must commit one).
    fn start_flush(&mut self, ctx: &mut Ctx, id: ReqId) {
        let t = self.link.reserve(ctx.now, self.link_cmd);
        let t = self.fw_command(t, self.fw_write);
        let done = if self.wc && !self.plp {
            self.drain_buffer(t)
        } else {
            t
        };
        ctx.schedule(done, self.id, id, Ev::Done);
    }

    /// Program everything in the write buffer from `t`, a partly filled
    /// page padded (as a drive does when it must commit one); returns when
    /// the last buffered unit is on the flash.
    fn drain_buffer(&mut self, t: Ns) -> Ns {
        let mut done = t.max(self.buf.drained());
        if !self.buf.pending.is_empty() {
            let upp = self.ftl.upp() as usize;
            let n = self.buf.pending.len() as u32;
            self.page.clear();
            self.page.append(&mut self.buf.pending);
            self.page.resize(upp, INVALID);
            let programmed = self.program(t);
            self.buf.programming(programmed, n);
            done = done.max(programmed);
        }
        done
    }

    /// A read of units `first..=last`: command, firmware, (on a drive whose
    /// reads drain the write buffer, the buffer's programs), then the data
    /// from the read-ahead buffer or the flash, streamed over the link.
    #[inline]
    fn start_read(&mut self, ctx: &mut Ctx, id: ReqId, r: &Req, first: u64, last: u64) {
        let t = self.link.reserve(ctx.now, self.link_cmd);
        let t = self.fw_command(t, self.fw_read);
        self.fw_occupy_per_kb(t, r.len);
        let t = if self.reads_drain_buffer && self.wc {
            self.drain_buffer(t)
        } else {
            t
        };
        let (data_first, data_last) = match self.read_ahead_hit(first, last) {
            Some(ready) => (t.max(ready), t.max(ready)),
            None => self.nand_read(t, first, last, self.fw_read_op),
        };
        if self.ra_units > 0 && r.offset == self.last_read_end {
            self.read_ahead(t, first, last);
        }
        self.last_read_end = r.offset + r.len as u64;
        // The link streams the data as it comes out of the flash: it
        // starts with the first page and ends no sooner than one data
        // frame after the last.
        ctx.reqs[id].handler_word = (data_last - data_first).min(u32::MAX as Ns) as u32;
        ctx.schedule(data_first, self.id, id, Ev::Xfer);
    }

    /// When units `first..=last` are in DRAM from a read-ahead (up to two
    /// windows), if they are.
    #[inline]
    fn read_ahead_hit(&self, first: u64, last: u64) -> Option<Ns> {
        let covered = |w: &(u64, u64, Ns)| first >= w.0 && last < w.1;
        self.ra
            .iter()
            .find(|w| covered(w))
            .map(|w| w.2)
            .or_else(|| {
                // A request spanning both windows.
                let (a, b) = (self.ra[0], self.ra[1]);
                (a.1 == b.0 && first >= a.0 && last < b.1 && a.1 > a.0).then_some(a.2.max(b.2))
            })
    }

    /// A sequential stream read `first..=last`: keep the next window
    /// prefetched, at least two of the stream's requests long, fetching it
    /// when the stream passes the middle of the current one.
    #[inline]
    fn read_ahead(&mut self, t: Ns, first: u64, last: u64) {
        let window = self.ra_units.max(2 * (last - first + 1));
        let end = self.ra[1].1.max(self.ra[0].1);
        let cur_start = if self.ra[1].1 > self.ra[1].0 {
            self.ra[1].0
        } else {
            self.ra[0].0
        };
        let stale = last + 1 > end || end == 0;
        let passed_middle = last + 1 >= cur_start + (end - cur_start) / 2;
        if stale || passed_middle {
            let a = if stale { last + 1 } else { end };
            let b = (a + window - 1).min(self.capacity / UNIT - 1);
            if a <= b {
                let (_, ready) = self.nand_read(t, a, b, 0);
                self.ra = if stale {
                    [(a, b + 1, ready), (0, 0, 0)]
                } else {
                    [self.ra[1].max_by_end(self.ra[0]), (a, b + 1, ready)]
                };
            }
        }
    }

    /// A write of units `first..=last`: its data over the link, firmware,
    /// then into the write buffer (`wc=on`) or straight to the flash.
    #[inline]
    fn start_write(&mut self, ctx: &mut Ctx, id: ReqId, r: &Req, first: u64, last: u64) {
        let xfer = xfer_ns(r.len as u64, self.link_mbps);
        let t = match &mut self.link_in {
            // The command goes over the link, its data comes in the other way.
            Some(inbound) => inbound.reserve(self.link.reserve(ctx.now, self.link_cmd), xfer),
            None => self.link.reserve(ctx.now, self.link_cmd + xfer),
        };
        let data_start = self.through_write_path(t - xfer, r.len);
        let t = self.fw_command(t, self.fw_write);
        self.fw_occupy_per_kb(t, r.len);
        // A write over the read-ahead window makes it stale.
        if self.ra.iter().any(|w| first < w.1 && last >= w.0) {
            self.ra = [(0, 0, 0); 2];
        }
        let (head, tail) = partial_ends(r);
        let merged = self.read_partial_units(t, (head, tail), first, last);
        // When the last of the data is in the drive.
        let filled = data_start + xfer_ns(r.len as u64, self.fill_mbps);
        let done = if self.wc {
            // A drive that keeps its unit atomic commits a merged unit
            // before it acknowledges the write.
            let held = if head || tail { self.partial_commit } else { 0 };
            let taken = self.paced_ingress(data_start, filled, last - first + 1);
            (merged + held)
                .max(taken)
                .max(self.buffered_write(data_start, r.len, first, last))
        } else {
            self.write_through(merged.max(filled), first, last)
        };
        ctx.schedule(done, self.id, id, Ev::Done);
    }

    /// When a paced drive's firmware has taken a write of `units` host units
    /// whose data streams in from `start` to `end`. A firmware that pays for
    /// collection page by page as the host writes (`gc_pacing`) must also
    /// hold the host to the rate that work allows, or its free blocks run
    /// out: it throttles ingress to the flash's sustained rate (one page per
    /// [`Nand::host_page_interval`]) rather than letting the buffer absorb
    /// bursts until it is full, as host write throttles do (US 11,481,145
    /// B2, "Dynamically throttling host write data rate", 2022: a throttle
    /// set from the internal NAND rate; US 11,042,322 B2, "SSD supporting
    /// low latency operation", 2021: ingress metered by the room left in
    /// the write queue). A page's units are taken together, so up to a page
    /// goes in at once and the rest wait their turn: bursts of Poisson
    /// arrivals then wait tens of microseconds, more as the load nears the
    /// sustained rate (SSD-iq's PM9A3 runs, docs/model.md). Unpaced drives,
    /// and block-mapped FTLs, take what their buffer has room for.
    fn paced_ingress(&mut self, start: Ns, end: Ns, units: u64) -> Ns {
        debug_assert!(start <= end, "data arrives before it is all in");
        if !self.nand.paced() || self.blocks.is_some() {
            return end;
        }
        let upp = self.ftl.upp() as Ns;
        let per_unit = self.nand.host_page_interval() / upp;
        // Units are metered as they arrive, and no faster than the link
        // brings them: the last one's turn ends no sooner than one unit
        // interval after it is in.
        self.ingress = (self.ingress.max(start) + units * per_unit).max(end + per_unit);
        // The last unit goes in once all but a page's worth of the units
        // before it have had their turn.
        self.ingress.saturating_sub(upp * per_unit).max(end)
    }

    /// A page-mapped drive maps whole 4 KiB units, so a write that covers
    /// its first or last unit only in part must merge it with the unit's
    /// old data: read from the flash from `t`, unless the unit still waits
    /// in the write buffer. `ends`: whether the first and the last unit are
    /// covered only in part ([`partial_ends`]). Returns when the old data
    /// is in (`t` when no read is needed). This is the device-side read-modify-write of a
    /// sub-4 KiB write that Jon Derrick measured on a Solidigm P5520 (kernel
    /// commit 8745faa95611, 2023). A block-mapped FTL writes sectors into
    /// its log blocks as they come, and its merges copy the rest.
    fn read_partial_units(&mut self, t: Ns, ends: (bool, bool), first: u64, last: u64) -> Ns {
        if self.blocks.is_some() {
            return t;
        }
        let (head, tail) = ends;
        let mut ready = t;
        for (partial, u) in [(head, first), (tail && (first != last || !head), last)] {
            if partial && !self.buf.pending.contains(&self.ftl.fold(u)) {
                ready = ready.max(self.nand_read(t, u, u, 0).1);
            }
        }
        ready
    }

    /// A collection's relocated pages are programmed through the same path
    /// as host data: they occupy it from `t`, and host data queues behind.
    #[inline]
    fn gc_through_write_path(&mut self, t: Ns, w: GcWork) {
        if self.write_path_mbps > 0.0 && w.moved > 0 {
            let bytes = w.moved as u64 * UNIT;
            self.write_path
                .reserve(t, xfer_ns(bytes, self.write_path_mbps));
        }
    }

    /// The host data of a write whose transfer starts at `data_start`
    /// streams through the write path (when the drive has one of its own);
    /// returns when the data starts reaching the buffer at `fill_mbps`.
    #[inline]
    fn through_write_path(&mut self, data_start: Ns, len: u32) -> Ns {
        if self.write_path_mbps <= 0.0 {
            return data_start;
        }
        let dur = xfer_ns(len as u64, self.write_path_mbps);
        let done = self.write_path.reserve(data_start, dur);
        // The data fills the buffer at the slower rate and ends when both
        // the link and the engine are through.
        let end = done.max(data_start + xfer_ns(len as u64, self.link_mbps));
        end - xfer_ns(len as u64, self.fill_mbps)
    }

    /// The data streams into the buffer a page at a time as it comes off
    /// the link (and the write path), and each full page programs from there: a write larger
    /// than the room left completes when its last page is in. Returns when
    /// the last page is in the buffer.
    #[inline]
    fn buffered_write(&mut self, data_start: Ns, len: u32, first: u64, last: u64) -> Ns {
        let upp = self.ftl.upp() as usize;
        let mut u = first;
        let mut ta = data_start;
        while u <= last {
            let k = (upp as u64).min(last - u + 1);
            let arrived =
                data_start + xfer_ns(((u + k - first) * UNIT).min(len as u64), self.fill_mbps);
            ta = self.buf.admit(ta.max(arrived), k as u32);
            for x in u..u + k {
                let l = self.unit_key(x);
                self.buf.pending.push(l);
            }
            while self.buf.pending.len() >= upp {
                self.page.clear();
                self.page.extend(self.buf.pending.drain(..upp));
                let done = self.program(ta);
                self.buf.programming(done, upp as u32);
            }
            u += k;
        }
        ta
    }

    /// With its volatile cache off the drive commits one write before it
    /// starts the next (Intel: 170 MB/s sequential writes fall to 120 MB/s
    /// with the write cache off). Returns when the last page is programmed.
    #[inline]
    fn write_through(&mut self, t: Ns, first: u64, last: u64) -> Ns {
        let upp = self.ftl.upp() as u64;
        let t = t.max(self.write_committed);
        let mut done = t;
        let mut u = first;
        while u <= last {
            self.page.clear();
            for k in 0..upp {
                self.page.push(if u + k <= last {
                    self.unit_key(u + k)
                } else {
                    INVALID
                });
            }
            done = done.max(self.program(t));
            u += upp;
        }
        self.write_committed = done;
        done
    }

    /// A timed event of this drive.
    pub fn event(&mut self, ctx: &mut Ctx, id: ReqId, kind: u8) {
        match Ev::from_code(kind) {
            Ev::Arrive => self.submit(ctx, id),
            Ev::Xfer => {
                let len = ctx.reqs[id].len as u64;
                let last = ctx.now + xfer_span(&ctx.reqs[id]);
                let t = self.link.reserve(ctx.now, xfer_ns(len, self.link_mbps));
                let t = t.max(last + xfer_ns(len.min(FRAME), self.link_mbps));
                ctx.schedule(t, self.id, id, Ev::Done);
            }
            Ev::Done => {
                let r = &ctx.reqs[id];
                if r.op != Op::Flush {
                    self.io.add(r.op == Op::Write, r.len as u64);
                }
                ctx.complete(id, self.host);
                if let Some(n) = self.queue.complete() {
                    self.start(ctx, n);
                }
            }
        }
    }

    /// How a written unit is named on its way to a page: folded into the
    /// simulated space for the page-mapped FTL, the drive's own unit number
    /// for the block-mapped one (which keeps only its log blocks).
    #[inline]
    fn unit_key(&self, unit: u64) -> u32 {
        if self.blocks.is_some() {
            u32::try_from(unit).expect("a block-mapped drive under 16 TiB")
        } else {
            self.ftl.fold(unit)
        }
    }

    /// Commands completed so far.
    pub fn io(&self) -> IoCounts {
        self.io
    }

    /// Assert the drive's invariants: its FTL's maps agree, and its
    /// command queue holds no more than its depth.
    pub fn check(&self) {
        self.ftl.check();
        self.queue.check(&self.label);
    }

    /// Counters for utilisation and write amplification.
    pub fn counters(&self) -> SsdCounters {
        SsdCounters {
            link_busy: self.link.busy + self.link_in.as_ref().map_or(0, |l| l.busy),
            fw_busy: self.fw.busy / self.fw.servers() as Ns,
            die_busy: self.nand.die_busy().0 / self.nand.die_busy().1 as Ns,
            write_path_busy: self.write_path.busy,
            host_units: self.ftl.host_units + self.block_host_units,
            gc_units: self.ftl.gc_units
                + self.blocks.as_ref().map_or(0, |b| b.copied) * self.ftl.upp() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Call, Next, Req, NONE};
    use raidlab_core::preset::{Preset, PresetDb};

    /// The x25e preset's parameters.
    fn x25e() -> SsdParams {
        match PresetDb::builtin().get("x25e") {
            Some(Preset::Ssd(p)) => p.clone(),
            _ => panic!("x25e is an SSD preset"),
        }
    }

    /// A drive (component 1, host 0) in `state`, and an engine.
    fn drive(p: &SsdParams, state: SsdState) -> (Ssd, Ctx) {
        let mut warm = WarmCache::default();
        let s = Ssd::new(
            "d#0".into(),
            CompId::nth(1),
            CompId::nth(0),
            p,
            true,
            0.0,
            p.link_mbps,
            state,
            7,
            &mut warm,
        );
        (s, Ctx::new(1))
    }

    fn request(ctx: &mut Ctx, offset: u64, len: u32, op: Op) -> ReqId {
        ctx.reqs
            .alloc(Req::new(offset, len, op, CompId::nth(1), ctx.now))
    }

    /// Run the drive's events; returns (request, completion time) in
    /// completion order.
    fn run(s: &mut Ssd, ctx: &mut Ctx) -> Vec<(ReqId, Ns)> {
        let mut done = Vec::new();
        while let Some(next) = ctx.next_step() {
            match next {
                Next::Event(c, r, k) if c.index() == 1 => s.event(ctx, r, k),
                Next::Call(Call::ChildDone(c, NONE, child)) if c.index() == 0 => {
                    done.push((child, ctx.now))
                }
                Next::Call(Call::Submit(c, r)) if c.index() == 1 => s.submit(ctx, r),
                Next::Call(Call::Advise(..)) => {}
                other => panic!("the drive alone made {other:?}"),
            }
        }
        done
    }

    #[test]
    fn a_lone_read_costs_its_parts_and_no_more() {
        let p = x25e();
        let (mut s, mut ctx) = drive(&p, SsdState::Fill);
        let r = request(&mut ctx, 1 << 20, 4096, Op::Read);
        s.submit(&mut ctx, r);
        let done = run(&mut s, &mut ctx);
        assert_eq!(done.len(), 1);
        // Command frames, firmware, the page read, and the data over the
        // flash channel and the host link: each paid once, in series.
        let parts = us(p.link_cmd_us)
            + us(p.fw_read_us)
            + us(p.read_us)
            + xfer_ns(4096, p.channel_mbps)
            + xfer_ns(4096, p.link_mbps);
        let t = done[0].1;
        assert!(t >= parts * 9 / 10, "{t} ns against parts of {parts} ns");
        assert!(t <= parts * 3 / 2, "{t} ns against parts of {parts} ns");
        s.check();
        assert_eq!(s.io().reads, 1);
        assert_eq!(s.io().read_bytes, 4096);
    }

    /// A read submitted with a write: (the write's completion, the read's).
    fn write_then_read(p: &SsdParams) -> (Ns, Ns) {
        let (mut s, mut ctx) = drive(p, SsdState::Fill);
        let w = request(&mut ctx, 0, 4096, Op::Write);
        let r = request(&mut ctx, 1 << 20, 4096, Op::Read);
        s.submit(&mut ctx, w);
        s.submit(&mut ctx, r);
        let done = run(&mut s, &mut ctx);
        let at = |id| done.iter().find(|d| d.0 == id).expect("completes").1;
        (at(w), at(r))
    }

    #[test]
    fn a_paced_drive_takes_a_page_at_once_and_meters_the_rest() {
        let p = SsdParams {
            gc_pacing: true,
            ..x25e()
        };
        let (mut s, _) = drive(&p, SsdState::Fill);
        let upp = s.ftl.upp() as u64;
        let per_unit = s.nand.host_page_interval() / upp;
        assert!(per_unit > 0, "the X25-E's flash takes time per unit");
        // A burst of single-unit writes, all arrived by 10 µs: a page's
        // worth goes straight in, then one per unit interval.
        let end = 10_000;
        for k in 0..upp {
            assert_eq!(
                s.paced_ingress(0, end, 1),
                end,
                "unit {k} of the first page"
            );
        }
        assert_eq!(s.paced_ingress(0, end, 1), end + per_unit);
        assert_eq!(s.paced_ingress(0, end, 1), end + 2 * per_unit);
        // Once the flash has caught up, the next write goes straight in.
        let later = 1_000_000;
        assert_eq!(s.paced_ingress(later, later + 1, 1), later + 1);
        // An unpaced drive takes what arrives.
        let (mut u, _) = drive(&x25e(), SsdState::Fill);
        for _ in 0..2 * upp {
            assert_eq!(u.paced_ingress(0, end, 1), end);
        }
    }

    proptest::proptest! {
        /// Whatever the writes' sizes and arrival times, a paced drive takes
        /// each write once its data is in, and takes no more units by any
        /// time than the sustained rate allows since the first arrived, plus
        /// a page (and the link's own pace when that is slower).
        #[test]
        fn the_ingress_meter_never_runs_ahead_of_the_flash(
            writes in proptest::collection::vec((0u64..20_000, 1u64..64, 0u64..2_000), 1..200)
        ) {
            let p = SsdParams { gc_pacing: true, ..x25e() };
            let (mut s, _) = drive(&p, SsdState::Fill);
            let upp = s.ftl.upp() as u64;
            let per_unit = s.nand.host_page_interval() / upp;
            let (mut t, mut taken_units) = (0, 0);
            let mut first = None;
            for (gap, units, xfer) in writes {
                t += gap;
                let end = t + xfer;
                let taken = s.paced_ingress(t, end, units);
                proptest::prop_assert!(taken >= end, "taken {taken} before its data is in at {end}");
                let t0 = *first.get_or_insert(t);
                taken_units += units;
                // By `taken`, at most a page plus one unit per interval since
                // the first arrival (or per unit of link time) has gone in.
                let allowed = upp + (taken - t0) / per_unit + 1;
                proptest::prop_assert!(
                    taken_units <= allowed.max(units + upp),
                    "{taken_units} units taken by {taken} ns, {allowed} allowed"
                );
            }
        }
    }

    #[test]
    fn a_read_behind_a_small_buffer_waits_for_its_program() {
        let p = x25e();
        assert!(p.reads_drain_buffer, "the X25-E's reads drain its buffer");
        let (w, r) = write_then_read(&p);
        // The write is acknowledged from the buffer; the read goes to the
        // flash only once the buffered page is programmed.
        assert!(w < us(p.program_us), "write acknowledged at {w} ns");
        assert!(r > us(p.program_us + p.read_us), "read done at {r} ns");
        let past = SsdParams {
            reads_drain_buffer: false,
            ..p.clone()
        };
        let (_, r_past) = write_then_read(&past);
        assert!(
            r_past < us(p.program_us),
            "a drive reading past its buffer: {r_past} ns"
        );
    }

    #[test]
    fn commands_past_the_queue_depth_wait_and_all_complete_in_time() {
        let p = x25e();
        let (mut s, mut ctx) = drive(&p, SsdState::Fill);
        let n = p.queue_depth + 8;
        let ids: Vec<ReqId> = (0..n)
            .map(|i| request(&mut ctx, i as u64 * (1 << 20), 4096, Op::Read))
            .collect();
        for &id in &ids {
            s.submit(&mut ctx, id);
        }
        assert_eq!(s.queue.outstanding(), p.queue_depth, "the queue is full");
        s.check();
        let done = run(&mut s, &mut ctx);
        assert_eq!(done.len(), n as usize, "every command completes");
        assert_eq!(s.queue.outstanding(), 0);
        // The last of the waiting commands finished after a slot freed.
        let first = done.iter().map(|d| d.1).min().unwrap();
        let last_waiting = done.iter().find(|d| d.0 == ids[n as usize - 1]).unwrap().1;
        assert!(last_waiting > first);
    }

    #[test]
    fn writes_in_steady_state_move_data_for_the_host() {
        let p = x25e();
        let (mut s, mut ctx) = drive(&p, SsdState::Steady);
        let writes = 2000u64;
        let span = s.capacity() / 4096;
        let mut rng = raidlab_core::rng::Rng::new(3);
        for _ in 0..writes {
            let r = request(&mut ctx, rng.below(span) * 4096, 4096, Op::Write);
            s.submit(&mut ctx, r);
            run(&mut s, &mut ctx);
        }
        s.check();
        let c = s.counters();
        assert_eq!(c.host_units, writes, "one 4 KiB unit per write");
        // Steady-state random writes relocate data: write amplification
        // above one, as GC collects blocks that still hold valid units.
        assert!(c.gc_units > 0, "GC relocated nothing");
    }
}
