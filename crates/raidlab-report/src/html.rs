//! The HTML report (`raidlab reproduce --html DIR`): one self-contained page
//! per document — inline CSS and inline SVG figures, nothing fetched from
//! the network — with every table laid out as the document lays it out,
//! published and simulated values side by side, the error coloured, the
//! analytic expectation and the bottleneck; then a figure per column.

use crate::plot::{Chart, Kind, Series, XAxis};
use crate::reproduce::{num, DocTable};
use raidlab_studies::validate::{ErrorStats, Failed, RowResult};

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o += "&amp;",
            '<' => o += "&lt;",
            '>' => o += "&gt;",
            '"' => o += "&quot;",
            '\'' => o += "&#39;",
            c => o.push(c),
        }
    }
    o
}

/// CSS class of an error: within 10 %, 25 %, 50 %, or beyond.
fn err_class(e: f64) -> &'static str {
    match e.abs() {
        a if a <= 10.0 => "e10",
        a if a <= 25.0 => "e25",
        a if a <= 50.0 => "e50",
        _ => "ebad",
    }
}

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 1px solid #ccc; }
table.doc { border-collapse: collapse; font-size: 0.82em; margin: 0.8em 0; }
table.doc th, table.doc td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; vertical-align: top; }
table.doc th { background: #f3f3f3; text-align: center; }
table.doc th.row { text-align: left; }
td .pub { color: #333; } td .sim { font-weight: bold; } td .model { color: #666; font-size: 0.9em; }
td .bn { color: #777; font-size: 0.85em; display: block; }
td.e10 { background: #d9f2d9; } td.e25 { background: #eef7cf; } td.e50 { background: #fde7c4; } td.ebad { background: #f8c9c4; }
.legend span { padding: 2px 8px; margin-right: 6px; border: 1px solid #ccc; font-size: 0.85em; }
.figs { display: flex; flex-wrap: wrap; gap: 12px; }
.figs figure { margin: 0; border: 1px solid #eee; }
.figs figcaption { font-size: 0.8em; color: #555; padding: 2px 6px; max-width: 520px; }
p.note { color: #555; font-size: 0.9em; }
div.wrap { overflow-x: auto; }
"#;

/// One figure: published, simulated and (where the model applies)
/// analytic values of `cells` at the positions `pos` gives among `cats`.
fn figure(
    title: &str,
    x_label: &str,
    cats: Vec<String>,
    cells: &[(usize, &RowResult)],
) -> Option<String> {
    let mut published = Series {
        name: "published".into(),
        points: vec![],
    };
    let mut simulated = Series {
        name: "simulated".into(),
        points: vec![],
    };
    let mut model = Series {
        name: "analytic (T/C × D × one drive)".into(),
        points: vec![],
    };
    for &(i, r) in cells {
        let x = i as f64;
        published.points.push((x, r.row.value));
        simulated.points.push((x, r.simulated));
        if let Some(a) = r.analytic {
            model.points.push((x, a));
        }
    }
    let metric = cells.first().map(|c| c.1.row.metric.clone())?;
    let mut series = vec![published, simulated];
    if !model.points.is_empty() {
        series.push(model);
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    let kind = if cats.len() > 2 && x_label == "block size" {
        Kind::Line
    } else {
        Kind::Bar
    };
    let chart = Chart {
        title: crate::plot::ellipsis(title, 60),
        x_label: x_label.into(),
        y_label: crate::plot::axis_label(&metric),
        x: XAxis::Categories(cats),
        series,
        kind,
        log_x: false,
        log_y: lo > 0.0 && hi / lo > 50.0,
        width: 520,
        height: 320,
    };
    chart.svg().ok()
}

/// A one-row table's figures: one per metric across its columns.
fn one_row_figures(t: &DocTable<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut metrics: Vec<String> = Vec::new();
    for c in &t.cells {
        if !metrics.contains(&c.result.row.metric) {
            metrics.push(c.result.row.metric.clone());
        }
    }
    for m in metrics {
        let cols: Vec<(usize, &String)> = t
            .cols
            .iter()
            .enumerate()
            .filter(|(_, col)| {
                t.cells
                    .iter()
                    .any(|c| &c.col == *col && c.result.row.metric == m)
            })
            .collect();
        let long = cols.iter().any(|(_, c)| c.chars().count() > 22);
        let cats: Vec<String> = cols
            .iter()
            .map(|(i, c)| {
                if long {
                    format!("C{}", i + 1)
                } else {
                    (*c).clone()
                }
            })
            .collect();
        let cells: Vec<(usize, &RowResult)> = cols
            .iter()
            .enumerate()
            .filter_map(|(k, (_, col))| {
                t.cells
                    .iter()
                    .find(|c| &c.col == *col && c.result.row.metric == m)
                    .map(|c| (k, c.result))
            })
            .collect();
        let key = if long {
            cols.iter()
                .map(|(i, c)| format!("C{} = {c}", i + 1))
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            String::new()
        };
        let title = format!("{} ({m})", t.rows[0]);
        if let Some(svg) = figure(&title, "", cats, &cells) {
            out.push((format!("{} {m}. {key}", t.reference), svg));
        }
    }
    out
}

/// The figures of a table, with their captions: one per column across the
/// table's rows; for a one-row table, one per metric across its columns
/// (long column names become C1, C2, ... with the key in the caption).
fn table_figures(t: &DocTable<'_>) -> Vec<(String, String)> {
    if t.rows.len() == 1 {
        return one_row_figures(t);
    }
    let mut out = Vec::new();
    let sizes = t
        .rows
        .iter()
        .all(|r| raidlab_core::units::parse_size(r).is_ok());
    for col in &t.cols {
        let cats: Vec<String> = t
            .rows
            .iter()
            .filter(|r| t.cells.iter().any(|c| &c.col == col && &c.row == *r))
            .cloned()
            .collect();
        let cells: Vec<(usize, &RowResult)> = t
            .cells
            .iter()
            .filter(|c| &c.col == col)
            .map(|c| (cats.iter().position(|r| *r == c.row).unwrap_or(0), c.result))
            .collect();
        let x_label = if sizes { "block size" } else { "" };
        if let Some(svg) = figure(col, x_label, cats, &cells) {
            out.push((format!("{} {col}", t.reference), svg));
        }
    }
    out
}

fn cell_html(r: &RowResult) -> String {
    let model = r.analytic.map_or(String::new(), |a| {
        format!(
            " <span class=\"model\" title=\"analytic expectation: T/C × drives × one drive\">[{}]</span>",
            num(a)
        )
    });
    let mut bn = r.bottleneck.as_deref().map_or(String::new(), |b| {
        format!("<span class=\"bn\">{}</span>", esc(b))
    });
    if !r.steady {
        bn += " <span class=\"unsteady\" title=\"the simulation did not reach steady state\">unsteady</span>";
    }
    format!(
        "<td class=\"{}\" title=\"{}\"><span class=\"pub\">{}</span> / <span class=\"sim\">{}</span> ({:+.0}%){model}{bn}</td>",
        err_class(r.error_pct),
        esc(&r.row.id),
        num(r.row.value),
        num(r.simulated),
        r.error_pct,
    )
}

fn table_html(t: &DocTable<'_>) -> String {
    let st = ErrorStats::of(t.cells.iter().map(|c| c.result));
    let mut o = format!(
        "<h2>{} — {}</h2>\n<p class=\"note\">{} rows; median |error| {:.1}%, 90th percentile {:.1}%, {} within 25%.</p>\n",
        esc(&t.source),
        esc(&t.reference),
        st.rows,
        st.median,
        st.p90,
        st.within_25pct
    );
    for c in &t.common {
        o += &format!("<p class=\"note\">{}</p>\n", esc(c));
    }
    o += "<div class=\"wrap\"><table class=\"doc\">\n<tr><th class=\"row\"></th>";
    for c in &t.cols {
        o += &format!("<th>{}</th>", esc(c));
    }
    o += "</tr>\n";
    for r in &t.rows {
        o += &format!("<tr><th class=\"row\">{}</th>", esc(r));
        for c in &t.cols {
            match t.cells.iter().find(|x| &x.row == r && &x.col == c) {
                Some(x) => o += &cell_html(x.result),
                None => o += "<td></td>",
            }
        }
        o += "</tr>\n";
    }
    o += "</table></div>\n<div class=\"figs\">\n";
    for (caption, svg) in table_figures(t) {
        o += &format!(
            "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
            esc(&caption)
        );
    }
    o += "</div>\n";
    o
}

/// The page of one document.
pub fn page(source: &str, tables: &[DocTable<'_>], failed: &[Failed], seed: u64) -> String {
    let mine: Vec<&DocTable<'_>> = tables.iter().filter(|t| t.source == source).collect();
    let st = ErrorStats::of(mine.iter().flat_map(|t| t.cells.iter().map(|c| c.result)));
    let mut o = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>raidlab — {src}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{src}: published and simulated</h1>\n",
        src = esc(source)
    );
    o += &format!(
        "<p>raidlab {} simulated {} published measurements of {} (seed {seed}): median |error| {:.1}%, 90th percentile {:.1}%, {} within 25%.</p>\n",
        raidlab_core::result::VERSION,
        st.rows,
        esc(source),
        st.median,
        st.p90,
        st.within_25pct
    );
    o += "<p class=\"legend\">Cells: <b>published</b> / <b>simulated</b> (error), [analytic expectation where the classic model applies], the saturated component. Error: <span style=\"background:#d9f2d9\">≤ 10%</span><span style=\"background:#eef7cf\">≤ 25%</span><span style=\"background:#fde7c4\">≤ 50%</span><span style=\"background:#f8c9c4\">&gt; 50%</span></p>\n";
    let fails: Vec<&Failed> = failed.iter().filter(|f| f.id.starts_with(source)).collect();
    if !fails.is_empty() {
        o += "<h2>Rows that could not be simulated</h2>\n<ul>\n";
        for f in fails {
            o += &format!("<li>{}: {}</li>\n", esc(&f.id), esc(&f.reason));
        }
        o += "</ul>\n";
    }
    for t in mine {
        o += &table_html(t);
    }
    o += "</body>\n</html>\n";
    o
}

/// The index page linking the documents' pages.
pub fn index(sources: &[(String, ErrorStats)]) -> String {
    let mut o = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>raidlab — reproduced documents</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>raidlab: the documents reproduced</h1>\n<table class=\"doc\">\n<tr><th>document</th><th>rows</th><th>median |error|</th><th>p90 |error|</th></tr>\n"
    );
    for (s, st) in sources {
        o += &format!(
            "<tr><th class=\"row\"><a href=\"{s}.html\">{s}</a></th><td>{}</td><td>{:.1}%</td><td>{:.1}%</td></tr>\n",
            st.rows,
            st.median,
            st.p90,
            s = esc(s)
        );
    }
    o += "</table>\n</body>\n</html>\n";
    o
}
