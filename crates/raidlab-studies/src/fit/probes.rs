//! The probe suite `calibrate` runs on a drive, and the parameter
//! templates a fit starts from (SATA, SAS, NVMe, NVMe SLC).

use super::*;

/// A probe of the suite: what `calibrate` runs on the target.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Short name.
    pub label: &'static str,
    /// fio keys, without runtime (the caller adds its time budget).
    pub workload: &'static str,
    /// Metric the fit uses.
    pub metric: &'static str,
    /// The probe writes.
    pub writes: bool,
    /// The probe needs the drive in random-write steady state.
    pub steady: bool,
}

impl Probe {
    /// The probe needs the drive written: it writes, or it reads a drive
    /// in random-write steady state (a `--read-only` fit skips it).
    pub fn needs_writes(&self) -> bool {
        self.writes || self.steady
    }

    /// The probe's warm-up is the random-write steady state itself (a
    /// steady read probe follows the write probes that left the drive so).
    pub fn preconditions(&self) -> bool {
        self.writes && self.steady
    }
}

/// The probe suite, in the order it runs: reads first (they need data on
/// the drive, which a fresh file or a purged drive reads as zeros either
/// way), then sequential and small writes, then the random-write steady
/// state (SNIA PTS's IOPS test in miniature: 4 KiB at QD32 after the
/// drive's spare area is used up) and a synchronous-write probe.
pub const PROBES: &[Probe] = &[
    Probe {
        label: "randread-4k-qd1",
        workload: "rw=randread bs=4k iodepth=1",
        metric: "lat_avg_ms",
        writes: false,
        steady: false,
    },
    Probe {
        label: "randread-4k-qd4",
        workload: "rw=randread bs=4k iodepth=4",
        metric: "iops",
        writes: false,
        steady: false,
    },
    Probe {
        label: "randread-4k-qd32",
        workload: "rw=randread bs=4k iodepth=32",
        metric: "iops",
        writes: false,
        steady: false,
    },
    Probe {
        label: "randread-16k-qd8",
        workload: "rw=randread bs=16k iodepth=8",
        metric: "iops",
        writes: false,
        steady: false,
    },
    Probe {
        label: "randread-64k-qd32",
        workload: "rw=randread bs=64k iodepth=32",
        metric: "mbps",
        writes: false,
        steady: false,
    },
    Probe {
        label: "read-128k-qd32",
        workload: "rw=read bs=128k iodepth=32",
        metric: "mbps",
        writes: false,
        steady: false,
    },
    Probe {
        label: "write-128k-qd32",
        workload: "rw=write bs=128k iodepth=32",
        metric: "mbps",
        writes: true,
        steady: false,
    },
    Probe {
        label: "randwrite-4k-qd1",
        workload: "rw=randwrite bs=4k iodepth=1",
        // The median: a typical write lands in the drive's buffer, while
        // the mean also carries garbage-collection stalls.
        metric: "lat_p50_ms",
        writes: true,
        steady: false,
    },
    Probe {
        label: "randwrite-4k-qd32-steady",
        workload: "rw=randwrite bs=4k iodepth=32",
        metric: "iops",
        writes: true,
        steady: true,
    },
    Probe {
        label: "randwrite-4k-qd32-steady-p99",
        workload: "rw=randwrite bs=4k iodepth=32",
        metric: "lat_p99_ms",
        writes: true,
        steady: true,
    },
    Probe {
        // Reads of a drive the 4 KiB random writes left scattered: a 64 KiB
        // range lies in 16 units on as many flash pages, so the firmware
        // issues one flash read per unit where a sequentially written range
        // needs one per page (`fw_read_op_us`).
        label: "randread-64k-qd32-steady",
        workload: "rw=randread bs=64k iodepth=32",
        metric: "mbps",
        writes: false,
        steady: true,
    },
    Probe {
        label: "randwrite-64k-qd32-steady",
        workload: "rw=randwrite bs=64k iodepth=32",
        metric: "mbps",
        writes: true,
        steady: true,
    },
    Probe {
        label: "randrw70-8k-qd32-steady",
        workload: "rw=randrw rwmixread=70 bs=8k iodepth=32",
        metric: "iops",
        writes: true,
        steady: true,
    },
    Probe {
        // At a shallow queue a mix's reads wait behind whole programs
        // rather than queue behind each other, so the figure tells the
        // program time apart from the die count that the deep-queue
        // figures trade it against.
        label: "randrw70-8k-qd4-steady",
        workload: "rw=randrw rwmixread=70 bs=8k iodepth=4",
        metric: "iops",
        writes: true,
        steady: true,
    },
    Probe {
        label: "randrw90-4k-qd32-steady",
        workload: "rw=randrw rwmixread=90 bs=4k iodepth=32",
        metric: "iops",
        writes: true,
        steady: true,
    },
    Probe {
        label: "randwrite-4k-qd1-fsync",
        workload: "rw=randwrite bs=4k iodepth=1 fsync=1",
        metric: "iops",
        writes: true,
        steady: false,
    },
];

/// The observation a probe's measurement makes: its workload with the state
/// the drive was in (written once, or in random-write steady state), so the
/// simulated candidate starts where the drive was.
pub fn observation(p: &Probe, value: f64) -> Observation {
    let state = if p.steady { "steady" } else { "fill" };
    Observation {
        label: p.label.into(),
        workload: format!("{} state={state}", p.workload),
        metric: p.metric.into(),
        value,
        host: None,
    }
}

/// The probe suite run on a simulated drive (`calibrate sim:PRESET`, and
/// the tests of the fit): preset `name` of `db`, each probe over
/// [`crate::validate::WINDOW`] in steady state.
pub fn simulate_probes(
    db: &PresetDb,
    name: &str,
    read_only: bool,
    seed: u64,
) -> Result<Vec<Observation>, FitError> {
    let rows: Vec<Row> = PROBES
        .iter()
        .filter(|p| !(read_only && p.needs_writes()))
        .map(|p| {
            let o = observation(p, 1.0);
            Row {
                id: o.label,
                source: "calibrate".into(),
                reference: String::new(),
                topology: name.into(),
                workload: o.workload,
                metric: o.metric,
                value: 1.0,
                note: String::new(),
                line: 0,
            }
        })
        .collect();
    let v = validate(&rows, db, seed, 1, false, &|_, _| {});
    if let Some(f) = v.failed.first() {
        return Err(FitError::Unusable {
            label: f.id.clone(),
            reason: f.reason.clone(),
        });
    }
    Ok(v.rows
        .iter()
        .map(|r| Observation {
            label: r.row.id.clone(),
            workload: r.row.workload.clone(),
            metric: r.row.metric.clone(),
            value: r.simulated,
            host: None,
        })
        .collect())
}

/// Channels of the template's controller (see [`template`]).
pub(crate) const TEMPLATE_CHANNELS: u32 = 8;

/// The structural template a fit starts from: a SATA SSD of `capacity_gb`
/// built as the 2012–2014 generation of data-centre SATA drives are — an
/// 8-channel controller (Intel's DC S3x00 controller, Marvell 88SS9187 and
/// Samsung MEX are all 8-channel parts) over 64 Gbit (8 GB) MLC dies with
/// 16 KiB pages and 4 MiB blocks, NCQ depth 32, a DRAM write buffer. Every
/// value the probes cannot tell apart stays as this template sets it; the
/// rest are starting points.
pub fn template(capacity_gb: f64) -> SsdParams {
    // 64 Gbit = 8 GB dies; the raw flash is the logical capacity plus the
    // GiB/GB difference (7.4 %), spread over the 8 channels.
    let dies = (capacity_gb * 1.074 / 8.0 / 8.0).ceil().clamp(1.0, 64.0) as u32;
    SsdParams {
        description: format!("calibrated SSD, {capacity_gb} GB"),
        nvme: false, // a SATA drive
        year: None,
        interface: None,
        paths: Vec::new(),
        price: None, // prices are the user's to give
        capacity_gb,
        endurance_tbw: None, // a probe suite cannot measure wear-out
        link_mbps: 540.0,    // SATA 6 Gb/s payload after 8b/10b and framing
        pcie_gen: None,      // SATA
        link_cmd_us: 2.0,    // one SATA FIS exchange at 6 Gb/s
        queue_depth: 32,     // SATA NCQ
        fw_cores: 2,         // dual-core controllers of the generation
        // Firmware costs: starting points the fit solves (the DC S3500's, whose
        // 2 cores serve 75,000 reads/s at QD32 per Intel's specification).
        fw_read_us: 20.0,
        // A starting point the fit solves on the scattered 64 KiB reads: a
        // further flash read costing what a read command does (the X25-E's
        // costs 0.6 of its command, the DC S3500's 1.1), which makes the
        // probe firmware-bound, so the solve sees it from the start.
        fw_read_op_us: 20.0,
        fw_write_us: 30.0,
        fw_us_per_kb: 1.0,
        fw_gc_us: 30.0, // a relocation is firmware work of a write's kind
        channels: TEMPLATE_CHANNELS,
        dies_per_channel: dies,
        page_kb: 16,           // 20 nm MLC page
        pages_per_block: 256,  // 4 MiB blocks
        read_us: 50.0,         // 20 nm MLC tR
        cell_bits: 2,          // MLC: the generation's 20 nm flash stores 2 bits a cell
        program_us: 1300.0,    // 20 nm MLC tPROG
        erase_us: 3000.0,      // 20 nm MLC tBERS
        channel_mbps: 200.0,   // ONFI 2.x synchronous bus
        spare_pct: 7.4,        // GiB of flash behind GB of LBAs
        write_buffer_kb: 4096, // a few MiB of the DRAM holds user writes (DC S3x00 class)
        write_cache: true,     // shipped on: drives of the class default to it
        readahead_kb: 128,     // one sequential request's worth of read-ahead
        gc_free_blocks: 2,     // greedy GC keeps a couple of free blocks per die
        gc_pacing: false,
        power_loss_protection: false,
        ftl: FtlKind::Page,
        log_blocks: 0,
        // Per-channel queues in dispatch order, as the generation's firmware.
        channel_order: ChannelOrder::Dispatch,
        slc_cache_gb: 0.0,    // the 2012-2014 MLC generation had no SLC cache
        slc_program_us: 0.0,  // no SLC cache
        write_path_mbps: 0.0, // the link and the flash bound the generation's writes
        // Reads wait for a program in progress: the generation's firmware is
        // not known to suspend (suspend came to SSDs with 3D NAND's
        // millisecond programs; Zambelli et al., Electronics 10(12) 1394, 2021).
        program_suspend_us: 0.0,
        // SATA is half duplex: one frame crosses the link at a time, the
        // other end answering only with primitives (SATA 3.x, the link layer's
        // transmit and receive states).
        full_duplex: false,
        cache_program: true, // ONFI 2.x parts of the generation have page cache program
        // DRAM-buffered controllers of the generation read past their
        // buffered writes (a read of a buffered unit is served from DRAM).
        reads_drain_buffer: false,
        // A sub-4 KiB write's merged unit waits in the buffer as others
        // do: only a drive measured doing otherwise holds the write longer.
        partial_unit_commit_us: 0.0,
    }
}

/// The structural template of a data-centre NVMe SSD of `capacity_gb` of
/// the PCIe 4.0 generation (2020–2023): a 16-channel controller (Marvell's
/// Bravera SC5 and Samsung's data-centre controllers are 16-channel parts)
/// over 512 Gbit (64 GB) 3D TLC dies, a PCIe 4.0 x4 link, NVMe's deep
/// queues, power-loss protection and paced garbage collection, as every
/// data-centre drive of the generation has.
pub fn template_nvme(capacity_gb: f64) -> SsdParams {
    // 512 Gbit = 64 GB dies; raw flash = logical + the GiB/GB difference.
    let dies = (capacity_gb * 1.074 / 64.0 / 16.0).ceil().clamp(1.0, 32.0) as u32;
    SsdParams {
        nvme: true,
        // PCIe 4.0: 16 GT/s x 4 lanes, 128b/130b = 7.88 GB/s; ~90 % of it
        // carries payload after TLP and DLLP overhead at 256-byte payloads.
        link_mbps: 7000.0,
        pcie_gen: Some(4),
        // What a command occupies the link with: a doorbell write, the
        // 64-byte command fetch, the 16-byte completion and an MSI-X
        // message, each in a TLP with ~24 bytes of header and framing:
        // ~200 bytes at 7 GB/s, 0.03 us (the round trips are latency, not
        // occupancy, and the link is full duplex).
        link_cmd_us: 0.03,
        // NVMe queues hold up to 64 Ki entries; a drive works on ~1 Ki
        // commands at once (the Maximum Queue Entries drives report are
        // 1 Ki to 16 Ki).
        queue_depth: 1024,
        fw_cores: 8, // 8 Arm Cortex-R cores (Marvell Bravera SC5)
        // Firmware costs: starting points the fit solves; 8 cores at 8 us
        // serve 1 M commands/s, the class's datasheet random-read rate.
        fw_read_us: 8.0,
        fw_read_op_us: 8.0, // as the SATA template's: a flash read costing what a read command does
        fw_write_us: 8.0,
        fw_us_per_kb: 0.1,
        fw_gc_us: 8.0, // a relocation is firmware work of a write's kind
        channels: 16,
        dies_per_channel: dies,
        page_kb: 16,            // 3D TLC page
        pages_per_block: 1024,  // 16 MiB blocks of 3D TLC
        read_us: 45.0,          // Samsung 6th-gen V-NAND: tR under 45 us (2019 launch)
        cell_bits: 3,           // 3D TLC
        program_us: 450.0,      // the same: tPROG under 450 us
        erase_us: 3500.0,       // 3D NAND tBERS, Micron datasheets: ~3.5 ms
        channel_mbps: 1200.0,   // Toggle DDR 4.0 / ONFI 4.1: 1200 MT/s
        spare_pct: 7.4,         // GiB of flash behind GB of LBAs (1 DWPD class)
        write_buffer_kb: 65536, // tens of MiB of the DRAM hold user writes (PLP-protected)
        power_loss_protection: true,
        gc_pacing: true,
        // Out-of-order flash scheduling: a ready page goes first (MQSim's
        // transaction scheduling unit, Tavakkol et al., FAST 2018).
        channel_order: ChannelOrder::Ready,
        slc_cache_gb: 0.0, // data-centre TLC drives of the generation program TLC directly (datasheets name no SLC cache)
        slc_program_us: 0.0, // no SLC cache
        // Reads suspend programs: 3D NAND programs take 1-2 ms against
        // 75-100 us reads, and data-centre controllers suspend them for
        // reads (Zambelli et al., "Assessing the Role of Program Suspend
        // Operation in 3D NAND Flash Based Solid State Drives", Electronics
        // 10(12) 1394, 2021). A program stops only at the end of its
        // program-and-verify loop (US patents 11,574,683, 11,646,087); the
        // loop is taken as 100 us, MQSim's Suspend_Program_Time (Tavakkol
        // et al., FAST 2018, ssdconfig.xml).
        program_suspend_us: 100.0,
        // A PCIe lane is two one-way differential pairs (PCI Express Base
        // Specification: a lane is "a set of differential signal pairs, one
        // pair for transmission and one pair for reception"), so read data
        // leaving the drive and write data arriving share no wire.
        full_duplex: true,
        cache_program: true, // ONFI 4 / Toggle parts program from the cache register
        ..template(capacity_gb)
    }
}

/// The structural template of a data-centre 24G SAS SSD (2021 on): the
/// flash and controller of [`template_nvme`]'s generation behind a
/// dual-port SAS-4 interface, whose SCSI command set keeps a drive's queue
/// to the HBA's per-device depth.
pub fn template_sas(capacity_gb: f64) -> SsdParams {
    SsdParams {
        // SAS-4 ("24G"): 22.5 Gbaud per lane with 128b/150b coding is
        // 2.4 GB/s per port; SSP framing (SOF, 24-byte header, CRC, EOF
        // around up to 1 KiB of data) leaves ~94 %, 2,250 MB/s. A dual-port
        // drive with both ports active (multipath) moves twice that.
        link_mbps: 4500.0,
        // A command IU (28-byte frame header + 52-byte CDB IU) and a response
        // IU (~52 bytes) with their primitives at 2.4 GB/s: ~0.1 us.
        link_cmd_us: 0.1,
        // Linux mpt3sas gives a SAS device MPT3SAS_SAS_QUEUE_DEPTH = 254
        // tagged commands (drivers/scsi/mpt3sas/mpt3sas_base.h).
        queue_depth: 254,
        // SAS links are full duplex (each phy a transmit and a receive
        // pair; SSP frames flow both ways at once), as the NVMe template's.
        full_duplex: true,
        ..template_nvme(capacity_gb)
    }
}

/// The structural template of a data-centre NVMe SSD that runs its 3D
/// NAND one bit per cell (write-intensive drives sold as SLC, such as
/// Solidigm's D7-P5810 on 144-layer NAND): [`template_nvme`]'s controller
/// with SLC timing. A cell read senses one reference voltage and a program
/// places one distribution, so both are the shortest the array allows.
pub fn template_nvme_slc(capacity_gb: f64) -> SsdParams {
    SsdParams {
        cell_bits: 1,
        // HP, "Solid State Drive Technology: Differences between SLC, MLC
        // and TLC NAND" (white paper, Table 1): SLC read 25 us, program
        // 200-300 us (the middle taken), erase 1.5-2 ms.
        read_us: 25.0,
        program_us: 250.0,
        erase_us: 2000.0,
        // A block run one bit a cell holds a quarter of the pages it holds
        // as QLC: the D7-P5810's 144-layer NAND is Solidigm's QLC run as
        // SLC (avalanchenoticias.com.br, 2023-09), 1024 / 4.
        pages_per_block: 256,
        ..template_nvme(capacity_gb)
    }
}

/// The names [`template_named`] takes, in the order `calibrate --help`
/// lists them.
pub const TEMPLATES: &[&str] = &["sata", "sas", "nvme", "nvme-slc"];

/// A template by name: `sata` ([`template`]), `sas` ([`template_sas`]),
/// `nvme` ([`template_nvme`]) or `nvme-slc` ([`template_nvme_slc`]); any
/// name outside [`TEMPLATES`] gives `None`.
pub fn template_named(name: &str, capacity_gb: f64) -> Option<SsdParams> {
    match name {
        "sata" => Some(template(capacity_gb)),
        "sas" => Some(template_sas(capacity_gb)),
        "nvme" => Some(template_nvme(capacity_gb)),
        "nvme-slc" => Some(template_nvme_slc(capacity_gb)),
        _ => None,
    }
}
