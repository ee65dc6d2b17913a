//! Presets: devices, controllers and the host, as TOML data.
//!
//! Every built-in preset is one file under `presets/` (embedded at build
//! time); each number there carries a comment naming its source. Users add
//! their own with `--presets FILE.toml`, whose tables may start from a
//! built-in one with `base = "NAME"` and override any field:
//!
//! ```toml
//! [my-nvme]
//! base = "s3500-800"
//! capacity_gb = 960
//! link_mbps = 3200
//! ```
//!
//! Code never branches on a preset's name: the simulator only sees the typed
//! parameters below.

use crate::error::{Error, Result};
use crate::kernel::Kernel;
use raidlab_layout::Level;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Flash SSD parameters (physical and firmware facts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdParams {
    /// One-line description.
    pub description: String,
    /// The drive speaks NVMe over PCIe (else SATA or SAS): only the host's
    /// own PCIe lanes and tri-mode controllers (`nvme = true`) take it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub nvme: bool,
    /// Year the product came out (catalogue information, `presets --format json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u32>,
    /// Host interface in words (`SATA 3 Gb/s`, `PCIe 4.0 x4 NVMe`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Unit price in the user's currency (`raidlab plan`'s cost; no
    /// built-in preset has one: prices are the user's to give).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// Paths of real devices or files this preset describes (written by
    /// `raidlab calibrate`): `sim` reads a `run` expression's leaf that is one
    /// of them as this preset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Logical (user) capacity in 10^9 bytes.
    pub capacity_gb: f64,
    /// Rated endurance: terabytes (10^12 bytes) the host may write over the
    /// warranty, as the datasheet states it (TBW, or DWPD × capacity ×
    /// warranty days). `None`: no rating known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endurance_tbw: Option<f64>,
    /// Host link payload rate in 10^6 bytes/s (SATA 3 Gb/s = 300 after 8b/10b).
    pub link_mbps: f64,
    /// PCIe generation of an NVMe drive's link (1-5; `None` for SATA and
    /// SAS). A link trains to the slower of its two ends: in a host or
    /// behind a controller of an older generation the drive's `link_mbps`
    /// scales down by the ratio of the two generations' lane rates (the
    /// lanes are taken as equal, x4 to x4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gen: Option<u32>,
    /// Host link per-command overhead (command, status and DMA-setup frames), µs.
    pub link_cmd_us: f64,
    /// Native command queue depth (NCQ = 32).
    pub queue_depth: u32,
    /// Firmware CPU cores working on commands in parallel.
    pub fw_cores: u32,
    /// Firmware cost of one read command, µs.
    pub fw_read_us: f64,
    /// Firmware cost of each further flash read a host read command needs
    /// beyond its first, µs (0, none, by default): issuing, tracking and
    /// checking one more flash command. The command's flash reads are
    /// issued one after another, so a read spread over many flash pages
    /// waits for its own issue and loads the firmware; the drive's
    /// read-ahead of a sequential stream is not charged (its reads go out
    /// as one stream).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fw_read_op_us: f64,
    /// Firmware cost of one write command, µs.
    pub fw_write_us: f64,
    /// Firmware/DMA cost per KiB moved, µs (ECC, buffer management).
    pub fw_us_per_kb: f64,
    /// Firmware cost per 4 KiB unit relocated by garbage collection, µs
    /// (mapping update, copy-back command, error handling).
    pub fw_gc_us: f64,
    /// NAND channels.
    pub channels: u32,
    /// NAND dies per channel (each die runs one array operation at a time).
    pub dies_per_channel: u32,
    /// NAND page size, KiB (program unit).
    pub page_kb: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Page read (array to register) time, µs: the mean over the page
    /// types of a word line (see `cell_bits`).
    pub read_us: f64,
    /// Bits each cell stores: 1 (SLC), 2 (MLC), 3 (TLC) or 4 (QLC); 0 or
    /// absent means 1. A word line holds one page per bit, and reading a
    /// page senses the cells once per read reference voltage its bit needs,
    /// so the page types of a multi-bit cell read in different times around
    /// `read_us` (docs/model.md, NAND page types).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub cell_bits: u32,
    /// Page program time, µs.
    pub program_us: f64,
    /// Block erase time, µs.
    pub erase_us: f64,
    /// Channel (flash bus) transfer rate, 10^6 bytes/s.
    pub channel_mbps: f64,
    /// Physical over-provisioning: flash beyond the logical capacity, % of logical.
    pub spare_pct: f64,
    /// Volatile DRAM write buffer, KiB.
    pub write_buffer_kb: u32,
    /// Write cache enabled by default (`wc=on`).
    pub write_cache: bool,
    /// Internal sequential read-ahead, KiB (0 = none).
    pub readahead_kb: u32,
    /// Free erase blocks per pool (a die, or the dies whose blocks are
    /// collected together) below which greedy GC runs.
    pub gc_free_blocks: u32,
    /// The firmware paces garbage collection: it interleaves relocations
    /// with host programs, each host page paying its share of the backlog,
    /// instead of letting a page wait for a whole collection (false: the
    /// page waits for the die's whole GC backlog, as early drives do).
    #[serde(default)]
    pub gc_pacing: bool,
    /// Power-loss protection (capacitors that let the drive write its
    /// buffer out on power loss): a cache flush returns at once, as the
    /// buffer already counts as durable. Without it a flush waits until the
    /// buffered data is programmed.
    #[serde(default)]
    pub power_loss_protection: bool,
    /// How the FTL maps logical to physical space: `page` (out-of-place
    /// pages, greedy GC) or `block` (whole blocks with a few log blocks,
    /// merged on eviction, as early drives did).
    #[serde(default)]
    pub ftl: FtlKind,
    /// Log blocks of a block-mapped FTL (`ftl = "block"`).
    #[serde(default)]
    pub log_blocks: u32,
    /// In what order a flash channel moves pages: `dispatch` (the order the
    /// firmware queued the operations, as SATA-era controllers' per-channel
    /// queues do) or `ready` (whichever die's page is ready first, as NVMe
    /// controllers' out-of-order flash schedulers do).
    #[serde(default)]
    pub channel_order: ChannelOrder,
    /// SLC cache, GB: free flash the drive programs one bit per cell, fast,
    /// before its native mode (0: none, as most data-centre drives).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub slc_cache_gb: f64,
    /// Page program time in SLC mode, µs (with `slc_cache_gb`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub slc_program_us: f64,
    /// The controller's program data path, MB/s (0: no limit of its own):
    /// every byte programmed — host data and garbage collection's
    /// relocations alike — passes one engine (ECC encoding and the die-parity
    /// accumulation data-centre controllers compute over their dies) on its
    /// way to the flash. A drive whose sequential writes stay below what its
    /// link and its dies could take is bound here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub write_path_mbps: f64,
    /// Program suspend, µs (0: none): the length of a program's
    /// program-and-verify loop, at whose end a program stops for a host
    /// read that finds its die programming; the read waits out the rest of
    /// the loop under way, reads, and lets the program (and the programs
    /// queued behind it) resume; without it the read waits for the program
    /// to finish. A NAND feature data-centre firmware uses to keep reads
    /// fast under writes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub program_suspend_us: f64,
    /// Whether the host link carries both directions at once (`true`:
    /// PCIe, whose lanes are a pair of one-way links, and SAS; `false`, the
    /// default: SATA, whose link carries one frame at a time). On a
    /// full-duplex link write data coming in does not wait for read data
    /// going out.
    #[serde(default, skip_serializing_if = "is_false")]
    pub full_duplex: bool,
    /// Whether a die takes the next page's data into its cache register
    /// while it programs (ONFI's page cache program; `true`, the default).
    /// Without it (`false`) the register loads only once the die's
    /// program ends, so a die alternates its channel transfer and its
    /// program and a sequential write pays both per page.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub cache_program: bool,
    /// Whether a host read first waits for the write buffer to be
    /// programmed (`false`, the default: reads go ahead of buffered
    /// writes). A drive whose small write buffer also serves its reads
    /// programs every buffered write, padding a partial page, before it
    /// reads (Fusion-io's patent applications 11/952,091 and 13/189,402
    /// describe devices with a small write buffer that block reads until
    /// it is programmed, or flush it to enable reads), so mixed reads and
    /// writes run near the program rate. A read-ahead hit waits too: the
    /// drain comes before the read's data, wherever that comes from.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reads_drain_buffer: bool,
    /// How long a write that covers a 4 KiB mapping unit only in part is
    /// held after the unit's old data is read, µs (0, the default: the
    /// merged unit waits in the write buffer like any other and the write
    /// completes once it is there). A drive that keeps its 4 KiB write unit
    /// atomic commits the merged unit before acknowledging the write: Jon
    /// Derrick's biosnoop of a Solidigm P5520 (linux-raid, "[PATCH v5 3/3]
    /// md: Use optimal I/O size for last bitmap page", 2023-02-24) shows
    /// 3,584-byte writes taking 0.43-0.66 ms beside 0.01-0.02 ms for the
    /// 4,096-byte writes around them. Latency, not load: the unit's program
    /// is the buffer's as for any write.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partial_unit_commit_us: f64,
}

/// Whether an optional figure is absent (0).
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_true(v: &bool) -> bool {
    *v
}

fn yes() -> bool {
    true
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// The order a flash channel serves its dies' transfers in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelOrder {
    /// In the order the firmware dispatched the operations: a page ready
    /// early waits behind transfers queued before it (per-channel FIFO
    /// command queues of the SATA generation; the seed documents' drives).
    #[default]
    Dispatch,
    /// The first free slot after the page is ready: a die's page does not
    /// wait for a transfer queued earlier for a die still busy (the
    /// out-of-order transaction scheduling of NVMe-era controllers, as in
    /// MQSim's transaction scheduling unit, Tavakkol et al., FAST 2018).
    Ready,
}

/// Which whole dirty stripes of a parity array a write-back controller
/// destages as one full-stripe write (no pre-reads) rather than chunk by
/// chunk by read-modify-write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StripeGather {
    /// Every stripe found wholly dirty.
    #[default]
    Always,
    /// Only stripes a sequential write stream filled: the write coalescing
    /// of controllers that gather stripes for streams they detect, while a
    /// random write that happens to cover a stripe is destaged like any
    /// other random write.
    Sequential,
    /// None.
    Never,
}

impl StripeGather {
    fn is_always(&self) -> bool {
        *self == StripeGather::Always
    }
}

impl<'de> Deserialize<'de> for StripeGather {
    /// `always`, `sequential` or `never`; `true` and `false` (the switch's
    /// earlier form) read as `always` and `never`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Switch(bool),
            Word(String),
        }
        match Form::deserialize(d)? {
            Form::Switch(true) => Ok(StripeGather::Always),
            Form::Switch(false) => Ok(StripeGather::Never),
            Form::Word(w) => match w.as_str() {
                "always" => Ok(StripeGather::Always),
                "sequential" => Ok(StripeGather::Sequential),
                "never" => Ok(StripeGather::Never),
                _ => Err(serde::de::Error::custom(format!(
                    "full_stripe_destage = \"{w}\": expected always, sequential or never"
                ))),
            },
        }
    }
}

/// An SSD's mapping scheme.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FtlKind {
    /// Page-mapped.
    #[default]
    Page,
    /// Block-mapped with log blocks.
    Block,
}

/// Hard-disk parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddParams {
    /// One-line description.
    pub description: String,
    /// Year the product came out (catalogue information, `presets --format json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u32>,
    /// Host interface in words (`SATA 3 Gb/s`, `PCIe 4.0 x4 NVMe`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Unit price in the user's currency (`raidlab plan`'s cost; no
    /// built-in preset has one: prices are the user's to give).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// Paths of real devices or files this preset describes (written by
    /// `raidlab calibrate`): `sim` reads a `run` expression's leaf that is one
    /// of them as this preset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Capacity in 10^9 bytes.
    pub capacity_gb: f64,
    /// Spindle speed.
    pub rpm: f64,
    /// Track-to-track seek, ms.
    pub seek_track_ms: f64,
    /// Average (one-third stroke) seek, ms.
    pub seek_avg_ms: f64,
    /// Full-stroke seek, ms.
    pub seek_full_ms: f64,
    /// Sustained media rate, 10^6 bytes/s (outer zone).
    pub media_mbps: f64,
    /// On-drive cache, MiB.
    pub cache_mb: u32,
    /// Host link payload rate, 10^6 bytes/s.
    pub link_mbps: f64,
    /// Per-command link overhead, µs.
    pub link_cmd_us: f64,
    /// Per-command drive electronics overhead, µs.
    pub cmd_us: f64,
    /// Tagged command queue depth (reordering window).
    pub queue_depth: u32,
    /// Read-ahead into the segment cache after a sequential read, KiB.
    pub readahead_kb: u32,
    /// Write cache enabled by default.
    pub write_cache: bool,
}

/// RAID controller parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerParams {
    /// One-line description.
    pub description: String,
    /// It runs arrays (a RAID-on-chip's firmware); `false` for a host bus
    /// adapter, which passes drives through.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub raid: bool,
    /// Tri-mode: its lanes also take NVMe drives (else SAS/SATA only).
    #[serde(default, skip_serializing_if = "is_false")]
    pub nvme: bool,
    /// Year the product came out (catalogue information, `presets --format json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u32>,
    /// Host interface in words (`SATA 3 Gb/s`, `PCIe 4.0 x4 NVMe`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Unit price in the user's currency (`raidlab plan`'s cost; no
    /// built-in preset has one: prices are the user's to give).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// PCIe generation (1, 2, 3).
    pub pcie_gen: u32,
    /// PCIe lanes.
    pub pcie_lanes: u32,
    /// Platform limit of the slot (chipset/north-bridge), 10^6 bytes/s; 0 = none.
    pub slot_limit_mbps: f64,
    /// RAID-on-chip cores.
    pub roc_cores: u32,
    /// RoC cost per host command, µs.
    pub roc_cmd_us: f64,
    /// RoC cost per member (device) command, µs.
    pub roc_member_cmd_us: f64,
    /// RoC cost per KiB of host data moved (scatter-gather and cache-buffer
    /// management), µs.
    pub roc_us_per_kb: f64,
    /// Internal data path (cache memory / DMA) rate, 10^6 bytes/s.
    pub dma_mbps: f64,
    /// Parity (XOR / P+Q) engine rate, 10^6 bytes/s.
    pub xor_mbps: f64,
    /// Fixed firmware latency added to every host command, µs.
    pub fw_latency_us: f64,
    /// Fixed latency a command on an array volume adds on top of
    /// `fw_latency_us`, µs: the firmware's RAID layer (mapping onto the
    /// stripe, its locks), which a single-drive volume or a JBOD drive
    /// does not go through. 0 (the default): arrays and single drives
    /// alike.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub array_latency_us: f64,
    /// Cache size, MiB (0 = no cache).
    pub cache_mb: u32,
    /// Default cache policy: `wb` or `wt`.
    pub cache: String,
    /// Default read-ahead policy: `on`, `off` or `adaptive`.
    pub readahead: String,
    /// Read-ahead amount, KiB.
    pub readahead_kb: u32,
    /// Device ports (direct or through an expander).
    pub ports: u32,
    /// Port link payload rate, 10^6 bytes/s.
    pub port_mbps: f64,
    /// Outstanding destage writes per member (write-back cache).
    pub destage_per_member: u32,
    /// Share of the controller's work a rebuild takes while its array is
    /// busy with host I/O, percent, 1 to 100 (MegaRAID's Rebuild Rate,
    /// "the fraction of the compute cycles dedicated to rebuilding failed
    /// drives"); none: the rebuild is paced as md paced it before Linux 4.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild_rate_pct: Option<u32>,
    /// Firmware time of one destage (cache flush) operation, µs, spent by a
    /// single flush task: destages run one after another on it. The task
    /// also pays `roc_us_per_kb` for the bytes it flushes and
    /// `roc_member_cmd_us` for each member write a host write becomes,
    /// before the write is acknowledged, and for each pre-read of a destage
    /// (which the RoC's shared cores then do not).
    #[serde(default)]
    pub destage_task_us: f64,
    /// Write-back writes are accepted by the firmware's one cache task
    /// (the flush task's single thread), not shared over the RoC's cores:
    /// their `roc_cmd_us` and `roc_us_per_kb` queue one after another
    /// there, behind its destages, however many commands are outstanding.
    /// `false` (the default): every command runs on any core.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_task_writes: bool,
    /// Rate at which the cache task moves a write-back write's data into
    /// cache memory, 10^6 bytes/s, alongside its PCIe fetch (the slower of
    /// the two sets the time); 0 (the default): the data costs the task
    /// only `roc_us_per_kb`. Needs `cache_task_writes`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_task_mbps: f64,
    /// Which of a parity array's stripes whose data chunks are all dirty
    /// the destage gathers into one full-stripe write (`always`, the
    /// default; `true` reads the same), only those a sequential write
    /// stream filled (`sequential`), or none (`never`, `false`): the others
    /// go chunk by chunk, by read-modify-write, from each member's queue.
    #[serde(default, skip_serializing_if = "StripeGather::is_always")]
    pub full_stripe_destage: StripeGather,
    /// Dirty data younger than this is held to merge sequential writes, ms.
    pub destage_delay_ms: f64,
    /// Default stripe unit, KiB.
    pub default_stripe_kb: u32,
    /// Maximum outstanding host commands.
    pub queue_depth: u32,
    /// LSI's FastPath (cut-through I/O): on a volume set write-through with
    /// no read-ahead and not degraded, a host command no larger than the
    /// stripe unit skips the firmware's command processing
    /// (`roc_cmd_us`) and goes from host memory to the member's command:
    /// reads on RAID 0, 1, 5 and 6 and single drives, writes on RAID 0 and
    /// single drives only (Dell PERC H710P user's manual, "FastPath"; HP
    /// MR Gen10 controller guide). `false` (the default): every command
    /// takes the firmware path.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fastpath: bool,
    /// FastPath also takes reads of spanned levels (RAID 10): the later
    /// firmware of HP's MR Gen10 guide ("read IOs to all RAID levels"); the
    /// SAS2208 generation's does not (Dell: RAID 10, 50 and 60 virtual
    /// disks cannot use FastPath).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fastpath_spans: bool,
}

/// The rebuild rates a controller takes, percent of its work
/// (`ControllerParams::rebuild_rate_pct`): MegaRAID's settings, 0 aside
/// (a rate of 0 rebuilds only when idle, which the model does not take).
pub const REBUILD_RATE_PCT: std::ops::RangeInclusive<u32> = 1..=100;

/// The host software RAID implementations a host preset may profile:
/// Linux md, LVM (dm-raid), Windows dynamic disks, and Intel VROC (md with
/// Intel's IMSM metadata, the CPU's VMD in front of the NVMe drives).
pub const IMPLS: &[&str] = &["md", "lvm", "windows", "vroc"];

/// Host software RAID implementation profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwImplParams {
    /// CPU per array request, µs (at the host's reference clock).
    pub req_us: f64,
    /// CPU per member request, µs.
    pub member_us: f64,
    /// Parity (XOR) compute rate of one core, 10^6 bytes/s.
    pub xor_mbps: f64,
    /// RAID 6 P+Q compute rate of one core, 10^6 bytes/s.
    pub pq_mbps: f64,
    /// RAID 5/6 writes always read old data and parity first
    /// (read-modify-write), even when they cover whole stripes.
    #[serde(default)]
    pub rmw_only: bool,
    /// Stripe unit (chunk) of an array created without one, KiB: the
    /// implementation's own default (mdadm 512, lvcreate 64, ...).
    pub default_stripe_kb: u32,
    /// RAID 10: time each request holds the array's barrier lock, µs (md's
    /// raid10 takes `conf->resync_lock` in `wait_barrier` and the wait
    /// queue's lock to wake waiters, from every submitting thread; 0: a
    /// lockless fast path, as md's raid1 has had since Coly Li's barrier
    /// rework of 2017 and its raid10 since Yu Kuai's seqlock patches,
    /// LKML 2022-09).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub raid10_lock_us: f64,
    /// RAID levels the implementation builds (`raid0`, `raid5`, ...);
    /// empty: every level. Intel VROC's platforms list raid0, raid1,
    /// raid10 and raid5 (`mdadm --detail-platform`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<String>,
    /// Most members an array may have (0: no limit of its own).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub max_members: u32,
    /// Largest stripe unit the implementation takes, KiB (0: no limit of
    /// its own).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub max_stripe_kb: u32,
}

/// Host parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostParams {
    /// One-line description.
    pub description: String,
    /// Year the product came out (catalogue information, `presets --format json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u32>,
    /// Host interface in words (`SATA 3 Gb/s`, `PCIe 4.0 x4 NVMe`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Unit price in the user's currency (`raidlab plan`'s cost; no
    /// built-in preset has one: prices are the user's to give).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// CPU cores available for I/O.
    pub cores: u32,
    /// Clock, GHz.
    pub ghz: f64,
    /// Clock at which the µs costs below were measured, GHz.
    pub ref_ghz: f64,
    /// Block layer + driver + interrupt cost per I/O, µs.
    pub block_layer_us: f64,
    /// PCIe generation of the host's root ports (1-5; `None`: no limit): an
    /// NVMe drive of a newer generation attached to the host trains down
    /// to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gen: Option<u32>,
    /// Block layer + driver cost per I/O when the job polls for its
    /// completions (fio's `hipri`), µs; absent where the kernel profiled
    /// has no polled completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_layer_poll_us: Option<f64>,
    /// md arrays take polled I/O (passing it to their members): Linux
    /// 6.x, not 5.x (false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub md_polls: bool,
    /// The Linux release the host runs (`kernel = "5.10"`), which decides
    /// md's read balancing over flash mirrors, RAID 10's barrier lock and
    /// the size of the bitmap's last page write (see [`Kernel`]'s
    /// predicates); a preset that names none runs [`Kernel::newest`].
    #[serde(default)]
    pub kernel: Kernel,
    /// Software RAID implementation profiles: `md`, `lvm`, `windows`.
    pub impls: BTreeMap<String, SwImplParams>,
}

/// A typed preset.
#[derive(Debug, Clone, PartialEq)]
pub enum Preset {
    /// Flash SSD.
    Ssd(SsdParams),
    /// Hard disk.
    Hdd(HddParams),
    /// RAID controller or HBA.
    Controller(ControllerParams),
    /// Host.
    Host(HostParams),
}

impl Preset {
    /// The preset's kind word (`ssd`, `hdd`, `controller`, `host`).
    pub fn kind(&self) -> &'static str {
        match self {
            Preset::Ssd(_) => "ssd",
            Preset::Hdd(_) => "hdd",
            Preset::Controller(_) => "controller",
            Preset::Host(_) => "host",
        }
    }

    /// Unit price, where the user gave one.
    pub fn price(&self) -> Option<f64> {
        match self {
            Preset::Ssd(p) => p.price,
            Preset::Hdd(p) => p.price,
            Preset::Controller(p) => p.price,
            Preset::Host(p) => p.price,
        }
    }

    /// One-line description.
    pub fn description(&self) -> &str {
        match self {
            Preset::Ssd(p) => &p.description,
            Preset::Hdd(p) => &p.description,
            Preset::Controller(p) => &p.description,
            Preset::Host(p) => &p.description,
        }
    }
}

struct Entry {
    /// Original file text (built-ins keep their source comments).
    text: Option<String>,
    table: toml::Table,
    preset: Preset,
}

/// The set of known presets: built-ins plus any user files.
pub struct PresetDb {
    entries: BTreeMap<String, Entry>,
}

macro_rules! builtin {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../presets/", $name, ".toml")))),*]
    };
}

/// Built-in presets: (name, TOML text).
pub const BUILTIN: &[(&str, &str)] = builtin!(
    "x25e",
    "mtron7535",
    "s3500-80",
    "s3500-480",
    "s3500-800",
    "pm9a3",
    "pm9a3-960",
    "p5500",
    "p5520",
    "pm1743",
    "p5810",
    "micron5400",
    "pm1653",
    "hdd-sas10k",
    "hdd-sas15k",
    "adaptec5085",
    "areca1680",
    "megaraid9265",
    "megaraid9361",
    "megaraid9365",
    "megaraid9560",
    "megaraid9670",
    "hba",
    "hba9500",
    "host",
    "host2020",
    "host2023",
);

fn typed(name: &str, table: &toml::Table) -> Result<Preset> {
    let mut t = table.clone();
    t.remove("base");
    let kind = match t.remove("kind") {
        Some(toml::Value::String(k)) => k,
        _ => {
            return Err(Error::Preset(format!(
                "'{name}': missing kind (ssd, hdd, controller, host)"
            )))
        }
    };
    let v = toml::Value::Table(t);
    let err = |e: toml::de::Error| Error::Preset(format!("'{name}': {}", e.message().trim()));
    Ok(match kind.as_str() {
        "ssd" => Preset::Ssd(v.try_into().map_err(err)?),
        "hdd" => Preset::Hdd(v.try_into().map_err(err)?),
        "controller" => Preset::Controller(v.try_into().map_err(err)?),
        "host" => Preset::Host(v.try_into().map_err(err)?),
        k => {
            return Err(Error::Preset(format!(
                "'{name}': unknown kind '{k}' (ssd, hdd, controller, host)"
            )))
        }
    })
}

/// Check a preset's values: what a model needs to run (positive rates, at
/// least one of each resource) and bounds that keep memory and time finite.
fn check(name: &str, p: &Preset) -> Result<()> {
    let why = match p {
        Preset::Ssd(s) => check_ssd(s),
        Preset::Hdd(h) => check_hdd(h),
        Preset::Controller(c) => check_controller(c),
        Preset::Host(h) => check_host(h),
    };
    why.map_err(|w| Error::Preset(format!("'{name}': {w}")))
}

/// Why an SSD preset cannot be simulated, if it cannot.
fn check_ssd(s: &SsdParams) -> std::result::Result<(), String> {
    if !positive(s.capacity_gb) || !positive(s.link_mbps) || !positive(s.channel_mbps) {
        return Err("capacity_gb, link_mbps and channel_mbps must be positive".into());
    }
    if s.pcie_gen.is_some_and(|g| !(1..=5).contains(&g)) {
        return Err("pcie_gen must be 1 to 5".into());
    }
    if s.pcie_gen.is_some() && !s.nvme {
        return Err("pcie_gen is an NVMe drive's: give nvme = true".into());
    }
    if s.channels == 0 || s.dies_per_channel == 0 || s.page_kb < 4 || !s.page_kb.is_power_of_two() {
        return Err(
            "channels and dies_per_channel must be ≥ 1 and page_kb a power of two ≥ 4".into(),
        );
    }
    if s.pages_per_block < 2 || s.queue_depth == 0 || s.fw_cores == 0 || s.gc_free_blocks == 0 {
        return Err("pages_per_block ≥ 2, queue_depth, fw_cores and gc_free_blocks ≥ 1".into());
    }
    if s.ftl == FtlKind::Block && (!(1..=4096).contains(&s.log_blocks) || s.capacity_gb > 16_000.0)
    {
        return Err(
            "a block-mapped FTL needs log_blocks from 1 to 4096 and a capacity of at most 16 TB"
                .into(),
        );
    }
    let slc_fits = (0.0..=s.capacity_gb).contains(&s.slc_cache_gb);
    let slc_faster = s.slc_program_us > 0.0 && s.slc_program_us <= s.program_us;
    if s.slc_cache_gb != 0.0 && !(slc_fits && slc_faster) {
        return Err("slc_cache_gb must be from 0 to capacity_gb, with slc_program_us above 0 and at most program_us".into());
    }
    if s.write_path_mbps != 0.0 && !(1.0..=1e6).contains(&s.write_path_mbps) {
        return Err("write_path_mbps must be 0 (no limit) or from 1 to 1,000,000".into());
    }
    if !(0.0..=1e6).contains(&s.partial_unit_commit_us) {
        return Err("partial_unit_commit_us must be from 0 to 1,000,000".into());
    }
    if !(0.0..=1000.0).contains(&s.fw_read_op_us) {
        return Err("fw_read_op_us must be from 0 to 1,000".into());
    }
    if s.cell_bits > 4 {
        return Err("cell_bits must be 1 (SLC), 2 (MLC), 3 (TLC) or 4 (QLC)".into());
    }
    if !(0.0..=10_000.0).contains(&s.program_suspend_us) {
        return Err("program_suspend_us must be 0 (no suspend) or up to 10,000".into());
    }
    if !(1.0..=1000.0).contains(&s.spare_pct) {
        return Err("spare_pct must be from 1 to 1000 (an FTL needs spare blocks)".into());
    }
    check_ssd_bounds(s)
}

/// The upper bounds of an SSD preset's sizes, counts, times and rates
/// (what the simulator's memory and arithmetic allow).
fn check_ssd_bounds(s: &SsdParams) -> std::result::Result<(), String> {
    if s.capacity_gb > 1e6
        || s.channels > 256
        || s.dies_per_channel > 256
        || s.page_kb > 64
        || s.pages_per_block > 2048
    {
        return Err("out of range: capacity_gb ≤ 1e6, channels and dies_per_channel ≤ 256, page_kb ≤ 64, pages_per_block ≤ 2048".into());
    }
    if s.queue_depth > 65536
        || s.fw_cores > 256
        || s.write_buffer_kb > 1 << 24
        || s.gc_free_blocks > 64
        || s.readahead_kb > 1 << 20
    {
        return Err("out of range: queue_depth ≤ 65536, fw_cores ≤ 256, write_buffer_kb ≤ 16 GiB, gc_free_blocks ≤ 64, readahead_kb ≤ 1 GiB".into());
    }
    let times = [
        s.link_cmd_us,
        s.fw_read_us,
        s.fw_write_us,
        s.fw_us_per_kb,
        s.read_us,
        s.program_us,
        s.erase_us,
    ];
    if times.iter().any(|t| !(0.0..=1e7).contains(t)) || s.link_mbps > 1e6 || s.channel_mbps > 1e6 {
        return Err("times must be from 0 to 1e7 us and rates at most 1e6 MB/s".into());
    }
    Ok(())
}

/// Why a disk preset cannot be simulated, if it cannot.
fn check_hdd(h: &HddParams) -> std::result::Result<(), String> {
    if ![h.capacity_gb, h.rpm, h.media_mbps, h.link_mbps]
        .into_iter()
        .all(positive)
        || h.queue_depth == 0
    {
        return Err(
            "capacity_gb, rpm, media_mbps, link_mbps and queue_depth must be positive".into(),
        );
    }
    let times = [
        h.seek_track_ms,
        h.seek_avg_ms,
        h.seek_full_ms,
        h.link_cmd_us / 1000.0,
        h.cmd_us / 1000.0,
    ];
    if times.iter().any(|t| !(0.0..=1e4).contains(t))
        || h.capacity_gb > 1e6
        || h.rpm > 1e6
        || h.queue_depth > 65536
        || h.cache_mb > 1 << 20
    {
        return Err("out of range: times 0..1e4 ms, capacity_gb ≤ 1e6, rpm ≤ 1e6, queue_depth ≤ 65536, cache_mb ≤ 1 TiB".into());
    }
    Ok(())
}

/// Why a controller preset cannot be simulated, if it cannot.
fn check_controller(c: &ControllerParams) -> std::result::Result<(), String> {
    if c.pcie_lanes == 0 || !(1..=5).contains(&c.pcie_gen) || c.roc_cores == 0 || c.ports == 0 {
        return Err("pcie_gen 1..5, pcie_lanes, roc_cores and ports must be ≥ 1".into());
    }
    if ![c.dma_mbps, c.port_mbps, c.xor_mbps]
        .into_iter()
        .all(positive)
        || c.queue_depth == 0
    {
        return Err("dma_mbps, port_mbps, xor_mbps and queue_depth must be positive".into());
    }
    if !matches!(c.cache.as_str(), "wb" | "wt") {
        return Err("cache must be wb or wt".into());
    }
    if !matches!(c.readahead.as_str(), "on" | "off" | "adaptive") {
        return Err("readahead must be on, off or adaptive".into());
    }
    if c.fastpath_spans && !c.fastpath {
        return Err("fastpath_spans needs fastpath = true".into());
    }
    if c.cache_task_mbps != 0.0 && (!c.cache_task_writes || !positive(c.cache_task_mbps)) {
        return Err("cache_task_mbps must be positive and needs cache_task_writes = true".into());
    }
    if c.rebuild_rate_pct
        .is_some_and(|r| !REBUILD_RATE_PCT.contains(&r))
    {
        return Err("rebuild_rate_pct must be from 1 to 100".into());
    }
    if c.destage_per_member == 0
        || c.default_stripe_kb < 4
        || !c.default_stripe_kb.is_power_of_two()
        || c.default_stripe_kb > 1 << 20
    {
        return Err(
            "destage_per_member ≥ 1 and default_stripe_kb a power of two from 4 to 1048576".into(),
        );
    }
    let times = [
        c.roc_cmd_us,
        c.roc_member_cmd_us,
        c.fw_latency_us,
        c.array_latency_us,
        c.destage_task_us,
        c.destage_delay_ms * 1000.0,
    ];
    if times.iter().any(|t| !(0.0..=1e7).contains(t))
        || c.roc_cores > 256
        || c.ports > 4096
        || c.pcie_lanes > 32
        || !(0.0..=1e7).contains(&c.slot_limit_mbps)
    {
        return Err("out of range: times 0..1e7 us, roc_cores ≤ 256, ports ≤ 4096, pcie_lanes ≤ 32, slot_limit_mbps ≥ 0".into());
    }
    Ok(())
}

/// Why a host preset cannot be simulated, if it cannot.
fn check_host(h: &HostParams) -> std::result::Result<(), String> {
    if h.cores == 0 || !positive(h.ghz) || !positive(h.ref_ghz) {
        return Err("cores, ghz and ref_ghz must be positive".into());
    }
    if h.pcie_gen.is_some_and(|g| !(1..=5).contains(&g)) {
        return Err("pcie_gen must be 1 to 5".into());
    }
    if h.cores > 4096
        || !(0.0..=1e6).contains(&h.block_layer_us)
        || h.block_layer_poll_us
            .is_some_and(|p| !(0.0..=1e6).contains(&p))
    {
        return Err(
            "out of range: cores ≤ 4096, block_layer_us and block_layer_poll_us 0..1e6".into(),
        );
    }
    if h.impls.values().any(|i| {
        !positive(i.xor_mbps)
            || !positive(i.pq_mbps)
            || !(0.0..=1e6).contains(&i.req_us)
            || !(0.0..=1e6).contains(&i.member_us)
            || !(0.0..=1e6).contains(&i.raid10_lock_us)
            || !(4..=1 << 20).contains(&i.default_stripe_kb)
            || !i.default_stripe_kb.is_power_of_two()
    }) {
        return Err("impl profiles need positive xor_mbps and pq_mbps, non-negative costs and a default_stripe_kb that is a power of two from 4 to 1048576".into());
    }
    for k in ["md", "lvm", "windows"] {
        if !h.impls.contains_key(k) {
            return Err(format!("impls.{k} is missing"));
        }
    }
    for (k, i) in &h.impls {
        if !IMPLS.contains(&k.as_str()) {
            return Err(format!("impls.{k}: expected one of {}", IMPLS.join(", ")));
        }
        if let Some(l) = i.levels.iter().find(|l| Level::from_word(l).is_none()) {
            return Err(format!("impls.{k}.levels: '{l}' is not a RAID level"));
        }
        if i.max_stripe_kb != 0 && i.default_stripe_kb > i.max_stripe_kb {
            return Err(format!(
                "impls.{k}: default_stripe_kb is above max_stripe_kb"
            ));
        }
    }
    Ok(())
}

impl PresetDb {
    /// The built-in presets.
    pub fn builtin() -> Self {
        let mut entries = BTreeMap::new();
        for (name, text) in BUILTIN {
            let table: toml::Table = toml::from_str(text)
                .unwrap_or_else(|e| panic!("built-in preset {name} is not valid TOML: {e}"));
            let preset = typed(name, &table).unwrap_or_else(|e| panic!("built-in preset: {e}"));
            check(name, &preset).unwrap_or_else(|e| panic!("built-in preset: {e}"));
            entries.insert(
                name.to_string(),
                Entry {
                    text: Some(text.to_string()),
                    table,
                    preset,
                },
            );
        }
        PresetDb { entries }
    }

    /// Add the presets of a user TOML document (one table per preset).
    /// A table may name `base = "NAME"` to start from an existing preset.
    pub fn load_str(&mut self, text: &str) -> Result<()> {
        let doc: toml::Table = toml::from_str(text)
            .map_err(|e| Error::Preset(format!("not valid TOML: {}", e.message().trim())))?;
        for (name, v) in doc {
            let toml::Value::Table(mut t) = v else {
                return Err(Error::Preset(format!(
                    "'{name}' must be a table ([{name}])"
                )));
            };
            if !valid_name(&name) {
                return Err(Error::Preset(format!(
                    "'{name}' is not a valid preset name (letters, digits, - _ .)"
                )));
            }
            if let Some(base) = t.get("base").cloned() {
                let toml::Value::String(base) = base else {
                    return Err(Error::Preset(format!("'{name}': base must be a string")));
                };
                let b = self.entries.get(&base).ok_or_else(|| {
                    Error::Preset(format!("'{name}': unknown base preset '{base}'"))
                })?;
                let mut merged = b.table.clone();
                for (k, v) in t {
                    merged.insert(k, v);
                }
                t = merged;
            }
            let preset = typed(&name, &t)?;
            check(&name, &preset)?;
            self.entries.insert(
                name,
                Entry {
                    text: None,
                    table: t,
                    preset,
                },
            );
        }
        Ok(())
    }

    /// Add (or replace) an SSD preset built in code, as `raidlab calibrate`
    /// does with each candidate it tries; it is checked as a file's would be.
    pub fn insert_ssd(&mut self, name: &str, params: SsdParams) -> Result<()> {
        let preset = Preset::Ssd(params);
        check(name, &preset)?;
        let Preset::Ssd(p) = &preset else {
            unreachable!("built as an SSD above")
        };
        let mut table = toml::Table::try_from(p)
            .map_err(|e| Error::Preset(format!("'{name}': {}", e.to_string().trim())))?;
        table.insert("kind".into(), toml::Value::String("ssd".into()));
        self.entries.insert(
            name.to_string(),
            Entry {
                text: None,
                table,
                preset,
            },
        );
        Ok(())
    }

    /// The preset whose `paths` name `path` (a `run` expression's leaf), if
    /// one does.
    pub fn by_path(&self, path: &str) -> Option<(&str, &Preset)> {
        self.iter().find(|(_, p)| match p {
            Preset::Ssd(s) => s.paths.iter().any(|q| q == path),
            Preset::Hdd(h) => h.paths.iter().any(|q| q == path),
            _ => false,
        })
    }

    /// Look a preset up by name.
    pub fn get(&self, name: &str) -> Option<&Preset> {
        self.entries.get(name).map(|e| &e.preset)
    }

    /// All presets: (name, preset), sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Preset)> {
        self.entries.iter().map(|(k, e)| (k.as_str(), &e.preset))
    }

    /// The preset as TOML: a built-in's own file (with its source comments), or
    /// the merged table of a user preset.
    pub fn to_toml(&self, name: &str) -> Option<String> {
        let e = self.entries.get(name)?;
        Some(match &e.text {
            Some(t) => t.clone(),
            None => {
                let mut t = e.table.clone();
                t.remove("base");
                toml::to_string(&t).unwrap_or_default()
            }
        })
    }

    /// Names of all presets, for "did you mean" messages.
    pub fn names(&self) -> Vec<&str> {
        self.entries.keys().map(|s| s.as_str()).collect()
    }

    /// The message for a name that is no preset, with the most useful hint:
    /// the RAID levels for a `raidN` that is none, the preset a name differs
    /// from only in case or by a typo or two, or where the list is.
    pub fn unknown(&self, name: &str) -> String {
        let lower = name.to_ascii_lowercase();
        const LEVELS: [&str; 6] = ["raid0", "raid1", "raid5", "raid6", "raid10", "concat"];
        if LEVELS.contains(&lower.as_str()) || lower == "raid4" {
            return format!(
                "'{name}' is a RAID level, not a preset: levels make arrays in a topology ({lower}(4*x25e)); 'raidlab presets' lists drives, controllers and hosts"
            );
        }
        if let Some(digits) = lower.strip_prefix("raid") {
            if digits.bytes().all(|b| b.is_ascii_digit()) {
                return format!(
                    "unknown RAID level '{name}' (raid0, raid1, raid5, raid6, raid10, concat)"
                );
            }
        }
        if name.contains('/') || name.ends_with(".img") {
            return format!(
                "'{name}' is a path, not a preset: paths are members for 'raidlab run'; to simulate them, give a --presets file whose drive preset lists it in `paths = [\"{name}\"]` (raidlab calibrate {name} writes one), or use preset names (see 'raidlab presets')"
            );
        }
        if self.entries.contains_key(&lower) {
            return format!("unknown preset '{name}' (preset names are lower case: '{lower}')");
        }
        let head: String = lower.chars().take(3).collect();
        let near: Vec<&str> = self
            .names()
            .into_iter()
            .filter(|n| edit_distance(&lower, n) <= 2.max(n.len() / 4) || n.starts_with(&head))
            .collect();
        if near.is_empty() {
            format!("unknown preset '{name}' (see 'raidlab presets')")
        } else {
            format!(
                "unknown preset '{name}' (did you mean {}?)",
                near.join(", ")
            )
        }
    }
}

/// Levenshtein distance between two short names (bytes), for suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A finite, strictly positive number (NaN is not).
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_have_kinds() {
        let db = PresetDb::builtin();
        assert!(matches!(db.get("x25e"), Some(Preset::Ssd(_))));
        assert!(matches!(db.get("hdd-sas10k"), Some(Preset::Hdd(_))));
        assert!(matches!(db.get("adaptec5085"), Some(Preset::Controller(_))));
        assert!(matches!(db.get("host"), Some(Preset::Host(_))));
        assert!(
            db.to_toml("x25e").unwrap().contains('#'),
            "built-ins keep their source comments"
        );
    }

    #[test]
    fn every_builtin_number_has_a_source_comment() {
        for (name, text) in BUILTIN {
            for line in text.lines() {
                let l = line.trim();
                if l.is_empty() || l.starts_with('#') || l.starts_with('[') {
                    continue;
                }
                let is_number = l.split('=').nth(1).is_some_and(|v| {
                    let v = v.split('#').next().unwrap().trim();
                    v.parse::<f64>().is_ok()
                });
                if is_number {
                    assert!(l.contains('#'), "{name}: '{l}' has no source comment");
                }
            }
        }
    }

    #[test]
    fn user_preset_derives_from_builtin() {
        let mut db = PresetDb::builtin();
        db.load_str("[my-ssd]\nbase = \"s3500-800\"\ncapacity_gb = 960\nlink_mbps = 3200\n")
            .unwrap();
        let Some(Preset::Ssd(p)) = db.get("my-ssd") else {
            panic!()
        };
        assert_eq!(p.capacity_gb, 960.0);
        assert_eq!(p.link_mbps, 3200.0);
        assert!(db.to_toml("my-ssd").unwrap().contains("capacity_gb = 960"));
    }

    #[test]
    fn user_preset_errors_are_typed() {
        let mut db = PresetDb::builtin();
        assert!(db.load_str("[a]\nbase = \"nope\"").is_err());
        assert!(db.load_str("[a]\nbase = \"x25e\"\nbogus = 1").is_err());
        assert!(db.load_str("[a]\nkind = \"ssd\"").is_err());
        assert!(db.load_str("not toml [").is_err());
        assert!(db.load_str("[a]\nbase = \"x25e\"\nchannels = 0").is_err());
        assert!(db
            .load_str("[a]\nbase = \"adaptec5085\"\ndestage_task_us = -1")
            .is_err());
        assert!(
            db.load_str("[a]\nbase = \"adaptec5085\"\nfastpath_spans = true")
                .is_err(),
            "spans without FastPath"
        );
        assert!(db
            .load_str("[b]\nbase = \"megaraid9265\"\nfastpath_spans = true")
            .is_ok());
        assert!(
            db.load_str("[c]\nbase = \"adaptec5085\"\ncache_task_mbps = 500")
                .is_err(),
            "a cache task rate without a cache task"
        );
        assert!(db
            .load_str("[c]\nbase = \"areca1680\"\ncache_task_mbps = -5")
            .is_err());
        for bad in [0, 101] {
            assert!(db
                .load_str(&format!(
                    "[d]\nbase = \"megaraid9361\"\nrebuild_rate_pct = {bad}"
                ))
                .is_err());
        }
        assert!(db
            .load_str("[d]\nbase = \"areca1680\"\nrebuild_rate_pct = 80")
            .is_ok());
    }

    #[test]
    fn an_slc_cache_must_fit_the_drive_and_program_faster() {
        let mut db = PresetDb::builtin();
        let slc = |gb: &str, us: &str| {
            format!("[a]\nbase = \"pm9a3\"\nslc_cache_gb = {gb}\nslc_program_us = {us}\n")
        };
        assert!(db.load_str(&slc("4", "150")).is_ok());
        assert!(
            db.load_str(&slc("9000", "150")).is_err(),
            "larger than the drive"
        );
        assert!(db.load_str(&slc("4", "900")).is_err(), "slower than TLC");
        assert!(db.load_str(&slc("4", "0")).is_err(), "no program time");
        assert!(db.load_str(&slc("-1", "150")).is_err(), "negative");
    }

    #[test]
    fn a_program_suspend_is_in_range() {
        let mut db = PresetDb::builtin();
        let sus = |v: &str| format!("[a]\nbase = \"x25e\"\nprogram_suspend_us = {v}\n");
        assert!(db.load_str(&sus("0")).is_ok(), "none");
        assert!(db.load_str(&sus("100")).is_ok());
        for bad in ["-1", "10001", "nan", "inf"] {
            assert!(db.load_str(&sus(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_write_path_and_a_raid10_lock_are_in_range() {
        let mut db = PresetDb::builtin();
        let wp = |v: &str| format!("[a]\nbase = \"pm9a3\"\nwrite_path_mbps = {v}\n");
        assert!(db.load_str(&wp("3800")).is_ok());
        assert!(db.load_str(&wp("-5")).is_err(), "negative");
        let host = BUILTIN
            .iter()
            .find(|(n, _)| *n == "host2020")
            .map(|(_, t)| *t)
            .expect("host2020");
        let with_lock = |v: &str| {
            let body = host.replace("raid10_lock_us = 0.545", &format!("raid10_lock_us = {v}"));
            format!("[h]\n{}", body.replace("[impls.", "[h.impls."))
        };
        assert!(db.load_str(&with_lock("0.5")).is_ok());
        assert!(db.load_str(&with_lock("-1")).is_err(), "negative");
    }
}
