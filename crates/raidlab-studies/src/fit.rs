//! Fitting an SSD preset to measurements (`raidlab calibrate`).
//!
//! A drive is described by a few observations — the probe suite's results
//! on a real drive or on a simulated one, or a datasheet's figures — each a
//! workload, a metric and a value. The fit starts from a structural
//! template (a SATA flash SSD of the drive's capacity, [`template`]) and
//! moves the parameters the observations can tell apart ([`FREE`]) until the
//! simulated drive reproduces them: a coordinate search in log space that
//! minimises Σ ln²(simulated / measured), then the two yes/no choices
//! (paced garbage collection, power-loss protection) tried both ways. The
//! simulator itself is the forward model, so every mechanism it has —
//! queues, dies, garbage collection — shapes the fit as it shapes a run.

use crate::validate::{validate, RowResult};
use raidlab_core::preset::{ChannelOrder, FtlKind, PresetDb, SsdParams};
use raidlab_core::published::Row;
use raidlab_core::workload::{Rw, Workload};

mod probes;

pub use probes::*;

/// One measured figure of the drive.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Short name (`randread-4k-qd32`), used in the preset's comments.
    pub label: String,
    /// fio-style workload (`rw=randread bs=4k iodepth=32`).
    pub workload: String,
    /// Metric (`iops`, `mbps`, `lat_avg_ms`, `lat_p99_ms`, ...).
    pub metric: String,
    /// Measured value.
    pub value: f64,
    /// The host the figure was measured on, as the head of a topology
    /// expression (`host[profile=host2020]`); the drive is simulated under
    /// it. None: the default host.
    pub host: Option<String>,
}

impl Observation {
    /// The host head of a published row's topology `host[...](DRIVE)`,
    /// if it has one.
    pub fn host_of(topology: &str) -> Option<String> {
        let t = topology.trim();
        if !(t.starts_with("host[") && t.ends_with(')')) {
            return None;
        }
        let open = t.find("](")? + 1;
        Some(t[..open].to_string())
    }

    /// The topology that simulates `drive` as this observation measured it.
    fn topology(&self, drive: &str) -> String {
        match &self.host {
            Some(h) => format!("{h}({drive})"),
            None => drive.to_string(),
        }
    }
}

/// A parameter the fit moves, with the observation that mostly decides it
/// and the range it may take.
#[derive(Debug, Clone, Copy)]
pub struct Free {
    /// The preset field.
    pub field: &'static str,
    /// The probe whose measurement mostly decides it.
    pub from: &'static str,
    /// Lowest value.
    pub min: f64,
    /// Highest value.
    pub max: f64,
}

/// The parameters fitted, each solved on the observation that depends on
/// it most, in this order (read side first, as its figures do not depend
/// on the write side). Ranges span SATA to PCIe 5 drives.
pub const FREE: &[Free] = &[
    Free {
        field: "link_mbps",
        from: "read-128k-qd32",
        min: 50.0,
        max: 20_000.0,
    },
    Free {
        field: "channel_mbps",
        from: "randread-16k-qd8",
        // ONFI 1.0's 40 MT/s to ONFI 5.1's 3600 MT/s (one byte per transfer).
        min: 10.0,
        max: 3_600.0,
    },
    Free {
        field: "fw_us_per_kb",
        from: "randread-64k-qd32",
        min: 0.001,
        max: 50.0,
    },
    Free {
        field: "fw_read_op_us",
        from: "randread-64k-qd32-steady",
        // From a few nanoseconds (a hardware sequencer issues the flash
        // reads) to a millisecond.
        min: 0.001,
        max: 1_000.0,
    },
    Free {
        field: "read_us",
        from: "randread-4k-qd1",
        // SLC/fast-NAND tR of a few us to QLC's ~150 us, with ECC retries.
        min: 3.0,
        max: 2_000.0,
    },
    Free {
        field: "fw_read_us",
        from: "randread-4k-qd32",
        min: 0.1,
        max: 2_000.0,
    },
    Free {
        field: "fw_write_us",
        from: "randwrite-4k-qd1",
        min: 0.1,
        max: 5_000.0,
    },
    Free {
        // Where the drive's sequential writes are bound by its flash (not
        // its link), they are the dies' program rate itself: dies × page /
        // tPROG, measured without garbage collection. Otherwise (flat: a
        // link-bound write) the next entry's mix decides it.
        field: "program_us",
        from: "write-128k-qd32",
        min: 100.0,
        max: 20_000.0,
    },
    Free {
        field: "program_us",
        from: "randrw70-8k-qd32-steady",
        // SLC programs a page in 200-250 us (the fastest NAND there is);
        // QLC takes several ms.
        min: 100.0,
        max: 20_000.0,
    },
    Free {
        field: "spare_pct",
        from: "randwrite-4k-qd32-steady",
        // Every drive sells GB of LBAs over GiB of flash: 2^30/10^9 - 1
        // = 7.4 % spare at the least; 4 % leaves room below it for the
        // fit without reaching a drive no vendor builds.
        min: 4.0,
        max: 100.0,
    },
];

/// The controller's program data path, solved on the sequential write only
/// when nothing else can bring it down: a drive whose flash (its dies'
/// program rate) and link both outrun its rated sequential writes is bound
/// by the path every programmed page takes (fit.rs `bound_write_path`).
pub const WRITE_PATH: Free = Free {
    field: "write_path_mbps",
    from: "write-128k-qd32",
    min: 50.0,
    max: 20_000.0,
};

/// How far (%) the fitted sequential write may stay above its figure
/// before the write path is fitted to it: beyond the solves' tolerance and
/// the few percent a link-bound write differs from a read on the same link.
const WRITE_PATH_EXCESS_PCT: f64 = 5.0;

/// The fields a read-only calibration cannot see (they come from the
/// template, unmeasured): the write side, and the cost of reading what
/// random writes scattered.
pub const WRITE_FIELDS: &[&str] = &[
    "fw_read_op_us",
    "write_path_mbps",
    "program_us",
    "fw_write_us",
    "spare_pct",
    "gc_pacing",
    "power_loss_protection",
];

/// The value of free parameter `name` in `p`.
pub fn value(p: &SsdParams, name: &str) -> f64 {
    match name {
        "link_mbps" => p.link_mbps,
        "program_us" => p.program_us,
        "read_us" => p.read_us,
        "fw_read_us" => p.fw_read_us,
        "fw_read_op_us" => p.fw_read_op_us,
        "fw_us_per_kb" => p.fw_us_per_kb,
        "channel_mbps" => p.channel_mbps,
        "fw_write_us" => p.fw_write_us,
        "spare_pct" => p.spare_pct,
        "dies" => f64::from(p.channels * p.dies_per_channel),
        "write_path_mbps" => p.write_path_mbps,
        other => unreachable!("'{other}' is not a free parameter"),
    }
}

/// Spread `total` dies over `channels` channels: one die per channel
/// below that many dies (small drives leave channels empty), then whole dies
/// per channel.
fn set_dies(p: &mut SsdParams, total: f64, channels: u32) {
    let total = (total.round() as u32).max(1);
    if total < channels {
        (p.channels, p.dies_per_channel) = (total, 1);
    } else {
        p.channels = channels;
        p.dies_per_channel = (total as f64 / channels as f64).round() as u32;
    }
}

/// The nearest tries of a solve on either side of its figure, in log
/// space: `below` gave less than the figure, `above` more.
#[derive(Debug, Default, Clone, Copy)]
struct Bracket {
    below: Option<(f64, f64)>,
    above: Option<(f64, f64)>,
}

impl Bracket {
    /// Record a try at `x` that missed the figure by `miss` (log ratio).
    fn note(&mut self, x: f64, miss: f64) {
        let side = if miss < 0.0 {
            &mut self.below
        } else {
            &mut self.above
        };
        if side.is_none_or(|(_, m)| miss.abs() < m.abs()) {
            *side = Some((x, miss));
        }
    }

    /// `x` when it lies strictly between the two sides (or no bracket is
    /// known yet); `None` when it leaves a known bracket or is `None`.
    fn inside(&self, x: Option<f64>) -> Option<f64> {
        let x = x?;
        match (self.below, self.above) {
            (Some((a, _)), Some((b, _))) => {
                let (lo, hi) = (a.min(b), a.max(b));
                (x > lo && x < hi).then_some(x)
            }
            _ => Some(x),
        }
    }

    /// The middle of a known bracket, while its ends are more than 2 %
    /// apart: finer than that, a metric that moves in steps has shown
    /// which side of its step to take, and `solve` keeps the better try.
    fn middle(&self) -> Option<f64> {
        match (self.below, self.above) {
            (Some((a, _)), Some((b, _))) if (a - b).abs() > BRACKET_FLOOR => Some(0.5 * (a + b)),
            _ => None,
        }
    }
}

/// A solve's steps along its parameter while the metric shows no slope.
/// The first step follows a guess that more of the parameter means more
/// of the metric; where it meets no slope, the other way is walked a few
/// doublings ([`FLAT_WALK`]): a cost parameter (more of it, less of the
/// metric) that an earlier solve pushed deep under another limit (while
/// the die count was still the template's) finds its own limit again.
#[derive(Debug, Clone, Copy)]
struct FlatWalk {
    /// Where the solve started (log of the parameter).
    start: f64,
    /// The current direction's step (log of a factor of 2).
    step: f64,
    /// Doublings left once turned back (`None`: not turned yet).
    left: Option<usize>,
}

impl FlatWalk {
    fn new(start: f64, step: f64) -> FlatWalk {
        FlatWalk {
            start,
            step,
            left: None,
        }
    }

    /// The first try: one step the guessed way.
    fn first(&self) -> f64 {
        self.start + self.step
    }

    /// The next try after a flat one at `at`: first back past the start the
    /// other way, then on that way; `None` once the walk is spent.
    fn next(&mut self, at: f64) -> Option<f64> {
        match self.left {
            None => {
                self.step = -self.step;
                self.left = Some(FLAT_WALK);
                Some(self.start + self.step)
            }
            Some(0) => None,
            Some(n) => {
                self.left = Some(n - 1);
                Some(at + self.step)
            }
        }
    }
}

/// Set free parameter `name` of `p` (a count rounds to the nearest whole).
fn set(p: &mut SsdParams, name: &str, v: f64) {
    match name {
        "link_mbps" => p.link_mbps = v,
        "program_us" => p.program_us = v,
        "read_us" => p.read_us = v,
        "fw_read_us" => p.fw_read_us = v,
        "fw_read_op_us" => p.fw_read_op_us = v,
        "fw_us_per_kb" => p.fw_us_per_kb = v,
        "channel_mbps" => p.channel_mbps = v,
        "fw_write_us" => p.fw_write_us = v,
        "spare_pct" => p.spare_pct = v,
        "write_path_mbps" => p.write_path_mbps = v,
        other => unreachable!("'{other}' is not a free parameter"),
    }
}

/// One observation simulated against the candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    /// The observation.
    pub obs: Observation,
    /// What the fitted drive gives.
    pub fitted: f64,
}

impl Residual {
    /// 100 · (fitted − measured) / measured.
    pub fn error_pct(&self) -> f64 {
        100.0 * (self.fitted - self.obs.value) / self.obs.value
    }
}

/// A finished fit.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The fitted parameters.
    pub params: SsdParams,
    /// Each observation against the fitted drive.
    pub residuals: Vec<Residual>,
    /// Candidates simulated.
    pub evaluations: usize,
}

/// Why a fit could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    /// No usable observation.
    #[error("no observation to fit (need at least one positive, finite measurement)")]
    Empty,
    /// An observation's workload or metric cannot be simulated.
    #[error("observation '{label}': {reason}")]
    Unusable {
        /// Its label.
        label: String,
        /// Why.
        reason: String,
    },
}

/// How hard the fit searches: the full search, or a shorter one that keeps
/// `calibrate --quick` within its two minutes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effort {
    /// Gauss–Seidel sweeps of the first settle.
    pub sweeps: usize,
    /// Whole steps of the die climb after the spread.
    pub climb_steps: usize,
    /// Nelder–Mead steps of the final search (0: none).
    pub polish_iterations: usize,
    /// Factors of the template's die count the die search settles first.
    pub spread: &'static [f64],
}

impl Effort {
    /// The full search ([`SWEEPS`], [`DIE_CLIMB_STEPS`],
    /// [`POLISH_ITERATIONS`]).
    pub const FULL: Effort = Effort {
        sweeps: SWEEPS,
        climb_steps: DIE_CLIMB_STEPS,
        polish_iterations: POLISH_ITERATIONS,
        spread: &DIE_FACTORS,
    };
    /// `--quick`: short probes measure to a few percent, so the search
    /// stops at that: half the sweeps, the spread within a factor of 2 of
    /// the template's die count, two climb steps (one die per channel
    /// either way of the spread's best), no final simplex search (it
    /// refines the valley below the solves' own tolerance).
    pub const QUICK: Effort = Effort {
        sweeps: SWEEPS / 2,
        climb_steps: 2,
        polish_iterations: 0,
        spread: &QUICK_DIE_FACTORS,
    };
}

/// Settings of one fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Leave the write side as the template has it.
    pub read_only: bool,
    /// Seed of every simulation; the fit is deterministic for a given seed.
    pub seed: u64,
    /// Worker threads (the result does not depend on them).
    pub threads: usize,
    /// How hard to search.
    pub effort: Effort,
}

/// Weight of an observation's squared log error: tail latencies are noisy
/// (one run's p99 moves by tens of percent) and count a quarter.
fn weight(metric: &str) -> f64 {
    if metric.contains("p99") || metric.contains("max") {
        0.25
    } else {
        1.0
    }
}

/// Name the candidate is simulated under.
const CANDIDATE: &str = "calibrate-candidate";

/// The candidate's results for `obs`.
fn simulate_all(
    p: &SsdParams,
    obs: &[Observation],
    seed: u64,
    threads: usize,
) -> Result<Vec<RowResult>, FitError> {
    let mut db = PresetDb::builtin();
    db.insert_ssd(CANDIDATE, p.clone())
        .map_err(|e| FitError::Unusable {
            label: "candidate".into(),
            reason: e.to_string(),
        })?;
    let rows: Vec<Row> = obs
        .iter()
        .map(|o| Row {
            id: o.label.clone(),
            source: "calibrate".into(),
            reference: String::new(),
            topology: o.topology(CANDIDATE),
            workload: o.workload.clone(),
            metric: o.metric.clone(),
            value: o.value,
            note: String::new(),
            line: 0,
        })
        .collect();
    let v = validate(&rows, &db, seed, threads, false, &|_, _| {});
    if let Some(f) = v.failed.first() {
        return Err(FitError::Unusable {
            label: f.id.clone(),
            reason: f.reason.clone(),
        });
    }
    Ok(v.rows)
}

/// Σ weight · ln²(simulated / measured).
fn cost(rows: &[RowResult]) -> f64 {
    rows.iter()
        .map(|r| weight(&r.row.metric) * (r.simulated / r.row.value).ln().powi(2))
        .sum()
}

/// A candidate's simulated value of one observation.
fn simulate_one(p: &SsdParams, o: &Observation, seed: u64) -> Result<Option<f64>, FitError> {
    match simulate_all(p, std::slice::from_ref(o), seed, 1) {
        Ok(rows) => Ok(rows.first().map(|r| r.simulated)),
        Err(FitError::Unusable { label, .. }) if label == "candidate" => Ok(None),
        Err(e) => Err(e),
    }
}

/// The search: the current candidate and how many were simulated.
struct Search<'a> {
    obs: &'a [Observation],
    seed: u64,
    threads: usize,
    best: SsdParams,
    /// The template's channel count: dies spread over it.
    channels: u32,
    evaluations: usize,
}

impl Search<'_> {
    /// Solve `f.field` so that the candidate reproduces observation `o`,
    /// the others held: secant steps in log–log space from the current
    /// value, each at most a factor of 4, within the field's range. A
    /// parameter the observation does not depend on (a link-bound
    /// sequential write tells nothing of the program time) stays put.
    fn solve(&mut self, f: &Free, o: &Observation) -> Result<(), FitError> {
        let target = o.value.ln();
        let mut x0 = value(&self.best, f.field).ln();
        self.evaluations += 1;
        let Some(y) = simulate_one(&self.best, o, self.seed)? else {
            return Ok(());
        };
        let mut y0 = y.ln();
        let (mut best_x, mut best_err) = (x0, (y0 - target).abs());
        // The nearest tries on either side of the figure: once both are
        // known, a step that leaves them or finds no slope halves them.
        // Metrics move in steps where the model counts whole things (the
        // spare area's erase blocks per die), and a secant step between two
        // tries on one step has no slope to follow.
        let mut bracket = Bracket::default();
        bracket.note(x0, y0 - target);
        let (lo, hi) = (f.min.ln(), f.max.ln());
        // First probe step: a factor of 2 in the direction of a guess that
        // more of the parameter means more of the metric.
        let mut walk = FlatWalk::new(x0, if y0 < target { 2f64.ln() } else { -(2f64.ln()) });
        let mut x1 = walk.first();
        for _ in 0..SOLVE_STEPS {
            if best_err < SOLVE_TOLERANCE {
                break;
            }
            x1 = x1.clamp(lo, hi);
            let mut p = self.best.clone();
            set(&mut p, f.field, x1.exp());
            let x1_set = value(&p, f.field).ln();
            self.evaluations += 1;
            let Some(y1) = simulate_one(&p, o, self.seed)? else {
                break;
            };
            let y1 = y1.ln();
            if (y1 - target).abs() < best_err {
                (best_x, best_err) = (x1_set, (y1 - target).abs());
            }
            bracket.note(x1_set, y1 - target);
            let slope = (y1 - y0) / (x1_set - x0);
            let secant = (slope.is_finite() && slope.abs() >= 1e-3)
                .then(|| x1_set + ((target - y1) / slope).clamp(-(4f64.ln()), 4f64.ln()));
            (x0, y0) = (x1_set, y1);
            x1 = match (bracket.inside(secant), bracket.middle(), secant) {
                (Some(x), _, _) => x,
                (None, Some(m), _) => m,
                (None, None, Some(x)) => x,
                // Flat and not bracketed: walk; once walked out, the
                // observation does not see this parameter.
                (None, None, None) => match walk.next(x1_set) {
                    Some(x) => x,
                    None => break,
                },
            };
        }
        set(&mut self.best, f.field, best_x.exp());
        Ok(())
    }

    /// A sequential write the candidate still writes faster than measured
    /// is bound by the host write path: start it at the measured rate, solve
    /// it on that figure, and settle the rest around it.
    fn bound_write_path(&mut self, free: &[Free], read_only: bool) -> Result<(), FitError> {
        let Some(o) = find(self.obs, WRITE_PATH.from).cloned() else {
            return Ok(());
        };
        self.evaluations += 1;
        let Some(y) = simulate_one(&self.best, &o, self.seed)? else {
            return Ok(());
        };
        if y <= o.value * (1.0 + WRITE_PATH_EXCESS_PCT / 100.0) {
            return Ok(());
        }
        self.best.write_path_mbps = o.value.clamp(WRITE_PATH.min, WRITE_PATH.max);
        self.solve(&WRITE_PATH, &o)?;
        self.settle(free, read_only, 2)?;
        Ok(())
    }

    /// The continuous parameters solved from the current candidate, then
    /// the yes/no choices, `sweeps` times; returns the total misfit.
    fn settle(&mut self, free: &[Free], read_only: bool, sweeps: usize) -> Result<f64, FitError> {
        for _ in 0..sweeps {
            self.sweep(free)?;
            self.choices(read_only)?;
        }
        self.misfit(&self.best.clone())
    }

    /// The die count, a whole number, is searched outside the continuous
    /// solves: each count of a geometric spread around the template's
    /// ([`DIE_FACTORS`]) is settled, then the best count's whole-step
    /// neighbours while they do better, and the count with the least total
    /// misfit kept. Dies and program time trade against each other (more
    /// dies programming more slowly write as fast), which is why each count
    /// is settled whole rather than judged on one figure, and starts where
    /// it writes as fast as the candidate it came from.
    fn search_dies(
        &mut self,
        free: &[Free],
        read_only: bool,
        cost: f64,
        effort: Effort,
    ) -> Result<Option<SsdParams>, FitError> {
        let start = self.best.clone();
        let template = value(&start, "dies");
        let mut tried = vec![template as u32];
        let mut ranked = Ranked::new(start.clone(), cost);
        for &f in effort.spread {
            let n = self.die_count((template * f).max(1.0));
            if tried.contains(&n) {
                continue;
            }
            tried.push(n);
            let c = self.settle_dies(&start, n, free, read_only)?;
            ranked.offer(&self.best, c);
        }
        // The climb settles each count from its better neighbour, even one
        // the spread settled from further away.
        let mut tried = vec![value(&ranked.best, "dies") as u32];
        for _ in 0..effort.climb_steps {
            let found = value(&ranked.best, "dies");
            let step = if found > f64::from(self.channels) {
                f64::from(self.channels)
            } else {
                1.0
            };
            let around = ranked.best.clone();
            let mut better = false;
            // Two steps either way: a settle can land a count a little off
            // its valley, so one worse neighbour does not end the climb.
            for t in [
                found - step,
                found + step,
                found - 2.0 * step,
                found + 2.0 * step,
            ] {
                let n = self.die_count(t.max(1.0));
                if tried.contains(&n) {
                    continue;
                }
                tried.push(n);
                let c = self.settle_dies(&around, n, free, read_only)?;
                better |= c < ranked.best_cost;
                ranked.offer(&self.best, c);
            }
            if !better {
                break;
            }
        }
        self.best = ranked.best;
        Ok(ranked.runner_up)
    }

    /// The candidate settled, bounded by the host write path and polished:
    /// the last steps of a write-side fit. Returns its total misfit.
    fn finish(&mut self, free: &[Free], read_only: bool, effort: Effort) -> Result<f64, FitError> {
        self.settle(free, read_only, 2)?;
        self.bound_write_path(free, read_only)?;
        self.polish(free, POLISHED, effort.polish_iterations)?;
        self.misfit(&self.best.clone())
    }

    /// The whole die count `total` comes to on the template's channels.
    fn die_count(&self, total: f64) -> u32 {
        let mut p = self.best.clone();
        set_dies(&mut p, total, self.channels);
        value(&p, "dies") as u32
    }

    /// Settle the candidate `from` with `n` dies, its program time scaled
    /// with the count (the same program rate over the drive), within the
    /// program time's range; returns the total misfit.
    fn settle_dies(
        &mut self,
        from: &SsdParams,
        n: u32,
        free: &[Free],
        read_only: bool,
    ) -> Result<f64, FitError> {
        self.best = from.clone();
        set_dies(&mut self.best, f64::from(n), self.channels);
        let scale = value(&self.best, "dies") / value(from, "dies");
        if let Some(f) = free.iter().find(|f| f.field == "program_us") {
            self.best.program_us = (from.program_us * scale).clamp(f.min, f.max);
        }
        let c = self.settle(free, read_only, 2)?;
        Ok(c)
    }

    /// A Nelder–Mead search on the total misfit over `fields`, in log
    /// space within each field's range, from a simplex of the current
    /// candidate and each field moved by [`POLISH_STEP`]. The
    /// per-observation solves stop wherever each parameter meets its own
    /// figure; fields that trade against each other (program time and
    /// spare area both slow writes) can then sit anywhere along a valley of
    /// the total misfit, which a simplex follows and steps along single
    /// fields do not.
    fn polish(
        &mut self,
        free: &[Free],
        fields: &[&str],
        iterations: usize,
    ) -> Result<(), FitError> {
        if iterations == 0 {
            return Ok(());
        }
        let free: Vec<Free> = free
            .iter()
            .filter(|f| fields.contains(&f.field))
            .copied()
            .collect();
        let x0: Vec<f64> = free
            .iter()
            .map(|f| value(&self.best, f.field).ln())
            .collect();
        let mut simplex = vec![(self.misfit(&self.best.clone())?, x0.clone())];
        for i in 0..free.len() {
            let mut x = x0.clone();
            x[i] += POLISH_STEP.ln();
            simplex.push((self.misfit_at(&free, &x)?, x));
        }
        for _ in 0..iterations {
            simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
            self.nelder_mead_step(&free, &mut simplex)?;
        }
        simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.best = self.at(&free, &simplex[0].1);
        Ok(())
    }

    /// One Nelder–Mead step on `simplex` (sorted best first): reflect the
    /// worst vertex through the others' centroid, expand, contract or
    /// shrink towards the best.
    fn nelder_mead_step(
        &mut self,
        free: &[Free],
        simplex: &mut [(f64, Vec<f64>)],
    ) -> Result<(), FitError> {
        let n = simplex.len() - 1;
        let centroid: Vec<f64> = (0..free.len())
            .map(|i| simplex[..n].iter().map(|v| v.1[i]).sum::<f64>() / n as f64)
            .collect();
        let along = |t: f64, worst: &[f64]| -> Vec<f64> {
            centroid
                .iter()
                .zip(worst)
                .map(|(c, w)| c + t * (c - w))
                .collect()
        };
        let worst = simplex[n].1.clone();
        let r = along(1.0, &worst);
        let fr = self.misfit_at(free, &r)?;
        if fr < simplex[0].0 {
            let e = along(2.0, &worst);
            let fe = self.misfit_at(free, &e)?;
            simplex[n] = if fe < fr { (fe, e) } else { (fr, r) };
        } else if fr < simplex[n - 1].0 {
            simplex[n] = (fr, r);
        } else {
            let c = along(-0.5, &worst);
            let fc = self.misfit_at(free, &c)?;
            if fc < simplex[n].0 {
                simplex[n] = (fc, c);
            } else {
                let best = simplex[0].1.clone();
                for v in simplex.iter_mut().skip(1) {
                    let x: Vec<f64> = best.iter().zip(&v.1).map(|(b, x)| (b + x) / 2.0).collect();
                    *v = (self.misfit_at(free, &x)?, x);
                }
            }
        }
        Ok(())
    }

    /// The current candidate with `free`'s fields at `exp(x)`, each within
    /// its range.
    fn at(&self, free: &[Free], x: &[f64]) -> SsdParams {
        let mut p = self.best.clone();
        for (f, v) in free.iter().zip(x) {
            set(&mut p, f.field, v.exp().clamp(f.min, f.max));
        }
        p
    }

    /// The total misfit of [`Self::at`].
    fn misfit_at(&mut self, free: &[Free], x: &[f64]) -> Result<f64, FitError> {
        let p = self.at(free, x);
        self.misfit(&p)
    }

    /// One Gauss–Seidel sweep: each free parameter solved on its own
    /// observation, in [`FREE`]'s order.
    /// A field listed more than once is solved on the first of its
    /// observations that depends on it.
    fn sweep(&mut self, free: &[Free]) -> Result<(), FitError> {
        let mut solved: Vec<&str> = Vec::new();
        for (i, f) in free.iter().enumerate() {
            if solved.contains(&f.field) {
                continue;
            }
            let Some(o) = find(self.obs, f.from).cloned() else {
                continue;
            };
            let fallback = free[i + 1..].iter().any(|g| g.field == f.field);
            if fallback && !self.depends(f, &o)? {
                continue;
            }
            self.solve(f, &o)?;
            solved.push(f.field);
        }
        Ok(())
    }

    /// Whether observation `o` moves (by [`DEPENDS_PCT`] or more) when
    /// `f.field` moves by a quarter.
    fn depends(&mut self, f: &Free, o: &Observation) -> Result<bool, FitError> {
        let mut p = self.best.clone();
        let v = value(&p, f.field);
        set(&mut p, f.field, (v * 1.25).clamp(f.min, f.max));
        self.evaluations += 2;
        let (Some(a), Some(b)) = (
            simulate_one(&self.best, o, self.seed)?,
            simulate_one(&p, o, self.seed)?,
        ) else {
            return Ok(false);
        };
        Ok((b / a - 1.0).abs() * 100.0 >= DEPENDS_PCT)
    }

    /// The total misfit of a candidate over every observation.
    fn misfit(&mut self, p: &SsdParams) -> Result<f64, FitError> {
        self.evaluations += 1;
        Ok(match simulate_all(p, self.obs, self.seed, self.threads) {
            Ok(rows) => cost(&rows),
            Err(FitError::Unusable { label, .. }) if label == "candidate" => f64::INFINITY,
            Err(e) => return Err(e),
        })
    }

    /// Each yes/no choice flipped, kept when the whole fit is better.
    fn choices(&mut self, read_only: bool) -> Result<(), FitError> {
        if read_only {
            return Ok(());
        }
        let mut best_cost = self.misfit(&self.best.clone())?;
        for flip in [
            |p: &mut SsdParams| p.gc_pacing = !p.gc_pacing,
            |p: &mut SsdParams| p.power_loss_protection = !p.power_loss_protection,
        ] {
            let mut p = self.best.clone();
            flip(&mut p);
            let c = self.misfit(&p)?;
            if c < best_cost {
                (self.best, best_cost) = (p, c);
            }
        }
        Ok(())
    }
}

/// The observation of probe `label`: the probe's own, or a published
/// figure measured the same way (same pattern, block size, read share, sync
/// writes and metric) at the queue depth nearer this probe's than any other
/// probe's of that kind, so datasheet rows (`--from`, often at QD 32 x 4
/// workers) feed the same solves as the probe suite.
pub fn find<'a>(obs: &'a [Observation], label: &str) -> Option<&'a Observation> {
    if let Some(o) = obs.iter().find(|o| o.label == label) {
        return Some(o);
    }
    let probe = PROBES.iter().find(|p| p.label == label)?;
    let want = Workload::parse(probe.workload).ok()?;
    obs.iter().find(|o| {
        let Ok(w) = Workload::parse(&o.workload) else {
            return false;
        };
        o.metric == probe.metric
            && same_kind(&w, &want)
            && nearest_probe(&w, &o.metric) == Some(label)
    })
}

/// Two workloads are the same test but for the queue depth.
fn same_kind(a: &Workload, b: &Workload) -> bool {
    a.rw == b.rw
        && a.bssplit == b.bssplit
        && (a.rwmixread == b.rwmixread || !matches!(a.rw, Rw::RandRw | Rw::Rw))
        && a.fsync == b.fsync
}

/// The probe of `w`'s kind and `metric` whose total queue depth is nearest
/// `w`'s (in ratio).
fn nearest_probe(w: &Workload, metric: &str) -> Option<&'static str> {
    let depth = |w: &Workload| f64::from((w.iodepth * w.numjobs).max(1)).ln();
    PROBES
        .iter()
        .filter(|p| p.metric == metric)
        .filter_map(|p| Workload::parse(p.workload).ok().map(|pw| (p.label, pw)))
        .filter(|(_, pw)| same_kind(w, pw))
        .min_by(|(_, a), (_, b)| {
            (depth(a) - depth(w))
                .abs()
                .total_cmp(&(depth(b) - depth(w)).abs())
        })
        .map(|(l, _)| l)
}

/// Starting point: the template, with the link at the sequential read
/// rate when one was measured (it sets the link almost alone).
fn first_guess(mut p: SsdParams, obs: &[Observation]) -> SsdParams {
    if let Some(o) = find(obs, "read-128k-qd32") {
        p.link_mbps = (o.value * 1.02).clamp(50.0, 20_000.0);
    }
    p
}

/// The best settled candidate of the die search, and the best one with
/// another die count.
struct Ranked {
    best: SsdParams,
    best_cost: f64,
    runner_up: Option<SsdParams>,
    runner_up_cost: f64,
}

impl Ranked {
    fn new(start: SsdParams, cost: f64) -> Self {
        Ranked {
            best: start,
            best_cost: cost,
            runner_up: None,
            runner_up_cost: f64::INFINITY,
        }
    }

    /// Rank candidate `p` of total misfit `cost`: a new best passes the
    /// old one down when their die counts differ.
    fn offer(&mut self, p: &SsdParams, cost: f64) {
        let dies = |q: &SsdParams| value(q, "dies");
        if cost < self.best_cost {
            if dies(p) != dies(&self.best) {
                let old = std::mem::replace(&mut self.best, p.clone());
                (self.runner_up, self.runner_up_cost) = (Some(old), self.best_cost);
            } else {
                self.best = p.clone();
            }
            self.best_cost = cost;
        } else if cost < self.runner_up_cost && dies(p) != dies(&self.best) {
            (self.runner_up, self.runner_up_cost) = (Some(p.clone()), cost);
        }
    }
}

/// Die counts tried, as factors of the template's: from a quarter (a small
/// drive on few packages) to four times (a large one on many).
const DIE_FACTORS: [f64; 8] = [0.25, 0.375, 0.5, 0.75, 1.5, 2.0, 3.0, 4.0];
/// The spread of a `--quick` fit: the die counts within a factor of 2.
const QUICK_DIE_FACTORS: [f64; 4] = [0.5, 0.75, 1.5, 2.0];

/// How much an observation must move (%) when a parameter moves by a
/// quarter for the parameter to be solved on it rather than on its
/// fallback: a link-bound write moves by nothing, a flash-bound one by
/// about a fifth.
const DEPENDS_PCT: f64 = 2.0;

/// Parameters the final Nelder–Mead search moves together: the two the write
/// figures trade against each other.
const POLISHED: &[&str] = &["program_us", "spare_pct"];

/// The Nelder–Mead search's first simplex (each field moved by a factor of
/// 1.25 from the candidate) and its steps (each one to four whole-probe-
/// suite runs; 25 steps of a two-field simplex narrow it far below the
/// solves' 0.3 % tolerance).
const POLISH_STEP: f64 = 1.25;
const POLISH_ITERATIONS: usize = 25;

/// Whole steps the die search takes from the spread's best count at most
/// (the spread's neighbouring factors are at most 1.5 apart, so a few steps
/// of a die per channel reach between them).
const DIE_CLIMB_STEPS: usize = 6;

/// The narrowest bracket a solve halves (log of a 2 % step in the
/// parameter).
const BRACKET_FLOOR: f64 = 0.02;

/// Doublings a solve walks past its start, against its first guess, while
/// the metric stays flat (beyond the first step back): a factor of 8 in all.
const FLAT_WALK: usize = 2;

/// Secant steps per solve.
const SOLVE_STEPS: usize = 8;
/// A solve stops within 0.3 % (|ln| < 0.003) of its observation: below the
/// run-to-run spread of any measurement.
const SOLVE_TOLERANCE: f64 = 0.003;
/// Gauss–Seidel sweeps: parameters couple (the steady write rate depends on
/// both spare area and program time), so each is solved again after the
/// others moved.
const SWEEPS: usize = 6;

/// Fit `start` to `obs` as `opts` says. Deterministic for a given seed.
pub fn fit(
    start: SsdParams,
    obs: &[Observation],
    opts: &FitOptions,
    progress: &dyn Fn(f64),
) -> Result<Fit, FitError> {
    let FitOptions {
        read_only,
        seed,
        threads,
        effort,
    } = *opts;
    let obs: Vec<Observation> = obs
        .iter()
        .filter(|o| o.value.is_finite() && o.value > 0.0)
        .cloned()
        .collect();
    if obs.is_empty() {
        return Err(FitError::Empty);
    }
    let free: Vec<Free> = FREE
        .iter()
        .filter(|f| !(read_only && WRITE_FIELDS.contains(&f.field)))
        .copied()
        .collect();
    let mut s = Search {
        obs: &obs,
        seed,
        threads,
        channels: start.channels,
        best: first_guess(start, &obs),
        evaluations: 0,
    };
    let cost = s.settle(&free, read_only, effort.sweeps)?;
    progress(0.3);
    if !read_only {
        // Two die counts can settle almost alike (fewer dies programming
        // faster write as fast): the best and the best other count are
        // each finished, and the one that then fits better is kept.
        let runner_up = s.search_dies(&free, read_only, cost, effort)?;
        let first = s.finish(&free, read_only, effort)?;
        if let Some(other) = runner_up {
            let kept = std::mem::replace(&mut s.best, other);
            if s.finish(&free, read_only, effort)? >= first {
                s.best = kept;
            }
        }
    }
    progress(1.0);
    let rows = simulate_all(&s.best, &obs, seed, threads)?;
    let residuals = obs
        .iter()
        .zip(&rows)
        .map(|(o, r)| Residual {
            obs: o.clone(),
            fitted: r.simulated,
        })
        .collect();
    Ok(Fit {
        params: s.best,
        residuals,
        evaluations: s.evaluations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_die_search_keeps_the_best_other_count_as_runner_up() {
        let with = |dies: f64, program_us: f64| {
            let mut p = template(480.0);
            set_dies(&mut p, dies, 8);
            p.program_us = program_us;
            p
        };
        let mut r = Ranked::new(with(32.0, 1300.0), 1.0);
        assert!(r.runner_up.is_none());
        // A better count passes the old best down.
        r.offer(&with(16.0, 650.0), 0.5);
        assert_eq!(value(&r.best, "dies"), 16.0);
        assert_eq!(r.runner_up.as_ref().map(|p| value(p, "dies")), Some(32.0));
        // A better settle of the same count replaces the best only.
        r.offer(&with(16.0, 700.0), 0.2);
        assert_eq!(r.best.program_us, 700.0);
        assert_eq!(r.runner_up.as_ref().map(|p| value(p, "dies")), Some(32.0));
        // A worse one of the best's count is no runner-up; one of another
        // count better than the runner-up is.
        r.offer(&with(16.0, 900.0), 0.3);
        assert_eq!(r.runner_up.as_ref().map(|p| value(p, "dies")), Some(32.0));
        r.offer(&with(24.0, 975.0), 0.4);
        assert_eq!(r.runner_up.as_ref().map(|p| value(p, "dies")), Some(24.0));
        assert_eq!((r.best_cost, r.runner_up_cost), (0.2, 0.4));
    }

    #[test]
    fn every_listed_template_resolves_and_no_other_name_does() {
        for name in TEMPLATES {
            assert!(template_named(name, 480.0).is_some(), "{name}");
        }
        assert!(template_named("qlc", 480.0).is_none());
    }

    #[test]
    fn a_flat_walk_turns_back_once_then_doubles_then_stops() {
        let d = 2f64.ln();
        let mut w = FlatWalk::new(0.0, -d);
        assert_eq!(w.first(), -d);
        assert_eq!(w.next(-d), Some(d));
        assert_eq!(w.next(d), Some(2.0 * d));
        assert_eq!(w.next(2.0 * d), Some(3.0 * d));
        assert_eq!(w.next(3.0 * d), None);
    }

    #[test]
    fn an_observation_keeps_the_host_its_row_was_measured_on() {
        assert_eq!(
            Observation::host_of("host[profile=host2020](pm9a3)").as_deref(),
            Some("host[profile=host2020]")
        );
        assert_eq!(Observation::host_of("s3500-800"), None);
        assert_eq!(Observation::host_of("raid0(2*x25e)"), None);
        let o = Observation {
            label: "x".into(),
            workload: "rw=read".into(),
            metric: "iops".into(),
            value: 1.0,
            host: Some("host[profile=host2020]".into()),
        };
        assert_eq!(o.topology("d"), "host[profile=host2020](d)");
    }
}
