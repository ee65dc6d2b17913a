//! Real topologies: the grammar of docs/topology.md with paths as leaves.
//!
//! `raid5[stripe=64k](./m0.img, ./m1.img, missing)`: leaves are files or
//! block devices, or `missing` (mdadm's word for a failed member); arrays
//! and nested arrays are executed by raidlab's own software RAID; a
//! `host(...)` wrapper is accepted; controllers are simulator-only.

use crate::error::{Error, ErrorKind};
use raidlab_core::topology::{
    check_members, classify, parse, split_root, ArrayOpts, Ast, Element, Opt,
};
use raidlab_core::units::parse_size;
use raidlab_layout::{ArrayLayout, Level};
use std::path::PathBuf;

/// A leaf of a real topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    /// File or block device.
    pub path: PathBuf,
    /// Size to create the file with (`[size=...]`), if given.
    pub size: Option<u64>,
    /// Injected faults (`fail_after=`, `bad=`), for testing failures.
    pub fault: Fault,
    /// Column in the expression.
    pub col: usize,
}

/// Faults injected into a member, in the spirit of md's `faulty`
/// personality and dm-flakey: the member fails for good after a number of
/// operations (a dying drive), or operations touching a byte range fail
/// (bad sectors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fault {
    /// Operations that succeed before every later one fails.
    pub after: Option<u64>,
    /// Member byte range `[start, end)` (from the start of the file or
    /// device) whose operations fail.
    pub bad: Option<(u64, u64)>,
}

impl Fault {
    /// Whether an operation, the member's `nth` (0-based), on `[off,
    /// off+len)` fails.
    pub fn hits(&self, nth: u64, off: u64, len: u64) -> bool {
        self.after.is_some_and(|a| nth >= a)
            || self.bad.is_some_and(|(a, b)| off < b && a < off + len)
    }
}

/// A node of a real topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RealNode {
    /// Index into [`RealTopology::members`].
    Member(usize),
    /// A failed member (`missing`).
    Missing,
    /// A software array.
    Array {
        /// Level.
        level: Level,
        /// Stripe unit (chunk), bytes.
        chunk: u64,
        /// md's layout (RAID 5/6 parity, RAID 10 copies).
        layout: ArrayLayout,
        /// Members.
        children: Vec<RealNode>,
        /// Hot spares (`spares=N`: the last N paths), each a `Member`.
        spares: Vec<RealNode>,
        /// Column in the expression.
        col: usize,
    },
}

/// A spare that took a missing member's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takeover {
    /// The spare's member index.
    pub member: usize,
    /// Its array's column and the slot it took.
    pub col: usize,
    /// The slot (0-based).
    pub slot: usize,
}

impl RealNode {
    /// Put hot spares in the places of `missing` members, as md starts
    /// recovery onto a spare at once: the first spare of an array takes its
    /// first missing slot, and so on. Returns what moved.
    pub fn take_spares(&mut self) -> Vec<Takeover> {
        let mut out = Vec::new();
        if let RealNode::Array {
            children,
            spares,
            col,
            ..
        } = self
        {
            for c in children.iter_mut() {
                out.extend(c.take_spares());
            }
            for (slot, c) in children.iter_mut().enumerate() {
                if matches!(c, RealNode::Missing) && !spares.is_empty() {
                    let s = spares.remove(0);
                    let RealNode::Member(member) = s else {
                        unreachable!("spares are paths")
                    };
                    *c = s;
                    out.push(Takeover {
                        member,
                        col: *col,
                        slot,
                    });
                }
            }
        }
        out
    }

    /// Whether a `missing` member is anywhere under this node.
    pub fn has_missing(&self) -> bool {
        match self {
            RealNode::Missing => true,
            RealNode::Member(_) => false,
            RealNode::Array { children, .. } => children.iter().any(RealNode::has_missing),
        }
    }

    /// Replace every array below this node that has lost more members
    /// than it tolerates by `missing` (it is a failed member of its parent,
    /// which may survive it: a mirror of two stripes with one member gone
    /// each side of nothing), and say whether this node itself has failed.
    fn fail_lost_arrays(&mut self) -> bool {
        let RealNode::Array {
            level,
            layout,
            children,
            ..
        } = self
        else {
            return false;
        };
        for c in children.iter_mut() {
            if c.fail_lost_arrays() {
                *c = RealNode::Missing;
            }
        }
        let missing: Vec<usize> = children
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, RealNode::Missing))
            .map(|(i, _)| i)
            .collect();
        !level.survives(*layout, children.len(), &missing)
    }

    /// The error for a root that has lost too much.
    fn lost(&self) -> Error {
        match self {
            RealNode::Array {
                level,
                children,
                col,
                ..
            } => Error::new(
                ErrorKind::Expression,
                format!(
                    "{} at column {col} has {} missing member(s): more than it can lose",
                    level.word(),
                    children
                        .iter()
                        .filter(|c| matches!(c, RealNode::Missing))
                        .count()
                ),
            ),
            _ => Error::new(ErrorKind::Expression, "the volume is missing"),
        }
    }
}

/// A parsed real topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealTopology {
    /// The root.
    pub root: RealNode,
    /// Member files and devices, in expression order.
    pub members: Vec<MemberSpec>,
    /// The expression's shape as written, before failed arrays became
    /// `missing` (what the members' metadata records).
    pub shape: u64,
    /// Spares put in missing members' places ([`RealTopology::take_spares`]).
    pub took_over: Vec<Takeover>,
}

impl RealTopology {
    /// Write the members `dead` (failed during a run) as `missing`.
    pub fn fail_members(&mut self, dead: &[usize]) {
        fn walk(n: &mut RealNode, dead: &[usize]) {
            match n {
                RealNode::Member(i) if dead.contains(i) => *n = RealNode::Missing,
                RealNode::Array { children, .. } => {
                    children.iter_mut().for_each(|c| walk(c, dead));
                }
                _ => {}
            }
        }
        walk(&mut self.root, dead);
    }

    /// Let hot spares take the places of missing members (see
    /// [`RealNode::take_spares`]); remembers what moved.
    pub fn take_spares(&mut self) {
        self.took_over = self.root.take_spares();
    }

    /// The expression for this topology as it now stands (spares that took
    /// a place written there), options written out.
    pub fn expression(&self) -> String {
        fn node(n: &RealNode, members: &[MemberSpec], out: &mut String) {
            match n {
                RealNode::Member(i) => out.push_str(&members[*i].path.display().to_string()),
                RealNode::Missing => out.push_str("missing"),
                RealNode::Array {
                    level,
                    chunk,
                    layout,
                    children,
                    spares,
                    ..
                } => {
                    out.push_str(level.word());
                    let mut opts = vec![format!(
                        "stripe={}",
                        raidlab_core::units::format_size(*chunk)
                    )];
                    if matches!(level, Level::Raid5 | Level::Raid6)
                        || *layout != ArrayLayout::default_for(*level)
                    {
                        opts.push(format!("layout={}", layout.word()));
                    }
                    if !spares.is_empty() {
                        opts.push(format!("spares={}", spares.len()));
                    }
                    out.push_str(&format!("[{}](", opts.join(",")));
                    for (i, c) in children.iter().chain(spares).enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        node(c, members, out);
                    }
                    out.push(')');
                }
            }
        }
        let mut s = String::new();
        node(&self.root, &self.members, &mut s);
        s
    }
}

fn looks_like_path(name: &str) -> bool {
    name.contains('/') || name.contains('.')
}

/// Parse an expression whose leaves are paths.
pub fn parse_real(expr: &str) -> Result<RealTopology, Error> {
    let ast = parse(expr).map_err(core_error)?;
    let top = split_root(&ast).map_err(core_error)?;
    if let Some(o) = top.host.and_then(|(opts, _)| opts.first()) {
        return Err(expression(format!(
            "host option '{}' at column {} is simulator-only: a real run uses this machine's CPU",
            o.key, o.col
        )));
    }
    let [inner] = top.inners else {
        return Err(expression(format!(
            "host(...) wraps {} nodes: a real run drives one volume; combine them, e.g. raid0(...)",
            top.inners.len()
        )));
    };
    let mut members = Vec::new();
    let root = node(inner, &mut members)?;
    for (i, a) in members.iter().enumerate() {
        if let Some(b) = members[..i].iter().find(|b| b.path == a.path) {
            return Err(Error::new(
                ErrorKind::Expression,
                format!(
                    "'{}' appears twice (columns {} and {}): a file can be only one member",
                    a.path.display(),
                    b.col,
                    a.col
                ),
            ));
        }
    }
    let mut root = root;
    let shape = root.shape();
    if root.fail_lost_arrays() {
        return Err(root.lost());
    }
    Ok(RealTopology {
        root,
        members,
        shape,
        took_over: Vec::new(),
    })
}

fn node(a: &Ast, members: &mut Vec<MemberSpec>) -> Result<RealNode, Error> {
    match classify(a).map_err(core_error)? {
        Element::Leaf {
            name,
            count,
            opts,
            col,
        } => leaf(name, count, opts, col, members),
        Element::Array {
            level,
            opts,
            children,
            col,
        } => array(level, opts, children, col, members),
        Element::Group { name, col, .. } => Err(expression(format!(
            "'{name}' at column {col} is a controller: controllers exist only in 'raidlab sim'; a real run executes software arrays (raid0/1/5/6/10, concat) over paths"
        ))),
    }
}

/// A grammar error found by the shared walk.
fn core_error(e: raidlab_core::Error) -> Error {
    expression(e.to_string())
}

/// An expression error.
fn expression(msg: String) -> Error {
    Error::new(ErrorKind::Expression, msg)
}

/// A member path's options: its `size=` and the faults injected.
fn member_options(opts: &[Opt]) -> Result<(Option<u64>, Fault), Error> {
    let mut size = None;
    let mut fault = Fault::default();
    for o in opts {
        let bad_value = |what: &str| {
            expression(format!(
                "{}={} at column {}: expected {what}",
                o.key, o.value, o.col
            ))
        };
        match o.key.as_str() {
            "size" => {
                let s = parse_size(&o.value)
                    .ok()
                    .filter(|s| *s >= 4096 && s % 512 == 0)
                    .ok_or_else(|| bad_value("a size of at least 4k, in whole sectors"))?;
                size = Some(s);
            }
            "fail_after" => {
                fault.after = Some(
                    o.value
                        .parse()
                        .map_err(|_| bad_value("a count of operations"))?,
                )
            }
            "bad" => {
                let range = o.value.split_once("..").and_then(|(a, b)| {
                    let (a, b) = (parse_size(a).ok()?, parse_size(b).ok()?);
                    (a < b).then_some((a, b))
                });
                fault.bad =
                    Some(range.ok_or_else(|| bad_value("a byte range START..END, e.g. 2m..3m"))?);
            }
            _ => {
                return Err(expression(format!(
                "unknown option '{}' at column {} for a member path (known: size, fail_after, bad)",
                o.key, o.col
            )))
            }
        }
    }
    Ok((size, fault))
}

/// A member path (with its `size=`), or `missing`.
fn leaf(
    name: &str,
    count: u32,
    opts: &[Opt],
    col: usize,
    members: &mut Vec<MemberSpec>,
) -> Result<RealNode, Error> {
    if name == "missing" {
        if let Some(o) = opts.first() {
            return Err(expression(format!(
                "option '{}' at column {}: 'missing' takes no options",
                o.key, o.col
            )));
        }
        if count != 1 {
            return Err(expression(format!(
                "column {col}: write 'missing' once per failed member"
            )));
        }
        return Ok(RealNode::Missing);
    }
    if !looks_like_path(name) {
        return Err(expression(format!(
            "'{name}' at column {col} is not a path: real runs need files or block devices (./m0.img, /dev/sdb); presets are for 'raidlab sim'"
        )));
    }
    if count != 1 {
        return Err(expression(format!(
            "column {col}: '{count}*{name}' would use one file {count} times"
        )));
    }
    let (size, fault) = member_options(opts)?;
    members.push(MemberSpec {
        path: PathBuf::from(name),
        size,
        fault,
        col,
    });
    Ok(RealNode::Member(members.len() - 1))
}

/// A software array over its children; simulator-only options are refused.
fn array(
    level: Level,
    o: ArrayOpts,
    children: &[Ast],
    col: usize,
    members: &mut Vec<MemberSpec>,
) -> Result<RealNode, Error> {
    if o.rebuild_rates.2 > 0 {
        return Err(expression(format!(
            "rebuild_min/rebuild_max at column {}: simulator-only; 'raidlab rebuild --max-rate' paces a real rebuild",
            o.rebuild_rates.2
        )));
    }
    if o.bitmap.col > 0 {
        return Err(expression(format!(
            "bitmap/bitmap_chunk/bitmap_device at column {}: simulator-only; raidlab run keeps md's internal bitmap with its own chunk",
            o.bitmap.col
        )));
    }
    if let Some((_, c)) = o.consistency {
        return Err(expression(format!(
            "consistency at column {c}: simulator-only; raidlab run keeps md's default policy (resync, with its internal bitmap)"
        )));
    }
    if let Some((_, c)) = o.group_threads {
        return Err(expression(format!(
            "group_thread_cnt at column {c}: simulator-only; on a kernel array it is /sys/block/mdN/md/group_thread_cnt"
        )));
    }
    if let Some((i, c)) = o.imp.as_ref().filter(|(i, _)| i != "md") {
        return Err(expression(format!(
            "impl={i} at column {c}: a real run is executed by raidlab's own md-layout RAID; only impl=md applies"
        )));
    }
    // md's default chunk (mdadm(8) --chunk: 512 KiB since mdadm 3.1).
    let (chunk, layout) = (o.stripe.unwrap_or(512 * 1024), o.layout);
    let mut kids = children
        .iter()
        .map(|c| node(c, members))
        .collect::<Result<Vec<_>, _>>()?;
    let nspares = o.spares.map_or(0, |s| s.0 as usize);
    if nspares >= kids.len() {
        return Err(expression(format!(
            "spares={nspares} at column {}: an array of {} members keeps none active",
            o.spares.map_or(col, |s| s.1),
            kids.len()
        )));
    }
    let spares = kids.split_off(kids.len() - nspares);
    if spares.iter().any(|s| !matches!(s, RealNode::Member(_))) {
        return Err(expression(format!(
            "spares at column {}: a spare is a path (not missing, not an array)",
            o.spares.map_or(col, |s| s.1)
        )));
    }
    check_members(level, kids.len(), col).map_err(core_error)?;
    Ok(RealNode::Array {
        level,
        chunk,
        layout,
        children: kids,
        spares,
        col,
    })
}

impl RealNode {
    /// The expression's shape: levels, chunks, layouts and slot counts, not
    /// the paths; two expressions of one shape describe the same arrays.
    pub fn shape(&self) -> u64 {
        fn text(n: &RealNode, out: &mut String) {
            match n {
                RealNode::Member(_) | RealNode::Missing => out.push('m'),
                RealNode::Array {
                    level,
                    chunk,
                    layout,
                    children,
                    ..
                } => {
                    out.push_str(&format!(
                        "{}/{}/{}(",
                        crate::md::md_level(*level),
                        crate::md::md_chunk(*level, *chunk),
                        crate::md::md_layout(*level, *layout)
                    ));
                    for c in children {
                        text(c, out);
                        out.push(',');
                    }
                    out.push(')');
                }
            }
        }
        let mut s = String::new();
        text(self, &mut s);
        crate::md::fnv64(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_arrays_and_missing() {
        let t = parse_real("host(raid10(raid5[stripe=128k](./a, ./b, missing), raid6(/dev/x, ./c.img, ./d, missing)))").unwrap();
        assert_eq!(t.members.len(), 5);
        assert_eq!(t.members[3].path, PathBuf::from("./c.img"));
        let RealNode::Array {
            level, children, ..
        } = &t.root
        else {
            panic!()
        };
        assert_eq!(*level, Level::Raid10);
        assert!(matches!(
            &children[0],
            RealNode::Array { chunk: 131072, .. }
        ));
    }

    #[test]
    fn a_mirror_survives_a_failed_stripe() {
        let t = parse_real("raid1(raid0(./a, missing), raid0(./b, ./c))").unwrap();
        let RealNode::Array { children, .. } = &t.root else {
            panic!()
        };
        assert_eq!(
            children[0],
            RealNode::Missing,
            "the lost stripe is a failed member"
        );
        assert!(matches!(children[1], RealNode::Array { .. }));
        let e = parse_real("raid1(raid0(./a, missing), raid0(./b, missing))").unwrap_err();
        assert!(e.to_string().contains("more than it can lose"), "{e}");
        // RAID 5 of RAID 1s loses one mirror pair, not two.
        assert!(
            parse_real("raid5(raid1(missing, missing), raid1(./a, ./b), raid1(./c, ./d))").is_ok()
        );
        assert!(parse_real(
            "raid5(raid1(missing, missing), raid1(missing, missing), raid1(./c, ./d))"
        )
        .is_err());
    }

    #[test]
    fn refuses_what_cannot_run() {
        for (e, want) in [
            ("adaptec5085(raid0(./a, ./b))", "controller"),
            ("raid0(x25e, ./b)", "not a path"),
            ("raid5(./a, missing, missing)", "more than it can lose"),
            (
                "raid6(./a, ./b, missing, missing, missing)",
                "more than it can lose",
            ),
            ("raid0(./a, missing)", "more than it can lose"),
            ("raid0(./a, ./a)", "twice"),
            ("raid0[stripe=3k](./a, ./b)", "power of two"),
            ("raid5(./a, ./b)", "at least 3"),
            ("host[cores=2](./a)", "simulator-only"),
            ("raid5[consistency=ppl](./a, ./b, ./c)", "simulator-only"),
            ("raid5[impl=vroc](./a, ./b, ./c)", "only impl=md"),
            ("raid0(./a[op=5%])", "unknown option 'op'"),
            ("raid0(./a,", "column"),
            ("raid1[spares=2](./a, ./b)", "keeps none active"),
            (
                "raid5[spares=1](./a, ./b, ./c, missing)",
                "a spare is a path",
            ),
            (
                "raid1(host(./a), ./b)",
                "may only wrap the whole expression",
            ),
            ("raid1(./a, raid5)", "needs members in parentheses"),
            ("raid5(./a, ./b[size=8k])", "raid5 with 2 active members"),
        ] {
            let err = parse_real(e).unwrap_err().to_string();
            assert!(err.contains(want), "{e}: {err}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn never_panics_on_arbitrary_text(s in "\\PC{0,60}") {
            let _ = parse_real(&s);
        }

        #[test]
        fn never_panics_on_expression_shaped_text(
            s in "(raid[0156]|raid10|concat|host|missing|\\./m[0-9]|/dev/x|[\\[\\]()=,*]|stripe|layout|size|fail_after|bad|spares|[0-9]+[km]?|\\.\\.| ){0,24}"
        ) {
            if let Ok(t) = parse_real(&s) {
                // Whatever parses has a valid redundancy and distinct paths.
                let mut p: Vec<_> = t.members.iter().map(|m| m.path.clone()).collect();
                p.sort();
                p.dedup();
                proptest::prop_assert_eq!(p.len(), t.members.len());
            }
        }
    }
}
