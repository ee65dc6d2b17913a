//! Latency and throughput accounting of host I/Os (HDR histograms).

use crate::result::{DirLatency, DirStats, LatencyDetail, Summary, FIO_LAT_EDGES_NS};
use crate::units::Ns;
use hdrhistogram::Histogram;

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
            // 1 ns .. 1 hour, 3 significant digits.
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid histogram bounds"),
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
