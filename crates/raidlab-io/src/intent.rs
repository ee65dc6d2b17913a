//! The write-intent bitmap at run time, as md keeps it: before a write
//! reaches the members, the bitmap bits of every chunk it may touch are set
//! and the bitmap is made durable on every member, so that after a crash
//! only those chunks are resynchronised. Bits are set once per chunk and
//! run (md's daemon clears them lazily; here they are cleared when the run
//! stops cleanly, with the superblocks).

use crate::backend::Members;
use crate::buf::ABuf;
use crate::md;
use raidlab_layout::Geometry;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

/// The live bitmap of a root array.
pub(crate) struct Intent {
    geo: Geometry,
    bitmap: Mutex<md::Bitmap>,
    /// The members that hold a copy (present, with metadata).
    holders: Vec<usize>,
}

impl Intent {
    /// A clean bitmap of `chunk` bytes a bit over the root array `geo`,
    /// written to `holders` at event `events`.
    pub fn new(
        geo: Geometry,
        chunk: u64,
        uuid: [u8; 16],
        events: u64,
        holders: Vec<usize>,
    ) -> Self {
        let sync_size = geo.bitmap_bytes() / 512;
        let bits = md::Bitmap::nbits(sync_size, chunk).div_ceil(8) as usize;
        Intent {
            geo,
            bitmap: Mutex::new(md::Bitmap {
                uuid,
                events,
                events_cleared: events,
                sync_size,
                chunk,
                bits: vec![0; bits],
            }),
            holders,
        }
    }

    /// Make sure the chunks a write of `len` bytes at volume offset `off`
    /// may touch are marked, durably, before it goes out.
    pub fn mark(&self, off: u64, len: u64, members: &Members) -> io::Result<()> {
        let (a, b) = self.geo.bitmap_span(off, len);
        let mut bm = self.bitmap.lock().unwrap_or_else(|e| e.into_inner());
        let (k0, k1) = (a / bm.chunk, (b - 1) / bm.chunk);
        let mut new = false;
        for k in k0..=k1 {
            new |= bm.set(k);
        }
        if !new {
            return Ok(());
        }
        // Written while the lock is held: a later write that finds its bit
        // set knows the bitmap saying so is on the members.
        let bytes = bm.encode();
        let mut buf = ABuf::zeroed(bytes.len());
        buf.copy_from_slice(&bytes);
        for &m in &self.holders {
            if members.health.is_dead(m) {
                continue;
            }
            let f = &members.files[m];
            f.write_all_at(&buf, md::SUPER_OFFSET + md::BITMAP_OFFSET)?;
            f.sync_data()?;
        }
        Ok(())
    }
}
