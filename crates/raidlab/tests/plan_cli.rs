//! `raidlab plan` from the command line: rows reproduced by `sim`, bad
//! questions refused in one line, shards merging to the unsharded plan.

mod common;
use common::*;

/// `plan` ranks configurations, and every row it prints is reproduced by
/// `sim` with the row's expression and workload.
#[test]
fn plan_rows_are_reproduced_by_sim() {
    let prices = tmp(
        "prices.toml",
        "[s3500-480]\nbase = \"s3500-480\"\nprice = 300\n[megaraid9361]\nbase = \"megaraid9361\"\nprice = 600\n",
    );
    let v = json_of(&[
        "plan",
        "-w",
        "rw=randrw rwmixread=70 bs=8k iodepth=16 numjobs=4 runtime=1",
        "--capacity",
        "900g",
        "--survive",
        "1",
        "--drives",
        "s3500-480",
        "--controllers",
        "none,megaraid9361",
        "--max-drives",
        "4",
        "--levels",
        "raid5,raid10",
        "--op",
        "0,20",
        "--top",
        "3",
        "--format",
        "json",
        "--presets",
        &prices,
    ]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["rank"], i + 1);
        assert!(r["usable_bytes"].as_u64().unwrap() >= 900_000_000_000);
        assert_eq!(r["survives"], 1);
        assert!(r["cost"].as_f64().unwrap() >= 4.0 * 300.0, "{r}");
        assert!(r["why"].as_str().is_some_and(|w| !w.is_empty()));
        let op = r["op_pct"].as_u64().unwrap();
        assert!(op == 0 || op == 20);
        assert_eq!(
            r["topology"].as_str().unwrap().contains("[op=20%]"),
            op == 20
        );
        let o = sim_row(r, &["--presets", &prices]);
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(s["summary"]["iops"], r["iops"], "{}", r["topology"]);
    }
    let best = rows[0]["iops"].as_f64().unwrap();
    assert!(rows
        .iter()
        .all(|r| r["iops"].as_f64().unwrap() <= best * 1.005));
    let csv = raidlab(&[
        "plan",
        "-w",
        "rw=randread bs=4k iodepth=8 runtime=0.5",
        "--capacity",
        "400g",
        "--drives",
        "s3500-480",
        "--max-drives",
        "3",
        "--format",
        "csv",
    ]);
    assert!(
        csv.status.success(),
        "{}",
        String::from_utf8_lossy(&csv.stderr)
    );
    assert!(String::from_utf8_lossy(&csv.stdout).starts_with("rank,topology,workload,usable_bytes"));
}

/// `plan --host` runs every configuration on a host profile with its
/// software RAID tables (`[impls.*]`), and the table labels every column
/// over its values: with `--survive 1`, the degraded IOPS and rebuild
/// hours, then the bottleneck.
#[test]
fn plan_table_labels_every_column_on_a_host_profile() {
    let args = [
        "plan",
        "-w",
        "rw=randread bs=8k iodepth=16 numjobs=2 runtime=0.2",
        "--capacity",
        "1t",
        "--survive",
        "1",
        "--drives",
        "pm9a3",
        "--max-drives",
        "3",
        "--levels",
        "raid1,raid5",
        "--host",
        "host2020",
        "--top",
        "2",
    ];
    let out = raidlab(&args);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Before it simulates, one line says how much it will look at.
    let first_line = stderr(&out).lines().next().unwrap_or_default().to_string();
    assert!(
        first_line.starts_with("plan: ") && first_line.contains(" configurations to consider, "),
        "{first_line}"
    );
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let v = json_of(&json_args);
    let first = &v["rows"][0];
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("rank"))
        .expect("a header line");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .expect("the first row");
    // Right-aligned numbers end where their labels end; the bottleneck
    // starts where its label starts.
    let rebuild = format!(
        "{:.1}",
        first["rebuild_hours"].as_f64().expect("rebuild hours")
    );
    let degraded = format!(
        "{:.0}",
        first["degraded_iops"].as_f64().expect("degraded IOPS")
    );
    let end_of = |line: &str, s: &str| line.find(s).map(|i| i + s.len());
    assert_eq!(
        end_of(header, "rebuild h"),
        end_of(row, &format!(" {rebuild}  ")).map(|e| e - 2),
        "{header}\n{row}"
    );
    assert_eq!(
        end_of(header, "degr IOPS"),
        end_of(row, &format!(" {degraded} ")).map(|e| e - 1),
        "{header}\n{row}"
    );
    let bottleneck = first["bottleneck"].as_str().expect("a bottleneck");
    assert_eq!(
        header.find("limited by"),
        row.find(bottleneck),
        "{header}\n{row}"
    );
}

#[test]
fn plan_refuses_bad_questions_in_one_line() {
    let w = "rw=randread bs=4k runtime=0.1";
    let weighted = format!("{w}@zero");
    // (workload, capacity, drives, other arguments, what the message names)
    let cases: [(&str, &str, &str, &[&str], &str); 8] = [
        (w, "1t", "megaraid9361", &[], "not a drive preset"),
        (
            w,
            "1t",
            "x25e",
            &["--controllers", "x25e"],
            "not a controller preset",
        ),
        (&weighted, "1t", "x25e", &[], "weight"),
        (w, "lots", "x25e", &[], "--capacity"),
        (w, "1t", "x25e", &["--max-drives", "100000"], "--max-drives"),
        (w, "1t", "x25e", &["--levels", "raid7"], "--levels"),
        (
            w,
            "900t",
            "x25e",
            &["--max-drives", "4"],
            "no configuration",
        ),
        ("rw=sideways", "1t", "x25e", &[], "sideways"),
    ];
    for (wl, cap, drives, more, want) in cases {
        let mut args = vec!["plan", "-w", wl, "--capacity", cap, "--drives", drives];
        args.extend_from_slice(more);
        assert_input_error(&args, want);
    }
}

/// `plan --shard i/n` on each of n machines and `merge` of the shard files
/// print byte for byte what the unsharded plan prints; a merge of shards
/// that are not every shard of one plan is refused in one line.
#[test]
fn sharded_plans_merge_to_the_unsharded_output() {
    let base = [
        "plan",
        "-w",
        "rw=randwrite bs=8k iodepth=16 numjobs=2 runtime=0.2",
        "--capacity",
        "300g",
        "--drives",
        "s3500-480",
        "--controllers",
        "none,megaraid9361",
        "--max-drives",
        "4",
        "--max-controllers",
        "1",
        "--top",
        "2",
    ];
    let whole = raidlab(&base);
    assert!(whole.status.success(), "{}", stderr(&whole));
    let dir = std::env::temp_dir().join(format!("raidlab-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = |i: usize| dir.join(format!("s{i}.json")).display().to_string();
    for i in 1..=2 {
        let (shard, out) = (format!("{i}/2"), file(i));
        let mut args = base.to_vec();
        args.extend_from_slice(&["--shard", &shard, "-o", &out]);
        let o = raidlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let merged = raidlab(&["merge", &file(2), &file(1)]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole.stdout)
    );
    assert_input_error(&["merge", &file(1)], "2/2 missing");
    assert_input_error(&["merge", &file(1), &file(1)], "given twice");
    let other = tmp(
        "other-shard.json",
        &std::fs::read_to_string(file(2))
            .expect("read")
            .replace("\"top\": 2", "\"top\": 3"),
    );
    assert_input_error(&["merge", &file(1), &other], "another plan");
    let sweep = tmp("slice.csv", "a,b\n1,2\n");
    assert_input_error(&["merge", &file(1), &sweep], "mix");
    assert_input_error(&[&base[..], &["--shard", "3/2"]].concat(), "--shard");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A workload with one of fio's guards (`max_latency`): configurations
/// whose jobs trip it do not meet the question and are counted apart, and
/// the rows `plan` ranks run clean under `sim`.
#[test]
fn plan_drops_configurations_that_trip_the_workloads_guard() {
    let v = json_of(&[
        "plan",
        "-w",
        "rw=randwrite bs=4k iodepth=32 max_latency=5ms",
        "--capacity",
        "100g",
        "--survive",
        "1",
        "--drives",
        "x25e,s3500-800",
        "--controllers",
        "none",
        "--format",
        "json",
    ]);
    assert!(v["plan"]["tripped_a_guard"].as_u64().unwrap() >= 1, "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert!(!rows.is_empty(), "{v}");
    for r in rows.iter().take(3) {
        let o = sim_row(r, &[]);
        assert!(o.status.success(), "{}: {}", r["topology"], stderr(&o));
    }
}

/// `raidlab sim` of plan row `r`'s expression and workload, JSON out,
/// with `extra` arguments.
fn sim_row(r: &serde_json::Value, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "sim",
        "-t",
        r["topology"].as_str().unwrap(),
        "-w",
        r["workload"].as_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    raidlab(&args)
}
