//! Deterministic discrete-event simulator of storage arrays.
//!
//! [`simulate`] builds one component per piece of hardware from a resolved
//! [`Topology`] — SSDs ([`ssd`]), hard disks ([`hdd`]), controller front ends
//! ([`controller`]), arrays ([`array`](mod@array), hardware or software) and the
//! [`host`] — wires them by id, and runs the workload's jobs through them on
//! the event engine ([`engine`]). Same inputs and seed give the same result.

#![warn(missing_docs)]

pub mod analytic;
pub mod array;
pub mod controller;
pub mod engine;
pub mod fit;
pub mod hdd;
pub mod host;
pub mod plan;
pub use raidlab_core::metrics;
pub mod ssd;
mod table;
pub mod validate;
mod window;

use array::{ArrayComp, Costs, Rebuild};
use controller::{CtrlConfig, CtrlPools, CtrlVol, FastPath};
use engine::{us, Call, CompId, Ctx, Next, PoolId, HOST_CPU};
use hdd::Hdd;
use host::Host;
use raidlab_core::metrics::Metrics;
use raidlab_core::preset::HostParams;
use raidlab_core::result::{
    Component, HostStats, IoCounts, Resolved, RunResult, SimStats, VERSION,
};
use raidlab_core::rng::mix;
use raidlab_core::steady::{Steady, LEVEL_EXCURSION, LEVEL_NOISE_TIMES, WINDOW_ROUNDS};
use raidlab_core::topology::{
    Array, Controller, Device, DeviceModel, Mode, Node, ReadAhead, SsdState, Topology,
};
use raidlab_core::units::Ns;
use raidlab_core::workload::{Rw, Workload};
use raidlab_layout::{Geometry, LayoutError, Level};
use ssd::Ssd;
use thiserror::Error;

/// Why a simulation could not run (all are input errors).
#[derive(Debug, Error)]
pub enum SimError {
    /// Block size above the volume (or the span).
    #[error("block size {bs} bytes is larger than the volume ({cap} bytes)")]
    BlockTooLarge {
        /// Largest block size.
        bs: u64,
        /// Volume (or span) size.
        cap: u64,
    },
    /// `size=` beyond the volume.
    #[error("size={size} bytes is larger than the volume ({cap} bytes)")]
    SizeTooLarge {
        /// Requested span.
        size: u64,
        /// Volume size.
        cap: u64,
    },
    /// More volumes side by side than a host I/O can name.
    #[error("the root exposes {0} volumes; at most {max} can be addressed side by side", max = host::MAX_VOLUMES)]
    TooManyVolumes(usize),
    /// The model of this topology and workload would need more memory than
    /// the simulator allows itself.
    #[error("the simulation needs more than its bound of {} MiB for its models of {what} ({} MiB counted so far); simulate fewer or smaller devices or caches", MAX_SIM_BYTES >> 20, need >> 20)]
    TooLarge {
        /// Bytes counted when the bound was passed.
        need: u64,
        /// What took them.
        what: &'static str,
    },
    /// The workload would keep more I/O in flight than the simulator's
    /// memory bound allows.
    #[error("iodepth x numjobs keeps {ios} I/Os in flight, each split into {pieces} chunk pieces, at least {} MiB, past the simulator's bound of {} MiB: lower iodepth, numjobs or bs, or widen the stripe", need >> 20, MAX_SIM_BYTES >> 20)]
    InFlightTooLarge {
        /// I/Os in flight.
        ios: u64,
        /// Pieces each.
        pieces: u64,
        /// Bytes they take at least.
        need: u64,
    },
    /// A rate-limited one-pass run whose pace would take it past the
    /// longest time a run may last.
    #[error("one pass over {span} bytes at the rate cap takes about {secs:.0e} s; at most 1e9 s (give runtime=, or a higher cap)")]
    PacedTooLong {
        /// Bytes each job passes over (all its volumes).
        span: u64,
        /// The pass's paced length, seconds.
        secs: f64,
    },
    /// `hipri` on a topology or host that cannot poll.
    #[error("hipri: {0}")]
    NoPolling(String),
    /// The array cannot be laid out.
    #[error("topology: column {col}: {err}")]
    Layout {
        /// Column of the array.
        col: usize,
        /// Layout error.
        err: LayoutError,
    },
}

enum Comp {
    Host(Box<Host>),
    Ssd(Box<Ssd>),
    Hdd(Box<Hdd>),
    Array(Box<ArrayComp>),
    Ctrl(Box<CtrlVol>),
    Empty,
}

enum Report {
    Ssd(CompId),
    Hdd(CompId),
    Controller {
        label: String,
        pools: CtrlPools,
        vols: Vec<CompId>,
    },
    /// A host software parity array's stripe-handling threads (md's
    /// raid5d and its `group_thread_cnt` workers).
    Stripes {
        label: String,
        pool: PoolId,
        /// What the pool stands for: `stripes` (raid5d and its workers)
        /// or `barrier lock` (RAID 10's).
        resource: &'static str,
    },
}

const HOST: CompId = CompId(0);
/// The component id of a missing member: never addressed (the array sends
/// it nothing).
const FAILED: CompId = CompId(u32::MAX);

/// PCIe payload rate per lane for a generation, 10^6 B/s: the line rate
/// after coding (2.5 and 5 GT/s with 8b/10b; 8, 16, 32 GT/s with 128b/130b)
/// times [`PCIE_EFFICIENCY`].
fn pcie_lane_mbps(gen: u32) -> f64 {
    PCIE_EFFICIENCY
        * match gen {
            1 => 250.0,
            2 => 500.0,
            3 => 985.0,
            4 => 1969.0,
            _ => 3938.0,
        }
}

/// The rate at which a PCIe device fetches host memory (the data of host
/// writes) on a link that carries `posted_mbps` of its own posted writes
/// (the data of host reads). A device writes host memory in posted writes
/// of up to 256 bytes (24 bytes of header, sequence number, LCRC and
/// framing: 91 % payload), but it reads host memory by request, and the
/// root complex may answer a request in completions split at its read
/// completion boundary, 64 or 128 bytes for a root complex (PCI Express
/// Base Specification, as Intel's PCIe IP guides restate it): at 64 bytes,
/// the cache line, the same 24 bytes frame every 64 (73 % payload).
pub fn pcie_fetch_mbps(posted_mbps: f64) -> f64 {
    let payload = |bytes: f64| bytes / (bytes + TLP_FRAMING_BYTES);
    posted_mbps * payload(READ_COMPLETION_BOUNDARY_BYTES) / payload(TLP_PAYLOAD_BYTES)
}

/// Largest payload of one PCIe transaction-layer packet the model's links
/// carry (the common Max_Payload_Size of 256 bytes).
const TLP_PAYLOAD_BYTES: f64 = 256.0;
/// Bytes that frame each TLP on the link: header, sequence number, LCRC
/// and start/end framing (about 24, PCI Express Base Specification).
const TLP_FRAMING_BYTES: f64 = 24.0;
/// A root complex's read completion boundary taken by the model: 64 bytes,
/// the cache line (the specification allows 64 or 128).
const READ_COMPLETION_BOUNDARY_BYTES: f64 = 64.0;

/// Share of a PCIe link's coded rate left for data: TLPs of
/// [`TLP_PAYLOAD_BYTES`] carry [`TLP_FRAMING_BYTES`] of framing (91 %), and ACK and
/// flow-control DLLPs take a few percent more. (jdev2009 saw 1.75 GB/s
/// through a PCIe 1.0 x8 slot: at least 88 % of its 2 GB/s.)
const PCIE_EFFICIENCY: f64 = 0.88;

/// Most heap one simulation may hold in its component models (FTL tables,
/// warmed controller caches): 1.5 GiB, so that with its queues, histograms
/// and code the process stays under 2 GiB resident, and a few simulations
/// run side by side on a 24 GiB machine. About 350 folded SSDs in steady
/// state (≈4.4 MiB each) fit. A topology past it is refused while it is
/// built (at most one drive's tables past the bound), never aborted midway.
pub const MAX_SIM_BYTES: u64 = 1536 << 20;

struct Builder<'a> {
    ctx: Ctx,
    comps: Vec<Comp>,
    reports: Vec<Report>,
    state: Option<SsdState>,
    /// Preconditioning when neither the expression nor the workload says.
    default_state: SsdState,
    seed: u64,
    host: &'a HostParams,
    devices: u64,
    warm: ssd::WarmCache,
    /// Host threads that compute software RAID parity (one per parity array).
    parity_threads: Vec<PoolId>,
    /// Heap bytes the models built so far hold (see `MAX_SIM_BYTES`).
    heap: u64,
    /// Every array and its name in messages.
    arrays: Vec<(CompId, String)>,
}

/// A controller's shared pools plus the parameters arrays inside it need.
#[derive(Clone, Copy)]
struct CtrlCtx {
    pools: CtrlPools,
    member_ns: Ns,
    xor_mbps: f64,
}

impl Builder<'_> {
    fn push(&mut self, c: Comp) -> CompId {
        self.comps.push(c);
        CompId((self.comps.len() - 1) as u32)
    }

    /// Count `bytes` more of model heap; refuse once over `MAX_SIM_BYTES`.
    fn charge(&mut self, bytes: u64, what: &'static str) -> Result<(), SimError> {
        self.heap += bytes;
        within_bound(self.heap, what)
    }

    fn cpu_scale(&self) -> f64 {
        self.host.ref_ghz / self.host.ghz
    }

    /// Build a node; returns the volumes it exposes: (component, capacity).
    fn node(&mut self, n: &Node, ctrl: Option<CtrlCtx>) -> Result<Vec<(CompId, u64)>, SimError> {
        match n {
            Node::Device(d) => Ok(vec![self.device(d)?]),
            Node::Array(a) => Ok(vec![self.array(a, ctrl)?]),
            Node::Controller(c) => self.controller(c),
        }
    }

    /// An SSD or a disk.
    fn device(&mut self, d: &Device) -> Result<(CompId, u64), SimError> {
        let id = CompId(self.comps.len() as u32);
        let seed = mix(self.seed, 0xD15C + self.devices);
        self.devices += 1;
        let (comp, report, cap) = match &d.model {
            DeviceModel::Ssd(p) => {
                let st = self.state.or(d.state).unwrap_or(self.default_state);
                let s = Ssd::new(
                    d.label.clone(),
                    id,
                    HOST,
                    p,
                    d.wc,
                    d.op,
                    d.link_mbps,
                    st,
                    seed,
                    &mut self.warm,
                );
                self.charge(s.heap_bytes(), "SSD flash translation tables")?;
                let cap = s.capacity();
                (Comp::Ssd(Box::new(s)), Report::Ssd(id), cap)
            }
            DeviceModel::Hdd(p) => {
                let h = Hdd::new(d.label.clone(), id, HOST, p, d.wc, d.link_mbps);
                let cap = h.capacity();
                (Comp::Hdd(Box::new(h)), Report::Hdd(id), cap)
            }
        };
        self.push(comp);
        self.reports.push(report);
        Ok((id, cap))
    }

    /// An array over its members, run by the controller `ctrl` or by the
    /// host's software RAID.
    fn array(&mut self, a: &Array, ctrl: Option<CtrlCtx>) -> Result<(CompId, u64), SimError> {
        let mut members = Vec::new();
        let mut failed = Vec::new();
        for m in a.active() {
            match m {
                // A missing member: no component; its size is its siblings'.
                Node::Device(d) if d.failed => {
                    members.push((FAILED, u64::MAX));
                    failed.push(true);
                }
                _ => {
                    let v = self.node(m, ctrl)?;
                    failed.extend(v.iter().map(|_| false));
                    members.extend(v);
                }
            }
        }
        let mut spares = Vec::new();
        for s in &a.members[a.active().len()..] {
            spares.extend(self.node(s, ctrl)?); // hot spares: idle until needed
        }
        // As md does, a spare takes the first missing member's place at
        // once and is rebuilt there.
        let rebuild = match (failed.iter().position(|&f| f), spares.first()) {
            (Some(slot), Some(&spare)) => {
                members[slot] = spare;
                failed[slot] = false;
                let (lo, hi) = a.rebuild_rates;
                Some(Rebuild::new(slot, members.len(), lo as f64, hi as f64))
            }
            _ => None,
        };
        let sizes: Vec<u64> = members.iter().map(|m| m.1).collect();
        let geo = Geometry::new(a.level, a.stripe, a.layout, &sizes)
            .map_err(|err| SimError::Layout { col: a.col, err })?;
        let (costs, rmw_only) = match ctrl {
            Some(c) => (hardware_costs(c, a.level), false),
            None => self.software_costs(a),
        };
        let cap = geo.capacity();
        let id = CompId(self.comps.len() as u32);
        let mut comp = ArrayComp::new(
            id,
            HOST,
            geo,
            members.iter().map(|m| m.0).collect(),
            costs,
            rmw_only,
        );
        comp.degrade(failed, rebuild);
        if let Some(c) = a.bitmap_chunk {
            comp.with_bitmap(c);
        }
        if a.ppl {
            comp.with_ppl();
        }
        self.push(Comp::Array(Box::new(comp)));
        self.arrays
            .push((id, format!("{} at column {}", a.level.word(), a.col)));
        Ok((id, cap))
    }

    /// What running a host software array costs, and whether its parity
    /// writes always read first (a trait of the implementation).
    fn software_costs(&mut self, a: &Array) -> (Costs, bool) {
        let imp = &self.host.impls[a.imp.as_deref().unwrap_or("md")];
        let k = self.cpu_scale();
        let pq = a.level == Level::Raid6;
        // md handles RAID 4/5/6 writes in its stripe cache on one kernel
        // thread per array, raid5d, plus `group_thread_cnt` workers (0 by
        // default): "raid5 handles request (especially write) in stripe
        // unit ... The state machine is running in raid5d thread
        // currently. Since there is only one thread, it doesn't scale well
        // for high speed storage" (Shaohua Li, kernel commit 851c30c9
        // "raid5: offload stripe handle to workqueue", 2013). Parity and
        // the writes' request and member costs run there; reads within a
        // chunk bypass the stripe cache (raid5_read_one_chunk) and stay on
        // the submitting CPU. lvm's dm-raid runs md's raid5 personality, so
        // the same holds; Windows' RAID-5 volumes keep only their parity on
        // one thread (as before: no document says where their requests run).
        let stripe_threads = if a.level.parity_members() > 0 {
            let p = self.ctx.add_pool(1 + a.group_threads);
            self.parity_threads.push(p);
            self.reports.push(Report::Stripes {
                label: format!("{} at column {}", a.level.word(), a.col),
                pool: p,
                resource: "stripes",
            });
            Some(p)
        } else {
            None
        };
        let lock_ns = if a.level == Level::Raid10 {
            (us(imp.raid10_lock_us) as f64 * k) as Ns
        } else {
            0
        };
        let lock = if lock_ns > 0 {
            let p = self.ctx.add_pool(1);
            self.reports.push(Report::Stripes {
                label: format!("{} at column {}", a.level.word(), a.col),
                pool: p,
                resource: "barrier lock",
            });
            p
        } else {
            PoolId::NONE
        };
        let costs = Costs {
            cpu: HOST_CPU,
            write_cpu: stripe_threads
                // dm-raid (lvm) runs md's raid456 personality too.
                .filter(|_| a.runs_md() || a.imp.as_deref() == Some("lvm"))
                .unwrap_or(HOST_CPU),
            req_ns: (us(imp.req_us) as f64 * k) as Ns,
            member_ns: (us(imp.member_us) as f64 * k) as Ns,
            parity: stripe_threads.unwrap_or(HOST_CPU),
            parity_ns_per_kb: 1024.0 * 1000.0 / if pq { imp.pq_mbps } else { imp.xor_mbps } * k,
            lock_ns,
            lock,
        };
        (costs, imp.rmw_only)
    }

    /// A controller: its shared pools, and one volume (a front end with
    /// cache) per child it exposes.
    fn controller(&mut self, c: &Controller) -> Result<Vec<(CompId, u64)>, SimError> {
        let p = &c.params;
        let pools = CtrlPools {
            pcie_in: self.ctx.add_pool(1),
            pcie_out: self.ctx.add_pool(1),
            roc: self.ctx.add_pool(p.roc_cores),
            dma: self.ctx.add_pool(1),
            xor: self.ctx.add_pool(1),
            flush: self.ctx.add_pool(1),
        };
        let cc = CtrlCtx {
            pools,
            member_ns: us(p.roc_member_cmd_us),
            xor_mbps: p.xor_mbps,
        };
        let nvol = c.children.iter().map(Node::volumes).sum::<usize>().max(1) as u64;
        let mut out = Vec::new();
        for child in &c.children {
            let is_dev = matches!(child, Node::Device(_));
            for (vid, cap) in self.node(child, Some(cc))? {
                let (geo, optimal) = match &self.comps[vid.index()] {
                    Comp::Array(a) => (Some(a.geometry().clone()), a.optimal()),
                    _ => (None, true),
                };
                let mut cfg = volume_config(c, pools, nvol, is_dev, cap, geo);
                cfg.fastpath = fastpath(c, &cfg, optimal);
                let id = CompId(self.comps.len() as u32);
                self.push(Comp::Ctrl(Box::new(CtrlVol::new(cfg, id, HOST, vid))));
                out.push((id, cap));
            }
        }
        self.reports.push(Report::Controller {
            label: c.label.clone(),
            pools,
            vols: out.iter().map(|v| v.0).collect(),
        });
        Ok(out)
    }
}

/// What running an array costs on a controller's RoC.
fn hardware_costs(c: CtrlCtx, level: Level) -> Costs {
    // P+Q takes a second pass (GF multiply) over the data.
    let passes = if level == Level::Raid6 { 2.0 } else { 1.0 };
    Costs {
        cpu: c.pools.roc,
        write_cpu: c.pools.roc,
        req_ns: 0,
        member_ns: c.member_ns,
        parity: c.pools.xor,
        parity_ns_per_kb: 1024.0 * 1000.0 / c.xor_mbps * passes,
        lock_ns: 0, // a RoC's firmware has no host lock
        lock: PoolId::NONE,
    }
}

/// One controller volume's configuration: a share `1/nvol` of the cache,
/// the controller's costs, and its child's capacity and geometry.
fn volume_config(
    c: &Controller,
    pools: CtrlPools,
    nvol: u64,
    is_dev: bool,
    cap: u64,
    geo: Option<Geometry>,
) -> CtrlConfig {
    let p = &c.params;
    let mut pcie = pcie_lane_mbps(p.pcie_gen) * p.pcie_lanes as f64;
    if p.slot_limit_mbps > 0.0 {
        pcie = pcie.min(p.slot_limit_mbps);
    }
    let jbod = c.mode == Mode::Jbod;
    let share = ((p.cache_mb as u64) << 20) / nvol;
    CtrlConfig {
        label: c.label.clone(),
        pools,
        cmd_ns: us(p.roc_cmd_us),
        ns_per_kb: p.roc_us_per_kb * 1000.0,
        passthrough_member_ns: if is_dev { us(p.roc_member_cmd_us) } else { 0 },
        // The mapping is the flush task's work: a controller without one
        // pays member commands on its RoC cores when it destages.
        map_member_ns: if p.destage_task_us > 0.0 {
            us(p.roc_member_cmd_us)
        } else {
            0
        },
        pcie_mbps: pcie,
        pcie_in_mbps: pcie_fetch_mbps(pcie),
        dma_mbps: p.dma_mbps,
        fw_latency: us(p.fw_latency_us),
        wb_bytes: if c.write_back && !jbod { share } else { 0 },
        cache_bytes: share,
        read_cache: !jbod && c.readahead != ReadAhead::Off,
        readahead: if jbod { ReadAhead::Off } else { c.readahead },
        readahead_bytes: p.readahead_kb as u64 * 1024,
        destage_per_member: p.destage_per_member,
        destage_task_ns: us(p.destage_task_us),
        destage_delay: (p.destage_delay_ms * 1e6) as Ns,
        full_stripe_destage: p.full_stripe_destage,
        capacity: cap,
        geo,
        fastpath: FastPath::Off,
    }
}

/// The FastPath a controller's volume `cfg` has: the preset's, on a
/// virtual disk (not a JBOD pass-through) set write-through with no
/// read-ahead whose array is optimal (not degraded or rebuilding); none
/// otherwise.
fn fastpath(c: &Controller, cfg: &CtrlConfig, optimal: bool) -> FastPath {
    let p = &c.params;
    let eligible = p.fastpath
        && c.mode != Mode::Jbod
        && cfg.wb_bytes == 0
        && cfg.readahead == ReadAhead::Off
        && optimal;
    match (eligible, p.fastpath_spans) {
        (false, _) => FastPath::Off,
        (true, false) => FastPath::Unspanned,
        (true, true) => FastPath::Spans,
    }
}

/// Busy time of every reported resource: (report index, resource, busy ns, servers).
fn busy(comps: &[Comp], reports: &[Report], ctx: &Ctx) -> Vec<(usize, &'static str, Ns, u64)> {
    let mut v = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        match r {
            Report::Ssd(id) => {
                if let Comp::Ssd(s) = &comps[id.index()] {
                    let c = s.counters();
                    v.push((i, "link", c.link_busy, 1));
                    v.push((i, "firmware", c.fw_busy, 1));
                    v.push((i, "nand", c.die_busy, 1));
                    v.push((i, "write path", c.write_path_busy, 1));
                }
            }
            Report::Hdd(id) => {
                if let Comp::Hdd(h) = &comps[id.index()] {
                    v.push((i, "actuator", h.busy_ns, 1));
                }
            }
            Report::Controller { pools, vols, .. } => {
                let pool = |p: PoolId| &ctx.pools[p.index()];
                v.push((
                    i,
                    "pcie",
                    pool(pools.pcie_in).busy.max(pool(pools.pcie_out).busy),
                    1,
                ));
                v.push((
                    i,
                    "roc",
                    pool(pools.roc).busy,
                    pool(pools.roc).servers() as u64,
                ));
                v.push((i, "dma", pool(pools.dma).busy, 1));
                v.push((i, "xor", pool(pools.xor).busy, 1));
                v.push((i, "flush", pool(pools.flush).busy, 1));
                let (mut at, mut m) = (0, 0);
                for vid in vols {
                    if let Comp::Ctrl(c) = &comps[vid.index()] {
                        let d = c.destage_stats();
                        at += d.at_limit_ns;
                        m += d.members as u64;
                    }
                }
                v.push((i, "destage", at, m.max(1)));
            }
            Report::Stripes { pool, resource, .. } => {
                let p = &ctx.pools[pool.index()];
                v.push((i, resource, p.busy, p.servers() as u64));
            }
        }
    }
    v
}

fn wa_counters(comps: &[Comp], reports: &[Report]) -> Vec<(u64, u64)> {
    reports
        .iter()
        .map(|r| match r {
            Report::Ssd(id) => match &comps[id.index()] {
                Comp::Ssd(s) => {
                    let c = s.counters();
                    (c.host_units, c.gc_units)
                }
                _ => (0, 0),
            },
            _ => (0, 0),
        })
        .collect()
}

/// Turn the simulator's memory-level hints (cache-line prefetches and the
/// components' advance notice of the data they will look up) on or off for
/// the whole process. They are on by default and change no result, only
/// speed; a test runs the same simulations both ways and compares them.
pub fn set_memory_hints(on: bool) {
    table::set_hints(on);
}

/// Simulate `w` on `topo` with `seed` (the workload's own `seed=` wins).
pub fn simulate(topo: &Topology, w: &Workload, seed: u64) -> Result<RunResult, SimError> {
    simulate_inner(topo, w, seed, Start::default(), None).map(|r| r.0)
}

/// [`simulate`], telling `progress` now and then (every 2^20 events) how
/// far the run has come, 0 to 1: simulated time against the end of the
/// window, or for one pass the share of its bytes moved.
pub fn simulate_with_progress(
    topo: &Topology,
    w: &Workload,
    seed: u64,
    progress: &dyn Fn(f64),
) -> Result<RunResult, SimError> {
    simulate_inner(topo, w, seed, Start::default(), Some(progress)).map(|r| r.0)
}

/// [`simulate`], also returning each job's I/Os in the order the host issued
/// them (the real engine's `trace` gives the same for a real run).
pub fn simulate_traced(
    topo: &Topology,
    w: &Workload,
    seed: u64,
) -> Result<(RunResult, Vec<Vec<raidlab_core::workload::Io>>), SimError> {
    let start = Start {
        trace: true,
        ..Start::default()
    };
    simulate_inner(topo, w, seed, start, None)
}

/// [`simulate`] from another physically reachable start: every write-back
/// cache full of dirty data (as a long burst of random writes leaves it)
/// instead of clean. The steady state reached must not depend on the
/// start; tests compare the two.
#[doc(hidden)]
pub fn simulate_from_full_caches(
    topo: &Topology,
    w: &Workload,
    seed: u64,
) -> Result<RunResult, SimError> {
    let start = Start {
        full_caches: true,
        ..Start::default()
    };
    simulate_inner(topo, w, seed, start, None).map(|r| r.0)
}

/// How a simulation starts.
#[derive(Debug, Clone, Copy, Default)]
struct Start {
    /// Record each job's I/Os.
    trace: bool,
    /// Write-back caches start full of dirty data rather than clean.
    full_caches: bool,
}

/// A built simulation: the engine, the components (the host at `HOST`),
/// what the report covers, and the volume the host sees.
struct Sim {
    ctx: Ctx,
    comps: Vec<Comp>,
    reports: Vec<Report>,
    parity_threads: Vec<PoolId>,
    /// Every array and its name in messages.
    arrays: Vec<(CompId, String)>,
    /// The volumes the host's jobs address.
    roots: Vec<CompId>,
    /// The smallest one's capacity, bytes: a job's span on every one.
    cap: u64,
}

/// Counters of every reported component at one moment: the start of the
/// measurement window, or the end of the run.
struct Snapshot {
    busy: Vec<(usize, &'static str, Ns, u64)>,
    /// (host units, GC units) written per SSD.
    wa: Vec<(u64, u64)>,
    /// Commands completed per device (`None`: a controller).
    io: Vec<Option<IoCounts>>,
    /// Busy time of the host CPU and its parity threads.
    cpu: Ns,
    /// Busy time of each job's submitting thread.
    threads: Vec<Ns>,
    /// Time each job has had I/O outstanding.
    waited: Vec<Ns>,
}

impl Snapshot {
    fn take(s: &Sim) -> Self {
        Self::of(&s.comps, &s.reports, &s.ctx, &s.parity_threads)
    }

    fn of(comps: &[Comp], reports: &[Report], ctx: &Ctx, parity: &[PoolId]) -> Self {
        Snapshot {
            busy: busy(comps, reports, ctx),
            wa: wa_counters(comps, reports),
            io: io_counters(comps, reports),
            cpu: ctx.pools[HOST_CPU.index()].busy
                + parity.iter().map(|p| ctx.pools[p.index()].busy).sum::<Ns>(),
            threads: ctx.thread_busy.clone(),
            waited: match &comps[HOST.index()] {
                Comp::Host(h) => h.waited(ctx.now),
                _ => unreachable!("the host is at HOST"),
            },
        }
    }
}

/// Commands each reported device has completed (`None` for controllers).
fn io_counters(comps: &[Comp], reports: &[Report]) -> Vec<Option<IoCounts>> {
    reports
        .iter()
        .map(|r| match r {
            Report::Ssd(id) | Report::Hdd(id) => match &comps[id.index()] {
                Comp::Ssd(s) => Some(s.io()),
                Comp::Hdd(h) => Some(h.io()),
                _ => unreachable!("a device report names a device"),
            },
            Report::Controller { .. } | Report::Stripes { .. } => None,
        })
        .collect()
}

fn simulate_inner(
    topo: &Topology,
    w: &Workload,
    seed: u64,
    how: Start,
    progress: Option<&dyn Fn(f64)>,
) -> Result<(RunResult, Vec<Vec<raidlab_core::workload::Io>>), SimError> {
    let wall = std::time::Instant::now();
    let seed = w.seed.unwrap_or(seed);
    if w.hipri {
        polled(topo)?;
    }
    let mut heap = 0;
    let mut sim = build(topo, w, seed, &mut heap)?;
    let span = w.size.unwrap_or(sim.cap);
    if span > sim.cap {
        return Err(SimError::SizeTooLarge {
            size: span,
            cap: sim.cap,
        });
    }
    if w.max_bs() > span {
        return Err(SimError::BlockTooLarge {
            bs: w.max_bs(),
            cap: span,
        });
    }
    // One stream per job and volume: bounded with the models' memory.
    let split_bytes = 16 * (w.bssplit.len() + w.bssplit_write.len()) as u64;
    let stream_bytes =
        std::mem::size_of::<raidlab_core::workload::JobStream>() as u64 + split_bytes;
    let heap = heap + w.numjobs as u64 * sim.roots.len() as u64 * stream_bytes;
    within_bound(heap, "job streams")?;
    check_in_flight(topo, w, sim.roots.len(), heap)?;
    warm_controllers(&mut sim, w, span, seed, heap, how.full_caches)?;
    check_paced_pass(w, span * sim.roots.len() as u64)?;
    install_host(&mut sim, topo, w, span, seed, how.trace);
    start_rebuilds(&mut sim);
    let measured = run_events(&mut sim, w, span, seed, progress);
    if cfg!(debug_assertions) {
        check_invariants(&sim);
    }
    let mut result = report(&sim, topo, w, seed, measured);
    result.sim.wall_s = wall.elapsed().as_secs_f64();
    let trace = match &mut sim.comps[HOST.index()] {
        Comp::Host(h) => h.trace.take().unwrap_or_default(),
        _ => unreachable!("the host is at HOST"),
    };
    Ok((result, trace))
}

/// Whether the jobs can poll for their completions (fio's `hipri`): the
/// host's kernel must poll, and every volume must be an NVMe namespace
/// addressed directly, or an md array of them on a kernel whose md takes
/// polled I/O (dm, SCSI and SATA devices complete by interrupt here, and
/// so does a hardware RAID volume).
fn polled(topo: &Topology) -> Result<(), SimError> {
    let host = &topo.host;
    let name = topo.host_profile.as_deref().unwrap_or("host");
    if host.block_layer_poll_us.is_none() {
        return Err(SimError::NoPolling(format!(
            "host preset '{name}' profiles no polled completions (block_layer_poll_us); choose one that does, e.g. host[profile=host2020]"
        )));
    }
    topo.roots()
        .try_for_each(|n| pollable(n, host.md_polls, name))
        .map_err(SimError::NoPolling)
}

/// Whether volume `n` takes polled I/O (see [`polled`]).
fn pollable(n: &Node, md_polls: bool, host: &str) -> Result<(), String> {
    match n {
        Node::Device(d) => match &d.model {
            DeviceModel::Ssd(p) if p.nvme => Ok(()),
            _ => Err(format!(
                "{} is not an NVMe drive (its preset does not say nvme = true): only NVMe namespaces are polled",
                d.label
            )),
        },
        Node::Array(a) if a.runs_md() => {
            if !md_polls {
                return Err(format!(
                    "the md array at column {} does not take polled I/O on host '{host}' (Linux 5.x md; host2023's 6.x does)",
                    a.col
                ));
            }
            a.active().iter().try_for_each(|m| pollable(m, md_polls, host))
        }
        Node::Array(a) => Err(format!(
            "the {} array at column {} is not md: dm and other RAID layers complete by interrupt",
            a.level.word(),
            a.col
        )),
        Node::Controller(c) => Err(format!(
            "{} is a SCSI/RAID adapter: its volumes complete by interrupt",
            c.label
        )),
    }
}

/// Start every array's rebuild onto a spare, at time 0.
fn start_rebuilds(sim: &mut Sim) {
    for (id, _) in &sim.arrays {
        if let Comp::Array(a) = &mut sim.comps[id.index()] {
            a.start(&mut sim.ctx);
        }
    }
}

/// Each rebuild's progress at the end of the run: rate over the simulated
/// time, and the whole rebuild's duration at that rate.
fn rebuild_stats(sim: &Sim) -> Vec<raidlab_core::result::RebuildStats> {
    let secs = sim.ctx.now as f64 / 1e9;
    sim.arrays
        .iter()
        .filter_map(|(id, name)| {
            let Comp::Array(a) = &sim.comps[id.index()] else {
                return None;
            };
            let r = a.rebuild()?;
            let member = a.geometry().member_size();
            let until = r.finished.map_or(secs, |f| f as f64 / 1e9);
            let rate = r.done as f64 / until.max(1e-9);
            Some(raidlab_core::result::RebuildStats {
                array: name.clone(),
                member_bytes: member,
                rebuilt_bytes: r.done.min(member),
                rate_mb_s: round3(rate / 1e6),
                finished_s: r.finished.map(|f| round3(f as f64 / 1e9)),
                projected_s: round3(member as f64 / rate.max(1e-9)),
            })
        })
        .collect()
}

/// Assert every component's invariants at the end of a run (debug builds,
/// so every test checks them), and that the host's I/Os still in flight are
/// all held in the request slab.
fn check_invariants(sim: &Sim) {
    for c in &sim.comps {
        match c {
            Comp::Ssd(s) => s.check(),
            Comp::Ctrl(v) => v.check(),
            Comp::Host(h) => assert!(
                sim.ctx.reqs.live() >= h.in_flight(),
                "{} live requests, {} host I/Os in flight",
                sim.ctx.reqs.live(),
                h.in_flight()
            ),
            Comp::Hdd(h) => h.check(),
            Comp::Array(_) | Comp::Empty => {}
        }
    }
}

/// Least memory one chunk-sized piece of a host I/O takes while in flight,
/// an estimate from below so the bound refuses only inputs that surely pass
/// it. Measured: 64 MiB random reads over a RAID 5 of 4 KiB chunks (16,384
/// pieces each) took 35 MB resident at iodepth 64 and 73 MB at 256, about
/// 190 KB an I/O, 12 bytes a piece.
const PIECE_BYTES: u64 = 8;

/// Refuse a workload whose I/Os in flight would take the simulator past
/// its memory bound (beside `heap` bytes of models): every job's `iodepth`
/// I/Os on every volume, each split at each chunk boundary it crosses into
/// a piece per chunk (the topology's smallest chunk), so a 64 MiB block
/// over 4 KiB chunks is 16,384 pieces.
fn check_in_flight(
    topo: &Topology,
    w: &Workload,
    volumes: usize,
    heap: u64,
) -> Result<(), SimError> {
    fn min_chunk(n: &Node) -> u64 {
        match n {
            Node::Device(_) => u64::MAX,
            Node::Controller(c) => c.children.iter().map(min_chunk).min().unwrap_or(u64::MAX),
            Node::Array(a) => a
                .members
                .iter()
                .map(min_chunk)
                .fold(a.stripe.max(512), u64::min),
        }
    }
    let chunk = topo.roots().map(min_chunk).min().unwrap_or(u64::MAX);
    let pieces = w.max_bs().div_ceil(chunk.min(w.max_bs()).max(1)) + 1;
    let ios = w.numjobs as u64 * w.effective_iodepth() as u64 * volumes as u64;
    let need = ios.saturating_mul(pieces).saturating_mul(PIECE_BYTES);
    if heap.saturating_add(need) > MAX_SIM_BYTES {
        return Err(SimError::InFlightTooLarge { ios, pieces, need });
    }
    Ok(())
}

/// `Ok` while `heap` bytes of models are within `MAX_SIM_BYTES`; else the
/// error naming `what` passed it.
fn within_bound(heap: u64, what: &'static str) -> Result<(), SimError> {
    if heap > MAX_SIM_BYTES {
        return Err(SimError::TooLarge { need: heap, what });
    }
    Ok(())
}

/// Build every component of `topo`, counting their heap into `heap`.
fn build(topo: &Topology, w: &Workload, seed: u64, heap: &mut u64) -> Result<Sim, SimError> {
    let mut b = Builder {
        ctx: Ctx::new(topo.host.cores),
        comps: vec![Comp::Empty],
        reports: Vec::new(),
        state: w.state,
        default_state: w.default_ssd_state(),
        seed,
        host: &topo.host,
        devices: 0,
        warm: ssd::WarmCache::default(),
        parity_threads: Vec::new(),
        heap: 0,
        arrays: Vec::new(),
    };
    let mut vols = Vec::new();
    for n in topo.roots() {
        vols.extend(b.node(n, None)?);
    }
    if vols.len() > host::MAX_VOLUMES {
        return Err(SimError::TooManyVolumes(vols.len()));
    }
    let roots = vols.iter().map(|v| v.0).collect();
    let cap = vols.iter().map(|v| v.1).min().unwrap_or(0);
    debug_assert_eq!(
        volume_capacity(topo).ok(),
        Some(cap),
        "capacity without building agrees"
    );
    *heap = b.heap;
    Ok(Sim {
        ctx: b.ctx,
        comps: b.comps,
        reports: b.reports,
        parity_threads: b.parity_threads,
        arrays: b.arrays,
        roots,
        cap,
    })
}

/// The span of controller volume `i` a workload over `span` bytes of the
/// root volumes address.
fn ctrl_span(sim: &Sim, i: usize, v: &CtrlVol, span: u64) -> u64 {
    if sim.roots.contains(&CompId(i as u32)) {
        span
    } else {
        (span as f64 / sim.cap as f64 * v.cfg.capacity as f64) as u64
    }
}

/// Bring controller read caches to the workload's steady state (see
/// `CtrlVol::warm`), once their heap, and that of write-back caches filled
/// later (see [`Fill`]), is known to fit the bound. Write-back caches start
/// clean, as an idle controller leaves them, or with `full` full of dirty
/// data.
fn warm_controllers(
    sim: &mut Sim,
    w: &Workload,
    span: u64,
    seed: u64,
    heap: u64,
    full: bool,
) -> Result<(), SimError> {
    let reads = !matches!(w.rw, Rw::Write | Rw::RandWrite);
    let writes = !matches!(w.rw, Rw::Read | Rw::RandRead);
    let random = w.percentage_random > 0;
    let mut warm_bytes = 0;
    for (i, c) in sim.comps.iter().enumerate() {
        if let Comp::Ctrl(v) = c {
            let vspan = ctrl_span(sim, i, v, span);
            warm_bytes += v.warm_bytes(
                vspan,
                random && reads,
                (random || full) && writes,
                w.max_bs(),
            );
        }
    }
    within_bound(heap + warm_bytes, "controller caches")?;
    let spans: Vec<u64> = (0..sim.comps.len())
        .map(|i| match &sim.comps[i] {
            Comp::Ctrl(v) => ctrl_span(sim, i, v, span),
            _ => 0,
        })
        .collect();
    for (i, c) in sim.comps.iter_mut().enumerate() {
        if let Comp::Ctrl(v) = c {
            v.warm(
                spans[i],
                random && reads,
                full && writes,
                w.max_bs(),
                mix(seed, 0xCAC4E + i as u64),
            );
        }
    }
    Ok(())
}

/// A one-pass run with rate caps must end within the longest duration a
/// run may be given (`parse_duration`'s 1e18 ns), so the jobs' clocks stay
/// in range: each job's I/Os, all at the slowest capped pace, bound it.
fn check_paced_pass(w: &Workload, span: u64) -> Result<(), SimError> {
    if w.runtime.is_some() || !w.rate.limits() {
        return Ok(());
    }
    let min_bs = w
        .bssplit
        .iter()
        .chain(&w.bssplit_write)
        .map(|x| x.0)
        .chain([w.bs])
        .min()
        .unwrap_or(w.bs)
        .max(1);
    let ios = span as f64 / min_bs as f64;
    let gap = (0..2)
        .map(|d| match (w.rate.bytes[d], w.rate.iops[d]) {
            (Some(b), _) => w.max_bs() as f64 / b as f64,
            (None, Some(n)) => 1.0 / n as f64,
            (None, None) => 0.0,
        })
        .fold(0.0, f64::max);
    let secs = ios * gap;
    if secs > 1e9 {
        return Err(SimError::PacedTooLong { span, secs });
    }
    Ok(())
}

/// Put the host, with the workload's jobs over `span` bytes, at `HOST`.
fn install_host(sim: &mut Sim, topo: &Topology, w: &Workload, span: u64, seed: u64, trace: bool) {
    let vols = sim.roots.len() as u32;
    let streams = raidlab_core::workload::volume_streams(w, span, seed, vols);
    let per_io = match topo.host.block_layer_poll_us {
        Some(p) if w.hipri => p,
        _ => topo.host.block_layer_us,
    };
    let block_ns = (us(per_io) as f64 * topo.host.ref_ghz / topo.host.ghz) as Ns;
    let mut host = Host::new(
        HOST,
        sim.roots.clone(),
        block_ns,
        w.thinktime,
        w.effective_iodepth(),
        streams,
    );
    let ramp = w.ramp_time.unwrap_or(0);
    host.window_start = ramp;
    host.set_durability(w.sync, w.fsync);
    host.set_rate(&w.rate, seed);
    host.set_replay_timed(w.replay.as_ref().is_some_and(|r| r.timed()));
    host.timeline = w.timeline();
    if trace {
        host.trace = Some(vec![Vec::new(); w.numjobs as usize]);
    }
    // With a given ramp the jobs stop at the window's end; without, the
    // run stops when the window is found steady.
    host.window_end = w.runtime.zip(w.ramp_time).map(|(r, ramp)| ramp + r);
    if w.runtime.is_none() {
        host.fifth = (w.pass_bytes(span) * w.numjobs as u64 * vols as u64 / 5).max(1);
    }
    sim.comps[HOST.index()] = Comp::Host(Box::new(host));
}

/// What was measured: the host's figures over the window, the counters at
/// its start, its start and length, and whether it was steady.
struct Measured {
    metrics: Metrics,
    start: Snapshot,
    t0: Ns,
    len: Ns,
    steady: Steady,
}

/// Run events until the window is measured (time-based runs, see
/// [`window`]) or the host's jobs finish (one pass).
fn run_events(
    sim: &mut Sim,
    w: &Workload,
    span: u64,
    seed: u64,
    progress: Option<&dyn Fn(f64)>,
) -> Measured {
    /// Events between two progress reports.
    const PROGRESS_EVERY: u64 = 1 << 20;
    let mut rounds = window::Rounds::of(w);
    let ramp = w.ramp_time.unwrap_or(0);
    let pass_bytes = (w.pass_bytes(span) as f64 * w.numjobs as f64).max(1.0);
    let mut start = Snapshot::take(sim);
    let mut snapped = ramp == 0;
    if let Some(r) = rounds.as_mut() {
        r.set_noise(cache_noise(&sim.comps));
        if r.first_start() == 0 {
            r.begin(Snapshot::take(sim), cache_levels(&sim.comps));
        }
    }
    let fill = Fill::of(sim, w, span, seed);
    let Sim {
        ctx,
        comps,
        reports,
        parity_threads,
        ..
    } = sim;
    let snap = |comps: &[Comp], ctx: &Ctx| Snapshot::of(comps, reports, ctx, parity_threads);
    if let Comp::Host(h) = &mut comps[HOST.index()] {
        h.start(ctx);
    }
    while let Some(next) = ctx.next_step() {
        match next {
            Next::Call(call) => {
                if call_component(comps, ctx, call) {
                    break;
                }
            }
            Next::Event(c, r, k) => {
                if let Some(rs) = rounds.as_mut() {
                    if !rs.begun() && ctx.now >= rs.first_start() {
                        rs.begin(snap(comps, ctx), cache_levels(comps));
                    }
                    if rs.begun() && ctx.now >= rs.next {
                        if close_rounds(rs, comps, ctx, &snap) {
                            break;
                        }
                        if let Some(f) = &fill {
                            f.fast_forward(rs, comps, ctx);
                        }
                    }
                } else if !snapped && ctx.now >= ramp {
                    start = snap(comps, ctx);
                    snapped = true;
                }
                if let Some(report) = progress.filter(|_| ctx.events % PROGRESS_EVERY == 0) {
                    report(match (&rounds, &comps[HOST.index()]) {
                        (Some(rs), _) => ctx.now as f64 / rs.horizon().max(1) as f64,
                        (None, Comp::Host(h)) => h.completed as f64 * w.bs as f64 / pass_bytes,
                        (None, _) => 0.0,
                    });
                }
                match &mut comps[c.index()] {
                    Comp::Ssd(s) => s.event(ctx, r, k),
                    Comp::Hdd(h) => h.event(ctx, r, k),
                    Comp::Array(a) => a.event(ctx, r, k),
                    Comp::Ctrl(v) => v.event(ctx, r, k),
                    Comp::Host(h) => h.event(ctx, r, k),
                    Comp::Empty => {}
                }
            }
        }
    }
    let Comp::Host(host) = &mut comps[HOST.index()] else {
        unreachable!("the host is at HOST")
    };
    match rounds.and_then(|r| r.window()) {
        Some((metrics, start, t0, len, steady)) => Measured {
            metrics,
            start,
            t0,
            len,
            steady,
        },
        None => {
            let end = host.last_completion.max(ramp);
            let steady = window::one_pass(ramp, &host.marks, host.fifth);
            Measured {
                metrics: std::mem::take(&mut host.metrics),
                start: if snapped { start } else { snap(comps, ctx) },
                t0: ramp,
                len: if snapped { end - ramp } else { 0 },
                steady,
            }
        }
    }
}

/// Hand a component call to its component; whether the host's jobs have
/// all finished.
#[inline]
fn call_component(comps: &mut [Comp], ctx: &mut Ctx, call: Call) -> bool {
    match call {
        Call::Submit(c, r) => match &mut comps[c.index()] {
            Comp::Ssd(s) => s.submit(ctx, r),
            Comp::Hdd(h) => h.submit(ctx, r),
            Comp::Array(a) => a.submit(ctx, r),
            Comp::Ctrl(v) => v.submit(ctx, r),
            Comp::Host(_) | Comp::Empty => unreachable!("nothing submits to the host"),
        },
        Call::ChildDone(c, parent, child) => match &mut comps[c.index()] {
            Comp::Host(h) => {
                h.done(ctx, child);
                return h.finished();
            }
            Comp::Array(a) => a.child_done(ctx, parent, child),
            Comp::Ctrl(v) => v.child_done(ctx, parent, child),
            Comp::Ssd(_) | Comp::Hdd(_) | Comp::Empty => {
                unreachable!("devices have no children")
            }
        },
        Call::Advise(c, offset) => {
            if let Comp::Ssd(s) = &comps[c.index()] {
                s.advise(offset);
            }
        }
    }
    false
}

/// Every controller volume with a write-back cache, with its component
/// index: the caches the steady-state test watches, in one order.
fn write_back_caches(comps: &[Comp]) -> impl Iterator<Item = (usize, &CtrlVol)> {
    comps.iter().enumerate().filter_map(|(i, c)| match c {
        Comp::Ctrl(v) if v.dirty_level().1 > 0 => Some((i, &**v)),
        _ => None,
    })
}

/// Every write-back cache's dirty level, a fraction of its size.
fn cache_levels(comps: &[Comp]) -> Vec<f64> {
    write_back_caches(comps)
        .map(|(_, v)| {
            let (d, wb) = v.dirty_level();
            d as f64 / wb as f64
        })
        .collect()
}

/// Every write-back cache's level noise (`CtrlVol::level_noise`), a
/// fraction of its size.
fn cache_noise(comps: &[Comp]) -> Vec<f64> {
    write_back_caches(comps)
        .map(|(_, v)| v.level_noise() as f64 / v.dirty_level().1 as f64)
        .collect()
}

/// How a random-write workload's write-back caches are filled ahead when
/// they are seen filling (docs/workloads.md, "Steady state").
struct Fill {
    /// Each write-back cache's component and the span of it the workload
    /// addresses, in [`write_back_caches`]' order.
    caches: Vec<(CompId, u64)>,
    bs: u64,
    seed: u64,
}

impl Fill {
    /// For a run that looks for steady state under random writes.
    fn of(sim: &Sim, w: &Workload, span: u64, seed: u64) -> Option<Fill> {
        let writes = !matches!(w.rw, Rw::Read | Rw::RandRead);
        if w.ramp_time.is_some() || w.runtime.is_none() || !writes || w.percentage_random == 0 {
            return None;
        }
        let caches = write_back_caches(&sim.comps)
            .map(|(i, v)| (CompId(i as u32), ctrl_span(sim, i, v, span)))
            .collect();
        Some(Fill {
            caches,
            bs: w.max_bs(),
            seed,
        })
    }

    /// Fill every cache that is not yet full and rose over each of the
    /// last two rounds by more than its noise allows over a window (a fifth
    /// of [`LEVEL_NOISE_TIMES`] × its noise per round), the later rise not
    /// slowing (at least [`KEEPS_PACE`] of the earlier): it is filling at a
    /// steady pace toward full, the state a destage path that cannot keep
    /// up ends in. A level settling toward a plateau slows down and is left
    /// to settle.
    fn fast_forward(&self, rs: &mut window::Rounds<Snapshot>, comps: &mut [Comp], ctx: &mut Ctx) {
        /// Share of the earlier round's rise the later must keep (a fill at
        /// a constant pace keeps all of it, up to counting noise).
        const KEEPS_PACE: f64 = 0.8;
        let rises = rs.last_rises();
        let level = rs.level().to_vec();
        let mut filled = false;
        let noise = rs.noise().to_vec();
        for (k, &(id, span)) in self.caches.iter().enumerate() {
            let pace = LEVEL_NOISE_TIMES * noise[k] / WINDOW_ROUNDS as f64;
            let rising = rises
                .get(k)
                .is_some_and(|&(a, b)| a >= pace && b >= pace && b >= KEEPS_PACE * a);
            if rising && level[k] < 1.0 - LEVEL_EXCURSION {
                if let Comp::Ctrl(v) = &mut comps[id.index()] {
                    v.fill_to_full(ctx, span, self.bs, mix(self.seed, 0xF111 + k as u64));
                    filled = true;
                }
            }
        }
        if filled {
            rs.relevel(cache_levels(comps));
        }
    }
}

/// Close every round that ended by `ctx.now`; whether the run is over.
fn close_rounds(
    rs: &mut window::Rounds<Snapshot>,
    comps: &mut [Comp],
    ctx: &Ctx,
    snap: &dyn Fn(&[Comp], &Ctx) -> Snapshot,
) -> bool {
    while ctx.now >= rs.next {
        let Comp::Host(h) = &mut comps[HOST.index()] else {
            unreachable!("the host is at HOST")
        };
        let m = std::mem::take(&mut h.metrics);
        if rs.close(m, snap(comps, ctx), cache_levels(comps)) {
            return true;
        }
    }
    false
}

/// The result of a finished run: the host's figures over the measurement
/// window and every component's load over it.
fn report(sim: &Sim, topo: &Topology, w: &Workload, seed: u64, m: Measured) -> RunResult {
    let Comp::Host(host) = &sim.comps[HOST.index()] else {
        unreachable!("the host is at HOST")
    };
    let secs = m.len as f64 / 1e9;
    let end = Snapshot::take(sim);
    let cpu_util = host_cpu(sim, &m.start, &end, m.len);
    let threads_util = job_threads(&m.start, &end, m.len);
    // A polled job (fio's hipri) spins on its core while it waits for its
    // I/Os, so the core is busy for all of that wait. The spin is elastic —
    // it takes what the wait leaves and limits nothing — so it is reported
    // in the host's CPU but not weighed as a limit.
    let cpu_reported = if w.hipri {
        cpu_util + polling_spin(sim, &m.start, &end, m.len)
    } else {
        cpu_util
    };
    let mut components = device_loads(sim, &m.start, &end, m.len);
    // The host row names whichever of its limits is nearer: all its cores,
    // or the jobs' own threads (one core each).
    let (util, resource) = if threads_util > cpu_util {
        (threads_util, "job threads")
    } else {
        (cpu_util, "cpu")
    };
    components.push(Component {
        name: "host".into(),
        kind: "host".into(),
        utilization: round3(util),
        resource: Some(resource.into()),
        bottleneck: false,
        write_amplification: None,
        io: None,
        wear: None,
    });
    mark_bottleneck(&mut components);
    debug_assert!(m.t0 <= sim.ctx.now.max(m.t0));
    RunResult {
        raidlab: VERSION.into(),
        engine: "sim".into(),
        topology: topo.expr.trim().to_string(),
        workload: w.to_json(seed),
        seed,
        summary: m.metrics.summary(secs),
        host: HostStats {
            cpu_util_pct: round3(cpu_reported.min(1.0) * 100.0),
        },
        components,
        sim: SimStats {
            simulated_s: secs,
            wall_s: 0.0,
            events: sim.ctx.events,
            host_ios: host.completed,
            steady: Some(m.steady),
            rebuilds: rebuild_stats(sim),
            replay: w.replay.as_ref().map(|r| {
                let (tally, err) = host.replay_tally();
                raidlab_core::trace::replay::stats(r, tally, &host.lag, err)
            }),
        },
        real: None,
        resolved: Some(Resolved {
            topology: topo.canonical(|d| w.state.or(d.state).unwrap_or(w.default_ssd_state())),
            capacity_bytes: sim.cap,
            volumes: sim.roots.len() as u32,
        }),
        intervals: host
            .timeline
            .as_ref()
            .map_or_else(Vec::new, |t| t.intervals(m.t0, m.len)),
        latency: Some(m.metrics.detail(m.len)),
    }
}

/// Each reported device's and controller's busiest resource over the
/// window, and SSD write amplification.
fn device_loads(sim: &Sim, start: &Snapshot, end: &Snapshot, window: Ns) -> Vec<Component> {
    let mut util: Vec<(f64, &'static str)> = vec![(0.0, ""); sim.reports.len()];
    for (a, b) in start.busy.iter().zip(end.busy.iter()) {
        let u = if window > 0 {
            (b.2 - a.2) as f64 / (window as f64 * b.3 as f64)
        } else {
            0.0
        };
        let u = u.min(1.0);
        if u > util[a.0].0 || util[a.0].1.is_empty() {
            util[a.0] = (u, a.1);
        }
    }
    let comps = &sim.comps;
    sim.reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (name, kind, tbw) = match r {
                Report::Ssd(id) => match &comps[id.index()] {
                    Comp::Ssd(s) => (s.label.clone(), "ssd", s.rated_tbw),
                    _ => unreachable!("an SSD report names an SSD"),
                },
                Report::Hdd(id) => match &comps[id.index()] {
                    Comp::Hdd(h) => (h.label.clone(), "hdd", None),
                    _ => unreachable!("an HDD report names an HDD"),
                },
                Report::Controller { label, .. } => (label.clone(), "controller", None),
                Report::Stripes { label, .. } => (label.clone(), "raid", None),
            };
            let host_units = end.wa[i].0 - start.wa[i].0;
            let gc_units = end.wa[i].1 - start.wa[i].1;
            let wa = (kind == "ssd" && host_units > 0)
                .then(|| round3((host_units + gc_units) as f64 / host_units as f64));
            let io = end.io[i].zip(start.io[i]).map(|(e, s)| e - s);
            let wear = io.filter(|_| kind == "ssd").map(|io| {
                raidlab_core::result::Wear::project(
                    io.write_bytes,
                    wa.unwrap_or(1.0),
                    tbw,
                    window as f64 / 1e9,
                )
            });
            Component {
                name,
                kind: kind.into(),
                utilization: round3(util[i].0),
                resource: Some(util[i].1.to_string()),
                bottleneck: false,
                write_amplification: wa,
                io,
                wear,
            }
        })
        .collect()
}

/// The host CPU's busy share over the window (block layer and parity
/// threads).
fn host_cpu(sim: &Sim, start: &Snapshot, end: &Snapshot, window: Ns) -> f64 {
    let servers = sim.ctx.pools[HOST_CPU.index()].servers() as f64;
    if window > 0 {
        ((end.cpu - start.cpu) as f64 / (window as f64 * servers)).min(1.0)
    } else {
        0.0
    }
}

/// The share of the host's cores polled jobs spend spinning over the
/// window: each job's wait for its outstanding I/Os beyond its thread's own
/// work (which runs in that wait), on one core each.
fn polling_spin(sim: &Sim, start: &Snapshot, end: &Snapshot, window: Ns) -> f64 {
    let cores = sim.ctx.pools[HOST_CPU.index()].servers() as f64;
    if window == 0 {
        return 0.0;
    }
    let delta = |v: &[Ns], w: &[Ns], i: usize| v[i] - w.get(i).copied().unwrap_or(0);
    let spin: Ns = (0..end.waited.len().min(end.threads.len()))
        .map(|i| {
            let waited = delta(&end.waited, &start.waited, i);
            let worked = delta(&end.threads, &start.threads, i);
            waited.saturating_sub(worked)
        })
        .sum();
    spin as f64 / (window as f64 * cores)
}

/// The jobs' submitting threads' mean busy share over the window.
fn job_threads(start: &Snapshot, end: &Snapshot, window: Ns) -> f64 {
    let n = end.threads.len();
    if window == 0 || n == 0 {
        return 0.0;
    }
    let busy: Ns = end
        .threads
        .iter()
        .enumerate()
        .map(|(i, e)| e - start.threads.get(i).copied().unwrap_or(0))
        .sum();
    (busy as f64 / (window as f64 * n as f64)).min(1.0)
}

/// Mark the saturated component: the busiest one, if it is busy enough to
/// limit the run.
fn mark_bottleneck(components: &mut [Component]) {
    if let Some((i, c)) = components.iter().enumerate().max_by(|a, b| {
        a.1.utilization
            .total_cmp(&b.1.utilization)
            .then(b.0.cmp(&a.0))
    }) {
        if c.utilization >= BOTTLENECK_UTIL {
            components[i].bottleneck = true;
        }
    }
}

/// Refuse, before building anything, a rate-limited one-pass run that
/// would take longer than a run may last (what `simulate` would refuse once
/// built): callers check this before announcing a long pass.
pub fn check_pace(topo: &Topology, w: &Workload) -> Result<(), SimError> {
    let cap = volume_capacity(topo)?;
    let span = w.size.unwrap_or(cap).min(cap);
    check_paced_pass(w, span * topo.volume_count() as u64)
}

/// Bytes the topology's volume exposes (with several, the smallest),
/// computed from the presets and the layouts without building the
/// simulation.
pub fn volume_capacity(topo: &Topology) -> Result<u64, SimError> {
    fn vols(n: &Node) -> Result<Vec<u64>, SimError> {
        Ok(match n {
            Node::Device(d) => vec![match &d.model {
                DeviceModel::Ssd(p) => {
                    let units = ((p.capacity_gb * 1e9 / 4096.0) as u64) as f64 * (1.0 - d.op);
                    units as u64 * 4096
                }
                DeviceModel::Hdd(_) => d.capacity(),
            }],
            Node::Controller(c) => {
                let mut v = Vec::new();
                for ch in &c.children {
                    v.extend(vols(ch)?);
                }
                v
            }
            Node::Array(a) => {
                let mut sizes = Vec::new();
                for m in a.active() {
                    sizes.extend(vols(m)?);
                }
                let geo = Geometry::new(a.level, a.stripe, a.layout, &sizes)
                    .map_err(|err| SimError::Layout { col: a.col, err })?;
                vec![geo.capacity()]
            }
        })
    }
    let mut min = u64::MAX;
    for n in topo.roots() {
        min = vols(n)?.into_iter().fold(min, u64::min);
    }
    Ok(if min == u64::MAX { 0 } else { min })
}

use raidlab_core::result::round3;
pub use raidlab_core::result::BOTTLENECK_UTIL;
