//! fio-compatible JSON (`--format fio-json`): fio's `--output-format=json`
//! layout, so tools written for fio read raidlab's results.
//!
//! One entry in `jobs`, as fio writes with `group_reporting`: raidlab
//! accounts all jobs of a run together. Submission latency is not separated
//! from completion latency (`slat_ns` is empty, `clat_ns` = `lat_ns`), and
//! bandwidth/IOPS samples are not logged (`bw_samples` = 0, as fio reports
//! for a run shorter than its 500 ms sampling interval). Queue-depth
//! distributions (`iodepth_level`, `iodepth_submit`, `iodepth_complete`) are
//! not measured and not written.

use raidlab_core::result::{DirLatency, LatencyDetail, RunResult, FIO_LAT_EDGES_NS};
use serde_json::{json, Map, Value};

/// fio's way of naming a percentile: `"99.000000"`.
fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

fn lat_block(d: &DirLatency, percentiles: bool) -> Value {
    let mut m = Map::new();
    m.insert("min".into(), json!(d.min_ns));
    m.insert("max".into(), json!(d.max_ns));
    m.insert("mean".into(), json!(d.mean_ns));
    m.insert("stddev".into(), json!(d.stddev_ns));
    m.insert("N".into(), json!(d.count));
    if percentiles && d.count > 0 {
        let p: Map<String, Value> = d
            .percentiles
            .iter()
            .map(|&(p, v)| (pct_key(p), json!(v)))
            .collect();
        m.insert("percentile".into(), Value::Object(p));
    }
    Value::Object(m)
}

fn direction(d: &DirLatency, window_ns: u64) -> Value {
    let secs = window_ns as f64 / 1e9;
    let (bw_bytes, iops) = if secs > 0.0 {
        (d.bytes as f64 / secs, d.count as f64 / secs)
    } else {
        (0.0, 0.0)
    };
    let empty = json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes.round() as u64,
        "bw": (bw_bytes / 1024.0).round() as u64,
        "iops": iops,
        "runtime": if d.count > 0 { window_ns / 1_000_000 } else { 0 },
        "total_ios": d.count,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": empty,
        "clat_ns": lat_block(d, true),
        "lat_ns": lat_block(d, true),
        "bw_min": 0,
        "bw_max": 0,
        "bw_agg": 0.0,
        "bw_mean": 0.0,
        "bw_dev": 0.0,
        "bw_samples": 0,
        "iops_min": 0,
        "iops_max": 0,
        "iops_mean": 0.0,
        "iops_stddev": 0.0,
        "iops_samples": 0,
    })
}

/// fio's `latency_ns`, `latency_us` and `latency_ms` maps: the share (%) of
/// I/Os in each bucket.
fn latency_maps(l: &LatencyDetail) -> (Value, Value, Value) {
    let total: u64 = l.buckets.iter().sum();
    let share = |i: usize| {
        if total == 0 {
            0.0
        } else {
            100.0 * l.buckets.get(i).copied().unwrap_or(0) as f64 / total as f64
        }
    };
    let mut maps = [Map::new(), Map::new(), Map::new()];
    for (i, &edge) in FIO_LAT_EDGES_NS.iter().enumerate() {
        let (unit, div) = match edge {
            0..=1_000 => (0, 1),
            1_001..=1_000_000 => (1, 1_000),
            _ => (2, 1_000_000),
        };
        maps[unit].insert((edge / div).to_string(), json!(share(i)));
    }
    maps[2].insert(">=2000".into(), json!(share(FIO_LAT_EDGES_NS.len())));
    let [ns, us, ms] = maps;
    (Value::Object(ns), Value::Object(us), Value::Object(ms))
}

/// fio's `job options`: the workload's keys as strings.
fn job_options(workload: &Value) -> Value {
    let mut m = Map::new();
    if let Value::Object(w) = workload {
        for (k, v) in w {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            m.insert(k.clone(), Value::String(s));
        }
    }
    Value::Object(m)
}

/// The result as an fio JSON document. `timestamp` is the run's start in
/// Unix seconds (real runs); simulations use 0 so output stays
/// deterministic.
pub fn fio_json(r: &RunResult, timestamp: u64) -> Value {
    let jobs: Vec<Value> = match r.sections.as_slice() {
        [] => {
            let name = r.workload.get("name").and_then(Value::as_str);
            let mut j = job_entry(r, name.unwrap_or("raidlab"), &r.workload, &r.latency);
            j["error"] = json!(first_errno(r, 0..u32::MAX));
            if let Some(f) = r.latency_target.first() {
                latency_search(&mut j, f);
            }
            if let Some(s) = &r.steadystate {
                j["steadystate"] = steadystate(s);
            }
            vec![j]
        }
        // Sections side by side: a job each, each its own reporting group
        // (fio's `new_group`, as export-fio writes them).
        secs => {
            let mut first = 0;
            secs.iter()
                .enumerate()
                .map(|(k, s)| {
                    let mut j = job_entry(r, &s.name, &s.workload, &s.latency);
                    j["groupid"] = json!(k);
                    let n = s
                        .workload
                        .get("numjobs")
                        .and_then(Value::as_u64)
                        .unwrap_or(1) as u32;
                    j["error"] = json!(first_errno(r, first..first + n));
                    first += n;
                    j
                })
                .collect()
        }
    };
    let disk_util: Vec<Value> = r
        .components
        .iter()
        .filter(|c| c.kind != "host" && c.kind != "controller")
        .map(|c| {
            let mut d = json!({
                "name": c.name,
                "util": c.utilization * 100.0,
            });
            if let Some(m) = r
                .real
                .as_ref()
                .and_then(|x| x.members.iter().find(|m| m.path == c.name))
            {
                d["read_ios"] = json!(m.reads);
                d["write_ios"] = json!(m.writes);
            }
            d
        })
        .collect();
    json!({
        "fio version": format!("raidlab-{}", r.raidlab),
        "timestamp": timestamp,
        "timestamp_ms": timestamp * 1000,
        "time": if timestamp == 0 { "simulated".to_string() } else { timestamp.to_string() },
        "jobs": jobs,
        "disk_util": disk_util,
    })
}

/// fio's `error` of a reporting group whose jobs are `jobs`: the errno of
/// the first of them that ended in error (0: none did).
fn first_errno(r: &RunResult, jobs: std::ops::Range<u32>) -> i32 {
    r.errors
        .iter()
        .find(|e| jobs.contains(&e.job))
        .map_or(0, |e| e.errno)
}

/// A job's `latency_target` search in its fio entry, as fio's stat.c
/// writes it: the target in ns, the window in µs.
fn latency_search(j: &mut Value, f: &raidlab_core::depth_search::Found) {
    j["latency_depth"] = json!(f.depth);
    j["latency_target"] = json!(f.target_ns);
    j["latency_target_ns"] = json!(f.target_ns);
    j["latency_percentile"] = json!(f.percentile);
    j["latency_window"] = json!(f.window_ns / 1000);
    j["latency_window_us"] = json!(f.window_ns / 1000);
}

/// A job's `steadystate` stop as fio's stat.c writes it.
fn steadystate(s: &raidlab_core::steadystate::SteadyReport) -> Value {
    let pct = if s.pct { "%" } else { "" };
    let (what, limit) = s.ss.split_once(':').unwrap_or((&s.ss, ""));
    let limit: f64 = limit.trim_end_matches('%').parse().unwrap_or(0.0);
    let mean = |v: &[u64]| v.iter().sum::<u64>() / (v.len().max(1) as u64);
    let raw = s.raw.unwrap_or(0.0);
    json!({
        "ss": format!("{what}:{limit:.6}{pct}"),
        "duration": s.duration_s as u64,
        "attained": u8::from(s.attained),
        "criterion": format!("{:.6}{pct}", s.criterion.unwrap_or(0.0)),
        "max_deviation": if s.slope { 0.0 } else { raw },
        "slope": if s.slope { raw } else { 0.0 },
        "data": {
            "bw": s.bw_bytes,
            "iops": s.iops,
            "bw_mean": mean(&s.bw_bytes),
            "iops_mean": mean(&s.iops),
        },
    })
}

/// One job of fio's `jobs` list: `name`, running `workload`, measured as
/// `latency` says, in run `r`.
fn job_entry(
    r: &RunResult,
    name: &str,
    workload: &Value,
    latency: &Option<raidlab_core::result::LatencyDetail>,
) -> Value {
    let l = latency.clone().unwrap_or_default();
    let (ns, us, ms) = latency_maps(&l);
    let runtime_ms = l.window_ns / 1_000_000;
    json!({
            "jobname": name,
            "groupid": 0,
            "error": 0,
            "eta": 0,
            "elapsed": (r.sim.simulated_s.ceil() as u64).max(1),
            "job options": job_options(workload),
            "read": direction(&l.read, l.window_ns),
            "write": direction(&l.write, l.window_ns),
            "trim": direction(&DirLatency::default(), l.window_ns),
            "sync": {"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}},
            "job_runtime": runtime_ms,
            "usr_cpu": 0.0,
            "sys_cpu": r.host.cpu_util_pct,
            "ctx": 0,
            "majf": 0,
            "minf": 0,
            "latency_ns": ns,
            "latency_us": us,
            "latency_ms": ms,
            "latency_depth": workload.get("iodepth").and_then(Value::as_u64).unwrap_or(1),
            "latency_target": 0,
            "latency_percentile": 100.0,
            "latency_window": 0,
    })
}

/// fio's JSON output of a job file's phases: one job a job section, under
/// its name and in a group of its own (fio reports each stonewalled job in
/// its own group, and each section side by side in its own with
/// `new_group`), and each device's utilisation over the phases together
/// (their busy time over their time).
pub fn fio_json_phases(runs: &[(String, RunResult)], timestamp: u64) -> Value {
    let mut jobs = Vec::new();
    let mut util: Vec<(String, f64)> = Vec::new();
    let mut total_s = 0.0;
    for (name, r) in runs {
        let one = fio_json(r, timestamp);
        for mut j in one["jobs"].as_array().cloned().unwrap_or_default() {
            if r.sections.is_empty() {
                j["jobname"] = json!(name);
            }
            j["groupid"] = json!(jobs.len());
            jobs.push(j);
        }
        let secs = r.sim.simulated_s;
        total_s += secs;
        for d in one["disk_util"].as_array().into_iter().flatten() {
            let name = d["name"].as_str().unwrap_or_default().to_string();
            let busy = d["util"].as_f64().unwrap_or(0.0) * secs;
            match util.iter_mut().find(|(n, _)| *n == name) {
                Some((_, b)) => *b += busy,
                None => util.push((name, busy)),
            }
        }
    }
    let mut doc = runs
        .first()
        .map_or_else(|| json!({}), |(_, r)| fio_json(r, timestamp));
    doc["jobs"] = Value::Array(jobs);
    doc["disk_util"] = util
        .into_iter()
        .map(|(name, busy)| json!({"name": name, "util": busy / total_s.max(f64::MIN_POSITIVE)}))
        .collect();
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::metrics::Metrics;

    #[test]
    fn buckets_and_percentiles_follow_fio() {
        let mut m = Metrics::default();
        for i in 0..1000u64 {
            m.record(i % 2 == 0, 4096, 100_000 + i * 1_000); // 100 us .. 1.1 ms
        }
        let detail = m.detail(2_000_000_000);
        let r = RunResult {
            raidlab: "0".into(),
            engine: "sim".into(),
            topology: "x".into(),
            workload: json!({"rw": "randrw", "bs": 4096}),
            seed: 1,
            summary: m.summary(2.0),
            components: vec![],
            host: Default::default(),
            sim: Default::default(),
            real: None,
            resolved: None,
            intervals: Vec::new(),
            latency: Some(detail),
            sections: Vec::new(),
            errors: Vec::new(),
            latency_target: Vec::new(),
            steadystate: None,
        };
        let j = fio_json(&r, 0);
        let read = &j["jobs"][0]["read"];
        assert_eq!(read["total_ios"], 500);
        assert_eq!(read["io_bytes"], 500 * 4096);
        assert_eq!(
            read["bw"],
            (500.0 * 4096.0 / 2.0 / 1024.0f64).round() as u64
        );
        assert_eq!(read["runtime"], 2000);
        let p99 = read["lat_ns"]["percentile"]["99.000000"].as_u64().unwrap();
        assert!((1_070_000..=1_100_000).contains(&p99), "{p99}");
        assert_eq!(read["lat_ns"]["percentile"].as_object().unwrap().len(), 17);
        // 100..250 us: 150 I/Os; 250..500: 250; 500..750: 250; 750..1000: 250; 1..2 ms: 100.
        let us = &j["jobs"][0]["latency_us"];
        assert!((us["250"].as_f64().unwrap() - 15.0).abs() < 0.5);
        assert!((us["1000"].as_f64().unwrap() - 25.0).abs() < 0.5);
        let ms = &j["jobs"][0]["latency_ms"];
        assert!((ms["2"].as_f64().unwrap() - 10.0).abs() < 0.5);
        assert_eq!(j["jobs"][0]["job options"]["bs"], "4096");
    }
}
