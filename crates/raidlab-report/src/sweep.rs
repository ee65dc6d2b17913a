//! Sweeps (`raidlab sweep`, `raidlab merge`): templates with `{name}`
//! placeholders, the product of the values given for each name, and the
//! tidy results — one row per run, a column per varied name, every summary
//! metric and the bottleneck.
//!
//! Runs are numbered in product order (the first `--vary` varies slowest).
//! `--shard i/n` keeps the runs whose number is `i-1` modulo `n`; `merge`
//! puts slices back together and refuses overlapping, foreign or incomplete
//! sets, so merged output is byte-identical to the unsharded run.

use raidlab_core::published::{csv_field, records};
use raidlab_core::result::RunResult;
use raidlab_core::units::{format_size, parse_size};
use serde_json::{json, Value};
use std::fmt;

/// What went wrong with a sweep's arguments or slices (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepError(pub String);

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SweepError {}

fn err<T>(m: impl Into<String>) -> Result<T, SweepError> {
    Err(SweepError(m.into()))
}

/// One varied name and its values, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vary {
    /// Placeholder name (`{name}` in the templates).
    pub name: String,
    /// Values substituted, as text.
    pub values: Vec<String>,
}

/// Most runs one sweep may expand to (a typo such as `1..1000000` should
/// fail at once, not after filling memory).
pub const MAX_RUNS: usize = 1_000_000;

fn number(s: &str, what: &str) -> Result<(u64, bool), SweepError> {
    let t = s.trim();
    if t.is_empty() {
        return err(format!("{what}: empty bound"));
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok((n, false));
    }
    parse_size(t)
        .map(|n| (n, true))
        .map_err(|_| SweepError(format!("{what}: '{t}' is not a whole number or size")))
}

impl Vary {
    /// Parse `name=v1,v2,...` (or `name=v1|v2|...` when values hold commas),
    /// `name=a..b` (whole numbers, step 1), `name=a..b:step` and
    /// `name=a..b*factor` (geometric). Range ends may be sizes (`4k..1m*2`);
    /// values are then written as sizes.
    pub fn parse(s: &str) -> Result<Vary, SweepError> {
        let Some((name, spec)) = s.split_once('=') else {
            return err(format!("--vary '{s}': expected name=values"));
        };
        let name = name.trim();
        let ok_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !ok_name {
            return err(format!(
                "--vary '{s}': '{name}' is not a name (letters, digits, _)"
            ));
        }
        let what = format!("--vary {name}");
        let spec = spec.trim();
        let values = if let Some((a, rest)) = spec.split_once("..") {
            let (b, step, geometric) = if let Some((b, k)) = rest.split_once('*') {
                (b, k, true)
            } else if let Some((b, k)) = rest.split_once(':') {
                (b, k, false)
            } else {
                (rest, "1", false)
            };
            let (lo, sa) = number(a, &what)?;
            let (hi, sb) = number(b, &what)?;
            let (k, _) = number(step, &what)?;
            if lo > hi {
                return err(format!("{what}: range {lo}..{hi} runs backwards"));
            }
            if k == 0 || (geometric && (k < 2 || lo == 0)) {
                return err(format!(
                    "{what}: step must be at least 1 (factor at least 2, from a start above 0)"
                ));
            }
            let sizes = sa || sb;
            let mut v = Vec::new();
            let mut x = lo;
            while x <= hi {
                if v.len() >= MAX_RUNS {
                    return err(format!("{what}: more than {MAX_RUNS} values"));
                }
                v.push(if sizes { format_size(x) } else { x.to_string() });
                x = match if geometric {
                    x.checked_mul(k)
                } else {
                    x.checked_add(k)
                } {
                    Some(n) => n,
                    None => break,
                };
            }
            v
        } else {
            let sep = if spec.contains('|') { '|' } else { ',' };
            spec.split(sep).map(|v| v.trim().to_string()).collect()
        };
        if values.iter().any(String::is_empty) {
            return err(format!("{what}: empty value in '{spec}'"));
        }
        Ok(Vary {
            name: name.to_string(),
            values,
        })
    }
}

/// The placeholders `{name}` a template uses, in order of appearance.
pub fn placeholders(template: &str) -> Result<Vec<String>, SweepError> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        let Some(j) = after.find('}') else {
            return err(format!("template '{template}': '{{' without '}}'"));
        };
        let name = &after[..j];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return err(format!(
                "template '{template}': bad placeholder '{{{name}}}'"
            ));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        rest = &after[j + 1..];
    }
    Ok(out)
}

/// A sweep: templates, the varied names, and which slice to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Topology template.
    pub topology: String,
    /// Workload template.
    pub workload: String,
    /// Varied names, outermost first.
    pub vary: Vec<Vary>,
    /// `sim` or `real`.
    pub engine: String,
    /// Seed of every run.
    pub seed: u64,
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Number in product order, from 0.
    pub index: usize,
    /// The value of each varied name.
    pub values: Vec<String>,
    /// Topology with the values substituted.
    pub topology: String,
    /// Workload with the values substituted.
    pub workload: String,
}

fn substitute(template: &str, vary: &[Vary], values: &[String]) -> String {
    let mut s = template.to_string();
    for (v, x) in vary.iter().zip(values) {
        s = s.replace(&format!("{{{}}}", v.name), x);
    }
    s
}

/// Parse `i/n` (1 ≤ i ≤ n).
pub fn parse_shard(s: &str) -> Result<(usize, usize), SweepError> {
    let bad = || SweepError(format!("--shard '{s}': expected i/n with 1 <= i <= n"));
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

impl Sweep {
    /// Check the templates against the varied names: every placeholder is
    /// varied, every varied name is used, no name twice.
    pub fn check(&self) -> Result<(), SweepError> {
        if self.vary.is_empty() {
            return err("give at least one --vary name=values");
        }
        for (i, v) in self.vary.iter().enumerate() {
            if self.vary[..i].iter().any(|w| w.name == v.name) {
                return err(format!("--vary {}: given twice", v.name));
            }
        }
        let mut used = placeholders(&self.topology)?;
        used.extend(placeholders(&self.workload)?);
        for u in &used {
            if !self.vary.iter().any(|v| &v.name == u) {
                return err(format!(
                    "template uses {{{u}}} but no --vary {u}=... gives its values"
                ));
            }
        }
        for v in &self.vary {
            if !used.contains(&v.name) {
                return err(format!(
                    "--vary {}: neither template has {{{}}}",
                    v.name, v.name
                ));
            }
        }
        let total = self
            .vary
            .iter()
            .try_fold(1usize, |a, v| a.checked_mul(v.values.len()))
            .filter(|&n| n <= MAX_RUNS);
        if total.is_none() {
            return err(format!("the sweep has more than {MAX_RUNS} runs"));
        }
        Ok(())
    }

    /// Number of runs in the whole product.
    pub fn total(&self) -> usize {
        self.vary.iter().map(|v| v.values.len()).product()
    }

    /// The runs of the product in order, keeping those of `shard` (i, n).
    pub fn runs(&self, shard: Option<(usize, usize)>) -> Vec<Run> {
        let total = self.total();
        let (i, n) = shard.unwrap_or((1, 1));
        (0..total)
            .filter(|k| k % n == i - 1)
            .map(|k| {
                // Mixed-radix digits, the last --vary fastest.
                let mut rem = k;
                let mut values = vec![String::new(); self.vary.len()];
                for (d, v) in self.vary.iter().enumerate().rev() {
                    values[d] = v.values[rem % v.values.len()].clone();
                    rem /= v.values.len();
                }
                Run {
                    index: k,
                    topology: substitute(&self.topology, &self.vary, &values),
                    workload: substitute(&self.workload, &self.vary, &values),
                    values,
                }
            })
            .collect()
    }

    fn header_json(&self) -> Value {
        json!({
            "topology": self.topology,
            "workload": self.workload,
            "vary": self.vary.iter().map(|v| json!({"name": v.name, "values": v.values})).collect::<Vec<_>>(),
            "engine": self.engine,
            "seed": self.seed,
            "runs": self.total(),
        })
    }
}

/// Summary columns of every row, after the varied names.
pub const METRIC_COLUMNS: [&str; 22] = [
    "iops",
    "mbps",
    "lat_avg_ms",
    "lat_max_ms",
    "lat_p50_ms",
    "lat_p99_ms",
    "lat_p999_ms",
    "read_iops",
    "read_mbps",
    "read_lat_avg_ms",
    "read_lat_max_ms",
    "read_lat_p50_ms",
    "read_lat_p99_ms",
    "read_lat_p999_ms",
    "write_iops",
    "write_mbps",
    "write_lat_avg_ms",
    "write_lat_max_ms",
    "write_lat_p50_ms",
    "write_lat_p99_ms",
    "write_lat_p999_ms",
    "cpu_util_pct",
];

/// One tidy row, cells in [`columns`] order: the run, its values, and its
/// result.
pub fn row(run: &Run, r: &RunResult) -> Vec<Value> {
    let s = &r.summary;
    let b = r.components.iter().find(|c| c.bottleneck);
    let mut v = vec![json!(run.index)];
    v.extend(run.values.iter().map(|x| json!(x)));
    v.push(json!(one_line(&run.topology)));
    v.push(json!(run.workload.trim()));
    v.extend(METRIC_COLUMNS.iter().map(|&m| match m {
        "cpu_util_pct" => json!(r.host.cpu_util_pct),
        m => json!(s.metric(m)),
    }));
    v.push(json!(b.map(|c| c.name.clone())));
    v.push(json!(b.and_then(|c| c.resource.clone())));
    v.push(json!(b.map(|c| c.utilization)));
    let st = r.sim.steady.as_ref();
    v.push(json!(st.map(|s| s.reached)));
    v.push(json!(st.map(|s| s.after_s)));
    v
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Column names of a sweep's CSV, in order.
pub fn columns(sweep: &Sweep) -> Vec<String> {
    let mut c = vec!["run".to_string()];
    c.extend(sweep.vary.iter().map(|v| v.name.clone()));
    c.extend(["topology", "workload"].map(String::from));
    c.extend(METRIC_COLUMNS.iter().map(|s| s.to_string()));
    c.extend(
        [
            "bottleneck",
            "bottleneck_resource",
            "bottleneck_util",
            "steady",
            "steady_after_s",
        ]
        .map(String::from),
    );
    c
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => csv_field(s),
        x => x.to_string(),
    }
}

/// The rows (from [`row`]) as CSV, header first.
pub fn to_csv(sweep: &Sweep, rows: &[Vec<Value>]) -> String {
    let mut o = columns(sweep)
        .iter()
        .map(|c| csv_field(c))
        .collect::<Vec<_>>()
        .join(",");
    o.push('\n');
    for r in rows {
        o += &r.iter().map(cell).collect::<Vec<_>>().join(",");
        o.push('\n');
    }
    o
}

/// The rows (from [`row`]) as one JSON document; `shard` is recorded when
/// given.
pub fn to_json(sweep: &Sweep, rows: &[Vec<Value>], shard: Option<(usize, usize)>) -> Value {
    let mut h = sweep.header_json();
    if let Some((i, n)) = shard {
        h["shard"] = json!(format!("{i}/{n}"));
    }
    json!({
        "raidlab": raidlab_core::result::VERSION,
        "sweep": h,
        "columns": columns(sweep),
        "rows": rows,
    })
}

/// Join slices written by `--shard` (all CSV or all JSON) into the output
/// the unsharded sweep writes.
pub fn merge(slices: &[(String, String)]) -> Result<String, SweepError> {
    if slices.is_empty() {
        return err("merge: give the slices to join");
    }
    let json_in = slices[0].1.trim_start().starts_with('{');
    if slices
        .iter()
        .any(|(_, t)| t.trim_start().starts_with('{') != json_in)
    {
        return err("merge: the slices mix CSV and JSON");
    }
    if json_in {
        merge_json(slices)
    } else {
        merge_csv(slices)
    }
}

fn check_complete(
    indices: &mut [(usize, String)],
    expected: Option<usize>,
) -> Result<(), SweepError> {
    indices.sort_by_key(|x| x.0);
    for w in indices.windows(2) {
        if w[0].0 == w[1].0 {
            return err(format!(
                "merge: run {} is in more than one slice ({} and {})",
                w[0].0, w[0].1, w[1].1
            ));
        }
    }
    let n = expected.unwrap_or_else(|| indices.last().map_or(0, |x| x.0 + 1));
    let missing: Vec<usize> = {
        let have: std::collections::BTreeSet<usize> = indices.iter().map(|x| x.0).collect();
        (0..n).filter(|k| !have.contains(k)).collect()
    };
    if let Some(extra) = indices.iter().find(|x| x.0 >= n) {
        return err(format!(
            "merge: {} has run {}, beyond the sweep's {n} runs",
            extra.1, extra.0
        ));
    }
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(10).map(|k| k.to_string()).collect();
        return err(format!(
            "merge: runs missing ({}{}): is a slice left out?",
            shown.join(", "),
            if missing.len() > 10 { ", ..." } else { "" }
        ));
    }
    Ok(())
}

fn merge_csv(slices: &[(String, String)]) -> Result<String, SweepError> {
    let mut header: Option<&str> = None;
    let mut rows: Vec<(usize, String, String)> = Vec::new();
    for (name, text) in slices {
        let doc = records(text).map_err(|e| SweepError(format!("merge: {name}: {e}")))?;
        let Some(doc) = doc else {
            return err(format!("merge: {name} is empty"));
        };
        match header {
            None => header = Some(doc.header_text),
            Some(h0) if h0 != doc.header_text => {
                return err(format!(
                    "merge: {name} has other columns than {}: not a slice of the same sweep",
                    slices[0].0
                ))
            }
            _ => {}
        }
        if doc.header.first().map(String::as_str) != Some("run") {
            return err(format!(
                "merge: {name} is not a sweep's CSV (no 'run' column first)"
            ));
        }
        for r in doc.rows {
            let idx: usize = r.fields[0].parse().map_err(|_| {
                SweepError(format!(
                    "merge: {name}: line {}: bad run number '{}'",
                    r.line, r.fields[0]
                ))
            })?;
            rows.push((idx, name.clone(), r.text.to_string()));
        }
    }
    let mut idx: Vec<(usize, String)> = rows.iter().map(|r| (r.0, r.1.clone())).collect();
    check_complete(&mut idx, None)?;
    rows.sort_by_key(|r| r.0);
    let mut o = header.unwrap_or_default().to_string();
    o.push('\n');
    for r in rows {
        o += &r.2;
        o.push('\n');
    }
    Ok(o)
}

fn merge_json(slices: &[(String, String)]) -> Result<String, SweepError> {
    let mut head: Option<Value> = None;
    let mut cols: Option<Value> = None;
    let mut rows: Vec<(usize, String, Value)> = Vec::new();
    for (name, text) in slices {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| SweepError(format!("merge: {name}: not JSON ({e})")))?;
        let Some(mut h) = v.get("sweep").cloned() else {
            return err(format!("merge: {name} is not a sweep's JSON (no 'sweep')"));
        };
        if let Some(m) = h.as_object_mut() {
            m.remove("shard");
        }
        match &head {
            None => {
                head = Some(h);
                cols = v.get("columns").cloned();
            }
            Some(h0) if *h0 != h || cols.as_ref() != v.get("columns") => {
                return err(format!(
                    "merge: {name} is a slice of another sweep than {}",
                    slices[0].0
                ))
            }
            _ => {}
        }
        let Some(rs) = v.get("rows").and_then(Value::as_array) else {
            return err(format!("merge: {name}: no 'rows'"));
        };
        for r in rs {
            let Some(idx) = r.get(0).and_then(Value::as_u64) else {
                return err(format!("merge: {name}: a row without its run number"));
            };
            rows.push((idx as usize, name.clone(), r.clone()));
        }
    }
    let head = head.unwrap_or_default();
    let total = head.get("runs").and_then(Value::as_u64).map(|n| n as usize);
    let mut idx: Vec<(usize, String)> = rows.iter().map(|r| (r.0, r.1.clone())).collect();
    check_complete(&mut idx, total)?;
    rows.sort_by_key(|r| r.0);
    let doc = json!({
        "raidlab": raidlab_core::result::VERSION,
        "sweep": head,
        "columns": cols,
        "rows": rows.into_iter().map(|r| r.2).collect::<Vec<_>>(),
    });
    Ok(serde_json::to_string_pretty(&doc).map_err(|e| SweepError(e.to_string()))? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_lists_and_ranges() {
        let v = Vary::parse("drives=2..5").unwrap();
        assert_eq!(v.values, ["2", "3", "4", "5"]);
        assert_eq!(Vary::parse("n=1..10:4").unwrap().values, ["1", "5", "9"]);
        assert_eq!(
            Vary::parse("bs=4k..64k*2").unwrap().values,
            ["4k", "8k", "16k", "32k", "64k"]
        );
        assert_eq!(Vary::parse("bs=4k,8k").unwrap().values, ["4k", "8k"]);
        assert_eq!(
            Vary::parse("t=raid0(a,b)|raid1(a,b)").unwrap().values,
            ["raid0(a,b)", "raid1(a,b)"]
        );
        for bad in [
            "x", "=1", "1x=2", "a=5..2", "a=1..3:0", "a=1..8*1", "a=1,,2", "a=x..y",
        ] {
            assert!(Vary::parse(bad).is_err(), "{bad}");
        }
    }

    fn sweep() -> Sweep {
        Sweep {
            topology: "raid{level}({n}*x25e)".into(),
            workload: "rw=randread bs={bs}".into(),
            vary: vec![
                Vary::parse("level=0,5").unwrap(),
                Vary::parse("n=3..4").unwrap(),
                Vary::parse("bs=4k,8k,16k").unwrap(),
            ],
            engine: "sim".into(),
            seed: 1,
        }
    }

    #[test]
    fn product_order_and_shards() {
        let s = sweep();
        s.check().unwrap();
        let all = s.runs(None);
        assert_eq!(all.len(), 12);
        assert_eq!(all[0].topology, "raid0(3*x25e)");
        assert_eq!(all[1].workload, "rw=randread bs=8k");
        assert_eq!(all[11].topology, "raid5(4*x25e)");
        let mut joined: Vec<Run> = (1..=5).flat_map(|i| s.runs(Some((i, 5)))).collect();
        joined.sort_by_key(|r| r.index);
        assert_eq!(joined, all);
    }

    #[test]
    fn templates_and_names_must_agree() {
        let mut s = sweep();
        s.vary.pop();
        assert!(s.check().unwrap_err().0.contains("{bs}"));
        let mut s = sweep();
        s.vary.push(Vary::parse("qd=1,2").unwrap());
        assert!(s.check().unwrap_err().0.contains("qd"));
        let mut s = sweep();
        s.vary.push(Vary::parse("n=1").unwrap());
        assert!(s.check().is_err());
        assert!(placeholders("raid{0(x)").is_err());
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
        for bad in ["0/3", "4/3", "1", "a/b"] {
            assert!(parse_shard(bad).is_err());
        }
    }
}
