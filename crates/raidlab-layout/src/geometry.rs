use thiserror::Error;

/// Errors building a geometry.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// Too few members for the level.
    #[error("{level} needs at least {min} members, got {got}")]
    TooFewMembers {
        /// Level word.
        level: &'static str,
        /// Minimum.
        min: usize,
        /// Given.
        got: usize,
    },
    /// Chunk not a power of two ≥ 512.
    #[error("stripe unit {0} is not a power of two of at least 512 bytes")]
    BadChunk(u64),
    /// Members too small to hold one chunk.
    #[error("members are smaller than one stripe unit")]
    TooSmall,
    /// A layout of another level (a parity layout on RAID 10, a RAID 10
    /// copy layout on RAID 5/6).
    #[error("layout={layout} does not apply to {level}")]
    WrongLayout {
        /// Level word.
        level: &'static str,
        /// Layout word.
        layout: &'static str,
    },
}

/// RAID level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Striping.
    Raid0,
    /// n-way mirror.
    Raid1,
    /// Single parity on a dedicated member, the last (md's level 4:
    /// `raid5_compute_sector` puts parity on member `data_disks` and data
    /// chunk k on member k).
    Raid4,
    /// Single rotating parity.
    Raid5,
    /// P + Q rotating parity.
    Raid6,
    /// md raid10 with two copies of every chunk, placed as its
    /// [`ArrayLayout`] says (near, far or offset).
    Raid10,
    /// Concatenation.
    Concat,
}

impl Level {
    /// Parse a level word (`raid0`, `raid1`, `raid5`, `raid6`, `raid10`, `concat`).
    pub fn from_word(s: &str) -> Option<Level> {
        Some(match s {
            "raid0" => Level::Raid0,
            "raid1" => Level::Raid1,
            "raid4" => Level::Raid4,
            "raid5" => Level::Raid5,
            "raid6" => Level::Raid6,
            "raid10" => Level::Raid10,
            "concat" => Level::Concat,
            _ => return None,
        })
    }
    /// The level's word.
    pub fn word(self) -> &'static str {
        match self {
            Level::Raid0 => "raid0",
            Level::Raid1 => "raid1",
            Level::Raid4 => "raid4",
            Level::Raid5 => "raid5",
            Level::Raid6 => "raid6",
            Level::Raid10 => "raid10",
            Level::Concat => "concat",
        }
    }
    /// Fewest active members the level accepts.
    pub fn min_members(self) -> usize {
        match self {
            Level::Raid0 | Level::Concat => 1,
            Level::Raid1 | Level::Raid10 => 2,
            Level::Raid4 | Level::Raid5 => 3,
            Level::Raid6 => 4,
        }
    }

    /// Whether a RAID controller's firmware builds an array of this level
    /// from `active` members. Controllers build RAID 10 as a stripe of
    /// two-drive mirrors, so only from an even number of drives, at least
    /// four: "You must use an even number of drives in each RAID 10 virtual
    /// drive in the span" (LSI/Broadcom MegaRAID SAS Software User Guide,
    /// §2.5.8 "RAID 10"); "A RAID 10 array is built from two or more
    /// equal-sized RAID 1 arrays" (Adaptec RAID controller installation and
    /// user's guide, appendix B). md's raid10 takes any number from two.
    pub fn controller_builds(self, active: usize) -> bool {
        self != Level::Raid10 || (active >= 4 && active.is_multiple_of(2))
    }

    /// Parity members per stripe: 1 for RAID 4 and 5, 2 for RAID 6.
    pub fn parity_members(self) -> usize {
        match self {
            Level::Raid4 | Level::Raid5 => 1,
            Level::Raid6 => 2,
            _ => 0,
        }
    }

    /// Whether an array of `n` members at this level, laid out as
    /// `layout`, still serves every byte with the members at `missing`
    /// gone.
    pub fn survives(self, layout: ArrayLayout, n: usize, missing: &[usize]) -> bool {
        match self {
            Level::Raid0 | Level::Concat => missing.is_empty(),
            Level::Raid1 => missing.len() < n,
            Level::Raid4 | Level::Raid5 => missing.len() <= 1,
            Level::Raid6 => missing.len() <= 2,
            // near-2: chunk x lives on members 2x and 2x+1 (mod n). With n
            // even those are fixed pairs; with n odd every two neighbours
            // (m, m+1 mod n) share some chunk.
            // far-2 and offset-2: a member's chunks have their copies on
            // the next member (mod n), so no two neighbours may go.
            Level::Raid10 if layout != ArrayLayout::Near2 => {
                missing.iter().all(|&m| !missing.contains(&((m + 1) % n)))
            }
            Level::Raid10 => missing.iter().all(|&m| {
                let partner = if n.is_multiple_of(2) {
                    m ^ 1
                } else {
                    (m + 1) % n
                };
                !missing.contains(&partner)
            }),
        }
    }
}

/// md's layout of an array (the superblock's one `layout` field): where a
/// RAID 5/6 puts its parity, or where a RAID 10 puts its two copies
/// (`drivers/md/raid10.c`'s geometry: near copies side by side, far
/// copies a half-member away, offset copies one row down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayLayout {
    /// md `left-symmetric` (RAID 5/6 default).
    LeftSymmetric,
    /// md `left-asymmetric`.
    LeftAsymmetric,
    /// md `right-symmetric`.
    RightSymmetric,
    /// md `right-asymmetric`.
    RightAsymmetric,
    /// RAID 10 `n2` (md's default): the two copies of a chunk side by side
    /// on neighbouring members, in the same row.
    Near2,
    /// RAID 10 `f2`: the first half of every member holds the data striped
    /// as RAID 0 over all members; the second half a copy of it, each
    /// chunk on the next member.
    Far2,
    /// RAID 10 `o2`: every row of chunks is followed by a copy of itself,
    /// each chunk on the next member.
    Offset2,
}

impl ArrayLayout {
    /// md's word for the layout (mdadm's `--layout` value).
    pub fn word(self) -> &'static str {
        match self {
            ArrayLayout::LeftSymmetric => "left-symmetric",
            ArrayLayout::LeftAsymmetric => "left-asymmetric",
            ArrayLayout::RightSymmetric => "right-symmetric",
            ArrayLayout::RightAsymmetric => "right-asymmetric",
            ArrayLayout::Near2 => "n2",
            ArrayLayout::Far2 => "f2",
            ArrayLayout::Offset2 => "o2",
        }
    }

    /// Parse md's layout word (or its two-letter short form).
    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "left-symmetric" | "ls" => ArrayLayout::LeftSymmetric,
            "left-asymmetric" | "la" => ArrayLayout::LeftAsymmetric,
            "right-symmetric" | "rs" => ArrayLayout::RightSymmetric,
            "right-asymmetric" | "ra" => ArrayLayout::RightAsymmetric,
            "n2" => ArrayLayout::Near2,
            "f2" => ArrayLayout::Far2,
            "o2" => ArrayLayout::Offset2,
            _ => return None,
        })
    }

    /// Whether the layout places RAID 10 copies (else RAID 5/6 parity).
    pub fn is_mirror(self) -> bool {
        matches!(
            self,
            ArrayLayout::Near2 | ArrayLayout::Far2 | ArrayLayout::Offset2
        )
    }

    /// The layout an array of `level` has when none is given: md's
    /// defaults, left-symmetric parity and near copies.
    pub fn default_for(level: Level) -> Self {
        if level == Level::Raid10 {
            ArrayLayout::Near2
        } else {
            ArrayLayout::LeftSymmetric
        }
    }

    /// Whether an array of `level` can take this layout (levels without
    /// layouts take any and ignore it).
    pub fn fits(self, level: Level) -> bool {
        match level {
            Level::Raid5 | Level::Raid6 => !self.is_mirror(),
            Level::Raid10 => self.is_mirror(),
            _ => true,
        }
    }
}

/// A contiguous range on one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Extent {
    /// Member index.
    pub member: u32,
    /// Byte offset on the member.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// A piece of a volume extent that lies in one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Volume offset of the piece.
    pub vol_off: u64,
    /// Bytes.
    pub len: u64,
    /// Member of the primary copy.
    pub member: u32,
    /// Offset on that member.
    pub member_off: u64,
}

/// How a parity stripe is updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Every data chunk is rewritten: parity from the new data, no reads.
    FullStripe,
    /// Read old data and old parity of the rows written.
    ReadModifyWrite,
    /// Read the data not written, compute parity from the whole rows.
    ReconstructWrite,
}

/// One stripe's part of a write to a parity array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeOp {
    /// Stripe number.
    pub stripe: u64,
    /// Chosen method.
    pub kind: WriteKind,
    /// Pre-reads (phase 1).
    pub reads: Vec<Extent>,
    /// Data and parity writes (phase 2).
    pub writes: Vec<Extent>,
    /// Bytes that go through the parity computation.
    pub parity_bytes: u64,
}

/// Geometry of one array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    level: Level,
    n: usize,
    chunk: u64,
    /// log2 of `chunk` (a power of two), so locating a byte shifts
    /// instead of dividing.
    chunk_shift: u32,
    layout: ArrayLayout,
    member_size: u64,
    sizes: Vec<u64>,
}

impl Geometry {
    /// Geometry of `level` over members of the given sizes (bytes).
    pub fn new(
        level: Level,
        chunk: u64,
        layout: ArrayLayout,
        member_sizes: &[u64],
    ) -> Result<Self, LayoutError> {
        let n = member_sizes.len();
        let (word, min) = (level.word(), level.min_members());
        if n < min {
            return Err(LayoutError::TooFewMembers {
                level: word,
                min,
                got: n,
            });
        }
        if chunk < 512 || !chunk.is_power_of_two() {
            return Err(LayoutError::BadChunk(chunk));
        }
        if !layout.fits(level) {
            return Err(LayoutError::WrongLayout {
                level: word,
                layout: layout.word(),
            });
        }
        let min_size = *member_sizes.iter().min().unwrap_or(&0);
        let member_size = match (level, layout) {
            (Level::Raid1, _) => min_size & !511,
            (Level::Concat, _) => 0,
            // Far and offset copies take whole pairs of chunk rows (md's
            // calc_sectors: dev_sectors = 2 * (chunks / 2) chunks).
            (Level::Raid10, ArrayLayout::Far2 | ArrayLayout::Offset2) => {
                min_size / (2 * chunk) * 2 * chunk
            }
            _ => min_size / chunk * chunk,
        };
        if level != Level::Concat && member_size == 0 {
            return Err(LayoutError::TooSmall);
        }
        Ok(Geometry {
            level,
            n,
            chunk,
            chunk_shift: chunk.trailing_zeros(),
            layout,
            member_size,
            sizes: member_sizes.to_vec(),
        })
    }

    /// Level.
    pub fn level(&self) -> Level {
        self.level
    }
    /// Members.
    pub fn members(&self) -> usize {
        self.n
    }
    /// md's layout.
    pub fn layout(&self) -> ArrayLayout {
        self.layout
    }
    /// Stripe unit.
    pub fn chunk(&self) -> u64 {
        self.chunk
    }
    /// Bytes used on each member (striped levels).
    pub fn member_size(&self) -> u64 {
        self.member_size
    }

    /// Data chunks per stripe.
    pub fn data_disks(&self) -> usize {
        match self.level {
            Level::Raid4 | Level::Raid5 => self.n - 1,
            Level::Raid6 => self.n - 2,
            Level::Raid0 => self.n,
            _ => 1,
        }
    }

    /// Volume capacity in bytes.
    pub fn capacity(&self) -> u64 {
        match self.level {
            Level::Raid0 | Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                self.member_size * self.data_disks() as u64
            }
            Level::Raid1 => self.member_size,
            Level::Raid10 => self.r10_chunks() * self.chunk,
            Level::Concat => self.sizes.iter().sum(),
        }
    }

    /// Parity member(s) of a stripe: (P, Q). RAID 4 and 5 have no Q.
    pub fn parity_of(&self, stripe: u64) -> (usize, Option<usize>) {
        let n = self.n as u64;
        let r = (stripe % n) as usize;
        match self.level {
            Level::Raid4 => (self.n - 1, None),
            Level::Raid5 => (self.p_member(r), None),
            Level::Raid6 => {
                let pd = self.p_member(r);
                let qd = match self.layout {
                    ArrayLayout::LeftSymmetric | ArrayLayout::RightSymmetric => (pd + 1) % self.n,
                    _ => {
                        if pd == self.n - 1 {
                            0
                        } else {
                            pd + 1
                        }
                    }
                };
                (pd, Some(qd))
            }
            _ => panic!("parity_of on a level without parity"),
        }
    }

    /// P's member in a stripe `r` stripes into its rotation: right layouts
    /// rotate it up from member 0, left layouts down from the last (the
    /// only other layouts a RAID 5/6 geometry takes, checked in `new`).
    fn p_member(&self, r: usize) -> usize {
        match self.layout {
            ArrayLayout::RightSymmetric | ArrayLayout::RightAsymmetric => r,
            _ => self.n - 1 - r,
        }
    }

    /// Member holding data chunk `k` (0-based within the stripe) of `stripe`.
    /// Exactly md's `raid5_compute_sector`.
    pub fn data_member(&self, stripe: u64, k: usize) -> usize {
        let (pd, _) = self.parity_of(stripe);
        match (self.level, self.layout) {
            (Level::Raid4, _) => k,
            (Level::Raid5, ArrayLayout::LeftSymmetric | ArrayLayout::RightSymmetric) => {
                (pd + 1 + k) % self.n
            }
            (Level::Raid5, _) => {
                if k >= pd {
                    k + 1
                } else {
                    k
                }
            }
            (Level::Raid6, ArrayLayout::LeftSymmetric | ArrayLayout::RightSymmetric) => {
                (pd + 2 + k) % self.n
            }
            (Level::Raid6, _) => {
                if pd == self.n - 1 {
                    k + 1
                } else if k >= pd {
                    k + 2
                } else {
                    k
                }
            }
            _ => panic!("data_member on a level without parity"),
        }
    }

    /// Syndrome index of data member `disk` in `stripe` (md's slot order for Q:
    /// the data disks in order starting after Q).
    pub fn q_index(&self, stripe: u64, disk: usize) -> usize {
        let (pd, qd) = self.parity_of(stripe);
        let qd = qd.expect("q_index on raid6");
        let mut slot = 0;
        let mut d = (qd + 1) % self.n;
        loop {
            if d == disk {
                return slot;
            }
            if d != pd && d != qd {
                slot += 1;
            }
            d = (d + 1) % self.n;
        }
    }

    /// Primary location of one volume byte.
    pub fn locate(&self, vol_off: u64) -> (usize, u64) {
        let c = self.chunk;
        let chunk = vol_off >> self.chunk_shift;
        let within = vol_off & (c - 1);
        match self.level {
            Level::Raid0 => (
                (chunk % self.n as u64) as usize,
                (chunk / self.n as u64) * c + within,
            ),
            Level::Raid1 => (0, vol_off),
            Level::Raid10 => {
                let (m, row) = self.r10_primary(chunk);
                (m, row * c + within)
            }
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                let dd = self.data_disks() as u64;
                let stripe = chunk / dd;
                let k = (chunk % dd) as usize;
                (self.data_member(stripe, k), stripe * c + within)
            }
            Level::Concat => {
                let mut o = vol_off;
                for (i, s) in self.sizes.iter().enumerate() {
                    if o < *s {
                        return (i, o);
                    }
                    o -= s;
                }
                (self.n - 1, self.sizes[self.n - 1] + o)
            }
        }
    }

    /// The volume byte stored at a member location, if it holds data
    /// (`None` for parity, unused space and, on mirrors, non-primary copies).
    pub fn reverse(&self, member: usize, off: u64) -> Option<u64> {
        let c = self.chunk;
        match self.level {
            Level::Raid0 => (off < self.member_size)
                .then(|| ((off / c) * self.n as u64 + member as u64) * c + off % c),
            Level::Raid1 => (member == 0 && off < self.member_size).then_some(off),
            Level::Raid10 => {
                if off >= self.member_size {
                    return None;
                }
                let k = self.r10_chunk_at(member, off / c)?;
                Some(k * c + off % c)
            }
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                if off >= self.member_size {
                    return None;
                }
                let stripe = off / c;
                let dd = self.data_disks();
                (0..dd)
                    .find(|&k| self.data_member(stripe, k) == member)
                    .map(|k| (stripe * dd as u64 + k as u64) * c + off % c)
            }
            Level::Concat => {
                (off < self.sizes[member]).then(|| self.sizes[..member].iter().sum::<u64>() + off)
            }
        }
    }

    /// The bytes md's write-intent bitmap covers: a member's (md's
    /// `resync_max_sectors` is the members' used size), or the volume's on
    /// RAID 10 (`raid10_run` sets it to the array's size).
    pub fn bitmap_bytes(&self) -> u64 {
        match self.level {
            Level::Raid10 => self.capacity(),
            _ => self.member_size,
        }
    }

    /// The range `[start, end)` of [`bitmap_bytes`](Self::bitmap_bytes) a
    /// write of `len` bytes at volume offset `off` dirties, as md's
    /// write-intent bitmap counts it: the member bytes of the whole
    /// stripes it touches (RAID 4/5/6), the same bytes (RAID 1), the
    /// volume bytes themselves (RAID 10, whose bitmap is the volume's).
    pub fn bitmap_span(&self, off: u64, len: u64) -> (u64, u64) {
        let c = self.chunk;
        let last = off + len.max(1) - 1;
        match self.level {
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                let sb = c * self.data_disks() as u64;
                (off / sb * c, (last / sb + 1) * c)
            }
            Level::Raid10 => (off, last + 1),
            Level::Raid0 => {
                let n = self.n as u64;
                (off / c / n * c, (last / c / n + 1) * c)
            }
            // RAID 1: the same bytes; concat: its own range, on one member.
            Level::Raid1 | Level::Concat => (off, last + 1),
        }
    }

    /// Member writes a write of `len` bytes at volume offset `off` becomes:
    /// one per member it touches (rows of chunks on one member are one
    /// contiguous command), every copy of a mirror, and each parity member
    /// of a parity level.
    pub fn member_writes(&self, off: u64, len: u64) -> u64 {
        let n = self.n as u64;
        let c = self.chunk.max(1);
        let chunks = (off + len.max(1) - 1) / c - off / c + 1;
        match self.level {
            Level::Raid0 => chunks.min(n),
            Level::Raid10 => match self.layout {
                // A member's primary and copy are far apart: two commands.
                ArrayLayout::Far2 => 2 * chunks.min(n),
                // A row's copies lie just below it, one member on.
                ArrayLayout::Offset2 => (chunks + 1).min(n),
                _ => (2 * chunks).min(n),
            },
            Level::Raid1 => n,
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                chunks.min(self.data_disks() as u64) + self.level.parity_members() as u64
            }
            Level::Concat => {
                let (a, _) = self.locate(off);
                let (b, _) = self.locate(off + len.max(1) - 1);
                (b - a + 1) as u64
            }
        }
    }

    /// Every copy of the data at a member location (mirrors), primary first.
    pub fn copies(&self, member: usize, off: u64, out: &mut Vec<(usize, u64)>) {
        out.clear();
        match self.level {
            Level::Raid1 => out.extend((0..self.n).map(|m| (m, off))),
            Level::Raid10 => {
                let c = self.chunk;
                let (m, row) = self.r10_copy(member, off / c);
                out.push((member, off));
                out.push((m, row * c + off % c));
            }
            _ => out.push((member, off)),
        }
    }

    /// The other copy of what a RAID 10 member holds at `off` (a primary's
    /// copy, or a copy's primary); `None` where the member holds no data
    /// there, or the level keeps no copies.
    pub fn mirror_of(&self, member: usize, off: u64) -> Option<(usize, u64)> {
        if self.level != Level::Raid10 || off >= self.member_size {
            return None;
        }
        let (c, n) = (self.chunk, self.n as u64);
        let row = off / c;
        let (m, r) = match self.layout {
            ArrayLayout::Far2 | ArrayLayout::Offset2 => {
                if self.r10_chunk_at(member, row).is_some() {
                    self.r10_copy(member, row)
                } else {
                    // A copy: its primary is a member back, rows up.
                    let prev = (member + self.n - 1) % self.n;
                    let up = row.checked_sub(self.r10_copy_rows())?;
                    self.r10_chunk_at(prev, up)?;
                    (prev, up)
                }
            }
            _ => {
                // Near: the doubled chunk sequence; slots 2k and 2k + 1
                // hold volume chunk k.
                let x = row * n + member as u64;
                if x / 2 >= self.r10_chunks() {
                    return None;
                }
                let y = x ^ 1;
                ((y % n) as usize, y / n)
            }
        };
        Some((m, r * c + off % c))
    }

    /// The volume byte a member location holds, in either copy (RAID 10)
    /// or as [`reverse`](Self::reverse) finds it.
    pub fn held(&self, member: usize, off: u64) -> Option<u64> {
        self.reverse(member, off).or_else(|| {
            let (m, o) = self.mirror_of(member, off)?;
            self.reverse(m, o)
        })
    }

    /// Volume chunks of a RAID 10 (md's `raid10_size`): the members'
    /// chunks times two halves for near copies, or whole halves for far
    /// and offset copies.
    fn r10_chunks(&self) -> u64 {
        let (d, n) = (self.member_size / self.chunk, self.n as u64);
        match self.layout {
            ArrayLayout::Far2 | ArrayLayout::Offset2 => d / 2 * n,
            _ => d * n / 2,
        }
    }

    /// Chunk rows between a far copy and its primary (half the used
    /// rows), or an offset copy and its primary (one).
    fn r10_copy_rows(&self) -> u64 {
        match self.layout {
            ArrayLayout::Far2 => self.member_size / self.chunk / 2,
            _ => 1,
        }
    }

    /// Member and chunk row of volume chunk `k`'s primary copy
    /// (`__raid10_find_phys`, its first slot).
    fn r10_primary(&self, k: u64) -> (usize, u64) {
        let n = self.n as u64;
        match self.layout {
            ArrayLayout::Far2 => ((k % n) as usize, k / n),
            ArrayLayout::Offset2 => ((k % n) as usize, 2 * (k / n)),
            _ => (((2 * k) % n) as usize, 2 * k / n),
        }
    }

    /// Member and chunk row of the second copy of the chunk whose primary
    /// is at (`m`, `row`): the next slot of the doubled sequence (near),
    /// the next member a half-member down (far) or one row down (offset).
    fn r10_copy(&self, m: usize, row: u64) -> (usize, u64) {
        let n = self.n as u64;
        match self.layout {
            ArrayLayout::Far2 | ArrayLayout::Offset2 => {
                ((m + 1) % self.n, row + self.r10_copy_rows())
            }
            _ => {
                let y = row * n + m as u64 + 1;
                ((y % n) as usize, y / n)
            }
        }
    }

    /// The volume chunk whose primary copy is at (`m`, `row`), if one is.
    fn r10_chunk_at(&self, m: usize, row: u64) -> Option<u64> {
        let n = self.n as u64;
        let k = match self.layout {
            ArrayLayout::Far2 => (row < self.r10_copy_rows()).then(|| row * n + m as u64)?,
            ArrayLayout::Offset2 => row.is_multiple_of(2).then(|| row / 2 * n + m as u64)?,
            _ => {
                let x = row * n + m as u64;
                x.is_multiple_of(2).then_some(x / 2)?
            }
        };
        (k < self.r10_chunks()).then_some(k)
    }

    /// Split a volume extent into per-chunk pieces (primary copies), in volume order.
    pub fn pieces(&self, mut off: u64, len: u64, out: &mut Vec<Piece>) {
        out.clear();
        let end = off + len;
        while off < end {
            let step = match self.level {
                Level::Raid1 => end - off,
                Level::Concat => {
                    let (m, mo) = self.locate(off);
                    (self.sizes[m] - mo).min(end - off)
                }
                _ => (self.chunk - (off & (self.chunk - 1))).min(end - off),
            };
            let (m, mo) = self.locate(off);
            out.push(Piece {
                vol_off: off,
                len: step,
                member: m as u32,
                member_off: mo,
            });
            off += step;
        }
    }

    /// Plan a write to a RAID 5/6 volume: one [`StripeOp`] per stripe touched.
    /// md's rule: full stripe when every data chunk is rewritten whole;
    /// otherwise read-modify-write when it needs fewer bytes read than
    /// reconstruct-write (ties go to reconstruct-write).
    ///
    /// `out`'s elements and their vectors are reused, so a caller that keeps
    /// `out` plans without allocating.
    pub fn write_plan(&self, off: u64, len: u64, out: &mut Vec<StripeOp>) {
        self.plan(off, len, false, out)
    }

    /// Plan a write to a RAID 5/6 volume as an implementation that always
    /// reads before it writes: read-modify-write for every stripe touched,
    /// whole stripes included (no full-stripe or reconstruct-write path).
    pub fn rmw_plan(&self, off: u64, len: u64, out: &mut Vec<StripeOp>) {
        self.plan(off, len, true, out)
    }

    fn plan(&self, off: u64, len: u64, rmw_only: bool, out: &mut Vec<StripeOp>) {
        let stripe_bytes = self.chunk * self.data_disks() as u64;
        let end = off + len;
        let mut used = 0;
        let mut s = off / stripe_bytes;
        while s * stripe_bytes < end {
            let s0 = s * stripe_bytes;
            if used == out.len() {
                out.push(StripeOp {
                    stripe: 0,
                    kind: WriteKind::FullStripe,
                    reads: Vec::new(),
                    writes: Vec::new(),
                    parity_bytes: 0,
                });
            }
            let (lo, hi) = (off.max(s0), end.min(s0 + stripe_bytes));
            self.plan_stripe(s, lo, hi, rmw_only, &mut out[used]);
            used += 1;
            s += 1;
        }
        out.truncate(used);
    }

    /// Plan the part `lo..hi` (volume bytes) of a write that falls in
    /// stripe `s` into `op`, reusing its vectors.
    fn plan_stripe(&self, s: u64, lo: u64, hi: u64, rmw_only: bool, op: &mut StripeOp) {
        let c = self.chunk;
        let dd = self.data_disks() as u64;
        let s0 = s * c * dd;
        // Touched range within data chunk k, chunk-relative.
        let touched = |k: u64| -> Option<(u64, u64)> {
            let c0 = s0 + k * c;
            let a = lo.max(c0);
            let b = hi.min(c0 + c);
            (a < b).then(|| (a - c0, b - c0))
        };
        let (mut row_lo, mut row_hi, mut written, mut full) = (u64::MAX, 0, 0, true);
        for k in 0..dd {
            match touched(k) {
                Some((a, b)) => {
                    row_lo = row_lo.min(a);
                    row_hi = row_hi.max(b);
                    written += b - a;
                    full &= a == 0 && b == c;
                }
                None => full = false,
            }
        }
        let row = row_hi - row_lo;
        let base = s * c;
        let (pd, qd) = self.parity_of(s);
        op.stripe = s;
        op.reads.clear();
        op.writes.clear();
        for k in 0..dd {
            if let Some((a, b)) = touched(k) {
                op.writes.push(Extent {
                    member: self.data_member(s, k as usize) as u32,
                    offset: base + a,
                    len: b - a,
                });
            }
        }
        for p in std::iter::once(pd).chain(qd) {
            op.writes.push(Extent {
                member: p as u32,
                offset: base + row_lo,
                len: row,
            });
        }
        let nparity = 1 + qd.is_some() as u64;
        // Bytes each method reads: RMW the old data and parity of the rows
        // written; RCW the rest of those rows.
        let rmw_bytes = written + nparity * row;
        let rcw_bytes = row * dd - written;
        if full && !rmw_only {
            op.kind = WriteKind::FullStripe;
            op.parity_bytes = c * dd;
        } else if rmw_only || rmw_bytes < rcw_bytes {
            op.kind = WriteKind::ReadModifyWrite;
            // Read-modify-write reads exactly what it writes: the old
            // data of the touched ranges and the old parity rows.
            op.reads.extend_from_slice(&op.writes);
            op.parity_bytes = written * 2;
        } else {
            op.kind = WriteKind::ReconstructWrite;
            self.reconstruct_reads(s, &touched, (row_lo, row_hi), op);
            op.parity_bytes = row * dd;
        }
    }

    /// A reconstruct-write's reads in stripe `s`: the rest of the rows
    /// written (`row`, chunk-relative) on every data member, around the
    /// part each one writes (`touched`, chunk-relative, by data chunk).
    #[inline]
    fn reconstruct_reads(
        &self,
        s: u64,
        touched: &impl Fn(u64) -> Option<(u64, u64)>,
        (row_lo, row_hi): (u64, u64),
        op: &mut StripeOp,
    ) {
        let base = s * self.chunk;
        for k in 0..self.data_disks() as u64 {
            let m = self.data_member(s, k as usize) as u32;
            let rest = match touched(k) {
                None => [(row_lo, row_hi), (0, 0)],
                Some((a, b)) => [(row_lo, a), (b, row_hi)],
            };
            for (x, y) in rest {
                if x < y {
                    op.reads.push(Extent {
                        member: m,
                        offset: base + x,
                        len: y - x,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(level: Level, n: usize, layout: ArrayLayout) -> Geometry {
        Geometry::new(level, 4096, layout, &vec![64 * 4096; n]).unwrap()
    }

    #[test]
    fn member_writes_count_chunks_copies_and_parity() {
        let ls = ArrayLayout::LeftSymmetric;
        let c = 4096;
        // One chunk, two chunks, and a write wider than the array.
        assert_eq!(g(Level::Raid0, 4, ls).member_writes(0, c), 1);
        assert_eq!(g(Level::Raid0, 4, ls).member_writes(c / 2, c), 2);
        assert_eq!(g(Level::Raid0, 4, ls).member_writes(0, 9 * c), 4);
        let n2 = ArrayLayout::Near2;
        assert_eq!(g(Level::Raid10, 8, n2).member_writes(0, c), 2);
        assert_eq!(g(Level::Raid10, 4, n2).member_writes(0, 4 * c), 4);
        assert_eq!(
            g(Level::Raid10, 4, ArrayLayout::Far2).member_writes(0, 2 * c),
            4
        );
        assert_eq!(
            g(Level::Raid10, 4, ArrayLayout::Offset2).member_writes(0, 2 * c),
            3
        );
        assert_eq!(g(Level::Raid1, 3, ls).member_writes(0, 8 * c), 3);
        assert_eq!(g(Level::Raid5, 5, ls).member_writes(0, c), 2);
        assert_eq!(g(Level::Raid5, 5, ls).member_writes(0, 4 * c), 5);
        assert_eq!(g(Level::Raid6, 6, ls).member_writes(c, c), 3);
    }

    #[test]
    fn md_left_symmetric_table() {
        // md raid5 left-symmetric over 4 disks, chunks 0..: (from md(4) documentation)
        // stripe 0: D0 D1 D2 P ; stripe 1: D4 D5 P D3 ; stripe 2: D8 P D6 D7 ; stripe 3: P D9 D10 D11
        let geo = g(Level::Raid5, 4, ArrayLayout::LeftSymmetric);
        let row = |s: u64| -> Vec<String> {
            (0..4)
                .map(|m| {
                    if geo.parity_of(s).0 == m {
                        "P".to_string()
                    } else {
                        format!("D{}", geo.reverse(m, s * 4096).unwrap() / 4096)
                    }
                })
                .collect()
        };
        assert_eq!(row(0), ["D0", "D1", "D2", "P"]);
        assert_eq!(row(1), ["D4", "D5", "P", "D3"]);
        assert_eq!(row(2), ["D8", "P", "D6", "D7"]);
        assert_eq!(row(3), ["P", "D9", "D10", "D11"]);
    }

    #[test]
    fn left_asymmetric_and_raid6() {
        let geo = g(Level::Raid5, 4, ArrayLayout::LeftAsymmetric);
        // stripe 1: D3 D4 P D5
        assert_eq!(geo.parity_of(1).0, 2);
        assert_eq!(
            (0..3).map(|k| geo.data_member(1, k)).collect::<Vec<_>>(),
            [0, 1, 3]
        );
        let r6 = g(Level::Raid6, 5, ArrayLayout::LeftSymmetric);
        assert_eq!(r6.parity_of(0), (4, Some(0)));
        assert_eq!(
            (0..3).map(|k| r6.data_member(0, k)).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(r6.q_index(0, 1), 0);
    }

    #[test]
    fn raid10_near2_pairs() {
        let geo = g(Level::Raid10, 4, ArrayLayout::Near2);
        let mut v = Vec::new();
        geo.copies(0, 0, &mut v);
        assert_eq!(v, [(0, 0), (1, 0)]);
        assert_eq!(geo.locate(4096), (2, 0));
        assert_eq!(geo.locate(8192), (0, 4096));
        assert_eq!(geo.capacity(), 2 * 64 * 4096);
    }

    #[test]
    fn small_write_uses_rmw_full_stripe_needs_no_reads() {
        let geo = Geometry::new(
            Level::Raid5,
            65536,
            ArrayLayout::LeftSymmetric,
            &[1 << 30; 5],
        )
        .unwrap();
        let mut p = Vec::new();
        geo.write_plan(0, 8192, &mut p);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].kind, WriteKind::ReadModifyWrite);
        assert_eq!(p[0].reads.len(), 2);
        assert_eq!(p[0].writes.len(), 2);
        geo.write_plan(0, 4 * 65536, &mut p);
        assert_eq!(p[0].kind, WriteKind::FullStripe);
        assert!(p[0].reads.is_empty());
        assert_eq!(p[0].writes.len(), 5);
        // Three of four chunks: reconstruct-write reads one chunk instead of three plus parity.
        geo.write_plan(0, 3 * 65536, &mut p);
        assert_eq!(p[0].kind, WriteKind::ReconstructWrite);
        assert_eq!(p[0].reads.iter().map(|e| e.len).sum::<u64>(), 65536);
        // An always-read-first implementation reads what it writes, even for
        // a whole stripe, and computes parity from old and new data.
        geo.rmw_plan(0, 4 * 65536, &mut p);
        assert_eq!(p[0].kind, WriteKind::ReadModifyWrite);
        assert_eq!(p[0].reads, p[0].writes);
        assert_eq!(p[0].parity_bytes, 2 * 4 * 65536);
        geo.rmw_plan(0, 3 * 65536, &mut p);
        assert_eq!(p[0].kind, WriteKind::ReadModifyWrite);
        assert_eq!(p[0].reads.iter().map(|e| e.len).sum::<u64>(), 4 * 65536);
    }

    /// The volume chunk each member holds in each chunk row, `None` where
    /// it holds none: the table of a RAID 10 layout.
    fn r10_table(geo: &Geometry, rows: u64) -> Vec<Vec<Option<u64>>> {
        (0..rows)
            .map(|r| {
                (0..geo.members())
                    .map(|m| geo.held(m, r * geo.chunk()).map(|v| v / geo.chunk()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn raid10_far2_is_raid0_then_a_shifted_copy() {
        // md(4), "far" layout over 4 devices of 8 chunk rows: the first
        // half striped as RAID 0, the second half the same chunks each one
        // device on (raid10.c: d += near_copies, s += stride).
        let geo = Geometry::new(Level::Raid10, 4096, ArrayLayout::Far2, &[8 * 4096; 4]).unwrap();
        assert_eq!(geo.capacity(), 16 * 4096);
        let t = r10_table(&geo, 8);
        let s = |v: [u64; 4]| v.map(Some).to_vec();
        assert_eq!(t[0], s([0, 1, 2, 3]));
        assert_eq!(t[1], s([4, 5, 6, 7]));
        assert_eq!(t[4], s([3, 0, 1, 2]));
        assert_eq!(t[7], s([15, 12, 13, 14]));
        assert_eq!(geo.reverse(0, 4 * 4096), None, "a copy is not a primary");
        assert_eq!(geo.mirror_of(3, 4096 + 5), Some((0, 5 * 4096 + 5)));
        assert_eq!(geo.mirror_of(0, 5 * 4096 + 5), Some((3, 4096 + 5)));
    }

    #[test]
    fn raid10_offset2_copies_each_row_one_row_down() {
        // md(4), "offset" layout: every stripe is followed by a copy of
        // itself rotated one device.
        let geo = Geometry::new(Level::Raid10, 4096, ArrayLayout::Offset2, &[9 * 4096; 3]).unwrap();
        // An odd row count leaves the last row unused (md's calc_sectors).
        assert_eq!(geo.member_size(), 8 * 4096);
        assert_eq!(geo.capacity(), 12 * 4096);
        let t = r10_table(&geo, 4);
        let s = |v: [u64; 3]| v.map(Some).to_vec();
        assert_eq!(t[0], s([0, 1, 2]));
        assert_eq!(t[1], s([2, 0, 1]));
        assert_eq!(t[2], s([3, 4, 5]));
        assert_eq!(t[3], s([5, 3, 4]));
        assert_eq!(geo.mirror_of(0, 8 * 4096), None, "past the used rows");
    }

    #[test]
    fn raid10_layouts_lose_data_with_neighbours_gone() {
        let (n2, f2, o2) = (ArrayLayout::Near2, ArrayLayout::Far2, ArrayLayout::Offset2);
        // Near with an even count pairs 0-1 and 2-3: 1 and 2 may both go.
        assert!(Level::Raid10.survives(n2, 4, &[1, 2]));
        // Far and offset put member m's copies on m + 1 (mod n).
        assert!(!Level::Raid10.survives(f2, 4, &[1, 2]));
        assert!(!Level::Raid10.survives(o2, 4, &[3, 0]));
        assert!(Level::Raid10.survives(f2, 4, &[0, 2]));
        assert!(Level::Raid10.survives(f2, 2, &[1]));
        assert!(!Level::Raid10.survives(f2, 2, &[0, 1]));
    }

    #[test]
    fn layouts_belong_to_their_levels() {
        let err = Geometry::new(Level::Raid10, 4096, ArrayLayout::LeftSymmetric, &[65536; 4]);
        assert!(
            matches!(err, Err(LayoutError::WrongLayout { .. })),
            "{err:?}"
        );
        let err = Geometry::new(Level::Raid5, 4096, ArrayLayout::Far2, &[65536; 4]);
        assert!(
            matches!(err, Err(LayoutError::WrongLayout { .. })),
            "{err:?}"
        );
        assert!(Geometry::new(Level::Raid0, 4096, ArrayLayout::Far2, &[65536; 4]).is_ok());
    }

    #[test]
    fn raid10_bitmap_covers_the_volume() {
        let geo = g(Level::Raid10, 4, ArrayLayout::Near2);
        assert_eq!(geo.bitmap_bytes(), geo.capacity());
        assert_eq!(geo.bitmap_span(5000, 100), (5000, 5100));
        let r5 = g(Level::Raid5, 4, ArrayLayout::LeftSymmetric);
        assert_eq!(r5.bitmap_bytes(), r5.member_size());
        assert_eq!(r5.bitmap_span(5000, 100), (0, 4096));
    }
}
