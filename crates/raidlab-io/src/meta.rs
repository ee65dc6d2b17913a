//! Creating and assembling arrays from their members' md superblocks, as
//! `mdadm --create` and `mdadm --assemble` do.
//!
//! A run whose members are all blank creates the arrays (or any run given
//! `create`). Otherwise every present member must carry the superblock
//! raidlab wrote for the slot the expression gives it: a blank member among
//! written ones, a member of another array, a reordered member, a changed
//! level, chunk or layout, and a stale member (one that missed updates
//! while it was `missing`) are refused, each naming the member. An array
//! not stopped cleanly is resynchronised before use (see `resync.rs`), and
//! refused if it is also degraded (md's "dirty degraded array").

use crate::buf::ABuf;
use crate::error::{Error, ErrorKind};
use crate::md::{self, Lineage, Superblock, ROLE_FAULTY};
use crate::topo::{RealNode, RealTopology};
use raidlab_layout::{ArrayLayout, Geometry, Level};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Where a leaf member sits: its array and slot, and the path from the root.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// Member index.
    pub member: usize,
    /// Child indices from the root down to the leaf.
    pub path: Vec<u16>,
    /// The array it is a member of.
    pub level: Level,
    /// That array's chunk as md records it (0 for RAID 1 and concat).
    pub chunk: u64,
    /// md's layout value.
    pub layout: u32,
    /// Slots of that array.
    pub slots: usize,
    /// Which of that array's slots are `missing`.
    pub missing: Vec<bool>,
    /// Devices of that array, its spares included (md's `max_dev`).
    pub devices: usize,
    /// A hot spare (its path index is past the slots).
    pub spare: bool,
}

/// Every leaf member under an array, in member order; empty when the root
/// is a lone member (a plain file or device, without metadata).
pub fn leaves(root: &RealNode) -> Vec<Leaf> {
    fn walk(n: &RealNode, path: &mut Vec<u16>, out: &mut Vec<Leaf>) {
        let RealNode::Array {
            level,
            chunk,
            layout,
            children,
            spares,
            ..
        } = n
        else {
            return;
        };
        let missing: Vec<bool> = children
            .iter()
            .map(|c| matches!(c, RealNode::Missing))
            .collect();
        for (i, c) in children.iter().chain(spares).enumerate() {
            path.push(i as u16);
            match c {
                RealNode::Member(m) => out.push(Leaf {
                    member: *m,
                    path: path.clone(),
                    level: *level,
                    chunk: md::md_chunk(*level, *chunk),
                    layout: md::md_layout(*level, *layout),
                    slots: children.len(),
                    missing: missing.clone(),
                    devices: children.len() + spares.len(),
                    spare: i >= children.len(),
                }),
                RealNode::Array { .. } => walk(c, path, out),
                RealNode::Missing => {}
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(root, &mut Vec::new(), &mut out);
    out.sort_by_key(|l| l.member);
    out
}

/// What one member's superblock block holds.
enum Found {
    /// No md superblock.
    Blank,
    /// A superblock raidlab wrote, with its lineage.
    Ours(Box<Superblock>, Lineage),
    /// An md superblock without raidlab's lineage: another tool's array.
    Foreign(Box<Superblock>),
    /// An md magic whose block cannot be used.
    Damaged(md::SbError),
}

/// Read the superblock block of an open member.
fn read_block(f: &File) -> std::io::Result<ABuf> {
    // Aligned: members may be open for direct I/O.
    let mut b = ABuf::zeroed(md::BLOCK);
    let mut got = 0;
    while got < b.len() {
        match f.read_at(&mut b[got..], md::SUPER_OFFSET + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    Ok(b)
}

fn classify(block: &[u8]) -> Found {
    match Superblock::decode(block) {
        Ok(None) => Found::Blank,
        Ok(Some(sb)) => match Lineage::load(block) {
            Some(l) => Found::Ours(Box::new(sb), l),
            None => Found::Foreign(Box::new(sb)),
        },
        Err(e) => Found::Damaged(e),
    }
}

/// Whether the file or device at `path` carries a superblock raidlab
/// wrote: the signature check leaves such members to assembly.
pub fn is_raidlab_member(path: &std::path::Path) -> bool {
    File::open(path)
        .and_then(|f| read_block(&f))
        .is_ok_and(|b| matches!(classify(&b), Found::Ours(..)))
}

/// An assembled (or newly created) set of arrays.
#[derive(Debug, Clone)]
pub struct Assembly {
    /// The leaves under arrays, in member order.
    pub leaves: Vec<Leaf>,
    /// Byte offset of each member's data (0 without metadata).
    pub offsets: Vec<u64>,
    /// UUID of the root array.
    pub root_uuid: [u8; 16],
    /// Shape of the expression.
    pub shape: u64,
    /// Creation time (seconds).
    pub ctime: u64,
    /// Highest event count on the members.
    pub events: u64,
    /// The arrays were created by this run.
    pub created: bool,
    /// Some member says the array was not stopped cleanly.
    pub dirty: bool,
    /// Members to rebuild (replacements), in member order.
    pub rebuild: Vec<usize>,
    /// The root array's write-intent bitmap, when it has one.
    pub bitmap: Option<BitmapInfo>,
    /// Bytes of data each member's superblock records its array using of
    /// it (md's `size`), for the members assembled from their metadata; 0
    /// where none is recorded (new arrays, replacements, bare members).
    pub recorded: Vec<u64>,
    /// Replacements whose rebuild a crash stopped part-way, with the bytes
    /// of data their superblocks record as recovered.
    pub resume: Vec<(usize, u64)>,
}

/// A root array's internal write-intent bitmap, as found or chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitmapInfo {
    /// Bytes per bit (of a member, or of a RAID 10's volume).
    pub chunk: u64,
    /// A RAID 10 root's chunk, layout and member count: its bitmap covers
    /// the volume ([`bitmap_covers`]); `None` for other levels.
    pub volume: VolumeBitmap,
    /// The bits the members hold (ORed over them): chunks that may need a
    /// resync. Empty for a new array.
    pub dirty: Vec<u8>,
}

impl BitmapInfo {
    /// Whether chunk `k` may need a resync.
    pub fn dirty(&self, k: u64) -> bool {
        self.dirty
            .get((k / 8) as usize)
            .is_some_and(|b| b & (1 << (k % 8)) != 0)
    }
}

/// A RAID 10 root's chunk, layout and member count, whose bitmap covers
/// its volume.
pub type VolumeBitmap = Option<(u64, ArrayLayout, usize)>;

/// Whether the root's bitmap covers its volume: md's RAID 10 sets
/// `resync_max_sectors` to the array's size (`raid10_run`); every other
/// level's bitmap covers a member.
fn volume_bitmap(root: &RealNode) -> VolumeBitmap {
    match root {
        RealNode::Array {
            level: Level::Raid10,
            chunk,
            layout,
            children,
            ..
        } => Some((*chunk, *layout, children.len())),
        _ => None,
    }
}

/// The bytes a bitmap covers over members of `data` bytes each: the
/// volume's ([`Geometry::bitmap_bytes`]) under `volume`, else `data`.
pub fn bitmap_covers(volume: VolumeBitmap, data: u64) -> u64 {
    volume
        .and_then(|(c, l, n)| Geometry::new(Level::Raid10, c, l, &vec![data; n]).ok())
        .map_or(data, |g| g.bitmap_bytes())
}

/// Whether the root array gets an internal bitmap: a redundant array whose
/// members are all paths (nested arrays resync whole).
fn bitmap_eligible(root: &RealNode) -> bool {
    match root {
        RealNode::Array {
            level, children, ..
        } => {
            matches!(
                level,
                Level::Raid1 | Level::Raid4 | Level::Raid5 | Level::Raid6 | Level::Raid10
            ) && children
                .iter()
                .all(|c| matches!(c, RealNode::Member(_) | RealNode::Missing))
        }
        _ => false,
    }
}

/// mdadm's internal bitmap chunk for members of `data` bytes with `room`
/// bytes between the superblock's block and the data: 64 MiB, or the
/// smallest power of two from 4 KiB whose bits fit the room, capped at
/// 128 KiB of bitmap as mdadm caps it (`add_internal_bitmap1`).
fn bitmap_chunk(data: u64, room: u64) -> u64 {
    let room = room.min(128 << 10);
    let max_bits = (room.saturating_sub(md::BITMAP_HEADER as u64)) * 8;
    let mut chunk = 4096;
    while md::Bitmap::nbits(data / 512, chunk) > max_bits {
        chunk *= 2;
    }
    chunk.max(md::BITMAP_CHUNK)
}

/// Read the bitmap area of a member.
fn read_bitmap(f: &File, chunk_hint: u64, data: u64) -> std::io::Result<Option<md::Bitmap>> {
    let bits = md::Bitmap::nbits(data / 512, chunk_hint.max(4096)).div_ceil(8);
    let len = (md::BITMAP_HEADER as u64 + bits).next_multiple_of(4096) as usize;
    let mut b = ABuf::zeroed(len.max(4096));
    let at = md::SUPER_OFFSET + md::BITMAP_OFFSET;
    let mut got = 0;
    while got < b.len() {
        match f.read_at(&mut b[got..], at + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    Ok(md::Bitmap::decode(&b))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh UUID: the clock, the process and the member paths mixed by
/// SplitMix64 (uniqueness is what matters, not secrecy).
fn new_uuid(topo: &RealTopology) -> [u8; 16] {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let paths: String = topo
        .members
        .iter()
        .map(|m| m.path.display().to_string())
        .collect();
    let mut s = nanos ^ ((std::process::id() as u64) << 32) ^ md::fnv64(paths.as_bytes());
    let mut out = [0u8; 16];
    for half in out.chunks_mut(8) {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        half.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out
}

/// A UUID derived from the root's for the array or device at `path` (the
/// root array's is the root's own).
fn derived_uuid(root: &[u8; 16], path: &[u16], tag: u8) -> [u8; 16] {
    if path.is_empty() && tag == b'a' {
        return *root;
    }
    let mut bytes = root.to_vec();
    bytes.push(tag);
    for p in path {
        bytes.extend_from_slice(&p.to_le_bytes());
    }
    let a = md::fnv64(&bytes);
    bytes.push(0xa5);
    let b = md::fnv64(&bytes);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_le_bytes());
    out[8..].copy_from_slice(&b.to_le_bytes());
    out
}

fn refused(msg: String) -> Error {
    Error::new(ErrorKind::Refused, msg)
}

/// What a command wants of the members' arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Use the arrays the members hold; create them if all are blank.
    Assemble,
    /// Make new arrays whatever the members hold (their signatures were
    /// checked already).
    Create,
    /// Use the arrays, taking blank and stale members as replacements to
    /// rebuild (`force`: members with foreign or damaged md superblocks
    /// too).
    Rebuild {
        /// Take foreign and damaged superblocks for blank.
        force: bool,
    },
}

/// New arrays over `leaves`: mdadm's data offsets (from the smallest
/// member of each array), a fresh UUID, and a bitmap where one applies.
fn create_arrays(
    topo: &RealTopology,
    leaves: Vec<Leaf>,
    sizes: &[u64],
    mut offsets: Vec<u64>,
) -> Result<Assembly, Error> {
    let shape = topo.shape;
    let path_of = |m: usize| topo.members[m].path.display().to_string();
    for l in &leaves {
        let smallest = leaves
            .iter()
            .filter(|o| o.path[..o.path.len() - 1] == l.path[..l.path.len() - 1])
            .map(|o| sizes[o.member])
            .min()
            .unwrap_or(sizes[l.member]);
        offsets[l.member] = md::data_offset(smallest, l.chunk);
        if offsets[l.member] >= sizes[l.member] {
            return Err(Error::new(
                ErrorKind::Size,
                format!(
                    "{} holds {} bytes, not more than the {} bytes md's metadata and data offset take",
                    path_of(l.member),
                    sizes[l.member],
                    offsets[l.member]
                ),
            ));
        }
    }
    let bitmap = bitmap_eligible(&topo.root).then(|| {
        let data = leaves
            .iter()
            .map(|l| sizes[l.member] - offsets[l.member])
            .min()
            .unwrap_or(0);
        let room = leaves
            .iter()
            .map(|l| offsets[l.member])
            .min()
            .unwrap_or(0)
            .saturating_sub(md::SUPER_OFFSET + md::BITMAP_OFFSET);
        let volume = volume_bitmap(&topo.root);
        BitmapInfo {
            chunk: bitmap_chunk(bitmap_covers(volume, data), room),
            volume,
            dirty: Vec::new(),
        }
    });
    Ok(Assembly {
        leaves,
        offsets,
        root_uuid: new_uuid(topo),
        shape,
        ctime: now_secs(),
        events: 0,
        created: true,
        dirty: false,
        rebuild: Vec::new(),
        bitmap,
        recorded: Vec::new(),
        resume: Vec::new(),
    })
}

/// What the members' superblocks say, checked against the expression.
struct Checked<'a> {
    /// Leaves with raidlab's superblocks, current or stale.
    ours: Vec<(&'a Leaf, &'a Superblock, &'a Lineage)>,
    /// Members to rebuild: replacements and spares taking a slot.
    rebuild: Vec<usize>,
    /// Spares that took a slot, with the root UUID they carry.
    spare_roots: Vec<(usize, [u8; 16])>,
    /// Replacements a stopped rebuild left part-way: member, bytes
    /// recovered.
    resume: Vec<(usize, u64)>,
}

/// Check every leaf's superblock against the expression (slot, level,
/// layout, chunk, array, shape), collecting replacements; record each
/// member's data offset.
///
/// Longer than 70 lines: one check after another over each superblock,
/// in the order mdadm makes them, each with its own message.
fn check_found<'a>(
    topo: &RealTopology,
    leaves: &'a [Leaf],
    found: &'a [Found],
    intent: Intent,
    offsets: &mut [u64],
) -> Result<Checked<'a>, Error> {
    let shape = topo.shape;
    let path_of = |m: usize| topo.members[m].path.display().to_string();
    let promoted: Vec<usize> = topo.took_over.iter().map(|t| t.member).collect();
    let mut rebuild = Vec::new();
    let mut ours: Vec<(&Leaf, &Superblock, &Lineage)> = Vec::new();
    let mut spare_roots = Vec::new();
    let mut resume = Vec::new();
    let replacing = |f: &Found| match (intent, f) {
        (Intent::Rebuild { .. }, Found::Blank) => true,
        (Intent::Rebuild { force }, Found::Foreign(_) | Found::Damaged(_)) => force,
        _ => false,
    };
    for (l, f) in leaves.iter().zip(found) {
        // A spare that took a missing member's place is rebuilt there,
        // whatever slot its superblock names (checked to be this array's by
        // its root UUID).
        let promoted_ours =
            promoted.contains(&l.member) && matches!(f, Found::Ours(..) | Found::Blank);
        if replacing(f) || promoted_ours {
            if let (true, Found::Ours(_, lin)) = (promoted_ours, f) {
                spare_roots.push((l.member, lin.root_uuid));
            }
            rebuild.push(l.member);
            continue;
        }
        let who = path_of(l.member);
        if let Found::Ours(sb, lin) = f {
            if let Some(r) = sb.recovery_offset {
                // A replacement whose rebuild stopped part-way: it belongs
                // here (its slot and array checked) and is rebuilt onward.
                check_slot(l, sb, lin, &who)?;
                let Intent::Rebuild { .. } = intent else {
                    return Err(refused(format!(
                        "{who} is being rebuilt ({} bytes recovered so far): run 'raidlab rebuild' with this expression to finish, or write 'missing' in its place",
                        r * 512
                    )));
                };
                spare_roots.push((l.member, lin.root_uuid));
                resume.push((l.member, r * 512));
                rebuild.push(l.member);
                continue;
            }
        }
        let other = || {
            leaves
                .iter()
                .zip(found)
                .find(|(_, f)| matches!(f, Found::Ours(..)))
                .map_or(String::new(), |(o, _)| path_of(o.member))
        };
        let (sb, lin) = ours_or_refused(f, &who, other)?;
        check_slot(l, sb, lin, &who)?;
        let first = ours
            .first()
            .map(|(f0, _, flin)| (path_of(f0.member), *flin));
        check_same_array(lin, first, shape, &who)?;
        offsets[l.member] = sb.data_offset * 512;
        ours.push((l, sb, lin));
    }
    Ok(Checked {
        ours,
        rebuild,
        spare_roots,
        resume,
    })
}

/// The superblock and lineage of a member found to be this array's (by
/// raidlab); any other finding refused with a line saying what to do
/// (`other`: a member that does belong, for a blank one).
fn ours_or_refused<'f>(
    f: &'f Found,
    who: &str,
    other: impl Fn() -> String,
) -> Result<(&'f Superblock, &'f Lineage), Error> {
    match f {
        Found::Ours(sb, lin) => Ok((sb.as_ref(), lin)),
        Found::Blank => Err(refused(format!(
            "{who} holds no array metadata while {} belongs to an array: a new or misspelt member? Write 'missing' in its place to run degraded, 'raidlab rebuild' to make it a replacement, or pass --create to make a new array over these members (their data is lost)",
            other()
        ))),
        Found::Foreign(sb) => Err(refused(format!(
            "{who} is a member of an md array raidlab did not create (UUID {}): --force --create overwrites it",
            md::uuid_text(&sb.set_uuid)
        ))),
        Found::Damaged(e) => Err(refused(format!(
            "{who}: {e}; --create makes a new array over it"
        ))),
    }
}

/// A member's lineage against the first member's (its path and lineage,
/// if one was checked before) and the expression's shape: the same array.
fn check_same_array(
    lin: &Lineage,
    first: Option<(String, &Lineage)>,
    shape: u64,
    who: &str,
) -> Result<(), Error> {
    if let Some((path0, flin)) = first {
        if flin.root_uuid != lin.root_uuid {
            return Err(refused(format!(
                "{who} belongs to array {} but {path0} to array {}: members of different arrays",
                md::uuid_text(&lin.root_uuid),
                md::uuid_text(&flin.root_uuid)
            )));
        }
    }
    if lin.shape != shape {
        return Err(refused(format!(
            "{who} belongs to an array of another shape (levels, chunks, layouts or member counts differ from the expression's): pass --create to make a new array (its data is lost)"
        )));
    }
    Ok(())
}

/// Create or assemble the arrays of `topo` over its open members of
/// `sizes` bytes, as `intent` says.
///
/// Longer than 70 lines: md's assembly in its order (read and check the
/// superblocks, take the newest event count, refuse or rebuild stale
/// members, place replacements, check recorded sizes, gather the bitmap),
/// each step needing the last one's state.
pub fn assemble(
    topo: &RealTopology,
    files: &[File],
    sizes: &[u64],
    intent: Intent,
) -> Result<Assembly, Error> {
    let create = intent == Intent::Create;
    let leaves = leaves(&topo.root);
    let shape = topo.shape;
    let mut offsets = vec![0; topo.members.len()];
    if leaves.is_empty() {
        return Ok(Assembly {
            leaves,
            offsets,
            root_uuid: [0; 16],
            shape,
            ctime: 0,
            events: 0,
            created: false,
            dirty: false,
            rebuild: Vec::new(),
            bitmap: None,
            recorded: Vec::new(),
            resume: Vec::new(),
        });
    }
    let path_of = |m: usize| topo.members[m].path.display().to_string();
    let mut found = Vec::new();
    for l in &leaves {
        let b = read_block(&files[l.member]).map_err(|e| Error::io(path_of(l.member), e))?;
        found.push(classify(&b));
    }
    if create || found.iter().all(|f| matches!(f, Found::Blank)) {
        return create_arrays(topo, leaves, sizes, offsets);
    }
    let Checked {
        ours,
        mut rebuild,
        spare_roots,
        resume,
    } = check_found(topo, &leaves, &found, intent, &mut offsets)?;
    let events = ours.iter().map(|o| o.1.events).max().unwrap_or(0);
    for (l, sb, _) in &ours {
        if sb.events >= events {
            continue;
        }
        if matches!(intent, Intent::Rebuild { .. }) {
            rebuild.push(l.member);
            continue;
        }
        return Err(refused(format!(
            "{} is stale: its metadata was last updated at event {}, the array's at {}; it missed writes while it was missing. Write 'missing' in its place, or 'raidlab rebuild' it",
            path_of(l.member),
            sb.events,
            events
        )));
    }
    rebuild.sort_unstable();
    replacement_offsets(&leaves, &rebuild, sizes, &mut offsets, &path_of)?;
    let current: Vec<&(&Leaf, &Superblock, &Lineage)> = ours
        .iter()
        .filter(|(l, _, _)| !rebuild.contains(&l.member))
        .collect();
    let Some((_, fsb, flin)) = current.first() else {
        return Err(refused(
            "no member holds the array's current metadata: nothing to assemble or rebuild from"
                .to_string(),
        ));
    };
    if let Some((m, _)) = spare_roots.iter().find(|(_, r)| *r != flin.root_uuid) {
        return Err(refused(format!(
            "{}: a spare or replacement of another array",
            path_of(*m)
        )));
    }
    let recorded = recorded_sizes(&current, sizes, &offsets, &path_of)?;
    let bitmap = if fsb.bitmap && bitmap_eligible(&topo.root) {
        let volume = volume_bitmap(&topo.root);
        Some(found_bitmap(&current, files, sizes, &offsets, volume)?)
    } else {
        None
    };
    Ok(Assembly {
        recorded,
        resume,
        root_uuid: flin.root_uuid,
        ctime: fsb.ctime,
        dirty: current.iter().any(|(_, s, _)| !s.clean()),
        leaves,
        offsets,
        shape,
        events,
        created: false,
        rebuild,
        bitmap,
    })
}

/// The bitmap the current members hold: their bits ORed (a crash may have
/// left one member's copy behind another's).
fn found_bitmap(
    current: &[&(&Leaf, &Superblock, &Lineage)],
    files: &[File],
    sizes: &[u64],
    offsets: &[u64],
    volume: VolumeBitmap,
) -> Result<BitmapInfo, Error> {
    let mut info: Option<BitmapInfo> = None;
    for (l, _, _) in current {
        let m = l.member;
        let data = bitmap_covers(volume, sizes[m] - offsets[m]);
        let room = offsets[m].saturating_sub(md::SUPER_OFFSET + md::BITMAP_OFFSET);
        let bm = read_bitmap(&files[m], bitmap_chunk(data, room).min(md::BITMAP_CHUNK), data)
            .map_err(|e| Error::io("reading a bitmap", e))?
            .ok_or_else(|| refused("an array member's superblock names a bitmap that is not there (--create makes a new array)".to_string()))?;
        match &mut info {
            None => {
                info = Some(BitmapInfo {
                    chunk: bm.chunk,
                    volume,
                    dirty: bm.bits,
                })
            }
            Some(i) => {
                for (a, b) in i.dirty.iter_mut().zip(&bm.bits) {
                    *a |= b;
                }
            }
        }
    }
    info.ok_or_else(|| refused("no current member holds the bitmap".to_string()))
}

/// The data each current member's superblock records its array using of
/// it, checked against the member's size: as md refuses a device smaller
/// than its recorded size, a member that shrank (truncated, or another
/// device under its name) is refused, never taken as a smaller array.
fn recorded_sizes(
    current: &[&(&Leaf, &Superblock, &Lineage)],
    sizes: &[u64],
    offsets: &[u64],
    path_of: &dyn Fn(usize) -> String,
) -> Result<Vec<u64>, Error> {
    let mut recorded = vec![0; sizes.len()];
    for (l, sb, _) in current {
        let m = l.member;
        let need = sb.size * 512;
        let have = sizes[m].saturating_sub(offsets[m]);
        if have < need {
            return Err(Error::new(
                ErrorKind::Size,
                format!(
                    "{} holds {} bytes, but its array records {} bytes of data on it from offset {} ({} bytes in all): the member shrank or is another device; restore its size, or write 'missing' in its place and rebuild onto a replacement",
                    path_of(m),
                    sizes[m],
                    need,
                    offsets[m],
                    offsets[m] + need
                ),
            ));
        }
        recorded[m] = need;
    }
    Ok(recorded)
}

/// Give each replacement member the data offset of its array's current
/// members, and check that it is large enough.
fn replacement_offsets(
    leaves: &[Leaf],
    rebuild: &[usize],
    sizes: &[u64],
    offsets: &mut [u64],
    path_of: &dyn Fn(usize) -> String,
) -> Result<(), Error> {
    for &m in rebuild {
        let l = leaves.iter().find(|l| l.member == m).expect("a leaf");
        let parent = &l.path[..l.path.len() - 1];
        let sibling = leaves
            .iter()
            .find(|o| !rebuild.contains(&o.member) && &o.path[..o.path.len() - 1] == parent);
        let Some(sib) = sibling else {
            return Err(refused(format!(
                "{}: every member of its array is blank or stale: nothing to rebuild it from",
                path_of(m)
            )));
        };
        offsets[m] = offsets[sib.member];
        if sizes[m] < sizes[sib.member] {
            return Err(Error::new(
                ErrorKind::Size,
                format!(
                    "{} holds {} bytes, less than the {} bytes of the member it replaces",
                    path_of(m),
                    sizes[m],
                    sizes[sib.member]
                ),
            ));
        }
    }
    Ok(())
}

/// Check that the superblock on the leaf says what the expression does
/// about its array and slot.
fn check_slot(l: &Leaf, sb: &Superblock, lin: &Lineage, who: &str) -> Result<(), Error> {
    let want_level = md::md_level(l.level);
    if sb.level != want_level {
        return Err(refused(format!(
            "{who} is a member of a {} array, the expression makes it {}: pass --create to make a new array (its data is lost)",
            md::level_word(sb.level),
            md::level_word(want_level)
        )));
    }
    if sb.layout != l.layout {
        return Err(refused(format!(
            "{who} was written with layout={}, the expression says layout={}: pass --create to make a new array (its data is lost)",
            md::layout_word(sb.level, sb.layout),
            md::layout_word(want_level, l.layout)
        )));
    }
    if sb.chunk_sectors as u64 * 512 != l.chunk {
        return Err(refused(format!(
            "{who} was written with stripe={}k, the expression says stripe={}k: pass --create to make a new array (its data is lost)",
            sb.chunk_sectors / 2,
            l.chunk / 1024
        )));
    }
    if sb.raid_disks as usize != l.slots {
        return Err(refused(format!(
            "{who} belongs to an array of {} members, the expression's has {}",
            sb.raid_disks, l.slots
        )));
    }
    if lin.path != l.path {
        return Err(refused(format!(
            "{who} is member {} of its array, the expression puts it at {}: members reordered? Give them in their order",
            path_text(&lin.path),
            path_text(&l.path)
        )));
    }
    Ok(())
}

/// The md name of the array at `path`: `raidlab` for the root, then the
/// slot path (`raidlab:1.0`).
fn array_name(path: &[u16]) -> String {
    let mut n = String::from("raidlab");
    if !path.is_empty() {
        n.push(':');
        n.push_str(&path_text(path));
    }
    n.chars().take(32).collect()
}

impl Assembly {
    /// The bitmap of this array with no bits set, as written at event
    /// `events`, in an aligned buffer.
    pub fn cleared_bitmap(&self, info: &BitmapInfo, used: u64, events: u64) -> ABuf {
        let (chunk, sync_size) = (info.chunk, bitmap_covers(info.volume, used) / 512);
        let bits = md::Bitmap::nbits(sync_size, chunk).div_ceil(8) as usize;
        let bm = md::Bitmap {
            uuid: self.root_uuid,
            events,
            events_cleared: events,
            sync_size,
            chunk,
            bits: vec![0; bits],
        };
        let bytes = bm.encode();
        let mut b = ABuf::zeroed(bytes.len());
        b.copy_from_slice(&bytes);
        b
    }
}

/// A slot path as `1` or `0.1`: root first, each number a slot counted
/// from 0, as md numbers a member's role (`active device 0`).
pub fn path_text(p: &[u16]) -> String {
    p.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

impl Assembly {
    /// The same members without metadata: bare, read from their first
    /// byte, nothing written.
    pub fn bare(self) -> Assembly {
        Assembly {
            leaves: Vec::new(),
            offsets: vec![0; self.offsets.len()],
            created: false,
            dirty: false,
            rebuild: Vec::new(),
            bitmap: None,
            ..self
        }
    }

    /// Whether there is metadata to keep (the root is an array).
    pub fn has_metadata(&self) -> bool {
        !self.leaves.is_empty()
    }

    /// Write every leaf's superblock with event count `events`, clean or
    /// active, then make it durable. `used` gives, per member, the bytes
    /// its array uses of it; `sizes` the device sizes; `failed` the members
    /// failed during the run (their superblocks are left as they were).
    pub fn write(
        &self,
        files: &[File],
        sizes: &[u64],
        used: &[u64],
        events: u64,
        clean: bool,
        failed: &[bool],
    ) -> std::io::Result<()> {
        let live = |l: &&Leaf| failed.get(l.member) != Some(&true);
        for l in self.leaves.iter().filter(live) {
            let sb = self.superblock(l, sizes, used, events, clean, failed);
            self.store(files, l, &sb, used)?;
        }
        for l in self.leaves.iter().filter(live) {
            files[l.member].sync_data()?;
        }
        Ok(())
    }

    /// Record on the replacement `member`, as md does during a recovery,
    /// that its first `recovered` bytes of data are rebuilt (the data
    /// itself made durable first), so that a rebuild stopped by a crash
    /// resumes there.
    pub fn write_recovery(
        &self,
        files: &[File],
        sizes: &[u64],
        used: &[u64],
        member: usize,
        recovered: u64,
    ) -> std::io::Result<()> {
        let l = self
            .leaves
            .iter()
            .find(|l| l.member == member)
            .expect("a replacement is a leaf");
        files[member].sync_data()?;
        let mut sb = self.superblock(l, sizes, used, self.events, true, &[]);
        sb.recovery_offset = Some(recovered / 512);
        self.store(files, l, &sb, used)?;
        files[member].sync_data()
    }

    /// The superblock of leaf `l` (see [`Assembly::write`]).
    fn superblock(
        &self,
        l: &Leaf,
        sizes: &[u64],
        used: &[u64],
        events: u64,
        clean: bool,
        failed: &[bool],
    ) -> Superblock {
        // A member that failed during the run keeps its old superblock (so
        // it is stale from now on) and its slot is marked faulty.
        let failed_slot = |path: &[u16]| {
            self.leaves
                .iter()
                .any(|o| o.path == path && failed.get(o.member) == Some(&true))
        };
        let array_path = &l.path[..l.path.len() - 1];
        let slot = *l.path.last().expect("a leaf has a slot");
        let roles = (0..l.devices)
            .map(|i| {
                let mut p = array_path.to_vec();
                p.push(i as u16);
                if i >= l.slots {
                    md::ROLE_SPARE
                } else if l.missing[i] || failed_slot(&p) {
                    ROLE_FAULTY
                } else {
                    i as u16
                }
            })
            .collect();
        let off = self.offsets[l.member];
        Superblock {
            set_uuid: derived_uuid(&self.root_uuid, array_path, b'a'),
            name: array_name(array_path),
            ctime: self.ctime,
            level: md::md_level(l.level),
            layout: l.layout,
            size: self.used_by(l, used) / 512,
            chunk_sectors: (l.chunk / 512) as u32,
            raid_disks: l.slots as u32,
            data_offset: off / 512,
            data_size: (sizes[l.member] - off) / 512,
            dev_number: slot as u32,
            device_uuid: derived_uuid(&self.root_uuid, &l.path, b'd'),
            utime: now_secs(),
            events,
            resync_offset: if clean { md::IN_SYNC } else { 0 },
            roles,
            bitmap: self.bitmap.is_some(),
            recovery_offset: None,
        }
    }

    /// The bytes leaf `l`'s array uses of it: a spare is not in the volume,
    /// so it takes what its array's members use.
    fn used_by(&self, l: &Leaf, used: &[u64]) -> u64 {
        let array_path = &l.path[..l.path.len() - 1];
        if !l.spare {
            return used[l.member];
        }
        self.leaves
            .iter()
            .find(|o| !o.spare && o.path[..o.path.len() - 1] == *array_path)
            .map_or(used[l.member], |o| used[o.member])
    }

    /// Write superblock `sb`, with raidlab's lineage record (and a cleared
    /// bitmap), to leaf `l`.
    fn store(
        &self,
        files: &[File],
        l: &Leaf,
        sb: &Superblock,
        used: &[u64],
    ) -> std::io::Result<()> {
        let mut block = ABuf::zeroed(md::BLOCK);
        block.copy_from_slice(&sb.encode());
        Lineage {
            root_uuid: self.root_uuid,
            shape: self.shape,
            path: l.path.clone(),
        }
        .store(&mut block);
        files[l.member].write_all_at(&block, md::SUPER_OFFSET)?;
        if let Some(bm) = &self.bitmap {
            // Every write run starts from a clean bitmap: an unclean stop
            // was resynchronised before.
            let cleared = self.cleared_bitmap(bm, self.used_by(l, used), sb.events);
            files[l.member].write_all_at(&cleared, md::SUPER_OFFSET + md::BITMAP_OFFSET)?;
        }
        Ok(())
    }
}

/// What `raidlab examine` reports of one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examined {
    /// The md superblock.
    pub superblock: Superblock,
    /// raidlab's record beside it, when there.
    pub lineage: Option<Lineage>,
    /// The write-intent bitmap, when the superblock names one.
    pub bitmap: Option<md::Bitmap>,
}

/// Read the md metadata of the file or device at `path` (read only):
/// `None` when it carries no md superblock.
pub fn examine(path: &std::path::Path) -> Result<Option<Examined>, Error> {
    let io = |e: std::io::Error| Error::io(path.display(), e);
    let f = File::open(path).map_err(io)?;
    let block = read_block(&f).map_err(io)?;
    let superblock = match Superblock::decode(&block) {
        Ok(Some(sb)) => sb,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(Error::new(
                ErrorKind::Refused,
                format!("{}: {e}", path.display()),
            ))
        }
    };
    let bitmap = if superblock.bitmap {
        // The bitmap area: mdadm caps it at 128 KiB beside the header.
        let mut b = ABuf::zeroed(md::BITMAP_HEADER + (128 << 10));
        let mut got = 0;
        while got < b.len() {
            match f.read_at(
                &mut b[got..],
                md::SUPER_OFFSET + md::BITMAP_OFFSET + got as u64,
            ) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(io(e)),
            }
        }
        md::Bitmap::decode(&b)
    } else {
        None
    };
    Ok(Some(Examined {
        lineage: Lineage::load(&block),
        superblock,
        bitmap,
    }))
}
