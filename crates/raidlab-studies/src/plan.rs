//! `raidlab plan`: the configurations that meet a capacity and a failure
//! tolerance, enumerated, pruned with the classic analytic model, simulated
//! in steady state and ranked (docs/plan.md).
//!
//! A configuration is a topology expression: a RAID level over a number of
//! one drive model, run by the host (md), by one controller (hardware
//! RAID), by md over the volumes of several controllers (petrov2010's
//! recommendation), or by md RAID 0 over hardware arrays of several
//! controllers (nested). Every configuration is checked against the
//! question's constraints before anything is simulated.

use raidlab_core::analytic::{cost, Pattern};
use raidlab_core::preset::{Preset, PresetDb};
use raidlab_core::result::RunResult;
use raidlab_core::topology::{resolve, Level, Node};
use raidlab_core::workload::Workload;
use raidlab_sim::{simulate, volume_capacity, SimError};
use std::collections::BTreeMap;

/// What the ranking optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    /// Highest IOPS.
    Iops,
    /// Highest MB/s.
    Mbps,
    /// Lowest 99th-percentile latency.
    P99,
    /// Lowest cost per IOPS.
    Cost,
    /// Most years to the drives' rated endurance.
    Endurance,
}

impl Objective {
    /// Parse an objective word.
    pub fn parse(s: &str) -> Option<Objective> {
        Some(match s {
            "iops" => Objective::Iops,
            "mbps" => Objective::Mbps,
            "p99" => Objective::P99,
            "cost" => Objective::Cost,
            "endurance" => Objective::Endurance,
            _ => return None,
        })
    }
    /// The objective's word.
    pub fn word(self) -> &'static str {
        match self {
            Objective::Iops => "iops",
            Objective::Mbps => "mbps",
            Objective::P99 => "p99",
            Objective::Cost => "cost",
            Objective::Endurance => "endurance",
        }
    }
}

/// The user's question.
#[derive(Debug, Clone)]
pub struct Question {
    /// Workloads (fio `key=value` text) and their shares of the time.
    pub workloads: Vec<(String, f64)>,
    /// Usable capacity wanted, bytes.
    pub capacity: u64,
    /// Failures of any members the array must survive.
    pub survive: u32,
    /// Candidate drive presets.
    pub drives: Vec<String>,
    /// RAID levels to consider (empty: all).
    pub levels: Vec<Level>,
    /// Extra over-provisioning of SSDs to try, % of their capacity
    /// (`op=` of the topology grammar; 0 = as shipped).
    pub op_pct: Vec<u32>,
    /// Candidate controller presets (`None`: the host's own ports, md).
    pub controllers: Vec<Option<String>>,
    /// Most drives in a configuration.
    pub max_drives: u32,
    /// Most controllers in a configuration.
    pub max_controllers: u32,
    /// The ranking.
    pub objective: Objective,
    /// Fewest years to rated endurance every member must reach.
    pub min_years: Option<f64>,
    /// Most a configuration may cost (needs prices).
    pub budget: Option<f64>,
    /// Seed of every simulation.
    pub seed: u64,
}

/// How the RAID is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// md on the host's ports.
    Md,
    /// Hardware RAID in one controller.
    Hardware,
    /// md over every drive, exposed as volumes of `k` controllers.
    MdOverVolumes,
    /// md RAID 0 over a hardware array in each of `k` controllers.
    Nested,
}

/// A configuration's place in the enumeration ([`candidates`]' order),
/// which names it across the shards of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CandidateId(pub usize);

/// One configuration to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its place in the enumeration.
    pub id: CandidateId,
    /// The topology expression.
    pub topology: String,
    /// Drive preset.
    pub drive: String,
    /// Extra over-provisioning of the drives, %.
    pub op_pct: u32,
    /// Drives in all.
    pub drives: u32,
    /// RAID level (the inner level of a nested array).
    pub level: Level,
    /// How the RAID is run.
    pub kind: Kind,
    /// Controllers used.
    pub controllers: u32,
    /// Failures of any members it survives.
    pub survives: u32,
    /// Usable bytes.
    pub usable_bytes: u64,
    /// Price of drives and controllers, where every part has one.
    pub cost: Option<f64>,
    /// The classic model's throughput figure (IOPS or MB/s), for pruning.
    pub bound: Option<f64>,
    /// The expression with one member failed and a hot spare rebuilding
    /// (`None` for a level without redundancy).
    pub degraded: Option<String>,
}

/// A configuration's figures under the question's workloads.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The configuration.
    pub candidate: Candidate,
    /// Time-share weighted IOPS.
    pub iops: f64,
    /// Time-share weighted MB/s.
    pub mbps: f64,
    /// The worst 99th-percentile latency over the workloads, ms.
    pub lat_p99_ms: f64,
    /// The saturated component (of the heaviest-weighted workload).
    pub bottleneck: String,
    /// Years until the most-written member reaches its rated endurance.
    pub endurance_years: Option<f64>,
    /// Whether every workload's measurement was in steady state.
    pub steady: bool,
    /// Time-share weighted IOPS with one member failed and a spare
    /// rebuilding (`None`: not measured, or the layout has none).
    pub degraded_iops: Option<f64>,
    /// Hours the rebuild takes at its rate under the workload (the
    /// heaviest workload's), md's `speed_limit_min` as the floor.
    pub rebuild_hours: Option<f64>,
    /// The first guard of the workload (`max_latency`, `rate_min`,
    /// `rate_iops_min`) a job tripped on this configuration, which then
    /// does not meet the question (`None`: none did).
    pub tripped: Option<String>,
}

/// Failures a level over `n` members survives whatever members fail.
pub fn tolerance(level: Level, n: u32) -> u32 {
    match level {
        Level::Raid0 | Level::Concat => 0,
        Level::Raid1 => n.saturating_sub(1),
        Level::Raid4 | Level::Raid5 | Level::Raid10 => 1,
        Level::Raid6 => 2,
    }
}

/// The levels a plan considers. RAID 4 only when `--levels` names it: it
/// is RAID 5 with every write's parity on one member, never ahead of it on
/// speed, and its parity member wears fastest (the reason to ask).
const LEVELS: [Level; 6] = [
    Level::Raid0,
    Level::Raid1,
    Level::Raid10,
    Level::Raid4,
    Level::Raid5,
    Level::Raid6,
];

/// Stripe units tried for host RAID: 64 KiB (lvcreate's and many
/// controllers' default) and 512 KiB (mdadm's default since 3.1).
const MD_STRIPES_KB: [u32; 2] = [64, 512];
/// Stripe units tried for hardware RAID: 64 KiB and 256 KiB, the
/// defaults and common choices of MegaRAID and Adaptec firmware.
const HW_STRIPES_KB: [u32; 2] = [64, 256];

/// Member counts of `level` worth trying: mirrors only as wide as the
/// tolerance asks (a wider mirror adds no capacity), RAID 10 even.
fn counts(level: Level, survive: u32, max: u32) -> Vec<u32> {
    let min = level.min_members() as u32;
    match level {
        Level::Raid1 => vec![(survive + 1).max(2)],
        Level::Raid10 => (min..=max).filter(|n| n.is_multiple_of(2)).collect(),
        _ => (min..=max).collect(),
    }
}

/// A configuration's expression and what it is made of.
struct Layout {
    expr: String,
    level: Level,
    n: u32,
    kind: Kind,
    k: u32,
    controller: Option<String>,
    degraded: Option<String>,
}

impl Layout {
    fn new(expr: String, level: Level, n: u32, kind: Kind, k: u32, c: Option<&str>) -> Layout {
        Layout {
            expr,
            level,
            n,
            kind,
            k,
            controller: c.map(str::to_string),
            degraded: None,
        }
    }

    /// The same layout with `degraded` as its degraded form, where its
    /// level survives a failure.
    fn or_degraded(mut self, degraded: impl FnOnce() -> String) -> Layout {
        if !matches!(self.level, Level::Raid0 | Level::Concat) {
            self.degraded = Some(degraded());
        }
        self
    }
}

/// The options of an array: its stripe (none for RAID 1), and with `spare`
/// one hot spare first.
fn array_opts(level: Level, kb: u32, spare: bool) -> String {
    match (level == Level::Raid1, spare) {
        (true, false) => String::new(),
        (true, true) => "[spares=1]".into(),
        (false, false) => format!("[stripe={kb}k]"),
        (false, true) => format!("[spares=1,stripe={kb}k]"),
    }
}

/// `n` members of `leaf`, the first failed and one spare after them:
/// `(n-1*leaf, missing, leaf)`.
fn failed_members(n: u32, leaf: &str) -> String {
    match n {
        0 | 1 => format!("(missing, {leaf})"),
        n => format!("({}*{leaf}, missing, {leaf})", n - 1),
    }
}

/// Every configuration that meets the question's level, count, port and
/// controller constraints (capacity and budget are checked once resolved).
fn expressions(q: &Question, db: &PresetDb, drive: &str) -> Vec<Layout> {
    let mut out = Vec::new();
    for level in LEVELS.into_iter().filter(|l| {
        if q.levels.is_empty() {
            *l != Level::Raid4
        } else {
            q.levels.contains(l)
        }
    }) {
        for n in counts(level, q.survive, q.max_drives) {
            if tolerance(level, n) < q.survive {
                continue;
            }
            for c in &q.controllers {
                match c {
                    None => {
                        for s in MD_STRIPES_KB {
                            let name = level.word();
                            let e = format!("{name}{}({n}*{drive})", array_opts(level, s, false));
                            let failed = || {
                                let spare = array_opts(level, s, true);
                                format!("{name}{spare}{}", failed_members(n, drive))
                            };
                            out.push(
                                Layout::new(e, level, n, Kind::Md, 0, None).or_degraded(failed),
                            );
                        }
                    }
                    Some(c) => controller_layouts(q, db, c, drive, level, n, &mut out),
                }
            }
        }
    }
    // A RAID 1 has no stripe, so its stripe variants are one configuration:
    // keep each expression once, first come.
    let mut seen = std::collections::HashSet::new();
    out.retain(|l| seen.insert(l.expr.clone()));
    out
}

/// The controller's cache policies tried: write-back with and without
/// read-ahead, and write-through without it (intel2013's and admin2015's
/// recommendation for SSD RAID 5).
const POLICIES: [&str; 3] = [
    "cache=wb,readahead=on",
    "cache=wb,readahead=off",
    "cache=wt,readahead=off",
];

/// Configurations of `n` drives at `level` with controller `c`: hardware
/// RAID in one, md RAID 0 over hardware arrays in several, md over their
/// volumes. A controller without cache (an HBA) only passes drives through.
fn controller_layouts(
    q: &Question,
    db: &PresetDb,
    c: &str,
    drive: &str,
    level: Level,
    n: u32,
    out: &mut Vec<Layout>,
) {
    let Some(Preset::Controller(p)) = db.get(c) else {
        return;
    };
    // A controller takes NVMe drives only if it is tri-mode.
    if matches!(db.get(drive), Some(Preset::Ssd(s)) if s.nvme && !p.nvme) {
        return;
    }
    let raid = p.raid && p.cache_mb > 0;
    // RAID controllers' firmware (MegaRAID, Adaptec) offers RAID 0, 1, 5,
    // 6, 10, 50 and 60, not 4: RAID 4 is md's alone, over their volumes.
    let hw = raid && level != Level::Raid4;
    let policies: &[&str] = if raid { &POLICIES } else { &["mode=jbod"] };
    for k in 1..=q.max_controllers.max(1) {
        if !n.is_multiple_of(k) || n / k > p.ports {
            continue;
        }
        let case = CtrlCase {
            c,
            drive,
            level,
            n,
            k,
            policies,
            raid,
        };
        if hw {
            case.hardware(out);
        }
        case.md_over_volumes(out);
    }
}

/// `k` controllers of one kind sharing `n` drives, under each write policy.
struct CtrlCase<'a> {
    c: &'a str,
    drive: &'a str,
    level: Level,
    n: u32,
    k: u32,
    policies: &'a [&'a str],
    /// The controller runs RAID with a cache (else it only passes drives on).
    raid: bool,
}

impl CtrlCase<'_> {
    /// The controller's own arrays: one controller's, or a RAID 0 of
    /// several controllers' arrays.
    fn hardware(&self, out: &mut Vec<Layout>) {
        let (c, drive, level, n, k) = (self.c, self.drive, self.level, self.n, self.k);
        let name = level.word();
        let per = n / k;
        // Only arrays the controller's firmware builds (its RAID 10 takes an
        // even number of drives, at least four).
        let builds = |m: u32| level.controller_builds(m as usize);
        let nests =
            k > 1 && per >= level.min_members() as u32 && level != Level::Raid0 && builds(per);
        for s in HW_STRIPES_KB {
            for pol in self.policies {
                let arr = |m: u32| {
                    format!(
                        "{c}[{pol}]({name}{}({m}*{drive}))",
                        array_opts(level, s, false)
                    )
                };
                let failed = |m: u32| {
                    let spare = array_opts(level, s, true);
                    format!("{c}[{pol}]({name}{spare}{})", failed_members(m, drive))
                };
                if k == 1 && builds(n) {
                    let l = Layout::new(arr(n), level, n, Kind::Hardware, 1, Some(c));
                    out.push(l.or_degraded(|| failed(n)));
                }
                if nests {
                    // The first controller's array degraded, the rest whole.
                    let nest = |first: String| {
                        let mut v = vec![arr(per); k as usize];
                        v[0] = first;
                        format!("raid0[stripe={s}k]({})", v.join(", "))
                    };
                    let l = Layout::new(nest(arr(per)), level, n, Kind::Nested, k, Some(c));
                    out.push(l.or_degraded(|| nest(failed(per))));
                }
            }
        }
    }

    /// md over the controllers' single-drive volumes (or passed-on drives).
    fn md_over_volumes(&self, out: &mut Vec<Layout>) {
        let (c, drive, level, n, k) = (self.c, self.drive, self.level, self.n, self.k);
        let name = level.word();
        let per = n / k;
        for s in MD_STRIPES_KB {
            for pol in self.policies {
                let mode = if self.raid { "mode=volume," } else { "" };
                let vol = |m: u32| format!("{c}[{mode}{pol}]({m}*{drive})");
                let e = format!(
                    "{name}{}({})",
                    array_opts(level, s, false),
                    vec![vol(per); k as usize].join(", ")
                );
                // The first controller's last volume failed. The spare is
                // on a host port: the grammar's `missing` stands for a
                // device and copies a device sibling of its array.
                let failed = || {
                    let mut v: Vec<String> = (per > 1).then(|| vol(per - 1)).into_iter().collect();
                    v.push("missing".into());
                    v.extend((1..k).map(|_| vol(per)));
                    v.push(drive.to_string());
                    format!("{name}{}({})", array_opts(level, s, true), v.join(", "))
                };
                let l = Layout::new(e, level, n, Kind::MdOverVolumes, k, Some(c));
                out.push(l.or_degraded(failed));
            }
        }
    }
}

/// Why a question cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The question itself is wrong.
    #[error("{0}")]
    Input(String),
    /// A simulation failed.
    #[error("{0}: {1}")]
    Sim(String, SimError),
}

/// Every configuration that meets the question's constraints, with its
/// usable capacity, cost and classic-model figure.
pub fn candidates(q: &Question, db: &PresetDb) -> Result<Vec<Candidate>, PlanError> {
    let mut out = Vec::new();
    for drive in &q.drives {
        let ssd = match db.get(drive) {
            Some(Preset::Ssd(_)) => true,
            Some(Preset::Hdd(_)) => false,
            _ => {
                return Err(PlanError::Input(format!(
                    "--drives: '{drive}' is not a drive preset"
                )))
            }
        };
        for &op in q.op_pct.iter().filter(|&&op| ssd || op == 0) {
            let leaf = if op == 0 {
                drive.clone()
            } else {
                format!("{drive}[op={op}%]")
            };
            for l in expressions(q, db, &leaf) {
                if let Some(mut c) = candidate(q, db, drive, op, l)? {
                    c.id = CandidateId(out.len());
                    out.push(c);
                }
            }
        }
    }
    Ok(out)
}

/// The candidate of layout `l` of `drive`, if it holds the capacity and
/// fits the budget.
fn candidate(
    q: &Question,
    db: &PresetDb,
    drive: &str,
    op_pct: u32,
    l: Layout,
) -> Result<Option<Candidate>, PlanError> {
    let topo = resolve(&l.expr, db).map_err(|e| PlanError::Input(format!("{}: {e}", l.expr)))?;
    let usable = volume_capacity(&topo).map_err(|e| PlanError::Sim(l.expr.clone(), e))?;
    if usable < q.capacity {
        return Ok(None);
    }
    let cost = price(db, drive, l.n, l.controller.as_deref(), l.k);
    if matches!((q.budget, cost), (Some(b), Some(c)) if c > b) {
        return Ok(None);
    }
    let per = if l.kind == Kind::Nested {
        l.n / l.k
    } else {
        l.n
    };
    Ok(Some(Candidate {
        id: CandidateId(0),
        topology: l.expr,
        drive: drive.into(),
        op_pct,
        drives: l.n,
        level: l.level,
        kind: l.kind,
        controllers: l.k,
        survives: tolerance(l.level, per),
        usable_bytes: usable,
        cost,
        bound: None,
        degraded: l.degraded,
    }))
}

/// The price of `n` drives and `k` controllers, if every part has one.
fn price(db: &PresetDb, drive: &str, n: u32, controller: Option<&str>, k: u32) -> Option<f64> {
    let d = db.get(drive)?.price()? * n as f64;
    match controller {
        None => Some(d),
        Some(c) => Some(d + db.get(c)?.price()? * k as f64),
    }
}

/// The classic model's figure may understate what an array does where its
/// controller's caches serve reads; a candidate is passed over only when
/// even twice its figure cannot reach the rows already kept. The factor is
/// a safety margin, checked by a test that compares a pruned plan with an
/// exhaustive one (crates/raidlab-studies/tests/plan.rs).
pub const PRUNE_MARGIN: f64 = 2.0;

/// The workload as planned: `runtime=2` added where none is given, so every
/// row measures two seconds after the steady-state test (the row's
/// workload text says so, and `raidlab sim` with it reproduces the row).
pub fn planned_workload(text: &str) -> Result<String, PlanError> {
    let w = Workload::parse(text).map_err(|e| PlanError::Input(format!("-w '{text}': {e}")))?;
    // A trace replays to its end (or its own runtime): its length is the run.
    Ok(if w.runtime.is_some() || w.replay.is_some() {
        text.trim().to_string()
    } else {
        format!("{} runtime=2", text.trim())
    })
}

/// Each candidate's classic-model figure under a single workload with an
/// IOPS or MB/s objective (none otherwise: no pruning then). A mix of
/// reads and writes is bounded by the classic mixed model: an I/O's mean
/// time is its read share over the array's read rate plus its write share
/// over its write rate, each the drives' own under the workload made
/// all-read or all-write, times the level's multiple. Behind a write-back
/// cache a mix's writes are counted as free: the cache acknowledges them
/// from memory, and over a run shorter than its fill the drives serve the
/// reads alone.
pub fn set_bounds(cands: &mut [Candidate], q: &Question, db: &PresetDb) -> Result<(), PlanError> {
    let per_io = match q.objective {
        Objective::Iops => true,
        Objective::Mbps => false,
        _ => return Ok(()),
    };
    let [(text, _)] = q.workloads.as_slice() else {
        return Ok(());
    };
    let w = Workload::parse(text).map_err(|e| PlanError::Input(e.to_string()))?;
    if w.replay.is_some() {
        // A trace's mix and sizes are its own: no classic-model bound.
        return Ok(());
    }
    let parts = bound_parts(&w);
    let mut figures: Vec<(String, u32, Vec<f64>)> = Vec::new();
    for c in cands.iter_mut() {
        let figs = match figures
            .iter()
            .find(|(d, op, _)| *d == c.drive && *op == c.op_pct)
        {
            Some((_, _, f)) => f.clone(),
            None => {
                let leaf = match c.op_pct {
                    0 => c.drive.clone(),
                    op => format!("{}[op={op}%]", c.drive),
                };
                let f = parts
                    .iter()
                    .map(|(_, part, _)| one_drive(&leaf, part, db, q.seed, per_io))
                    .collect::<Result<Vec<f64>, PlanError>>()?;
                figures.push((c.drive.clone(), c.op_pct, f.clone()));
                f
            }
        };
        let cached = parts.len() > 1 && writes_back(&c.topology, db)?;
        c.bound = mixed_bound(c, &parts, &figs, cached);
    }
    Ok(())
}

/// Whether some controller of `expr` caches writes (write-back).
fn writes_back(expr: &str, db: &PresetDb) -> Result<bool, PlanError> {
    fn any(n: &Node) -> bool {
        match n {
            Node::Device(_) => false,
            Node::Controller(c) => c.write_back || c.children.iter().any(any),
            Node::Array(a) => a.members.iter().any(any),
        }
    }
    let t = resolve(expr, db).map_err(|e| PlanError::Input(e.to_string()))?;
    let cached = t.roots().any(any);
    Ok(cached)
}

/// The all-read and all-write workloads a mix is bounded by, each with
/// its pattern and its share of the I/Os; a workload of one direction is
/// its own single part.
fn bound_parts(w: &Workload) -> Vec<(Pattern, Workload, f64)> {
    if let Some(p) = crate::analytic::pattern_of(w) {
        return vec![(p, w.clone(), 1.0)];
    }
    let random = w.percentage_random >= 50;
    let read = f64::from(w.rwmixread) / 100.0;
    let one = |reads: bool| {
        let mut part = w.clone();
        part.rw = match (random, reads) {
            (true, true) => raidlab_core::workload::Rw::RandRead,
            (true, false) => raidlab_core::workload::Rw::RandWrite,
            (false, true) => raidlab_core::workload::Rw::Read,
            (false, false) => raidlab_core::workload::Rw::Write,
        };
        part
    };
    let (rp, wp) = if random {
        (Pattern::SmallRandomRead, Pattern::SmallRandomWrite)
    } else {
        (Pattern::LargeSequentialRead, Pattern::LargeSequentialWrite)
    };
    vec![(rp, one(true), read), (wp, one(false), 1.0 - read)]
}

/// A candidate's bound from its drives' figures under each part: the
/// harmonic mix of the parts' array rates by their shares (a mix's writes
/// free where `cached`); `None` where the classic model has no multiple
/// for the candidate's level.
fn mixed_bound(
    c: &Candidate,
    parts: &[(Pattern, Workload, f64)],
    figs: &[f64],
    cached: bool,
) -> Option<f64> {
    let mut time = 0.0;
    for ((pattern, part, share), fig) in parts.iter().zip(figs) {
        let rate = data_multiple(c, *pattern)? * fig;
        if (part.reads() || !cached) && *share > 0.0 {
            time += share / rate;
        }
    }
    (time > 0.0).then(|| 1.0 / time)
}

/// One drive (`leaf`, e.g. `x25e[op=20%]`) alone under `w`, cut to its
/// capacity, as the analytic model measures it: IOPS or MB/s.
fn one_drive(
    leaf: &str,
    w: &Workload,
    db: &PresetDb,
    seed: u64,
    per_io: bool,
) -> Result<f64, PlanError> {
    let t = resolve(leaf, db).map_err(|e| PlanError::Input(e.to_string()))?;
    let (Node::Device(dev), 1) = (&t.root, t.volume_count()) else {
        return Err(PlanError::Input(format!("'{leaf}' is not a drive")));
    };
    let s =
        crate::analytic::one_drive(&t, dev, w, seed).map_err(|e| PlanError::Sim(leaf.into(), e))?;
    Ok(if per_io { s.iops } else { s.mbps })
}

/// The classic model's drives' worth of throughput of a candidate.
fn data_multiple(c: &Candidate, pattern: Pattern) -> Option<f64> {
    let (groups, per) = match c.kind {
        Kind::Nested => (c.controllers, c.drives / c.controllers),
        _ => (1, c.drives),
    };
    cost(c.level, per, pattern)
        .ok()
        .map(|x| x.drive_multiple * groups as f64)
}

/// Simulate `c` under every workload and combine the results by the
/// workloads' time shares.
pub fn evaluate(c: &Candidate, q: &Question, db: &PresetDb) -> Result<Row, PlanError> {
    evaluate_for(c, q, db, None)
}

/// [`evaluate`], with every workload's runtime set to `runtime` if given
/// (the screening pass).
fn evaluate_for(
    c: &Candidate,
    q: &Question,
    db: &PresetDb,
    runtime: Option<raidlab_core::units::Ns>,
) -> Result<Row, PlanError> {
    let mut row = Row {
        candidate: c.clone(),
        iops: 0.0,
        mbps: 0.0,
        lat_p99_ms: 0.0,
        bottleneck: String::new(),
        endurance_years: None,
        steady: true,
        degraded_iops: None,
        rebuild_hours: None,
        tripped: None,
    };
    let (mut wear_rate, mut rated, mut heaviest) = (0.0, true, 0.0);
    for (share, r) in runs(&c.topology, q, db, runtime)? {
        if let Some(e) = r.errors.first().filter(|_| row.tripped.is_none()) {
            row.tripped = Some(e.message.clone());
        }
        row.iops += share * r.summary.iops;
        row.mbps += share * r.summary.mbps;
        row.lat_p99_ms = row.lat_p99_ms.max(r.summary.lat_p99_ms);
        row.steady &= r.sim.steady.as_ref().is_some_and(|s| s.reached);
        if share > heaviest {
            heaviest = share;
            row.bottleneck = bottleneck(&r);
        }
        match worst_wear(&r) {
            Some(per_year) => wear_rate += share * per_year,
            None => rated = false,
        }
    }
    row.endurance_years = (rated && wear_rate > 0.0).then(|| 1.0 / wear_rate);
    Ok(row)
}

/// `expr` simulated under each of the question's workloads (their runtime
/// set to `runtime` if given), with each workload's share of the time.
fn runs(
    expr: &str,
    q: &Question,
    db: &PresetDb,
    runtime: Option<raidlab_core::units::Ns>,
) -> Result<Vec<(f64, RunResult)>, PlanError> {
    let topo = resolve(expr, db).map_err(|e| PlanError::Input(e.to_string()))?;
    let total: f64 = q.workloads.iter().map(|(_, f)| f).sum();
    q.workloads
        .iter()
        .map(|(text, f)| {
            let mut w = Workload::parse(text).map_err(|e| PlanError::Input(e.to_string()))?;
            if runtime.is_some() {
                w.runtime = runtime;
            }
            let r = simulate(&topo, &w, q.seed).map_err(|e| PlanError::Sim(expr.into(), e))?;
            Ok((f / total, r))
        })
        .collect()
}

/// The bottleneck component's name and resource, or the queue depth when
/// no resource saturates.
pub fn bottleneck(r: &RunResult) -> String {
    r.components
        .iter()
        .find(|c| c.bottleneck)
        .map(|c| {
            format!("{} {}", c.name, c.resource.as_deref().unwrap_or(""))
                .trim()
                .to_string()
        })
        .unwrap_or_else(|| "queue depth (latency-bound)".into())
}

/// The share of its rated endurance the most-written SSD member uses per
/// year (`None`: a member has no rating; HDD-only runs wear nothing).
fn worst_wear(r: &RunResult) -> Option<f64> {
    let mut worst = 0.0f64;
    for c in r.components.iter().filter(|c| c.kind == "ssd") {
        let w = c.wear?;
        w.rated_tbw?;
        if let Some(y) = w.years_to_rated {
            worst = worst.max(1.0 / y);
        }
    }
    Some(worst)
}

/// The objective's value of a row, larger is better.
pub fn score(row: &Row, o: Objective) -> f64 {
    match o {
        Objective::Iops => row.iops,
        Objective::Mbps => row.mbps,
        Objective::P99 => -row.lat_p99_ms,
        Objective::Cost => match row.candidate.cost {
            Some(c) if row.iops > 0.0 => -c / row.iops,
            _ => f64::NEG_INFINITY,
        },
        Objective::Endurance => row.endurance_years.unwrap_or(f64::NEG_INFINITY),
    }
}

/// Scores within this ratio of each other rank as equal, so that a smaller
/// or cheaper configuration is not ranked below a bigger one for a
/// difference no measurement could show (fio's own run-to-run spread on
/// the same array is of this order, and more).
pub const TIE_RATIO: f64 = 1.005;

/// A row's score on a log scale of [`TIE_RATIO`] steps (larger is better).
fn bucket(row: &Row, o: Objective) -> i64 {
    let s = score(row, o);
    if !s.is_finite() || s == 0.0 {
        return if s > 0.0 {
            i64::MAX
        } else if s < 0.0 {
            i64::MIN
        } else {
            0
        };
    }
    let b = (s.abs().ln() / TIE_RATIO.ln()).floor() as i64;
    if s > 0.0 {
        b
    } else {
        -b
    }
}

/// Rank rows best first: rows measured in steady state before rows that
/// never reached it (their figure is a transient, such as a write-back
/// cache still filling), then by the objective (within [`TIE_RATIO`]),
/// then fewer drives, lower cost, and the expression, so equal scores keep
/// one order.
pub fn rank(rows: &mut [Row], o: Objective) {
    rows.sort_by(|a, b| {
        b.steady
            .cmp(&a.steady)
            .then(bucket(b, o).cmp(&bucket(a, o)))
            .then(a.candidate.drives.cmp(&b.candidate.drives))
            .then(
                a.candidate
                    .cost
                    .unwrap_or(0.0)
                    .total_cmp(&b.candidate.cost.unwrap_or(0.0)),
            )
            .then(a.candidate.topology.cmp(&b.candidate.topology))
    });
}

/// The outcome of a plan.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Rows simulated and meeting every constraint, best first.
    pub rows: Vec<Row>,
    /// Configurations that met the constraints before simulation.
    pub considered: usize,
    /// Configurations the classic model ruled out.
    pub pruned: usize,
    /// Configurations a short screening run ruled out.
    pub screened: usize,
    /// Rows dropped for `--min-years`.
    pub worn: usize,
    /// Rows dropped because a job tripped one of the workload's guards
    /// (`max_latency`, `rate_min`, `rate_iops_min`).
    pub tripped: usize,
}

/// Longest simulated time of a screening run: a quarter second holds 10^4
/// I/Os at the ≥ 40,000 IOPS of any SSD array (a ±1 % mean), a twentieth
/// of the time of the final measurement. A candidate without a
/// classic-model figure screens this long.
pub const SCREEN_RUNTIME_NS: raidlab_core::units::Ns = 250_000_000;
/// Shortest simulated time of a screening run: 20 ms, five rounds of 4 ms,
/// each still longer than a write-back destage or a flash program takes.
pub const SCREEN_MIN_NS: raidlab_core::units::Ns = 20_000_000;
/// Host I/Os a screening run aims at: 2 × 10^4, a ±0.7 % counting error
/// on the mean (1/√n), within the screening's keep-three margin
/// ([`SCREEN_KEEP`]).
pub const SCREEN_IOS: f64 = 2e4;

/// The simulated time a candidate is screened for: long enough for
/// [`SCREEN_IOS`] I/Os at its classic-model figure (an upper bound, so it
/// runs at least that many at the rate it reaches, within a factor of the
/// bound's margin), between [`SCREEN_MIN_NS`] and [`SCREEN_RUNTIME_NS`].
fn screen_runtime(c: &Candidate, q: &Question) -> raidlab_core::units::Ns {
    let Some(bound) = c.bound else {
        return SCREEN_RUNTIME_NS;
    };
    let per_s = match q.objective {
        Objective::Mbps => {
            let mean_bs = q
                .workloads
                .first()
                .and_then(|(t, _)| Workload::parse(t).ok())
                .map_or(4096.0, |w| w.mean_bs());
            bound * 1e6 / mean_bs
        }
        _ => bound,
    };
    let ns = SCREEN_IOS / per_s.max(1.0) * 1e9;
    (ns as raidlab_core::units::Ns).clamp(SCREEN_MIN_NS, SCREEN_RUNTIME_NS)
}
/// Candidates screened between two pruning checks (16: eight per core on
/// the 2-core machines CI runs on, so both cores stay busy).
pub const SCREEN_BATCH: usize = 16;
/// Rows the screening pass passes on to the full measurement, per row
/// printed: three, so that a screening error of a few per cent cannot push
/// a row that belongs in the top out of it (the pruned-vs-exhaustive test
/// checks this).
pub const SCREEN_KEEP: usize = 3;

/// How much work a plan does: simulations in parallel, rows printed (the
/// rows pruning must not change), and whether to simulate everything.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    /// Simulations in parallel (the output does not depend on it).
    pub threads: usize,
    /// Rows printed (≥ 1).
    pub top: usize,
    /// Simulate every configuration: no pruning, no screening.
    pub exhaustive: bool,
}

impl Effort {
    /// Whether `n` candidates go through the screening pass.
    fn screens(self, n: usize) -> bool {
        !self.exhaustive && n > self.top * SCREEN_KEEP
    }
}

/// Shard `index` (1-based) of `count`: the share of a plan's simulations
/// one machine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 1 to `count`.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl Shard {
    /// Whether position `pos` of the visiting order is this shard's.
    fn owns(self, pos: usize) -> bool {
        pos % self.count == self.index - 1
    }
}

/// What a shard computed: screening rows, full rows and degraded figures
/// by candidate, the inputs [`replay`] rebuilds the unsharded plan from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    /// Rows of the short screening runs.
    pub screened: BTreeMap<CandidateId, Row>,
    /// Rows measured in full.
    pub full: BTreeMap<CandidateId, Row>,
    /// Degraded IOPS and rebuild hours of full rows (`None`: the layout
    /// has no degraded form, or it could not be simulated).
    pub degraded: BTreeMap<CandidateId, Option<(f64, Option<f64>)>>,
}

/// Evaluate `cands`: unless `effort.exhaustive`, the ones whose
/// classic-model figure (× [`PRUNE_MARGIN`]) cannot reach the `top`-th
/// best are passed over, the rest screened with short runs, and only the
/// best `top` × [`SCREEN_KEEP`] of them measured in full.
pub fn run(
    cands: Vec<Candidate>,
    q: &Question,
    db: &PresetDb,
    effort: Effort,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome, PlanError> {
    let considered = cands.len();
    let (kept, done) = if effort.screens(considered) {
        let order = screen_order(&cands);
        let mut eval = |batch: &[usize]| screen_rows(&cands, batch, q, db, effort.threads);
        screen_pass(&cands, &order, q, effort.top, &mut eval, progress)?
    } else {
        (cands.iter().map(|c| c.id).collect(), considered)
    };
    let rows = full_rows(&cands, &kept, q, db, effort.threads, progress)?;
    Ok(finish(rows, q, considered, done))
}

/// The outcome of the rows measured in full, `done` of `considered`
/// candidates having been screened: rows whose jobs tripped a guard of the
/// workload and rows short of `--min-years` dropped, the rest ranked.
fn finish(rows: Vec<Row>, q: &Question, considered: usize, done: usize) -> Outcome {
    let measured = rows.len();
    let tripped = rows.iter().filter(|r| r.tripped.is_some()).count();
    let rows = ranked(rows, q);
    Outcome {
        tripped,
        worn: measured - tripped - rows.len(),
        rows,
        considered,
        pruned: considered - done,
        screened: done - measured,
    }
}

/// `rows` whose jobs tripped a guard of the workload, or short of
/// `--min-years`, dropped; the rest ranked.
fn ranked(mut rows: Vec<Row>, q: &Question) -> Vec<Row> {
    rows.retain(|r| r.tripped.is_none());
    if let Some(min) = q.min_years {
        let reads_only = no_writes(q);
        rows.retain(|r| r.endurance_years.map_or(reads_only, |y| y >= min));
    }
    rank(&mut rows, q.objective);
    rows
}

/// The screening pass's visiting order (positions in `cands`): highest
/// classic-model figure first, unbounded candidates (which cannot be
/// pruned) first of all; the sort is stable, so the enumeration order
/// breaks ties.
pub fn screen_order(cands: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    let key = |i: &usize| cands[*i].bound.unwrap_or(f64::INFINITY);
    order.sort_by(|a, b| key(b).total_cmp(&key(a)));
    order
}

/// Whether the screening pass stops before `next`: once `keep` rows are
/// screened, when even `next`'s figure × [`PRUNE_MARGIN`] falls short of
/// the `keep`-th best screened score. The score is taken over every row
/// screened, so a subset of the rows never stops sooner than all of them
/// (which is what lets a shard screen a superset of its share).
fn stops(rows: &[Row], next: &Candidate, o: Objective, keep: usize) -> bool {
    if rows.len() < keep {
        return false;
    }
    let mut scores: Vec<f64> = rows.iter().map(|r| score(r, o)).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    next.bound
        .is_some_and(|b| b * PRUNE_MARGIN < scores[keep - 1])
}

/// The rows of a batch of candidates (positions in the candidate list).
type BatchEval<'a> = dyn FnMut(&[usize]) -> Result<Vec<Row>, PlanError> + 'a;

/// The screening pass over `order` in batches of [`SCREEN_BATCH`], `eval`
/// giving a batch's rows, until [`stops`]; returns the best
/// `top` × [`SCREEN_KEEP`] candidates and how many were screened. The
/// batch is fixed (not one per thread) so that where the pass stops, and
/// so the output, does not depend on `--jobs`.
fn screen_pass(
    cands: &[Candidate],
    order: &[usize],
    q: &Question,
    top: usize,
    eval: &mut BatchEval<'_>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Vec<CandidateId>, usize), PlanError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut done = 0;
    while done < order.len() && !stops(&rows, &cands[order[done]], q.objective, top) {
        let end = (done + SCREEN_BATCH).min(order.len());
        // A configuration whose jobs trip the workload's guard (its
        // max_latency, say) does not meet the question: the pass goes on
        // until enough others do.
        rows.extend(
            eval(&order[done..end])?
                .into_iter()
                .filter(|r| r.tripped.is_none()),
        );
        done = end;
        progress(done, order.len());
    }
    rank(&mut rows, q.objective);
    rows.truncate(top * SCREEN_KEEP);
    Ok((rows.into_iter().map(|r| r.candidate.id).collect(), done))
}

/// One shard's share of a plan: the screening runs of its own positions
/// of the visiting order (stopping on its own rows, which is never before
/// the unsharded pass would: it screens a superset of its share), the
/// full runs of its own best, and the degraded runs of the best of those.
/// [`replay`] of every shard's work is the unsharded outcome; what a shard
/// could not know it was needed for (a full or degraded row that ranks
/// among the best only beside the other shards' rows) the replay runs.
pub fn run_shard(
    cands: &[Candidate],
    q: &Question,
    db: &PresetDb,
    effort: Effort,
    shard: Shard,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Work, PlanError> {
    let mut work = Work::default();
    let ids: Vec<CandidateId> = if effort.screens(cands.len()) {
        let order = screen_order(cands);
        let mut eval = |batch: &[usize]| {
            let mine: Vec<usize> = batch.iter().copied().filter(|&p| shard.owns(p)).collect();
            let rows = screen_rows(cands, &mine, q, db, effort.threads)?;
            for r in &rows {
                work.screened.insert(r.candidate.id, r.clone());
            }
            Ok(rows)
        };
        screen_pass(cands, &order, q, effort.top, &mut eval, progress)?.0
    } else {
        (0..cands.len())
            .filter(|&p| shard.owns(p))
            .map(CandidateId)
            .collect()
    };
    let full = full_rows(cands, &ids, q, db, effort.threads, progress)?;
    let mut best = ranked(full.clone(), q);
    best.truncate(effort.top);
    let figures = raidlab_core::par::map(best.len(), effort.threads, &|_, _| {}, |i| {
        degraded_figures(&best[i].candidate, q, db)
    });
    for (r, d) in best.iter().zip(figures) {
        work.degraded.insert(r.candidate.id, d);
    }
    work.full = full.into_iter().map(|r| (r.candidate.id, r)).collect();
    Ok(work)
}

/// Screening rows of the candidates at `positions` of `cands`.
fn screen_rows(
    cands: &[Candidate],
    positions: &[usize],
    q: &Question,
    db: &PresetDb,
    threads: usize,
) -> Result<Vec<Row>, PlanError> {
    let out = raidlab_core::par::map(positions.len(), threads, &|_, _| {}, |i| {
        let c = &cands[positions[i]];
        evaluate_for(c, q, db, Some(screen_runtime(c, q)))
    });
    out.into_iter().collect()
}

/// Full rows of the candidates `ids`.
fn full_rows(
    cands: &[Candidate],
    ids: &[CandidateId],
    q: &Question,
    db: &PresetDb,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Row>, PlanError> {
    let out = raidlab_core::par::map(ids.len(), threads, progress, |i| {
        evaluate(&cands[ids[i].0], q, db)
    });
    out.into_iter().collect()
}

/// The unsharded outcome from every shard's `work`: the screening pass,
/// the ranking and the degraded runs replayed on the shards' rows, any
/// row the shards lack simulated here (the rows are the same whoever
/// simulates them: each depends only on its configuration and the seed).
pub fn replay(
    cands: &[Candidate],
    q: &Question,
    db: &PresetDb,
    effort: Effort,
    work: &Work,
) -> Result<Outcome, PlanError> {
    let (kept, done) = if effort.screens(cands.len()) {
        let order = screen_order(cands);
        let mut eval = |batch: &[usize]| {
            let lack: Vec<usize> = batch
                .iter()
                .copied()
                .filter(|&p| !work.screened.contains_key(&CandidateId(p)))
                .collect();
            let mut extra = screen_rows(cands, &lack, q, db, effort.threads)?.into_iter();
            let mut rows = Vec::with_capacity(batch.len());
            for &p in batch {
                rows.extend(
                    work.screened
                        .get(&CandidateId(p))
                        .cloned()
                        .or_else(|| extra.next()),
                );
            }
            Ok(rows)
        };
        screen_pass(cands, &order, q, effort.top, &mut eval, &|_, _| {})?
    } else {
        (cands.iter().map(|c| c.id).collect(), cands.len())
    };
    let lack: Vec<CandidateId> = kept
        .iter()
        .copied()
        .filter(|id| !work.full.contains_key(id))
        .collect();
    let mut extra = full_rows(cands, &lack, q, db, effort.threads, &|_, _| {})?.into_iter();
    let rows = kept
        .iter()
        .filter_map(|id| work.full.get(id).cloned().or_else(|| extra.next()))
        .collect();
    let mut out = finish(rows, q, cands.len(), done);
    let top = out.rows.len().min(effort.top);
    let figures = raidlab_core::par::map(top, effort.threads, &|_, _| {}, |i| {
        let c = &out.rows[i].candidate;
        match work.degraded.get(&c.id) {
            Some(d) => *d,
            None => degraded_figures(c, q, db),
        }
    });
    for (row, d) in out.rows.iter_mut().zip(figures) {
        if let Some((iops, hours)) = d {
            row.degraded_iops = Some(iops);
            row.rebuild_hours = hours;
        }
    }
    Ok(out)
}

/// Whether no workload writes (endurance is then no constraint).
fn no_writes(q: &Question) -> bool {
    q.workloads
        .iter()
        .all(|(t, _)| Workload::parse(t).is_ok_and(|w| !w.writes()))
}

/// One line on why the best row wins over the next.
pub fn why(rows: &[Row], o: Objective) -> String {
    let Some(best) = rows.first() else {
        return "no configuration meets the constraints".into();
    };
    let what = match o {
        Objective::Iops => format!("{:.0} IOPS", best.iops),
        Objective::Mbps => format!("{:.0} MB/s", best.mbps),
        Objective::P99 => format!("p99 {:.3} ms", best.lat_p99_ms),
        Objective::Cost => format!("{:.4} per IOPS", -score(best, o)),
        Objective::Endurance => match best.endurance_years {
            Some(y) => format!("{y:.1} years to rated endurance"),
            None => "endurance unknown (its drives have no rated endurance)".into(),
        },
    };
    let gap = rows.get(1).map(|next| {
        if bucket(best, o) == bucket(next, o) {
            return format!(
                ", level with the next ({}) within {:.1} % and ahead on {}",
                next.candidate.topology,
                (TIE_RATIO - 1.0) * 100.0,
                tie_reason(best, next)
            );
        }
        let (a, b) = (score(best, o), score(next, o));
        let pct = if b != 0.0 {
            (a - b) / b.abs() * 100.0
        } else {
            0.0
        };
        format!(", {pct:+.1} % over the next ({})", next.candidate.topology)
    });
    format!(
        "best {what}{}; {} drives at {} survive {} failure(s); limited by {}",
        gap.unwrap_or_default(),
        best.candidate.drives,
        best.candidate.level.word(),
        best.candidate.survives,
        best.bottleneck
    )
}

/// What breaks a tie between two rows of one score, in [`rank`]'s order.
fn tie_reason(a: &Row, b: &Row) -> &'static str {
    if a.candidate.drives != b.candidate.drives {
        "fewer drives"
    } else if a.candidate.cost != b.candidate.cost {
        "cost"
    } else {
        "the order of the expressions"
    }
}

/// One line for row `i`: the winner's reason, or how far behind the best
/// a row is and what limits it.
pub fn row_why(rows: &[Row], i: usize, o: Objective) -> String {
    if i == 0 {
        return why(rows, o);
    }
    let (best, r) = (score(&rows[0], o), score(&rows[i], o));
    let pct = if best != 0.0 {
        (best - r) / best.abs() * 100.0
    } else {
        0.0
    };
    format!(
        "{pct:.0} % behind the best on {}; limited by {}",
        o.word(),
        rows[i].bottleneck
    )
}

/// The expression of `c` with one member failed and one hot spare taking
/// its place (rebuilt during the run), for a level that survives a
/// failure: host RAID's first member; hardware RAID's first member, in the
/// first controller's array of a nested layout; md over controllers'
/// volumes, the first controller's last volume, the spare on a host port.
pub fn degraded_expr(c: &Candidate) -> Option<String> {
    c.degraded.clone().filter(|_| c.survives > 0)
}

/// Degraded IOPS and rebuild hours of `c`: one member failed, a spare
/// rebuilding under the workloads; `None` where the layout cannot take a
/// spare (a controller without a free port) or has no redundancy.
pub fn degraded_figures(c: &Candidate, q: &Question, db: &PresetDb) -> Option<(f64, Option<f64>)> {
    let e = degraded_expr(c)?;
    let (mut iops, mut hours, mut heaviest) = (0.0, None, 0.0);
    for (share, r) in runs(&e, q, db, None).ok()? {
        iops += share * r.summary.iops;
        if share > heaviest {
            heaviest = share;
            hours = r.sim.rebuilds.first().map(|b| b.projected_s / 3600.0);
        }
    }
    Some((iops, hours))
}

/// Measure the first `top` rows degraded ([`degraded_figures`]).
pub fn degrade(rows: &mut [Row], q: &Question, db: &PresetDb, threads: usize, top: usize) {
    let n = rows.len().min(top);
    let out = raidlab_core::par::map(n, threads, &|_, _| {}, |i| {
        degraded_figures(&rows[i].candidate, q, db)
    });
    for (row, d) in rows.iter_mut().zip(out) {
        if let Some((iops, hours)) = d {
            row.degraded_iops = Some(iops);
            row.rebuild_hours = hours;
        }
    }
}
