//! `raidlab plan --html DIR`: one self-contained page — the question, the
//! ranked table with the winner's reason, and a Pareto figure of the
//! objective against cost (or usable capacity when prices are missing),
//! drawn as inline SVG.

use crate::html::esc;
use raidlab_studies::plan::{Objective, Row};

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; padding: 0 1em; }
table.plan { border-collapse: collapse; font-size: 0.82em; }
table.plan th, table.plan td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
table.plan td.t { text-align: left; font-family: monospace; }
tr.pareto td { background: #d9f2d9; }
p.why { font-weight: bold; }
"#;

/// The figure's size, pixels, and its margin for axes and labels.
const W: f64 = 720.0;
const H: f64 = 420.0;
const M: f64 = 60.0;

/// The objective's figure of a row (the y axis), larger or smaller better.
fn y_of(r: &Row, o: Objective) -> f64 {
    match o {
        Objective::Iops | Objective::Cost => r.iops,
        Objective::Mbps => r.mbps,
        Objective::P99 => r.lat_p99_ms,
        Objective::Endurance => r.endurance_years.unwrap_or(0.0),
    }
}

/// The x axis: cost when every row has one (lower is better), else usable
/// terabytes (higher is better).
fn x_axis(rows: &[Row]) -> (Vec<f64>, &'static str, bool) {
    if rows.iter().all(|r| r.candidate.cost.is_some()) {
        let x = rows
            .iter()
            .map(|r| r.candidate.cost.unwrap_or(0.0))
            .collect();
        (x, "cost", true)
    } else {
        let x = rows
            .iter()
            .map(|r| r.candidate.usable_bytes as f64 / 1e12)
            .collect();
        (x, "usable TB", false)
    }
}

/// Rows on the Pareto front: no other row is at least as good on both axes
/// and better on one.
pub fn pareto(rows: &[Row], o: Objective) -> Vec<bool> {
    let (x, _, x_low) = x_axis(rows);
    let y_low = o == Objective::P99;
    let better = |a: f64, b: f64, low: bool| if low { a <= b } else { a >= b };
    (0..rows.len())
        .map(|i| {
            !(0..rows.len()).any(|j| {
                let (yi, yj) = (y_of(&rows[i], o), y_of(&rows[j], o));
                j != i
                    && better(x[j], x[i], x_low)
                    && better(yj, yi, y_low)
                    && (x[j] != x[i] || yj != yi)
            })
        })
        .collect()
}

/// The Pareto figure as inline SVG: one circle per row, the front filled.
fn figure(rows: &[Row], o: Objective, front: &[bool]) -> String {
    let (x, x_label, _) = x_axis(rows);
    let y: Vec<f64> = rows.iter().map(|r| y_of(r, o)).collect();
    let span = |v: &[f64]| {
        let hi = v.iter().cloned().fold(0.0f64, f64::max);
        if hi > 0.0 {
            hi * 1.05
        } else {
            1.0
        }
    };
    let (xs, ys) = (span(&x), span(&y));
    let px = |v: f64| M + v / xs * (W - 2.0 * M);
    let py = |v: f64| H - M - v / ys * (H - 2.0 * M);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">\n\
         <rect x=\"0\" y=\"0\" width=\"{W}\" height=\"{H}\" fill=\"white\"/>\n\
         <line x1=\"{M}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/>\n\
         <line x1=\"{M}\" y1=\"{M}\" x2=\"{M}\" y2=\"{b}\" stroke=\"#333\"/>\n\
         <text x=\"{cx}\" y=\"{ly}\" text-anchor=\"middle\" font-size=\"13\">{xl} (0 to {xs:.1})</text>\n\
         <text x=\"14\" y=\"{cy}\" font-size=\"13\" transform=\"rotate(-90 14 {cy})\" text-anchor=\"middle\">{yl} (0 to {ys:.1})</text>\n",
        b = H - M,
        r = W - M,
        cx = W / 2.0,
        ly = H - 20.0,
        cy = H / 2.0,
        xl = esc(x_label),
        yl = esc(o.word()),
    );
    for (i, r) in rows.iter().enumerate() {
        let fill = if front[i] { "#2a7" } else { "none" };
        s += &format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" stroke=\"#2a7\" fill=\"{fill}\"><title>{}</title></circle>\n",
            px(x[i]),
            py(y[i]),
            esc(&format!("#{} {}", i + 1, r.candidate.topology))
        );
    }
    s + "</svg>\n"
}

/// The page: `question` lines, the rows (best first) and the `why` line.
pub fn page(question: &[String], rows: &[Row], o: Objective, why: &str) -> String {
    let front = pareto(rows, o);
    let mut p = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>raidlab plan</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>raidlab plan</h1>\n<ul>\n"
    );
    for q in question {
        p += &format!("<li>{}</li>\n", esc(q));
    }
    p += &format!(
        "</ul>\n<p class=\"why\">{}</p>\n<h2>Pareto front: {} against cost or capacity</h2>\n",
        esc(why),
        esc(o.word())
    );
    p += &figure(rows, o, &front);
    p += "<h2>Configurations, best first (the Pareto front shaded)</h2>\n<table class=\"plan\">\n<tr><th>rank</th><th>IOPS</th><th>MB/s</th><th>p99 ms</th><th>usable TB</th><th>cost</th><th>years to rated endurance</th><th>failures survived</th><th>IOPS degraded</th><th>rebuild h</th><th>limited by</th><th>topology</th></tr>\n";
    for (i, r) in rows.iter().enumerate() {
        let opt = |v: Option<f64>, d: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.d$}"));
        p += &format!(
            "<tr{}><td>{}</td><td>{:.0}</td><td>{:.1}</td><td>{:.3}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"t\">{}</td><td class=\"t\">{}{}</td></tr>\n",
            if front[i] { " class=\"pareto\"" } else { "" },
            i + 1,
            r.iops,
            r.mbps,
            r.lat_p99_ms,
            r.candidate.usable_bytes as f64 / 1e12,
            opt(r.candidate.cost, 0),
            opt(r.endurance_years, 1),
            r.candidate.survives,
            opt(r.degraded_iops, 0),
            opt(r.rebuild_hours, 1),
            esc(&r.bottleneck),
            esc(&r.candidate.topology),
            if r.steady { "" } else { " (not steady)" }
        );
    }
    p + "</table>\n</body>\n</html>\n"
}
