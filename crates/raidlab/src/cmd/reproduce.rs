//! `raidlab reproduce`: a document's tables, published and simulated.

use super::validate::simulate_rows;
use crate::args::{ReportFormat, RowsRun};
use crate::common::{emit, json_text};
use crate::failure::Failure;
use raidlab_core::preset::PresetDb;
use raidlab_report::reproduce::{self, DocTable};
use raidlab_sim::validate::Validation;
use std::path::Path;

/// The published measurements raidlab ships (docs/results.md).
const CALIBRATION: &str = include_str!("../../../../data/published/calibration.csv");

/// The documents whose tables raidlab lays out.
const SOURCES: [&str; 4] = ["petrov2010", "jdev2009", "admin2015", "intel2013"];

/// Reproduce a document's tables: published and simulated side by side.
///
/// Uses the calibration data shipped with raidlab (data/published/
/// calibration.csv, built in). Rows are simulated as `validate` does.
#[derive(clap::Args)]
pub struct Args {
    /// petrov2010, jdev2009, admin2015, intel2013 or all.
    #[arg(default_value = "petrov2010")]
    source: String,
    #[command(flatten)]
    run: RowsRun,
    /// Also write one self-contained HTML page per document (tables
    /// with coloured errors, SVG figures) into DIR, and DIR/index.html.
    #[arg(long, value_name = "DIR")]
    html: Option<String>,
}

/// Run `reproduce`.
pub fn run(args: Args) -> Result<(), Failure> {
    let source = args.source.as_str();
    if source != "all" && !SOURCES.contains(&source) {
        return Err(Failure::input(format!(
            "unknown document '{source}' (petrov2010, jdev2009, admin2015, intel2013, all)"
        )));
    }
    let db = PresetDb::builtin();
    let mut rows = raidlab_core::published::parse_csv(CALIBRATION)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    rows.retain(|r| source == "all" || r.source == source);
    let v = simulate_rows(&rows, &db, &args.run, true, "reproduce")?;
    let tables = reproduce::tables(&v);
    if let Some(dir) = &args.html {
        write_html(Path::new(dir), source, &tables, &v, args.run.seed)?;
    }
    let text = match args.run.format {
        ReportFormat::Json => json_text(&reproduce::to_json(&tables, &v))?,
        ReportFormat::Table => {
            let s = v.stats();
            let mut t = reproduce::render(&tables);
            t += &format!(
                "\nall: {} rows, median |error| {:.1}%, p90 {:.1}%, {} within 25%, {} failed\n",
                s.rows,
                s.median,
                s.p90,
                s.within_25pct,
                v.failed.len()
            );
            t
        }
    };
    emit(&args.run.output, &text)
}

/// `reproduce --html DIR`: a page per document and an index.
fn write_html(
    dir: &Path,
    source: &str,
    tables: &[DocTable<'_>],
    v: &Validation,
    seed: u64,
) -> Result<(), Failure> {
    use raidlab_report::html;
    use raidlab_sim::validate::ErrorStats;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::runtime(format!("cannot create '{}': {e}", dir.display())))?;
    let sources: Vec<&str> = if source == "all" {
        SOURCES.to_vec()
    } else {
        vec![source]
    };
    let mut index = Vec::new();
    for s in sources {
        let path = dir.join(format!("{s}.html"));
        write(&path, &html::page(s, tables, &v.failed, seed))?;
        eprintln!("raidlab: wrote {}", path.display());
        let st = ErrorStats::of(v.rows.iter().filter(|r| r.row.source == s));
        index.push((s.to_string(), st));
    }
    write(&dir.join("index.html"), &html::index(&index))
}

/// Write one file of the HTML report.
fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| Failure::runtime(format!("cannot write '{}': {e}", path.display())))
}
