//! Simulating published measurements (`raidlab validate`, `raidlab reproduce`).
//!
//! Every row names a topology, a workload and a metric. Rows that share a
//! topology and workload share one simulation. Rows whose workload gives no
//! `runtime` are measured over a [`WINDOW`] taken once the run is in steady
//! state (the simulator's default, docs/workloads.md), so caches, queues and
//! garbage collection have settled.

use crate::analytic::{self, Expectation};
use raidlab_core::preset::PresetDb;
use raidlab_core::published::Row;
use raidlab_core::result::RunResult;
use raidlab_core::topology::resolve;
use raidlab_core::units::{Ns, SEC};
use raidlab_core::workload::Workload;
use raidlab_sim::simulate;
use std::collections::BTreeMap;

/// Measurement window given to rows without `runtime`.
pub const WINDOW: Ns = 3 * SEC;

/// One row, simulated.
#[derive(Debug, Clone, PartialEq)]
pub struct RowResult {
    /// The published row.
    pub row: Row,
    /// Simulated value of the row's metric.
    pub simulated: f64,
    /// 100 · (simulated − published) / published.
    pub error_pct: f64,
    /// The saturated component, if any.
    pub bottleneck: Option<String>,
    /// Whether the simulation's measurement window was steady.
    pub steady: bool,
    /// The classic analytic expectation of the metric (T/C × D × one
    /// drive), where the model applies ([`crate::analytic`]).
    pub analytic: Option<f64>,
}

/// A row that could not be simulated, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// Row id.
    pub id: String,
    /// One-line reason.
    pub reason: String,
}

/// Summary statistics of |error|.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ErrorStats {
    /// Rows simulated.
    pub rows: usize,
    /// Median |error| %.
    pub median: f64,
    /// 90th percentile |error| % (nearest rank).
    pub p90: f64,
    /// Rows within ±25 %.
    pub within_25pct: usize,
}

impl ErrorStats {
    /// Statistics over a set of results.
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a RowResult>) -> ErrorStats {
        let mut e: Vec<f64> = rows.into_iter().map(|r| r.error_pct.abs()).collect();
        if e.is_empty() {
            return ErrorStats::default();
        }
        e.sort_by(f64::total_cmp);
        let rank = |q: f64| e[((q * e.len() as f64).ceil() as usize).clamp(1, e.len()) - 1];
        ErrorStats {
            rows: e.len(),
            median: rank(0.5),
            p90: rank(0.9),
            within_25pct: e.iter().filter(|x| **x <= 25.0).count(),
        }
    }
}

/// The outcome of validating a set of rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Validation {
    /// Simulated rows, in input order.
    pub rows: Vec<RowResult>,
    /// Rows that could not be simulated.
    pub failed: Vec<Failed>,
}

impl Validation {
    /// Error statistics over all simulated rows.
    pub fn stats(&self) -> ErrorStats {
        ErrorStats::of(&self.rows)
    }
}

/// The workload a row is simulated with: its own, or with validate's
/// window (a trace replays to its end instead).
pub fn row_workload(row: &Row) -> Result<Workload, raidlab_core::Error> {
    let mut w = Workload::parse(&row.workload)?;
    if w.runtime.is_none() && w.replay.is_none() {
        w.runtime = Some(WINDOW);
    }
    Ok(w)
}

/// One simulation of a row, and its analytic expectation when there is one.
type Outcome = Result<(RunResult, Option<Expectation>), String>;

fn run_one(row: &Row, db: &PresetDb, seed: u64, with_analytic: bool) -> Outcome {
    let t = resolve(&row.topology, db).map_err(|e| e.to_string())?;
    let w = row_workload(row).map_err(|e| e.to_string())?;
    let r = simulate(&t, &w, seed).map_err(|e| e.to_string())?;
    let e = if with_analytic {
        analytic::expect(&t, &w, seed)
            .transpose()
            .map_err(|e| e.to_string())?
    } else {
        None
    };
    Ok((r, e))
}

/// Simulate `rows` on `threads` threads; `progress(done, total)` is called
/// as simulations finish. Results do not depend on the thread count. With
/// `with_analytic`, rows the classic model covers also get its expectation
/// (one more, single-drive, simulation each); reports want it, `validate`
/// does not.
pub fn validate(
    rows: &[Row],
    db: &PresetDb,
    seed: u64,
    threads: usize,
    with_analytic: bool,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Validation {
    // One simulation per distinct (topology, workload).
    let mut keys: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut jobs: Vec<&Row> = Vec::new();
    for r in rows {
        keys.entry((r.topology.clone(), r.workload.clone()))
            .or_insert_with(|| {
                jobs.push(r);
                jobs.len() - 1
            });
    }
    let results = raidlab_core::par::map(jobs.len(), threads, progress, |i| {
        run_one(jobs[i], db, seed, with_analytic)
    });
    let mut v = Validation::default();
    for r in rows {
        let i = keys[&(r.topology.clone(), r.workload.clone())];
        match &results[i] {
            Err(reason) => v.failed.push(Failed {
                id: r.id.clone(),
                reason: reason.clone(),
            }),
            Ok((res, expectation)) => {
                let sim = res.metric(&r.metric).unwrap_or(f64::NAN);
                if !sim.is_finite() || sim <= 0.0 {
                    v.failed.push(Failed {
                        id: r.id.clone(),
                        reason: format!("the simulation produced no {}", r.metric),
                    });
                    continue;
                }
                v.rows.push(RowResult {
                    row: r.clone(),
                    simulated: sim,
                    error_pct: 100.0 * (sim - r.value) / r.value,
                    bottleneck: res.components.iter().find(|c| c.bottleneck).map(|c| {
                        format!("{} ({})", c.name, c.resource.clone().unwrap_or_default())
                    }),
                    steady: res.sim.steady.as_ref().is_some_and(|s| s.reached),
                    analytic: expectation.as_ref().and_then(|e| e.metric(&r.metric)),
                });
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_use_nearest_rank() {
        let mk = |e: f64| RowResult {
            row: Row {
                id: String::new(),
                source: String::new(),
                reference: String::new(),
                topology: String::new(),
                workload: String::new(),
                metric: "iops".into(),
                value: 1.0,
                note: String::new(),
                line: 0,
            },
            simulated: 1.0,
            error_pct: e,
            bottleneck: None,
            steady: true,
            analytic: None,
        };
        let rows: Vec<RowResult> = [-50.0, 10.0, 5.0, -1.0, 30.0, 2.0, 3.0, -4.0, 6.0, 7.0]
            .into_iter()
            .map(mk)
            .collect();
        let s = ErrorStats::of(&rows);
        assert_eq!(s.rows, 10);
        assert_eq!(s.median, 5.0);
        assert_eq!(s.p90, 30.0);
        assert_eq!(s.within_25pct, 8);
    }
}
