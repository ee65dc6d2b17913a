//! The classic analytic model of RAID throughput (docs/model.md, petrov2010
//! Table 2 after Chen et al., "RAID: high-performance, reliable secondary
//! storage", ACM Computing Surveys 1994).
//!
//! For `D` disks and one access pattern it gives T/C — the share of the
//! disks' work that reaches the user — and R, the internal requests one user
//! request costs. The classic expectation of array throughput is
//! T/C × D × one drive's throughput for that pattern: every disk busy, no
//! controller, bus or cache in the way. Real arrays fall short of it; the
//! gap is what reports show.
//!
//! Extensions beyond the survey's table, from the same accounting: RAID 6
//! (two parities: a small write reads and writes data, P and Q) and n-way
//! RAID 1 (every write goes to all D copies; for D = 2 this is the table).

use crate::error::{Error, Result};
use raidlab_layout::Level;
use serde::Serialize;

/// An access pattern of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// One stripe unit or less, random reads.
    SmallRandomRead,
    /// One stripe unit or less, random writes.
    SmallRandomWrite,
    /// Full stripes, sequential reads.
    LargeSequentialRead,
    /// Full stripes, sequential writes.
    LargeSequentialWrite,
}

impl Pattern {
    /// All patterns, in the table's order.
    pub const ALL: [Pattern; 4] = [
        Pattern::SmallRandomRead,
        Pattern::SmallRandomWrite,
        Pattern::LargeSequentialRead,
        Pattern::LargeSequentialWrite,
    ];

    /// The command-line word: `small-random-read`, ...
    pub fn word(self) -> &'static str {
        match self {
            Pattern::SmallRandomRead => "small-random-read",
            Pattern::SmallRandomWrite => "small-random-write",
            Pattern::LargeSequentialRead => "large-sequential-read",
            Pattern::LargeSequentialWrite => "large-sequential-write",
        }
    }

    /// Parse a pattern word (`small-random-write`, also `large-seq-read`).
    pub fn parse(s: &str) -> Result<Pattern> {
        let s = s.replace("-seq-", "-sequential-");
        Pattern::ALL
            .into_iter()
            .find(|p| p.word() == s)
            .ok_or_else(|| {
                Error::Input(format!(
                    "unknown pattern '{s}' (small-random-read, small-random-write, large-sequential-read, large-sequential-write)"
                ))
            })
    }

    /// Whether the drive figure is I/Os per second (small) or MB/s (large).
    pub fn per_io(self) -> bool {
        matches!(self, Pattern::SmallRandomRead | Pattern::SmallRandomWrite)
    }

    /// Reads (true) or writes.
    pub fn reads(self) -> bool {
        matches!(
            self,
            Pattern::SmallRandomRead | Pattern::LargeSequentialRead
        )
    }
}

/// T/C and R of one level and pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    /// Level word.
    pub level: String,
    /// Disks.
    pub drives: u32,
    /// Pattern.
    pub pattern: Pattern,
    /// Throughput per cost, 0..1.
    pub tc: f64,
    /// T/C as the table writes it (`1/4`, `(D-1)/D` evaluated: `4/5`).
    pub tc_text: String,
    /// Internal requests per user request.
    pub requests: f64,
    /// Share of raw capacity that holds user data.
    pub efficiency: f64,
    /// T/C × D: the array's throughput in units of one drive's.
    pub drive_multiple: f64,
}

/// T/C, R and storage efficiency of `level` over `d` disks for `pattern`.
pub fn cost(level: Level, d: u32, pattern: Pattern) -> Result<Cost> {
    use Pattern::*;
    // One rule for the smallest array everywhere: the layout's (RAID 5 needs
    // three members in raidlab, as in the simulator and the real engine).
    let min = level.min_members() as u32;
    if d < min {
        return Err(Error::Input(format!(
            "{} needs at least {min} drives, not {d}",
            level.word()
        )));
    }
    if level == Level::Raid10 && !d.is_multiple_of(2) {
        return Err(Error::Input(format!(
            "the model's raid10 is mirrored pairs: an even number of drives, not {d}"
        )));
    }
    if level == Level::Concat {
        return Err(Error::Input(
            "the model covers raid0, raid1, raid4, raid5, raid6 and raid10, not concat".into(),
        ));
    }
    let df = d as f64;
    // (T/C numerator, denominator, R)
    let (num, den, r): (u32, u32, f64) = match (level, pattern) {
        (_, SmallRandomRead) => (1, 1, 1.0),
        (_, LargeSequentialRead) => (1, 1, df),
        (Level::Raid0, SmallRandomWrite) => (1, 1, 1.0),
        (Level::Raid0, LargeSequentialWrite) => (1, 1, df),
        (Level::Raid1, SmallRandomWrite) => (1, d, df),
        (Level::Raid1, LargeSequentialWrite) => (1, d, df * df),
        (Level::Raid10, SmallRandomWrite) => (1, 2, 2.0),
        (Level::Raid10, LargeSequentialWrite) => (1, 2, 2.0 * df),
        // Read old data and parity, write both.
        (Level::Raid5, SmallRandomWrite) => (1, 4, 4.0),
        (Level::Raid4 | Level::Raid5, LargeSequentialWrite) => (d - 1, d, df + 1.0),
        // As RAID 5, but every write's parity read and write fall on the
        // one parity member: two of its I/Os per write cap the array at
        // half a drive, T/C = 1/(2d) (Patterson, Gibson and Katz 1988,
        // "A Case for RAID", level 4's small writes).
        (Level::Raid4, SmallRandomWrite) => (1, 2 * d, 4.0),
        // Read old data, P and Q, write all three.
        (Level::Raid6, SmallRandomWrite) => (1, 6, 6.0),
        (Level::Raid6, LargeSequentialWrite) => (d - 2, d, df + 2.0),
        (Level::Concat, _) => unreachable!("refused above"),
    };
    let efficiency = match level {
        Level::Raid0 | Level::Concat => 1.0,
        Level::Raid1 => 1.0 / df,
        Level::Raid10 => 0.5,
        Level::Raid4 | Level::Raid5 => (df - 1.0) / df,
        Level::Raid6 => (df - 2.0) / df,
    };
    let tc = num as f64 / den as f64;
    Ok(Cost {
        level: level.word().into(),
        drives: d,
        pattern,
        tc,
        tc_text: if den == 1 {
            num.to_string()
        } else {
            format!("{num}/{den}")
        },
        requests: r,
        efficiency,
        drive_multiple: tc * df,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The survey's table (docs/model.md), cell by cell, for D = 5 (RAID 10: D = 8).
    #[test]
    fn matches_the_survey_table() {
        let c = |l, d, p| {
            let c = cost(l, d, p).unwrap();
            (c.tc, c.requests)
        };
        use Pattern::*;
        for l in [Level::Raid0, Level::Raid1, Level::Raid5, Level::Raid10] {
            let d = if l == Level::Raid10 { 8 } else { 5 };
            assert_eq!(c(l, d, SmallRandomRead), (1.0, 1.0));
            assert_eq!(c(l, d, LargeSequentialRead), (1.0, d as f64));
        }
        assert_eq!(c(Level::Raid0, 5, SmallRandomWrite), (1.0, 1.0));
        assert_eq!(c(Level::Raid1, 2, SmallRandomWrite), (0.5, 2.0));
        assert_eq!(c(Level::Raid1, 2, LargeSequentialWrite), (0.5, 4.0));
        assert_eq!(c(Level::Raid5, 5, SmallRandomWrite), (0.25, 4.0));
        assert_eq!(c(Level::Raid10, 8, SmallRandomWrite), (0.5, 2.0));
        assert_eq!(c(Level::Raid5, 5, LargeSequentialWrite), (0.8, 6.0));
        assert_eq!(c(Level::Raid10, 8, LargeSequentialWrite), (0.5, 16.0));
        assert_eq!(
            cost(Level::Raid5, 5, SmallRandomWrite).unwrap().efficiency,
            0.8
        );
        assert_eq!(
            cost(Level::Raid5, 5, SmallRandomWrite)
                .unwrap()
                .drive_multiple,
            1.25
        );
    }

    #[test]
    fn impossible_arrays_are_refused() {
        assert!(cost(Level::Raid10, 5, Pattern::SmallRandomRead).is_err());
        assert!(cost(Level::Raid6, 3, Pattern::SmallRandomRead).is_err());
        assert!(cost(Level::Raid5, 1, Pattern::SmallRandomRead).is_err());
        assert!(Pattern::parse("small-random-writes").is_err());
        assert_eq!(
            Pattern::parse("large-seq-read").unwrap(),
            Pattern::LargeSequentialRead
        );
    }
}
