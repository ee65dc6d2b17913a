//! Helpers shared by the phenomena tests.
#![allow(dead_code, unused_imports)]

pub use raidlab_core::preset::PresetDb;
pub use raidlab_core::result::RunResult;
pub use raidlab_core::topology::resolve;
pub use raidlab_core::workload::Workload;
pub use raidlab_sim::{simulate, simulate_from_full_caches};

pub fn run(topo: &str, wl: &str) -> RunResult {
    let t = resolve(topo, &PresetDb::builtin()).unwrap_or_else(|e| panic!("{topo}: {e}"));
    let w = Workload::parse(wl).unwrap_or_else(|e| panic!("{wl}: {e}"));
    simulate(&t, &w, 1).unwrap_or_else(|e| panic!("{topo} | {wl}: {e}"))
}

/// The saturated component of a run: its kind and its busiest resource.
pub fn limit(r: &RunResult) -> Option<(String, String)> {
    r.components
        .iter()
        .find(|c| c.bottleneck)
        .map(|c| (c.kind.clone(), c.resource.clone().unwrap_or_default()))
}

/// The host's row among a result's components.
pub fn host_row(r: &RunResult) -> &raidlab_core::result::Component {
    r.components
        .iter()
        .find(|c| c.kind == "host")
        .expect("the host is reported")
}

pub fn iops(topo: &str, wl: &str) -> f64 {
    run(topo, wl).summary.iops
}

pub fn mbps(topo: &str, wl: &str) -> f64 {
    run(topo, wl).summary.mbps
}

/// Whether the run's measurement window was steady.
pub fn steady(r: &RunResult) -> bool {
    r.sim.steady.as_ref().expect("a simulation says").reached
}

pub fn lat(topo: &str, wl: &str) -> f64 {
    run(topo, wl).summary.lat_avg_ms
}

pub const A: &str = "adaptec5085";
