//! The published phenomena of docs/phenomena.md, checked for direction and rough size
//! on the simulator. Each one must emerge from the mechanisms; none is
//! special-cased.

mod phen;
use phen::*;

/// 1. RAID 0 over two X25-E on an Adaptec 5085 gives fewer random IOPS than one X25-E.
#[test]
fn p01_controller_makes_raid0_of_two_slower_than_one_ssd() {
    let one = iops("x25e", "preset=light rw=randread bs=4k runtime=0.5");
    let two = iops(
        &format!("{A}(raid0[stripe=64k](2*x25e))"),
        "preset=light rw=randread bs=4k runtime=0.5",
    );
    assert!(two < one, "raid0 x2 {two} vs one {one}");
}

/// 2. Random IOPS saturate early; sequential reads saturate near 690 MB/s with
///    a few SSDs; with caches off, sequential writes grow with the SSD count.
#[test]
fn p02_controller_saturation_and_linear_cacheless_writes() {
    let r8 = |n: u32| {
        iops(
            &format!("{A}(raid0[stripe=64k]({n}*x25e))"),
            "preset=heavy rw=randread bs=8k runtime=0.3",
        )
    };
    assert!(
        r8(4) < 1.1 * r8(2),
        "8 KB random reads saturate by 2 SSDs: {} vs {}",
        r8(4),
        r8(2)
    );
    let r64 = |n: u32| {
        iops(
            &format!("{A}(raid0[stripe=64k]({n}*x25e))"),
            "preset=heavy rw=randread bs=64k runtime=0.3",
        )
    };
    assert!(
        r64(2) > 1.6 * r64(1) && r64(8) < 1.15 * r64(4),
        "64 KB: scale then saturate"
    );
    let seq = |n: u32| {
        mbps(
            &format!("{A}(raid0[stripe=64k]({n}*x25e))"),
            "preset=light rw=read bs=128k runtime=0.3",
        )
    };
    let (s4, s8) = (seq(4), seq(8));
    assert!(
        (600.0..800.0).contains(&s4) && s8 < 1.05 * s4,
        "seq read saturates near 690 MB/s: {s4} {s8}"
    );
    let w = |n: u32| {
        mbps(
            &format!("{A}[cache=wt](raid0[stripe=64k]({n}*x25e[wc=off]))"),
            "preset=light rw=write bs=128k runtime=0.3",
        )
    };
    let (w1, w4) = (w(1), w(4));
    assert!(
        w4 > 3.2 * w1,
        "cacheless sequential writes scale about linearly (80 %+ efficiency): {w1} -> {w4}"
    );
}

/// 3. Reads beat writes in RAID too; RAID 5 has the worst random writes,
///    RAID 0 the best, RAID 10 in between.
#[test]
fn p03_asymmetry_and_level_order() {
    let w = |lvl: &str, n: u32| {
        iops(
            &format!("{A}({lvl}[stripe=64k]({n}*x25e))"),
            "preset=light rw=randwrite bs=8k runtime=0.5",
        )
    };
    let r = iops(
        &format!("{A}(raid0[stripe=64k](4*x25e))"),
        "preset=light rw=randread bs=8k runtime=0.5",
    );
    let (r0, r5, r10) = (w("raid0", 4), w("raid5", 5), w("raid10", 8));
    assert!(r > r0, "reads {r} beat writes {r0}");
    assert!(
        r5 < r10 && r10 < r0,
        "raid5 {r5} < raid10 {r10} < raid0 {r0}"
    );
}

/// 4. In light random reads one SSD beats RAID 5 over five.
#[test]
fn p04_single_ssd_beats_raid5_in_light_random_reads() {
    let one = iops("x25e", "preset=light rw=randread bs=4k runtime=0.5");
    let r5 = iops(
        &format!("{A}(raid5[stripe=64k](5*x25e))"),
        "preset=light rw=randread bs=4k runtime=0.5",
    );
    assert!(one > r5, "{one} vs {r5}");
}

/// 5. With a write-back cache small random writes are faster than small
///    random reads; above the stripe unit the order reverses.
#[test]
fn p05_write_back_latency_order() {
    let t = format!("{A}(raid0[stripe=64k](4*x25e))");
    let w4 = lat(&t, "preset=latency rw=randwrite bs=4k runtime=0.5");
    let r4 = lat(&t, "preset=latency rw=randread bs=4k runtime=0.5");
    assert!(w4 < r4, "4 KB: write {w4} < read {r4}");
    let w256 = lat(&t, "preset=latency rw=randwrite bs=256k runtime=0.5");
    let r256 = lat(&t, "preset=latency rw=randread bs=256k runtime=0.5");
    assert!(w256 > r256, "256 KB: write {w256} > read {r256}");
}

/// 6. Maximum latencies of 100–450 ms on arrays (GC outliers, request
///    synchronisation): the members' garbage collection holds their
///    commands, the controller's destages and the RAID 5 pre-reads among
///    them, and the writes waiting on those. The same array over members
///    with half their flash spare, which rarely collect, has no such tail.
#[test]
fn p06_long_latency_outliers_on_arrays() {
    let wl = "preset=heavy rw=randwrite bs=8k runtime=2";
    let s = run(&format!("{A}(raid5[stripe=64k](5*x25e))"), wl).summary;
    assert!(
        (100.0..450.0).contains(&s.lat_max_ms),
        "max latency {} ms",
        s.lat_max_ms
    );
    assert!(
        s.lat_max_ms > 2.0 * s.lat_avg_ms,
        "an outlier, not the queue: max {} against mean {} ms",
        s.lat_max_ms,
        s.lat_avg_ms
    );
    let spare = run(&format!("{A}(raid5[stripe=64k](5*x25e[op=50]))"), wl).summary;
    assert!(
        spare.lat_max_ms < 1.3 * spare.lat_avg_ms,
        "without collection the tail goes: max {} against mean {} ms",
        spare.lat_max_ms,
        spare.lat_avg_ms
    );
}

/// 7. Software RAID 0 over two controllers doubles random throughput, raises
///    sequential throughput by 40–100 % and cuts latency by 30–40 %.
#[test]
fn p07_software_raid_over_two_controllers() {
    let one = format!("{A}(raid0[stripe=64k](4*x25e))");
    let two = "raid0(adaptec5085[mode=volume](4*x25e),adaptec5085[mode=volume](4*x25e))";
    let (a, b) = (
        run(&one, "preset=light rw=randread bs=4k runtime=0.5"),
        run(two, "preset=light rw=randread bs=4k runtime=0.5"),
    );
    assert!(
        b.summary.iops > 1.7 * a.summary.iops,
        "{} vs {}",
        b.summary.iops,
        a.summary.iops
    );
    assert!(
        b.summary.lat_avg_ms < 0.7 * a.summary.lat_avg_ms,
        "latency drops by 30 % or more"
    );
    let (s1, s2) = (
        mbps(&one, "preset=light rw=read bs=1m runtime=0.5"),
        mbps(two, "preset=light rw=read bs=1m runtime=0.5"),
    );
    assert!(
        s2 > 1.4 * s1 && s2 < 2.05 * s1,
        "sequential +40..100 %: {s1} -> {s2}"
    );
}

/// 8. Software RAID costs little CPU, except RAID 5 sequential writes (parity).
#[test]
fn p08_software_raid_cpu() {
    let t = |lvl: &str| {
        format!("{lvl}(adaptec5085[mode=volume](4*x25e),adaptec5085[mode=volume](4*x25e))")
    };
    let r0 = run(&t("raid0"), "rw=write bs=1m iodepth=8 runtime=0.5");
    let r5 = run(&t("raid5"), "rw=write bs=1m iodepth=8 runtime=0.5");
    let rr = run(&t("raid5"), "rw=randread bs=4k iodepth=32 runtime=0.5");
    assert!(
        rr.host.cpu_util_pct < 10.0 && r0.host.cpu_util_pct < 10.0,
        "little CPU"
    );
    let per_mb = |r: &RunResult| r.host.cpu_util_pct / r.summary.mbps;
    assert!(
        per_mb(&r5) > 5.0 * per_mb(&r0),
        "RAID 5 sequential writes pay for parity"
    );
}

/// 9. Stripe units around 64 KB (below the 256 KB erase block) are best;
///    sequential writes larger than the erase block lose throughput as the
///    stripe unit grows. The mechanism is striping parallelism: a 1 MiB write
///    engages min(1 MiB / stripe unit, drives) members, so at one outstanding
///    write a 1 MiB stripe unit leaves three of four SSDs idle. It shows where
///    the host's writes reach the drives as issued (write-through); a
///    write-back cache destages every member whatever the stripe unit.
#[test]
fn p09_stripe_unit() {
    let w = |su: &str| {
        mbps(
            &format!("{A}[cache=wt](raid0[stripe={su}](4*x25e))"),
            "preset=latency rw=write bs=1m runtime=1 ramp_time=0.5",
        )
    };
    let all: Vec<(&str, f64)> = ["16k", "64k", "256k", "512k", "1m"]
        .iter()
        .map(|&s| (s, w(s)))
        .collect();
    let best = all.iter().map(|x| x.1).fold(0.0, f64::max);
    let at = |s: &str| all.iter().find(|x| x.0 == s).unwrap().1;
    assert!(at("64k") >= 0.95 * best, "64 KB is among the best: {all:?}");
    // Growing the stripe unit beyond the write's share of each drive only loses.
    assert!(
        at("256k") >= at("512k") && at("512k") >= at("1m"),
        "monotone loss above 256 KB: {all:?}"
    );
    assert!(at("1m") < 0.6 * at("64k"), "1 MB stripe unit: {all:?}");
}

/// 10. Mixed sequential read/write loads are far slower than the blend of the pure loads.
#[test]
fn p10_mixed_sequential_is_slower_than_the_blend() {
    let r = iops("x25e", "preset=light rw=read bs=8k runtime=0.5");
    let w = iops("x25e", "preset=light rw=write bs=8k runtime=0.5");
    // IOMeter's access specification: one position for reads and writes.
    let m = iops(
        "x25e",
        "preset=light rw=rw rwmixread=33 bs=8k runtime=0.5 seq_position=shared",
    );
    let blend = 1.0 / (0.33 / r + 0.67 / w);
    // petrov2010 section 4: 6,605 mixed against a blend of about 23,400
    // (0.28); reads wait for the buffer's programs (phenomenon 44).
    assert!(m < 0.5 * blend, "mixed {m} vs blend {blend}");
}

/// 11 (read-ahead). On SSD RAID 5, controller read-ahead cuts random read IOPS by about 20 %.
#[test]
fn p11_read_ahead_costs_random_reads() {
    let on = iops(
        "megaraid9361[cache=wt,readahead=on](raid5(4*s3500-480))",
        "rw=randread bs=4k iodepth=32 runtime=0.3",
    );
    let off = iops(
        "megaraid9361[cache=wt,readahead=off](raid5(4*s3500-480))",
        "rw=randread bs=4k iodepth=32 runtime=0.3",
    );
    let cut = 1.0 - on / off;
    assert!((0.1..0.35).contains(&cut), "read-ahead cut {cut}");
}

/// 11 (write-back). On SSD RAID 5 a write-back controller cache cuts random
///    write IOPS by about 80 %: every write is destaged as a read-modify-write
///    with one destage write per member outstanding, while write-through lets
///    the drives' queues fill. The model gives about two thirds; the issue asks
///    for at least 60 % on the MegaRAID.
#[test]
fn p11_write_back_costs_raid5_random_writes() {
    let w = |cache: &str| {
        iops(
            &format!("megaraid9265[cache={cache},readahead=off](raid5[stripe=256k](8*s3500-480))"),
            "rw=randwrite bs=4k numjobs=8 iodepth=32 state=steady runtime=1",
        )
    };
    let (wb, wt) = (w("wb"), w("wt"));
    let cut = 1.0 - wb / wt;
    assert!(
        (0.6..0.9).contains(&cut),
        "write-back cut {cut}: {wb} vs {wt}"
    );
}

/// 12. Over-provisioning 20 % / 40 % multiplies steady random write IOPS about 2.7× / 3.9×.
#[test]
fn p12_over_provisioning() {
    let w = |t: &str| iops(t, "rw=randwrite bs=4k iodepth=16 state=steady runtime=0.5");
    let (a, b, c) = (
        w("s3500-800"),
        w("s3500-800[op=20%]"),
        w("s3500-800[op=40%]"),
    );
    assert!((2.0..3.6).contains(&(b / a)), "20 %: {}", b / a);
    assert!((3.0..5.5).contains(&(c / a)), "40 %: {}", c / a);
}

/// 13. On the MegaRAID 9265, RAID 10 write IOPS grow linearly with drive
///     pairs and read IOPS reach hundreds of thousands. One pair is the
///     controller's RAID 1 (its RAID 10 spans two pairs or more).
#[test]
fn p13_modern_controller_scales() {
    let t = |n: u32| {
        let level = if n == 2 { "raid1" } else { "raid10" };
        format!("megaraid9265[cache=wt,readahead=off]({level}[stripe=256k]({n}*s3500-480))")
    };
    let w = |n: u32| {
        run(
            &t(n),
            &format!("rw=randwrite bs=4k numjobs={n} iodepth=4 state=steady runtime=0.3"),
        )
    };
    let (w2, w8) = (w(2), w(8));
    let ratio = w8.summary.iops / w2.summary.iops;
    assert!((3.4..4.6).contains(&ratio), "writes x4 pairs: {ratio}");
    assert!(
        !w8.components
            .iter()
            .any(|c| c.bottleneck && c.kind == "controller"),
        "the controller is not the bottleneck"
    );
    let r = iops(&t(8), "rw=randread bs=4k numjobs=8 iodepth=8 runtime=0.3");
    assert!(r > 150_000.0, "reads {r}");
}

/// 14. md is a little slower than hardware RAID for random reads; mdadm
///     striping beats lvm2 striping by about 10 % in small-block IOPS when the
///     host CPU is what limits them.
#[test]
fn p14_md_vs_hardware_and_lvm() {
    let hw = iops(
        "megaraid9365[cache=wt,readahead=off](raid1(2*s3500-80))",
        "rw=randread bs=4k iodepth=16 runtime=0.3",
    );
    let md = iops(
        "raid1[impl=md](megaraid9365[mode=jbod](2*s3500-80))",
        "rw=randread bs=4k iodepth=16 runtime=0.3",
    );
    assert!(md < hw && md > 0.85 * hw, "md {md} vs hw {hw}");
    let s = |imp: &str| {
        iops(
            &format!("host[cores=1](raid0[impl={imp}](hba[mode=jbod](4*s3500-480)))"),
            "rw=randread bs=4k iodepth=64 runtime=0.3",
        )
    };
    let ratio = s("md") / s("lvm");
    assert!((1.05..1.2).contains(&ratio), "md/lvm {ratio}");
}

/// 15 (steady state). Asked with default settings, an OLTP mix (70/30
///    random 8 KiB, 4 jobs × 32) on 8 SSDs behind a write-back MegaRAID ranks
///    the levels by their write cost: RAID 0 ≥ RAID 10 ≥ RAID 5 ≥ RAID 6,
///    with RAID 0 far above one drive, and the parity levels' gap named by
///    their bottleneck. Every window is found steady.
#[test]
fn p15_oltp_ranks_levels_in_steady_state() {
    let wl = "rw=randrw rwmixread=70 bs=8k numjobs=4 iodepth=32 runtime=2";
    let level = |l: &str| run(&format!("megaraid9361({l}(8*s3500-800))"), wl);
    let rs: Vec<RunResult> = ["raid0", "raid10", "raid5", "raid6"]
        .into_iter()
        .map(level)
        .collect();
    for r in &rs {
        let st = r.sim.steady.as_ref().expect("a simulation says");
        assert!(st.reached, "{}: {st:?}", r.topology);
    }
    let v: Vec<f64> = rs.iter().map(|r| r.summary.iops).collect();
    assert!(v[0] >= v[1] && v[1] >= v[2] && v[2] >= v[3], "{v:?}");
    let one = iops("s3500-800", wl);
    assert!(v[0] > 3.0 * one, "RAID 0 {} vs one drive {one}", v[0]);
    for r in &rs[2..] {
        assert!(
            r.components.iter().any(|c| c.bottleneck),
            "{}: the parity levels' limit is named",
            r.topology
        );
    }
}

/// 16 (steady state). The steady state does not depend on how the caches
///    start: clean (an idle controller) or full of dirty data (after a burst
///    of random writes), for a mix the destage path keeps up with (the full
///    cache drains) and for random writes it cannot (the clean one fills).
#[test]
fn p16_steady_state_does_not_depend_on_the_start() {
    let db = PresetDb::builtin();
    for (topo, wl) in [
        (
            // The controller's RAID-on-chip is the limit; the full cache
            // drains in a few seconds. (SATA drives preconditioned by random
            // writes, as a MegaRAID 9361 of S3500s, relax toward a mix's own
            // collection balance over tens of seconds, from either start,
            // a drift within the window's bounds: not what this tests.)
            "megaraid9560(raid10(8*pm9a3))",
            "rw=randrw rwmixread=80 bs=8k numjobs=4 iodepth=32 runtime=4",
        ),
        (
            // A window of 2 s: in 1 s the drives' collection noise alone
            // moves a window's throughput by up to 5 % from seed to seed.
            "adaptec5085(raid5[stripe=64k](5*x25e))",
            "rw=randwrite bs=8k numjobs=4 iodepth=16 runtime=2",
        ),
    ] {
        let t = resolve(topo, &db).unwrap();
        let w = Workload::parse(wl).unwrap();
        let clean = simulate(&t, &w, 1).unwrap();
        let full = simulate_from_full_caches(&t, &w, 1).unwrap();
        for r in [&clean, &full] {
            assert!(steady(r), "{topo}: {:?}", r.sim.steady);
        }
        let (a, b) = (clean.summary.iops, full.summary.iops);
        assert!((a / b - 1.0).abs() < 0.05, "{topo}: clean {a} vs full {b}");
    }
}

/// 17 (steady state). A given `ramp_time` means exactly that: the window
///    follows it, and a window still inside a transient (a clean write-back
///    cache filling under random writes) is reported as not steady, with a
///    throughput far above the steady one.
#[test]
fn p17_a_given_ramp_is_kept_and_a_transient_is_flagged() {
    let t = "adaptec5085(raid5[stripe=64k](5*x25e))";
    let given = run(
        t,
        "rw=randwrite bs=8k numjobs=4 iodepth=16 runtime=0.5 ramp_time=0.2",
    );
    let st = given.sim.steady.as_ref().unwrap();
    assert!(!st.reached, "{st:?}");
    assert!((st.after_s - 0.2).abs() < 1e-9, "{st:?}");
    let auto = run(t, "rw=randwrite bs=8k numjobs=4 iodepth=16 runtime=0.5");
    assert!(steady(&auto));
    assert!(
        given.summary.iops > 2.0 * auto.summary.iops,
        "burst {} vs steady {}",
        given.summary.iops,
        auto.summary.iops
    );
}

/// 18 (latency spread). A drive whose firmware paces garbage collection
///    (the DC S3500: Intel's consistency design) keeps steady-state random
///    write latency near its mean: 4 KiB at QD32 runs at about its 11,500
///    IOPS specification with a p99 of a few milliseconds, the order of its
///    datasheet's QoS (99.9 % within 5 ms at QD1), where a page waiting for
///    whole collections would wait a hundred times longer. A 2008 drive
///    that lets a page wait for the die's whole GC backlog (the X25-E)
///    shows that long tail.
#[test]
fn p18_paced_gc_bounds_write_latency_and_greedy_gc_does_not() {
    let wl = "rw=randwrite bs=4k iodepth=32 state=steady runtime=1";
    let s = run("s3500-800", wl);
    assert!(steady(&s));
    let iops = s.summary.iops;
    assert!((9_000.0..14_000.0).contains(&iops), "{iops}");
    assert!(s.summary.lat_p99_ms < 20.0, "p99 {}", s.summary.lat_p99_ms);
    let qd1 = run(
        "s3500-800",
        "rw=randwrite bs=4k iodepth=1 state=steady runtime=1",
    );
    assert!(
        qd1.summary.lat_p999_ms < 5.0,
        "QD1 p99.9 {}",
        qd1.summary.lat_p999_ms
    );
    let x = run("x25e", wl);
    assert!(
        x.summary.lat_max_ms > 5.0 * x.summary.lat_p50_ms,
        "X25-E: max {} vs p50 {}",
        x.summary.lat_max_ms,
        x.summary.lat_p50_ms
    );
}

/// 19 (synchronous writes). fio's `sync=1` and `fsync=N` flush the write
///    cache, and a disk without one commits a write per revolution. A drive
///    with power-loss protection answers a flush at once and keeps most of
///    its rate (the DC S3500); one without must program its
///    buffer first and falls to its NAND program time per write (the X25-E,
///    about 0.5 ms), recovering as `fsync` flushes less often. A
///    battery-backed write-back controller answers flushes itself; md
///    passes them to every member.
#[test]
fn p19_sync_writes_cost_what_the_flush_costs() {
    let qd1 =
        |t: &str, extra: &str| iops(t, &format!("rw=write bs=4k iodepth=1 runtime=0.5 {extra}"));
    let (plp, plp_sync) = (qd1("s3500-800", ""), qd1("s3500-800", "sync=1"));
    assert!(plp_sync > 0.4 * plp, "S3500: {plp_sync} of {plp}");
    let (x, x_sync) = (qd1("x25e", ""), qd1("x25e", "sync=1"));
    assert!(x_sync < 0.2 * x, "X25-E: {x_sync} of {x}");
    let lat = run("x25e", "rw=write bs=4k iodepth=1 runtime=0.5 sync=1")
        .summary
        .lat_avg_ms;
    assert!((0.4..0.8).contains(&lat), "X25-E sync write {lat} ms");
    let rare = iops("x25e", "rw=randwrite bs=4k iodepth=1 runtime=0.5 fsync=16");
    let every = iops("x25e", "rw=randwrite bs=4k iodepth=1 runtime=0.5 fsync=1");
    assert!(rare > 2.0 * every, "fsync=16 {rare} vs fsync=1 {every}");
    let wb = qd1("megaraid9361(raid10(4*x25e))", "sync=1");
    let wt = qd1("megaraid9361[cache=wt](raid10(4*x25e))", "sync=1");
    assert!(
        wb > 4.0 * wt,
        "battery-backed cache {wb} vs write-through {wt}"
    );
    let md = qd1("raid1(2*x25e)", "sync=1");
    assert!(
        md < 0.2 * qd1("raid1(2*x25e)", ""),
        "md passes flushes on: {md}"
    );
}

/// 20 (block-mapped FTL). A 2008 drive with a block-mapped FTL (the MTRON
///    7535) writes small random blocks at around a hundred per second, each
///    forcing a merge of a whole logical block, and gains little from
///    queueing; random writes confined to what its log blocks cover, and
///    sequential writes, avoid the merges. The same drive with a
///    page-mapped FTL writes random blocks thousands of times a second: the
///    mapping scheme is what makes the difference.
#[test]
fn p20_block_mapped_ftl_merges_small_random_writes() {
    let t = "mtron7535";
    let qd1 = iops(t, "rw=randwrite bs=4k iodepth=1 runtime=1");
    let qd32 = iops(t, "rw=randwrite bs=4k iodepth=32 runtime=1");
    assert!((50.0..400.0).contains(&qd1), "QD1 {qd1}");
    assert!(qd32 < 1.3 * qd1, "QD32 {qd32} vs QD1 {qd1}");
    let local = iops(t, "rw=randwrite bs=4k iodepth=1 size=2m runtime=1");
    assert!(local > 10.0 * qd1, "within the log blocks {local} vs {qd1}");
    let seq = mbps(t, "rw=write bs=128k iodepth=4 runtime=1");
    let rnd = mbps(t, "rw=randwrite bs=4k iodepth=1 runtime=1");
    assert!(
        seq > 20.0 * rnd,
        "sequential {seq} MB/s vs random {rnd} MB/s"
    );
    let mut db = PresetDb::builtin();
    db.load_str("[mtron-paged]\nbase = \"mtron7535\"\nftl = \"page\"\n")
        .unwrap();
    let paged = resolve("mtron-paged", &db).unwrap();
    let w = Workload::parse("rw=randwrite bs=4k iodepth=1 runtime=1").unwrap();
    let p = simulate(&paged, &w, 1).unwrap().summary.iops;
    assert!(p > 10.0 * qd1, "page-mapped {p} vs block-mapped {qd1}");
}

/// 21 (steady state). A large write-back cache taking small random writes
///    fills for a long time at cache speed (a 4 GB Areca cache at 512-byte
///    writes: minutes), so a flat throughput is not yet a steady one: the
///    run is steady only once the cache is full and the writes go at the
///    drives' pace, far below the burst (MTRONs, whose block-mapped FTL
///    takes small random writes slowly).
#[test]
fn p21_a_slowly_filling_cache_is_not_steady() {
    let t = "areca1680(raid0(8*mtron7535))";
    let wl = "rw=randwrite bs=512 numjobs=10 iodepth=1 runtime=1";
    let burst = run(t, &format!("{wl} ramp_time=0"));
    assert!(!steady(&burst), "{:?}", burst.sim.steady);
    let settled = run(t, wl);
    assert!(steady(&settled));
    assert!(
        settled.summary.iops < 0.8 * burst.summary.iops,
        "steady {} vs burst {}",
        settled.summary.iops,
        burst.summary.iops
    );
}

/// 21, the other side: a write-back cache whose destage path keeps up
///    is not filled ahead. Two MegaRAID 9560s' RAID 10s of PM9A3s under a
///    host-bound 70/30 mix hold a dirty level of a thousandth of the cache,
///    creeping by far less than they take in; filled to full, they drain
///    back over hundreds of rounds and the run never reads as steady.
#[test]
fn p21_a_cache_that_keeps_up_is_not_filled_ahead() {
    let arr = "megaraid9560[cache=wb,readahead=off](raid10[stripe=256k](4*pm9a3))";
    let t = format!("raid0[stripe=256k]({arr}, {arr})");
    let r = run(
        &t,
        "rw=randrw rwmixread=70 bs=8k iodepth=32 numjobs=8 runtime=1",
    );
    let s = r.sim.steady.as_ref().expect("a timed run is tested");
    assert!(s.reached && s.after_s == 0.0, "{s:?}");
}

/// 22 (alignment). Random 4 KiB writes off the drive's 4 KiB grid
///    (`blockalign=512`) each touch two flash units, so in steady state an
///    SSD takes markedly fewer of them than aligned ones.
#[test]
fn p22_misaligned_writes_cost_two_units() {
    let w = |x: &str| {
        iops(
            "s3500-800",
            &format!("rw=randwrite bs=4k iodepth=32 runtime=1 {x}"),
        )
    };
    let (aligned, off) = (w(""), w("blockalign=512"));
    assert!(
        off < 0.75 * aligned,
        "misaligned {off} vs aligned {aligned}"
    );
}

/// Member reads per host read, over the whole run.
fn member_reads_per_read(r: &RunResult) -> f64 {
    let member: u64 = r
        .components
        .iter()
        .filter(|c| c.kind == "ssd")
        .filter_map(|c| c.io.as_ref())
        .map(|io| io.reads)
        .sum();
    member as f64 / (r.summary.iops * r.sim.simulated_s)
}

/// 23 (degraded arrays). A degraded RAID 5 reads a lost chunk from every
///    other member of its stripe (md's reconstruct-read). With n members,
///    one missing, small random reads cost (n−1)/n · 1 + 1/n · (n−1) member
///    reads each: 1.5 for four; the array loses random-read throughput.
#[test]
fn p23_degraded_raid5_reads_cost_a_stripe() {
    let wl = "rw=randread bs=4k iodepth=32 runtime=1";
    let healthy = run("raid5[stripe=64k](4*x25e)", wl);
    let degraded = run("raid5[stripe=64k](3*x25e, missing)", wl);
    assert!((member_reads_per_read(&healthy) - 1.0).abs() < 0.02);
    let per = member_reads_per_read(&degraded);
    assert!((per - 1.5).abs() < 0.05, "{per} member reads per read");
    assert!(degraded.summary.iops < 0.8 * healthy.summary.iops);
    // RAID 6 with one of six missing: 5/6 · 1 + 1/6 · 4 = 1.5 (P, not Q).
    let r6 = run("raid6[stripe=64k](5*x25e, missing)", wl);
    assert!((member_reads_per_read(&r6) - 1.5).abs() < 0.05);
    // Writes: a degraded RAID 5 still takes them, and a read-back of a
    // mirror with a copy gone costs one member read each.
    assert!(
        iops(
            "raid5[stripe=64k](3*x25e, missing)",
            "rw=randwrite bs=4k iodepth=32 runtime=1"
        ) > 0.0
    );
    let r10 = run("raid10[stripe=64k](3*x25e, missing)", wl);
    assert!((member_reads_per_read(&r10) - 1.0).abs() < 0.02);
}

/// 24 (rebuilds). A rebuild onto a hot spare runs as md paces it: at
///    speed_limit_max (or what the spare can write) while the array is
///    otherwise idle, so it takes about capacity / rate, and, on the
///    default host's Linux 3.10 (before 4.1: phenomenon 58), at
///    speed_limit_min under foreground I/O, which keeps nearly all its
///    throughput; a higher minimum buys a faster rebuild with foreground
///    throughput.
#[test]
fn p24_rebuild_rate_follows_md_speed_limits() {
    let rebuild = |topo: &str, wl: &str| {
        let r = run(topo, wl);
        let rb = r.sim.rebuilds.first().expect("a rebuild").clone();
        (r.summary.iops, rb)
    };
    let spare = "raid5[stripe=64k,spares=1](3*x25e, missing, x25e)";
    let idle = "rw=randread bs=4k iodepth=1 thinktime=100000 runtime=5";
    // md's default limit (204.8 MB/s) is above what the spare can write
    // (the X25-E's 170 MB/s sequential writes): the drive sets the pace.
    let (_, rb) = rebuild(spare, idle);
    assert!(rb.rate_mb_s > 150.0 && rb.rate_mb_s < 205.0, "{rb:?}");
    // Below it, the limit does, and the rebuild takes capacity / limit.
    let limited = "raid5[stripe=64k,spares=1,rebuild_max=100m](3*x25e, missing, x25e)";
    let max = 100.0 * 1048576.0;
    let (_, rb) = rebuild(limited, idle);
    assert!((rb.rate_mb_s * 1e6 / max - 1.0).abs() < 0.1, "{rb:?}");
    assert!((rb.projected_s / (rb.member_bytes as f64 / max) - 1.0).abs() < 0.1);
    let busy = "rw=randread bs=4k iodepth=32 runtime=5";
    let (fg, rb) = rebuild(spare, busy);
    assert!(rb.rate_mb_s < 2.0, "{rb:?}");
    let degraded = iops("raid5[stripe=64k](3*x25e, missing)", busy);
    assert!(fg > 0.95 * degraded, "{fg} vs {degraded}");
    let (fg_fast, rb_fast) = rebuild(
        "raid5[stripe=64k,spares=1,rebuild_min=50m](3*x25e, missing, x25e)",
        busy,
    );
    assert!(
        rb_fast.rate_mb_s > 40.0 && fg_fast < fg,
        "{rb_fast:?} {fg_fast}"
    );
    // A small member (6.4 GB) finishes within the run, in about its
    // capacity over the rate.
    let small = run(
        "raid1[spares=1,rebuild_max=100m](x25e[op=90%], missing, x25e[op=90%])",
        "rw=randread bs=4k iodepth=1 thinktime=100000 runtime=80",
    );
    let rb = &small.sim.rebuilds[0];
    let t = rb.finished_s.unwrap_or_else(|| panic!("{rb:?}"));
    assert!(
        (t / (rb.member_bytes as f64 / max) - 1.0).abs() < 0.15,
        "{rb:?}"
    );
}

/// Phenomenon 25: md handles RAID 5 writes in its stripe cache on one
/// thread per array (raid5d) unless `group_thread_cnt` adds workers
/// (Shaohua Li, "raid5: offload stripe handle to workqueue", 2013: "Since
/// there is only one thread, it doesn't scale well for high speed
/// storage"; his 2012 patch notes report +200 % on a 4-disk array). On
/// eight current NVMe drives, 4 KiB random writes stop at that thread;
/// workers lift the cap to the drives'. Reads bypass the stripe cache.
#[test]
fn p25_md_raid5_writes_stop_at_one_stripe_thread_unless_workers_help() {
    let w = "rw=randwrite bs=4k iodepth=32 numjobs=16 runtime=0.5";
    let one = run("host[profile=host2020](raid5(8*pm9a3))", w);
    let many = run(
        "host[profile=host2020](raid5[group_thread_cnt=8](8*pm9a3))",
        w,
    );
    let threads = |r: &RunResult| {
        r.components
            .iter()
            .find(|c| c.kind == "raid")
            .map(|c| (c.utilization, c.bottleneck))
            .expect("the array's stripe threads are reported")
    };
    assert_eq!(threads(&one), (1.0, true), "raid5d is the bottleneck");
    assert!(
        many.summary.iops > 2.0 * one.summary.iops,
        "workers: {} vs {} IOPS",
        many.summary.iops,
        one.summary.iops
    );
    assert!(!threads(&many).1, "with workers the drives limit");
    let r = "rw=randread bs=4k iodepth=32 numjobs=16 runtime=0.3";
    let reads = run("host[profile=host2020](raid5(8*pm9a3))", r);
    assert!(threads(&reads).0 < 0.2, "reads bypass the stripe cache");
}

/// Phenomenon 26: md's write-intent bitmap sets a region's bit on every
/// member (a page write and a flush) before the first write to a region
/// whose bit has cleared. With a small bitmap chunk nearly every small
/// random write lands in such a region and pays it; with mdadm's default
/// 64 MiB chunk, regions under a steady random load stay dirty (bits clear
/// after 5 s without writes) and the bitmap costs nothing once warm.
#[test]
fn p26_a_small_bitmap_chunk_costs_small_writes_dearly() {
    // A ramp longer than the bitmap daemon's 5 s, so the default chunk's
    // regions are all dirty by the window.
    let w = "rw=randwrite bs=4k iodepth=16 numjobs=4 ramp_time=6 runtime=1";
    let iops = |t: &str| run(t, w).summary.iops;
    let none = iops("raid1(2*s3500-480)");
    let default = iops("raid1[bitmap=internal](2*s3500-480)");
    let small = iops("raid1[bitmap_chunk=4k](2*s3500-480)");
    assert!(small < 0.75 * none, "4k chunk: {small} vs {none} IOPS");
    assert!(
        (default / none - 1.0).abs() < 0.05,
        "64 MiB chunk once warm: {default} vs {none} IOPS"
    );
}

/// Phenomenon 54: before Linux 6.4, md wrote the last page of its
/// write-intent bitmap only as far as its used sectors, so where that page
/// is partly used every bit set in it reaches the drives as a write of less
/// than their 4 KiB unit, which a page-mapped drive must merge with the
/// unit's old data read from its flash before it completes (Jon Derrick,
/// kernel commit 8745faa95611, "md: Use optimal I/O size for last bitmap
/// page", 2023: 4 KiB random writes to an md RAID 10 of four Solidigm
/// P5520s ran at 1,676 IOPS before and 15.7k after). A 1.92 TB mirror with
/// 128 MiB regions has a one-page bitmap of 2,045 bytes. Writes at 2,000 a
/// second come back to a region every 7 s, so most find its bit cleared:
/// on Linux 6.3 each then waits for the drive to read, merge and commit
/// the bitmap's unit (phenomenon 60); on 6.4 it does not. Without a bitmap the two kernels write alike.
#[test]
fn p54_older_kernels_write_a_partial_last_bitmap_page_below_the_drives_unit() {
    let w = "rw=randwrite bs=4k iodepth=1 rate_iops=2000 runtime=30";
    let lat = |kernel: &str, bitmap: &str| {
        let t = format!("host[profile=host2023,kernel={kernel}](raid1[{bitmap}](2*p5520))");
        run(&t, w).summary
    };
    let bm = "bitmap=internal,bitmap_chunk=128m";
    let (old, new) = (lat("6.3", bm), lat("6.4", bm));
    let (old0, new0) = (lat("6.3", "bitmap=none"), lat("6.4", "bitmap=none"));
    assert!(
        old0.lat_avg_ms == new0.lat_avg_ms,
        "no bitmap: {} vs {} ms",
        old0.lat_avg_ms,
        new0.lat_avg_ms
    );
    assert!(
        old.lat_avg_ms > new.lat_avg_ms + 0.010,
        "partial last page {} ms vs whole {} ms",
        old.lat_avg_ms,
        new.lat_avg_ms
    );
    assert!(
        old.lat_p99_ms > 2.0 * new.lat_p99_ms,
        "p99 {} vs {} ms",
        old.lat_p99_ms,
        new.lat_p99_ms
    );
}

/// Phenomenon 60: a drive that keeps its 4 KiB write unit atomic commits a
/// write covering a unit only in part before completing it. Jon Derrick's
/// biosnoop of a Solidigm P5520 (linux-raid, "[PATCH v5 3/3] md: Use
/// optimal I/O size for last bitmap page", 2023-02-24) shows 3,584-byte
/// writes taking 0.43-0.66 ms beside 0.01-0.02 ms for the 4 KiB writes
/// around them. A drive that merges the unit in its
/// write buffer (the PM9A3 here) completes such a write in about one flash
/// read, and whole-unit writes go to the buffer on both.
#[test]
fn p60_a_drive_with_an_atomic_write_unit_commits_partial_writes_before_completing_them() {
    let lat = |drive: &str, bs: &str| {
        let w = format!("rw=randwrite bs={bs} blockalign=4k iodepth=1 runtime=0.5");
        run(drive, &w).summary.lat_avg_ms
    };
    let (atomic, whole) = (lat("p5520", "3584"), lat("p5520", "4k"));
    assert!(
        (0.3..0.8).contains(&atomic),
        "P5520 partial write {atomic} ms"
    );
    assert!(whole < 0.03, "whole-unit write {whole} ms");
    let merged = lat("pm9a3", "3584");
    assert!(
        merged < 0.5 * atomic && merged > 2.0 * lat("pm9a3", "4k"),
        "buffer-merging drive: partial {merged} ms against {atomic} ms"
    );
}

/// Phenomenon 61: a drive whose firmware paces collection meters host
/// writes at the rate its flash sustains, so random writes wait longer as
/// their rate nears it, well before saturation. SSD-iq's PM9A3 960 GB
/// (Haas, Lee, Bonnet and Leis, PVLDB 2025; data in
/// github.com/gabriel-haas/ssdiq-pub) writes 4 KiB at a p99 of 14 µs at
/// 39.7K writes/s, 44 µs at 49.6K and 81 µs at 59.5K, its median staying
/// near 11-14 µs, against a saturation near 76.5K/s. The model's PM9A3 960
/// sustains about 82K/s (its spare set from SSD-iq's measured write
/// amplification); at a third of that its writes go straight in, at
/// SSD-iq's highest load, 69K/s, a burst of Poisson arrivals waits its turn.
#[test]
fn p61_a_paced_drive_meters_host_writes_at_its_sustained_rate() {
    let at = |per_job: u32| {
        let w = format!(
            "rw=randwrite bs=4k numjobs=4 iodepth=64 rate_iops={per_job} \
             rate_process=poisson io_submit_mode=offload runtime=1 state=steady"
        );
        run("pm9a3-960", &w).summary.write
    };
    let (light, heavy) = (at(7_000), at(17_250));
    assert!(
        light.lat_p99_ms < 2.0 * light.lat_p50_ms,
        "a third: p99 {} ms against p50 {} ms",
        light.lat_p99_ms,
        light.lat_p50_ms
    );
    assert!(
        heavy.lat_p99_ms > 2.5 * light.lat_p99_ms,
        "69K/s: p99 {} ms against {} ms at a third",
        heavy.lat_p99_ms,
        light.lat_p99_ms
    );
    assert!(
        heavy.lat_p50_ms < 2.0 * light.lat_p50_ms,
        "69K/s: most writes still go straight in, p50 {} ms",
        heavy.lat_p50_ms
    );
}

/// Phenomenon 62: before Linux 6.5 md RAID 1 and 10 hand every write
/// submitted outside a plug (fio's, one at a time) to the array's thread,
/// which must be woken before it issues it; from 6.5 only an array with a
/// write-intent bitmap does (Yu Kuai, "md/raid1-10: submit write io
/// directly if bitmap is not enabled", 2023), since its thread writes the
/// bitmap's pages first. At queue depth 1 the wake-up is each write's
/// cost; reads never go through the thread.
#[test]
fn p62_md_mirror_writes_wait_for_the_array_thread_before_6_5_or_with_a_bitmap() {
    let at = |kernel: &str, bitmap: &str, rw: &str| {
        let t = format!("host[profile=host2023,kernel={kernel}](raid10[{bitmap}](4*p5520))");
        let w = format!("rw={rw} bs=4k iodepth=1 runtime=0.5");
        run(&t, &w).summary.lat_avg_ms
    };
    let none = "bitmap=none";
    let (old, new) = (at("6.4", none, "randwrite"), at("6.5", none, "randwrite"));
    // The thread's wake-up (8 us) on every write, no more.
    assert!(
        (old - new - 0.008).abs() < 0.001,
        "6.4 writes {old} ms against 6.5's {new} ms"
    );
    let bm = "bitmap=internal,bitmap_chunk=64m";
    let with_bitmap = at("6.5", bm, "randwrite");
    assert!(
        with_bitmap >= new + 0.008,
        "6.5 with a bitmap {with_bitmap} ms against {new} ms without"
    );
    // An external bitmap's page, written to its file, is waited for too.
    let file = at("6.5", "bitmap_device=p5520,bitmap_chunk=64m", "randwrite");
    assert!(
        file >= new + 0.008,
        "6.5 with an external bitmap {file} ms against {new} ms without"
    );
    let (old_r, new_r) = (at("6.4", none, "randread"), at("6.5", none, "randread"));
    assert!(old_r == new_r, "reads {old_r} against {new_r} ms");
}

/// Phenomenon 63: a job that hands its I/Os over in batches
/// (`iodepth_batch_submit`) and reaps them in batches
/// (`iodepth_batch_complete_min`) submits more than two in one system call,
/// which io_uring and libaio run inside a block plug; md RAID 1 and 10 then
/// queue the writes on the plug and the submitter writes them out itself
/// when the plug is flushed (`raid1_unplug` with `from_schedule` false), so
/// the array thread's wake-up that phenomenon 62 charges is not paid: on
/// Linux 6.4 a batched job runs as on 6.5, and one that submits one I/O a
/// call still pays it. Batched reaping alone lowers the queue the device
/// sees between refills, and so the rate, against the same depth refilled
/// as each I/O returns.
#[test]
fn p63_batched_submission_skips_md_s_array_thread_and_batched_reaping_drains_the_queue() {
    let at = |kernel: &str, batch: &str| {
        let t = format!("host[profile=host2023,kernel={kernel}](raid10(4*p5520))");
        let w = format!("rw=randwrite bs=4k iodepth=4 runtime=0.5 state=fill {batch}");
        run(&t, &w).summary
    };
    let reap4 = "iodepth_batch_complete_min=4";
    let both = "iodepth_batch_submit=4 iodepth_batch_complete_min=4";
    let (old_one, old_plug) = (at("6.4", reap4).lat_avg_ms, at("6.4", both).lat_avg_ms);
    let new_plug = at("6.5", both).lat_avg_ms;
    // The thread, woken for the first write of a batch, takes the others
    // as it finds them: at least half its 8 us on the average write.
    assert!(
        old_one >= old_plug + 0.004,
        "6.4: one a call {old_one} ms, plugged batches {old_plug} ms"
    );
    assert!(
        (old_plug - new_plug).abs() < 1e-6,
        "plugged batches alike on 6.4 ({old_plug} ms) and 6.5 ({new_plug} ms)"
    );
    let w = "rw=randread bs=4k iodepth=32 runtime=0.5";
    let refill = run("host[profile=host2023](pm9a3)", w).summary;
    let drained = run(
        "host[profile=host2023](pm9a3)",
        &format!("{w} iodepth_batch_complete_min=32"),
    )
    .summary;
    assert!(
        drained.iops < 0.8 * refill.iops,
        "reaping all 32 before refilling: {} IOPS against {}",
        drained.iops,
        refill.iops
    );
}

/// Phenomenon 55: md RAID 10 learned to send reads to its idlest flash
/// mirror only in Linux 5.3 (Guoqing Jiang, "md/raid10: read balance
/// chooses idlest disk for SSD", 2019), seven years after RAID 1 (3.6).
/// Andy Smith measured a RAID 10 of a Samsung PM983 NVMe drive and an
/// SM883 SATA SSD reading 4 KiB at random at 208,000 IOPS against 602,000
/// for a RAID 1 of the same two, and 602,000 with the patch (strugglers.net,
/// 2019-06). Before it, RAID 10 chose by head distance, the first idle copy
/// first, as for disks, so the SATA drive took about half the reads and
/// set the pace; after it, the NVMe drive takes nearly all.
#[test]
fn p55_md_raid10_reads_its_flash_mirrors_by_load_only_from_linux_5_3() {
    let w = "rw=randread bs=4k iodepth=32 numjobs=4 runtime=0.5";
    let iops = |kernel: &str, level: &str| {
        let t = format!("host[profile=host2020,kernel={kernel}]({level}(pm9a3, s3500-800))");
        run(&t, w).summary.iops
    };
    let (r1_old, r10_old) = (iops("5.2", "raid1"), iops("5.2", "raid10"));
    let (r1_new, r10_new) = (iops("5.10", "raid1"), iops("5.10", "raid10"));
    assert!(
        r10_old < 0.5 * r1_old,
        "5.2: RAID 10 {r10_old} vs RAID 1 {r1_old} IOPS"
    );
    assert!(
        (r10_new / r1_new - 1.0).abs() < 0.1,
        "5.10: RAID 10 {r10_new} vs RAID 1 {r1_new} IOPS"
    );
    assert!(
        (r1_old / r1_new - 1.0).abs() < 0.05,
        "RAID 1 alike on both: {r1_old} vs {r1_new} IOPS"
    );
}

/// Phenomenon 57: an internal write-intent bitmap lives on the members, so
/// on a mirror of disks every bit set costs each disk a seek to the bitmap
/// and a cache flush before the data goes out; an external bitmap (mdadm's
/// `--bitmap=FILE`, kept in a file on another drive) costs the members
/// nothing, its page going to that drive as one synchronous write
/// (md-bitmap.c `write_file_page`: REQ_SYNC, no flush). With 4 KiB regions
/// every random write sets a bit: internal, a 15k rpm mirror writes well
/// under two thirds of what it writes without a bitmap; external on an SSD,
/// nearly as much as without.
#[test]
fn p57_an_external_bitmap_on_an_ssd_spares_a_disk_mirror_its_seeks() {
    let w = "rw=randwrite bs=4k iodepth=1 runtime=2";
    let mirror = |b: &str| iops(&format!("raid1[{b}](2*hdd-sas15k)"), w);
    let none = mirror("bitmap=none");
    let internal = mirror("bitmap_chunk=4k");
    let external = mirror("bitmap_chunk=4k,bitmap_device=x25e");
    assert!(
        internal < 0.6 * none,
        "internal {internal} vs none {none} IOPS"
    );
    assert!(
        external > 0.95 * none,
        "external on an SSD {external} vs none {none} IOPS"
    );
}

/// Phenomenon 58: from Linux 4.1 md's rebuild no longer falls to
/// `speed_limit_min` under foreground I/O: finding the array busy, it
/// waits for its own requests in flight to finish, then issues its next
/// 128 KiB window (NeilBrown, "md: allow resync to go faster when there is
/// competing IO", commit ac8fa4196d20, 2015). The rebuild then runs near
/// its idle pace, and the foreground pays: Xiao Ni's measurements on the
/// linux-raid list (2025-04-09, "[PATCH RFC] md: fix is_mddev_idle()")
/// show a resync at 170-190 MB/s beside single fio jobs held to between
/// 18 KB/s (4 KiB random reads) and 10 MB/s (sequential reads, depth 32).
#[test]
fn p58_md_rebuilds_under_load_drain_instead_of_sleeping_from_linux_4_1() {
    let w = "rw=randread bs=4k iodepth=32 runtime=5";
    let under = |kernel: &str| {
        let r = run(
            &format!("host[kernel={kernel}](raid5[stripe=64k,spares=1](3*x25e, missing, x25e))"),
            w,
        );
        let rb = r.sim.rebuilds.first().expect("a rebuild").rate_mb_s;
        (r.summary.iops, rb)
    };
    let degraded = iops("host[kernel=4.1](raid5[stripe=64k](3*x25e, missing))", w);
    let (fg_old, rb_old) = under("4.0");
    let (fg_new, rb_new) = under("4.1");
    // Before 4.1: about speed_limit_min (1,000 KiB/s), the foreground kept.
    assert!(
        rb_old < 2.0 && fg_old > 0.95 * degraded,
        "{rb_old} MB/s, {fg_old} of {degraded}"
    );
    // From 4.1: near the spare's sequential write rate (the X25-E's
    // 170 MB/s), and the foreground gives up much of its rate.
    assert!(rb_new > 100.0, "{rb_new} MB/s");
    assert!(fg_new < 0.7 * fg_old, "{fg_new} vs {fg_old} IOPS");
}

/// Phenomenon 59: a MegaRAID paces a rebuild by its Rebuild Rate, the
/// share of its work the rebuild takes while host I/O goes on (30 % by
/// default), not by md's speed limits: under random reads the rebuild runs
/// at a large fraction of its idle pace, a higher rate rebuilds faster and
/// leaves the host less.
#[test]
fn p59_a_controller_rebuilds_at_its_rebuild_rate() {
    let busy = "rw=randread bs=4k iodepth=32 runtime=5";
    let under = |rate: &str| {
        let r = run(
            &format!(
                "megaraid9361{rate}(raid5[stripe=64k,spares=1](3*s3500-800, missing, s3500-800))"
            ),
            busy,
        );
        let rb = r.sim.rebuilds.first().expect("a rebuild").rate_mb_s;
        (r.summary.iops, rb)
    };
    let (fg_low, rb_low) = under("[rebuild_rate=10]");
    let (fg_default, rb_default) = under("");
    let (fg_high, rb_high) = under("[rebuild_rate=100]");
    // Far above md's speed_limit_min (1 MB/s) at the default rate.
    assert!(rb_default > 100.0, "{rb_default} MB/s");
    assert!(
        rb_low < rb_default && rb_default < rb_high,
        "{rb_low} / {rb_default} / {rb_high} MB/s"
    );
    assert!(
        fg_low > fg_default && fg_default > fg_high,
        "{fg_low} / {fg_default} / {fg_high} IOPS"
    );
}

/// Phenomenon 27: md RAID 0 over many NVMe drives is bound by the CPU of
/// the threads that submit to it well before the drives are. md maps each
/// RAID 0/1/10 request in the submitting thread's context
/// (md_submit_bio), and a fio job is one thread on one core (its NVMe
/// completions come back to that core too): at host2020's 1.64 µs of block
/// layer per I/O (Axboe, "Efficient IO with io_uring", 2019: 608K IOPS per
/// core with libaio) plus md's few µs, sixteen jobs cannot keep eight
/// PM9A3s busy, while the same jobs on the same drives as separate volumes
/// (JBOD: each job with all eight drives as its filenames) reach nearly
/// the drives' own rate. The issue that
/// asked for this names a public report of 3.8 M IOPS for md RAID 0
/// against 7 M for the same drives as JBOD.
#[test]
fn p27_md_raid0_over_many_nvme_drives_is_cpu_bound() {
    let w = |jobs: u32| format!("rw=randread bs=4k iodepth=32 numjobs={jobs} runtime=0.3");
    let md = run(
        "host[profile=host2020](raid0[stripe=128k](8*pm9a3))",
        &w(16),
    );
    let jbod = iops("host[profile=host2020](8*pm9a3)", &w(16));
    let host = host_row(&md);
    assert!(
        md.summary.iops < 0.6 * jbod,
        "md RAID 0 {} vs JBOD {jbod} IOPS",
        md.summary.iops
    );
    assert!(jbod > 6.0e6, "the drives as JBOD: {jbod} IOPS");
    assert!(host.bottleneck, "the host is the bottleneck");
    assert_eq!(host.resource.as_deref(), Some("job threads"));
    assert!(md.host.cpu_util_pct < 50.0, "most cores are idle");
}

/// Phenomenon 56: with few submitting threads, md RAID 0 of four NVMe
/// drives reads 4 KiB at random below one of its drives alone, and 512 KiB
/// at nearly four times one drive. A job is one thread: at 4 KiB it is
/// bound by its own per-I/O CPU (block layer and driver, 1.64 µs on
/// host2020: Axboe's 608K reads per core), and md's request and member
/// work in the submitting thread (`md_submit_bio`) comes on top, so each
/// job submits fewer I/Os to the array than to a bare drive; at 512 KiB
/// the drives' transfers, not the thread, set the pace.
#[test]
fn p56_few_threads_read_less_from_an_nvme_raid0_than_from_one_drive_at_4k() {
    let one = "host[profile=host2020](pm9a3)";
    let md = "host[profile=host2020](raid0(4*pm9a3))";
    for jobs in [1, 2] {
        let w = format!("rw=randread bs=4k iodepth=32 numjobs={jobs} runtime=0.3");
        let (drive, array) = (iops(one, &w), iops(md, &w));
        assert!(
            array < drive,
            "{jobs} jobs: RAID 0 {array} vs one drive {drive} IOPS"
        );
    }
    let w = "rw=randread bs=512k iodepth=32 numjobs=2 runtime=0.3";
    let (drive, array) = (mbps(one, w), mbps(md, w));
    assert!(
        array > 3.5 * drive,
        "512 KiB: RAID 0 {array} vs one drive {drive} MB/s"
    );
}

/// Phenomenon 28: chunk size moves an NVMe md RAID 0's throughput and tail
/// latency by large factors. md splits a request at every chunk boundary
/// and pays a bio per piece (raid0's make_request bio_split loop), so a
/// tiny chunk makes one job's large sequential reads CPU-bound; a chunk
/// larger than the request leaves random reads on one drive each, where a
/// chunk below it spreads them over several drives in parallel.
#[test]
fn p28_chunk_size_moves_nvme_raid0_throughput_and_tail_latency() {
    let md = |chunk: &str| format!("host[profile=host2020](raid0[stripe={chunk}](4*pm9a3))");
    let seq = "rw=read bs=1m iodepth=8 runtime=0.3";
    let tiny = run(&md("4k"), seq);
    let wide = run(&md("512k"), seq);
    assert!(
        wide.summary.mbps > 3.0 * tiny.summary.mbps,
        "1 MiB reads: 512k chunk {} MB/s vs 4k chunk {} MB/s",
        wide.summary.mbps,
        tiny.summary.mbps
    );
    let rand = "rw=randread bs=128k iodepth=16 numjobs=4 runtime=0.3";
    let split = run(&md("32k"), rand);
    let whole = run(&md("512k"), rand);
    assert!(
        whole.summary.lat_p99_ms > 1.2 * split.summary.lat_p99_ms,
        "128 KiB random reads p99: 512k chunk {} ms vs 32k chunk {} ms",
        whole.summary.lat_p99_ms,
        split.summary.lat_p99_ms
    );
}

/// Phenomenon 29: a tri-mode adapter caps a full shelf of NVMe drives at
/// its own command rate and its host link. Eight PCIe 4.0 drives behind a
/// 9500-16i (SAS3816: two IOC cores for Broadcom's 3M IOPS, a PCIe 4.0 x8
/// host link) give well under half of what they give on the host's own
/// lanes, bound by the IOC for small reads and by the x8 link for large
/// ones.
#[test]
fn p29_a_tri_mode_adapter_caps_a_shelf_of_nvme_drives() {
    let direct = "host[profile=host2020](raid0[stripe=128k](8*pm9a3))";
    let behind = "host[profile=host2020](raid0[stripe=128k](hba9500[mode=jbod](8*pm9a3)))";
    let small = "rw=randread bs=4k iodepth=32 numjobs=48 runtime=0.2";
    let (d, b) = (run(direct, small), run(behind, small));
    assert!(
        b.summary.iops < 0.5 * d.summary.iops,
        "4 KiB reads: {} behind the adapter vs {} direct",
        b.summary.iops,
        d.summary.iops
    );
    assert_eq!(limit(&b), Some(("controller".into(), "roc".into())));
    let large = "rw=read bs=1m iodepth=16 numjobs=8 runtime=0.2";
    let (d, b) = (run(direct, large), run(behind, large));
    assert!(
        b.summary.mbps < 14_000.0,
        "x8 link: {} MB/s",
        b.summary.mbps
    );
    assert!(
        d.summary.mbps > 3.0 * b.summary.mbps,
        "direct {} MB/s",
        d.summary.mbps
    );
    assert_eq!(limit(&b), Some(("controller".into(), "pcie".into())));
}

/// Phenomenon 31: a tri-mode RAID adapter caps an array of NVMe drives at
/// its RAID-on-chip's command rate and its cache path, and the next
/// generation moves both caps by the factors its maker gives. Eight PCIe 4.0
/// drives in RAID 0 behind a 9560-16i give a fraction of their direct small
/// reads (its two RoC cores), and large reads stop at its cache path; the
/// 9670W-16i, with Broadcom's over 4x the IOPS and 2x the bandwidth, moves
/// both by those factors, and the same resources stay the bottleneck.
#[test]
fn p31_a_tri_mode_raid_adapter_caps_an_nvme_array() {
    let arr = |c: &str| format!("host[profile=host2020]({c}(raid0(8*pm9a3)))");
    let direct = "host[profile=host2020](raid0[stripe=256k](8*pm9a3))";
    let small = "rw=randread bs=4k iodepth=32 numjobs=48 runtime=0.2";
    let (d, old, new) = (
        run(direct, small),
        run(&arr("megaraid9560"), small),
        run(&arr("megaraid9670"), small),
    );
    assert!(
        old.summary.iops < 0.25 * d.summary.iops,
        "4 KiB reads: {} behind the 9560 vs {} direct",
        old.summary.iops,
        d.summary.iops
    );
    assert_eq!(limit(&old), Some(("controller".into(), "roc".into())));
    let gain = new.summary.iops / old.summary.iops;
    assert!(
        (3.5..=4.5).contains(&gain),
        "9670 vs 9560 small reads: {gain:.2}x"
    );
    let large = "rw=read bs=1m iodepth=16 numjobs=8 runtime=0.2";
    let (old, new) = (
        run(&arr("megaraid9560"), large),
        run(&arr("megaraid9670"), large),
    );
    assert_eq!(limit(&old), Some(("controller".into(), "dma".into())));
    let gain = new.summary.mbps / old.summary.mbps;
    assert!(
        (1.8..=2.2).contains(&gain),
        "9670 vs 9560 large reads: {gain:.2}x"
    );
}

/// Phenomenon 32: md's per-array locks show at millions of IOPS. On a
/// Linux 5.x host every RAID 10 request takes the array's barrier lock
/// (`conf->resync_lock` in `wait_barrier`), so small random reads from
/// many jobs stop at the lock's rate — 1 / 0.545 us, the 7.0 GiB/s Yu Kuai
/// measured on four NVMe drives before his lockless patches (LKML
/// 2022-09) — while a RAID 0 of the same drives, which takes no such lock,
/// goes on to its jobs' threads; at SATA rates the lock never shows.
#[test]
fn p32_md_raid10_stops_at_its_barrier_lock() {
    let w = "rw=randread bs=4k iodepth=256 numjobs=16 runtime=0.2";
    let r10 = run("host[profile=host2020](raid10(4*pm9a3))", w);
    let r0 = run("host[profile=host2020](raid0(4*pm9a3))", w);
    assert_eq!(limit(&r10).map(|l| l.1).as_deref(), Some("barrier lock"));
    let rate = r10.summary.iops * 4096.0 / (1u64 << 30) as f64;
    assert!((6.5..=7.5).contains(&rate), "RAID 10: {rate:.2} GiB/s");
    assert!(
        r0.summary.iops > 1.5 * r10.summary.iops,
        "RAID 0 {} vs RAID 10 {} IOPS",
        r0.summary.iops,
        r10.summary.iops
    );
    let sata = run("host[profile=host2020](raid10(4*s3500-800))", w);
    assert_ne!(limit(&sata).map(|l| l.1).as_deref(), Some("barrier lock"));
    // A Linux 6.x host (md's lockless raid10) has no such lock to stop at.
    let lockless = run("host[profile=host2023](raid10(4*pm9a3))", w);
    assert_ne!(
        limit(&lockless).map(|l| l.1).as_deref(),
        Some("barrier lock")
    );
    assert!(
        lockless.summary.iops > 1.5 * r10.summary.iops,
        "lockless RAID 10 {} vs locked {} IOPS",
        lockless.summary.iops,
        r10.summary.iops
    );
}

/// Phenomenon 33: md's Partial Parity Log (Intel VROC's RAID write hole
/// closure on Linux) costs RAID 5 small writes. Before a write's data and
/// parity go out, md writes the stripe's partial parity and a header to the
/// parity drive with FUA, and raid5d XORs the partial parity: "Write
/// performance is reduced by up to 30%-40%" (Documentation/md/raid5-ppl.rst).
/// Four PM9A3 in RAID 5 lose about a quarter of their 4 KiB random writes
/// when raid5d alone runs the stripes, and less once eight stripe workers
/// leave the drives as the limit (each write then costs its drives a third
/// more commands and, as the model writes a log unit's header for every
/// write where md shares one among the stripes of a raid5d pass, twice the
/// bytes: up to half the rate once the drives' flash is the limit; the
/// shared header is not modelled). Full-stripe writes log nothing.
#[test]
fn p33_md_ppl_costs_raid5_small_writes() {
    let w = "rw=randwrite bs=4k iodepth=32 numjobs=8 runtime=0.5 ramp_time=0.3 size=8g";
    let t = |opts: &str| format!("host[profile=host2020](raid5[{opts}](4*pm9a3))");
    let cost = |opts: &str| {
        let plain = run(&t(opts), w);
        let ppl = run(&t(&format!("{opts},consistency=ppl")), w);
        let drop = 1.0 - ppl.summary.iops / plain.summary.iops;
        (drop, limit(&plain), limit(&ppl))
    };
    let (drop, plain, ppl) = cost("impl=md");
    assert_eq!(plain.map(|l| l.1).as_deref(), Some("stripes"));
    assert_eq!(ppl.map(|l| l.1).as_deref(), Some("stripes"));
    assert!(
        (0.15..=0.40).contains(&drop),
        "raid5d-bound: {:.0}% lost",
        drop * 100.0
    );
    // Spread over worker threads, the array is bound by the drives'
    // programs, and the log's writes take their share of them.
    let (workers, _, bound) = cost("impl=md,group_thread_cnt=8");
    assert_eq!(bound.map(|l| l.1).as_deref(), Some("nand"));
    assert!(
        (0.03..=0.50).contains(&workers),
        "drive-bound: {:.0}% lost (raid5d-bound {:.0}%)",
        workers * 100.0,
        drop * 100.0
    );
    // Whole stripes (3 data chunks of VROC's default 128 KiB) log nothing.
    let seq = "rw=write bs=384k iodepth=8 numjobs=4 runtime=0.3 size=8g";
    let vroc = |c: &str| {
        run(
            &format!("host[profile=host2020](raid5[impl=vroc{c}](4*pm9a3))"),
            seq,
        )
    };
    let (a, b) = (vroc(""), vroc(",consistency=ppl"));
    let full = (b.summary.mbps / a.summary.mbps - 1.0).abs();
    assert!(full < 0.02, "full stripes: {:.1}% apart", full * 100.0);
}

/// Phenomenon 30: an SLC-cached drive's sequential writes fall once the
/// cache fills. The drive programs host pages one bit per cell, fast,
/// while its SLC cache has room, then in its native mode. A PM9A3-like TLC
/// drive given a 4 GB cache (SLC-mode program 150 µs against its 524 µs
/// TLC program, the ratio of the one- and three-bit modes of 3D NAND of
/// its generation) writes at its link's rate for the first fraction of a
/// second and at its TLC rate from then on; in random-write steady state
/// the cache is used up from the start.
#[test]
fn p30_slc_cached_sequential_writes_fall_once_the_cache_fills() {
    let mut db = PresetDb::builtin();
    db.load_str(
        "[slc-tlc]\nbase = \"pm9a3\"\ndescription = \"PM9A3 with an SLC cache\"\nslc_cache_gb = 4\nslc_program_us = 150\n",
    )
    .expect("preset");
    let mbps = |drive: &str, w: &str| {
        let t = resolve(&format!("host[profile=host2020]({drive})"), &db).expect("topology");
        let w = Workload::parse(&format!("rw=write bs=128k iodepth=32 {w}")).expect("workload");
        simulate(&t, &w, 1).expect("simulate").summary.mbps
    };
    let early = "ramp_time=0 runtime=0.4";
    let late = "ramp_time=2 runtime=1";
    let (cached, after) = (mbps("slc-tlc", early), mbps("slc-tlc", late));
    let plain = mbps("pm9a3", late);
    assert!(
        cached > 1.5 * after,
        "in cache {cached} MB/s, after {after} MB/s"
    );
    assert!(
        (after / plain - 1.0).abs() < 0.05,
        "once full it writes as the TLC drive: {after} vs {plain} MB/s"
    );
    let steady = mbps("slc-tlc[state=steady]", early);
    let plain_steady = mbps("pm9a3[state=steady]", early);
    assert!(
        (steady / plain_steady - 1.0).abs() < 0.05,
        "steady state starts with the cache used up: {steady} vs {plain_steady} MB/s"
    );
}

/// 52. md's RAID 10 far layout (`f2`) reads as a RAID 0 of all its disks:
///     md reads a far array's copies from the lowest address, the first
///     band, which holds the data striped over every member ("with this
///     patch, read speed of an 'f2' array is comparable with a raid0 with
///     the same number of devices", Neil Brown, kernel commit 22dfdf52,
///     2006; "don't attempt read-balancing for raid10 'far' layouts",
///     Keld Simonsen, 2008), where one large read of the near layout
///     (`n2`) finds its chunks' first copies on half the disks. Writes pay
///     for it: each member writes its primary and its copy half a disk
///     apart ("though write speed is of course still very slow").
#[test]
fn p52_raid10_far_copies_read_as_raid0_and_write_slower() {
    let r10 = |l: &str| format!("host(raid10[layout={l}](4*hdd-sas15k))");
    let big = "rw=read bs=4m iodepth=1 runtime=1";
    let (near, far) = (mbps(&r10("n2"), big), mbps(&r10("f2"), big));
    let raid0 = mbps("host(raid0(4*hdd-sas15k))", big);
    assert!(far > 1.7 * near, "f2 {far} MB/s, n2 {near} MB/s");
    assert!(
        (far / raid0 - 1.0).abs() < 0.1,
        "f2 {far} MB/s reads as the RAID 0 of its disks, {raid0} MB/s"
    );
    let w = "rw=write bs=1m iodepth=8 runtime=1";
    let (near_w, far_w) = (mbps(&r10("n2"), w), mbps(&r10("f2"), w));
    assert!(
        far_w < 0.85 * near_w,
        "f2 writes {far_w} MB/s, n2 {near_w} MB/s"
    );
}

/// 53. md sends a mirror's reads to its non-rotational members only: an md
///     RAID 1 of an SSD and a disk reads at random as the SSD alone, and
///     no read waits for the disk's seek ("read balance chooses idlest
///     disk for SSD ... for hard disk and SSD mixed raid, doesn't use
///     distance based algorithm", Shaohua Li, md/raid1, 2012; RAID 10's
///     `read_balance` picks the least pending non-rotational copy too).
#[test]
fn p53_md_mirrors_read_from_their_flash_members() {
    let w = "rw=randread bs=4k iodepth=16 runtime=0.5";
    let mixed = run("host[profile=host2020](raid1(s3500-800,hdd-sas15k))", w);
    let ssd = run("host[profile=host2020](s3500-800)", w);
    assert!(
        (mixed.summary.iops / ssd.summary.iops - 1.0).abs() < 0.03,
        "mixed mirror {} reads/s, the SSD alone {}",
        mixed.summary.iops,
        ssd.summary.iops
    );
    assert!(
        mixed.summary.lat_max_ms < 2.0,
        "a read waited for the disk: max {} ms",
        mixed.summary.lat_max_ms
    );
}
