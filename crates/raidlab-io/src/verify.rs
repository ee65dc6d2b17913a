//! Self-describing data for `--verify`, in the spirit of fio's verify header.
//!
//! Every [`UNIT`] bytes of volume data written under `--verify` carry a
//! header — magic, checksum, the unit's volume address and a generation —
//! followed by a payload derived from address and generation. A read checks
//! magic, address and checksum, so data written by an earlier run can be
//! checked by a later read-only run; within a run the generation last written
//! to each unit is remembered, so a stale block (a lost write) is caught too.

use raidlab_core::rng::GOLDEN_GAMMA;
use std::collections::HashMap;
use std::sync::Mutex;

/// Verify granularity: every 512-byte sector is self-describing, so reads of
/// any size and alignment the workload allows can be checked.
pub const UNIT: usize = 512;
/// Version 2: the checksum runs in two lanes (even and odd words), which
/// halves its dependency chain; units of version 1 read as headerless.
const MAGIC: [u8; 4] = *b"RLv2";

/// One word into the checksum: 64-bit multiply-xorshift, so every bit of
/// input reaches the result and any corruption of a sector changes it with
/// probability 1 - 2^-32.
#[inline(always)]
fn mix(h: u64, x: u64) -> u64 {
    let h = (h ^ x).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 29)
}

/// The checksum's final fold to 32 bits.
#[inline(always)]
fn fold(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}

/// The second lane's starting value.
const LANE2: u64 = GOLDEN_GAMMA.rotate_left(32);

/// Checksum of a unit's bytes after the checksum field: even and odd words
/// in two lanes, joined at the end.
fn checksum(b: &[u8]) -> u32 {
    let mut h = [GOLDEN_GAMMA, LANE2];
    for (i, w) in b.chunks_exact(8).enumerate() {
        h[i & 1] = mix(h[i & 1], u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    fold(mix(h[0], h[1]))
}

/// Fill `buf` (a write to volume address `off`, a multiple of [`UNIT`] long)
/// with self-describing units of generation `gen`. The checksum is summed
/// as the words are made (one pass over the unit, not two).
pub fn fill(buf: &mut [u8], off: u64, gen: u64) {
    for (i, u) in buf.chunks_exact_mut(UNIT).enumerate() {
        let addr = off + (i * UNIT) as u64;
        u[0..4].copy_from_slice(&MAGIC);
        u[8..16].copy_from_slice(&addr.to_le_bytes());
        u[16..24].copy_from_slice(&gen.to_le_bytes());
        // Words 0 and 1 after the checksum field are the address and the
        // generation: one in each lane.
        let (mut h0, mut h1) = (mix(GOLDEN_GAMMA, addr), mix(LANE2, gen));
        // Two xorshift64 streams, even and odd payload words: cheap,
        // different for every address and generation, and independent, so
        // neither the payload nor the checksum waits on one long chain.
        let seed = addr ^ gen.rotate_left(17) ^ 0x2545_F491_4F6C_DD1D;
        let mut x = [seed, seed.rotate_left(32) ^ GOLDEN_GAMMA];
        let xorshift = |mut v: u64| {
            v ^= v << 13;
            v ^= v >> 7;
            v ^ (v << 17)
        };
        let (pairs, last) = u[24..].split_at_mut(UNIT - 24 - 8);
        for pair in pairs.chunks_exact_mut(16) {
            // Payload words 2k and 2k+1 are words 2k+2 and 2k+3 after the
            // checksum field: lanes 0 and 1.
            x = [xorshift(x[0]), xorshift(x[1])];
            pair[..8].copy_from_slice(&x[0].to_le_bytes());
            pair[8..].copy_from_slice(&x[1].to_le_bytes());
            h0 = mix(h0, x[0]);
            h1 = mix(h1, x[1]);
        }
        x[0] = xorshift(x[0]);
        last.copy_from_slice(&x[0].to_le_bytes());
        h0 = mix(h0, x[0]);
        let c = fold(mix(h0, h1));
        debug_assert_eq!(c, checksum(&u[8..]));
        u[4..8].copy_from_slice(&c.to_le_bytes());
    }
}

/// What is wrong with one unit read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// No header (never written under verify, or overwritten by something else).
    NoHeader,
    /// The header names another address (misdirected or misplaced data).
    Address(u64),
    /// The contents do not match the checksum (corruption).
    Checksum,
    /// Older data than the run last wrote there (a lost or stale write).
    Stale {
        /// Generation found.
        found: u64,
        /// Generation last written.
        expected: u64,
    },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::NoHeader => write!(f, "no verify header"),
            Mismatch::Address(a) => write!(f, "header names address {a}"),
            Mismatch::Checksum => write!(f, "checksum mismatch"),
            Mismatch::Stale { found, expected } => {
                write!(
                    f,
                    "stale data: generation {found:#x}, expected {expected:#x}"
                )
            }
        }
    }
}

/// What a block's own verify data says of it, whatever address its units
/// name: what a scrub uses to tell which of disagreeing blocks is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Every unit is an intact verify unit (magic and checksum right).
    Intact,
    /// Some unit is a damaged verify unit: its magic or its checksum field
    /// is right and the other is not (one corruption leaves one of them).
    Damaged,
    /// Neither: data not written under verify (or a mix of intact units and
    /// such data): it cannot tell whether it is right.
    Unknown,
}

/// Judge `block` (a multiple of [`UNIT`] long) by its verify units.
pub fn judge(block: &[u8]) -> Judged {
    let mut all_intact = true;
    for u in block.chunks_exact(UNIT) {
        let magic = u[0..4] == MAGIC;
        let sum = u32::from_le_bytes(u[4..8].try_into().expect("4 bytes")) == checksum(&u[8..]);
        match (magic, sum) {
            (true, true) => {}
            (false, false) => all_intact = false,
            _ => return Judged::Damaged,
        }
    }
    if all_intact {
        Judged::Intact
    } else {
        Judged::Unknown
    }
}

/// Check one unit read from volume address `addr`; returns its generation.
pub fn check_unit(u: &[u8], addr: u64) -> Result<u64, Mismatch> {
    if u[0..4] != MAGIC {
        return Err(Mismatch::NoHeader);
    }
    let a = u64::from_le_bytes(u[8..16].try_into().expect("8 bytes"));
    if a != addr {
        return Err(Mismatch::Address(a));
    }
    let c = u32::from_le_bytes(u[4..8].try_into().expect("4 bytes"));
    if c != checksum(&u[8..]) {
        return Err(Mismatch::Checksum);
    }
    Ok(u64::from_le_bytes(u[16..24].try_into().expect("8 bytes")))
}

const SHARDS: usize = 64;
/// A verify state file's magic.
const STATE_MAGIC: &[u8; 8] = b"RLVSTAT1";
/// Largest verify state read: 4 GiB, the generations of about 230 GiB
/// written under verify (72 bytes per 4 KiB), as much as a run keeps in
/// memory for them.
const MAX_STATE: u64 = 4 << 30;
/// Units per entry of the generation map: a 4 KiB write is one entry.
const GROUP: u64 = 8;

/// Generation last written to each unit in this run, shared by all workers:
/// entries of `GROUP` units (0: never written in this run; generations
/// carry the run's nonzero nonce in their high bits).
pub struct Generations {
    shards: Vec<Mutex<HashMap<u64, [u64; GROUP as usize]>>>,
    /// Every unit read must carry a header: a read-only run with no verify
    /// state verifies what an earlier run wrote, as fio's read-only verify
    /// does. Otherwise only units known to be written (this run, or the
    /// state) must; others may never have been written.
    every_unit: bool,
    /// The epoch (high half of its generations) of the run checking reads:
    /// a generation it recorded itself must be found exactly; one from a
    /// state saved by an earlier run may have been overwritten since.
    epoch: u64,
}

impl Default for Generations {
    fn default() -> Self {
        Generations {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            every_unit: false,
            epoch: 0,
        }
    }
}

/// What one verified read found, besides its mismatches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    /// Units checked (a header, address and checksum, and the generation
    /// where one is known).
    pub units: u64,
    /// Units without a header that neither this run nor the verify state
    /// knows were written: never written under verify, so not checked.
    pub unwritten: u64,
}

/// Whether a unit without the verify magic is a verify unit whose header
/// was damaged rather than one never written under verify: its checksum
/// field or its (nonzero: zeroed space names address 0) address field is
/// still right.
fn damaged_header(u: &[u8], addr: u64) -> bool {
    u32::from_le_bytes(u[4..8].try_into().expect("4 bytes")) == checksum(&u[8..])
        || (addr != 0 && u64::from_le_bytes(u[8..16].try_into().expect("8 bytes")) == addr)
}

impl Generations {
    /// The run checking reads writes generations carrying `nonce` (its
    /// epoch in the high half).
    pub fn set_run(&mut self, nonce: u64) {
        self.epoch = nonce >> 32;
    }

    /// Require a header on every unit read (see `every_unit`).
    pub fn require_every_unit(&mut self) {
        self.every_unit = true;
    }

    /// Nothing recorded: no unit is known to be written.
    pub fn is_empty(&self) -> bool {
        self.shards
            .iter()
            .all(|s| s.lock().unwrap_or_else(|e| e.into_inner()).is_empty())
    }

    fn shard(&self, group: u64) -> std::sync::MutexGuard<'_, HashMap<u64, [u64; GROUP as usize]>> {
        let s = (group.wrapping_mul(GOLDEN_GAMMA) >> 58) as usize % SHARDS;
        self.shards[s].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remember that `len` bytes at `off` now hold generation `gen`.
    pub fn wrote(&self, off: u64, len: usize, gen: u64) {
        debug_assert!(gen != 0, "generations are nonzero");
        let (first, end) = (off / UNIT as u64, (off + len as u64) / UNIT as u64);
        let mut u = first;
        while u < end {
            let group = u / GROUP;
            let stop = end.min((group + 1) * GROUP);
            let mut shard = self.shard(group);
            let entry = shard.entry(group).or_insert([0; GROUP as usize]);
            for k in u..stop {
                entry[(k % GROUP) as usize] = gen;
            }
            u = stop;
        }
    }

    /// Every entry: (group of `GROUP` units, their generations), sorted.
    fn entries(&self) -> Vec<(u64, [u64; GROUP as usize])> {
        let mut v: Vec<_> = self
            .shards
            .iter()
            .flat_map(|s| {
                let g = s.lock().unwrap_or_else(|e| e.into_inner());
                g.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
            })
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// Save the generations of the volume `uuid` to `path` (fio's verify
    /// state, for raidlab's volumes): a header, then every group's
    /// generations, little endian. Written to a temporary file and renamed,
    /// so a crash leaves the old state or the new.
    pub fn save(&self, path: &std::path::Path, uuid: &[u8; 16]) -> std::io::Result<()> {
        let entries = self.entries();
        let mut b = Vec::with_capacity(32 + entries.len() * 72);
        b.extend_from_slice(STATE_MAGIC);
        b.extend_from_slice(uuid);
        b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (k, gens) in &entries {
            b.extend_from_slice(&k.to_le_bytes());
            gens.iter()
                .for_each(|g| b.extend_from_slice(&g.to_le_bytes()));
        }
        let tmp = path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, &b)?;
        f.sync_data()?;
        std::fs::rename(&tmp, path)
    }

    /// Load a state saved for the volume `uuid`; `Err` names what is wrong.
    pub fn load(&self, path: &std::path::Path, uuid: &[u8; 16]) -> Result<(), String> {
        // A regular file of bounded size (a path such as /dev/zero never
        // ends), read with the bound kept in case it grows meanwhile.
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".to_string());
        }
        if meta.len() > MAX_STATE {
            return Err(format!("larger than {MAX_STATE} bytes"));
        }
        let mut b = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| {
                std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_STATE + 1), &mut b)
            })
            .map_err(|e| e.to_string())?;
        if b.len() as u64 > MAX_STATE {
            return Err(format!("larger than {MAX_STATE} bytes"));
        }
        let bad = || "not a raidlab verify state".to_string();
        if b.len() < 32 || &b[..8] != STATE_MAGIC {
            return Err(bad());
        }
        if &b[8..24] != uuid {
            return Err("it was saved for another volume".to_string());
        }
        let n = u64::from_le_bytes(b[24..32].try_into().expect("8 bytes")) as usize;
        if b.len() != 32 + n.checked_mul(72).ok_or_else(bad)? {
            return Err(bad());
        }
        let word = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        for e in 0..n {
            let o = 32 + e * 72;
            let mut gens = [0u64; GROUP as usize];
            for (i, g) in gens.iter_mut().enumerate() {
                *g = word(o + 8 + 8 * i);
            }
            self.shard(word(o)).insert(word(o), gens);
        }
        Ok(())
    }

    /// The largest run epoch (a generation's high half) recorded.
    pub fn max_epoch(&self) -> u64 {
        self.shards
            .iter()
            .flat_map(|s| {
                let g = s.lock().unwrap_or_else(|e| e.into_inner());
                g.values().flatten().map(|x| x >> 32).max()
            })
            .max()
            .unwrap_or(0)
    }

    /// The generation last written to `unit` in this run, if any.
    fn last(&self, unit: u64) -> Option<u64> {
        let g = self.shard(unit / GROUP).get(&(unit / GROUP))?[(unit % GROUP) as usize];
        (g != 0).then_some(g)
    }

    /// Check a read buffer from volume address `off`: calls `bad` for every
    /// unit that fails. A unit with no header is a failure only where it is
    /// known to be written (or every unit must be, `every_unit`), or where
    /// its header alone was damaged; otherwise it is counted unwritten.
    pub fn check(&self, buf: &[u8], off: u64, mut bad: impl FnMut(u64, Mismatch)) -> Checked {
        let mut n = Checked::default();
        for (i, u) in buf.chunks_exact(UNIT).enumerate() {
            let addr = off + (i * UNIT) as u64;
            let known = self.last(addr / UNIT as u64);
            match check_unit(u, addr) {
                Err(Mismatch::NoHeader) if damaged_header(u, addr) => bad(addr, Mismatch::Checksum),
                Err(Mismatch::NoHeader) if known.is_none() && !self.every_unit => {
                    n.unwritten += 1;
                    continue;
                }
                Err(m) => bad(addr, m),
                Ok(found) => {
                    if let Some(expected) = known {
                        // Older than recorded is a lost write. Newer is
                        // wrong only where this run recorded the write
                        // itself: a state saved earlier (by another run, or
                        // a checkpoint of one killed later) is merely behind.
                        let ours = expected >> 32 == self.epoch;
                        if found < expected || (ours && found != expected) {
                            bad(addr, Mismatch::Stale { found, expected });
                        }
                    }
                }
            }
            n.units += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_kind_of_damage() {
        let mut b = vec![0u8; 4 * UNIT];
        fill(&mut b, 8192, 7);
        let g = Generations::default();
        let mut bad = Vec::new();
        assert_eq!(g.check(&b, 8192, |a, m| bad.push((a, m))).units, 4);
        assert!(bad.is_empty());
        // Misplaced: read as if from elsewhere.
        g.check(&b[..UNIT], 0, |a, m| bad.push((a, m)));
        assert_eq!(bad, vec![(0, Mismatch::Address(8192))]);
        bad.clear();
        // One flipped bit in the payload.
        let mut c = b.clone();
        c[UNIT + 300] ^= 4;
        g.check(&c, 8192, |a, m| bad.push((a, m)));
        assert_eq!(bad, vec![(8192 + UNIT as u64, Mismatch::Checksum)]);
        bad.clear();
        // Stale: a newer generation was written to the second unit.
        g.wrote(8192 + UNIT as u64, UNIT, 8);
        g.check(&b, 8192, |a, m| bad.push((a, m)));
        assert_eq!(
            bad,
            vec![(
                8192 + UNIT as u64,
                Mismatch::Stale {
                    found: 7,
                    expected: 8
                }
            )]
        );
        bad.clear();
        // A never-written unit is no failure unless it is known written,
        // or every unit must carry a header.
        assert_eq!(
            g.check(&[0u8; UNIT], 0, |a, m| bad.push((a, m))).unwritten,
            1
        );
        assert!(bad.is_empty());
        g.wrote(0, UNIT, 9);
        g.check(&[0u8; UNIT], 0, |a, m| bad.push((a, m)));
        assert_eq!(bad, vec![(0, Mismatch::NoHeader)]);
        bad.clear();
        let mut strict = Generations::default();
        strict.require_every_unit();
        strict.check(&[0u8; UNIT], 0, |a, m| bad.push((a, m)));
        assert_eq!(bad, vec![(0, Mismatch::NoHeader)]);
    }

    #[test]
    fn blocks_are_judged_by_their_own_units() {
        let mut b = vec![0u8; 4 * UNIT];
        assert_eq!(judge(&b), Judged::Unknown);
        fill(&mut b, 0, 5);
        assert_eq!(judge(&b), Judged::Intact);
        for at in [1, 6, 30, UNIT + 200] {
            let mut c = b.clone();
            c[at] ^= 0x40;
            assert_eq!(judge(&c), Judged::Damaged, "byte {at}");
        }
        b[UNIT..2 * UNIT].fill(0);
        assert_eq!(judge(&b), Judged::Unknown);
    }

    #[test]
    fn a_damaged_magic_is_caught_even_where_nothing_is_known() {
        let g = Generations::default();
        for byte in 0..4 {
            let mut b = vec![0u8; UNIT];
            fill(&mut b, 4096, 3);
            b[byte] ^= 0x10;
            let mut bad = Vec::new();
            let n = g.check(&b, 4096, |a, m| bad.push((a, m)));
            assert_eq!(bad, vec![(4096, Mismatch::Checksum)], "byte {byte}");
            assert_eq!(n.unwritten, 0);
        }
    }
}
