//! `raidlab reproduce`: a document's tables, published and simulated.

use super::validate::simulate_rows;
use crate::args::{ReportFormat, RowsRun};
use crate::common::{emit, json_text};
use crate::failure::Failure;
use raidlab_core::preset::PresetDb;
use raidlab_report::reproduce::{self, DocTable};
use raidlab_studies::validate::Validation;
use std::path::Path;

/// The published measurements raidlab ships (docs/results.md): the rows
/// the model was checked against while it was built...
const CALIBRATION: &str = include_str!("../../../../data/published/calibration.csv");
/// ... and every other number of the same documents' tables, held back
/// from that work: how the model does on these says whether it generalises.
const HELD_OUT: &str = include_str!("../../../../data/published/documents-rest.csv");

/// The documents whose tables raidlab lays out.
const SOURCES: [&str; 4] = ["petrov2010", "jdev2009", "admin2015", "intel2013"];

/// Reproduce a document's tables: published and simulated side by side.
///
/// Uses every number of the documents' tables shipped with raidlab
/// (data/published/calibration.csv and documents-rest.csv, built in), and
/// gives the error over each file apart. Rows are simulated as `validate`
/// does.
#[derive(clap::Args)]
pub struct Args {
    /// petrov2010, jdev2009, admin2015, intel2013 or all.
    #[arg(default_value = "all")]
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
    let parse = |text| {
        raidlab_core::published::parse_csv(text).map_err(|e| Failure::runtime(e.to_string()))
    };
    let held_out: std::collections::HashSet<String> =
        parse(HELD_OUT)?.into_iter().map(|r| r.id).collect();
    let mut rows = parse(CALIBRATION)?;
    rows.extend(parse(HELD_OUT)?);
    rows.retain(|r| source == "all" || r.source == source);
    let v = simulate_rows(&rows, &db, &args.run, true, "reproduce")?;
    let tables = reproduce::tables(&v);
    if let Some(dir) = &args.html {
        write_html(Path::new(dir), source, &tables, &v, args.run.seed)?;
    }
    let text = match args.run.format {
        ReportFormat::Json => {
            let mut j = reproduce::to_json(&tables, &v);
            j["by_file"] = serde_json::json!(by_file(&v, &held_out)
                .iter()
                .map(|(file, s)| serde_json::json!({
                    "file": file,
                    "rows": s.rows,
                    "median_abs_error_pct": s.median,
                    "p90_abs_error_pct": s.p90,
                    "within_25pct": s.within_25pct,
                }))
                .collect::<Vec<_>>());
            json_text(&j)?
        }
        ReportFormat::Table => {
            let mut t = reproduce::render(&tables);
            t += "\n";
            for (file, s) in by_file(&v, &held_out) {
                t += &format!(
                    "{file}: {} rows, median |error| {:.1}%, p90 {:.1}%, {} within 25%\n",
                    s.rows, s.median, s.p90, s.within_25pct
                );
            }
            let s = v.stats();
            t += &format!(
                "all: {} rows, median |error| {:.1}%, p90 {:.1}%, {} within 25%, {} failed\n",
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

/// The error over the rows of each shipped file: those the model was
/// checked against while it was built, and those held back from that work.
fn by_file(
    v: &Validation,
    held_out: &std::collections::HashSet<String>,
) -> Vec<(&'static str, raidlab_studies::validate::ErrorStats)> {
    use raidlab_studies::validate::ErrorStats;
    let part = |held: bool| {
        ErrorStats::of(
            v.rows
                .iter()
                .filter(move |r| held_out.contains(&r.row.id) == held),
        )
    };
    vec![
        (
            "calibration.csv (checked against while the model was built)",
            part(false),
        ),
        ("documents-rest.csv (held back from that work)", part(true)),
    ]
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
    use raidlab_studies::validate::ErrorStats;
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
