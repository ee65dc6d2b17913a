//! Plain-text tables for the terminal.

use raidlab_core::preset::{Preset, PresetDb};
use raidlab_core::result::{Component, RunResult};
use raidlab_studies::validate::{ErrorStats, Validation};
use std::collections::BTreeMap;

fn wl_line(r: &RunResult) -> String {
    workload_text(&r.workload)
}

/// A workload's JSON echo as `key=value` pairs, those that differ from
/// their defaults.
fn workload_text(w: &serde_json::Value) -> String {
    let Some(m) = w.as_object() else {
        return String::new();
    };
    let rw = m.get("rw").and_then(|x| x.as_str()).unwrap_or("");
    let mixed = matches!(rw, "rw" | "randrw");
    let default_random = if rw.starts_with("rand") { 100 } else { 0 };
    let mut parts = Vec::new();
    for k in [
        "rw",
        "bs",
        "bssplit",
        "bsrange",
        "iodepth",
        "numjobs",
        "rwmixread",
        "percentage_random",
        "size",
        "zonemode",
        "zonesize",
        "zonerange",
        "zoneskip",
        "verify_backlog",
        "verify_backlog_batch",
        "runtime",
        "ramp_time",
        "random_distribution",
        "thinktime",
        "sync",
        "fsync",
        "rate",
        "rate_iops",
        "rate_process",
        "io_submit_mode",
        "direct",
        "state",
        "iodepth_batch_submit",
        "iodepth_batch_complete_min",
        "iodepth_batch_complete_max",
        "iodepth_low",
    ]
    .iter()
    .chain(raidlab_core::workload::REPLAY_KEYS)
    .copied()
    {
        let Some(v) = m.get(k) else { continue };
        let shown = match k {
            "bs" => !m.contains_key("bssplit") && !m.contains_key("bsrange"),
            "rwmixread" => mixed,
            "percentage_random" => v.as_u64() != Some(default_random),
            "random_distribution" => v.as_str() != Some("random"),
            "thinktime" | "zoneskip" => v.as_u64() != Some(0),
            _ => true,
        };
        if !shown {
            continue;
        }
        let s = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) if k == "bs" || k == "size" || k.starts_with("zone") => {
                raidlab_core::units::format_size(n.as_u64().unwrap_or(0))
            }
            serde_json::Value::Number(n) if k == "runtime" || k == "ramp_time" => {
                format!("{}s", n.as_f64().unwrap_or(0.0))
            }
            other => other.to_string(),
        };
        parts.push(format!("{k}={s}"));
    }
    parts.join(" ")
}

/// Human-readable summary of a run (simulated or real).
pub fn sim_table(r: &RunResult) -> String {
    let mut o = run_header(r);
    o += &figures(&r.summary);
    o += &section_figures(r);
    match &r.real {
        Some(real) => o += &real_members(r, real),
        None => o += &components(r),
    }
    o += &rebuilds(r);
    o += &replay(r);
    o += &timeline(r);
    o += &job_errors(r);
    o += &latency_targets(r);
    o += &steadystate(r);
    o
}

/// fio's `steadystate` stop: whether the jobs reached it, and the last
/// window's criterion and means.
fn steadystate(r: &RunResult) -> String {
    let Some(s) = &r.steadystate else {
        return String::new();
    };
    let n = s.iops.len().max(1) as f64;
    let criterion = s.criterion.map_or("no full window".to_string(), |c| {
        format!(
            "{}={c:.3}{}",
            if s.slope { "slope" } else { "mean dev" },
            if s.pct { "%" } else { "" }
        )
    });
    format!(
        "steadystate {}: attained={}, {criterion}, iops mean {:.0}, bw mean {:.1} MB/s over the last {} samples (fio's steadystate)\n",
        s.ss,
        if s.attained { "yes" } else { "no" },
        s.iops.iter().sum::<u64>() as f64 / n,
        s.bw_bytes.iter().sum::<u64>() as f64 / n / 1e6,
        s.iops.len()
    )
}

/// Each `latency_target` search and the depth it ended at, as fio's
/// "latency : target=…, window=…, percentile=…, depth=…" line.
fn latency_targets(r: &RunResult) -> String {
    r.latency_target
        .iter()
        .map(|f| format!("latency    job {}: {f} (fio's latency_target)\n", f.job))
        .collect()
}

/// The jobs that tripped one of fio's guards and stopped there.
fn job_errors(r: &RunResult) -> String {
    r.errors
        .iter()
        .map(|e| {
            format!(
                "error      job {}: {} (it stopped issuing there)\n",
                e.job, e.message
            )
        })
        .collect()
}

/// The timeline's spread: IOPS per interval, least, median and most.
fn timeline(r: &RunResult) -> String {
    if r.intervals.is_empty() {
        return String::new();
    }
    let mut iops: Vec<f64> = r.intervals.iter().map(|i| i.iops).collect();
    iops.sort_by(f64::total_cmp);
    format!(
        "timeline   {} intervals: IOPS min {:.0}, median {:.0}, max {:.0} (--format timeline-csv or json for each)\n",
        iops.len(),
        iops[0],
        iops[iops.len() / 2],
        iops[iops.len() - 1]
    )
}

/// A trace replay: what was replayed, and whether issue kept up.
fn replay(r: &RunResult) -> String {
    let Some(p) = &r.sim.replay else {
        return String::new();
    };
    let event = match p.event.as_deref() {
        Some("D") => " (dispatch events)",
        Some(_) => " (queue events)",
        None => "",
    };
    let mut o = format!(
        "replay     {}{event} {} I/Os, {:.1} MB",
        p.format,
        p.ios,
        p.bytes as f64 / 1e6
    );
    if p.fitted > 0 {
        o += &format!(", {} offsets past the end moved in ({})", p.fitted, p.fit);
    }
    if p.flushes > 0 {
        o += &format!(", {} flushes", p.flushes);
    }
    if p.skipped > 0 {
        o += &format!(", {} trims passed over", p.skipped);
    }
    o.push('\n');
    if p.timed {
        o += &format!(
            "lag        {}: {:.1} % of I/Os late; lag mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs\n",
            if p.kept_up { "kept up" } else { "FELL BEHIND the trace" },
            p.late_pct, p.lag_mean_us, p.lag_p50_us, p.lag_p99_us, p.lag_max_us
        );
    } else {
        o += "lag        none: replayed as fast as iodepth allows (replay_no_stall or an untimed trace)\n";
    }
    if let Some(e) = &p.error {
        o += &format!("replay stopped early: {e}\n");
    }
    o
}

/// Rebuilds onto spares: how far they got, how fast, how long they take.
fn rebuilds(r: &RunResult) -> String {
    let mut o = String::new();
    for b in &r.sim.rebuilds {
        let state = match b.finished_s {
            Some(t) => format!("finished at {t:.1} s"),
            None => format!(
                "{:.1} % done, the whole takes {:.0} s at this rate",
                b.rebuilt_bytes as f64 / b.member_bytes.max(1) as f64 * 100.0,
                b.projected_s
            ),
        };
        o += &format!("rebuild of {}: {:.1} MB/s, {state}\n", b.array, b.rate_mb_s);
    }
    o
}

/// What ran: the expression, the workload, and for a simulation the
/// configuration as run and its capacity.
fn run_header(r: &RunResult) -> String {
    let mut o = format!(
        "topology   {}\n",
        r.topology.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    match r.sections.as_slice() {
        [] => o += &format!("workload   {} (seed {})\n", wl_line(r), r.seed),
        secs => {
            o += &format!("workload   side by side (seed {}):\n", r.seed);
            for s in secs {
                o += &format!("           [{}] {}\n", s.name, workload_text(&s.workload));
            }
        }
    }
    if let Some(res) = &r.resolved {
        o += &format!("as run     {}\n", res.topology);
        let each = match res.volumes {
            1 => String::new(),
            n => format!("{n} volumes side by side, each "),
        };
        o += &format!(
            "capacity   {each}{:.1} GB ({} bytes)\n",
            res.capacity_bytes as f64 / 1e9,
            res.capacity_bytes
        );
    }
    if let Some(st) = &r.sim.steady {
        o += &format!("{}\n", steady_line(st));
    }
    o.push('\n');
    o
}

/// Whether the window was steady, and after how long; an unsteady window
/// is flagged in capitals.
pub fn steady_line(st: &raidlab_core::steady::Steady) -> String {
    if !st.judged {
        format!(
            "steady     not judged: measured from {} s ({})",
            st.after_s, st.criterion
        )
    } else if st.reached {
        format!(
            "steady     yes: measured from {} s ({})",
            st.after_s, st.criterion
        )
    } else {
        format!(
            "steady     NOT STEADY: the window from {} s still changes; treat these figures as a transient ({})",
            st.after_s, st.criterion
        )
    }
}

/// IOPS, MB/s and latencies: all I/Os, then reads and writes apart.
fn figures(s: &raidlab_core::result::Summary) -> String {
    format!(
        "{:<7} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "", "IOPS", "MB/s", "avg ms", "p50 ms", "p99 ms", "p99.9 ms", "max ms"
    ) + &figure_rows(s)
}

/// Each job section's own figures, when sections ran side by side: its
/// name, then its rows as [`figures`] lays them out.
fn section_figures(r: &RunResult) -> String {
    let mut o = String::new();
    for s in &r.sections {
        o += &format!("[{}]\n{}", s.name, figure_rows(&s.summary));
    }
    o
}

/// A summary's rows (all, then each direction that moved data), without
/// the column heads.
fn figure_rows(s: &raidlab_core::result::Summary) -> String {
    let mut o = String::new();
    let row = |name: &str, iops: f64, mbps: f64, lat: [f64; 5]| {
        format!(
            "{:<7} {:>12.1} {:>10.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}\n",
            name, iops, mbps, lat[0], lat[1], lat[2], lat[3], lat[4]
        )
    };
    o += &row(
        "all",
        s.iops,
        s.mbps,
        [
            s.lat_avg_ms,
            s.lat_p50_ms,
            s.lat_p99_ms,
            s.lat_p999_ms,
            s.lat_max_ms,
        ],
    );
    for (name, d) in [("read", &s.read), ("write", &s.write)] {
        if d.iops > 0.0 {
            o += &row(
                name,
                d.iops,
                d.mbps,
                [
                    d.lat_avg_ms,
                    d.lat_p50_ms,
                    d.lat_p99_ms,
                    d.lat_p999_ms,
                    d.lat_max_ms,
                ],
            );
        }
    }
    o
}

/// A real run's members, verify outcome and engine line.
fn real_members(r: &RunResult, real: &raidlab_core::result::RealStats) -> String {
    let mut o = format!(
        "\n{:<24} {:<6} {:>6} {:>10} {:>10} {:>10} {:>10}\n",
        "member", "kind", "util", "reads", "writes", "MB read", "MB written"
    );
    for m in &real.members {
        o += &format!(
            "{:<24} {:<6} {:>5.0}% {:>10} {:>10} {:>10.1} {:>10.1}\n",
            m.path,
            m.kind,
            m.utilization * 100.0,
            m.reads,
            m.writes,
            m.read_bytes as f64 / 1e6,
            m.write_bytes as f64 / 1e6
        );
    }
    if let Some(a) = &real.array {
        let how = if a.created { "created" } else { "assembled" };
        o += &format!("array {} {how}, md event {}", a.uuid, a.events);
        if a.resynced_bytes > 0 {
            o += &format!(
                "; it had not stopped cleanly: {:.1} MB resynchronised first",
                a.resynced_bytes as f64 / 1e6
            );
        }
        o += "\n";
        for t in &a.took_over {
            o += &format!("spare: {t}\n");
        }
        if let Some(t) = &a.topology {
            o += &format!("from now on the array is: {t}\n");
        }
    }
    for m in real.members.iter().filter(|m| m.failed.is_some()) {
        o += &format!(
            "FAILED during the run: {} ({}); the array carried on degraded\n",
            m.path,
            m.failed.as_deref().unwrap_or_default()
        );
    }
    if let Some(v) = &real.verify {
        o += &format!(
            "\nverify: {} blocks checked, {} mismatches, {} repaired from redundancy{}\n",
            v.checked_units,
            v.mismatches,
            v.repaired,
            match v.unwritten_units {
                0 => String::new(),
                n => format!(", {n} never written under verify (not checked)"),
            }
        );
        for f in &v.first {
            o += &format!("  {f}\n");
        }
    }
    o += &format!(
        "\nengine {}{}{}, parity {}   host CPU {:.1}%   {:.3} s measured, {:.2} s wall, {} reads, {} writes\n",
        real.engine,
        if real.direct { " O_DIRECT" } else { " buffered" },
        if real.registered_buffers { " registered buffers" } else { "" },
        real.parity_kernel,
        r.host.cpu_util_pct,
        r.sim.simulated_s,
        r.sim.wall_s,
        real.read.ios,
        real.write.ios
    );
    o
}

/// A simulation's components with their load and the bottleneck, then the
/// host CPU and the simulator's own figures.
fn components(r: &RunResult) -> String {
    let mut o = format!(
        "\n{:<18} {:<11} {:>6}  {:<9} {:>6} {:>10} {:>10} {:>9}\n",
        "component", "kind", "util", "resource", "WA", "reads", "writes", "TBW yrs"
    );
    let count = |n: Option<u64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    for c in &r.components {
        o += &format!(
            "{:<18} {:<11} {:>5.0}%  {:<9} {:>6} {:>10} {:>10} {:>9}{}\n",
            c.name,
            c.kind,
            c.utilization * 100.0,
            c.resource.as_deref().unwrap_or(""),
            c.write_amplification
                .map(|w| format!("{w:.2}"))
                .unwrap_or_else(|| "-".into()),
            count(c.io.map(|x| x.reads)),
            count(c.io.map(|x| x.writes)),
            years(c),
            if c.bottleneck { "  <- bottleneck" } else { "" }
        );
    }
    if !r.components.iter().any(|c| c.bottleneck) {
        o +=
            "no resource saturated: the workload's queue depth limits throughput (latency-bound)\n";
    }
    o += &format!(
        "\nhost CPU {:.1}%   simulated {:.3} s in {:.2} s wall, {} events, {} host I/Os\n",
        r.host.cpu_util_pct, r.sim.simulated_s, r.sim.wall_s, r.sim.events, r.sim.host_ios
    );
    o
}

/// A device's years to its rated endurance at the run's write rate: `-`
/// without a rating or writes, `>999` beyond any service life.
fn years(c: &Component) -> String {
    match c.wear.and_then(|w| w.years_to_rated) {
        Some(y) if y > 999.0 => ">999".into(),
        Some(y) if y < 0.1 => format!("{y:.3}"),
        Some(y) => format!("{y:.1}"),
        None => "-".into(),
    }
}

/// One line per preset.
pub fn preset_list(db: &PresetDb) -> String {
    let mut o = format!("{:<14} {:<11} {}\n", "name", "kind", "description");
    for (n, p) in db.iter() {
        o += &format!("{:<14} {:<11} {}\n", n, p.kind(), p.description());
    }
    o
}

/// A preset's header and its TOML.
pub fn preset_detail(name: &str, p: &Preset, toml: &str) -> String {
    format!("{name} ({}): {}\n\n{toml}", p.kind(), p.description())
}

/// The validate report as text: one line per row, then summaries per source,
/// per table and overall, then the rows that could not be simulated.
pub fn validation_table(v: &Validation) -> String {
    let mut o = format!(
        "{:<40} {:<10} {:>11} {:>11} {:>8}  {}\n",
        "id", "metric", "published", "simulated", "error", "bottleneck"
    );
    for r in &v.rows {
        o += &format!(
            "{:<40} {:<10} {:>11.3} {:>11.3} {:>7.1}%  {}{}\n",
            r.row.id,
            r.row.metric,
            r.row.value,
            r.simulated,
            r.error_pct,
            r.bottleneck.as_deref().unwrap_or("-"),
            if r.steady { "" } else { "  NOT STEADY" }
        );
    }
    let mut by_source: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    let mut by_table: BTreeMap<(&str, &str), Vec<_>> = BTreeMap::new();
    for r in &v.rows {
        by_source.entry(r.row.source.as_str()).or_default().push(r);
        by_table
            .entry((r.row.source.as_str(), r.row.reference.as_str()))
            .or_default()
            .push(r);
    }
    let line = |name: String, s: ErrorStats| {
        format!(
            "{:<40} {:>5} {:>10.1}% {:>10.1}% {:>10}\n",
            name, s.rows, s.median, s.p90, s.within_25pct
        )
    };
    o += &format!(
        "\n{:<40} {:>5} {:>11} {:>11} {:>10}\n",
        "group", "rows", "median|err|", "p90|err|", "within25%"
    );
    for (src, rows) in &by_source {
        o += &line(src.to_string(), ErrorStats::of(rows.iter().copied()));
    }
    for ((src, t), rows) in &by_table {
        o += &line(format!("  {src} {t}"), ErrorStats::of(rows.iter().copied()));
    }
    o += &line("all".into(), v.stats());
    let unsteady = v.rows.iter().filter(|r| !r.steady).count();
    if unsteady > 0 {
        o += &format!(
            "\n{unsteady} row(s) marked NOT STEADY: their simulation did not reach steady state (docs/workloads.md)\n"
        );
    }
    if !v.failed.is_empty() {
        o += &format!("\nfailed ({}):\n", v.failed.len());
        for f in &v.failed {
            o += &format!("  {}: {}\n", f.id, f.reason);
        }
    }
    o
}

/// The `summary` object of validate's JSON (docs/results.md) (shared by validate and reproduce).
pub fn summary_json(v: &Validation) -> serde_json::Value {
    let s = v.stats();
    serde_json::json!({
        "rows": s.rows,
        "median_abs_error_pct": s.median,
        "p90_abs_error_pct": s.p90,
        "within_25pct": s.within_25pct,
        "failed": v.failed.iter().map(|f| serde_json::json!({"id": f.id, "reason": f.reason})).collect::<Vec<_>>(),
    })
}

/// The validate report as the JSON of docs/results.md.
pub fn validation_json(v: &Validation) -> serde_json::Value {
    serde_json::json!({
        "rows": v.rows.iter().map(|r| serde_json::json!({
            "id": r.row.id,
            "source": r.row.source,
            "ref": r.row.reference,
            "metric": r.row.metric,
            "published": r.row.value,
            "simulated": r.simulated,
            "error_pct": r.error_pct,
            "bottleneck": r.bottleneck,
            "steady": r.steady,
        })).collect::<Vec<_>>(),
        "summary": summary_json(v),
    })
}

/// One pattern of `raidlab model`.
pub struct ModelRow {
    /// T/C, R and efficiency.
    pub cost: raidlab_core::analytic::Cost,
    /// One drive's figure (IOPS for small patterns, MB/s for large).
    pub one_drive: f64,
    /// Where that figure came from.
    pub source: String,
}

impl ModelRow {
    fn unit(&self) -> &'static str {
        if self.cost.pattern.per_io() {
            "IOPS"
        } else {
            "MB/s"
        }
    }

    /// T/C × D × one drive.
    pub fn expected(&self) -> f64 {
        self.cost.drive_multiple * self.one_drive
    }
}

/// `raidlab model` as a table.
pub fn model_table(rows: &[ModelRow]) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let c = &first.cost;
    let mut o = format!(
        "analytic model (docs/model.md): {} over {} drives, storage efficiency {:.0}%\n",
        c.level,
        c.drives,
        c.efficiency * 100.0
    );
    o += &format!(
        "{:<24} {:>6} {:>6} {:>7} {:>16} {:>18}\n",
        "pattern", "T/C", "R", "T/C×D", "one drive", "expected array"
    );
    for r in rows {
        o += &format!(
            "{:<24} {:>6} {:>6} {:>7} {:>16} {:>18}\n",
            r.cost.pattern.word(),
            r.cost.tc_text,
            r.cost.requests,
            format!("{:.3}", r.cost.drive_multiple)
                .trim_end_matches('0')
                .trim_end_matches('.'),
            format!("{:.0} {}", r.one_drive, r.unit()),
            format!("{:.0} {}", r.expected(), r.unit()),
        );
    }
    let mut sources: Vec<&str> = rows.iter().map(|r| r.source.as_str()).collect();
    sources.dedup();
    for s in sources {
        o += &format!("one drive: {s}\n");
    }
    o
}

/// `raidlab model` as JSON.
pub fn model_json(rows: &[ModelRow]) -> serde_json::Value {
    serde_json::json!({
        "level": rows.first().map(|r| r.cost.level.clone()),
        "drives": rows.first().map(|r| r.cost.drives),
        "efficiency": rows.first().map(|r| r.cost.efficiency),
        "patterns": rows.iter().map(|r| serde_json::json!({
            "pattern": r.cost.pattern,
            "tc": r.cost.tc,
            "tc_text": r.cost.tc_text,
            "requests": r.cost.requests,
            "drive_multiple": r.cost.drive_multiple,
            "unit": if r.cost.pattern.per_io() { "iops" } else { "mbps" },
            "one_drive": r.one_drive,
            "one_drive_source": r.source,
            "expected": r.expected(),
        })).collect::<Vec<_>>(),
    })
}

/// The analytic expectation beside a simulated run (`raidlab sim` table).
pub fn analytic_line(r: &RunResult, e: &raidlab_studies::analytic::Expectation) -> String {
    let (name, unit, sim) = if e.cost.pattern.per_io() {
        ("iops", "IOPS", r.summary.iops)
    } else {
        ("mbps", "MB/s", r.summary.mbps)
    };
    let Some(x) = e.metric(name).filter(|x| *x > 0.0) else {
        return String::new();
    };
    format!(
        "\nanalytic   {x:.0} {unit} = T/C {} × {} drives × {:.0} {unit} ({} alone); simulated is {:.0}% of it\n",
        e.cost.tc_text,
        e.cost.drives,
        e.one_drive.metric(name).unwrap_or(0.0),
        e.drive,
        100.0 * sim / x
    )
}
