//! A trace's characterisation (`raidlab trace-stats`): its mix, sizes,
//! sequentiality, arrivals and working set, in one streaming pass and
//! bounded memory, and the synthetic fio job with the same
//! characteristics.

use super::{Op, Record};
use crate::units::Ns;
use serde::Serialize;

/// Registers of the working-set estimator: 2^12 (4 KiB of state), a
/// HyperLogLog's standard error 1.04/√m = 1.6 % (Flajolet et al., 2007).
const HLL_BITS: u32 = 12;

/// Granule of the working set, bytes: a 4 KiB page, the unit flash
/// translation layers and page caches map.
const PAGE: u64 = 4096;

/// Most pages one record adds to the working set; larger I/Os are
/// sampled evenly (keeps a pass at ≥ 1 M records/s for 64 MiB I/Os).
const PAGES_PER_RECORD: u64 = 64;

/// A HyperLogLog estimate of distinct 4 KiB pages touched.
#[derive(Debug, Clone)]
struct Distinct {
    regs: Vec<u8>,
}

impl Distinct {
    fn new() -> Distinct {
        Distinct {
            regs: vec![0; 1 << HLL_BITS],
        }
    }

    fn add(&mut self, key: u64) {
        let h = crate::rng::mix(key, 0x5752_4B53);
        let idx = (h >> (64 - HLL_BITS)) as usize;
        let rest = (h << HLL_BITS) | (1 << (HLL_BITS - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        if rank > self.regs[idx] {
            self.regs[idx] = rank;
        }
    }

    fn estimate(&self) -> f64 {
        let m = self.regs.len() as f64;
        let sum: f64 = self.regs.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let raw = alpha * m * m / sum;
        let zeros = self.regs.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            // Small-range correction: linear counting.
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }
}

/// Streaming accumulator of a trace's characteristics.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Records per operation: read, write, trim, flush.
    pub count: [u64; 4],
    /// Bytes read and written.
    pub bytes: [u64; 2],
    /// Reads and writes by size, power-of-two buckets (bucket k: sizes in
    /// (2^(k-1), 2^k]).
    pub sizes: [[u64; 41]; 2],
    /// Exact sizes of the eight most common, counted while they fit.
    top: Vec<(u64, u64)>,
    /// Reads and writes that start where the previous one of the same
    /// direction ended.
    pub sequential: [u64; 2],
    next_offset: [Option<u64>; 2],
    /// One past the highest byte addressed.
    pub end: u64,
    first: Option<Ns>,
    last: Ns,
    prev: Option<Ns>,
    gaps: u64,
    gap_sum: f64,
    gap_sq: f64,
    pages: Distinct,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            count: [0; 4],
            bytes: [0; 2],
            sizes: [[0; 41]; 2],
            top: Vec::new(),
            sequential: [0; 2],
            next_offset: [None; 2],
            end: 0,
            first: None,
            last: 0,
            prev: None,
            gaps: 0,
            gap_sum: 0.0,
            gap_sq: 0.0,
            pages: Distinct::new(),
        }
    }
}

/// Distinct sizes tracked exactly for `--as-job`'s `bssplit`.
const TOP_SIZES: usize = 64;

impl Stats {
    /// Count one record.
    pub fn add(&mut self, r: &Record) {
        let k = match r.op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Flush => 3,
        };
        self.count[k] += 1;
        if let Some(t) = r.at {
            self.arrival(t);
        }
        if k >= 2 {
            return;
        }
        self.bytes[k] += r.len;
        let bucket = (64 - r.len.saturating_sub(1).leading_zeros()).min(40) as usize;
        self.sizes[k][bucket] += 1;
        self.count_size(r.len);
        if self.next_offset[k] == Some(r.offset) {
            self.sequential[k] += 1;
        }
        self.next_offset[k] = Some(r.offset + r.len);
        self.end = self.end.max(r.offset + r.len);
        self.touch(r.offset, r.len);
    }

    fn arrival(&mut self, t: Ns) {
        self.first.get_or_insert(t);
        self.last = self.last.max(t);
        if let Some(p) = self.prev {
            let g = t.saturating_sub(p) as f64;
            self.gaps += 1;
            self.gap_sum += g;
            self.gap_sq += g * g;
        }
        self.prev = Some(t);
    }

    fn count_size(&mut self, len: u64) {
        if let Some(e) = self.top.iter_mut().find(|e| e.0 == len) {
            e.1 += 1;
        } else if self.top.len() < TOP_SIZES {
            self.top.push((len, 1));
        }
    }

    fn touch(&mut self, offset: u64, len: u64) {
        let first = offset / PAGE;
        let pages = (offset + len).div_ceil(PAGE) - first;
        let step = pages.div_ceil(PAGES_PER_RECORD).max(1);
        let mut p = 0;
        while p < pages {
            self.pages.add(first + p);
            p += step;
        }
    }

    /// Reads and writes.
    pub fn ios(&self) -> u64 {
        self.count[0] + self.count[1]
    }

    /// The characterisation as a report.
    pub fn summary(&self) -> Summary {
        let ios = self.ios().max(1) as f64;
        let span = self.last.saturating_sub(self.first.unwrap_or(0));
        let mean_gap = if self.gaps > 0 {
            self.gap_sum / self.gaps as f64
        } else {
            0.0
        };
        let var = if self.gaps > 0 {
            (self.gap_sq / self.gaps as f64 - mean_gap * mean_gap).max(0.0)
        } else {
            0.0
        };
        let mut top = self.top.clone();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        Summary {
            reads: self.count[0],
            writes: self.count[1],
            trims: self.count[2],
            flushes: self.count[3],
            read_bytes: self.bytes[0],
            write_bytes: self.bytes[1],
            read_pct: 100.0 * self.count[0] as f64 / ios,
            sequential_pct: 100.0 * (self.sequential[0] + self.sequential[1]) as f64 / ios,
            mean_size: (self.bytes[0] + self.bytes[1]) as f64 / ios,
            sizes: top.into_iter().take(8).collect(),
            extent: self.end,
            working_set: (self.pages.estimate() * PAGE as f64) as u64,
            duration_s: span as f64 / 1e9,
            iops: if span > 0 {
                ios / (span as f64 / 1e9)
            } else {
                0.0
            },
            interarrival_us: mean_gap / 1e3,
            interarrival_cv: if mean_gap > 0.0 {
                var.sqrt() / mean_gap
            } else {
                0.0
            },
        }
    }
}

/// What `trace-stats` reports.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// Read records.
    pub reads: u64,
    /// Write records.
    pub writes: u64,
    /// Trim records.
    pub trims: u64,
    /// Flush records.
    pub flushes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Reads' share of reads and writes, %.
    pub read_pct: f64,
    /// Share of reads and writes that start where the previous one of the
    /// same direction ended, %.
    pub sequential_pct: f64,
    /// Mean size of reads and writes, bytes.
    pub mean_size: f64,
    /// The most common sizes, `(bytes, count)`, most common first.
    pub sizes: Vec<(u64, u64)>,
    /// One past the highest byte addressed.
    pub extent: u64,
    /// Distinct 4 KiB pages touched, in bytes (an estimate within ~2 %).
    pub working_set: u64,
    /// From the first record's time to the last's, seconds.
    pub duration_s: f64,
    /// Reads and writes per second over that time.
    pub iops: f64,
    /// Mean time between records, µs.
    pub interarrival_us: f64,
    /// Coefficient of variation of that time (1: Poisson arrivals).
    pub interarrival_cv: f64,
}

impl Summary {
    /// The synthetic fio job with the same mix, sizes, sequentiality,
    /// extent and (for a timed trace) arrival rate.
    pub fn as_job(&self) -> String {
        let mut out = String::from("[global]\nioengine=libaio\ndirect=1\n\n[trace]\n");
        let rw = match (self.reads > 0, self.writes > 0) {
            (true, false) => "randread",
            (false, true) => "randwrite",
            _ => "randrw",
        };
        out += &format!("rw={rw}\n");
        if rw == "randrw" {
            out += &format!("rwmixread={}\n", self.read_pct.round() as u32);
        }
        out += &format!(
            "percentage_random={}\n",
            (100.0 - self.sequential_pct).round().clamp(0.0, 100.0) as u32
        );
        out += &format!("bssplit={}\n", bssplit(&self.sizes));
        out += &format!("size={}\n", round_up(self.extent.max(4096), 4096));
        if self.flushes > 0 && self.writes > 0 {
            // The trace's writes a flush, as fio's fsync=N flushes after
            // every N writes.
            let every = (self.writes as f64 / self.flushes as f64).round().max(1.0);
            out += &format!("fsync={}\n", every as u64);
        }
        if self.iops > 0.0 {
            out += &format!(
                "rate_iops={}\nrate_process=poisson\n",
                self.iops.round().max(1.0) as u64
            );
            // As long as the trace lasted, however often that wraps round
            // the region (fio would otherwise stop after one pass).
            out += &format!(
                "runtime={}\ntime_based=1\n",
                self.duration_s.ceil().max(1.0) as u64
            );
        }
        out
    }
}

fn round_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// `bssplit=` from the most common sizes, rounded to 512 bytes, with
/// weights that add up to 100.
fn bssplit(sizes: &[(u64, u64)]) -> String {
    let sizes: Vec<(u64, u64)> = sizes
        .iter()
        .map(|&(b, n)| (round_up(b.max(512), 512).min(super::MAX_IO), n))
        .collect();
    let total: u64 = sizes.iter().map(|x| x.1).sum::<u64>().max(1);
    let mut parts: Vec<(u64, u32)> = sizes
        .iter()
        .map(|&(b, n)| (b, (100 * n / total) as u32))
        .filter(|x| x.1 > 0)
        .collect();
    if parts.is_empty() {
        parts.push((sizes.first().map_or(4096, |x| x.0), 100));
    }
    let short = 100 - parts.iter().map(|x| x.1).sum::<u32>();
    parts[0].1 += short;
    parts
        .iter()
        .map(|(b, p)| format!("{}/{p}", crate::units::format_size(*b)))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at: u64, op: Op, offset: u64, len: u64) -> Record {
        Record {
            at: Some(at),
            op,
            offset,
            len,
        }
    }

    #[test]
    fn a_known_stream_gives_known_figures() {
        let mut s = Stats::default();
        // 100 sequential 4 KiB reads, then 100 random-ish 8 KiB writes,
        // one every 10 µs.
        for i in 0..100 {
            s.add(&rec(i * 10_000, Op::Read, i * 4096, 4096));
        }
        for i in 0..100u64 {
            s.add(&rec(
                (100 + i) * 10_000,
                Op::Write,
                (i * 7919 % 1000) * 8192,
                8192,
            ));
        }
        let m = s.summary();
        assert_eq!((m.reads, m.writes), (100, 100));
        assert!((m.read_pct - 50.0).abs() < 1e-9);
        assert!(
            (m.sequential_pct - 49.5).abs() < 1e-9,
            "{}",
            m.sequential_pct
        );
        assert_eq!(m.sizes, vec![(4096, 100), (8192, 100)]);
        assert!((m.interarrival_us - 10.0).abs() < 1e-9);
        assert!(m.interarrival_cv < 1e-6);
        // 100 read pages + 200 write pages, some shared with the reads.
        let exact = {
            let mut set = std::collections::BTreeSet::new();
            (0..100u64).for_each(|i| {
                set.insert(i);
            });
            (0..100u64).for_each(|i| {
                let p = (i * 7919 % 1000) * 2;
                set.insert(p);
                set.insert(p + 1);
            });
            set.len() as f64 * 4096.0
        };
        let err = (m.working_set as f64 - exact).abs() / exact;
        assert!(err < 0.05, "working set {} vs {exact}", m.working_set);
        let job = m.as_job();
        assert!(job.contains("rw=randrw\nrwmixread=50\n"), "{job}");
        assert!(job.contains("bssplit=4k/50:8k/50\n"), "{job}");
        assert!(job.contains("rate_iops=100503\n"), "{job}");
        assert!(!job.contains("fsync"), "no flushes: {job}");
        crate::workload::parse_job_file(&job).expect("the job parses");
        // Flushes: the synthetic job flushes after as many writes a flush.
        for i in 0..30 {
            s.add(&rec(3_000_000 + i, Op::Flush, 0, 0));
        }
        let job = s.summary().as_job();
        assert!(job.contains("fsync=3\n"), "100 writes, 30 flushes: {job}");
        let w = crate::workload::parse_job_file(&job).expect("the job parses");
        assert_eq!(w.fsync, 3);
    }

    #[test]
    fn the_estimate_holds_at_scale() {
        let mut d = Distinct::new();
        for k in 0..200_000u64 {
            d.add(k * 3);
            d.add(k * 3); // duplicates add nothing
        }
        let e = d.estimate();
        assert!((e - 200_000.0).abs() / 200_000.0 < 0.05, "{e}");
    }
}
