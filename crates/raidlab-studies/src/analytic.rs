//! The classic analytic expectation of a simulated array, beside the
//! simulation: T/C × D × one drive (docs/model.md, [`raidlab_core::analytic`]).
//!
//! "One drive" is the array's own drive model simulated alone under the
//! same workload (same block size, direction, randomness and outstanding
//! I/Os, its span cut to the drive's capacity), behind the same link. The
//! expectation is therefore what the array would do if nothing but its
//! drives limited it; the gap to the simulated array is the controller, the
//! bus, the caches and the RAID implementation.
//!
//! Only arrays the model describes get an expectation: one RAID 0/1/5/6/10
//! array of identical drives, alone or behind controllers or a host, under
//! a workload that is all reads or all writes and keeps at least one I/O
//! outstanding per drive (the model assumes every drive busy).

use raidlab_core::analytic::{cost, Cost, Pattern};
use raidlab_core::result::Summary;
use raidlab_core::topology::{Device, Level, Node, Topology};
use raidlab_core::workload::Workload;
use raidlab_sim::{simulate, SimError};

/// An analytic expectation for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// T/C, R and efficiency of the array.
    pub cost: Cost,
    /// The drive preset.
    pub drive: String,
    /// One drive alone under the workload.
    pub one_drive: Summary,
}

impl Expectation {
    /// Expected value of a summary metric (`iops`, `mbps`); latency metrics
    /// have no classic expectation.
    pub fn metric(&self, name: &str) -> Option<f64> {
        match name {
            "iops" | "mbps" => Some(self.cost.drive_multiple * self.one_drive.metric(name)?),
            _ => None,
        }
    }
}

/// The array the model applies to: level, drives, and the drive model.
pub fn model_array(topo: &Topology) -> Option<(Level, &Device, u32)> {
    if topo.volume_count() != 1 {
        return None;
    }
    let mut n = &topo.root;
    loop {
        match n {
            Node::Controller(c) if c.children.len() == 1 => n = &c.children[0],
            Node::Array(a) => {
                if a.level == Level::Concat {
                    return None;
                }
                // Members are drives, or drives a controller exposes one
                // volume each (`volume`/`jbod` mode, as under host RAID).
                let mut devs: Vec<&Device> = Vec::new();
                for m in a.active() {
                    match m {
                        Node::Device(d) => devs.push(d),
                        Node::Controller(c)
                            if c.children.iter().all(|x| matches!(x, Node::Device(_))) =>
                        {
                            devs.extend(c.children.iter().filter_map(|x| match x {
                                Node::Device(d) => Some(d),
                                _ => None,
                            }))
                        }
                        _ => return None,
                    }
                }
                let first = *devs.first()?;
                let same = devs.iter().all(|d| {
                    d.preset == first.preset
                        && d.wc == first.wc
                        && d.op == first.op
                        && d.state == first.state
                        && d.link_mbps == first.link_mbps
                });
                return same.then_some((a.level, first, devs.len() as u32));
            }
            _ => return None,
        }
    }
}

/// The model's pattern for a workload: all reads or all writes, random when
/// at least half the I/Os are.
pub fn pattern_of(w: &Workload) -> Option<Pattern> {
    let reads = match (w.reads(), w.writes()) {
        (true, false) => true,
        (false, true) => false,
        _ => return None,
    };
    let random = w.percentage_random >= 50;
    Some(match (random, reads) {
        (true, true) => Pattern::SmallRandomRead,
        (true, false) => Pattern::SmallRandomWrite,
        (false, true) => Pattern::LargeSequentialRead,
        (false, false) => Pattern::LargeSequentialWrite,
    })
}

/// The expectation for `w` on `topo`, or `None` where the model does not
/// apply. The one-drive simulation uses `seed`.
pub fn expect(topo: &Topology, w: &Workload, seed: u64) -> Option<Result<Expectation, SimError>> {
    let (level, dev, d) = model_array(topo)?;
    let pattern = pattern_of(w)?;
    if (w.iodepth as u64 * w.numjobs as u64) < d as u64 {
        return None;
    }
    let c = cost(level, d, pattern).ok()?;
    Some(one_drive(topo, dev, w, seed).map(|s| Expectation {
        cost: c,
        drive: dev.preset.clone(),
        one_drive: s,
    }))
}

/// `dev` alone, under `w` cut to its capacity.
pub fn one_drive(
    topo: &Topology,
    dev: &Device,
    w: &Workload,
    seed: u64,
) -> Result<Summary, SimError> {
    let mut alone = dev.clone();
    alone.label = format!("{}#0", dev.preset);
    let t = Topology {
        expr: dev.preset.clone(),
        host: topo.host.clone(),
        host_profile: topo.host_profile.clone(),
        root: Node::Device(alone),
        more_roots: Vec::new(),
    };
    let mut w = w.clone();
    w.size = Some(w.size.map_or(dev.capacity(), |s| s.min(dev.capacity())));
    // The drive alone from its start: where the jobs sit on the array says
    // nothing about one drive's region.
    (w.size_pct, w.offset, w.offset_increment) = (None, None, None);
    simulate(&t, &w, seed).map(|r| r.summary)
}

/// The workload `raidlab model` measures one drive with: the datasheet
/// convention of 4 KiB random I/O at queue depth 32 for small patterns,
/// 1 MiB sequential I/O at queue depth 4 for large ones (enough to keep
/// every channel busy); `bs` overrides the block size. One second measured
/// after half a second of warm-up.
pub fn drive_workload(pattern: Pattern, bs: Option<u64>) -> String {
    let (rw, default_bs, depth) = match pattern {
        Pattern::SmallRandomRead => ("randread", 4096, 32),
        Pattern::SmallRandomWrite => ("randwrite", 4096, 32),
        Pattern::LargeSequentialRead => ("read", 1 << 20, 4),
        Pattern::LargeSequentialWrite => ("write", 1 << 20, 4),
    };
    let bs = bs.unwrap_or(default_bs);
    format!("rw={rw} bs={bs} iodepth={depth} runtime=1 ramp_time=0.5")
}

/// One drive's figure for `pattern`: IOPS for small patterns, MB/s for large.
pub fn drive_figure(drive: &Topology, w: &Workload, pattern: Pattern) -> Result<f64, SimError> {
    let s = simulate(drive, w, 1)?.summary;
    Ok(if pattern.per_io() { s.iops } else { s.mbps })
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::preset::PresetDb;
    use raidlab_core::topology::resolve;

    fn topo(s: &str) -> Topology {
        resolve(s, &PresetDb::builtin()).unwrap()
    }

    #[test]
    fn recognises_the_arrays_the_model_covers() {
        let t = topo("adaptec5085(raid5[stripe=64k](5*x25e))");
        let (l, d, n) = model_array(&t).unwrap();
        assert_eq!((l, d.preset.as_str(), n), (Level::Raid5, "x25e", 5));
        assert!(model_array(&topo("raid0(x25e, s3500-480)")).is_none());
        assert!(model_array(&topo("raid0(raid1(2*x25e), raid1(2*x25e))")).is_none());
        assert!(model_array(&topo("x25e")).is_none());
        // Host RAID over drives a controller passes through.
        let t = topo("raid1[impl=md](megaraid9365[mode=jbod](2*s3500-80))");
        let (l, d, n) = model_array(&t).unwrap();
        assert_eq!((l, d.preset.as_str(), n), (Level::Raid1, "s3500-80", 2));
    }

    #[test]
    fn raid0_random_reads_expect_drives_times_one() {
        let t = topo("raid0(4*x25e)");
        let w = Workload::parse("rw=randread bs=4k iodepth=64 runtime=0.3 ramp_time=0.1").unwrap();
        let e = expect(&t, &w, 1).unwrap().unwrap();
        assert_eq!(e.cost.drive_multiple, 4.0);
        let one = e.one_drive.iops;
        assert!(one > 20_000.0, "{one}");
        assert_eq!(e.metric("iops"), Some(4.0 * one));
        assert_eq!(e.metric("lat_avg_ms"), None);
        // QD1 cannot keep four drives busy: no expectation.
        let w1 = Workload::parse("rw=randread bs=4k iodepth=1 runtime=0.3").unwrap();
        assert!(expect(&t, &w1, 1).is_none());
        let mixed = Workload::parse("rw=randrw bs=4k iodepth=64 runtime=0.3").unwrap();
        assert!(expect(&t, &mixed, 1).is_none());
    }
}
