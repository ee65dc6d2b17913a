//! A block-mapped FTL with log blocks, as early SSDs ran (`ftl = "block"`).
//!
//! Logical erase blocks map to physical blocks whole; a block cannot be
//! rewritten in place, so writes to it go to a log block associated with
//! it (pages in any order, mapped within the log), and the drive keeps only
//! a few log blocks (BAST: J. Kim et al., "A space-efficient flash
//! translation layer for CompactFlash systems", IEEE Trans. Consumer
//! Electronics 48(2), 2002; the "log buffer-based FTL" of S.-W. Lee et al.,
//! ACM TECS 6(3), 2007). When a write needs a log block and all are taken,
//! the least recently used one is merged with its data block:
//!
//! - **switch merge**: the log holds the whole block, written in order: it
//!   becomes the data block; the old one is erased;
//! - **partial merge**: the log holds a prefix written in order: the rest is
//!   copied from the data block, which is then erased;
//! - **full merge**: anything else: every page is copied into a fresh block
//!   from wherever its current copy is, and both old blocks are erased.
//!
//! Sequential streams therefore cost little, and small random writes over a
//! span wider than the log blocks cost a full merge each: a whole block read
//! and programmed for one page, the read-modify-write of erase blocks that
//! makes such drives write small random blocks at around a hundred per
//! second.

/// What a merge costs, in NAND operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merge {
    /// Pages read and programmed (copied).
    pub copied: u32,
    /// Blocks erased.
    pub erases: u32,
}

impl Merge {
    /// Whether the merge does nothing.
    pub fn is_empty(&self) -> bool {
        self.copied == 0 && self.erases == 0
    }
}

/// One log block: the logical block it belongs to, pages written, and
/// whether they were written in order from the block's start.
#[derive(Debug, Clone, Copy)]
struct Log {
    block: u64,
    written: u32,
    in_order: bool,
}

/// The log blocks of one drive.
#[derive(Debug, Clone)]
pub struct LogBlocks {
    ppb: u32,
    max: usize,
    /// Least recently used first.
    open: Vec<Log>,
    /// Pages copied by merges so far.
    pub copied: u64,
}

impl LogBlocks {
    /// `max` log blocks (at least one) over blocks of `ppb` pages.
    pub fn new(ppb: u32, max: u32) -> Self {
        LogBlocks {
            ppb: ppb.max(1),
            max: max.max(1) as usize,
            open: Vec::new(),
            copied: 0,
        }
    }

    /// Pages per block.
    pub fn ppb(&self) -> u32 {
        self.ppb
    }

    /// Write logical page `page`; returns the merge it forces (empty when
    /// the page fits a log block).
    pub fn write(&mut self, page: u64) -> Merge {
        let block = page / self.ppb as u64;
        let offset = (page % self.ppb as u64) as u32;
        let mut merge = Merge::default();
        let i = match self.open.iter().position(|l| l.block == block) {
            Some(i) => i,
            None => {
                if self.open.len() == self.max {
                    let victim = self.open.remove(0);
                    merge = self.merge(victim);
                }
                self.open.push(Log {
                    block,
                    written: 0,
                    in_order: true,
                });
                self.open.len() - 1
            }
        };
        let mut log = self.open.remove(i);
        log.in_order &= offset == log.written;
        log.written += 1;
        if log.written == self.ppb {
            // A full log is merged at once; it frees its place.
            let m = self.merge(log);
            merge.copied += m.copied;
            merge.erases += m.erases;
        } else {
            self.open.push(log);
        }
        merge
    }

    /// The cost of merging `log` with its data block.
    fn merge(&mut self, log: Log) -> Merge {
        let m = match (log.in_order, log.written == self.ppb) {
            (true, true) => Merge {
                copied: 0,
                erases: 1,
            },
            (true, false) => Merge {
                copied: self.ppb - log.written,
                erases: 1,
            },
            (false, _) => Merge {
                copied: self.ppb,
                erases: 2,
            },
        };
        self.copied += m.copied as u64;
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_streams_switch_and_random_pages_merge_fully() {
        let mut l = LogBlocks::new(64, 4);
        // A whole block written in order: one switch merge, nothing copied.
        let m: Vec<Merge> = (0..64).map(|p| l.write(p)).collect();
        assert!(m[..63].iter().all(Merge::is_empty));
        assert_eq!(
            m[63],
            Merge {
                copied: 0,
                erases: 1
            }
        );
        // Random pages of many blocks: once the logs are taken, each new
        // block evicts one holding a single out-of-place page.
        let mut l = LogBlocks::new(64, 4);
        let pages = [5u64, 200, 401, 777, 1003, 1500];
        let m: Vec<Merge> = pages.iter().map(|&p| l.write(p)).collect();
        assert!(m[..4].iter().all(Merge::is_empty));
        assert_eq!(
            m[4],
            Merge {
                copied: 64,
                erases: 2
            }
        );
        assert_eq!(l.copied, 128);
    }

    #[test]
    fn an_in_order_prefix_is_a_partial_merge() {
        let mut l = LogBlocks::new(8, 1);
        for p in 0..3 {
            assert!(l.write(p).is_empty());
        }
        // Block 1 evicts block 0's log, which holds pages 0-2 in order.
        assert_eq!(
            l.write(8),
            Merge {
                copied: 5,
                erases: 1
            }
        );
    }

    #[test]
    fn rewriting_a_page_breaks_the_order() {
        let mut l = LogBlocks::new(4, 1);
        l.write(0);
        l.write(0);
        l.write(1);
        // Four pages written, not in order: a full merge.
        assert_eq!(
            l.write(2),
            Merge {
                copied: 4,
                erases: 2
            }
        );
    }
}
