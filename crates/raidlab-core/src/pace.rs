//! fio's rate limits (`rate`, `rate_iops`, `rate_process`): how fast each
//! job may issue, and the clock both engines pace a job's I/Os by.
//!
//! As in fio, each direction has a cap and a clock of its own: an I/O goes
//! out once its direction's clock has reached it, and the clock then moves
//! on by the I/O's share of the cap (`linear`) or by an exponential draw of
//! that mean (`poisson`, fio's `rate_process=poisson`: arrivals of a Poisson
//! process). A job behind its clock issues at once, so it catches up in a
//! burst, as fio's does. Latency counts from the moment an I/O goes out.
//! A job ahead of its clock first lets its I/Os in flight complete, then
//! sleeps (fio's default `io_submit_mode=inline`), or sleeps at once with
//! them in flight (`offload`: arrivals that ignore completions, an open
//! loop).

use crate::error::{Error, Result};
use crate::ioreq::Io;
use crate::rng::{mix, Rng};
use crate::units::{format_size, parse_size, Ns};
use serde::Serialize;

/// fio's `rate_process`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly spaced I/Os (fio's default).
    #[default]
    Linear,
    /// Exponentially distributed gaps: Poisson arrivals.
    Poisson,
}

impl RateProcess {
    /// fio's word.
    pub fn word(self) -> &'static str {
        match self {
            RateProcess::Linear => "linear",
            RateProcess::Poisson => "poisson",
        }
    }
}

/// A job's rate limits, per direction (index 0 reads, 1 writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Rate {
    /// `rate=`: bytes a second (`None`: no cap).
    pub bytes: [Option<u64>; 2],
    /// `rate_iops=`: I/Os a second (`None`: no cap).
    pub iops: [Option<u64>; 2],
    /// `rate_process=`.
    pub process: RateProcess,
    /// fio's `io_submit_mode=offload`: a job ahead of its clock sleeps
    /// with its I/Os still in flight (I/Os go out at their times, an open
    /// loop). By default (`inline`) fio first waits for every I/O in flight
    /// to complete, then sleeps the time it was ahead (`rate_ddir` calls
    /// `io_u_quiesce` before `usec_sleep`).
    pub offload: bool,
}

/// Highest `rate_iops` accepted: a billion I/Os a second per job, beyond
/// any device, so a cap above it is a typing error.
pub const MAX_RATE_IOPS: u64 = 1_000_000_000;
/// Highest `rate` accepted: 1 PiB/s per job, beyond any device.
pub const MAX_RATE_BYTES: u64 = 1 << 50;

impl Rate {
    /// Whether any direction is capped.
    pub fn limits(&self) -> bool {
        self.bytes.iter().chain(&self.iops).any(Option::is_some)
    }

    /// Parse `rate_iops=` (`bytes == false`) or `rate=` into `self`: one
    /// value caps both directions; `R,W` each; `R,` reads only; `,W`
    /// writes only (fio's syntax; a third, trim value is refused).
    pub fn set(&mut self, key: &str, v: &str) -> Result<()> {
        let bad = |why: &str| Error::Workload(format!("{key}={v}: {why}"));
        let caps = per_direction(key, v, |p| {
            let (n, hi) = if key == "rate" {
                let n = parse_size(p).map_err(|m| bad(&m.to_string()))?;
                (n, MAX_RATE_BYTES)
            } else {
                let n = p
                    .parse::<u64>()
                    .map_err(|_| bad("expected whole numbers of I/Os a second"))?;
                (n, MAX_RATE_IOPS)
            };
            if n == 0 || n > hi {
                return Err(bad(&format!("each cap is from 1 to {hi} a second")));
            }
            Ok(n)
        })?;
        if key == "rate" {
            self.bytes = caps;
        } else {
            self.iops = caps;
        }
        Ok(())
    }

    /// `rate_process=`.
    pub fn set_process(&mut self, v: &str) -> Result<()> {
        self.process = match v {
            "linear" => RateProcess::Linear,
            "poisson" => RateProcess::Poisson,
            _ => {
                return Err(Error::Workload(format!(
                    "rate_process={v}: expected linear or poisson"
                )))
            }
        };
        Ok(())
    }

    /// `io_submit_mode=`.
    pub fn set_submit_mode(&mut self, v: &str) -> Result<()> {
        self.offload = match v {
            "inline" => false,
            "offload" => true,
            _ => {
                return Err(Error::Workload(format!(
                    "io_submit_mode={v}: expected inline or offload"
                )))
            }
        };
        Ok(())
    }

    /// The caps as fio writes them (`rate`, `rate_iops`, `rate_process`),
    /// only those given.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(s) = direction_words(self.bytes, format_size) {
            v.push(("rate".to_string(), s));
        }
        if let Some(s) = direction_words(self.iops, |n| n.to_string()) {
            v.push(("rate_iops".to_string(), s));
        }
        if self.limits() && self.process != RateProcess::Linear {
            v.push(("rate_process".to_string(), self.process.word().to_string()));
        }
        if self.limits() && self.offload {
            v.push(("io_submit_mode".to_string(), "offload".to_string()));
        }
        v
    }
}

/// A per-direction option's values as fio reads them back ([`per_direction`]):
/// one value where both directions have it, else `R,W` with an empty side
/// for a direction without one; `None` where neither has one.
pub(crate) fn direction_words<T: Copy + PartialEq>(
    c: [Option<T>; 2],
    f: impl Fn(T) -> String,
) -> Option<String> {
    let w = |x: Option<T>| x.map(&f).unwrap_or_default();
    match c {
        [None, None] => None,
        [a, b] if a == b => Some(w(a)),
        [a, b] => Some(format!("{},{}", w(a), w(b))),
    }
}

/// A per-direction option as fio reads one (`bs`, `rate`, `max_latency`):
/// one value for reads and writes, `R,W` each, `R,` reads only, `,W`
/// writes only, each part read by `one`; a third, trim value is refused
/// (trims are not modelled), and so is a value that names neither
/// direction.
pub(crate) fn per_direction<T: Copy>(
    key: &str,
    v: &str,
    one: impl Fn(&str) -> Result<T>,
) -> Result<[Option<T>; 2]> {
    let bad = |why: &str| Error::Workload(format!("{key}={v}: {why}"));
    let part = |p: &str| -> Result<Option<T>> {
        if p.is_empty() {
            Ok(None)
        } else {
            one(p).map(Some)
        }
    };
    let dirs = match v.split(',').collect::<Vec<_>>().as_slice() {
        [only] => {
            let x = part(only)?;
            [x, x]
        }
        [r, w] => [part(r)?, part(w)?],
        _ => {
            return Err(bad(
                "give one value, or one for reads and one for writes (trims are not modelled)",
            ))
        }
    };
    if dirs.iter().all(Option::is_none) {
        return Err(bad("no value given"));
    }
    Ok(dirs)
}

/// Separates the Poisson draws' random stream from the job streams' (any
/// constant unlike theirs; "RATE" in ASCII).
const RATE_STREAM: u64 = 0x5241_5445;

/// One job's pacing clock: when each of its I/Os may go out.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// Per direction: ns per byte (`rate`) or per I/O (`rate_iops`), as
    /// fio chooses, `rate` first.
    step: [Option<Step>; 2],
    /// Per direction: when its next I/O is due, ns from the job's start.
    next: [f64; 2],
    /// Draws of the exponential gaps, when `poisson`.
    poisson: Option<Rng>,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    PerByte(f64),
    PerIo(f64),
}

impl Pacer {
    /// The clock of job `job` under `rate` (`None` when nothing is capped);
    /// `seed` fixes its Poisson draws.
    pub fn new(rate: &Rate, seed: u64, job: u32) -> Option<Pacer> {
        if !rate.limits() {
            return None;
        }
        let step = |d: usize| match (rate.bytes[d], rate.iops[d]) {
            (Some(b), _) => Some(Step::PerByte(1e9 / b as f64)),
            (None, Some(n)) => Some(Step::PerIo(1e9 / n as f64)),
            (None, None) => None,
        };
        Some(Pacer {
            step: [step(0), step(1)],
            next: [0.0; 2],
            // The rate draws have a stream of their own (RATE_STREAM), apart
            // from the job's offsets and directions.
            poisson: (rate.process == RateProcess::Poisson)
                .then(|| Rng::new(mix(seed ^ RATE_STREAM, job as u64 + 1))),
        })
    }

    /// The direction the job issues next at `now` (ns from its start),
    /// given that the mix drew `read`: fio's `rate_ddir`. The drawn
    /// direction if its clock has come; else the other if its clock has
    /// (uncapped directions always have); else whichever falls due first.
    /// Only for jobs whose mix has both directions.
    pub fn pick(&self, read: bool, now: Ns) -> bool {
        let due = |d: usize| match self.step[d] {
            Some(_) => self.next[d],
            None => 0.0,
        };
        let (d, o) = if read { (0, 1) } else { (1, 0) };
        let now = now as f64;
        if due(d) <= now {
            read
        } else if due(o) <= now {
            !read
        } else {
            // Both ahead: the job sleeps until the earlier one.
            if due(d) <= due(o) {
                read
            } else {
                !read
            }
        }
    }

    /// When `io` may go out, ns from the job's start (0: at once), moving
    /// its direction's clock on past it.
    pub fn admit(&mut self, io: &Io) -> Ns {
        let d = usize::from(!io.read);
        let Some(step) = self.step[d] else {
            return 0;
        };
        let due = self.next[d];
        let mean = match step {
            Step::PerByte(ns) => ns * io.len as f64,
            Step::PerIo(ns) => ns,
        };
        let gap = match &mut self.poisson {
            // 1 - u lies in (0, 1], so the logarithm is finite.
            Some(rng) => -mean * (1.0 - rng.unit()).ln(),
            None => mean,
        };
        debug_assert!(gap.is_finite() && gap >= 0.0, "gap {gap}");
        self.next[d] += gap;
        due as Ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(pairs: &[(&str, &str)]) -> Result<Rate> {
        let mut r = Rate::default();
        for (k, v) in pairs {
            match *k {
                "rate_process" => r.set_process(v)?,
                "io_submit_mode" => r.set_submit_mode(v)?,
                _ => r.set(k, v)?,
            }
        }
        Ok(r)
    }

    const R: Io = Io {
        offset: 0,
        len: 4096,
        read: true,
    };
    const W: Io = Io {
        offset: 0,
        len: 4096,
        read: false,
    };

    #[test]
    fn fio_syntax_caps_each_direction() {
        let r = rate(&[("rate_iops", "1000")]).unwrap();
        assert_eq!(r.iops, [Some(1000), Some(1000)]);
        let r = rate(&[("rate_iops", "1000,")]).unwrap();
        assert_eq!(r.iops, [Some(1000), None]);
        let r = rate(&[("rate_iops", ",500")]).unwrap();
        assert_eq!(r.iops, [None, Some(500)]);
        let r = rate(&[("rate", "1m,2m")]).unwrap();
        assert_eq!(r.bytes, [Some(1 << 20), Some(2 << 20)]);
        assert_eq!(r.pairs(), vec![("rate".to_string(), "1m,2m".to_string())]);
        for bad in ["0", "1,2,3", ",", "x", "2000000000"] {
            assert!(rate(&[("rate_iops", bad)]).is_err(), "{bad}");
        }
        assert!(rate(&[("rate_process", "bursty")]).is_err());
    }

    #[test]
    fn linear_clock_spaces_ios_evenly_per_direction() {
        let r = rate(&[("rate_iops", "1000,500")]).unwrap();
        let mut p = Pacer::new(&r, 1, 0).unwrap();
        assert_eq!(p.admit(&R), 0);
        assert_eq!(p.admit(&R), 1_000_000);
        assert_eq!(p.admit(&W), 0);
        assert_eq!(p.admit(&W), 2_000_000);
        assert_eq!(p.admit(&R), 2_000_000);
        assert!(Pacer::new(&Rate::default(), 1, 0).is_none());
    }

    #[test]
    fn a_direction_behind_its_clock_goes_first() {
        let r = rate(&[("rate_iops", "1000,10")]).unwrap();
        let mut p = Pacer::new(&r, 1, 0).unwrap();
        p.admit(&W);
        // Writes are due again at 100 ms; a read drawn at 1 ms stays a read.
        assert!(p.pick(true, 1_000_000));
        p.admit(&R);
        // A write drawn at 0.5 ms turns into a read, whose clock (1 ms) is
        // nearer than the write's (100 ms).
        assert!(p.pick(false, 500_000));
        // At 200 ms both have come: the drawn direction goes.
        assert!(!p.pick(false, 200_000_000));
        // An uncapped direction is always due.
        let r = rate(&[("rate_iops", "10,")]).unwrap();
        let mut p = Pacer::new(&r, 1, 0).unwrap();
        p.admit(&R);
        assert!(!p.pick(true, 1));
    }

    #[test]
    fn byte_cap_charges_each_io_its_length() {
        let r = rate(&[("rate", "4k"), ("rate_iops", "1")]).unwrap();
        let mut p = Pacer::new(&r, 1, 0).unwrap();
        p.admit(&R);
        // fio: `rate` wins over `rate_iops`; 4 KiB at 4 KiB/s is a second.
        assert_eq!(p.admit(&R), 1_000_000_000);
    }

    #[test]
    fn poisson_gaps_have_the_cap_as_mean_and_spread() {
        let r = rate(&[("rate_iops", "10000"), ("rate_process", "poisson")]).unwrap();
        let mut p = Pacer::new(&r, 7, 3).unwrap();
        let n = 100_000;
        let mut last = 0;
        let mut gaps = Vec::with_capacity(n);
        for _ in 0..n {
            let t = p.admit(&W);
            gaps.push((t - last) as f64);
            last = t;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        assert!((mean - 100_000.0).abs() < 2_000.0, "mean gap {mean} ns");
        // An exponential's standard deviation equals its mean.
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
        // Deterministic per seed and job.
        let mut a = Pacer::new(&r, 7, 3).unwrap();
        let mut b = Pacer::new(&r, 7, 3).unwrap();
        assert!((0..100).all(|_| a.admit(&W) == b.admit(&W)));
    }
}
