//! A resolved topology written back as an expression with every default
//! made explicit: the configuration as it was run, which resolves to the
//! same topology again.

use crate::topology::{Array, Controller, Device, DeviceModel, Node, SsdState, Topology};
use crate::units::format_size;
use raidlab_layout::{ArrayLayout, Level};

impl Topology {
    /// The expression with every option the run used written out: stripe
    /// units and layouts, controller modes and cache policies, drive write
    /// caches, over-provisioning and the state each SSD starts in, the host
    /// (its profile, cores, clock and kernel).
    /// `state` is the starting state a device ends up with (the workload's,
    /// its own, or the rule's).
    pub fn canonical(&self, state: impl Fn(&Device) -> SsdState + Copy) -> String {
        let profile = self
            .host_profile
            .as_ref()
            .map_or(String::new(), |p| format!("profile={p},"));
        format!(
            "host[{profile}cores={},ghz={},kernel={}]({})",
            self.host.cores,
            self.host.ghz,
            self.host.kernel,
            children(self.roots(), state, true)
        )
    }
}

/// `md_paced`: arrays here rebuild at md's limits (not under a controller
/// with a rebuild rate of its own), which they then name.
fn node(n: &Node, state: impl Fn(&Device) -> SsdState + Copy, md_paced: bool) -> String {
    match n {
        Node::Device(d) => device(d, state),
        Node::Controller(c) => controller(c, state),
        Node::Array(a) => array(a, state, md_paced),
    }
}

/// Children, with runs of identical devices written `N*name[...]`.
fn children<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    state: impl Fn(&Device) -> SsdState + Copy,
    md_paced: bool,
) -> String {
    let mut out: Vec<(usize, String)> = Vec::new();
    for n in nodes {
        let text = node(n, state, md_paced);
        match out.last_mut() {
            Some((count, last)) if *last == text && matches!(n, Node::Device(_)) => *count += 1,
            _ => out.push((1, text)),
        }
    }
    out.into_iter()
        .map(|(count, text)| match count {
            1 => text,
            n => format!("{n}*{text}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn device(d: &Device, state: impl Fn(&Device) -> SsdState) -> String {
    if d.failed {
        return "missing".into();
    }
    let wc = if d.wc { "on" } else { "off" };
    let qd = d
        .queue_depth
        .map(|q| format!(",queue_depth={q}"))
        .unwrap_or_default();
    match d.model {
        DeviceModel::Ssd(_) => format!(
            "{}[wc={wc},op={}%,state={}{qd}]",
            d.preset,
            percent(d.op),
            state(d).word()
        ),
        DeviceModel::Hdd(_) => format!("{}[wc={wc}{qd}]", d.preset),
    }
}

fn controller(c: &Controller, state: impl Fn(&Device) -> SsdState + Copy) -> String {
    let (mode, readahead) = (c.mode.word(), c.readahead.word());
    let p = &c.params;
    let rebuild = p
        .rebuild_rate_pct
        .map_or(String::new(), |r| format!(",rebuild_rate={r}"));
    format!(
        "{}[mode={mode},cache={},readahead={readahead},cache_mb={},pcie={}x{}{rebuild}]({})",
        c.preset,
        if c.write_back { "wb" } else { "wt" },
        p.cache_mb,
        p.pcie_gen,
        p.pcie_lanes,
        children(&c.children, state, p.rebuild_rate_pct.is_none())
    )
}

fn array(a: &Array, state: impl Fn(&Device) -> SsdState + Copy, md_paced: bool) -> String {
    let mut opts = vec![format!("stripe={}", format_size(a.stripe))];
    // RAID 10 names its layout only when it is not md's default, so
    // expressions written before far and offset copies read the same.
    if matches!(a.level, Level::Raid5 | Level::Raid6)
        || (a.level == Level::Raid10 && a.layout != ArrayLayout::Near2)
    {
        opts.push(format!("layout={}", a.layout.word()));
    }
    if a.group_threads > 0 {
        opts.push(format!("group_thread_cnt={}", a.group_threads));
    }
    if let Some(c) = a.bitmap_chunk {
        match &a.bitmap_device {
            Some(d) => opts.push(format!(
                "bitmap=external,bitmap_chunk={},bitmap_device={}",
                format_size(c),
                d.preset
            )),
            None => opts.push(format!("bitmap=internal,bitmap_chunk={}", format_size(c))),
        }
    }
    if a.ppl {
        opts.push("consistency=ppl".into());
    }
    if a.spares > 0 {
        opts.push(format!("spares={}", a.spares));
        if md_paced {
            opts.push(format!("rebuild_min={}", format_size(a.rebuild_rates.0)));
            opts.push(format!("rebuild_max={}", format_size(a.rebuild_rates.1)));
        }
    }
    if let Some(imp) = &a.imp {
        opts.push(format!("impl={imp}"));
    }
    format!(
        "{}[{}]({})",
        a.level.word(),
        opts.join(","),
        children(&a.members, state, md_paced)
    )
}

/// A share as a percentage with no more digits than it needs.
fn percent(share: f64) -> String {
    let p = (share * 100.0 * 1e6).round() / 1e6;
    format!("{p}")
}

#[cfg(test)]
mod tests {
    use crate::preset::PresetDb;
    use crate::topology::{resolve, SsdState};

    /// The canonical expression resolves to the same topology (apart from
    /// its text), and writing it again gives the same text.
    #[test]
    fn canonical_expressions_resolve_to_the_same_topology() {
        let db = PresetDb::builtin();
        for e in [
            "x25e",
            "adaptec5085(raid5[stripe=64k](5*x25e))",
            "raid0(adaptec5085[mode=volume](4*x25e), adaptec5085[mode=volume](4*x25e))",
            "megaraid9361[cache=wt,readahead=off](raid10(8*s3500-800[op=20%]))",
            "host[cores=2,ghz=3.0](raid6[layout=ra,spares=1](7*hdd-sas15k))",
            "host[profile=host2020,cores=16](raid0(4*pm9a3))",
            "raid4[spares=1](3*x25e, missing, x25e)",
            "host[profile=host2020](raid6[group_thread_cnt=4](6*pm9a3))",
            "raid1[bitmap_chunk=4k](2*x25e)",
            "raid5[bitmap=internal](4*s3500-480)",
            "raid1[bitmap_device=x25e](2*hdd-sas15k)",
            "host[kernel=5.2](raid10[bitmap=external,bitmap_chunk=1m,bitmap_device=pm9a3](4*x25e))",
            "host[kernel=4.12](raid5[consistency=ppl](4*s3500-480))",
            "host[profile=host2020](raid5[impl=vroc,consistency=ppl](4*pm9a3))",
            "raid0[impl=lvm](areca1680[mode=jbod](2*x25e[wc=off]), 2*s3500-80[state=fob])",
            "raid1(raid0(2*x25e), raid0(x25e, s3500-80))",
        ] {
            let t = resolve(e, &db).unwrap();
            let state = |d: &crate::topology::Device| d.state.unwrap_or(SsdState::Fill);
            let c = t.canonical(state);
            let back = resolve(&c, &db).unwrap_or_else(|err| panic!("{c}: {err}"));
            assert_eq!(back.canonical(state), c, "{e}");
            assert_eq!(back.host, t.host, "{e}");
            // An SSD without a state now names the one it started in, and
            // columns differ between the two texts; nothing else may.
            let mut expected = t.root.clone();
            name_states(&mut expected);
            let (mut a, mut b) = (format!("{expected:?}"), format!("{:?}", back.root));
            for s in [&mut a, &mut b] {
                *s = strip_cols(s);
            }
            assert_eq!(a, b, "{e} -> {c}");
        }
    }

    fn name_states(n: &mut crate::topology::Node) {
        use crate::topology::{DeviceModel, Node};
        match n {
            Node::Device(d) => {
                if matches!(d.model, DeviceModel::Ssd(_)) {
                    d.state = Some(d.state.unwrap_or(SsdState::Fill));
                }
            }
            Node::Controller(c) => c.children.iter_mut().for_each(name_states),
            Node::Array(a) => a.members.iter_mut().for_each(name_states),
        }
    }

    fn strip_cols(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("col: ") {
            out += &rest[..i];
            rest = rest[i + 5..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
        out + rest
    }
}
