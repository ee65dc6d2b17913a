//! Topology expressions: the grammar of docs/topology.md, parsed with column numbers,
//! then resolved against presets into a validated, typed tree.
//!
//! ```text
//! node       := device | controller | array | host
//! device     := [COUNT "*"] NAME [options]
//! controller := NAME [options] "(" node {"," node} ")"
//! array      := LEVEL [options] "(" node {"," node} ")"
//! host       := "host" [options] "(" node ")"
//! options    := "[" key "=" value {"," key "=" value} "]"
//! ```

use crate::error::{Error, Result};
use crate::preset::{
    ControllerParams, HddParams, HostParams, Preset, PresetDb, SsdParams, SwImplParams, IMPLS,
};
use crate::units::{parse_percent, parse_size};
use std::collections::BTreeMap;
use std::sync::Arc;

mod options;
mod parse;
mod resolve;

pub use options::*;
pub use parse::{parse, without_comments, Ast, Opt};
pub use resolve::resolve;
use resolve::*;

/// Most leaves one expression may expand to (keeps `100000*x25e` from eating memory).
pub const MAX_DEVICES: u32 = 1024;
/// Deepest nesting accepted.
pub const MAX_DEPTH: usize = 32;
/// Longest expression accepted: far above what `MAX_DEVICES` devices with
/// options need (~100 bytes each), so only nonsense is refused.
pub const MAX_EXPR_BYTES: usize = 1 << 20;
/// Largest controller cache an expression may give (`cache_mb`), in MiB:
/// 1 TiB, far past any controller's, so the cache model stays bounded.
pub const MAX_CACHE_MB: u32 = 1 << 20;

pub use raidlab_layout::{ArrayLayout, Level};

/// Controller exposure mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The controller runs the arrays inside it.
    Raid,
    /// Each device is its own volume; cache and queueing kept.
    Volume,
    /// Plain pass-through.
    Jbod,
}

/// Controller read-ahead policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAhead {
    /// Always read ahead.
    On,
    /// Never.
    Off,
    /// Only for detected sequential streams.
    Adaptive,
}

impl Mode {
    /// Parse `raid`, `volume`, `jbod`.
    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "raid" => Mode::Raid,
            "volume" => Mode::Volume,
            "jbod" => Mode::Jbod,
            _ => return None,
        })
    }

    /// The mode's word.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Raid => "raid",
            Mode::Volume => "volume",
            Mode::Jbod => "jbod",
        }
    }
}

impl ReadAhead {
    /// Parse `on`, `off`, `adaptive`.
    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "on" => ReadAhead::On,
            "off" => ReadAhead::Off,
            "adaptive" => ReadAhead::Adaptive,
            _ => return None,
        })
    }

    /// The policy's word.
    pub fn word(self) -> &'static str {
        match self {
            ReadAhead::On => "on",
            ReadAhead::Off => "off",
            ReadAhead::Adaptive => "adaptive",
        }
    }
}

/// Starting state of an SSD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsdState {
    /// Fresh out of box: nothing mapped.
    Fob,
    /// Written once sequentially.
    Fill,
    /// Random-write steady state.
    Steady,
}

impl SsdState {
    /// Parse `fob`, `fill`, `steady`.
    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "fob" => SsdState::Fob,
            "fill" => SsdState::Fill,
            "steady" => SsdState::Steady,
            _ => return None,
        })
    }
    /// The state's word.
    pub fn word(self) -> &'static str {
        match self {
            SsdState::Fob => "fob",
            SsdState::Fill => "fill",
            SsdState::Steady => "steady",
        }
    }
}

/// The physical model behind a device leaf.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceModel {
    /// Flash SSD.
    Ssd(Arc<SsdParams>),
    /// Hard disk.
    Hdd(Arc<HddParams>),
}

/// A resolved device.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// Preset name.
    pub preset: String,
    /// Unique label, `x25e#0`.
    pub label: String,
    /// Physical model.
    pub model: DeviceModel,
    /// Volatile write cache on.
    pub wc: bool,
    /// Extra over-provisioning: share of logical capacity left unused.
    pub op: f64,
    /// Starting state set in the expression (the workload's `state=` overrides).
    pub state: Option<SsdState>,
    /// Command queue depth set in the expression (`queue_depth=`), below
    /// the preset's (already applied to `model`): Linux's
    /// `/sys/block/*/device/queue_depth`, 1 for a SATA port without NCQ
    /// (a chipset in IDE mode).
    pub queue_depth: Option<u32>,
    /// Host link rate after any controller port limit, 10^6 B/s.
    pub link_mbps: f64,
    /// A failed member written `missing`: it stands for a device like its
    /// siblings and takes no I/O.
    pub failed: bool,
    /// 1-based column in the expression.
    pub col: usize,
}

impl Device {
    /// Bytes the device exposes (after `op`), rounded down to 4 KiB.
    pub fn capacity(&self) -> u64 {
        let gb = match &self.model {
            DeviceModel::Ssd(p) => p.capacity_gb,
            DeviceModel::Hdd(p) => p.capacity_gb,
        };
        ((gb * 1e9 * (1.0 - self.op)) as u64) & !4095
    }
}

/// A resolved RAID controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Controller {
    /// Preset name.
    pub preset: String,
    /// Unique label, `adaptec5085#0`.
    pub label: String,
    /// Parameters after options.
    pub params: Arc<ControllerParams>,
    /// Exposure mode.
    pub mode: Mode,
    /// Write-back cache.
    pub write_back: bool,
    /// Read-ahead policy.
    pub readahead: ReadAhead,
    /// Volumes it holds: devices (volume/jbod) or hardware arrays.
    pub children: Vec<Node>,
    /// 1-based column.
    pub col: usize,
}

/// A resolved array.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// Level.
    pub level: Level,
    /// Stripe unit (chunk) in bytes.
    pub stripe: u64,
    /// RAID 5/6 parity layout.
    pub layout: ArrayLayout,
    /// Hot spares (the last `spares` children).
    pub spares: u32,
    /// Software implementation profile (`md`, `lvm`, `windows`); `None` for hardware.
    pub imp: Option<String>,
    /// Members, spares last.
    pub members: Vec<Node>,
    /// A rebuild onto a spare: (guaranteed rate under foreground I/O, rate
    /// when idle), bytes per second (md's speed_limit_min/max).
    pub rebuild_rates: (u64, u64),
    /// md's `group_thread_cnt`: stripe-handling workers beside raid5d
    /// (RAID 4/5/6 in md only; 0, md's default, leaves raid5d alone).
    pub group_threads: u32,
    /// md's write-intent bitmap: its chunk in bytes (`None`: no bitmap,
    /// the simulator's default).
    pub bitmap_chunk: Option<u64>,
    /// The drive an external bitmap's file lives on (`bitmap_device=`);
    /// `None` with a chunk: an internal bitmap, on every member.
    pub bitmap_device: Option<Box<Device>>,
    /// md's Partial Parity Log (`consistency=ppl`, mdadm's
    /// `--consistency-policy=ppl`): RAID 5 only.
    pub ppl: bool,
    /// 1-based column.
    pub col: usize,
}

/// md's default `speed_limit_min`: 1,000 KiB/s (Documentation/admin-guide/md.rst).
pub const MD_SPEED_LIMIT_MIN: u64 = 1000 * 1024;
/// md's default `speed_limit_max`: 200,000 KiB/s (the same document).
pub const MD_SPEED_LIMIT_MAX: u64 = 200_000 * 1024;

impl Array {
    /// Members that hold data (spares excluded).
    pub fn active(&self) -> &[Node] {
        &self.members[..self.members.len() - self.spares as usize]
    }

    /// Whether a host runs the array with md's own code (`impl=md` or
    /// `impl=vroc`): md's bitmap, stripe workers, Partial Parity Log and
    /// polled I/O apply to it.
    pub fn runs_md(&self) -> bool {
        md_family(self.imp.as_deref())
    }
}

/// A resolved node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Device.
    Device(Device),
    /// Controller.
    Controller(Controller),
    /// Array.
    Array(Array),
}

impl Node {
    /// Push every device below this node (itself, if one) onto `out`, in
    /// expression order.
    pub fn collect_devices<'a>(&'a self, out: &mut Vec<&'a Device>) {
        match self {
            Node::Device(d) => out.push(d),
            Node::Controller(c) => c.children.iter().for_each(|x| x.collect_devices(out)),
            Node::Array(a) => a.members.iter().for_each(|x| x.collect_devices(out)),
        }
    }

    /// Volumes this node exposes to its parent.
    pub fn volumes(&self) -> usize {
        match self {
            Node::Device(_) | Node::Array(_) => 1,
            Node::Controller(c) => c.children.iter().map(Node::volumes).sum(),
        }
    }
    /// 1-based column.
    pub fn col(&self) -> usize {
        match self {
            Node::Device(d) => d.col,
            Node::Controller(c) => c.col,
            Node::Array(a) => a.col,
        }
    }
}

/// A validated topology: the host and the volumes it sees — one, or
/// several side by side (`host(8*pm9a3)`, a controller in `jbod` mode),
/// which a workload addresses as fio does a job with several filenames.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// Expression as given, less its comments.
    pub expr: String,
    /// Host parameters.
    pub host: Arc<HostParams>,
    /// The host preset `profile=` named, if one was (else `host`).
    pub host_profile: Option<String>,
    /// First root node.
    pub root: Node,
    /// Further root nodes, when the host wraps several (`host(a, b)`,
    /// `host(4*x25e)`); empty for one.
    pub more_roots: Vec<Node>,
}

impl Topology {
    /// Every device, in expression order.
    pub fn devices(&self) -> Vec<&Device> {
        let mut v = Vec::new();
        self.roots().for_each(|r| r.collect_devices(&mut v));
        v
    }

    /// The root nodes, in expression order.
    pub fn roots(&self) -> impl Iterator<Item = &Node> {
        std::iter::once(&self.root).chain(&self.more_roots)
    }

    /// Volumes the host sees.
    pub fn volume_count(&self) -> usize {
        self.roots().map(Node::volumes).sum()
    }

    /// `Ok` when the host sees exactly one volume, as `what` needs; else
    /// the error that says how to make one.
    pub fn one_volume(&self, what: &str) -> Result<()> {
        match self.volume_count() {
            1 => Ok(()),
            n => invalid(
                self.root.col(),
                format!("the root exposes {n} volumes and {what} needs one; combine them, e.g. raid0(...)"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> PresetDb {
        PresetDb::builtin()
    }

    fn err(expr: &str) -> String {
        resolve(expr, &db()).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_construct() {
        let t = resolve(
            "host[cores=2,ghz=3.0](raid0[stripe=128k,impl=lvm](adaptec5085[cache=wt,readahead=off](raid5[stripe=64k,layout=right-asymmetric](5*x25e[wc=off])), areca1680[mode=volume](2*x25e[op=20%,state=steady]), 2*s3500-80, hba[mode=jbod](hdd-sas15k)))",
            &db(),
        )
        .unwrap();
        assert_eq!(t.host.cores, 2);
        assert_eq!(t.devices().len(), 10);
        let Node::Array(a) = &t.root else { panic!() };
        assert_eq!(a.imp.as_deref(), Some("lvm"));
        assert_eq!(a.stripe, 128 * 1024);
        assert_eq!(a.members.iter().map(Node::volumes).sum::<usize>(), 6);
        let Node::Controller(c) = &a.members[0] else {
            panic!()
        };
        assert!(!c.write_back);
        assert_eq!(c.readahead, ReadAhead::Off);
        let Node::Array(h) = &c.children[0] else {
            panic!()
        };
        assert_eq!(h.layout, ArrayLayout::RightAsymmetric);
        assert!(h.imp.is_none());
        assert_eq!(t.devices()[0].label, "x25e#0");
        assert!(!t.devices()[0].wc);
        assert_eq!(t.devices()[5].state, Some(SsdState::Steady));
    }

    #[test]
    fn hardware_arrays_default_to_controller_stripe_and_whitespace_comments_work() {
        let t = resolve(
            "megaraid9265(\n  raid10(8*s3500-480) # eight drives\n)",
            &db(),
        )
        .unwrap();
        let Node::Controller(c) = &t.root else {
            panic!()
        };
        let Node::Array(a) = &c.children[0] else {
            panic!()
        };
        assert_eq!(a.stripe, 256 * 1024);
        assert_eq!(c.mode, Mode::Raid);
    }

    /// md's Partial Parity Log: RAID 5 only, md only, not with a bitmap,
    /// at most 64 members; Intel VROC builds what its platform lists.
    #[test]
    fn ppl_and_vroc_are_checked() {
        let ok = |e: &str| resolve(e, &db()).unwrap_or_else(|x| panic!("{e}: {x}"));
        let Node::Array(a) = ok("host[kernel=4.12](raid5[consistency=ppl](4*x25e))").root else {
            panic!()
        };
        assert!(a.ppl);
        // md's log came in Linux 4.12; the default host runs 3.10.
        assert!(err("raid5[consistency=ppl](4*x25e)").contains("came in Linux 4.12"));
        assert!(err("raid5[group_thread_cnt=2](4*x25e)").contains("came in Linux 3.12"));
        let Node::Array(a) = ok("raid5[consistency=resync](4*x25e)").root else {
            panic!()
        };
        assert!(!a.ppl);
        assert!(err("raid6[consistency=ppl](4*x25e)").contains("raid5 only"));
        assert!(err("raid0[consistency=resync](2*x25e)").contains("no redundancy"));
        assert!(err("raid5[consistency=log](3*x25e)").contains("expected ppl or resync"));
        assert!(
            err("raid5[consistency=ppl,bitmap=internal](3*x25e)").contains("does not support both")
        );
        assert!(err("raid5[impl=windows,consistency=ppl](3*x25e)").contains("not md"));
        assert!(err("adaptec5085(raid5[consistency=ppl](3*x25e))").contains("not md"));
        assert!(err("host[kernel=5.10](raid5[consistency=ppl](65*x25e))").contains("at most 64"));
        let h = "host[profile=host2020]";
        let Node::Array(a) = ok(&format!("{h}(raid5[impl=vroc](4*pm9a3))")).root else {
            panic!()
        };
        assert_eq!(a.stripe, 128 << 10, "IMSM's default chunk on VROC");
        ok(&format!("{h}(raid10[impl=vroc,bitmap=internal](4*pm9a3))"));
        assert!(err(&format!("{h}(raid6[impl=vroc](4*pm9a3))")).contains("not raid6"));
        assert!(err(&format!("{h}(raid0[impl=vroc](49*pm9a3))")).contains("at most 48"));
        assert!(err(&format!("{h}(raid0[impl=vroc,stripe=512k](2*pm9a3))")).contains("up to 128k"));
        assert!(err("raid0[impl=vroc](2*x25e)").contains("no vroc profile"));
        assert!(err("raid0[impl=zfs](2*x25e)").contains("md, lvm, windows, vroc"));
    }

    #[test]
    fn errors_name_the_column() {
        assert!(
            err("raid0(x25e,").contains("column 12"),
            "{}",
            err("raid0(x25e,")
        );
        assert!(err("nope").contains("unknown preset 'nope'"));
        assert!(err("raid5(2*x25e)").contains("raid5 with 2 active members"));
        assert!(err("raid4[layout=left-symmetric](4*x25e)").contains("no layout="));
        assert!(err("raid0[bitmap=internal](2*x25e)").contains("needs redundancy"));
        assert!(err("raid1[bitmap=none,bitmap_chunk=4k](2*x25e)").contains("bitmap=none"));
        assert!(err("raid1[bitmap_chunk=3k](2*x25e)").contains("power of two"));
        assert!(err("adaptec5085(raid1[bitmap=internal](2*x25e))").contains("not md"));
        assert!(err("raid1[group_thread_cnt=2](2*x25e)").contains("raid4, raid5 and raid6"));
        assert!(err("raid5[group_thread_cnt=9000](3*x25e)").contains("8192"));
        assert!(err("raid4(2*x25e)").contains("raid4 with 2 active members"));
        assert!(err("raid6(3*x25e)").contains("raid6 with 3"));
        assert!(err("raid0[stripe=48k](2*x25e)").contains("power of two"));
        assert!(err("raid0[stripe=48k](2*x25e)").contains("column 7"));
        let two = resolve("adaptec5085[mode=volume](2*x25e)", &db()).unwrap();
        assert_eq!(two.volume_count(), 2);
        let e = two
            .one_volume("the analytic model")
            .unwrap_err()
            .to_string();
        assert!(e.contains("root exposes 2 volumes"), "{e}");
        let three = resolve("host(2*x25e, raid0(2*x25e))", &db()).unwrap();
        assert_eq!((three.volume_count(), three.devices().len()), (3, 4));
        assert!(err("adaptec5085(raid0(9*x25e))").contains("8 ports but 9"));
        assert!(err("x25e[foo=1]").contains("unknown option 'foo'"));
        assert!(err("raid0(x25e) extra").contains("unexpected"));
        assert!(err("adaptec5085(raid0[impl=md](2*x25e))").contains("impl is for host"));
        assert!(err("adaptec5085(x25e, raid0(2*x25e))").contains("bare devices"));
        assert!(err("hdd-sas10k[op=20%]").contains("applies to SSDs"));
        assert!(err("raid0(host(x25e))").contains("host"));
        assert!(err("0*x25e").contains("count"));
        assert!(err("").contains("empty"));
        assert!(err("x25e[wc=maybe]").contains("expected on or off"));
        assert!(err("raid0[stripe=64k,stripe=64k](x25e)").contains("twice"));
        assert!(err("raid5(2*x25e, 2*missing)").contains("has lost 2 members"));
        assert!(err("raid0(x25e, missing)").contains("has lost 1 member"));
        assert!(err("raid1(missing, raid0(2*x25e))").contains("needs a device member"));
        assert!(err("raid5[rebuild_min=9m,rebuild_max=1m](4*x25e)").contains("above"));
        assert!(err("raid5[rebuild_max=fast](4*x25e)").contains("rate"));
        assert!(err("megaraid9361[rebuild_rate=0](x25e)").contains("1 to 100"));
        assert!(err("megaraid9361[rebuild_rate=fast](x25e)").contains("1 to 100"));
    }

    /// A controller's rebuild rate: the MegaRAID presets' default, or the
    /// option's, in the as-run expression; none on a controller without.
    #[test]
    fn rebuild_rate_comes_from_the_preset_or_the_option() {
        let rate = |expr: &str| {
            let t = resolve(expr, &db()).unwrap();
            let Node::Controller(c) = &t.root else {
                panic!("{expr}")
            };
            (c.params.rebuild_rate_pct, t.canonical(|_| SsdState::Fill))
        };
        let (r, text) = rate("megaraid9361(raid1(2*s3500-80))");
        assert_eq!(r, Some(30));
        assert!(text.contains("rebuild_rate=30]"), "{text}");
        assert_eq!(
            rate("megaraid9361[rebuild_rate=75%](raid1(2*s3500-80))").0,
            Some(75)
        );
        let (r, text) = rate("adaptec5085(raid1(2*x25e))");
        assert_eq!(r, None);
        assert!(!text.contains("rebuild_rate"), "{text}");
        // md's limits: named where they pace the rebuild, refused and
        // left out where the controller's rate does.
        let (_, text) = rate("adaptec5085(raid1[spares=1](x25e, missing, x25e))");
        assert!(text.contains("rebuild_min="), "{text}");
        let (_, text) = rate("megaraid9361(raid1[spares=1](s3500-80, missing, s3500-80))");
        assert!(!text.contains("rebuild_min"), "{text}");
        let e = err("megaraid9361(raid1[spares=1,rebuild_min=50m](s3500-80, missing, s3500-80))");
        assert!(e.contains("paces a rebuild by its rebuild_rate"), "{e}");
    }

    /// `queue_depth=` lowers a drive's command queue (never raises it),
    /// and the as-run expression carries it only where it was set.
    #[test]
    fn queue_depth_lowers_the_drives_command_queue() {
        let t = resolve(
            "raid0(2*x25e[queue_depth=1], hdd-sas10k[queue_depth=4])",
            &db(),
        )
        .unwrap();
        let qd: Vec<u32> = t
            .devices()
            .iter()
            .map(|d| match &d.model {
                DeviceModel::Ssd(p) => p.queue_depth,
                DeviceModel::Hdd(p) => p.queue_depth,
            })
            .collect();
        assert_eq!(qd, [1, 1, 4]);
        let canonical = t.canonical(|_| SsdState::Fill);
        assert!(canonical.contains("queue_depth=1]"), "{canonical}");
        let plain = resolve("x25e", &db())
            .unwrap()
            .canonical(|_| SsdState::Fill);
        assert!(!plain.contains("queue_depth"), "{plain}");
        for bad in [
            "x25e[queue_depth=0]",
            "x25e[queue_depth=33]",
            "x25e[queue_depth=ncq]",
        ] {
            assert!(err(bad).contains("expected 1 to 32"), "{bad}: {}", err(bad));
        }
    }

    #[test]
    fn missing_members_stand_for_failed_devices() {
        let t = resolve("raid5[spares=1](3*x25e, missing, x25e)", &db()).unwrap();
        let Node::Array(a) = &t.root else {
            panic!("an array")
        };
        let failed: Vec<bool> = a
            .members
            .iter()
            .map(|n| matches!(n, Node::Device(d) if d.failed))
            .collect();
        assert_eq!(failed, [false, false, false, true, false]);
        assert_eq!(a.rebuild_rates, (MD_SPEED_LIMIT_MIN, MD_SPEED_LIMIT_MAX));
        let text = t.canonical(|_| SsdState::Fill);
        assert!(
            text.contains("missing") && text.contains("rebuild_max=200000k"),
            "{text}"
        );
        let again = resolve(&text, &db()).unwrap();
        assert_eq!(again.canonical(|_| SsdState::Fill), text);
    }

    #[test]
    fn both_engines_classify_nodes_alike() {
        let ast = parse("host[cores=2](raid5[stripe=64k](a, b, c))").unwrap();
        let root = split_root(&ast).unwrap();
        assert_eq!(root.host.map(|(o, col)| (o.len(), col)), Some((1, 1)));
        match classify(&root.inners[0]).unwrap() {
            Element::Array {
                level,
                opts,
                children,
                ..
            } => {
                assert_eq!(level, Level::Raid5);
                assert_eq!(opts.stripe, Some(64 << 10));
                assert_eq!(children.len(), 3);
            }
            other => panic!("not an array: {other:?}"),
        }
        let two = parse("host(a, b)").unwrap();
        assert_eq!(split_root(&two).unwrap().inners.len(), 2);
        let inner = parse("raid0(host(a))").unwrap();
        let Ast::Group { children, .. } = &inner else {
            panic!("not a group")
        };
        assert!(classify(&children[0]).is_err());
        assert!(check_members(Level::Raid6, 3, 1).is_err());
        assert!(check_members(Level::Raid6, 4, 1).is_ok());
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "raid0(".repeat(100) + "x25e" + &")".repeat(100);
        assert!(err(&deep).contains("nesting"));
    }
}
