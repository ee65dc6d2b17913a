//! The result document of a simulation: figures over the window, each
//! component's load and bottleneck, the host CPU, rebuilds.

use super::*;

/// Each rebuild's progress at the end of the run: rate over the simulated
/// time, and the whole rebuild's duration at that rate.
pub(crate) fn rebuild_stats(sim: &Sim) -> Vec<raidlab_core::result::RebuildStats> {
    let secs = sim.ctx.now as f64 / 1e9;
    sim.arrays
        .iter()
        .filter_map(|(id, name)| {
            let Comp::Array(a) = &sim.comps[id.index()] else {
                return None;
            };
            let r = a.rebuild()?;
            let member = a.geometry().member_size();
            let until = r.finished.map_or(secs, |f| f as f64 / 1e9);
            let rate = r.done as f64 / until.max(1e-9);
            Some(raidlab_core::result::RebuildStats {
                array: name.clone(),
                member_bytes: member,
                rebuilt_bytes: r.done.min(member),
                rate_mb_s: round3(rate / 1e6),
                finished_s: r.finished.map(|f| round3(f as f64 / 1e9)),
                projected_s: round3(member as f64 / rate.max(1e-9)),
            })
        })
        .collect()
}

/// The result of a finished run: the host's figures over the measurement
/// window and every component's load over it.
pub(crate) fn report(
    sim: &Sim,
    topo: &Topology,
    w: &Workload,
    seed: u64,
    m: Measured,
) -> RunResult {
    let Comp::Host(host) = &sim.comps[HOST.index()] else {
        unreachable!("the host is at HOST")
    };
    let secs = m.len as f64 / 1e9;
    let end = Snapshot::take(sim);
    let cpu_util = host_cpu(sim, &m.start, &end, m.len);
    let threads_util = job_threads(&m.start, &end, m.len);
    // A polled job (fio's hipri) spins on its core while it waits for its
    // I/Os, so the core is busy for all of that wait. The spin is elastic —
    // it takes what the wait leaves and limits nothing — so it is reported
    // in the host's CPU but not weighed as a limit.
    let cpu_reported = if w.hipri {
        cpu_util + polling_spin(sim, &m.start, &end, m.len)
    } else {
        cpu_util
    };
    let mut components = device_loads(sim, &m.start, &end, m.len);
    components.push(host_row(cpu_util, threads_util));
    mark_bottleneck(&mut components);
    debug_assert!(m.t0 <= sim.ctx.now.max(m.t0));
    RunResult {
        raidlab: VERSION.into(),
        engine: "sim".into(),
        topology: topo.expr.trim().to_string(),
        workload: w.to_json(seed),
        seed,
        summary: m.metrics.all.summary(secs),
        host: HostStats {
            cpu_util_pct: round3(cpu_reported.min(1.0) * 100.0),
        },
        components,
        sim: SimStats {
            simulated_s: secs,
            wall_s: 0.0,
            events: sim.ctx.events,
            host_ios: host.completed,
            steady: Some(m.steady),
            rebuilds: rebuild_stats(sim),
            replay: w.replay.as_ref().map(|r| {
                let (tally, err) = host.replay_tally();
                raidlab_core::trace::replay::stats(r, tally, &host.lag, err)
            }),
        },
        real: None,
        resolved: Some(Resolved {
            topology: topo.canonical(|d| w.state.or(d.state).unwrap_or(w.default_ssd_state())),
            capacity_bytes: sim.cap,
            volumes: sim.roots.len() as u32,
        }),
        intervals: host
            .timeline
            .as_ref()
            .map_or_else(Vec::new, |t| t.intervals(m.t0 - m.origin, m.len)),
        latency: Some(m.metrics.all.detail(m.len)),
        sections: Vec::new(),
        errors: host.errors.clone(),
        latency_target: host.found(),
        steadystate: host.steadystate(),
    }
}

/// Each job section's own figures over the window of a run whose sections
/// ran side by side: `sections` gives their names and workloads, in the
/// host's section order.
pub(crate) fn section_results(
    sections: &[(&str, &Workload)],
    figures: &[Metrics],
    seed: u64,
    len: Ns,
) -> Vec<raidlab_core::result::SectionResult> {
    debug_assert_eq!(sections.len(), figures.len(), "one figure a section");
    sections
        .iter()
        .zip(figures)
        .map(|((name, w), m)| raidlab_core::result::SectionResult::measured(name, w, m, seed, len))
        .collect()
}

/// The host's row: it names whichever of its limits is nearer, all its
/// cores or the jobs' own threads (one core each).
fn host_row(cpu_util: f64, threads_util: f64) -> Component {
    let (util, resource) = if threads_util > cpu_util {
        (threads_util, "job threads")
    } else {
        (cpu_util, "cpu")
    };
    Component {
        name: "host".into(),
        kind: "host".into(),
        utilization: round3(util),
        resource: Some(resource.into()),
        bottleneck: false,
        write_amplification: None,
        io: None,
        wear: None,
    }
}

/// Each reported device's and controller's busiest resource over the
/// window, and SSD write amplification.
pub(crate) fn device_loads(
    sim: &Sim,
    start: &Snapshot,
    end: &Snapshot,
    window: Ns,
) -> Vec<Component> {
    let mut util: Vec<(f64, &'static str)> = vec![(0.0, ""); sim.reports.len()];
    for (a, b) in start.busy.iter().zip(end.busy.iter()) {
        let u = if window > 0 {
            (b.2 - a.2) as f64 / (window as f64 * b.3 as f64)
        } else {
            0.0
        };
        let u = u.min(1.0);
        if u > util[a.0].0 || util[a.0].1.is_empty() {
            util[a.0] = (u, a.1);
        }
    }
    let comps = &sim.comps;
    sim.reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (name, kind, tbw) = match r {
                Report::Ssd(id) => match &comps[id.index()] {
                    Comp::Ssd(s) => (s.label.clone(), "ssd", s.rated_tbw),
                    _ => unreachable!("an SSD report names an SSD"),
                },
                Report::Hdd(id) => match &comps[id.index()] {
                    Comp::Hdd(h) => (h.label.clone(), "hdd", None),
                    _ => unreachable!("an HDD report names an HDD"),
                },
                Report::Controller { label, .. } => (label.clone(), "controller", None),
                Report::Stripes { label, .. } => (label.clone(), "raid", None),
            };
            let host_units = end.wa[i].0 - start.wa[i].0;
            let gc_units = end.wa[i].1 - start.wa[i].1;
            let wa = (kind == "ssd" && host_units > 0)
                .then(|| round3((host_units + gc_units) as f64 / host_units as f64));
            let io = end.io[i].zip(start.io[i]).map(|(e, s)| e - s);
            let wear = io.filter(|_| kind == "ssd").map(|io| {
                raidlab_core::result::Wear::project(
                    io.write_bytes,
                    wa.unwrap_or(1.0),
                    tbw,
                    window as f64 / 1e9,
                )
            });
            Component {
                name,
                kind: kind.into(),
                utilization: round3(util[i].0),
                resource: Some(util[i].1.to_string()),
                bottleneck: false,
                write_amplification: wa,
                io,
                wear,
            }
        })
        .collect()
}

/// The host CPU's busy share over the window (block layer and parity
/// threads).
pub(crate) fn host_cpu(sim: &Sim, start: &Snapshot, end: &Snapshot, window: Ns) -> f64 {
    let servers = sim.ctx.pools[HOST_CPU.index()].servers() as f64;
    if window > 0 {
        ((end.cpu - start.cpu) as f64 / (window as f64 * servers)).min(1.0)
    } else {
        0.0
    }
}

/// The share of the host's cores polled jobs spend spinning over the
/// window: each job's wait for its outstanding I/Os beyond its thread's own
/// work (which runs in that wait), on one core each.
pub(crate) fn polling_spin(sim: &Sim, start: &Snapshot, end: &Snapshot, window: Ns) -> f64 {
    let cores = sim.ctx.pools[HOST_CPU.index()].servers() as f64;
    if window == 0 {
        return 0.0;
    }
    let delta = |v: &[Ns], w: &[Ns], i: usize| v[i] - w.get(i).copied().unwrap_or(0);
    let spin: Ns = (0..end.waited.len().min(end.threads.len()))
        .map(|i| {
            let waited = delta(&end.waited, &start.waited, i);
            let worked = delta(&end.threads, &start.threads, i);
            waited.saturating_sub(worked)
        })
        .sum();
    spin as f64 / (window as f64 * cores)
}

/// The jobs' submitting threads' mean busy share over the window.
pub(crate) fn job_threads(start: &Snapshot, end: &Snapshot, window: Ns) -> f64 {
    let n = end.threads.len();
    if window == 0 || n == 0 {
        return 0.0;
    }
    let busy: Ns = end
        .threads
        .iter()
        .enumerate()
        .map(|(i, e)| e - start.threads.get(i).copied().unwrap_or(0))
        .sum();
    (busy as f64 / (window as f64 * n as f64)).min(1.0)
}

/// Mark the saturated component: the busiest one, if it is busy enough to
/// limit the run.
pub(crate) fn mark_bottleneck(components: &mut [Component]) {
    if let Some((i, c)) = components.iter().enumerate().max_by(|a, b| {
        a.1.utilization
            .total_cmp(&b.1.utilization)
            .then(b.0.cmp(&a.0))
    }) {
        if c.utilization >= BOTTLENECK_UTIL {
            components[i].bottleneck = true;
        }
    }
}
