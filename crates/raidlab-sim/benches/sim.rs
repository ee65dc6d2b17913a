//! Simulator speed: simulated host I/Os per wall-clock second on one core.
//!
//! Two scenarios from the simulator-core issue:
//! (a) `adaptec5085(raid0[stripe=64k](4*x25e))`, `rw=randread bs=4k iodepth=32`;
//! (b) `adaptec5085(raid5[stripe=64k](5*x25e))`, `preset=heavy rw=randwrite bs=8k state=steady`.
//!
//! Each scenario is timed whole (build and warm-up included) at several
//! simulated run lengths; criterion reports host I/Os per second for each.
//! The difference between two lengths is the event loop's own rate. Both
//! scenarios, as the issue gives them, have no `runtime`: each job makes one
//! pass over the volume (hundreds of millions of I/Os), so the build and
//! the steady-state warm-up (about 40 ms for (b)) are amortised to nothing.
//! The longest length of (b), 120 s, is the closest of these to that; the
//! shorter ones show what the warm-up costs a short run.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use raidlab_core::preset::PresetDb;
use raidlab_core::topology::resolve;
use raidlab_core::workload::Workload;
use raidlab_sim::simulate;
use std::hint::black_box;

fn scenario(c: &mut Criterion, name: &str, topo: &str, wl: &str, runtimes: &[&str]) {
    let db = PresetDb::builtin();
    let t = resolve(topo, &db).unwrap();
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    for rt in runtimes {
        let w = Workload::parse(&format!("{wl} runtime={rt}")).unwrap();
        let ios = simulate(&t, &w, 1).unwrap().sim.host_ios;
        g.throughput(Throughput::Elements(ios));
        g.bench_function(format!("runtime={rt}s ({ios} host I/Os)"), |b| {
            b.iter(|| black_box(simulate(&t, &w, 1).unwrap()))
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    scenario(
        c,
        "a_raid0_4x25e_randread_4k_qd32",
        "adaptec5085(raid0[stripe=64k](4*x25e))",
        "rw=randread bs=4k iodepth=32",
        &["1", "10"],
    );
    scenario(
        c,
        "b_raid5_5x25e_heavy_randwrite_8k_steady",
        "adaptec5085(raid5[stripe=64k](5*x25e))",
        "preset=heavy rw=randwrite bs=8k state=steady",
        &["1", "30", "120"],
    );
}

criterion_group!(sim, benches);
criterion_main!(sim);
