//! The NAND array: channels × dies, each a FIFO timeline. A die runs one
//! array operation at a time (read, program, erase); a channel moves one
//! page at a time between a die's register and the controller.
//!
//! Operations are placed on the timelines in dispatch order (the firmware's
//! per-die queues are FIFO), so no event is needed per NAND operation.

use crate::engine::{us, xfer_ns, Server};
use crate::ssd::ftl::GcWork;
use raidlab_core::preset::SsdParams;
use raidlab_core::units::Ns;

/// Timelines and timings of one drive's flash.
pub struct Nand {
    /// One timeline per die (die d sits on channel d % channels).
    pub dies: Vec<Server>,
    /// One timeline per channel.
    pub channels: Vec<Server>,
    t_read: Ns,
    t_prog: Ns,
    t_erase: Ns,
    ch_mbps: f64,
    page_bytes: u64,
}

impl Nand {
    /// Flash of the given drive; `block_scale` scales the erase time when the
    /// FTL simulates smaller erase blocks than the real ones.
    pub fn new(p: &SsdParams, block_scale: f64) -> Nand {
        let dies = p.channels * p.dies_per_channel;
        Nand {
            dies: vec![Server::default(); dies as usize],
            channels: vec![Server::default(); p.channels as usize],
            t_read: us(p.read_us),
            t_prog: us(p.program_us),
            t_erase: (us(p.erase_us) as f64 * block_scale) as Ns,
            ch_mbps: p.channel_mbps,
            page_bytes: p.page_kb as u64 * 1024,
        }
    }

    #[inline]
    fn channel_of(&self, die: u32) -> usize {
        die as usize % self.channels.len()
    }

    /// Read `bytes` of one page of `die`, starting no earlier than `at`:
    /// array read on the die, then the transfer on its channel.
    #[inline]
    pub fn read(&mut self, at: Ns, die: u32, bytes: u64) -> Ns {
        let t = self.dies[die as usize].reserve(at, self.t_read);
        let ch = self.channel_of(die);
        let t = self.channels[ch].reserve(t, xfer_ns(bytes, self.ch_mbps));
        // The die's register is busy until its data has left.
        let d = &mut self.dies[die as usize];
        if d.free_at < t {
            d.free_at = t;
        }
        t
    }

    /// Program one page on `die`: transfer on the channel, then the program.
    #[inline]
    pub fn program(&mut self, at: Ns, die: u32) -> Ns {
        let ch = self.channel_of(die);
        let t = self.channels[ch].reserve(at, xfer_ns(self.page_bytes, self.ch_mbps));
        self.dies[die as usize].reserve(t, self.t_prog)
    }

    /// Charge garbage-collection work (copy-back relocations and erases) to a die.
    #[inline]
    pub fn gc(&mut self, at: Ns, die: u32, w: GcWork) -> Ns {
        let dur = w.read_pages as Ns * self.t_read + w.program_pages as Ns * self.t_prog + w.erases as Ns * self.t_erase;
        self.dies[die as usize].reserve(at, dur)
    }

    /// Die that frees first (ties: lowest index from `start`).
    #[inline]
    pub fn least_busy(&self, start: u32) -> u32 {
        let n = self.dies.len() as u32;
        let mut best = start % n;
        let mut bt = self.dies[best as usize].free_at;
        for i in 1..n {
            let d = (start + i) % n;
            let t = self.dies[d as usize].free_at;
            if t < bt {
                best = d;
                bt = t;
            }
        }
        best
    }

    /// Busy time summed over dies, and die count.
    pub fn die_busy(&self) -> (Ns, usize) {
        (self.dies.iter().map(|d| d.busy).sum(), self.dies.len())
    }
}
