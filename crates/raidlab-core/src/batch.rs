//! fio's queue batching: how many I/Os a job hands the kernel in one call
//! and how many completions it waits for before it refills its queue
//! (`iodepth_batch_submit`, `iodepth_batch_complete_min`,
//! `iodepth_batch_complete_max`, `iodepth_low`).
//!
//! The values are kept as given (so a workload echoes what it was told)
//! and resolved against the job's `iodepth` the way fio's
//! `fixup_options` (options.c / init.c) resolves them: a submit batch of 0
//! or above the depth is the depth, a low-water mark of 0 or above the
//! depth is the depth, and a completion maximum below the minimum is the
//! minimum.

use serde::Serialize;

/// Largest value any batching key takes: fio's largest `iodepth`.
pub const MAX_BATCH: u32 = 65_536;

/// A job's batching, as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Batch {
    /// `iodepth_batch_submit` (`iodepth_batch`): I/Os handed to the kernel
    /// in one call; 0 means `iodepth`. fio's default is 1.
    pub submit: u32,
    /// `iodepth_batch_complete_min` (`iodepth_batch_complete`): completions
    /// a job with a full queue waits for before it refills; 0 means it
    /// checks without waiting (a full queue still waits for one). fio's
    /// default is 1.
    pub complete_min: u32,
    /// `iodepth_batch_complete_max`: the most completions one call reaps
    /// (0: `complete_min`). It moves no I/O in time: completions that
    /// arrive one by one are reaped as they come whatever it says.
    pub complete_max: u32,
    /// `iodepth_low`: a job whose queue was full keeps reaping until no more
    /// than this many I/Os are in flight (0: `iodepth`, fio's default: one
    /// round of reaping).
    pub low: u32,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            submit: 1,
            complete_min: 1,
            complete_max: 0,
            low: 0,
        }
    }
}

impl Batch {
    /// The keys this module reads, with their fio aliases.
    pub const KEYS: &'static [&'static str] = &[
        "iodepth_batch_submit",
        "iodepth_batch",
        "iodepth_batch_complete_min",
        "iodepth_batch_complete",
        "iodepth_batch_complete_max",
        "iodepth_low",
    ];

    /// Whether every value is fio's default.
    pub fn is_default(&self) -> bool {
        *self == Batch::default()
    }

    /// Set the key `k` (one of [`Batch::KEYS`]) to `n`.
    pub fn set(&mut self, k: &str, n: u32) {
        debug_assert!(n <= MAX_BATCH, "{k}={n} was range-checked");
        match k {
            "iodepth_batch_submit" | "iodepth_batch" => self.submit = n,
            "iodepth_batch_complete_min" | "iodepth_batch_complete" => self.complete_min = n,
            "iodepth_batch_complete_max" => self.complete_max = n,
            "iodepth_low" => self.low = n,
            other => unreachable!("{other} is not a batching key"),
        }
    }

    /// The non-default values, by the language's own names.
    pub fn values(&self) -> Vec<(&'static str, u32)> {
        let d = Batch::default();
        [
            ("iodepth_batch_submit", self.submit, d.submit),
            (
                "iodepth_batch_complete_min",
                self.complete_min,
                d.complete_min,
            ),
            (
                "iodepth_batch_complete_max",
                self.complete_max,
                d.complete_max,
            ),
            ("iodepth_low", self.low, d.low),
        ]
        .into_iter()
        .filter(|(_, v, default)| v != default)
        .map(|(k, v, _)| (k, v))
        .collect()
    }

    /// The non-default values as `k=v` pairs.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.values()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// I/Os one submission call hands over at most, for a job of `iodepth`.
    pub fn submit_size(&self, iodepth: u32) -> u32 {
        if self.submit == 0 || self.submit > iodepth {
            iodepth
        } else {
            self.submit
        }
    }

    /// The low-water mark for a job of `iodepth`.
    fn low_mark(&self, iodepth: u32) -> u32 {
        if self.low == 0 || self.low > iodepth {
            iodepth
        } else {
            self.low
        }
    }

    /// Completions a job of `iodepth` whose queue is full reaps before it
    /// issues again: fio's `wait_for_completions` (backend.c) waits for
    /// `min(complete_min, depth)` (at least 1) and repeats while more than
    /// `iodepth_low` are in flight. With fio's defaults, 1.
    pub fn reaps_when_full(&self, iodepth: u32) -> u32 {
        let low = self.low_mark(iodepth);
        let each = self.complete_min.min(iodepth).max(1);
        let (mut depth, mut reaped) = (iodepth, 0);
        loop {
            let r = each.min(depth);
            reaped += r;
            depth -= r;
            if depth <= low {
                break;
            }
        }
        debug_assert!((1..=iodepth).contains(&reaped));
        reaped
    }

    /// Whether a submission of `n` I/Os in one call runs inside a block
    /// plug: io_uring plugs a submission of more than two (`need_plug =
    /// max_ios > 2`, io_uring/io_uring.c `io_submit_state_start`), libaio
    /// one of more than `AIO_PLUG_THRESHOLD` (2, fs/aio.c).
    pub fn plugged(n: u32) -> bool {
        n > 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fio_defaults_reap_one_and_submit_one() {
        let b = Batch::default();
        for depth in [1, 2, 32, 65_536] {
            assert_eq!(b.reaps_when_full(depth), 1);
            assert_eq!(b.submit_size(depth), 1);
        }
        assert!(b.pairs().is_empty());
    }

    #[test]
    fn values_resolve_against_the_depth_as_fio_fixes_them_up() {
        let b = Batch {
            submit: 0,
            ..Batch::default()
        };
        assert_eq!(b.submit_size(32), 32, "0 means iodepth");
        let b = Batch {
            submit: 64,
            ..Batch::default()
        };
        assert_eq!(b.submit_size(32), 32, "capped at iodepth");
        let b = Batch {
            complete_min: 16,
            ..Batch::default()
        };
        assert_eq!(b.reaps_when_full(32), 16);
        assert_eq!(b.reaps_when_full(8), 8, "never more than in flight");
        let b = Batch {
            complete_min: 0,
            ..Batch::default()
        };
        assert_eq!(b.reaps_when_full(32), 1, "a full queue waits for one");
    }

    #[test]
    fn the_low_water_mark_keeps_a_full_job_reaping() {
        // iodepth=16 iodepth_low=4: fio lets the queue drain to 4 first.
        let b = Batch {
            low: 4,
            ..Batch::default()
        };
        assert_eq!(b.reaps_when_full(16), 12);
        // In rounds of complete_min: 16 -> 11 -> 6 -> 1 (at most 4 left).
        let b = Batch {
            low: 4,
            complete_min: 5,
            ..Batch::default()
        };
        assert_eq!(b.reaps_when_full(16), 15);
    }

    #[test]
    fn more_than_two_in_one_call_are_plugged() {
        assert!(!Batch::plugged(1) && !Batch::plugged(2));
        assert!(Batch::plugged(3) && Batch::plugged(32));
    }

    proptest! {
        #[test]
        fn a_full_job_reaps_between_one_and_its_depth(
            depth in 1u32..=4096,
            min in 0u32..=5000,
            low in 0u32..=5000,
            submit in 0u32..=5000,
        ) {
            let b = Batch { submit, complete_min: min, complete_max: 0, low };
            let r = b.reaps_when_full(depth);
            prop_assert!((1..=depth).contains(&r));
            let s = b.submit_size(depth);
            prop_assert!((1..=depth).contains(&s));
            // What is left in flight is at most the low-water mark.
            prop_assert!(depth - r <= b.low_mark(depth));
        }
    }
}
