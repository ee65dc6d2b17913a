//! `raidlab check` and `raidlab repair`: md's scrub sync actions on a real
//! array.

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

/// Check the array and rewrite what is wrong (md's `repair`): RAID 5
/// parity and mirror copies from the data and the first copy; in RAID 6, a
/// single bad member located by P and Q is corrected, otherwise P and Q
/// are rewritten. An array not stopped cleanly is resynchronised first.
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

/// Run `repair`.
pub fn repair(args: RepairArgs) -> Result<(), Failure> {
    scrub(&args.scrub, true).map(|_| ())
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
        t += &format!(
            "{}: stripe {}: {} wrong on {} at offset {}{}\n",
            m.array,
            m.stripe,
            m.what,
            m.member,
            m.offset,
            if m.repaired { " (repaired)" } else { "" }
        );
    }
    let verb = if repair { "repaired" } else { "found" };
    t += &format!("mismatch_cnt {} ({verb})\n", r.mismatch_cnt);
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
            "rebuilt {} ({} bytes in {:.2} s, {:.1} MB/s); array {} at event {}\n",
            r.rebuilt.join(", "),
            r.bytes,
            r.seconds,
            r.bytes as f64 / r.seconds.max(1e-9) / 1e6,
            r.uuid,
            r.events
        ),
    };
    emit(&a.output, &text)
}
