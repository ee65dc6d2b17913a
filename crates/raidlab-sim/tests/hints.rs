//! The memory-level hints (prefetches, advance notice of lookups) are a
//! speed measure only: the same simulations with and without them give the
//! same results, event for event. In a binary of its own, since turning
//! them off holds for the whole process.

use raidlab_core::preset::PresetDb;
use raidlab_core::topology::resolve;
use raidlab_core::workload::Workload;
use raidlab_sim::{set_memory_hints, simulate};

fn result(topo: &str, wl: &str) -> String {
    let t = resolve(topo, &PresetDb::builtin()).unwrap();
    let w = Workload::parse(wl).unwrap();
    let mut v = serde_json::to_value(simulate(&t, &w, 1).unwrap()).unwrap();
    v["sim"]["wall_s"] = serde_json::Value::Null;
    v.to_string()
}

#[test]
fn results_are_the_same_without_memory_hints() {
    let cases = [
        (
            "adaptec5085(raid0[stripe=64k](4*x25e))",
            "rw=randread bs=4k iodepth=32 runtime=0.2",
        ),
        (
            "adaptec5085(raid5[stripe=64k](5*x25e))",
            "preset=heavy rw=randwrite bs=8k state=steady runtime=0.2",
        ),
        (
            "raid10(4*s3500-800)",
            "rw=randrw bs=4k iodepth=16 numjobs=2 runtime=0.2",
        ),
        (
            "areca1680(raid0(4*mtron7535))",
            "rw=randwrite bs=4k numjobs=4 runtime=0.2",
        ),
    ];
    let with: Vec<String> = cases.iter().map(|(t, w)| result(t, w)).collect();
    set_memory_hints(false);
    let without: Vec<String> = cases.iter().map(|(t, w)| result(t, w)).collect();
    set_memory_hints(true);
    for ((c, a), b) in cases.iter().zip(&with).zip(&without) {
        assert_eq!(a, b, "{c:?}");
    }
}
