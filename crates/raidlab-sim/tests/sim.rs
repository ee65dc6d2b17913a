//! Integration tests of the simulator through its public entry point.

use raidlab_core::preset::PresetDb;
use raidlab_core::result::RunResult;
use raidlab_core::topology::resolve;
use raidlab_core::workload::{SpanError, Workload};
use raidlab_sim::{simulate, SimError};

fn run(topo: &str, wl: &str) -> RunResult {
    try_run(topo, wl).unwrap_or_else(|e| panic!("{topo} | {wl}: {e}"))
}

fn try_run(topo: &str, wl: &str) -> Result<RunResult, SimError> {
    try_run_in(&PresetDb::builtin(), topo, wl)
}

/// `topo` under `wl` (seed 1) with the presets of `db`.
fn run_in(db: &PresetDb, topo: &str, wl: &str) -> RunResult {
    try_run_in(db, topo, wl).unwrap_or_else(|e| panic!("{topo} | {wl}: {e}"))
}

fn try_run_in(db: &PresetDb, topo: &str, wl: &str) -> Result<RunResult, SimError> {
    let t = resolve(topo, db).unwrap_or_else(|e| panic!("{topo}: {e}"));
    let w = Workload::parse(wl).unwrap_or_else(|e| panic!("{wl}: {e}"));
    simulate(&t, &w, 1)
}

fn mbps(topo: &str, wl: &str) -> f64 {
    run(topo, wl).summary.mbps
}

fn json_without_wall(r: &RunResult) -> String {
    let mut v = serde_json::to_value(r).unwrap();
    v["sim"]["wall_s"] = serde_json::Value::Null;
    v.to_string()
}

#[test]
fn same_inputs_and_seed_give_identical_json() {
    for (t, w) in [
        (
            "adaptec5085(raid5[stripe=64k](5*x25e))",
            "preset=heavy rw=randwrite bs=8k state=steady runtime=0.3",
        ),
        (
            "raid0(adaptec5085[mode=volume](4*x25e),adaptec5085[mode=volume](4*x25e))",
            "preset=light rw=randrw bs=4k runtime=0.2",
        ),
        (
            "adaptec5085(raid10[stripe=64k](4*hdd-sas10k))",
            "preset=heavy rw=randread bs=8k runtime=0.5",
        ),
        (
            "raid6[impl=md](6*s3500-80)",
            "rw=randwrite bssplit=4k/50:64k/50 iodepth=8 runtime=0.2 random_distribution=zipf:1.1",
        ),
    ] {
        let a = json_without_wall(&run(t, w));
        let b = json_without_wall(&run(t, w));
        assert_eq!(a, b, "{t} | {w}");
    }
    // A different seed changes the run.
    let a = run(
        "x25e",
        "rw=randwrite bs=4k iodepth=4 runtime=0.2 state=steady",
    );
    let db = PresetDb::builtin();
    let t = resolve("x25e", &db).unwrap();
    let w = Workload::parse("rw=randwrite bs=4k iodepth=4 runtime=0.2 state=steady").unwrap();
    let b = simulate(&t, &w, 2).unwrap();
    assert_ne!(json_without_wall(&a), json_without_wall(&b));
}

#[test]
fn every_construct_simulates() {
    let cases = [
        ("x25e", "preset=latency rw=randread bs=4k runtime=0.05"),
        ("raid0(2*x25e)", "rw=read bs=64k runtime=0.05"),
        ("raid1(3*s3500-80)", "rw=randread bs=4k iodepth=16 runtime=0.05"),
        ("raid10(4*x25e)", "rw=randwrite bs=4k iodepth=16 runtime=0.05"),
        ("raid5[layout=left-asymmetric](4*x25e)", "rw=write bs=192k iodepth=4 runtime=0.05"),
        ("raid5[layout=right-symmetric,stripe=128k](4*x25e)", "rw=randwrite bs=4k iodepth=4 runtime=0.05"),
        ("raid6[layout=right-asymmetric](5*x25e)", "rw=randwrite bs=16k iodepth=4 runtime=0.05"),
        ("concat(x25e, s3500-80)", "rw=randread bs=4k iodepth=8 runtime=0.05"),
        ("raid0(raid1(2*x25e), raid1(2*x25e))", "rw=randrw bs=4k iodepth=8 runtime=0.05"),
        ("raid5[spares=1](4*x25e)", "rw=randwrite bs=4k iodepth=8 runtime=0.05"),
        ("host[cores=2,ghz=3.0](raid5[impl=windows](4*x25e))", "rw=write bs=8k runtime=0.05"),
        ("raid0[impl=lvm](hba[mode=jbod](4*x25e))", "rw=randread bs=4k iodepth=32 runtime=0.05"),
        ("adaptec5085[cache=wt,readahead=off](raid5(5*x25e[wc=off]))", "rw=randwrite bs=4k iodepth=8 runtime=0.05"),
        ("adaptec5085[readahead=on](raid0(4*x25e))", "rw=randread bs=4k iodepth=8 runtime=0.05"),
        ("adaptec5085[cache_mb=64,pcie=2x8](raid0(raid1(2*x25e),raid1(2*x25e)))", "rw=randwrite bs=8k iodepth=8 runtime=0.05"),
        ("areca1680(raid0(12*mtron7535))", "rw=randread bs=1m numjobs=10 size=4g runtime=0.05"),
        ("megaraid9265(raid10[stripe=256k](8*s3500-480))", "rw=randrw rwmixread=70 bs=4k numjobs=8 iodepth=8 runtime=0.05"),
        ("raid1[impl=md](megaraid9365[mode=jbod](2*s3500-80))", "rw=randread bs=4k iodepth=16 runtime=0.05"),
        ("megaraid9361(raid1(2*s3500-80))", "rw=randread bs=4k iodepth=16 runtime=0.05"),
        ("hdd-sas15k[wc=on]", "rw=randwrite bs=8k iodepth=8 runtime=0.2"),
        ("adaptec5085(raid5(5*hdd-sas10k))", "preset=heavy rw=randwrite bs=8k runtime=0.2"),
        ("s3500-800[op=20%,state=fob]", "rw=randwrite bs=4k iodepth=4 runtime=0.05"),
        ("x25e", "rw=rw rwmixread=33 percentage_random=50 bs=8k runtime=0.05 ramp_time=0.01 thinktime=20"),
        ("x25e", "rw=randread bs=4k random_distribution=pareto:0.9 runtime=0.05"),
        ("x25e", "rw=randwrite bs=4k size=1m"),
    ];
    for (t, w) in cases {
        let r = run(t, w);
        assert!(r.summary.iops > 0.0, "{t} | {w}: no I/O");
        assert!(
            r.summary.lat_avg_ms > 0.0 && r.summary.lat_max_ms >= r.summary.lat_p99_ms,
            "{t} | {w}"
        );
        assert!(r.components.iter().filter(|c| c.bottleneck).count() <= 1);
        assert_eq!(r.engine, "sim");
    }
}

#[test]
fn one_pass_without_runtime_issues_size_over_bs_per_job() {
    let r = run("x25e", "rw=randwrite bs=4k size=1m numjobs=3");
    assert_eq!(r.sim.host_ios, 3 * 256);
    let r = run("x25e", "rw=read bs=64k size=1m");
    assert_eq!(r.sim.host_ios, 16);
}

#[test]
fn block_larger_than_volume_is_an_input_error() {
    let e = try_run("x25e", "rw=read bs=64k size=32k").unwrap_err();
    assert!(
        matches!(e, SimError::Span(SpanError::BlockTooLarge { .. })),
        "{e}"
    );
    let e = try_run("x25e", "rw=read bs=4k size=1t").unwrap_err();
    assert!(
        matches!(e, SimError::Span(SpanError::SizeTooLarge { .. })),
        "{e}"
    );
}

#[test]
fn drive_state_changes_write_amplification() {
    let wa = |st: &str| {
        let r = run(
            "x25e",
            &format!("rw=randwrite bs=4k iodepth=32 runtime=0.5 state={st}"),
        );
        r.components[0].write_amplification.unwrap()
    };
    let (fob, steady) = (wa("fob"), wa("steady"));
    assert!(fob < 1.05, "a fresh drive does not collect: {fob}");
    assert!(steady > 3.0, "steady state collects: {steady}");
}

#[test]
fn the_waf_metric_is_the_mean_of_the_drives_written_to() {
    let wl = "rw=randwrite bs=4k iodepth=32 runtime=0.3 state=steady";
    let r = run("raid0(2*x25e)", wl);
    let was: Vec<f64> = r
        .components
        .iter()
        .filter_map(|c| c.write_amplification)
        .collect();
    assert_eq!(was.len(), 2);
    let waf = r.metric("waf").expect("two drives written to");
    assert!((waf - (was[0] + was[1]) / 2.0).abs() < 1e-12);
    assert_eq!(r.metric("iops"), Some(r.summary.iops));
    assert_eq!(r.metric("write_iops"), Some(r.summary.write.iops));
    let reads = run("x25e", "rw=randread bs=4k iodepth=4 runtime=0.2");
    assert_eq!(
        reads.metric("waf"),
        None,
        "a read-only run has no write amplification"
    );
}

#[test]
fn write_cache_off_makes_writes_wait_for_nand() {
    // Steady state after a ramp: a write into the buffer waits for the
    // drive's garbage-collection-bound drain rate; without the buffer it
    // waits for its own program as well.
    let wl = "preset=latency rw=randwrite bs=4k runtime=0.5 ramp_time=0.5";
    let on = run("x25e", wl);
    let off = run("x25e[wc=off]", wl);
    assert!(
        off.summary.lat_avg_ms > 2.0 * on.summary.lat_avg_ms,
        "{} vs {}",
        off.summary.lat_avg_ms,
        on.summary.lat_avg_ms
    );
}

#[test]
fn cache_hits_send_no_device_command() {
    // A single drive behind the controller: random reads over 64 MB stay in
    // its cache after the first pass and skip the member command's RoC work;
    // over the whole drive they miss and pay it. The RoC limits both.
    let t = "adaptec5085[mode=volume](x25e)";
    let hits = run(t, "preset=light rw=randread bs=4k runtime=0.3 size=64m");
    let misses = run(t, "preset=light rw=randread bs=4k runtime=0.3");
    assert!(
        hits.summary.iops > 1.2 * misses.summary.iops,
        "hits {} vs misses {}",
        hits.summary.iops,
        misses.summary.iops
    );
}

#[test]
fn read_ahead_serves_read_modify_write_pre_reads() {
    // Sequential 8 KB writes to a software RAID 5 over controller volumes
    // read old data and parity first, in order: the volumes' read-ahead
    // serves those reads, and the writes landing in the cache leave the
    // rest of each window good, so read-ahead makes the writes faster.
    let t = |ra: &str| {
        format!(
            "raid5[impl=windows,stripe=64k](adaptec5085[mode=volume,readahead={ra}](4*x25e),\
             adaptec5085[mode=volume,readahead={ra}](4*x25e))"
        )
    };
    let wl = "preset=latency rw=write bs=8k runtime=0.5";
    let (on, off) = (run(&t("adaptive"), wl), run(&t("off"), wl));
    assert!(
        on.summary.lat_avg_ms < 0.9 * off.summary.lat_avg_ms,
        "read-ahead {} ms vs none {} ms",
        on.summary.lat_avg_ms,
        off.summary.lat_avg_ms
    );
}

#[test]
fn writes_larger_than_the_drive_buffer_stream_through_it() {
    // The X25-E buffers 256 KB. Sequential writes at QD1 run at the NAND's
    // program rate whether a write fits the buffer or fills it or more:
    // its pages program as they come off the link.
    let rate = |bs: &str| {
        mbps(
            "x25e",
            &format!("preset=latency rw=write bs={bs} runtime=0.5"),
        )
    };
    let (fits, fills, twice) = (rate("128k"), rate("256k"), rate("512k"));
    for (bs, r) in [("256k", fills), ("512k", twice)] {
        assert!(r > 0.95 * fits, "{bs}: {r} MB/s vs 128k: {fits} MB/s");
    }
}

#[test]
fn saturated_resource_is_flagged() {
    let r = run(
        "adaptec5085(raid0[stripe=64k](4*x25e))",
        "preset=light rw=randread bs=4k runtime=0.3",
    );
    let b: Vec<_> = r.components.iter().filter(|c| c.bottleneck).collect();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].kind, "controller");
    let r = run("x25e", "preset=latency rw=randread bs=4k runtime=0.1");
    assert!(
        r.components.iter().all(|c| !c.bottleneck),
        "QD1 saturates nothing"
    );
}

#[test]
fn steady_state_warm_up_is_fast_and_memory_is_bounded() {
    // Eight 800 GB drives in steady state: the FTL folds, so this is quick.
    let t0 = std::time::Instant::now();
    let r = run(
        "raid5(8*s3500-800)",
        "rw=randwrite bs=4k iodepth=16 runtime=0.01 state=steady",
    );
    assert!(r.summary.iops > 0.0);
    // Generous bound for a debug build on a shared machine; the release
    // figure is in the README (well under a second per drive).
    assert!(t0.elapsed().as_secs_f64() < 60.0);
}

/// md computes RAID 5 parity in one thread per array (raid5d; stripe
/// handling is not spread over workers unless group_thread_cnt is raised
/// from 0), so a slow CPU caps sequential writes at one core's parity rate
/// however many cores the host has.
#[test]
fn software_parity_runs_on_one_thread_per_array() {
    // 5 GB/s per core at 2.5 GHz (host preset) is 0.5 GB/s at 0.25 GHz.
    let one_core_mbps = 500.0;
    let r = run(
        "host[cores=8,ghz=0.25](raid5[stripe=64k](8*s3500-800))",
        "rw=write bs=1m iodepth=8 runtime=0.5",
    );
    assert!(
        r.summary.mbps <= one_core_mbps,
        "parity thread caps the array: {} MB/s",
        r.summary.mbps
    );
    assert!(
        r.summary.mbps > 0.6 * one_core_mbps,
        "and keeps it busy: {} MB/s",
        r.summary.mbps
    );
    // One busy thread out of eight cores, plus the block layer.
    assert!(
        r.host.cpu_util_pct > 10.0 && r.host.cpu_util_pct < 25.0,
        "{} %",
        r.host.cpu_util_pct
    );
    // RAID 0 has no parity thread: the same host is not the limit.
    let r0 = run(
        "host[cores=8,ghz=0.25](raid0[stripe=64k](8*s3500-800))",
        "rw=write bs=1m iodepth=8 runtime=0.5",
    );
    assert!(r0.summary.mbps > 2.0 * r.summary.mbps);
}

/// An implementation that reads before every RAID 5 write (the `windows`
/// profile) loses md's full-stripe path: at 128 KB (partial stripes, both
/// read-modify-write) the two are level; at 896 KB md writes two whole
/// 448 KB stripes without reads while the read-first one reads as much as
/// it writes over the same SATA links (and its X25-Es program their
/// buffered writes before each read).
#[test]
fn read_first_raid5_loses_the_full_stripe_path() {
    let mbps = |imp: &str, bs: &str| {
        run(
            &format!("raid5[impl={imp},stripe=64k](8*x25e)"),
            &format!("rw=write bs={bs} iodepth=32 runtime=0.5"),
        )
        .summary
        .mbps
    };
    let (md_small, rf_small) = (mbps("md", "128k"), mbps("windows", "128k"));
    assert!(
        (rf_small / md_small - 1.0).abs() < 0.1,
        "128 KB: md {md_small}, read-first {rf_small} MB/s"
    );
    let (md_big, rf_big) = (mbps("md", "896k"), mbps("windows", "896k"));
    assert!(
        md_big > 1.5 * rf_big,
        "896 KB: md {md_big}, read-first {rf_big} MB/s"
    );
}

/// The Adaptec's write-back cache flushes through one firmware task: RAID 0
/// random writes stop scaling with drives once that task is busy
/// (petrov2010: 8 KB writes, 6,289/s on 4 X25-E and 7,807/s on 8). Without
/// the task's costs (its destages and the member mappings it makes before
/// acknowledging) the same arrays scale with their drives.
#[test]
fn write_back_destage_saturates_the_flush_task() {
    let mut db = PresetDb::builtin();
    db.load_str(
        "[free-flush]\nbase = \"adaptec5085\"\ndestage_task_us = 0\nroc_member_cmd_us = 0\n",
    )
    .unwrap();
    let w = |ctrl: &str, n: u32| {
        let topo = format!("{ctrl}(raid0[stripe=64k]({n}*x25e))");
        run_in(&db, &topo, "preset=light rw=randwrite bs=8k runtime=1")
    };
    let gain = |ctrl: &str| w(ctrl, 8).summary.iops / w(ctrl, 4).summary.iops;
    let (with, without) = (gain("adaptec5085"), gain("free-flush"));
    assert!(with < 1.4, "8 drives give {with:.2}x the writes of 4");
    assert!(without > 1.6, "without the flush task: {without:.2}x");
    let eight = w("adaptec5085", 8);
    let ctrl = eight
        .components
        .iter()
        .find(|c| c.kind == "controller")
        .unwrap();
    assert!(
        ctrl.bottleneck,
        "the controller limits: {:?}",
        eight.components
    );
}

#[test]
fn single_drive_volumes_destage_through_the_flush_task() {
    // The flush task is the controller's, whatever its volumes are: eight
    // one-drive write-back volumes striped by the host take small random
    // writes no faster than one eight-drive hardware RAID 0 on the same
    // controller (the task's turnover bounds both).
    let wl = "preset=heavy rw=randwrite bs=4k state=steady runtime=1";
    let volumes = run("raid0[stripe=64k](adaptec5085[mode=volume](8*x25e))", wl);
    let array = run("adaptec5085(raid0[stripe=64k](8*x25e))", wl);
    let ratio = volumes.summary.iops / array.summary.iops;
    assert!(
        (0.8..1.25).contains(&ratio),
        "volumes {} vs array {} IOPS",
        volumes.summary.iops,
        array.summary.iops
    );
}

#[test]
fn collections_for_the_reserve_run_behind_the_writes() {
    // A drive with its cache off at queue depth 1 has idle time to collect
    // in: a random write in steady state waits for its own program, not for
    // the collection it starts (petrov2010 Table 3: 0.435 ms random against
    // 0.455 ms sequential). Waiting for the collection's firmware work made
    // random writes 22 % slower than sequential ones.
    let wl = "preset=latency bs=4k runtime=3 ramp_time=2";
    let random = run("x25e[wc=off]", &format!("{wl} rw=randwrite"));
    let sequential = run("x25e[wc=off]", &format!("{wl} rw=write"));
    let ratio = random.summary.lat_avg_ms / sequential.summary.lat_avg_ms;
    assert!(ratio < 1.1, "random / sequential write latency {ratio}");
}

/// A drive with many dies used to exhaust one die's blocks in the
/// simulation ("GC reserve exhausted") when its share of the data drifted
/// up: the FTL must place pages on dies with room.
#[test]
fn many_dies_do_not_exhaust_one_die_of_the_simulated_flash() {
    let cases = [
        // 224 dies at 64 KiB random writes (found by calibrate's search).
        (
            "base = \"s3500-800\"\ndies_per_channel = 28\ngc_pacing = false\nspare_pct = 14.8\nprogram_us = 325\nchannel_mbps = 800\nfw_write_us = 60\nread_us = 50",
            "rw=randwrite bs=64k iodepth=32 state=steady runtime=3",
        ),
        // 1 % spare on 288 dies of 8 KiB pages: GC found its open block full
        // and no free block left ("flash exhausted") within a minute.
        (
            "base = \"s3500-480\"\ndies_per_channel = 36\npage_kb = 8\npages_per_block = 512\nprogram_us = 3473\nchannel_mbps = 96.6\nspare_pct = 1\ngc_pacing = false",
            "rw=randwrite bs=64k numjobs=4 iodepth=32 state=steady runtime=60",
        ),
        // A PCIe 4.0 drive with 1 % spare at 4 KiB.
        (
            "base = \"pm9a3\"\ndies_per_channel = 18\npage_kb = 8\npages_per_block = 2048\nspare_pct = 1",
            "rw=randwrite bs=4k numjobs=4 iodepth=32 state=steady runtime=5",
        ),
    ];
    for (preset, workload) in cases {
        let mut db = PresetDb::builtin();
        db.load_str(&format!("[t]\n{preset}\n")).expect("preset");
        let r = run_in(&db, "t", workload);
        assert!(r.summary.iops > 0.0, "{preset}: {workload}");
    }
}

/// A disk whose write cache is full takes new writes as destages free room,
/// oldest first: none waits behind seconds of reordered cached writes.
#[test]
fn a_full_disk_write_cache_starves_no_write() {
    let r = run(
        "hdd-sas15k[wc=on]",
        "rw=randwrite bs=8k iodepth=8 runtime=2",
    );
    assert!(r.summary.iops > 100.0, "{} IOPS", r.summary.iops);
    // Eight writes ahead of a write, each freeing room with one random
    // positioning (a few ms to a full-stroke seek of ~8 ms plus a turn).
    assert!(
        r.summary.lat_max_ms < 200.0,
        "max latency {} ms",
        r.summary.lat_max_ms
    );
}

/// Device commands (reads, writes) of each device in the result.
fn device_io(r: &RunResult) -> Vec<(u64, u64)> {
    r.components
        .iter()
        .filter_map(|c| c.io.as_ref().map(|io| (io.reads, io.writes)))
        .collect()
}

/// Several volumes side by side are one fio job's several filenames: each
/// job turns from one volume to the next after every I/O, and keeps each
/// volume's offsets apart, so sequential streams stay sequential on each.
#[test]
fn jobs_address_several_volumes_in_turn() {
    let r = run(
        "host(2*x25e)",
        "rw=randread bs=4k iodepth=1 numjobs=1 runtime=0.05",
    );
    assert_eq!(r.resolved.as_ref().map(|x| x.volumes), Some(2));
    let io = device_io(&r);
    assert_eq!(io.len(), 2);
    assert!(
        io[0].0.abs_diff(io[1].0) <= 1,
        "one I/O each in turn: {io:?}"
    );
    // Sequential reads of a whole pass: each drive reads its own volume
    // through once, at its own sequential rate, side by side.
    let one = mbps("x25e", "rw=read bs=128k iodepth=4 size=64m");
    let two = mbps("host(2*x25e)", "rw=read bs=128k iodepth=4 size=64m");
    assert!(two > 1.8 * one, "two volumes {two} vs one {one} MB/s");
    // sync=1 flushes go to the volume written: both drives flush.
    let s = run(
        "host(2*s3500-480[wc=on])",
        "rw=randwrite bs=4k iodepth=1 numjobs=1 sync=1 runtime=0.05",
    );
    let io = device_io(&s);
    assert!(
        io.iter().all(|&(_, w)| w > 0),
        "both drives written: {io:?}"
    );
}

#[test]
fn a_controller_in_jbod_mode_exposes_its_drives_as_volumes() {
    let r = run(
        "hba9500[mode=jbod](4*pm9a3)",
        "rw=randread bs=4k iodepth=32 numjobs=4 runtime=0.05",
    );
    assert_eq!(r.resolved.as_ref().map(|x| x.volumes), Some(4));
    let io = device_io(&r);
    let (lo, hi) = (
        io.iter().map(|x| x.0).min().unwrap(),
        io.iter().map(|x| x.0).max().unwrap(),
    );
    assert!(
        lo as f64 > 0.9 * hi as f64,
        "the drives share the jobs: {io:?}"
    );
}

/// `hipri` polls for completions where the host's kernel and the volumes
/// can: NVMe drives addressed directly, and md arrays of them where md
/// passes polled I/O down (Linux 6.x, `host2023`); elsewhere it is one
/// clear error. A polled I/O costs the host's `block_layer_poll_us`, so a
/// lone job's QD1 latency falls by the difference.
#[test]
fn hipri_polls_where_the_kernel_and_the_volumes_can() {
    let w = "rw=randread bs=4k iodepth=1 runtime=0.05";
    let irq = run("host[profile=host2020](pm9a3)", w);
    let poll = run("host[profile=host2020](pm9a3)", &format!("{w} hipri=1"));
    let gain = irq.summary.lat_avg_ms - poll.summary.lat_avg_ms;
    assert!(
        (0.0009..=0.0011).contains(&gain),
        "QD1: {} ms by interrupt, {} ms polled",
        irq.summary.lat_avg_ms,
        poll.summary.lat_avg_ms
    );
    run(
        "host[profile=host2023](raid0(2*pm9a3))",
        &format!("{w} hipri=1"),
    );
    let refused = |t: &str, want: &str| {
        let e = try_run(t, &format!("{w} hipri=1")).unwrap_err().to_string();
        assert!(e.starts_with("hipri: ") && e.contains(want), "{t}: {e}");
    };
    refused("host[profile=host2020](raid0(2*pm9a3))", "Linux 5.x md");
    refused("host[profile=host2023](raid0[impl=lvm](2*pm9a3))", "not md");
    refused("host[profile=host2020](s3500-800)", "not an NVMe drive");
    refused("host[profile=host2020](hba9500(pm9a3))", "adapter");
    refused("pm9a3", "no polled completions");
}

/// fio's rate limits: each job issues at most its cap per direction, the
/// direction behind its clock first; a capped job that a fast drive can
/// serve does exactly the caps, whether it quiesces before sleeping
/// (`inline`, fio's default) or sleeps with I/Os in flight (`offload`).
#[test]
fn rate_limits_cap_each_job_and_direction() {
    for mode in ["inline", "offload"] {
        for process in ["linear", "poisson"] {
            let r = run(
                "host[profile=host2020](pm9a3)",
                &format!(
                    "rw=randrw rwmixread=50 bs=4k numjobs=3 iodepth=16 rate_iops=2000,1000 \
                     rate_process={process} io_submit_mode={mode} runtime=1 state=steady"
                ),
            );
            let (reads, writes) = (r.summary.read.iops, r.summary.write.iops);
            // Linear pacing meets its cap; Poisson arrivals in a 1 s window
            // are a Poisson count, within 4 standard deviations (sqrt n).
            let within = |got: f64, want: f64| {
                let tol = match process {
                    "poisson" => 4.0 / want.sqrt(),
                    _ => 0.03,
                };
                (got / want - 1.0).abs() < tol
            };
            assert!(within(reads, 6000.0), "{mode}/{process}: {reads} reads/s");
            assert!(
                within(writes, 3000.0),
                "{mode}/{process}: {writes} writes/s"
            );
        }
    }
    // A byte cap: 8 MiB/s of 4 KiB reads is 2,048 a second.
    let r = run("pm9a3", "rw=randread bs=4k rate=8m runtime=1");
    assert!(
        (r.summary.iops / 2048.0 - 1.0).abs() < 0.02,
        "{}",
        r.summary.iops
    );
    // A cap the drive cannot meet leaves it saturated: the cap is a ceiling.
    let r = run(
        "x25e",
        "rw=randread bs=4k iodepth=32 rate_iops=1000000 runtime=0.2",
    );
    assert!(r.summary.iops < 50_000.0, "{}", r.summary.iops);
}

/// fio's thinktime: a job stalls after each I/O once its I/Os in flight
/// have completed, so it keeps one in flight whatever its iodepth: 1 ms of
/// think time allows under 1,000 I/Os a second per job.
#[test]
fn thinktime_keeps_one_io_in_flight() {
    let r = run(
        "pm9a3",
        "rw=randread bs=4k iodepth=8 numjobs=2 thinktime=1000 runtime=0.5",
    );
    assert!(
        (1800.0..2000.0).contains(&r.summary.iops),
        "{} IOPS",
        r.summary.iops
    );
}

/// fio's `thinktime_blocks`: the job counts its completed I/Os and stalls
/// once 8 more are in since its last think time, waits for those still in
/// flight, then thinks. Completions while it waits count towards the next
/// stall, so after the first it issues 8, stalls at the first completion
/// and thinks again: 8 reads per 1 ms and an X25-E's burst of 8 (about
/// 0.47 ms), some 5,400 a second, where a think after every read allows
/// 830 (1.2 ms a read). Counting issued I/Os comes to the same.
#[test]
fn thinktime_blocks_let_a_job_issue_that_many_between_thinks() {
    let iops = |w: &str| run("x25e", w).summary.iops;
    let every = iops("rw=randread bs=4k iodepth=8 thinktime=1000 runtime=0.5");
    let eight = iops("rw=randread bs=4k iodepth=8 thinktime=1000 thinktime_blocks=8 runtime=0.5");
    let issued = iops(
        "rw=randread bs=4k iodepth=8 thinktime=1000 thinktime_blocks=8 thinktime_blocks_type=issue runtime=0.5",
    );
    assert!((800.0..850.0).contains(&every), "{every} IOPS");
    assert!((5000.0..5800.0).contains(&eight), "{eight} IOPS");
    assert!(
        (eight - issued).abs() < 0.05 * eight,
        "{issued} against {eight} IOPS"
    );
    // Above the queue depth, the job keeps its queue full between thinks.
    let deep = iops("rw=randread bs=4k iodepth=8 thinktime=1000 thinktime_blocks=64 runtime=0.5");
    assert!(deep > 1.5 * eight, "{deep} against {eight} IOPS");
}

/// fio's `thinktime_iotime`: a job that thinks 0.1 s once it has issued
/// I/O for 0.4 s since its last think moves four fifths of what it moves
/// without thinking; `thinktime_spin` spins through the stall's start, so
/// a 300 µs spin before a 100 µs think stalls as a 300 µs think does,
/// with the job's core busy instead of idle.
#[test]
fn think_time_by_io_time_and_spun() {
    let topo = "host[profile=host2020](pm9a3)";
    let go = |w: &str| run(topo, &format!("rw=randread bs=4k ramp_time=0 {w}"));
    let plain = go("runtime=2").summary.iops;
    let cycled = go("runtime=2 thinktime=100000 thinktime_iotime=0.4")
        .summary
        .iops;
    assert!(
        (cycled / plain - 0.8).abs() < 0.02,
        "{cycled} against {plain} IOPS"
    );
    let slept = go("runtime=0.5 thinktime=300");
    let spun = go("runtime=0.5 thinktime=100 thinktime_spin=300");
    assert!(
        (spun.summary.iops / slept.summary.iops - 1.0).abs() < 0.01,
        "{} against {} IOPS",
        spun.summary.iops,
        slept.summary.iops
    );
    let cpu = |r: &RunResult| r.host.cpu_util_pct;
    assert!(
        cpu(&spun) > 20.0 * cpu(&slept),
        "{} against {} % CPU",
        cpu(&spun),
        cpu(&slept)
    );
}

/// fio's `end_fsync`: a one-pass job that wrote flushes its volume once its
/// last write is back, and its run lasts until the flush is. 2,000 random
/// 4 KiB writes into a 10k rpm disk's write cache take 12 ms; flushing
/// them to the platters takes about a second, so the job's rate falls to
/// about 2,000 IOPS. A time-based run measures its window only.
#[test]
fn end_fsync_makes_a_one_pass_job_wait_for_its_cache() {
    let go = |w: &str| {
        run(
            "hdd-sas10k[wc=on]",
            &format!("rw=randwrite bs=4k size=64m iodepth=4 {w}"),
        )
    };
    let cached = go("number_ios=2000");
    let synced = go("number_ios=2000 end_fsync=1");
    assert!(cached.summary.iops > 50_000.0, "{}", cached.summary.iops);
    assert!(
        (1_000.0..4_000.0).contains(&synced.summary.iops),
        "{} IOPS with the end flush",
        synced.summary.iops
    );
    assert_eq!(synced.sim.host_ios, 2_000, "the flush is not an I/O");
    let timed = |w: &str| go(&format!("runtime=0.2 ramp_time=0 {w}")).summary.iops;
    assert_eq!(timed(""), timed("end_fsync=1"));
}

/// Without page cache program a die loads each page's data only once its
/// program ends, so sequential writes pay transfer and program per page:
/// the X25-E's 20 dies give 20 x 4 KB / (102 + 300 us) ~ 204 MB/s
/// (petrov2010 measures 190-200), while the same flash with cache program
/// runs into its 255 MB/s link.
#[test]
fn a_die_without_cache_program_pays_transfer_and_program_per_page() {
    let mut db = PresetDb::builtin();
    db.load_str("[cached]\nbase = \"x25e\"\ncache_program = true\n")
        .unwrap();
    let seq = |dev: &str| {
        run_in(&db, dev, "rw=write bs=128k iodepth=32 runtime=0.5")
            .summary
            .mbps
    };
    let (plain, cached) = (seq("x25e"), seq("cached"));
    assert!((185.0..215.0).contains(&plain), "x25e {plain} MB/s");
    assert!(
        cached > 1.15 * plain,
        "cache program {cached} vs {plain} MB/s"
    );
}

/// A controller that destages each member's dirty chunk by read-modify-write
/// from its queue gains nothing from writes that cover whole stripes: the
/// Adaptec's 5-SSD RAID 5 moves aligned 256 KB random writes at about the
/// rate of 128 KB ones (petrov2010 Tables 7 and 9), where a controller that
/// gathers whole stripes writes them much faster.
#[test]
fn a_chunk_by_chunk_destage_gains_nothing_from_whole_stripes() {
    let mut db = PresetDb::builtin();
    db.load_str("[stripes]\nbase = \"adaptec5085\"\nfull_stripe_destage = true\n")
        .unwrap();
    let mbps = |ctrl: &str, bs: &str| {
        let topo = format!("{ctrl}(raid5[stripe=64k](5*x25e))");
        let wl = format!("preset=light rw=randwrite bs={bs} runtime=1");
        run_in(&db, &topo, &wl).summary.mbps
    };
    let (half, whole) = (mbps("adaptec5085", "128k"), mbps("adaptec5085", "256k"));
    assert!(
        whole < 1.15 * half,
        "chunk by chunk: {whole} vs {half} MB/s"
    );
    let gathered = mbps("stripes", "256k");
    assert!(
        gathered > 1.3 * whole,
        "whole stripes: {gathered} vs {whole} MB/s"
    );
}

/// Read data passes through the controller's cache memory as it arrives
/// from the member, so at queue depth 1 the controller adds about the same
/// time to a 64 KB read as to a 4 KB one (petrov2010 Table 9: 0.12-0.19 ms
/// over the bare drive at 4-64 KB), where holding the data until it had all
/// arrived and then copying it at the 700 MB/s data path would add ~90 us
/// more at 64 KB.
#[test]
fn read_data_crosses_cache_memory_as_it_arrives() {
    let lat = |topo: &str, bs: &str| {
        let wl = format!("preset=latency rw=randread bs={bs} runtime=0.3");
        run(topo, &wl).summary.lat_avg_ms
    };
    let array = "adaptec5085(raid0[stripe=64k](4*x25e))";
    let over = |bs: &str| (lat(array, bs) - lat("x25e", bs)) * 1000.0;
    let (small, large) = (over("4k"), over("64k"));
    assert!(
        large < small + 40.0,
        "controller adds {small:.0} us to 4 KB, {large:.0} us to 64 KB"
    );
}

/// A controller's read-ahead fetches only what it does not already have:
/// sequential reads larger than its window find their head in the last
/// window and fetch the rest, instead of reading the window's bytes a
/// second time. At queue depth 1, 512 KB reads of a RAID 0 behind the
/// Adaptec's adaptive read-ahead (256 KB windows) are then no slower than
/// without read-ahead (petrov2010 Table 10: 1.168 ms).
#[test]
fn read_ahead_does_not_fetch_its_window_twice() {
    let lat = |ra: &str| {
        let topo = format!("adaptec5085[readahead={ra}](raid0[stripe=64k](4*x25e))");
        run(&topo, "preset=latency rw=read bs=512k runtime=0.5")
            .summary
            .lat_avg_ms
    };
    let (adaptive, off) = (lat("adaptive"), lat("off"));
    assert!(
        adaptive < 1.05 * off,
        "512 KB sequential reads: {adaptive} ms with read-ahead, {off} ms without"
    );
}

/// A host-run array is handed each request inside the submitting call
/// (md_submit_bio): its mapping work is booked on the job's thread right
/// after the block layer's, with no timed step of the host's between them.
/// At queue depth 1, where nothing else runs on the thread, an md RAID 0
/// then costs the simulator no more timed events per I/O than the bare
/// drive does (the array's own event replaces the host's hand-on), and a
/// controller's volume keeps the host's hand-on after the block layer.
#[test]
fn host_arrays_take_requests_in_the_submitting_call() {
    let w = "rw=randread bs=4k iodepth=1 size=4m";
    // Events per I/O and mean latency (ms).
    let measure = |topo: &str| {
        let r = run(topo, w);
        assert_eq!(r.sim.host_ios, 1024, "{topo}");
        let per_io = r.sim.events as f64 / r.sim.host_ios as f64;
        (per_io, r.summary.lat_avg_ms)
    };
    let (drive, drive_lat) = measure("host[profile=host2020](pm9a3)");
    let (md, md_lat) = measure("host[profile=host2020](raid0(2*pm9a3))");
    assert_eq!(
        md, drive,
        "md RAID 0 {md} vs one drive {drive} events per I/O"
    );
    assert!(
        md_lat > drive_lat,
        "md's work still costs: {md_lat} vs {drive_lat} ms"
    );
}

/// A job file's phases, simulated in turn on one topology.
fn phases(topo: &str, job: &str) -> Vec<RunResult> {
    let t = resolve(topo, &PresetDb::builtin()).unwrap();
    let p = raidlab_core::workload::parse_job_phases(job).unwrap();
    raidlab_sim::simulate_phases(&t, &p, 1, &|_| {}).unwrap()
}

/// fio runs stonewalled job sections one after another on the same
/// device: a later phase finds the drive as the earlier one left it. Here
/// a fresh drive (`state=fob`, nothing mapped, so reads are answered
/// without the flash) is written over 1 GiB, then read at random there:
/// the reads cost a flash read each, as on a drive written once, not the
/// fresh drive's few microseconds.
#[test]
fn a_later_phase_finds_the_drives_as_the_earlier_left_them() {
    let job = "[global]\nstate=fob\nsize=1g\n[fill]\nrw=write\nbs=128k\niodepth=4\n[read]\nstonewall\nrw=randread\nbs=4k\nruntime=0.2\n";
    let p = phases("x25e", job);
    assert_eq!(p.len(), 2);
    let after_fill = p[1].summary.lat_avg_ms;
    let fresh = run("x25e", "state=fob size=1g rw=randread bs=4k runtime=0.2");
    let written = run("x25e", "state=fill size=1g rw=randread bs=4k runtime=0.2");
    assert!(
        after_fill > 3.0 * fresh.summary.lat_avg_ms,
        "{after_fill} against fresh {}",
        fresh.summary.lat_avg_ms
    );
    let rel = after_fill / written.summary.lat_avg_ms - 1.0;
    assert!(
        rel.abs() < 0.05,
        "{after_fill} against written {}",
        written.summary.lat_avg_ms
    );
    // Each phase is reported on its own: its own window and events, and
    // the drives' state as the first phase set it.
    assert!(p[0].summary.write.iops > 0.0 && p[0].summary.read.iops == 0.0);
    assert!(p[1].summary.read.iops > 0.0 && p[1].summary.write.iops == 0.0);
    assert!(
        (p[1].sim.simulated_s - 0.2).abs() < 1e-6,
        "{}",
        p[1].sim.simulated_s
    );
    assert_eq!(p[0].resolved, p[1].resolved);
    // Deterministic, phase by phase.
    let again = phases("x25e", job);
    for (a, b) in p.iter().zip(&again) {
        assert_eq!(json_without_wall(a), json_without_wall(b));
    }
}

/// fio runs job sections without `stonewall` side by side: a reader and
/// a writer on one drive share it, each measured on its own over the same
/// window, and together they are the run's figures.
#[test]
fn sections_side_by_side_share_the_array_and_are_measured_each() {
    let job = "[global]\nioengine=libaio\nbs=4k\nsize=1g\nruntime=0.4\n[reader]\nrw=randread\niodepth=8\n[writer]\nrw=randwrite\niodepth=4\nnumjobs=2\n";
    let p = phases("raid0(2*x25e)", job);
    assert_eq!(p.len(), 1, "one phase of two sections");
    let r = &p[0];
    let names: Vec<&str> = r.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["reader", "writer"]);
    let (reader, writer) = (&r.sections[0].summary, &r.sections[1].summary);
    assert!(reader.read.iops > 0.0 && reader.write.iops == 0.0);
    assert!(writer.write.iops > 0.0 && writer.read.iops == 0.0);
    // The sections' figures add up to the run's.
    let rel = |a: f64, b: f64| (a / b - 1.0).abs();
    assert!(rel(reader.iops + writer.iops, r.summary.iops) < 1e-9);
    assert!(rel(reader.read.iops, r.summary.read.iops) < 1e-9);
    // The writers' random writes start the drives in random-write steady
    // state, as they would alone, and slow the reader against a reader
    // alone at the same depth.
    let canon = &r.resolved.as_ref().unwrap().topology;
    assert!(canon.contains("state=steady"), "{canon}");
    let alone = run(
        "raid0(2*x25e)",
        "rw=randread bs=4k iodepth=8 size=1g runtime=0.4 state=steady",
    );
    assert!(
        reader.read.lat_avg_ms > 1.5 * alone.summary.read.lat_avg_ms,
        "{} against {} alone",
        reader.read.lat_avg_ms,
        alone.summary.read.lat_avg_ms
    );
    // Deterministic.
    assert_eq!(
        json_without_wall(r),
        json_without_wall(&phases("raid0(2*x25e)", job)[0])
    );
}

/// A section side by side keeps its own queue depth, think time and rate:
/// a reader paced at 1,000 reads a second beside an unpaced one gets its
/// rate, the other what the drive gives.
#[test]
fn each_section_keeps_its_own_pace() {
    let job = "[global]\nioengine=libaio\nbs=4k\nsize=1g\nruntime=0.5\nrw=randread\n[paced]\nrate_iops=1000\niodepth=4\n[free]\niodepth=16\n";
    let p = phases("x25e", job);
    let (paced, free) = (&p[0].sections[0].summary, &p[0].sections[1].summary);
    assert!(
        (paced.read.iops / 1000.0 - 1.0).abs() < 0.05,
        "{}",
        paced.read.iops
    );
    assert!(
        free.read.iops > 10.0 * paced.read.iops,
        "{}",
        free.read.iops
    );
}

/// One phase through `simulate_phases` is the plain simulation.
#[test]
fn one_phase_is_the_plain_simulation() {
    let wl = "rw=randrw bs=8k iodepth=8 runtime=0.2";
    // An asynchronous engine, so that fio keeps the queue depth.
    let job = format!("[j]\nioengine=io_uring\n{}\n", wl.replace(' ', "\n"));
    let one = phases("raid5(4*x25e)", &job);
    let plain = run("raid5(4*x25e)", wl);
    assert_eq!(json_without_wall(&one[0]), json_without_wall(&plain));
}

/// fio's `latency_target`: the search settles on a deeper queue for a
/// looser target, and the window it measures (the depth it found, from
/// where it converged) keeps to the target at the percentile asked for.
/// A fixed run at the depth found meets the target too, and one at twice
/// the depth does not.
#[test]
fn a_latency_target_search_finds_the_deepest_queue_within_it() {
    let topo = "raid5(4*s3500-800)";
    let search = |target_us: u64| {
        run(
            topo,
            &format!("rw=randread bs=4k iodepth=128 runtime=5 latency_target={target_us} latency_window=100ms latency_percentile=99"),
        )
    };
    let mut depths = Vec::new();
    for target_us in [200u64, 500, 1000] {
        let r = search(target_us);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let [f] = r.latency_target[..] else {
            panic!("one search: {:?}", r.latency_target)
        };
        assert!((1..=128).contains(&f.depth), "{f:?}");
        let target_ms = target_us as f64 / 1e3;
        assert!(
            r.summary.lat_p99_ms <= target_ms * 1.02,
            "{target_us} us: p99 {} ms at depth {}",
            r.summary.lat_p99_ms,
            f.depth
        );
        let steady = r.sim.steady.as_ref().expect("a simulated window");
        assert!(!steady.judged && !steady.reached);
        let fixed = |qd: u32| {
            run(
                topo,
                &format!("rw=randread bs=4k iodepth={qd} runtime=1 ramp_time=0.2"),
            )
            .summary
            .lat_p99_ms
        };
        assert!(
            fixed(f.depth) <= target_ms * 1.02,
            "{target_us} us at {}",
            f.depth
        );
        if f.depth < 64 {
            assert!(
                fixed(2 * f.depth) > target_ms,
                "{target_us} us at {}",
                2 * f.depth
            );
        }
        depths.push(f.depth);
    }
    assert!(depths.windows(2).all(|w| w[0] < w[1]), "{depths:?}");
    // The same search twice: the same depth and figures.
    assert_eq!(
        json_without_wall(&search(500)),
        json_without_wall(&search(500))
    );
}

/// A target no queue depth meets (every I/O at depth 1 slower than it,
/// latency_percentile 100) ends the job in error, as fio's `lat_fatal`;
/// below 100 % fio stays at depth 1 instead.
#[test]
fn a_latency_target_missed_at_depth_1_ends_the_job_in_error() {
    let r = run(
        "x25e",
        "rw=randread bs=4k iodepth=32 runtime=1 latency_target=50",
    );
    let [e] = &r.errors[..] else {
        panic!("{:?}", r.errors)
    };
    assert_eq!(e.errno, 110);
    assert!(
        e.message
            .contains("latency_target=50us not met at queue depth 1"),
        "{}",
        e.message
    );
    let r = run(
        "x25e",
        "rw=randread bs=4k iodepth=32 runtime=1 latency_target=50 latency_percentile=90",
    );
    assert!(r.errors.is_empty());
    assert_eq!(r.latency_target[0].depth, 1);
    assert!(
        (r.summary.iops
            - run("x25e", "rw=randread bs=4k iodepth=1 runtime=1")
                .summary
                .iops)
            .abs()
            < 0.02 * r.summary.iops
    );
}

/// A search runs alone: beside another job section it is refused.
#[test]
fn a_latency_target_beside_other_jobs_is_refused() {
    let e = Workload::parse("rw=randread numjobs=2 latency_target=1ms")
        .unwrap_err()
        .to_string();
    assert!(e.contains("numjobs=1"), "{e}");
    let t = resolve("x25e", &PresetDb::builtin()).unwrap();
    let p = raidlab_core::workload::parse_job_phases(
        "[global]\nruntime=1\n[a]\nrw=randread\nlatency_target=1ms\n[b]\nrw=randwrite\n",
    )
    .unwrap();
    let e = raidlab_sim::simulate_phases(&t, &p, 1, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("latency_target searches one job"), "{e}");
}

/// fio's `steadystate`: jobs stop once the last `ss_dur` of their rate is
/// steady by the criterion. A drive in steady state stops after one
/// window; a fresh drive whose random writes slow as it fills runs on
/// until they level off; a criterion no rate meets runs to the runtime.
#[test]
fn fio_steadystate_stops_the_jobs_once_their_rate_is_steady() {
    let secs = |r: &RunResult| r.sim.simulated_s;
    let steady = run(
        "s3500-800",
        "rw=randwrite bs=4k iodepth=32 runtime=120 ss=iops_slope:1% ss_dur=10",
    );
    let s = steady.steadystate.as_ref().expect("a steadystate report");
    assert!(s.attained && s.iops.len() == 10, "{s:?}");
    assert!((10.0..11.5).contains(&secs(&steady)), "{}", secs(&steady));
    let fresh = run(
        "s3500-80[state=fob]",
        "rw=randwrite bs=4k iodepth=32 runtime=300 ss=iops:5% ss_dur=20",
    );
    let s = fresh.steadystate.as_ref().unwrap();
    assert!(s.attained && s.criterion.unwrap() < 5.0, "{s:?}");
    assert!((30.0..300.0).contains(&secs(&fresh)), "{}", secs(&fresh));
    // Its last window's rate is well below the fresh drive's first
    // seconds.
    let early = run(
        "s3500-80[state=fob]",
        "rw=randwrite bs=4k iodepth=32 runtime=5 ramp_time=0",
    );
    assert!(
        fresh.summary.iops < early.summary.iops,
        "{} vs {}",
        fresh.summary.iops,
        early.summary.iops
    );
    let never = run(
        "s3500-800",
        "rw=randwrite bs=4k iodepth=32 runtime=15 ss=iops:0.0001% ss_dur=5",
    );
    let s = never.steadystate.as_ref().unwrap();
    assert!(!s.attained && s.criterion.is_some(), "{s:?}");
    assert!((14.9..15.1).contains(&secs(&never)), "{}", secs(&never));
}

/// fio's `file_service_type` over a root of two volumes: round robin and
/// random spread a job's queue over both drives, so large reads move
/// about twice one drive's bandwidth; `sequential` keeps the queue on one
/// drive until its pass is done, so the pair reads at one drive's rate.
#[test]
fn file_service_type_decides_how_a_jobs_queue_spreads_over_volumes() {
    let mbps_of = |svc: &str| {
        let r = run(
            "host(2*x25e)",
            &format!("rw=read bs=1m iodepth=4 size=256m file_service_type={svc}"),
        );
        let reads: Vec<u64> = r
            .components
            .iter()
            .filter_map(|c| c.io.map(|io| io.reads))
            .collect();
        assert_eq!(reads.len(), 2);
        assert!(
            reads[0].abs_diff(reads[1]) * 20 < reads[0],
            "{svc}: {reads:?}"
        );
        r.summary.mbps
    };
    let (rr, random, seq) = (
        mbps_of("roundrobin"),
        mbps_of("random"),
        mbps_of("sequential"),
    );
    let one = mbps("x25e", "rw=read bs=1m iodepth=4 size=256m");
    assert!(
        rr > 1.8 * one && random > 1.5 * one,
        "rr {rr}, random {random}, one drive {one}"
    );
    assert!(
        (seq / one - 1.0).abs() < 0.05,
        "sequential {seq}, one drive {one}"
    );
    let e = Workload::parse("rw=read runtime=1 file_service_type=sequential")
        .unwrap_err()
        .to_string();
    assert!(e.contains("never finishes"), "{e}");
}
