//! The drive's volatile DRAM write buffer (`wc=on`): a write completes once
//! its data is in the buffer; full pages are programmed in the background.
//! When the buffer is full, a new write waits for the oldest programs to
//! finish, so sustained writes run at the NAND's program rate. Writes enter
//! a page at a time as their data arrives, so one larger than the buffer
//! streams through it.

use raidlab_core::units::Ns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Occupancy of the write buffer, in 4 KiB units.
pub struct WriteBuffer {
    cap: u32,
    used: u32,
    /// Units whose program is under way: (time the program ends, units),
    /// earliest first (programs on different dies end out of order).
    inflight: BinaryHeap<Reverse<(Ns, u32)>>,
    /// Logical units waiting to fill a page.
    pub pending: Vec<u32>,
}

impl WriteBuffer {
    /// A buffer of `cap` units (at least one page).
    pub fn new(cap: u32) -> Self {
        WriteBuffer {
            cap: cap.max(1),
            used: 0,
            inflight: BinaryHeap::new(),
            pending: Vec::new(),
        }
    }

    /// Make room for `need` units at time `t`; returns the time the room is
    /// there (later than `t` when the buffer is full).
    pub fn admit(&mut self, mut t: Ns, need: u32) -> Ns {
        while let Some(&Reverse((ft, n))) = self.inflight.peek() {
            if ft <= t || self.used + need > self.cap {
                t = t.max(ft);
                self.used -= n;
                self.inflight.pop();
            } else {
                break;
            }
        }
        self.used += need;
        t
    }

    /// When every program under way has finished.
    pub fn drained(&self) -> Ns {
        self.inflight.iter().map(|r| r.0 .0).max().unwrap_or(0)
    }

    /// `units` of the buffer are being programmed until `done`.
    pub fn programming(&mut self, done: Ns, units: u32) {
        self.inflight.push(Reverse((done, units)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_buffer_waits_for_oldest_program() {
        let mut b = WriteBuffer::new(4);
        assert_eq!(b.admit(0, 2), 0);
        b.programming(100, 2);
        assert_eq!(b.admit(0, 2), 0);
        b.programming(200, 2);
        assert_eq!(b.admit(10, 2), 100, "waits for the program that ends first");
        assert_eq!(b.admit(300, 1), 300);
    }
}
