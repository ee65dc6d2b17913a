//! fio's job guards (`max_latency`, `rate_min`, `rate_iops_min`,
//! `rate_cycle`): conditions a job must keep to, or it ends in error.
//!
//! As in fio, a guard does not shape what a job issues; it watches what
//! completes. An I/O that took longer than its direction's `max_latency`
//! ends the job with `ETIMEDOUT` (io_u.c `lat_fatal`, latency counted from
//! the I/O's issue to its completion). A direction that has moved data and
//! over the last `rate_cycle` milliseconds moved less than its `rate_min`
//! bytes a second (or fewer than its `rate_iops_min` I/Os a second, when
//! no `rate_min` is given for it) ends the job with `EIO`
//! (backend.c `__check_min_rate`): the check starts 2 s into the job, its
//! first look only marks where the cycle starts, and both directions are
//! checked at every completion. Neither looks at what completes during
//! `ramp_time`, and the 2 s count from its end (fio accounts no completion
//! in its ramp, `should_account`, and restarts the job's clock after it,
//! `reset_all_stats`). A job that trips a guard stops issuing;
//! its I/Os in flight complete and count, the other jobs run on, and the
//! run reports the error (fio: the job's `error`, exit status 1).

use crate::error::{Error, Result};
use crate::pace::{direction_words, per_direction, MAX_RATE_BYTES, MAX_RATE_IOPS};
use crate::units::{format_size, parse_duration, parse_size, Ns};
use serde::Serialize;
use std::fmt;

/// fio's `rate_cycle` default, ms (options.c: `.def = "1000"`).
pub const DEFAULT_RATE_CYCLE_MS: u32 = 1000;

/// How long a job runs before `rate_min` and `rate_iops_min` are checked:
/// 2 s (backend.c `__check_min_rate`: "allow a 2 second settle period in
/// the beginning").
pub const RATE_SETTLE_NS: Ns = 2_000_000_000;

/// Longest `max_latency`: an hour, past any I/O a run would wait for.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Longest `rate_cycle`: an hour, in ms.
const MAX_RATE_CYCLE_MS: u64 = 3_600_000;

/// A job's guards, per direction (index 0 reads, 1 writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Guards {
    /// `max_latency=`, ns (`None`: none).
    pub max_latency: [Option<Ns>; 2],
    /// `rate_min=`: bytes a second (`None`: none).
    pub rate_min: [Option<u64>; 2],
    /// `rate_iops_min=`: I/Os a second (`None`: none).
    pub rate_iops_min: [Option<u64>; 2],
    /// `rate_cycle=`: the span, ms, each minimum rate is averaged over.
    pub rate_cycle_ms: u32,
    /// `exitall_on_error`: when the job trips a guard, every job of the
    /// phase stops issuing (fio's `fio_terminate_threads`).
    pub exitall_on_error: bool,
}

impl Default for Guards {
    fn default() -> Self {
        Guards {
            max_latency: [None; 2],
            rate_min: [None; 2],
            rate_iops_min: [None; 2],
            rate_cycle_ms: DEFAULT_RATE_CYCLE_MS,
            exitall_on_error: false,
        }
    }
}

/// The keys [`Guards::set`] reads (fio's names and its aliases).
pub const KEYS: &[&str] = &[
    "max_latency",
    "rate_min",
    "ratemin",
    "rate_iops_min",
    "rate_cycle",
    "ratecycle",
    "exitall_on_error",
];

impl Guards {
    /// Whether any guard is set (`rate_cycle` and `exitall_on_error` alone
    /// guard nothing).
    pub fn any(&self) -> bool {
        self.max_latency
            .iter()
            .chain(&self.rate_min)
            .chain(&self.rate_iops_min)
            .any(Option::is_some)
    }

    /// Whether the job checks a minimum rate.
    fn rates(&self) -> bool {
        self.rate_min
            .iter()
            .chain(&self.rate_iops_min)
            .any(Option::is_some)
    }

    /// Parse one of [`KEYS`] into `self`: one value for both directions,
    /// `R,W`, `R,` or `,W` as fio reads per-direction options (a third,
    /// trim value is refused, trims not being modelled).
    pub fn set(&mut self, key: &str, v: &str) -> Result<()> {
        let bad = |why: &str| Error::Workload(format!("{key}={v}: {why}"));
        match key {
            "max_latency" => {
                self.max_latency = per_direction(key, v, |p| {
                    latency(p).ok_or_else(|| {
                        bad("give whole microseconds above 0 and up to an hour (microseconds unless a unit is given: 500, 10ms, 1s)")
                    })
                })?
            }
            "rate_min" | "ratemin" => {
                self.rate_min = per_direction(key, v, |p| {
                    parse_size(p)
                        .ok()
                        .filter(|n| (1..=MAX_RATE_BYTES).contains(n))
                        .ok_or_else(|| bad(&format!("each minimum is from 1 to {MAX_RATE_BYTES} bytes a second (sizes such as 500k, 100m)")))
                })?
            }
            "rate_iops_min" => {
                self.rate_iops_min = per_direction(key, v, |p| {
                    p.parse::<u64>()
                        .ok()
                        .filter(|n| (1..=MAX_RATE_IOPS).contains(n))
                        .ok_or_else(|| bad(&format!("each minimum is a whole number of I/Os a second from 1 to {MAX_RATE_IOPS}")))
                })?
            }
            "rate_cycle" | "ratecycle" => {
                self.rate_cycle_ms = v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=MAX_RATE_CYCLE_MS).contains(n))
                    .ok_or_else(|| {
                        bad(&format!(
                            "expected whole milliseconds from 1 to {MAX_RATE_CYCLE_MS}"
                        ))
                    })? as u32
            }
            "exitall_on_error" => {
                self.exitall_on_error = match v {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad("expected 0 or 1 (a bare line in a job file)")),
                }
            }
            _ => return Err(bad("not a guard")),
        }
        Ok(())
    }

    /// The guards as fio writes them, only those given (`rate_cycle` only
    /// beside a minimum rate, and only when not fio's default;
    /// `exitall_on_error` only beside a guard, the only errors a run goes
    /// on after).
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(s) = direction_words(self.max_latency, format_duration_us) {
            v.push(("max_latency".to_string(), s));
        }
        if let Some(s) = direction_words(self.rate_min, format_size) {
            v.push(("rate_min".to_string(), s));
        }
        if let Some(s) = direction_words(self.rate_iops_min, |n| n.to_string()) {
            v.push(("rate_iops_min".to_string(), s));
        }
        if self.rates() && self.rate_cycle_ms != DEFAULT_RATE_CYCLE_MS {
            v.push(("rate_cycle".to_string(), self.rate_cycle_ms.to_string()));
        }
        if self.any() && self.exitall_on_error {
            v.push(("exitall_on_error".to_string(), "1".to_string()));
        }
        v
    }
}

/// A `max_latency` value as fio reads a time option, ns: microseconds
/// unless a unit is given, in whole microseconds (fio's resolution); above
/// 0 and at most [`MAX_LATENCY_US`].
pub(crate) fn latency(p: &str) -> Option<Ns> {
    let ns = if p.bytes().all(|b| b.is_ascii_digit()) {
        p.parse::<u64>().ok()?.checked_mul(1000)?
    } else {
        parse_duration(p).ok()?
    };
    (ns > 0 && ns % 1000 == 0 && ns <= MAX_LATENCY_US * 1000).then_some(ns)
}

/// A `max_latency` as fio reads it back: whole seconds or milliseconds
/// with their unit, else bare microseconds (a bare number is microseconds
/// to fio, never seconds).
pub(crate) fn format_duration_us(ns: Ns) -> String {
    match ns {
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n => (n / 1000).to_string(),
    }
}

/// [`format_duration_us`] with the microseconds' unit written out, for
/// people.
pub(crate) fn format_time(ns: Ns) -> String {
    let t = format_duration_us(ns);
    if t.ends_with('s') {
        t
    } else {
        t + "us"
    }
}

/// Which guard a job tripped, and by how much.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "guard", rename_all = "snake_case")]
pub enum Tripped {
    /// An I/O took longer than `max_latency` (fio: `ETIMEDOUT`).
    MaxLatency {
        /// Whether it was a read.
        read: bool,
        /// Its latency, ns.
        latency_ns: Ns,
        /// The limit, ns.
        max_ns: Ns,
        /// Where it went: byte offset in its volume.
        offset: u64,
        /// Its length, bytes.
        len: u64,
    },
    /// A direction fell below `rate_min` over a cycle (fio: `EIO`).
    RateMin {
        /// Whether reads fell short.
        read: bool,
        /// Bytes a second over the cycle.
        got: u64,
        /// The minimum.
        min: u64,
    },
    /// A direction fell below `rate_iops_min` over a cycle (fio: `EIO`).
    RateIopsMin {
        /// Whether reads fell short.
        read: bool,
        /// I/Os a second over the cycle.
        got: u64,
        /// The minimum.
        min: u64,
    },
    /// An I/O at queue depth 1 took longer than `latency_target`, with
    /// `latency_percentile` 100: no depth meets the target (fio:
    /// `ETIMEDOUT`, [`crate::depth_search`]).
    LatencyTarget {
        /// Whether it was a read.
        read: bool,
        /// Its latency, ns.
        latency_ns: Ns,
        /// The target, ns.
        target_ns: Ns,
        /// Where it went: byte offset in its volume.
        offset: u64,
        /// Its length, bytes.
        len: u64,
    },
}

impl Tripped {
    /// fio's error number for it (Linux errno): `ETIMEDOUT` 110 or `EIO` 5.
    pub fn errno(&self) -> i32 {
        match self {
            Tripped::MaxLatency { .. } | Tripped::LatencyTarget { .. } => 110,
            Tripped::RateMin { .. } | Tripped::RateIopsMin { .. } => 5,
        }
    }
}

fn dir(read: bool) -> &'static str {
    if read {
        "read"
    } else {
        "write"
    }
}

impl fmt::Display for Tripped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Tripped::MaxLatency {
                read,
                latency_ns,
                max_ns,
                offset,
                len,
            } => write!(
                f,
                "max_latency={} exceeded: a {len}-byte {} at offset {offset} took {:.3} ms (ETIMEDOUT)",
                format_time(max_ns),
                dir(read),
                latency_ns as f64 / 1e6
            ),
            Tripped::RateMin { read, got, min } => write!(
                f,
                "rate_min={} not met: {}s moved {got} bytes/s over the cycle (EIO)",
                format_size(min),
                dir(read)
            ),
            Tripped::RateIopsMin { read, got, min } => write!(
                f,
                "rate_iops_min={min} not met: {} IOPS over the cycle was {got} (EIO)",
                dir(read)
            ),
            Tripped::LatencyTarget {
                read,
                latency_ns,
                target_ns,
                offset,
                len,
            } => write!(
                f,
                "latency_target={} not met at queue depth 1: a {len}-byte {} at offset {offset} took {:.3} ms (ETIMEDOUT)",
                format_time(target_ns),
                dir(read),
                latency_ns as f64 / 1e6
            ),
        }
    }
}

/// Where one direction's last minimum-rate check left off.
#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    at: Ns,
    bytes: u64,
    ios: u64,
}

/// One job's watch over its guards, fed every completion.
#[derive(Debug, Clone)]
pub struct GuardClock {
    g: Guards,
    /// Per direction: I/Os and bytes completed so far.
    ios: [u64; 2],
    bytes: [u64; 2],
    /// Per direction: the last check (`None`: not yet looked).
    mark: [Option<Mark>; 2],
}

impl GuardClock {
    /// The watch over `g`; `None` when `g` guards nothing.
    pub fn new(g: &Guards) -> Option<GuardClock> {
        g.any().then_some(GuardClock {
            g: *g,
            ios: [0; 2],
            bytes: [0; 2],
            mark: [None; 2],
        })
    }

    /// Whether the job's error stops every job (`exitall_on_error`).
    pub fn exits_all(&self) -> bool {
        self.g.exitall_on_error
    }

    /// The job's I/O of `len` bytes at `offset` (a read or not) completed
    /// after `latency` ns, `since_start` ns into the job: the guard it
    /// tripped, if any.
    pub fn completed(
        &mut self,
        read: bool,
        offset: u64,
        len: u64,
        latency: Ns,
        since_start: Ns,
    ) -> Option<Tripped> {
        let d = usize::from(!read);
        self.ios[d] += 1;
        self.bytes[d] += len;
        if let Some(max) = self.g.max_latency[d].filter(|&m| latency > m) {
            return Some(Tripped::MaxLatency {
                read,
                latency_ns: latency,
                max_ns: max,
                offset,
                len,
            });
        }
        if !self.g.rates() || since_start < RATE_SETTLE_NS {
            return None;
        }
        (0..2).find_map(|d| self.check_rate(d, since_start))
    }

    /// fio's `__check_min_rate` for direction `d` at `now` (ns into the
    /// job): a direction that has moved data is checked once a cycle.
    fn check_rate(&mut self, d: usize, now: Ns) -> Option<Tripped> {
        let (min_bytes, min_ios) = (self.g.rate_min[d], self.g.rate_iops_min[d]);
        if self.ios[d] == 0 || (min_bytes.is_none() && min_ios.is_none()) {
            return None;
        }
        let here = Mark {
            at: now,
            bytes: self.bytes[d],
            ios: self.ios[d],
        };
        if let Some(m) = self.mark[d] {
            let spent_ms = (now - m.at) / 1_000_000;
            if spent_ms < u64::from(self.g.rate_cycle_ms) || spent_ms == 0 {
                return None;
            }
            let read = d == 0;
            // fio checks bytes where `rate_min` is given, else I/Os.
            if let Some(min) = min_bytes {
                let got = (here.bytes - m.bytes) * 1000 / spent_ms;
                if got < min {
                    return Some(Tripped::RateMin { read, got, min });
                }
            } else if let Some(min) = min_ios {
                let got = (here.ios - m.ios) * 1000 / spent_ms;
                if got < min {
                    return Some(Tripped::RateIopsMin { read, got, min });
                }
            }
        }
        self.mark[d] = Some(here);
        None
    }
}

/// A job's tripped guard, as a run reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobError {
    /// The job (0-based, over the phase's jobs in order).
    pub job: u32,
    /// fio's error number (Linux errno).
    pub errno: i32,
    /// What happened, one line.
    pub message: String,
    /// The guard and its figures.
    pub detail: Tripped,
}

impl JobError {
    /// Job `job` tripped `t`.
    pub fn new(job: u32, t: Tripped) -> JobError {
        JobError {
            job,
            errno: t.errno(),
            message: t.to_string(),
            detail: t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn guards(kv: &[(&str, &str)]) -> Result<Guards> {
        let mut g = Guards::default();
        for (k, v) in kv {
            g.set(k, v)?;
        }
        Ok(g)
    }

    const MS: Ns = 1_000_000;

    #[test]
    fn values_read_as_fio_reads_them() {
        let g = guards(&[("max_latency", "500")]).unwrap();
        assert_eq!(g.max_latency, [Some(500_000); 2]);
        let g = guards(&[("max_latency", "10ms,")]).unwrap();
        assert_eq!(g.max_latency, [Some(10 * MS), None]);
        let g = guards(&[("rate_min", ",1m"), ("ratecycle", "500")]).unwrap();
        assert_eq!((g.rate_min, g.rate_cycle_ms), ([None, Some(1 << 20)], 500));
        let g = guards(&[("rate_iops_min", "100")]).unwrap();
        assert_eq!(g.rate_iops_min, [Some(100); 2]);
        for bad in [
            ("max_latency", "0"),
            ("max_latency", "fast"),
            ("max_latency", "2h"),
            ("max_latency", "1500ns"),
            ("max_latency", "1,2,3"),
            ("rate_min", "0"),
            ("rate_iops_min", "1.5"),
            ("rate_cycle", "0"),
            ("rate_cycle", "99999999"),
            ("exitall_on_error", "yes"),
        ] {
            let e = guards(&[bad]).unwrap_err().to_string();
            assert!(e.contains(bad.0), "{bad:?}: {e}");
        }
    }

    #[test]
    fn pairs_read_back_to_the_same_guards() {
        let g = guards(&[
            ("max_latency", "250,10s"),
            ("rate_min", "1m"),
            ("rate_iops_min", ",20"),
            ("rate_cycle", "250"),
            ("exitall_on_error", "1"),
        ])
        .unwrap();
        let p = g.pairs();
        let back = guards(
            &p.iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(back, g, "{p:?}");
        assert!(Guards::default().pairs().is_empty());
        assert!(GuardClock::new(&Guards::default()).is_none());
    }

    #[test]
    fn a_late_io_trips_max_latency_in_its_own_direction_only() {
        let g = guards(&[("max_latency", ",1ms")]).unwrap();
        let mut c = GuardClock::new(&g).unwrap();
        assert_eq!(c.completed(true, 0, 4096, 50 * MS, MS), None);
        assert_eq!(c.completed(false, 0, 4096, MS, MS), None, "equal is within");
        let t = c.completed(false, 8192, 4096, MS + 1, MS).unwrap();
        assert_eq!(t.errno(), 110);
        assert!(
            t.to_string().contains("4096-byte write at offset 8192"),
            "{t}"
        );
    }

    #[test]
    fn minimum_rates_wait_two_seconds_then_check_each_cycle() {
        let g = guards(&[("rate_iops_min", "1000")]).unwrap();
        let mut c = GuardClock::new(&g).unwrap();
        // 100 IOPS for the first 2 s: not checked.
        for i in 1..200 {
            assert_eq!(c.completed(true, 0, 512, 1, i * 10 * MS), None);
        }
        // 2000 IOPS from 2 s: the first look marks, later ones pass.
        let mut t = 2000 * MS;
        for _ in 0..4000 {
            t += MS / 2;
            assert_eq!(c.completed(true, 0, 512, 1, t), None);
        }
        // Then 500 IOPS: the next cycle's check trips.
        let tripped = (0..1000).find_map(|_| {
            t += 2 * MS;
            c.completed(true, 0, 512, 1, t)
        });
        match tripped {
            Some(Tripped::RateIopsMin {
                read: true,
                got,
                min: 1000,
            }) => {
                assert!((500..1000).contains(&got), "{got}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_direction_that_stalls_is_caught_at_the_others_completions() {
        let g = guards(&[("rate_min", "1m")]).unwrap();
        let mut c = GuardClock::new(&g).unwrap();
        // Both directions move 4 MiB/s until 3 s, then writes stop.
        let mut t = 0;
        while t < 3000 * MS {
            t += MS;
            assert_eq!(c.completed(true, 0, 4096, 1, t), None);
            assert_eq!(c.completed(false, 0, 4096, 1, t), None);
        }
        let tripped = (0..3000).find_map(|_| {
            t += MS;
            c.completed(true, 0, 4096, 1, t)
        });
        // The cycle caught holds at most the writes of its first moments.
        assert!(
            matches!(tripped, Some(Tripped::RateMin { read: false, got, .. }) if got < 8192),
            "{tripped:?}"
        );
    }

    proptest! {
        #[test]
        fn a_job_at_or_above_its_minimum_never_trips(iops in 1u64..20_000, gap_us in 1u64..2_000) {
            // I/Os evenly spaced at `gap_us`: the job's rate is 1e6 / gap.
            let rate = 1_000_000 / gap_us;
            prop_assume!(rate >= 2);
            let min = (rate / 2).clamp(1, iops.max(1));
            let g = guards(&[("rate_iops_min", &min.to_string())]).unwrap();
            let mut c = GuardClock::new(&g).unwrap();
            let mut t = 0;
            for _ in 0..(6_000_000 / gap_us).min(200_000) {
                t += gap_us * 1000;
                prop_assert_eq!(c.completed(true, 0, 512, 1, t), None);
            }
        }
    }
}
