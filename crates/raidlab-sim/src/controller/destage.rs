//! A write-back controller volume's destage: which dirty lines go out
//! together (a line, or a whole stripe), when (the per-member queues and
//! their slots, the hold that lets sequential writes fill stripes), the
//! flush task's preparation, and what a finished destage frees.

use super::*;

impl CtrlVol {
    /// The lines of `line`'s stripe, if every one of them is wholly dirty
    /// and none is being destaged: one destage writes the whole row (a
    /// full-stripe write for parity; for RAID 0 and 10 the controller
    /// coalesces the row's dirty chunks into one flush operation, as
    /// sequential writes fill them). A parity array's rows are gathered
    /// as `full_stripe_destage` says: all, those whose lines a sequential
    /// write stream dirtied last, or none.
    fn full_stripe(&self, line: u64) -> Option<std::ops::Range<u64>> {
        let g = self.cfg.geo.as_ref()?;
        let gathers = match g.level() {
            Level::Raid0 | Level::Raid10 => true,
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                self.cfg.full_stripe_destage != StripeGather::Never
            }
            Level::Raid1 | Level::Concat => false,
        };
        if !gathers {
            return None;
        }
        let dd = g.data_disks() as u64;
        let s0 = line / dd * dd;
        let all = s0..s0 + dd;
        let streams_only = g.level().parity_members() > 0
            && self.cfg.full_stripe_destage == StripeGather::Sequential;
        let whole = |l: &u64| {
            self.lines.get(*l).is_some_and(|x| {
                let full = x.bits == u64::MAX
                    || (self.line_bytes / self.gran < 64
                        && x.bits == (1u64 << (self.line_bytes / self.gran)) - 1);
                full && !x.in_destage && (x.streamed || !streams_only)
            })
        };
        // `line` itself first: it was just looked up, and when it is not
        // whole (small random writes) the rest of the stripe is not visited.
        let full = whole(&line) && all.clone().filter(|l| *l != line).all(|l| whole(&l));
        full.then_some(all)
    }

    /// Oldest queued line of member `m`, dropping stale queue entries.
    fn front(&mut self, m: usize) -> Option<(u64, Ns)> {
        while let Some(&l) = self.fifos[m].front() {
            match self.lines.get(l) {
                Some(x) if x.queued => {
                    // The member's next destage looks up the line behind
                    // this one: start loading it now.
                    if let Some(&n) = self.fifos[m].get(1) {
                        self.lines.prefetch(n);
                    }
                    return Some((l, x.first));
                }
                _ => {
                    self.fifos[m].pop_front();
                }
            }
        }
        None
    }

    pub(super) fn kick(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        let limit = self.cfg.destage_per_member;
        let pressure = !self.wait_space.is_empty();
        let mut wake: Option<Ns> = None;
        for m in 0..self.fifos.len() {
            while self.destage_out[m] < limit {
                let Some((l, first)) = self.front(m) else {
                    break;
                };
                if !pressure && now < first + self.cfg.destage_delay {
                    let at = first + self.cfg.destage_delay;
                    wake = Some(wake.map_or(at, |w: Ns| w.min(at)));
                    break;
                }
                self.fifos[m].pop_front();
                self.start_destage(ctx, l, m);
            }
        }
        // Wake up when the oldest held line comes of age. Lines of age that
        // wait for their member's destage slot go when a destage completes.
        if let Some(at) = wake {
            if self.kick_at.is_none_or(|k| k > at || k < now) {
                self.kick_at = Some(at);
                ctx.schedule(at, self.id, NONE, Ev::Kick);
            }
        }
    }

    fn start_destage(&mut self, ctx: &mut Ctx, l: u64, m: usize) {
        let mut lines = self.spare_lines.pop().unwrap_or_default();
        lines.clear();
        match self.full_stripe(l) {
            Some(r) => lines.extend(r),
            None => lines.push(l),
        }
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        let bytes = self.take_lines(&lines, &mut runs);
        let root = self.destage_root(ctx, lines, bytes, m);
        let (at, pool) = self.prepare_destage(ctx, bytes, runs.len());
        for &(a, b) in &runs {
            let a = a.min(self.cfg.capacity);
            let b = b.min(self.cfg.capacity);
            if b > a {
                let child = self.send_child(ctx, root, a..b, Op::Write, NO_WINDOW, at);
                ctx.reqs[child].cost_pool = pool;
            }
        }
        self.runs = runs;
        if ctx.reqs[root].pending == 0 {
            self.destage_done(ctx, root);
        }
    }

    /// Take `lines`' dirty bits into a destage: mark them in destage and
    /// append their dirty byte runs (merged where they meet) to `runs`.
    /// Returns the dirty bytes taken.
    fn take_lines(&mut self, lines: &[u64], runs: &mut Vec<(u64, u64)>) -> u64 {
        let mut bytes = 0;
        for &x in lines {
            let e = self.lines.get_mut(x).expect("dirty line");
            let bits = std::mem::take(&mut e.bits);
            e.streamed = false;
            e.queued = false;
            e.in_destage = true;
            bytes += bits.count_ones() as u64 * self.gran;
            let base = x * self.line_bytes;
            // Runs of set bits, lowest first.
            let mut rest = bits;
            while rest != 0 {
                let s = rest.trailing_zeros() as u64;
                let g = s + (rest >> s).trailing_ones() as u64;
                // Adding the run's lowest bit carries through the run.
                rest &= rest.wrapping_add(1 << s);
                let a = base + s * self.gran;
                let b = (base + g * self.gran).min(base + self.line_bytes);
                match runs.last_mut() {
                    Some(r) if r.1 == a => r.1 = b,
                    _ => runs.push((a, b)),
                }
            }
        }
        bytes
    }

    /// The root request of a destage of `lines` (`bytes` dirty) for member
    /// `m`, holding one of the member's destage slots.
    fn destage_root(&mut self, ctx: &mut Ctx, lines: Vec<u64>, bytes: u64, m: usize) -> ReqId {
        let slot = match self.destages.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.destages.push(None);
                self.destages.len() - 1
            }
        };
        self.destages[slot] = Some(Destage {
            lines,
            bytes,
            member: m,
        });
        let root = ctx.reqs.alloc(Req {
            offset: 0,
            len: 0,
            op: Op::Write,
            parent: NONE,
            pending: 0,
            comp: self.id,
            t0: ctx.now,
            creator_word: 0,
            cost_pool: PoolId::NONE,
            handler_word: slot as u32,
            phase: Phase::Destage as u8,
        });
        self.destage_out[m] += 1;
        if self.destage_out[m] == self.cfg.destage_per_member {
            self.limit_since[m] = ctx.now;
        }
        root
    }

    /// When a destage of `bytes` in `runs` member writes may go out, and
    /// the pool its member commands are charged to. The flush task prepares
    /// the destage (finds and locks the lines, maps their bytes) before any
    /// member sees it, then builds its member commands: the array behind
    /// charges those to the task instead of the RoC's shared cores; a
    /// single device's commands are charged here, as the array would.
    fn prepare_destage(&mut self, ctx: &mut Ctx, bytes: u64, runs: usize) -> (Ns, PoolId) {
        let now = ctx.now;
        let member = if self.cfg.map_member_ns > 0 {
            0
        } else {
            self.cfg.passthrough_member_ns * runs as Ns
        };
        if self.cfg.destage_task_ns > 0 {
            let dur =
                self.cfg.destage_task_ns + ns(bytes as f64 / 1024.0 * self.cfg.ns_per_kb) + member;
            let flush = self.cfg.pools.flush;
            (ctx.reserve(flush, now, dur), flush)
        } else if member > 0 {
            (ctx.reserve(self.cfg.pools.roc, now, member), PoolId::NONE)
        } else {
            (now, PoolId::NONE)
        }
    }

    pub(super) fn destage_done(&mut self, ctx: &mut Ctx, root: ReqId) {
        let slot = destage_slot(&ctx.reqs[root]);
        ctx.reqs.release(root);
        let d = self.destages[slot].take().expect("destage slot");
        let now = ctx.now;
        if self.destage_out[d.member] == self.cfg.destage_per_member {
            self.at_limit_ns += now - self.limit_since[d.member];
        }
        self.destage_out[d.member] -= 1;
        self.dirty -= d.bytes;
        for &l in &d.lines {
            let e = self.lines.get_mut(l).expect("line");
            e.in_destage = false;
            if e.bits != 0 {
                e.queued = true;
                e.first = now;
                let m = e.member as usize;
                self.fifos[m].push_back(l);
            } else {
                self.lines.remove(l);
            }
        }
        self.spare_lines.push(d.lines);
        while let Some(&w) = self.wait_space.front() {
            // New dirty bytes are at least the write's length less the
            // granules it shares with data already dirty: a write that
            // cannot fit even so waits without a look at the map.
            let need = (ctx.reqs[w].len as u64).saturating_sub(2 * self.gran);
            if self.dirty + need > self.cfg.wb_bytes {
                break;
            }
            let Some(admit) = self.cache_insert(ctx, w) else {
                break;
            };
            self.wait_space.pop_front();
            self.acknowledge(ctx, w, now, admit);
        }
        self.kick(ctx);
    }
}
