//! The drift: how late the emulation's answers went out against the
//! model's completion times, the verdict on whether it kept up, and the
//! model's own latencies it is weighed against.

use raidlab_core::metrics::Lag;
use raidlab_core::units::Ns;

/// Answers later than this much past the model's time, at the 99th
/// percentile over a second, count as the host falling behind (beside a
/// tenth of the model's mean latency): 50 µs, the order of one request's
/// protocol overhead over a local socket.
pub(crate) const BEHIND_NS: Ns = 50_000;

/// Whether answers late by `late_p99_us` at the 99th percentile fell
/// behind a model whose mean latency is `model_mean_us`: by more than
/// [`BEHIND_NS`] plus a tenth of that mean.
pub(crate) fn behind(late_p99_us: f64, model_mean_us: f64) -> bool {
    late_p99_us * 1e3 > BEHIND_NS as f64 + 0.1 * model_mean_us * 1e3
}

/// What the emulation measured over the whole serve.
#[derive(Debug)]
pub struct Drift {
    /// Requests the model answered.
    pub answered: u64,
    /// How late answers went out past the model's completion times.
    pub late: Lag,
    /// The model's own mean latency of reads and writes, µs.
    pub model_mean_us: f64,
    /// The model's own 98th, 99th and 99.5th percentile latencies of reads
    /// and writes, µs (where rare pauses sit near 1 % of requests, the
    /// 99th alone moves a lot between runs; its neighbours bound it).
    pub model_tail_us: [f64; 3],
    /// Seconds in which answers fell behind the model.
    pub behind_seconds: u64,
}

impl Drift {
    /// Whether answers kept to the model's times: late by no more than
    /// [`BEHIND_NS`] plus a tenth of the model's mean latency at the 99th
    /// percentile over the whole serve.
    pub fn kept_up(&self) -> bool {
        let (_, _, p99, _) = self.late.micros();
        !behind(p99, self.model_mean_us)
    }

    /// The drift as a JSON object (`serve --report`).
    pub fn json(&self) -> serde_json::Value {
        let (mean, p50, p99, max) = self.late.micros();
        serde_json::json!({
            "answered": self.answered,
            "model_lat_mean_us": self.model_mean_us,
            "model_lat_p98_us": self.model_tail_us[0],
            "model_lat_p99_us": self.model_tail_us[1],
            "model_lat_p99_5_us": self.model_tail_us[2],
            "late_mean_us": mean,
            "late_p50_us": p50,
            "late_p99_us": p99,
            "late_max_us": max,
            "behind_seconds": self.behind_seconds,
            "kept_up": self.kept_up(),
        })
    }
}

/// Mean latency of reads and writes together, µs.
pub(crate) fn mean_latency_us(m: &raidlab_core::metrics::Metrics) -> f64 {
    let n = m.read.count + m.write.count;
    if n == 0 {
        return 0.0;
    }
    let sum = m.read.lat_sum as f64 + m.write.lat_sum as f64;
    sum / n as f64 / 1e3
}

/// The latency of reads and writes together at quantile `q`, µs.
pub(crate) fn latency_at_us(m: &raidlab_core::metrics::Metrics, q: f64) -> f64 {
    let mut h = m.read.hist.clone();
    h.add(&m.write.hist).expect("same histogram bounds");
    if h.is_empty() {
        return 0.0;
    }
    h.value_at_quantile(q) as f64 / 1e3
}
