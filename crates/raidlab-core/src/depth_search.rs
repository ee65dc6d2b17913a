//! fio's `latency_target`: a job searches for the deepest queue at which
//! its I/Os keep to a latency, then measures that depth alone.
//!
//! The search follows fio's (io_u.c `lat_target_*`). The job starts at
//! queue depth 1 with `iodepth` as the depth to beat. Every completion
//! whose latency (issue to completion) is above `latency_target` fails:
//! with `latency_percentile` 100 (the default) at once, lowering the depth
//! (to at depth 1, the job ends in error, `ETIMEDOUT`: no depth meets the
//! target); below 100 it is counted. Once `latency_window` has passed
//! since the cycle began (fio's default 0: at every completion), the
//! cycle's share of I/Os within the target decides: at or above
//! `latency_percentile` the depth rises (doubling until a depth has
//! failed, then halfway to the lowest depth that failed), below it the
//! depth falls halfway to the highest depth that met it. A depth that
//! meets the target three cycles in a row one below the depth that failed
//! raises that bound by one. Every fall waits for the I/Os in flight to
//! complete ("quiesce") before the next cycle starts. When a success
//! leaves the depth where it was, the search has converged: unless
//! `latency_run` is set, the job waits for its I/Os in flight, clears its
//! statistics and restarts its clock (fio's `reset_all_stats`), and ends
//! at the next success that leaves the depth alone, so that what it
//! reports was measured at that depth only.
//!
//! Two choices of this model where fio's loop has no single answer:
//! completions that arrive while a job quiesces are counted in its
//! statistics but not in the search (they belong to the depth it left),
//! and a cycle's check happens at each completion, where fio checks once
//! per pass of its submission loop.

use crate::error::{Error, Result};
use crate::guard::{format_duration_us, format_time, latency, Tripped};
use crate::units::Ns;
use serde::Serialize;

/// The keys [`LatencyTarget::set`] reads.
pub const KEYS: &[&str] = &[
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
];

/// Longest `latency_window`: an hour, as the other time options.
const MAX_WINDOW_NS: Ns = 3_600_000_000_000;

/// A job's `latency_target` options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyTarget {
    /// `latency_target=`, ns (`None`: no search).
    pub target_ns: Option<Ns>,
    /// `latency_window=`, ns (fio's default 0).
    pub window_ns: Ns,
    /// `latency_percentile=`: the share of a window's I/Os that must keep
    /// to the target, % (fio's default 100).
    pub percentile: f64,
    /// `latency_run`: keep adjusting the depth for the whole run instead
    /// of ending once it has converged.
    pub keep_running: bool,
}

impl Default for LatencyTarget {
    fn default() -> Self {
        LatencyTarget {
            target_ns: None,
            window_ns: 0,
            percentile: 100.0,
            keep_running: false,
        }
    }
}

impl LatencyTarget {
    /// Whether the job searches (a `latency_target` is given).
    pub fn any(&self) -> bool {
        self.target_ns.is_some()
    }

    /// Parse one of [`KEYS`] into `self`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<()> {
        let bad = |why: &str| Error::Workload(format!("{key}={v}: {why}"));
        match key {
            "latency_target" => {
                self.target_ns = Some(latency(v).ok_or_else(|| {
                    bad("give whole microseconds above 0 and up to an hour (microseconds unless a unit is given: 500, 10ms, 1s)")
                })?)
            }
            "latency_window" => {
                self.window_ns = if v == "0" {
                    0
                } else {
                    latency(v)
                        .filter(|&n| n <= MAX_WINDOW_NS)
                        .ok_or_else(|| {
                            bad("give whole microseconds from 0 to an hour (microseconds unless a unit is given: 500000, 500ms, 1s)")
                        })?
                }
            }
            "latency_percentile" => {
                self.percentile = v
                    .parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && *p <= 100.0)
                    .ok_or_else(|| bad("expected a percentage above 0 and at most 100"))?
            }
            "latency_run" => {
                self.keep_running = match v {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad("expected 0 or 1 (a bare line in a job file)")),
                }
            }
            _ => return Err(bad("not a latency_target option")),
        }
        Ok(())
    }

    /// The options as fio writes them, only those given beside a target.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let Some(t) = self.target_ns else {
            return Vec::new();
        };
        let mut v = vec![("latency_target".to_string(), format_duration_us(t))];
        if self.window_ns > 0 {
            v.push((
                "latency_window".to_string(),
                format_duration_us(self.window_ns),
            ));
        }
        if self.percentile != 100.0 {
            v.push((
                "latency_percentile".to_string(),
                self.percentile.to_string(),
            ));
        }
        if self.keep_running {
            v.push(("latency_run".to_string(), "1".to_string()));
        }
        v
    }
}

/// What a job does after a completion the search has seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Go on at [`DepthSearch::depth`] (which may have risen).
    Go,
    /// The depth fell: issue nothing until every I/O in flight is back,
    /// then call [`DepthSearch::resume`].
    Quiesce,
    /// The search has converged: once every I/O in flight is back, clear
    /// the job's statistics, restart its clock, and call
    /// [`DepthSearch::resume`].
    Reset,
    /// Measured at the depth found: the job ends.
    Done,
    /// No depth meets the target: the job ends in error.
    Fatal(Tripped),
}

/// One job's search (fio's `latency_qd`, `_low`, `_high`).
#[derive(Debug, Clone)]
pub struct DepthSearch {
    opts: LatencyTarget,
    target: Ns,
    iodepth: u32,
    qd: u32,
    low: u32,
    high: u32,
    /// Successes in a row one below `high`.
    stable: u32,
    /// The search has converged and the job measures its depth.
    end_run: bool,
    /// The cycle: its start, and its I/Os and failures so far.
    cycle_start: Ns,
    ios: u64,
    failed: u64,
    /// Waiting for the I/Os in flight (completions not counted).
    quiet: bool,
    /// The job has ended (measured, or in error): what completes after
    /// is not looked at.
    over: bool,
}

impl DepthSearch {
    /// A search for a job of queue depth `iodepth` (fio's
    /// `lat_target_init`), its first cycle from `now`; `None` without a
    /// target.
    pub fn new(opts: &LatencyTarget, iodepth: u32, now: Ns) -> Option<DepthSearch> {
        let target = opts.target_ns?;
        assert!(iodepth >= 1, "a job keeps at least one I/O in flight");
        Some(DepthSearch {
            opts: *opts,
            target,
            iodepth,
            qd: 1,
            low: 1,
            high: iodepth,
            stable: 0,
            end_run: false,
            cycle_start: now,
            ios: 0,
            failed: 0,
            quiet: false,
            over: false,
        })
    }

    /// The depth the job keeps now.
    pub fn depth(&self) -> u32 {
        self.qd
    }

    /// Whether the search has ended its job (measured, or in error).
    pub fn over(&self) -> bool {
        self.over
    }

    /// Start again from depth 1 at `now` unless converged (fio's
    /// `lat_target_reset`, at the end of `ramp_time`).
    pub fn restart(&mut self, now: Ns) {
        if !self.end_run {
            *self = DepthSearch::new(&self.opts, self.iodepth, now).expect("a target is set");
        }
    }

    /// The job's I/Os in flight are all back after [`Step::Quiesce`] or
    /// [`Step::Reset`]: a new cycle starts at `now`.
    pub fn resume(&mut self, now: Ns) {
        self.quiet = false;
        self.new_cycle(now);
    }

    /// Whether the search waits for the job's I/Os in flight.
    pub fn quiescing(&self) -> bool {
        self.quiet
    }

    /// An I/O of the job (a read or not, `len` bytes at `offset`) completed
    /// at `now` after `lat` ns.
    pub fn completed(&mut self, read: bool, offset: u64, len: u64, lat: Ns, now: Ns) -> Step {
        if self.quiet || self.over {
            return Step::Go;
        }
        let step = self.judge(read, offset, len, lat, now);
        self.over = matches!(step, Step::Done | Step::Fatal(_));
        step
    }

    /// [`DepthSearch::completed`] for a job still searching.
    fn judge(&mut self, read: bool, offset: u64, len: u64, lat: Ns, now: Ns) -> Step {
        self.ios += 1;
        if lat > self.target {
            if self.opts.percentile < 100.0 {
                self.failed += 1;
            } else if self.qd == 1 {
                return Step::Fatal(Tripped::LatencyTarget {
                    read,
                    latency_ns: lat,
                    target_ns: self.target,
                    offset,
                    len,
                });
            } else {
                self.fall();
                return Step::Quiesce;
            }
        }
        self.check(now)
    }

    /// fio's `lat_target_check`: at the end of a window, the cycle's share
    /// of I/Os within the target decides.
    fn check(&mut self, now: Ns) -> Step {
        if now - self.cycle_start < self.opts.window_ns {
            return Step::Go;
        }
        let within = (self.ios - self.failed) as f64 / self.ios as f64 * 100.0;
        if within >= self.opts.percentile {
            self.success(now)
        } else if self.qd == 1 {
            // fio stays at depth 1, in the same cycle.
            Step::Go
        } else {
            self.fall();
            Step::Quiesce
        }
    }

    /// fio's `__lat_target_failed` above depth 1: halfway down to the
    /// highest depth that met the target.
    fn fall(&mut self) {
        debug_assert!(self.qd > 1, "depth 1 does not fall");
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.stable = 0;
        self.quiet = true;
        debug_assert!(
            (1..=self.iodepth).contains(&self.qd) && self.low >= 1,
            "the depth stays within the queue: {self:?}"
        );
    }

    /// fio's `lat_target_success`.
    fn success(&mut self, now: Ns) -> Step {
        let was = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            // One below a depth that failed: after three such successes
            // that depth is tried again.
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.iodepth {
            (self.qd + self.high) / 2
        } else {
            self.qd * 2
        }
        .min(self.iodepth);
        debug_assert!(self.qd >= was, "a success never lowers the depth: {self:?}");
        if !self.opts.keep_running && self.qd == was {
            if self.end_run {
                return Step::Done;
            }
            self.end_run = true;
            self.quiet = true;
            return Step::Reset;
        }
        self.new_cycle(now);
        Step::Go
    }

    fn new_cycle(&mut self, now: Ns) {
        self.cycle_start = now;
        self.ios = 0;
        self.failed = 0;
    }

    /// What the search of job `job` found, for its report.
    pub fn found(&self, job: u32) -> Found {
        Found {
            job,
            target_ns: self.target,
            window_ns: self.opts.window_ns,
            percentile: self.opts.percentile,
            depth: self.qd,
        }
    }
}

/// A job's `latency_target` search as a run reports it (fio's "latency :
/// target=…, window=…, percentile=…, depth=…").
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Found {
    /// The job (0-based, over the phase's jobs in order).
    pub job: u32,
    /// The target, ns.
    pub target_ns: Ns,
    /// The window, ns.
    pub window_ns: Ns,
    /// The percentile, %.
    pub percentile: f64,
    /// The depth the job ended at.
    pub depth: u32,
}

impl std::fmt::Display for Found {
    /// As fio prints it: `target=500us, window=0us, percentile=100.00%,
    /// depth=12`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let time = |ns: Ns| {
            if ns == 0 {
                "0us".to_string()
            } else {
                format_time(ns)
            }
        };
        write!(
            f,
            "target={}, window={}, percentile={:.2}%, depth={}",
            time(self.target_ns),
            time(self.window_ns),
            self.percentile,
            self.depth
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const US: Ns = 1000;

    fn opts(kv: &[(&str, &str)]) -> Result<LatencyTarget> {
        let mut t = LatencyTarget::default();
        for (k, v) in kv {
            t.set(k, v)?;
        }
        Ok(t)
    }

    #[test]
    fn options_read_as_fio_reads_them_and_write_back() {
        let t = opts(&[
            ("latency_target", "500"),
            ("latency_window", "1s"),
            ("latency_percentile", "99.9"),
            ("latency_run", "1"),
        ])
        .unwrap();
        assert_eq!(t.target_ns, Some(500 * US));
        assert_eq!(t.window_ns, 1_000_000_000);
        assert_eq!(t.percentile, 99.9);
        assert!(t.keep_running);
        let kv = t.pairs();
        let back: Vec<(&str, &str)> = kv.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(opts(&back).unwrap(), t);
        assert!(opts(&[("latency_window", "1s")])
            .unwrap()
            .pairs()
            .is_empty());
        for bad in [
            ("latency_target", "0"),
            ("latency_target", "fast"),
            ("latency_target", "2h"),
            ("latency_window", "-1"),
            ("latency_percentile", "0"),
            ("latency_percentile", "100.5"),
            ("latency_percentile", "NaN"),
            ("latency_run", "yes"),
        ] {
            let e = opts(&[bad]).unwrap_err().to_string();
            assert!(e.contains(bad.0), "{bad:?}: {e}");
        }
    }

    /// Feed a search completions whose latency `lat` gives for the depth
    /// at hand, one a µs; the depths it passes through and how it ended
    /// (`Go`: still searching after a second).
    fn drive(t: &LatencyTarget, iodepth: u32, mut lat: impl FnMut(u32) -> Ns) -> (Vec<u32>, Step) {
        let mut s = DepthSearch::new(t, iodepth, 0).unwrap();
        let mut seen = vec![s.depth()];
        for now in 1..1_000_000u64 {
            let step = s.completed(true, 0, 4096, lat(s.depth()), now * US);
            match step {
                Step::Go => {}
                Step::Quiesce | Step::Reset => s.resume(now * US),
                Step::Done | Step::Fatal(_) => return (seen, step),
            }
            if seen.last() != Some(&s.depth()) {
                seen.push(s.depth());
            }
        }
        (seen, Step::Go)
    }

    #[test]
    fn the_search_doubles_then_bisects_to_the_deepest_depth_within_the_target() {
        // Latency 100 µs per outstanding I/O: depth 5 is the deepest
        // within 500 µs.
        let t = opts(&[("latency_target", "500")]).unwrap();
        let (seen, end) = drive(&t, 64, |qd| qd as Ns * 100 * US);
        assert_eq!(end, Step::Done);
        assert_eq!(seen[..5], [1, 2, 4, 8, 6]);
        assert_eq!(*seen.last().unwrap(), 5, "{seen:?}");
    }

    #[test]
    fn a_target_met_at_every_depth_ends_at_the_jobs_iodepth() {
        let t = opts(&[("latency_target", "1s")]).unwrap();
        let (seen, end) = drive(&t, 32, |_| 10 * US);
        assert_eq!((seen, end), (vec![1, 2, 4, 8, 16, 32], Step::Done));
    }

    #[test]
    fn a_target_missed_at_depth_1_ends_the_job_in_error() {
        let t = opts(&[("latency_target", "50")]).unwrap();
        let (_, end) = drive(&t, 8, |_| 80 * US);
        let Step::Fatal(tripped) = end else {
            panic!("{end:?}")
        };
        assert_eq!(tripped.errno(), 110);
        assert!(
            tripped.to_string().contains("latency_target=50us"),
            "{tripped}"
        );
    }

    /// Every tenth I/O slow (900 µs), the rest 10 µs: 90 % within 500 µs.
    fn one_in_ten_slow() -> impl FnMut(u32) -> Ns {
        let mut k = 0u64;
        move |_| {
            k += 1;
            if k.is_multiple_of(10) {
                900 * US
            } else {
                10 * US
            }
        }
    }

    #[test]
    fn below_100_percent_a_window_judges_by_its_share() {
        let t = opts(&[
            ("latency_target", "500"),
            ("latency_window", "100"),
            ("latency_percentile", "85"),
        ])
        .unwrap();
        let (seen, end) = drive(&t, 16, one_in_ten_slow());
        assert_eq!((seen, end), (vec![1, 2, 4, 8, 16], Step::Done));
        // Asked for 95 %, depth 1 misses too: fio stays there, without
        // the error a 100 % target raises.
        let strict = LatencyTarget {
            percentile: 95.0,
            ..t
        };
        let (seen, end) = drive(&strict, 16, one_in_ten_slow());
        assert_eq!((seen, end), (vec![1], Step::Go));
    }

    #[test]
    fn with_latency_run_the_search_never_ends() {
        let t = opts(&[("latency_target", "500"), ("latency_run", "1")]).unwrap();
        let (seen, end) = drive(&t, 64, |qd| qd as Ns * 100 * US);
        assert_eq!(end, Step::Go);
        assert!(seen.len() > 10, "it keeps probing: {seen:?}");
    }

    #[test]
    fn nothing_moves_the_depth_once_the_job_has_ended() {
        let t = opts(&[("latency_target", "1s")]).unwrap();
        let mut s = DepthSearch::new(&t, 1, 0).unwrap();
        assert_eq!(s.completed(true, 0, 1, US, US), Step::Reset);
        s.resume(US);
        assert_eq!(s.completed(true, 0, 1, US, 2 * US), Step::Done);
        assert_eq!(s.completed(true, 0, 1, 2_000_000 * US, 3 * US), Step::Go);
        assert_eq!(s.depth(), 1);
    }

    #[test]
    fn completions_while_quiescing_are_not_counted() {
        let t = opts(&[("latency_target", "500")]).unwrap();
        let mut s = DepthSearch::new(&t, 8, 0).unwrap();
        assert_eq!(s.completed(true, 0, 1, US, US), Step::Go);
        assert_eq!(s.depth(), 2);
        assert_eq!(s.completed(true, 0, 1, 600 * US, 2 * US), Step::Quiesce);
        assert!(s.quiescing());
        assert_eq!(s.completed(true, 0, 1, 9000 * US, 3 * US), Step::Go);
        s.resume(4 * US);
        assert_eq!(s.depth(), 1);
    }

    proptest! {
        /// Whatever the latencies, the depth stays within 1..=iodepth and
        /// a job that ends cleanly ends at a depth that met the target.
        #[test]
        fn the_depth_stays_within_the_queue(
            iodepth in 1u32..300,
            knee in 1u32..400,
            target_us in 1u64..2000,
        ) {
            let t = opts(&[("latency_target", &target_us.to_string())]).unwrap();
            let lat = |qd: u32| (qd as Ns * target_us * US) / knee as Ns;
            let mut s = DepthSearch::new(&t, iodepth, 0).unwrap();
            for now in 1..20_000u64 {
                let depth = s.depth();
                prop_assert!((1..=iodepth).contains(&depth));
                match s.completed(true, 0, 1, lat(depth), now * US) {
                    Step::Go => {}
                    Step::Quiesce | Step::Reset => s.resume(now * US),
                    Step::Done => {
                        prop_assert!(lat(s.depth()) <= target_us * US);
                        break;
                    }
                    Step::Fatal(_) => {
                        prop_assert!(lat(1) > target_us * US);
                        break;
                    }
                }
            }
        }
    }
}
