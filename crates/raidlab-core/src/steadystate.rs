//! fio's `steadystate` job option (not raidlab's own steady-state test,
//! [`crate::steady`]): a job stops once the rate it has kept over the last
//! `ss_dur` is steady by fio's criterion.
//!
//! As in fio (steadystate.c): from `ss_ramp` after the job's start (after
//! `ramp_time`), each `ss_interval` gives one sample, the I/Os and bytes
//! completed in it scaled to a second (whole numbers). Once `ss_dur` of
//! samples are in, every new sample judges the last `ss_dur`: `iops` and
//! `bw` ask that every sample lie within the limit of their mean (the
//! largest deviation, in % of the mean where the limit ends in `%`);
//! `iops_slope` and `bw_slope` that the least-squares slope over them (per
//! interval, in % of the mean with `%`) be below the limit in size. A job
//! that meets its criterion stops: it issues nothing more, and its I/Os in
//! flight complete. The samples are taken over all the section's jobs
//! together, as fio does with `group_reporting`.
//!
//! fio samples on a timer; the model samples at the first completion past
//! each interval's end, which counts that interval's completions alike.

use crate::error::{Error, Result};
use crate::units::{format_duration, parse_duration, parse_size, Ns};
use serde::Serialize;
use std::collections::VecDeque;

/// The keys [`SteadyStop::set`] reads (fio's names and aliases).
pub const KEYS: &[&str] = &[
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
];

/// Longest `ss_dur`, `ss_ramp` and `ss_interval`: a day.
const MAX_TIME_NS: Ns = 86_400_000_000_000;

/// Most samples a window holds (`ss_dur / ss_interval`): an hour of fio's
/// 1 s samples. Each judgement looks at the whole window, so this and
/// [`MIN_INTERVAL_NS`] bound the watch's work (at most 36,000 sample
/// looks a second of the run).
const MAX_SAMPLES: u64 = 3600;

/// Shortest `ss_interval`, 100 ms: fio warns that too short an interval
/// keeps steady state from converging (its default is 1 s).
const MIN_INTERVAL_NS: Ns = 100_000_000;

/// What fio's criterion looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// I/Os a second.
    Iops,
    /// Bytes a second.
    Bw,
}

/// A job's `steadystate` options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadyStop {
    /// IOPS or bandwidth.
    pub measure: Measure,
    /// The slope (`_slope`) rather than the largest deviation.
    pub slope: bool,
    /// The limit: a share of the mean in % (`pct`), else I/Os or bytes a
    /// second.
    pub limit: f64,
    /// Whether `limit` is a percentage of the mean.
    pub pct: bool,
    /// `ss_dur`, ns: the window judged (0: no stop, fio's default).
    pub dur_ns: Ns,
    /// `ss_ramp`, ns: time before the first sample's interval.
    pub ramp_ns: Ns,
    /// `ss_interval`, ns: one sample each.
    pub interval_ns: Ns,
}

impl Default for SteadyStop {
    /// fio's defaults: `iops_slope:0.01%`, 1 s samples, no duration.
    fn default() -> Self {
        SteadyStop {
            measure: Measure::Iops,
            slope: true,
            limit: 0.01,
            pct: true,
            dur_ns: 0,
            ramp_ns: 0,
            interval_ns: 1_000_000_000,
        }
    }
}

/// A time option as fio's `is_seconds` options read it (seconds unless a
/// unit is given, as raidlab's own durations), up to [`MAX_TIME_NS`].
fn seconds(v: &str) -> Option<Ns> {
    parse_duration(v).ok().filter(|&ns| ns <= MAX_TIME_NS)
}

impl SteadyStop {
    /// Whether the job stops at steady state (`ss_dur` given).
    pub fn any(&self) -> bool {
        self.dur_ns > 0
    }

    /// Samples in a window.
    pub fn samples(&self) -> usize {
        (self.dur_ns / self.interval_ns) as usize
    }

    /// Parse one of [`KEYS`] into `self`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<()> {
        let bad = |why: &str| Error::Workload(format!("{key}={v}: {why}"));
        let time = |why: &str| seconds(v).ok_or_else(|| bad(why));
        match key {
            "steadystate" | "ss" => self.set_criterion(v).map_err(|why| bad(&why))?,
            "steadystate_duration" | "ss_dur" => {
                self.dur_ns =
                    time("give a time up to a day (seconds unless a unit is given: 60, 30s, 5m)")?
            }
            "steadystate_ramp_time" | "ss_ramp" => {
                self.ramp_ns = time("give a time up to a day (seconds unless a unit is given)")?
            }
            "steadystate_check_interval" | "ss_interval" => {
                self.interval_ns =
                    time("give a time from 100ms to a day (seconds unless a unit is given)")?;
                if self.interval_ns < MIN_INTERVAL_NS {
                    return Err(bad("the interval is at least 100ms"));
                }
            }
            _ => return Err(bad("not a steadystate option")),
        }
        Ok(())
    }

    /// `iops:2`, `iops_slope:0.1%`, `bw:10m`, `bw_slope:1%`.
    fn set_criterion(&mut self, v: &str) -> std::result::Result<(), String> {
        let (what, limit) = v
            .split_once(':')
            .ok_or("give a criterion and a limit: iops, iops_slope, bw or bw_slope, then :LIMIT (iops_slope:0.1%)")?;
        (self.measure, self.slope) = match what {
            "iops" => (Measure::Iops, false),
            "iops_slope" => (Measure::Iops, true),
            "bw" => (Measure::Bw, false),
            "bw_slope" => (Measure::Bw, true),
            _ => return Err(format!("'{what}' is not iops, iops_slope, bw or bw_slope")),
        };
        let number = |s: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        (self.limit, self.pct) = if let Some(p) = limit.strip_suffix('%') {
            (
                number(p).ok_or("the limit is a number, or a percentage of the mean")?,
                true,
            )
        } else if self.measure == Measure::Bw && !self.slope {
            let b = parse_size(limit)
                .map_err(|_| "a bandwidth limit is bytes a second (10m), or a percentage")?;
            (b as f64, false)
        } else {
            (
                number(limit).ok_or("the limit is a number, or a percentage of the mean")?,
                false,
            )
        };
        Ok(())
    }

    /// Refuse a window of more samples than [`MAX_SAMPLES`] or of none.
    pub fn check(&self) -> Result<()> {
        if !self.any() {
            return Ok(());
        }
        let n = self.dur_ns / self.interval_ns;
        if !(2..=MAX_SAMPLES).contains(&n) {
            return Err(Error::Workload(format!(
                "ss_dur / ss_interval gives {n} samples a window; give from 2 to {MAX_SAMPLES}"
            )));
        }
        Ok(())
    }

    /// The options as fio writes them, beside a duration only.
    pub fn pairs(&self) -> Vec<(String, String)> {
        if !self.any() {
            return Vec::new();
        }
        let mut v = vec![("steadystate".to_string(), self.criterion_text())];
        v.push(("ss_dur".to_string(), format_duration(self.dur_ns)));
        if self.ramp_ns > 0 {
            v.push(("ss_ramp".to_string(), format_duration(self.ramp_ns)));
        }
        if self.interval_ns != 1_000_000_000 {
            v.push(("ss_interval".to_string(), format_duration(self.interval_ns)));
        }
        v
    }

    /// `iops_slope:0.01%` and the like.
    pub fn criterion_text(&self) -> String {
        let what = match (self.measure, self.slope) {
            (Measure::Iops, false) => "iops",
            (Measure::Iops, true) => "iops_slope",
            (Measure::Bw, false) => "bw",
            (Measure::Bw, true) => "bw_slope",
        };
        format!("{what}:{}{}", self.limit, if self.pct { "%" } else { "" })
    }
}

/// The watch over a section's completions.
#[derive(Debug, Clone)]
pub struct SteadyWatch {
    opts: SteadyStop,
    /// The end of the interval being counted, ns from the job's start.
    next: Ns,
    /// I/Os and bytes completed in it so far.
    ios: u64,
    bytes: u64,
    /// The last window's samples: (IOPS, bytes a second).
    window: VecDeque<(u64, u64)>,
    /// The criterion at the last judgement, once judged, and the largest
    /// deviation or the slope it came from (I/Os or bytes a second).
    criterion: Option<(f64, f64)>,
    attained: bool,
}

impl SteadyWatch {
    /// The watch of `opts`, `None` without `ss_dur`.
    pub fn new(opts: &SteadyStop) -> Option<SteadyWatch> {
        opts.any().then(|| SteadyWatch {
            opts: *opts,
            next: opts.ramp_ns + opts.interval_ns,
            ios: 0,
            bytes: 0,
            window: VecDeque::with_capacity(opts.samples()),
            criterion: None,
            attained: false,
        })
    }

    /// An I/O of `len` bytes completed `since` ns after the job's start
    /// (after `ramp_time`): whether the jobs have just reached steady
    /// state (they then stop).
    pub fn completed(&mut self, len: u64, since: Ns) -> bool {
        if self.attained {
            return false;
        }
        let mut reached = false;
        while since >= self.next {
            self.skip_idle(since);
            reached |= self.sample();
            self.next += self.opts.interval_ns;
            if reached {
                self.attained = true;
                return true;
            }
        }
        if since >= self.opts.ramp_ns {
            self.ios += 1;
            self.bytes += len;
        }
        false
    }

    /// Over a gap without completions: once a whole window of empty
    /// samples is in, every further empty sample is judged alike, so the
    /// intervals up to the one `since` falls in are passed over at once.
    fn skip_idle(&mut self, since: Ns) {
        let n = self.opts.samples();
        let idle =
            self.ios == 0 && self.window.len() == n && self.window.iter().all(|&s| s == (0, 0));
        if idle {
            let i = self.opts.interval_ns;
            self.next += (since - self.next) / i * i;
        }
    }

    /// Close the interval: its sample, and the window's judgement once
    /// full.
    fn sample(&mut self) -> bool {
        let per_s = |n: u64| (n as u128 * 1_000_000_000 / self.opts.interval_ns as u128) as u64;
        let s = (per_s(self.ios), per_s(self.bytes));
        (self.ios, self.bytes) = (0, 0);
        if self.window.len() == self.opts.samples() {
            self.window.pop_front();
        }
        self.window.push_back(s);
        if self.window.len() < self.opts.samples() {
            return false;
        }
        let (raw, c) = self.judge();
        self.criterion = Some((raw, c));
        c < self.opts.limit
    }

    /// The window's largest deviation from the mean, or its slope's size,
    /// and its criterion: that, in % of the mean where the limit is one.
    fn judge(&self) -> (f64, f64) {
        let ys: Vec<f64> = self
            .window
            .iter()
            .map(|&(i, b)| match self.opts.measure {
                Measure::Iops => i as f64,
                Measure::Bw => b as f64,
            })
            .collect();
        let n = ys.len() as f64;
        let mean = ys.iter().sum::<f64>() / n;
        let raw = if self.opts.slope {
            let mx = (n - 1.0) / 2.0;
            let sxy: f64 = ys
                .iter()
                .enumerate()
                .map(|(x, y)| (x as f64 - mx) * (y - mean))
                .sum();
            let sxx: f64 = (0..ys.len()).map(|x| (x as f64 - mx).powi(2)).sum();
            (sxy / sxx).abs()
        } else {
            ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max)
        };
        let c = if !self.opts.pct {
            raw
        } else if mean > 0.0 {
            100.0 * raw / mean
        } else {
            f64::INFINITY
        };
        (raw, c)
    }

    /// What the watch saw, for the job's report.
    pub fn report(&self) -> SteadyReport {
        SteadyReport {
            ss: self.opts.criterion_text(),
            duration_s: self.opts.dur_ns as f64 / 1e9,
            attained: self.attained,
            slope: self.opts.slope,
            pct: self.opts.pct,
            criterion: self.criterion.map(|c| c.1),
            raw: self.criterion.map(|c| c.0),
            iops: self.window.iter().map(|s| s.0).collect(),
            bw_bytes: self.window.iter().map(|s| s.1).collect(),
        }
    }
}

/// A section's `steadystate` watch as a run reports it (fio's
/// `steadystate` object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyReport {
    /// The criterion and limit, as given (`iops_slope:0.01%`).
    pub ss: String,
    /// `ss_dur`, seconds.
    pub duration_s: f64,
    /// Whether the jobs stopped at steady state.
    pub attained: bool,
    /// Whether the criterion is the slope (else the largest deviation).
    pub slope: bool,
    /// Whether `criterion` is in % of the window's mean.
    pub pct: bool,
    /// The last window's criterion (`None`: never a full window).
    pub criterion: Option<f64>,
    /// The slope or the largest deviation it came from, I/Os or bytes a
    /// second.
    pub raw: Option<f64>,
    /// The last window's samples: I/Os a second, and bytes a second.
    pub iops: Vec<u64>,
    /// See `iops`.
    pub bw_bytes: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: Ns = 1_000_000_000;

    fn opts(kv: &[(&str, &str)]) -> Result<SteadyStop> {
        let mut o = SteadyStop::default();
        for (k, v) in kv {
            o.set(k, v)?;
        }
        o.check()?;
        Ok(o)
    }

    #[test]
    fn options_read_as_fio_reads_them_and_write_back() {
        let o = opts(&[
            ("ss", "iops:2"),
            ("ss_dur", "30"),
            ("ss_ramp", "5s"),
            ("ss_interval", "500ms"),
        ])
        .unwrap();
        assert_eq!(
            (o.measure, o.slope, o.limit, o.pct),
            (Measure::Iops, false, 2.0, false)
        );
        assert_eq!((o.dur_ns, o.ramp_ns, o.interval_ns), (30 * S, 5 * S, S / 2));
        assert_eq!(o.samples(), 60);
        let kv = o.pairs();
        let back: Vec<(&str, &str)> = kv.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(opts(&back).unwrap(), o);
        let o = opts(&[("steadystate", "bw:10m"), ("ss_dur", "10")]).unwrap();
        assert_eq!((o.limit, o.pct), ((10 << 20) as f64, false));
        assert!(opts(&[("ss", "bw_slope:0.5%")]).unwrap().pairs().is_empty());
        for bad in [
            ("ss", "iops"),
            ("ss", "lat:1%"),
            ("ss", "iops:fast"),
            ("ss", "iops:-1"),
            ("ss_dur", "2d"),
            ("ss_interval", "0"),
            ("ss_interval", "10ms"),
        ] {
            let e = opts(&[bad]).unwrap_err().to_string();
            assert!(e.contains(bad.0), "{bad:?}: {e}");
        }
        let e = opts(&[("ss_dur", "1"), ("ss_interval", "1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("samples"), "{e}");
    }

    /// Completions of 4 KiB at `rate(t)` a second for `secs`; when the
    /// watch stopped the job, if it did.
    fn feed(o: &SteadyStop, secs: u64, rate: impl Fn(f64) -> f64) -> (Option<f64>, SteadyReport) {
        let mut w = SteadyWatch::new(o).unwrap();
        let mut t = 0.0;
        while t < secs as f64 {
            if w.completed(4096, (t * 1e9) as Ns) {
                return (Some(t), w.report());
            }
            t += 1.0 / rate(t);
        }
        (None, w.report())
    }

    #[test]
    fn a_flat_rate_stops_once_the_window_is_full() {
        let o = opts(&[("ss", "iops:1%"), ("ss_dur", "5")]).unwrap();
        let (at, r) = feed(&o, 60, |_| 1000.0);
        let at = at.expect("steady");
        assert!((5.0..5.01).contains(&at), "{at}");
        assert!(r.attained && r.iops.len() == 5, "{r:?}");
        assert!(r.iops.iter().all(|&i| (999..=1001).contains(&i)), "{r:?}");
        assert_eq!(r.bw_bytes[0], r.iops[0] * 4096);
    }

    #[test]
    fn a_rate_still_falling_is_not_steady_until_it_flattens() {
        // Falling 10 % a second for 20 s, then flat.
        let rate = |t: f64| 1000.0 * 0.9f64.powf(t.min(20.0));
        let o = opts(&[("ss", "iops_slope:1%"), ("ss_dur", "5")]).unwrap();
        let (at, _) = feed(&o, 60, rate);
        let at = at.expect("steady once flat");
        assert!((20.0..27.0).contains(&at), "{at}");
        let o = opts(&[("ss", "iops:5%"), ("ss_dur", "5"), ("ss_ramp", "30")]).unwrap();
        let (at, _) = feed(&o, 60, rate);
        assert!(
            (35.0..35.1).contains(&at.unwrap()),
            "samples start after ss_ramp"
        );
    }

    #[test]
    fn a_long_gap_without_completions_is_passed_over_in_one_step() {
        // 3,600 samples of 100 ms, then a day with no completion: the
        // window fills with empty samples once, and the rest of the day
        // is judged alike without a look each.
        let o = opts(&[
            ("ss", "iops:1%"),
            ("ss_dur", "360"),
            ("ss_interval", "100ms"),
        ])
        .unwrap();
        let mut w = SteadyWatch::new(&o).unwrap();
        assert!(!w.completed(4096, 0));
        assert!(!w.completed(4096, 86_400 * S));
        let r = w.report();
        assert_eq!(r.iops.len(), 3600);
        assert!(r.iops.iter().all(|&i| i == 0) && !r.attained, "{r:?}");
        // An absolute limit is met by the empty window, as fio's is.
        let o = opts(&[("ss", "iops:5"), ("ss_dur", "2")]).unwrap();
        let mut w = SteadyWatch::new(&o).unwrap();
        assert!(w.completed(4096, 86_400 * S));
    }

    #[test]
    fn a_rate_that_never_settles_runs_to_the_end() {
        let saw = |t: f64| {
            if (t as u64).is_multiple_of(2) {
                1000.0
            } else {
                500.0
            }
        };
        let o = opts(&[("ss", "iops:10%"), ("ss_dur", "4")]).unwrap();
        let (at, r) = feed(&o, 30, saw);
        assert_eq!(at, None);
        assert!(!r.attained && r.criterion.unwrap() > 30.0, "{r:?}");
    }

    proptest! {
        /// A flat rate is steady by every criterion with any positive
        /// limit above the counting noise, and never before the window
        /// is full.
        #[test]
        fn flat_rates_stop_after_one_window(rate in 200u32..5000, dur in 2u64..10, slope: bool) {
            let crit = if slope { "iops_slope:1%" } else { "iops:1%" };
            let o = opts(&[("ss", crit), ("ss_dur", &dur.to_string())]).unwrap();
            let (at, _) = feed(&o, 3 * dur, |_| rate as f64);
            let at = at.unwrap();
            prop_assert!(at >= dur as f64 && at < dur as f64 + 1.0, "{}", at);
        }
    }
}
