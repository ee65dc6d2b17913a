//! md's write-intent bitmap as the array model keeps it: when each region
//! was last written, so a write knows whether it must set a bit first.

use raidlab_core::units::Ns;

/// md's bitmap daemon clears a region's bit once the region has had no
/// write for `daemon_sleep`: 5 s by default (drivers/md/md-bitmap.c,
/// `mddev->bitmap_info.daemon_sleep = 5 * HZ`); a write to a region whose
/// bit is clear must set it, on every member, before it is issued.
pub(super) const BITMAP_DAEMON_SLEEP: Ns = 5_000_000_000;
/// md writes the bitmap a page at a time: 4 KiB per member per update.
pub(super) const BITMAP_PAGE: u32 = 4096;
/// Regions remembered before the ones whose bits have cleared are first
/// dropped (the map then holds the regions written in the last
/// `daemon_sleep`, at most what the array writes in 5 s).
pub(super) const BITMAP_PRUNE_AT: usize = 1 << 16;

/// md's internal write-intent bitmap: when each region (`chunk` bytes of
/// what the bitmap covers, `Geometry::bitmap_bytes`) was last written.
#[derive(Debug, Clone)]
pub(super) struct Bitmap {
    pub(super) chunk: u64,
    pub(super) last: std::collections::HashMap<u64, Ns>,
    /// Size at which cleared regions are next dropped: twice what was left
    /// after the last drop, so pruning costs O(1) per write amortised.
    pub(super) prune_at: usize,
}

impl Bitmap {
    /// A write over member bytes `a..b` at `now`: whether some region's
    /// bit was clear (the bitmap must be written first); every region is
    /// marked written.
    pub(super) fn touch(&mut self, a: u64, b: u64, now: Ns) -> bool {
        let mut clear = false;
        for r in a / self.chunk..=(b.max(a + 1) - 1) / self.chunk {
            let t = self.last.insert(r, now);
            clear |= t.is_none_or(|t| now >= t + BITMAP_DAEMON_SLEEP);
        }
        if self.last.len() > self.prune_at {
            self.last.retain(|_, t| now < *t + BITMAP_DAEMON_SLEEP);
            self.prune_at = BITMAP_PRUNE_AT.max(2 * self.last.len());
        }
        clear
    }
}
