//! Charts (`raidlab plot`, and the figures of the HTML report): line charts
//! and grouped bars in the documents' style — IOPS against block size, MB/s
//! against drives, latency against queue depth — as SVG or PNG.
//!
//! Drawing uses `plotters`. Text is measured and (in PNG) rasterised with
//! DejaVu Sans compiled into the binary, so a PNG renders on a machine
//! without any font package. Ticks, grid lines and tick labels are laid out
//! here (nice linear steps, 1-2-5 decades on log axes, one label per
//! category), so every axis type looks the same.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use raidlab_core::published::records;
use raidlab_core::units::parse_size;
use serde_json::Value;
use std::fmt;

/// DejaVu Sans (Bitstream Vera licence, fonts/DejaVu-LICENSE).
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The font is compiled in and known to parse; a failure would show
        // as missing text, never as a crash.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// A plotting failure: bad columns or values (input), or drawing/writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlotError {
    /// The data or options do not make a chart (exit status 2).
    Input(String),
    /// Drawing or writing the file failed (exit status 1).
    Output(String),
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::Input(m) | PlotError::Output(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PlotError {}

fn input<T>(m: impl Into<String>) -> Result<T, PlotError> {
    Err(PlotError::Input(m.into()))
}

fn draw_err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError::Output(format!("drawing failed: {e:?}"))
}

/// Line chart or grouped bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Points joined by lines, one line per series.
    Line,
    /// One group of bars per x category, one bar per series.
    Bar,
}

/// The x axis: numbers, or categories in order.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numeric x values.
    Numeric,
    /// Categories; points' x is the category's position 0, 1, ...
    Categories(Vec<String>),
}

/// One series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points, x ascending.
    pub points: Vec<(f64, f64)>,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis description (with unit).
    pub x_label: String,
    /// Y axis description (with unit).
    pub y_label: String,
    /// X axis kind.
    pub x: XAxis,
    /// Series.
    pub series: Vec<Series>,
    /// Line or bars.
    pub kind: Kind,
    /// Logarithmic x (numeric x only).
    pub log_x: bool,
    /// Logarithmic y.
    pub log_y: bool,
    /// Width in pixels.
    pub width: u32,
    /// Height of the plot in pixels (the legend adds to it).
    pub height: u32,
}

/// Tableau 10: distinguishable, and readable when printed in grey.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A tick label: 1.5M, 25k, 0.25.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e9 {
        trim(format!("{:.2}", v / 1e9)) + "G"
    } else if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.4}"))
    }
}

/// Linear ticks: 1, 2 or 5 × 10^k steps, at most about eight.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    if !span.is_finite() {
        return Vec::new();
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 8.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 && out.len() < 20 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

/// Log ticks (values, not logs): decades, with 2 and 5 when few decades.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && lo.is_finite() && hi.is_finite() && hi >= lo) {
        return Vec::new();
    }
    let (a, b) = (
        lo.log10().floor().clamp(-330.0, 330.0) as i32,
        hi.log10().ceil().clamp(-330.0, 330.0) as i32,
    );
    let mults: &[f64] = if b - a <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut out = Vec::new();
    for e in a..=b {
        for m in mults {
            let v = m * 10f64.powi(e);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
    }
    out
}

/// Draw the chart into a drawing area.
fn draw<DB: DrawingBackend>(c: &Chart, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
    register_font();
    root.fill(&WHITE).map_err(draw_err)?;
    let (plot_area, legend_area) = root.split_vertically(c.height);
    let Ranges {
        x_lo,
        x_hi,
        y_lo,
        y_hi,
    } = ranges(c)?;
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&c.title, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(58)
        .y_label_area_size(78)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .axis_desc_style((FAMILY, 15))
        .draw()
        .map_err(draw_err)?;
    let label = TextStyle::from((FAMILY, 13).into_font()).color(&BLACK);
    let r = Ranges {
        x_lo,
        x_hi,
        y_lo,
        y_hi,
    };
    draw_y_ticks(c, &mut chart, root, &r, &label)?;
    draw_x_ticks(c, &chart, root, &r, &label)?;
    draw_series(c, &mut chart, &r)?;
    draw_legend(c, &legend_area, &label)?;
    root.present().map_err(draw_err)
}

/// The chart being drawn: both axes in axis units.
type Plot<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A value in axis units: log10 on a log axis.
fn axis(v: f64, log: bool) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
}

/// Y ticks with their labels and grid lines.
fn draw_y_ticks<DB: DrawingBackend>(
    c: &Chart,
    chart: &mut Plot<'_, DB>,
    root: &DrawingArea<DB, Shift>,
    r: &Ranges,
    label: &TextStyle,
) -> Result<(), PlotError> {
    let grid = RGBColor(225, 225, 225);
    let y_ticks: Vec<f64> = if c.log_y {
        log_ticks(10f64.powf(r.y_lo), 10f64.powf(r.y_hi))
    } else {
        linear_ticks(r.y_lo, r.y_hi)
    };
    for v in &y_ticks {
        let p = axis(*v, c.log_y);
        chart
            .draw_series(LineSeries::new([(r.x_lo, p), (r.x_hi, p)], grid))
            .map_err(draw_err)?;
        let (px, py) = chart.backend_coord(&(r.x_lo, p));
        let text = fmt_num(*v);
        let (w, h) = root.estimate_text_size(&text, label).map_err(draw_err)?;
        root.draw_text(&text, label, (px - w as i32 - 6, py - h as i32 / 2))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// X ticks and their labels, category labels thinned out where they
/// would collide.
fn draw_x_ticks<DB: DrawingBackend>(
    c: &Chart,
    chart: &Plot<'_, DB>,
    root: &DrawingArea<DB, Shift>,
    r: &Ranges,
    label: &TextStyle,
) -> Result<(), PlotError> {
    let x_ticks = x_ticks(c, r.x_lo, r.x_hi);
    let plot_w = chart.plotting_area().dim_in_pixel().0 as f64;
    let widest = x_ticks
        .iter()
        .map(|(_, s)| root.estimate_text_size(s, label).map_or(0, |d| d.0))
        .max()
        .unwrap_or(0) as f64
        + 8.0;
    let every = ((widest * x_ticks.len() as f64 / plot_w).ceil() as usize).max(1);
    for (i, (x, text)) in x_ticks.iter().enumerate() {
        if i % every != 0 {
            continue;
        }
        let (px, py) = chart.backend_coord(&(*x, r.y_lo));
        let (w, _) = root.estimate_text_size(text, label).map_err(draw_err)?;
        root.draw_text(text, label, (px - w as i32 / 2, py + 6))
            .map_err(draw_err)?;
        root.draw(&PathElement::new([(px, py), (px, py + 4)], BLACK))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// The data: a line with markers, or a bar in each group, per series.
fn draw_series<DB: DrawingBackend>(
    c: &Chart,
    chart: &mut Plot<'_, DB>,
    r: &Ranges,
) -> Result<(), PlotError> {
    let n = c.series.len().max(1) as f64;
    for (k, s) in c.series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|&(x, y)| (axis(x, c.log_x), axis(y, c.log_y)))
            .collect();
        match c.kind {
            Kind::Line => {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(draw_err)?;
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(draw_err)?;
            }
            Kind::Bar => {
                let group = 0.8;
                let w = group / n;
                let base = if c.log_y { r.y_lo } else { 0f64.max(r.y_lo) };
                chart
                    .draw_series(pts.iter().map(|&(x, y)| {
                        let x0 = x - group / 2.0 + w * k as f64;
                        Rectangle::new([(x0, base), (x0 + w * 0.92, y)], color.filled())
                    }))
                    .map_err(draw_err)?;
            }
        }
    }
    Ok(())
}

/// The plotted span of both axes, in axis units (log10 on a log axis),
/// padded so no point sits on the frame.
struct Ranges {
    x_lo: f64,
    x_hi: f64,
    y_lo: f64,
    y_hi: f64,
}

/// The axes' spans for the chart's points, or why they cannot be drawn.
fn ranges(c: &Chart) -> Result<Ranges, PlotError> {
    let ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    if ys.is_empty() {
        return input("nothing to plot: no points");
    }
    if c.log_y && ys.iter().any(|&y| y <= 0.0) {
        return input("--log-y needs values above 0");
    }
    let tx = |x: f64| if c.log_x { x.log10() } else { x };
    let (x_lo, x_hi) = match &c.x {
        XAxis::Categories(cats) => (-0.5, cats.len() as f64 - 0.5),
        XAxis::Numeric => {
            let xs: Vec<f64> = c
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .collect();
            if c.log_x && xs.iter().any(|&x| x <= 0.0) {
                return input("--log-x needs x values above 0");
            }
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let (lo, hi) = (tx(lo), tx(hi));
            let pad = if hi > lo { (hi - lo) * 0.04 } else { 0.5 };
            (lo - pad, hi + pad)
        }
    };
    let y_min = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let y_max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (y_lo, y_hi) = if c.log_y {
        let (a, b) = (y_min.log10(), y_max.log10());
        let pad = ((b - a) * 0.06).max(0.05);
        (a - pad, b + pad)
    } else {
        // Bars and throughput read from zero, as the documents draw them.
        let lo = if y_min >= 0.0 { 0.0 } else { y_min * 1.08 };
        let hi = if y_max > 0.0 { y_max * 1.08 } else { 1.0 };
        (lo, hi.max(lo + 1e-9))
    };
    if ![x_lo, x_hi, y_lo, y_hi].iter().all(|v| v.is_finite()) || x_hi <= x_lo || y_hi <= y_lo {
        return input("values too large or too close together to plot");
    }
    Ok(Ranges {
        x_lo,
        x_hi,
        y_lo,
        y_hi,
    })
}

/// The x axis's ticks: (position in axis units, label).
fn x_ticks(c: &Chart, x_lo: f64, x_hi: f64) -> Vec<(f64, String)> {
    match &c.x {
        XAxis::Categories(cats) => cats
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.clone()))
            .collect(),
        XAxis::Numeric if c.log_x => log_ticks(10f64.powf(x_lo), 10f64.powf(x_hi))
            .into_iter()
            .map(|v| (v.log10(), fmt_num(v)))
            .collect(),
        XAxis::Numeric => linear_ticks(x_lo, x_hi)
            .into_iter()
            .map(|v| (v, fmt_num(v)))
            .collect(),
    }
}

/// The legend below the plot, laid out by `Chart::legend`.
fn draw_legend<DB: DrawingBackend>(
    c: &Chart,
    area: &DrawingArea<DB, Shift>,
    label: &TextStyle,
) -> Result<(), PlotError> {
    let Some(lg) = c.legend() else {
        return Ok(());
    };
    for (k, l) in lg.labels.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let (row, col) = (k / lg.cols, k % lg.cols);
        let x = 30 + col as i32 * lg.col_w;
        let y = 6 + row as i32 * LEGEND_ROW as i32;
        area.draw(&Rectangle::new(
            [(x, y + 3), (x + 18, y + 13)],
            color.filled(),
        ))
        .map_err(draw_err)?;
        area.draw_text(l, label, (x + 26, y)).map_err(draw_err)?;
    }
    Ok(())
}

const LEGEND_ROW: u32 = 20;

/// A legend's layout.
struct Legend {
    labels: Vec<String>,
    cols: usize,
    col_w: i32,
    height: u32,
}

/// `s` cut to `max` characters, the last one an ellipsis.
pub(crate) fn ellipsis(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}

impl Chart {
    /// The legend's labels and grid: as many columns (up to four) as the
    /// widest label allows. `None` when there is nothing to name.
    fn legend(&self) -> Option<Legend> {
        register_font();
        if self.series.len() <= 1 && self.series.first().is_none_or(|s| s.name.is_empty()) {
            return None;
        }
        let font = (FAMILY, 13).into_font();
        let labels: Vec<String> = self.series.iter().map(|s| ellipsis(&s.name, 90)).collect();
        let widest = labels
            .iter()
            .map(|l| font.box_size(l).map_or(0, |d| d.0))
            .max()
            .unwrap_or(0) as i32
            + 40;
        let cols = ((self.width as i32 - 40) / widest).clamp(1, 4) as usize;
        let col_w = (self.width as i32 - 40) / cols as i32;
        let rows = labels.len().div_ceil(cols) as u32;
        Some(Legend {
            labels,
            cols,
            col_w,
            height: rows * LEGEND_ROW + 12,
        })
    }

    /// Height the legend needs below the plot, pixels.
    fn legend_height(&self) -> u32 {
        self.legend().map_or(0, |l| l.height)
    }

    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, PlotError> {
        let lh = self.legend_height();
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (self.width, self.height + lh))
                .into_drawing_area();
            draw(self, &root)?;
        }
        Ok(buf)
    }

    /// Write the chart as a PNG file.
    pub fn png(&self, path: &std::path::Path) -> Result<(), PlotError> {
        let lh = self.legend_height();
        let root = BitMapBackend::new(path, (self.width, self.height + lh)).into_drawing_area();
        draw(self, &root)
    }
}

/// A table of text cells with named columns (a sweep's CSV or JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Read CSV (header first) or a sweep's JSON (`columns` + `rows`).
    pub fn parse(text: &str) -> Result<Table, PlotError> {
        if text.trim_start().starts_with('{') {
            let v: Value = serde_json::from_str(text)
                .map_err(|e| PlotError::Input(format!("results: not valid JSON ({e})")))?;
            let cols = v.get("columns").and_then(Value::as_array);
            let rows = v.get("rows").and_then(Value::as_array);
            let (Some(cols), Some(rows)) = (cols, rows) else {
                return input("results: JSON without 'columns' and 'rows' (write it with 'raidlab sweep --format json')");
            };
            let columns: Vec<String> = cols
                .iter()
                .map(|c| c.as_str().unwrap_or("").to_string())
                .collect();
            let cell = |x: &Value| match x {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            let rows: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    r.as_array()
                        .map(|a| a.iter().map(cell).collect())
                        .unwrap_or_default()
                })
                .collect();
            if let Some(bad) = rows.iter().position(|r| r.len() != columns.len()) {
                return input(format!(
                    "results: row {bad} has {} cells for {} columns",
                    rows[bad].len(),
                    columns.len()
                ));
            }
            return Ok(Table { columns, rows });
        }
        let doc = records(text).map_err(|e| PlotError::Input(format!("results: {e}")))?;
        let Some(doc) = doc else {
            return input("results: empty file");
        };
        let columns = doc.header;
        let rows = doc.rows.into_iter().map(|r| r.fields).collect();
        Ok(Table { columns, rows })
    }

    fn col(&self, name: &str) -> Result<usize, PlotError> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| {
            PlotError::Input(format!(
                "no column '{name}' (columns: {})",
                self.columns.join(", ")
            ))
        })
    }
}

/// What `raidlab plot` is asked to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSpec {
    /// X column.
    pub x: String,
    /// Y column (numeric).
    pub y: String,
    /// Series column.
    pub series: Option<String>,
    /// Keep rows where column = value.
    pub filters: Vec<(String, String)>,
    /// Line or bars (`None`: lines for numeric x, bars for categories).
    pub kind: Option<Kind>,
    /// Log x.
    pub log_x: bool,
    /// Log y.
    pub log_y: bool,
    /// Title (default: "y vs x").
    pub title: Option<String>,
}

/// An axis description with its unit, for the column names raidlab writes.
pub fn axis_label(col: &str) -> String {
    let dir = |s: &str| match s {
        "read" => "read ",
        "write" => "write ",
        _ => "",
    };
    let (d, base) = match col.split_once('_') {
        Some((p @ ("read" | "write"), rest)) => (dir(p), rest),
        _ => ("", col),
    };
    let l = match base {
        "iops" => "IOPS (I/Os per second)".to_string(),
        "mbps" => "throughput (MB/s, 10^6 B/s)".to_string(),
        "lat_avg_ms" => "mean latency (ms)".into(),
        "lat_max_ms" => "max latency (ms)".into(),
        "lat_p50_ms" => "median latency (ms)".into(),
        "lat_p99_ms" => "99th percentile latency (ms)".into(),
        "lat_p999_ms" => "99.9th percentile latency (ms)".into(),
        "cpu_util_pct" => "host CPU (%)".into(),
        "bs" => "block size (bytes)".into(),
        "iodepth" | "qd" => "queue depth (outstanding I/Os per job)".into(),
        "numjobs" | "jobs" | "threads" => "jobs (threads)".into(),
        "n" | "drives" | "ssds" => "drives".into(),
        "stripe" | "chunk" => "stripe unit (bytes)".into(),
        other => other.to_string(),
    };
    format!("{d}{l}")
}

/// Build a chart from a results table.
pub fn chart(t: &Table, spec: &PlotSpec) -> Result<Chart, PlotError> {
    // Unknown columns are reported before anything about the rows.
    let xi = t.col(&spec.x)?;
    t.col(&spec.y)?;
    spec.series.as_deref().map(|s| t.col(s)).transpose()?;
    let rows = filtered_rows(t, spec)?;
    let (numeric, cats) = x_values(&rows, xi);
    if spec.log_x && !numeric {
        return input(format!(
            "--log-x needs numeric x values; '{}' holds categories",
            spec.x
        ));
    }
    let series = collect_series(t, spec, &rows, numeric, &cats)?;
    let kind = spec
        .kind
        .unwrap_or(if numeric { Kind::Line } else { Kind::Bar });
    if kind == Kind::Bar && numeric {
        return input("bars need categories on x; use --kind line for numeric x");
    }
    Ok(Chart {
        title: spec.title.clone().unwrap_or_else(|| match &spec.series {
            Some(s) => format!("{} vs {} by {s}", spec.y, spec.x),
            None => format!("{} vs {}", spec.y, spec.x),
        }),
        x_label: axis_label(&spec.x),
        y_label: axis_label(&spec.y),
        x: if numeric {
            XAxis::Numeric
        } else {
            XAxis::Categories(cats)
        },
        series,
        kind,
        log_x: spec.log_x,
        log_y: spec.log_y,
        width: 960,
        height: 540,
    })
}

/// The rows `--where` keeps; none is an error.
fn filtered_rows<'t>(t: &'t Table, spec: &PlotSpec) -> Result<Vec<&'t Vec<String>>, PlotError> {
    let mut filt = Vec::new();
    for (k, v) in &spec.filters {
        filt.push((t.col(k)?, v.as_str()));
    }
    let rows: Vec<&Vec<String>> = t
        .rows
        .iter()
        .filter(|r| filt.iter().all(|(i, v)| r[*i] == *v))
        .collect();
    if rows.is_empty() {
        return input("no rows left to plot (check --where)");
    }
    Ok(rows)
}

/// Whether column `xi` holds numbers, and its distinct values as
/// categories: sizes ordered by size, anything else by first appearance.
fn x_values(rows: &[&Vec<String>], xi: usize) -> (bool, Vec<String>) {
    let xs: Vec<&str> = rows.iter().map(|r| r[xi].as_str()).collect();
    let numeric = xs
        .iter()
        .all(|x| x.parse::<f64>().is_ok_and(f64::is_finite));
    let sizes = !numeric && xs.iter().all(|x| parse_size(x).is_ok());
    let mut cats: Vec<String> = Vec::new();
    for x in &xs {
        if !cats.iter().any(|c| c == x) {
            cats.push(x.to_string());
        }
    }
    if sizes {
        cats.sort_by_key(|c| parse_size(c).unwrap_or(u64::MAX));
    }
    (numeric, cats)
}

/// One series per `--series` value, its points in x order; two rows at one
/// x of one series are an error naming columns that could tell them apart.
fn collect_series(
    t: &Table,
    spec: &PlotSpec,
    rows: &[&Vec<String>],
    numeric: bool,
    cats: &[String],
) -> Result<Vec<Series>, PlotError> {
    let xi = t.col(&spec.x)?;
    let yi = t.col(&spec.y)?;
    let si = spec.series.as_deref().map(|s| t.col(s)).transpose()?;
    let mut series: Vec<Series> = Vec::new();
    for r in rows {
        let name = si.map_or(String::new(), |i| r[i].clone());
        let y: f64 = r[yi]
            .parse()
            .ok()
            .filter(|y: &f64| y.is_finite())
            .ok_or_else(|| {
                PlotError::Input(format!("column '{}': '{}' is not a number", spec.y, r[yi]))
            })?;
        let x = if numeric {
            r[xi].parse::<f64>().unwrap_or(0.0)
        } else {
            cats.iter().position(|c| *c == r[xi]).unwrap_or(0) as f64
        };
        let s = match series.iter_mut().position(|s| s.name == name) {
            Some(i) => &mut series[i],
            None => {
                series.push(Series {
                    name: name.clone(),
                    points: Vec::new(),
                });
                series.last_mut().expect("just pushed")
            }
        };
        if s.points.iter().any(|p| p.0 == x) {
            let others: Vec<&String> = t
                .columns
                .iter()
                .filter(|c| {
                    *c != &spec.x && Some(c.as_str()) != spec.series.as_deref() && *c != "run"
                })
                .take(3)
                .collect();
            return input(format!(
                "several rows share {}={}{}: choose one with --where (e.g. one of {:?}) or add --series",
                spec.x,
                r[xi],
                if name.is_empty() { String::new() } else { format!(" in series '{name}'") },
                others
            ));
        }
        s.points.push((x, y));
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table::parse(
            "run,n,bs,topology,iops\n0,4,4k,\"raid0(4*x25e)\",100\n1,4,64k,\"raid0(4*x25e)\",50\n2,8,4k,\"raid0(8*x25e)\",200\n3,8,64k,\"raid0(8*x25e)\",90\n",
        )
        .unwrap()
    }

    fn spec(x: &str, series: Option<&str>) -> PlotSpec {
        PlotSpec {
            x: x.into(),
            y: "iops".into(),
            series: series.map(String::from),
            filters: vec![],
            kind: None,
            log_x: false,
            log_y: false,
            title: None,
        }
    }

    #[test]
    fn categories_sizes_and_numbers() {
        let c = chart(&table(), &spec("bs", Some("topology"))).unwrap();
        assert_eq!(c.x, XAxis::Categories(vec!["4k".into(), "64k".into()]));
        assert_eq!(c.kind, Kind::Bar);
        assert_eq!(c.series.len(), 2);
        assert_eq!(c.series[1].points, vec![(0.0, 200.0), (1.0, 90.0)]);
        let c = chart(&table(), &spec("n", Some("bs"))).unwrap();
        assert_eq!(c.x, XAxis::Numeric);
        assert_eq!(c.kind, Kind::Line);
        assert_eq!(c.y_label, "IOPS (I/Os per second)");
        let svg = c.svg().unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains("64k") && svg.contains("drives"));
    }

    #[test]
    fn ambiguous_or_bad_requests_are_refused() {
        let e = chart(&table(), &spec("bs", None)).unwrap_err();
        assert!(matches!(e, PlotError::Input(m) if m.contains("several rows")));
        assert!(chart(&table(), &spec("nope", None)).is_err());
        let mut s = spec("n", Some("bs"));
        s.y = "topology".into();
        assert!(chart(&table(), &s).is_err());
        let mut s = spec("bs", Some("n"));
        s.log_x = true;
        assert!(chart(&table(), &s).is_err());
        assert!(Table::parse("a,b\n1\n").is_err());
        let t = Table::parse("x,y\n1,NaN\n2,inf\n").unwrap();
        let mut s = spec("x", None);
        s.y = "y".into();
        assert!(chart(&t, &s).is_err());
        assert!(Table::parse("{\"x\":1}").is_err());
    }

    #[test]
    fn ticks() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            log_ticks(1.0, 100.0),
            vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
        assert_eq!(fmt_num(25_000.0), "25k");
        assert_eq!(fmt_num(1_500_000.0), "1.5M");
        assert_eq!(fmt_num(0.25), "0.25");
    }
}
