//! `raidlab validate`: simulate every row of a published-measurement CSV.

use crate::args::{PresetFiles, ReportFormat, RowsRun};
use crate::common::{emit, json_text, progress_bar, read_data, threads};
use crate::failure::Failure;
use raidlab_core::preset::PresetDb;
use raidlab_core::published::Row;
use raidlab_report::text as table;
use raidlab_studies::validate::Validation;

/// Simulate every row of a published-measurement CSV and report the errors.
///
/// The CSV has the columns id,source,ref,topology,workload,metric,value,note
/// (metric: iops, mbps or a latency such as lat_p99_ms, over all I/Os or
/// after read_ or write_, or waf, the drives' write amplification;
/// docs/results.md). Rows whose
/// workload has no `runtime` are measured over 3 s once the run is in
/// steady state. Rows run in parallel; a row that cannot be simulated is
/// listed under `failed` with the reason, and the command then exits 2.
#[derive(clap::Args)]
pub struct Args {
    /// CSV file (e.g. data/published/calibration.csv).
    file: String,
    /// Only rows whose id, source or ref contains this.
    #[arg(long)]
    filter: Option<String>,
    #[command(flatten)]
    run: RowsRun,
    #[command(flatten)]
    presets: PresetFiles,
}

/// Run `validate`.
pub fn run(args: Args) -> Result<(), Failure> {
    let db = args.presets.load()?;
    let file = &args.file;
    let text = read_data(file, "CSV file")?;
    let mut rows = raidlab_core::published::parse_csv(&text)
        .map_err(|e| Failure::input(format!("{file}: {e}")))?;
    if let Some(f) = &args.filter {
        rows.retain(|r| {
            r.id.contains(f.as_str())
                || r.source.contains(f.as_str())
                || r.reference.contains(f.as_str())
        });
    }
    if rows.is_empty() {
        return Err(Failure::input(format!("{file}: no rows to validate")));
    }
    let dir = std::path::Path::new(file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    for r in &mut rows {
        r.workload = anchor_traces(&r.workload, dir);
    }
    let v = simulate_rows(&rows, &db, &args.run, false, "validate")?;
    let text = match args.run.format {
        ReportFormat::Json => json_text(&table::validation_json(&v))?,
        ReportFormat::Table => table::validation_table(&v),
    };
    emit(&args.run.output, &text)?;
    failed_rows(file, &v)
}

/// A row's workload with a relative `read_iolog=` path taken from the
/// CSV file's folder, so a data set and its traces move together.
fn anchor_traces(workload: &str, dir: &std::path::Path) -> String {
    workload
        .split_whitespace()
        .map(|tok| match tok.strip_prefix("read_iolog=") {
            Some(p) if std::path::Path::new(p).is_relative() => {
                format!("read_iolog={}", dir.join(p).display())
            }
            _ => tok.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A file some of whose rows could not be simulated is bad input: the
/// report (with those rows under `failed`) is out, and the command then
/// exits 2 so that scripts and CI cannot take a partial check for a whole
/// one.
fn failed_rows(file: &str, v: &Validation) -> Result<(), Failure> {
    match v.failed.first() {
        None => Ok(()),
        Some(first) => Err(Failure::input(format!(
            "{file}: {} row(s) could not be simulated (listed under failed), the first {}: {}",
            v.failed.len(),
            first.id,
            first.reason
        ))),
    }
}

/// Simulate published rows on `--jobs` threads (default: all cores), with a
/// progress bar on stderr when it is a terminal.
pub fn simulate_rows(
    rows: &[Row],
    db: &PresetDb,
    run: &RowsRun,
    with_analytic: bool,
    what: &'static str,
) -> Result<Validation, Failure> {
    Ok(raidlab_studies::validate::validate(
        rows,
        db,
        run.seed,
        threads(run.jobs)?,
        with_analytic,
        &progress_bar(what),
    ))
}
