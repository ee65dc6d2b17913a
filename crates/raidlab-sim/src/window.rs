//! The measurement window (docs/workloads.md, "Steady state").
//!
//! A time-based run is cut into rounds of `runtime / 5`, so the PTS window
//! of five rounds is exactly `runtime` long. Without `ramp_time` the rounds
//! start at once and the run stops when the last five pass the steady-state
//! test, or after [`MAX_ROUNDS`], and reports those five; with `ramp_time`
//! the five rounds follow the given warm-up and are tested, not chosen. A
//! one-pass run (no `runtime`) is measured whole and tested on the five
//! fifths of its bytes.

use raidlab_core::metrics::Metrics;
use raidlab_core::steady::{
    is_steady, levels_steady, Round, Steady, CRITERION, MAX_ROUNDS, WINDOW_ROUNDS,
};
use raidlab_core::units::Ns;
use raidlab_core::workload::Workload;
use std::collections::VecDeque;

/// The host's figures over a stretch of time: all its jobs', and each job
/// section's when sections run side by side (empty otherwise).
#[derive(Default)]
pub(crate) struct Figures {
    pub all: Metrics,
    pub sections: Vec<Metrics>,
}

impl Figures {
    /// Add `o`'s figures (of the same sections) to these.
    fn merge(&mut self, o: &Figures) {
        self.all.merge(&o.all);
        debug_assert_eq!(self.sections.len(), o.sections.len());
        for (a, b) in self.sections.iter_mut().zip(&o.sections) {
            a.merge(b);
        }
    }
}

/// Where a time-based run's rounds stand.
pub(crate) struct Rounds<S> {
    /// Length of a round.
    len: Ns,
    /// End of the round being measured.
    pub next: Ns,
    /// Rounds after which the run stops.
    max: usize,
    /// Stop early once the window is steady (no `ramp_time` given).
    auto: bool,
    /// When the run began (0, or a later phase's start): times are
    /// reported from here.
    origin: Ns,
    /// Every closed round's rate.
    rates: Vec<Round>,
    /// The last [`WINDOW_ROUNDS`] closed rounds: their host figures (all
    /// jobs, then each job section run side by side) and the counters at
    /// their start.
    ring: VecDeque<(Figures, S, Ns)>,
    /// Counters at the start of the round being measured.
    cur: Option<(S, Ns)>,
    /// Write-back caches' dirty levels at every round boundary, and each
    /// level's noise (fractions of the cache).
    levels: Vec<Vec<f64>>,
    noise: Vec<f64>,
    /// Bytes each write-back cache has taken in by every round boundary
    /// (fractions of the cache).
    taken: Vec<Vec<f64>>,
}

/// How each gauge (one vector per round boundary, oldest first) changed
/// over the last two rounds (earlier, later); empty before two rounds have
/// closed.
fn last_two_changes(at: &[Vec<f64>]) -> Vec<(f64, f64)> {
    match at {
        [.., a, b, c] => a
            .iter()
            .zip(b)
            .zip(c)
            .map(|((a, b), c)| (b - a, c - b))
            .collect(),
        _ => Vec::new(),
    }
}

impl<S> Rounds<S> {
    /// The rounds of a time-based workload `w` begun at `origin` (`None`
    /// for one pass).
    pub fn of(w: &Workload, origin: Ns) -> Option<Self> {
        let runtime = w.runtime?;
        let len = (runtime / WINDOW_ROUNDS as u64).max(1);
        let (first, max, auto) = match w.ramp_time {
            Some(r) => (r, WINDOW_ROUNDS, false),
            None => (0, MAX_ROUNDS, true),
        };
        Some(Rounds {
            len,
            next: origin + first + len,
            max,
            auto,
            origin,
            rates: Vec::new(),
            ring: VecDeque::new(),
            cur: None,
            levels: Vec::new(),
            noise: Vec::new(),
            taken: Vec::new(),
        })
    }

    /// Where measuring starts (the end of an explicit ramp).
    pub fn first_start(&self) -> Ns {
        self.next - self.len
    }

    /// The last moment of the run if every round is needed.
    pub fn horizon(&self) -> Ns {
        self.first_start() + self.max as u64 * self.len
    }

    /// Each cache's level noise (see [`raidlab_core::steady::levels_steady`]).
    pub fn set_noise(&mut self, noise: Vec<f64>) {
        self.noise = noise;
    }

    /// Each cache's level noise.
    pub fn noise(&self) -> &[f64] {
        &self.noise
    }

    /// Counters, cache levels and the bytes the caches have taken in, at
    /// the start of the first round.
    pub fn begin(&mut self, snap: S, levels: Vec<f64>, taken: Vec<f64>) {
        self.cur = Some((snap, self.first_start()));
        self.levels.push(levels);
        self.taken.push(taken);
    }

    /// Whether the cache levels and the rates pass the test.
    fn steady(&self) -> bool {
        is_steady(&self.rates) && levels_steady(&self.levels, &self.taken, &self.noise)
    }

    /// How each cache's level changed over the last two closed rounds
    /// (earlier, later); empty before two rounds have closed.
    pub fn last_rises(&self) -> Vec<(f64, f64)> {
        last_two_changes(&self.levels)
    }

    /// What each cache took in over the last two closed rounds (earlier,
    /// later); empty before two rounds have closed.
    pub fn last_taken(&self) -> Vec<(f64, f64)> {
        last_two_changes(&self.taken)
    }

    /// The level of each cache now.
    pub fn level(&self) -> &[f64] {
        self.levels.last().map_or(&[], |l| l.as_slice())
    }

    /// Replace the level just recorded (after a cache was filled).
    pub fn relevel(&mut self, levels: Vec<f64>) {
        if let Some(l) = self.levels.last_mut() {
            *l = levels;
        }
    }

    /// Whether measuring has begun.
    pub fn begun(&self) -> bool {
        self.cur.is_some()
    }

    /// Close the round ending at `self.next` with the host's figures `m`
    /// over it and the counters `snap`, cache levels and bytes the caches
    /// have taken in at its end. Returns whether the run is over.
    pub fn close(&mut self, m: Figures, snap: S, levels: Vec<f64>, taken: Vec<f64>) -> bool {
        self.levels.push(levels);
        self.taken.push(taken);
        let (start, t0) = self.cur.take().expect("a round is open");
        let bytes = m.all.read.bytes + m.all.write.bytes;
        let ios = m.all.read.count + m.all.write.count;
        self.rates.push(Round {
            rate: bytes as f64 / (self.len as f64 / 1e9),
            ios,
        });
        self.ring.push_back((m, start, t0));
        if self.ring.len() > WINDOW_ROUNDS {
            self.ring.pop_front();
        }
        self.cur = Some((snap, self.next));
        self.next += self.len;
        self.rates.len() >= self.max || (self.auto && self.steady())
    }

    /// The window: the host's figures merged over the last rounds, the
    /// counters at its start, its start and length, and the verdict.
    pub fn window(mut self) -> Option<(Figures, S, Ns, Ns, Steady)> {
        let (mut m, start, t0) = self.ring.pop_front()?;
        let n = 1 + self.ring.len() as u64;
        for (r, _, _) in &self.ring {
            m.merge(r);
        }
        let how = if self.auto {
            format!(
                "{CRITERION}; rounds of {} s, warm-up until steady (at most {MAX_ROUNDS} rounds)",
                self.len as f64 / 1e9
            )
        } else {
            format!(
                "{CRITERION}; rounds of {} s after the given ramp_time",
                self.len as f64 / 1e9
            )
        };
        let steady = Steady {
            reached: self.steady(),
            after_s: (t0 - self.origin) as f64 / 1e9,
            criterion: how,
            judged: true,
        };
        Some((m, start, t0, n * self.len, steady))
    }
}

/// The verdict on a one-pass run begun at `origin`, from the times at
/// which each fifth of its bytes had completed (`marks`: time and I/Os
/// completed by then) since `start`.
pub(crate) fn one_pass(origin: Ns, start: Ns, marks: &[(Ns, u64)], fifth: u64) -> Steady {
    let mut rates = Vec::with_capacity(marks.len());
    let (mut t, mut ios) = (start, 0);
    for &(tm, n) in marks {
        let dt = tm.saturating_sub(t).max(1);
        rates.push(Round {
            rate: fifth as f64 / (dt as f64 / 1e9),
            ios: n - ios,
        });
        (t, ios) = (tm, n);
    }
    Steady {
        reached: marks.len() == WINDOW_ROUNDS && is_steady(&rates),
        after_s: (start - origin) as f64 / 1e9,
        criterion: format!("{CRITERION}; one pass over size, rounds of a fifth of its bytes"),
        judged: true,
    }
}
