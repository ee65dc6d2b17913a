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

/// One `key=value` option with the column of its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// Key.
    pub key: String,
    /// Value as written.
    pub value: String,
    /// 1-based column of the key.
    pub col: usize,
}

/// Syntax tree of an expression, before presets are consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ast {
    /// `[COUNT*]NAME[opts]`
    Leaf {
        /// Preset name or path.
        name: String,
        /// Repeat count (1 when absent).
        count: u32,
        /// Options.
        opts: Vec<Opt>,
        /// 1-based column of the leaf.
        col: usize,
    },
    /// `NAME[opts](children)`: a controller, an array or the host.
    Group {
        /// Controller preset, RAID level or `host`.
        name: String,
        /// Options.
        opts: Vec<Opt>,
        /// Children, in order.
        children: Vec<Ast>,
        /// 1-based column of the name.
        col: usize,
    },
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
    /// (byte position, characters before it) of the last column computed.
    col_cache: std::cell::Cell<(usize, usize)>,
}

fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/' | b'~' | b'+' | b':')
}

impl<'a> Parser<'a> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T> {
        Err(Error::Syntax {
            col: self.col(self.pos),
            msg: msg.into(),
        })
    }
    /// 1-based column of byte `pos`. Columns count characters (bytes that
    /// do not continue a UTF-8 sequence), not bytes; the count carries on
    /// from the last column asked for, so a parse stays linear in the text.
    fn col(&self, pos: usize) -> usize {
        let pos = pos.min(self.s.len());
        let (mut at, mut chars) = self.col_cache.get();
        if pos < at {
            (at, chars) = (0, 0);
        }
        chars += self.s[at..pos]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        self.col_cache.set((pos, chars));
        chars + 1
    }
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() {
            let c = self.s[self.pos];
            if c.is_ascii_whitespace() {
                self.pos += 1;
            } else if c == b'#' {
                while self.pos < self.s.len() && self.s[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn describe(&self) -> String {
        match self.s.get(self.pos) {
            None => "end of expression".into(),
            Some(_) => {
                let rest = String::from_utf8_lossy(&self.s[self.pos..]);
                format!("'{}'", rest.chars().next().unwrap_or('?'))
            }
        }
    }
    fn word(&mut self) -> Result<(String, usize)> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && name_char(self.s[self.pos]) {
            self.pos += 1;
        }
        if start == self.pos {
            return self.err(format!("expected a name, found {}", self.describe()));
        }
        Ok((
            String::from_utf8_lossy(&self.s[start..self.pos]).into_owned(),
            self.col(start),
        ))
    }
    fn opts(&mut self) -> Result<Vec<Opt>> {
        let mut v = Vec::new();
        if self.peek() != Some(b'[') {
            return Ok(v);
        }
        self.pos += 1;
        loop {
            self.skip_ws();
            let kstart = self.pos;
            while self.pos < self.s.len()
                && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
            {
                self.pos += 1;
            }
            if kstart == self.pos {
                return self.err(format!("expected an option key, found {}", self.describe()));
            }
            let key = String::from_utf8_lossy(&self.s[kstart..self.pos]).into_owned();
            let col = self.col(kstart);
            if self.peek() != Some(b'=') {
                return self.err(format!(
                    "expected '=' after option '{key}', found {}",
                    self.describe()
                ));
            }
            self.pos += 1;
            self.skip_ws();
            let vstart = self.pos;
            while self.pos < self.s.len()
                && !matches!(self.s[self.pos], b',' | b']' | b'[' | b'(' | b')')
                && !self.s[self.pos].is_ascii_whitespace()
            {
                self.pos += 1;
            }
            if vstart == self.pos {
                return self.err(format!("option '{key}' has no value"));
            }
            let value = String::from_utf8_lossy(&self.s[vstart..self.pos]).into_owned();
            if v.iter().any(|o: &Opt| o.key == key) {
                return Err(Error::Syntax {
                    col,
                    msg: format!("option '{key}' given twice"),
                });
            }
            v.push(Opt { key, value, col });
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(v);
                }
                _ => {
                    return self.err(format!(
                        "expected ',' or ']' in options, found {}",
                        self.describe()
                    ))
                }
            }
        }
    }
    fn node(&mut self) -> Result<Ast> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.skip_ws();
        let start = self.pos;
        // Optional COUNT '*'.
        let mut count = 1u32;
        let mut p = self.pos;
        while p < self.s.len() && self.s[p].is_ascii_digit() {
            p += 1;
        }
        if p > self.pos && {
            let mut q = p;
            while q < self.s.len() && self.s[q].is_ascii_whitespace() {
                q += 1;
            }
            self.s.get(q) == Some(&b'*')
        } {
            let digits = String::from_utf8_lossy(&self.s[self.pos..p]).into_owned();
            count = match digits.parse::<u32>() {
                Ok(n) if (1..=MAX_DEVICES).contains(&n) => n,
                _ => {
                    return self.err(format!(
                        "count '{digits}' must be between 1 and {MAX_DEVICES}"
                    ))
                }
            };
            self.pos = p;
            self.skip_ws();
            self.pos += 1; // '*'
        }
        let (name, col) = self.word()?;
        let opts = self.opts()?;
        let node = if self.peek() == Some(b'(') {
            if count != 1 {
                return Err(Error::Syntax {
                    col: self.col(start),
                    msg: "a count ('N*') applies to devices, not to groups".into(),
                });
            }
            self.pos += 1;
            let mut children = vec![self.node()?];
            loop {
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        children.push(self.node()?);
                    }
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => {
                        return self.err(format!("expected ',' or ')', found {}", self.describe()))
                    }
                }
            }
            Ast::Group {
                name,
                opts,
                children,
                col,
            }
        } else {
            Ast::Leaf {
                name,
                count,
                opts,
                col,
            }
        };
        self.depth -= 1;
        Ok(node)
    }
}

/// Parse an expression into its syntax tree. `#` starts a comment to end of line.
pub fn parse(expr: &str) -> Result<Ast> {
    if expr.len() > MAX_EXPR_BYTES {
        return Err(Error::Syntax {
            col: 1,
            msg: format!("expression longer than {} KiB", MAX_EXPR_BYTES >> 10),
        });
    }
    let mut p = Parser {
        s: expr.as_bytes(),
        pos: 0,
        depth: 0,
        col_cache: std::cell::Cell::new((0, 0)),
    };
    if p.peek().is_none() {
        return p.err("empty topology expression");
    }
    let ast = p.node()?;
    if p.peek().is_some() {
        return p.err(format!("unexpected {} after the expression", p.describe()));
    }
    Ok(ast)
}

pub use raidlab_layout::{Level, ParityLayout};

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
    pub layout: ParityLayout,
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
    /// md's internal write-intent bitmap: its chunk in bytes (`None`: no
    /// bitmap, the simulator's default).
    pub bitmap_chunk: Option<u64>,
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

/// The options of an array node, checked against its level. Shared by the
/// simulator's resolution and the real engine, which refuses some of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayOpts {
    /// `stripe=`, if given.
    pub stripe: Option<u64>,
    /// `layout=` (left-symmetric by default).
    pub layout: ParityLayout,
    /// `spares=` and its column.
    pub spares: Option<(u32, usize)>,
    /// `impl=` and its column.
    pub imp: Option<(String, usize)>,
    /// `rebuild_min=` / `rebuild_max=`: a simulated rebuild's guaranteed
    /// and idle rates, bytes per second, and the column of the first given.
    pub rebuild_rates: (Option<u64>, Option<u64>, usize),
    /// `group_thread_cnt=` and its column.
    pub group_threads: Option<(u32, usize)>,
    /// `bitmap=internal|none` (true for internal), `bitmap_chunk=`, and
    /// the column of the first given.
    pub bitmap: (Option<bool>, Option<u64>, usize),
    /// `consistency=ppl|resync` (true for ppl) and its column.
    pub consistency: Option<(bool, usize)>,
}

/// mdadm's default bitmap chunk for an internal bitmap: 64 MiB (mdadm(8),
/// `--bitmap-chunk`: "when using an internal bitmap, the chunksize
/// defaults to 64Meg, or larger if necessary to fit the bitmap into the
/// available space").
pub const MD_BITMAP_CHUNK: u64 = 64 << 20;

/// `bitmap=internal|none` or `bitmap_chunk=SIZE` (a power of two from 4k,
/// mdadm's smallest, to 1t) on an array with redundancy.
fn bitmap_option(a: &mut ArrayOpts, level: Level, o: &Opt) -> Result<()> {
    if matches!(level, Level::Raid0 | Level::Concat) {
        return invalid(o.col, format!("{}: a write-intent bitmap needs redundancy (raid1, raid4, raid5, raid6, raid10), not {}", o.key, level.word()));
    }
    if a.bitmap.2 == 0 {
        a.bitmap.2 = o.col;
    }
    if o.key == "bitmap" {
        a.bitmap.0 = Some(match o.value.as_str() {
            "internal" => true,
            "none" => false,
            v => return invalid(o.col, format!("bitmap={v}: expected internal or none")),
        });
        return Ok(());
    }
    let c = parse_size(&o.value)
        .ok()
        .filter(|c| c.is_power_of_two() && (4096..=1 << 40).contains(c))
        .ok_or_else(|| Error::Invalid {
            col: o.col,
            msg: format!(
                "bitmap_chunk={}: expected a power of two from 4k to 1t",
                o.value
            ),
        })?;
    a.bitmap.1 = Some(c);
    Ok(())
}

/// The bitmap chunk an array's options ask for: `bitmap_chunk=` implies
/// an internal bitmap; md only.
fn bitmap_chunk(
    bitmap: (Option<bool>, Option<u64>, usize),
    imp: Option<&str>,
) -> Result<Option<u64>> {
    let (on, chunk, col) = bitmap;
    if col > 0 && !md_family(imp) {
        return invalid(
            col,
            "bitmap and bitmap_chunk are md's write-intent bitmap; this array is not md",
        );
    }
    match (on, chunk) {
        (Some(false), Some(_)) => invalid(col, "bitmap=none with a bitmap_chunk"),
        (Some(false), None) | (None, None) => Ok(None),
        (_, c) => Ok(Some(c.unwrap_or(MD_BITMAP_CHUNK))),
    }
}

/// Most members md's Partial Parity Log handles ("There is a limitation of
/// maximum 64 disks in the array for PPL", Documentation/md/raid5-ppl.rst).
pub const PPL_MAX_MEMBERS: usize = 64;

/// `consistency=ppl|resync` (mdadm's `--consistency-policy`): whether the
/// array keeps md's Partial Parity Log, which exists for RAID 5 only
/// ("PPL is a feature available for RAID5 arrays", raid5-ppl.rst).
fn consistency_option(level: Level, o: &Opt) -> Result<bool> {
    match o.value.as_str() {
        "ppl" if level == Level::Raid5 => Ok(true),
        "ppl" => invalid(
            o.col,
            format!(
                "consistency=ppl: md's Partial Parity Log exists for raid5 only, not {}",
                level.word()
            ),
        ),
        "resync" if level.parity_members() > 0 || matches!(level, Level::Raid1 | Level::Raid10) => {
            Ok(false)
        }
        "resync" => invalid(
            o.col,
            format!(
                "consistency=resync: {} has no redundancy to resync",
                level.word()
            ),
        ),
        v => invalid(o.col, format!("consistency={v}: expected ppl or resync")),
    }
}

/// Implementations that run md's own code: its bitmap, stripe workers and
/// Partial Parity Log apply (Intel VROC on Linux is md with IMSM metadata).
fn md_family(imp: Option<&str>) -> bool {
    matches!(imp, Some("md" | "vroc"))
}

/// Check the options of an array of `level`.
pub fn array_options(level: Level, opts: &[Opt]) -> Result<ArrayOpts> {
    let mut a = ArrayOpts {
        stripe: None,
        layout: ParityLayout::LeftSymmetric,
        spares: None,
        imp: None,
        rebuild_rates: (None, None, 0),
        group_threads: None,
        bitmap: (None, None, 0),
        consistency: None,
    };
    for o in opts {
        match o.key.as_str() {
            "stripe" => {
                let s = parse_size(&o.value).map_err(|m| Error::Invalid {
                    col: o.col,
                    msg: m.to_string(),
                })?;
                if s < 4096 || !s.is_power_of_two() || s > 1 << 30 {
                    return invalid(o.col, format!("stripe={}: the stripe unit must be a power of two from 4k to 1g", o.value));
                }
                a.stripe = Some(s);
            }
            "layout" => match level {
                Level::Raid4 => return invalid(o.col, "raid4 has one layout, parity on its last member (md's level 4): no layout="),
                Level::Raid5 | Level::Raid6 => {
                    a.layout = ParityLayout::from_word(&o.value).ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!("layout={}: expected left-symmetric, left-asymmetric, right-symmetric or right-asymmetric", o.value),
                    })?
                }
                Level::Raid10 if o.value == "n2" => {}
                Level::Raid10 => return invalid(o.col, format!("layout={}: raid10 supports n2 (near, 2 copies)", o.value)),
                _ => return invalid(o.col, format!("layout applies to raid5, raid6 and raid10, not {}", level.word())),
            },
            "spares" => {
                let n = o.value.parse().ok().filter(|&n: &u32| n <= 64).ok_or_else(|| Error::Invalid {
                    col: o.col,
                    msg: format!("spares={}: expected a count", o.value),
                })?;
                a.spares = Some((n, o.col));
            }
            "bitmap" | "bitmap_chunk" => bitmap_option(&mut a, level, o)?,
            "consistency" => a.consistency = Some((consistency_option(level, o)?, o.col)),
            "group_thread_cnt" => {
                if level.parity_members() == 0 {
                    return invalid(o.col, format!("group_thread_cnt applies to raid4, raid5 and raid6 (md's stripe workers), not {}", level.word()));
                }
                // md accepts up to 8192 (raid5_store_group_thread_cnt).
                let n = o.value.parse().ok().filter(|&n: &u32| n <= 8192).ok_or_else(|| Error::Invalid {
                    col: o.col,
                    msg: format!("group_thread_cnt={}: expected 0 to 8192 (md's limit)", o.value),
                })?;
                a.group_threads = Some((n, o.col));
            }
            "impl" => {
                if !IMPLS.contains(&o.value.as_str()) {
                    return invalid(o.col, format!("impl={}: expected {}", o.value, IMPLS.join(", ")));
                }
                a.imp = Some((o.value.clone(), o.col));
            }
            "rebuild_min" | "rebuild_max" => {
                let r = parse_size(&o.value)
                    .ok()
                    .filter(|&r| r >= 1024)
                    .ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!(
                            "{}={}: expected a rate in bytes per second of at least 1k, e.g. 200m",
                            o.key, o.value
                        ),
                    })?;
                if a.rebuild_rates.2 == 0 {
                    a.rebuild_rates.2 = o.col;
                }
                if o.key == "rebuild_min" {
                    a.rebuild_rates.0 = Some(r);
                } else {
                    a.rebuild_rates.1 = Some(r);
                }
            }
            _ => {
                return unknown_key(
                    o,
                    "an array",
                    "stripe, layout, spares, impl, rebuild_min, rebuild_max, group_thread_cnt, bitmap, bitmap_chunk, consistency",
                )
            }
        }
    }
    Ok(a)
}

/// An expression's root: the `host(...)` wrapper, if any, and the nodes it
/// runs.
#[derive(Debug, Clone, Copy)]
pub struct Root<'a> {
    /// `host`'s options and column, when the expression is wrapped in it.
    pub host: Option<(&'a [Opt], usize)>,
    /// The nodes under the host: one, or several the simulator runs side
    /// by side as separate volumes.
    pub inners: &'a [Ast],
}

/// Split `host(...)` off the root of `ast`; the host wraps one node or
/// more. Both engines start their walk here.
pub fn split_root(ast: &Ast) -> Result<Root<'_>> {
    match ast {
        Ast::Group {
            name,
            opts,
            children,
            col,
        } if name == "host" => {
            if children.is_empty() {
                return invalid(*col, "host(...) wraps at least one node");
            }
            Ok(Root {
                host: Some((opts, *col)),
                inners: children,
            })
        }
        _ => Ok(Root {
            host: None,
            inners: std::slice::from_ref(ast),
        }),
    }
}

/// One node of an expression, classified by the grammar rules both engines
/// share: the simulator gives leaves and other groups presets, the real
/// engine paths and nothing.
#[derive(Debug, Clone)]
pub enum Element<'a> {
    /// `[COUNT*]NAME[opts]`: a preset, a path or `missing`.
    Leaf {
        /// Name as written.
        name: &'a str,
        /// Repeat count.
        count: u32,
        /// Options, unchecked.
        opts: &'a [Opt],
        /// Column.
        col: usize,
    },
    /// `LEVEL[opts](...)`, its options checked against the level.
    Array {
        /// RAID level.
        level: Level,
        /// Checked options.
        opts: ArrayOpts,
        /// Members.
        children: &'a [Ast],
        /// Column.
        col: usize,
    },
    /// Any other `NAME[opts](...)`: a controller in the simulator.
    Group {
        /// Name as written.
        name: &'a str,
        /// Options, unchecked.
        opts: &'a [Opt],
        /// Children.
        children: &'a [Ast],
        /// Column.
        col: usize,
    },
}

/// Classify a node below the root: a RAID level or `host` without
/// parentheses and a `host` that does not wrap the whole expression are
/// refused here, for both engines.
pub fn classify(ast: &Ast) -> Result<Element<'_>> {
    match ast {
        Ast::Leaf {
            name,
            count,
            opts,
            col,
        } => {
            if Level::from_word(name).is_some() || name == "host" {
                return invalid(
                    *col,
                    format!("'{name}' needs members in parentheses: {name}(...)"),
                );
            }
            Ok(Element::Leaf {
                name,
                count: *count,
                opts,
                col: *col,
            })
        }
        Ast::Group { name, col, .. } if name == "host" => {
            invalid(*col, "host(...) may only wrap the whole expression")
        }
        Ast::Group {
            name,
            opts,
            children,
            col,
        } => Ok(match Level::from_word(name) {
            Some(level) => Element::Array {
                level,
                opts: array_options(level, opts)?,
                children,
                col: *col,
            },
            None => Element::Group {
                name,
                opts,
                children,
                col: *col,
            },
        }),
    }
}

/// Refuse an array of `level` with fewer `active` members (spares not
/// counted) than the level needs.
pub fn check_members(level: Level, active: usize, col: usize) -> Result<()> {
    let min = level.min_members();
    if active >= min {
        return Ok(());
    }
    invalid(
        col,
        format!(
            "{} with {active} active member{} ({} needs at least {min})",
            level.word(),
            if active == 1 { "" } else { "s" },
            level.word()
        ),
    )
}

fn invalid<T>(col: usize, msg: impl Into<String>) -> Result<T> {
    Err(Error::Invalid {
        col,
        msg: msg.into(),
    })
}

fn unknown_key<T>(o: &Opt, what: &str, allowed: &str) -> Result<T> {
    // The words other tools use for raidlab's options.
    let hint = match o.key.as_str() {
        "chunk" | "chunk_size" | "strip" | "stripe_size" => "; mdadm's chunk is 'stripe' here",
        "level" => "; the level is the array's name: raid5[...](...)",
        "write_cache" | "wce" => "; a drive's write cache is 'wc', a controller's 'cache'",
        _ => "",
    };
    invalid(
        o.col,
        format!(
            "unknown option '{}' for {what} (allowed: {allowed}){hint}",
            o.key
        ),
    )
}

fn on_off(o: &Opt) -> Result<bool> {
    match o.value.as_str() {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        v => invalid(o.col, format!("{}={v}: expected on or off", o.key)),
    }
}

struct Resolver<'a> {
    db: &'a PresetDb,
    counters: BTreeMap<String, usize>,
    devices: u32,
}

impl Resolver<'_> {
    fn label(&mut self, name: &str) -> String {
        let n = self.counters.entry(name.to_string()).or_insert(0);
        let l = format!("{name}#{n}");
        *n += 1;
        l
    }

    fn unknown_preset<T>(&self, name: &str, col: usize) -> Result<T> {
        invalid(col, self.db.unknown(name))
    }

    /// Resolve one node of the tree; `in_ctrl` is the port rate and name of
    /// the controller it sits in, if any. A counted leaf (`4*x25e`) gives
    /// several devices.
    fn node(&mut self, ast: &Ast, in_ctrl: Option<(f64, &str)>) -> Result<Vec<Node>> {
        match classify(ast)? {
            Element::Leaf {
                name,
                count,
                opts,
                col,
            } => self.leaf_devices(name, count, opts, col, in_ctrl),
            Element::Array {
                level,
                opts,
                children,
                col,
            } => Ok(vec![Node::Array(
                self.array(level, opts, children, col, in_ctrl)?,
            )]),
            Element::Group {
                name,
                opts,
                children,
                col,
            } => self.group(name, opts, children, col, in_ctrl),
        }
    }

    /// `count` devices of preset `name`.
    fn leaf_devices(
        &mut self,
        name: &str,
        count: u32,
        opts: &[Opt],
        col: usize,
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<Vec<Node>> {
        let preset = self
            .db
            .get(name)
            .or_else(|| self.db.by_path(name).map(|(_, p)| p));
        let model = match preset {
            Some(Preset::Ssd(p)) => DeviceModel::Ssd(Arc::new(p.clone())),
            Some(Preset::Hdd(p)) => DeviceModel::Hdd(Arc::new(p.clone())),
            Some(Preset::Controller(_)) => {
                return invalid(
                    col,
                    format!(
                        "controller '{name}' needs devices or an array in parentheses: {name}(...)"
                    ),
                )
            }
            Some(Preset::Host(_)) => {
                return invalid(
                    col,
                    format!(
                        "'{name}' is a host profile, not a device: write host[profile={name}](...) around the arrays it runs"
                    ),
                )
            }
            None => return self.unknown_preset(name, col),
        };
        let (wc, op, state) = device_options(name, &model, opts)?;
        self.devices += count;
        if self.devices > MAX_DEVICES {
            return invalid(col, format!("more than {MAX_DEVICES} devices"));
        }
        let dev_link = match &model {
            DeviceModel::Ssd(p) => p.link_mbps,
            DeviceModel::Hdd(p) => p.link_mbps,
        };
        let link_mbps = match in_ctrl {
            Some((port, _)) => dev_link.min(port),
            None => dev_link,
        };
        Ok((0..count)
            .map(|_| {
                Node::Device(Device {
                    preset: name.to_string(),
                    label: self.label(name),
                    model: model.clone(),
                    wc,
                    op,
                    state,
                    link_mbps,
                    failed: false,
                    col,
                })
            })
            .collect())
    }

    /// `NAME(...)` that is not an array: a controller (never inside another).
    fn group(
        &mut self,
        name: &str,
        opts: &[Opt],
        children: &[Ast],
        col: usize,
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<Vec<Node>> {
        let params = match self.db.get(name) {
            Some(Preset::Controller(p)) => p.clone(),
            Some(Preset::Ssd(_) | Preset::Hdd(_)) => {
                return invalid(
                    col,
                    format!(
                        "'{name}' is a device; only controllers, arrays and host take parentheses"
                    ),
                )
            }
            Some(Preset::Host(_)) => {
                return invalid(
                    col,
                    format!(
                        "'{name}' is a host profile, not a node: write host[profile={name}](...) to run the arrays inside on it"
                    ),
                )
            }
            None => return self.unknown_preset(name, col),
        };
        if let Some((_, outer)) = in_ctrl {
            return invalid(
                col,
                format!("controller '{name}' inside controller '{outer}'"),
            );
        }
        Ok(vec![Node::Controller(
            self.controller(name, params, opts, children, col)?,
        )])
    }

    fn controller(
        &mut self,
        name: &str,
        mut params: ControllerParams,
        opts: &[Opt],
        children: &[Ast],
        col: usize,
    ) -> Result<Controller> {
        let o = controller_options(&mut params, opts)?;
        let label = self.label(name);
        let port = params.port_mbps;
        let mut kids = Vec::new();
        for c in children {
            kids.extend(self.node(c, Some((port, name)))?);
        }
        self.check_attachable(name, &params, &kids, col)?;
        let mode = controller_mode(name, o.mode, &kids, col)?;
        let ndev = count_devices(&kids);
        if ndev > params.ports as usize {
            return invalid(
                col,
                format!(
                    "{name} has {} ports but {ndev} devices are attached",
                    params.ports
                ),
            );
        }
        Ok(Controller {
            preset: name.to_string(),
            label,
            // No cache, no write-back.
            write_back: o.write_back && params.cache_mb > 0,
            params: Arc::new(params),
            mode,
            readahead: o.readahead,
            children: kids,
            col,
        })
    }

    /// Refuse what controller `name` cannot hold: an array, where it is a
    /// host bus adapter (it passes drives through and runs no RAID), and an
    /// NVMe drive, where its lanes are SAS/SATA only.
    fn check_attachable(
        &self,
        name: &str,
        params: &ControllerParams,
        kids: &[Node],
        col: usize,
    ) -> Result<()> {
        if !params.raid && kids.iter().any(|k| matches!(k, Node::Array(_))) {
            return invalid(
                col,
                format!(
                    "{name} is a host bus adapter: it passes drives through and runs no RAID; put the array on the host around it, e.g. raid5({name}[mode=jbod](4*DRIVE))"
                ),
            );
        }
        if params.nvme {
            return Ok(());
        }
        let mut devices = Vec::new();
        kids.iter().for_each(|k| k.collect_devices(&mut devices));
        if let Some(d) = devices
            .iter()
            .find(|d| matches!(&d.model, DeviceModel::Ssd(p) if p.nvme))
        {
            let tri: Vec<&str> = self
                .db
                .names()
                .into_iter()
                .filter(|n| matches!(self.db.get(n), Some(Preset::Controller(c)) if c.nvme))
                .collect();
            return invalid(
                col,
                format!(
                    "{} is an NVMe drive and {name} takes SAS/SATA drives only; a tri-mode controller ({}) or the host's own lanes take NVMe",
                    d.preset,
                    tri.join(", ")
                ),
            );
        }
        Ok(())
    }

    fn array(
        &mut self,
        level: Level,
        o: ArrayOpts,
        children: &[Ast],
        col: usize,
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<Array> {
        let (stripe, layout) = (o.stripe, o.layout);
        let spares = o.spares.map_or(0, |s| s.0);
        if let (Some((_, icol)), Some((_, ctrl))) = (&o.imp, in_ctrl) {
            return invalid(
                *icol,
                format!("impl is for host software RAID; this array is run by {ctrl}"),
            );
        }
        let mut imp = o.imp.map(|i| i.0);
        if in_ctrl.is_none() && imp.is_none() {
            imp = Some("md".into());
        }
        let mut members = Vec::new();
        let mut missing = Vec::new();
        for c in children {
            if let Ast::Leaf {
                name, count, col, ..
            } = c
            {
                if name == "missing" {
                    missing.push((members.len(), *count, *col));
                    continue;
                }
            }
            let nodes = self.node(c, in_ctrl)?;
            for n in nodes {
                if let Node::Controller(ctl) = n {
                    // A controller's volumes become members one by one.
                    if ctl.children.is_empty() {
                        return invalid(ctl.col, "controller without volumes");
                    }
                    members.push(Node::Controller(ctl));
                } else {
                    members.push(n);
                }
            }
        }
        self.fill_missing(&mut members, &missing, level, spares, col)?;
        let volumes: usize = members.iter().map(Node::volumes).sum();
        check_members(level, volumes.saturating_sub(spares as usize), col)?;
        // Without a stripe, the array takes its RAID implementation's
        // default: the controller's or the host software RAID profile's
        // (filled in by `default_stripes` once the tree is built).
        let stripe = stripe.unwrap_or(0);
        let (lo, hi, rcol) = o.rebuild_rates;
        let rebuild_rates = (
            lo.unwrap_or(MD_SPEED_LIMIT_MIN),
            hi.unwrap_or(MD_SPEED_LIMIT_MAX),
        );
        if rebuild_rates.0 > rebuild_rates.1 {
            return invalid(rcol, "rebuild_min is above rebuild_max");
        }
        let bitmap_chunk = bitmap_chunk(o.bitmap, imp.as_deref())?;
        let ppl = ppl_policy(
            o.consistency,
            bitmap_chunk.is_some(),
            imp.as_deref(),
            members.len(),
        )?;
        let group_threads = match o.group_threads {
            Some((n, gcol)) if !md_family(imp.as_deref()) => {
                return invalid(
                    gcol,
                    format!("group_thread_cnt={n}: md's stripe workers; this array is not md"),
                )
            }
            g => g.map_or(0, |g| g.0),
        };
        Ok(Array {
            level,
            stripe,
            layout,
            spares,
            imp,
            members,
            rebuild_rates,
            group_threads,
            bitmap_chunk,
            ppl,
            col,
        })
    }
}

/// Whether an array keeps md's Partial Parity Log: `consistency=ppl` on an
/// md-family array of at most [`PPL_MAX_MEMBERS`] members without a
/// write-intent bitmap ("using write-intent bitmap and PPL together is not
/// supported", raid5-ppl.rst).
fn ppl_policy(
    consistency: Option<(bool, usize)>,
    bitmap: bool,
    imp: Option<&str>,
    members: usize,
) -> Result<bool> {
    let Some((ppl, col)) = consistency else {
        return Ok(false);
    };
    if !md_family(imp) {
        return invalid(
            col,
            "consistency is md's --consistency-policy; this array is not md",
        );
    }
    if !ppl {
        return Ok(false);
    }
    if bitmap {
        return invalid(
            col,
            "consistency=ppl with a write-intent bitmap: md does not support both",
        );
    }
    if members > PPL_MAX_MEMBERS {
        return invalid(col, format!("consistency=ppl: md's Partial Parity Log takes at most {PPL_MAX_MEMBERS} members, not {members}"));
    }
    Ok(true)
}

impl Resolver<'_> {
    /// Put a failed device (a copy of a sibling device, marked failed) in
    /// the place of every `missing`, and refuse an array that has lost
    /// more members than its level tolerates.
    fn fill_missing(
        &mut self,
        members: &mut Vec<Node>,
        missing: &[(usize, u32, usize)],
        level: Level,
        spares: u32,
        col: usize,
    ) -> Result<()> {
        let Some(&(_, _, mcol)) = missing.first() else {
            return Ok(());
        };
        let Some(Node::Device(like)) = members.iter().find(|n| matches!(n, Node::Device(_))) else {
            return invalid(
                mcol,
                "'missing' stands for a failed device: its array needs a device member to copy",
            );
        };
        let like = like.clone();
        for &(at, count, mcol) in missing.iter().rev() {
            for _ in 0..count {
                let mut d = like.clone();
                d.failed = true;
                d.label = self.label("missing");
                d.col = mcol;
                members.insert(at, Node::Device(d));
            }
        }
        let active = members.len() - spares as usize;
        let lost: Vec<usize> = (0..active)
            .filter(|&i| matches!(&members[i], Node::Device(d) if d.failed))
            .collect();
        // Spares hold nothing until they are rebuilt: the data must survive
        // on the members left.
        if !level.survives(active, &lost) {
            return invalid(
                col,
                format!(
                    "{} has lost {} member{} ({} missing): its data is gone",
                    level.word(),
                    lost.len(),
                    if lost.len() == 1 { "" } else { "s" },
                    lost.len()
                ),
            );
        }
        Ok(())
    }
}

/// A device's options: (write cache, extra over-provisioning, state).
fn device_options(
    name: &str,
    model: &DeviceModel,
    opts: &[Opt],
) -> Result<(bool, f64, Option<SsdState>)> {
    let is_ssd = matches!(model, DeviceModel::Ssd(_));
    let mut wc = match model {
        DeviceModel::Ssd(p) => p.write_cache,
        DeviceModel::Hdd(p) => p.write_cache,
    };
    let mut op = 0.0;
    let mut state = None;
    for o in opts {
        match o.key.as_str() {
            "wc" => wc = on_off(o)?,
            "op" if is_ssd => {
                op = parse_percent(&o.value).map_err(|m| Error::Invalid {
                    col: o.col,
                    msg: m.to_string(),
                })?;
                if op > 0.9 {
                    return invalid(o.col, "op must leave at least 10% of the capacity");
                }
            }
            "state" if is_ssd => {
                state = Some(SsdState::from_word(&o.value).ok_or_else(|| Error::Invalid {
                    col: o.col,
                    msg: format!("state={}: expected fob, fill or steady", o.value),
                })?)
            }
            "op" | "state" => {
                return invalid(
                    o.col,
                    format!("option '{}' applies to SSDs, '{name}' is a disk", o.key),
                )
            }
            _ => return unknown_key(o, "a device", "wc, op, state"),
        }
    }
    Ok((wc, op, state))
}

/// A controller's options, applied to its parameters where they override
/// them (`cache_mb`, `pcie`).
struct ControllerOptions {
    mode: Option<Mode>,
    write_back: bool,
    readahead: ReadAhead,
}

fn controller_options(params: &mut ControllerParams, opts: &[Opt]) -> Result<ControllerOptions> {
    let mut o = ControllerOptions {
        mode: None,
        write_back: params.cache == "wb",
        readahead: ReadAhead::from_word(&params.readahead).unwrap_or(ReadAhead::Adaptive),
    };
    for opt in opts {
        let v = opt.value.as_str();
        match opt.key.as_str() {
            "cache" => {
                o.write_back = match v {
                    "wb" => true,
                    "wt" => false,
                    _ => return invalid(opt.col, format!("cache={v}: expected wb or wt")),
                }
            }
            "readahead" => {
                o.readahead = ReadAhead::from_word(v).ok_or_else(|| Error::Invalid {
                    col: opt.col,
                    msg: format!("readahead={v}: expected on, off or adaptive"),
                })?
            }
            "mode" => {
                o.mode = Some(Mode::from_word(v).ok_or_else(|| Error::Invalid {
                    col: opt.col,
                    msg: format!("mode={v}: expected raid, volume or jbod"),
                })?)
            }
            "cache_mb" => {
                params.cache_mb = v
                    .parse()
                    .ok()
                    .filter(|&mb: &u32| mb <= MAX_CACHE_MB)
                    .ok_or_else(|| Error::Invalid {
                        col: opt.col,
                        msg: format!(
                            "cache_mb={v}: expected MiB from 0 to {MAX_CACHE_MB} (1 TiB), e.g. 512"
                        ),
                    })?
            }
            "pcie" => (params.pcie_gen, params.pcie_lanes) = pcie(opt)?,
            _ => {
                return unknown_key(
                    opt,
                    "a controller",
                    "cache, readahead, mode, cache_mb, pcie",
                )
            }
        }
    }
    Ok(o)
}

/// `pcie=GENxLANES`: (generation 1-5, lanes 1/2/4/8/16).
fn pcie(o: &Opt) -> Result<(u32, u32)> {
    let bad = || Error::Invalid {
        col: o.col,
        msg: format!("pcie={}: expected GENxLANES, e.g. 2x8", o.value),
    };
    let (g, l) = o.value.split_once('x').ok_or_else(bad)?;
    let g: u32 = g.parse().map_err(|_| bad())?;
    let l: u32 = l.parse().map_err(|_| bad())?;
    if !(1..=5).contains(&g) || ![1, 2, 4, 8, 16].contains(&l) {
        return Err(bad());
    }
    Ok((g, l))
}

/// A controller's mode: as asked, or `raid` when it holds an array and
/// `volume` otherwise; refused when it does not fit what the controller
/// holds.
fn controller_mode(name: &str, asked: Option<Mode>, kids: &[Node], col: usize) -> Result<Mode> {
    let has_array = kids.iter().any(|k| matches!(k, Node::Array(_)));
    let has_dev = kids.iter().any(|k| matches!(k, Node::Device(_)));
    let mode = asked.unwrap_or(if has_array { Mode::Raid } else { Mode::Volume });
    if mode == Mode::Raid && has_dev {
        return invalid(col, format!("{name} in raid mode holds bare devices: put them in an array, or use mode=volume or mode=jbod"));
    }
    if mode != Mode::Raid && has_array {
        return invalid(
            col,
            format!(
                "{name} in mode={} cannot run arrays; drop the mode option",
                mode.word()
            ),
        );
    }
    Ok(mode)
}

fn count_devices(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Device(_) => 1,
            Node::Controller(c) => count_devices(&c.children),
            Node::Array(a) => count_devices(&a.members),
        })
        .sum()
}

/// Give arrays without an explicit stripe their implementation's default:
/// the controller's for hardware RAID, the host profile's (`impl`) for
/// software RAID.
fn default_stripes(n: &mut Node, ctrl_default: Option<u64>, host: &HostParams) {
    match n {
        Node::Device(_) => {}
        Node::Controller(c) => {
            let d = c.params.default_stripe_kb as u64 * 1024;
            c.children
                .iter_mut()
                .for_each(|x| default_stripes(x, Some(d), host));
        }
        Node::Array(a) => {
            if a.stripe == 0 {
                a.stripe = match (ctrl_default, &a.imp) {
                    (Some(d), _) => d,
                    (None, Some(imp)) => host.impls[imp.as_str()].default_stripe_kb as u64 * 1024,
                    (None, None) => unreachable!("a host array always has an impl"),
                };
            }
            a.members
                .iter_mut()
                .for_each(|x| default_stripes(x, ctrl_default, host));
        }
    }
}

/// Check every host software array against its implementation's profile
/// in host preset `profile`: the profile exists and takes the array's
/// level, member count and stripe unit.
fn check_impls(n: &Node, host: &HostParams, profile: &str) -> Result<()> {
    let Node::Array(a) = n else {
        if let Node::Controller(c) = n {
            for x in &c.children {
                check_impls(x, host, profile)?;
            }
        }
        return Ok(());
    };
    if let Some(name) = &a.imp {
        let Some(imp) = host.impls.get(name) else {
            return invalid(
                a.col,
                format!(
                    "impl={name}: host preset '{profile}' has no {name} profile (impls.{name})"
                ),
            );
        };
        check_impl(a, name, imp)?;
    }
    a.members
        .iter()
        .try_for_each(|m| check_impls(m, host, profile))
}

/// Array `a` within what implementation `name` builds.
fn check_impl(a: &Array, name: &str, imp: &SwImplParams) -> Result<()> {
    if !imp.levels.is_empty() && !imp.levels.iter().any(|l| l == a.level.word()) {
        return invalid(
            a.col,
            format!(
                "impl={name} builds {}, not {}",
                imp.levels.join(", "),
                a.level.word()
            ),
        );
    }
    let n = a.members.len();
    if imp.max_members != 0 && n > imp.max_members as usize {
        return invalid(
            a.col,
            format!(
                "impl={name} takes at most {} members, not {n}",
                imp.max_members
            ),
        );
    }
    let kb = a.stripe / 1024;
    if imp.max_stripe_kb != 0 && kb > u64::from(imp.max_stripe_kb) {
        return invalid(
            a.col,
            format!(
                "impl={name} takes stripes up to {}k, not {kb}k",
                imp.max_stripe_kb
            ),
        );
    }
    Ok(())
}

/// Apply `host[cores=..,ghz=..]` to the host profile.
/// `profile=NAME`: the host preset NAME in place of the default `host`
/// (its cores and clock may still be set by `cores=` and `ghz=`).
fn host_profile(host: &mut HostParams, opts: &[Opt], db: &PresetDb) -> Result<Option<String>> {
    let Some(o) = opts.iter().find(|o| o.key == "profile") else {
        return Ok(None);
    };
    match db.get(&o.value) {
        Some(Preset::Host(h)) => {
            *host = h.clone();
            Ok(Some(o.value.clone()))
        }
        _ => invalid(
            o.col,
            format!(
                "profile={}: not a host preset (see 'raidlab presets')",
                o.value
            ),
        ),
    }
}

fn host_options(host: &mut HostParams, opts: &[Opt]) -> Result<()> {
    for o in opts {
        match o.key.as_str() {
            "profile" => {}
            "cores" => {
                host.cores = o
                    .value
                    .parse()
                    .ok()
                    .filter(|&c: &u32| (1..=1024).contains(&c))
                    .ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!("cores={}: expected 1..1024", o.value),
                    })?
            }
            "ghz" => {
                host.ghz = o
                    .value
                    .parse()
                    .ok()
                    .filter(|&g: &f64| g > 0.1 && g < 20.0)
                    .ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!("ghz={}: expected a clock such as 3.0", o.value),
                    })?
            }
            _ => return unknown_key(o, "host", "profile, cores, ghz"),
        }
    }
    Ok(())
}

/// An expression as the user wrote it, less its `#` comments and with its
/// lines joined: what results echo.
pub fn without_comments(expr: &str) -> String {
    expr.lines()
        .map(|l| l.split_once('#').map_or(l, |(code, _)| code))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parse and resolve an expression against presets.
pub fn resolve(expr: &str, db: &PresetDb) -> Result<Topology> {
    let ast = parse(expr)?;
    let Some(Preset::Host(default_host)) = db.get("host") else {
        return Err(Error::Preset("the 'host' preset is missing".into()));
    };
    let mut host = default_host.clone();
    let root = split_root(&ast)?;
    let mut profile = None;
    if let Some((opts, _)) = root.host {
        profile = host_profile(&mut host, opts, db)?;
        host_options(&mut host, opts)?;
    }
    let mut r = Resolver {
        db,
        counters: BTreeMap::new(),
        devices: 0,
    };
    let mut nodes = Vec::new();
    for inner in root.inners {
        nodes.extend(r.node(inner, None)?);
    }
    for n in &mut nodes {
        check_impls(n, &host, profile.as_deref().unwrap_or("host"))?;
        default_stripes(n, None, &host);
    }
    let root = nodes.remove(0);
    Ok(Topology {
        expr: without_comments(expr),
        host: Arc::new(host),
        host_profile: profile,
        root,
        more_roots: nodes,
    })
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
        assert_eq!(h.layout, ParityLayout::RightAsymmetric);
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
        let Node::Array(a) = ok("raid5[consistency=ppl](4*x25e)").root else {
            panic!()
        };
        assert!(a.ppl);
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
        assert!(err("raid5[consistency=ppl](65*x25e)").contains("at most 64"));
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
