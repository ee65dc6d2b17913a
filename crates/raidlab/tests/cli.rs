//! Command-line tests on the built binary.

mod common;
use common::*;

#[test]
fn bad_input_gives_one_line_and_status_2() {
    let w = "rw=randread bs=4k runtime=0.01";
    // (topology, workload, what the message names)
    for (t, wl, want) in [
        ("nosuchdrive", w, "unknown preset 'nosuchdrive'"),
        ("raid0(x25e,", w, "column 12"),
        ("raid5(2*x25e)", w, "raid5 with 2 active members"),
        ("raid6(3*x25e)", w, "raid6 with 3 active members"),
        ("raid0[stripe=100k](2*x25e)", w, "power of two"),
        ("x25e", "rw=read bs=64k size=32k", "larger than the span"),
        ("x25e", "rw=randread colour=blue", "unknown key 'colour'"),
        ("x25e", "rw=sideways", "rw=sideways"),
        ("adaptec5085(raid0(9*x25e))", w, "8 ports but 9 devices"),
        ("x25e[speed=1]", w, "unknown option 'speed'"),
        ("s3500-800", "rw=read bs=512 rate_iops=1", "at most 1e9 s"),
        ("x25e", "rw=read bs=1m rate=1k", "at most 60 s"),
        ("x25e", "rw=read rate_process=bursty", "rate_process=bursty"),
        ("x25e", "rw=read max_latency=0", "max_latency=0"),
        (
            "x25e",
            "rw=read max_latency=1,2,3",
            "trims are not modelled",
        ),
        ("x25e", "rw=read rate_iops_min=0.5", "rate_iops_min=0.5"),
        ("x25e", "rw=read rate_min=1m rate_cycle=0", "rate_cycle=0"),
        ("x25e", "rw=read latency_target=0", "latency_target=0"),
        (
            "x25e",
            "rw=read latency_target=1ms latency_percentile=101",
            "latency_percentile=101",
        ),
        ("x25e", "rw=read numjobs=2 latency_target=1ms", "numjobs=1"),
        ("x25e", "rw=read ss=lat:1% ss_dur=10", "'lat' is not iops"),
        (
            "x25e",
            "rw=read file_service_type=zipf:1.2",
            "a skewed choice of volume is not modelled",
        ),
        ("x25e", "rw=read ss=iops:1% ss_dur=1", "samples a window"),
        (
            "x25e",
            "rw=read bsrange=16k-4k",
            "the smallest size comes first",
        ),
        ("x25e", "rw=read bsrange=512-64m", "131072 sizes"),
        (
            "x25e",
            "rw=read bsrange=4k-8k bssplit=4k/100",
            "one of bs=R,W, bsrange and bssplit",
        ),
        ("raid10[layout=ls](4*x25e)", w, "raid10 takes n2"),
        (
            "host[kernel=banana](x25e)",
            w,
            "kernel=banana: expected a Linux release",
        ),
        (
            "raid1[bitmap=external](2*x25e)",
            w,
            "needs bitmap_device=PRESET",
        ),
        (
            "raid5[consistency=ppl](4*x25e)",
            w,
            "came in Linux 4.12; this host runs 3.10",
        ),
        (
            "host[kernel=3.11](raid5[group_thread_cnt=2](4*x25e))",
            w,
            "came in Linux 3.12; this host runs 3.11",
        ),
        (
            "raid1[bitmap=internal,bitmap_device=x25e](2*x25e)",
            w,
            "bitmap_device is for an external bitmap",
        ),
        (
            "raid1[bitmap_device=nosuch](2*x25e)",
            w,
            "unknown preset 'nosuch'",
        ),
        (
            "raid1[bitmap=sideways](2*x25e)",
            w,
            "expected internal, external or none",
        ),
        (
            "host[kernel=6](x25e)",
            w,
            "kernel=6: expected a Linux release",
        ),
        (
            "raid5[layout=f2](4*x25e)",
            w,
            "layout=f2: expected left-symmetric",
        ),
        (
            "adaptec5085(raid10[layout=f2](4*x25e))",
            w,
            "layout=f2 is md's own RAID 10 layout; adaptec5085",
        ),
        (
            "host(raid10[layout=o2,impl=lvm](4*x25e))",
            w,
            "layout=o2 is md's own",
        ),
        (
            "raid10[layout=f2](x25e,missing,missing,x25e)",
            w,
            "its data is gone",
        ),
        (
            "raid5[stripe=4k](3*x25e)",
            "rw=randread bs=64m iodepth=65536 runtime=0.05",
            "65536 I/Os in flight",
        ),
    ] {
        assert_input_error(&["sim", "-t", t, "-w", wl], want);
    }
    assert_input_error(&["sim", "-t", "x25e"], "give a workload");
    assert_input_error(
        &["sim", "-t", "@/nonexistent/file", "-w", w],
        "cannot read topology file",
    );
    let job = tmp("bad.fio", "[global]\nbs=4k\n[job]\nrw=randread\nflow=1\n");
    assert_input_error(
        &["sim", "-t", "x25e", "--job", &job],
        "unsupported fio option 'flow'",
    );
    assert_input_error(&["presets", "nope"], "unknown preset 'nope'");
    let bad = tmp("bad.toml", "[d]\nbase = \"x25e\"\nwarp = 9\n");
    assert_input_error(&["presets", "--presets", &bad], "warp");
}

#[test]
fn json_is_the_only_thing_on_stdout() {
    let o = raidlab(&[
        "sim",
        "-t",
        "adaptec5085(raid5[stripe=64k](5*x25e))",
        "-w",
        "preset=light rw=randread bs=4k runtime=0.05",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    for k in [
        "raidlab",
        "engine",
        "topology",
        "workload",
        "seed",
        "summary",
        "components",
        "host",
        "sim",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for k in [
        "iops",
        "mbps",
        "lat_avg_ms",
        "lat_max_ms",
        "lat_p50_ms",
        "lat_p99_ms",
        "lat_p999_ms",
        "read",
        "write",
    ] {
        assert!(v["summary"].get(k).is_some(), "missing summary.{k}");
    }
    assert_eq!(v["engine"], "sim");
    assert!(v["summary"]["iops"].as_f64().unwrap() > 1000.0);
    assert!(v["host"]["cpu_util_pct"].is_number());
    for k in ["simulated_s", "wall_s", "events", "host_ios"] {
        assert!(v["sim"][k].is_number(), "sim.{k}");
    }
    assert!(v["components"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["kind"] == "controller"));
}

#[test]
fn table_output_job_file_topology_file_and_output_file() {
    let topo = tmp(
        "t.expr",
        "# two SSDs striped\nadaptec5085(\n  raid0[stripe=64k](2*x25e)  # on one controller\n)\n",
    );
    let job = tmp("j.fio", "[global]\nioengine=libaio\ndirect=1\n[randread]\nrw=randread\nbs=4k\niodepth=32\nruntime=0.05\n");
    let out = tmp("out.json", "");
    let o = raidlab(&[
        "sim",
        "-t",
        &format!("@{topo}"),
        "--job",
        &job,
        "--format",
        "json",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["workload"]["iodepth"], 32);
    // The same job without an engine is on fio's default, psync, which fio
    // caps at one I/O in flight: so does raidlab, and it says so.
    let sync_job = tmp(
        "sync.fio",
        "[randread]\nrw=randread\nbs=4k\niodepth=32\nruntime=0.05\n",
    );
    let o = raidlab(&["sim", "-t", "x25e", "--job", &sync_job, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ioengine=psync does one I/O at a time"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["workload"]["iodepth"], 1);
    let o = raidlab(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "preset=light rw=randread bs=4k runtime=0.05",
    ]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("IOPS") && s.contains("x25e#0") && s.contains("bottleneck"),
        "{s}"
    );
}

#[test]
fn presets_list_dump_and_user_presets() {
    let o = raidlab(&["presets"]);
    let s = String::from_utf8_lossy(&o.stdout);
    for n in [
        "x25e",
        "mtron7535",
        "s3500-800",
        "hdd-sas10k",
        "adaptec5085",
        "areca1680",
        "megaraid9265",
        "megaraid9365",
        "hba",
        "hba9500",
    ] {
        assert!(s.contains(n), "{n} missing from the list");
    }
    let o = raidlab(&["presets", "x25e", "--format", "toml"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("read_us = 55") && s.contains("petrov2010"),
        "{s}"
    );
    let user = tmp("mine.toml", "[my-nvme]\nbase = \"s3500-800\"\ndescription = \"my NVMe drive\"\nlink_mbps = 3200\nqueue_depth = 1024\nfw_cores = 8\n");
    let o = raidlab(&["presets", "--presets", &user]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("my-nvme"));
    let o = raidlab(&["presets", "my-nvme", "--format", "toml", "--presets", &user]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("link_mbps = 3200"));
    let o = raidlab(&[
        "sim",
        "--presets",
        &user,
        "-t",
        "raid0(2*my-nvme)",
        "-w",
        "rw=randread bs=4k iodepth=64 runtime=0.05",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["components"][0]["name"], "my-nvme#0");
}

#[test]
fn seeds_reproduce() {
    let args = [
        "sim",
        "-t",
        "raid5(4*x25e)",
        "-w",
        "rw=randwrite bs=4k iodepth=8 runtime=0.05 state=steady",
        "--format",
        "json",
        "--seed",
        "7",
    ];
    let strip = |o: Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["sim"]["wall_s"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip(raidlab(&args)), strip(raidlab(&args)));
}

#[test]
fn validate_reports_rows_summary_and_failures() {
    let csv = tmp(
        "v.csv",
        "id,source,ref,topology,workload,metric,value,note\n\
         a,doc,T1,x25e,preset=light rw=randread bs=4k runtime=0.05,iops,35000,\n\
         b,doc,T1,x25e,preset=latency rw=randread bs=4k runtime=0.05,lat_avg_ms,0.16,\n\
         c,doc,T2,\"raid5(2*x25e)\",rw=randread bs=4k runtime=0.05,iops,100,impossible on purpose\n",
    );
    let o = raidlab(&["validate", &csv, "--format", "json"]);
    // The report is out, and a file with a row that cannot be simulated
    // is bad input: exit 2 with one line naming it.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("1 row(s) could not be simulated") && err.contains(" c: "),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
    for k in ["id", "metric", "published", "simulated", "error_pct"] {
        assert!(v["rows"][0].get(k).is_some(), "rows[].{k}");
    }
    assert_eq!(v["summary"]["rows"], 2);
    assert!(v["summary"]["median_abs_error_pct"].as_f64().unwrap() < 50.0);
    assert_eq!(v["summary"]["failed"][0]["id"], "c");
    assert!(v["summary"]["failed"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("raid5"));
    let o = raidlab(&["validate", &csv, "--filter", "T1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("median") && !s.contains("failed"), "{s}");
}

#[test]
fn validate_and_reproduce_reject_bad_input() {
    let bad = tmp(
        "bad.csv",
        "id,source,ref,topology,workload,metric,value,note\na,s,T,x25e,rw=read,speed,1,\n",
    );
    assert_input_error(&["validate", &bad], "metric 'speed'");
    let bad = tmp("bad2.csv", "nonsense\n");
    assert_input_error(&["validate", &bad], "header");
    assert_input_error(&["validate", "/nonexistent.csv"], "cannot read CSV file");
    assert_input_error(
        &["reproduce", "nature2024"],
        "unknown document 'nature2024'",
    );
}

#[test]
fn reproduce_lays_out_a_document() {
    let o = raidlab(&["reproduce", "admin2015", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tables = v["tables"].as_array().unwrap();
    assert!(tables.iter().any(|t| t["ref"] == "Figure 5"));
    assert!(tables
        .iter()
        .all(|t| !t["cells"].as_array().unwrap().is_empty()));
    let o = raidlab(&["reproduce", "admin2015"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("admin2015 Figure 5") && s.contains("published simulated err"),
        "{s}"
    );
}

#[test]
fn offsets_keep_each_job_to_its_region_as_fio_does() {
    let (dir, m) = member_paths("offsets", 1);
    let img = &m[0];
    std::fs::File::create(img)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    // Two jobs of 1 MiB, at 2 MiB and 6 MiB: the rest of the file untouched.
    let wl = "rw=write bs=64k numjobs=2 size=1m offset=2m offset_increment=4m";
    let o = raidlab(&["run", "-t", img, "-w", wl, "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let data = std::fs::read(img).unwrap();
    for (mib, chunk) in data.chunks(1 << 20).enumerate() {
        let written = chunk
            .chunks(4096)
            .filter(|b| b.iter().any(|&x| x != 0))
            .count();
        let want = if mib == 2 || mib == 6 { 256 } else { 0 };
        assert_eq!(written, want, "MiB {mib}");
    }
    // A job that would start past the end is refused, in both engines.
    let past = "rw=read numjobs=3 offset_increment=4m";
    assert_input_error(&["run", "-t", img, "-w", past], "past the volume's end");
    assert_input_error(
        &[
            "sim",
            "-t",
            "x25e",
            "-w",
            "rw=read numjobs=5 offset_increment=25%",
        ],
        "job 4 would start",
    );
    assert_input_error(
        &["sim", "-t", "x25e", "-w", "offset=1000"],
        "multiple of 512",
    );
    // A fio job file's even split of a drive among its jobs.
    let job = tmp(
        "split.fio",
        "[global]\nruntime=1\ntime_based\n[seq]\nrw=read\nbs=128k\nnumjobs=4\nsize=25%\noffset_increment=25%\n",
    );
    let v = json_of(&["sim", "-t", "x25e", "--job", &job, "--format", "json"]);
    assert_eq!(
        v["workload"]["offset_increment"], "25%",
        "{}",
        v["workload"]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn run_rejects_bad_input_with_status_2() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-cli-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a.img").display().to_string();
    let b = dir.join("b.img").display().to_string();
    let wl = "rw=randread bs=4k";
    assert_input_error(
        &[
            "run",
            "-t",
            &format!("adaptec5085(raid0({a},{b}))"),
            "-w",
            wl,
        ],
        "controller",
    );
    assert_input_error(
        &["run", "-t", &format!("raid0({a},{b})"), "-w", wl],
        "does not exist",
    );
    assert_input_error(&["run", "-t", "raid0(x25e, ./b)", "-w", wl], "not a path");
    assert_input_error(
        &["run", "-t", &format!("host({a}, {b})"), "-w", wl],
        "a real run drives one volume",
    );
    assert_input_error(
        &[
            "run",
            "-t",
            &format!("raid5({a},missing,missing)"),
            "-w",
            wl,
        ],
        "more than it can lose",
    );
    assert_input_error(
        &[
            "run",
            "-t",
            &format!("raid0({a},{b})"),
            "-w",
            "rw=randread bs=4k state=steady",
        ],
        "state=",
    );
    assert_input_error(&["run", "-t", &a, "-w", "rw=sideways"], "rw=sideways");
    assert_input_error(
        &["run", "-t", &a, "-w", "rw=randread rate_iops=1,2,3"],
        "rate_iops=",
    );
    assert_input_error(
        &[
            "run",
            "-t",
            &dir.display().to_string(),
            "-w",
            "rw=write size=1m",
        ],
        "neither",
    );
    // An existing file carrying a file-system signature is not overwritten.
    let mut xfs = vec![0u8; 1 << 20];
    xfs[..4].copy_from_slice(b"XFSB");
    std::fs::write(&a, &xfs).unwrap();
    assert_input_error(&["run", "-t", &a, "-w", "rw=write bs=4k size=64k"], "XFS");
    let o = raidlab(&[
        "run",
        "-t",
        &a,
        "-w",
        "rw=write bs=4k size=64k",
        "--force",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["engine"], "real");
    assert_eq!(v["real"]["write"]["ios"], 16);
    assert_eq!(v["real"]["members"][0]["write_bytes"], 65536);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_verify_failures_exit_1_and_export_fio_round_trips() {
    let (dir, m) = member_paths("cli-verify", 3);
    let t = format!("raid5[stripe=16k]({})", m.join(","));
    let o = raidlab(&[
        "run",
        "-t",
        &t,
        "-w",
        "rw=write bs=32k size=1m",
        "--verify",
        "--engine",
        "psync",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Reading back what was written checks out; never-written space does not.
    let o = raidlab(&[
        "run",
        "-t",
        &t,
        "-w",
        "rw=randread bs=4k size=1m",
        "--verify",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Wipe two members' data, keeping their md superblocks and bitmaps (in
    // the 1 MiB before the data): RAID 5 cannot repair that from parity.
    for p in &m[..2] {
        let mut b = std::fs::read(p).unwrap();
        b[1 << 20..].fill(0);
        std::fs::write(p, b).unwrap();
    }
    let o = raidlab(&["run", "-t", &t, "-w", "rw=read bs=16k size=1m", "--verify"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("verify:"), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("no verify header"));
    // A failure names the member file and offset holding the bad unit.
    assert!(
        out.lines()
            .any(|l| l.contains("no verify header") && l.contains(&format!("{} offset", m[0]))),
        "{out}"
    );

    let wl = "rw=randrw bssplit=4k/60:64k/40 rwmixread=70 iodepth=8 numjobs=2 size=1g runtime=5 ramp_time=1 random_distribution=zipf:1.2 thinktime=10";
    let o = raidlab(&["export-fio", "-w", wl, "--filename", "/dev/sdz"]);
    assert!(o.status.success());
    let job = String::from_utf8_lossy(&o.stdout).into_owned();
    for line in [
        "ioengine=io_uring",
        "direct=1",
        "filename=/dev/sdz",
        "bssplit=4k/60:64k/40",
        "time_based=1",
        "norandommap=1",
    ] {
        assert!(job.contains(line), "{line} in {job}");
    }
    // raidlab reads the exported job back as the same workload.
    let path = tmp("exported.fio", &job);
    let a = raidlab(&["sim", "-t", "x25e", "--job", &path, "--format", "json"]);
    let b = raidlab(&["sim", "-t", "x25e", "-w", wl, "--format", "json"]);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    assert_eq!(a["workload"], b["workload"]);
    assert_eq!(a["summary"], b["summary"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inputs_that_would_exhaust_memory_are_refused_up_front() {
    let w = "rw=randread bs=4k runtime=0.01";
    assert_input_error(
        &[
            "sim",
            "-t",
            "x25e",
            "-w",
            "numjobs=4096 iodepth=65536 rw=randread",
        ],
        "outstanding I/Os; at most 1048576",
    );
    assert_input_error(&["sim", "-t", "@/dev/zero", "-w", w], "larger than 1 MiB");
    assert_input_error(
        &["sim", "-t", "x25e", "--job", "/dev/zero"],
        "larger than 1 MiB",
    );
    // 160,000 leaves: refused by the device bound at once, not after a
    // rescan of the text per column.
    let big = format!("raid0({})", vec!["x25e"; 160_000].join(","));
    let path = tmp("big.expr", &big);
    let t0 = std::time::Instant::now();
    assert_input_error(
        &["sim", "-t", &format!("@{path}"), "-w", w],
        "more than 1024 devices",
    );
    assert!(t0.elapsed().as_secs() < 10, "refused in {:?}", t0.elapsed());
    // 400 SSDs in steady state would need more model memory than the bound.
    let many = format!("raid0({})", vec!["adaptec5085(8*x25e)"; 50].join(","));
    assert_input_error(
        &[
            "sim",
            "-t",
            &many,
            "-w",
            "rw=randwrite state=steady runtime=0.01",
        ],
        "needs more than its bound",
    );
    // A write-back cache of 16 GiB warmed with 512-byte writes likewise:
    // 32 million lines over eight 800 GB drives. (Over eight 64 GB drives
    // the same writes can dirty no more lines than 512 GB holds, which
    // fits, and runs.)
    assert_input_error(
        &[
            "sim",
            "-t",
            "areca1680[cache_mb=16384](raid0(8*s3500-800))",
            "-w",
            "rw=randwrite bs=512 runtime=0.01",
        ],
        "controller caches",
    );
    // A 1 TiB cache over a 4 GiB span: the fill stops at four times the
    // span's writes, and runs (it once asserted its count fitted 32 bits).
    let o = raidlab(&[
        "sim",
        "-t",
        "areca1680[cache_mb=1048576](raid0(2*x25e))",
        "-w",
        "rw=randwrite bs=512 size=4g runtime=0.5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn usage_mistakes_get_hints_and_the_subcommands_help() {
    let o = raidlab(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("Usage: raidlab <COMMAND>"),
        "{}",
        stderr(&o)
    );
    assert_input_error(&["simulate"], "a similar subcommand exists: 'sim'");
    assert_input_error(
        &["sim", "--topolgy", "x25e"],
        "a similar argument exists: '--topology'",
    );
    assert_input_error(&["sim", "--topolgy", "x25e"], "see 'raidlab sim --help'");
    let w = "rw=randread runtime=0.01";
    assert_input_error(
        &["sim", "-t", "raid7(4*x25e)", "-w", w],
        "unknown RAID level 'raid7'",
    );
    assert_input_error(
        &["sim", "-t", "S3500-800", "-w", w],
        "lower case: 's3500-800'",
    );
    assert_input_error(&["sim", "-t", "x25f", "-w", w], "did you mean x25e");
    assert_input_error(
        &["sim", "-t", "raid0(./m0.img)", "-w", w],
        "is a path, not a preset",
    );
    assert_input_error(&["presets", "Adaptec5085"], "lower case: 'adaptec5085'");
    assert_input_error(
        &["sim", "-t", "raid0[chunk=64k](2*x25e)", "-w", w],
        "mdadm's chunk is 'stripe' here",
    );
    // One smallest RAID 5 everywhere: the model refuses what sim refuses.
    assert_input_error(
        &[
            "model",
            "--level",
            "raid5",
            "--drives",
            "2",
            "--one-drive",
            "100",
            "--pattern",
            "small-random-read",
        ],
        "raid5 needs at least 3 drives",
    );
    // direct= is the same key in -w as in a job file.
    let o = raidlab(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "rw=randread direct=1 runtime=0.01",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_input_error(&["sim", "-t", "x25e", "-w", "rw=read direct=2"], "direct");
}

#[test]
fn results_echo_the_configuration_as_run_and_it_reproduces_them() {
    let sim = |t: &str, w: &str| -> serde_json::Value {
        let o = raidlab(&["sim", "-t", t, "-w", w, "--format", "json"]);
        assert!(o.status.success(), "{t}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    for (t, w) in [
        (
            "adaptec5085(raid5(5*x25e))",
            "preset=heavy rw=randwrite bs=8k runtime=0.2",
        ),
        (
            "raid0(adaptec5085[mode=volume](2*x25e), areca1680[mode=jbod](2*s3500-80[op=20%]))",
            "rw=randrw bs=4k iodepth=16 runtime=0.2",
        ),
        ("raid6(6*hdd-sas15k)", "rw=read bs=1m iodepth=4 runtime=0.2"),
        // Several volumes side by side: the expression as run lists them all.
        (
            "host(x25e, 2*s3500-80)",
            "rw=randread bs=4k iodepth=4 numjobs=2 runtime=0.2",
        ),
    ] {
        let a = sim(t, w);
        let volumes = if t.starts_with("host(") { 3 } else { 1 };
        assert_eq!(a["resolved"]["volumes"], volumes, "{t}");
        let resolved = a["resolved"]["topology"].as_str().unwrap();
        for (default, applies) in [
            ("stripe=", t.contains("raid")),
            ("host[cores=", true),
            ("cache=", t.contains("adaptec")),
            ("state=", !t.contains("hdd")),
        ] {
            assert_eq!(resolved.contains(default), applies, "{resolved}: {default}");
        }
        let b = sim(resolved, w);
        assert_eq!(a["summary"], b["summary"], "{t} and {resolved}");
        assert_eq!(a["resolved"], b["resolved"]);
        assert!(a["resolved"]["capacity_bytes"].as_u64().unwrap() > 0);
        // Every device reports the commands it served; reads and writes
        // add up to what the host's I/Os ask of them at least.
        let devices: Vec<_> = a["components"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "ssd" || c["kind"] == "hdd")
            .collect();
        assert!(!devices.is_empty());
        let served: u64 = devices
            .iter()
            .map(|c| c["io"]["reads"].as_u64().unwrap() + c["io"]["writes"].as_u64().unwrap())
            .sum();
        assert!(served > 0, "{t}");
    }
}

/// The write hole, end to end: RAID 5 random writes killed with SIGKILL
/// leave the array marked active. Used degraded it is refused; run whole
/// it is resynchronised first, after which any one member can be lost and
/// every block still verifies: no acknowledged block is lost.
#[test]
fn a_killed_write_run_loses_nothing_once_resynced() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-cli-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let m: Vec<String> = (0..4)
        .map(|i| dir.join(format!("m{i}.img")).display().to_string())
        .collect();
    // Members of 1 GiB (sparse): their write-intent bitmaps have 16 chunks
    // of 64 MiB, and the writes below touch the first only.
    let sized: Vec<String> = m.iter().map(|p| format!("{p}[size=1g]")).collect();
    let array = |i: Option<usize>| {
        let mut v: Vec<&str> = m.iter().map(String::as_str).collect();
        if let Some(i) = i {
            v[i] = "missing";
        }
        format!("raid5[stripe=16k]({})", v.join(","))
    };
    let t = array(None);
    let created = format!("raid5[stripe=16k]({})", sized.join(","));
    let run = |t: &str, wl: &str| {
        raidlab(&[
            "run", "-t", t, "-w", wl, "--verify", "--engine", "psync", "--format", "json",
        ])
    };
    let o = run(&created, "rw=write bs=64k size=4m");
    assert!(o.status.success(), "{}", stderr(&o));
    let randwrite = "rw=randwrite bs=4k iodepth=4 size=4m runtime=30";
    killed_after(
        &[
            "run", "-t", &t, "-w", randwrite, "--verify", "--engine", "psync",
        ],
        1500,
    );
    let read = "rw=read bs=16k size=4m";
    let o = run(&array(Some(0)), read);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not stopped cleanly"), "{}", stderr(&o));
    let o = run(&t, read);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Only the dirty chunk's stripes were rewritten: one 64 MiB chunk of
    // each member, 192 MiB of a 3 GiB volume (in steps of about 1 MiB).
    let resynced = v["real"]["array"]["resynced_bytes"].as_u64().unwrap();
    assert!(resynced > 0 && resynced <= 193 << 20, "{resynced}");
    for i in 0..4 {
        let o = run(&array(Some(i)), read);
        assert!(o.status.success(), "member {i} missing: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["real"]["verify"]["mismatches"], 0, "member {i} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check` exits 1 on a mismatch and names the member; `repair` fixes it
/// and exits 0; JSON carries md's mismatch_cnt; bad input is status 2.
#[test]
fn check_and_repair_scrub_a_real_array() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-cli-scrub-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let m: Vec<String> = (0..3)
        .map(|i| dir.join(format!("m{i}.img")).display().to_string())
        .collect();
    let t = format!("raid1({})", m.join(","));
    let o = raidlab(&["run", "-t", &t, "-w", "rw=write bs=64k size=1m", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = raidlab(&["check", "-t", &t, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Damage the second copy's data.
    let mut b = std::fs::read(&m[1]).unwrap();
    let at = b.len() - (512 << 10);
    b[at] ^= 0xff;
    std::fs::write(&m[1], b).unwrap();
    let o = raidlab(&["check", "-t", &t]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains(&format!("copy wrong on {}", m[1])), "{out}");
    let o = raidlab(&["repair", "-t", &t, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["mismatch_cnt"], 8);
    assert_eq!(v["mismatches"][0]["repaired"], true);
    let o = raidlab(&["check", "-t", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A lost member, replaced and rebuilt.
    std::fs::remove_file(&m[2]).unwrap();
    let o = raidlab(&["rebuild", "-t", &t, "--format", "json", "--max-rate", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rebuilt"][0], m[2].as_str());
    let o = raidlab(&["check", "-t", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_input_error(&["rebuild", "-t", &t, "--max-rate=-1"], "--max-rate");
    assert_input_error(&["check", "-t", &m[0]], "nothing to check");
    assert_input_error(
        &["check", "-t", "raid1(./nope0.img, ./nope1.img)"],
        "does not exist",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `create` writes md metadata over members that hold data and resyncs
/// them (parity then checks clean); `examine` prints each member's
/// superblock, raidlab's record and the bitmap, and exits 1 for a path
/// without one.
#[test]
fn create_and_examine_work_like_mdadm() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-cli-create-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let m: Vec<String> = (0..3)
        .map(|i| dir.join(format!("m{i}.img")).display().to_string())
        .collect();
    // Members full of unrelated bytes (no signature): parity is wrong
    // until the initial resync.
    for (i, p) in m.iter().enumerate() {
        let bytes: Vec<u8> = (0..4u32 << 20)
            .map(|k| (k.wrapping_mul(2654435761) >> (i + 7)) as u8)
            .collect();
        std::fs::write(p, bytes).unwrap();
    }
    let t = format!("raid5[stripe=16k]({})", m.join(","));
    let o = raidlab(&["create", "-t", &t, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["resynced_bytes"].as_u64().unwrap() > 0);
    let o = raidlab(&["check", "-t", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = raidlab(&["examine", &m[1], "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["superblock"]["level"], "raid5");
    assert_eq!(v[0]["superblock"]["role"], "active device 1");
    assert_eq!(v[0]["superblock"]["clean"], true);
    assert_eq!(v[0]["raidlab"]["slot_path"][0], 1);
    let o = raidlab(&["examine", &m[0], &t]);
    assert_eq!(o.status.code(), Some(2), "a missing path: {}", stderr(&o));
    let bare = dir.join("bare.img");
    std::fs::write(&bare, vec![0u8; 1 << 20]).unwrap();
    let o = raidlab(&["examine", &bare.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no md superblock"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn calibrate_fits_a_datasheet_and_the_preset_loads() {
    let out = tmp("ds-fit.toml", "");
    let o = raidlab(&[
        "calibrate",
        "--from",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/datasheets/intel-dc-s3500-800.csv"
        ),
        "--capacity",
        "800g",
        "--name",
        "s3500-fit",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    // Every value names where it came from.
    let body = text.split("[s3500-fit]").nth(1).expect("one table");
    for line in body.lines().filter(|l| l.contains(" = ")) {
        let key = line.split(" = ").next().unwrap();
        if !matches!(key, "kind" | "description") {
            assert!(line.contains("  # "), "no source: {line}");
        }
    }
    // The four datasheet figures the fit solves for are met within 2 %.
    for id in ["randread-4k-qd32 ", "randwrite-4k-qd32 ", "read-128k "] {
        let row = text.lines().find(|l| l.contains(id)).expect(id);
        let pct: f64 = row
            .rsplit('(')
            .next()
            .unwrap()
            .trim_end_matches(" %)")
            .parse()
            .unwrap();
        assert!(pct.abs() < 2.0, "{row}");
    }
    // It loads and simulates, also as the path it describes.
    let o = raidlab(&[
        "sim",
        "-t",
        "raid0(2*s3500-fit)",
        "-w",
        "rw=randread bs=4k iodepth=32 runtime=1",
        "--presets",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
#[ignore = "slow tier: calibrate probes a file for about 100 s; .ci/run runs it (cargo test --workspace -- --ignored slow_)"]
fn slow_calibrate_measures_a_file_quickly_and_sim_reads_its_path() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let img = dir.join("drive.img");
    let out = dir.join("drive.toml");
    let (img, out) = (img.to_str().unwrap(), out.to_str().unwrap());
    let o = raidlab(&["calibrate", img, "--capacity", "128m", "--quick", "-o", out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(out).unwrap();
    assert!(text.contains(&format!("paths = [\"{img}\"]")), "{text}");
    // "Simulate the array I just ran": the run expression's paths resolve
    // to the calibrated drive.
    let expr = format!("raid1({img},{img})");
    let o = raidlab(&[
        "sim",
        "-t",
        &expr,
        "-w",
        "rw=randread bs=4k iodepth=4 runtime=1",
        "--presets",
        out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn calibrate_refuses_bad_input_in_one_line() {
    let out = tmp("bad-fit.toml", "");
    assert_input_error(&["calibrate", "sim:nonesuch", "-o", &out], "nonesuch");
    // A preset that exists but is no SSD is named for what it is, with the
    // SSD presets to choose from, not taken for a misspelt name.
    assert_input_error(
        &["calibrate", "sim:adaptec5085", "-o", &out],
        "'adaptec5085' is a RAID controller or HBA",
    );
    assert_input_error(&["calibrate", "sim:hdd-sas10k", "-o", &out], "x25e");
    assert_input_error(&["calibrate", "sim:X25E", "-o", &out], "lower case");
    let csv = tmp("one.csv", "id,source,ref,topology,workload,metric,value,note\na,b,c,d,rw=randread bs=4k iodepth=32,iops,1000,\n");
    assert_input_error(&["calibrate", "--from", &csv, "-o", &out], "--capacity");
    let dir = std::path::Path::new(&out)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_input_error(&["calibrate", &dir, "-o", &out], "is a directory");
    let mut many = String::from("id,source,ref,topology,workload,metric,value,note\n");
    for i in 0..201 {
        many += &format!("r{i},s,r,d,rw=randread bs=4k iodepth=32,iops,1000,\n");
    }
    let many = tmp("many.csv", &many);
    assert_input_error(
        &["calibrate", "--from", &many, "--capacity", "1t", "-o", &out],
        "at most 200",
    );
    assert_input_error(
        &["calibrate", "sim:x25e", "-o", "/tmp/bad name!.toml"],
        "not a valid preset name",
    );
    assert_input_error(
        &["sim", "-t", "raid1(./a.img,./b.img)", "-w", "rw=read"],
        "is a path, not a preset",
    );
}

#[test]
fn presets_list_as_json_for_tools() {
    let o = raidlab(&["presets", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let list = v.as_array().expect("an array");
    assert!(list.len() >= 14);
    for e in list {
        for k in [
            "name",
            "kind",
            "interface",
            "year",
            "capacity_gb",
            "description",
        ] {
            assert!(e.get(k).is_some(), "{e} lacks {k}");
        }
    }
    let x25e = list.iter().find(|e| e["name"] == "x25e").unwrap();
    assert_eq!(x25e["kind"], "ssd");
    assert_eq!(x25e["year"], 2008);
    assert_eq!(x25e["capacity_gb"], 64.0);
    assert_eq!(x25e["interface"], "SATA 3 Gb/s");
    let pm9a3 = list
        .iter()
        .find(|e| e["name"] == "pm9a3")
        .expect("a current NVMe preset");
    assert_eq!(pm9a3["capacity_gb"], 7680.0);
    assert_eq!(pm9a3["year"], 2020);
    // Every built-in SSD has a rated endurance but the two whose makers'
    // ratings no source at hand gives (plan ranks them last on endurance);
    // no built-in has a price.
    let unrated = ["micron5400", "pm1653"];
    for e in list.iter().filter(|e| e["kind"] == "ssd") {
        let rated = e["endurance_tbw"].as_f64().is_some_and(|t| t > 0.0);
        let listed = unrated.iter().any(|n| e["name"] == *n);
        assert!(rated != listed, "{e}");
        assert!(e["price"].is_null(), "{e}");
    }
    assert_eq!(x25e["endurance_tbw"], 2000.0);
    // Hosts list the RAID implementations they profile.
    let host2020 = list.iter().find(|e| e["name"] == "host2020").unwrap();
    assert_eq!(
        host2020["impls"],
        serde_json::json!(["lvm", "md", "vroc", "windows"])
    );
    assert!(x25e.get("impls").is_none());
}

/// fio's rate limits pace a real run as they pace a simulated one: a job
/// capped at 400 reads/s does about 400 a second of wall-clock time, on both
/// engines and both submit modes.
#[test]
fn run_paces_jobs_by_their_rate_limits() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-cli-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("r.img").display().to_string();
    std::fs::File::create(&f)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    // The default engine (io_uring where the kernel has it) and psync.
    for (engine, mode) in [
        (None, "inline"),
        (None, "offload"),
        (Some("psync"), "inline"),
    ] {
        let wl = format!(
            "rw=randread bs=4k size=16m iodepth=4 rate_iops=400 rate_process=poisson io_submit_mode={mode} runtime=1"
        );
        let mut args = vec!["run", "-t", &f, "-w", &wl, "--format", "json"];
        if let Some(e) = engine {
            args.extend(["--engine", e]);
        }
        let o = raidlab(&args);
        let engine = engine.unwrap_or("default");
        assert!(o.status.success(), "{engine}/{mode}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let iops = v["summary"]["iops"].as_f64().expect("iops");
        // Poisson gaps: 400 a second give ±5 % in one second (sd 20).
        assert!(
            (340.0..=440.0).contains(&iops),
            "{engine}/{mode}: {iops} IOPS against a cap of 400"
        );
    }
    // fio's thinktime: 2 ms after each I/O (one in flight, whatever the
    // iodepth) allows fewer than 500 a second.
    let run_iops = |wl: &str| {
        let o = raidlab(&["run", "-t", &f, "-w", wl, "--format", "json"]);
        assert!(o.status.success(), "{wl}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["summary"]["iops"].as_f64().expect("iops")
    };
    let iops = run_iops("rw=randread bs=4k size=16m iodepth=8 thinktime=2000 runtime=1");
    assert!((250.0..500.0).contains(&iops), "thinktime: {iops} IOPS");
    // With thinktime_blocks=4 at queue depth 4, the job stalls once 4 more
    // reads are back than at its last think, waits for the rest, and
    // thinks 20 ms: 4 reads per think (those back while it waits count
    // towards the next; fio's check follows each completion reaped), at
    // most 50 thinks in a second and at least 40 even with 5 ms of reads
    // and wake-ups in each; a think after every read would allow 50.
    let iops = run_iops(
        "rw=randread bs=4k size=16m iodepth=4 thinktime=20000 thinktime_blocks=4 runtime=1",
    );
    assert!(
        (160.0..=210.0).contains(&iops),
        "thinktime_blocks: {iops} IOPS"
    );
}

/// A real RAID 1's reads go to both mirrors, and each member's busy time
/// is counted, with one job and with two (each worker keeps its own count
/// of operations in flight and balances its reads on it; the members'
/// busy time joins the workers').
#[test]
fn real_mirror_reads_spread_and_members_report_their_busy_time() {
    let (dir, m) = member_paths("cli-mirror", 2);
    for f in &m {
        std::fs::File::create(f).unwrap().set_len(32 << 20).unwrap();
    }
    let t = format!("raid1({})", m.join(","));
    let o = raidlab(&["create", "-t", &t, "--assume-clean", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for jobs in [1, 2] {
        let wl = format!("rw=randread bs=4k iodepth=8 numjobs={jobs} runtime=0.5");
        let o = raidlab(&["run", "-t", &t, "-w", &wl, "--format", "json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let comps = v["components"].as_array().expect("components");
        let reads: Vec<f64> = comps
            .iter()
            .map(|c| c["io"]["reads"].as_f64().expect("reads"))
            .collect();
        let total: f64 = reads.iter().sum();
        assert!(total > 0.0, "{jobs} jobs: no reads");
        for (c, r) in comps.iter().zip(&reads) {
            assert!(
                *r > 0.3 * total,
                "{jobs} jobs: {} took {r} of {total} reads",
                c["name"]
            );
            let util = c["utilization"].as_f64().expect("utilization");
            assert!(
                util > 0.0 && util <= 1.0,
                "{jobs} jobs: {} util {util}",
                c["name"]
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Messages a new user meets: each says what is wrong and what to write.
#[test]
fn first_mistakes_get_a_useful_line() {
    let w = "rw=randread runtime=0.01";
    assert_input_error(
        &["sim", "-t", "host2020(raid5(8*pm9a3))", "-w", w],
        "host[profile=host2020](...)",
    );
    assert_input_error(
        &["presets", "raid5"],
        "'raid5' is a RAID level, not a preset",
    );
    assert_input_error(
        &["sim", "-t", "x25e", "-w", "iodpeth=4 rw=randread"],
        "did you mean iodepth?",
    );
    assert_input_error(
        &[
            "sim",
            "-t",
            "megaraid9361[cache_mb=99999999](2*x25e)",
            "-w",
            w,
        ],
        "from 0 to 1048576",
    );
    assert_input_error(
        &[
            "sim",
            "-t",
            "megaraid9361[rebuild_rate=0](raid1[spares=1](x25e, missing, x25e))",
            "-w",
            w,
        ],
        "rebuild_rate=0: expected a share of the controller from 1 to 100",
    );
    // fio's long names, as job files take them.
    let v = json_of(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "blocksize=8k readwrite=randread runtime=0.01",
        "--format",
        "json",
    ]);
    assert_eq!(v["workload"]["bs"], 8192, "{}", v["workload"]);
    let csv = tmp("plot.csv", "a,b\n1,2\n2,3\n");
    for args in [
        vec![
            "plot",
            csv.as_str(),
            "--x",
            "a",
            "--y",
            "b",
            "-o",
            "/nonexistent/dir/x.png",
        ],
        vec![
            "calibrate",
            "sim:x25e",
            "-o",
            "/nonexistent/c.toml",
            "--quick",
        ],
    ] {
        assert_input_error(&args, "the folder '/nonexistent");
    }
}

/// A timed run long enough to take minutes says so on stderr before it
/// starts; a short one says nothing.
#[test]
fn a_long_runtime_is_announced() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args([
            "sim",
            "-t",
            "raid0(4*x25e)",
            "-w",
            "rw=randread iodepth=32 runtime=1000000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        line.contains("runtime=1000000 s") && line.contains("million host I/Os"),
        "{line}"
    );
    let o = raidlab(&["sim", "-t", "x25e", "-w", "rw=randread runtime=0.01"]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", stderr(&o));
}

/// `reproduce` tables say what every cell shares (topology, workload,
/// metric and unit) and leave keys a row does not give out of its label.
#[test]
fn reproduced_tables_say_their_topology_workload_and_metric() {
    let o = raidlab(&["reproduce", "intel2013"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("  topology megaraid9265"), "{text}");
    assert!(text.contains("  workload iodepth=8 numjobs=8"), "{text}");
    assert!(!text.contains("=-"), "{text}");
    let v = json_of(&["reproduce", "admin2015", "--format", "json"]);
    assert_eq!(
        v["by_file"].as_array().unwrap().len(),
        2,
        "{}",
        v["by_file"]
    );
}

/// Hardware that cannot exist is refused with the rule it breaks: a host
/// bus adapter runs no RAID, NVMe drives sit only behind tri-mode
/// controllers (or the host's own lanes), and a controller's RAID 10 is
/// built from pairs; `plan` never proposes them.
#[test]
fn impossible_hardware_is_refused() {
    let w = "rw=randread runtime=0.01";
    for (t, want) in [
        ("hba9500(raid5(8*pm9a3))", "hba9500 is a host bus adapter"),
        ("hba(raid1(2*x25e))", "runs no RAID"),
        (
            "adaptec5085(4*pm9a3)",
            "pm9a3 is an NVMe drive and adaptec5085 takes SAS/SATA",
        ),
        ("megaraid9265(raid5(4*pm9a3))", "tri-mode controller"),
        (
            "megaraid9560(raid10(3*pm9a3))",
            "megaraid9560 builds RAID 10 as a stripe of two-drive mirrors: an even number of members, at least 4, not 3",
        ),
        ("adaptec5085(raid10[spares=1](3*x25e))", "at least 4, not 2"),
    ] {
        assert_input_error(&["sim", "-t", t, "-w", w], want);
    }
    for t in [
        "megaraid9560(raid5(4*pm9a3))",
        "raid5(hba9500[mode=jbod](4*pm9a3))",
        "megaraid9361(raid5(4*s3500-800))",
        "megaraid9560(raid10(6*pm9a3))",
        "raid10(megaraid9560[mode=jbod](3*pm9a3))",
    ] {
        let o = raidlab(&["sim", "-t", t, "-w", w]);
        assert!(o.status.success(), "{t}: {}", stderr(&o));
    }
    // pm9a3s with the controllers given: one plan question.
    let plan = |controllers: &'static str, json: bool| {
        let mut a = vec![
            "plan",
            "-w",
            "rw=randread bs=4k iodepth=32",
            "--capacity",
            "10t",
            "--survive",
            "1",
            "--drives",
            "pm9a3",
            "--controllers",
            controllers,
        ];
        if json {
            a.extend(["--format", "json"]);
        }
        a
    };
    let v = json_of(&plan("none,megaraid9361,hba9500", true));
    let tops: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["topology"].as_str().unwrap())
        .collect();
    assert!(tops.iter().any(|t| t.contains("hba9500")), "{tops:?}");
    assert!(!tops.iter().any(|t| t.contains("megaraid9361")), "{tops:?}");
    // A SAS/SATA-only controller with NVMe drives alone: nothing to plan.
    assert_input_error(&plan("megaraid9361", false), "no configuration");
}

/// A job file of stonewalled sections (fio's examples/ssd-test.fio shape)
/// runs its phases in turn, in `sim` and in `run`, each reported under its
/// name; sections fio would run side by side run so in `sim` and `run`,
/// each reported on its own.
#[test]
fn job_files_include_files_beside_them_and_errors_name_the_included_line() {
    // fio's `include`: the options of the named file, found beside the job
    // file, stand where the directive does; here in [global], nested once.
    tmp("inc-depth.fio", "iodepth=4\n");
    tmp(
        "inc-common.fio",
        "bs=8k ; the shared size\ninclude inc-depth.fio\n",
    );
    let job = tmp(
        "inc-job.fio",
        "[global]\ninclude inc-common.fio\nioengine=libaio\n[a]\nrw=randread\nruntime=1\n",
    );
    let v = json_of(&["sim", "-t", "x25e", "--job", &job, "--format", "json"]);
    assert_eq!(v["workload"]["bs"], 8192, "{}", v["workload"]);
    assert_eq!(v["workload"]["iodepth"], 4, "{}", v["workload"]);
    // An option fio does not know, in an included file: its file and line.
    tmp("inc-bad.fio", "bs=4k\nflow=1\n");
    let bad = tmp("inc-badjob.fio", "[a]\nrw=read\ninclude inc-bad.fio\n");
    assert_input_error(
        &["sim", "-t", "x25e", "--job", &bad],
        "inc-bad.fio line 2: unsupported fio option 'flow'",
    );
    let missing = tmp("inc-missing.fio", "[a]\nrw=read\ninclude inc-nowhere.fio\n");
    assert_input_error(
        &["sim", "-t", "x25e", "--job", &missing],
        "include inc-nowhere.fio: cannot read included job file",
    );
    let outside = tmp("inc-outside.fio", "include inc-depth.fio\n[a]\nrw=read\n");
    assert_input_error(
        &["sim", "-t", "x25e", "--job", &outside],
        "inc-outside.fio line 1: include outside a section",
    );
    let looped = tmp("inc-loop.fio", "[a]\nrw=read\ninclude inc-self.fio\n");
    tmp("inc-self.fio", "include inc-self.fio\n");
    assert_input_error(&["sim", "-t", "x25e", "--job", &looped], "16 deep");
}

#[test]
fn job_files_run_their_stonewalled_sections_in_turn() {
    let job = tmp(
        "phases.fio",
        "[global]\nioengine=io_uring\nsize=8m\nbs=4k\niodepth=4\ndirect=1\n[fill]\nrw=write\nbs=64k\n[check]\nstonewall\nrw=randread\nruntime=0.2\ntime_based\n",
    );
    let o = raidlab(&["sim", "-t", "x25e", "--job", &job]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("phase 1 of 2: [fill]") && table.contains("phase 2 of 2: [check]"),
        "{table}"
    );
    let v = json_of(&["sim", "-t", "x25e", "--job", &job, "--format", "json"]);
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0]["phase"], "fill");
    assert_eq!(phases[1]["workload"]["rw"], "randread");
    assert!(phases[1]["summary"]["read"]["iops"].as_f64().unwrap() > 0.0);
    let f = json_of(&["sim", "-t", "x25e", "--job", &job, "--format", "fio-json"]);
    let jobs = f["jobs"].as_array().unwrap();
    assert_eq!(
        (jobs[1]["jobname"].as_str(), jobs[1]["groupid"].as_u64()),
        (Some("check"), Some(1))
    );
    // For real, on a file the first phase writes.
    let (dir, m) = member_paths("phases", 1);
    let v = json_of(&["run", "-t", &m[0], "--job", &job, "--format", "json"]);
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(
        phases[0]["summary"]["write"]["mbps"]
            .as_f64()
            .map(|x| x > 0.0),
        Some(true)
    );
    assert_eq!(
        phases[1]["summary"]["read"]["iops"]
            .as_f64()
            .map(|x| x > 0.0),
        Some(true)
    );
    std::fs::remove_dir_all(dir).unwrap();
    // fio runs these side by side; so do `sim` and `run`.
    let side = tmp(
        "side.fio",
        "[global]\nsize=8m\nruntime=0.2\ntime_based\n[a]\nrw=read\n[b]\nrw=write\n",
    );
    let o = raidlab(&["sim", "-t", "x25e", "--job", &side]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("side by side") && table.contains("\n[a]\n") && table.contains("\n[b]\n"),
        "{table}"
    );
    let v = json_of(&["sim", "-t", "x25e", "--job", &side, "--format", "json"]);
    assert_eq!(v["sections"][1]["name"], "b");
    assert!(
        v["sections"][1]["summary"]["write"]["iops"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let (dir, m) = member_paths("side", 1);
    let v = json_of(&["run", "-t", &m[0], "--job", &side, "--format", "json"]);
    let names: Vec<&str> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        v["sections"][0]["summary"]["read"]["iops"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        v["sections"][1]["summary"]["write"]["iops"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    std::fs::remove_dir_all(dir).unwrap();
    // export-fio writes a section a phase, which reads back as the same
    // phases.
    let o = raidlab(&["export-fio", "--job", &job]);
    assert!(o.status.success(), "{}", stderr(&o));
    let back = tmp("back.fio", &String::from_utf8_lossy(&o.stdout));
    let v = json_of(&["sim", "-t", "x25e", "--job", &back, "--format", "json"]);
    assert_eq!(v["phases"][1]["phase"], "check");
}

/// Sections side by side share one opening of the members, so `run`
/// refuses sections that disagree on `direct=` in one line (exit 2),
/// before it touches the target; `sim` runs them.
#[test]
fn run_refuses_sections_side_by_side_that_differ_in_direct() {
    let job = tmp(
        "mixed-direct.fio",
        "[global]\nsize=8m\nruntime=0.2\ntime_based\n[a]\nrw=read\ndirect=1\n[b]\nrw=write\ndirect=0\n",
    );
    let (dir, m) = member_paths("mixed-direct", 1);
    let before: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&m[0], &before).unwrap();
    assert_input_error(
        &["run", "-t", &m[0], "--job", &job],
        "asks for direct= apart from the first's",
    );
    assert!(
        std::fs::read(&m[0]).unwrap() == before,
        "the member is untouched"
    );
    std::fs::remove_dir_all(dir).unwrap();
    let o = raidlab(&["sim", "-t", "x25e", "--job", &job]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// fio's reserved keywords take the values of the machine the job runs
/// on: in `sim` the simulated host's cores (`$ncpus`), which models no
/// memory size (`$mb_memory` refused in one line); in `run` this
/// machine's. Arithmetic computes as fio's does.
#[test]
fn job_file_keywords_take_the_running_machines_values() {
    let job = tmp(
        "keywords.fio",
        "[j]\nioengine=io_uring\nrw=randread\nbs=$pagesize\nnumjobs=$ncpus/8\niodepth=(2*4)\nsize=8m\nruntime=(100000)\ntime_based\n",
    );
    let v = json_of(&[
        "sim",
        "-t",
        "host[profile=host2023](pm9a3)",
        "--job",
        &job,
        "--format",
        "json",
    ]);
    // host2023: 2 x 96 cores.
    assert_eq!(v["workload"]["numjobs"], 24);
    assert_eq!(v["workload"]["bs"], 4096);
    assert_eq!(v["workload"]["iodepth"], 8);
    assert_eq!(v["workload"]["runtime"], 0.1);
    let mem = tmp("memory.fio", "[j]\nsize=2*$mb_memory\n");
    assert_input_error(
        &["sim", "-t", "x25e", "--job", &mem],
        "line 2: $mb_memory has no value for the simulated host",
    );
    // For real: this machine's CPUs.
    let cpus = std::thread::available_parallelism().unwrap().get();
    let one = tmp(
        "ncpus.fio",
        "[j]\nrw=write\nbs=4k\nsize=1m\nnumjobs=$ncpus\n",
    );
    let (dir, m) = member_paths("keywords", 1);
    let v = json_of(&["run", "-t", &m[0], "--job", &one, "--format", "json"]);
    assert_eq!(v["workload"]["numjobs"], cpus);
    std::fs::remove_dir_all(dir).unwrap();
}

/// fio's `verify` in a job file: `run` writes checked blocks and reads
/// them back in a verify phase of their own, clean; a byte changed on the
/// file afterwards is caught by a reading job that verifies (exit 1).
#[test]
fn job_file_verify_reads_back_and_catches_a_changed_byte() {
    let (dir, m) = member_paths("jobverify", 1);
    let write = tmp(
        "verify-w.fio",
        "[w]\nioengine=io_uring\ndirect=1\nrw=randwrite\nbs=4k\niodepth=8\nsize=4m\nverify=crc32c\n",
    );
    let v = json_of(&["run", "-t", &m[0], "--job", &write, "--format", "json"]);
    let p = v["phases"].as_array().unwrap();
    assert_eq!(
        (p[0]["phase"].as_str(), p[1]["phase"].as_str()),
        (Some("w"), Some("w verify"))
    );
    let checked = &p[1]["real"]["verify"];
    // 1,024 blocks of 4 KiB, in units of 512 bytes, all written this run.
    assert_eq!(checked["checked_units"], 8192, "{checked}");
    assert_eq!(
        (
            checked["mismatches"].as_u64(),
            checked["unwritten_units"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let mut data = std::fs::read(&m[0]).unwrap();
    data[(2 << 20) + 100] ^= 0xff;
    std::fs::write(&m[0], data).unwrap();
    let read = tmp(
        "verify-r.fio",
        "[r]\nioengine=io_uring\ndirect=1\nrw=read\nbs=64k\nsize=4m\nverify=md5\n",
    );
    let o = raidlab(&["run", "-t", &m[0], "--job", &read, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["real"]["verify"]["mismatches"], 1,
        "{}",
        v["real"]["verify"]
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// fio substitutes `${VAR}` in a job file from the environment (nothing
/// for a name not set); so does raidlab.
#[test]
fn job_files_take_variables_from_the_environment() {
    let job = tmp(
        "env.fio",
        "[j]\nioengine=libaio\nrw=randread\niodepth=${RAIDLAB_TEST_QD}\nbs=4k${RAIDLAB_TEST_UNSET}\nruntime=0.05\ntime_based\n",
    );
    let o = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args(["sim", "-t", "x25e", "--job", &job, "--format", "json"])
        .env("RAIDLAB_TEST_QD", "12")
        .env_remove("RAIDLAB_TEST_UNSET")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (
            v["workload"]["iodepth"].as_u64(),
            v["workload"]["bs"].as_u64()
        ),
        (Some(12), Some(4096))
    );
}

/// fio's `exitall`: once the short section beside it has finished, the
/// long one stops too, in the simulator and in both real engines; without
/// it the long one reads its whole gigabyte.
#[test]
fn exitall_stops_the_jobs_beside_one_that_finished() {
    let job = |exitall: &str| {
        tmp(
            &format!("exitall{}.fio", exitall.len()),
            &format!(
                "[global]\n{exitall}\nioengine=libaio\n[a]\nrw=read\nbs=64k\nsize=1m\n[b]\nrw=randread\nbs=4k\niodepth=4\nsize=1g\n"
            ),
        )
    };
    let (with, without) = (job("exitall"), job(""));
    let sim = |j: &str| {
        json_of(&["sim", "-t", "x25e", "--job", j, "--format", "json"])["sim"]["simulated_s"]
            .as_f64()
            .unwrap()
    };
    let (short, long) = (sim(&with), sim(&without));
    assert!(short < 0.01 * long, "sim: {short} s against {long} s");
    let member = zeros("exitall.img", 1100 << 20);
    for engine in ["io_uring", "psync"] {
        let v = json_of(&[
            "run", "-t", &member, "--job", &with, "--engine", engine, "--format", "json",
        ]);
        let reads = v["real"]["read"]["ios"].as_u64().unwrap();
        assert!(
            reads < 26_000,
            "{engine}: {reads} reads of the 262,160 without exitall"
        );
    }
    std::fs::remove_file(member).unwrap();
}

/// fio's guards: a job whose I/O takes longer than `max_latency`, or that
/// falls below `rate_iops_min` over a cycle, stops there and the command
/// exits 1 naming the job and the guard, in the simulator and for real; the
/// result's `errors` give the figures, fio-json fio's errno. A guard the
/// job keeps changes nothing.
#[test]
fn a_job_that_trips_a_guard_stops_and_the_run_fails() {
    let w = "rw=randread bs=4k iodepth=64 runtime=1";
    let sim = |extra: &str, format: &str| {
        raidlab(&[
            "sim",
            "-t",
            "x25e",
            "-w",
            &format!("{w} {extra}"),
            "--format",
            format,
        ])
    };
    let kept = sim("max_latency=100ms", "json");
    assert!(kept.status.success(), "{}", stderr(&kept));
    let free = json_of(&["sim", "-t", "x25e", "-w", w, "--format", "json"]);
    let kept: serde_json::Value = serde_json::from_slice(&kept.stdout).unwrap();
    assert_eq!(kept["summary"], free["summary"]);
    assert!(kept.get("errors").is_none());
    // QD64 on one X25-E: reads queue for over a millisecond.
    let o = sim("max_latency=300", "json");
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("job 0: max_latency=300us exceeded"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v["errors"][0];
    assert_eq!(
        (e["job"].as_u64(), e["errno"].as_i64()),
        (Some(0), Some(110))
    );
    assert!(e["detail"]["latency_ns"].as_u64().unwrap() > 300_000);
    // The job stopped within its first milliseconds.
    assert!(v["sim"]["simulated_s"].as_f64().unwrap() < 0.1, "{v}");
    let fio = sim("max_latency=300", "fio-json");
    let fio: serde_json::Value = serde_json::from_slice(&fio.stdout).unwrap();
    assert_eq!(fio["jobs"][0]["error"], 110);
    // 7,000-odd random writes a second, below the minimum once checked.
    let o = raidlab(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "rw=randwrite bs=4k iodepth=4 runtime=4 rate_iops_min=50000",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("rate_iops_min=50000 not met: write IOPS"),
        "{}",
        stderr(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("error      job 0: rate_iops_min"));
    // Nothing is checked before 2 s past the ramp, where fio restarts the
    // job's clock: a 3.5 s run of which 2 s are ramp keeps the same minimum.
    let o = raidlab(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "rw=randwrite bs=4k iodepth=4 ramp_time=2 runtime=1.5 rate_iops_min=50000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // For real: no file read takes under a microsecond.
    let file = zeros("guards.img", 16 << 20);
    for engine in ["io_uring", "psync"] {
        let o = raidlab(&[
            "run",
            "-t",
            &file,
            "--engine",
            engine,
            "-w",
            "rw=randread bs=4k iodepth=1 runtime=2 max_latency=1",
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["errors"][0]["errno"], 110, "{engine}");
        assert!(
            v["real"]["read"]["ios"].as_u64().unwrap() < 100,
            "{engine}: {v}"
        );
    }
    assert_input_error(
        &[
            "run",
            "-t",
            &file,
            "--engine",
            "psync",
            "-w",
            "rw=randread bs=4k iodepth=4 runtime=1 rate_iops_min=10",
        ],
        "psync engine runs at iodepth > 1",
    );
    assert_input_error(
        &[
            "run",
            "-t",
            &file,
            "--engine",
            "psync",
            "-w",
            "rw=randread bs=4k iodepth=2 runtime=1 max_latency=1s",
        ],
        "psync engine runs at iodepth > 1",
    );
    std::fs::remove_file(file).unwrap();
}

/// fio's `latency_target` from a job file: the table names the depth the
/// search found, fio-json carries it as fio's `latency_depth`, and the
/// window is the depth found alone. A target missed at depth 1 fails the
/// run as fio's does (exit 1, ETIMEDOUT); psync, which runs a deeper job
/// as several workers, refuses a search. fio's `steadystate` beside
/// another section is refused too.
#[test]
fn a_latency_target_search_reports_the_depth_it_found() {
    let job = tmp(
        "latency-target.fio",
        "[global]\nioengine=io_uring\nruntime=2\ntime_based\n[search]\nrw=randread\nbs=4k\niodepth=128\nlatency_target=1ms\nlatency_window=100ms\nlatency_percentile=99\n",
    );
    let o = raidlab(&["sim", "-t", "raid5(4*s3500-800)", "--job", &job]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("latency    job 0: target=1ms, window=100ms, percentile=99.00%, depth="),
        "{table}"
    );
    assert!(table.contains("steady     not judged"), "{table}");
    let v = json_of(&[
        "sim",
        "-t",
        "raid5(4*s3500-800)",
        "--job",
        &job,
        "--format",
        "fio-json",
    ]);
    let j = &v["jobs"][0];
    let depth = j["latency_depth"].as_u64().unwrap();
    assert!((2..128).contains(&depth), "{j}");
    assert_eq!(
        (j["latency_target"].as_u64(), j["latency_window"].as_u64()),
        (Some(1_000_000), Some(100_000))
    );
    let o = raidlab(&[
        "sim",
        "-t",
        "x25e",
        "-w",
        "rw=randread iodepth=8 runtime=1 latency_target=20",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("latency_target=20us not met at queue depth 1"),
        "{}",
        stderr(&o)
    );
    // fio's steadystate watches one section's jobs: beside another
    // section it is refused, in the simulator and for real.
    let beside = tmp(
        "steadystate-beside.fio",
        "[global]\nruntime=5\ntime_based\n[a]\nrw=randread\nss=iops:5%\nss_dur=2\n[b]\nrw=randwrite\n",
    );
    assert_input_error(
        &["sim", "-t", "x25e", "--job", &beside],
        "steadystate stops one section's jobs",
    );
    let file = zeros("latency-target.img", 16 << 20);
    assert_input_error(
        &["run", "-t", &file, "--job", &beside],
        "steadystate stops one section's jobs",
    );
    assert_input_error(
        &[
            "run",
            "-t",
            &file,
            "--engine",
            "psync",
            "-w",
            "rw=randread bs=4k iodepth=4 runtime=1 latency_target=1s",
        ],
        "latency_target sets a job's queue depth",
    );
    std::fs::remove_file(file).unwrap();
}

/// fio's `exitall_on_error`: the section beside one that trips its guard
/// stops with it, in the simulator and for real; without it, it runs on to
/// its runtime.
#[test]
fn exitall_on_error_stops_the_jobs_beside_one_in_error() {
    let job = |exit: &str| {
        tmp(
            &format!("exit-on-error{}.fio", exit.len()),
            &format!(
                "[global]\nioengine=libaio\nruntime=1\ntime_based\n[a]\nrw=randread\nbs=4k\niodepth=64\nmax_latency=300\n{exit}\n[b]\nrw=randread\nbs=4k\niodepth=1\n"
            ),
        )
    };
    let (with, without) = (job("exitall_on_error"), job(""));
    let sim = |j: &str| {
        let o = raidlab(&["sim", "-t", "x25e", "--job", j, "--format", "json"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("[a]"), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["errors"].as_array().unwrap().len(), 1, "{v}");
        v["sim"]["simulated_s"].as_f64().unwrap()
    };
    let (short, long) = (sim(&with), sim(&without));
    assert!(short < 0.1 && long > 0.9, "sim: {short} s against {long} s");
    let file = zeros("exit-on-error.img", 64 << 20);
    let o = raidlab(&["run", "-t", &file, "--job", &with, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["sim"]["simulated_s"].as_f64().unwrap() < 0.5, "{v}");
    std::fs::remove_file(file).unwrap();
}
