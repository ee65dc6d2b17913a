//! Steady state, decided as the SNIA Solid State Storage Performance Test
//! Specification decides it (PTS-E 1.1 §2.1 and PTS 2.0.2 §2.1, "Steady
//! State"): a measurement window of five rounds is steady when
//!
//! - the data excursion, max − min of the rounds' throughput, is at most
//!   20 % of the window's average, and
//! - the slope excursion, the difference between the first and the last
//!   round on the least-squares line through the window, is at most 10 % of
//!   the average.
//!
//! PTS rounds last a minute of a real drive, thousands of I/Os or more. A
//! simulated round can hold few I/Os (an HDD at queue depth 1), and then the
//! counting noise of a perfectly steady process alone would fail the test.
//! So each bound is widened by that noise: with `n` I/Os in a round the
//! relative standard deviation of a round's count is 1/√n, the expected
//! range of five such rounds is 2.33 σ (the mean range of five normal
//! samples, d2 = 2.326 in the control-chart tables of ASTM E2587), and the
//! fitted line's end-to-end excursion has standard deviation
//! 4 σ/√10 ≈ 1.26 σ (least squares over x = 0..4: Var(slope) = σ²/10).
//! With a thousand I/Os per round the widening is 7 % and 4 %; past a few
//! thousand it is negligible, and the test is PTS's own.
//!
//! A simulator can also look inside. Throughput alone is fooled by a
//! write-back cache that fills or drains at a steady pace: the host sees a
//! flat rate for as long as the transient lasts, then a different one (a
//! 4 GB cache taking 512-byte writes fills for minutes at cache speed, then
//! runs at its drives' pace). So the window must also hold every write-back
//! cache's dirty level steady across its six round boundaries: within
//! [`LEVEL_EXCURSION`] of the cache's size, and with a net change no larger
//! than [`LEVEL_NOISE_TIMES`] times the level's own noise (the bytes its
//! destages in flight hold), however slowly it moves.

use serde::Serialize;

/// Rounds in the measurement window (PTS: five).
pub const WINDOW_ROUNDS: usize = 5;
/// Most rounds a run takes looking for steady state (PTS: 25).
pub const MAX_ROUNDS: usize = 25;
/// Allowed data excursion, a fraction of the window's average (PTS: 20 %).
pub const DATA_EXCURSION: f64 = 0.20;
/// Allowed slope excursion, a fraction of the window's average (PTS: 10 %).
pub const SLOPE_EXCURSION: f64 = 0.10;
/// Allowed change of a write-back cache's dirty level across the window, a
/// fraction of the cache's size (see the module text).
pub const LEVEL_EXCURSION: f64 = 0.05;
/// A net change of the dirty level across the window above this many times
/// its noise is a trend (see the module text).
pub const LEVEL_NOISE_TIMES: f64 = 4.0;
/// Mean range of five normal samples in σ (ASTM E2587, d2 for n = 5).
const RANGE_OF_FIVE: f64 = 2.326;
/// Standard deviation of the fitted line's excursion over five rounds, in σ
/// (4 / √10).
const SLOPE_NOISE: f64 = 1.265;

/// The criterion, as results quote it.
pub const CRITERION: &str = "SNIA PTS: 5 rounds, max-min <= 20% of mean, fitted slope excursion <= 10% (widened by counting noise); write-back dirty levels within 5% of the cache and gaining under 10% of their intake";

/// One round: its throughput and how many I/Os it counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// Bytes per second over the round.
    pub rate: f64,
    /// I/Os completed in the round.
    pub ios: u64,
}

/// Whether the last [`WINDOW_ROUNDS`] of `rounds` are a steady window.
/// Fewer rounds, or a window that moved nothing, are not steady.
pub fn is_steady(rounds: &[Round]) -> bool {
    if rounds.len() < WINDOW_ROUNDS {
        return false;
    }
    let w = &rounds[rounds.len() - WINDOW_ROUNDS..];
    let n = w.len() as f64;
    let mean = w.iter().map(|r| r.rate).sum::<f64>() / n;
    let ios = w.iter().map(|r| r.ios).min().unwrap_or(0);
    if mean <= 0.0 || ios == 0 {
        return false;
    }
    let noise = 1.0 / (ios as f64).sqrt();
    let (lo, hi) = w.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| {
        (lo.min(r.rate), hi.max(r.rate))
    });
    let data_ok = hi - lo <= (DATA_EXCURSION + RANGE_OF_FIVE * noise) * mean;
    // Least-squares slope over x = 0..n-1.
    let xm = (n - 1.0) / 2.0;
    let (sxy, sxx) = w.iter().enumerate().fold((0.0, 0.0), |(sxy, sxx), (i, r)| {
        let dx = i as f64 - xm;
        (sxy + dx * (r.rate - mean), sxx + dx * dx)
    });
    let excursion = (sxy / sxx * (n - 1.0)).abs();
    let slope_ok = excursion <= (SLOPE_EXCURSION + SLOPE_NOISE * noise) * mean;
    data_ok && slope_ok
}

/// Whether every cache's level (fractions of its size, one vector per round
/// boundary, oldest first) holds over the last [`WINDOW_ROUNDS`] + 1
/// boundaries: within [`LEVEL_EXCURSION`], and with a net change within
/// [`LEVEL_NOISE_TIMES`] × `noise` (each cache's, a fraction of its size)
/// or within [`SLOPE_EXCURSION`] of what the cache took in over the window
/// (`taken`: bytes taken in by each boundary, fractions of its size; see
/// [`level_allowance`]). Without caches, trivially true.
pub fn levels_steady(levels: &[Vec<f64>], taken: &[Vec<f64>], noise: &[f64]) -> bool {
    assert_eq!(
        levels.len(),
        taken.len(),
        "a level and an intake at every boundary"
    );
    if levels.len() <= WINDOW_ROUNDS {
        return levels.first().is_none_or(|l| l.is_empty());
    }
    let from = levels.len() - WINDOW_ROUNDS - 1;
    let (w, t) = (&levels[from..], &taken[from..]);
    (0..w[0].len()).all(|c| {
        let (lo, hi) = w.iter().fold((f64::MAX, f64::MIN), |(lo, hi), l| {
            (lo.min(l[c]), hi.max(l[c]))
        });
        let net = (w[w.len() - 1][c] - w[0][c]).abs();
        let intake = t[t.len() - 1][c] - t[0][c];
        hi - lo <= LEVEL_EXCURSION && net <= level_allowance(noise[c], intake, WINDOW_ROUNDS)
    })
}

/// How far a cache's dirty level may move over `rounds` rounds that took
/// in `intake` (both fractions of the cache) and still be no trend: its
/// noise's share of [`LEVEL_NOISE_TIMES`] × `noise` (the allowance over a
/// whole window), or [`SLOPE_EXCURSION`] of the intake. A cache that gains
/// less than that share of its writes destages all the rest, so the pace it
/// would end at lies within the slope test's own tolerance of today's. The
/// steady test applies it to the window; the simulator's fill ahead to
/// each of two rounds, filling only a cache that gains more.
pub fn level_allowance(noise: f64, intake: f64, rounds: usize) -> f64 {
    let noise_share = LEVEL_NOISE_TIMES * noise * rounds as f64 / WINDOW_ROUNDS as f64;
    noise_share.max(SLOPE_EXCURSION * intake)
}

/// What a result says about its measurement window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Steady {
    /// Whether the measurement window passed the test.
    pub reached: bool,
    /// Simulated seconds before the measurement window began.
    pub after_s: f64,
    /// The test applied, and how the warm-up was chosen.
    pub criterion: String,
    /// Whether the window was tested: not where a job's `latency_target`
    /// search chose it (`reached` is then false, and `criterion` says so).
    #[serde(skip_serializing_if = "is_true")]
    pub judged: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(rates: &[f64], ios: u64) -> Vec<Round> {
        rates.iter().map(|&rate| Round { rate, ios }).collect()
    }

    #[test]
    fn flat_windows_are_steady_and_trends_are_not() {
        assert!(is_steady(&rounds(
            &[100.0, 101.0, 99.0, 100.0, 100.5],
            1 << 20
        )));
        // Within 20 % but climbing 15 % across the window: slope fails.
        assert!(!is_steady(&rounds(
            &[92.0, 96.0, 100.0, 104.0, 108.0],
            1 << 20
        )));
        // Flat slope, one round 30 % off: data excursion fails.
        assert!(!is_steady(&rounds(
            &[100.0, 130.0, 100.0, 100.0, 100.0],
            1 << 20
        )));
        // Too few rounds.
        assert!(!is_steady(&rounds(&[100.0; 4], 1 << 20)));
        // Only the last five count.
        assert!(is_steady(&rounds(
            &[10.0, 50.0, 100.0, 100.0, 100.0, 100.0, 100.0],
            1 << 20
        )));
        // Nothing moved.
        assert!(!is_steady(&rounds(&[0.0; 5], 0)));
    }

    #[test]
    fn a_cache_still_filling_is_not_steady() {
        let noise = [0.001, 0.001];
        // Each cache took in a fifth of its size a round.
        let intake =
            |n: usize| -> Vec<Vec<f64>> { (0..n).map(|i| vec![0.2 * i as f64; 2]).collect() };
        let flat = vec![vec![0.97, 0.0]; 6];
        assert!(levels_steady(&flat, &intake(6), &noise));
        let filling: Vec<Vec<f64>> = (0..6).map(|i| vec![0.1 * i as f64, 0.0]).collect();
        assert!(!levels_steady(&filling, &intake(6), &noise));
        // A slow fill is a trend too, once it is beyond the level's noise
        // and a tenth of what the cache took in.
        let slow: Vec<Vec<f64>> = (0..6).map(|i| vec![0.002 * i as f64, 0.0]).collect();
        let little =
            |n: usize| -> Vec<Vec<f64>> { (0..n).map(|i| vec![0.005 * i as f64; 2]).collect() };
        assert!(!levels_steady(&slow, &little(6), &noise));
        assert!(
            levels_steady(&slow, &little(6), &[0.01, 0.01]),
            "within a noisier level"
        );
        assert!(
            levels_steady(&slow, &intake(6), &noise),
            "gaining a hundredth of its intake: its destages keep up"
        );
        // Only the last six boundaries count.
        let mut settled = filling.clone();
        settled.extend(vec![vec![0.98, 0.0]; 6]);
        assert!(levels_steady(&settled, &intake(12), &noise));
        assert!(
            levels_steady(&[vec![], vec![]], &[vec![], vec![]], &[]),
            "no caches"
        );
        // One round allows a fifth of the window's noise term, and a tenth
        // of its own intake whatever the rounds.
        assert!((level_allowance(0.001, 0.0, 1) - 0.0008).abs() < 1e-12);
        assert!((level_allowance(0.001, 0.0, WINDOW_ROUNDS) - 0.004).abs() < 1e-12);
        assert!((level_allowance(0.001, 0.2, 1) - 0.02).abs() < 1e-12);
    }

    #[test]
    fn counting_noise_widens_the_bounds() {
        // A 25 % range is noise when a round holds 100 I/Os, a trend when it
        // holds a million.
        let r = [100.0, 112.0, 88.0, 105.0, 95.0];
        assert!(is_steady(&rounds(&r, 100)));
        assert!(!is_steady(&rounds(&r, 1_000_000)));
    }
}
