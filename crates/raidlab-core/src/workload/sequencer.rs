//! fio's offset modifier, the number after `rw=MODE:` (options.c
//! `str_rw_cb`), and `rw_sequencer`, which says what it does:
//!
//! - on a random mode, `rw=randread:8` draws a new random offset every 8
//!   I/Os; the I/Os between go on sequentially from where the last one of
//!   their direction ended (`rw_sequencer=sequential`, the default) or
//!   repeat its offset (`identical`). fio counts from 1, so the first I/O
//!   of a job is a random one (init.c: "needs to be initialized to 1");
//! - on a sequential mode, `rw=write:4k` leaves a hole of 4 KiB after every
//!   I/O, and a negative size (`rw=read:-8k`) walks the region backwards
//!   (io_u.c `get_next_seq_offset`).
//!
//! fio keeps one position a direction (`last_pos[ddir]`): the sequential
//! reads and writes of a mixed job each go on from their own last.
//! IOMeter keeps one a target for both (Dynamo's `TargetDisk::Seek` adds the
//! bytes last transferred, read or written, to one `offset`):
//! `seq_position=shared` gives that, for its access specifications.

use crate::units::{format_size, parse_size};
use serde::Serialize;

/// How the offsets of one job follow each other beyond their mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sequencer {
    /// Random modes: a new random offset every this many I/Os (1: every
    /// I/O, fio's default).
    pub every: u32,
    /// Sequential modes: bytes skipped after every I/O, or, negative,
    /// stepped back (0: none, fio's default).
    pub step: i64,
    /// `rw_sequencer=identical`: the I/Os between two random ones repeat
    /// the last offset instead of going on from it.
    pub identical: bool,
    /// `seq_position=shared`: reads and writes go on from the last I/O of
    /// either direction (IOMeter), not each from its own (fio).
    pub shared: bool,
}

impl Default for Sequencer {
    fn default() -> Self {
        Sequencer {
            every: 1,
            step: 0,
            identical: false,
            shared: false,
        }
    }
}

/// The largest hole or backward step: a region can be no larger than the
/// volume, and a step past it only wraps.
const MAX_STEP: u64 = 1 << 50;

impl Sequencer {
    /// Neither a modifier nor `rw_sequencer` given.
    pub fn is_default(&self) -> bool {
        *self == Sequencer::default()
    }

    /// Read the part of `rw=` after its colon, for a random mode (`random`)
    /// or a sequential one; the message says what is wrong.
    pub fn set_modifier(&mut self, random: bool, s: &str) -> Result<(), String> {
        if random {
            self.every = match s.parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(format!(
                        "':{s}' after a random mode is a count of I/Os between two random offsets (1 to {})",
                        u32::MAX
                    ))
                }
            };
            self.step = 0;
        } else {
            let (neg, digits) = match s.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, s),
            };
            let b = parse_size(digits)
                .ok()
                .filter(|&b| b <= MAX_STEP)
                .ok_or_else(|| {
                    format!("':{s}' after a sequential mode is a size to skip after each I/O (e.g. 4k, or -8k to go backwards)")
                })?;
            self.step = if neg { -(b as i64) } else { b as i64 };
            self.every = 1;
        }
        Ok(())
    }

    /// Read `rw_sequencer=`.
    pub fn set_kind(&mut self, v: &str) -> Result<(), String> {
        self.identical = match v {
            "sequential" => false,
            "identical" => true,
            _ => {
                return Err(format!(
                    "rw_sequencer={v}: expected sequential or identical"
                ))
            }
        };
        Ok(())
    }

    /// Read `seq_position=`.
    pub fn set_position(&mut self, v: &str) -> Result<(), String> {
        self.shared = match v {
            "per_direction" => false,
            "shared" => true,
            _ => {
                return Err(format!(
                    "seq_position={v}: expected per_direction or shared"
                ))
            }
        };
        Ok(())
    }

    /// The position slot of a direction's I/O (reads 0, writes 1; 0 for
    /// both when shared).
    pub fn slot(&self, read: bool) -> usize {
        usize::from(!read && !self.shared)
    }

    /// The modifier as fio writes it after `rw=MODE` (empty when none).
    pub fn postfix(&self) -> String {
        if self.every > 1 {
            format!(":{}", self.every)
        } else if self.step < 0 {
            format!(":-{}", format_size(self.step.unsigned_abs()))
        } else if self.step > 0 {
            format!(":{}", format_size(self.step as u64))
        } else {
            String::new()
        }
    }

    /// The sequential offset after an I/O that ended at `end` (its
    /// direction's last position; 0 before any) in a region of `span`
    /// bytes, for one of `len` bytes. fio adds the step only once the
    /// position has left the region's start, and wraps a hole past the end
    /// to the start and a backward step before it to `span + step` (its
    /// `io_size + ddir_seq_add`), here no later than the last place `len`
    /// fits. `None`: a hole ran past the end (a one-pass job's loop ends).
    pub fn next_offset(&self, end: u64, len: u64, span: u64) -> Option<u64> {
        debug_assert!(len <= span, "an I/O fits its region");
        let last_fit = span - len;
        if end == 0 || self.step == 0 {
            return Some(if end > last_fit { 0 } else { end });
        }
        let pos = end as i128 + self.step as i128;
        if self.step > 0 {
            (pos <= last_fit as i128).then_some(pos as u64)
        } else if pos >= 0 && pos <= last_fit as i128 {
            Some(pos as u64)
        } else {
            Some((span as i128 + self.step as i128).clamp(0, last_fit as i128) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(step: i64) -> Sequencer {
        Sequencer {
            step,
            ..Sequencer::default()
        }
    }

    /// Walk a sequential job of 4 KiB I/Os over 64 KiB, returning blocks.
    fn walk(s: Sequencer, n: usize) -> Vec<u64> {
        let (mut end, mut out) = (0, Vec::new());
        for _ in 0..n {
            let Some(o) = s.next_offset(end, 4096, 65536) else {
                out.push(u64::MAX);
                end = 0;
                continue;
            };
            out.push(o / 4096);
            end = o + 4096;
        }
        out
    }

    #[test]
    fn holes_and_backward_steps_follow_fios_offsets() {
        // fio 3.33, --rw=read:8k --bs=4k --size=64k: 0 3 6 9 12 15, then
        // the loop is over (the next offset is past the region).
        assert_eq!(walk(seq(8192), 7), vec![0, 3, 6, 9, 12, 15, u64::MAX]);
        // --rw=read:-8k: 0, then io_size - 8k and down by one block.
        assert_eq!(
            walk(seq(-8192), 17),
            vec![0, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 14]
        );
        // No modifier: plain sequential, wrapping at the end.
        assert_eq!(walk(seq(0), 17)[15..], [15, 0]);
    }

    #[test]
    fn modifiers_parse_and_echo_as_fio_writes_them() {
        let mut s = Sequencer::default();
        s.set_modifier(true, "8").unwrap();
        assert_eq!((s.every, s.postfix()), (8, ":8".to_string()));
        s.set_modifier(false, "-8k").unwrap();
        assert_eq!(
            (s.step, s.every, s.postfix()),
            (-8192, 1, ":-8k".to_string())
        );
        s.set_modifier(false, "1m").unwrap();
        assert_eq!(s.postfix(), ":1m");
        for bad in ["0", "-1", "x", ""] {
            assert!(
                Sequencer::default().set_modifier(true, bad).is_err(),
                "{bad}"
            );
        }
        for bad in ["x", "-", "4q", "99999999999t"] {
            assert!(
                Sequencer::default().set_modifier(false, bad).is_err(),
                "{bad}"
            );
        }
        assert!(s.set_kind("identical").is_ok() && s.identical);
        assert!(s.set_kind("random").is_err());
        assert!(s.set_position("shared").is_ok() && s.slot(false) == 0);
        assert!(s.set_position("per_direction").is_ok() && s.slot(false) == 1);
        assert!(s.set_position("one").is_err());
    }
}
