//! Random small topologies and workloads through the whole simulator: every
//! run must finish without a panic and report sane figures.

use proptest::prelude::*;
use raidlab_core::preset::PresetDb;
use raidlab_core::topology::resolve;
use raidlab_core::workload::Workload;
use raidlab_sim::simulate;

fn device() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("x25e".to_string()),
        Just("x25e[wc=off]".to_string()),
        Just("s3500-80".to_string()),
        Just("s3500-80[op=20%]".to_string()),
        Just("mtron7535".to_string()),
        Just("hdd-sas15k".to_string()),
        Just("hdd-sas10k[wc=on]".to_string()),
    ]
}

fn array(members: usize) -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("raid0"),
            Just("raid1"),
            Just("raid5"),
            Just("raid6"),
            Just("raid10"),
            Just("concat")
        ],
        prop_oneof![Just("4k"), Just("16k"), Just("64k"), Just("256k")],
        prop_oneof![
            Just("left-symmetric"),
            Just("left-asymmetric"),
            Just("right-symmetric"),
            Just("right-asymmetric")
        ],
        device(),
    )
        .prop_map(move |(lvl, stripe, layout, dev)| {
            let n = match lvl {
                "raid5" => members.max(3),
                "raid6" => members.max(4),
                // Also put in a controller, whose RAID 10 is built from
                // pairs (md's own odd RAID 10s have cases of their own).
                "raid10" => members.max(4).next_multiple_of(2),
                _ => members.max(2),
            };
            let lay = if matches!(lvl, "raid5" | "raid6") {
                format!(",layout={layout}")
            } else {
                String::new()
            };
            format!("{lvl}[stripe={stripe}{lay}]({n}*{dev})")
        })
}

fn topology() -> impl Strategy<Value = String> {
    (
        array(3),
        0usize..10,
        prop_oneof![
            Just("adaptec5085"),
            Just("megaraid9361"),
            Just("areca1680"),
            Just("hba")
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(arr, shape, ctrl, wt, ra)| {
            let opts = format!(
                "[cache={},readahead={}]",
                if wt { "wt" } else { "wb" },
                if ra { "on" } else { "adaptive" }
            );
            // A host bus adapter runs no array: arrays go to a RAID
            // controller in its place.
            let raid_ctrl = if ctrl == "hba" { "megaraid9361" } else { ctrl };
            match shape {
                0 => arr,
                1 => format!("{raid_ctrl}{opts}({arr})"),
                2 => format!("raid0({ctrl}[mode=volume](2*x25e),{ctrl}[mode=volume](2*x25e))"),
                3 => format!("raid1[impl=lvm]({ctrl}[mode=jbod](2*s3500-80))"),
                4 => format!("host[cores=2]({arr})"),
                // Degraded, and rebuilding onto a spare behind a controller:
                // at md's limit, or at a MegaRAID's own rebuild rate.
                5 => "raid6[stripe=16k](3*x25e, missing)".to_string(),
                6 => {
                    let (rate, limit) = if raid_ctrl.starts_with("megaraid") {
                        ("[rebuild_rate=60]", "")
                    } else {
                        ("", ",rebuild_max=100m")
                    };
                    format!(
                        "{raid_ctrl}{rate}(raid5[stripe=64k,spares=1{limit}](2*x25e, missing, x25e))"
                    )
                }
                // md's write-intent bitmap, in a file on a drive of its
                // own and on the members of an older kernel (whose last
                // bitmap page writes fall below a 4 KiB unit), degraded.
                7 => "host[kernel=6.3](raid1(raid1[bitmap_chunk=4k,bitmap_device=x25e](x25e,missing,s3500-80),raid10[bitmap_chunk=16k](4*s3500-80)))".to_string(),
                // md's far and offset copies, over flash beside a disk
                // (md reads its flash), and degraded.
                8 => "raid10[stripe=16k,layout=f2](2*x25e,hdd-sas15k,s3500-80)".to_string(),
                9 => "raid10[layout=o2,spares=1](x25e,missing,x25e,x25e,x25e)".to_string(),
                _ => format!("raid0(raid1(2*x25e),{arr})"),
            }
        })
}

fn workload() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("read"),
            Just("write"),
            Just("randread"),
            Just("randwrite"),
            Just("rw"),
            Just("randrw")
        ],
        prop_oneof![Just("512"), Just("4k"), Just("8k"), Just("64k"), Just("1m")],
        1u32..40,
        1u32..4,
        prop_oneof![
            Just(""),
            Just("state=steady"),
            Just("state=fob"),
            Just("random_distribution=zipf:1.2"),
            Just("random_distribution=zoned:80/20:20/80"),
            Just("random_distribution=normal:10"),
            Just("bssplit=4k/50:64k/50"),
            Just("bsrange=4k-16k,8k-32k"),
            Just("thinktime=50"),
            Just("thinktime=50 thinktime_blocks=3"),
            Just("thinktime=50 thinktime_blocks=0 thinktime_blocks_type=issue"),
            Just("iodepth_batch_submit=0 iodepth_batch_complete_min=3"),
            Just("iodepth_batch_submit=2 iodepth_batch_complete_min=100 iodepth_low=1"),
            Just("thinktime=50 thinktime_blocks=4 iodepth_batch_complete_min=2"),
            Just("rate_iops=2000,500 rate_process=poisson"),
            Just("rate=4m io_submit_mode=offload"),
            // Flushes reach every member, missing ones excepted.
            Just("fsync=2"),
            Just("sync=1")
        ],
    )
        .prop_map(|(rw, bs, qd, jobs, extra)| {
            format!("rw={rw} bs={bs} iodepth={qd} numjobs={jobs} runtime=0.02 {extra}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn random_configurations_simulate_sanely(t in topology(), w in workload(), seed in 0u64..1000) {
        let db = PresetDb::builtin();
        let topo = resolve(&t, &db).map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?;
        let wl = Workload::parse(&w).map_err(|e| TestCaseError::fail(format!("{w}: {e}")))?;
        match simulate(&topo, &wl, seed) {
            Ok(r) => {
                let s = &r.summary;
                prop_assert!(s.iops.is_finite() && s.iops >= 0.0, "{} | {}: iops {}", t, w, s.iops);
                prop_assert!(s.lat_max_ms >= s.lat_p50_ms, "{} | {}", t, w);
                prop_assert!(r.components.iter().all(|c| (0.0..=1.0).contains(&c.utilization)));
                prop_assert!(r.components.iter().filter(|c| c.bottleneck).count() <= 1);
            }
            // Only typed input errors may come back (e.g. a block larger than a tiny volume).
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// A flush on an array with a member missing goes to the members there
/// are (it once went to the missing one's place, which has no component,
/// and the simulator panicked): `fsync=` and `sync=1` on degraded arrays.
#[test]
fn flushes_on_degraded_arrays_reach_the_members_there_are() {
    let db = PresetDb::builtin();
    for t in [
        "raid5(3*x25e, missing)",
        "raid1(x25e, missing)",
        "raid10(3*x25e, missing)",
    ] {
        for w in [
            "rw=write bs=4k size=1m fsync=1",
            "rw=randwrite bs=64k runtime=0.02 sync=1",
        ] {
            let topo = resolve(t, &db).unwrap();
            let r = simulate(&topo, &Workload::parse(w).unwrap(), 1).unwrap();
            assert!(r.summary.iops > 0.0, "{t} | {w}");
        }
    }
}
