//! The Linux kernel a host runs, as far as md's behaviour depends on it:
//! each predicate names the release that changed it and the change.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A Linux release, `major.minor` (a third number, the stable update, is
/// taken and dropped: md's behaviour does not change within a release).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kernel {
    major: u16,
    minor: u16,
}

impl Kernel {
    /// Release `major.minor`.
    pub const fn new(major: u16, minor: u16) -> Kernel {
        Kernel { major, minor }
    }

    /// The release a host preset that names none is taken to run: the
    /// newest behaviour the model knows of every change below.
    pub const fn newest() -> Kernel {
        Kernel::new(6, 10)
    }

    fn at_least(self, major: u16, minor: u16) -> bool {
        self >= Kernel::new(major, minor)
    }

    /// md RAID 1 reads from the non-rotational mirror with the fewest
    /// commands pending: Linux 3.6 (Shaohua Li, "md/raid1: read balance
    /// chooses idlest disk for SSD", commit 9dedf60313fa, 2012). Before,
    /// it read by head distance as from disks.
    pub fn md_raid1_reads_idlest_flash(self) -> bool {
        self.at_least(3, 6)
    }

    /// md RAID 4/5/6 can hand stripe handling to worker threads
    /// (`group_thread_cnt`): Linux 3.12 (Shaohua Li, "raid5: offload stripe
    /// handle to workqueue", commit 851c30c9, 2013).
    pub fn md_raid5_workers(self) -> bool {
        self.at_least(3, 12)
    }

    /// md RAID 5 can keep a Partial Parity Log (`consistency=ppl`): Linux
    /// 4.12 (Artur Paszkiewicz, "raid5-ppl: Partial Parity Log write
    /// logging implementation", 2017).
    pub fn md_ppl(self) -> bool {
        self.at_least(4, 12)
    }

    /// md RAID 10 likewise: Linux 5.3 (Guoqing Jiang, "md/raid10: read
    /// balance chooses idlest disk for SSD", 2019, after Andy Smith's
    /// report of a RAID 10 of an NVMe and a SATA SSD reading at random 3
    /// times slower than a RAID 1 of the same two).
    pub fn md_raid10_reads_idlest_flash(self) -> bool {
        self.at_least(5, 3)
    }

    /// md RAID 10's I/O path takes no barrier lock: Linux 6.1 (Yu Kuai,
    /// "md/raid10: reduce lock contention for io", LKML 2022-09, merged
    /// for 6.1).
    pub fn md_raid10_lockless(self) -> bool {
        self.at_least(6, 1)
    }

    /// md's resync and recovery, finding the array busy with other I/O
    /// while above `speed_limit_min`, wait for their own requests in flight
    /// to complete instead of sleeping until their speed falls to that
    /// minimum: Linux 4.1 (NeilBrown, "md: allow resync to go faster when
    /// there is competing IO", commit ac8fa4196d20, 2015). Yu Kuai's
    /// "md: add a new api sync_io_depth" (2025) describes the result: sync
    /// I/O depth is limited to one while the array is busy.
    pub fn md_resync_drains_when_busy(self) -> bool {
        self.at_least(4, 1)
    }

    /// md writes the last page of its write-intent bitmap at the members'
    /// optimal I/O size, not just its used sectors: Linux 6.4 (Jon Derrick,
    /// "md: Use optimal I/O size for last bitmap page", commit
    /// 8745faa95611, 2023).
    pub fn md_bitmap_io_opt(self) -> bool {
        self.at_least(6, 4)
    }

    /// md RAID 1 and 10 issue a write submitted outside a block plug from
    /// the submitting thread itself only when the array has no write-intent
    /// bitmap: Linux 6.5 (Yu Kuai, "md/raid1-10: submit write io directly
    /// if bitmap is not enabled", LKML 2023-04-20, merged for 6.5). Before
    /// it every such write, and since it every such write to an array with
    /// a bitmap, goes to the array's thread (raid1d, raid10d), which writes
    /// the bitmap's dirty pages and then issues it: bitmap support for
    /// RAID 10 "changed that write io is submitted through demon thread
    /// because bitmap need to be updated before write io" (the commit's
    /// message). io_uring and libaio plug only a submission of more than
    /// two I/Os (`need_plug`, `AIO_PLUG_THRESHOLD`), and fio submits one at
    /// a time by default (`iodepth_batch_submit=1`), so fio's writes are
    /// outside a plug.
    pub fn md_writes_direct_without_bitmap(self) -> bool {
        self.at_least(6, 5)
    }
}

impl Default for Kernel {
    fn default() -> Kernel {
        Kernel::newest()
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Why a kernel version did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelParseError(String);

impl fmt::Display for KernelParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel={}: expected a Linux release such as 5.10 or 6.8 (2.6 to 9.99)",
            self.0
        )
    }
}

impl std::error::Error for KernelParseError {}

impl FromStr for Kernel {
    type Err = KernelParseError;

    fn from_str(s: &str) -> Result<Kernel, KernelParseError> {
        let bad = || KernelParseError(s.chars().take(40).collect());
        let mut parts = s.split('.');
        let mut number = |max: u16| -> Result<u16, KernelParseError> {
            let p = parts.next().ok_or_else(bad)?;
            if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            p.parse().ok().filter(|&n| n <= max).ok_or_else(bad)
        };
        let (major, minor) = (number(9)?, number(99)?);
        if let Some(patch) = parts.next() {
            if patch.is_empty() || patch.len() > 3 || !patch.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
        }
        let k = Kernel::new(major, minor);
        if parts.next().is_some() || k < Kernel::new(2, 6) {
            return Err(bad());
        }
        Ok(k)
    }
}

impl Serialize for Kernel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Kernel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kernel, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_order_and_print() {
        let k: Kernel = "5.10".parse().unwrap();
        assert_eq!(k, Kernel::new(5, 10));
        assert_eq!("5.10.216".parse::<Kernel>().unwrap(), k);
        assert!(Kernel::new(5, 9) < k && k < Kernel::new(6, 0));
        assert_eq!(k.to_string(), "5.10");
        assert_eq!("2.6.32".parse::<Kernel>().unwrap().to_string(), "2.6");
    }

    #[test]
    fn nonsense_is_refused() {
        for s in [
            "", "6", "6.", ".8", "6.8.", "6.8.1.2", "x.y", "10.1", "6.100", "2.4", "6.-1", "6.8a",
            "+6.8", "6.8.x",
        ] {
            assert!(s.parse::<Kernel>().is_err(), "{s:?}");
        }
    }

    #[test]
    fn each_change_starts_at_its_release() {
        let k = |s: &str| s.parse::<Kernel>().unwrap();
        assert!(!k("3.5").md_raid1_reads_idlest_flash() && k("3.6").md_raid1_reads_idlest_flash());
        assert!(
            !k("5.2").md_raid10_reads_idlest_flash() && k("5.3").md_raid10_reads_idlest_flash()
        );
        assert!(!k("6.0").md_raid10_lockless() && k("6.1").md_raid10_lockless());
        assert!(!k("6.3").md_bitmap_io_opt() && k("6.4").md_bitmap_io_opt());
        assert!(!k("3.11").md_raid5_workers() && k("3.12").md_raid5_workers());
        assert!(!k("4.11").md_ppl() && k("4.12").md_ppl());
        assert!(!k("4.0").md_resync_drains_when_busy() && k("4.1").md_resync_drains_when_busy());
    }
}
