//! The simulator driven from outside, in step with a clock: each request
//! enters the model at its arrival time and leaves when the model completes
//! it. `raidlab serve` runs a [`Live`] simulation beside its NBD server, so
//! that real programs see a simulated array's latencies, queueing, caches
//! and garbage collection.
//!
//! The caller owns the clock: it hands requests in with their arrival times
//! ([`Live::hand_in`]), moves the model's time forward to its clock
//! ([`Live::advance`]), and answers each request the model has completed.
//! [`Live::next_time`] says when anything will next happen, so the caller
//! can sleep until then.

use super::*;
use crate::engine::Op;
use crate::measure::{event_loop, Watch};

/// What a request handed in does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveOp {
    /// Read.
    Read,
    /// Write; with `fua`, it completes once a flush behind it has.
    Write {
        /// Force unit access.
        fua: bool,
    },
    /// Make every write completed so far durable.
    Flush,
}

/// What the caller calls a request it hands in; completions come back
/// under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag(pub u64);

/// A simulation of one volume that requests are handed to as they arrive.
pub struct Live {
    sim: Sim,
}

impl Live {
    /// Build `topo` as [`simulate`] would for `w` (the drives' starting
    /// state and warmed caches are those `w` would find; under random
    /// writes, write-back caches full of dirty data), with a host whose
    /// one submitting thread sends the requests handed in. The root must
    /// expose one volume.
    pub fn new(topo: &Topology, w: &Workload, seed: u64) -> Result<Live, SimError> {
        let seed = w.seed.unwrap_or(seed);
        let mut heap = 0;
        let mut sim = build(topo, w, seed, &mut heap)?;
        if sim.roots.len() != 1 {
            return Err(SimError::LiveVolumes(sim.roots.len()));
        }
        let whole = Region {
            start: 0,
            span: sim.cap,
        };
        // A write-back cache under random writes settles full of dirty
        // data (the steady state `simulate` measures, reached there by
        // filling ahead); a served array starts in it, not in the minutes
        // of filling before it.
        let full = w.writes() && w.percentage_random > 0;
        warm_controllers(&mut sim, w, whole, seed, heap, full)?;
        let mut host = Host::external(HOST, sim.roots[0], block_ns(topo, w), &mut sim.ctx);
        host.set_on_submitter(on_submitter(&sim));
        sim.comps[HOST.index()] = Comp::Host(Box::new(host));
        start_rebuilds(&mut sim);
        Ok(Live { sim })
    }

    /// The volume's size, bytes.
    pub fn capacity(&self) -> u64 {
        self.sim.cap
    }

    /// The model's time, ns since it was built.
    pub fn now(&self) -> Ns {
        self.sim.ctx.now
    }

    /// When the model next does anything, ns (`None`: it is idle).
    pub fn next_time(&self) -> Option<Ns> {
        self.sim.ctx.next_time()
    }

    /// Requests handed in and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.host_ref().in_flight()
    }

    /// The model's own figures of the requests it completed: latency from
    /// arrival to completion, counts and bytes.
    pub fn metrics(&self) -> &Metrics {
        &self.host_ref().metrics
    }

    /// Hand in request `tag`: `op` over `len` bytes at `offset`, arriving
    /// at `at` ns (a time already passed counts as now). The range must lie
    /// inside the volume; a flush has none.
    pub fn hand_in(&mut self, at: Ns, tag: Tag, op: LiveOp, offset: u64, len: u32) {
        assert!(
            offset.saturating_add(len as u64) <= self.sim.cap,
            "request {offset}+{len} past the volume's {} bytes",
            self.sim.cap
        );
        let (op, fua) = match op {
            LiveOp::Read => (Op::Read, false),
            LiveOp::Write { fua } => (Op::Write, fua),
            LiveOp::Flush => (Op::Flush, false),
        };
        let Sim { ctx, comps, .. } = &mut self.sim;
        host(comps).hand_in(ctx, at, tag, op, offset, len, fua);
    }

    /// Run the model up to `until` ns (not before its time now), and add
    /// each request it completed meanwhile to `done`: its tag and
    /// completion time.
    pub fn advance(&mut self, until: Ns, done: &mut Vec<(Tag, Ns)>) {
        let Sim { ctx, comps, .. } = &mut self.sim;
        let until = until.max(ctx.now);
        host(comps).tick_at(ctx, until);
        // Stop at the tick: the events due by `until` scheduled before it
        // have been handed on.
        event_loop(comps, ctx, until, &mut |comps, _, (c, r, k)| {
            if host(comps).is_tick(c, r, k) {
                Watch::Stop
            } else {
                Watch::Until(until)
            }
        });
        host(comps).take_done(done);
    }

    fn host_ref(&self) -> &Host {
        match &self.sim.comps[HOST.index()] {
            Comp::Host(h) => h,
            _ => unreachable!("the host is at HOST"),
        }
    }
}

fn host(comps: &mut [Comp]) -> &mut Host {
    match &mut comps[HOST.index()] {
        Comp::Host(h) => h,
        _ => unreachable!("the host is at HOST"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::preset::PresetDb;
    use raidlab_core::topology::resolve;

    fn topo(expr: &str) -> Topology {
        resolve(expr, &PresetDb::builtin()).expect("topology")
    }

    fn live(expr: &str, job: &str) -> Live {
        let topo = topo(expr);
        let w = Workload::parse(job).expect("workload");
        Live::new(&topo, &w, 1).expect("live")
    }

    /// A read handed in alone completes after the model's QD1 latency, the
    /// same as a one-deep job's mean latency in `simulate`.
    #[test]
    fn one_read_takes_the_simulated_qd1_latency() {
        let job = "rw=randread bs=4k iodepth=1 runtime=0.2";
        let mut l = live("x25e", job);
        let mut done = Vec::new();
        let mut lat = Vec::new();
        let mut t = 0;
        for i in 0..200u64 {
            l.hand_in(t, Tag(i), LiveOp::Read, (i * 7919 % 1000) * 4096, 4096);
            while done.is_empty() {
                let next = l.next_time().expect("a read in flight");
                l.advance(next, &mut done);
            }
            let (tag, at) = done.pop().expect("done");
            assert_eq!(tag, Tag(i));
            lat.push(at - t);
            t = at + 10_000;
        }
        let mean = lat.iter().sum::<Ns>() as f64 / lat.len() as f64;
        let r = simulate(&topo("x25e"), &Workload::parse(job).unwrap(), 1).unwrap();
        let sim_mean = r.summary.lat_avg_ms * 1e6;
        assert!(
            (mean / sim_mean - 1.0).abs() < 0.05,
            "live {mean} ns, simulate {sim_mean} ns"
        );
    }

    /// Requests arriving in the future wait for their time; advancing
    /// short of a completion completes nothing; a FUA write takes longer
    /// than a plain one behind a volatile cache's flush.
    #[test]
    fn arrivals_wait_for_their_time_and_fua_flushes() {
        let mut l = live("x25e", "rw=randwrite bs=4k");
        let mut done = Vec::new();
        l.hand_in(1_000_000, Tag(1), LiveOp::Write { fua: false }, 0, 4096);
        l.advance(999_999, &mut done);
        assert!(done.is_empty());
        assert_eq!(l.in_flight(), 0, "not arrived yet");
        l.advance(1_000_000, &mut done);
        assert_eq!(l.in_flight(), 1);
        while done.is_empty() {
            let n = l.next_time().unwrap();
            l.advance(n, &mut done);
        }
        let plain = done[0].1 - 1_000_000;
        done.clear();
        let t = l.now() + 1_000_000;
        l.hand_in(t, Tag(2), LiveOp::Write { fua: true }, 8192, 4096);
        while done.is_empty() {
            let n = l.next_time().unwrap();
            l.advance(n, &mut done);
        }
        let fua = done[0].1 - t;
        assert!(fua >= plain, "fua {fua} ns, plain {plain} ns");
        assert_eq!(l.metrics().write.count, 2);
        assert_eq!(l.next_time(), None, "idle once all completed");
    }
}
