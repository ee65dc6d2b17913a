//! Scrubbing, as md's `check` and `repair` sync actions: every stripe of
//! every redundant array is read whole and its parity or copies compared
//! with its data, in 4 KiB blocks (md's stripe page), counting
//! `mismatch_cnt` as md does (8 sectors per mismatching block).
//!
//! Repair follows md: RAID 5 parity and mirror copies are rewritten from
//! the data and the first copy — except where the data was written under
//! `--verify`: a block whose 512-byte units fail their own checksums is the
//! damaged one, so a RAID 5 data block that fails while the others pass is
//! rebuilt from parity, and a damaged first copy is replaced by an intact
//! one (read-repair, knowing which side is right). RAID 6 does better than md's kernel
//! repair, as mdadm's `raid6check` does: when P and Q both mismatch, the
//! syndromes locate a single bad data member (the byte error e at data
//! slot z gives ΔP = e and ΔQ = g^z · e, so z = log ΔQ − log ΔP, the same
//! for every bad byte) and the data is corrected; otherwise P and Q are
//! rewritten from the data. Arrays with a member `missing` have nothing to
//! compare and are reported as skipped; inner arrays are scrubbed first.

use crate::backend::{Backend, Members};
use crate::buf::ABuf;
use crate::exec::{Exec, VNode, Vol};
use crate::resync::block_on;
use crate::verify;
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
    /// The member found wrong: a path, or an inner array's name.
    pub member: String,
    /// Byte offset on that member (a file offset for a path).
    pub offset: u64,
    /// What was wrong: `parity`, `P`, `Q`, `data (located by P and Q)`,
    /// `P and Q (the bad member cannot be located)` or `copy`.
    pub what: &'static str,
    /// It was rewritten (repair).
    pub repaired: bool,
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

    /// Record a mismatch in stripe (or row) `stripe`, on child node
    /// `child` at its offset `off`.
    fn found(
        &mut self,
        a: &mut ArrayScrub,
        stripe: u64,
        child: usize,
        off: u64,
        what: &'static str,
    ) {
        let (member, offset) = self.place(child, off);
        let m = Mismatch {
            array: a.array.clone(),
            stripe,
            member,
            offset,
            what,
            repaired: self.repair,
        };
        self.note(a, m);
    }

    fn note(&mut self, a: &mut ArrayScrub, m: Mismatch) {
        a.mismatch_cnt += SECTORS_PER_BLOCK;
        if self.report.mismatches.len() < MAX_LISTED {
            self.report.mismatches.push(m);
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
        let At {
            stripe: s,
            blk,
            len,
        } = at;
        let (pd, _) = geo.parity_of(s);
        let mut p = vec![0u8; len];
        for (m, b) in bufs.iter().enumerate() {
            if m != pd {
                p.iter_mut()
                    .zip(&b[blk..blk + len])
                    .for_each(|(x, y)| *x ^= y);
            }
        }
        if p[..] == bufs[pd][blk..blk + len] {
            return Ok(());
        }
        let off = s * geo.chunk() + blk as u64;
        // A data block that fails its verify checksums while the others
        // pass is the damaged one: rebuild it from parity and the rest.
        let damaged: Vec<usize> = (0..bufs.len())
            .filter(|&m| m != pd && !verify::intact(&bufs[m][blk..blk + len]))
            .collect();
        let data_blocks_checkable = damaged.len() < bufs.len() - 1;
        let (target, what, fix) = match damaged[..] {
            [d] if data_blocks_checkable => {
                let rebuilt: Vec<u8> = p
                    .iter()
                    .zip(&bufs[pd][blk..blk + len])
                    .zip(&bufs[d][blk..blk + len])
                    .map(|((x, y), z)| x ^ y ^ z)
                    .collect();
                (d, "data (found by its verify checksums)", rebuilt)
            }
            _ => (pd, "parity", p),
        };
        if self.repair {
            self.write(kids[target], off, &fix)?;
            bufs[target][blk..blk + len].copy_from_slice(&fix);
        }
        self.found(a, s, kids[target], off, what);
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
        let At {
            stripe: s,
            blk,
            len,
        } = at;
        let (pd, qd) = geo.parity_of(s);
        let qd = qd.expect("raid6 has Q");
        let k = geo.data_disks();
        // Data members in syndrome order.
        let order: Vec<usize> = {
            let mut o = vec![0; k];
            for j in 0..k {
                let m = geo.data_member(s, j);
                o[geo.q_index(s, m)] = m;
            }
            o
        };
        let (mut p, mut q) = (vec![0u8; len], vec![0u8; len]);
        {
            let data: Vec<&[u8]> = order.iter().map(|&m| &bufs[m][blk..blk + len]).collect();
            gf::gen_pq(&data, &mut p, &mut q);
        }
        let dp: Vec<u8> = p
            .iter()
            .zip(&bufs[pd][blk..blk + len])
            .map(|(a, b)| a ^ b)
            .collect();
        let dq: Vec<u8> = q
            .iter()
            .zip(&bufs[qd][blk..blk + len])
            .map(|(a, b)| a ^ b)
            .collect();
        let (p_bad, q_bad) = (dp.iter().any(|&x| x != 0), dq.iter().any(|&x| x != 0));
        if !p_bad && !q_bad {
            return Ok(());
        }
        let off = s * geo.chunk() + blk as u64;
        let located = (p_bad && q_bad)
            .then(|| locate(&dp, &dq))
            .flatten()
            .filter(|&z| z < k);
        let (target, what) = match (p_bad, q_bad, located) {
            (true, false, _) => (pd, "P"),
            (false, true, _) => (qd, "Q"),
            (_, _, Some(z)) => (order[z], "data (located by P and Q)"),
            _ => (pd, "P and Q (the bad member cannot be located)"),
        };
        if self.repair {
            match what {
                "P" => self.write(kids[pd], off, &p)?,
                "Q" => self.write(kids[qd], off, &q)?,
                "data (located by P and Q)" => {
                    let fixed: Vec<u8> = bufs[target][blk..blk + len]
                        .iter()
                        .zip(&dp)
                        .map(|(d, e)| d ^ e)
                        .collect();
                    self.write(kids[target], off, &fixed)?;
                }
                _ => {
                    self.write(kids[pd], off, &p)?;
                    self.write(kids[qd], off, &q)?;
                }
            }
        }
        self.found(a, s, kids[target], off, what);
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
    /// checksums and another copy passes them.
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
        let src = if verify::intact(&data[0][blk..end]) {
            0
        } else {
            (0..data.len())
                .find(|&i| verify::intact(&data[i][blk..end]))
                .unwrap_or(0)
        };
        for (i, &(c, co)) in copies.iter().enumerate() {
            if data[i][blk..end] == data[src][blk..end] {
                continue;
            }
            if self.repair {
                self.write(kids[c], co + blk as u64, &data[src][blk..end])?;
            }
            self.found(a, row, kids[c], co + blk as u64, "copy");
        }
        Ok(())
    }
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
