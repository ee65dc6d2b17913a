//! md's version-1.2 superblock, as the kernel's `include/uapi/linux/raid/md_p.h`
//! (`struct mdp_superblock_1`) and mdadm's `super1.c` lay it out, and the
//! record raidlab keeps beside it.
//!
//! Every leaf member of a raidlab array carries the superblock of the array
//! it belongs to, 4 KiB from its start (md 1.2's place), so `mdadm
//! --examine` reads it; the data starts at the superblock's `data_offset`,
//! chosen by mdadm's own rule. Nested arrays (an array whose members are
//! arrays) are described to md by their innermost level only; the
//! [`Lineage`] record, in the last sector of the superblock's 4 KiB block
//! (which neither md nor mdadm writes: they write the superblock rounded up
//! to a sector, at most 256 + 2 × 384 bytes), ties each leaf to the whole
//! expression: the root array, the path from it, and the shape of the tree.

use raidlab_layout::{ArrayLayout, Level};

/// `MD_SB_MAGIC`, little endian.
pub const MAGIC: u32 = 0xa92b_4efc;
/// Byte offset of a 1.2 superblock: 8 sectors from the start.
pub const SUPER_OFFSET: u64 = 4096;
/// The superblock's block: md 1.x reserves 4 KiB (`MAX_SB_SIZE` in mdadm).
pub const BLOCK: usize = 4096;
/// `MD_DISK_ROLE_FAULTY`: a slot whose device failed or is missing.
pub const ROLE_FAULTY: u16 = 0xfffe;
/// `MD_DISK_ROLE_SPARE`: a hot spare.
pub const ROLE_SPARE: u16 = 0xffff;
/// md's `MaxSector`: `resync_offset` of an array known to be in sync.
pub const IN_SYNC: u64 = u64::MAX;
/// Fixed part of the superblock (`sizeof(struct mdp_superblock_1)`).
const FIXED: usize = 256;
/// Most slots one superblock describes (`dev_roles` of 2 bytes up to the
/// lineage sector).
pub const MAX_SLOTS: usize = (LINEAGE_AT - FIXED) / 2;
/// Where the lineage record sits in the block: its last sector.
const LINEAGE_AT: usize = BLOCK - 512;
/// The lineage record's magic.
const LINEAGE_MAGIC: &[u8; 8] = b"RAIDLAB1";
/// Deepest path a lineage record holds (the grammar's nesting bound).
pub const MAX_DEPTH: usize = 64;
/// `MD_FEATURE_BITMAP_OFFSET`: `bitmap_offset` is meaningful.
const FEATURE_BITMAP: u32 = 1;
/// `MD_FEATURE_RECOVERY_OFFSET`: the device is being recovered and
/// `recovery_offset` says how far.
const FEATURE_RECOVERY: u32 = 2;
/// The internal bitmap's place, from the superblock: right after its 4 KiB
/// block, as mdadm puts a 1.2 array's (`add_internal_bitmap1`).
pub const BITMAP_OFFSET: u64 = 4096;
/// `BITMAP_MAGIC` ("bitm"), little endian.
pub const BITMAP_MAGIC: u32 = 0x6d74_6962;
/// `BITMAP_MAJOR_HI`: the bitmap version the kernel writes.
const BITMAP_VERSION: u32 = 4;
/// `sizeof(bitmap_super_t)`: the bits follow it.
pub const BITMAP_HEADER: usize = 256;
/// mdadm's default internal bitmap chunk: "for practical purpose, 64Meg is
/// a good default chunk size" (`add_internal_bitmap1`).
pub const BITMAP_CHUNK: u64 = 64 << 20;
/// md's bitmap daemon period, seconds (`DEFAULT_BITMAP_DELAY`).
const BITMAP_DELAY: u32 = 5;

/// md's write-intent bitmap header (`bitmap_super_t`, md-bitmap.h) and its
/// bits: bit k set means chunk k of every member (`chunk` bytes from the
/// data offset) may hold writes its copies or parity have not caught up
/// with, so only those chunks need resynchronising after a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitmap {
    /// The array's UUID.
    pub uuid: [u8; 16],
    /// Events when it was last written.
    pub events: u64,
    /// Events when its bits were last cleared.
    pub events_cleared: u64,
    /// Sectors of each member the bitmap covers.
    pub sync_size: u64,
    /// Bytes of each member per bit.
    pub chunk: u64,
    /// The bits, `set_bit_le` order (bit k: byte k / 8, bit k % 8).
    pub bits: Vec<u8>,
}

impl Bitmap {
    /// Bits for `sync_size` sectors at `chunk` bytes a bit (mdadm: size /
    /// chunk + 1).
    pub fn nbits(sync_size: u64, chunk: u64) -> u64 {
        sync_size * 512 / chunk + 1
    }

    /// The header and bits, padded to whole 4 KiB blocks.
    pub fn encode(&self) -> Vec<u8> {
        let len = (BITMAP_HEADER + self.bits.len()).next_multiple_of(4096);
        let mut b = vec![0u8; len];
        put32(&mut b, 0, BITMAP_MAGIC);
        put32(&mut b, 4, BITMAP_VERSION);
        b[8..24].copy_from_slice(&self.uuid);
        put64(&mut b, 24, self.events);
        put64(&mut b, 32, self.events_cleared);
        put64(&mut b, 40, self.sync_size);
        put32(&mut b, 52, self.chunk as u32);
        put32(&mut b, 56, BITMAP_DELAY);
        put32(&mut b, 64, (len / 512) as u32);
        b[BITMAP_HEADER..BITMAP_HEADER + self.bits.len()].copy_from_slice(&self.bits);
        b
    }

    /// Read a bitmap area; `None` without the magic or with sizes that do
    /// not fit `b`.
    pub fn decode(b: &[u8]) -> Option<Bitmap> {
        if b.len() < BITMAP_HEADER || le32(b, 0) != BITMAP_MAGIC || le32(b, 4) != BITMAP_VERSION {
            return None;
        }
        let (sync_size, chunk) = (le64(b, 40), le32(b, 52) as u64);
        if chunk < 512 || !chunk.is_power_of_two() {
            return None;
        }
        let nbytes = Self::nbits(sync_size, chunk).div_ceil(8) as usize;
        let bits = b.get(BITMAP_HEADER..BITMAP_HEADER + nbytes)?.to_vec();
        Some(Bitmap {
            uuid: b[8..24].try_into().expect("16 bytes"),
            events: le64(b, 24),
            events_cleared: le64(b, 32),
            sync_size,
            chunk,
            bits,
        })
    }

    /// Whether bit `k` is set.
    pub fn get(&self, k: u64) -> bool {
        self.bits
            .get((k / 8) as usize)
            .is_some_and(|b| b & (1 << (k % 8)) != 0)
    }

    /// Set bit `k`; returns whether it was clear.
    pub fn set(&mut self, k: u64) -> bool {
        let b = &mut self.bits[(k / 8) as usize];
        let was = *b & (1 << (k % 8)) == 0;
        *b |= 1 << (k % 8);
        was
    }
}

/// md's `level` field: `LEVEL_LINEAR` is -1.
pub fn md_level(level: Level) -> i32 {
    match level {
        Level::Concat => -1,
        Level::Raid0 => 0,
        Level::Raid1 => 1,
        Level::Raid4 => 4,
        Level::Raid5 => 5,
        Level::Raid6 => 6,
        Level::Raid10 => 10,
    }
}

/// md's `layout` field: RAID 5/6 algorithms as `ALGORITHM_*` in the
/// kernel's raid5.h (left-asymmetric 0, right-asymmetric 1,
/// left-symmetric 2, right-symmetric 3); RAID 10 as `raid10.c` decodes it,
/// `(offset << 16) | (far << 8) | near`: `n2` 0x102, `f2` 0x201, `o2`
/// 0x10201; other levels 0 (RAID 4 too, as mdadm writes it: md's level 4
/// has one layout, parity on the last member).
pub fn md_layout(level: Level, layout: ArrayLayout) -> u32 {
    match (level, layout) {
        (Level::Raid5 | Level::Raid6, ArrayLayout::LeftAsymmetric) => 0,
        (Level::Raid5 | Level::Raid6, ArrayLayout::RightAsymmetric) => 1,
        (Level::Raid5 | Level::Raid6, ArrayLayout::LeftSymmetric) => 2,
        (Level::Raid5 | Level::Raid6, ArrayLayout::RightSymmetric) => 3,
        (Level::Raid10, ArrayLayout::Far2) => 0x201,
        (Level::Raid10, ArrayLayout::Offset2) => 0x10201,
        (Level::Raid10, _) => 0x102,
        _ => 0,
    }
}

/// The words for an md layout value, for messages.
pub fn layout_word(level: i32, layout: u32) -> String {
    match (level, layout) {
        (5 | 6, 0) => "left-asymmetric".into(),
        (5 | 6, 1) => "right-asymmetric".into(),
        (5 | 6, 2) => "left-symmetric".into(),
        (5 | 6, 3) => "right-symmetric".into(),
        (10, 0x102) => "n2".into(),
        (10, 0x201) => "f2".into(),
        (10, 0x10201) => "o2".into(),
        _ => format!("{layout:#x}"),
    }
}

/// The words for an md level value, for messages.
pub fn level_word(level: i32) -> String {
    match level {
        -1 => "concat (linear)".into(),
        0 | 1 | 4 | 5 | 6 | 10 => format!("raid{level}"),
        l => format!("level {l}"),
    }
}

/// mdadm's space for an internal bitmap in sectors (`choose_bm_space` in
/// super1.c): none under 64 KiB, 4 KiB up to 8 GiB, 64 KiB up to 200 GiB,
/// 128 KiB above.
fn bitmap_space(dev_sectors: u64) -> u64 {
    if dev_sectors < 64 * 2 {
        0
    } else if dev_sectors - 64 * 2 >= 200 * 1024 * 1024 * 2 {
        128 * 2
    } else if dev_sectors - 4 * 2 > 8 * 1024 * 1024 * 2 {
        64 * 2
    } else {
        4 * 2
    }
}

/// mdadm's default data offset for a 1.2 member of `dev_bytes` in an array
/// of `chunk` bytes (0 when the level has none), in bytes
/// (`validate_geometry1` in super1.c): 12 KiB of metadata, the bitmap space
/// and a reshape headroom of 128 MiB halved while it exceeds 0.1 % of the
/// device and stays at least four chunks, rounded up to 1 MiB.
pub fn data_offset(dev_bytes: u64, chunk: u64) -> u64 {
    let dev = dev_bytes / 512;
    let chunk_kib = chunk / 1024;
    let mut headroom: u64 = 128 * 1024 * 2;
    while (headroom << 10) > dev && (chunk_kib == 0 || headroom / 2 >= chunk_kib * 2 * 2) {
        headroom >>= 1;
    }
    let sectors = (12 * 2 + bitmap_space(dev) + headroom).next_multiple_of(2048);
    sectors * 512
}

/// The smallest device whose data area, after [`data_offset`], holds
/// `data` bytes.
pub fn device_for_data(data: u64, chunk: u64) -> u64 {
    let mut dev = data;
    loop {
        let need = data + data_offset(dev, chunk);
        if need <= dev {
            return dev;
        }
        dev = need;
    }
}

/// A version-1.2 superblock: the fields raidlab sets and reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    /// The array's UUID.
    pub set_uuid: [u8; 16],
    /// The array's name (at most 32 bytes).
    pub name: String,
    /// Creation time, seconds since the epoch.
    pub ctime: u64,
    /// md level (`md_level`).
    pub level: i32,
    /// md layout (`md_layout`).
    pub layout: u32,
    /// Sectors of each member the array uses.
    pub size: u64,
    /// Chunk in sectors (0 for levels without one).
    pub chunk_sectors: u32,
    /// Slots in the array.
    pub raid_disks: u32,
    /// Sectors from the device start to its data.
    pub data_offset: u64,
    /// Sectors of data area on this device.
    pub data_size: u64,
    /// This device's number (its slot, as raidlab creates arrays).
    pub dev_number: u32,
    /// This device's UUID.
    pub device_uuid: [u8; 16],
    /// Last update, seconds since the epoch.
    pub utime: u64,
    /// Event count: raised by every update, so a member that missed one is
    /// stale.
    pub events: u64,
    /// Data before this sector is known in sync; [`IN_SYNC`] when clean, 0
    /// while the array is written (md's "active").
    pub resync_offset: u64,
    /// Role of each device number: its slot, or [`ROLE_FAULTY`].
    pub roles: Vec<u16>,
    /// An internal write-intent bitmap follows the superblock
    /// ([`BITMAP_OFFSET`]; `MD_FEATURE_BITMAP_OFFSET`).
    pub bitmap: bool,
    /// While this device is being rebuilt: the sectors from its data
    /// offset already recovered (`recovery_offset` with
    /// `MD_FEATURE_RECOVERY_OFFSET`, as md records a recovery's progress).
    pub recovery_offset: Option<u64>,
}

/// Why a superblock block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SbError {
    /// The magic is there but the checksum is wrong.
    #[error("its md superblock's checksum is wrong (stored {stored:#x}, computed {computed:#x})")]
    Checksum {
        /// On disk.
        stored: u32,
        /// Computed.
        computed: u32,
    },
    /// A version or field raidlab does not handle.
    #[error("its md superblock is {0}, which raidlab does not assemble")]
    Unsupported(String),
}

fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// md's superblock checksum (`calc_sb_1_csum`): the sum of the
/// little-endian 32-bit words of the fixed part and `max_dev` roles, with
/// the checksum field taken as 0, folded to 32 bits.
pub fn checksum(block: &[u8]) -> u32 {
    let max_dev = (le32(block, 220) as usize).min(MAX_SLOTS);
    let size = FIXED + 2 * max_dev;
    let mut sum: u64 = 0;
    let mut o = 0;
    while o + 4 <= size {
        if o != 216 {
            sum += le32(block, o) as u64;
        }
        o += 4;
    }
    if size - o == 2 {
        sum += u16::from_le_bytes([block[o], block[o + 1]]) as u64;
    }
    ((sum & 0xffff_ffff) + (sum >> 32)) as u32
}

impl Superblock {
    /// The superblock in its 4 KiB block (the lineage sector left zero).
    pub fn encode(&self) -> Vec<u8> {
        assert!(self.roles.len() <= MAX_SLOTS, "too many slots");
        assert!(self.name.len() <= 32, "md names are 32 bytes at most");
        let mut b = vec![0u8; BLOCK];
        put32(&mut b, 0, MAGIC);
        put32(&mut b, 4, 1); // major_version
        if self.bitmap {
            put32(&mut b, 8, FEATURE_BITMAP);
            put32(&mut b, 96, (BITMAP_OFFSET / 512) as u32);
        }
        if let Some(r) = self.recovery_offset {
            let feature = le32(&b, 8) | FEATURE_RECOVERY;
            put32(&mut b, 8, feature);
            put64(&mut b, 152, r);
        }
        b[16..32].copy_from_slice(&self.set_uuid);
        b[32..32 + self.name.len()].copy_from_slice(self.name.as_bytes());
        put64(&mut b, 64, self.ctime);
        put32(&mut b, 72, self.level as u32);
        put32(&mut b, 76, self.layout);
        put64(&mut b, 80, self.size);
        put32(&mut b, 88, self.chunk_sectors);
        put32(&mut b, 92, self.raid_disks);
        put64(&mut b, 128, self.data_offset);
        put64(&mut b, 136, self.data_size);
        put64(&mut b, 144, SUPER_OFFSET / 512);
        put32(&mut b, 160, self.dev_number);
        b[168..184].copy_from_slice(&self.device_uuid);
        put64(&mut b, 192, self.utime);
        put64(&mut b, 200, self.events);
        put64(&mut b, 208, self.resync_offset);
        put32(&mut b, 220, self.roles.len() as u32);
        for (i, r) in self.roles.iter().enumerate() {
            b[FIXED + 2 * i..FIXED + 2 * i + 2].copy_from_slice(&r.to_le_bytes());
        }
        let c = checksum(&b);
        put32(&mut b, 216, c);
        b
    }

    /// Read a superblock block: `None` when it holds no md magic.
    pub fn decode(b: &[u8]) -> Result<Option<Superblock>, SbError> {
        if b.len() < BLOCK || le32(b, 0) != MAGIC {
            return Ok(None);
        }
        if le32(b, 4) != 1 {
            return Err(SbError::Unsupported(format!("version {}", le32(b, 4))));
        }
        let (stored, computed) = (le32(b, 216), checksum(b));
        if stored != computed {
            return Err(SbError::Checksum { stored, computed });
        }
        if le64(b, 144) != SUPER_OFFSET / 512 {
            return Err(SbError::Unsupported(format!(
                "at sector {} rather than 8 (not version 1.2)",
                le64(b, 144)
            )));
        }
        let feature = le32(b, 8);
        if feature & !(FEATURE_BITMAP | FEATURE_RECOVERY) != 0 {
            return Err(SbError::Unsupported(format!("using features {feature:#x}")));
        }
        let bitmap = feature & FEATURE_BITMAP != 0;
        if bitmap && le32(b, 96) as u64 != BITMAP_OFFSET / 512 {
            return Err(SbError::Unsupported(format!(
                "a bitmap {} sectors from it",
                le32(b, 96) as i32
            )));
        }
        let max_dev = le32(b, 220) as usize;
        if max_dev > MAX_SLOTS {
            return Err(SbError::Unsupported(format!("{max_dev} device slots")));
        }
        let name_end = b[32..64].iter().position(|&c| c == 0).unwrap_or(32);
        Ok(Some(Superblock {
            set_uuid: b[16..32].try_into().expect("16 bytes"),
            name: String::from_utf8_lossy(&b[32..32 + name_end]).into_owned(),
            ctime: le64(b, 64),
            level: le32(b, 72) as i32,
            layout: le32(b, 76),
            size: le64(b, 80),
            chunk_sectors: le32(b, 88),
            raid_disks: le32(b, 92),
            data_offset: le64(b, 128),
            data_size: le64(b, 136),
            dev_number: le32(b, 160),
            device_uuid: b[168..184].try_into().expect("16 bytes"),
            utime: le64(b, 192),
            events: le64(b, 200),
            resync_offset: le64(b, 208),
            roles: (0..max_dev)
                .map(|i| u16::from_le_bytes([b[FIXED + 2 * i], b[FIXED + 2 * i + 1]]))
                .collect(),
            bitmap,
            recovery_offset: (feature & FEATURE_RECOVERY != 0).then(|| le64(b, 152)),
        }))
    }

    /// Whether the array was stopped cleanly at this member's last update.
    pub fn clean(&self) -> bool {
        self.resync_offset == IN_SYNC
    }

    /// This device's role: its slot in the array, or `None` (faulty, spare).
    pub fn role(&self) -> Option<u16> {
        self.roles
            .get(self.dev_number as usize)
            .copied()
            .filter(|&r| (r as u32) < self.raid_disks)
    }
}

/// raidlab's record of where a leaf sits in the whole expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// UUID of the root array.
    pub root_uuid: [u8; 16],
    /// Hash of the expression's shape (levels, chunks, layouts, member
    /// counts; not the paths).
    pub shape: u64,
    /// Child index at each level from the root down to this leaf.
    pub path: Vec<u16>,
}

/// FNV-1a, 64 bits: the lineage's shape hash and record checksum.
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Lineage {
    /// Write the record into the last sector of a superblock block.
    pub fn store(&self, block: &mut [u8]) {
        assert!(
            self.path.len() <= MAX_DEPTH,
            "path deeper than the grammar allows"
        );
        let r = &mut block[LINEAGE_AT..BLOCK];
        r.fill(0);
        r[0..8].copy_from_slice(LINEAGE_MAGIC);
        r[8..24].copy_from_slice(&self.root_uuid);
        put64(r, 24, self.shape);
        r[32..34].copy_from_slice(&(self.path.len() as u16).to_le_bytes());
        for (i, p) in self.path.iter().enumerate() {
            r[34 + 2 * i..36 + 2 * i].copy_from_slice(&p.to_le_bytes());
        }
        let end = 34 + 2 * MAX_DEPTH;
        let sum = fnv64(&r[..end]);
        put64(r, end, sum);
    }

    /// The record in a superblock block, if one is there and intact.
    pub fn load(block: &[u8]) -> Option<Lineage> {
        let r = block.get(LINEAGE_AT..BLOCK)?;
        let end = 34 + 2 * MAX_DEPTH;
        if &r[0..8] != LINEAGE_MAGIC || le64(r, end) != fnv64(&r[..end]) {
            return None;
        }
        let depth = u16::from_le_bytes([r[32], r[33]]) as usize;
        if depth > MAX_DEPTH {
            return None;
        }
        Some(Lineage {
            root_uuid: r[8..24].try_into().expect("16 bytes"),
            shape: le64(r, 24),
            path: (0..depth)
                .map(|i| u16::from_le_bytes([r[34 + 2 * i], r[35 + 2 * i]]))
                .collect(),
        })
    }
}

/// A UUID as mdadm prints it: four groups of eight hex digits.
pub fn uuid_text(u: &[u8; 16]) -> String {
    u.chunks(4)
        .map(|c| c.iter().map(|b| format!("{b:02x}")).collect::<String>())
        .collect::<Vec<_>>()
        .join(":")
}

/// md's chunk for an array: RAID 1 and linear record none.
pub fn md_chunk(level: Level, chunk: u64) -> u64 {
    match level {
        Level::Raid1 | Level::Concat => 0,
        _ => chunk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Superblock {
        Superblock {
            set_uuid: [7; 16],
            name: "raidlab:0".into(),
            ctime: 1_700_000_000,
            level: 5,
            layout: 2,
            size: 4096,
            chunk_sectors: 1024,
            raid_disks: 3,
            data_offset: 2048,
            data_size: 6144,
            dev_number: 1,
            device_uuid: [9; 16],
            utime: 1_700_000_100,
            events: 42,
            resync_offset: IN_SYNC,
            roles: vec![0, 1, ROLE_FAULTY],
            bitmap: true,
            recovery_offset: None,
        }
    }

    #[test]
    fn superblocks_and_lineage_round_trip() {
        let sb = sample();
        let mut b = sb.encode();
        let l = Lineage {
            root_uuid: [3; 16],
            shape: 0x1234,
            path: vec![1, 0, 2],
        };
        l.store(&mut b);
        assert_eq!(Superblock::decode(&b).unwrap(), Some(sb.clone()));
        assert_eq!(Lineage::load(&b), Some(l));
        assert_eq!(sb.role(), Some(1));
        assert!(sb.clean());
        let recovering = Superblock {
            recovery_offset: Some(8192),
            ..sb.clone()
        };
        assert_eq!(
            Superblock::decode(&recovering.encode()).unwrap(),
            Some(recovering)
        );
    }

    #[test]
    fn a_flipped_byte_fails_the_checksum_and_zeroes_are_blank() {
        let mut b = sample().encode();
        b[100] ^= 1;
        assert!(matches!(
            Superblock::decode(&b),
            Err(SbError::Checksum { .. })
        ));
        assert_eq!(Superblock::decode(&[0u8; BLOCK]).unwrap(), None);
        assert_eq!(Lineage::load(&[0u8; BLOCK]), None);
    }

    #[test]
    fn checksum_is_md_s_word_sum() {
        // md's sum of little-endian words, the checksum field as zero: a
        // block of only the magic and max_dev 0 sums to the magic.
        let mut b = vec![0u8; BLOCK];
        put32(&mut b, 0, MAGIC);
        assert_eq!(checksum(&b), MAGIC);
        // Carries past 32 bits fold back in.
        put32(&mut b, 4, 0xffff_ffff);
        assert_eq!(
            checksum(&b),
            MAGIC.wrapping_add(0xffff_ffff).wrapping_add(1)
        );
    }

    proptest::proptest! {
        /// Whatever a member holds, reading its superblock, lineage and
        /// bitmap never panics, and what decodes re-encodes to itself.
        #[test]
        fn decoding_arbitrary_blocks_never_panics(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), BLOCK),
            magic in proptest::prelude::any::<bool>(),
        ) {
            let mut b = bytes;
            if magic {
                put32(&mut b, 0, MAGIC);
                put32(&mut b, 4, 1);
                let c = checksum(&b);
                put32(&mut b, 216, c);
            }
            if let Ok(Some(sb)) = Superblock::decode(&b) {
                let again = Superblock::decode(&sb.encode()).unwrap().unwrap();
                proptest::prop_assert_eq!(again.events, sb.events);
            }
            let _ = Lineage::load(&b);
            let mut bm = b.clone();
            put32(&mut bm, 0, BITMAP_MAGIC);
            put32(&mut bm, 4, BITMAP_VERSION);
            let _ = Bitmap::decode(&bm);
        }
    }

    #[test]
    fn data_offsets_follow_mdadm() {
        // Small devices: 1 MiB unless four chunks of headroom need more.
        assert_eq!(data_offset(8 << 20, 64 << 10), 1 << 20);
        assert_eq!(data_offset(4 << 20, 512 << 10), 2 << 20);
        // Large devices: 128 MiB of headroom plus the bitmap's 128 KiB,
        // rounded up to a MiB (what mdadm gives a 1 TB disk: 264192 sectors).
        assert_eq!(data_offset(1 << 40, 512 << 10), 264_192 * 512);
        let dev = device_for_data(3 << 20, 512 << 10);
        assert!(dev - data_offset(dev, 512 << 10) >= 3 << 20);
    }
}
