//! The software RAID executor: volume reads and writes turned into member
//! operations by the layout crate's geometry, with parity computed by
//! [`crate::parity`]. Every level runs degraded when members are `missing`:
//! reads of a lost chunk are rebuilt from the rest of its stripe row, and
//! writes keep the survivors' parity consistent.
//!
//! Operations are futures polled by the worker's executor, so one host I/O
//! fans out to all its members at once, and nested arrays compose.

use crate::backend::Backend;
use crate::buf::ABuf;
use crate::error::{Error, ErrorKind};
use crate::parity;
use crate::topo::RealNode;
use raidlab_layout::{gf, Extent, Geometry, Level, Piece, StripeOp, WriteKind};
use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

/// A boxed future borrowing for `'a`.
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
type Res = io::Result<()>;

/// A compiled node.
#[derive(Clone)]
pub enum VNode {
    /// Member file `idx`, whose data starts `base` bytes in (after its md
    /// superblock and data offset).
    Member {
        /// Member index.
        idx: usize,
        /// Byte offset of the data area.
        base: u64,
    },
    /// A failed member.
    Missing,
    /// An array.
    Array {
        /// Geometry.
        geo: Geometry,
        /// Child node ids.
        children: Vec<usize>,
        /// Which children are `missing`.
        failed: Vec<bool>,
        /// Its column in the expression, for messages.
        col: usize,
    },
}

/// A compiled volume: node 0 is the root.
#[derive(Clone)]
pub struct Vol {
    /// Nodes.
    pub nodes: Vec<VNode>,
    /// Bytes the volume exposes.
    pub capacity: u64,
    /// Whether some array needs stripe locks (RAID 5/6).
    pub has_parity: bool,
}

impl Vol {
    /// Compile `root` over members whose data areas hold `sizes` bytes from
    /// `bases` on.
    pub fn build(root: &RealNode, sizes: &[u64], bases: &[u64]) -> Result<Vol, Error> {
        let mut v = Vol {
            nodes: Vec::new(),
            capacity: 0,
            has_parity: false,
        };
        let (_, cap) = v.add(root, sizes, bases, None)?;
        v.capacity = cap;
        Ok(v)
    }

    /// Add a node; `hint` is the size a `missing` member takes (its siblings').
    fn add(
        &mut self,
        n: &RealNode,
        sizes: &[u64],
        bases: &[u64],
        hint: Option<u64>,
    ) -> Result<(usize, u64), Error> {
        let id = self.nodes.len();
        match n {
            RealNode::Member(i) => {
                self.nodes.push(VNode::Member {
                    idx: *i,
                    base: bases[*i],
                });
                Ok((id, sizes[*i]))
            }
            RealNode::Missing => {
                self.nodes.push(VNode::Missing);
                Ok((id, hint.unwrap_or(0)))
            }
            RealNode::Array {
                level,
                chunk,
                layout,
                children,
                col,
                ..
            } => {
                self.nodes.push(VNode::Missing); // placeholder until children exist
                                                 // Present members first, so a missing one can take their size.
                let mut ids = vec![0; children.len()];
                let mut szs = vec![0; children.len()];
                for (i, c) in children.iter().enumerate() {
                    if !matches!(c, RealNode::Missing) {
                        (ids[i], szs[i]) = self.add(c, sizes, bases, None)?;
                    }
                }
                let hint = children
                    .iter()
                    .zip(&szs)
                    .filter(|(c, _)| !matches!(c, RealNode::Missing))
                    .map(|(_, s)| *s)
                    .min();
                for (i, c) in children.iter().enumerate() {
                    if matches!(c, RealNode::Missing) {
                        (ids[i], szs[i]) = self.add(c, sizes, bases, hint)?;
                    }
                }
                let geo = Geometry::new(*level, *chunk, *layout, &szs).map_err(|e| {
                    Error::new(
                        ErrorKind::Expression,
                        format!("{} at column {col}: {e}", level.word()),
                    )
                })?;
                let failed = children
                    .iter()
                    .map(|c| matches!(c, RealNode::Missing))
                    .collect();
                self.has_parity |= matches!(level, Level::Raid4 | Level::Raid5 | Level::Raid6);
                let cap = geo.capacity();
                self.nodes[id] = VNode::Array {
                    geo,
                    children: ids,
                    failed,
                    col: *col,
                };
                Ok((id, cap))
            }
        }
    }

    /// Bytes of each of `members` members its array uses: the geometry's
    /// member size (md's "Used Dev Size"); a lone member, its capacity.
    pub fn member_use(&self, members: usize) -> Vec<u64> {
        let mut used = vec![self.capacity; members];
        for n in &self.nodes {
            if let VNode::Array { geo, children, .. } = n {
                for &c in children {
                    if let VNode::Member { idx, .. } = self.nodes[c] {
                        used[idx] = geo.member_size();
                    }
                }
            }
        }
        used
    }

    /// The same volume with `members` failed (as if written `missing`):
    /// node ids stay the same, so a node of one is the node of the other.
    pub fn failing(&self, members: &[usize]) -> Vol {
        let mut v = self.clone();
        let gone: Vec<usize> = (0..v.nodes.len())
            .filter(|&n| matches!(v.nodes[n], VNode::Member { idx, .. } if members.contains(&idx)))
            .collect();
        for &n in &gone {
            v.nodes[n] = VNode::Missing;
        }
        for node in &mut v.nodes {
            if let VNode::Array {
                children, failed, ..
            } = node
            {
                for (k, c) in children.iter().enumerate() {
                    failed[k] |= gone.contains(c);
                }
            }
        }
        v
    }

    /// Member files and devices under the volume.
    pub fn members(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n, VNode::Member { .. }))
            .count()
    }

    /// Whether node `n` serves no data: a missing or failed member, or an
    /// array that has lost more members than it tolerates.
    pub(crate) fn down(&self, n: usize, h: &crate::backend::Health) -> bool {
        match &self.nodes[n] {
            VNode::Member { idx, .. } => h.is_dead(*idx),
            VNode::Missing => true,
            VNode::Array {
                geo,
                children,
                failed,
                ..
            } => {
                let lost: Vec<usize> = (0..children.len())
                    .filter(|&k| failed[k] || self.down(children[k], h))
                    .collect();
                !geo.level().survives(geo.layout(), children.len(), &lost)
            }
        }
    }

    /// A name for each node in messages: a member's path, an array's level
    /// and column.
    pub fn names(&self, paths: &[String]) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| match n {
                VNode::Member { idx, .. } => paths[*idx].clone(),
                VNode::Missing => "missing".into(),
                VNode::Array { geo, col, .. } => format!("{} at column {col}", geo.level().word()),
            })
            .collect()
    }

    /// Array nodes, every array after the arrays inside it: the order in
    /// which nested arrays are resynchronised (children are compiled after
    /// their parent, so higher ids first).
    pub fn arrays_bottom_up(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .rev()
            .filter(|&n| matches!(self.nodes[n], VNode::Array { .. }))
            .collect()
    }

    /// Where the byte at volume offset `off` of node `n` is stored: every
    /// (member file, member offset) holding a copy of it, down the tree
    /// (one place on parity and striped arrays, each copy on mirrors; none
    /// on a `missing` member).
    pub fn places(&self, n: usize, off: u64, out: &mut Vec<(usize, u64)>) {
        match &self.nodes[n] {
            VNode::Member { idx, base } => out.push((*idx, base + off)),
            VNode::Missing => {}
            VNode::Array { geo, children, .. } => {
                let (m, moff) = geo.locate(off);
                let mut copies = Vec::new();
                match geo.level() {
                    Level::Raid1 | Level::Raid10 => geo.copies(m, moff, &mut copies),
                    _ => copies.push((m, moff)),
                }
                for (c, coff) in copies {
                    self.places(children[c], coff, out);
                }
            }
        }
    }

    /// The stripe locks a host I/O needs: every (array, stripe) of a parity
    /// array it may touch, down the tree. Two I/Os that share a stripe run
    /// one after the other, as md's stripe cache serialises them.
    pub fn lock_keys(&self, n: usize, off: u64, len: u64, out: &mut Vec<(u32, u64)>) {
        let VNode::Array { geo, children, .. } = &self.nodes[n] else {
            return;
        };
        let c = geo.chunk();
        match geo.level() {
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                let sb = c * geo.data_disks() as u64;
                for s in off / sb..(off + len).div_ceil(sb) {
                    out.push((n as u32, s));
                    for &ch in children {
                        self.lock_keys(ch, s * c, c, out);
                    }
                }
            }
            _ => {
                let mut pieces = Vec::new();
                geo.pieces(off, len, &mut pieces);
                let mut copies = Vec::new();
                for p in pieces {
                    geo.copies(p.member as usize, p.member_off, &mut copies);
                    for &(m, mo) in &copies {
                        self.lock_keys(children[m], mo, p.len, out);
                    }
                }
            }
        }
    }
}

/// Locks held by in-flight host I/Os, shared by all workers.
#[derive(Default)]
pub struct Locks {
    held: Mutex<HashSet<(u32, u64)>>,
}

impl Locks {
    /// Take all of `keys` or none.
    pub fn try_lock(&self, keys: &[(u32, u64)]) -> bool {
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if keys.iter().any(|k| h.contains(k)) {
            return false;
        }
        h.extend(keys.iter().copied());
        true
    }

    /// Release keys taken by [`Locks::try_lock`].
    pub fn unlock(&self, keys: &[(u32, u64)]) {
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for k in keys {
            h.remove(k);
        }
    }
}

/// Wait until `keys` are all free, then hold them.
pub struct LockFut<'a> {
    /// Lock table.
    pub locks: &'a Locks,
    /// Keys wanted.
    pub keys: &'a [(u32, u64)],
    /// Scheduler to register with while waiting.
    pub sched: &'a crate::backend::Sched,
}

impl Future for LockFut<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.keys.is_empty() || self.locks.try_lock(self.keys) {
            Poll::Ready(())
        } else {
            let cur = self.sched.current.get();
            self.sched.lock_wait.borrow_mut().push(cur);
            Poll::Pending
        }
    }
}

/// Run futures concurrently; every one runs to completion (none is dropped
/// while its member I/O is in flight), then the first error is returned.
pub struct JoinAll<'a> {
    futs: Vec<Option<BoxFut<'a, Res>>>,
    err: Option<io::Error>,
}

/// See [`JoinAll`].
pub fn join_all(futs: Vec<BoxFut<'_, Res>>) -> JoinAll<'_> {
    JoinAll {
        futs: futs.into_iter().map(Some).collect(),
        err: None,
    }
}

impl Future for JoinAll<'_> {
    type Output = Res;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Res> {
        let this = &mut *self;
        let mut pending = false;
        for slot in this.futs.iter_mut() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(r) => {
                        *slot = None;
                        if let Err(e) = r {
                            this.err.get_or_insert(e);
                        }
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(this.err.take().map_or(Ok(()), Err))
        }
    }
}

/// An error when an array has lost more members than its level tolerates
/// (members failed during the run): its data is gone, and no plan for it
/// may be made.
fn lost_too_many(geo: &Geometry, failed: &[bool]) -> io::Result<()> {
    // Every I/O passes here: no allocation while nothing is lost.
    if !failed.contains(&true) {
        return Ok(());
    }
    let lost: Vec<usize> = (0..failed.len()).filter(|&k| failed[k]).collect();
    if geo.level().survives(geo.layout(), failed.len(), &lost) {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{} has lost {} of its {} members: its data is gone",
        geo.level().word(),
        lost.len(),
        failed.len()
    )))
}

/// Executes volume I/O for one worker.
pub struct Exec<'a, 'm> {
    /// The volume.
    pub vol: &'a Vol,
    /// The worker's back end.
    pub be: &'a Backend<'m>,
    /// Mirror reads taken so far: where copies are equally busy, each read
    /// goes to the next in turn, so every copy serves reads.
    pub mirror_turn: std::cell::Cell<usize>,
    /// Buffers kept for reuse by stripe writes.
    pub spares: crate::buf::Spares,
}

/// Where an array read's piece comes from (`Exec::piece_source`).
enum PieceSource {
    /// Child node and the offset in it.
    Node(usize, u64),
    /// A lost member's piece, rebuilt from the rest of its row.
    Rebuild,
}

/// The touched part of data chunk `k` of a stripe write: chunk-relative
/// range and the slice of new data.
struct Touch<'d> {
    k: usize,
    a: u64,
    b: u64,
    data: &'d [u8],
}

impl<'a, 'm> Exec<'a, 'm> {
    /// Read `buf.len()` bytes of node `n` at `off`, boxed (a future of one
    /// type whatever the node, for the pieces an array reads at once).
    pub fn read<'b>(&'b self, n: usize, off: u64, buf: &'b mut [u8]) -> BoxFut<'b, Res> {
        Box::pin(self.read_at(n, off, buf))
    }

    /// Read `buf.len()` bytes of node `n` at `off`: unboxed, for a host
    /// I/O's own future (an array's reads below it are boxed, which ends
    /// the recursion).
    pub fn read_at<'b>(
        &'b self,
        n: usize,
        off: u64,
        buf: &'b mut [u8],
    ) -> impl Future<Output = Res> + 'b {
        async move {
            match &self.vol.nodes[n] {
                VNode::Member { idx, base } => {
                    let r = self.be.read(*idx, base + off, buf).await;
                    self.failure(*idx, r)
                }
                VNode::Missing => Err(io::Error::other("read from a missing member")),
                VNode::Array {
                    geo,
                    children,
                    failed,
                    ..
                } => {
                    let now = self.failed_now(children, failed);
                    let failed = now.as_deref().unwrap_or(failed);
                    lost_too_many(geo, failed)?;
                    self.array_read(geo, children, failed, off, buf).await
                }
            }
        }
    }

    /// Write `data` to node `n` at `off`, boxed (see [`Exec::read`]).
    pub fn write<'b>(&'b self, n: usize, off: u64, data: &'b [u8]) -> BoxFut<'b, Res> {
        Box::pin(self.write_at(n, off, data))
    }

    /// Write `data` to node `n` at `off`: unboxed (see [`Exec::read_at`]).
    pub fn write_at<'b>(
        &'b self,
        n: usize,
        off: u64,
        data: &'b [u8],
    ) -> impl Future<Output = Res> + 'b {
        async move {
            match &self.vol.nodes[n] {
                VNode::Member { idx, base } => {
                    let r = self.be.write(*idx, base + off, data).await;
                    self.failure(*idx, r)
                }
                // A failed member takes no writes; parity carries its data.
                VNode::Missing => Ok(()),
                VNode::Array {
                    geo,
                    children,
                    failed,
                    ..
                } => {
                    let now = self.failed_now(children, failed);
                    let failed = now.as_deref().unwrap_or(failed);
                    lost_too_many(geo, failed)?;
                    self.array_write(geo, children, failed, off, data).await
                }
            }
        }
    }

    /// Operations pending on node `n`: a member's in flight; 0 for an
    /// array (its copies are taken in turn).
    fn pending(&self, n: usize) -> u32 {
        match self.vol.nodes[n] {
            VNode::Member { idx, .. } => self.be.pending(idx),
            _ => 0,
        }
    }

    /// A member operation's outcome: an error fails the member for the
    /// rest of the run (md fails a device that returns an I/O error).
    fn failure(&self, idx: usize, r: Res) -> Res {
        if let Err(e) = &r {
            self.be.health().fail(idx, e);
        }
        r
    }

    /// The array's failed children now: those written `missing` and, once
    /// members have failed during the run, those that are down.
    fn failed_now(&self, children: &[usize], failed: &[bool]) -> Option<Vec<bool>> {
        let h = self.be.health();
        if h.deaths() == 0 {
            return None;
        }
        Some(
            children
                .iter()
                .zip(failed)
                .map(|(&c, &f)| f || self.vol.down(c, h))
                .collect(),
        )
    }

    /// Make what was written to node `n` durable: every member of an array
    /// is flushed, as md forwards a flush to each device.
    pub fn flush<'b>(&'b self, n: usize) -> BoxFut<'b, Res> {
        Box::pin(async move {
            match &self.vol.nodes[n] {
                // A member that cannot flush has failed; the array's
                // durability rests on the others.
                VNode::Member { idx, .. } if self.be.health().is_dead(*idx) => Ok(()),
                VNode::Member { idx, .. } => {
                    let r = self.be.flush(*idx).await;
                    self.failure(*idx, r).or(Ok(()))
                }
                VNode::Missing => Ok(()),
                VNode::Array { children, .. } => {
                    join_all(children.iter().map(|&c| self.flush(c)).collect()).await
                }
            }
        })
    }

    fn array_read<'b>(
        &'b self,
        geo: &'b Geometry,
        children: &'b [usize],
        failed: &'b [bool],
        off: u64,
        buf: &'b mut [u8],
    ) -> BoxFut<'b, Res> {
        let mut pieces = Vec::new();
        geo.pieces(off, buf.len() as u64, &mut pieces);
        let mut copies = Vec::new();
        if let [p] = pieces[..] {
            // One piece (a read within a chunk, the common small read): it
            // needs no join.
            return match self.piece_source(geo, children, failed, p, &mut copies) {
                PieceSource::Node(c, co) => Box::pin(self.read_at(c, co, buf)),
                PieceSource::Rebuild => Box::pin(self.rebuild_piece(geo, children, failed, p, buf)),
            };
        }
        let mut futs: Vec<BoxFut<'b, Res>> = Vec::with_capacity(pieces.len());
        let mut rest = buf;
        for p in pieces {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(p.len as usize);
            rest = tail;
            futs.push(
                match self.piece_source(geo, children, failed, p, &mut copies) {
                    PieceSource::Node(c, co) => self.read(c, co, head),
                    PieceSource::Rebuild => {
                        Box::pin(self.rebuild_piece(geo, children, failed, p, head))
                    }
                },
            );
        }
        Box::pin(join_all(futs))
    }

    /// Where piece `p` of an array read is read from: a child node and its
    /// offset, or (a lost member of a parity array) rebuilt from its row.
    /// `copies` is scratch space.
    fn piece_source(
        &self,
        geo: &Geometry,
        children: &[usize],
        failed: &[bool],
        p: Piece,
        copies: &mut Vec<(usize, u64)>,
    ) -> PieceSource {
        let m = p.member as usize;
        match geo.level() {
            Level::Raid1 | Level::Raid10 => {
                // md's read balancing for SSDs: the healthy copy with the
                // fewest operations pending, ties taken in turn, so a
                // chunk's reads do not all land on one copy.
                geo.copies(m, p.member_off, copies);
                copies.retain(|(c, _)| !failed[*c]);
                let turn = self.mirror_turn.get();
                self.mirror_turn.set(turn.wrapping_add(1));
                let k = copies.len();
                let (c, co) = (0..k)
                    .map(|i| copies[(turn + i) % k])
                    .min_by_key(|&(c, _)| self.pending(children[c]))
                    .expect("a surviving copy");
                PieceSource::Node(children[c], co)
            }
            Level::Raid4 | Level::Raid5 | Level::Raid6 if failed[m] => PieceSource::Rebuild,
            _ => PieceSource::Node(children[m], p.member_off),
        }
    }

    /// Read a piece of a lost member by rebuilding its stripe row.
    async fn rebuild_piece(
        &self,
        geo: &Geometry,
        children: &[usize],
        failed: &[bool],
        p: Piece,
        out: &mut [u8],
    ) -> Res {
        let c = geo.chunk();
        let stripe = p.member_off / c;
        let a = p.member_off % c;
        let rows = self
            .row(geo, children, failed, stripe, a, a + p.len)
            .await?;
        out.copy_from_slice(&rows[p.member as usize]);
        self.spares.give_all(rows);
        Ok(())
    }

    /// Bytes `[a, b)` of every member of `stripe`, with lost data members
    /// rebuilt (lost parity is left zero).
    async fn row(
        &self,
        geo: &Geometry,
        children: &[usize],
        failed: &[bool],
        stripe: u64,
        a: u64,
        b: u64,
    ) -> io::Result<Vec<ABuf>> {
        let n = geo.members();
        let len = (b - a) as usize;
        let base = stripe * geo.chunk() + a;
        let mut bufs: Vec<ABuf> = (0..n).map(|_| self.spares.take(len)).collect();
        {
            let futs = bufs
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| !failed[*i])
                .map(|(i, buf)| self.read(children[i], base, &mut buf[..]))
                .collect();
            join_all(futs).await?;
        }
        rebuild(geo, stripe, failed, &mut bufs);
        Ok(bufs)
    }

    fn array_write<'b>(
        &'b self,
        geo: &'b Geometry,
        children: &'b [usize],
        failed: &'b [bool],
        off: u64,
        data: &'b [u8],
    ) -> BoxFut<'b, Res> {
        let mut futs: Vec<BoxFut<'b, Res>> = Vec::new();
        match geo.level() {
            Level::Raid4 | Level::Raid5 | Level::Raid6 => {
                let mut plan = Vec::new();
                geo.write_plan(off, data.len() as u64, &mut plan);
                if plan.len() == 1 {
                    // One stripe (the common small write): no join.
                    let op = plan.pop().expect("one stripe");
                    return Box::pin(self.stripe_write(geo, children, failed, op, off, data));
                }
                for op in plan {
                    futs.push(Box::pin(
                        self.stripe_write(geo, children, failed, op, off, data),
                    ));
                }
            }
            _ => {
                let mut pieces = Vec::new();
                geo.pieces(off, data.len() as u64, &mut pieces);
                let mut copies = Vec::new();
                for p in pieces {
                    let d = &data[(p.vol_off - off) as usize..(p.vol_off - off + p.len) as usize];
                    geo.copies(p.member as usize, p.member_off, &mut copies);
                    for &(c, co) in &copies {
                        if !failed[c] {
                            futs.push(self.write(children[c], co, d));
                        }
                    }
                }
            }
        }
        Box::pin(join_all(futs))
    }

    /// Write the part of `data` (volume bytes from `off`) that falls in
    /// `op`'s stripe, updating parity by the method the geometry chose and
    /// issuing exactly the pre-reads its plan lists.
    async fn stripe_write(
        &self,
        geo: &Geometry,
        children: &[usize],
        failed: &[bool],
        op: StripeOp,
        off: u64,
        data: &[u8],
    ) -> Res {
        let stripe = op.stripe;
        let w = RowWrite::new(geo, children, stripe, off, data);
        // Every path below overwrites P and Q whole before they are written:
        // gen_parity computes them afresh, read-modify-write starts them
        // from the old parity it read.
        let mut p = self.spares.take_any(w.row());
        let mut q = self
            .spares
            .take_any(if w.qd.is_some() { w.row() } else { 0 });
        if failed.iter().any(|&f| f) {
            // Degraded: rebuild the whole row, lay the new data over it and
            // recompute parity from it; write what survives.
            let mut rows = self
                .row(geo, children, failed, stripe, w.row_lo, w.row_hi)
                .await?;
            w.parity_over(&mut rows, &mut p, &mut q);
            self.spares.give_all(rows);
        } else {
            match op.kind {
                WriteKind::FullStripe => {
                    let mut by_member: Vec<&[u8]> = vec![&[]; geo.members()];
                    for t in &w.touches {
                        by_member[w.member(t.k)] = t.data;
                    }
                    gen_parity(geo, stripe, &by_member, &mut p, &mut q);
                }
                WriteKind::ReadModifyWrite => {
                    self.rmw_parity(&w, &op.reads, &mut p, &mut q).await?
                }
                WriteKind::ReconstructWrite => {
                    let mut rows = self.rest_of_row(&w, &op.reads).await?;
                    w.parity_over(&mut rows, &mut p, &mut q);
                    self.spares.give_all(rows);
                }
            }
        }
        let done = self.write_row(&w, failed, &p, &q).await;
        self.spares.give_all([p, q]);
        done
    }

    /// Read every extent of `reads` (member offsets of `w`'s array) into a
    /// buffer of its own. A member read fills its buffer or fails (a short
    /// transfer is an error), so the buffers need no zeroing first.
    async fn pre_read(&self, w: &RowWrite<'_>, reads: &[Extent]) -> io::Result<Vec<ABuf>> {
        let mut bufs: Vec<ABuf> = reads
            .iter()
            .map(|e| self.spares.take_any(e.len as usize))
            .collect();
        let futs = reads
            .iter()
            .zip(bufs.iter_mut())
            .map(|(e, b)| self.read(w.child(e.member as usize), e.offset, &mut b[..]))
            .collect();
        join_all(futs).await?;
        Ok(bufs)
    }

    /// Read-modify-write: `reads` are the old data of the touched ranges and
    /// the row's old parity; fold the change each chunk makes into P (and
    /// Q).
    async fn rmw_parity(
        &self,
        w: &RowWrite<'_>,
        reads: &[Extent],
        p: &mut ABuf,
        q: &mut ABuf,
    ) -> Res {
        let old = self.pre_read(w, reads).await?;
        let mut parities = 0;
        for (e, o) in reads.iter().zip(&old) {
            let m = e.member as usize;
            if m == w.pd || Some(m) == w.qd {
                debug_assert_eq!((e.offset, e.len), (w.base + w.row_lo, w.row() as u64));
                let dst = if m == w.pd { &mut *p } else { &mut *q };
                dst.copy_from_slice(o);
                parities += 1;
            }
        }
        // P and Q came unzeroed: the old parity must have replaced them.
        assert_eq!(
            parities,
            1 + usize::from(w.qd.is_some()),
            "read-modify-write reads the row's old parity"
        );
        for (e, mut o) in reads.iter().zip(old) {
            let m = e.member as usize;
            if m == w.pd || Some(m) == w.qd {
                self.spares.give(o);
                continue;
            }
            let t = w.touch_on(m);
            debug_assert_eq!((e.offset, e.len), (w.base + t.a, t.b - t.a));
            // o = old ^ new: the change this chunk makes.
            parity::xor_into(&mut o, t.data);
            let r = (t.a - w.row_lo) as usize..(t.b - w.row_lo) as usize;
            parity::xor_into(&mut p[r.clone()], &o);
            if w.qd.is_some() {
                let g = gf::pow2(w.geo.q_index(w.stripe, m));
                parity::mul_xor_into(&mut q[r], &o, g);
            }
            self.spares.give(o);
        }
        Ok(())
    }

    /// Reconstruct-write: `reads` are the parts of every data chunk's row
    /// that this write does not replace; return each data member's row with
    /// them read in place (the replaced parts are laid over by the caller;
    /// parity members' entries stay empty). The reads go straight into the
    /// rows, which therefore need no zeroing: the reads and the touched
    /// range cover each data member's row exactly (asserted).
    async fn rest_of_row(&self, w: &RowWrite<'_>, reads: &[Extent]) -> io::Result<Vec<ABuf>> {
        let geo = w.geo;
        let data: Vec<bool> = (0..geo.members())
            .map(|m| m != w.pd && Some(m) != w.qd)
            .collect();
        let mut rows: Vec<ABuf> = data
            .iter()
            .map(|&d| self.spares.take_any(if d { w.row() } else { 0 }))
            .collect();
        let mut order: Vec<&Extent> = reads.iter().collect();
        order.sort_unstable_by_key(|e| (e.member, e.offset));
        let mut futs: Vec<BoxFut<Res>> = Vec::with_capacity(reads.len());
        for (m, row) in rows.iter_mut().enumerate() {
            let mine = order.iter().filter(|e| e.member as usize == m);
            let gaps = carve_reads(w, m, row, mine, &mut futs, self);
            let touched = w
                .touches
                .iter()
                .find(|t| w.member(t.k) == m)
                .map(|t| (t.a, t.b));
            assert!(
                !data[m] || gaps == touched.map_or(vec![], |r| vec![r]),
                "member {m}: reads leave {gaps:?} of the row, the write replaces {touched:?}"
            );
        }
        join_all(futs).await?;
        Ok(rows)
    }

    /// Write the new data and parity to the members that survive.
    async fn write_row(&self, w: &RowWrite<'_>, failed: &[bool], p: &ABuf, q: &ABuf) -> Res {
        let mut futs: Vec<BoxFut<Res>> = Vec::new();
        for t in &w.touches {
            let m = w.member(t.k);
            if !failed[m] {
                futs.push(self.write(w.child(m), w.base + t.a, t.data));
            }
        }
        if !failed[w.pd] {
            futs.push(self.write(w.child(w.pd), w.base + w.row_lo, p));
        }
        if let Some(qd) = w.qd {
            if !failed[qd] {
                futs.push(self.write(w.child(qd), w.base + w.row_lo, q));
            }
        }
        join_all(futs).await
    }
}

/// Queue on `futs` the reads of `mine` (extents on member `m`, in offset
/// order) straight into their places in `row`, member `m`'s bytes
/// `[w.row_lo, w.row_hi)`; return the chunk ranges the reads leave
/// uncovered, in order.
fn carve_reads<'b, 'e: 'b>(
    w: &RowWrite<'_>,
    m: usize,
    row: &'b mut ABuf,
    mine: impl Iterator<Item = &'e &'e Extent>,
    futs: &mut Vec<BoxFut<'b, Res>>,
    exec: &'b Exec<'_, '_>,
) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut rest: &'b mut [u8] = &mut row[..];
    let mut at = w.row_lo;
    for e in mine {
        let from = e.offset - w.base;
        let skip = from
            .checked_sub(at)
            .expect("a member's reads do not overlap");
        if skip > 0 {
            gaps.push((at, from));
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip as usize);
        let (dst, tail) = tail.split_at_mut(e.len as usize);
        rest = tail;
        at = from + e.len;
        futs.push(exec.read(w.child(m), e.offset, dst));
    }
    if !rest.is_empty() {
        gaps.push((at, w.row_hi));
    }
    gaps
}

/// One stripe row a write touches: where its chunks and parity are, and
/// which ranges of which data chunks it replaces.
struct RowWrite<'d> {
    geo: &'d Geometry,
    children: &'d [usize],
    stripe: u64,
    /// Member offset of the stripe's first byte.
    base: u64,
    /// The row's range within a chunk: the union of the touched ranges.
    row_lo: u64,
    row_hi: u64,
    touches: Vec<Touch<'d>>,
    /// P's member, and Q's (RAID 6).
    pd: usize,
    qd: Option<usize>,
}

impl<'d> RowWrite<'d> {
    /// The part of `data` (volume bytes from `off`) in `stripe`.
    fn new(
        geo: &'d Geometry,
        children: &'d [usize],
        stripe: u64,
        off: u64,
        data: &'d [u8],
    ) -> Self {
        let c = geo.chunk();
        let dd = geo.data_disks();
        let s0 = stripe * c * dd as u64;
        let end = off + data.len() as u64;
        let touches: Vec<Touch> = (0..dd)
            .filter_map(|k| {
                let c0 = s0 + k as u64 * c;
                let lo = off.max(c0);
                let hi = end.min(c0 + c);
                (lo < hi).then(|| Touch {
                    k,
                    a: lo - c0,
                    b: hi - c0,
                    data: &data[(lo - off) as usize..(hi - off) as usize],
                })
            })
            .collect();
        let (pd, qd) = geo.parity_of(stripe);
        RowWrite {
            geo,
            children,
            stripe,
            base: stripe * c,
            row_lo: touches.iter().map(|t| t.a).min().unwrap_or(0),
            row_hi: touches.iter().map(|t| t.b).max().unwrap_or(0),
            touches,
            pd,
            qd,
        }
    }

    /// Bytes of the row.
    fn row(&self) -> usize {
        (self.row_hi - self.row_lo) as usize
    }

    /// The member holding data chunk `k`.
    fn member(&self, k: usize) -> usize {
        self.geo.data_member(self.stripe, k)
    }

    /// The touched range on data member `m`.
    fn touch_on(&self, m: usize) -> &Touch<'d> {
        self.touches
            .iter()
            .find(|t| self.member(t.k) == m)
            .expect("the plan reads only touched data members")
    }

    /// The node of member `m`.
    fn child(&self, m: usize) -> usize {
        self.children[m]
    }

    /// Lay the new data over the old `rows` and compute the row's parity.
    fn parity_over(&self, rows: &mut [ABuf], p: &mut ABuf, q: &mut ABuf) {
        for t in &self.touches {
            rows[self.member(t.k)][(t.a - self.row_lo) as usize..(t.b - self.row_lo) as usize]
                .copy_from_slice(t.data);
        }
        gen_parity(self.geo, self.stripe, rows, p, q);
    }
}

/// P (and Q for RAID 6) of a stripe row from its data members' rows
/// (`rows` is indexed by member; parity members' entries are ignored).
fn gen_parity<B: AsRef<[u8]>>(geo: &Geometry, stripe: u64, rows: &[B], p: &mut [u8], q: &mut [u8]) {
    let dd = geo.data_disks();
    match geo.level() {
        Level::Raid4 | Level::Raid5 => {
            let data: Vec<&[u8]> = (0..dd)
                .map(|k| rows[geo.data_member(stripe, k)].as_ref())
                .collect();
            parity::gen_p(&data, p);
        }
        _ => {
            let mut data: Vec<&[u8]> = vec![&[]; dd];
            for k in 0..dd {
                let m = geo.data_member(stripe, k);
                data[geo.q_index(stripe, m)] = rows[m].as_ref();
            }
            parity::gen_pq(&data, p, q);
        }
    }
}

/// Rebuild lost data members of a stripe row from the survivors.
pub(crate) fn rebuild(geo: &Geometry, stripe: u64, failed: &[bool], bufs: &mut [ABuf]) {
    let dd = geo.data_disks();
    let (pd, qd) = geo.parity_of(stripe);
    let data: Vec<usize> = (0..dd).map(|k| geo.data_member(stripe, k)).collect();
    let lost: Vec<usize> = data.iter().copied().filter(|&m| failed[m]).collect();
    if lost.is_empty() {
        return;
    }
    if lost.len() == 1 && !failed[pd] {
        // D_x = P ^ (every other data chunk).
        let x = lost[0];
        let mut acc = ABuf::zeroed(bufs[pd].len());
        acc.copy_from_slice(&bufs[pd]);
        for &m in &data {
            if m != x {
                parity::xor_into(&mut acc, &bufs[m]);
            }
        }
        bufs[x] = acc;
        return;
    }
    let qd = qd.expect("more than one loss only on RAID 6");
    let mut synd: Vec<Vec<u8>> = vec![Vec::new(); dd];
    for &m in &data {
        synd[geo.q_index(stripe, m)] = bufs[m].to_vec();
    }
    let qi: Vec<usize> = lost.iter().map(|&m| geo.q_index(stripe, m)).collect();
    if lost.len() == 1 {
        gf::recover_data_with_q(&mut synd, qi[0], &bufs[qd]);
    } else {
        let (x, y) = (qi[0].min(qi[1]), qi[0].max(qi[1]));
        gf::recover_two(&mut synd, x, y, &bufs[pd], &bufs[qd]);
    }
    for (&m, &i) in lost.iter().zip(&qi) {
        bufs[m].copy_from_slice(&synd[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::parse_real;

    const MIB: u64 = 1 << 20;

    fn vol(expr: &str, size: u64) -> Vol {
        let t = parse_real(expr).unwrap();
        Vol::build(
            &t.root,
            &vec![size; t.members.len()],
            &vec![0; t.members.len()],
        )
        .unwrap()
    }

    #[test]
    fn places_name_every_copy_down_the_tree() {
        let chunk = 64 << 10;
        let places = |expr: &str, off: u64| {
            let v = vol(expr, 1 << 20);
            let mut out = Vec::new();
            v.places(0, off, &mut out);
            out
        };
        // RAID 5 over three: the second chunk is member 1's first.
        assert_eq!(
            places("raid5[stripe=64k](./a, ./b, ./c)", chunk + 5),
            [(1, 5)]
        );
        // RAID 10 over four: chunk 0 on members 0 and 1, chunk 1 on 2 and 3.
        assert_eq!(
            places("raid10[stripe=64k](./a, ./b, ./c, ./d)", chunk + 7),
            [(2, 7), (3, 7)]
        );
        // Nested: a RAID 1 of two RAID 0s has one place in each.
        assert_eq!(
            places(
                "raid1(raid0[stripe=64k](./a, ./b), raid0[stripe=64k](./c, ./d))",
                chunk
            ),
            [(1, 0), (3, 0)]
        );
        // A missing member holds nothing.
        assert_eq!(places("raid1(./a, missing)", 9), [(0, 9)]);
    }

    #[test]
    fn volumes_expose_what_their_levels_leave_for_data() {
        let chunk = 64 << 10;
        for (expr, data_members) in [
            ("raid0[stripe=64k](./a, ./b, ./c)", 3),
            ("raid5[stripe=64k](./a, ./b, ./c, ./d)", 3),
            ("raid6[stripe=64k](./a, ./b, ./c, ./d)", 2),
            ("raid10[stripe=64k](./a, ./b, ./c, ./d)", 2),
            ("raid5[stripe=64k](./a, missing, ./c)", 2),
        ] {
            let v = vol(expr, 8 * MIB + 4096);
            // Whole chunks only, as md leaves the tail of a member unused.
            assert_eq!(
                v.capacity,
                data_members * (8 * MIB / chunk) * chunk,
                "{expr}"
            );
        }
        assert!(vol("raid5[stripe=64k](./a, ./b, ./c)", MIB).has_parity);
        assert!(!vol("raid10[stripe=64k](./a, ./b, ./c, ./d)", MIB).has_parity);
    }

    #[test]
    fn parity_writes_lock_their_stripes_and_nothing_else() {
        let v = vol("raid5[stripe=64k](./a, ./b, ./c)", 8 * MIB);
        let stripe = 2 * (64 << 10);
        let mut keys = Vec::new();
        v.lock_keys(0, stripe - 4096, 8192, &mut keys);
        assert_eq!(keys, [(0, 0), (0, 1)], "a write across two stripes");
        let locks = Locks::default();
        assert!(locks.try_lock(&keys));
        let mut other = Vec::new();
        v.lock_keys(0, stripe + 4096, 4096, &mut other);
        assert!(!locks.try_lock(&other), "stripe 1 is held");
        locks.unlock(&keys);
        assert!(locks.try_lock(&other));
        let mut none = Vec::new();
        vol("raid0[stripe=64k](./a, ./b)", MIB).lock_keys(0, 0, 4096, &mut none);
        assert!(none.is_empty(), "no parity, no stripe locks");
    }

    /// Fill a stripe row's data members, compute its parity, lose members,
    /// and rebuild them to the bytes they held.
    fn round_trip(level: Level, n: usize, lost: &[usize]) {
        let geo = Geometry::new(
            level,
            4096,
            raidlab_layout::ArrayLayout::LeftSymmetric,
            &vec![MIB; n],
        )
        .unwrap();
        let mut rng = raidlab_core::rng::Rng::new(5);
        for stripe in 0..n as u64 {
            let rows: Vec<Vec<u8>> = (0..n)
                .map(|_| (0..4096).map(|_| rng.next_u64() as u8).collect())
                .collect();
            let (mut p, mut q) = (vec![0u8; 4096], vec![0u8; 4096]);
            gen_parity(&geo, stripe, &rows, &mut p, &mut q);
            let (pd, qd) = geo.parity_of(stripe);
            let mut bufs: Vec<ABuf> = (0..n)
                .map(|m| {
                    let mut b = ABuf::zeroed(4096);
                    let src = if m == pd {
                        &p
                    } else if Some(m) == qd {
                        &q
                    } else {
                        &rows[m]
                    };
                    b.copy_from_slice(src);
                    b
                })
                .collect();
            let want: Vec<Vec<u8>> = bufs.iter().map(|b| b.to_vec()).collect();
            let mut failed = vec![false; n];
            for &m in lost {
                failed[m] = true;
                bufs[m].fill(0);
            }
            rebuild(&geo, stripe, &failed, &mut bufs);
            for (m, w) in want.iter().enumerate() {
                if m != pd && Some(m) != qd {
                    assert_eq!(&bufs[m][..], &w[..], "{level:?} stripe {stripe} member {m}");
                }
            }
        }
    }

    #[test]
    fn lost_data_is_rebuilt_from_parity() {
        round_trip(Level::Raid5, 4, &[1]);
        round_trip(Level::Raid6, 5, &[0]);
        round_trip(Level::Raid6, 5, &[1, 3]);
    }
}
