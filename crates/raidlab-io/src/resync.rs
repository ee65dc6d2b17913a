//! Resynchronisation of arrays that were not stopped cleanly, as md
//! resyncs an array whose superblocks say "active" at assembly: a crash in
//! the middle of a stripe update can leave parity (or a mirror copy) out of
//! step with the data, which is harmless until a member fails and the stale
//! parity rebuilds wrong data (the RAID 5 write hole).
//!
//! Each redundant array, inner arrays first, is read and rewritten whole,
//! in rows of full stripes: a full-stripe write computes parity from the
//! data alone, and a mirror write copies the data read to every copy
//! (md's resync likewise takes the data and the first readable copy as
//! right). RAID 0 and concat hold no redundancy and are left alone. A root
//! array with a write-intent bitmap has only its dirty chunks rewritten.
//! A member whose I/O fails during the resync is failed, as during a run,
//! and the resync carries on without it.

use crate::backend::{block_on, Backend, Members, Tries};
use crate::buf::ABuf;
use crate::exec::{Exec, VNode, Vol};
use raidlab_layout::Level;
use std::io;

/// Bytes a resync step aims at: rows of full stripes up to about 1 MiB.
const STEP_BYTES: u64 = 1 << 20;

/// Resynchronise every redundant array of `vol`; returns the bytes
/// rewritten. With the root array's write-intent `bitmap`, only the rows
/// of its chunks marked dirty are rewritten there.
pub(crate) fn resync(
    vol: &Vol,
    members: &Members,
    bitmap: Option<&crate::meta::BitmapInfo>,
) -> io::Result<u64> {
    let be = Backend::psync(members);
    let ex = Exec {
        vol,
        be: &be,
        mirror_turn: std::cell::Cell::new(0),
        spares: Default::default(),
    };
    let mut total = 0;
    for n in vol.arrays_bottom_up() {
        let VNode::Array { geo, failed, .. } = &vol.nodes[n] else {
            continue;
        };
        assert!(
            !failed.iter().any(|&f| f),
            "a degraded array is never resynced"
        );
        let row = match geo.level() {
            Level::Raid4 | Level::Raid5 | Level::Raid6 => geo.chunk() * geo.data_disks() as u64,
            // Mirrors: any whole sectors.
            Level::Raid1 | Level::Raid10 => 512,
            Level::Raid0 | Level::Concat => continue,
        };
        let step = row * (STEP_BYTES / row).max(1);
        let cap = geo.capacity();
        debug_assert_eq!(cap % row, 0, "capacity in whole rows");
        let mut buf = ABuf::zeroed(step as usize);
        let mut off = 0;
        while off < cap {
            let len = step.min(cap - off) as usize;
            if let Some(bm) = bitmap.filter(|_| n == 0) {
                let (a, b) = geo.bitmap_span(off, len as u64);
                if !(a / bm.chunk..=(b - 1) / bm.chunk).any(|k| bm.dirty(k)) {
                    off += len as u64;
                    continue;
                }
            }
            let mut tries = Tries::new(be.health(), vol.members());
            loop {
                let r = block_on(&be, ex.read(n, off, &mut buf[..len]))
                    .and_then(|()| block_on(&be, ex.write(n, off, &buf[..len])));
                if !tries.again(&r) {
                    r?;
                    break;
                }
            }
            off += len as u64;
            total += len as u64;
        }
    }
    Ok(total)
}
