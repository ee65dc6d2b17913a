//! md's write-intent bitmap as the array model keeps it: when each region
//! was last written, so a write knows whether it must set a bit first, and
//! which page of the bitmap (and how much of it) then goes to the members.

use raidlab_core::units::Ns;

/// md's bitmap daemon runs every `daemon_sleep`, 5 s by default
/// (drivers/md/md-bitmap.c, `mddev->bitmap_info.daemon_sleep = 5 * HZ`).
/// A region's counter drops to 2 when its last write ends; the daemon's
/// next pass lowers it to 1 and the pass after that clears the bit
/// (`md_bitmap_daemon_work`), so a bit clears at the second pass after the
/// region's last write, 5 to 10 s later. A write to a region whose bit is
/// clear must set it, on every member, before it is issued.
pub(super) const BITMAP_DAEMON_SLEEP: Ns = 5_000_000_000;
/// md writes the bitmap a page at a time: 4 KiB per member per update.
pub(super) const BITMAP_PAGE: u32 = 4096;
/// An internal bitmap's first page starts with its 256-byte superblock
/// (`bitmap_super_t`, md-bitmap.h); the bits follow it (`file_page_offset`
/// counts them from there).
const BITMAP_SB_BYTES: u64 = 256;
/// The logical block an older kernel rounds the last page up to: 512 bytes,
/// what NVMe and SATA drives report unless formatted to 4 KiB sectors.
const LOGICAL_BLOCK: u64 = 512;
/// Regions remembered before the ones whose bits have cleared are first
/// dropped (the map then holds the regions written in the last
/// `2 * daemon_sleep`, at most what the array writes in 10 s).
pub(super) const BITMAP_PRUNE_AT: usize = 1 << 16;

/// md's internal write-intent bitmap: when each region (`chunk` bytes of
/// what the bitmap covers, `Geometry::bitmap_bytes`) was last written.
#[derive(Debug, Clone)]
pub(super) struct Bitmap {
    chunk: u64,
    last: std::collections::HashMap<u64, Ns>,
    /// Size at which cleared regions are next dropped: twice what was left
    /// after the last drop, so pruning costs O(1) per write amortised.
    prune_at: usize,
    /// Pages the bitmap spans, superblock included.
    pages: u64,
    /// Bytes the last page goes out with (see `Kernel::md_bitmap_io_opt`).
    last_page_len: u32,
}

/// Whether the bit of a region last written at `t` has cleared by `now`:
/// two daemon passes (at whole multiples of `daemon_sleep`) have run since.
fn cleared(t: Ns, now: Ns) -> bool {
    now / BITMAP_DAEMON_SLEEP >= t / BITMAP_DAEMON_SLEEP + 2
}

impl Bitmap {
    /// A bitmap of `chunk`-byte regions over `covers` bytes; `io_opt`: the
    /// kernel writes its last page whole (Linux 6.4 and later), else only
    /// its used sectors.
    pub(super) fn new(chunk: u64, covers: u64, io_opt: bool) -> Bitmap {
        assert!(chunk > 0, "a bitmap region has bytes");
        let bytes = BITMAP_SB_BYTES + covers.div_ceil(chunk).div_ceil(8);
        let page = u64::from(BITMAP_PAGE);
        let pages = bytes.div_ceil(page);
        let used = bytes - (pages - 1) * page;
        let last_page_len = if io_opt {
            page
        } else {
            used.next_multiple_of(LOGICAL_BLOCK)
        };
        Bitmap {
            chunk,
            last: std::collections::HashMap::new(),
            prune_at: BITMAP_PRUNE_AT,
            pages,
            last_page_len: last_page_len as u32,
        }
    }

    /// A write over covered bytes `a..b` at `now`: the bitmap page to write
    /// first if some region's bit was clear (the last such page, when the
    /// write spans regions on two); every region is marked written.
    pub(super) fn touch(&mut self, a: u64, b: u64, now: Ns) -> Option<u64> {
        let mut page = None;
        for r in a / self.chunk..=(b.max(a + 1) - 1) / self.chunk {
            let t = self.last.insert(r, now);
            if t.is_none_or(|t| cleared(t, now)) {
                page = Some((BITMAP_SB_BYTES * 8 + r) / (u64::from(BITMAP_PAGE) * 8));
            }
        }
        if self.last.len() > self.prune_at {
            self.last.retain(|_, t| !cleared(*t, now));
            self.prune_at = BITMAP_PRUNE_AT.max(2 * self.last.len());
        }
        page
    }

    /// The member bytes page `page` of the bitmap goes out as: its offset
    /// and length.
    pub(super) fn page_io(&self, page: u64) -> (u64, u64) {
        debug_assert!(page < self.pages, "page {page} of {}", self.pages);
        let len = if page + 1 == self.pages {
            self.last_page_len
        } else {
            BITMAP_PAGE
        };
        (page * u64::from(BITMAP_PAGE), u64::from(len))
    }

    /// Regions remembered now (for tests of the bound).
    #[cfg(test)]
    pub(super) fn remembered(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Ns = BITMAP_DAEMON_SLEEP;

    /// A region's bit is clear at its first write and again at the second
    /// daemon pass after its last one; regions whose bits have cleared are
    /// dropped, so the map holds at most what 10 s of writes touched.
    #[test]
    fn bits_clear_at_the_second_daemon_pass_and_the_map_stays_bounded() {
        let mut bm = Bitmap::new(4096, 1 << 30, true);
        assert_eq!(bm.touch(0, 4096, 1), Some(0));
        assert_eq!(bm.touch(0, 4096, 2), None);
        // The pass at S only lowers the counter; the one at 2S clears it.
        assert_eq!(bm.touch(0, 4096, S + 2), None);
        assert_eq!(bm.touch(0, 4096, 3 * S - 1), None);
        assert_eq!(bm.touch(0, 4096, 5 * S), Some(0));
        // A million distinct regions, one per 10 us: 10 s holds 1,000,000
        // at most; the prune keeps no more than twice what is live.
        for i in 0..1_000_000u64 {
            bm.touch(i * 4096, i * 4096 + 1, 10 * S + i * 10_000);
        }
        assert!(bm.remembered() <= 2 * 1_000_000 + 1, "{}", bm.remembered());
    }

    /// Bits sit after the 256-byte superblock, 32,768 to a page; the last
    /// page goes out at its used sectors on older kernels, whole on 6.4+.
    /// Jon Derrick's RAID 10 (kernel commit 8745faa95611): 57,228 bits,
    /// two pages, the second holding 3,314 bytes (3,584 as sectors).
    #[test]
    fn pages_hold_bits_after_the_superblock_and_the_last_is_sized_by_kernel() {
        let covers = 57_228 * (64 << 20);
        let mut old = Bitmap::new(64 << 20, covers, false);
        let new = Bitmap::new(64 << 20, covers, true);
        assert_eq!(old.pages, 2);
        assert_eq!(old.page_io(0), (0, 4096));
        assert_eq!(old.page_io(1), (4096, 3584));
        assert_eq!(new.page_io(1), (4096, 4096));
        // Bit 30,719 is the first page's last, 30,720 the second's first.
        assert_eq!(
            old.touch(30_719 * (64 << 20), 30_719 * (64 << 20) + 1, 0),
            Some(0)
        );
        assert_eq!(
            old.touch(30_720 * (64 << 20), 30_720 * (64 << 20) + 1, 0),
            Some(1)
        );
    }
}
