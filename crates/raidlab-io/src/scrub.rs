//! Scrubbing, as md's `check` and `repair` sync actions: every stripe of
//! every redundant array is read whole and its parity or copies compared
//! with its data, in 4 KiB blocks (md's stripe page), counting
//! `mismatch_cnt` as md does (8 sectors per mismatching block).
//!
//! Which member of an inconsistent stripe is wrong is said only where it is
//! known. Data written under `--verify` knows: a block whose 512-byte units
//! fail their own checksums is damaged ([`verify::judge`]). RAID 5 rebuilds
//! one damaged data block from parity, RAID 6 up to two from P and Q, and a
//! mirror takes an intact copy; a stripe with more damage than its
//! redundancy covers is left as it is and reported unrepairable. With
//! every data block intact, the parity is what is wrong. RAID 6 also
//! locates a single bad data member from the syndromes alone, as mdadm's
//! `raid6check` does (the byte error e at data slot z gives ΔP = e and
//! ΔQ = g^z · e, so z = log ΔQ − log ΔP, the same for every bad byte).
//! Where nothing tells, the stripe is reported inconsistent with the member
//! unknown, and `repair` rewrites parity from the data, as md does. Arrays
//! with a member `missing` have nothing to compare and are reported as
//! skipped; inner arrays are scrubbed first.

use crate::backend::block_on;
use crate::backend::{Backend, Members};
use crate::buf::ABuf;
use crate::exec::{Exec, VNode, Vol};
use crate::verify::{self, Judged};
use raidlab_layout::{gf, Geometry, Level};
use std::io;

/// md compares and counts in 4 KiB blocks (`STRIPE_SIZE`).
const BLOCK: usize = 4096;
/// Sectors `mismatch_cnt` counts per mismatching block (`STRIPE_SECTORS`).
const SECTORS_PER_BLOCK: u64 = 8;
/// Mismatches described one by one; the count goes on.
const MAX_LISTED: usize = 100;

/// What was wrong in one block, and where.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mismatch {
    /// The array (`raid6 at column 1`).
    pub array: String,
    /// Stripe (RAID 5/6) or chunk row (mirrors).
    pub stripe: u64,
    /// The member found wrong: a path, or an inner array's name; `None`
    /// where the stripe is inconsistent and nothing tells which member is.
    pub member: Option<String>,
    /// Byte offset on that member (a file offset for a path); with no
    /// member, on every member of the array.
    pub offset: u64,
    /// What was wrong (`parity`, `P`, `Q`, `P and Q`, `data (...)`,
    /// `copy`, `stripe inconsistent (...)`).
    pub what: &'static str,
    /// It was rewritten (repair).
    pub repaired: bool,
    /// The redundancy cannot rebuild it: left as it is.
    pub unrepairable: bool,
}

/// One array's scrub.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArrayScrub {
    /// The array (`raid5 at column 1`).
    pub array: String,
    /// Stripes or rows compared.
    pub rows: u64,
    /// md's `mismatch_cnt`: sectors in mismatching 4 KiB blocks.
    pub mismatch_cnt: u64,
    /// Why it was not compared (no redundancy, or degraded).
    pub skipped: Option<String>,
}

/// A whole scrub.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScrubReport {
    /// Each array, inner arrays first.
    pub arrays: Vec<ArrayScrub>,
    /// The first mismatches, described.
    pub mismatches: Vec<Mismatch>,
    /// Sum of the arrays' `mismatch_cnt`.
    pub mismatch_cnt: u64,
    /// Blocks (or copies) wrong beyond what the redundancy can rebuild,
    /// left as they were.
    pub unrepairable: u64,
}

/// A 4 KiB block of a stripe (or mirror row): `len` bytes from `blk` in
/// each member's chunk.
#[derive(Clone, Copy)]
struct At {
    stripe: u64,
    blk: usize,
    len: usize,
}

struct Scrubber<'a, 'm> {
    ex: Exec<'a, 'm>,
    names: &'a [String],
    repair: bool,
    report: ScrubReport,
}

/// Scrub every redundant array of `vol`; `repair` rewrites what is wrong.
pub(crate) fn scrub(
    vol: &Vol,
    members: &Members,
    names: &[String],
    repair: bool,
) -> io::Result<ScrubReport> {
    let be = Backend::psync(members);
    let mut s = Scrubber {
        ex: Exec {
            vol,
            be: &be,
            mirror_turn: std::cell::Cell::new(0),
            spares: Default::default(),
        },
        names,
        repair,
        report: ScrubReport::default(),
    };
    for n in vol.arrays_bottom_up() {
        s.array(n)?;
    }
    s.report.mismatch_cnt = s.report.arrays.iter().map(|a| a.mismatch_cnt).sum();
    Ok(s.report)
}

impl Scrubber<'_, '_> {
    fn array(&mut self, n: usize) -> io::Result<()> {
        let VNode::Array {
            geo,
            children,
            failed,
            ..
        } = &self.ex.vol.nodes[n]
        else {
            return Ok(());
        };
        let mut a = ArrayScrub {
            array: self.names[n].clone(),
            rows: 0,
            mismatch_cnt: 0,
            skipped: None,
        };
        if failed.iter().any(|&f| f) {
            a.skipped = Some("a member is missing: nothing to compare".into());
        } else {
            match geo.level() {
                Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                    self.parity_rows(geo, children, &mut a)?
                }
                Level::Raid1 | Level::Raid10 => self.mirror_rows(geo, children, &mut a)?,
                Level::Raid0 | Level::Concat => a.skipped = Some("no redundancy".into()),
            }
        }
        self.report.arrays.push(a);
        Ok(())
    }

    /// Count one mismatching 4 KiB block in md's `mismatch_cnt`.
    fn count(&mut self, a: &mut ArrayScrub) {
        a.mismatch_cnt += SECTORS_PER_BLOCK;
    }

    /// Record what is wrong in stripe (or row) `stripe`: on child node
    /// `child` at its offset `off` (or on an unknown member), and whether
    /// the redundancy can rebuild it (a repair then did).
    fn found(&mut self, f: Finding, stripe: u64, off: u64, a: &ArrayScrub) {
        // An unknown member's offset is given on the child named for the
        // place: one array's members share their data offset.
        let (member, offset) = self.place(f.child, off);
        let member = f.known.then_some(member);
        if !f.repairable {
            self.report.unrepairable += 1;
        }
        if self.report.mismatches.len() < MAX_LISTED {
            self.report.mismatches.push(Mismatch {
                array: a.array.clone(),
                stripe,
                member,
                offset,
                what: f.what,
                repaired: self.repair && f.repairable,
                unrepairable: !f.repairable,
            });
        }
    }

    /// Where byte `off` of child `c` is, for messages: a member file and
    /// file offset, or an inner array and its offset.
    fn place(&self, child: usize, off: u64) -> (String, u64) {
        match &self.ex.vol.nodes[child] {
            VNode::Member { base, .. } => (self.names[child].clone(), base + off),
            _ => (self.names[child].clone(), off),
        }
    }

    fn read(&self, node: usize, off: u64, buf: &mut [u8]) -> io::Result<()> {
        block_on(self.ex.be, self.ex.read(node, off, buf))
    }

    fn write(&self, node: usize, off: u64, buf: &[u8]) -> io::Result<()> {
        block_on(self.ex.be, self.ex.write(node, off, buf))
    }

    /// RAID 5/6: every stripe, every 4 KiB block of it.
    fn parity_rows(
        &mut self,
        geo: &Geometry,
        kids: &[usize],
        a: &mut ArrayScrub,
    ) -> io::Result<()> {
        let chunk = geo.chunk() as usize;
        let mut bufs: Vec<ABuf> = kids.iter().map(|_| ABuf::zeroed(chunk)).collect();
        for s in 0..geo.member_size() / geo.chunk() {
            let at = s * geo.chunk();
            for (m, b) in bufs.iter_mut().enumerate() {
                self.read(kids[m], at, b)?;
            }
            for blk in (0..chunk).step_by(BLOCK) {
                let at = At {
                    stripe: s,
                    blk,
                    len: BLOCK.min(chunk - blk),
                };
                match geo.level() {
                    Level::Raid4 | Level::Raid5 => self.raid5_block(geo, kids, at, &mut bufs, a)?,
                    _ => self.raid6_block(geo, kids, at, &mut bufs, a)?,
                }
            }
            a.rows += 1;
        }
        Ok(())
    }

    fn raid5_block(
        &mut self,
        geo: &Geometry,
        kids: &[usize],
        at: At,
        bufs: &mut [ABuf],
        a: &mut ArrayScrub,
    ) -> io::Result<()> {
        let (s, blk, len) = (at.stripe, at.blk, at.len);
        let (pd, _) = geo.parity_of(s);
        let mut p = vec![0u8; len];
        for (m, b) in bufs.iter().enumerate() {
            if m != pd {
                xor_into(&mut p, &b[blk..blk + len]);
            }
        }
        if p[..] == bufs[pd][blk..blk + len] {
            return Ok(());
        }
        self.count(a);
        let off = s * geo.chunk() + blk as u64;
        let data: Vec<usize> = (0..bufs.len()).filter(|&m| m != pd).collect();
        let (damaged, all_intact) = judge_blocks(&data, bufs, at);
        let fix: Option<(usize, Vec<u8>)> = match damaged[..] {
            [] if all_intact => Some((pd, p)),
            [] => {
                // Nothing tells which member is wrong: md's repair
                // rewrites parity from the data.
                let what = "stripe inconsistent (the member at fault is unknown: no verify data tells; repair rewrites parity from the data, as md does)";
                self.put(kids[pd], off, &p, &mut bufs[pd][blk..blk + len])?;
                self.found(Finding::unknown(kids[pd], what), s, off, a);
                return Ok(());
            }
            [d] => {
                let mut rebuilt = p;
                xor_into(&mut rebuilt, &bufs[pd][blk..blk + len]);
                xor_into(&mut rebuilt, &bufs[d][blk..blk + len]);
                (verify::judge(&rebuilt) == Judged::Intact).then_some((d, rebuilt))
            }
            _ => None,
        };
        match fix {
            Some((t, bytes)) => {
                let what = if t == pd {
                    "parity"
                } else {
                    "data (fails its verify checksums; parity rebuilds it)"
                };
                self.put(kids[t], off, &bytes, &mut bufs[t][blk..blk + len])?;
                self.found(Finding::on(kids[t], what, true), s, off, a);
            }
            None => {
                let what = "data (fails its verify checksums; RAID 5 parity cannot rebuild it)";
                for &d in &damaged {
                    self.found(Finding::on(kids[d], what, false), s, off, a);
                }
            }
        }
        Ok(())
    }

    /// Under repair, write `bytes` to child `node` at `off` and keep the
    /// stripe's copy in `held` up to date.
    fn put(&self, node: usize, off: u64, bytes: &[u8], held: &mut [u8]) -> io::Result<()> {
        if self.repair {
            self.write(node, off, bytes)?;
            held.copy_from_slice(bytes);
        }
        Ok(())
    }

    fn raid6_block(
        &mut self,
        geo: &Geometry,
        kids: &[usize],
        at: At,
        bufs: &mut [ABuf],
        a: &mut ArrayScrub,
    ) -> io::Result<()> {
        let (s, blk, len) = (at.stripe, at.blk, at.len);
        let (pd, qd) = geo.parity_of(s);
        let qd = qd.expect("raid6 has Q");
        let (p, q) = syndromes(geo, s, bufs, at);
        let dp = xor(&p, &bufs[pd][blk..blk + len]);
        let dq = xor(&q, &bufs[qd][blk..blk + len]);
        let (p_bad, q_bad) = (dp.iter().any(|&x| x != 0), dq.iter().any(|&x| x != 0));
        if !p_bad && !q_bad {
            return Ok(());
        }
        self.count(a);
        let off = s * geo.chunk() + blk as u64;
        let data: Vec<usize> = (0..geo.data_disks())
            .map(|j| geo.data_member(s, j))
            .collect();
        let (damaged, all_intact) = judge_blocks(&data, bufs, at);
        if damaged.is_empty() {
            return self.raid6_by_syndromes(geo, kids, at, bufs, [p, q, dp, dq], all_intact, a);
        }
        // Damaged data blocks: RAID 6 rebuilds up to two from P and Q (P
        // alone first, so a bad Q does not spoil one rebuild).
        let fixed = (damaged.len() <= 2)
            .then(|| rebuild_blocks(geo, s, bufs, at, &damaged, pd))
            .flatten();
        let Some(blocks) = fixed else {
            let what = "data (fails its verify checksums; more than P and Q can rebuild)";
            for &d in &damaged {
                self.found(Finding::on(kids[d], what, false), s, off, a);
            }
            return Ok(());
        };
        for &d in &damaged {
            let what = "data (fails its verify checksums; P and Q rebuild it)";
            self.put(kids[d], off, &blocks[d], &mut bufs[d][blk..blk + len])?;
            self.found(Finding::on(kids[d], what, true), s, off, a);
        }
        // P or Q may have been wrong too: compare them with the data as
        // rebuilt.
        let (p, q) = syndromes_of(geo, s, &blocks);
        for (t, par, what) in [(pd, p, "P"), (qd, q, "Q")] {
            if par[..] != blocks[t][..] {
                self.put(kids[t], off, &par, &mut bufs[t][blk..blk + len])?;
                self.found(Finding::on(kids[t], what, true), s, off, a);
            }
        }
        Ok(())
    }

    /// A RAID 6 block whose data blocks pass their verify checksums (or
    /// carry none), with P and Q computed from its data and their
    /// differences from the stored ones: P alone or Q alone wrong is rewritten; both wrong, the
    /// syndromes locate a single bad data member; otherwise, with every
    /// data block intact, P and Q are what is wrong, and with no verify data
    /// the member is unknown (md's repair rewrites P and Q).
    #[allow(clippy::too_many_arguments)]
    fn raid6_by_syndromes(
        &mut self,
        geo: &Geometry,
        kids: &[usize],
        at: At,
        bufs: &mut [ABuf],
        [p, q, dp, dq]: [Vec<u8>; 4],
        all_intact: bool,
        a: &mut ArrayScrub,
    ) -> io::Result<()> {
        let (s, blk, len) = (at.stripe, at.blk, at.len);
        let (pd, qd) = geo.parity_of(s);
        let qd = qd.expect("raid6 has Q");
        let off = s * geo.chunk() + blk as u64;
        let (p_bad, q_bad) = (dp.iter().any(|&x| x != 0), dq.iter().any(|&x| x != 0));
        let located = (p_bad && q_bad)
            .then(|| locate(&dp, &dq))
            .flatten()
            .filter(|&z| z < geo.data_disks());
        if let (true, Some(z)) = (p_bad && q_bad, located) {
            let m = (0..geo.data_disks())
                .map(|j| geo.data_member(s, j))
                .find(|&m| geo.q_index(s, m) == z)
                .expect("a data member in every syndrome slot");
            let fixed = xor(&bufs[m][blk..blk + len], &dp);
            self.put(kids[m], off, &fixed, &mut bufs[m][blk..blk + len])?;
            self.found(
                Finding::on(kids[m], "data (located by P and Q)", true),
                s,
                off,
                a,
            );
            return Ok(());
        }
        let (who, what) = match (p_bad, q_bad, all_intact) {
            (true, false, _) => (Some(kids[pd]), "P"),
            (false, true, _) => (Some(kids[qd]), "Q"),
            (_, _, true) => (Some(kids[pd]), "P and Q"),
            _ => (None, "stripe inconsistent (the member at fault cannot be located: no single data member explains P and Q, and no verify data tells; repair rewrites P and Q from the data, as md does)"),
        };
        if p_bad {
            self.put(kids[pd], off, &p, &mut bufs[pd][blk..blk + len])?;
        }
        if q_bad {
            self.put(kids[qd], off, &q, &mut bufs[qd][blk..blk + len])?;
        }
        let f = match who {
            Some(c) => Finding::on(c, what, true),
            None => Finding::unknown(kids[pd], what),
        };
        self.found(f, s, off, a);
        Ok(())
    }

    /// RAID 1/10: every copy of every chunk row against the first.
    fn mirror_rows(
        &mut self,
        geo: &Geometry,
        kids: &[usize],
        a: &mut ArrayScrub,
    ) -> io::Result<()> {
        let row = match geo.level() {
            Level::Raid10 => geo.chunk(),
            _ => (1 << 20).min(geo.member_size()),
        };
        let mut copies = Vec::new();
        let mut v = 0;
        while v < geo.capacity() {
            let len = row.min(geo.capacity() - v) as usize;
            let (m, mo) = geo.locate(v);
            geo.copies(m, mo, &mut copies);
            let mut data: Vec<ABuf> = Vec::with_capacity(copies.len());
            for &(c, co) in &copies {
                let mut b = ABuf::zeroed(len);
                self.read(kids[c], co, &mut b)?;
                data.push(b);
            }
            for blk in (0..len).step_by(BLOCK) {
                let end = (blk + BLOCK).min(len);
                self.mirror_block(
                    kids,
                    &copies,
                    &data,
                    At {
                        stripe: v / row,
                        blk,
                        len: end - blk,
                    },
                    a,
                )?;
            }
            a.rows += 1;
            v += len as u64;
        }
        Ok(())
    }
}

impl Scrubber<'_, '_> {
    /// One 4 KiB block of every copy: copies that differ from the source
    /// are wrong. The source is the first copy, unless it fails its verify
    /// checksums and another copy passes them (or carries none); when
    /// every copy fails them, none can be trusted and nothing is rewritten.
    fn mirror_block(
        &mut self,
        kids: &[usize],
        copies: &[(usize, u64)],
        data: &[ABuf],
        at: At,
        a: &mut ArrayScrub,
    ) -> io::Result<()> {
        let (blk, end, row) = (at.blk, at.blk + at.len, at.stripe);
        if data.iter().all(|d| d[blk..end] == data[0][blk..end]) {
            return Ok(());
        }
        let judged: Vec<Judged> = data.iter().map(|d| verify::judge(&d[blk..end])).collect();
        let src = match judged[0] {
            Judged::Intact => Some(0),
            _ => (0..data.len())
                .find(|&i| judged[i] == Judged::Intact)
                .or_else(|| (0..data.len()).find(|&i| judged[i] != Judged::Damaged)),
        };
        for (i, &(c, co)) in copies.iter().enumerate() {
            let Some(src) = src else {
                self.count(a);
                let what = "copy (every copy fails its verify checksums)";
                self.found(Finding::on(kids[c], what, false), row, co + blk as u64, a);
                continue;
            };
            if data[i][blk..end] == data[src][blk..end] {
                continue;
            }
            if self.repair {
                self.write(kids[c], co + blk as u64, &data[src][blk..end])?;
            }
            self.count(a);
            self.found(Finding::on(kids[c], "copy", true), row, co + blk as u64, a);
        }
        Ok(())
    }
}

/// One thing wrong in a block: where (a child node, and whether it is known
/// to be the one at fault or only names the place), what, and whether the
/// redundancy can rebuild it.
struct Finding {
    child: usize,
    known: bool,
    what: &'static str,
    repairable: bool,
}

impl Finding {
    /// Child `child` is wrong.
    fn on(child: usize, what: &'static str, repairable: bool) -> Self {
        Finding {
            child,
            known: true,
            what,
            repairable,
        }
    }

    /// The stripe is inconsistent and no member is known to be at fault;
    /// `place` is one of them, for the offset.
    fn unknown(place: usize, what: &'static str) -> Self {
        Finding {
            child: place,
            known: false,
            what,
            repairable: true,
        }
    }
}

/// `dst ^= src`.
fn xor_into(dst: &mut [u8], src: &[u8]) {
    dst.iter_mut().zip(src).for_each(|(x, y)| *x ^= y);
}

/// `a ^ b`.
fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// The data members among `data` whose block fails its verify checksums,
/// and whether every one of them passes.
fn judge_blocks(data: &[usize], bufs: &[ABuf], at: At) -> (Vec<usize>, bool) {
    let judged: Vec<(usize, Judged)> = data
        .iter()
        .map(|&m| (m, verify::judge(&bufs[m][at.blk..at.blk + at.len])))
        .collect();
    let damaged = judged
        .iter()
        .filter(|(_, j)| *j == Judged::Damaged)
        .map(|(m, _)| *m)
        .collect();
    (damaged, judged.iter().all(|(_, j)| *j == Judged::Intact))
}

/// Copies of one block of every member of a stripe.
fn blocks_of(bufs: &[ABuf], at: At) -> Vec<ABuf> {
    bufs.iter()
        .map(|b| {
            let mut c = ABuf::zeroed(at.len);
            c.copy_from_slice(&b[at.blk..at.blk + at.len]);
            c
        })
        .collect()
}

/// P and Q of a RAID 6 stripe's block computed from its data.
fn syndromes(geo: &Geometry, s: u64, bufs: &[ABuf], at: At) -> (Vec<u8>, Vec<u8>) {
    syndromes_of(geo, s, &blocks_of(bufs, at))
}

/// P and Q of a RAID 6 stripe from one block per member.
fn syndromes_of(geo: &Geometry, s: u64, blocks: &[ABuf]) -> (Vec<u8>, Vec<u8>) {
    let k = geo.data_disks();
    let mut order: Vec<&[u8]> = vec![&[]; k];
    for j in 0..k {
        let m = geo.data_member(s, j);
        order[geo.q_index(s, m)] = &blocks[m];
    }
    let len = blocks[0].len();
    let (mut p, mut q) = (vec![0u8; len], vec![0u8; len]);
    gf::gen_pq(&order, &mut p, &mut q);
    (p, q)
}

/// The stripe's blocks with the `damaged` data blocks rebuilt from P (one)
/// or P and Q (two), or for one, from Q where P gives no intact block;
/// `None` when no rebuild passes the blocks' verify checksums.
fn rebuild_blocks(
    geo: &Geometry,
    s: u64,
    bufs: &[ABuf],
    at: At,
    damaged: &[usize],
    pd: usize,
) -> Option<Vec<ABuf>> {
    let tries: &[bool] = if damaged.len() == 1 {
        &[false, true]
    } else {
        &[false]
    };
    tries.iter().find_map(|&without_p| {
        let mut blocks = blocks_of(bufs, at);
        let mut failed = vec![false; bufs.len()];
        damaged.iter().for_each(|&d| failed[d] = true);
        failed[pd] = without_p;
        crate::exec::rebuild(geo, s, &failed, &mut blocks);
        damaged
            .iter()
            .all(|&d| verify::judge(&blocks[d]) == Judged::Intact)
            .then_some(blocks)
    })
}

/// The data slot a RAID 6 single-member error lies in: ΔP = e and
/// ΔQ = g^z · e at every bad byte, so z = log ΔQ − log ΔP must agree
/// everywhere (and ΔQ be zero where ΔP is). `None` when it does not.
fn locate(dp: &[u8], dq: &[u8]) -> Option<usize> {
    let mut z = None;
    for (&p, &q) in dp.iter().zip(dq) {
        match (p, q) {
            (0, 0) => {}
            (0, _) | (_, 0) => return None,
            _ => {
                let zi = (gf::log(q) as usize + 255 - gf::log(p) as usize) % 255;
                if *z.get_or_insert(zi) != zi {
                    return None;
                }
            }
        }
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_bad_data_slot_is_located_from_p_and_q() {
        let data: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i * 37 + 1; 64]).collect();
        let (mut p, mut q) = (vec![0u8; 64], vec![0u8; 64]);
        let refs: Vec<&[u8]> = data.iter().map(|d| &d[..]).collect();
        gf::gen_pq(&refs, &mut p, &mut q);
        for z in 0..5 {
            let mut bad = data.clone();
            bad[z][10] ^= 0x5a;
            bad[z][40] ^= 0x01;
            let refs: Vec<&[u8]> = bad.iter().map(|d| &d[..]).collect();
            let (mut p2, mut q2) = (vec![0u8; 64], vec![0u8; 64]);
            gf::gen_pq(&refs, &mut p2, &mut q2);
            let dp: Vec<u8> = p.iter().zip(&p2).map(|(a, b)| a ^ b).collect();
            let dq: Vec<u8> = q.iter().zip(&q2).map(|(a, b)| a ^ b).collect();
            assert_eq!(locate(&dp, &dq), Some(z));
        }
        // Two slots bad: no single location.
        let mut bad = data.clone();
        bad[1][3] ^= 1;
        bad[2][3] ^= 1;
        let refs: Vec<&[u8]> = bad.iter().map(|d| &d[..]).collect();
        let (mut p2, mut q2) = (vec![0u8; 64], vec![0u8; 64]);
        gf::gen_pq(&refs, &mut p2, &mut q2);
        let dp: Vec<u8> = p.iter().zip(&p2).map(|(a, b)| a ^ b).collect();
        let dq: Vec<u8> = q.iter().zip(&q2).map(|(a, b)| a ^ b).collect();
        assert_ne!(locate(&dp, &dq), Some(1));
    }
}
