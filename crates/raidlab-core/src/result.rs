//! The result schema of docs/results.md (`--format json`), shared by both engines.

use serde::Serialize;

/// Version string written into every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Utilisation at which a resource counts as saturated, in both engines:
/// FIFO queues in front of a resource this busy grow without bound (M/M/1:
/// waiting time ∝ ρ/(1−ρ)).
pub const BOTTLENECK_UTIL: f64 = 0.85;

/// A utilisation or ratio as results print it: three decimals.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Per-direction figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DirStats {
    /// I/Os per second.
    pub iops: f64,
    /// 10^6 bytes per second.
    pub mbps: f64,
    /// Mean latency, ms.
    pub lat_avg_ms: f64,
    /// Maximum latency, ms.
    pub lat_max_ms: f64,
    /// Median latency, ms.
    pub lat_p50_ms: f64,
    /// 99th percentile latency, ms.
    pub lat_p99_ms: f64,
    /// 99.9th percentile latency, ms.
    pub lat_p999_ms: f64,
}

/// Summary over all I/Os of the measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// I/Os per second.
    pub iops: f64,
    /// 10^6 bytes per second.
    pub mbps: f64,
    /// Mean latency, ms.
    pub lat_avg_ms: f64,
    /// Maximum latency, ms.
    pub lat_max_ms: f64,
    /// Median latency, ms.
    pub lat_p50_ms: f64,
    /// 99th percentile latency, ms.
    pub lat_p99_ms: f64,
    /// 99.9th percentile latency, ms.
    pub lat_p999_ms: f64,
    /// Reads only.
    pub read: DirStats,
    /// Writes only.
    pub write: DirStats,
}

impl DirStats {
    /// A metric by its CSV name (`iops`, `mbps`, `lat_avg_ms`, ...).
    pub fn metric(&self, name: &str) -> Option<f64> {
        Some(match name {
            "iops" => self.iops,
            "mbps" => self.mbps,
            "lat_avg_ms" => self.lat_avg_ms,
            "lat_max_ms" => self.lat_max_ms,
            "lat_p50_ms" => self.lat_p50_ms,
            "lat_p99_ms" => self.lat_p99_ms,
            "lat_p999_ms" => self.lat_p999_ms,
            _ => return None,
        })
    }
}

impl RunResult {
    /// A published-measurement metric of the run: a summary metric
    /// ([`Summary::metric`]) or `waf`, the mean write amplification of the
    /// SSDs written to (`None` when no SSD was written).
    pub fn metric(&self, name: &str) -> Option<f64> {
        if name != crate::published::WAF {
            return self.summary.metric(name);
        }
        let was: Vec<f64> = self
            .components
            .iter()
            .filter_map(|c| c.write_amplification)
            .filter(|w| w.is_finite())
            .collect();
        (!was.is_empty()).then(|| was.iter().sum::<f64>() / was.len() as f64)
    }
}

impl Summary {
    /// A summary metric by its CSV name (`iops`, `mbps`, `lat_avg_ms`,
    /// `lat_max_ms`, ...), over all I/Os or, after `read_` or `write_`, over
    /// one direction (`read_lat_p99_ms`).
    pub fn metric(&self, name: &str) -> Option<f64> {
        if let Some(m) = name.strip_prefix("read_") {
            return self.read.metric(m);
        }
        if let Some(m) = name.strip_prefix("write_") {
            return self.write.metric(m);
        }
        DirStats {
            iops: self.iops,
            mbps: self.mbps,
            lat_avg_ms: self.lat_avg_ms,
            lat_max_ms: self.lat_max_ms,
            lat_p50_ms: self.lat_p50_ms,
            lat_p99_ms: self.lat_p99_ms,
            lat_p999_ms: self.lat_p999_ms,
        }
        .metric(name)
    }
}

/// One component's load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    /// Label, `x25e#0`.
    pub name: String,
    /// `ssd`, `hdd`, `controller`, `host`.
    pub kind: String,
    /// Busy share of its most loaded internal resource, 0..1.
    pub utilization: f64,
    /// That resource (`link`, `firmware`, `nand`, `roc`, `pcie`, `dma`, `cpu`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The saturated component of the run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bottleneck: bool,
    /// SSD write amplification (NAND writes / host writes) in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_amplification: Option<f64>,
    /// Commands a device completed in the window (devices only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoCounts>,
    /// An SSD's wear in the window (SSDs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wear: Option<Wear>,
}

/// An SSD's wear over the measurement window, projected to its rating.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Wear {
    /// Bytes the host wrote to the drive.
    pub host_write_bytes: u64,
    /// Bytes programmed into NAND: host writes × write amplification.
    pub nand_write_bytes: u64,
    /// The drive's rated endurance, TB written by the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rated_tbw: Option<f64>,
    /// Years until host writes at the window's rate reach the rating
    /// (`None`: no rating, or nothing written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub years_to_rated: Option<f64>,
}

/// Seconds in a Julian year (365.25 days), the unit endurance is told in.
pub const YEAR_S: f64 = 365.25 * 86_400.0;

impl Wear {
    /// Wear of a drive rated `rated_tbw` that took `host_write_bytes` with
    /// write amplification `wa` over `window_s` seconds.
    pub fn project(host_write_bytes: u64, wa: f64, rated_tbw: Option<f64>, window_s: f64) -> Wear {
        let rate = host_write_bytes as f64 / window_s.max(f64::MIN_POSITIVE);
        let years = rated_tbw
            .filter(|_| host_write_bytes > 0 && window_s > 0.0)
            .map(|tbw| tbw * 1e12 / rate / YEAR_S);
        Wear {
            host_write_bytes,
            nand_write_bytes: (host_write_bytes as f64 * wa.max(1.0)).round() as u64,
            rated_tbw,
            years_to_rated: years,
        }
    }
}

/// Commands and bytes a device served in the measurement window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoCounts {
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
}

impl IoCounts {
    /// Count one command of `bytes`.
    #[inline]
    pub fn add(&mut self, write: bool, bytes: u64) {
        if write {
            self.writes += 1;
            self.write_bytes += bytes;
        } else {
            self.reads += 1;
            self.read_bytes += bytes;
        }
    }
}

impl std::ops::Sub for IoCounts {
    type Output = IoCounts;
    fn sub(self, o: IoCounts) -> IoCounts {
        IoCounts {
            reads: self.reads - o.reads,
            writes: self.writes - o.writes,
            read_bytes: self.read_bytes - o.read_bytes,
            write_bytes: self.write_bytes - o.write_bytes,
        }
    }
}

/// The configuration as it was run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    /// The expression with every default made explicit (stripe units,
    /// layouts, cache policies, drive states, the host); it resolves to the
    /// same configuration.
    pub topology: String,
    /// Bytes the volume exposes (with several, the smallest: each job
    /// addresses that many bytes of every one).
    pub capacity_bytes: u64,
    /// Volumes the jobs address side by side (fio: a job's filenames).
    pub volumes: u32,
}

/// Host CPU use.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostStats {
    /// Share of all host cores busy with I/O, %.
    pub cpu_util_pct: f64,
}

/// Bookkeeping of the run itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SimStats {
    /// Simulated (or real) seconds measured.
    pub simulated_s: f64,
    /// Wall-clock seconds the run took (excluded from determinism checks).
    pub wall_s: f64,
    /// Events processed.
    pub events: u64,
    /// Host I/Os completed (all, including warm-up).
    pub host_ios: u64,
    /// Whether the measurement window was in steady state (simulator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::steady::Steady>,
    /// Rebuilds onto hot spares that ran during the simulation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rebuilds: Vec<RebuildStats>,
    /// What a trace replay did (workloads with `read_iolog`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayStats>,
}

/// One interval of a run's timeline (`log_avg_msec`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The interval's end, seconds into the measurement window.
    pub t_s: f64,
    /// I/Os completed in it, per second.
    pub iops: f64,
    /// Bytes moved in it, 10^6 B/s.
    pub mbps: f64,
    /// Mean latency of the I/Os completed in it, µs.
    pub lat_mean_us: f64,
    /// Their largest latency, µs.
    pub lat_max_us: f64,
}

/// A trace replay's account: what was replayed and how far issue fell
/// behind the trace's times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayStats {
    /// The trace's format.
    pub format: String,
    /// blkparse: the event replayed (`Q` queued or `D` dispatched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Whether I/Os went at their recorded times (false: as fast as
    /// `iodepth` allows, `replay_no_stall`).
    pub timed: bool,
    /// Reads and writes replayed (all jobs).
    pub ios: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Offsets moved into the span by `replay_fit`.
    pub fitted: u64,
    /// How offsets past the span were moved (`wrap` or `scale`).
    pub fit: String,
    /// Flushes replayed, each once the I/Os before it were back.
    #[serde(default)]
    pub flushes: u64,
    /// Trims passed over.
    pub skipped: u64,
    /// Timed replays: I/Os issued after their time, %.
    pub late_pct: f64,
    /// Timed replays: mean, median, 99th percentile and largest lag, µs.
    pub lag_mean_us: f64,
    /// See `lag_mean_us`.
    pub lag_p50_us: f64,
    /// See `lag_mean_us`.
    pub lag_p99_us: f64,
    /// See `lag_mean_us`.
    pub lag_max_us: f64,
    /// Whether the array kept up: 99 % of I/Os issued within
    /// [`KEPT_UP_LAG_US`] of their time.
    pub kept_up: bool,
    /// The trace stopped early: the error that stopped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The lag under which a timed replay counts as kept up, µs: 1 ms, the
/// resolution of fio's own v2 `wait` and of its `mtime` replay clock.
pub const KEPT_UP_LAG_US: f64 = 1000.0;

/// A simulated rebuild onto a hot spare in a missing member's place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RebuildStats {
    /// The array (`raid5 at column 1`).
    pub array: String,
    /// Bytes of the member to rebuild.
    pub member_bytes: u64,
    /// Bytes rebuilt by the end of the simulation.
    pub rebuilt_bytes: u64,
    /// Average rebuild rate over the simulation, 10^6 B/s.
    pub rate_mb_s: f64,
    /// When it finished (simulated seconds), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_s: Option<f64>,
    /// Time the whole rebuild takes at that rate, seconds.
    pub projected_s: f64,
}

/// The results of a job file's phases, run in turn (its job sections after
/// a `stonewall`): one document listing them in order.
#[derive(Debug, Clone, Serialize)]
pub struct Phased {
    /// The raidlab version that ran them.
    pub raidlab: String,
    /// Each phase's result, under its section's name.
    pub phases: Vec<PhaseResult>,
}

/// One phase's result: the section's name beside the result's own fields.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseResult {
    /// The job section's name (`seq-read`).
    pub phase: String,
    /// Its result, as a one-phase run reports it.
    #[serde(flatten)]
    pub result: RunResult,
}

impl Phased {
    /// The document of `runs`: (section name, result), in the order run.
    pub fn of(runs: &[(String, RunResult)]) -> Phased {
        Phased {
            raidlab: runs
                .first()
                .map_or_else(String::new, |(_, r)| r.raidlab.clone()),
            phases: runs
                .iter()
                .map(|(phase, result)| PhaseResult {
                    phase: phase.clone(),
                    result: result.clone(),
                })
                .collect(),
        }
    }
}

/// A complete result document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// raidlab version.
    pub raidlab: String,
    /// `sim` or `real`.
    pub engine: String,
    /// Topology expression.
    pub topology: String,
    /// Workload as run (after presets and defaults).
    pub workload: serde_json::Value,
    /// Seed.
    pub seed: u64,
    /// Summary figures.
    pub summary: Summary,
    /// Components.
    pub components: Vec<Component>,
    /// Host CPU.
    pub host: HostStats,
    /// Run bookkeeping.
    pub sim: SimStats,
    /// What only a real run has: engine, totals, members, verify.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real: Option<RealStats>,
    /// The configuration with its defaults applied (simulations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Resolved>,
    /// Per-interval figures over the window, when the workload asks for
    /// them (`log_avg_msec`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Interval>,
    /// Latency distribution per direction, for fio-compatible output
    /// (not part of the JSON result document).
    #[serde(skip)]
    pub latency: Option<LatencyDetail>,
    /// Job sections run side by side (a job file's sections without
    /// `stonewall`): each one's own figures over the same window, in the
    /// file's order. Empty for one workload.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<SectionResult>,
    /// The jobs that ended in error, tripping one of fio's guards
    /// (`max_latency`, `rate_min`, `rate_iops_min`), in the order they
    /// did; the run then exits with status 1. Empty when none did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<crate::guard::JobError>,
    /// Each `latency_target` search: the depth its job ended at (fio's
    /// `latency_depth`). Empty when no job searched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latency_target: Vec<crate::depth_search::Found>,
    /// fio's `steadystate` stop, where the jobs had one: whether they
    /// reached it, and the last window's samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<crate::steadystate::SteadyReport>,
}

/// One job section's figures in a run of sections side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SectionResult {
    /// The section's name (`[reader]`: `reader`).
    pub name: String,
    /// Its workload as run.
    pub workload: serde_json::Value,
    /// Its jobs' figures.
    pub summary: Summary,
    /// Its latency distribution per direction, for fio-compatible output.
    #[serde(skip)]
    pub latency: Option<LatencyDetail>,
}

impl SectionResult {
    /// Section `name`, running `w` (seeded by `seed`), measured as `m`
    /// over a window of `window_ns`.
    pub fn measured(
        name: &str,
        w: &crate::workload::Workload,
        m: &crate::metrics::Metrics,
        seed: u64,
        window_ns: u64,
    ) -> SectionResult {
        SectionResult {
            name: name.to_string(),
            workload: w.to_json(seed),
            summary: m.summary(window_ns as f64 / 1e9),
            latency: Some(m.detail(window_ns)),
        }
    }
}

/// The latency distribution of one direction in the measurement window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirLatency {
    /// I/Os completed.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Smallest latency, ns.
    pub min_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Mean latency, ns.
    pub mean_ns: f64,
    /// Standard deviation of latency, ns.
    pub stddev_ns: f64,
    /// (percentile in %, latency ns) at fio's default percentile list.
    pub percentiles: Vec<(f64, u64)>,
}

/// Latency distributions of reads and writes, and the window they cover.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyDetail {
    /// Reads.
    pub read: DirLatency,
    /// Writes.
    pub write: DirLatency,
    /// Length of the measurement window, ns.
    pub window_ns: u64,
    /// I/Os of both directions per latency bucket: bucket `i` holds
    /// latencies in `[FIO_LAT_EDGES_NS[i-1], FIO_LAT_EDGES_NS[i])`, the last
    /// one everything from the last edge up (fio's `latency_ns/us/ms`).
    pub buckets: Vec<u64>,
}

/// Upper edges of fio's latency buckets, ns: `latency_ns` 2..1000 ns,
/// `latency_us` 2..1000 us, `latency_ms` 2..2000 ms (fio stat.c).
pub const FIO_LAT_EDGES_NS: [u64; 31] = [
    2,
    4,
    10,
    20,
    50,
    100,
    250,
    500,
    750,
    1_000,
    2_000,
    4_000,
    10_000,
    20_000,
    50_000,
    100_000,
    250_000,
    500_000,
    750_000,
    1_000_000,
    2_000_000,
    4_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    750_000_000,
    1_000_000_000,
    2_000_000_000,
];

/// I/Os and bytes of one direction, whole run (ramp included).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IoTotals {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
}

/// One member of a real run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemberStats {
    /// Path, or `missing`.
    pub path: String,
    /// `file`, `block` or `missing`.
    pub kind: String,
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Share of the run with at least one operation in flight (iostat's %util).
    pub utilization: f64,
    /// Where its data starts, after its md superblock (0 for a lone
    /// member without metadata).
    pub data_offset: u64,
    /// Why it failed during the run (an I/O error), when it did: the
    /// array carried on without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// Outcome of `--verify`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct VerifyStats {
    /// 512-byte units checked on read.
    pub checked_units: u64,
    /// Units read that carry no verify header and that neither the run nor
    /// its verify state knows were written (never written under verify):
    /// not checked, and no failure.
    pub unwritten_units: u64,
    /// Units that failed (and could not be repaired).
    pub mismatches: u64,
    /// Units that failed and were repaired from redundancy (read-repair).
    pub repaired: u64,
    /// The first failures and repairs, described.
    pub first: Vec<String>,
}

/// The real engine's own figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RealStats {
    /// `io_uring` or `psync`.
    pub engine: String,
    /// Every member opened with O_DIRECT.
    pub direct: bool,
    /// Host buffers registered with io_uring.
    pub registered_buffers: bool,
    /// Parity kernel (`avx2`, `scalar`).
    pub parity_kernel: String,
    /// Reads, whole run.
    pub read: IoTotals,
    /// Writes, whole run.
    pub write: IoTotals,
    /// Members, in expression order.
    pub members: Vec<MemberStats>,
    /// Verify outcome, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyStats>,
    /// The array's metadata, when the root is an array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array: Option<ArrayMeta>,
}

/// What a real run did with its arrays' md superblocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ArrayMeta {
    /// UUID of the root array, as mdadm prints UUIDs.
    pub uuid: String,
    /// The run created the arrays (its members were blank, or `--create`).
    pub created: bool,
    /// Event count the members carry at the end of the run.
    pub events: u64,
    /// Bytes rewritten to resynchronise arrays found not cleanly stopped.
    pub resynced_bytes: u64,
    /// Hot spares that took missing members' places and were rebuilt there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub took_over: Vec<String>,
    /// After a takeover, the expression that names the members as they now
    /// stand (later runs use it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}
