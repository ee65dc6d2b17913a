//! fio's `verify_backlog`: a writing job reads back what it wrote as it
//! goes, not only once it is done. fio logs each write (`log_io_piece`)
//! and, when the log's length comes to a multiple of `verify_backlog`
//! after a write, reads back `verify_backlog_batch` of the logged pieces
//! (by default all `verify_backlog`), each taken off the log (io_u.c
//! `get_io_u`, verify.c `get_next_verify`). The pieces of a job on fio's
//! random map come back in the order written (a list); any other job's in
//! offset order, a later write over a piece replacing it (a tree). What is
//! left in the log when a one-pass job has written its bytes is read back
//! after them (backend.c `do_verify`).

use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Most writes `verify_backlog` may log before reading back: a bound on
/// the log's memory (16 bytes a piece), far above fio's usual values.
pub const MAX_BACKLOG: u64 = 1 << 20;

/// A job's read-back as it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Backlog {
    /// Pieces logged before a read-back (`verify_backlog`).
    pub every: u32,
    /// Pieces read back each time (`verify_backlog_batch`; fio's default,
    /// 0, reads back `every`).
    pub batch: u32,
}

impl Backlog {
    /// The pieces each read-back takes.
    fn per_round(&self) -> u32 {
        if self.batch == 0 {
            self.every
        } else {
            self.batch
        }
    }
}

/// The backlog keys as given.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BacklogKeys {
    every: Option<u64>,
    batch: Option<u64>,
}

impl BacklogKeys {
    /// Take one backlog key; `Ok(false)`: not one.
    pub fn set(&mut self, k: &str, v: &str) -> Result<bool, String> {
        let n = || -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|&n| n <= MAX_BACKLOG)
                .ok_or_else(|| format!("{k}={v}: expected a count, 0 to {MAX_BACKLOG}"))
        };
        match k {
            "verify_backlog" => self.every = Some(n()?),
            "verify_backlog_batch" => self.batch = Some(n()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The read-back they ask for (`None` for fio's default, 0).
    pub fn settle(self) -> Option<Backlog> {
        let every = self.every.filter(|&e| e > 0)? as u32;
        Some(Backlog {
            every,
            batch: self.batch.unwrap_or(0) as u32,
        })
    }
}

/// The written pieces a job has yet to read back, and where its read-back
/// stands.
#[derive(Debug, Clone)]
pub(crate) struct BacklogLog {
    cfg: Backlog,
    /// In write order (a job on fio's random map, which writes no block
    /// twice a pass).
    fifo: VecDeque<(u64, u64)>,
    /// In offset order, a piece's start to its length (any other job).
    tree: BTreeMap<u64, u64>,
    in_order: bool,
    /// Pieces the read-back under way has still to take.
    left: u32,
    /// The job's last I/O was a read (fio's `last_ddir`): a read-back
    /// starts only after a write.
    last_read: bool,
}

impl BacklogLog {
    /// An empty log; `in_order`: pieces come back in write order.
    pub fn new(cfg: Backlog, in_order: bool) -> BacklogLog {
        debug_assert!(cfg.every > 0);
        BacklogLog {
            cfg,
            fifo: VecDeque::new(),
            tree: BTreeMap::new(),
            in_order,
            left: 0,
            last_read: false,
        }
    }

    fn len(&self) -> usize {
        if self.in_order {
            self.fifo.len()
        } else {
            self.tree.len()
        }
    }

    /// A write of `len` bytes at `offset` was issued: log it (over any
    /// piece it overlaps, in offset order).
    pub fn wrote(&mut self, offset: u64, len: u64) {
        self.last_read = false;
        if self.in_order {
            self.fifo.push_back((offset, len));
            return;
        }
        // Pieces do not overlap one another, so those this one overlaps
        // are the last ones starting before its end.
        while let Some((&o, &l)) = self.tree.range(..offset + len).next_back() {
            if o + l <= offset {
                break;
            }
            self.tree.remove(&o);
        }
        self.tree.insert(offset, len);
    }

    /// A read that is not a read-back was issued.
    pub fn read(&mut self) {
        self.last_read = true;
    }

    /// The next piece to read back now, if a read-back is under way or
    /// starts here (the log's length a multiple of `every` after a write).
    pub fn due(&mut self) -> Option<(u64, u64)> {
        if self.left == 0 {
            let n = self.len();
            if n == 0 || !n.is_multiple_of(self.cfg.every as usize) || self.last_read {
                return None;
            }
            self.left = self.cfg.per_round();
        }
        match self.take() {
            Some(p) => {
                self.left -= 1;
                self.last_read = true;
                Some(p)
            }
            None => {
                self.left = 0;
                None
            }
        }
    }

    /// A piece left in the log, once the job has written its bytes.
    pub fn rest(&mut self) -> Option<(u64, u64)> {
        self.take()
    }

    fn take(&mut self) -> Option<(u64, u64)> {
        if self.in_order {
            self.fifo.pop_front()
        } else {
            self.tree.pop_first()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_in_rounds_after_writes() {
        let mut b = BacklogLog::new(Backlog { every: 4, batch: 0 }, true);
        let mut seen = String::new();
        for i in 0..8u64 {
            b.wrote(i * 10, 1);
            while let Some((o, _)) = b.due() {
                seen += &format!("r{o} ");
            }
        }
        assert_eq!(seen, "r0 r10 r20 r30 r40 r50 r60 r70 ");
        // A batch smaller than the backlog leaves pieces for later.
        let mut b = BacklogLog::new(Backlog { every: 4, batch: 1 }, true);
        let mut order = Vec::new();
        for i in 0..6u64 {
            b.wrote(i, 1);
            order.push(b.due().map(|p| p.0));
            assert!(b.due().is_none(), "one a round");
        }
        assert_eq!(order, [None, None, None, Some(0), Some(1), Some(2)]);
        assert_eq!(std::iter::from_fn(|| b.rest()).count(), 3);
    }

    #[test]
    fn out_of_order_logs_sort_and_replace_overlaps() {
        let mut b = BacklogLog::new(Backlog { every: 3, batch: 0 }, false);
        b.wrote(40, 8);
        b.wrote(8, 8);
        b.wrote(12, 8); // overlaps 8..16: replaces it
        assert!(b.due().is_none(), "two pieces");
        b.wrote(0, 4);
        let back: Vec<(u64, u64)> = std::iter::from_fn(|| b.due()).collect();
        assert_eq!(back, [(0, 4), (12, 8), (40, 8)]);
        // A read after the write that made the length a multiple: no round
        // starts until the length is one again after a write (fio checks
        // its last direction).
        for o in 1..4 {
            b.wrote(o, 1);
        }
        b.read();
        assert!(b.due().is_none());
        b.wrote(4, 1);
        assert!(b.due().is_none());
        b.wrote(5, 1);
        b.wrote(6, 1);
        assert_eq!(b.due(), Some((1, 1)));
    }
}
