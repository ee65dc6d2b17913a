//! Trace replay from the command line: every reader, in the simulator and
//! the real engine; timed and closed-loop replay; `run --write-iolog`
//! replayed request for request; `trace-stats`; malformed traces.

mod common;
use common::*;

/// One record of a synthetic stream: time (µs), read, offset, length.
#[derive(Clone, Copy)]
struct Rec {
    us: u64,
    read: bool,
    offset: u64,
    len: u64,
}

/// SplitMix64 (Steele, Lea and Flood, 2014): well-spread offsets.
fn splitmix(i: u64) -> u64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A known stream: `n` records, one every `gap_us`, 60 % reads, sizes
/// 4–64 KiB, sector-aligned offsets below 64 MiB.
fn stream(n: u64, gap_us: u64) -> Vec<Rec> {
    (0..n)
        .map(|i| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
            Rec {
                us: i * gap_us,
                read: h % 5 < 3,
                offset: (h % 100_000) * 512,
                len: 4096 << (h % 5),
            }
        })
        .collect()
}

/// The stream written in `format`.
fn write_as(format: &str, recs: &[Rec]) -> String {
    let mut o = String::new();
    match format {
        "iolog2" => o += "fio version 2 iolog\nf add\nf open\n",
        "iolog3" => o += "fio version 3 iolog\n0 f add\n0 f open\n",
        "msr" => o += "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n",
        _ => {}
    }
    for (i, r) in recs.iter().enumerate() {
        let (word, letter) = if r.read {
            ("read", "R")
        } else {
            ("write", "W")
        };
        o += &match format {
            "iolog2" => format!("f {word} {} {}\n", r.offset, r.len),
            "iolog3" => format!("{} f {word} {} {}\n", r.us, r.offset, r.len),
            "blkparse" => format!(
                "  8,0    1 {:8} {:5}.{:09} 4242  Q  {letter} {} + {} [db]\n  8,0    1 {:8} {:5}.{:09} 4242  C  {letter} {} + {} [0]\n",
                2 * i, r.us / 1_000_000, r.us % 1_000_000 * 1000, r.offset / 512, r.len / 512,
                2 * i + 1, r.us / 1_000_000, r.us % 1_000_000 * 1000 + 500, r.offset / 512, r.len / 512
            ),
            "msr" => format!(
                "{},hm,0,{},{},{},120\n",
                128_166_372_000_000_000 + r.us * 10,
                if r.read { "Read" } else { "Write" },
                r.offset,
                r.len
            ),
            "alibaba" => format!("3,{letter},{},{},{}\n", r.offset, r.len, 1_577_808_000_000_000 + r.us),
            "tencent" => format!(
                "{},{},{},{},9\n",
                1_538_323_200 + r.us / 1_000_000,
                r.offset / 512,
                r.len / 512,
                u8::from(!r.read)
            ),
            "spc" => format!(
                "0,{},{},{},{}.{:06}\n",
                r.offset / 512,
                r.len,
                letter.to_lowercase(),
                r.us / 1_000_000,
                r.us % 1_000_000
            ),
            f => panic!("no writer for {f}"),
        };
    }
    if format == "blkparse" {
        o += "CPU1 (8,0):\n Reads Queued:  1,  4KiB\n";
    }
    o
}

const FORMATS: [&str; 7] = [
    "iolog2", "iolog3", "blkparse", "msr", "alibaba", "tencent", "spc",
];

fn replay(v: &serde_json::Value) -> &serde_json::Value {
    &v["sim"]["replay"]
}

#[test]
fn every_format_replays_every_record_in_sim_and_run() {
    let recs = stream(300, 100);
    let bytes: u64 = recs.iter().map(|r| r.len).sum();
    let member = zeros("replay-member.img", 64 << 20);
    for f in FORMATS {
        let path = tmp(&format!("stream.{f}"), &write_as(f, &recs));
        let w = format!("read_iolog={path} replay_no_stall=1 iodepth=4");
        let s = json_of(&["sim", "-t", "x25e", "-w", &w, "--format", "json"]);
        assert_eq!(replay(&s)["format"], f, "{f}: detected");
        assert_eq!(replay(&s)["ios"], 300, "{f}: sim");
        assert_eq!(replay(&s)["bytes"], bytes, "{f}: sim");
        assert_eq!(s["summary"]["ios"].as_u64().unwrap_or(300), 300, "{f}");
        let r = json_of(&[
            "run", "-t", &member, "-w", &w, "--format", "json", "--engine", "psync",
        ]);
        assert_eq!(replay(&r)["ios"], 300, "{f}: run");
        let rd = &r["real"]["read"];
        let wr = &r["real"]["write"];
        assert_eq!(
            rd["bytes"].as_u64().unwrap() + wr["bytes"].as_u64().unwrap(),
            bytes,
            "{f}: run bytes"
        );
        let st = json_of(&["trace-stats", &path, "--json"]);
        let reads = recs.iter().filter(|r| r.read).count() as u64;
        assert_eq!(
            (st["reads"].as_u64(), st["writes"].as_u64()),
            (Some(reads), Some(300 - reads)),
            "{f}"
        );
    }
}

/// A trace's flushes are replayed by both engines, each once the job's
/// I/Os before it are back; its trims are counted and passed over. In the
/// simulator the flushes cost what they cost: a drive whose write cache is
/// on and unprotected (the X25-E) empties it at each, so the same 4 KiB
/// writes with a `sync` after every tenth take longer than without.
#[test]
fn trace_flushes_are_replayed_and_trims_passed_over() {
    let recs: Vec<Rec> = stream(400, 0)
        .into_iter()
        .map(|r| Rec {
            read: false,
            offset: r.offset / 4096 * 4096,
            len: 4096,
            ..r
        })
        .collect();
    let mut with = String::from("fio version 2 iolog\nf add\nf open\n");
    let mut without = with.clone();
    for (i, r) in recs.iter().enumerate() {
        let line = format!("f write {} {}\n", r.offset, r.len);
        with += &line;
        without += &line;
        if i % 10 == 9 {
            with += "f sync 0 0\n";
        }
        if i % 100 == 0 {
            with += &format!("f trim {} 4096\n", r.offset);
        }
    }
    let (with, without) = (
        tmp("flushes.iolog", &with),
        tmp("no-flushes.iolog", &without),
    );
    let sim = |path: &str| {
        let w = format!("read_iolog={path} iodepth=8");
        json_of(&["sim", "-t", "x25e[wc=on]", "-w", &w, "--format", "json"])
    };
    let (s, plain) = (sim(&with), sim(&without));
    assert_eq!(replay(&s)["ios"], 400);
    assert_eq!(replay(&s)["flushes"], 40);
    assert_eq!(replay(&s)["skipped"], 4);
    assert_eq!(replay(&plain)["flushes"], 0);
    let iops = |v: &serde_json::Value| v["summary"]["iops"].as_f64().unwrap();
    assert!(
        iops(&s) < 0.8 * iops(&plain),
        "flushes cost: {} vs {} IOPS",
        iops(&s),
        iops(&plain)
    );
    let member = zeros("flush-member.img", 64 << 20);
    for engine in ["psync", "io_uring"] {
        let w = format!("read_iolog={with} iodepth=8");
        let r = json_of(&[
            "run", "-t", &member, "-w", &w, "--format", "json", "--engine", engine,
        ]);
        assert_eq!(replay(&r)["ios"], 400, "{engine}");
        assert_eq!(replay(&r)["flushes"], 40, "{engine}");
        assert_eq!(replay(&r)["skipped"], 4, "{engine}");
    }
}

#[test]
fn a_run_written_iolog_replays_request_for_request() {
    let member = tmp("iolog-member.img", "");
    std::fs::File::options()
        .write(true)
        .open(&member)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let log = tmp("run.iolog", "");
    let o = raidlab(&[
        "run",
        "-t",
        &member,
        "-w",
        "rw=randrw bs=4k bssplit=4k/50:16k/50 size=8m iodepth=1",
        "--write-iolog",
        &log,
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written: Vec<(bool, u64, u32)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && matches!(f[2], "read" | "write"))
                .then(|| (f[2] == "read", f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect();
    assert!(written.len() > 100);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n"));
    let w =
        raidlab_core::workload::Workload::parse(&format!("read_iolog={log} iodepth=1")).unwrap();
    let topo = raidlab_core::topology::resolve("x25e", &raidlab_core::preset::PresetDb::builtin())
        .unwrap();
    let (res, jobs) = raidlab_sim::simulate_traced(&topo, &w, 1).unwrap();
    let replayed: Vec<(bool, u64, u32)> = jobs[0]
        .iter()
        .map(|io| (io.read, io.offset, io.len))
        .collect();
    assert_eq!(
        replayed, written,
        "the simulator replays the run's requests, in order"
    );
    let bytes: u64 = written.iter().map(|x| x.2 as u64).sum();
    assert_eq!(res.sim.replay.as_ref().unwrap().bytes, bytes);
}

#[test]
fn timed_replay_keeps_the_trace_rate_or_reports_the_lag() {
    // 4 KiB reads every 500 µs: 2,000 IOPS, well within an X25-E.
    let recs: Vec<Rec> = (0..4000)
        .map(|i| Rec {
            us: i * 500,
            read: true,
            offset: (i * 7919 % 50_000) * 4096,
            len: 4096,
        })
        .collect();
    let path = tmp("timed.alibaba", &write_as("alibaba", &recs));
    let s = json_of(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        &format!("read_iolog={path} iodepth=4"),
        "--format",
        "json",
    ]);
    let iops = s["summary"]["iops"].as_f64().unwrap();
    assert!(
        (iops / 2000.0 - 1.0).abs() < 0.02,
        "{iops} IOPS against the trace's 2,000"
    );
    assert_eq!(replay(&s)["kept_up"], true);
    // 400 times faster (800,000 IOPS): far past the drive; the lag shows.
    let s = json_of(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        &format!("read_iolog={path} iodepth=4 replay_time_scale=40000"),
        "--format",
        "json",
    ]);
    assert_eq!(replay(&s)["kept_up"], false);
    assert!(
        replay(&s)["lag_p99_us"].as_f64().unwrap() > 1000.0,
        "{}",
        replay(&s)
    );
    assert!(s["summary"]["iops"].as_f64().unwrap() < 200_000.0);
}

#[test]
fn closed_loop_replay_matches_the_synthetic_job() {
    // 4 KiB random reads over 256 MiB, as fio's randread would draw them.
    let recs: Vec<Rec> = (0..65_536u64)
        .map(|i| Rec {
            us: i,
            read: true,
            offset: (splitmix(i) % 65_536) * 4096,
            len: 4096,
        })
        .collect();
    let path = tmp("closed.msr", &write_as("msr", &recs));
    let t = json_of(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        &format!("read_iolog={path} replay_no_stall=1 iodepth=8"),
        "--format",
        "json",
    ]);
    let s = json_of(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "rw=randread bs=4k iodepth=8 size=256m",
        "--format",
        "json",
    ]);
    let (a, b) = (
        t["summary"]["iops"].as_f64().unwrap(),
        s["summary"]["iops"].as_f64().unwrap(),
    );
    assert!(
        (a / b - 1.0).abs() < 0.05,
        "replay {a} IOPS against synthetic {b}"
    );
}

#[test]
fn malformed_traces_name_file_line_and_field() {
    let recs = stream(5, 10);
    for f in FORMATS {
        let good = write_as(f, &recs);
        let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
        // Damage the last record's offset field.
        let i = lines
            .iter()
            .rposition(|l| !l.contains(" C ") && !l.contains("Queued") && !l.starts_with("CPU"))
            .unwrap();
        let lno = i + 1;
        lines[i] = lines[i]
            .replacen(&(recs[4].offset / 512).to_string(), "12x", 1)
            .replacen(&recs[4].offset.to_string(), "12x", 1);
        let path = tmp(&format!("bad.{f}"), &(lines.join("\n") + "\n"));
        let w = format!("read_iolog={path} trace_format={f}");
        assert_input_error(&["sim", "-t", "x25e", "-w", &w], &format!("{path}:{lno}:"));
        assert_input_error(&["trace-stats", &path], &format!("{path}:{lno}:"));
    }
    let path = tmp("bad.unknown", "hello world\n");
    assert_input_error(
        &["sim", "-t", "x25e", "-w", &format!("read_iolog={path}")],
        "not a trace format",
    );
    assert_input_error(
        &["sim", "-t", "x25e", "-w", "replay_scale=2"],
        "needs read_iolog=FILE",
    );
    assert_input_error(
        &["sim", "-t", "x25e", "-w", "read_iolog=/nonexistent/trace"],
        "/nonexistent/trace:0: file:",
    );
}

#[test]
fn trace_stats_characterises_and_writes_a_job_that_runs() {
    let recs = stream(1000, 50);
    let path = tmp("stats.spc", &write_as("spc", &recs));
    let st = json_of(&["trace-stats", &path, "--json"]);
    assert_eq!(st["format"], "spc");
    let iops = st["iops"].as_f64().unwrap();
    assert!((iops - 1000.0 / (999.0 * 50e-6)).abs() < 1.0, "{iops}");
    let o = raidlab(&["trace-stats", &path, "--as-job"]);
    assert!(o.status.success());
    let job = tmp("stats.fio", std::str::from_utf8(&o.stdout).unwrap());
    let s = json_of(&["sim", "-t", "x25e", "--job", &job, "--format", "json"]);
    assert_eq!(s["workload"]["rw"], "randrw");
}

#[test]
fn a_sustained_trace_keeps_its_rate_in_every_interval() {
    // 4 KiB reads and writes at a steady 4,000 IOPS (one every 250 µs) for
    // 2 s, logged in 100 ms intervals: each interval holds 400 of them.
    let recs: Vec<Rec> = (0..8000)
        .map(|i| Rec {
            us: i * 250,
            read: i % 3 != 0,
            offset: (splitmix(i) % 100_000) * 4096,
            len: 4096,
        })
        .collect();
    let path = tmp("steady.iolog3", &write_as("iolog3", &recs));
    let w = format!("read_iolog={path} iodepth=8 log_avg_msec=100");
    let s = json_of(&[
        "sim",
        "-t",
        "raid5(4*s3500-800)",
        "-w",
        &w,
        "--format",
        "json",
    ]);
    let iv = s["intervals"].as_array().expect("a timeline");
    assert!(iv.len() >= 19, "{} intervals", iv.len());
    for i in iv {
        let iops = i["iops"].as_f64().unwrap();
        assert!(
            (iops / 4000.0 - 1.0).abs() <= 0.02,
            "interval {i}: {iops} IOPS"
        );
    }
    let csv = raidlab(&[
        "sim",
        "-t",
        "raid5(4*s3500-800)",
        "-w",
        &w,
        "--format",
        "timeline-csv",
    ]);
    let text = String::from_utf8(csv.stdout).unwrap();
    assert!(
        text.starts_with("t_s,iops,mb_s,lat_mean_us,lat_max_us\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), iv.len() + 1);
}

#[test]
fn plan_ranks_arrays_for_a_trace_and_sweep_varies_traces() {
    let recs = stream(2000, 100);
    let a = tmp("plan.alibaba", &write_as("alibaba", &recs));
    let reads: Vec<Rec> = recs.iter().map(|r| Rec { read: true, ..*r }).collect();
    let b = tmp("plan-reads.alibaba", &write_as("alibaba", &reads));
    let p = json_of(&[
        "plan",
        "--trace",
        &a,
        "--capacity",
        "400g",
        "--drives",
        "s3500-800,x25e",
        "--levels",
        "raid5,raid10",
        "--top",
        "3",
        "--format",
        "json",
    ]);
    let rows = p["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    // Rows measured in steady state rank before those that never reached
    // it (plan.rs `rank`), and by IOPS within each.
    let ranked: Vec<(bool, f64)> = rows
        .iter()
        .map(|r| (r["steady"].as_bool().unwrap(), r["iops"].as_f64().unwrap()))
        .collect();
    assert!(
        ranked
            .windows(2)
            .all(|w| (w[0].0 && !w[1].0) || w[0].1 >= w[1].1),
        "ranked (steady, iops): {ranked:?}"
    );
    let sw = raidlab(&[
        "sweep",
        "-t",
        "x25e",
        "-w",
        "read_iolog={t} replay_no_stall=1 iodepth=8",
        "--vary",
        &format!("t={a},{b}"),
        "--format",
        "json",
    ]);
    assert!(sw.status.success(), "{}", stderr(&sw));
    let v: serde_json::Value = serde_json::from_slice(&sw.stdout).unwrap();
    let text = v.to_string();
    assert!(
        text.contains("plan-reads.alibaba") && text.contains("plan.alibaba"),
        "{text}"
    );
}

#[test]
fn validate_rows_may_name_a_trace_beside_the_csv() {
    // 2,000 reads a second for 1 s: a row measured at that rate.
    let recs: Vec<Rec> = (0..2000)
        .map(|i| Rec {
            us: i * 500,
            read: true,
            offset: (splitmix(i) % 50_000) * 4096,
            len: 4096,
        })
        .collect();
    tmp("row.alibaba", &write_as("alibaba", &recs));
    let csv = tmp(
        "trace-rows.csv",
        "id,source,ref,topology,workload,metric,value,note\n\
         t1,test,here,x25e,read_iolog=row.alibaba iodepth=4,iops,2000,\n",
    );
    let v = json_of(&["validate", &csv, "--format", "json"]);
    let text = v.to_string();
    assert!(
        v["failed"].as_array().is_none_or(|f| f.is_empty()),
        "{text}"
    );
    let rows = v["rows"].as_array().expect("rows");
    let sim = rows[0]["simulated"]
        .as_f64()
        .or_else(|| rows[0]["sim"].as_f64())
        .expect("a simulated value");
    assert!((sim / 2000.0 - 1.0).abs() < 0.02, "{sim}");
}
