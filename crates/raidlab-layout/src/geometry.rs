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
    /// md raid10, near-2.
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

    /// Parity members per stripe: 1 for RAID 4 and 5, 2 for RAID 6.
    pub fn parity_members(self) -> usize {
        match self {
            Level::Raid4 | Level::Raid5 => 1,
            Level::Raid6 => 2,
            _ => 0,
        }
    }

    /// Whether an array of `n` members at this level still serves every
    /// byte with the members at `missing` gone.
    pub fn survives(self, n: usize, missing: &[usize]) -> bool {
        match self {
            Level::Raid0 | Level::Concat => missing.is_empty(),
            Level::Raid1 => missing.len() < n,
            Level::Raid4 | Level::Raid5 => missing.len() <= 1,
            Level::Raid6 => missing.len() <= 2,
            // near-2: chunk x lives on members 2x and 2x+1 (mod n). With n
            // even those are fixed pairs; with n odd every two neighbours
            // (m, m+1 mod n) share some chunk.
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

/// md's parity layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParityLayout {
    /// md `left-symmetric` (default).
    LeftSymmetric,
    /// md `left-asymmetric`.
    LeftAsymmetric,
    /// md `right-symmetric`.
    RightSymmetric,
    /// md `right-asymmetric`.
    RightAsymmetric,
}

impl ParityLayout {
    /// md's word for the layout.
    pub fn word(self) -> &'static str {
        match self {
            ParityLayout::LeftSymmetric => "left-symmetric",
            ParityLayout::LeftAsymmetric => "left-asymmetric",
            ParityLayout::RightSymmetric => "right-symmetric",
            ParityLayout::RightAsymmetric => "right-asymmetric",
        }
    }

    /// Parse md's layout word (or its two-letter short form).
    pub fn from_word(s: &str) -> Option<Self> {
        Some(match s {
            "left-symmetric" | "ls" => ParityLayout::LeftSymmetric,
            "left-asymmetric" | "la" => ParityLayout::LeftAsymmetric,
            "right-symmetric" | "rs" => ParityLayout::RightSymmetric,
            "right-asymmetric" | "ra" => ParityLayout::RightAsymmetric,
            _ => return None,
        })
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
    layout: ParityLayout,
    member_size: u64,
    sizes: Vec<u64>,
}

impl Geometry {
    /// Geometry of `level` over members of the given sizes (bytes).
    pub fn new(
        level: Level,
        chunk: u64,
        layout: ParityLayout,
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
        let min_size = *member_sizes.iter().min().unwrap_or(&0);
        let member_size = match level {
            Level::Raid1 => min_size & !511,
            Level::Concat => 0,
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
            Level::Raid10 => (self.member_size / self.chunk) * self.n as u64 / 2 * self.chunk,
            Level::Concat => self.sizes.iter().sum(),
        }
    }

    /// Parity member(s) of a stripe: (P, Q). RAID 4 and 5 have no Q.
    pub fn parity_of(&self, stripe: u64) -> (usize, Option<usize>) {
        let n = self.n as u64;
        let r = (stripe % n) as usize;
        match self.level {
            Level::Raid4 => (self.n - 1, None),
            Level::Raid5 => {
                let pd = match self.layout {
                    ParityLayout::LeftSymmetric | ParityLayout::LeftAsymmetric => self.n - 1 - r,
                    ParityLayout::RightSymmetric | ParityLayout::RightAsymmetric => r,
                };
                (pd, None)
            }
            Level::Raid6 => {
                let pd = match self.layout {
                    ParityLayout::LeftSymmetric | ParityLayout::LeftAsymmetric => self.n - 1 - r,
                    ParityLayout::RightSymmetric | ParityLayout::RightAsymmetric => r,
                };
                let qd = match self.layout {
                    ParityLayout::LeftSymmetric | ParityLayout::RightSymmetric => (pd + 1) % self.n,
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

    /// Member holding data chunk `k` (0-based within the stripe) of `stripe`.
    /// Exactly md's `raid5_compute_sector`.
    pub fn data_member(&self, stripe: u64, k: usize) -> usize {
        let (pd, _) = self.parity_of(stripe);
        match (self.level, self.layout) {
            (Level::Raid4, _) => k,
            (Level::Raid5, ParityLayout::LeftSymmetric | ParityLayout::RightSymmetric) => {
                (pd + 1 + k) % self.n
            }
            (Level::Raid5, _) => {
                if k >= pd {
                    k + 1
                } else {
                    k
                }
            }
            (Level::Raid6, ParityLayout::LeftSymmetric | ParityLayout::RightSymmetric) => {
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
                let x = chunk * 2;
                (
                    (x % self.n as u64) as usize,
                    (x / self.n as u64) * c + within,
                )
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
                let x = (off / c) * self.n as u64 + member as u64;
                (x.is_multiple_of(2) && x / 2 * c < self.capacity()).then(|| x / 2 * c + off % c)
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

    /// The member byte range `[start, end)` a write of `len` bytes at volume
    /// offset `off` may touch on some member, parity and copies included —
    /// the same range on every member, as md's write-intent bitmap counts
    /// (whole stripes for RAID 5/6, chunk rows for RAID 10).
    pub fn member_span(&self, off: u64, len: u64) -> (u64, u64) {
        let c = self.chunk;
        let last = off + len.max(1) - 1;
        match self.level {
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                let sb = c * self.data_disks() as u64;
                (off / sb * c, (last / sb + 1) * c)
            }
            Level::Raid10 => {
                let n = self.n as u64;
                ((2 * (off / c)) / n * c, ((2 * (last / c) + 1) / n + 1) * c)
            }
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
            Level::Raid10 => (2 * chunks).min(n),
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
                let x = (off / c) * self.n as u64 + member as u64;
                let y = x + 1;
                out.push((member, off));
                out.push((
                    (y % self.n as u64) as usize,
                    (y / self.n as u64) * c + off % c,
                ));
            }
            _ => out.push((member, off)),
        }
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

    fn g(level: Level, n: usize, layout: ParityLayout) -> Geometry {
        Geometry::new(level, 4096, layout, &vec![64 * 4096; n]).unwrap()
    }

    #[test]
    fn member_writes_count_chunks_copies_and_parity() {
        let ls = ParityLayout::LeftSymmetric;
        let c = 4096;
        // One chunk, two chunks, and a write wider than the array.
        assert_eq!(g(Level::Raid0, 4, ls).member_writes(0, c), 1);
        assert_eq!(g(Level::Raid0, 4, ls).member_writes(c / 2, c), 2);
        assert_eq!(g(Level::Raid0, 4, ls).member_writes(0, 9 * c), 4);
        assert_eq!(g(Level::Raid10, 8, ls).member_writes(0, c), 2);
        assert_eq!(g(Level::Raid10, 4, ls).member_writes(0, 4 * c), 4);
        assert_eq!(g(Level::Raid1, 3, ls).member_writes(0, 8 * c), 3);
        assert_eq!(g(Level::Raid5, 5, ls).member_writes(0, c), 2);
        assert_eq!(g(Level::Raid5, 5, ls).member_writes(0, 4 * c), 5);
        assert_eq!(g(Level::Raid6, 6, ls).member_writes(c, c), 3);
    }

    #[test]
    fn md_left_symmetric_table() {
        // md raid5 left-symmetric over 4 disks, chunks 0..: (from md(4) documentation)
        // stripe 0: D0 D1 D2 P ; stripe 1: D4 D5 P D3 ; stripe 2: D8 P D6 D7 ; stripe 3: P D9 D10 D11
        let geo = g(Level::Raid5, 4, ParityLayout::LeftSymmetric);
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
        let geo = g(Level::Raid5, 4, ParityLayout::LeftAsymmetric);
        // stripe 1: D3 D4 P D5
        assert_eq!(geo.parity_of(1).0, 2);
        assert_eq!(
            (0..3).map(|k| geo.data_member(1, k)).collect::<Vec<_>>(),
            [0, 1, 3]
        );
        let r6 = g(Level::Raid6, 5, ParityLayout::LeftSymmetric);
        assert_eq!(r6.parity_of(0), (4, Some(0)));
        assert_eq!(
            (0..3).map(|k| r6.data_member(0, k)).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(r6.q_index(0, 1), 0);
    }

    #[test]
    fn raid10_near2_pairs() {
        let geo = g(Level::Raid10, 4, ParityLayout::LeftSymmetric);
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
            ParityLayout::LeftSymmetric,
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
}
