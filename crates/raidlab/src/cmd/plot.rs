//! `raidlab plot`: a chart of sweep results as SVG or PNG.

use crate::common::{emit, read_data};
use crate::failure::Failure;
use clap::ValueEnum;
use raidlab_report::plot;
use std::path::Path;

/// Chart kind.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum KindArg {
    /// Lines over a numeric x axis.
    Line,
    /// Grouped bars over categories.
    Bar,
}

/// Draw a chart from sweep results (CSV or JSON) as SVG or PNG.
///
/// X values that are all numbers make a numeric axis (lines); sizes
/// (4k, 64k) and other text make categories (bars), sizes in size
/// order. Each value of --series is one line or one bar of a group.
/// Rows must not repeat an (x, series) pair: narrow them with --where.
#[derive(clap::Args)]
pub struct Args {
    /// Results file (`raidlab sweep` CSV or JSON, or any CSV with a header).
    results: String,
    /// Column for the x axis.
    #[arg(long)]
    x: String,
    /// Column for the y axis (numbers).
    #[arg(long)]
    y: String,
    /// Column whose values are the series (legend entries).
    #[arg(long)]
    series: Option<String>,
    /// Keep only rows where COLUMN=VALUE (repeatable).
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    filters: Vec<String>,
    /// Chart kind (default: line for numeric x, bar for categories).
    #[arg(long, value_enum)]
    kind: Option<KindArg>,
    /// Logarithmic x axis.
    #[arg(long)]
    log_x: bool,
    /// Logarithmic y axis.
    #[arg(long)]
    log_y: bool,
    /// Chart title.
    #[arg(long)]
    title: Option<String>,
    /// Output file: .svg or .png.
    #[arg(long, short = 'o')]
    output: String,
}

/// Run `plot`.
pub fn run(args: Args) -> Result<(), Failure> {
    let png = is_png(&args.output)?;
    let filters = args
        .filters
        .iter()
        .map(|f| {
            f.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| Failure::input(format!("--where '{f}': expected COLUMN=VALUE")))
        })
        .collect::<Result<_, _>>()?;
    crate::common::check_output(&args.output)?;
    let table = plot::Table::parse(&read_data(&args.results, "results file")?)?;
    let spec = plot::PlotSpec {
        x: args.x,
        y: args.y,
        series: args.series,
        filters,
        kind: args.kind.map(|k| match k {
            KindArg::Line => plot::Kind::Line,
            KindArg::Bar => plot::Kind::Bar,
        }),
        log_x: args.log_x,
        log_y: args.log_y,
        title: args.title,
    };
    let chart = plot::chart(&table, &spec)?;
    if png {
        Ok(chart.png(Path::new(&args.output))?)
    } else {
        emit(&Some(args.output), &chart.svg()?)
    }
}

/// Whether `-o` names a PNG (else an SVG); any other extension is refused.
fn is_png(output: &str) -> Result<bool, Failure> {
    let ext = Path::new(output)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok(false),
        Some("png") => Ok(true),
        _ => Err(Failure::input(format!(
            "-o {output}: the file name must end in .svg or .png"
        ))),
    }
}
