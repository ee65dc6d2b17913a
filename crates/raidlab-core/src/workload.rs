//! Workloads in fio's vocabulary (docs/workloads.md), fio job files, and the one
//! deterministic I/O stream generator both engines use.

use crate::batch::{Batch, MAX_BATCH};
use crate::depth_search::LatencyTarget;
use crate::error::{Error, Result};
use crate::guard::Guards;
use crate::pace::Rate;
use crate::rng::{mix, Rng};
use crate::steadystate::SteadyStop;
use crate::topology::SsdState;
use crate::trace::replay::{Feed, Replay, Tally};
use crate::units::{format_duration, format_size, parse_duration, parse_size, Ns};
use serde::Serialize;

mod backlog;
mod fileservice;
mod include;
mod jobfile;
mod kb_base;
mod keywords;
mod sequencer;
mod stream;
mod strided;
mod zoned;
pub use include::{
    expand_includes, locate_error, IncludeReader, Origin, MAX_INCLUDES, MAX_INCLUDE_DEPTH,
};
pub use jobfile::{
    parse_job_file, parse_job_file_noted, parse_job_phases, substitute, Check, JobPhase, JobSection,
};
pub use keywords::{expand_keywords, Keywords};
/// Bounds on job files.
pub mod jobfile_limits {
    pub use super::jobfile::{MAX_LINE, MAX_PHASES};
}
pub use backlog::{Backlog, MAX_BACKLOG};
pub use fileservice::{FileChooser, FileService, FileServiceKind};
pub use sequencer::Sequencer;
pub use strided::Strided;
pub use zoned::Zones;

/// Why a workload does not fit the volume it runs on
/// ([`Workload::span_on`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpanError {
    /// `size=` beyond the volume.
    #[error("size={size} bytes is larger than the volume ({cap} bytes)")]
    SizeTooLarge {
        /// Requested span.
        size: u64,
        /// Volume size.
        cap: u64,
    },
    /// The largest block does not fit the span.
    #[error("block size {bs} bytes is larger than the span ({span} bytes)")]
    BlockTooLarge {
        /// Largest block size.
        bs: u64,
        /// The span addressed.
        span: u64,
    },
    /// `zoned_abs` zones that cover more than a job's region (fio stops
    /// the job: "zoned_abs sizes exceed file size").
    #[error("random_distribution=zoned_abs: the zones cover {zones} bytes, more than job {job}'s region ({span} bytes)")]
    ZonesPastEnd {
        /// The bytes the zones cover.
        zones: u64,
        /// The job.
        job: u32,
        /// Its region's bytes.
        span: u64,
    },
    /// A job's region starts at or past the volume's end (fio refuses it:
    /// "offset extends end").
    #[error("job {job} would start at byte {offset} (offset, plus offset_increment x {job}), at or past the volume's end ({cap} bytes)")]
    OffsetPastEnd {
        /// The job.
        job: u32,
        /// Where it would start.
        offset: u64,
        /// Volume size.
        cap: u64,
    },
}

/// A place or a length on the volume as fio's `offset`, `offset_increment`
/// and `size` give it: bytes, or a percentage of the volume. Serialized as
/// the result's JSON writes it: bytes as a number, a percentage as `"N%"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// Bytes.
    Bytes(u64),
    /// A percentage of the volume, 0 to 100.
    Percent(u32),
}

impl Extent {
    /// Parse `4g`, `1000` or `25%`.
    fn parse(key: &str, v: &str) -> Result<Extent> {
        if let Some(p) = v.strip_suffix('%') {
            return Ok(Extent::Percent(int(key, p, 0, 100)? as u32));
        }
        let b = parse_size(v).map_err(|m| Error::Workload(format!("{key}: {m}")))?;
        Ok(Extent::Bytes(b))
    }

    /// Parse a place (`offset`, `offset_increment`): as [`Extent::parse`],
    /// byte values whole sectors (both engines address 512-byte sectors).
    fn parse_place(key: &str, v: &str) -> Result<Extent> {
        match Extent::parse(key, v)? {
            Extent::Bytes(b) if b % 512 != 0 => werr(format!(
                "{key}={v}: give a multiple of 512 bytes or a percentage (N%)"
            )),
            e => Ok(e),
        }
    }

    /// Bytes on a volume of `cap` bytes, a percentage taken as it is
    /// (fio's `get_start_offset` rounds only the sum).
    fn unrounded(self, cap: u64) -> u64 {
        match self {
            Extent::Bytes(b) => b,
            Extent::Percent(p) => (cap as u128 * p as u128 / 100) as u64,
        }
    }

    /// Bytes on a volume of `cap` bytes, a percentage rounded down to a
    /// multiple of `align` (the smallest block size), as fio rounds `size`.
    pub fn on(self, cap: u64, align: u64) -> u64 {
        let b = self.unrounded(cap);
        match self {
            Extent::Bytes(_) => b,
            Extent::Percent(_) => b / align.max(1) * align.max(1),
        }
    }

    /// As fio's job files write it.
    fn word(self) -> String {
        match self {
            Extent::Bytes(b) => format_size(b),
            Extent::Percent(p) => format!("{p}%"),
        }
    }

    /// In a JSON document: bytes as a number, a percentage as `"N%"`.
    fn json(self) -> serde_json::Value {
        match self {
            Extent::Bytes(b) => b.into(),
            Extent::Percent(p) => format!("{p}%").into(),
        }
    }
}

impl Serialize for Extent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match *self {
            Extent::Bytes(b) => s.serialize_u64(b),
            Extent::Percent(p) => s.serialize_str(&format!("{p}%")),
        }
    }
}

/// One job's region of a volume: its I/O stays in `start..start + span`
/// (fio's `offset` and `offset_increment` place it, `size` bounds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// Bytes.
    pub span: u64,
}

impl Region {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.start + self.span
    }

    /// The smallest region holding all of `regions` (empty at 0 when there
    /// are none).
    pub fn cover(regions: &[Region]) -> Region {
        let start = regions.iter().map(|r| r.start).min().unwrap_or(0);
        let end = regions.iter().map(Region::end).max().unwrap_or(0);
        Region {
            start,
            span: end - start,
        }
    }
}

#[cfg(test)]
use stream::*;
pub use stream::{job_streams, volume_streams, volume_streams_from, Io, JobStream};

/// I/O direction pattern (`rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed.
    Rw,
    /// Random mixed.
    RandRw,
}

impl Rw {
    fn from_word(s: &str) -> Option<Rw> {
        Some(match s {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::Rw,
            "randrw" => Rw::RandRw,
            _ => return None,
        })
    }
    /// fio's word.
    pub fn word(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::Rw => "rw",
            Rw::RandRw => "randrw",
        }
    }
    /// Random offsets by default.
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
}

/// Offset distribution of random I/O.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "param", rename_all = "lowercase")]
pub enum Dist {
    /// Uniform.
    Random,
    /// Zipf with exponent θ.
    Zipf(f64),
    /// Pareto with shape h.
    Pareto(f64),
    /// fio's `zoned`: shares of the accesses on shares of the region.
    Zoned(Zones),
    /// fio's `normal:dev`: a bell over the region's blocks, widened by a
    /// uniform spread of `dev` per cent of them, scattered.
    Normal(f64),
}

/// What fio's `thinktime_blocks` counts (`thinktime_blocks_type`): the
/// job's I/Os completed (fio's default) or issued since its last think.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkCount {
    /// I/Os completed (`complete`, fio's `td->io_blocks`).
    #[default]
    Complete,
    /// I/Os issued (`issue`, fio's `td->io_issues`).
    Issue,
}

/// When a job with `thinktime` stalls, as fio's `handle_thinktime`
/// (backend.c) decides: the job counts its I/Os (completed, or issued with
/// `thinktime_blocks_type=issue`); once `thinktime_blocks` more than at its
/// last think time are counted, it waits for its I/Os in flight
/// (`io_u_quiesce`) and then thinks. fio checks after each I/O it issues,
/// and when the queue is full after reaping a completion (its
/// `wait_for_completions` reaps at least one, usually one); the count
/// remembered is the one checked, so I/Os that complete while the job
/// quiesces count towards the next think time. Both engines keep one per
/// job.
///
/// With `thinktime_iotime` the job also stalls once it has issued I/O for
/// that long since its last think time ended (or it started); without an
/// explicit `thinktime_blocks` that is then the only trigger (fio: "its
/// default value 1 does not work together with thinktime_iotime").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkClock {
    /// I/Os between stalls; `None`: I/O time alone stalls the job.
    blocks: Option<u64>,
    count: ThinkCount,
    issued: u64,
    completed: u64,
    last: u64,
    iotime: Ns,
    since: Ns,
}

impl ThinkClock {
    /// The clock of a job of `w`; `None` without `thinktime`.
    pub fn of(w: &Workload) -> Option<ThinkClock> {
        (w.thinktime > 0).then(|| {
            let mut c = ThinkClock::new(w.thinktime_blocks, w.thinktime_blocks_type);
            c.iotime = w.thinktime_iotime;
            c
        })
    }

    /// A clock that stalls every `blocks` I/Os counted as `count` says
    /// (fio's defaults: 1, completed); with `blocks` `None`, only
    /// `thinktime_iotime` stalls it.
    pub fn new(blocks: Option<u32>, count: ThinkCount) -> ThinkClock {
        ThinkClock {
            blocks: blocks.map(u64::from),
            count,
            issued: 0,
            completed: 0,
            last: 0,
            iotime: 0,
            since: 0,
        }
    }

    /// The job issued an I/O.
    pub fn issued(&mut self) {
        self.issued += 1;
    }

    /// One of the job's I/Os completed.
    pub fn completed(&mut self) {
        self.completed += 1;
    }

    /// fio's check: whether the job stalls now (waits for its I/Os in
    /// flight, then thinks); when it does, the count is remembered. `now`
    /// (ns since the job started) is asked for only with
    /// `thinktime_iotime`.
    pub fn stall(&mut self, now: impl FnOnce() -> Ns) -> bool {
        let b = match self.count {
            ThinkCount::Complete => self.completed,
            ThinkCount::Issue => self.issued,
        };
        let due = (self.iotime > 0 && now().saturating_sub(self.since) >= self.iotime)
            || self
                .blocks
                .is_some_and(|n| b >= self.last.saturating_add(n));
        if due {
            self.last = b;
        }
        due
    }

    /// The job's think time ended at `now` (ns since it started): its
    /// I/O time runs from here.
    pub fn thought(&mut self, now: Ns) {
        self.since = now;
    }
}

/// The petrov2010 workload presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadPreset {
    /// 1 job, depth 1.
    Latency,
    /// 1 job, depth 32.
    Light,
    /// 10 jobs, depth 16 each.
    Heavy,
}

/// A parsed workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Direction pattern.
    pub rw: Rw,
    /// Block size in bytes (the first of `bssplit` when given).
    pub bs: u64,
    /// `(size, weight)` pairs, a size drawn with its weight's share of
    /// their sum; empty unless `bssplit` or `bsrange` was given. Under
    /// `bssplit` the weights are its percentages; under `bsrange`, each
    /// size's share of the range as fio draws it ([`bsrange_split`]).
    /// With a second list (`bssplit=READS,WRITES`) these are the reads'.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bssplit: Vec<(u64, u32)>,
    /// Writes' `(size, weight)` pairs when `bssplit` or `bsrange` gives a
    /// list per direction; empty: writes use `bssplit`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bssplit_write: Vec<(u64, u32)>,
    /// fio's `bsrange` as given, `(min, max)` for reads and, when apart,
    /// for writes: echoed instead of the sizes it expands to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bsrange: Vec<(u64, u64)>,
    /// Read share for mixed patterns, %.
    pub rwmixread: u32,
    /// Share of random I/O, % (IOMeter's "% random").
    pub percentage_random: u32,
    /// Outstanding I/Os per job.
    pub iodepth: u32,
    /// Jobs.
    pub numjobs: u32,
    /// Span addressed, bytes (`None` = whole volume, or `size_pct` of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// fio's `size=N%`: the span as a share of the volume (then `size` is
    /// `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_pct: Option<u32>,
    /// fio's `offset`: where job 0's region starts (`None`: at 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Extent>,
    /// fio's `offset_increment`: job `j`'s region starts `j` times this
    /// after `offset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_increment: Option<Extent>,
    /// fio's `offset_align`: what a start placed by a percentage (of
    /// `offset` or `offset_increment`) is rounded up to a multiple of
    /// (`None`: the smallest block size, fio's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_align: Option<u64>,
    /// fio's `io_size` (`io_limit`): bytes one pass moves, within the
    /// region, wrapping round it when larger (`None`: the region's bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_size: Option<u64>,
    /// fio's `loops`: passes a one-pass run makes (1 by default).
    #[serde(skip_serializing_if = "is_one")]
    pub loops: u32,
    /// fio's `number_ios`: a job stops after this many I/Os if no other
    /// end comes first (`None`: no such end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_ios: Option<u64>,
    /// Measured time, ns (`None` = one pass over `size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Ns>,
    /// Warm-up time, ns, when given; `None`: a simulated time-based run
    /// warms up until it is in steady state (docs/workloads.md), a one-pass
    /// or real run starts measuring at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_time: Option<Ns>,
    /// Offset distribution.
    pub random_distribution: Dist,
    /// Think time between I/Os of one job, ns.
    pub thinktime: Ns,
    /// fio's `thinktime_blocks`: the I/Os a job counts between think times
    /// (1, fio's default: after every I/O); `None` where `thinktime_iotime`
    /// alone brings the stalls (given without `thinktime_blocks`).
    #[serde(skip_serializing_if = "is_every_io")]
    pub thinktime_blocks: Option<u32>,
    /// fio's `thinktime_blocks_type`: what `thinktime_blocks` counts.
    #[serde(skip_serializing_if = "is_complete")]
    pub thinktime_blocks_type: ThinkCount,
    /// fio's `thinktime_spin`, ns: the think time starts with the job's
    /// thread spinning this long (its CPU busy), then sleeps the rest; a
    /// spin longer than `thinktime` makes the stall that long.
    #[serde(skip_serializing_if = "is_zero_ns")]
    pub thinktime_spin: Ns,
    /// fio's `thinktime_iotime`, ns: a job also thinks once it has issued
    /// I/O for this long since its last think time (0: never).
    #[serde(skip_serializing_if = "is_zero_ns")]
    pub thinktime_iotime: Ns,
    /// Random seed (`None` = the command's `--seed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Preset used, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<WorkloadPreset>,
    /// Starting state of every SSD.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_state")]
    pub state: Option<SsdState>,
    /// fio's `direct=0`: a real run goes through the page cache (`direct=1`,
    /// the default, is O_DIRECT). The simulator models the devices, so it
    /// reads nothing from it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub buffered: bool,
    /// fio's `norandommap`: a one-pass random job may pick a block twice
    /// and miss others. By default (fio's random map) one pass over `size`
    /// visits every block once, in random order.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub norandommap: bool,
    /// fio's `hipri` (io_uring, pvsync2): each job polls for its
    /// completions instead of waiting for the interrupt (simulator only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hipri: bool,
    /// fio's `blockalign`: random offsets are multiples of this (`None`:
    /// of the smallest size of the I/O's direction, fio's `min_bs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blockalign: Option<u64>,
    /// fio's `sync=1` (O_DSYNC): every write completes only once it is
    /// durable, so each is followed by a cache flush down the tree.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sync: bool,
    /// fio's `fsync=N` / `fdatasync=N`: after every N writes a job waits
    /// for its I/Os in flight, flushes, and carries on (0: never). On a raw
    /// volume the two are the same flush.
    #[serde(skip_serializing_if = "is_zero")]
    pub fsync: u32,
    /// fio's `end_fsync` (and `fsync_on_close`, the same for a job's one
    /// file): a one-pass job that wrote flushes its volumes once its last
    /// I/O is back, and its run lasts until the flush is.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub end_fsync: bool,
    /// fio's `rate`, `rate_iops` and `rate_process`: how fast each job may
    /// issue, per direction ([`crate::pace`]).
    #[serde(skip_serializing_if = "no_limit")]
    pub rate: Rate,
    /// fio's `iodepth_batch_submit`, `iodepth_batch_complete_min`/`_max`
    /// and `iodepth_low`: how a job hands its I/Os over and reaps them
    /// ([`crate::batch`]).
    #[serde(skip_serializing_if = "Batch::is_default")]
    pub batch: Batch,
    /// fio's offset modifier (`rw=randread:8`, `rw=write:4k`) and
    /// `rw_sequencer`.
    #[serde(skip_serializing_if = "Sequencer::is_default")]
    pub sequencer: Sequencer,
    /// fio's `log_avg_msec`: the result's timeline has intervals this
    /// long (`None`: no timeline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_avg_msec: Option<u32>,
    /// fio's `read_iolog`: the jobs replay this trace instead of drawing
    /// offsets ([`crate::trace::replay`]).
    #[serde(skip)]
    pub replay: Option<Box<Replay>>,
    /// fio's strided zones (`zonemode=strided`, `zonesize`, `zonerange`,
    /// `zoneskip`; `None`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strided: Option<Strided>,
    /// fio's `verify_backlog` (and `verify_backlog_batch`): written pieces
    /// read back as the job goes (`None`: only after, if at all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backlog: Option<Backlog>,
    /// fio's `exitall`: once one job of the phase has finished, the
    /// others stop issuing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exitall: bool,
    /// fio's `max_latency`, `rate_min`, `rate_iops_min` and `rate_cycle`:
    /// what a job must keep to, or end in error ([`crate::guard`]).
    #[serde(skip_serializing_if = "no_guard")]
    pub guards: Guards,
    /// fio's `latency_target`, `latency_window`, `latency_percentile` and
    /// `latency_run`: the job searches for the deepest queue that keeps
    /// to a latency ([`crate::depth_search`]).
    #[serde(skip_serializing_if = "no_latency_target")]
    pub latency_target: LatencyTarget,
    /// fio's `steadystate`, `ss_dur`, `ss_ramp` and `ss_interval`: the
    /// jobs stop once their rate is steady by fio's criterion
    /// ([`crate::steadystate`]).
    #[serde(skip_serializing_if = "no_steadystate")]
    pub steadystate: SteadyStop,
    /// fio's `file_service_type`: which of a job's volumes its next I/O
    /// goes to.
    #[serde(skip_serializing_if = "FileService::is_default")]
    pub file_service: FileService,
    /// fio's `bs_is_seq_rand`: the reads' block sizes serve sequential
    /// I/Os and the writes' random ones, whatever their direction.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bs_is_seq_rand: bool,
}

fn no_steadystate(s: &SteadyStop) -> bool {
    !s.any()
}

fn no_guard(g: &Guards) -> bool {
    !g.any()
}

fn no_latency_target(t: &LatencyTarget) -> bool {
    !t.any()
}

fn no_limit(r: &Rate) -> bool {
    !r.limits()
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_ns(n: &Ns) -> bool {
    *n == 0
}

fn is_complete(c: &ThinkCount) -> bool {
    *c == ThinkCount::Complete
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `thinktime_blocks` at fio's default: a think after every I/O.
fn is_every_io(n: &Option<u32>) -> bool {
    *n == Some(1)
}

fn ser_state<S: serde::Serializer>(
    s: &Option<SsdState>,
    ser: S,
) -> std::result::Result<S::Ok, S::Error> {
    match s {
        Some(st) => ser.serialize_str(st.word()),
        None => ser.serialize_none(),
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            rw: Rw::Read,
            bs: 4096,
            bssplit: Vec::new(),
            bssplit_write: Vec::new(),
            bsrange: Vec::new(),
            rwmixread: 50,
            percentage_random: 0,
            iodepth: 1,
            numjobs: 1,
            size: None,
            size_pct: None,
            offset: None,
            offset_increment: None,
            offset_align: None,
            io_size: None,
            loops: 1,
            number_ios: None,
            runtime: None,
            ramp_time: None,
            random_distribution: Dist::Random,
            thinktime: 0,
            thinktime_blocks: Some(1),
            thinktime_blocks_type: ThinkCount::Complete,
            thinktime_spin: 0,
            thinktime_iotime: 0,
            seed: None,
            preset: None,
            state: None,
            buffered: false,
            norandommap: false,
            hipri: false,
            blockalign: None,
            sync: false,
            fsync: 0,
            end_fsync: false,
            rate: Rate::default(),
            batch: Batch::default(),
            sequencer: Sequencer::default(),
            log_avg_msec: None,
            replay: None,
            strided: None,
            backlog: None,
            exitall: false,
            guards: Guards::default(),
            latency_target: LatencyTarget::default(),
            steadystate: SteadyStop::default(),
            file_service: FileService::default(),
            bs_is_seq_rand: false,
        }
    }
}

/// Longest wait between one job's I/Os a workload may ask for, seconds:
/// `thinktime`'s bound (60,000,000 µs), which rate caps keep to as well.
const MAX_GAP_S: f64 = 60.0;

/// Most written pieces all of a workload's jobs may hold for
/// `verify_backlog` at once: 4 Mi pieces of 16 bytes, 64 MiB.
const MAX_BACKLOG_PIECES: u64 = 1 << 22;

/// Most jobs a workload may run (`numjobs`).
pub const MAX_NUMJOBS: u32 = 4096;

/// Most passes a one-pass run may make (`loops`): a bound on the input,
/// far past any benchmark's (fio's own is a 32-bit count); a run's length
/// is bounded anyway by the rate checks and the long-run note.
pub const MAX_LOOPS: u64 = 1 << 20;

/// The longest `thinktime_iotime`: an hour, past any benchmark's cycle
/// (a bound on the input).
pub const MAX_IOTIME: Ns = 3_600_000_000_000;

/// The largest `number_ios`: 2^48 I/Os, past any run's (a limit, not a
/// load: a job ends at its pass or runtime if that comes first).
pub const MAX_NUMBER_IOS: u64 = 1 << 48;

/// Most I/Os a workload may keep outstanding in all (numjobs × iodepth):
/// 2^20, sixteen times fio's own largest iodepth of one job (65,536). No
/// array raidlab models needs more to saturate, and the bound keeps both
/// engines' request tables small (tens of MiB).
pub const MAX_OUTSTANDING: u64 = 1 << 20;

/// fio's other names for the keys raidlab spells one way: `readwrite` is
/// `rw`, `blocksize` is `bs`, `randseed` is `seed` (fio's HOWTO gives both
/// spellings), and the aliases of options.c (`.alias`): `timeout` is
/// `runtime`, `fileoffset` is `offset`; any other key is itself.
fn fio_long_name(k: &str) -> &str {
    match k {
        "readwrite" => "rw",
        "blocksize" => "bs",
        "blocksize_range" => "bsrange",
        "randseed" => "seed",
        "io_limit" => "io_size",
        "timeout" => "runtime",
        "fileoffset" => "offset",
        other => other,
    }
}

/// The message for a key that is none: the nearest known key when it is a
/// typo or two away, and the list.
fn unknown_key(k: &str) -> String {
    let near = all_keys()
        .filter(|n| crate::preset::edit_distance(k, n) <= 2)
        .min_by_key(|n| crate::preset::edit_distance(k, n));
    match near {
        Some(n) => format!("unknown key '{k}' (did you mean {n}?)"),
        None => format!(
            "unknown key '{k}' (known: {})",
            all_keys().copied().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Every key of the `k=v` language: [`KEYS`], the batching keys
/// ([`Batch::KEYS`]), the guards' ([`crate::guard::KEYS`]), the latency
/// target's ([`crate::depth_search::KEYS`]), fio's steady-state stop's
/// ([`crate::steadystate::KEYS`]), then [`REPLAY_KEYS`].
pub fn all_keys() -> impl Iterator<Item = &'static &'static str> {
    KEYS.iter()
        .chain(Batch::KEYS)
        .chain(crate::guard::KEYS)
        .chain(crate::depth_search::KEYS)
        .chain(crate::steadystate::KEYS)
        .chain(REPLAY_KEYS)
}

/// Keys of the `k=v` language, but for the batching keys ([`Batch::KEYS`])
/// and the replay's ([`REPLAY_KEYS`]).
pub const KEYS: &[&str] = &[
    "rw",
    "bs",
    "bssplit",
    "bsrange",
    "rwmixread",
    "percentage_random",
    "iodepth",
    "numjobs",
    "size",
    "offset",
    "offset_increment",
    "offset_align",
    "io_size",
    "zonemode",
    "zonesize",
    "zonerange",
    "zoneskip",
    "zonecapacity",
    "verify_backlog",
    "verify_backlog_batch",
    "exitall",
    "file_service_type",
    "bs_is_seq_rand",
    "loops",
    "number_ios",
    "filesize",
    "runtime",
    "ramp_time",
    "random_distribution",
    "thinktime",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_spin",
    "thinktime_iotime",
    "seed",
    "preset",
    "state",
    "direct",
    "sync",
    "fsync",
    "fdatasync",
    "end_fsync",
    "fsync_on_close",
    "blockalign",
    "ba",
    "norandommap",
    "hipri",
    "rate",
    "rate_iops",
    "rate_process",
    "rw_sequencer",
    "seq_position",
    "io_submit_mode",
    "log_avg_msec",
];

/// The keys that describe a trace replay (all but `read_iolog` need it);
/// keys of the language beside [`KEYS`].
pub const REPLAY_KEYS: &[&str] = &[
    "read_iolog",
    "trace_format",
    "trace_device",
    "trace_event",
    "replay_no_stall",
    "replay_time_scale",
    "replay_scale",
    "replay_align",
    "replay_fit",
];

fn werr<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Workload(msg.into()))
}

fn int(key: &str, v: &str, lo: u64, hi: u64) -> Result<u64> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => werr(format!(
            "{key}={v}: expected a whole number from {lo} to {hi}"
        )),
    }
}

/// Most a think time may stall a job: 60 s.
const MAX_THINK_US: u64 = 60_000_000;

/// A think time (`thinktime`, `thinktime_spin`) as fio reads it, ns: a
/// time option (options.c `is_time`) in microseconds unless a unit is
/// given (`250`, `100ms`, `1s`), fio's resolution being the microsecond;
/// at most [`MAX_THINK_US`].
fn think_time(key: &str, v: &str) -> Result<Ns> {
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(int(key, v, 0, MAX_THINK_US)? * 1000);
    }
    parse_duration(v)
        .ok()
        .filter(|&t| t % 1000 == 0 && t <= MAX_THINK_US * 1000)
        .ok_or_else(|| {
            Error::Workload(format!(
                "{key}={v}: give a time up to 60 s in whole microseconds (microseconds unless a unit is given: 250, 100ms, 1s)"
            ))
        })
}

/// Largest `offset_align`: 1 TiB, past any region's alignment.
const MAX_OFFSET_ALIGN: u64 = 1 << 40;

/// fio's `offset_align` (bytes): 0 is fio's default, the smallest block
/// size (`None`); otherwise a multiple of 512, so that the starts it makes
/// stay sector-aligned for direct I/O.
fn offset_align(v: &str) -> Result<Option<u64>> {
    match parse_size(v) {
        Ok(0) => Ok(None),
        Ok(a) if a % 512 == 0 && a <= MAX_OFFSET_ALIGN => Ok(Some(a)),
        _ => werr(format!(
            "offset_align={v}: give 0 (the smallest block size) or a multiple of 512 bytes up to 1t"
        )),
    }
}

fn block(key: &str, v: &str) -> Result<u64> {
    let b = parse_size(v).map_err(|m| Error::Workload(format!("{key}: {m}")))?;
    if b < 512 || b % 512 != 0 || b > 64 << 20 {
        return werr(format!(
            "{key}={v}: block sizes are multiples of 512 from 512 to 64m"
        ));
    }
    Ok(b)
}

impl Workload {
    /// Parse `k=v k=v ...`. `preset=` applies first; explicit keys override it.
    pub fn parse(s: &str) -> Result<Workload> {
        let mut pairs = Vec::new();
        for tok in s.split_whitespace() {
            let Some((k, v)) = tok.split_once('=') else {
                return werr(format!("'{tok}' is not key=value"));
            };
            if k.is_empty() || v.is_empty() {
                return werr(format!("'{tok}' is not key=value"));
            }
            let k = fio_long_name(k);
            if pairs.iter().any(|(pk, _): &(&str, &str)| *pk == k) {
                return werr(format!("key '{k}' given twice"));
            }
            pairs.push((k, v));
        }
        Self::from_pairs(&pairs)
    }

    /// Build from key/value pairs (shared by the string and job-file readers).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Result<Workload> {
        let mut w = Workload::default();
        w.apply_preset(pairs)?;
        let mut explicit_random = None;
        let mut zone_keys = strided::ZoneKeys::default();
        let mut backlog_keys = backlog::BacklogKeys::default();
        for &(k, v) in pairs {
            if k == "preset"
                || REPLAY_KEYS.contains(&k)
                || zone_keys.set(k, v).or_else(werr)?
                || backlog_keys.set(k, v).or_else(werr)?
            {
                continue;
            }
            w.set_key(k, v, &mut explicit_random)?;
        }
        w.strided = zone_keys.settle().or_else(werr)?;
        w.backlog = backlog_keys.settle();
        if !w.bssplit.is_empty() {
            w.bs = w.bssplit[0].0;
        }
        let has = |key: &str| pairs.iter().any(|(k, _)| *k == key);
        if has("bssplit") && pairs.iter().any(|(k, v)| *k == "bs" && v.contains(',')) {
            return werr("give per-direction sizes with bs=R,W or with bssplit, not both");
        }
        // As in fio, `bsrange` wins over a plain `bs` (it sets the sizes
        // fio draws from); beside per-direction sizes or a split it is
        // ambiguous.
        let per_direction_bs = pairs.iter().any(|(k, v)| *k == "bs" && v.contains(','));
        if has("bsrange") && (per_direction_bs || has("bssplit")) {
            return werr("give block sizes with one of bs=R,W, bsrange and bssplit");
        }
        if let Some((_, f)) = pairs.iter().find(|(k, _)| *k == "filesize") {
            w.apply_filesize(f)?;
        }
        let replay_pairs: Vec<(&str, &str)> = pairs
            .iter()
            .copied()
            .filter(|(k, _)| REPLAY_KEYS.contains(k))
            .collect();
        if !replay_pairs.is_empty() {
            w.set_replay(&replay_pairs)?;
            if w.strided.is_some() {
                return werr(
                    "zonemode=strided places drawn offsets; a replayed trace gives its own",
                );
            }
            if w.backlog.is_some() {
                return werr(
                    "verify_backlog reads back drawn writes; a replayed trace gives its own I/Os",
                );
            }
            if w.offset.is_some() || w.offset_increment.is_some() {
                return werr(
                    "offset and offset_increment place drawn offsets; a replayed trace gives its own",
                );
            }
        }
        // `norandommap` means something only where a random map would be
        // kept; elsewhere it is dropped, so equal behaviour echoes equally.
        w.norandommap &= w.map_applies();
        w.settle_think(has("thinktime_blocks"));
        // fio syncs at the end only a job that writes.
        w.end_fsync &= w.writes();
        // `rw_sequencer` acts only between two random offsets, and
        // `seq_position` only where reads and writes both go on from a
        // position.
        w.sequencer.identical &= w.sequencer.every > 1;
        w.sequencer.shared &=
            w.reads() && w.writes() && (w.percentage_random < 100 || w.sequencer.every > 1);
        if let Some(b) = w.backlog {
            let pieces = u64::from(w.numjobs) * u64::from(b.every);
            if pieces > MAX_BACKLOG_PIECES {
                return werr(format!(
                    "numjobs={} x verify_backlog={} = {pieces} pieces logged at once; at most {MAX_BACKLOG_PIECES}",
                    w.numjobs, b.every
                ));
            }
        }
        let outstanding = w.numjobs as u64 * w.iodepth as u64;
        if outstanding > MAX_OUTSTANDING {
            return werr(format!(
                "numjobs={} x iodepth={} = {outstanding} outstanding I/Os; at most {MAX_OUTSTANDING}",
                w.numjobs, w.iodepth
            ));
        }
        if let Some(z) = w.strided.filter(|z| z.range < w.max_bs()) {
            return werr(format!(
                "zonerange={}: a zone must hold the largest block ({} bytes)",
                z.range,
                w.max_bs()
            ));
        }
        w.percentage_random = explicit_random.unwrap_or(if w.rw.is_random() { 100 } else { 0 });
        w.check_rate_gap()?;
        w.check_latency_target()?;
        w.steadystate.check()?;
        w.check_file_service()?;
        Ok(w)
    }

    /// fio's `filesize`: the region each job addresses, `size` then only
    /// the bytes a pass moves (fio: "size becomes merely the default for
    /// io_size").
    fn apply_filesize(&mut self, v: &str) -> Result<()> {
        let f = match Extent::parse("filesize", v)? {
            Extent::Bytes(b) if b > 0 => b,
            _ => {
                return werr(format!(
                    "filesize={v}: give a positive number of bytes (one size, not a range)"
                ))
            }
        };
        if self.size_pct.is_some() {
            return werr("with filesize, give size in bytes (the bytes a pass moves)");
        }
        if let Some(s) = self.size.filter(|_| self.io_size.is_none()) {
            self.io_size = Some(s);
        }
        self.size = Some(f);
        Ok(())
    }

    /// `preset=`: jobs and depth first, which explicit keys then override.
    fn apply_preset(&mut self, pairs: &[(&str, &str)]) -> Result<()> {
        if let Some((_, p)) = pairs.iter().find(|(k, _)| *k == "preset") {
            let (preset, jobs, depth) = match *p {
                "latency" => (WorkloadPreset::Latency, 1, 1),
                "light" => (WorkloadPreset::Light, 1, 32),
                "heavy" => (WorkloadPreset::Heavy, 10, 16),
                v => return werr(format!("preset={v}: expected latency, light or heavy")),
            };
            self.preset = Some(preset);
            self.numjobs = jobs;
            self.iodepth = depth;
        }
        Ok(())
    }

    /// One key other than `preset=` and the replay keys, handed to the
    /// group it belongs to; a key no group knows is refused.
    fn set_key(&mut self, k: &str, v: &str, explicit_random: &mut Option<u32>) -> Result<()> {
        let known = self.set_pattern_key(k, v, explicit_random)?
            || self.set_block_key(k, v)?
            || self.set_span_key(k, v)?
            || self.set_time_key(k, v)?
            || self.set_engine_key(k, v)?;
        if known {
            Ok(())
        } else {
            werr(unknown_key(k))
        }
    }

    /// The access pattern: direction, mix, order and spread of offsets.
    /// `Ok(false)`: not a key of this group.
    fn set_pattern_key(
        &mut self,
        k: &str,
        v: &str,
        explicit_random: &mut Option<u32>,
    ) -> Result<bool> {
        match k {
            "rw" => {
                let (word, modifier) = match v.split_once(':') {
                    Some((w, m)) => (w, Some(m)),
                    None => (v, None),
                };
                self.rw = Rw::from_word(word).ok_or_else(|| {
                    Error::Workload(format!(
                        "rw={v}: expected read, write, randread, randwrite, rw or randrw"
                    ))
                })?;
                let random = self.rw.is_random();
                let mut s = Sequencer {
                    identical: self.sequencer.identical,
                    shared: self.sequencer.shared,
                    ..Sequencer::default()
                };
                if let Some(m) = modifier {
                    s.set_modifier(random, m)
                        .map_err(|e| Error::Workload(format!("rw={v}: {e}")))?;
                }
                self.sequencer = s;
            }
            "rw_sequencer" => self.sequencer.set_kind(v).map_err(Error::Workload)?,
            "seq_position" => self.sequencer.set_position(v).map_err(Error::Workload)?,
            "rwmixread" => self.rwmixread = int(k, v, 0, 100)? as u32,
            "percentage_random" => *explicit_random = Some(int(k, v, 0, 100)? as u32),
            "random_distribution" => self.random_distribution = parse_dist(v)?,
            "norandommap" => self.norandommap = int(k, v, 0, 1)? == 1,
            "seed" | "randseed" => self.seed = Some(int(k, v, 0, u64::MAX)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Block sizes and their alignment.
    /// `Ok(false)`: not a key of this group.
    fn set_block_key(&mut self, k: &str, v: &str) -> Result<bool> {
        match k {
            "bs" => match v.split_once(',') {
                // fio's per-direction sizes: reads, then writes (then
                // trims, which are not modelled); an empty one is 4k.
                Some((r, rest)) => {
                    let w = rest.split(',').next().unwrap_or("");
                    let size = |x: &str| if x.is_empty() { Ok(4096) } else { block(k, x) };
                    self.bssplit = vec![(size(r)?, 100)];
                    self.bssplit_write = vec![(size(w)?, 100)];
                    self.bs = self.bssplit[0].0;
                }
                None => self.bs = block(k, v)?,
            },
            "bssplit" => {
                let lists: Vec<&str> = v.split(',').collect();
                if lists.len() > 2 {
                    return werr(format!(
                        "bssplit={v}: give one list, or one for reads and one for writes (trims are not modelled)"
                    ));
                }
                self.bssplit = parse_bssplit(v, lists[0])?;
                self.bssplit_write = match lists.get(1) {
                    Some(l) => parse_bssplit(v, l)?,
                    None => Vec::new(),
                };
            }
            "bsrange" => self.set_bsrange(v)?,
            "blockalign" | "ba" => self.blockalign = Some(block("blockalign", v)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Where the jobs address and how much they move.
    /// `Ok(false)`: not a key of this group.
    fn set_span_key(&mut self, k: &str, v: &str) -> Result<bool> {
        match k {
            "size" => match Extent::parse(k, v)? {
                Extent::Bytes(0) | Extent::Percent(0) => {
                    return werr(format!("size={v}: the span must not be empty"))
                }
                Extent::Bytes(b) => (self.size, self.size_pct) = (Some(b), None),
                Extent::Percent(p) => (self.size, self.size_pct) = (None, Some(p)),
            },
            "offset" => self.offset = Some(Extent::parse_place(k, v)?),
            "offset_increment" => self.offset_increment = Some(Extent::parse_place(k, v)?),
            "offset_align" => self.offset_align = offset_align(v)?,
            "io_size" => match Extent::parse(k, v)? {
                Extent::Bytes(b) if b > 0 => self.io_size = Some(b),
                _ => return werr(format!("io_size={v}: give a positive number of bytes")),
            },
            "loops" => self.loops = int(k, v, 1, MAX_LOOPS)? as u32,
            // fio's default, 0, sets no limit.
            "number_ios" => {
                self.number_ios = Some(int(k, v, 0, MAX_NUMBER_IOS)?).filter(|&n| n > 0)
            }
            // Applied in `from_pairs`, where `size` and `io_size` are known.
            "filesize" => {}
            "exitall" => self.exitall = int(k, v, 0, 1)? == 1,
            "file_service_type" => self.file_service = FileService::parse(v).or_else(werr)?,
            "bs_is_seq_rand" => self.bs_is_seq_rand = int(k, v, 0, 1)? == 1,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How long the run lasts and how the jobs pause.
    /// `Ok(false)`: not a key of this group.
    fn set_time_key(&mut self, k: &str, v: &str) -> Result<bool> {
        match k {
            "runtime" => {
                let t = parse_duration(v).map_err(|m| Error::Workload(format!("runtime: {m}")))?;
                if t == 0 {
                    return werr("runtime=0: give a positive time");
                }
                self.runtime = Some(t)
            }
            "ramp_time" => {
                self.ramp_time = Some(
                    parse_duration(v).map_err(|m| Error::Workload(format!("ramp_time: {m}")))?,
                )
            }
            "thinktime" => self.thinktime = think_time(k, v)?,
            "thinktime_spin" => self.thinktime_spin = think_time(k, v)?,
            "thinktime_iotime" => {
                self.thinktime_iotime = parse_duration(v)
                    .ok()
                    .filter(|&t| t <= MAX_IOTIME)
                    .ok_or_else(|| {
                        Error::Workload(format!(
                            "thinktime_iotime={v}: give a time up to an hour (seconds unless a unit is given: 9, 500ms)"
                        ))
                    })?
            }
            "thinktime_blocks" => {
                self.thinktime_blocks = Some(int(k, v, 0, u32::MAX.into())? as u32)
            }
            "thinktime_blocks_type" => {
                self.thinktime_blocks_type = match v {
                    "complete" => ThinkCount::Complete,
                    "issue" => ThinkCount::Issue,
                    _ => {
                        return werr(format!(
                            "thinktime_blocks_type={v}: expected complete or issue"
                        ))
                    }
                }
            }
            "log_avg_msec" => self.log_avg_msec = Some(int(k, v, 1, 3_600_000)? as u32),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Jobs, queues, submission, caching, syncing and rates.
    /// `Ok(false)`: not a key of this group.
    fn set_engine_key(&mut self, k: &str, v: &str) -> Result<bool> {
        match k {
            "iodepth" => self.iodepth = int(k, v, 1, 65536)? as u32,
            "numjobs" => self.numjobs = int(k, v, 1, MAX_NUMJOBS as u64)? as u32,
            "state" => {
                self.state = Some(SsdState::from_word(v).ok_or_else(|| {
                    Error::Workload(format!("state={v}: expected fob, fill or steady"))
                })?)
            }
            "direct" => self.buffered = int(k, v, 0, 1)? == 0,
            "sync" => self.sync = parse_sync(v)?,
            "hipri" => self.hipri = int(k, v, 0, 1)? == 1,
            "fsync" | "fdatasync" => self.fsync = int(k, v, 0, 1_000_000)? as u32,
            "end_fsync" | "fsync_on_close" => self.end_fsync |= int(k, v, 0, 1)? == 1,
            "rate" | "rate_iops" => self.rate.set(k, v)?,
            "rate_process" => self.rate.set_process(v)?,
            "io_submit_mode" => self.rate.set_submit_mode(v)?,
            k if Batch::KEYS.contains(&k) => {
                self.batch.set(k, int(k, v, 0, MAX_BATCH.into())? as u32)
            }
            k if crate::guard::KEYS.contains(&k) => self.guards.set(k, v)?,
            k if crate::depth_search::KEYS.contains(&k) => self.latency_target.set(k, v)?,
            k if crate::steadystate::KEYS.contains(&k) => self.steadystate.set(k, v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Read the trace `read_iolog` names, check every line, and take the
    /// workload's direction mix and largest block from it.
    fn set_replay(&mut self, pairs: &[(&str, &str)]) -> Result<()> {
        let get = |k: &str| pairs.iter().find(|(pk, _)| *pk == k).map(|x| x.1);
        let Some(path) = get("read_iolog") else {
            return werr(format!(
                "{}= needs read_iolog=FILE (the trace to replay)",
                pairs[0].0
            ));
        };
        let mut opts = crate::trace::Options::default();
        if let Some(f) = get("trace_format") {
            opts.format = Some(crate::trace::Format::from_word(f).ok_or_else(|| {
                let all: Vec<&str> = crate::trace::Format::ALL.iter().map(|f| f.word()).collect();
                Error::Workload(format!(
                    "trace_format={f}: expected one of {}",
                    all.join(", ")
                ))
            })?);
        }
        opts.device = get("trace_device").map(str::to_string);
        opts.event = match get("trace_event") {
            None | Some("Q") | Some("q") => crate::trace::BlkEvent::Queue,
            Some("D") | Some("d") => crate::trace::BlkEvent::Dispatch,
            Some(v) => {
                return werr(format!(
                    "trace_event={v}: expected Q (queued) or D (dispatched)"
                ))
            }
        };
        let mut r = crate::trace::replay::prepare(path.into(), opts)?;
        if let Some(v) = get("replay_no_stall") {
            r.no_stall = int("replay_no_stall", v, 0, 1)? == 1;
        }
        if let Some(v) = get("replay_time_scale") {
            r.time_scale = int("replay_time_scale", v, 1, 1_000_000)? as u32;
        }
        if let Some(v) = get("replay_scale") {
            r.scale = int("replay_scale", v, 1, 1 << 40)?;
        }
        if let Some(v) = get("replay_align") {
            r.align = block("replay_align", v)?;
        }
        r.fit = match get("replay_fit") {
            None | Some("wrap") => crate::trace::replay::Fit::Wrap,
            Some("scale") => crate::trace::replay::Fit::Scale,
            Some(v) => return werr(format!("replay_fit={v}: expected wrap or scale")),
        };
        let x = &r.extent;
        self.rw = match (x.reads > 0, x.writes > 0) {
            (true, false) => Rw::RandRead,
            (false, true) => Rw::RandWrite,
            _ => Rw::RandRw,
        };
        self.rwmixread = (100 * x.reads / (x.reads + x.writes).max(1)) as u32;
        self.bs = x.max_len.div_ceil(512).max(1) * 512;
        self.bssplit.clear();
        self.bssplit_write.clear();
        self.bsrange.clear();
        self.replay = Some(Box::new(r));
        Ok(())
    }

    /// Bytes one job moves over one volume of `span` bytes in a one-pass
    /// run: `loops` times `io_size` or `span`, or a replayed trace's reads
    /// and writes.
    pub fn pass_bytes(&self, span: u64) -> u64 {
        match &self.replay {
            Some(r) => r.extent.bytes,
            None => self
                .io_size
                .unwrap_or(span)
                .saturating_mul(self.loops as u64),
        }
    }

    /// The span the workload addresses on a volume of `cap` bytes: the
    /// largest of its jobs' regions ([`Workload::regions`]), refused as
    /// they are. Both engines check a workload with this.
    pub fn span_on(&self, cap: u64) -> std::result::Result<u64, SpanError> {
        let regions = self.regions(cap)?;
        Ok(regions.iter().map(|r| r.span).max().unwrap_or(0))
    }

    /// `size=` on a volume of `cap` bytes (`None`: not given), refused
    /// beyond the volume.
    fn size_on(&self, cap: u64) -> std::result::Result<Option<u64>, SpanError> {
        let size = match (self.size, self.size_pct) {
            (Some(b), _) => Some(b),
            (None, Some(p)) => Some(Extent::Percent(p).on(cap, self.min_bs())),
            (None, None) => None,
        };
        match size {
            Some(s) if s > cap => Err(SpanError::SizeTooLarge { size: s, cap }),
            _ => Ok(size),
        }
    }

    /// Each job's region of a volume of `cap` bytes, as fio lays them out
    /// (`get_start_offset` in fio's filesetup.c): job `j` starts at
    /// `offset + j x offset_increment`, rounded up to a multiple of the
    /// smallest block when either is a percentage, and spans `size` bytes,
    /// or to the volume's end when that comes first or `size` is not
    /// given. Refused when `size` exceeds the volume, a job would start at
    /// or past its end, or a region cannot hold the largest block or the
    /// `zoned_abs` zones.
    pub fn regions(&self, cap: u64) -> std::result::Result<Vec<Region>, SpanError> {
        let size = self.size_on(cap)?;
        let align = self.offset_align.unwrap_or(self.min_bs());
        // fio takes a percentage of the volume as it is, unrounded, and
        // rounds the sum up.
        let raw = |e: Option<Extent>| {
            e.map_or((0, false), |e| {
                (e.unrounded(cap), matches!(e, Extent::Percent(_)))
            })
        };
        let (base, base_pct) = raw(self.offset);
        let (step, step_pct) = raw(self.offset_increment);
        (0..self.numjobs)
            .map(|job| {
                let mut start = base.saturating_add(step.saturating_mul(job as u64));
                if base_pct || step_pct {
                    start = start.div_ceil(align).saturating_mul(align);
                }
                if start >= cap {
                    return Err(SpanError::OffsetPastEnd {
                        job,
                        offset: start,
                        cap,
                    });
                }
                let span = size.unwrap_or(cap).min(cap - start);
                if self.max_bs() > span {
                    return Err(SpanError::BlockTooLarge {
                        bs: self.max_bs(),
                        span,
                    });
                }
                if let Some(zones) = self.zone_bytes().filter(|&z| z > span) {
                    return Err(SpanError::ZonesPastEnd { zones, job, span });
                }
                let r = Region { start, span };
                debug_assert!(r.end() <= cap, "{r:?} passes the volume's end {cap}");
                Ok(r)
            })
            .collect()
    }

    /// The bytes `zoned_abs` zones cover (`None` for any other
    /// distribution).
    fn zone_bytes(&self) -> Option<u64> {
        match self.random_distribution {
            Dist::Zoned(z) => z.bytes(),
            _ => None,
        }
    }

    /// The bytes a workload needs a volume to hold when its `size` and
    /// offsets are all given in bytes: the end of its furthest region
    /// (`None` when any is a percentage or `size` is not given).
    pub fn bytes_needed(&self) -> Option<u64> {
        let bytes = |e: Option<Extent>| match e {
            None => Some(0),
            Some(Extent::Bytes(b)) => Some(b),
            Some(Extent::Percent(_)) => None,
        };
        let last = self.numjobs.saturating_sub(1) as u64;
        let start =
            bytes(self.offset)?.saturating_add(bytes(self.offset_increment)?.saturating_mul(last));
        Some(start.saturating_add(self.size?))
    }

    /// Whether the workload writes: a write pattern, or a mix with a write
    /// share (`rwmixread` below 100).
    pub fn writes(&self) -> bool {
        match self.rw {
            Rw::Read | Rw::RandRead => false,
            Rw::Write | Rw::RandWrite => true,
            Rw::Rw | Rw::RandRw => self.rwmixread < 100,
        }
    }

    /// Whether the workload reads: a read pattern, or a mix with a read
    /// share (`rwmixread` above 0).
    pub fn reads(&self) -> bool {
        match self.rw {
            Rw::Read | Rw::RandRead => true,
            Rw::Write | Rw::RandWrite => false,
            Rw::Rw | Rw::RandRw => self.rwmixread > 0,
        }
    }

    /// The state SSDs start in when neither the workload nor the expression
    /// names one (docs/workloads.md, "How SSDs start"): a workload that
    /// writes at random offsets starts on drives in random-write steady
    /// state, as SNIA PTS preconditions them for random-write tests; any
    /// other on drives written once sequentially.
    pub fn default_ssd_state(&self) -> SsdState {
        if self.percentage_random > 0 && self.writes() {
            SsdState::Steady
        } else {
            SsdState::Fill
        }
    }

    /// A byte cap must not hold a job back longer between two I/Os than the
    /// longest `thinktime` (60 s): a time no run can be asked to wait out.
    /// Whether the jobs set their own measurement window instead of the
    /// steady-state rounds: a `latency_target` search (from where it
    /// converges) or a `steadystate` stop (to where it is met).
    pub fn sets_own_window(&self) -> bool {
        self.latency_target.any() || self.steadystate.any()
    }

    /// What a `latency_target` search runs beside: one job at a time (the
    /// search sets the job's depth and clears its statistics once it has
    /// converged), refilling its queue one completion at a time, from
    /// drawn offsets.
    fn check_latency_target(&self) -> Result<()> {
        if !self.latency_target.any() {
            return Ok(());
        }
        if self.numjobs > 1 {
            return werr("latency_target searches one job's queue depth: give numjobs=1 (or one job file section each)");
        }
        if !self.batch.is_default() {
            return werr("latency_target sets the depth a job refills to one completion at a time: leave out iodepth_batch_submit, iodepth_batch_complete_min and iodepth_low");
        }
        if self.replay.is_some() {
            return werr("latency_target sets a job's queue depth; a replayed trace keeps its own");
        }
        Ok(())
    }

    /// `file_service_type=sequential` moves to a volume once the job has
    /// run out of the one before, which a time-based job (wrapping round
    /// each volume) never does; a replayed trace names its own volume
    /// order.
    fn check_file_service(&self) -> Result<()> {
        if self.file_service.kind == FileServiceKind::Sequential && self.runtime.is_some() {
            return werr("file_service_type=sequential moves on once a volume's pass is done, which a job with runtime (wrapping round each volume) never finishes: give roundrobin or random, or leave out runtime");
        }
        if !self.file_service.is_default() && self.replay.is_some() {
            return werr("file_service_type picks the volumes of drawn I/Os; a replayed trace keeps its own order");
        }
        Ok(())
    }

    fn check_rate_gap(&self) -> Result<()> {
        for b in self.rate.bytes.iter().flatten() {
            let gap_s = self.max_bs() as f64 / *b as f64;
            if gap_s > MAX_GAP_S {
                return werr(format!(
                    "rate: {}/s spaces {} I/Os {gap_s:.0} s apart; at most {MAX_GAP_S} s (raise the cap or lower bs)",
                    format_size(*b),
                    format_size(self.max_bs())
                ));
            }
        }
        Ok(())
    }

    /// `thinktime_spin` and `thinktime_iotime` act only with a think time
    /// (fio: "only valid if thinktime is set"); with `thinktime_iotime`
    /// and no `thinktime_blocks` given, I/O time alone brings the stalls
    /// (fio's `handle_thinktime` skips the block count then): no count.
    fn settle_think(&mut self, blocks_given: bool) {
        if self.thinktime == 0 {
            self.thinktime_spin = 0;
            self.thinktime_iotime = 0;
        }
        if self.thinktime_iotime > 0 && !blocks_given {
            self.thinktime_blocks = None;
        }
    }

    /// How long a job's think time stalls it, ns: `thinktime`, or a
    /// longer `thinktime_spin` (fio spins first, then sleeps what is left).
    pub fn think_stall(&self) -> Ns {
        self.thinktime.max(self.thinktime_spin)
    }

    /// The I/Os a job keeps in flight: `iodepth`, or one with `thinktime`
    /// after every I/O (`thinktime_blocks` 0 or 1, fio's default), which
    /// fio takes once the job's I/Os in flight have completed
    /// (`handle_thinktime` calls `io_u_quiesce` before it stalls). With more
    /// blocks between think times the job issues up to `iodepth`, and
    /// [`ThinkClock`] says when it stalls.
    pub fn effective_iodepth(&self) -> u32 {
        if self.thinktime > 0 && self.thinktime_blocks.is_some_and(|b| b <= 1) {
            1
        } else {
            self.iodepth
        }
    }

    /// Largest block size the workload issues.
    pub fn max_bs(&self) -> u64 {
        self.bssplit
            .iter()
            .chain(&self.bssplit_write)
            .map(|x| x.0)
            .max()
            .unwrap_or(self.bs)
            .max(self.bs)
    }

    /// Smallest block size the workload issues.
    pub fn min_bs(&self) -> u64 {
        self.bssplit
            .iter()
            .chain(&self.bssplit_write)
            .map(|x| x.0)
            .chain([self.bs])
            .min()
            .unwrap_or(self.bs)
    }

    /// Mean bytes per I/O: `bs`, or under `bssplit` each direction's sizes
    /// weighted by their percentages, the directions by the read share.
    pub fn mean_bs(&self) -> f64 {
        let mean = |split: &[(u64, u32)]| -> Option<f64> {
            let total: u64 = split.iter().map(|x| x.1 as u64).sum();
            (total > 0)
                .then(|| split.iter().map(|x| x.0 as f64 * x.1 as f64).sum::<f64>() / total as f64)
        };
        let reads = mean(&self.bssplit).unwrap_or(self.bs as f64);
        let writes = if self.bssplit_write.is_empty() {
            reads
        } else {
            mean(&self.bssplit_write).unwrap_or(self.bs as f64)
        };
        let share = match (self.reads(), self.writes()) {
            (true, false) => 1.0,
            (false, _) => 0.0,
            (true, true) => self.rwmixread as f64 / 100.0,
        };
        share * reads + (1.0 - share) * writes
    }

    /// Whether random offsets follow fio's random map (every block once per
    /// pass, in random order): one-pass jobs of one block size and uniform
    /// offsets, unless `norandommap`. Time-based jobs and other mixes pick
    /// offsets with replacement.
    pub fn uses_random_map(&self) -> bool {
        !self.norandommap && self.map_applies()
    }

    /// Whether the workload is one whose random offsets could follow a
    /// random map (one pass, one block size, uniform offsets).
    fn map_applies(&self) -> bool {
        self.runtime.is_none()
            && self.bssplit.is_empty()
            && self.bssplit_write.is_empty()
            && self.random_distribution == Dist::Random
            && self.blockalign.is_none()
    }

    /// `bsrange` as written: the reads' range, then the writes' if apart.
    fn bsrange_words(&self) -> String {
        self.bsrange
            .iter()
            .map(|&(lo, hi)| format!("{}-{}", format_size(lo), format_size(hi)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// fio's `bsrange=MIN-MAX` (a second range after a comma is for
    /// writes; a third, trims', is passed over, as under `bs`).
    fn set_bsrange(&mut self, v: &str) -> Result<()> {
        let ranges = v
            .split(',')
            .take(2)
            .map(|r| parse_bsrange(v, r))
            .collect::<Result<Vec<_>>>()?;
        self.bssplit = bsrange_split(ranges[0]);
        self.bssplit_write = match ranges.get(1) {
            Some(&r) => bsrange_split(r),
            None => Vec::new(),
        };
        self.bsrange = ranges;
        Ok(())
    }

    /// `bssplit` as written: the reads' list, then the writes' if apart.
    fn bssplit_words(&self) -> String {
        let list = |l: &[(u64, u32)]| {
            l.iter()
                .map(|(b, p)| format!("{}/{p}", format_size(*b)))
                .collect::<Vec<_>>()
                .join(":")
        };
        if self.bssplit_write.is_empty() {
            list(&self.bssplit)
        } else {
            format!("{},{}", list(&self.bssplit), list(&self.bssplit_write))
        }
    }

    /// `rw=` as fio writes it: the mode and its offset modifier.
    pub fn rw_words(&self) -> String {
        format!("{}{}", self.rw.word(), self.sequencer.postfix())
    }

    /// The workload as a JSON object in the key vocabulary of docs/workloads.md
    /// (sizes in bytes, `runtime`/`ramp_time` in seconds, `thinktime` in µs).
    pub fn to_json(&self, seed: u64) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        self.pattern_json(&mut m);
        self.span_json(&mut m);
        self.time_json(&mut m);
        m.insert("seed".into(), seed.into());
        self.engine_json(&mut m);
        serde_json::Value::Object(m)
    }

    /// [`Workload::to_json`] of the block sizes and the access pattern.
    fn pattern_json(&self, m: &mut serde_json::Map<String, serde_json::Value>) {
        m.insert("rw".into(), self.rw_words().into());
        m.insert("bs".into(), self.bs.into());
        if !self.bsrange.is_empty() {
            m.insert("bsrange".into(), self.bsrange_words().into());
        } else if !self.bssplit.is_empty() {
            m.insert("bssplit".into(), self.bssplit_words().into());
        }
        m.insert("rwmixread".into(), self.rwmixread.into());
        m.insert("percentage_random".into(), self.percentage_random.into());
        if self.sequencer.identical {
            m.insert("rw_sequencer".into(), "identical".into());
        }
        if self.sequencer.shared {
            m.insert("seq_position".into(), "shared".into());
        }
    }

    /// [`Workload::to_json`] of the queues and the span addressed.
    fn span_json(&self, m: &mut serde_json::Map<String, serde_json::Value>) {
        m.insert("iodepth".into(), self.iodepth.into());
        m.insert("numjobs".into(), self.numjobs.into());
        if let Some(s) = self.size {
            m.insert("size".into(), s.into());
        }
        if let Some(p) = self.size_pct {
            m.insert("size".into(), Extent::Percent(p).json());
        }
        if let Some(o) = self.offset {
            m.insert("offset".into(), o.json());
        }
        if let Some(o) = self.offset_increment {
            m.insert("offset_increment".into(), o.json());
        }
        if let Some(a) = self.offset_align {
            m.insert("offset_align".into(), a.into());
        }
        if let Some(b) = self.io_size {
            m.insert("io_size".into(), b.into());
        }
        if self.exitall {
            m.insert("exitall".into(), 1.into());
        }
        if !self.file_service.is_default() {
            m.insert("file_service_type".into(), self.file_service.text().into());
        }
        if self.bs_is_seq_rand {
            m.insert("bs_is_seq_rand".into(), 1.into());
        }
        if let Some(b) = self.backlog {
            m.insert("verify_backlog".into(), b.every.into());
            if b.batch > 0 {
                m.insert("verify_backlog_batch".into(), b.batch.into());
            }
        }
        if let Some(z) = self.strided {
            m.insert("zonemode".into(), "strided".into());
            m.insert("zonesize".into(), z.size.into());
            m.insert("zonerange".into(), z.range.into());
            m.insert("zoneskip".into(), z.skip.into());
        }
        if let Some(n) = self.number_ios {
            m.insert("number_ios".into(), n.into());
        }
        if self.loops != 1 {
            m.insert("loops".into(), self.loops.into());
        }
    }

    /// [`Workload::to_json`] of run length, distribution and think time.
    fn time_json(&self, m: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(r) = self.runtime {
            m.insert("runtime".into(), (r as f64 / 1e9).into());
        }
        if let Some(r) = self.ramp_time {
            m.insert("ramp_time".into(), (r as f64 / 1e9).into());
        }
        let dist = match self.random_distribution {
            Dist::Random => "random".to_string(),
            Dist::Zipf(t) => format!("zipf:{t}"),
            Dist::Pareto(h) => format!("pareto:{h}"),
            Dist::Zoned(z) => format!("{}:{}", z.kind(), z.word()),
            Dist::Normal(d) => format!("normal:{d}"),
        };
        m.insert("random_distribution".into(), dist.into());
        m.insert("thinktime".into(), (self.thinktime / 1000).into());
        if self.thinktime > 0 {
            if let Some(b) = self.thinktime_blocks {
                m.insert("thinktime_blocks".into(), b.into());
            }
            let count = match self.thinktime_blocks_type {
                ThinkCount::Complete => "complete",
                ThinkCount::Issue => "issue",
            };
            m.insert("thinktime_blocks_type".into(), count.into());
            if self.thinktime_spin > 0 {
                m.insert("thinktime_spin".into(), (self.thinktime_spin / 1000).into());
            }
            if self.thinktime_iotime > 0 {
                m.insert(
                    "thinktime_iotime".into(),
                    (self.thinktime_iotime as f64 / 1e9).into(),
                );
            }
        }
    }

    /// [`Workload::to_json`] of the preset, state, caching, syncing, rates and replay.
    fn engine_json(&self, m: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(p) = self.preset {
            let w = match p {
                WorkloadPreset::Latency => "latency",
                WorkloadPreset::Light => "light",
                WorkloadPreset::Heavy => "heavy",
            };
            m.insert("preset".into(), w.into());
        }
        if let Some(st) = self.state {
            m.insert("state".into(), st.word().into());
        }
        if self.buffered {
            m.insert("direct".into(), 0.into());
        }
        if let Some(a) = self.blockalign {
            m.insert("blockalign".into(), a.into());
        }
        if self.norandommap {
            m.insert("norandommap".into(), 1.into());
        }
        if self.hipri {
            m.insert("hipri".into(), 1.into());
        }
        if self.sync {
            m.insert("sync".into(), 1.into());
        }
        if self.fsync > 0 {
            m.insert("fsync".into(), self.fsync.into());
        }
        if self.end_fsync {
            m.insert("end_fsync".into(), 1.into());
        }
        for (k, v) in self.rate.pairs() {
            m.insert(k, v.into());
        }
        for (k, v) in self.batch.values() {
            m.insert(k.into(), v.into());
        }
        for (k, v) in self.guards.pairs() {
            m.insert(k, v.into());
        }
        for (k, v) in self.latency_target.pairs() {
            m.insert(k, v.into());
        }
        for (k, v) in self.steadystate.pairs() {
            m.insert(k, v.into());
        }
        if let Some(ms) = self.log_avg_msec {
            m.insert("log_avg_msec".into(), ms.into());
        }
        if let Some(r) = &self.replay {
            for (k, v) in r.pairs() {
                m.insert(k, v.into());
            }
        }
    }

    /// The workload as fio job-file lines (`key=value`), for export and labels.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut v = vec![("rw".to_string(), self.rw_words())];
        self.pattern_pairs(&mut v);
        self.span_pairs(&mut v);
        self.time_pairs(&mut v);
        self.engine_pairs(&mut v);
        v
    }

    /// [`Workload::to_pairs`] of the block sizes and the access pattern.
    fn pattern_pairs(&self, v: &mut Vec<(String, String)>) {
        if !self.bsrange.is_empty() {
            v.push(("bsrange".into(), self.bsrange_words()));
        } else if self.bssplit.is_empty() {
            v.push(("bs".into(), format_size(self.bs)));
        } else {
            v.push(("bssplit".into(), self.bssplit_words()));
        }
        if matches!(self.rw, Rw::Rw | Rw::RandRw) {
            v.push(("rwmixread".into(), self.rwmixread.to_string()));
        }
        let default_random = if self.rw.is_random() { 100 } else { 0 };
        if self.percentage_random != default_random {
            v.push((
                "percentage_random".into(),
                self.percentage_random.to_string(),
            ));
        }
        if self.sequencer.identical {
            v.push(("rw_sequencer".into(), "identical".into()));
        }
        if self.sequencer.shared {
            v.push(("seq_position".into(), "shared".into()));
        }
    }

    /// [`Workload::to_pairs`] of the queues and the span addressed.
    fn span_pairs(&self, v: &mut Vec<(String, String)>) {
        v.push(("iodepth".into(), self.iodepth.to_string()));
        v.push(("numjobs".into(), self.numjobs.to_string()));
        if let Some(s) = self.size {
            v.push(("size".into(), format_size(s)));
        }
        if let Some(p) = self.size_pct {
            v.push(("size".into(), Extent::Percent(p).word()));
        }
        if let Some(o) = self.offset {
            v.push(("offset".into(), o.word()));
        }
        if let Some(o) = self.offset_increment {
            v.push(("offset_increment".into(), o.word()));
        }
        if let Some(a) = self.offset_align {
            v.push(("offset_align".into(), a.to_string()));
        }
        if let Some(b) = self.io_size {
            v.push(("io_size".into(), format_size(b)));
        }
        if let Some(z) = self.strided {
            v.extend(z.pairs());
        }
        if self.exitall {
            v.push(("exitall".into(), "1".into()));
        }
        if !self.file_service.is_default() {
            v.push(("file_service_type".into(), self.file_service.text()));
        }
        if self.bs_is_seq_rand {
            v.push(("bs_is_seq_rand".into(), "1".into()));
        }
        if let Some(b) = self.backlog {
            v.push(("verify_backlog".into(), b.every.to_string()));
            if b.batch > 0 {
                v.push(("verify_backlog_batch".into(), b.batch.to_string()));
            }
        }
        if let Some(n) = self.number_ios {
            v.push(("number_ios".into(), n.to_string()));
        }
        if self.loops != 1 {
            v.push(("loops".into(), self.loops.to_string()));
        }
    }

    /// [`Workload::to_pairs`] of run length, distribution and think time.
    fn time_pairs(&self, v: &mut Vec<(String, String)>) {
        if let Some(r) = self.runtime {
            v.push(("runtime".into(), format_duration(r)));
        }
        if let Some(r) = self.ramp_time {
            v.push(("ramp_time".into(), format_duration(r)));
        }
        match self.random_distribution {
            Dist::Random => {}
            Dist::Zipf(t) => v.push(("random_distribution".into(), format!("zipf:{t}"))),
            Dist::Pareto(h) => v.push(("random_distribution".into(), format!("pareto:{h}"))),
            Dist::Zoned(z) => v.push((
                "random_distribution".into(),
                format!("{}:{}", z.kind(), z.word()),
            )),
            Dist::Normal(d) => v.push(("random_distribution".into(), format!("normal:{d}"))),
        }
        if self.thinktime > 0 {
            v.push(("thinktime".into(), (self.thinktime / 1000).to_string()));
        }
        if self.thinktime_spin > 0 {
            v.push((
                "thinktime_spin".into(),
                (self.thinktime_spin / 1000).to_string(),
            ));
        }
        if self.thinktime_iotime > 0 {
            v.push((
                "thinktime_iotime".into(),
                format_duration(self.thinktime_iotime),
            ));
        }
        if let Some(b) = self.thinktime_blocks.filter(|&b| b != 1) {
            v.push(("thinktime_blocks".into(), b.to_string()));
        }
        if self.thinktime_blocks_type == ThinkCount::Issue {
            v.push(("thinktime_blocks_type".into(), "issue".into()));
        }
    }

    /// [`Workload::to_pairs`] of alignment, caching, syncing, rates and replay.
    fn engine_pairs(&self, v: &mut Vec<(String, String)>) {
        if let Some(a) = self.blockalign {
            v.push(("blockalign".into(), format_size(a)));
        }
        if self.norandommap {
            v.push(("norandommap".into(), "1".into()));
        }
        if self.hipri {
            v.push(("hipri".into(), "1".into()));
        }
        if self.sync {
            v.push(("sync".into(), "1".into()));
        }
        if self.fsync > 0 {
            v.push(("fsync".into(), self.fsync.to_string()));
        }
        if self.end_fsync {
            v.push(("end_fsync".into(), "1".into()));
        }
        v.extend(self.rate.pairs());
        v.extend(self.batch.pairs());
        v.extend(self.guards.pairs());
        v.extend(self.latency_target.pairs());
        v.extend(self.steadystate.pairs());
        if let Some(ms) = self.log_avg_msec {
            v.push(("log_avg_msec".into(), ms.to_string()));
        }
        if let Some(r) = &self.replay {
            v.extend(r.pairs());
        }
    }

    /// The run's timeline, when `log_avg_msec` asks for one.
    pub fn timeline(&self) -> Option<crate::metrics::Timeline> {
        self.log_avg_msec
            .map(|ms| crate::metrics::Timeline::new(ms as Ns * 1_000_000))
    }
}

/// One direction's list of `bssplit=` (`SIZE/PERCENT:SIZE/PERCENT...`,
/// adding up to 100).
fn parse_bssplit(v: &str, list: &str) -> Result<Vec<(u64, u32)>> {
    let mut split = Vec::new();
    for part in list.split(':') {
        let (b, pct) = part.split_once('/').ok_or_else(|| {
            Error::Workload(format!(
                "bssplit={v}: expected SIZE/PERCENT:SIZE/PERCENT, e.g. 4k/60:64k/40 (a second list after a comma is for writes)"
            ))
        })?;
        split.push((block("bssplit", b)?, int("bssplit", pct, 0, 100)? as u32));
    }
    let total: u32 = split.iter().map(|x| x.1).sum();
    if total != 100 {
        return werr(format!(
            "bssplit={v}: percentages add up to {total}, not 100"
        ));
    }
    Ok(split)
}

/// Most sizes one `bsrange` range may draw from: the stream keeps 16
/// bytes a size per job and direction, and searches them on every I/O;
/// 8192 sizes reach from 512 to 4m.
const MAX_RANGE_SIZES: u64 = 8192;

/// One direction's range of `bsrange=` (`MIN-MAX`; an empty one is 4k,
/// as under `bs`).
fn parse_bsrange(v: &str, range: &str) -> Result<(u64, u64)> {
    if range.is_empty() {
        return Ok((4096, 4096));
    }
    let Some((lo, hi)) = range.split_once('-') else {
        return werr(format!(
            "bsrange={v}: expected MIN-MAX, e.g. 4k-64k (a second range after a comma is for writes)"
        ));
    };
    let (lo, hi) = (block("bsrange", lo)?, block("bsrange", hi)?);
    if lo > hi {
        return werr(format!(
            "bsrange={v}: the smallest size comes first, e.g. 4k-64k"
        ));
    }
    if hi.div_ceil(lo) > MAX_RANGE_SIZES {
        return werr(format!(
            "bsrange={v}: draws from {} sizes, more than the {MAX_RANGE_SIZES} raidlab keeps; raise the smallest size",
            hi.div_ceil(lo)
        ));
    }
    Ok((lo, hi))
}

/// The sizes fio's `bsrange=MIN-MAX` issues, weighted as fio draws them:
/// `MIN + ⌊MAX·u⌋` bytes for a uniform `u` in [0, 1), rounded down to a
/// multiple of MIN and capped at MAX (`get_next_buflen` in fio's io_u.c).
/// So every multiple of MIN up to MAX is equally likely, and MAX itself,
/// when MIN does not divide it, takes the remainder. The weights are those
/// shares in units of `gcd(MIN, MAX)` bytes, at most 2^17 in all.
pub fn bsrange_split((lo, hi): (u64, u64)) -> Vec<(u64, u32)> {
    assert!(0 < lo && lo <= hi, "a range of sizes runs upwards");
    let unit = gcd(lo, hi);
    (0..hi.div_ceil(lo))
        .map(|j| {
            let size = (lo * (j + 1)).min(hi);
            (size, ((hi - j * lo).min(lo) / unit) as u32)
        })
        .collect()
}

/// Greatest common divisor.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// fio's `sync`: `0`/`none` off; `1`, `sync` or `dsync` on (the
/// simulator models data durability, so O_SYNC and O_DSYNC are one).
fn parse_sync(v: &str) -> Result<bool> {
    match v {
        "0" | "none" => Ok(false),
        "1" | "sync" | "dsync" => Ok(true),
        _ => werr(format!("sync={v}: expected 0, 1, none, sync or dsync")),
    }
}

fn parse_dist(v: &str) -> Result<Dist> {
    let bad = || {
        Error::Workload(format!(
            "random_distribution={v}: expected random, zipf:THETA, pareto:H, normal:DEV%, zoned:ACCESS%/RANGE%:... or zoned_abs:ACCESS%/SIZE:..."
        ))
    };
    if v == "random" {
        return Ok(Dist::Random);
    }
    if let Some(spec) = v.strip_prefix("zoned:") {
        return Zones::parse(spec)
            .map(Dist::Zoned)
            .map_err(|m| Error::Workload(format!("random_distribution={v}: {m}")));
    }
    if let Some(spec) = v.strip_prefix("zoned_abs:") {
        return Zones::parse_abs(spec)
            .map(Dist::Zoned)
            .map_err(|m| Error::Workload(format!("random_distribution={v}: {m}")));
    }
    let (kind, p) = v.split_once(':').ok_or_else(bad)?;
    let x: f64 = p.parse().map_err(|_| bad())?;
    match kind {
        "zipf" if x > 0.0 && x < 10.0 && (x - 1.0).abs() > 1e-9 => Ok(Dist::Zipf(x)),
        "pareto" if x > 0.0 && x < 1.0 => Ok(Dist::Pareto(x)),
        "normal" if (0.0..=100.0).contains(&x) => Ok(Dist::Normal(x)),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_that_never_writes_is_a_read_workload() {
        let w = |t: &str| Workload::parse(t).unwrap();
        assert!(!w("rw=randrw rwmixread=100").writes());
        assert!(w("rw=randrw rwmixread=100").reads());
        assert!(!w("rw=rw rwmixread=0").reads());
        assert!(w("rw=randrw").writes() && w("rw=randrw").reads());
        // SSDs start as for a read workload: written once, not steady.
        assert_eq!(
            w("rw=randrw rwmixread=100").default_ssd_state(),
            w("rw=randread").default_ssd_state()
        );
    }

    /// fio's `bs_is_seq_rand`: random I/Os take the writes' sizes and
    /// sequential ones the reads', whatever their direction; without it
    /// each direction keeps its own. The flag leaves the default's draws
    /// as they were.
    #[test]
    fn bs_is_seq_rand_sizes_by_kind_of_offset_not_direction() {
        let sizes = |wl: &str| -> Vec<(bool, u32)> {
            let w = Workload::parse(wl).unwrap();
            JobStream::new(&w, 1 << 30, 3, 0, Some(2000))
                .map(|io| (io.read, io.len))
                .collect()
        };
        let by_dir = sizes("rw=randrw bs=4k,64k");
        assert!(by_dir
            .iter()
            .all(|&(r, l)| l == if r { 4096 } else { 65536 }));
        assert!(by_dir.iter().any(|x| x.0) && by_dir.iter().any(|x| !x.0));
        let random = sizes("rw=randrw bs=4k,64k bs_is_seq_rand=1");
        assert!(
            random.iter().all(|&(_, l)| l == 65536),
            "random I/Os take the writes' size"
        );
        let seq = sizes("rw=rw bs=4k,64k bs_is_seq_rand=1");
        assert!(
            seq.iter().all(|&(_, l)| l == 4096),
            "sequential I/Os take the reads' size"
        );
        // Half random: each I/O's size says whether it went on from its
        // direction's last end.
        let w =
            Workload::parse("rw=randrw percentage_random=50 bs=4k,64k bs_is_seq_rand=1").unwrap();
        let mut end = [0u64; 2];
        let mut kinds = [0; 2];
        for io in JobStream::new(&w, 1 << 30, 3, 0, Some(4000)) {
            let d = usize::from(!io.read);
            if io.len == 4096 {
                assert_eq!(
                    io.offset, end[d],
                    "a read-sized I/O went on from its last end"
                );
            }
            kinds[usize::from(io.len == 4096)] += 1;
            end[d] = io.offset + u64::from(io.len);
        }
        assert!(kinds[0] > 1000 && kinds[1] > 1000, "{kinds:?}");
        assert_eq!(
            Workload::parse("rw=randrw bs_is_seq_rand=1")
                .unwrap()
                .to_pairs()
                .iter()
                .filter(|(k, _)| k == "bs_is_seq_rand")
                .count(),
            1
        );
    }

    #[test]
    fn offsets_place_each_jobs_region_as_fio_does() {
        let gib = 1u64 << 30;
        let regions = |wl: &str, cap: u64| Workload::parse(wl).unwrap().regions(cap);
        // offset_increment spaces the jobs; without size each runs to the end.
        let r = regions("rw=read numjobs=4 offset_increment=1g", 4 * gib).unwrap();
        let got: Vec<(u64, u64)> = r.iter().map(|r| (r.start, r.span)).collect();
        assert_eq!(
            got,
            vec![
                (0, 4 * gib),
                (gib, 3 * gib),
                (2 * gib, 2 * gib),
                (3 * gib, gib)
            ]
        );
        // size bounds each region; percentages are of the volume, rounded
        // down to the smallest block.
        let r = regions(
            "rw=read bs=64k numjobs=3 size=25% offset=10% offset_increment=30%",
            1_000_000_000,
        )
        .unwrap();
        let got: Vec<(u64, u64)> = r.iter().map(|r| (r.start, r.span)).collect();
        // 10 % + j x 30 % of 1e9 bytes, rounded up to 64 KiB blocks; 25 %
        // rounded down to them.
        let s = 3814 * 65536;
        let starts = [1526 * 65536, 6104 * 65536, 10682 * 65536];
        assert_eq!(got, starts.iter().map(|&b| (b, s)).collect::<Vec<_>>());
        // fio's own layout of an 8 MiB file: the third of three jobs at
        // 30 % steps starts at 64 KiB block 77, not 76.
        let r = regions(
            "rw=write bs=64k numjobs=3 size=25% offset_increment=30%",
            8 << 20,
        )
        .unwrap();
        assert_eq!(r[2].start, 77 * 65536);
        // fio's offset_align rounds a percentage start up to its own
        // multiple instead (1 MiB: 10 % of 1e9 is 95.37 MiB, so 96 MiB);
        // 0 is the smallest block, as unset; byte offsets stay as given.
        let at = |extra: &str| {
            regions(&format!("rw=read bs=4k offset=10% {extra}"), 1_000_000_000).unwrap()[0].start
        };
        assert_eq!(at("offset_align=1m"), 96 << 20);
        assert_eq!(at("offset_align=0"), at(""));
        assert_eq!(at(""), 100_003_840);
        let r = regions("rw=read offset=1m offset_align=64m", gib).unwrap();
        assert_eq!(r[0].start, 1 << 20);
        for bad in ["offset_align=100", "offset_align=2t", "offset_align=big"] {
            assert!(Workload::parse(bad).is_err(), "{bad}");
        }
        // The last region is cut at the volume's end.
        let r = regions("rw=read numjobs=2 size=3g offset_increment=2g", 4 * gib).unwrap();
        assert_eq!((r[1].start, r[1].span), (2 * gib, 2 * gib));
        // A region that would start at or past the end is refused, as fio does.
        let e = regions("rw=read numjobs=5 offset_increment=1g", 4 * gib).unwrap_err();
        assert!(matches!(e, SpanError::OffsetPastEnd { job: 4, .. }), "{e}");
        assert!(regions("rw=read offset=100%", gib).is_err());
        // A region too small for the block is refused.
        assert!(matches!(
            regions("rw=read bs=1m offset=1048064k", gib).unwrap_err(),
            SpanError::BlockTooLarge { .. }
        ));
        // Byte values are whole sectors; percentages at most 100.
        assert!(Workload::parse("offset=1000").is_err());
        // A size need not be whole sectors (as before offsets came).
        assert_eq!(Workload::parse("size=1000").unwrap().size, Some(1000));
        assert!(Workload::parse("offset_increment=101%").is_err());
        assert!(Workload::parse("size=0%").is_err());
        // The largest region is the span both engines check.
        let w = Workload::parse("numjobs=2 offset_increment=1g size=2g").unwrap();
        assert_eq!(w.span_on(4 * gib).unwrap(), 2 * gib);
        assert_eq!(w.bytes_needed(), Some(3 * gib));
        assert_eq!(Workload::parse("size=50%").unwrap().bytes_needed(), None);
        // Echoed as written, and taken from job files.
        let w =
            Workload::parse("rw=read numjobs=2 size=25% offset=4k offset_increment=50%").unwrap();
        let pairs = w.to_pairs();
        for kv in [
            ("size", "25%"),
            ("offset", "4k"),
            ("offset_increment", "50%"),
        ] {
            assert!(
                pairs.iter().any(|(k, v)| (k.as_str(), v.as_str()) == kv),
                "{pairs:?}"
            );
        }
        let jf =
            parse_job_file("[j]\nrw=read\nnumjobs=4\nsize=25%\noffset_increment=25%\n").unwrap();
        assert_eq!(jf.offset_increment, Some(Extent::Percent(25)));
        // Serialized as the result's JSON writes it.
        let v = serde_json::to_value(&jf).unwrap();
        assert_eq!(v["offset_increment"], "25%");
        let v = serde_json::to_value(Workload::parse("offset=1m").unwrap()).unwrap();
        assert_eq!(v["offset"], 1 << 20);
        // A replay keeps the trace's own offsets.
        assert!(Workload::parse("read_iolog=x.log offset=1g").is_err());
    }

    #[test]
    fn think_times_read_as_fio_reads_them() {
        // fio's thinktime and thinktime_spin are time options in
        // microseconds unless a unit is given (options.c `is_time`).
        let ns = |w: &str| {
            let w = Workload::parse(w).unwrap();
            (w.thinktime, w.thinktime_spin)
        };
        assert_eq!(ns("thinktime=250"), (250_000, 0));
        assert_eq!(
            ns("thinktime=100ms thinktime_spin=20us"),
            (100_000_000, 20_000)
        );
        assert_eq!(ns("thinktime=1s"), (1_000_000_000, 0));
        assert_eq!(ns("thinktime=0.5ms"), (500_000, 0));
        assert_eq!(ns("thinktime=1m"), (60_000_000_000, 0));
        // Past 60 s, below fio's microsecond, negative or not a time: one
        // line naming the key.
        for bad in ["61s", "60000001", "1500ns", "0.0001ms", "-1", "abc", "1e3"] {
            let e = Workload::parse(&format!("thinktime={bad}")).unwrap_err();
            assert!(e.to_string().contains(&format!("thinktime={bad}")), "{e}");
        }
        // Exported back as whole microseconds, fio's default unit.
        let w = Workload::parse("thinktime=100ms").unwrap();
        assert!(w
            .to_pairs()
            .iter()
            .any(|(k, v)| k == "thinktime" && v == "100000"));
    }

    #[test]
    fn think_clock_counts_io_time_and_spin_lengthens_the_stall() {
        // thinktime_iotime alone: a stall once 0.4 s of I/O time has
        // passed since the last think ended, whatever the count.
        let w = Workload::parse("thinktime=100000 thinktime_iotime=0.4 iodepth=8").unwrap();
        assert_eq!(
            (w.thinktime_iotime, w.effective_iodepth()),
            (400_000_000, 8)
        );
        let mut c = ThinkClock::of(&w).unwrap();
        for _ in 0..1000 {
            c.completed();
        }
        assert!(!c.stall(|| 399_999_999));
        assert!(c.stall(|| 400_000_000));
        c.thought(500_000_000);
        assert!(!c.stall(|| 800_000_000) && c.stall(|| 900_000_000));
        // With thinktime_blocks given too, whichever comes first.
        let w = Workload::parse("thinktime=10 thinktime_iotime=1 thinktime_blocks=2").unwrap();
        let mut c = ThinkClock::of(&w).unwrap();
        c.completed();
        assert!(!c.stall(|| 5));
        c.completed();
        assert!(c.stall(|| 5));
        // The keys echo as fio writes them, and read back the same.
        let pairs = w.to_pairs();
        assert!(
            pairs.contains(&("thinktime_iotime".into(), "1".into())),
            "{pairs:?}"
        );
        let pairs = Workload::parse("thinktime=1 thinktime_iotime=0.25")
            .unwrap()
            .to_pairs();
        assert!(
            pairs.contains(&("thinktime_iotime".into(), "250ms".into())),
            "{pairs:?}"
        );
        let w = Workload::parse("thinktime=100 thinktime_spin=300 thinktime_iotime=500ms").unwrap();
        assert_eq!((w.think_stall(), w.thinktime_spin), (300_000, 300_000));
        let pairs = w.to_pairs();
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(Workload::from_pairs(&refs).unwrap(), w, "{pairs:?}");
        assert!(
            !pairs.iter().any(|p| p.0 == "thinktime_blocks"),
            "{pairs:?}"
        );
        assert!(
            w.to_json(1).get("thinktime_blocks").is_none(),
            "not the user's count"
        );
        // Without a think time they mean nothing and are dropped.
        assert_eq!(
            Workload::parse("thinktime_spin=5 thinktime_iotime=1").unwrap(),
            Workload::parse("").unwrap()
        );
        for bad in [
            "thinktime_iotime=2h",
            "thinktime_iotime=x",
            "thinktime_spin=-1",
        ] {
            assert!(Workload::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn think_clock_stalls_as_fio_handle_thinktime_does() {
        // No think time, no clock.
        assert!(ThinkClock::of(&Workload::parse("rw=read").unwrap()).is_none());
        // thinktime_blocks=8 counting completions: the 8th completion
        // stalls; the 7 completing while the job waits count towards the
        // next stall, which the 16th completion brings.
        let w = Workload::parse("thinktime=10 thinktime_blocks=8 iodepth=8").unwrap();
        assert_eq!(w.effective_iodepth(), 8);
        let mut c = ThinkClock::of(&w).unwrap();
        for _ in 0..7 {
            c.issued();
            c.completed();
            assert!(!c.stall(|| 0));
        }
        c.completed();
        assert!(c.stall(|| 0));
        assert!(!c.stall(|| 0), "one stall per count reached");
        for _ in 0..7 {
            c.completed();
        }
        assert!(!c.stall(|| 0));
        c.completed();
        assert!(c.stall(|| 0));
        // Counting issued I/Os instead.
        let w =
            Workload::parse("thinktime=10 thinktime_blocks=2 thinktime_blocks_type=issue").unwrap();
        let mut c = ThinkClock::of(&w).unwrap();
        c.completed();
        c.issued();
        assert!(!c.stall(|| 0));
        c.issued();
        assert!(c.stall(|| 0));
        // 0 or 1 (fio's default): a stall after every I/O, one in flight.
        for b in ["", " thinktime_blocks=0", " thinktime_blocks=1"] {
            let w = Workload::parse(&format!("thinktime=10 iodepth=8{b}")).unwrap();
            assert_eq!(w.effective_iodepth(), 1, "{b}");
        }
        // Echoed only where they differ from fio's defaults.
        let w =
            Workload::parse("thinktime=10 thinktime_blocks=4 thinktime_blocks_type=issue").unwrap();
        let pairs = w.to_pairs();
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(Workload::from_pairs(&refs).unwrap(), w);
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(
            (
                v["thinktime_blocks"].clone(),
                v["thinktime_blocks_type"].clone()
            ),
            (4.into(), "issue".into())
        );
        let v = serde_json::to_value(Workload::parse("thinktime=10").unwrap()).unwrap();
        assert!(v.get("thinktime_blocks").is_none() && v.get("thinktime_blocks_type").is_none());
        assert!(Workload::parse("thinktime_blocks_type=sometimes").is_err());
        assert!(Workload::parse("thinktime_blocks=-1").is_err());
        // A job file's line reads the same.
        let jf = parse_job_file("[j]\nthinktime=10\nthinktime_blocks=4\n").unwrap();
        assert_eq!(jf.thinktime_blocks, Some(4));
    }

    #[test]
    fn per_direction_block_sizes_and_filesize_read_as_fio_reads_them() {
        let w = Workload::parse("rw=randrw bs=4k,64k").unwrap();
        assert_eq!(
            (w.bssplit.clone(), w.bssplit_write.clone()),
            (vec![(4096, 100)], vec![(65536, 100)])
        );
        assert_eq!((w.min_bs(), w.max_bs()), (4096, 65536));
        // An empty one is fio's default; trims' are passed over.
        let w = Workload::parse("rw=randrw bs=,8k,").unwrap();
        assert_eq!((w.bssplit[0].0, w.bssplit_write[0].0), (4096, 8192));
        assert!(Workload::parse("bs=4k,64k bssplit=4k/100").is_err());
        assert!(Workload::parse("bs=4k,1000").is_err());
        // The echo reads back the same.
        let w = Workload::parse("rw=randrw bs=8k,32k").unwrap();
        let line: Vec<String> = w
            .to_pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(Workload::parse(&line.join(" ")).unwrap(), w);
        // filesize is the region; size then only what a pass moves.
        let w = Workload::parse("rw=randread filesize=1g size=64m").unwrap();
        assert_eq!((w.size, w.io_size), (Some(1 << 30), Some(64 << 20)));
        let w = Workload::parse("rw=randread filesize=1g").unwrap();
        assert_eq!((w.size, w.io_size), (Some(1 << 30), None));
        assert!(Workload::parse("filesize=1g-2g").is_err());
        assert!(Workload::parse("filesize=1g size=50%").is_err());
        let jf = parse_job_file("[j]\nrw=randread\nrandom_generator=tausworthe64\nfilesize=10g\n")
            .unwrap();
        assert_eq!(jf.size, Some(10 << 30));
    }

    #[test]
    fn io_size_and_loops_set_what_one_pass_moves() {
        let moved = |wl: &str| -> (u64, std::collections::BTreeSet<u64>) {
            let w = Workload::parse(wl).unwrap();
            let mut s = job_streams(&w, &w.regions(1 << 20).unwrap(), 2).remove(0);
            let ios: Vec<Io> = s.by_ref().collect();
            let bytes = ios.iter().map(|io| io.len as u64).sum();
            (bytes, ios.iter().map(|io| io.offset).collect())
        };
        // Less than the region: stops early, inside it.
        let (b, offs) = moved("rw=randread bs=4k size=512k io_size=64k");
        assert_eq!(b, 64 << 10);
        assert!(offs.iter().all(|&o| o < 512 << 10));
        // More: wraps round the region, every block visited twice.
        let (b, offs) = moved("rw=write bs=4k size=64k io_limit=128k");
        assert_eq!((b, offs.len()), (128 << 10, 16));
        // loops repeats the pass.
        assert_eq!(moved("rw=randwrite bs=4k size=64k loops=3").0, 192 << 10);
        assert!(Workload::parse("loops=0").is_err());
        assert!(Workload::parse("io_size=10%").is_err());
        let w = Workload::parse("io_size=1m loops=2").unwrap();
        assert_eq!(w.pass_bytes(4 << 20), 2 << 20);
        let pairs = w.to_pairs();
        assert!(
            pairs.contains(&("io_size".into(), "1m".into())),
            "{pairs:?}"
        );
        assert!(pairs.contains(&("loops".into(), "2".into())), "{pairs:?}");
    }

    #[test]
    fn streams_stay_in_their_jobs_regions() {
        let w = Workload::parse("rw=randrw bs=4k numjobs=3 size=1m offset=1m offset_increment=2m")
            .unwrap();
        let regions = w.regions(8 << 20).unwrap();
        let streams = job_streams(&w, &regions, 9);
        for (s, r) in streams.into_iter().zip(&regions) {
            let ios: Vec<Io> = s.collect();
            assert_eq!(
                ios.iter().map(|io| io.len as u64).sum::<u64>(),
                r.span,
                "one pass"
            );
            assert!(ios
                .iter()
                .all(|io| io.offset >= r.start && io.offset + io.len as u64 <= r.end()));
        }
        let w =
            Workload::parse("rw=write bs=128k numjobs=2 offset_increment=512k runtime=1").unwrap();
        let regions = w.regions(1 << 20).unwrap();
        let mut streams = job_streams(&w, &regions, 1);
        let second: Vec<u64> = streams.remove(1).take(5).map(|io| io.offset).collect();
        // Sequential from its own start, wrapping within its region.
        assert_eq!(
            second,
            vec![512 << 10, 640 << 10, 768 << 10, 896 << 10, 512 << 10]
        );
    }

    /// The KiB offsets of job 0 of `wl` over a 1 MiB volume.
    fn kib_offsets(wl: &str) -> Vec<u64> {
        let w = Workload::parse(wl).unwrap();
        job_streams(&w, &w.regions(1 << 20).unwrap(), 3)
            .remove(0)
            .map(|io| io.offset >> 10)
            .collect()
    }

    /// Sequential strided zones give the offsets fio 3.33's `write_iolog`
    /// records for the same options on a 1 MiB file.
    #[test]
    fn strided_zones_walk_as_fio_does() {
        // Two 4 KiB reads a zone, zones 128 KiB apart, wrapping at the end.
        let o = kib_offsets(
            "rw=read bs=4k zonemode=strided zonesize=8k zonerange=64k zoneskip=64k size=1m",
        );
        assert_eq!(o.len(), 256);
        let round: Vec<u64> = (0..8).flat_map(|z| [z * 128, z * 128 + 4]).collect();
        assert_eq!(o[..16], round[..]);
        assert_eq!(o[16..32], round[..]);
        // zonesize above zonerange: each zone read round twice.
        let o = kib_offsets(
            "rw=read bs=4k zonemode=strided zonesize=32k zonerange=16k size=1m io_size=96k",
        );
        assert_eq!(
            o,
            [
                0, 4, 8, 12, 0, 4, 8, 12, 16, 20, 24, 28, 16, 20, 24, 28, 32, 36, 40, 44, 32, 36,
                40, 44
            ]
        );
        // From `offset`, wrapping back to it.
        let o = kib_offsets(
            "rw=read bs=4k zonemode=strided zonesize=8k zonerange=64k zoneskip=192k offset=64k io_size=64k",
        );
        assert_eq!(
            o,
            [64, 68, 320, 324, 576, 580, 832, 836, 64, 68, 320, 324, 576, 580, 832, 836]
        );
    }

    /// Random strided zones: each zone's offsets inside it, its blocks
    /// visited once each by the random map, which starts afresh every
    /// `zonerange` bytes (as fio's `write_iolog` shows: four blocks of
    /// each 16 KiB zone, then the same four again when `zonesize` is twice
    /// the range).
    #[test]
    fn strided_random_zones_keep_a_map_a_zone() {
        let o = kib_offsets(
            "rw=randread bs=4k zonemode=strided zonesize=16k zonerange=16k zoneskip=16k size=256k",
        );
        assert_eq!(o.len(), 64);
        for (z, chunk) in o.chunks(4).enumerate() {
            let base = (z as u64 % 8) * 32;
            let mut c = chunk.to_vec();
            c.sort_unstable();
            assert_eq!(
                c,
                [base, base + 4, base + 8, base + 12],
                "zone {z}: {chunk:?}"
            );
        }
        let o = kib_offsets(
            "rw=randread bs=4k zonemode=strided zonesize=32k zonerange=16k size=256k io_size=64k",
        );
        for (i, chunk) in o.chunks(4).enumerate() {
            let base = (i as u64 / 2) * 16;
            let mut c = chunk.to_vec();
            c.sort_unstable();
            assert_eq!(
                c,
                [base, base + 4, base + 8, base + 12],
                "round {i}: {chunk:?}"
            );
        }
    }

    /// The job's I/Os as runs of reads and writes (`16W 16R ...`), and
    /// whether every read is of a piece written before it.
    fn backlog_runs(wl: &str) -> (String, bool) {
        let w = Workload::parse(wl).unwrap();
        let (mut runs, mut last, mut n) = (Vec::new(), ' ', 0);
        let mut written = std::collections::HashSet::new();
        let mut reads_written = true;
        for io in job_streams(&w, &w.regions(1 << 20).unwrap(), 2).remove(0) {
            let c = if io.read { 'R' } else { 'W' };
            if io.read {
                reads_written &= written.contains(&io.offset);
            } else {
                written.insert(io.offset);
            }
            if c != last && n > 0 {
                runs.push(format!("{n}{last}"));
                n = 0;
            }
            (last, n) = (c, n + 1);
        }
        runs.push(format!("{n}{last}"));
        (runs.join(" "), reads_written)
    }

    /// fio's verify_backlog: the runs of writes and read-backs fio 3.33's
    /// write_iolog records for the same jobs (a 1 MiB file, 4 KiB blocks):
    /// 16 writes then their 16 reads; with a batch of 4, 16 writes, then 4
    /// reads and 4 writes in turn, the 12 left read after the last write.
    #[test]
    fn verify_backlog_reads_back_as_fio_does() {
        let (runs, ok) = backlog_runs("rw=randwrite bs=4k size=1m verify_backlog=16");
        assert_eq!(runs, ["16W 16R"; 16].join(" "));
        assert!(ok);
        let (runs, ok) =
            backlog_runs("rw=randwrite bs=4k size=1m verify_backlog=16 verify_backlog_batch=4");
        let mut want = vec!["16W".to_string()];
        want.extend(std::iter::repeat_n("4R 4W".to_string(), 60));
        want.push("16R".into());
        assert_eq!(runs, want.join(" "));
        assert!(ok);
        // Sequential: the pieces in offset order, the last 6 after the end.
        let (runs, ok) = backlog_runs("rw=write bs=4k size=1m verify_backlog=10");
        assert!(runs.ends_with("10W 10R 6W 6R"), "{runs}");
        assert!(ok);
    }

    #[test]
    fn strided_zones_are_refused_where_fio_refuses_them() {
        for (wl, says) in [
            ("rw=read zonesize=64k", "zonemode=strided"),
            ("rw=read zonemode=strided", "zonesize"),
            ("rw=read zonemode=zbd zonesize=64k", "zbd"),
            (
                "rw=read bs=64k zonemode=strided zonesize=64k zonerange=4k",
                "largest block",
            ),
            ("rw=read zonemode=strided zonesize=1q", "zonesize"),
        ] {
            let e = Workload::parse(wl).unwrap_err().to_string();
            assert!(e.contains(says), "{wl}: {e}");
        }
        // The keys echo back as given and parse to the same workload.
        let w = Workload::parse("rw=randread zonemode=strided zonesize=64k zoneskip=1m").unwrap();
        let again = w
            .to_pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(again.contains("zonerange=64k"), "{again}");
        assert_eq!(Workload::parse(&again).unwrap(), w);
    }

    #[test]
    fn one_random_pass_visits_every_block_once_unless_norandommap() {
        let span = 1 << 20;
        let visited = |wl: &str| {
            let w = Workload::parse(wl).unwrap();
            let mut seen = std::collections::BTreeMap::new();
            for io in job_streams(&w, &w.regions(span).unwrap(), 5).remove(0) {
                *seen.entry(io.offset).or_insert(0u32) += 1;
            }
            seen
        };
        let map = visited("rw=randwrite bs=4k");
        assert_eq!(map.len(), 256, "every 4 KiB block of 1 MiB");
        assert!(map.values().all(|&n| n == 1));
        let offsets: Vec<u64> = map.keys().copied().collect();
        assert_eq!(offsets, (0..256).map(|b| b * 4096).collect::<Vec<_>>());
        // Without the map about 1/e of the blocks are missed.
        let free = visited("rw=randwrite bs=4k norandommap=1");
        assert!((140..200).contains(&free.len()), "{}", free.len());
        // The order is random, not sequential.
        let w = Workload::parse("rw=randread bs=4k").unwrap();
        let first: Vec<u64> = job_streams(&w, &w.regions(span).unwrap(), 5)
            .remove(0)
            .take(8)
            .map(|io| io.offset)
            .collect();
        assert!(first.windows(2).any(|p| p[1] != p[0] + 4096), "{first:?}");
        // Job files say it without a value.
        let jf = parse_job_file("[j]\nrw=randread\nnorandommap\n").unwrap();
        assert!(jf.norandommap);
    }

    #[test]
    fn permutations_are_bijections() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4096] {
            let mut v: Vec<u64> = (0..n).map(|i| permute(i, n, 42)).collect();
            v.sort_unstable();
            assert_eq!(v, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn blockalign_sets_the_grain_of_random_offsets() {
        let w = Workload::parse("rw=randwrite bs=4k blockalign=512").unwrap();
        assert_eq!(w.blockalign, Some(512));
        let span = 1 << 20;
        let mut misaligned = 0;
        for io in JobStream::new(&w, span, 3, 0, Some(5000)) {
            assert_eq!(io.offset % 512, 0);
            assert!(io.offset + io.len as u64 <= span);
            misaligned += u32::from(io.offset % 4096 != 0);
        }
        assert!(misaligned > 4000, "{misaligned} of 5000 off the 4 KiB grid");
        assert!(w
            .to_pairs()
            .contains(&("blockalign".to_string(), "512".to_string())));
        assert_eq!(Workload::parse("ba=2k").unwrap().blockalign, Some(2048));
        assert!(Workload::parse("blockalign=100").is_err());
    }

    /// Without `blockalign`, fio aligns random offsets to the direction's
    /// smallest size (`fixup_options` sets `ba` to `min_bs`), so the large
    /// I/Os of a mix land off their own size's grid.
    #[test]
    fn mixed_sizes_align_to_the_smallest() {
        let w = Workload::parse("rw=randrw bssplit=64k/50:4k/50,16k/50:32k/50").unwrap();
        let span = 1 << 24;
        let (mut off_grid, mut writes_off) = (0, 0);
        for io in JobStream::new(&w, span, 5, 0, Some(4000)) {
            assert!(io.offset + io.len as u64 <= span);
            if io.read {
                assert_eq!(io.offset % 4096, 0);
                off_grid += u32::from(io.len == 65536 && io.offset % 65536 != 0);
            } else {
                assert_eq!(io.offset % 16384, 0);
                writes_off += u32::from(io.len == 32768 && io.offset % 32768 != 0);
            }
        }
        // 15 of 16 4 KiB slots and half the 16 KiB ones are off the grid.
        assert!(off_grid > 800, "{off_grid} 64 KiB reads off their grid");
        assert!(
            writes_off > 300,
            "{writes_off} 32 KiB writes off their grid"
        );
    }

    #[test]
    fn bssplit_per_direction_follows_fio() {
        let w = Workload::parse("rw=randrw bssplit=4k/50:64k/50,8k/100 rwmixread=50").unwrap();
        assert_eq!(w.bssplit, vec![(4096, 50), (65536, 50)]);
        assert_eq!(w.bssplit_write, vec![(8192, 100)]);
        assert_eq!(w.max_bs(), 65536);
        assert_eq!(w.min_bs(), 4096);
        // Reads average 34 KiB, writes 8 KiB, half each.
        assert_eq!(w.mean_bs(), 0.5 * 34816.0 + 0.5 * 8192.0);
        let plain = Workload::parse("rw=randread bs=16k").unwrap();
        assert_eq!((plain.min_bs(), plain.mean_bs()), (16384, 16384.0));
        let pairs = w.to_pairs();
        assert!(pairs.contains(&("bssplit".to_string(), "4k/50:64k/50,8k/100".to_string())));
        let mut reads = std::collections::BTreeSet::new();
        let mut writes = std::collections::BTreeSet::new();
        for io in JobStream::new(&w, 1 << 30, 7, 0, Some(2000)) {
            if io.read {
                reads.insert(io.len);
            } else {
                writes.insert(io.len);
            }
        }
        assert_eq!(reads.into_iter().collect::<Vec<_>>(), vec![4096, 65536]);
        assert_eq!(writes.into_iter().collect::<Vec<_>>(), vec![8192]);
        for bad in [
            "bssplit=4k/100,8k/50",
            "bssplit=4k/100,8k/100,16k/100",
            "bssplit=4k/100,",
        ] {
            assert!(Workload::parse(bad).is_err(), "{bad}");
        }
        // One list still applies to both directions.
        assert!(Workload::parse("bssplit=4k/60:64k/40")
            .unwrap()
            .bssplit_write
            .is_empty());
    }

    /// fio's draw for `bsrange=lo-hi`, byte by byte: `lo + x` for every
    /// `x` in `0..hi`, rounded down to a multiple of `lo`, capped at `hi`.
    fn fio_bsrange_counts(lo: u64, hi: u64) -> std::collections::BTreeMap<u64, u64> {
        let mut n = std::collections::BTreeMap::new();
        for x in 0..hi {
            let len = ((lo + x) / lo * lo).min(hi);
            *n.entry(len).or_insert(0) += 1;
        }
        n
    }

    #[test]
    fn bsrange_weights_are_fios_draw() {
        for (lo, hi) in [
            (4096, 4096),
            (4096, 16384),
            (4096, 10240),
            (1536, 65536),
            (512, 8192),
        ] {
            let split = bsrange_split((lo, hi));
            let counts = fio_bsrange_counts(lo, hi);
            assert_eq!(split.len(), counts.len(), "{lo}-{hi}");
            let unit = hi / split.iter().map(|x| x.1 as u64).sum::<u64>();
            for (size, w) in split {
                assert_eq!(counts[&size], w as u64 * unit, "{lo}-{hi}: {size}");
            }
        }
    }

    #[test]
    fn bsrange_follows_fio() {
        let w = Workload::parse("rw=randrw bsrange=4k-16k,8k-10k").unwrap();
        assert_eq!(w.bs, 4096);
        assert_eq!((w.min_bs(), w.max_bs()), (4096, 16384));
        assert_eq!(w.bssplit_write, vec![(8192, 4), (10240, 1)]);
        let pairs = w.to_pairs();
        assert!(pairs.contains(&("bsrange".to_string(), "4k-16k,8k-10k".to_string())));
        let line: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(Workload::parse(&line.join(" ")).unwrap(), w);
        assert_eq!(
            Workload::parse("blocksize_range=4k-16k").unwrap().bsrange,
            vec![(4096, 16384)]
        );
        // A plain bs beside it gives way, as in fio.
        let both = Workload::parse("rw=randrw bs=64k bsrange=4k-16k,8k-10k").unwrap();
        assert_eq!((both.bs, &both.bssplit_write), (4096, &w.bssplit_write));
        // Each of the four read sizes a quarter of the time, the writes'
        // 8k four times in five.
        let (mut reads, mut writes) = (std::collections::BTreeMap::new(), [0u32; 2]);
        for io in JobStream::new(&w, 1 << 30, 7, 0, Some(40_000)) {
            if io.read {
                *reads.entry(io.len).or_insert(0u32) += 1;
            } else {
                writes[(io.len == 10240) as usize] += 1;
            }
        }
        assert_eq!(
            reads.keys().copied().collect::<Vec<_>>(),
            [4096, 8192, 12288, 16384]
        );
        let n: u32 = reads.values().sum();
        assert!(
            reads
                .values()
                .all(|&c| (c as f64 / n as f64 - 0.25).abs() < 0.02),
            "{reads:?}"
        );
        let share = writes[0] as f64 / (writes[0] + writes[1]) as f64;
        assert!((share - 0.8).abs() < 0.02, "{writes:?}");
        for bad in [
            "bsrange=16k-4k",
            "bsrange=4k",
            "bsrange=4k-",
            "bsrange=512-64m",
            "bsrange=4k-1000",
            "bs=4k,8k bsrange=4k-8k",
            "bssplit=4k/100 bsrange=4k-8k",
        ] {
            assert!(Workload::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sync_and_fsync_follow_fio() {
        let w = Workload::parse("rw=write bs=4k sync=1 fsync=8").unwrap();
        assert!(w.sync);
        assert_eq!(w.fsync, 8);
        assert_eq!(Workload::parse("rw=write fdatasync=2").unwrap().fsync, 2);
        assert!(!Workload::parse("rw=write sync=none").unwrap().sync);
        assert!(Workload::parse("rw=write sync=dsync").unwrap().sync);
        assert!(Workload::parse("rw=write sync=2").is_err());
        assert!(Workload::parse("rw=write fsync=-1").is_err());
        let pairs = w.to_pairs();
        assert!(pairs.contains(&("sync".to_string(), "1".to_string())));
        assert!(pairs.contains(&("fsync".to_string(), "8".to_string())));
    }

    #[test]
    fn presets_and_overrides() {
        let w = Workload::parse("preset=heavy rw=randwrite bs=8k").unwrap();
        assert_eq!((w.numjobs, w.iodepth, w.bs), (10, 16, 8192));
        assert_eq!(w.percentage_random, 100);
        let w = Workload::parse("iodepth=4 preset=light").unwrap();
        assert_eq!((w.numjobs, w.iodepth), (1, 4));
        let w = Workload::parse("preset=latency rw=read").unwrap();
        assert_eq!((w.numjobs, w.iodepth, w.percentage_random), (1, 1, 0));
    }

    #[test]
    fn every_key_parses() {
        let w = Workload::parse(
            "rw=randrw bssplit=4k/60:64k/40 rwmixread=70 percentage_random=50 iodepth=8 numjobs=2 size=4g runtime=2 ramp_time=0.5 random_distribution=zipf:1.2 thinktime=10 seed=9 state=steady",
        )
        .unwrap();
        assert_eq!(w.bssplit, vec![(4096, 60), (65536, 40)]);
        assert_eq!(w.size, Some(4 << 30));
        assert_eq!(w.runtime, Some(2_000_000_000));
        assert_eq!(w.ramp_time, Some(500_000_000));
        assert_eq!(w.thinktime, 10_000);
        assert_eq!(w.state, Some(SsdState::Steady));
        assert_eq!(w.random_distribution, Dist::Zipf(1.2));
    }

    #[test]
    fn bad_keys_and_values() {
        for (s, want) in [
            ("rw=sideways", "rw=sideways"),
            ("bs=3", "multiples of 512"),
            ("foo=1", "unknown key 'foo'"),
            ("iodepth=0", "iodepth=0"),
            ("bssplit=4k/50", "add up to 50"),
            ("preset=medium", "preset=medium"),
            ("random_distribution=zipf:x", "random_distribution"),
            ("bs", "not key=value"),
            ("bs=4k bs=8k", "twice"),
        ] {
            let e = Workload::parse(s).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn job_file() {
        let w = parse_job_file("; comment\n[global]\nioengine=libaio\ndirect=1\nbs=8k\n[job1]\nrw=randwrite\niodepth=16\nnumjobs=10\nrwmixwrite=30\n").unwrap();
        assert_eq!(
            (w.bs, w.iodepth, w.numjobs, w.rwmixread),
            (8192, 16, 10, 70)
        );
        assert_eq!(w.rw, Rw::RandWrite);
        let e = parse_job_file("[j]\nflow=1\n").unwrap_err().to_string();
        assert!(e.contains("unsupported fio option 'flow'"), "{e}");
        // fio's buffered is direct turned round, not an option to pass over.
        assert!(parse_job_file("[j]\nbuffered=1\n").unwrap().buffered);
        assert!(parse_job_file("[j]\nbuffered\n").unwrap().buffered);
        assert!(
            !parse_job_file("[j]\ndirect=0\nbuffered=0\n")
                .unwrap()
                .buffered
        );
        assert!(parse_job_file("[j]\nbuffered=2\n").is_err());
        // Reporting options change nothing issued.
        assert_eq!(
            parse_job_file("[j]\nrw=randread\ngtod_reduce=1\nclat_percentiles=1\n").unwrap(),
            Workload::parse("rw=randread").unwrap()
        );
        assert!(parse_job_file("[a]\n[b]\n").is_err());
        assert!(parse_job_file("bs=4k\n").is_err());
        // fio's rate limits parse, echo as fio writes them, and come from job files.
        let w = Workload::parse(
            "rw=randrw rate_iops=1000, rate_process=poisson io_submit_mode=offload",
        )
        .unwrap();
        assert_eq!(w.rate.iops, [Some(1000), None]);
        let pairs = w.to_pairs();
        for kv in [
            ("rate_iops", "1000,"),
            ("rate_process", "poisson"),
            ("io_submit_mode", "offload"),
        ] {
            assert!(pairs.contains(&(kv.0.into(), kv.1.into())), "{pairs:?}");
        }
        assert_eq!(w.to_json(1)["rate_iops"], "1000,");
        let w = parse_job_file("[j]\nrw=randread\nrate=1m\n").unwrap();
        assert_eq!(w.rate.bytes, [Some(1 << 20), Some(1 << 20)]);
        assert!(Workload::parse("io_submit_mode=later").is_err());
        // A byte cap that would space I/Os minutes apart is refused.
        assert!(Workload::parse("bs=1m rate=1k").is_err());
        assert!(Workload::parse("bs=4k rate=1k").is_ok());
        // Without a cap nothing is echoed.
        assert!(!Workload::parse("rate_process=poisson")
            .unwrap()
            .to_pairs()
            .iter()
            .any(|p| p.0.starts_with("rate")));
        // fio's bare `hipri` line turns polling on.
        let w = parse_job_file("[j]\nioengine=io_uring\nhipri\nrw=randread\n").unwrap();
        assert!(w.hipri);
        let pairs = Workload::parse("hipri=1").unwrap().to_pairs();
        assert!(pairs.contains(&("hipri".into(), "1".into())), "{pairs:?}");
        assert!(Workload::parse("hipri=2").is_err());
    }

    /// Blocks of one job's one-pass stream of `wl` over a region of
    /// `span` bytes, with the direction (r or w).
    fn one_pass(wl: &str, span: u64) -> Vec<(char, u64)> {
        let w = Workload::parse(wl).unwrap();
        let region = Region { start: 0, span };
        let mut s = job_streams(&w, &[region], 1).remove(0);
        std::iter::from_fn(|| s.next())
            .map(|io| (if io.read { 'r' } else { 'w' }, io.offset / w.bs))
            .collect()
    }

    #[test]
    fn sequential_reads_and_writes_of_a_job_each_go_on_from_their_own_last() {
        // fio 3.33, --rw=rw --bs=4k --size=64k logs r0 r1 r2 w0 r3 r4 w1 ...:
        // each direction walks the region from its start.
        let ios = one_pass("rw=rw bs=4k size=64k", 64 << 10);
        assert_eq!(ios.len(), 16);
        for dir in ['r', 'w'] {
            let blocks: Vec<u64> = ios.iter().filter(|x| x.0 == dir).map(|x| x.1).collect();
            assert!(!blocks.is_empty());
            assert_eq!(
                blocks,
                (0..blocks.len() as u64).collect::<Vec<_>>(),
                "{dir}"
            );
        }
    }

    #[test]
    fn offset_modifiers_shape_the_stream_as_fios_do() {
        let blocks =
            |wl: &str| -> Vec<u64> { one_pass(wl, 64 << 10).iter().map(|x| x.1).collect() };
        // fio 3.33 over 64 KiB: --rw=read:8k gives 0 3 6 9 12 15 and ends
        // its pass; --rw=read:-8k gives 0 14 13 ... 1 0.
        assert_eq!(
            blocks("rw=read:8k bs=4k size=64k"),
            vec![0, 3, 6, 9, 12, 15]
        );
        let back: Vec<u64> = std::iter::once(0).chain((0..15).rev()).collect();
        assert_eq!(blocks("rw=read:-8k bs=4k size=64k"), back);
        // A loop that ends early starts the next one at the region's start.
        assert_eq!(
            blocks("rw=write:8k bs=4k size=64k loops=2"),
            vec![0, 3, 6, 9, 12, 15, 0, 3, 6, 9, 12, 15]
        );
        // --rw=randread:4: a random offset, then three going on from it.
        let w = Workload::parse("rw=randread:4 bs=4k").unwrap();
        let ios: Vec<u64> = JobStream::new(&w, 1 << 30, 5, 0, Some(400))
            .map(|io| io.offset / 4096)
            .collect();
        let runs = ios
            .chunks(4)
            .filter(|c| c.windows(2).all(|p| p[1] == p[0] + 1));
        assert_eq!(runs.count(), 100, "every group of four is one run");
        assert!(
            ios.chunks(4)
                .map(|c| c[0])
                .collect::<std::collections::HashSet<_>>()
                .len()
                > 90
        );
        // rw_sequencer=identical repeats the random offset instead.
        let w = Workload::parse("rw=randwrite:3 rw_sequencer=identical bs=4k").unwrap();
        let ios: Vec<u64> = JobStream::new(&w, 1 << 30, 5, 0, Some(300))
            .map(|io| io.offset)
            .collect();
        assert!(ios.chunks(3).all(|c| c[0] == c[1] && c[1] == c[2]));
        // Without a modifier nothing changes, and the modifier echoes.
        let plain = Workload::parse("rw=randread bs=4k").unwrap();
        let one = Workload::parse("rw=randread:1 bs=4k").unwrap();
        assert_eq!(plain, one);
        let w = Workload::parse("rw=read:-8k rw_sequencer=identical").unwrap();
        assert!(
            !w.sequencer.identical,
            "identical acts only between random offsets"
        );
        assert!(w.to_pairs().contains(&("rw".into(), "read:-8k".into())));
        let w = Workload::parse("rw_sequencer=identical rw=randrw:16").unwrap();
        let pairs = w.to_pairs();
        assert!(
            pairs.contains(&("rw".into(), "randrw:16".into())),
            "{pairs:?}"
        );
        assert!(pairs.contains(&("rw_sequencer".into(), "identical".into())));
        for bad in [
            "rw=randread:0",
            "rw=read:x",
            "rw=randread:-2",
            "rw_sequencer=x",
        ] {
            assert!(Workload::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn end_fsync_and_fsync_on_close_are_one_end_flush_of_a_writing_job() {
        let a = Workload::parse("rw=write end_fsync=1").unwrap();
        let b = Workload::parse("rw=write fsync_on_close=1").unwrap();
        assert!(a.end_fsync);
        assert_eq!(a, b);
        assert!(a.to_pairs().contains(&("end_fsync".into(), "1".into())));
        // A job that never writes has nothing to sync (fio: td_write).
        assert!(
            !Workload::parse("rw=randread end_fsync=1")
                .unwrap()
                .end_fsync
        );
        assert!(Workload::parse("end_fsync=2").is_err());
        assert!(
            parse_job_file("[j]\nrw=randwrite\nfsync_on_close=1\n")
                .unwrap()
                .end_fsync
        );
    }

    #[test]
    fn job_file_sizes_read_under_fios_kb_base() {
        // fio's default reads 4KiB as 4,000 bytes: not a whole sector, so
        // refused, saying why.
        let e = parse_job_file("[j]\nrw=randread\nbs=4KiB\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("4000") && e.contains("kb_base=1024"), "{e}");
        assert!(!e.contains("workload: workload"), "{e}");
        // kb_base=1000 (anywhere in the file) makes the IEC units binary and
        // the SI ones decimal.
        let w = parse_job_file("[global]\nbs=8KiB\nsize=1g\n[j]\nkb_base=1000\n").unwrap();
        assert_eq!((w.bs, w.size), (8192, Some(1_000_000_000)));
        // A size that still works is noted.
        let (w, notes) = parse_job_file_noted("[j]\nbs=4k\nsize=1MiB\n").unwrap();
        assert_eq!(w.size, Some(1_000_000));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("size=1MiB is size=1000000")),
            "{notes:?}"
        );
        assert!(parse_job_file("[j]\nkb_base=512\n").is_err());
        // -w keeps raidlab's reading: 4KiB is 4,096 bytes.
        assert_eq!(Workload::parse("bs=4KiB").unwrap().bs, 4096);
    }

    #[test]
    fn job_files_take_file_placement_and_one_start_delay() {
        let base = parse_job_file("[j]\nrw=randread\nnumjobs=4\n").unwrap();
        let with = "[global]\ndirectory=/mnt/x\nunlink=1\nfallocate=none\nstartdelay=2\n[j]\nrw=randread\nnumjobs=4\n";
        assert_eq!(parse_job_file(with).unwrap(), base);
        // A range gives each job its own start: refused with several jobs.
        let spread = "[j]\nrw=randread\nnumjobs=4\nstartdelay=1-5\n";
        let e = parse_job_file(spread).unwrap_err().to_string();
        assert!(e.contains("startdelay") && e.contains("4 jobs"), "{e}");
        assert!(parse_job_file("[j]\nrw=randread\nstartdelay=1-5\n").is_ok());
        let e = parse_job_file("[j]\nstartdelay=soon\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("startdelay=soon"), "{e}");
    }

    /// fio's aliases (options.c `.alias`) read as the options they name,
    /// buffer and report options change nothing, and `nrfiles` is one file.
    #[test]
    fn job_files_take_fios_aliases_and_buffer_options() {
        let base = parse_job_file("[j]\nrw=randread\nruntime=3\noffset=1m\n").unwrap();
        let aliased = "[global]\ntimeout=3\nfileoffset=1m\nmem=mmaphuge\niomem_align=4k\nhugepage-size=2m\nallrandrepeat=1\nsignificant_figures=4\ndisk_util=0\ndisable_bw=1\nnrfiles=1\n[j]\nwait_for_previous\nrw=randread\n";
        assert_eq!(parse_job_file(aliased).unwrap(), base);
        for bad in ["nrfiles=4", "nr_files=0", "nrfiles=x"] {
            let e = parse_job_file(&format!("[j]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("line 2") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn absolute_zones_must_fit_each_jobs_region() {
        let w = Workload::parse("rw=randread random_distribution=zoned_abs:50/1m:50/3m numjobs=2 size=4m offset_increment=6m").unwrap();
        assert_eq!(w.regions(10 << 20).unwrap().len(), 2);
        // The second job's region is cut to 4 MiB - 2 MiB by the volume's end.
        let e = w.regions(8 << 20).unwrap_err();
        assert!(
            matches!(e, SpanError::ZonesPastEnd { zones, job: 1, span } if zones == 4 << 20 && span == 2 << 20),
            "{e}"
        );
        assert!(e.to_string().contains("zoned_abs"), "{e}");
        let pairs = w.to_pairs();
        assert!(
            pairs.contains(&("random_distribution".into(), "zoned_abs:50/1m:50/3m".into())),
            "{pairs:?}"
        );
    }

    #[test]
    fn number_ios_ends_a_one_pass_job() {
        let blocks =
            |wl: &str, span: u64| -> Vec<u64> { one_pass(wl, span).iter().map(|x| x.1).collect() };
        // fio 3.33: --number_ios=4 reads 0 1 2 3; with --loops=2 and 3 it
        // goes on from loop to loop (0..5); over 16 KiB with --loops=3, 0 1
        // 2 3 0 1 2 3 0; more than a pass is cut by the pass's bytes.
        assert_eq!(
            blocks("rw=read bs=4k number_ios=4", 64 << 10),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            blocks("rw=read bs=4k number_ios=3 loops=2", 64 << 10),
            vec![0, 1, 2, 3, 4, 5]
        );
        assert_eq!(
            blocks("rw=read bs=4k number_ios=3 loops=3", 16 << 10),
            vec![0, 1, 2, 3, 0, 1, 2, 3, 0]
        );
        assert_eq!(
            blocks("rw=read bs=16k number_ios=20 loops=2", 64 << 10),
            vec![0, 1, 2, 3, 0, 1, 2, 3]
        );
        assert_eq!(blocks("rw=randread bs=4k number_ios=7", 1 << 20).len(), 7);
        // Its volumes share a job's count, the first ones the remainder.
        let w = Workload::parse("rw=randread bs=4k number_ios=9").unwrap();
        let streams = volume_streams(
            &w,
            &[Region {
                start: 0,
                span: 1 << 30,
            }],
            1,
            4,
        );
        let counts: Vec<usize> = streams.into_iter().map(|s| s.count()).collect();
        assert_eq!(counts, vec![3, 2, 2, 2]);
        // fio 3.33 runs a time-based job on past it (25,928 reads in 1 s
        // with --number_ios=9 --time_based), and so does raidlab.
        let w = Workload::parse("rw=randread bs=4k runtime=10 number_ios=9").unwrap();
        let s = job_streams(
            &w,
            &[Region {
                start: 0,
                span: 1 << 30,
            }],
            1,
        )
        .remove(0);
        assert_eq!(s.take(100).count(), 100);
        // 0 is fio's default: no limit; the key echoes.
        assert_eq!(
            Workload::parse("number_ios=0").unwrap(),
            Workload::parse("").unwrap()
        );
        let pairs = Workload::parse("number_ios=5").unwrap().to_pairs();
        assert!(
            pairs.contains(&("number_ios".into(), "5".into())),
            "{pairs:?}"
        );
        assert!(Workload::parse("number_ios=-1").is_err());
    }

    #[test]
    fn streams_are_deterministic_aligned_and_in_span() {
        let w =
            Workload::parse("rw=randrw bssplit=4k/50:16k/50 random_distribution=zipf:1.1").unwrap();
        let a: Vec<Io> = JobStream::new(&w, 1 << 30, 1, 0, Some(2000)).collect();
        let b: Vec<Io> = JobStream::new(&w, 1 << 30, 1, 0, Some(2000)).collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2000);
        assert!(a
            .iter()
            .all(|io| io.offset % 4096 == 0 && io.offset + io.len as u64 <= 1 << 30));
        let c: Vec<Io> = JobStream::new(&w, 1 << 30, 1, 1, Some(2000)).collect();
        assert_ne!(a, c, "jobs get their own streams");
    }

    #[test]
    fn sequential_wraps() {
        let w = Workload::parse("rw=write bs=4k").unwrap();
        let v: Vec<u64> = JobStream::new(&w, 16384, 1, 0, Some(6))
            .map(|i| i.offset)
            .collect();
        assert_eq!(v, vec![0, 4096, 8192, 12288, 0, 4096]);
    }

    #[test]
    fn batching_keys_parse_echo_and_come_from_job_files() {
        let w = Workload::parse(
            "iodepth=32 iodepth_batch_submit=16 iodepth_batch_complete_min=8 iodepth_batch_complete_max=32 iodepth_low=4",
        )
        .unwrap();
        assert_eq!(
            w.batch,
            crate::batch::Batch {
                submit: 16,
                complete_min: 8,
                complete_max: 32,
                low: 4
            }
        );
        // The echo reads back to the same workload, in JSON and k=v.
        let again = Workload::parse(
            &w.to_pairs()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        )
        .unwrap();
        assert_eq!(again.batch, w.batch);
        let j = w.to_json(1);
        assert_eq!(j["iodepth_batch_submit"], 16);
        assert_eq!(j["iodepth_low"], 4);
        // fio's aliases.
        let a = Workload::parse("iodepth_batch=4 iodepth_batch_complete=2").unwrap();
        assert_eq!((a.batch.submit, a.batch.complete_min), (4, 2));
        // Defaults say nothing.
        let d = Workload::parse("iodepth=8").unwrap();
        assert!(d.batch.is_default() && d.to_json(1).get("iodepth_low").is_none());
        assert!(!d.to_pairs().iter().any(|(k, _)| k.starts_with("iodepth_")));
        // Out of range: one clear message.
        let e = Workload::parse("iodepth_batch_submit=70000")
            .unwrap_err()
            .to_string();
        assert!(e.contains("iodepth_batch_submit=70000"), "{e}");
        assert!(Workload::parse("iodepth_low=-1").is_err());
        // A vendor-style job file.
        let jf = parse_job_file(
            "[global]\nioengine=io_uring\niodepth=128\niodepth_batch_submit=32\niodepth_batch_complete_max=128\n[j]\nrw=randread\n",
        )
        .unwrap();
        assert_eq!((jf.batch.submit, jf.batch.complete_max), (32, 128));
        // fio runs a synchronous engine (its default, psync, included) at
        // queue depth 1 whatever iodepth says, and says so.
        for (file, depth) in [
            ("[j]\niodepth=32\n", 1),
            ("[global]\nioengine=psync\n[j]\niodepth=32\n", 1),
            (
                "[global]\nioengine=psync\n[j]\nioengine=libaio\niodepth=32\n",
                32,
            ),
            ("[j]\nioengine=io_uring\niodepth=32\n", 32),
            (
                "[j]\nioengine=sync\niodepth=8\nrate_iops=100\nio_submit_mode=offload\n",
                8,
            ),
        ] {
            let (w, notes) = parse_job_file_noted(file).unwrap();
            assert_eq!(w.iodepth, depth, "{file}");
            assert_eq!(notes.len(), usize::from(depth == 1), "{file}: {notes:?}");
        }
        // A runtime that fio takes as a cap on one pass is run whole, and
        // said so; time_based makes the two agree.
        let (_, notes) = parse_job_file_noted("[j]\nioengine=libaio\nruntime=5\n").unwrap();
        assert!(
            notes[0].starts_with("runtime without time_based"),
            "{notes:?}"
        );
        for tb in ["time_based\n", "time_based=1\n"] {
            let f = format!("[j]\nioengine=libaio\nruntime=5\n{tb}");
            assert!(parse_job_file_noted(&f).unwrap().1.is_empty(), "{f}");
        }
        // The rest of such a file says nothing about the I/O issued.
        let jf = parse_job_file(
            "[global]\nfixedbufs=1\nregisterfiles\nzero_buffers\nwrite_lat_log=lat\nlog_hist_msec=1000\nnuma_cpu_nodes=0\nclocksource=cpu\n[j]\nrw=randread\n",
        )
        .unwrap();
        assert_eq!(jf.rw, Rw::RandRead);
    }

    #[test]
    fn the_normal_distribution_is_fio_s_bell_and_echoes() {
        let w = Workload::parse("rw=randread random_distribution=normal:5").unwrap();
        assert_eq!(w.random_distribution, Dist::Normal(5.0));
        assert_eq!(w.to_json(1)["random_distribution"], "normal:5");
        assert!(Workload::parse("random_distribution=normal:150").is_err());
        // The bell of 12 draws has a deviation of about n/12: the middle
        // tenth of the ranks takes about 40 % of the draws (0.6 deviations
        // each side), the outer fifth almost none; dev widens it.
        let n = 10_000;
        let share = |dev: f64, lo: u64, hi: u64| {
            let mut rng = crate::rng::Rng::new(3);
            let hits = (0..50_000)
                .filter(|_| (lo..hi).contains(&normal_rank(&mut rng, n, dev)))
                .count();
            hits as f64 / 50_000.0
        };
        let middle = share(0.0, 4_500, 5_500);
        assert!((0.38..0.48).contains(&middle), "{middle}");
        assert!(share(0.0, 0, 1_000) < 0.001);
        assert!(share(50.0, 4_500, 5_500) < middle - 0.1);
        let mut rng = crate::rng::Rng::new(9);
        assert!((0..10_000).all(|_| normal_rank(&mut rng, 7, 100.0) < 7));
    }
}
