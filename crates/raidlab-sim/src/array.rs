//! The RAID executor: one array, hardware (run by a controller's RoC) or
//! software (run on the host CPU). It maps a request onto member requests
//! with the layout crate, charges its engine for the request, each member
//! command and the parity bytes, and for parity writes runs the two phases
//! of md's stripe handling: pre-reads (read-modify-write or
//! reconstruct-write), then data and parity writes. A request finishes when
//! its slowest member does, which is where RAID's request synchronisation
//! costs latency.

use crate::engine::events;
use crate::engine::{ns, CompId, Ctx, Op, PoolId, Req, ReqId};
use raidlab_core::units::Ns;
use raidlab_layout::{Extent, Geometry, Level, Piece, StripeOp};

events! {
    /// An array's events: a planned request starts; its writes go out.
    Ev {
        Go,
        Writes,
    }
}

/// The plan a request to the array follows (its handler's word).
fn plan_of(r: &Req) -> usize {
    r.handler_word as usize
}

/// The member a member command went to (its creator's word).
fn member_of(r: &Req) -> usize {
    r.creator_word as usize
}

const PHASE_READS: u8 = 0;
const PHASE_WRITES: u8 = 1;

/// What running this array costs, and on which resources.
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    /// Pool that runs the RAID logic (host CPU or the controller's RoC).
    pub cpu: PoolId,
    /// Per array request, ns.
    pub req_ns: Ns,
    /// Per member command, ns.
    pub member_ns: Ns,
    /// Pool that computes parity (host CPU or the controller's XOR engine).
    pub parity: PoolId,
    /// Parity cost per KiB (XOR for raid5, P+Q for raid6), ns.
    pub parity_ns_per_kb: f64,
}

#[derive(Default)]
struct Plan {
    reads: Vec<Extent>,
    writes: Vec<Extent>,
    parity_bytes: u64,
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
}

fn push_merged(v: &mut Vec<Extent>, e: Extent) {
    if let Some(l) = v.iter_mut().rev().find(|x| x.member == e.member) {
        if l.offset + l.len == e.offset {
            l.len += e.len;
            return;
        }
    }
    v.push(e);
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

    /// The array's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    fn new_plan(&mut self) -> u32 {
        if let Some(p) = self.free_plans.pop() {
            let pl = &mut self.plans[p as usize];
            pl.reads.clear();
            pl.writes.clear();
            pl.parity_bytes = 0;
            p
        } else {
            self.plans.push(Plan::default());
            (self.plans.len() - 1) as u32
        }
    }

    /// A request arrives: plan its member commands, charge the array's
    /// engine for them, and start when that work is done.
    pub fn submit(&mut self, ctx: &mut Ctx, id: ReqId) {
        let r = ctx.reqs[id];
        let p = self.new_plan();
        ctx.reqs[id].handler_word = p;
        ctx.reqs[id].phase = PHASE_READS;
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
        let cmds = (plan.reads.len() + plan.writes.len()) as Ns;
        self.plans[p as usize] = plan;
        let cost = self.costs.req_ns + self.costs.member_ns * cmds;
        // `t0` may carry a not-before time from a controller front end, and
        // `cost_pool` another payer for the work (its flush task).
        let pool = if r.cost_pool == PoolId::NONE {
            self.costs.cpu
        } else {
            r.cost_pool
        };
        let t = ctx.reserve(pool, ctx.now.max(r.t0), cost);
        ctx.schedule(t, self.id, id, Ev::Go);
    }

    /// The member reads and writes request `r` needs.
    #[inline]
    fn plan_request(&mut self, r: &Req, plan: &mut Plan) {
        let parity = matches!(self.geo.level(), Level::Raid5 | Level::Raid6);
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
        plan.writes.extend((0..self.members.len()).map(|m| Extent {
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
            let best = *self
                .copies
                .iter()
                .min_by_key(|(m, _)| self.outstanding[*m])
                .expect("a location");
            plan.reads.push(e(best));
        } else {
            plan.writes.extend(self.copies.iter().map(|&c| e(c)));
        }
    }

    /// A read over several chunks: each piece from the copy with the fewest
    /// outstanding commands.
    #[inline]
    fn plan_read(&mut self, r: &Req, plan: &mut Plan) {
        self.geo.pieces(r.offset, r.len as u64, &mut self.pieces);
        for pc in &self.pieces {
            self.geo
                .copies(pc.member as usize, pc.member_off, &mut self.copies);
            let &(m, off) = self
                .copies
                .iter()
                .min_by_key(|(m, _)| self.outstanding[*m])
                .expect("a piece has a location");
            push_merged(
                &mut plan.reads,
                Extent {
                    member: m as u32,
                    offset: off,
                    len: pc.len,
                },
            );
        }
    }

    /// A write without parity over several chunks: every copy of each piece.
    #[inline]
    fn plan_mirrored_write(&mut self, r: &Req, plan: &mut Plan) {
        self.geo.pieces(r.offset, r.len as u64, &mut self.pieces);
        for pc in &self.pieces {
            self.geo
                .copies(pc.member as usize, pc.member_off, &mut self.copies);
            for &(m, off) in &self.copies {
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
        for s in &self.stripes {
            for e in &s.reads {
                push_merged(&mut plan.reads, *e);
            }
            for e in &s.writes {
                push_merged(&mut plan.writes, *e);
            }
            plan.parity_bytes += s.parity_bytes;
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
            let child = ctx.reqs.alloc(Req {
                offset: e.offset,
                len: e.len as u32,
                op,
                parent: id,
                pending: 0,
                comp: CompId(0),
                t0: ctx.now,
                creator_word: e.member,
                cost_pool: PoolId::NONE,
                handler_word: 0,
                phase: 0,
            });
            self.outstanding[e.member as usize] += 1;
            ctx.submit(self.members[e.member as usize], child);
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
        ctx.reqs[id].phase = PHASE_WRITES;
        let bytes = self.plans[p].parity_bytes;
        if bytes > 0 {
            let cost = ns(bytes as f64 / 1024.0 * self.costs.parity_ns_per_kb);
            let t = ctx.reserve(self.costs.parity, ctx.now, cost);
            ctx.schedule(t, self.id, id, Ev::Writes);
        } else {
            self.issue(ctx, id, Op::Write);
        }
    }

    /// A timed event of this array.
    pub fn event(&mut self, ctx: &mut Ctx, id: ReqId, kind: u8) {
        let p = plan_of(&ctx.reqs[id]);
        match Ev::from_code(kind) {
            Ev::Go => {
                if !self.plans[p].reads.is_empty() {
                    self.issue(ctx, id, Op::Read);
                } else {
                    self.after_reads(ctx, id);
                }
            }
            Ev::Writes => self.issue(ctx, id, Op::Write),
        }
    }

    /// A member request finished.
    pub fn child_done(&mut self, ctx: &mut Ctx, id: ReqId, child: ReqId) {
        let m = member_of(&ctx.reqs[child]);
        self.outstanding[m] -= 1;
        ctx.reqs.release(child);
        let r = &mut ctx.reqs[id];
        r.pending -= 1;
        if r.pending > 0 {
            return;
        }
        let p = plan_of(r);
        if r.op == Op::Write && r.phase == PHASE_READS {
            self.after_reads(ctx, id);
            return;
        }
        self.free_plans.push(p as u32);
        ctx.complete(id, self.host);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Call, Next, NONE};
    use raidlab_layout::ParityLayout;

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
                ParityLayout::LeftSymmetric,
                &vec![1 << 30; members],
            )
            .unwrap();
            let costs = Costs {
                cpu: crate::engine::HOST_CPU,
                req_ns: 0,
                member_ns: 0,
                parity: ctx.add_pool(1),
                parity_ns_per_kb: 0.0,
            };
            let ids = (0..members).map(|m| CompId(2 + m as u32)).collect();
            let array = ArrayComp::new(CompId(1), CompId(0), geo, ids, costs, false);
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
                .alloc(Req::new(offset, len, op, CompId(1), self.ctx.now));
            self.array.submit(&mut self.ctx, id);
            let mut done = false;
            while let Some(next) = self.ctx.next_step() {
                match next {
                    Next::Event(CompId(1), r, k) => self.array.event(&mut self.ctx, r, k),
                    Next::Call(Call::Submit(CompId(m), r)) => {
                        let q = self.ctx.reqs[r];
                        self.seen.push((m as usize - 2, q.op, q.offset, q.len));
                        self.ctx.complete(r, CompId(0));
                    }
                    Next::Call(Call::ChildDone(CompId(1), parent, child)) => {
                        self.array.child_done(&mut self.ctx, parent, child)
                    }
                    Next::Call(Call::ChildDone(CompId(0), NONE, r)) => {
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
}
