//! The one I/O stream generator both engines use: a job's offsets,
//! sizes and directions from a workload and a seed (or a replayed trace).

use super::backlog::BacklogLog;
use super::sequencer::Sequencer;
use super::strided::ZoneWalk;
use super::*;
pub use crate::ioreq::Io;

/// The streams of every job of `w`, job `j` over `regions[j]`
/// ([`Workload::regions`]): the one workload generator both engines use.
/// Without `runtime`, each job moves its region's bytes and stops (fio's
/// one pass over `size`).
pub fn job_streams(w: &Workload, regions: &[Region], seed: u64) -> Vec<JobStream> {
    volume_streams(w, regions, seed, 1)
}

/// The streams of `w`'s jobs over `volumes` volumes, job `j` over
/// `regions[j]` of each, job-major: a fio job with several filenames keeps
/// each file's offsets apart. The first volume's streams are
/// [`job_streams`]'s.
pub fn volume_streams(w: &Workload, regions: &[Region], seed: u64, volumes: u32) -> Vec<JobStream> {
    volume_streams_from(w, regions, seed, volumes, 0)
}

/// [`volume_streams`] for jobs numbered from `first_job` (a job section run
/// beside others takes the numbers after theirs, so that no two jobs draw
/// the same stream).
pub fn volume_streams_from(
    w: &Workload,
    regions: &[Region],
    seed: u64,
    volumes: u32,
    first_job: u32,
) -> Vec<JobStream> {
    assert_eq!(regions.len(), w.numjobs as usize, "one region a job");
    assert!(
        first_job + w.numjobs <= MAX_NUMJOBS,
        "job numbers stay below MAX_NUMJOBS"
    );
    let mut out = Vec::with_capacity(w.numjobs as usize * volumes as usize);
    for (j, r) in (first_job..first_job + w.numjobs).zip(regions) {
        for v in 0..volumes {
            // Job numbers are below MAX_NUMJOBS, so every (job, volume)
            // has a stream number of its own.
            let mut s = JobStream::new(w, r.span, seed, v * MAX_NUMJOBS + j, None);
            s.base = r.start;
            if w.runtime.is_none() && w.replay.is_none() {
                s.budget = Some(w.pass_bytes(r.span));
                s.loop_bytes = Some(w.pass_bytes(r.span) / u64::from(w.loops.max(1)));
            }
            if w.uses_random_map() {
                s.map = Some(0);
            }
            // `number_ios` caps a one-pass job's I/Os at that many a loop
            // (fio's `exceeds_number_ios`: the job's I/Os against
            // `number_ios` times the loops begun, the position going on
            // from loop to loop); a time-based job runs on past it, as
            // fio's does. The job's I/Os go to its volumes in turn from the
            // first: each volume's stream takes its share.
            if let (Some(n), Some(_)) = (w.number_ios, s.budget) {
                let (n, vols) = (n.saturating_mul(u64::from(w.loops)), u64::from(volumes));
                s.remaining = Some(n / vols + u64::from(u64::from(v) < n % vols));
            }
            out.push(s);
        }
    }
    out
}

/// The deterministic I/O stream of one job. The same workload, span, seed
/// and job index give the same sequence, in the simulator and the real engine.
#[derive(Debug, Clone)]
pub struct JobStream {
    rng: Rng,
    rw: Rw,
    bs: u64,
    /// `bssplit`'s (or `bsrange`'s) sizes, each with the running total of
    /// the weights up to and including it: a draw below the total picks
    /// the first size whose running total exceeds it.
    split: Vec<(u64, u64)>,
    /// Writes' sizes when they have their own list.
    split_write: Vec<(u64, u64)>,
    /// The grain of random offsets, reads' and writes': `blockalign`, or
    /// as fio defaults it (`fixup_options`: `ba` is `min_bs`), the
    /// direction's smallest size.
    grain: [u64; 2],
    /// fio's random map for one pass: the blocks are visited in the order
    /// of a permutation; this counts the blocks handed out so far.
    map: Option<u64>,
    /// The job's key for that permutation.
    seed_key: u64,
    mix: u32,
    pct_random: u32,
    span: u64,
    /// Where the job's region starts: every offset drawn in `0..span`
    /// lands this much further on (fio's `offset`, `offset_increment`).
    base: u64,
    /// Where the last read and the last write ended (fio's `last_pos`,
    /// one a direction: sequential reads and writes of one job each go on
    /// from their own), relative to `base`.
    cursor: [u64; 2],
    /// Where the last read and the last write started (fio's
    /// `last_start`), for `rw_sequencer=identical`.
    last_start: [Option<u64>; 2],
    /// fio's offset modifier (`rw=randread:8`, `rw=write:4k`).
    seq: Sequencer,
    /// I/Os until the next random offset, counting down to 0 (fio's
    /// `ddir_seq_nr`, which starts at 1).
    seq_left: u32,
    dist: Dist,
    zipf_norm: f64,
    remaining: Option<u64>,
    budget: Option<u64>,
    /// A one-pass job's bytes a loop (`io_size`, or the region's).
    loop_bytes: Option<u64>,
    /// A replayed trace, which then gives every I/O.
    feed: Option<Box<Feed>>,
    /// Where the job is in its strided zones (`zonemode=strided`).
    zones: Option<Box<ZoneWalk>>,
    /// The writes it has yet to read back (`verify_backlog`).
    backlog: Option<Box<BacklogLog>>,
    /// fio's `bs_is_seq_rand`: sequential I/Os take the reads' sizes and
    /// random ones the writes', whatever their direction.
    bs_is_seq_rand: bool,
}

/// Where an I/O goes, decided before its offset is drawn: the direction's
/// last start again (`rw_sequencer=identical`), a random offset, or on
/// from the direction's last end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    Same,
    Random,
    Next,
}

impl JobStream {
    /// Stream for job `job` of `w` over a span of `span` bytes starting at 0.
    /// `span` must be at least the largest block size.
    pub fn new(w: &Workload, span: u64, seed: u64, job: u32, limit_ios: Option<u64>) -> JobStream {
        let dist = w.random_distribution;
        let grain = [true, false].map(|read| w.blockalign.unwrap_or_else(|| smallest(w, read)));
        let blocks = (span / grain[0].max(1)).max(1) as f64;
        let zipf_norm = match dist {
            Dist::Zipf(t) => (blocks.powf(1.0 - t) - 1.0) / (1.0 - t),
            _ => 0.0,
        };
        JobStream {
            rng: Rng::new(mix(seed, job as u64 + 1)),
            rw: w.rw,
            bs: w.bs,
            split: running_totals(&w.bssplit),
            split_write: running_totals(&w.bssplit_write),
            grain,
            map: None,
            seed_key: mix(seed, 0x4D41_5000 + job as u64),
            mix: w.rwmixread,
            pct_random: w.percentage_random,
            span,
            base: 0,
            cursor: [0; 2],
            last_start: [None; 2],
            seq: w.sequencer,
            seq_left: 1,
            dist,
            zipf_norm,
            remaining: limit_ios,
            budget: None,
            loop_bytes: None,
            feed: w.replay.as_ref().map(|r| Box::new(Feed::open(r, span))),
            // Boxed: most jobs have neither, and the stream stays small.
            zones: w.strided.map(|z| Box::new(ZoneWalk::new(z))),
            backlog: w
                .backlog
                .map(|b| Box::new(BacklogLog::new(b, w.uses_random_map()))),
            bs_is_seq_rand: w.bs_is_seq_rand,
        }
    }

    /// For a timed trace replay, when the I/O last drawn is due, ns after
    /// the job's start (`None`: at once).
    pub fn due(&self) -> Option<Ns> {
        self.feed.as_ref().and_then(|f| f.due())
    }

    /// Whether the job's trace flushes before its next I/O (see
    /// [`Feed::flush_first`]); never for a drawn stream.
    pub fn flush_first(&mut self) -> bool {
        self.feed.as_mut().is_some_and(|f| f.flush_first())
    }

    /// A trace replay's tally so far, and the error that cut it short.
    pub fn replay_tally(&self) -> Option<(Tally, Option<&crate::trace::TraceError>)> {
        self.feed.as_ref().map(|f| (f.tally, f.error.as_ref()))
    }

    pub(crate) fn pick_block(&mut self, nblocks: u64, grain: u64) -> u64 {
        match self.dist {
            Dist::Random => self.rng.below(nblocks),
            Dist::Zipf(t) => {
                // Inverse of the continuous Zipf CDF H(x) = (x^(1-θ) - 1)/(1-θ) over [1, n].
                let u = self.rng.unit() * self.zipf_norm;
                let x = (u * (1.0 - t) + 1.0).powf(1.0 / (1.0 - t));
                let rank = (x as u64).saturating_sub(1).min(nblocks - 1);
                scatter(rank, nblocks)
            }
            Dist::Pareto(h) => {
                // fio's pareto:h puts a share h of the accesses ... on 1-h of the blocks:
                // rank = n * u^(1/a) with a = log(1-h)/log(h) the 80/20-style exponent.
                let a = ((1.0 - h).ln() / h.ln()).max(1e-3);
                let rank = ((nblocks as f64) * self.rng.unit().powf(1.0 / a)) as u64;
                scatter(rank.min(nblocks - 1), nblocks)
            }
            // Zones are ranges of the region, in place (fio hashes no zoned
            // offset).
            Dist::Zoned(z) => {
                let (u, v) = (self.rng.unit(), self.rng.unit());
                z.pick(nblocks, grain, u, v)
            }
            Dist::Normal(dev) => {
                let rank = normal_rank(&mut self.rng, nblocks, dev);
                scatter(rank, nblocks)
            }
        }
    }
}

/// fio's `normal:dev` (lib/gauss.c `gauss_next`): the mean of 12 uniform
/// draws over `0..=n` (a bell at the middle, its deviation about n/12),
/// then a uniform spread `stddev` wide around it, `stddev` being `dev` per
/// cent of `n` (at most n/2), halved until it keeps the rank below `n`.
/// fio then hashes the rank over the region; the caller scatters it.
pub(crate) fn normal_rank(rng: &mut Rng, n: u64, dev: f64) -> u64 {
    const ITERS: u64 = 12;
    let sum: u64 = (0..ITERS).map(|_| rng.below(n + 1)).sum();
    let mut rank = sum.div_ceil(ITERS);
    let stddev = ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2);
    if stddev > 0 {
        let mut d = (stddev as f64 * rng.unit()) as i64 - (stddev / 2) as i64;
        while rank as i64 + d >= n as i64 {
            d /= 2;
        }
        rank = (rank as i64 + d).max(0) as u64;
    }
    rank.min(n - 1)
}

/// A keyed bijection on `0..n` (the random map's visiting order): on the
/// power of two above `n`, rounds of an odd multiplier and an added key
/// (both bijective modulo a power of two) and a xor-shift (bijective), walked
/// until the value lands in `0..n` (cycle-walking keeps it a bijection).
pub(crate) fn permute(i: u64, n: u64, key: u64) -> u64 {
    debug_assert!(i < n);
    let m = n.next_power_of_two();
    let mask = m - 1;
    let shift = (m.trailing_zeros() / 2).max(1);
    let mut x = i;
    loop {
        for r in 0..3u64 {
            let k = mix(key, r);
            x = (x.wrapping_mul(k | 1).wrapping_add(k >> 17)) & mask;
            x ^= x >> shift;
        }
        if x < n {
            return x;
        }
    }
}

/// Spread ranks over the span so hot blocks are not all at the start
/// (a bijection on `0..n`: multiplication by an odd constant modulo a power
/// of two, cycle-walking back into range).
pub(crate) fn scatter(rank: u64, n: u64) -> u64 {
    let m = n.next_power_of_two();
    let mut x = rank;
    loop {
        x = x.wrapping_mul(crate::rng::GOLDEN_GAMMA | 1) & (m - 1);
        x ^= x >> (m.trailing_zeros() / 2).max(1);
        x &= m - 1;
        if x < n {
            return x;
        }
    }
}

impl Iterator for JobStream {
    type Item = Io;

    fn next(&mut self) -> Option<Io> {
        self.next_choosing(|read| read)
    }
}

impl JobStream {
    /// The next I/O, its direction first drawn from the mix and then
    /// handed to `choose` (true: read), which may turn it round: fio's rate
    /// limits send the direction behind its clock first (`rate_ddir`).
    /// `choose` is asked only when both directions have a share of the mix.
    ///
    /// Longer than 70 lines: the per-I/O draws of an I/O (the end of its
    /// budget, a trace feed, its direction, its size from `bssplit` and
    /// what is left of one pass, its offset random or sequential) in one
    /// order, the random stream's: moving a draw changes every seeded
    /// result.
    pub fn next_choosing(&mut self, choose: impl FnOnce(bool) -> bool) -> Option<Io> {
        if self.backlog.is_some() {
            if let Some(io) = self.read_back(BacklogLog::due) {
                return Some(io);
            }
        }
        if self.budget == Some(0) {
            return self.read_back(BacklogLog::rest);
        }
        if let Some(r) = &mut self.remaining {
            if *r == 0 {
                return self.read_back(BacklogLog::rest);
            }
            *r -= 1;
        }
        if let Some(f) = &mut self.feed {
            return f.next_io();
        }
        let read = match self.rw {
            Rw::Read | Rw::RandRead => true,
            Rw::Write | Rw::RandWrite => false,
            Rw::Rw | Rw::RandRw => {
                let read = self.rng.below(100) < self.mix as u64;
                if (1..100).contains(&self.mix) {
                    choose(read)
                } else {
                    read
                }
            }
        };
        // fio draws the offset first and the size after; raidlab draws the
        // size first (the offset must leave room for it), so only
        // bs_is_seq_rand, whose size depends on the offset's kind, decides
        // the kind first: the default's draws stay in their order.
        let decided = self.bs_is_seq_rand.then(|| self.decide());
        let write_sizes = match decided {
            Some(p) => p == Placement::Random,
            None => !read,
        };
        let split = if !write_sizes || self.split_write.is_empty() {
            &self.split
        } else {
            &self.split_write
        };
        let len = match split.last() {
            None => self.bs,
            Some(&(_, total)) => {
                let p = self.rng.below(total);
                split[split.partition_point(|&(_, upto)| upto <= p)].0
            }
        };
        let len = match self.budget {
            // One pass: the last I/O takes the largest size that still fits,
            // as fio's buffer-length choice does near the end of `size`.
            Some(b) if len > b => {
                let fits = (if !write_sizes || self.split_write.is_empty() {
                    &self.split
                } else {
                    &self.split_write
                })
                .iter()
                .map(|&(s, _)| s)
                .filter(|&s| s <= b)
                .max();
                match fits {
                    Some(s) => s,
                    None => {
                        self.budget = Some(0);
                        return None;
                    }
                }
            }
            _ => len,
        };
        if let Some(b) = &mut self.budget {
            *b -= len;
        }
        let d = self.seq.slot(read);
        if self.zones.is_some() {
            self.enter_zone(d, len);
        }
        let placed = match decided {
            Some(p) => self.place_as(read, len, p),
            None => self.place(read, len),
        };
        let offset = match placed {
            Some(o) => o,
            None => {
                // A hole ran past the region's end: in a one-pass run that
                // ends the loop (fio: the offset is past `io_size`), so the
                // rest of this loop's bytes are not moved.
                if !self.next_loop(len) {
                    return None;
                }
                0
            }
        };
        self.last_start[d] = Some(offset);
        self.cursor[d] = offset + len;
        if self.zones.is_some() || self.backlog.is_some() {
            self.note_issued(read, offset, len);
        }
        Some(Io {
            offset: self.base + offset,
            len: len as u32,
            read,
        })
    }
}

impl JobStream {
    /// The offset in the region of the next I/O of `len` bytes, a read
    /// when `read` (fio's `get_next_offset`): a random one when the
    /// sequencer's count comes round and the mix draws random, else the
    /// sequential one after the direction's last (or, `identical`, that
    /// same offset). `None`: a hole ran past the end.
    fn place(&mut self, read: bool, len: u64) -> Option<u64> {
        let p = self.decide();
        self.place_as(read, len, p)
    }

    /// Whether the next I/O's offset is the direction's last start again,
    /// a random one, or on from the direction's last end: the sequencer's
    /// count, then the mix's draw.
    fn decide(&mut self) -> Placement {
        self.seq_left -= 1;
        let fresh = self.seq_left == 0;
        if fresh {
            self.seq_left = self.seq.every;
        }
        if !fresh && self.seq.identical {
            return Placement::Same;
        }
        let random = fresh
            && (self.pct_random >= 100
                || (self.pct_random > 0 && self.rng.below(100) < self.pct_random as u64));
        if random {
            Placement::Random
        } else {
            Placement::Next
        }
    }

    /// [`JobStream::place`] once decided as `p`.
    fn place_as(&mut self, read: bool, len: u64, p: Placement) -> Option<u64> {
        let d = self.seq.slot(read);
        let (lo, hi) = self.bounds();
        match p {
            Placement::Same => return Some(self.last_start[d].unwrap_or(lo).clamp(lo, hi - len)),
            Placement::Random => return Some(self.random_offset(read, len)),
            Placement::Next => {}
        }
        let at = self.cursor[d].saturating_sub(lo);
        match self.seq.next_offset(at, len, hi - lo) {
            Some(o) => Some(lo + o),
            // Between two random offsets a run that reaches the end draws
            // a new one (fio falls back to `get_next_rand_block`).
            None if self.seq.every > 1 => Some(self.random_offset(read, len)),
            // A run that reaches a strided zone's end goes on from its
            // start (fio's "maintain zone"), as does a time-based run at
            // the region's end.
            None if self.budget.is_none() || self.zones.is_some() => Some(lo),
            None => None,
        }
    }

    /// The bytes of the region the next I/O may use: the strided zone it
    /// is in, or the whole region.
    fn bounds(&self) -> (u64, u64) {
        match &self.zones {
            Some(z) => z.window(self.span),
            None => (0, self.span),
        }
    }

    /// Before an I/O of `len` bytes in direction slot `d`: move to the
    /// next strided zone when this one has had its bytes (the direction's
    /// position then starting at the zone's start, as fio sets
    /// `last_pos`), bring a position past the zone's end back to its
    /// start, and start the random map afresh every `zonerange` bytes. A
    /// zone clipped by the region's end too short for the I/O gives way
    /// to the region's first.
    #[cold]
    fn enter_zone(&mut self, d: usize, len: u64) {
        let span = self.span;
        let Some(z) = &mut self.zones else { return };
        let moved = z.advance(span);
        let (mut lo, mut hi) = z.window(span);
        if hi - lo < len {
            z.restart();
            (lo, hi) = z.window(span);
        }
        if moved || self.cursor[d] < lo || self.cursor[d] >= hi {
            self.cursor[d] = lo;
        }
        if z.map_resets() {
            if let Some(i) = &mut self.map {
                *i = 0;
            }
        }
    }

    /// A random offset for an I/O of `len` bytes: a slot of the
    /// direction's grain that leaves room for the whole I/O, from the
    /// random map or the distribution, in the zone when strided.
    fn random_offset(&mut self, read: bool, len: u64) -> u64 {
        let a = self.grain[usize::from(!read)];
        let (lo, hi) = self.bounds();
        let slots = ((hi - lo).saturating_sub(len) / a + 1).max(1);
        let key = match &self.zones {
            Some(z) => mix(self.seed_key, z.entered()),
            None => self.seed_key,
        };
        lo + match &mut self.map {
            Some(i) => {
                let k = permute(*i % slots, slots, key);
                *i += 1;
                k * a
            }
            None => self.pick_block(slots, a) * a,
        }
    }

    /// An I/O of `len` bytes at `offset` went out: its zone and the
    /// backlog note it.
    #[cold]
    fn note_issued(&mut self, read: bool, offset: u64, len: u64) {
        if let Some(z) = &mut self.zones {
            z.issued(len);
        }
        if let Some(b) = &mut self.backlog {
            if read {
                b.read();
            } else {
                b.wrote(offset, len);
            }
        }
    }

    /// A read of a written piece the backlog gives (`take`: one due now,
    /// or one left once the job has written its bytes).
    #[cold]
    fn read_back(&mut self, take: fn(&mut BacklogLog) -> Option<(u64, u64)>) -> Option<Io> {
        let (offset, len) = take(self.backlog.as_mut()?)?;
        Some(Io {
            offset: self.base + offset,
            len: len as u32,
            read: true,
        })
    }

    /// A one-pass job's loop ended early (a hole ran past the region's
    /// end) as an I/O of `charged` bytes, already taken from the budget,
    /// was being placed: drop the bytes left of this loop and start the
    /// next at the region's start. Whether another loop follows.
    fn next_loop(&mut self, charged: u64) -> bool {
        self.cursor = [0; 2];
        self.last_start = [None; 2];
        let (Some(b), Some(per)) = (self.budget, self.loop_bytes) else {
            return true;
        };
        let before = b + charged;
        let next = before - before % per;
        self.budget = Some(next.saturating_sub(charged));
        next > 0
    }
}

/// The smallest size `w` issues in one direction (reads when `read`).
fn smallest(w: &Workload, read: bool) -> u64 {
    let split = if read || w.bssplit_write.is_empty() {
        &w.bssplit
    } else {
        &w.bssplit_write
    };
    split.iter().map(|x| x.0).min().unwrap_or(w.bs)
}

/// Sizes with the running total of their weights (see [`JobStream`]'s
/// `split`); sizes of no weight are never drawn and are left out.
fn running_totals(split: &[(u64, u32)]) -> Vec<(u64, u64)> {
    let mut total = 0;
    split
        .iter()
        .filter(|&&(_, w)| w > 0)
        .map(|&(b, w)| {
            total += w as u64;
            (b, total)
        })
        .collect()
}
