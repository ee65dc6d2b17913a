//! Latency and throughput accounting of host I/Os (HDR histograms).

use crate::result::{DirLatency, DirStats, LatencyDetail, Summary, FIO_LAT_EDGES_NS};
use crate::units::Ns;
use hdrhistogram::Histogram;

/// A histogram of nanoseconds: 1 ns to 1 hour, 3 significant digits.
fn ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Figures of one direction.
pub struct DirMetrics {
    /// I/Os completed in the window.
    pub count: u64,
    /// Bytes moved in the window.
    pub bytes: u64,
    /// Sum of latencies, ns.
    pub lat_sum: u128,
    /// Latency histogram, ns.
    pub hist: Histogram<u64>,
}

impl DirMetrics {
    fn new() -> Self {
        DirMetrics {
            count: 0,
            bytes: 0,
            lat_sum: 0,
            hist: ns_histogram(),
        }
    }

    /// The distribution: min, max, mean, standard deviation and fio's
    /// default percentiles (histogram values, 3 significant digits).
    pub fn latency(&self) -> DirLatency {
        if self.count == 0 {
            return DirLatency::default();
        }
        DirLatency {
            count: self.count,
            bytes: self.bytes,
            min_ns: self.hist.min(),
            max_ns: self.hist.max(),
            mean_ns: self.lat_sum as f64 / self.count as f64,
            stddev_ns: self.hist.stdev(),
            percentiles: FIO_PERCENTILES
                .iter()
                .map(|&p| (p, self.hist.value_at_quantile(p / 100.0)))
                .collect(),
        }
    }

    fn stats(&self, secs: f64) -> DirStats {
        if self.count == 0 || secs <= 0.0 {
            return DirStats::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        DirStats {
            iops: self.count as f64 / secs,
            mbps: self.bytes as f64 / secs / 1e6,
            lat_avg_ms: self.lat_sum as f64 / self.count as f64 / 1e6,
            lat_max_ms: ms(self.hist.max()),
            lat_p50_ms: ms(self.hist.value_at_quantile(0.5)),
            lat_p99_ms: ms(self.hist.value_at_quantile(0.99)),
            lat_p999_ms: ms(self.hist.value_at_quantile(0.999)),
        }
    }
}

/// fio's default `percentile_list` (fio(1), "percentile_list").
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Host-side measurements.
pub struct Metrics {
    /// Reads.
    pub read: DirMetrics,
    /// Writes.
    pub write: DirMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            read: DirMetrics::new(),
            write: DirMetrics::new(),
        }
    }
}

impl Metrics {
    /// Record one completed I/O.
    #[inline]
    pub fn record(&mut self, read: bool, bytes: u32, lat: Ns) {
        let d = if read {
            &mut self.read
        } else {
            &mut self.write
        };
        d.count += 1;
        d.bytes += bytes as u64;
        d.lat_sum += lat as u128;
        d.hist.saturating_record(lat.max(1));
    }

    /// Add another set of measurements (another thread's) to this one.
    pub fn merge(&mut self, o: &Metrics) {
        for (a, b) in [(&mut self.read, &o.read), (&mut self.write, &o.write)] {
            a.count += b.count;
            a.bytes += b.bytes;
            a.lat_sum += b.lat_sum;
            a.hist.add(&b.hist).expect("same histogram bounds");
        }
    }

    /// Both directions' distributions over a window of `window_ns`.
    pub fn detail(&self, window_ns: u64) -> LatencyDetail {
        let mut buckets = vec![0u64; FIO_LAT_EDGES_NS.len() + 1];
        for h in [&self.read.hist, &self.write.hist] {
            for v in h.iter_recorded() {
                let lat = h.median_equivalent(v.value_iterated_to());
                let i = FIO_LAT_EDGES_NS.partition_point(|&e| e <= lat);
                buckets[i] += v.count_at_value();
            }
        }
        LatencyDetail {
            read: self.read.latency(),
            write: self.write.latency(),
            window_ns,
            buckets,
        }
    }

    /// Summary over a window of `secs` seconds.
    pub fn summary(&self, secs: f64) -> Summary {
        let mut all = self.read.hist.clone();
        all.add(&self.write.hist).expect("same histogram bounds");
        let count = self.read.count + self.write.count;
        let ms = |ns: u64| ns as f64 / 1e6;
        let r = self.read.stats(secs);
        let w = self.write.stats(secs);
        if count == 0 || secs <= 0.0 {
            return Summary {
                read: r,
                write: w,
                ..Summary::default()
            };
        }
        Summary {
            iops: count as f64 / secs,
            mbps: (self.read.bytes + self.write.bytes) as f64 / secs / 1e6,
            lat_avg_ms: (self.read.lat_sum + self.write.lat_sum) as f64 / count as f64 / 1e6,
            lat_max_ms: ms(all.max()),
            lat_p50_ms: ms(all.value_at_quantile(0.5)),
            lat_p99_ms: ms(all.value_at_quantile(0.99)),
            lat_p999_ms: ms(all.value_at_quantile(0.999)),
            read: r,
            write: w,
        }
    }
}

/// How far a timed trace replay issued its I/Os behind their recorded
/// times (fio's replay "lag").
#[derive(Debug, Clone)]
pub struct Lag {
    /// I/Os issued at or after their time.
    pub count: u64,
    /// Those issued late (more than 1 µs after their time).
    pub late: u64,
    /// Sum of lags, ns.
    pub sum: u128,
    /// Lag histogram, ns (0 recorded as 1).
    pub hist: Histogram<u64>,
}

impl Default for Lag {
    fn default() -> Self {
        Lag {
            count: 0,
            late: 0,
            sum: 0,
            hist: ns_histogram(),
        }
    }
}

impl Lag {
    /// One I/O issued `lag` ns after its time.
    pub fn record(&mut self, lag: Ns) {
        self.count += 1;
        // Late: more than 1 µs behind, the resolution of fio's iolog v3 times.
        self.late += u64::from(lag > 1_000);
        self.sum += lag as u128;
        self.hist.saturating_record(lag.max(1));
    }

    /// Another job's lags added.
    pub fn merge(&mut self, o: &Lag) {
        self.count += o.count;
        self.late += o.late;
        self.sum += o.sum;
        self.hist.add(&o.hist).expect("same histogram bounds");
    }

    /// `(mean, p50, p99, max)` in µs (zeros when nothing was issued).
    pub fn micros(&self) -> (f64, f64, f64, f64) {
        if self.count == 0 {
            return (0.0, 0.0, 0.0, 0.0);
        }
        let us = |ns: u64| if ns <= 1 { 0.0 } else { ns as f64 / 1e3 };
        (
            self.sum as f64 / self.count as f64 / 1e3,
            us(self.hist.value_at_quantile(0.5)),
            us(self.hist.value_at_quantile(0.99)),
            us(self.hist.max()),
        )
    }
}

/// Most intervals a timeline keeps: 2^20 rows of 32 bytes (32 MiB), a
/// day at `log_avg_msec=100`; completions past the last are not logged
/// and the timeline says so.
pub const MAX_INTERVALS: usize = 1 << 20;

/// One interval's sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Row {
    ios: u64,
    bytes: u64,
    lat_sum: u64,
    lat_max: u64,
}

/// Figures per interval of the measurement window (fio's `log_avg_msec`):
/// completions are counted in the interval they fall in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    step: Ns,
    rows: Vec<Row>,
    /// Completions after the last interval kept.
    pub overflow: u64,
}

impl Timeline {
    /// A timeline of intervals `step` ns long.
    pub fn new(step: Ns) -> Timeline {
        assert!(step > 0, "an interval has a length");
        Timeline {
            step,
            rows: Vec::new(),
            overflow: 0,
        }
    }

    /// One I/O of `bytes` completed `at` ns into the window after `lat` ns.
    #[inline]
    pub fn record(&mut self, at: Ns, bytes: u32, lat: Ns) {
        let i = (at / self.step) as usize;
        if i >= MAX_INTERVALS {
            self.overflow += 1;
            return;
        }
        if i >= self.rows.len() {
            self.rows.resize(i + 1, Row::default());
        }
        let r = &mut self.rows[i];
        r.ios += 1;
        r.bytes += bytes as u64;
        r.lat_sum = r.lat_sum.saturating_add(lat);
        r.lat_max = r.lat_max.max(lat);
    }

    /// Another thread's timeline (same step) added.
    pub fn merge(&mut self, o: &Timeline) {
        debug_assert_eq!(self.step, o.step);
        if o.rows.len() > self.rows.len() {
            self.rows.resize(o.rows.len(), Row::default());
        }
        for (a, b) in self.rows.iter_mut().zip(&o.rows) {
            a.ios += b.ios;
            a.bytes += b.bytes;
            a.lat_sum = a.lat_sum.saturating_add(b.lat_sum);
            a.lat_max = a.lat_max.max(b.lat_max);
        }
        self.overflow += o.overflow;
    }

    /// The intervals whole within the window of `len` ns from `t0` (the
    /// timeline's clock): those that start at or after `t0` and end by its
    /// end, timed from `t0` (a partial one at either end would read low).
    pub fn intervals(&self, t0: Ns, len: Ns) -> Vec<crate::result::Interval> {
        let first = t0.div_ceil(self.step);
        let last = ((t0 + len) / self.step).min(MAX_INTERVALS as u64);
        let secs = self.step as f64 / 1e9;
        (first..last.max(first))
            .map(|i| {
                let r = self.rows.get(i as usize).copied().unwrap_or_default();
                crate::result::Interval {
                    t_s: ((i + 1) * self.step - t0) as f64 / 1e9,
                    iops: r.ios as f64 / secs,
                    mbps: r.bytes as f64 / secs / 1e6,
                    lat_mean_us: if r.ios > 0 {
                        r.lat_sum as f64 / r.ios as f64 / 1e3
                    } else {
                        0.0
                    },
                    lat_max_us: r.lat_max as f64 / 1e3,
                }
            })
            .collect()
    }
}
