//! The documents' tables, reproduced: published and simulated values side by
//! side, laid out as the documents lay them out — rows are block sizes (or
//! workloads when the block size does not vary), columns are configurations
//! and whatever else varies in the table (direction, threads, metric).

use raidlab_core::units::parse_size;
use raidlab_studies::validate::{ErrorStats, RowResult, Validation};
use std::collections::BTreeMap;

/// One cell of a reproduced table.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell<'a> {
    /// The simulated row.
    pub result: &'a RowResult,
    /// Row label.
    pub row: String,
    /// Column label.
    pub col: String,
}

/// One table of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct DocTable<'a> {
    /// Document.
    pub source: String,
    /// Table or figure.
    pub reference: String,
    /// Row labels in order.
    pub rows: Vec<String>,
    /// Column labels in order.
    pub cols: Vec<String>,
    /// Cells.
    pub cells: Vec<Cell<'a>>,
    /// What every cell shares, said once above the table: the topology (when
    /// it does not vary), the workload keys every row gives alike, and the
    /// metric with its unit (when it does not vary).
    pub common: Vec<String>,
}

/// A metric with its unit, for a table's heading.
fn metric_unit(m: &str) -> String {
    let unit = match m {
        "iops" => "I/Os a second",
        "mbps" => "MB/s",
        "waf" => "write amplification",
        _ if m.ends_with("_ms") => "ms",
        _ => "",
    };
    if unit.is_empty() {
        m.to_string()
    } else {
        format!("{m} ({unit})")
    }
}

fn workload_map(w: &str) -> BTreeMap<String, String> {
    w.split_whitespace()
        .filter_map(|t| t.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Group results into the documents' tables, in the order rows first appear.
pub fn tables(v: &Validation) -> Vec<DocTable<'_>> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String), Vec<&RowResult>> = BTreeMap::new();
    for r in &v.rows {
        let k = (r.row.source.clone(), r.row.reference.clone());
        if !groups.contains_key(&k) {
            order.push(k.clone());
        }
        groups.entry(k).or_default().push(r);
    }
    order
        .into_iter()
        .map(|k| layout(&k.0, &k.1, &groups[&k]))
        .collect()
}

fn layout<'a>(source: &str, reference: &str, rows: &[&'a RowResult]) -> DocTable<'a> {
    let maps: Vec<BTreeMap<String, String>> =
        rows.iter().map(|r| workload_map(&r.row.workload)).collect();
    let v = Varying::of(rows, &maps);
    let cells: Vec<Cell<'a>> = rows
        .iter()
        .zip(&maps)
        .map(|(r, m)| {
            let (row, col) = v.labels(r, m);
            Cell {
                result: r,
                row,
                col,
            }
        })
        .collect();
    let mut row_order = first_seen(cells.iter().map(|c| &c.row));
    let col_order = first_seen(cells.iter().map(|c| &c.col));
    if v.bs_rows {
        row_order.sort_by_key(|r| parse_size(r).unwrap_or(u64::MAX));
    }
    DocTable {
        source: source.into(),
        reference: reference.into(),
        rows: row_order,
        cols: col_order,
        cells,
        common: v.common(rows, &maps),
    }
}

/// What changes from row to row of a document's table.
struct Varying {
    /// Workload keys whose values differ (sorted).
    keys: Vec<String>,
    topology: bool,
    metric: bool,
    /// Block sizes differ: they label the rows, the other keys the columns.
    bs_rows: bool,
}

impl Varying {
    fn of(rows: &[&RowResult], maps: &[BTreeMap<String, String>]) -> Varying {
        let mut keys: Vec<String> = maps.iter().flat_map(|m| m.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        let varies = |f: &dyn Fn(usize) -> String| -> bool {
            let first = f(0);
            (1..rows.len()).any(|i| f(i) != first)
        };
        let keys: Vec<String> = keys
            .into_iter()
            .filter(|k| varies(&|i| maps[i].get(k).cloned().unwrap_or_default()))
            .collect();
        Varying {
            bs_rows: keys.iter().any(|k| k == "bs"),
            keys,
            topology: varies(&|i| rows[i].row.topology.clone()),
            metric: varies(&|i| rows[i].row.metric.clone()),
        }
    }

    /// A row's (row label, column label) in the table.
    fn labels(&self, r: &RowResult, m: &BTreeMap<String, String>) -> (String, String) {
        let mut col = Vec::new();
        if self.topology {
            col.push(r.row.topology.split_whitespace().collect::<String>());
        }
        let mut row_label = String::new();
        if self.bs_rows {
            row_label = m.get("bs").cloned().unwrap_or_default();
        }
        // A key a row does not give is left out of its label (fio's
        // default holds), not shown as "k=-".
        for k in self.keys.iter().filter(|k| k.as_str() != "bs") {
            let Some(v) = m.get(k) else {
                continue;
            };
            if self.bs_rows {
                col.push(format!("{k}={v}"));
            } else {
                if !row_label.is_empty() {
                    row_label.push(' ');
                }
                row_label += &format!("{k}={v}");
            }
        }
        if self.metric {
            col.push(r.row.metric.clone());
        }
        if row_label.is_empty() {
            row_label = r.row.workload.clone();
        }
        if col.is_empty() {
            col.push(r.row.metric.clone());
        }
        (row_label, col.join(" "))
    }

    /// What every row shares, said once above the table.
    fn common(&self, rows: &[&RowResult], maps: &[BTreeMap<String, String>]) -> Vec<String> {
        let mut common = Vec::new();
        if !self.topology {
            common.push(format!("topology {}", rows[0].row.topology));
        }
        let shared: Vec<String> = maps[0]
            .iter()
            .filter(|(k, v)| maps.iter().all(|m| m.get(*k) == Some(*v)))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !shared.is_empty() {
            common.push(format!("workload {}", shared.join(" ")));
        }
        if !self.metric {
            common.push(format!("metric {}", metric_unit(&rows[0].row.metric)));
        }
        common
    }
}

/// The distinct labels in the order they first appear.
fn first_seen<'b>(labels: impl Iterator<Item = &'b String>) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for l in labels {
        if !order.contains(l) {
            order.push(l.clone());
        }
    }
    order
}

/// A table figure: three decimals below 10, one below 100, none above.
pub(crate) fn num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

fn resource(b: &Option<String>) -> String {
    match b {
        Some(s) => s
            .rsplit('(')
            .next()
            .unwrap_or("")
            .trim_end_matches(')')
            .to_string(),
        None => "-".into(),
    }
}

/// What each cell of a text table says.
const HEADING: &str = "published simulated err [model]";

/// One cell as text: "published simulated error resource [analytic
/// expectation]", and `!unsteady` where the run did not settle.
fn cell_text(x: &Cell<'_>) -> String {
    let model = x
        .result
        .analytic
        .map_or(String::new(), |a| format!(" [{}]", num(a)));
    format!(
        "{} {} {:+.0}% {}{model}{}",
        num(x.result.row.value),
        num(x.result.simulated),
        x.result.error_pct,
        resource(&x.result.bottleneck),
        if x.result.steady { "" } else { " !unsteady" }
    )
}

/// The tables as text: per cell "published simulated error resource
/// [analytic expectation]".
pub fn render(tables: &[DocTable<'_>]) -> String {
    let mut o = String::new();
    for t in tables {
        let stats = ErrorStats::of(t.cells.iter().map(|c| c.result));
        o += &format!(
            "\n{} {} — {} rows, median |error| {:.1}%, p90 {:.1}%\n",
            t.source, t.reference, stats.rows, stats.median, stats.p90
        );
        for c in &t.common {
            o += &format!("  {c}\n");
        }
        let mut legend = Vec::new();
        let short: Vec<String> = t
            .cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if c.len() > 24 {
                    legend.push(format!("  C{} = {c}", i + 1));
                    format!("C{}", i + 1)
                } else {
                    c.clone()
                }
            })
            .collect();
        let cell_text: Vec<String> = t.cells.iter().map(cell_text).collect();
        let w = cell_text
            .iter()
            .map(|c| c.chars().count())
            .chain(short.iter().map(|c| c.chars().count()))
            .max()
            .unwrap_or(0)
            .max(HEADING.len());
        let rw = t.rows.iter().map(|r| r.len()).max().unwrap_or(4).max(4);
        o += &format!("{:<rw$}", "");
        for c in &short {
            o += &format!(" | {c:<w$}");
        }
        o += "\n";
        o += &format!("{:<rw$}", "");
        for _ in &short {
            o += &format!(" | {HEADING:<w$}");
        }
        o += "\n";
        for r in &t.rows {
            o += &format!("{r:<rw$}");
            for c in &t.cols {
                match t.cells.iter().position(|x| &x.row == r && &x.col == c) {
                    Some(i) => o += &format!(" | {:<w$}", cell_text[i]),
                    None => o += &format!(" | {:<w$}", ""),
                }
            }
            o += "\n";
        }
        for l in legend {
            o += &l;
            o += "\n";
        }
    }
    o
}

/// The tables as JSON.
pub fn to_json(tables: &[DocTable<'_>], v: &Validation) -> serde_json::Value {
    serde_json::json!({
        "tables": tables.iter().map(|t| {
            let st = ErrorStats::of(t.cells.iter().map(|c| c.result));
            serde_json::json!({
                "source": t.source,
                "ref": t.reference,
                "rows": t.rows,
                "columns": t.cols,
                "median_abs_error_pct": st.median,
                "p90_abs_error_pct": st.p90,
                "cells": t.cells.iter().map(|c| serde_json::json!({
                    "id": c.result.row.id,
                    "row": c.row,
                    "column": c.col,
                    "metric": c.result.row.metric,
                    "published": c.result.row.value,
                    "simulated": c.result.simulated,
                    "error_pct": c.result.error_pct,
                    "bottleneck": c.result.bottleneck,
                    "analytic": c.result.analytic,
                    "steady": c.result.steady,
                })).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
        "summary": crate::text::summary_json(v),
    })
}
