//! `raidlab model`: the classic analytic model of RAID throughput.

use crate::args::{PresetFiles, ReportFormat};
use crate::common::{emit, json_text};
use crate::failure::Failure;
use raidlab_core::analytic::{cost, Pattern};
use raidlab_core::topology::{self, Topology};
use raidlab_core::workload::Workload;
use raidlab_layout::Level;
use raidlab_report::text as table;

/// The classic analytic model: T/C, internal requests and the expected
/// array throughput from one drive's figures (docs/model.md, "The analytic
/// model").
///
/// One drive's figure is the drive preset simulated alone (small
/// patterns: 4 KiB random at QD32; large: 1 MiB sequential at QD4;
/// `--bs` changes the block size), or the number given with
/// `--one-drive`. Expected array throughput = T/C × drives × one drive.
#[derive(clap::Args)]
pub struct Args {
    /// RAID level: raid0, raid1, raid4, raid5, raid6, raid10.
    #[arg(long)]
    level: String,
    /// Number of drives.
    #[arg(long)]
    drives: u32,
    /// Only this pattern: small-random-read, small-random-write,
    /// large-sequential-read, large-sequential-write.
    #[arg(long)]
    pattern: Option<String>,
    /// Drive preset simulated for one drive's figures.
    #[arg(long, default_value = "x25e")]
    drive: String,
    /// Block size of the one-drive simulation.
    #[arg(long)]
    bs: Option<String>,
    /// SSD starting state of the one-drive simulation: fob, fill or steady.
    #[arg(long)]
    state: Option<String>,
    /// One drive's figure, measured elsewhere (IOPS for small patterns,
    /// MB/s for large); needs --pattern.
    #[arg(long, requires = "pattern")]
    one_drive: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    format: ReportFormat,
    #[command(flatten)]
    presets: PresetFiles,
}

/// Run `model`.
pub fn run(args: Args) -> Result<(), Failure> {
    let level = Level::from_word(&args.level).ok_or_else(|| {
        Failure::input(format!(
            "unknown level '{}' (raid0, raid1, raid4, raid5, raid6, raid10)",
            args.level
        ))
    })?;
    let patterns = match &args.pattern {
        Some(p) => vec![Pattern::parse(p)?],
        None => Pattern::ALL.to_vec(),
    };
    let bs = block_size(args.bs.as_deref())?;
    if let Some(x) = args.one_drive.filter(|x| !(x.is_finite() && *x > 0.0)) {
        return Err(Failure::input(format!(
            "--one-drive: {x} is not a positive figure"
        )));
    }
    // The drive simulated alone, unless its figure is given.
    let alone = match args.one_drive {
        Some(_) => None,
        None => Some(drive_alone(&args.drive, &args.presets)?),
    };
    let mut rows = Vec::new();
    for p in patterns {
        let c = cost(level, args.drives, p)?;
        let (figure, source) = match &alone {
            Some(t) => one_drive_figure(t, p, bs, &args)?,
            None => (args.one_drive.unwrap_or_default(), "given".to_string()),
        };
        rows.push(table::ModelRow {
            cost: c,
            one_drive: figure,
            source,
        });
    }
    let text = match args.format {
        ReportFormat::Json => json_text(&table::model_json(&rows))?,
        ReportFormat::Table => table::model_table(&rows),
    };
    emit(&None, &text)
}

/// `--bs`, checked: a positive multiple of 512 bytes.
fn block_size(bs: Option<&str>) -> Result<Option<u64>, Failure> {
    bs.map(|b| {
        raidlab_core::units::parse_size(b)
            .ok()
            .filter(|&x| x > 0 && x % 512 == 0)
            .ok_or_else(|| Failure::input(format!("--bs: bad block size '{b}'")))
    })
    .transpose()
}

/// The `--drive` preset as a topology of one device.
fn drive_alone(drive: &str, presets: &PresetFiles) -> Result<Topology, Failure> {
    let t = topology::resolve(drive, &presets.load()?)?;
    if !matches!(t.root, topology::Node::Device(_)) || t.volume_count() != 1 {
        return Err(Failure::input(format!(
            "--drive: '{drive}' is not a drive preset"
        )));
    }
    Ok(t)
}

/// One drive's figure for pattern `p`, simulated, and how it was obtained.
fn one_drive_figure(
    t: &Topology,
    p: Pattern,
    bs: Option<u64>,
    args: &Args,
) -> Result<(f64, String), Failure> {
    let mut words = raidlab_studies::analytic::drive_workload(p, bs);
    if let Some(st) = &args.state {
        words += &format!(" state={st}");
    }
    let w = Workload::parse(&words)?;
    let f = raidlab_studies::analytic::drive_figure(t, &w, p)?;
    Ok((f, format!("{} alone, {words}", args.drive)))
}
