//! The NAND array: channels × dies. A die runs one array operation at a
//! time (read, program, erase) on a FIFO timeline; a channel moves one page
//! at a time between a die's register and the controller: in the order the
//! transfers were dispatched, or (`channel_order = "ready"`) in the first
//! gap of its calendar after the page is ready.
//!
//! Operations are placed on the timelines in dispatch order (the firmware's
//! per-die queues are FIFO, except that reads overtake queued programs and
//! GC work, below), so no event is needed per NAND operation.
//!
//! Host reads go ahead of the host programs queued on their die (firmware
//! read-first scheduling) and wait for the program under way, or only for
//! its loop under way where the flash suspends programs. Garbage collection
//! runs in the background of a die: host reads go ahead of queued GC work
//! (firmware read priority and program/erase suspend) and wait at most for
//! the GC operation in progress, pushing the GC backlog back by their own
//! time; host programs wait for the backlog, because they need the blocks
//! it frees.

use crate::engine::{us, xfer_ns};
use crate::ssd::ftl::GcWork;
use raidlab_core::preset::{ChannelOrder, SsdParams};
use raidlab_core::units::Ns;
use std::hint::select_unpredictable;

/// A channel's timeline: the transfers booked on it as busy intervals, so a
/// transfer whose page is ready early can use a gap left before a transfer
/// booked earlier for a page ready later. A flash controller moves whichever
/// die's page is ready; booking channels first come, first served in the
/// order reads were dispatched would hold a page ready now behind one whose
/// die is still reading.
#[derive(Debug, Clone, Default)]
pub struct Calendar {
    /// Busy intervals `[start, end)`, sorted and disjoint, adjacent ones
    /// merged.
    busy: std::collections::VecDeque<(Ns, Ns)>,
    /// Nothing may be placed before this: the end of intervals forgotten to
    /// bound the calendar or, in order, the end of the last booking.
    floor: Ns,
    /// Total time booked.
    booked: Ns,
    /// Serve transfers in the order they are booked (`dispatch`): none goes
    /// into a gap before the last one booked.
    in_order: bool,
}

/// Intervals a channel calendar keeps before it forgets its oldest (and
/// treats the time before them as busy): a bound on memory and on the scan.
/// Far more than the transfers in flight on one channel (its dies times the
/// few pages each has queued), so forgetting costs no gap a later transfer
/// could use in practice.
const CALENDAR_KEEP: usize = 256;

impl Calendar {
    /// An empty calendar; `in_order`: transfers go in booking order.
    pub fn new(in_order: bool) -> Calendar {
        Calendar {
            in_order,
            ..Calendar::default()
        }
    }

    /// Forget the intervals that end by `now`: every booking from here on
    /// starts no earlier than the simulation's present, so no gap before
    /// it can be used (they count as the floor), and the search below
    /// runs over the transfers still to come.
    #[inline]
    pub fn forget_before(&mut self, now: Ns) {
        while let Some(&(_, end)) = self.busy.front() {
            if end > now {
                break;
            }
            self.floor = self.floor.max(end);
            self.busy.pop_front();
        }
    }

    /// Book `dur` in the first gap at or after `at` that holds it (after
    /// the last booking when in order); returns the transfer's end.
    pub fn reserve(&mut self, at: Ns, dur: Ns) -> Ns {
        if self.in_order {
            // In order: after the last booking, which is all the calendar
            // needs to keep (`floor`).
            let s = at.max(self.floor);
            self.floor = s + dur;
            self.booked += dur;
            return s + dur;
        }
        let mut s = at.max(self.floor);
        let mut i = self.busy.partition_point(|&(_, e)| e <= s);
        while let Some(&(a, b)) = self.busy.get(i) {
            if s + dur <= a {
                break;
            }
            s = s.max(b);
            i += 1;
        }
        self.insert(i, s, s + dur);
        self.booked += dur;
        s + dur
    }

    /// Put `[s, e)` at position `i` (after every interval ending by `s`,
    /// before every interval starting at or after `e`), merging neighbours
    /// it touches.
    fn insert(&mut self, i: usize, s: Ns, e: Ns) {
        let joins_prev = i > 0 && self.busy[i - 1].1 == s;
        let joins_next = self.busy.get(i).is_some_and(|&(a, _)| a == e);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = e,
            (false, true) => self.busy[i].0 = s,
            (false, false) => self.busy.insert(i, (s, e)),
        }
        while self.busy.len() > CALENDAR_KEEP {
            if let Some((_, end)) = self.busy.pop_front() {
                self.floor = self.floor.max(end);
            }
        }
        debug_assert!(self
            .busy
            .iter()
            .zip(self.busy.iter().skip(1))
            .all(|(x, y)| x.1 < y.0));
    }

    /// Total time booked.
    pub fn booked(&self) -> Ns {
        self.booked
    }
}

/// One die: its foreground timeline and its background GC backlog.
#[derive(Debug, Clone, Copy, Default)]
pub struct Die {
    /// Foreground (host) operations are placed up to here.
    pub free_at: Ns,
    /// Queued GC work runs until here.
    pub gc_until: Ns,
    /// Busy time reserved (host and GC).
    pub busy: Ns,
    /// Paced GC: the backlog one host page waits for (the last collection's
    /// time over the pages it freed).
    pub gc_share: Ns,
    /// Host programs (in progress and queued) run until here.
    pub prog_until: Ns,
    /// The die's register is free of its last read from here.
    pub read_free: Ns,
}

/// Read reference voltages a page of each type needs, for cells of 1-4
/// bits, in the binary-reflected Gray code's order (lower page first): one
/// voltage separates the states for the lower page, two for the next, four
/// for the next, as Cai, Ghose, Haratsch, Luo and Mutlu describe MLC and TLC
/// reads ("Error Characterization, Mitigation, and Recovery in
/// Flash-Memory-Based Solid-State Drives", Proc. IEEE 105(9), 2017, §II).
const SENSES: [u64; 4] = [1, 2, 4, 8];

/// Array read time of each page type when the mean over a word line's
/// `bits` types is `mean`: a read is a fixed part (bit-line precharge, word
/// line set-up, data into the page register) plus one sensing per reference
/// voltage, the fixed part taken as one sensing's length (an assumption:
/// datasheets give tR whole). SLC (`bits` 1) reads in `mean`.
pub fn page_read_times(mean: Ns, bits: u32) -> [Ns; 4] {
    let bits = bits.clamp(1, 4) as usize;
    let units: u64 = SENSES[..bits].iter().map(|s| 1 + s).sum();
    let mut t = [mean; 4];
    for (i, s) in SENSES[..bits].iter().enumerate() {
        // Each type's share of the word line's sensing units, scaled so
        // that the types average `mean`.
        t[i] = (mean as u128 * (1 + s) as u128 * bits as u128 / units as u128) as Ns;
    }
    t
}

/// Where the host programs booked on a die can give way to a host read:
/// between a program's loops when the flash suspends; otherwise only
/// between programs, a program's data going into the die's register just
/// before it where the flash has no cache register to take it during the
/// program before.
fn give_way_step(p: &SsdParams) -> Ns {
    let suspend = us(p.program_suspend_us);
    if suspend > 0 {
        suspend
    } else if p.cache_program {
        us(p.program_us)
    } else {
        us(p.program_us) + xfer_ns(p.page_kb as u64 * 1024, p.channel_mbps)
    }
}

/// Host pages the sustained cost of a page is averaged over (an
/// exponential average of this span): some forty pages per die of a
/// 96-die drive, so many collections, each booked whole on its die when it
/// starts, are spread over the pages they serve.
const PAGE_COST_WINDOW: Ns = 4096;

/// Timelines and timings of one drive's flash.
pub struct Nand {
    /// One timeline per die (die d sits on channel d % channels). Private:
    /// every change to a die also updates its entry in `ready`.
    dies: Vec<Die>,
    /// One timeline per channel.
    channels: Vec<Calendar>,
    /// Per die: when it can take a program (free and past its GC backlog),
    /// kept in one array so finding the readiest die is a short scan; the
    /// array holds the dies twice over, so a scan from any die wraps round
    /// without a second loop.
    ready: Vec<Ns>,
    /// Channel of each die (die d sits on channel d % channels), looked up
    /// rather than divided for on every operation.
    channel: Vec<u32>,
    t_read: Ns,
    /// Array read time of each page type of a word line (a page's type is
    /// its number modulo `page_types`): see [`page_read_times`].
    t_read_page: [Ns; 4],
    /// Page types per word line: the bits a cell stores.
    page_types: u32,
    /// Time to suspend a program for a read (0: programs are not suspended).
    t_suspend: Ns,
    /// Where a die's booked host programs can give way to a host read: see
    /// [`give_way_step`].
    t_give_way: Ns,
    t_prog: Ns,
    t_erase: Ns,
    ch_mbps: f64,
    page_bytes: u64,
    /// Channel time of one whole page.
    t_xfer_page: Ns,
    /// Paced GC (`gc_pacing`), and the pages per simulated erase block and
    /// the reserve blocks that bound how far a die's backlog may run ahead.
    pacing: bool,
    ppb: u64,
    reserve: u64,
    /// Page cache program (`cache_program`): a page's transfer may overlap
    /// the die's program under way.
    cache_program: bool,
    /// What a host page costs the dies in sustained writing, its program and
    /// the collection work booked meanwhile, averaged over about the last
    /// [`PAGE_COST_WINDOW`] pages, times that window (fixed point): see
    /// [`Nand::host_page_interval`]. Kept for paced drives only, the ones
    /// that meter their host by it.
    page_cost_acc: Ns,
    /// Collection work booked since the last host page was programmed.
    gc_since_page: Ns,
    /// The simulation's present, as the drive last saw it: no operation
    /// is booked before it.
    now: Ns,
}

impl Nand {
    /// Flash of the given drive; `block_scale` scales the erase time when the
    /// FTL simulates smaller erase blocks than the real ones.
    pub fn new(p: &SsdParams, block_scale: f64) -> Nand {
        let dies = p.channels * p.dies_per_channel;
        Nand {
            dies: vec![Die::default(); dies as usize],
            channels: vec![
                Calendar::new(p.channel_order == ChannelOrder::Dispatch);
                p.channels as usize
            ],
            ready: vec![0; 2 * dies as usize],
            channel: (0..dies).map(|d| d % p.channels).collect(),
            t_read: us(p.read_us),
            t_read_page: page_read_times(us(p.read_us), p.cell_bits.max(1)),
            page_types: p.cell_bits.max(1),
            t_suspend: us(p.program_suspend_us),
            t_give_way: give_way_step(p),
            t_prog: us(p.program_us),
            t_erase: (us(p.erase_us) as f64 * block_scale) as Ns,
            ch_mbps: p.channel_mbps,
            page_bytes: p.page_kb as u64 * 1024,
            t_xfer_page: xfer_ns(p.page_kb as u64 * 1024, p.channel_mbps),
            pacing: p.gc_pacing,
            cache_program: p.cache_program,
            // Until pages are written, a page costs its program alone.
            page_cost_acc: us(p.program_us) * PAGE_COST_WINDOW,
            gc_since_page: 0,
            ppb: ((p.pages_per_block as f64 * block_scale).round() as u64).max(1),
            reserve: p.gc_free_blocks as u64,
            now: 0,
        }
    }

    /// The simulation's clock has reached `now`: operations are booked from
    /// here on.
    #[inline]
    pub fn set_now(&mut self, now: Ns) {
        debug_assert!(now >= self.now, "time runs forward");
        self.now = now;
    }

    /// Channel `ch`'s calendar, its past forgotten.
    #[inline]
    fn channel(&mut self, ch: usize) -> &mut Calendar {
        let c = &mut self.channels[ch];
        c.forget_before(self.now);
        c
    }

    /// A block-mapped FTL's merge, started no earlier than `at`, on the
    /// dies `dies` (a block striped across them): each copies `pages` of
    /// its own block and erases `erases` blocks. Returns when the last die
    /// is done.
    pub fn merge(&mut self, at: Ns, dies: std::ops::Range<u32>, pages: u32, erases: u32) -> Ns {
        let w = GcWork {
            read_pages: pages,
            program_pages: pages,
            die_erases: erases,
            erased_pages: erases * self.ppb as u32,
            moved: 0,
        };
        let mut end = at;
        for die in dies {
            self.gc(at, die, w);
            end = end.max(self.dies[die as usize].gc_until);
        }
        end
    }

    /// Whether GC is paced (`gc_pacing`).
    pub fn paced(&self) -> bool {
        self.pacing
    }

    /// The flash time one host page takes in sustained writing, spread over
    /// every die: what the latest host pages have cost the dies, each its
    /// program and the collection work booked to free room for it
    /// (relocations and erases), averaged. Host pages taken one per this
    /// interval keep the dies as busy as writing can keep them for good:
    /// faster, the collections fall behind and eat the reserve of free
    /// blocks.
    pub fn host_page_interval(&self) -> Ns {
        self.page_cost_acc / PAGE_COST_WINDOW / self.dies.len() as Ns
    }

    /// Fold one host page's cost into the running average.
    #[inline]
    fn note_page_cost(&mut self, cost: Ns) {
        self.page_cost_acc = self.page_cost_acc - self.page_cost_acc / PAGE_COST_WINDOW + cost;
    }

    /// Pages a collection frees: its erased blocks' pages less those it
    /// programmed with relocated data.
    pub fn freed_pages(w: &GcWork) -> u64 {
        (w.erased_pages as u64).saturating_sub(w.program_pages as u64)
    }

    /// When a page at `at` may go, given background work queued until
    /// `until` of which one page's share is `share`: all of it unless GC is
    /// paced; paced, its share, or more when the backlog has run further
    /// ahead than the die's reserve of free blocks allows.
    #[inline]
    fn paced_wait(&self, at: Ns, until: Ns, share: Ns) -> Ns {
        if until <= at {
            return at;
        }
        if !self.pacing {
            return until;
        }
        let backlog = until - at;
        let ahead = share * self.reserve * self.ppb;
        at + backlog.min(share).max(backlog.saturating_sub(ahead))
    }

    /// When a program could start on `die` at `at`: after its foreground
    /// work and the part of its GC backlog the page must wait for (all of
    /// it unless GC is paced; paced, one page's share, or more when the
    /// backlog has run further ahead than the die's reserve of free blocks
    /// allows, since those pages need the blocks it frees).
    #[inline]
    fn program_start(&self, die: u32, at: Ns) -> Ns {
        let d = &self.dies[die as usize];
        self.paced_wait(at.max(d.free_at), d.gc_until, d.gc_share)
    }

    #[inline]
    fn channel_of(&self, die: u32) -> usize {
        self.channel[die as usize] as usize
    }

    /// Read `bytes` of page `page` (a global page number, whose remainder by
    /// the page types per word line is its type) of `die`, starting no
    /// earlier than `at`: array read on the die (ahead of queued GC, behind
    /// the GC operation in progress; ahead of host programs it suspends,
    /// when the flash suspends), then the transfer on its channel.
    #[inline]
    pub fn read(&mut self, at: Ns, die: u32, page: u32, bytes: u64) -> Ns {
        let t_read = self.t_read_page[(page % self.page_types) as usize];
        let s = self.read_start(at, die, t_read);
        let t = s + t_read;
        let d = &mut self.dies[die as usize];
        d.free_at = d.free_at.max(t);
        d.busy += t_read;
        let ch = self.channel_of(die);
        let x = if bytes == self.page_bytes {
            self.t_xfer_page
        } else {
            xfer_ns(bytes, self.ch_mbps)
        };
        let t = self.channel(ch).reserve(t, x);
        // The die's register is busy until its data has left.
        let d = &mut self.dies[die as usize];
        d.free_at = d.free_at.max(t);
        d.read_free = t;
        let free = d.free_at;
        let r = self.program_start(die, free);
        self.set_ready(die, r);
        t
    }

    /// When a host read of `die` arriving at `at` starts its array read.
    /// The firmware issues a die's reads ahead of the programs queued for it
    /// (read-first transaction scheduling: Jung et al., "Sprinkler", HPCA
    /// 2014, as MQSim's `TSU_OutOfOrder` serves a chip's user reads before
    /// its queued writes), so the read waits only for the host program
    /// under way; on a flash that suspends, only for the end of that
    /// program's loop under way (loops of `t_suspend`). The programs behind
    /// it start later by the read's time. Queued GC waits for the read
    /// either way; the GC operation in progress does not, except that a
    /// flash that suspends programs suspends GC's too (the read then waits
    /// the suspend, or a GC read).
    #[inline]
    fn read_start(&mut self, at: Ns, die: u32, t_read: Ns) -> Ns {
        let t_suspend = self.t_suspend;
        let op = self.t_prog.max(t_read);
        let grain = self.t_give_way;
        let d = &mut self.dies[die as usize];
        let after_reads = d.read_free.max(at);
        let mut s = if grain > 0 && d.prog_until > after_reads {
            // The programs booked on the die are taken as a train of
            // `grain`-long steps ending where the last one does. A program
            // is itself a train of program-and-verify loops and stops only
            // where one ends (NAND makers' suspend: the die enters its
            // suspend state after the verify of the loop under way, e.g.
            // US patents 11,574,683 and 11,646,087). Either way the read
            // waits out the rest of the step under way; the programs,
            // paused there, resume after the read, later by its time.
            let wait = (d.prog_until - after_reads) % grain;
            d.prog_until += t_read;
            d.free_at += t_read;
            after_reads + wait
        } else {
            d.free_at.max(at)
        };
        if s < d.gc_until {
            // GC's programs stop at their loops' ends as host programs do
            // (its backlog taken as a train of loops ending where it does);
            // without suspend the read waits for the operation under way.
            s += if t_suspend > 0 {
                (d.gc_until - s) % t_suspend
            } else {
                (d.gc_until - s).min(op)
            };
            d.gc_until += t_read;
        }
        s
    }

    /// Program one page on `die`: transfer on the channel, then the program,
    /// after any GC backlog on the die.
    #[inline]
    pub fn program(&mut self, at: Ns, die: u32) -> Ns {
        self.program_for(at, die, self.t_prog)
    }

    /// Program a page on a die taking `t_prog` (SLC mode programs faster
    /// than the native mode).
    pub fn program_for(&mut self, at: Ns, die: u32, t_prog: Ns) -> Ns {
        let ch = self.channel_of(die);
        // Without page cache program the die's register takes the data
        // only once the die is free.
        let at = if self.cache_program {
            at
        } else {
            at.max(self.dies[die as usize].free_at)
        };
        let x = self.t_xfer_page;
        let t = self.channel(ch).reserve(at, x);
        let s = self.program_start(die, t);
        let pacing = self.pacing;
        if pacing {
            // Only a paced drive meters its host by this cost.
            let gc = std::mem::take(&mut self.gc_since_page);
            self.note_page_cost(t_prog + gc);
        }
        let d = &mut self.dies[die as usize];
        if pacing && s < d.gc_until {
            // The page runs inside the backlog, which it pushes back.
            d.gc_until += t_prog;
        }
        d.free_at = s + t_prog;
        d.prog_until = d.free_at;
        d.busy += t_prog;
        let done = d.free_at;
        let r = self.program_start(die, done);
        self.set_ready(die, r);
        done
    }

    /// Queue garbage-collection work (copy-back relocations and erases) on a die.
    #[inline]
    pub fn gc(&mut self, at: Ns, die: u32, w: GcWork) {
        let dur = w.read_pages as Ns * self.t_read
            + w.program_pages as Ns * self.t_prog
            + w.die_erases as Ns * self.t_erase;
        let freed = Self::freed_pages(&w);
        if self.pacing {
            self.gc_since_page += dur;
        }
        let d = &mut self.dies[die as usize];
        d.gc_until = d.gc_until.max(d.free_at).max(at) + dur;
        d.busy += dur;
        if let Some(share) = dur.checked_div(freed) {
            d.gc_share = share;
        }
        let free = d.free_at;
        let r = self.program_start(die, free);
        self.set_ready(die, r);
    }

    /// The die that can take a program first (ready = free and past its GC
    /// backlog; ties: the earliest from `start`, a die number), so writes
    /// skip dies busy with GC.
    #[inline]
    pub fn least_busy(&self, start: u32) -> u32 {
        let n = self.dies.len();
        let s = (start as usize).min(n - 1);
        // Dies s..n, then 0..s: the first strict minimum in that order, over
        // the doubled table so the scan has one fixed length (its loop exit
        // is predictable), chosen with conditional moves (which die wins is
        // data, not a pattern a branch predictor can learn).
        let (mut best, mut bt) = (0, Ns::MAX);
        for (i, &t) in self.ready[s..s + n].iter().enumerate() {
            let less = t < bt;
            best = select_unpredictable(less, i, best);
            bt = select_unpredictable(less, t, bt);
        }
        let d = s + best;
        (if d >= n { d - n } else { d }) as u32
    }

    /// Record `die`'s ready time in both halves of the doubled table.
    #[inline]
    fn set_ready(&mut self, die: u32, t: Ns) {
        let n = self.dies.len();
        self.ready[die as usize] = t;
        self.ready[die as usize + n] = t;
    }

    /// Busy time summed over dies, and die count.
    pub fn die_busy(&self) -> (Ns, usize) {
        (self.dies.iter().map(|d| d.busy).sum(), self.dies.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::preset::{Preset, PresetDb};

    /// The X25-E preset's parameters.
    fn x25e_params() -> raidlab_core::preset::SsdParams {
        let db = PresetDb::builtin();
        let Some(Preset::Ssd(p)) = db.get("x25e") else {
            panic!("built-in x25e preset");
        };
        p.clone()
    }

    fn x25e() -> Nand {
        Nand::new(&x25e_params(), 1.0)
    }

    /// The X25-E's flash with paced collection.
    fn x25e_paced() -> Nand {
        let p = raidlab_core::preset::SsdParams {
            gc_pacing: true,
            ..x25e_params()
        };
        Nand::new(&p, 1.0)
    }

    #[test]
    fn page_types_read_around_the_mean_and_slc_reads_alike() {
        assert_eq!(page_read_times(50_000, 1)[0], 50_000);
        for bits in 2..=4u32 {
            let t = page_read_times(60_000, bits);
            let n = bits as usize;
            let mean = t[..n].iter().sum::<Ns>() / bits as Ns;
            assert!(mean.abs_diff(60_000) <= n as Ns, "{bits} bits: {t:?}");
            // More reference voltages, longer reads: the lower page is the
            // quickest, and each next type slower.
            assert!(t[..n].windows(2).all(|w| w[0] < w[1]), "{t:?}");
        }
        // MLC: (1 + 1) and (1 + 2) sensing units of 5 in all.
        assert_eq!(page_read_times(50_000, 2)[..2], [40_000, 60_000]);
    }

    #[test]
    fn a_read_takes_its_page_types_time() {
        let db = PresetDb::builtin();
        let Some(Preset::Ssd(p)) = db.get("s3500-800") else {
            panic!("built-in s3500-800 preset");
        };
        let mut n = Nand::new(p, 1.0);
        let (lower, upper) = (n.read(0, 0, 0, 4096), n.read(0, 1, 1, 4096));
        assert_eq!(upper - lower, n.t_read_page[1] - n.t_read_page[0]);
        assert!(upper > lower);
    }

    #[test]
    fn a_calendar_fills_the_gap_before_a_later_booking() {
        let mut c = Calendar::default();
        // A page ready at 100 booked first; one ready at 0 goes before it.
        assert_eq!(c.reserve(100, 10), 110);
        assert_eq!(c.reserve(0, 10), 10);
        // No gap of 10 between 10 and 100 is left unused, and a transfer
        // that does not fit a gap goes after the next booking.
        assert_eq!(c.reserve(95, 10), 120);
        assert_eq!(c.reserve(10, 90), 100);
        assert_eq!(c.busy.len(), 1, "touching bookings merge: {:?}", c.busy);
        assert_eq!(c.booked(), 120);
    }

    #[test]
    fn an_in_order_calendar_never_goes_before_its_last_booking() {
        let mut c = Calendar::new(true);
        assert_eq!(c.reserve(100, 10), 110);
        assert_eq!(c.reserve(0, 10), 120, "waits behind the earlier booking");
    }

    /// Forgetting what ended by the present changes no booking made from
    /// the present on: a calendar that forgets and one that does not book
    /// the same transfers at the same times.
    #[test]
    fn forgetting_the_past_changes_no_booking_from_the_present_on() {
        let (mut forgets, mut keeps) = (Calendar::default(), Calendar::default());
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut now = 0;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 50;
            let at = now + (x >> 20) % 400;
            let dur = 1 + (x >> 40) % 30;
            forgets.forget_before(now);
            assert_eq!(forgets.reserve(at, dur), keeps.reserve(at, dur));
            assert!(forgets.busy.len() <= keeps.busy.len());
        }
    }

    #[test]
    fn a_calendar_forgets_its_oldest_bookings_and_treats_them_as_busy() {
        let mut c = Calendar::default();
        for i in 0..(CALENDAR_KEEP as Ns + 10) {
            c.reserve(i * 100, 10);
        }
        assert_eq!(c.busy.len(), CALENDAR_KEEP);
        // Before the floor nothing is placed, even in an old gap.
        let floor = c.floor;
        assert!(floor > 0);
        assert!(c.reserve(0, 1) > floor);
    }

    #[test]
    fn a_host_page_costs_its_program_and_the_collections_that_free_its_room() {
        let mut n = x25e_paced();
        let dies = n.dies.len() as Ns;
        assert_eq!(
            n.host_page_interval(),
            n.t_prog / dies,
            "a program alone at first"
        );
        // Every page comes with one relocated page (a read and a program):
        // the average climbs to that cost, over the window.
        let w = GcWork {
            read_pages: 1,
            program_pages: 1,
            die_erases: 0,
            erased_pages: 0,
            moved: 1,
        };
        let full = (2 * n.t_prog + n.t_read) / dies;
        for i in 0..8 * PAGE_COST_WINDOW {
            let die = (i % dies) as u32;
            n.gc(i * 1_000, die, w);
            n.program(i * 1_000, die);
        }
        let got = n.host_page_interval();
        assert!(
            got <= full && got > full * 99 / 100,
            "{got} ns a page against {full}"
        );
    }

    #[test]
    fn least_busy_takes_the_earliest_die_ties_from_the_start_round() {
        let mut n = x25e();
        let dies = n.dies.len() as u32;
        // All idle: a tie everywhere, so the start wins, whatever it is.
        for s in 0..dies {
            assert_eq!(n.least_busy(s), s);
        }
        // Busy every die but 3 and dies - 2 (a tie): from a start past
        // dies - 2 the scan wraps round and finds 3 first.
        for d in 0..dies {
            n.set_ready(d, 1_000 + d as Ns);
        }
        n.set_ready(3, 10);
        n.set_ready(dies - 2, 10);
        assert_eq!(n.least_busy(0), 3);
        assert_eq!(n.least_busy(4), dies - 2);
        assert_eq!(n.least_busy(dies - 1), 3, "wraps round to the tie");
        // A strict minimum wins from any start.
        n.set_ready(dies - 1, 5);
        for s in 0..dies {
            assert_eq!(n.least_busy(s), dies - 1);
        }
    }

    #[test]
    fn a_read_goes_ahead_of_the_programs_queued_behind_the_one_under_way() {
        // The X25-E's flash neither suspends nor caches a program's data, so
        // the second program's data goes into the die after the first.
        let mut n = x25e();
        let first = n.program(0, 0);
        let second = n.program(0, 0);
        assert!(second > first + n.t_prog, "booked one after the other");
        let t_read = n.t_read;
        // A read arriving during the first waits for it alone, then reads;
        // the second program starts later by the read.
        let done = n.read(first - 1_000, 0, 0, 4096);
        assert!(done < second, "{done} vs second program end {second}");
        assert!(
            done >= first + t_read,
            "{done} vs first program end {first}"
        );
        assert_eq!(n.dies[0].prog_until, second + t_read);
    }

    /// A drive whose flash suspends programs for reads after `suspend_us`.
    fn suspending(suspend_us: f64) -> Nand {
        let db = PresetDb::builtin();
        let Some(Preset::Ssd(p)) = db.get("x25e") else {
            panic!("built-in x25e preset");
        };
        let mut p = p.clone();
        p.program_suspend_us = suspend_us;
        Nand::new(&p, 1.0)
    }

    #[test]
    fn a_read_suspends_the_program_in_progress() {
        let (mut plain, mut sus) = (x25e(), suspending(20.0));
        let done = plain.program(0, 0);
        assert_eq!(sus.program(0, 0), done);
        let t_read = plain.t_read;
        // Without suspend the read waits for the program under way (its data
        // already going into the die); with it, the end
        // of the program loop under way (loops of 20 us counted back from
        // the program's end), and the program ends later by the read.
        let waited = plain.read(1_000, 0, 0, 4096);
        let quick = sus.read(1_000, 0, 0, 4096);
        assert!(waited > done, "{waited} vs program end {done}");
        let wait = (done - 1_000) % us(20.0);
        assert!(wait < us(20.0));
        assert!(
            quick < done && quick >= 1_000 + wait + t_read,
            "{quick} vs program end {done}"
        );
        assert_eq!(sus.dies[0].prog_until, done + t_read);
        // An idle die reads at once either way.
        assert_eq!(
            sus.read(done * 2, 1, 0, 4096),
            plain.read(done * 2, 1, 0, 4096)
        );
    }
}
