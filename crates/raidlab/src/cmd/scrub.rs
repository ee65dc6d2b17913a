//! The real-array maintenance commands: `check` and `repair` (md's scrub
//! sync actions), `create`, `examine` and `rebuild`.

use crate::args::ReportFormat;
use crate::common::{emit, expression, json_text};
use crate::failure::Failure;
use raidlab_io::scrub::ScrubReport;

/// What both scrubs take.
#[derive(clap::Args)]
pub struct ScrubArgs {
    /// Topology expression over paths (or @FILE), as given to `run`.
    #[arg(short = 't', long)]
    topology: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ReportFormat,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long)]
    output: Option<String>,
    /// Use members that are in use or carry signatures (repair and rebuild
    /// write); rebuild onto members with foreign or damaged md superblocks.
    #[arg(long)]
    force: bool,
}

/// Read every stripe of the array and compare parity and copies with the
/// data (md's `check`): mismatches are listed by member and offset,
/// counted as md's mismatch_cnt, and make the exit status 1.
#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    scrub: ScrubArgs,
}

/// Check the array and rewrite what is wrong (md's `repair`): blocks that
/// fail their verify checksums are rebuilt from the redundancy (RAID 5:
/// one a stripe, RAID 6: two, mirrors: from an intact copy), a single bad
/// RAID 6 member located by P and Q is corrected, and where nothing tells
/// which member is wrong parity is rewritten from the data, as md does.
/// Damage beyond the redundancy is left as it is and makes the exit status
/// 1. An array not stopped cleanly is resynchronised first.
#[derive(clap::Args)]
pub struct RepairArgs {
    #[command(flatten)]
    scrub: ScrubArgs,
}

/// Run `check`.
pub fn check(args: CheckArgs) -> Result<(), Failure> {
    let r = scrub(&args.scrub, false)?;
    match r.mismatch_cnt {
        0 => Ok(()),
        n => Err(Failure::runtime(format!("check: mismatch_cnt {n}"))),
    }
}

/// Run `repair`: exit status 1 when some damage is beyond what the
/// redundancy can rebuild (it was left as it was).
pub fn repair(args: RepairArgs) -> Result<(), Failure> {
    let r = scrub(&args.scrub, true)?;
    match r.unrepairable {
        0 => Ok(()),
        n => Err(Failure::runtime(format!(
            "repair: {n} blocks could not be rebuilt from the redundancy and were left as they were"
        ))),
    }
}

fn scrub(a: &ScrubArgs, repair: bool) -> Result<ScrubReport, Failure> {
    let expr = expression(&a.topology)?;
    let r = raidlab_io::scrub(&expr, repair, a.force)?;
    let text = match a.format {
        ReportFormat::Json => json_text(&r)?,
        ReportFormat::Table => table(&r, repair),
    };
    emit(&a.output, &text)?;
    Ok(r)
}

/// The report for a person: each array's rows and mismatch_cnt, then the
/// mismatches found.
fn table(r: &ScrubReport, repair: bool) -> String {
    let mut t = format!("{:<28} {:>10} {:>14}\n", "array", "rows", "mismatch_cnt");
    for a in &r.arrays {
        match &a.skipped {
            Some(why) => t += &format!("{:<28} {:>10} {:>14}  skipped: {why}\n", a.array, "-", "-"),
            None => t += &format!("{:<28} {:>10} {:>14}\n", a.array, a.rows, a.mismatch_cnt),
        }
    }
    for m in &r.mismatches {
        let fate = match (m.repaired, m.unrepairable) {
            (true, _) => " (repaired)",
            (_, true) if repair => " (cannot be repaired: left as it is)",
            (_, true) => " (cannot be repaired)",
            _ => "",
        };
        t += &match &m.member {
            Some(member) => format!(
                "{}: stripe {}: {} wrong on {member} at offset {}{fate}\n",
                m.array, m.stripe, m.what, m.offset
            ),
            None => format!(
                "{}: stripe {}: {}, at offset {} of every member{fate}\n",
                m.array, m.stripe, m.what, m.offset
            ),
        };
    }
    t += &format!("mismatch_cnt {}\n", r.mismatch_cnt);
    if r.unrepairable > 0 {
        let verb = if repair {
            "left as they were"
        } else {
            "cannot be repaired"
        };
        t += &format!(
            "{} blocks wrong beyond what the redundancy can rebuild: {verb}\n",
            r.unrepairable
        );
    }
    t
}

/// Rebuild replacement members of a real array (md's recovery after
/// `mdadm --add`): every member that is blank (a new file or device) or
/// stale (it missed writes while it was missing) is written with what it
/// should hold, computed from the rest of its array. A replacement file
/// that does not exist is created.
#[derive(clap::Args)]
pub struct RebuildArgs {
    /// The expression (`-t`) names the replacements in the places of the
    /// members they replace.
    #[command(flatten)]
    scrub: ScrubArgs,
    /// Rebuild at most this many MB/s (md's speed_limit_max; its default,
    /// 200,000 KiB/s, is 204.8 MB/s). 0: no limit.
    #[arg(long, default_value_t = 204.8)]
    max_rate: f64,
}

/// Run `rebuild`.
pub fn rebuild(args: RebuildArgs) -> Result<(), Failure> {
    if !(args.max_rate >= 0.0 && args.max_rate.is_finite()) {
        return Err(Failure::input(format!(
            "--max-rate {}: expected MB/s, 0 for no limit",
            args.max_rate
        )));
    }
    let a = &args.scrub;
    let expr = expression(&a.topology)?;
    let rate = (args.max_rate > 0.0).then_some(args.max_rate * 1e6);
    let bar = crate::common::RunProgress::new("rebuild");
    let r = raidlab_io::rebuild(&expr, rate, a.force, &|done, all| {
        bar.set(done as f64 / all.max(1) as f64)
    })?;
    drop(bar);
    let text = match a.format {
        ReportFormat::Json => json_text(&r)?,
        ReportFormat::Table if r.rebuilt.is_empty() => {
            "nothing to rebuild: every member is current\n".to_string()
        }
        ReportFormat::Table => format!(
            "rebuilt {} ({} bytes in {:.2} s, {:.1} MB/s{}); array {} at event {}\n",
            r.rebuilt.join(", "),
            r.bytes,
            r.seconds,
            r.bytes as f64 / r.seconds.max(1e-9) / 1e6,
            match r.resumed_bytes {
                0 => String::new(),
                n => format!("; resumed where a stopped rebuild left it, {n} bytes in"),
            },
            r.uuid,
            r.events
        ),
    };
    emit(&a.output, &text)
}

/// Create arrays over files or block devices, as `mdadm --create` does: md
/// 1.2 superblocks (and write-intent bitmaps) on every member, then an
/// initial resync so parity and copies agree with what the members hold
/// (`--assume-clean` skips it). Files that do not exist are created at
/// their `[size=...]`. `run` creates arrays itself on blank members; this
/// is for members that hold something, or for the resync.
#[derive(clap::Args)]
pub struct CreateArgs {
    #[command(flatten)]
    scrub: ScrubArgs,
    /// Skip the initial resync (md's --assume-clean).
    #[arg(long)]
    assume_clean: bool,
}

/// Run `create`.
pub fn create(args: CreateArgs) -> Result<(), Failure> {
    let a = &args.scrub;
    let expr = expression(&a.topology)?;
    let r = raidlab_io::create(&expr, args.assume_clean, a.force)?;
    let text = match a.format {
        ReportFormat::Json => json_text(&r)?,
        ReportFormat::Table => format!(
            "created array {} over {} ({} bytes); initial resync {} bytes\n",
            r.uuid,
            r.members.join(", "),
            r.capacity,
            r.resynced_bytes
        ),
    };
    emit(&a.output, &text)
}

/// Print the md metadata of files or block devices, as `mdadm --examine`
/// does: the superblock, raidlab's record beside it, and the write-intent
/// bitmap. Exits 1 when a path carries no md superblock.
#[derive(clap::Args)]
pub struct ExamineArgs {
    /// Files or block devices.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ReportFormat,
}

/// Run `examine`.
pub fn examine(args: ExamineArgs) -> Result<(), Failure> {
    let mut docs = Vec::new();
    let mut text = String::new();
    let mut blank = 0;
    for p in &args.paths {
        let path = std::path::Path::new(p);
        if !path.exists() {
            return Err(Failure::input(format!("{p} does not exist")));
        }
        if path.is_dir() {
            return Err(Failure::input(format!(
                "{p} is a directory: give member files or block devices"
            )));
        }
        match raidlab_io::meta::examine(std::path::Path::new(p))? {
            None => {
                blank += 1;
                text += &format!("{p}: no md superblock\n");
                docs.push(serde_json::json!({ "path": p, "superblock": null }));
            }
            Some(e) => {
                text += &examined_text(p, &e);
                docs.push(examined_json(p, &e));
            }
        }
    }
    let out = match args.format {
        ReportFormat::Json => json_text(&docs)?,
        ReportFormat::Table => text,
    };
    emit(&None, &out)?;
    match blank {
        0 => Ok(()),
        n => Err(Failure::runtime(format!(
            "{n} path(s) carry no md superblock"
        ))),
    }
}

fn role_text(sb: &raidlab_io::md::Superblock) -> String {
    match sb.role() {
        Some(r) => format!("active device {r}"),
        None => "spare".into(),
    }
}

fn examined_text(p: &str, e: &raidlab_io::meta::Examined) -> String {
    use raidlab_io::md;
    let sb = &e.superblock;
    let mut t = format!(
        "{p}: md 1.2, array {} ({}), {}, layout {}, chunk {} KiB, {} devices, {}, events {}, {}, data offset {} sectors\n",
        md::uuid_text(&sb.set_uuid),
        sb.name,
        md::level_word(sb.level),
        md::layout_word(sb.level, sb.layout),
        sb.chunk_sectors / 2,
        sb.raid_disks,
        role_text(sb),
        sb.events,
        if sb.clean() { "clean" } else { "active (not stopped cleanly)" },
        sb.data_offset
    );
    if let Some(r) = sb.recovery_offset {
        t += &format!(
            "  being rebuilt: {} bytes of its data recovered (md's recovery offset {r} sectors); 'raidlab rebuild' resumes there\n",
            r * 512
        );
    }
    if let Some(l) = &e.lineage {
        t += &format!(
            "  raidlab: root array {}, slot {} (from the root, each counted from 0 as md's device roles)\n",
            md::uuid_text(&l.root_uuid),
            raidlab_io::meta::path_text(&l.path)
        );
    }
    if let Some(b) = &e.bitmap {
        let bits = md::Bitmap::nbits(b.sync_size, b.chunk);
        let dirty = (0..bits).filter(|&k| b.get(k)).count();
        t += &format!(
            "  bitmap: {bits} bits of {} MiB, {dirty} dirty, events {} (cleared at {})\n",
            b.chunk >> 20,
            b.events,
            b.events_cleared
        );
    }
    t
}

fn examined_json(p: &str, e: &raidlab_io::meta::Examined) -> serde_json::Value {
    use raidlab_io::md;
    let sb = &e.superblock;
    serde_json::json!({
        "path": p,
        "superblock": {
            "array_uuid": md::uuid_text(&sb.set_uuid),
            "name": sb.name,
            "level": md::level_word(sb.level),
            "layout": md::layout_word(sb.level, sb.layout),
            "chunk_bytes": sb.chunk_sectors as u64 * 512,
            "raid_devices": sb.raid_disks,
            "role": role_text(sb),
            "events": sb.events,
            "clean": sb.clean(),
            "data_offset_sectors": sb.data_offset,
            "used_sectors": sb.size,
            "recovery_offset_sectors": sb.recovery_offset,
        },
        "raidlab": e.lineage.as_ref().map(|l| serde_json::json!({
            "root_uuid": md::uuid_text(&l.root_uuid),
            "slot_path": l.path,
        })),
        "bitmap": e.bitmap.as_ref().map(|b| {
            let bits = md::Bitmap::nbits(b.sync_size, b.chunk);
            serde_json::json!({
                "chunk_bytes": b.chunk,
                "bits": bits,
                "dirty": (0..bits).filter(|&k| b.get(k)).count(),
            })
        }),
    })
}
