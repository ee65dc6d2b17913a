//! The published phenomena of docs/phenomena.md, continued: p34 onwards
//! (flash, links, polling, adapters), on the simulator.

mod phen;
use phen::*;

/// Phenomenon 34: random writes confined to a small part of a full drive
/// are amplified far less than writes over all of it. The part's blocks
/// turn over among themselves while the rest of the drive holds still, so
/// greedy garbage collection finds nearly empty victims (Haas, Lee, Bonnet
/// and Leis, "SSD-iq", PVLDB 18(11), 2025: write amplification follows the
/// access pattern, not the drive). A PM9A3 960 GB in random-write steady
/// state writes within 15 % of the 76,500 IOPS SSD-iq measured over the
/// whole drive, at a write amplification over 4 (theirs: 4.2), and over
/// 10 GiB of it amplifies under 2.5, so its flash-bound rate is over 1.5
/// times the whole drive's (4.2 against 2.2 in the model, with pooled GC).
#[test]
fn p34_random_writes_to_a_small_span_are_amplified_less() {
    let run = |span: &str| {
        let r = run(
            "host[profile=host2020](pm9a3-960)",
            &format!("rw=randwrite bs=4k iodepth=32 numjobs=4 {span} runtime=0.3 ramp_time=2"),
        );
        let wa = r.components[0]
            .write_amplification
            .expect("a drive reports its write amplification");
        (r.summary.iops, wa)
    };
    let (all, wa_all) = run("");
    let (part, wa_part) = run("size=10g");
    assert!(
        (65_000.0..88_000.0).contains(&all),
        "whole drive: {all} IOPS"
    );
    assert!(wa_all > 4.0, "whole drive amplifies {wa_all:.2}");
    assert!(wa_part < 2.5, "10 GiB of it amplifies {wa_part:.2}");
    assert!(part > 1.5 * all, "10 GiB: {part} IOPS, whole drive {all}");
}

/// Phenomenon 35: reads stay fast under writes on flash that suspends its
/// programs. A 3D TLC program takes about a millisecond against a read's
/// tens of microseconds; a read that waits for the program in progress
/// waits for most of it, one that suspends it waits the suspend (Zambelli
/// et al., Electronics 10(12) 1394, 2021). The same PM9A3 with and without
/// suspend under a 70/30 random mix.
#[test]
fn p35_program_suspend_keeps_reads_fast_under_writes() {
    let mut db = PresetDb::builtin();
    db.load_str("[nosus]\nbase = \"pm9a3\"\ndescription = \"PM9A3 without suspend\"\nprogram_suspend_us = 0\n")
        .expect("preset");
    let mix = |drive: &str| {
        let t = resolve(&format!("host[profile=host2020]({drive})"), &db).expect("topology");
        let w = Workload::parse(
            "rw=randrw rwmixread=70 bs=4k iodepth=32 numjobs=4 runtime=0.3 ramp_time=0.3",
        )
        .expect("workload");
        simulate(&t, &w, 1).expect("simulate")
    };
    let (sus, plain) = (mix("pm9a3"), mix("nosus"));
    let read = |r: &RunResult| r.summary.read.lat_avg_ms;
    assert!(
        read(&sus) < 0.75 * read(&plain),
        "read latency {:.3} ms with suspend, {:.3} ms without",
        read(&sus),
        read(&plain)
    );
    assert!(sus.summary.iops > 1.2 * plain.summary.iops);
}

/// Phenomenon 36: a full-duplex link carries reads out and writes in at
/// once; SATA's carries one frame at a time. A 24G SAS drive (`pm1653`,
/// both ports active: 4.3 GB/s of reads, its link's one-way rate) under a
/// 50/50 sequential mix moves well past that rate in all, while a SATA
/// drive (`s3500-800`) under the same mix stays within its link's.
#[test]
fn p36_a_full_duplex_link_carries_reads_and_writes_at_once() {
    let mix = "rw=rw rwmixread=50 bs=128k iodepth=32 state=fill runtime=0.3";
    let sas = mbps("host[profile=host2020](pm1653)", mix);
    let sas_read = mbps(
        "host[profile=host2020](pm1653)",
        "rw=read bs=128k iodepth=32 state=fill runtime=0.3",
    );
    assert!(
        sas > 1.4 * sas_read,
        "SAS 50/50 mix {sas} MB/s against {sas_read} MB/s of reads alone"
    );
    let sata = mbps("s3500-800", mix);
    let sata_read = mbps(
        "s3500-800",
        "rw=read bs=128k iodepth=32 state=fill runtime=0.3",
    );
    assert!(
        sata <= 1.02 * sata_read,
        "SATA 50/50 mix {sata} MB/s against {sata_read} MB/s of reads alone"
    );
}

/// Phenomenon 37: a polling job spins on its core. With `hipri=1` a job
/// reaps its completions by polling the NVMe queue (io_uring's
/// IORING_SETUP_IOPOLL: the submitting task polls instead of sleeping for
/// the interrupt), so its core stays busy all the while it has I/O
/// outstanding. Four queue-depth-1 jobs on one PM9A3 keep a 4-core host's
/// CPU full when they poll and nearly idle when they wait for interrupts;
/// the spin limits nothing, so the drive is named the bottleneck either way.
#[test]
fn p37_polling_jobs_spin_on_their_cores() {
    let topo = "host[profile=host2023,cores=4](pm9a3)";
    let wl =
        |hipri: u32| format!("rw=randread bs=4k iodepth=1 numjobs=4 hipri={hipri} runtime=0.2");
    let (irq, poll) = (run(topo, &wl(0)), run(topo, &wl(1)));
    assert!(
        irq.host.cpu_util_pct < 10.0,
        "interrupts: {} % CPU",
        irq.host.cpu_util_pct
    );
    assert!(
        poll.host.cpu_util_pct > 95.0,
        "polling: {} % CPU",
        poll.host.cpu_util_pct
    );
    let spin = host_row(&poll).utilization;
    assert!(spin < 0.5, "the spin is not a limit: host row {spin}");
}

/// Phenomenon 38: reads under a rising write load slow gradually, not in
/// one step. A program stops for a read only where its program-and-verify
/// loop ends, so a read that finds its die programming waits out part of a
/// loop, not a fixed suspend time: on a PM9A3 960 GB in random-write steady
/// state, with 5,000 reads/s and Poisson writes at 20 k, 45 k and 65 k a
/// second (fio's `rate_iops` with `rate_process=poisson`), the median read
/// climbs at each step and stays under an idle read plus a whole loop.
#[test]
fn p38_reads_slow_gradually_as_writes_rise() {
    let topo = "host[profile=host2020](pm9a3-960)";
    let p50 = |writes: u32| {
        let (r, w) = (5_000 / 7, writes / 7);
        let wl = format!(
            "rw=randrw rwmixread=10 bs=4k numjobs=7 iodepth=64 rate_iops={r},{w} \
             rate_process=poisson io_submit_mode=offload runtime=1 state=steady"
        );
        let res = run(topo, &wl);
        let got = res.summary.write.iops;
        assert!(
            (got / (w * 7) as f64 - 1.0).abs() < 0.03,
            "{writes} writes/s asked, {got:.0} done"
        );
        res.summary.read.lat_p50_ms
    };
    let idle = run(
        topo,
        "rw=randread bs=4k numjobs=7 iodepth=64 rate_iops=714 rate_process=poisson \
         io_submit_mode=offload runtime=1 state=steady",
    )
    .summary
    .read
    .lat_p50_ms;
    let (low, mid, high) = (p50(20_000), p50(45_000), p50(65_000));
    assert!(
        low < mid && mid < high,
        "median read {low:.3} / {mid:.3} / {high:.3} ms at 20 k / 45 k / 65 k writes/s"
    );
    // One loop is the preset's program_suspend_us (0.1 ms).
    assert!(high < idle + 0.1, "{high:.3} ms against {idle:.3} ms idle");
}

/// 39. Reads of multi-bit flash spread by page type: the pages of a word
///     line need one, two or four sensings (Gray-coded MLC and TLC), so an
///     idle TLC drive's 4 KiB random reads at queue depth 1 range from its
///     lower to its upper pages (p99 over 1.3× the median), an MLC drive's
///     stay within its datasheet's QoS (the DC S3500: 99.9 % of reads within
///     0.5 ms), and an SLC drive's all take one time.
#[test]
fn p39_multi_bit_flash_reads_spread_by_page_type() {
    let qd1 = "rw=randread bs=4k iodepth=1 runtime=0.5";
    let tlc = run("pm9a3", qd1).summary;
    assert!(
        tlc.lat_p99_ms > 1.3 * tlc.lat_p50_ms,
        "TLC p99 {} vs p50 {}",
        tlc.lat_p99_ms,
        tlc.lat_p50_ms
    );
    let mlc = run("s3500-800", qd1).summary;
    assert!(mlc.lat_p99_ms > mlc.lat_avg_ms, "MLC spreads: {mlc:?}");
    assert!(
        mlc.lat_p999_ms < 0.5,
        "S3500 QoS: p99.9 {}",
        mlc.lat_p999_ms
    );
    let slc = run("x25e", qd1).summary;
    assert!(
        slc.lat_max_ms < 1.05 * slc.lat_p50_ms,
        "SLC max {} vs p50 {}",
        slc.lat_max_ms,
        slc.lat_p50_ms
    );
}

/// 40. A read command needs a flash read per page its data lies on, and a
///     drive's firmware issues them one after another: large random reads
///     of a drive random writes scattered run below its sequential rate,
///     while 4 KiB reads (one flash read each) and sequential streams (the
///     read-ahead's one stream) are unchanged.
#[test]
fn p40_scattered_large_reads_cost_a_flash_read_each() {
    let light =
        |rw: &str, bs: &str| mbps("x25e", &format!("preset=light rw={rw} bs={bs} runtime=0.5"));
    let seq = light("read", "128k");
    for bs in ["64k", "128k", "256k"] {
        let random = light("randread", bs);
        assert!(
            random < 0.85 * seq,
            "{bs}: {random} MB/s random vs {seq} sequential"
        );
    }
    let small = iops("x25e", "preset=light rw=randread bs=4k runtime=0.5");
    assert!((30_000.0..40_000.0).contains(&small), "4 KB: {small}");
    let array = mbps(
        "megaraid9265[cache=wt,readahead=off](raid10[stripe=256k](8*s3500-480))",
        "rw=randread bs=128k numjobs=8 iodepth=8 state=steady runtime=0.5",
    );
    assert!(
        (2_000.0..2_700.0).contains(&array),
        "8 x S3500 RAID 1, 128 KB random reads: {array} MB/s"
    );
}

/// 41. An adapter fetches the data of host writes from host memory by
///     request, and the root complex answers in completions of its 64-byte
///     read completion boundary, while the data of reads goes up in posted
///     writes of 256 bytes: an adapter whose PCIe link bounds it writes
///     below the rate it reads (six S3500s on a PCIe 2.0 x4-class link).
#[test]
fn p41_a_link_bound_adapter_writes_slower_than_it_reads() {
    let topo = "hba[mode=jbod,pcie=2x4](6*s3500-480)";
    let read = mbps(topo, "rw=read bs=128k iodepth=32 numjobs=6 runtime=0.3");
    let write = mbps(
        topo,
        "rw=write bs=128k iodepth=32 numjobs=6 state=fill runtime=0.3",
    );
    let ratio = write / read;
    // 64 / 88 payload against 256 / 280.
    assert!(
        (0.77..0.82).contains(&ratio),
        "writes {write} MB/s vs reads {read} MB/s"
    );
    assert!((1_650.0..1_800.0).contains(&read), "reads {read} MB/s");
}

/// 42. LSI's FastPath: on a MegaRAID set write-through without read-ahead,
///     reads up to a strip of RAID 0/1/5/6 skip the firmware's command
///     processing, while a spanned RAID 10 on the SAS2208 generation cannot
///     use it (intel2013: eight S3500s read over 300,000 4 KB IOPS in RAID 5
///     at queue depth 8 per drive, against 200,000 in RAID 10, and RAID 5
///     reads at 140 us at the shallowest queue). Write-back, a degraded
///     array or writes to RAID 5 take the firmware path.
#[test]
fn p42_fastpath_lifts_reads_of_unspanned_levels() {
    let ctrl = |policy: &str, array: &str| format!("megaraid9265[{policy}]({array})");
    let wt = "cache=wt,readahead=off";
    let reads = "rw=randread bs=4k numjobs=8 iodepth=8 state=steady runtime=0.3";
    let raid5 = iops(&ctrl(wt, "raid5[stripe=256k](8*s3500-480)"), reads);
    let raid10 = iops(&ctrl(wt, "raid10[stripe=256k](8*s3500-480)"), reads);
    assert!(raid5 > 300_000.0, "RAID 5 reads {raid5}");
    assert!(
        (180_000.0..220_000.0).contains(&raid10),
        "RAID 10 reads {raid10}"
    );
    let wb = iops(
        &ctrl("cache=wb,readahead=off", "raid5[stripe=256k](8*s3500-480)"),
        reads,
    );
    assert!(
        wb < 0.6 * raid5,
        "write-back takes the firmware path: {wb} vs {raid5}"
    );
    let degraded = iops(&ctrl(wt, "raid5[stripe=256k](7*s3500-480,missing)"), reads);
    assert!(degraded < 0.6 * raid5, "degraded: {degraded} vs {raid5}");
    let shallow = run(
        &ctrl(wt, "raid5[stripe=256k](8*s3500-480)"),
        "rw=randread bs=4k numjobs=8 iodepth=1 state=steady runtime=0.3",
    )
    .summary
    .lat_avg_ms;
    assert!(
        (0.12..0.16).contains(&shallow),
        "RAID 5 read at depth 1: {shallow} ms"
    );
}

/// 43. A write-back controller maps a write onto its members' cache
///     buffers before it acknowledges it, one member command's work per
///     member write: at queue depth 1 behind the Adaptec 5085, RAID 10
///     writes take longer than RAID 0's by about one mapping (petrov2010
///     Table 9: 0.02-0.03 ms at 4-32 KB), while the flush-bound rate at
///     queue depth 32, which pays the same work, stays where it was. A
///     controller without a flush task pays nothing before the ack.
#[test]
fn p43_write_back_maps_each_member_write_before_acknowledging() {
    let raid0 = format!("{A}(raid0[stripe=64k](4*x25e))");
    let raid10 = format!("{A}(raid10[stripe=64k](8*x25e))");
    let qd1 = "preset=latency rw=randwrite bs=4k runtime=0.5";
    let (w0, w10) = (lat(&raid0, qd1), lat(&raid10, qd1));
    let extra_us = (w10 - w0) * 1000.0;
    // roc_member_cmd_us of adaptec5085: 35 us of flush-task work per mapping.
    assert!(
        (20.0..50.0).contains(&extra_us),
        "RAID 10 {w10} ms vs RAID 0 {w0} ms: {extra_us} us"
    );
    let qd32 = "preset=light rw=randwrite bs=4k runtime=0.5";
    let (i0, i10) = (iops(&raid0, qd32), iops(&raid10, qd32));
    assert!(i10 < i0, "RAID 10 {i10} vs RAID 0 {i0} at queue depth 32");
    let r = run(&raid0, qd32);
    assert_eq!(
        limit(&r).map(|(k, _)| k),
        Some("controller".to_string()),
        "RAID 0 random writes stop at the controller's flush task"
    );
    // A controller without a flush task (the MegaRAIDs) pays its member
    // commands on its RoC cores when it destages: nothing before the ack.
    let mega = |level: &str| {
        lat(
            &format!("megaraid9361({level}(8*s3500-800))"),
            "preset=latency rw=randwrite bs=4k runtime=0.2",
        )
    };
    let (m0, m10) = (mega("raid0"), mega("raid10"));
    assert!(
        (m10 - m0).abs() * 1000.0 < 1.0,
        "MegaRAID RAID 10 {m10} ms vs RAID 0 {m0} ms"
    );
}

/// 44. A drive whose small write buffer is also its read path programs the
///     buffered writes before it reads: an X25-E under IOMeter's 33 %
///     sequential reads among 8 KB writes at queue depth 32 moves well
///     under half of what it reads or writes alone (petrov2010 section 4:
///     6,605 mixed against 25,274 reads and 22,559 writes), where the same
///     drive reading past its buffer would keep most of its rates. This is
///     what makes phenomenon 10 as large on the X25-E as the paper has it.
#[test]
fn p44_reads_behind_a_small_write_buffer_wait_for_its_programs() {
    let mut db = PresetDb::builtin();
    db.load_str("[x25e-past]\nbase = \"x25e\"\ndescription = \"X25-E reading past its buffer\"\nreads_drain_buffer = false\n")
        .expect("preset");
    let run_on = |drive: &str, w: &str| {
        let t = resolve(drive, &db).expect("topology");
        let w = Workload::parse(&format!("preset=light bs=8k runtime=0.5 {w}")).expect("workload");
        simulate(&t, &w, 1).expect("simulate").summary.iops
    };
    // IOMeter's access specification: one position for reads and writes.
    let mixed = run_on("x25e", "rw=rw rwmixread=33 seq_position=shared");
    let reads = run_on("x25e", "rw=read");
    let writes = run_on("x25e", "rw=write");
    assert!(
        mixed < 0.5 * reads.min(writes),
        "mixed {mixed} vs reads {reads}, writes {writes}"
    );
    let past = run_on("x25e-past", "rw=rw rwmixread=33 seq_position=shared");
    assert!(
        past > 1.5 * mixed,
        "reading past the buffer {past} vs {mixed}"
    );
    // Reads alone find the buffer empty and do not wait.
    assert_eq!(run_on("x25e-past", "rw=read"), reads);
}

/// 45. A write-back controller whose firmware accepts writes in one cache
///     task writes as fast with one thread as with forty: jdev2009's Areca
///     ARC-1680 over twelve MTRONs takes ~28,500 random 512 B writes/s and
///     ~17,400 of 16 KB at 1, 10 and 40 threads, and 550-600 MB/s of large
///     ones, while its reads scale with threads to both RoC cores. The
///     same controller with the task's work spread over its cores (as the
///     MegaRAIDs run it) would write more than twice as fast with threads.
#[test]
fn p45_one_cache_task_caps_write_back_writes_whatever_the_threads() {
    let mut db = PresetDb::builtin();
    db.load_str(
        "[areca-spread]\nbase = \"areca1680\"\ndescription = \"writes on any core\"\ncache_task_writes = false\ncache_task_mbps = 0\n",
    )
    .expect("preset");
    let bm_flash = |ctrl: &str, rw: &str, bs: &str, threads: u32| {
        let t = resolve(&format!("{ctrl}(raid0(12*mtron7535))"), &db).expect("topology");
        let w = Workload::parse(&format!(
            "rw={rw} bs={bs} numjobs={threads} iodepth=1 size=4g runtime=0.2"
        ))
        .expect("workload");
        simulate(&t, &w, 1).expect("simulate").summary
    };
    let rate = |ctrl: &str, bs: &str, threads: u32| bm_flash(ctrl, "randwrite", bs, threads);
    let (one, forty) = (
        rate("areca1680", "4k", 1).iops,
        rate("areca1680", "4k", 40).iops,
    );
    assert!(
        forty < 1.25 * one,
        "40 threads {forty} vs 1 thread {one} writes/s"
    );
    let reads = |threads: u32| bm_flash("areca1680", "randread", "4k", threads).iops;
    assert!(reads(40) > 1.8 * reads(1), "reads scale with threads");
    let big = rate("areca1680", "1m", 10).mbps;
    assert!(
        (450.0..700.0).contains(&big),
        "1 MB writes at 10 threads: {big} MB/s"
    );
    let spread = rate("areca-spread", "4k", 40).iops;
    assert!(
        spread > 2.0 * forty,
        "spread over cores {spread} vs one task {forty}"
    );
}

/// 46. A write-back controller maps a cache line onto its members' buffers
///     once, when a write first dirties it: the rest of a sequential run
///     lands in mapped buffers and is acknowledged sooner. At queue depth
///     1 behind the Adaptec 5085, sequential 8 KB writes to its RAID 0 of
///     four X25-Es take 0.153 ms and random ones 0.220 (petrov2010 Tables
///     10 and 9); the model's sequential writes come in under its random
///     ones by about the mapping, and at depth a sequential run costs the
///     flush task less than random writes do.
#[test]
fn p46_sequential_writes_into_mapped_lines_are_acknowledged_sooner() {
    let raid0 = format!("{A}(raid0[stripe=64k](4*x25e))");
    let seq = lat(&raid0, "preset=latency rw=write bs=8k runtime=0.5");
    let rnd = lat(&raid0, "preset=latency rw=randwrite bs=8k runtime=0.5");
    let saved_us = (rnd - seq) * 1000.0;
    assert!(
        (20.0..120.0).contains(&saved_us),
        "sequential {seq} ms vs random {rnd} ms: {saved_us} us"
    );
    let deep_seq = iops(&raid0, "preset=light rw=write bs=8k runtime=0.5");
    let deep_rnd = iops(&raid0, "preset=light rw=randwrite bs=8k runtime=0.5");
    assert!(
        deep_seq > 2.0 * deep_rnd,
        "sequential {deep_seq} vs random {deep_rnd} writes/s at depth 32"
    );
}

/// 47. A controller's RAID layer costs latency that a single-drive volume
///     does not pay: the Adaptec 5085's X25-Es read 4 KB at queue depth 1
///     in 0.277 ms as single-drive volumes under host software RAID and in
///     0.353 ms as its RAID 0 (petrov2010 Tables 13 and 9); writes 0.11
///     against 0.20 ms.
#[test]
fn p47_single_drive_volumes_skip_the_raid_layers_latency() {
    let array = format!("{A}(raid0[stripe=64k](4*x25e))");
    let volumes = format!("raid0[impl=windows,stripe=64k]({A}[mode=volume](4*x25e))");
    for rw in ["randread", "randwrite"] {
        let w = format!("preset=latency rw={rw} bs=4k runtime=0.5");
        let (a, v) = (lat(&array, &w), lat(&volumes, &w));
        let saved_us = (a - v) * 1000.0;
        assert!(
            (50.0..120.0).contains(&saved_us),
            "{rw}: array {a} ms vs volumes {v} ms"
        );
    }
}

/// 48. A PCIe link trains to the older of its two ends: a PCIe 5.0 drive
///     in a PCIe 4.0 host reads sequentially at about half its own rate
///     (Samsung's PM1743 reads 13 GB/s in a PCIe 5.0 slot; PCIe 4.0 x4
///     carries under 7.9 GB/s), while a PCIe 4.0 drive reads as fast in
///     either host.
#[test]
fn p48_links_train_down_to_the_older_generation() {
    let w = "rw=read bs=1m iodepth=8 runtime=0.2";
    let in_host = |h: &str, d: &str| mbps(&format!("host[profile={h}]({d})"), w);
    let (gen5, gen4) = (in_host("host2023", "pm1743"), in_host("host2020", "pm1743"));
    assert!(gen5 > 12_000.0, "PM1743 in a PCIe 5.0 host: {gen5} MB/s");
    assert!(
        (0.45..0.55).contains(&(gen4 / gen5)),
        "PM1743 in a PCIe 4.0 host: {gen4} against {gen5} MB/s"
    );
    let (a, b) = (in_host("host2023", "pm9a3"), in_host("host2020", "pm9a3"));
    assert!((a - b).abs() < 0.01 * a, "PM9A3: {a} against {b} MB/s");
}

/// 49. A write-back controller gathers whole stripes for the write streams
///     it detects as sequential, not for random writes that happen to
///     cover a stripe: behind the Adaptec 5085, sequential 256 KB writes at
///     depth 32 to a RAID 5 of five X25-Es move 323 MB/s, aligned random
///     256 KB writes (one stripe's data each) 76 MB/s (petrov2010 Tables 8
///     and 7), where gathering every whole stripe would speed both.
#[test]
fn p49_sequential_streams_destage_whole_stripes() {
    let raid5 = format!("{A}(raid5[stripe=64k](5*x25e))");
    let seq = mbps(&raid5, "preset=light rw=write bs=256k runtime=0.5");
    let rnd = mbps(&raid5, "preset=light rw=randwrite bs=256k runtime=0.5");
    assert!(seq > 250.0, "sequential 256 KB writes: {seq} MB/s");
    assert!(
        seq > 3.0 * rnd,
        "sequential {seq} vs random {rnd} MB/s of 256 KB writes"
    );
}

/// 50. A SATA port without NCQ (a chipset in IDE mode) serves one command
///     per drive at a time: two X25-Es under Windows software RAID 0 on
///     such ports read 4-16 KB at random at the rate of two drives at
///     queue depth 1, well under half what the same pair reaches with
///     NCQ (petrov2010 Table 12: 12,308 / 7,895 / 6,298 random reads/s
///     at 4 / 8 / 16 KB, where Table 9's single drive at queue depth 1
///     gives 2 / 0.161, 2 / 0.250 and 2 / 0.294 ms).
#[test]
fn p50_ports_without_ncq_serve_one_command_per_drive() {
    let pair =
        |qd: &str| format!("host[cores=2,ghz=3.0](raid0[impl=windows,stripe=64k](2*x25e{qd}))");
    for bs in ["4k", "16k"] {
        let w = format!("preset=light rw=randread bs={bs} runtime=0.5");
        let (one, ncq) = (iops(&pair("[queue_depth=1]"), &w), iops(&pair(""), &w));
        let qd1 = lat(
            "x25e",
            &format!("preset=latency rw=randread bs={bs} runtime=0.5"),
        );
        let two_at_qd1 = 2.0 / (qd1 / 1000.0);
        assert!(
            (one / two_at_qd1 - 1.0).abs() < 0.1,
            "{bs}: {one}/s without NCQ against two drives at depth 1: {two_at_qd1}/s"
        );
        assert!(one < 0.5 * ncq, "{bs}: {one}/s without NCQ, {ncq}/s with");
    }
}

/// 51. A write-back controller follows a sequential write stream and maps
///     the cache lines ahead of it, so a write of the stream is
///     acknowledged without waiting for the flush task, even when every
///     write dirties lines of its own: behind the Adaptec 5085, sequential
///     128 KB writes at queue depth 1 to its RAID 0 of four X25-Es take
///     half the time of random ones (petrov2010 Tables 10 and 9: 0.474
///     against 0.956 ms; 256 KB: 0.743 against 1.737).
#[test]
fn p51_sequential_write_streams_are_mapped_ahead() {
    let raid0 = format!("{A}(raid0[stripe=64k](4*x25e))");
    for bs in ["128k", "256k"] {
        let seq = lat(
            &raid0,
            &format!("preset=latency rw=write bs={bs} runtime=0.5"),
        );
        let rnd = lat(
            &raid0,
            &format!("preset=latency rw=randwrite bs={bs} runtime=0.5"),
        );
        assert!(
            seq < 0.6 * rnd,
            "{bs}: sequential {seq} ms against random {rnd} ms"
        );
    }
}
