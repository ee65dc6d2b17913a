//! Building a simulation: components from a resolved topology (PCIe
//! links, controllers, arrays, devices), the bounds a configuration must
//! keep, warmed caches and the host.

use super::*;

/// PCIe payload rate per lane for a generation, 10^6 B/s: the line rate
/// after coding (2.5 and 5 GT/s with 8b/10b; 8, 16, 32 GT/s with 128b/130b)
/// times [`PCIE_EFFICIENCY`].
pub(crate) fn pcie_lane_mbps(gen: u32) -> f64 {
    PCIE_EFFICIENCY
        * match gen {
            1 => 250.0,
            2 => 500.0,
            3 => 985.0,
            4 => 1969.0,
            _ => 3938.0,
        }
}

/// A drive's link rate once its PCIe link has trained: the slower of the
/// two ends' generations (PCI Express Base Specification: link training
/// settles on the highest rate both ends support). A drive of generation
/// `drive` attached to an `upstream` of an older one moves its `link_mbps`
/// by the ratio of the two generations' lane rates; the lanes are taken as
/// equal (x4 to x4). SATA and SAS drives (no generation) keep their rate.
pub(crate) fn negotiated_link_mbps(
    link_mbps: f64,
    drive: Option<u32>,
    upstream: Option<u32>,
) -> f64 {
    match (drive, upstream) {
        (Some(d), Some(u)) if u < d => link_mbps * pcie_lane_mbps(u) / pcie_lane_mbps(d),
        _ => link_mbps,
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
pub(crate) const TLP_PAYLOAD_BYTES: f64 = 256.0;

/// Bytes that frame each TLP on the link: header, sequence number, LCRC
/// and start/end framing (about 24, PCI Express Base Specification).
pub(crate) const TLP_FRAMING_BYTES: f64 = 24.0;

/// A root complex's read completion boundary taken by the model: 64 bytes,
/// the cache line (the specification allows 64 or 128).
pub(crate) const READ_COMPLETION_BOUNDARY_BYTES: f64 = 64.0;

/// Share of a PCIe link's coded rate left for data: TLPs of
/// [`TLP_PAYLOAD_BYTES`] carry [`TLP_FRAMING_BYTES`] of framing (91 %), and ACK and
/// flow-control DLLPs take a few percent more. (jdev2009 saw 1.75 GB/s
/// through a PCIe 1.0 x8 slot: at least 88 % of its 2 GB/s.)
pub(crate) const PCIE_EFFICIENCY: f64 = 0.88;

pub(crate) struct Builder<'a> {
    pub(crate) ctx: Ctx,
    pub(crate) comps: Vec<Comp>,
    pub(crate) reports: Vec<Report>,
    pub(crate) state: Option<SsdState>,
    /// Preconditioning when neither the expression nor the workload says.
    pub(crate) default_state: SsdState,
    pub(crate) seed: u64,
    pub(crate) host: &'a HostParams,
    pub(crate) devices: u64,
    pub(crate) warm: ssd::WarmCache,
    /// Host threads that compute software RAID parity (one per parity array).
    pub(crate) parity_threads: Vec<PoolId>,
    /// Heap bytes the models built so far hold (see `MAX_SIM_BYTES`).
    pub(crate) heap: u64,
    /// Every array and its name in messages.
    pub(crate) arrays: Vec<(CompId, String)>,
}

/// A controller's shared pools plus the parameters arrays inside it need.
#[derive(Clone, Copy)]
pub(crate) struct CtrlCtx {
    pub(crate) pools: CtrlPools,
    pub(crate) member_ns: Ns,
    pub(crate) xor_mbps: f64,
    /// PCIe generation of the controller's lanes (a tri-mode controller's
    /// NVMe ports run at its own generation).
    pub(crate) pcie_gen: u32,
    /// Its rebuild rate, percent (`ControllerParams::rebuild_rate_pct`).
    pub(crate) rebuild_rate_pct: Option<u32>,
}

impl Builder<'_> {
    pub(crate) fn push(&mut self, c: Comp) -> CompId {
        self.comps.push(c);
        CompId::nth(self.comps.len() - 1)
    }

    /// Whether the host sees component `id` as a disk (the block layer's
    /// `rotational` flag): a hard disk, or an md array with one among
    /// its members; a missing member (no component) is neither.
    fn rotational(&self, id: CompId) -> bool {
        match self.comps.get(id.index()) {
            Some(Comp::Hdd(_)) => true,
            Some(Comp::Array(a)) => a.is_rotational(),
            _ => false,
        }
    }

    /// Count `bytes` more of model heap; refuse once over `MAX_SIM_BYTES`.
    pub(crate) fn charge(&mut self, bytes: u64, what: &'static str) -> Result<(), SimError> {
        self.heap += bytes;
        within_bound(self.heap, what)
    }

    pub(crate) fn cpu_scale(&self) -> f64 {
        self.host.ref_ghz / self.host.ghz
    }

    /// Build a node; returns the volumes it exposes: (component, capacity).
    pub(crate) fn node(
        &mut self,
        n: &Node,
        ctrl: Option<CtrlCtx>,
    ) -> Result<Vec<(CompId, u64)>, SimError> {
        match n {
            Node::Device(d) => {
                let upstream = ctrl.map(|c| c.pcie_gen).or(self.host.pcie_gen);
                Ok(vec![self.device(d, upstream)?])
            }
            Node::Array(a) => Ok(vec![self.array(a, ctrl)?]),
            Node::Controller(c) => self.controller(c),
        }
    }

    /// An SSD or a disk; `upstream` is the PCIe generation of what it is
    /// attached to (the host's root ports or a controller), if known.
    pub(crate) fn device(
        &mut self,
        d: &Device,
        upstream: Option<u32>,
    ) -> Result<(CompId, u64), SimError> {
        let id = CompId::nth(self.comps.len());
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
                    // A controller's port limit is already in the device's
                    // rate; the drive's own rate trains down apart from it.
                    d.link_mbps
                        .min(negotiated_link_mbps(p.link_mbps, p.pcie_gen, upstream)),
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
    pub(crate) fn array(
        &mut self,
        a: &Array,
        ctrl: Option<CtrlCtx>,
    ) -> Result<(CompId, u64), SimError> {
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
                // md's own pacing follows the host's kernel; a controller
                // with a rebuild rate keeps to it; other controllers and
                // software RAID are paced as md was before 4.1.
                let pacing = match ctrl.and_then(|c| c.rebuild_rate_pct) {
                    Some(pct) => Pacing::Share(pct),
                    None => Pacing::Md {
                        min_rate: lo as f64,
                        max_rate: hi as f64,
                        drain_when_busy: ctrl.is_none()
                            && a.runs_md()
                            && self.host.kernel.md_resync_drains_when_busy(),
                    },
                };
                Some(Rebuild::new(slot, members.len(), pacing))
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
        // An external bitmap's drive, built before the array so that the
        // array's id is the slot it is pushed into.
        let bitmap_file = match &a.bitmap_device {
            Some(d) => Some(self.device(d, self.host.pcie_gen)?.0),
            None => None,
        };
        let id = CompId::nth(self.comps.len());
        let mut comp = ArrayComp::new(
            id,
            HOST,
            geo,
            members.iter().map(|m| m.0).collect(),
            costs,
            rmw_only,
        );
        comp.degrade(failed, rebuild);
        if ctrl.is_none() && a.runs_md() {
            self.md_features(&mut comp, a, &members, bitmap_file);
        }
        self.push(Comp::Array(Box::new(comp)));
        self.arrays
            .push((id, format!("{} at column {}", a.level.word(), a.col)));
        Ok((id, cap))
    }

    /// What md does that other RAID does not, as the host's kernel does
    /// it: read balancing by the members' kind, the write-intent bitmap
    /// (on the members, or in a file on `bitmap_file`) and the Partial
    /// Parity Log.
    fn md_features(
        &mut self,
        comp: &mut ArrayComp,
        a: &Array,
        members: &[(CompId, u64)],
        bitmap_file: Option<CompId>,
    ) {
        let kernel = self.host.kernel;
        let idlest_flash = match a.level {
            Level::Raid10 => kernel.md_raid10_reads_idlest_flash(),
            _ => kernel.md_raid1_reads_idlest_flash(),
        };
        comp.with_rotational(
            members.iter().map(|m| self.rotational(m.0)).collect(),
            idlest_flash,
        );
        if let Some(c) = a.bitmap_chunk {
            comp.with_bitmap(c, kernel.md_bitmap_io_opt(), bitmap_file);
        }
        let mirrored = matches!(a.level, Level::Raid1 | Level::Raid10);
        let direct = a.bitmap_chunk.is_none() && kernel.md_writes_direct_without_bitmap();
        if mirrored && !direct {
            comp.with_write_thread(self.ctx.add_pool(1));
        }
        if a.ppl {
            comp.with_ppl();
        }
    }

    /// What running a host software array costs, and whether its parity
    /// writes always read first (a trait of the implementation).
    pub(crate) fn software_costs(&mut self, a: &Array) -> (Costs, bool) {
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
        let lock_ns = if a.level == Level::Raid10 && !self.host.kernel.md_raid10_lockless() {
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
    pub(crate) fn controller(&mut self, c: &Controller) -> Result<Vec<(CompId, u64)>, SimError> {
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
            pcie_gen: p.pcie_gen,
            rebuild_rate_pct: p.rebuild_rate_pct,
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
                let id = CompId::nth(self.comps.len());
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
pub(crate) fn hardware_costs(c: CtrlCtx, level: Level) -> Costs {
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
pub(crate) fn volume_config(
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
        fw_latency: us(p.fw_latency_us)
            + if geo.is_some() {
                us(p.array_latency_us)
            } else {
                0
            },
        wb_bytes: if c.write_back && !jbod { share } else { 0 },
        cache_bytes: share,
        read_cache: !jbod && c.readahead != ReadAhead::Off,
        readahead: if jbod { ReadAhead::Off } else { c.readahead },
        readahead_bytes: p.readahead_kb as u64 * 1024,
        destage_per_member: p.destage_per_member,
        destage_task_ns: us(p.destage_task_us),
        task_writes: p.cache_task_writes,
        task_mbps: p.cache_task_mbps,
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
pub(crate) fn fastpath(c: &Controller, cfg: &CtrlConfig, optimal: bool) -> FastPath {
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

/// Whether the jobs can poll for their completions (fio's `hipri`): the
/// host's kernel must poll, and every volume must be an NVMe namespace
/// addressed directly, or an md array of them on a kernel whose md takes
/// polled I/O (dm, SCSI and SATA devices complete by interrupt here, and
/// so does a hardware RAID volume).
pub(crate) fn polled(topo: &Topology) -> Result<(), SimError> {
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
pub(crate) fn pollable(n: &Node, md_polls: bool, host: &str) -> Result<(), String> {
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

/// Least memory one chunk-sized piece of a host I/O takes while in flight,
/// an estimate from below so the bound refuses only inputs that surely pass
/// it. Measured: 64 MiB random reads over a RAID 5 of 4 KiB chunks (16,384
/// pieces each) took 35 MB resident at iodepth 64 and 73 MB at 256, about
/// 190 KB an I/O, 12 bytes a piece.
pub(crate) const PIECE_BYTES: u64 = 8;

/// Refuse a workload whose I/Os in flight would take the simulator past
/// its memory bound (beside `heap` bytes of models): every job's `iodepth`
/// I/Os on every volume, each split at each chunk boundary it crosses into
/// a piece per chunk (the topology's smallest chunk), so a 64 MiB block
/// over 4 KiB chunks is 16,384 pieces. Returns the bytes they need.
pub(crate) fn check_in_flight(
    topo: &Topology,
    w: &Workload,
    volumes: usize,
    heap: u64,
) -> Result<u64, SimError> {
    pub(crate) fn min_chunk(n: &Node) -> u64 {
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
    Ok(need)
}

/// `Ok` while `heap` bytes of models are within `MAX_SIM_BYTES`; else the
/// error naming `what` passed it.
pub(crate) fn within_bound(heap: u64, what: &'static str) -> Result<(), SimError> {
    if heap > MAX_SIM_BYTES {
        return Err(SimError::TooLarge { need: heap, what });
    }
    Ok(())
}

/// Build every component of `topo`, counting their heap into `heap`.
pub(crate) fn build(
    topo: &Topology,
    w: &Workload,
    seed: u64,
    heap: &mut u64,
) -> Result<Sim, SimError> {
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

/// The region of controller volume `i` a workload over `cover` of the root
/// volumes addresses (scaled to the volume's share of the array's bytes
/// when the controller sits below a host array).
pub(crate) fn ctrl_region(sim: &Sim, i: usize, v: &CtrlVol, cover: Region) -> Region {
    if sim.roots.contains(&CompId::nth(i)) {
        cover
    } else {
        let share = v.cfg.capacity as f64 / sim.cap as f64;
        Region {
            start: (cover.start as f64 * share) as u64,
            span: (cover.span as f64 * share) as u64,
        }
    }
}

/// Bring controller read caches to the workload's steady state (see
/// `CtrlVol::warm`), once their heap, and that of write-back caches filled
/// later (see [`Fill`]), is known to fit the bound. Write-back caches start
/// clean, as an idle controller leaves them, or with `full` full of dirty
/// data.
pub(crate) fn warm_controllers(
    sim: &mut Sim,
    w: &Workload,
    cover: Region,
    seed: u64,
    heap: u64,
    full: bool,
) -> Result<(), SimError> {
    let (reads, writes) = (w.reads(), w.writes());
    let random = w.percentage_random > 0;
    let mut warm_bytes = 0;
    for (i, c) in sim.comps.iter().enumerate() {
        if let Comp::Ctrl(v) = c {
            let vspan = ctrl_region(sim, i, v, cover).span;
            warm_bytes += v.warm_bytes(
                vspan,
                random && reads,
                (random || full) && writes,
                w.max_bs(),
            );
        }
    }
    within_bound(heap + warm_bytes, "controller caches")?;
    let spans: Vec<Region> = (0..sim.comps.len())
        .map(|i| match &sim.comps[i] {
            Comp::Ctrl(v) => ctrl_region(sim, i, v, cover),
            _ => Region { start: 0, span: 0 },
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
pub(crate) fn check_paced_pass(w: &Workload, span: u64) -> Result<(), SimError> {
    if w.runtime.is_some() || !w.rate.limits() {
        return Ok(());
    }
    let min_bs = w.min_bs().max(1);
    let ios = w.pass_bytes(span) as f64 / min_bs as f64;
    let gap = (0..2)
        .map(|d| match (w.rate.bytes[d], w.rate.iops[d]) {
            (Some(b), _) => w.max_bs() as f64 / b as f64,
            (None, Some(n)) => 1.0 / n as f64,
            (None, None) => 0.0,
        })
        .fold(0.0, f64::max);
    let secs = ios * gap;
    if secs > 1e9 {
        return Err(SimError::PacedTooLong {
            span: w.pass_bytes(span),
            secs,
        });
    }
    Ok(())
}

/// Put the host, with the workload's jobs over their `regions`, at `HOST`.
pub(crate) fn install_host(
    sim: &mut Sim,
    topo: &Topology,
    jobs: &[JobsOf],
    seed: u64,
    trace: bool,
) {
    let lead = jobs.first().expect("a phase has a job section").w;
    let vols = sim.roots.len() as u32;
    let mut streams = Vec::new();
    let mut confs = Vec::new();
    let mut first = 0;
    for j in jobs {
        let seed = j.w.seed.unwrap_or(seed);
        streams.extend(raidlab_core::workload::volume_streams_from(
            j.w, j.regions, seed, vols, first,
        ));
        confs.extend(std::iter::repeat_n(
            job_conf(topo, j.w),
            j.w.numjobs as usize,
        ));
        first += j.w.numjobs;
    }
    let mut host = Host::new(HOST, sim.roots.clone(), confs, streams);
    host.set_on_submitter(on_submitter(sim));
    // The jobs start now: at 0, or where an earlier phase left the clock;
    // they are measured from the ramp's end.
    let origin = sim.ctx.now;
    host.set_origin(origin);
    host.window_start = origin + lead.ramp_time.unwrap_or(0);
    let mut first = 0;
    for j in jobs {
        let range = first..first + j.w.numjobs as usize;
        if let Some(clock) = raidlab_core::workload::ThinkClock::of(j.w) {
            range
                .clone()
                .for_each(|job| host.set_think_clock(job, clock));
        }
        host.set_rate(range.clone(), &j.w.rate, j.w.seed.unwrap_or(seed));
        host.set_guards(range.clone(), &j.w.guards);
        host.set_file_service(range.clone(), j.w.file_service, j.w.seed.unwrap_or(seed));
        host.set_latency_target(
            range.clone(),
            &j.w.latency_target,
            j.w.effective_iodepth(),
            j.w.runtime,
        );
        first = range.end;
    }
    // fio's exitall holds for every job once any job file section sets it.
    host.exitall = jobs.iter().any(|j| j.w.exitall);
    host.replays = jobs.iter().any(|j| j.w.replay.is_some());
    if jobs.len() > 1 {
        let section_of = jobs
            .iter()
            .enumerate()
            .flat_map(|(i, j)| std::iter::repeat_n(i as u16, j.w.numjobs as usize))
            .collect();
        host.set_sections(section_of);
    }
    host.set_replay_timed(lead.replay.as_ref().is_some_and(|r| r.timed()));
    host.timeline = lead.timeline();
    if trace {
        host.trace = Some(vec![Vec::new(); first]);
    }
    // With a given ramp the jobs stop at the window's end; without, the
    // run stops when the window is found steady. A latency_target search
    // or a steadystate stop has no steady-state rounds: the runtime counts
    // from the ramp's end (and again from where a search converges).
    host.set_steadystate(&lead.steadystate);
    host.window_end = lead
        .runtime
        .zip(lead.ramp_time.or(lead.sets_own_window().then_some(0)))
        .map(|(r, ramp)| origin + ramp + r);
    if lead.runtime.is_none() {
        let pass: u64 = jobs
            .iter()
            .flat_map(|j| j.regions.iter().map(|r| j.w.pass_bytes(r.span)))
            .sum();
        host.fifth = (pass * vols as u64 / 5).max(1);
    }
    sim.comps[HOST.index()] = Comp::Host(Box::new(host));
}

/// One job section to install on the host: its workload and its jobs'
/// regions ([`Workload::regions`]).
pub(crate) struct JobsOf<'a> {
    pub w: &'a Workload,
    pub regions: &'a [Region],
}

/// What `w`'s options ask of the host for each of its jobs on `topo`.
fn job_conf(topo: &Topology, w: &Workload) -> JobConf {
    let mut c = JobConf::new(w.effective_iodepth(), block_ns(topo, w));
    c.think = w.think_stall();
    if raidlab_core::workload::ThinkClock::of(w).is_some() {
        c.think_spin = w.thinktime_spin;
    }
    c.sync = w.sync;
    c.fsync = w.fsync;
    c.end_fsync = w.end_fsync && w.runtime.is_none();
    c.with_batch(&w.batch)
}

/// Per volume of `sim`, whether its first component does its own work on
/// the submitting thread, for [reads and flushes, writes]: an array run by
/// the host (md, dm, Windows' dynamic disks).
pub(crate) fn on_submitter(sim: &Sim) -> Vec<[bool; 2]> {
    sim.roots
        .iter()
        .map(|r| match &sim.comps[r.index()] {
            Comp::Array(a) => [
                a.works_on_submitter(crate::engine::Op::Read),
                a.works_on_submitter(crate::engine::Op::Write),
            ],
            _ => [false; 2],
        })
        .collect()
}

/// The host block layer's CPU time per I/O on `topo`'s host, ns: polled
/// under `hipri` where the host gives a polled cost, scaled by its clock.
pub(crate) fn block_ns(topo: &Topology, w: &Workload) -> Ns {
    let per_io = match topo.host.block_layer_poll_us {
        Some(p) if w.hipri => p,
        _ => topo.host.block_layer_us,
    };
    (us(per_io) as f64 * topo.host.ref_ghz / topo.host.ghz) as Ns
}

/// Refuse, before building anything, a rate-limited one-pass run that
/// would take longer than a run may last (what `simulate` would refuse once
/// built): callers check this before announcing a long pass.
pub fn check_pace(topo: &Topology, w: &Workload) -> Result<(), SimError> {
    let cap = volume_capacity(topo)?;
    let span = w.span_on(cap).unwrap_or(cap);
    check_paced_pass(w, span * topo.volume_count() as u64)
}

/// Bytes the topology's volume exposes (with several, the smallest),
/// computed from the presets and the layouts without building the
/// simulation.
pub fn volume_capacity(topo: &Topology) -> Result<u64, SimError> {
    pub(crate) fn vols(n: &Node) -> Result<Vec<u64>, SimError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_trains_to_the_older_end() {
        let gen5 = 13_000.0;
        // A PCIe 5.0 drive in a PCIe 4.0 slot runs at half its rate.
        let down = negotiated_link_mbps(gen5, Some(5), Some(4));
        assert!((down - gen5 / 2.0).abs() < 1.0, "{down}");
        // A newer slot, no slot generation, or a SATA drive: unchanged.
        assert_eq!(negotiated_link_mbps(gen5, Some(5), Some(5)), gen5);
        assert_eq!(negotiated_link_mbps(6_500.0, Some(4), Some(5)), 6_500.0);
        assert_eq!(negotiated_link_mbps(gen5, Some(5), None), gen5);
        assert_eq!(negotiated_link_mbps(540.0, None, Some(2)), 540.0);
        // PCIe 3.0's 128b/130b against 4.0's: half again.
        let g3 = negotiated_link_mbps(6_500.0, Some(4), Some(3));
        assert!((g3 - 6_500.0 * 985.0 / 1969.0).abs() < 1.0, "{g3}");
    }
}
